// The JS example Worker's POST /stream under wrangler dev (local workerd, KV on disk): a session's events as
// server-sent events with their ids, a client that loses the connection and reconnects with Last-Event-ID
// (missing nothing), the scripted model and the OpenAI provider streaming from the loopback server.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker, ROOT } from './harness.mjs';
import { startServer, API_KEY } from '../providers/server.mjs';

const CONFIG = join(ROOT, 'examples/worker-js/wrangler.toml');

/** Parses SSE text into [{ id?, type, data }]. */
export function parseFrames(text) {
  return text.split('\n\n').filter(Boolean).map((frame) => {
    const id = frame.match(/^id: (.*)$/m)?.[1];
    const type = frame.match(/^event: (.*)$/m)?.[1];
    const data = JSON.parse(frame.match(/^data: (.*)$/m)?.[1] ?? 'null');
    return id === undefined ? { type, data } : { id: Number(id), type, data };
  });
}

/** POSTs to /stream and reads the whole SSE answer as [{ id?, type, data }]. */
export async function streamEvents(url, body, headers = {}) {
  const res = await fetch(`${url}/stream`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, events: parseFrames(text) };
}

const bearer = (token) => ({ authorization: `Bearer ${token}` });

describe('js Worker: POST /stream', () => {
  let dir;
  let provider;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kv-stream-'));
    provider = await startServer();
  });
  after(() => {
    provider.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('scripted model: the session named first, then numbered events; the question as an interrupt; the answer as text-delta events', async () => {
    const w = await startWorker({ config: CONFIG, persistTo: dir, vars: { TEST_ROUTES: 'true', ALLOWED_ORIGINS: 'http://127.0.0.1:1' } });
    try {
      const first = await streamEvents(w.url, { message: 'the app' }, { origin: 'http://127.0.0.1:1' });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('content-type'), 'text/event-stream');
      assert.equal(first.headers.get('access-control-allow-origin'), 'http://127.0.0.1:1', 'a configured origin only');
      const [session, ...events] = first.events;
      assert.equal(session.type, 'session');
      const { sessionId, token } = session.data;
      assert.match(sessionId, /^[A-Za-z0-9_-]{22}$/);
      assert.match(token, /^[A-Za-z0-9_-]{22}$/);
      assert.ok(events.every((e, i) => Number.isSafeInteger(e.id) && (i === 0 || e.id > events[i - 1].id)), 'strictly increasing ids');
      const interrupt = events.find((e) => e.type === 'interrupt');
      assert.equal(interrupt.data.question, 'What is your deadline?');
      assert.deepEqual(events.at(-1).type, 'done');
      assert.deepEqual(events.at(-1).data, { question: 'What is your deadline?', interrupts: interrupt.data.interrupts });

      const second = await streamEvents(w.url, { answer: 'May', sessionId }, bearer(token));
      const texts = second.events.filter((e) => e.type === 'text-delta').map((e) => e.data.text);
      assert.ok(texts.length >= 3, `word by word: ${JSON.stringify(texts)}`);
      assert.equal(texts.join(''), 'Plan for "the app" due May.');
      assert.deepEqual(second.events.at(-1).data, { answer: 'Plan for "the app" due May.' });
      assert.ok(second.events.at(-1).id > events.at(-1).id, 'numbers go on across calls');
      assert.equal(second.events.some((e) => e.type === 'checkpoint'), false, 'checkpoints stay on the server');

      const again = await streamEvents(w.url, { answer: 'June', sessionId }, bearer(token));
      assert.equal(again.status, 409, 'a reply sent again after the end runs nothing');
      const more = await streamEvents(w.url, { message: 'budget is 10k', sessionId }, bearer(token));
      assert.deepEqual(more.events.at(-1).data, { answer: 'Noted: budget is 10k.' }, 'the kept conversation goes on');
      const chosen = await streamEvents(w.url, { message: 'mine', sessionId: 'A'.repeat(22) }, bearer(token));
      assert.equal(chosen.status, 404, 'no session under an id the client made up');
      const stranger = await streamEvents(w.url, { answer: 'June', sessionId });
      assert.equal(stranger.status, 404, "not a stranger's to answer");
      const bad = await fetch(`${w.url}/stream`, { method: 'POST', body: '{"sessionId": "x"}', headers: { origin: 'https://evil.example' } });
      assert.equal(bad.status, 400);
      assert.equal(bad.headers.get('access-control-allow-origin'), null);
      assert.match((await bad.json()).error, /"message" or "answer"/);
    } finally {
      await w.stop();
    }
  });

  test('a client that loses the connection reconnects with Last-Event-ID and misses nothing, while the run goes on', async () => {
    // A slow model: the run is still going when the client goes away.
    const w = await startWorker({ config: CONFIG, persistTo: dir, vars: { TEST_ROUTES: 'true', TEST_MODEL_DELAY_MS: '300', KEEP_COMPLETED: 'true' } });
    try {
      const c = w.client();
      const start = await c.start('the app');
      const { sessionId } = start.body;
      // The answer's stream: read until the first step-start, then drop the connection.
      const controller = new AbortController();
      const res = await fetch(`${w.url}/stream`, { method: 'POST', headers: c.headers(), body: JSON.stringify({ sessionId, answer: 'May' }), signal: controller.signal });
      const reader = res.body.getReader();
      let text = '';
      while (!/event: step-start/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      const seen = parseFrames(text.slice(0, text.lastIndexOf('\n\n') + 2)).filter((e) => e.id !== undefined);
      const lastId = seen.at(-1).id;
      // Reconnect: everything after the last event seen, then the rest as the run writes it.
      const resumed = await streamEvents(w.url, { sessionId }, { ...c.headers(), 'last-event-id': String(lastId) });
      assert.equal(resumed.status, 200);
      const ids = resumed.events.map((e) => e.id);
      assert.ok(ids.every((id) => id > lastId), 'nothing seen twice');
      assert.equal(resumed.events.at(-1).type, 'done');
      assert.deepEqual(resumed.events.at(-1).data, { answer: 'Plan for "the app" due May.' });
      assert.ok(resumed.events.some((e) => e.type === 'step-finish'), 'the step finished while the client was away');
      // What was seen and what came after are every logged event of the session, in order.
      const all = (await streamEvents(w.url, { sessionId }, { ...c.headers(), 'last-event-id': '0' })).events;
      const deltas = ['text-delta', 'tool-call-delta', 'step-restart'];
      const logged = [...seen, ...resumed.events].filter((e) => !deltas.includes(e.type));
      assert.deepEqual(all.filter((e) => e.id >= seen[0].id).map((e) => [e.id, e.type]), logged.map((e) => [e.id, e.type]));
      // Someone else's reconnect: not found, at once (nothing is polled for it).
      const t0 = Date.now();
      const stranger = await streamEvents(w.url, { sessionId }, { 'last-event-id': '0' });
      assert.equal(stranger.status, 404, "someone else's session is not found");
      assert.match(stranger.headers.get('content-type'), /application\/json/, 'an error, not a stream of events');
      assert.ok(Date.now() - t0 < 5000, `answered at once: ${Date.now() - t0} ms`);
    } finally {
      await w.stop();
    }
  });

  test('openaiResponses() inside workerd: a streamed tool turn, its reasoning item sent back verbatim with the call', async () => {
    const w = await startWorker({
      config: CONFIG,
      persistTo: dir,
      vars: { TEST_ROUTES: 'true', MODEL_PROVIDER: 'openai-responses', OPENAI_BASE_URL: `http://127.0.0.1:${provider.port}/openai-responses`, OPENAI_API_KEY: API_KEY, MODEL: 'gpt-test' },
    });
    try {
      const before = provider.state.requests.length;
      const { events } = await streamEvents(w.url, { message: 'scenario:tool' });
      assert.match(events.at(-1).data.answer, /^Found /, JSON.stringify(events.at(-1)));
      const sent = provider.state.requests.slice(before).filter((r) => r.provider === 'openai-responses');
      assert.equal(sent.length, 2);
      assert.ok(sent.every((r) => r.body.stream === true && r.body.store === false));
      assert.deepEqual(sent[1].body.input.find((x) => x.type === 'reasoning'), { type: 'reasoning', id: 'rs_0abc', summary: [{ type: 'summary_text', text: 'Weighing turn 0.' }], encrypted_content: 'gAAAAB-enc-0-final' });
      assert.deepEqual(provider.state.errors, []);
    } finally {
      await w.stop();
    }
  });

  test('gemini() inside workerd: a streamed tool turn, its call\'s thought signature sent back on the call', async () => {
    const w = await startWorker({
      config: CONFIG,
      persistTo: dir,
      vars: { TEST_ROUTES: 'true', MODEL_PROVIDER: 'gemini', GEMINI_BASE_URL: `http://127.0.0.1:${provider.port}/gemini`, GEMINI_API_KEY: API_KEY, MODEL: 'gemini-test' },
    });
    try {
      const before = provider.state.requests.length;
      const { events } = await streamEvents(w.url, { message: 'scenario:tool' });
      assert.match(events.at(-1).data.answer, /^Found /, JSON.stringify(events.at(-1)));
      const sent = provider.state.requests.slice(before).filter((r) => r.provider === 'gemini');
      assert.equal(sent.length, 2);
      assert.ok(sent.every((r) => r.body.stream === true));
      assert.deepEqual(sent[1].body.contents[1].parts[0], { functionCall: { name: 'lookup', args: { key: 'a' } }, thoughtSignature: 'sig-call-0' });
      assert.deepEqual(provider.state.errors, []);
    } finally {
      await w.stop();
    }
  });

  test('openai() inside workerd streams from the loopback server; a stream cut mid-text is retried after step-restart', async () => {
    const w = await startWorker({
      config: CONFIG,
      persistTo: dir,
      vars: { TEST_ROUTES: 'true', MODEL_PROVIDER: 'openai', OPENAI_BASE_URL: `http://127.0.0.1:${provider.port}/openai`, OPENAI_API_KEY: API_KEY, MODEL: 'gpt-test' },
    });
    try {
      const { events } = await streamEvents(w.url, { message: 'scenario:cutstream' });
      const restart = events.findIndex((e) => e.type === 'step-restart');
      assert.ok(restart > 0, `a restart: ${JSON.stringify(events.map((e) => e.type))}`);
      const after = events.slice(restart + 1).filter((e) => e.type === 'text-delta').map((e) => e.data.text);
      assert.ok(after.length >= 2);
      assert.equal(after.join(''), 'A streamed answer that arrives whole.');
      assert.deepEqual(events.at(-1).data, { answer: 'A streamed answer that arrives whole.' });
      const sent = provider.state.requests.filter((r) => r.provider === 'openai');
      assert.equal(sent.length, 2, 'the cut stream and its retry');
      assert.ok(sent.every((r) => r.body.stream === true));
      assert.deepEqual(provider.state.errors, []);
    } finally {
      await w.stop();
    }
  });
});
