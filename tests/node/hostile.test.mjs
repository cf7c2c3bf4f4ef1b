// Hostile servers and hostile answers (issue 38), each through the built package (real wasm in Node) against a
// server of our own on 127.0.0.1: credentials never follow a redirect to another origin, memory stays bounded by
// the limits the user set whatever a server sends, an approval rule's change is seen by the agent's fingerprint,
// a paused MCP call goes back only to the server (origin and path) that asked, whatever a program's `fetch`
// returns is a typed error of that call, echoed tokens are scrubbed, Gemini's abnormal endings run no call, and
// timeoutMs ends a call whose `fetch` ignores its signal.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  agent, anthropic, openai, openaiResponses, gemini, mcpTools, defineTool, isInterrupted, memoryUsage,
  McpError, ModelError, CheckpointError,
} from 'resumable-agent';
import { modernServer, legacyServer, TOKEN } from '../mcp/servers.mjs';
import { toolUse, turn } from './helpers.mjs';
import { server, json, modernAnswer } from './scripts/hostile-server.mjs';

const KEY = 'sk-hostile-test-0f9e8d7c6b5a4';

const rejection = (p) => p.then((v) => assert.fail(`expected a rejection, got ${JSON.stringify(v)?.slice(0, 200)}`), (e) => e);

// ---- 1. credentials and redirects ------------------------------------------------------------------------

/** Each provider: how to make it point at `base`, and the path it posts to. */
const PROVIDERS = [
  ['anthropic', (base) => anthropic({ apiKey: KEY, model: 'claude-test', baseURL: base, maxRetries: 0 }), 'x-api-key'],
  ['openai', (base) => openai({ apiKey: KEY, model: 'gpt-test', baseURL: base, maxRetries: 0, headers: { 'api-key': KEY } }), 'api-key'],
  ['openai-responses', (base) => openaiResponses({ apiKey: KEY, model: 'gpt-test', baseURL: base, maxRetries: 0 }), 'authorization'],
  ['gemini', (base) => gemini({ apiKey: KEY, model: 'gemini-test', baseURL: base, maxRetries: 0 }), 'x-goog-api-key'],
];

