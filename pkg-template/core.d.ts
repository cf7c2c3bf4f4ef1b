// resumable-agent/core: the core alone — agents, JS models and tools, checkpoints, errors. Its .wasm has no
// providers, sessions or MCP (import those from 'resumable-agent'); on Cloudflare Workers, where a Worker ships
// every .wasm it imports, this is how a Worker ships the smallest one. Every type of the package is here too.
export type * from './index.js';
export {
  agent, defineTool, scriptedModel, isInterrupted, assertComplete, memoryUsage, loadWasm, WasmLoadError,
  InterruptError, AgentError, CheckpointError, ConfigError, MaxIterationsError, ModelError, RunInterruptedError,
  SessionNotFoundError, SessionBusyError, SaverError, DecisionError, InterruptExpiredError, AbortedError, ReleasedError,
  InstanceLostError, OutputError, McpError, GuardrailError, BudgetExceededError, ConfigDriftError,
} from './index.js';
