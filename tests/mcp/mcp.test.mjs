// MCP tools through the built package (real wasm in Node) against real servers on 127.0.0.1: the official v2
// SDK (2026-07-28, MRTR elicitation, a bearer token), the official 1.x SDK (2025-11-25, sessions, push
// elicitation) and the reference server-everything.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agent, mcpTools, McpError, AbortedError, DecisionError, isInterrupted } from 'resumable-agent';
import { modernServer, legacyServer, everythingServer, childServer, TOKEN } from './servers.mjs';
import { recordingModel, toolUse, turn } from '../node/helpers.mjs';

const auth = { authorization: `Bearer ${TOKEN}` };
const modern = await modernServer();
const legacy = await legacyServer();
after(() => Promise.all([modern.close(), legacy.close()]));

const stats = async (server) => (await fetch(server.url.replace(/\/mcp$/, '/stats'))).json();
const dir = mkdtempSync(join(tmpdir(), 'mcp-'));
const child = fileURLToPath(new URL('./resume-child.mjs', import.meta.url));

/** Resumes `checkpoint` with `answer` in a new Node process; its outcome. */
function resumeElsewhere(url, token, checkpoint, answer, prefix = '') {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(checkpoint));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [child, url, token ?? '-', file, JSON.stringify(answer), prefix], { timeout: 20_000 }, (e, out, err) => {
      if (e) reject(new Error(`${e.message}\n${err}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1)));
    });
  });
}

/** Everything a test could leak a token into. */
const noToken = (...values) => values.forEach((v) => assert.ok(!JSON.stringify(v ?? null).includes(TOKEN.slice(4, 16)), `a token fragment leaked: ${JSON.stringify(v).slice(0, 300)}`));

test('a 2026-07-28 server: its tools listed with their schemas and a prefix, results of every kind reach the model', async () => {
  const tools = await mcpTools({ url: modern.url, headers: auth, prefix: 'm_' });
  assert.deepEqual(tools.map((t) => t.name), ['m_add', 'm_weather', 'm_fails', 'm_book', 'm_sign', 'm_slow']);
  assert.deepEqual(tools[0].inputSchema.required, ['a', 'b']);
  assert.equal(tools[0].description, 'Adds two numbers.');
  assert.deepEqual(tools[0].mcp, { server: new URL(modern.url).origin, tool: 'add', protocol: '2026-07-28' });
  noToken(tools);
  const { model, requests } = recordingModel([
    turn(toolUse('c1', 'm_add', { a: 2, b: 3 }), toolUse('c2', 'm_weather', { city: 'Oslo' }), toolUse('c3', 'm_fails', {})),
    { content: [{ type: 'text', text: 'ok' }] },
  ]);
  const events = [];
  const a = agent({ model, tools });
  const result = await a.prompt('go', { onEvent: (e) => events.push(e) });
  assert.equal(result.text, 'ok');
  assert.deepEqual(requests[0].tools.map((t) => t.name), ['m_add', 'm_weather', 'm_fails', 'm_book', 'm_sign', 'm_slow']);
  const results = requests[1].messages.at(-1).content;
  assert.deepEqual(results.map((r) => [r.content, r.isError ?? false]), [
    ['5', false],
    ['{"celsius":21,"city":"Oslo"}', false],
    ['the database is read-only', true],
  ]);
  noToken(result, events, requests);
});

test('a wrong or missing token is an McpError naming the server and its status, with no token anywhere', async () => {
  for (const headers of [undefined, { authorization: 'Bearer not-the-token-123456' }]) {
    const err = await mcpTools({ url: modern.url, headers }).catch((e) => e);
    assert.ok(err instanceof McpError, String(err));
    assert.equal(err.status, 401);
    assert.equal(err.server, new URL(modern.url).origin);
    assert.match(err.message, /refused the credentials/);
    assert.ok(!err.message.includes('not-the-token-123456'.slice(0, 10)), err.message);
  }
  const bad = await mcpTools({ url: 'ftp://x' }).catch((e) => e);
  assert.equal(bad.name, 'ConfigError');
  const typo = await mcpTools({ url: modern.url, header: auth }).catch((e) => e);
  assert.match(typo.message, /did you mean "headers"/);
});

test('elicitation (2026-07-28): paused, stringified, answered from a new process — accept, a second round, decline, cancel', async () => {
  const tools = await mcpTools({ url: modern.url, headers: auth });
  const ask = async (city) => {
    const r = await agent({ model: recordingModel([turn(toolUse('b1', 'book', { city })), { content: [{ type: 'text', text: 'done' }] }]).model, tools }).prompt('book');
    assert.ok(isInterrupted(r));
    return r.checkpoint;
  };
  const cp = await ask('Oslo');
  assert.deepEqual(cp.interrupts.map((i) => [i.kind, i.id, i.toolName, i.message]), [['elicitation', 'b1/date', 'book', 'Which day in Oslo?']]);
  assert.equal(cp.interrupts[0].requestedSchema.properties.date.format, 'date');
  assert.equal(cp.pendingInput.state.requestState, 'ask:Oslo', 'requestState kept verbatim');
  noToken(cp);
  const before = (await stats(modern)).calls.book;

  const accepted = await resumeElsewhere(modern.url, TOKEN, cp, { type: 'accept', content: { date: '2026-11-30', seats: 2 } });
  assert.equal(accepted.text, 'read: booked Oslo on 2026-11-30');
  assert.equal((await stats(modern)).calls.book, before + 1, 'one retry of the call');

  const december = await resumeElsewhere(modern.url, TOKEN, cp, { type: 'accept', content: { date: '2026-12-24' } });
  assert.equal(december.interrupted, true, 'a second input_required round pauses again');
  assert.equal(december.checkpoint.interrupts[0].id, 'b1/sure');
  const sure = await resumeElsewhere(modern.url, TOKEN, december.checkpoint, { decisions: { 'b1/sure': { type: 'accept', content: { yes: true } } } });
  assert.equal(sure.text, 'read: booked Oslo on 2026-12-24');

  assert.equal((await resumeElsewhere(modern.url, TOKEN, cp, { type: 'decline' })).text, 'read: not booked: decline');
  assert.equal((await resumeElsewhere(modern.url, TOKEN, cp, { type: 'cancel' })).text, 'read: not booked: cancel');
});

test('content that misses the requested schema is a DecisionError naming the request, and nothing is sent', async () => {
  const tools = await mcpTools({ url: modern.url, headers: auth });
  const a = agent({ model: recordingModel([turn(toolUse('b1', 'book', { city: 'Oslo' })), { content: [{ type: 'text', text: 'done' }] }]).model, tools });
  const cp = (await a.prompt('book')).checkpoint;
  const before = await stats(modern);
  for (const [answer, says] of [
    [{ type: 'accept', content: { date: 'next friday' } }, /content\.date: expected a date/],
    [{ type: 'accept', content: { date: '2026-11-30', seats: 9 } }, /content\.seats/],
    [{ type: 'accept', content: {} }, /missing required property "date"/],
    [{ type: 'accept', content: { date: '2026-11-30', seats: 2.5 } }, /content\.seats/],
    ['tomorrow', /not a text answer/],
    [{ type: 'answer', text: 'x' }, /"accept" \(with content\)/],
  ]) {
    const err = await a.resume(cp, answer).catch((e) => e);
    assert.ok(err instanceof DecisionError, `${JSON.stringify(answer)}: ${err}`);
    assert.equal(err.interruptId, 'b1/date');
    assert.match(err.message, says);
  }
  const after_ = await stats(modern);
  assert.equal(after_.requests, before.requests, 'no request reached the server');
});

test('a 2025-11-25 server (1.x SDK): listed over a session, results, and push elicitation paused and answered from a new process', async () => {
  const tools = await mcpTools({ url: legacy.url });
  assert.deepEqual(tools.map((t) => [t.name, t.mcp.protocol]), [['add', '2025-11-25'], ['fails', '2025-11-25'], ['slow', '2025-11-25'], ['book', '2025-11-25'], ['register', '2025-11-25']]);
  const { model, requests } = recordingModel([
    turn(toolUse('c1', 'add', { a: 40, b: 2 }), toolUse('c2', 'fails', {}), toolUse('c3', 'book', { city: 'Rome' })),
    { content: [{ type: 'text', text: 'done' }] },
  ]);
  const paused = await agent({ model, tools }).prompt('go');
  assert.ok(isInterrupted(paused));
  assert.deepEqual(paused.checkpoint.toolResults.map((r) => [r.content, r.isError ?? false]), [['42', false], ['the database is read-only', true]]);
  assert.deepEqual(paused.checkpoint.interrupts.map((i) => [i.kind, i.id, i.message]), [['elicitation', 'c3/elicitation', 'Which day in Rome?']]);
  assert.ok(paused.checkpoint.pendingInput.state.lastEventId, 'the stream position is kept');
  const done = await resumeElsewhere(legacy.url, null, paused.checkpoint, { type: 'accept', content: { date: '2026-11-30' } });
  assert.equal(done.text, 'read: 42 | the database is read-only | booked Rome on 2026-11-30');
  assert.equal((await stats(legacy)).calls.book, 1, 'the call ran once: answered, not called again');
  assert.equal(requests.length, 1);
});

test('2025-11-25: a resume after the server lost the session is an McpError with the checkpoint, and the tool is not called again', async () => {
  const server = await childServer('legacy');
  const tools = await mcpTools({ url: server.url });
  const paused = await agent({ model: recordingModel([turn(toolUse('c1', 'book', { city: 'Rome' })), { content: [{ type: 'text', text: 'done' }] }]).model, tools }).prompt('go');
  assert.ok(isInterrupted(paused));
  await server.kill();
  const again = await childServer('legacy', server.port);
  try {
    const out = await resumeElsewhere(again.url, null, paused.checkpoint, { type: 'accept', content: { date: '2026-11-30' } });
    assert.equal(out.error, 'McpError', JSON.stringify(out));
    assert.match(out.message, /no longer holds the paused call/);
    assert.equal(out.checkpoint.interrupts[0].id, 'c1/elicitation', 'the checkpoint is the paused one');
    assert.equal(((await stats(again)).calls.book ?? 0), 0, 'never called again');
    // The way out: deny ends the call without the server.
    const denied = await resumeElsewhere(again.url, null, out.checkpoint, { type: 'deny', message: 'server restarted' });
    assert.equal(denied.text, 'read: The user declined to answer: server restarted');
  } finally {
    await again.kill();
  }
});

test('a server killed mid-run: McpError with the checkpoint from before the call; once restarted, resuming calls it', async () => {
  const server = await childServer('modern');
  const tools = await mcpTools({ url: server.url, headers: auth });
  await server.kill();
  const { model } = recordingModel([turn(toolUse('c1', 'add', { a: 1, b: 2 })), { content: [{ type: 'text', text: 'sum done' }] }]);
  const err = await agent({ model, tools }).prompt('add').catch((e) => e);
  assert.ok(err instanceof McpError, String(err));
  assert.equal(err.server, new URL(server.url).origin);
  assert.equal(err.checkpoint.toolResults, undefined, 'the call is not recorded as done');
  assert.equal(err.checkpoint.messages.at(-1).content[0].id, 'c1');
  noToken(err.message, err.checkpoint);
  const again = await childServer('modern', server.port);
  try {
    const done = await resumeElsewhere(again.url, TOKEN, err.checkpoint, null);
    assert.equal(done.text, 'read: 3');
  } finally {
    await again.kill();
  }
});

for (const [era, server, headers] of [['2026-07-28', modern, auth], ['2025-11-25', legacy, undefined]]) test(`an aborted run cancels the MCP call in flight (${era}): AbortedError with the checkpoint, the server sees the cancellation`, async () => {
  const tools = await mcpTools({ url: server.url, headers });
  const controller = new AbortController();
  const { model } = recordingModel([turn(toolUse('s1', 'slow', { ms: 20_000 }))]);
  const started = Date.now();
  setTimeout(() => controller.abort(), 300);
  const before = (await stats(server)).cancelled;
  const err = await agent({ model, tools }).prompt('wait', { signal: controller.signal }).catch((e) => e);
  assert.ok(err instanceof AbortedError, String(err));
  assert.ok(Date.now() - started < 5_000, 'stopped at once, not after the call');
  assert.equal(err.checkpoint.toolResults, undefined);
  for (let i = 0; i < 50 && (await stats(server)).cancelled === before; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal((await stats(server)).cancelled, before + 1, 'the server saw the call cancelled');
});

test('the reference server-everything: its tools, a call, and its elicitation paused and answered from a new process', async () => {
  const everything = await everythingServer();
  try {
    const tools = await mcpTools({ url: everything.url, prefix: 'ev_' });
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('ev_get-sum') && names.includes('ev_trigger-elicitation-request'), names.join(' '));
    const { model, requests } = recordingModel([
      turn(toolUse('c1', 'ev_get-sum', { a: 2, b: 40 }), toolUse('c2', 'ev_trigger-elicitation-request', {})),
      { content: [{ type: 'text', text: 'done' }] },
    ]);
    const paused = await agent({ model, tools }).prompt('go');
    assert.ok(isInterrupted(paused), JSON.stringify(paused.checkpoint.toolResults));
    assert.match(paused.checkpoint.toolResults[0].content, /42/);
    const i = paused.checkpoint.interrupts[0];
    assert.equal(i.kind, 'elicitation');
    assert.equal(i.requestedSchema.properties.email.format, 'email');
    const content = { name: 'Ada', check: true, email: 'ada@example.com', homepage: 'https://example.com', birthdate: '1815-12-10' };
    const bad = await agent({ model, tools }).resume(paused.checkpoint, { type: 'accept', content: { ...content, email: 'not-an-email' } }).catch((e) => e);
    assert.ok(bad instanceof DecisionError);
    assert.match(bad.message, /content\.email: expected an email address/);
    const done = await resumeElsewhere(everything.url, null, paused.checkpoint, { type: 'accept', content: Object.fromEntries(Object.entries(content).filter(([k]) => k in i.requestedSchema.properties)) }, 'ev_');
    assert.match(done.text, /42/);
    assert.match(done.text, /accept/i, done.text);
    assert.equal(requests.length, 1);
  } finally {
    await everything.close();
  }
});

test('mcpTools({ fetch }): listing and calls go through the program\'s fetch (e.g. one that adds a header), and a fetch answering without a promise works', async () => {
  const seen = [];
  const fetch = (url, init) => {
    seen.push(init.method);
    return globalThis.fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${TOKEN}` } });
  };
  const tools = await mcpTools({ url: modern.url, fetch });
  const { model } = recordingModel([turn(toolUse('c1', 'add', { a: 1, b: 1 })), { content: [{ type: 'text', text: 'two' }] }]);
  const result = await agent({ model, tools }).prompt('add');
  assert.equal(result.text, 'two');
  assert.deepEqual(seen, ['POST', 'POST', 'POST'], 'discover, list, call');
  const bad = await mcpTools({ url: modern.url, fetch: 'yes' }).catch((e) => e);
  assert.match(bad.message, /mcpTools\(options\)\.fetch: expected a function/);
  // A replaced global fetch that answers a Response itself (not a promise of one) is read like any other.
  const real = globalThis.fetch;
  globalThis.fetch = (url) => Response.json({ jsonrpc: '2.0', id: 'x', error: { code: -32601, message: 'no' } }, { status: 404 });
  try {
    const err = await mcpTools({ url: 'http://127.0.0.1:9/mcp' }).catch((e) => e);
    assert.ok(err instanceof McpError, String(err));
    assert.equal(err.status, 404);
  } finally {
    globalThis.fetch = real;
  }
});