describe('1. no credential leaves the configured origin', () => {
  for (const [name, make, header] of PROVIDERS) {
    for (const streamed of [false, true]) {
      test(`${name}${streamed ? ' (streamed)' : ''}: a 307 to another origin is refused, nothing reaches it`, async () => {
        const elsewhere = await server((req, res) => json(res, 200, {}));
        const endpoint = await server((req, res) => res.writeHead(307, { location: `${elsewhere.origin}/steal${req.url}` }).end());
        try {
          const a = agent({ model: make(`${endpoint.origin}/v1`), tools: [] });
          const run = streamed ? a.stream({ prompt: 'hi' }).result : a.prompt('hi');
          const e = await rejection(run);
          assert.ok(e instanceof ModelError, `${e?.name}: ${e?.message}`);
          assert.equal(e.status, 307);
          assert.equal(e.retryable, false);
          assert.match(e.message, new RegExp(`redirected the request to another origin, ${elsewhere.origin.replace(/[.]/g, '\\.')}`));
          assert.equal(endpoint.requests.length, 1, 'not retried');
          assert.equal(endpoint.requests[0].headers[header] !== undefined, true, 'the key went to its own origin');
          assert.deepEqual(elsewhere.requests, [], 'nothing reached the other origin');
        } finally {
          await Promise.all([elsewhere.close(), endpoint.close()]);
        }
      });
    }
  }

  test('a redirect within the origin is followed with the same request; a loop ends after 5', async () => {
    const s = await server((req, res, body) => {
      if (req.url.startsWith('/old/')) return res.writeHead(308, { location: req.url.replace('/old/', '/new/') }).end();
      if (req.url.startsWith('/loop')) return res.writeHead(307, { location: '/loop' }).end();
      assert.equal(req.headers['x-api-key'], KEY);
      assert.ok(JSON.parse(body).messages, 'the body followed');
      return json(res, 200, { content: [{ type: 'text', text: 'moved fine' }], stop_reason: 'end_turn' });
    });
    try {
      const ok = await agent({ model: anthropic({ apiKey: KEY, model: 'm', baseURL: `${s.origin}/old` }) }).prompt('hi');
      assert.equal(ok.text, 'moved fine');
      assert.deepEqual(s.requests.map((r) => [r.method, r.url]), [['POST', '/old/v1/messages'], ['POST', '/new/v1/messages']]);
      const e = await rejection(agent({ model: anthropic({ apiKey: KEY, model: 'm', baseURL: `${s.origin}/loop`, maxRetries: 0 }) }).prompt('hi'));
      assert.ok(e instanceof ModelError);
      assert.match(e.message, /redirected the request more than 5 times/);
    } finally {
      await s.close();
    }
  });

  test('MCP: a 307 to another origin is refused for the listing and for a call; the headers and arguments stay', async () => {
    const elsewhere = await server((req, res) => json(res, 200, {}));
    let redirectCalls = false;
    const mcp = await server((req, res, body) => {
      const m = JSON.parse(body || '{}');
      if (m.method === 'tools/call' && redirectCalls) return res.writeHead(307, { location: `${elsewhere.origin}/mcp` }).end();
      return modernAnswer(m, res);
    });
    try {
      const tools = await mcpTools({ url: `${mcp.origin}/mcp`, headers: { authorization: `Bearer ${TOKEN}` } });
      redirectCalls = true;
      const model = async (r) => (r.messages.length === 1 ? turn(toolUse('c1', 'echo', { secret: 'argument-value-123' })) : { content: [{ type: 'text', text: 'x' }] });
      const e = await rejection(agent({ model, tools }).prompt('go'));
      assert.ok(e instanceof McpError, `${e?.name}: ${e?.message}`);
      assert.equal(e.status, 307);
      assert.match(e.message, /another origin/);
      assert.ok(e.checkpoint, 'the checkpoint from before the call');
      const listing = await server((req, res) => res.writeHead(302, { location: `${elsewhere.origin}/mcp` }).end());
      const e2 = await rejection(mcpTools({ url: `${listing.origin}/mcp`, headers: { authorization: `Bearer ${TOKEN}` } }));
      assert.ok(e2 instanceof McpError);
      await listing.close();
      assert.deepEqual(elsewhere.requests, [], 'nothing reached the other origin');
    } finally {
      await Promise.all([elsewhere.close(), mcp.close()]);
    }
  });
});

// ---- 2. memory bounded by the limits the user set ------------------------------------------------------

/** Runs hostile answer `cause` against a fresh instance in its own process: the wasm memory's growth and the error. */
function memoryCost(cause, limit) {
  const child = fileURLToPath(new URL('./scripts/hostile-memory.mjs', import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [child, cause, String(limit)], { timeout: 60_000, maxBuffer: 1 << 20 }, (e, out, err) => {
      if (e) reject(new Error(`${e.message}\n${err}`));
      else resolve(JSON.parse(out));
    });
  });
}

