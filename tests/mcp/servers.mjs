// Real MCP servers for the tests, on 127.0.0.1, started and stopped by them:
// - `modern`: built with the official v2 SDK (@modelcontextprotocol/server, 2026-07-28, MRTR elicitation),
//   behind a bearer token;
// - `legacy`: built with the official 1.x SDK (@modelcontextprotocol/sdk, 2025-11-25, sessions, push
//   elicitation, an event store so a stream can be resumed with Last-Event-ID);
// - `everything`: the reference server @modelcontextprotocol/server-everything over Streamable HTTP.
// Each counts the calls of its tools (GET /stats) so a test can see a tool was not called again.
//
// Run directly (`node tests/mcp/servers.mjs modern|legacy [port]`) it serves until killed: the tests start it
// as a child process to kill and restart it mid-run.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as z from 'zod/v4';

export const TOKEN = 'mcp-test-token-7f3a9c2e51';

/** CORS for a page of another origin (the Chromium test): the MCP headers allowed, the session id exposed. */
const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id, last-event-id',
  'access-control-expose-headers': 'mcp-session-id',
};

/** Answers a preflight; adds the CORS headers to every other answer. True when it answered. */
function cors(req, res) {
  for (const [k, v] of Object.entries(CORS)) res.setHeader(k, v);
  if (req.method !== 'OPTIONS') return false;
  res.writeHead(204).end();
  return true;
}

function listen(server, port = 0) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
}

async function body(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString();
}

/** The v2 SDK server: tools `add`, `weather` (structured content only), `fails` (isError), `book` (asks for a
 * date, and to confirm a December date: two rounds), `slow` (answers after `ms`). */
