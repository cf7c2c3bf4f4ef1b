// The JS example Worker's POST /stream under wrangler dev (local workerd, KV on disk): a session's events as
// server-sent events, with the scripted model and with the OpenAI provider streaming from the loopback
// server (the package's fetch body reader inside workerd).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker, ROOT } from './harness.mjs';
import { startServer, API_KEY } from '../providers/server.mjs';

const CONFIG = join(ROOT, 'examples/worker-js/wrangler.toml');

/** POSTs to /stream and reads the whole SSE answer as [{ type, data }]. */
export async function streamEvents(url, body) {
  const res = await fetch(`${url}/stream`, { method: 'POST', body: JSON.stringify(body) });
  const text = await res.text();
  const events = text.split('\n\n').filter(Boolean).map((frame) => {
    const type = frame.match(/^event: (.*)$/m)?.[1];
    const data = JSON.parse(frame.match(/^data: (.*)$/m)?.[1] ?? 'null');
    return { type, data };
  });
  return { status: res.status, headers: res.headers, events };
}

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

  test('scripted model: the question as an interrupt event, saved in KV; the answer streams as text-delta events', async () => {
    const w = await startWorker({ config: CONFIG, persistTo: dir, vars: { TEST_ROUTES: 'true' } });
    try {
      const first = await streamEvents(w.url, { message: 'the app', sessionId: 'live' });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('content-type'), 'text/event-stream');
      assert.equal(first.headers.get('access-control-allow-origin'), '*');
      const interrupt = first.events.find((e) => e.type === 'interrupt');
      assert.equal(interrupt.data.question, 'What is your deadline?');
      assert.deepEqual(first.events.at(-1), { type: 'done', data: { question: 'What is your deadline?', interrupts: interrupt.data.interrupts } });
      const stored = (await w.post('/__test/saver', { op: 'get', key: 'live' })).body;
      assert.equal(JSON.parse(stored.ok).pendingToolUseId, 'call_1', 'the session saved the pause');

      const second = await streamEvents(w.url, { answer: 'May', sessionId: 'live' });
      const texts = second.events.filter((e) => e.type === 'text-delta').map((e) => e.data.text);
      assert.ok(texts.length >= 3, `word by word: ${JSON.stringify(texts)}`);
      assert.equal(texts.join(''), 'Plan for "the app" due May.');
      assert.deepEqual(second.events.at(-1), { type: 'done', data: { answer: 'Plan for "the app" due May.' } });
      assert.equal(second.events.some((e) => e.type === 'checkpoint'), false, 'checkpoints stay on the server');

      const again = await streamEvents(w.url, { answer: 'June', sessionId: 'live' });
      assert.deepEqual(again.events.map((e) => [e.type, e.data.name]), [['error', 'SessionNotFoundError']], 'completed and deleted');

      const preflight = await fetch(`${w.url}/stream`, { method: 'OPTIONS' });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-methods'), 'POST, OPTIONS');
      const bad = await fetch(`${w.url}/stream`, { method: 'POST', body: '{"sessionId": "x"}' });
      assert.equal(bad.status, 400);
      assert.equal(bad.headers.get('access-control-allow-origin'), '*');
      assert.match((await bad.json()).error, /"message" or "answer"/);
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
      const { events } = await streamEvents(w.url, { message: 'scenario:cutstream', sessionId: 'provider' });
      const restart = events.findIndex((e) => e.type === 'step-restart');
      assert.ok(restart > 0, `a restart: ${JSON.stringify(events.map((e) => e.type))}`);
      const after = events.slice(restart + 1).filter((e) => e.type === 'text-delta').map((e) => e.data.text);
      assert.ok(after.length >= 2);
      assert.equal(after.join(''), 'A streamed answer that arrives whole.');
      assert.deepEqual(events.at(-1), { type: 'done', data: { answer: 'A streamed answer that arrives whole.' } });
      const sent = provider.state.requests.filter((r) => r.provider === 'openai');
      assert.equal(sent.length, 2, 'the cut stream and its retry');
      assert.ok(sent.every((r) => r.body.stream === true));
      assert.deepEqual(provider.state.errors, []);
    } finally {
      await w.stop();
    }
  });
});