test('2025-11-25: a call after the server dropped the listing\'s session opens a new one and runs once', async () => {
  const server = await childServer('legacy');
  const tools = await mcpTools({ url: server.url });
  await server.kill();
  const again = await childServer('legacy', server.port);
  try {
    const { model } = recordingModel([turn(toolUse('c1', 'add', { a: 20, b: 22 })), { content: [{ type: 'text', text: 'ok' }] }]);
    const result = await agent({ model, tools }).prompt('add');
    assert.equal(result.messages[2].content[0].content, '42');
    const s = await stats(again);
    assert.equal(s.calls.add, 1);
    assert.equal(s.sessions, 1, 'one new handshake');
  } finally {
    await again.kill();
  }
});

test('a JSON-RPC error to a call (an unknown tool, bad arguments) is an error result the model reads, not the end of the run', async () => {
  // A fetch that renames the tool on the wire, so the server refuses the call as a protocol error.
  const fetch = (url, init) => {
    const headers = { ...init.headers, ...auth };
    if (headers['mcp-name'] === 'add') headers['mcp-name'] = 'nope';
    return globalThis.fetch(url, { ...init, headers, body: init.body.replace('"name":"add"', '"name":"nope"') });
  };
  for (const [url, f] of [[modern.url, fetch], [legacy.url, (u, i) => globalThis.fetch(u, { ...i, body: i.body.replace('"name":"add"', '"name":"nope"') })]]) {
    const tools = await mcpTools({ url, fetch: f });
    const { model, requests } = recordingModel([turn(toolUse('c1', 'add', { a: 1, b: 1 })), { content: [{ type: 'text', text: 'recovered' }] }]);
    const result = await agent({ model, tools }).prompt('add');
    assert.equal(result.text, 'recovered');
    const [r] = requests[1].messages.at(-1).content;
    assert.equal(r.isError, true);
    assert.match(r.content, /nope/, r.content);
  }
  // A server answering the call with a JSON-RPC error object (the SDKs above fold theirs into isError results).
  const refusing = async (url, init) => {
    const m = JSON.parse(init.body);
    if (m.method !== 'tools/call') return globalThis.fetch(url, { ...init, headers: { ...init.headers, ...auth } });
    return Response.json({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'Invalid params: b must be a number' } });
  };
  const tools = await mcpTools({ url: modern.url, fetch: refusing });
  const { model, requests } = recordingModel([turn(toolUse('c1', 'add', { a: 1, b: 2 })), { content: [{ type: 'text', text: 'recovered' }] }]);
  assert.equal((await agent({ model, tools }).prompt('add')).text, 'recovered');
  const [r] = requests[1].messages.at(-1).content;
  assert.deepEqual([r.content, r.isError], ['Invalid params: b must be a number (JSON-RPC error -32602)', true]);
});

