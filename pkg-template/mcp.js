// MCP tools: the tools of an MCP server, whose calls the core (Rust) makes to the server. A capability of its own:
// the .wasm variant a program loads has MCP only when it imports this module.
import { ConfigError, describe } from './errors.js';
import { need } from './load.js';
import { MCP_FETCH, calls, hostValues, registerTool } from './internal.js';

need('mcp');

const wasm = calls({ async: ['mcpList'], sync: ['checkTool'] });

/**
 * The tools of an MCP server (Streamable HTTP), usable in `agent({ tools })` beside `defineTool` tools:
 * `mcpTools({ url, headers?, prefix?, timeoutMs?, maxResponseBytes?, retry?, signal?, fetch? })` (`retry`: as
 * defineTool's, for every call of these tools; `timeoutMs` bounds each request). The protocol is negotiated
 * once here (2026-07-28, falling back to 2025-11-25) and each call goes to the server. `headers` (a bearer token) are
 * sent with every request and never appear on the tools, in a checkpoint, an event or an error. Rejects with
 * McpError (`.server`, `.status`) when the server cannot be reached or refuses.
 */
export async function mcpTools(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ConfigError(`mcpTools(options): expected { url, headers?, prefix?, timeoutMs? }, got ${describe(options)}`);
  }
  const { signal, fetch, retry, ...rest } = options;
  if (fetch !== undefined && typeof fetch !== 'function') throw new ConfigError(`mcpTools(options).fetch: expected a function like fetch, got ${describe(fetch)}`);
  const listed = JSON.parse(await wasm.mcpList(JSON.stringify(rest, hostValues), signal, fetch));
  const where = { url: rest.url, headers: rest.headers, timeoutMs: rest.timeoutMs, maxResponseBytes: rest.maxResponseBytes, protocol: listed.protocol, session: listed.session ?? undefined };
  return listed.tools.map((t) => {
    const text = JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema, retry, mcp: { ...where, tool: t.tool } });
    wasm.checkTool(text, `mcpTools(options): tool ${JSON.stringify(t.name)}`);
    // What the program sees: no header (the token stays in the text the agent reads).
    const mcp = Object.freeze({ server: new URL(rest.url).origin, tool: t.tool, protocol: listed.protocol });
    const tool = Object.freeze({ name: t.name, description: t.description, inputSchema: t.inputSchema, mcp });
    registerTool(tool, text);
    if (fetch) MCP_FETCH.set(tool, fetch);
    return tool;
  });
}
