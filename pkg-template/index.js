// resumable-agent: agents, tools and checkpoints (api.js); savers and sessions (sessions.js); the providers
// (providers.js); MCP tools (mcp.js); subagents (subagents.js); SQL savers (sql-savers.js: D1, SQLite, Postgres). The .wasm a program loads has
// only the capabilities of the modules it imports (package.json `sideEffects` lets a bundler drop the others).
export * from './api.js';
export * from './sessions.js';
export * from './providers.js';
export * from './mcp.js';
export * from './subagents.js';
export * from './sql-savers.js';