test('a session pauses on an elicitation, saves it in its step log, and a reply from another agent object answers it', async () => {
  const { memorySaver } = await import('resumable-agent');
  const saver = memorySaver();
  const model = async (req) => (req.messages.length === 1 ? turn(toolUse('b1', 'book', { city: 'Oslo' })) : { content: [{ type: 'text', text: `read: ${req.messages.at(-1).content[0].content}` }] });
  const make = async () => agent({ model, tools: await mcpTools({ url: modern.url, headers: auth }) });
  const paused = await (await make()).session(saver, 'mcp-s1').prompt('book');
  assert.ok(isInterrupted(paused));
  assert.equal(paused.checkpoint.pendingInput.state.requestState, 'ask:Oslo');
  const wrong = await (await make()).session(saver, 'mcp-s1').reply({ type: 'accept', content: { date: 'x' } }).catch((e) => e);
  assert.ok(wrong instanceof DecisionError, String(wrong));
  const done = await (await make()).session(saver, 'mcp-s1').reply({ type: 'accept', content: { date: '2026-11-30' } });
  assert.equal(done.text, 'read: booked Oslo on 2026-11-30');
});

test('URL-mode elicitation (forms only are declared): the v2 server refuses it for us, and one asking anyway gets an error result naming only the URL\'s origin', async () => {
  const tools = await mcpTools({ url: modern.url, headers: auth });
  const { model, requests } = recordingModel([turn(toolUse('u1', 'sign', {})), { content: [{ type: 'text', text: 'ok' }] }]);
  assert.equal((await agent({ model, tools }).prompt('sign in')).text, 'ok');
  const [refused] = requests[1].messages.at(-1).content;
  assert.equal(refused.isError, true);
  assert.match(refused.content, /do not declare the required capability \(JSON-RPC error -32\d+\)/);
  // A server that asks anyway.
  const asking = async (url, init) => {
    const m = JSON.parse(init.body);
    if (m.method !== 'tools/call') return globalThis.fetch(url, { ...init, headers: { ...init.headers, ...auth } });
    return Response.json({ jsonrpc: '2.0', id: m.id, result: { resultType: 'input_required', inputRequests: {
      login: { method: 'elicitation/create', params: { mode: 'url', message: 'Sign in', url: 'https://auth.example.com/login?state=s3cr3t' } },
    } } });
  };
  const second = recordingModel([turn(toolUse('u1', 'sign', {})), { content: [{ type: 'text', text: 'ok' }] }]);
  assert.equal((await agent({ model: second.model, tools: await mcpTools({ url: modern.url, fetch: asking }) }).prompt('sign in')).text, 'ok');
  const [r] = second.requests[1].messages.at(-1).content;
  assert.equal(r.isError, true);
  assert.match(r.content, /URL-mode elicitation is not supported, only forms/);
  assert.match(r.content, /https:\/\/auth\.example\.com\)/);
  assert.ok(!r.content.includes('s3cr3t'), r.content);
});