export async function modernServer({ port = 0, token = TOKEN } = {}) {
  const { McpServer, createMcpHandler, inputRequired, acceptedContent, inputResponse } = await import('@modelcontextprotocol/server');
  const stats = { calls: {}, cancelled: 0, requests: 0 };
  const count = (name) => { stats.calls[name] = (stats.calls[name] ?? 0) + 1; };
  const factory = () => {
    const s = new McpServer({ name: 'modern-test', version: '1.0.0' });
    s.registerTool('add', { description: 'Adds two numbers.', inputSchema: z.object({ a: z.number(), b: z.number() }) }, async ({ a, b }) => {
      count('add');
      return { content: [{ type: 'text', text: String(a + b) }] };
    });
    s.registerTool('weather', { description: 'The weather in a city.', inputSchema: z.object({ city: z.string() }) }, async ({ city }) => {
      count('weather');
      return { content: [], structuredContent: { city, celsius: 21 } };
    });
    s.registerTool('fails', { description: 'Always fails.', inputSchema: z.object({}) }, async () => {
      count('fails');
      return { content: [{ type: 'text', text: 'the database is read-only' }], isError: true };
    });
    s.registerTool('book', { description: 'Books a table in a city.', inputSchema: z.object({ city: z.string() }) }, async ({ city }, ctx) => {
      count('book');
      const state = typeof ctx.mcpReq.requestState === 'function' ? ctx.mcpReq.requestState() : ctx.mcpReq.requestState;
      const responses = ctx.mcpReq.inputResponses;
      if (typeof state === 'string' && state.startsWith('confirm:')) {
        const date = state.slice('confirm:'.length);
        const sure = acceptedContent(responses, 'sure');
        return { content: [{ type: 'text', text: sure?.yes === true ? `booked ${city} on ${date}` : `not booked (${inputResponse(responses, 'sure').kind})` }] };
      }
      const view = inputResponse(responses, 'date');
      if (view.kind === 'elicit' && view.action !== 'accept') {
        return { content: [{ type: 'text', text: `not booked: ${view.action}` }] };
      }
      const got = acceptedContent(responses, 'date');
      if (!got) {
        return inputRequired({
          inputRequests: {
            date: inputRequired.elicit({
              message: `Which day in ${city}?`,
              requestedSchema: { type: 'object', properties: { date: { type: 'string', format: 'date', title: 'Day' }, seats: { type: 'integer', minimum: 1, maximum: 8 } }, required: ['date'] },
            }),
          },
          requestState: `ask:${city}`,
        });
      }
      if (got.date.startsWith('2026-12')) {
        return inputRequired({
          inputRequests: { sure: inputRequired.elicit({ message: 'December is busy. Sure?', requestedSchema: { type: 'object', properties: { yes: { type: 'boolean' } }, required: ['yes'] } }) },
          requestState: `confirm:${got.date}`,
        });
      }
      return { content: [{ type: 'text', text: `booked ${city} on ${got.date}` }] };
    });
    s.registerTool('sign', { description: 'Asks the user to sign in on a web page (URL-mode elicitation).', inputSchema: z.object({}) }, async () => {
      count('sign');
      return inputRequired({ inputRequests: { login: inputRequired.elicitUrl({ message: 'Sign in', url: 'https://auth.example.com/login?state=s3cr3t' }) }, requestState: 'url' });
    });
    s.registerTool('slow', { description: 'Answers after ms milliseconds.', inputSchema: z.object({ ms: z.number() }) }, async ({ ms }, ctx) => {
      count('slow');
      const signal = ctx.mcpReq?.signal;
      await new Promise((resolve) => {
        const t = setTimeout(resolve, ms);
        signal?.addEventListener('abort', () => { clearTimeout(t); stats.cancelled += 1; resolve(); });
      });
      return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
    });
    return s;
  };
  const handler = createMcpHandler(factory);
  const server = http.createServer(async (req, res) => {
    if (cors(req, res)) return;
    if (req.url === '/stats') { res.end(JSON.stringify(stats)); return; }
    stats.requests += 1;
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'missing or wrong bearer token' }, id: null }));
      return;
    }
    const text = req.method === 'POST' ? await body(req) : undefined;
    const controller = new AbortController();
    res.on('close', () => { if (!res.writableFinished) controller.abort(); });
    const response = await handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers: req.headers, body: text, signal: controller.signal }));
    res.writeHead(response.status, { ...Object.fromEntries(response.headers), ...CORS });
    if (response.body) {
      try {
        for await (const chunk of response.body) res.write(chunk);
      } catch { /* the client went away */ }
    }
    res.end();
  });
  const at = await listen(server, port);
  return { url: `http://127.0.0.1:${at}/mcp`, port: at, stats, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** The 1.x SDK server (2025-11-25, sessions, an event store): tools `add`, `fails`, `slow`, `book` (asks for a
 * date by `elicitation/create` during the call) and `register` (asks on the standalone stream). */
export async function legacyServer({ port = 0 } = {}) {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { InMemoryEventStore } = await import('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
  const { isInitializeRequest, ElicitResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const stats = { calls: {}, sessions: 0, requests: 0, cancelled: 0 };
  const count = (name) => { stats.calls[name] = (stats.calls[name] ?? 0) + 1; };
  const transports = new Map();
  const make = () => {
    const s = new McpServer({ name: 'legacy-test', version: '1.0.0' });
    s.registerTool('add', { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
      count('add');
      return { content: [{ type: 'text', text: String(a + b) }] };
    });
    s.registerTool('fails', { description: 'Always fails.', inputSchema: {} }, async () => {
      count('fails');
      return { content: [{ type: 'text', text: 'the database is read-only' }], isError: true };
    });
    s.registerTool('slow', { description: 'Answers after ms milliseconds.', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
      count('slow');
      await new Promise((resolve) => {
        const t = setTimeout(resolve, ms);
        // Aborted by the client's notifications/cancelled (a closed stream is not a cancellation in 2025).
        extra.signal.addEventListener('abort', () => { clearTimeout(t); stats.cancelled += 1; resolve(); });
      });
      return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
    });
    s.registerTool('book', { description: 'Books a table in a city.', inputSchema: { city: z.string() } }, async ({ city }, extra) => {
      count('book');
      // On the call's own stream (related to the call), as the reference server asks.
      const answer = await extra.sendRequest({
        method: 'elicitation/create',
        params: {
          message: `Which day in ${city}?`,
          requestedSchema: { type: 'object', properties: { date: { type: 'string', format: 'date' } }, required: ['date'] },
        },
      }, ElicitResultSchema);
      if (answer.action !== 'accept') return { content: [{ type: 'text', text: `not booked: ${answer.action}` }] };
      return { content: [{ type: 'text', text: `booked ${city} on ${answer.content.date}` }] };
    });
    // As the SDK's own examples ask: elicitInput without relatedRequestId, sent on the session's standalone stream.
    s.registerTool('register', { description: 'Registers a user (asks on the standalone stream).', inputSchema: {} }, async () => {
      count('register');
      const answer = await s.server.elicitInput({
        mode: 'form',
        message: 'Your name?',
        requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      }, { timeout: 5000 }).catch((e) => ({ action: `failed: ${e.message}` }));
      return { content: [{ type: 'text', text: `registered: ${answer.action}` }] };
    });
    return s;
  };
  const server = http.createServer(async (req, res) => {
    if (cors(req, res)) return;
    if (req.url === '/stats') { res.end(JSON.stringify(stats)); return; }
    stats.requests += 1;
    const text = req.method === 'POST' ? await body(req) : undefined;
    const parsed = text ? JSON.parse(text) : undefined;
    const id = req.headers['mcp-session-id'];
    let transport = id ? transports.get(id) : undefined;
    if (!transport && parsed && isInitializeRequest(parsed)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        eventStore: new InMemoryEventStore(),
        onsessioninitialized: (sid) => { transports.set(sid, transport); stats.sessions += 1; },
      });
      await make().connect(transport);
    }
    if (!transport) {
      res.writeHead(id ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: id ? 'Session not found' : 'Bad Request: no session' }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, parsed);
  });
  const at = await listen(server, port);
  return { url: `http://127.0.0.1:${at}/mcp`, port: at, stats, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

const here = fileURLToPath(new URL('.', import.meta.url));

/** A server as a child process (to kill and restart mid-run): resolves once it listens. */
export function childServer(kind, port = 0) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), kind, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve({ url: `http://127.0.0.1:${m[1]}/mcp`, port: Number(m[1]), kill: () => new Promise((r) => { child.once('exit', r); child.kill('SIGKILL'); }) });
    });
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code}) before it listened`)));
  });
}

/** The reference server (@modelcontextprotocol/server-everything, Streamable HTTP) on 127.0.0.1. */
export function everythingServer() {
  const entry = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));
  const child = spawn(process.execPath, ['--import', `${here}loopback-only.mjs`, entry, 'streamableHttp'], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = /bound 127\.0\.0\.1:(\d+)/.exec(err);
      if (m) resolve({ url: `http://127.0.0.1:${m[1]}/mcp`, close: () => new Promise((r) => { child.once('exit', r); child.kill('SIGKILL'); }) });
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${err.slice(-500)}`)));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [kind, port] = process.argv.slice(2);
  const s = await (kind === 'legacy' ? legacyServer : modernServer)({ port: Number(port ?? 0) });
  console.log(`listening ${s.port}`);
}
