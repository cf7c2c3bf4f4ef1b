// No configuration for resumable-agent: what a new user has.
export default {};
