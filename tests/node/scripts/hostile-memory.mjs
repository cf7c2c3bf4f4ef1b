// One hostile answer against a fresh instance of the package, with the growth of its WebAssembly memory (which
// never shrinks: what it grew by is what the answer cost for the life of the instance). Warmed up first with a
// small answer of the same shape, so the figure is the hostile answer's own.
//   node hostile-memory.mjs <cause> <limit bytes>   prints {"mb", "name", "message", "status"} as JSON
import { agent, anthropic, openaiResponses, mcpTools, defineTool, memoryUsage } from 'resumable-agent';
import { server, json, flood, modernAnswer } from './hostile-server.mjs';

const [cause, limitText] = process.argv.slice(2);
const limit = Number(limitText);
const MB = 1024 * 1024;
const FLOOD = 96 * MB;
let size = FLOOD;

const responsesStart = '{"id":"r","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"';
const tinyRows = (n) => Array.from({ length: n }, () => ({ a: 1 }));

const causes = {
  // A plain (not streamed) answer past maxCheckpointBytes.
  'plain-answer': {
    handle: async (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write(responsesStart); await flood(res, 'x'.repeat(64 * 1024), size); },
    run: (s) => agent({ model: openaiResponses({ apiKey: 'k', model: 'm', baseURL: s.origin, maxRetries: 0 }), limits: { maxCheckpointBytes: limit } }).prompt('hi'),
  },
  // An error body read whole.
  'error-body': {
    handle: async (req, res) => { res.writeHead(400, { 'content-type': 'application/json' }); res.write('{"error":{"message":"'); await flood(res, 'y'.repeat(64 * 1024), size); },
    run: (s) => agent({ model: openaiResponses({ apiKey: 'k', model: 'm', baseURL: s.origin, maxRetries: 0 }), limits: { maxCheckpointBytes: limit } }).prompt('hi'),
  },
  // Server-sent data lines never ended by a blank line, in a streamed answer.
  'endless-event': {
    handle: async (req, res) => { res.writeHead(200, { 'content-type': 'text/event-stream' }); await flood(res, `data: ${'z'.repeat(1000)}\n`, size); },
    run: (s) => agent({ model: openaiResponses({ apiKey: 'k', model: 'm', baseURL: s.origin, maxRetries: 0 }), limits: { maxCheckpointBytes: limit } }).stream({ prompt: 'hi' }).result,
  },
  // A model answer whose tool input is many tiny objects (JSON amplification).
  'amplified-answer': {
    handle: (req, res) => json(res, 200, { content: [{ type: 'tool_use', id: 't1', name: 'save', input: { rows: tinyRows(Math.round(size / 8)) } }], stop_reason: 'tool_use' }),
    run: (s) => agent({ model: anthropic({ apiKey: 'k', model: 'm', baseURL: s.origin, maxRetries: 0 }), tools: [defineTool({ name: 'save', handle: () => 'saved' })] }).prompt('hi'),
  },
  // MCP: an event of an answer that never ends.
  'mcp-endless-event': {
    handle: async (req, res, body) => {
      const m = JSON.parse(body || '{}');
      if (m.method !== 'tools/list') return modernAnswer(m, res);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return flood(res, `data: ${'z'.repeat(1000)}\n`, size);
    },
    run: (s) => mcpTools({ url: `${s.origin}/mcp`, maxResponseBytes: limit }),
  },
  // MCP: an error body read whole.
  'mcp-error-body': {
    handle: async (req, res, body) => {
      const m = JSON.parse(body || '{}');
      if (m.method !== 'tools/list') return modernAnswer(m, res);
      res.writeHead(500, { 'content-type': 'text/plain' });
      return flood(res, 'e'.repeat(64 * 1024), size);
    },
    run: (s) => mcpTools({ url: `${s.origin}/mcp`, maxResponseBytes: limit }),
  },
  // MCP: a listing of many small schema objects (JSON amplification).
  'mcp-amplified-listing': {
    handle: (req, res, body) => {
      const m = JSON.parse(body || '{}');
      if (m.method !== 'tools/list') return modernAnswer(m, res);
      const inputSchema = { type: 'object', properties: { x: { anyOf: tinyRows(Math.round(size / 8)) } } };
      return json(res, 200, { jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'big', description: 'd', inputSchema }] } });
    },
    run: (s) => mcpTools({ url: `${s.origin}/mcp`, maxResponseBytes: limit }),
  },
};

const { handle, run } = causes[cause];
const s = await server(handle);
const outcome = () => run(s).then((v) => ({ name: 'resolved', message: JSON.stringify(v).slice(0, 200) }), (e) => ({ name: e.name, message: e.message, status: e.status }));
size = 2048; // the same shape, small: the instance warmed up
await outcome();
size = cause.includes('amplified') ? 2_600_000 : FLOOD;
const before = memoryUsage().wasmBytes;
const out = await outcome();
process.stdout.write(JSON.stringify({ mb: (memoryUsage().wasmBytes - before) / 1e6, ...out }));
await s.close();