describe('2. memory stays bounded whatever a server sends (each cause in a fresh instance: 96 MB, or 2.6 MB of tiny objects)', () => {
  const MB = 1024 * 1024;
  // Each bound: a few times what the limit lets in (a buffer that grows while it reads, and the allocator's
  // slack); 96 MB sent grows it by 96 to 500 MB without the bounds, and 2.6 MB of tiny objects by 160 MB.
  const cases = [
    ['plain-answer', 2 * MB, ModelError.name, /answered more than 2097152 bytes \(the agent's maxCheckpointBytes\): the rest was not read/, 5],
    ['error-body', 2 * MB, ModelError.name, /HTTP 400/, 1],
    ['endless-event', 2 * MB, ModelError.name, /streamed more than 2097152 bytes/, 10],
    ['amplified-answer', 32 * MB, ModelError.name, /answered 2600101 bytes of JSON that would take about \d+ MB once read \(more than 32 times their length\): refused unread/, 8],
    ['mcp-endless-event', 2 * MB, McpError.name, /a server-sent event is longer than 2097152 bytes/, 10],
    ['mcp-error-body', 2 * MB, McpError.name, /HTTP 500/, 1],
    ['mcp-amplified-listing', 16 * MB, McpError.name, /more than 32 times their length\): refused unread/, 8],
  ];
  for (const [cause, limit, name, message, bound] of cases) {
    test(`${cause}: a typed error, and the memory grows by less than ${bound} MB`, async () => {
      const got = await memoryCost(cause, limit);
      assert.equal(got.name, name, JSON.stringify(got));
      assert.match(got.message, message);
      assert.ok(got.mb < bound, `the wasm memory grew by ${got.mb.toFixed(1)} MB (${JSON.stringify(got)})`);
    });
  }
});

// ---- 3. the fingerprint covers each approval rule ------------------------------------------------------

describe('3. an approval rule changed while a run waits makes another agent', () => {
  const KEYS = { current: 'k', keys: { k: 'a secret of enough bytes for hmac-sha256' } };
  const script = (r) => (r.messages.length === 1 ? turn(toolUse('p1', 'pay', { amount: 50 })) : { content: [{ type: 'text', text: 'paid' }] });
  const pay = (needsApproval) => defineTool({ name: 'pay', schema: { type: 'object' }, handle: () => 'paid', needsApproval });
  // Each rule pauses the first call the same way (50 > 10, 50 > 40): only the rule itself differs.
  const rules = {
    'a predicate': (input) => input.amount > 10,
    'a tightened predicate': (input) => input.amount > 40,
    true: true,
    '{ expiresInMs }': { expiresInMs: 60_000 },
  };

  for (const [from, a] of Object.entries(rules)) {
    for (const [to, b] of Object.entries(rules)) {
      if (from === to) continue;
      test(`paused under ${from}, resumed under ${to}: refused (BINDING), nothing runs`, async () => {
        let ran = 0;
        const counted = defineTool({ name: 'pay', schema: { type: 'object' }, handle: () => { ran += 1; return 'paid'; }, needsApproval: b });
        const paused = await agent({ model: script, tools: [pay(a)], checkpointKeys: KEYS }).prompt('pay');
        assert.ok(isInterrupted(paused));
        const e = await rejection(agent({ model: script, tools: [counted], checkpointKeys: KEYS }).resume(JSON.stringify(paused.checkpoint), { type: 'approve' }));
        assert.ok(e instanceof CheckpointError, `${e?.name}: ${e?.message}`);
        assert.equal(e.code, 'BINDING', e.message);
        assert.equal(ran, 0);
      });
    }
  }

  test('the very same rule (the same source text) resumes', async () => {
    const rule = (input) => input.amount > 10;
    const paused = await agent({ model: script, tools: [pay(rule)], checkpointKeys: KEYS }).prompt('pay');
    const again = (input) => input.amount > 10; // another function object, the same text
    const done = await agent({ model: script, tools: [pay(again)], checkpointKeys: KEYS }).resume(JSON.stringify(paused.checkpoint), { type: 'approve' });
    assert.equal(done.text, 'paid');
  });
});

// ---- 4. a paused MCP call goes back only to the server that asked -------------------------------------

/** One origin in front of two MCP servers: `/a/mcp` is `a`'s, `/b/mcp` is `b`'s (as behind a gateway). */
async function gateway(a, b) {
  const seen = { a: 0, b: 0 };
  const front = http.createServer(async (req, res) => {
    const which = req.url.startsWith('/a/') ? 'a' : 'b';
    seen[which] += 1;
    const target = new URL(req.url.replace(/^\/[ab]/, ''), which === 'a' ? a.url : b.url);
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = { ...req.headers };
    delete headers.host;
    const up = http.request(target, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    up.end(Buffer.concat(chunks));
  });
  await new Promise((r) => front.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${front.address().port}`;
  return { a: `${origin}/a/mcp`, b: `${origin}/b/mcp`, seen, close: () => new Promise((r) => { front.closeAllConnections(); front.close(r); }) };
}

describe('4. a paused MCP call resumes only against the same URL, path included', () => {
  for (const [era, start, headers] of [['2026-07-28', modernServer, { authorization: `Bearer ${TOKEN}` }], ['2025-11-25', legacyServer, undefined]]) {
    test(`${era}: moved to the other server of the same origin: McpError, nothing sent there; the right one completes`, async () => {
      const [a, b] = await Promise.all([start(), start()]);
      const g = await gateway(a, b);
      try {
        const model = async (r) => (r.messages.length === 1 ? turn(toolUse('b1', 'book', { city: 'Oslo' })) : { content: [{ type: 'text', text: 'done' }] });
        const paused = await agent({ model, tools: await mcpTools({ url: g.a, headers }) }).prompt('book');
        assert.ok(isInterrupted(paused));
        const text = JSON.stringify(paused.checkpoint);
        assert.ok(!text.includes('/a/mcp'), 'the path itself is not in the checkpoint');
        const other = await mcpTools({ url: g.b, headers });
        const before = g.seen.b;
        const e = await rejection(agent({ model, tools: other }).resume(text, { type: 'accept', content: { date: '2026-11-30' } }));
        assert.ok(e instanceof McpError, `${e?.name}: ${e?.message}`);
        assert.match(e.message, /asked by http:\/\/127\.0\.0\.1:\d+ at another path, not this server/);
        assert.equal(g.seen.b, before, 'nothing reached the other path');
        assert.equal(b.stats.calls.book ?? 0, 0);
        const done = await agent({ model, tools: await mcpTools({ url: g.a, headers }) }).resume(text, { type: 'accept', content: { date: '2026-11-30' } });
        assert.equal(done.text, 'done');
        assert.match(done.messages.at(-2).content[0].content, /booked Oslo on 2026-11-30/);
      } finally {
        await Promise.all([g.close(), a.close(), b.close()]);
      }
    });
  }
});

// ---- 5. whatever a program's fetch returns is a typed error of that call ------------------------------

describe("5. a program's fetch that answers something other than a Response", () => {
  const answers = {
    undefined: () => undefined,
    'a string': () => 'not a response',
    '{}': () => ({}),
    'a status without headers': () => ({ status: 200 }),
    'headers whose get throws': () => ({ status: 200, headers: { get() { throw new Error('boom'); } }, text: async () => '{}' }),
    'a body that gives numbers': () => ({ status: 200, headers: new Headers(), body: { getReader: () => ({ read: async () => ({ done: false, value: 42 }), cancel: async () => {} }) } }),
    'a throw': () => { throw new TypeError('the fetch broke'); },
    'a rejection with a plain value': () => Promise.reject(7),
  };
  for (const [what, answer] of Object.entries(answers)) {
    test(`${what}: McpError, and a run in flight on the same instance completes`, async () => {
      const replaced = memoryUsage().instancesReplaced;
      let release;
      const held = new Promise((r) => { release = r; });
      const inFlight = agent({ model: async () => { await held; return { content: [{ type: 'text', text: 'still here' }] }; } }).prompt('wait');
      const e = await rejection(mcpTools({ url: 'http://127.0.0.1:9/mcp', fetch: answer }));
      assert.ok(e instanceof McpError, `${e?.name}: ${e?.message}`);
      release();
      assert.equal((await inFlight).text, 'still here');
      assert.equal(memoryUsage().instancesReplaced, replaced, 'no instance was lost');
    });
  }
});

// ---- 6. tokens echoed in JSON-RPC errors are scrubbed --------------------------------------------------

describe('6. a token a server echoes in an error never reaches the checkpoint, events, errors or the model', () => {
  for (const status of [200, 400, 422]) {
    test(`a JSON-RPC error with HTTP ${status} quoting the Authorization header`, async () => {
      const s = await server((req, res, body) => {
        const m = JSON.parse(body || '{}');
        if (m.method !== 'tools/call') return modernAnswer(m, res);
        return json(res, status, { jsonrpc: '2.0', id: m.id, error: { code: -32602, message: `invalid credentials ${req.headers.authorization} for ${req.headers['x-tenant-key']}` } });
      });
      try {
        const tools = await mcpTools({ url: `${s.origin}/mcp`, headers: { authorization: `Bearer ${TOKEN}`, 'x-tenant-key': 'tenant-key-abcdef123' } });
        const requests = [];
        const model = async (r) => { requests.push(structuredClone(r)); return r.messages.length === 1 ? turn(toolUse('c1', 'echo', {})) : { content: [{ type: 'text', text: 'ok' }] }; };
        const events = [];
        const done = await agent({ model, tools }).prompt('go', { onEvent: (e) => events.push(e) });
        const said = requests[1].messages.at(-1).content[0].content;
        assert.match(said, /invalid credentials (Bearer )?\[redacted\] for \[redacted\]/);
        for (const v of [done.checkpoint, events, requests, done.messages]) {
          const t = JSON.stringify(v);
          assert.ok(!t.includes(TOKEN.slice(4, 14)) && !t.includes('tenant-key-ab'), `leaked: ${t.slice(0, 300)}`);
        }
      } finally {
        await s.close();
      }
    });
  }

  test('9. a URL with user:password: the McpError never shows the password', async () => {
    const e = await rejection(mcpTools({ url: 'http://admin:hunter2-the-password@127.0.0.1:9/mcp' }));
    assert.ok(e instanceof McpError, `${e?.name}: ${e?.message}`);
    assert.ok(!e.message.includes('hunter2'), e.message);
    assert.ok(!JSON.stringify({ ...e, message: e.message }).includes('hunter2'));
  });
});

// ---- 7. Gemini's abnormal endings --------------------------------------------------------------------

describe("7. Gemini: an answer that ended abnormally runs none of its calls", () => {
  for (const reason of ['MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'TOO_MANY_TOOL_CALLS', 'OTHER', 'LANGUAGE', 'A_REASON_NOT_DOCUMENTED_YET']) {
    test(reason, async () => {
      const s = await server((req, res) => json(res, 200, {
        candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'pay', args: { amount: 5 } } }] }, finishReason: reason }],
        usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 3 },
      }));
      try {
        let ran = 0;
        const pay = defineTool({ name: 'pay', schema: { type: 'object' }, handle: () => { ran += 1; return 'paid'; } });
        const e = await rejection(agent({ model: gemini({ apiKey: KEY, model: 'gemini-test', baseURL: s.origin }), tools: [pay] }).prompt('pay'));
        assert.ok(e instanceof ModelError, `${e?.name}: ${e?.message}`);
        assert.equal(e.stopReason, reason.toLowerCase());
        assert.match(e.message, /ended abnormally/);
        assert.equal(ran, 0);
        assert.ok(e.checkpoint, 'with the checkpoint');
        assert.deepEqual(e.checkpoint.usage, { inputTokens: 7, outputTokens: 3 }, 'the tokens it spent are counted');
      } finally {
        await s.close();
      }
    });
  }
});

// ---- 8. timeoutMs bounds a fetch that ignores its signal ---------------------------------------------

describe('8. timeoutMs ends a call at the deadline even when the fetch ignores its signal', () => {
  test('a fetch that never answers: the listing fails at timeoutMs', async () => {
    const started = Date.now();
    const e = await rejection(mcpTools({ url: 'http://127.0.0.1:9/mcp', timeoutMs: 300, fetch: () => new Promise(() => {}) }));
    assert.ok(e instanceof McpError, `${e?.name}: ${e?.message}`);
    assert.match(e.message, /timed out after 300 ms \(timeoutMs\)/);
    assert.ok(Date.now() - started < 5000, `settled after ${Date.now() - started} ms`);
  });

  test('a call whose answer body never ends: McpError at timeoutMs, with the checkpoint', async () => {
    const s = await server((req, res, body) => modernAnswer(JSON.parse(body || '{}'), res));
    try {
      const fetch = async (url, init) => {
        if (JSON.parse(init.body).method !== 'tools/call') return globalThis.fetch(url, init);
        const never = new ReadableStream({ pull: () => new Promise(() => {}) });
        return new Response(never, { headers: { 'content-type': 'text/event-stream' } });
      };
      const tools = await mcpTools({ url: `${s.origin}/mcp`, timeoutMs: 300, fetch });
      const model = async (r) => (r.messages.length === 1 ? turn(toolUse('c1', 'echo', {})) : { content: [{ type: 'text', text: 'x' }] });
      const started = Date.now();
      const e = await rejection(agent({ model, tools }).prompt('go'));
      assert.ok(e instanceof McpError, `${e?.name}: ${e?.message}`);
      assert.match(e.message, /timed out after 300 ms/);
      assert.ok(e.checkpoint);
      assert.ok(Date.now() - started < 5000);
    } finally {
      await s.close();
    }
  });
});

after(() => {});