test('a paused checkpoint moved to an agent whose tool of that name is another server\'s: McpError, nothing sent there', async () => {
  const tools = await mcpTools({ url: modern.url, headers: auth });
  const model = async (req) => (req.messages.length === 1 ? turn(toolUse('b1', 'book', { city: 'Oslo' })) : { content: [{ type: 'text', text: 'done' }] });
  const paused = await agent({ model, tools }).prompt('book');
  assert.ok(isInterrupted(paused));
  const other = await modernServer();
  try {
    const elsewhere = await mcpTools({ url: other.url, headers: auth });
    const before = (await stats(other)).requests;
    const err = await agent({ model, tools: elsewhere }).resume(JSON.parse(JSON.stringify(paused.checkpoint)), { type: 'accept', content: { date: '2026-11-30' } }).catch((e) => e);
    assert.ok(err instanceof McpError, String(err));
    assert.match(err.message, /asked by http:\/\/127\.0\.0\.1:\d+, not this server/);
    assert.equal(err.checkpoint.interrupts[0].id, 'b1/date', 'still waiting for the answer');
    assert.equal((await stats(other)).requests, before, 'nothing reached the other server');
    assert.equal((await stats(other)).calls.book, undefined);
  } finally {
    await other.close();
  }
});

test('a 2025 server asking on the standalone stream (the SDK examples\' elicitInput without relatedRequestId): the timeout names it and the fix', async () => {
  const tools = await mcpTools({ url: legacy.url, timeoutMs: 1500 });
  const model = async (req) => (req.messages.length === 1 ? turn(toolUse('r1', 'register', {})) : { content: [{ type: 'text', text: 'done' }] });
  const started = Date.now();
  const err = await agent({ model, tools }).prompt('register me').catch((e) => e);
  assert.ok(err instanceof McpError, String(err));
  assert.match(err.message, /timed out after 1500 ms \(timeoutMs\); if the tool asks for input with an elicitation\/create not related to the call .*relatedRequestId: extra\.requestId/);
  assert.ok(Date.now() - started < 10_000);
  assert.ok(err.checkpoint, 'with the checkpoint from before the call');
});
