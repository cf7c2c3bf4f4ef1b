// Both example Workers (Rust: wrangler.toml; JS: examples/worker-js) on real local workerd with KV on disk.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker, ROOT } from './harness.mjs';

const WORKERS = {
  rust: join(ROOT, 'wrangler.toml'),
  js: join(ROOT, 'examples/worker-js/wrangler.toml'),
};

const OVER_25_MIB = 'x'.repeat(25 * 1024 * 1024 + 1);

for (const [name, config] of Object.entries(WORKERS)) {
  describe(`${name} Worker`, () => {
    let dir;
    before(() => { dir = mkdtempSync(join(tmpdir(), `kv-${name}-`)); });
    after(() => rmSync(dir, { recursive: true, force: true }));
    const start = (vars = {}) => startWorker({ config, persistTo: dir, vars: { TEST_ROUTES: 'true', ...vars } });
    const saverOp = async (w, body) => (await w.post('/__test/saver', body)).body;

    test('a paused run survives a complete restart of the Worker; completion deletes it', async () => {
      let w = await start();
      try {
        assert.deepEqual(await w.post('/start', { message: 'the app', sessionId: 'restart' }), { status: 200, body: { question: 'What is your deadline?' } });
      } finally {
        await w.stop();
      }
      w = await start(); // a new workerd process: nothing in memory, only KV on disk
      try {
        const stored = await saverOp(w, { op: 'get', key: 'restart' });
        assert.equal(JSON.parse(stored.ok).pendingToolUseId, 'call_1', 'KV holds the checkpoint between the requests');
        const { body } = await w.get('/sessions');
        assert.deepEqual(body.sessions.filter((s) => s.sessionId === 'restart').map((s) => [s.question, s.iterations]), [['What is your deadline?', 1]]);
        assert.deepEqual(await w.post('/reply', { answer: 'end of Q2', sessionId: 'restart' }), { status: 200, body: { answer: 'Plan for "the app" due end of Q2.' } });
        assert.deepEqual(await saverOp(w, { op: 'get', key: 'restart' }), { ok: null }, 'deleted on completion');
        assert.deepEqual(await w.post('/reply', { answer: 'again', sessionId: 'restart' }), { status: 404, body: { error: 'Session not found' } });
      } finally {
        await w.stop();
      }
    });

    test('CHECKPOINT_KEY + SEAL_CHECKPOINTS: KV holds sealed envelopes; one changed in KV is refused (Web Crypto in workerd)', async () => {
      const w = await start({ CHECKPOINT_KEY: 'a worker secret, 16+ bytes', SEAL_CHECKPOINTS: 'true' });
      try {
        assert.deepEqual(await w.post('/start', { message: 'the app', sessionId: 'sealed' }), { status: 200, body: { question: 'What is your deadline?' } });
        const stored = JSON.parse((await saverOp(w, { op: 'get-text', key: 'sealed' })).ok);
        assert.deepEqual(Object.keys(stored), ['version', 'kid', 'sealed']);
        assert.equal(JSON.stringify(stored).includes('deadline'), false, 'nothing readable in KV');
        assert.deepEqual(await w.post('/reply', { answer: 'May', sessionId: 'sealed' }), { status: 200, body: { answer: 'Plan for "the app" due May.' } });

        await w.post('/start', { message: 'the app', sessionId: 'forged' });
        const text = (await saverOp(w, { op: 'get-text', key: 'forged' })).ok;
        const envelope = JSON.parse(text);
        // a character in the middle: every base64url character there carries 6 whole bits, so the text stays
        // valid base64url and only the ciphertext changes (the last one may carry padding bits)
        const at = envelope.sealed.length >> 1;
        envelope.sealed = envelope.sealed.slice(0, at) + (envelope.sealed[at] === 'A' ? 'B' : 'A') + envelope.sealed.slice(at + 1);
        await saverOp(w, { op: 'raw-put', key: 'forged', value: JSON.stringify(envelope), metadata: { iterations: 1, usage: { inputTokens: 0, outputTokens: 0 }, interrupted: true, messageCount: 2, step: 3 } });
        const refused = await w.post('/reply', { answer: 'May', sessionId: 'forged' });
        assert.equal(refused.status, 422, JSON.stringify(refused.body));
        assert.match(refused.body.error, /checkpoint signature: saved under "forged": sealed: does not decrypt/);
      } finally {
        await w.stop();
      }
    });

    test('KEEP_COMPLETED=true keeps the finished checkpoint; a later reply continues the conversation', async () => {
      const w = await start({ KEEP_COMPLETED: 'true' });
      try {
        await w.post('/start', { message: 'the app', sessionId: 'keep' });
        assert.equal((await w.post('/reply', { answer: 'May', sessionId: 'keep' })).body.answer, 'Plan for "the app" due May.');
        const kept = JSON.parse((await saverOp(w, { op: 'get', key: 'keep' })).ok);
        assert.equal(kept.messages.length, 4);
        assert.deepEqual(await w.post('/reply', { answer: 'budget is 10k', sessionId: 'keep' }), { status: 200, body: { answer: 'Noted: budget is 10k.' } });
        assert.equal((await w.get('/sessions')).body.sessions.some((s) => s.sessionId === 'keep'), false, 'only paused sessions are listed');
      } finally {
        await w.stop();
      }
    });

    test('interleaved sessions stay isolated (A starts, B starts, B replies, A replies)', async () => {
      const w = await start();
      try {
        assert.equal((await w.post('/start', { message: 'alpha', sessionId: 'A' })).body.question, 'What is your deadline?');
        assert.equal((await w.post('/start', { message: 'beta', sessionId: 'B' })).body.question, 'What is your deadline?');
        assert.deepEqual((await w.post('/reply', { answer: 'May', sessionId: 'B' })).body, { answer: 'Plan for "beta" due May.' });
        assert.deepEqual((await w.post('/reply', { answer: 'June', sessionId: 'A' })).body, { answer: 'Plan for "alpha" due June.' });
      } finally {
        await w.stop();
      }
    });

    test('bad requests get their status and message, and damage no existing session', async () => {
      const w = await start();
      try {
        await w.post('/start', { message: 'keep me', sessionId: 'victim' });
        const before = (await saverOp(w, { op: 'get', key: 'victim' })).ok;

        let r = await w.post('/start', '{"message": ');
        assert.equal(r.status, 400);
        assert.match(r.body.error, /^Malformed JSON body: /);
        r = await w.post('/reply', { sessionId: 'victim' });
        assert.deepEqual(r, { status: 400, body: { error: 'Missing field "answer": expected a string' } });
        r = await w.post('/start', { message: 'hi' });
        assert.deepEqual(r, { status: 400, body: { error: 'Missing field "sessionId": expected a string' } });
        r = await w.post('/reply', { answer: 'x', sessionId: 'nobody' });
        assert.deepEqual(r, { status: 404, body: { error: 'Session not found' } });
        r = await w.post('/start', { message: 'again', sessionId: 'victim' });
        assert.equal(r.status, 409);
        assert.match(r.body.error, /waiting for an answer to: What is your deadline\?/);
        r = await w.post('/start', { message: 'hi', sessionId: 'k'.repeat(600) });
        assert.equal(r.status, 400);
        assert.match(r.body.error, /608 bytes \(with its prefix\); the store allows 1 to 512/);
        r = await w.post('/start', { message: OVER_25_MIB, sessionId: 'huge' });
        assert.equal(r.status, 413);
        assert.match(r.body.error, /checkpoint for key "huge" is \d+ bytes; the store accepts at most 26214400, so it was not written/);
        assert.deepEqual(await saverOp(w, { op: 'get', key: 'huge' }), { ok: null });

        assert.equal((await saverOp(w, { op: 'get', key: 'victim' })).ok, before, 'the existing session is unchanged');
        assert.deepEqual((await w.post('/reply', { answer: 'Q1', sessionId: 'victim' })).body, { answer: 'Plan for "keep me" due Q1.' });
      } finally {
        await w.stop();
      }
    });

    test('the KV saver against the real binding: round trip, overwrite, list from metadata, delete, limits', async () => {
      const w = await start();
      try {
        const cp = (text, pending) => ({
          version: 2,
          messages: [{ role: 'user', content: text }, ...(pending ? [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'ask_user', input: {} }] }] : [])],
          iterations: pending ? 1 : 0,
          usage: { inputTokens: 1, outputTokens: 2 },
          ...(pending ? {
            pendingToolUseId: 't', question: pending, reviewed: true,
            interrupts: [{ kind: 'question', id: 't', toolName: 'ask_user', input: {}, question: pending }],
          } : {}),
        });
        assert.deepEqual(await saverOp(w, { op: 'get', key: 'missing' }), { ok: null });
        assert.deepEqual(await saverOp(w, { op: 'put', key: 'kv/1', checkpoint: cp('one', 'Q one?') }), { ok: null });
        assert.deepEqual(JSON.parse((await saverOp(w, { op: 'get', key: 'kv/1' })).ok), cp('one', 'Q one?'));
        await saverOp(w, { op: 'put', key: 'kv/1', checkpoint: cp('one, again', null) });
        assert.equal(JSON.parse((await saverOp(w, { op: 'get', key: 'kv/1' })).ok).messages[0].content, 'one, again');
        await saverOp(w, { op: 'put', key: 'kv/2', checkpoint: cp('two', 'Q two?') });
        // A value that is not a checkpoint, with valid metadata: list must not read it; get names it.
        const meta = { resumableAgent: 1, iterations: 9, inputTokens: 0, outputTokens: 0, interrupted: true, question: 'from metadata', messageCount: 3 };
        await saverOp(w, { op: 'raw-put', key: 'kv/3', value: 'not a checkpoint', metadata: meta });
        await saverOp(w, { op: 'raw-put', key: 'kv/4', value: '{}', metadata: { someoneElse: true } });
        const listed = (await saverOp(w, { op: 'list', prefix: 'kv/' })).ok;
        assert.deepEqual(listed.map((s) => [s.key, s.interrupted, s.question ?? null, s.iterations]), [
          ['kv/1', false, null, 0], ['kv/2', true, 'Q two?', 1], ['kv/3', true, 'from metadata', 9],
        ]);
        const corrupt = await saverOp(w, { op: 'get', key: 'kv/3' });
        assert.equal(corrupt.err.kind, 'CORRUPT');
        assert.match(corrupt.err.message, /saved checkpoint "kv\/3" is invalid: checkpoint is not valid JSON/);
        const tooBig = await saverOp(w, { op: 'put', key: 'kv/2', checkpoint: cp(OVER_25_MIB, null) });
        assert.equal(tooBig.err.kind, 'TOO_LARGE');
        assert.equal(JSON.parse((await saverOp(w, { op: 'get', key: 'kv/2' })).ok).question, 'Q two?', 'nothing was written');
        const longKey = await saverOp(w, { op: 'get', key: 'k'.repeat(505) });
        assert.equal(longKey.err.kind, 'KEY_LENGTH');
        await saverOp(w, { op: 'delete', key: 'kv/2' });
        await saverOp(w, { op: 'delete', key: 'kv/2' });
        assert.deepEqual(await saverOp(w, { op: 'get', key: 'kv/2' }), { ok: null });
        assert.deepEqual((await saverOp(w, { op: 'list', prefix: 'kv/' })).ok.map((s) => s.key), ['kv/1', 'kv/3']);
      } finally {
        await w.stop();
      }
    });
  });
}
