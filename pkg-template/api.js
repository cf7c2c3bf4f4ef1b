// The public API, shared by every entry point (node.js, browser.js, workerd.js initialise the wasm first).
export {
  agent,
  defineTool,
  isInterrupted,
  assertComplete,
  scriptedModel,
  memorySaver,
  InterruptError,
  AgentError,
  CheckpointError,
  ConfigError,
  MaxIterationsError,
  ModelError,
  RunInterruptedError,
} from './resumable_agent.js';
