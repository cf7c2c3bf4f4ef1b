// Both example Workers (Rust: wrangler.toml; JS: examples/worker-js) on real local workerd with KV on disk,
// called as their clients would — and as a hostile client would (issue 22: another owner's session ids,
// replies sent twice, checkpoints changed in KV, origins not configured).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker, eventually, ROOT } from './harness.mjs';

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
    /** The keys of a client's session in KV. */
    const keysOf = async (w, client, sessionId) => (await saverOp(w, { op: 'list', prefix: `${await client.owner()}:${sessionId}` })).ok.map((e) => e.key);

    test('a paused run survives a complete restart of the Worker; completion deletes it', async () => {
      let w = await start();
      const alice = w.client();
      let sessionId;
      try {
        const r = await alice.start('the app');
        assert.equal(r.status, 200);
        assert.equal(r.body.question, 'What is your deadline?');
        assert.match(r.body.sessionId, /^[A-Za-z0-9_-]{22}$/, 'a session id the server made');
        assert.match(alice.token, /^[A-Za-z0-9_-]{22}$/, 'an owner token the server made');
        sessionId = r.body.sessionId;
      } finally {
        await w.stop();
      }
      w = await start(); // a new workerd process: nothing in memory, only KV on disk
      try {
        const client = w.client(alice.token);
        assert.ok((await keysOf(w, client, sessionId)).length >= 3, 'KV holds the session between the requests');
        const { body } = await client.sessions();
        assert.deepEqual(body.sessions.map((s) => [s.sessionId, s.question, s.iterations]), [[sessionId, 'What is your deadline?', 1]]);
        assert.deepEqual(await client.reply(sessionId, 'end of Q2').then((r) => [r.status, r.body]), [200, { answer: 'Plan for "the app" due end of Q2.' }]);
        // KV takes one write (or delete) per key per second: the keys written by this reply go in its waitUntil.
        const left = await keysOf(w, client, sessionId);
        assert.ok(left.length > 0 && left.length <= 4, `the young keys are left for a moment: ${left}`);
        assert.deepEqual(await eventually(() => keysOf(w, client, sessionId), (k) => k.length === 0), [], 'deleted on completion');
        assert.deepEqual(await client.reply(sessionId, 'end of Q2').then((r) => [r.status, r.body]), [404, { error: 'Session not found' }], 'a reply sent twice');
      } finally {
        await w.stop();
      }
    });

    test("a session is its owner's: another client can neither list, read nor answer it", async () => {
      const w = await start();
      try {
        const alice = w.client();
        const { body: { sessionId } } = await alice.start('my private plan');
        const mallory = w.client();
        assert.deepEqual((await mallory.sessions()).body.sessions, [], 'no one else\'s sessions listed');
        assert.match(mallory.token, /^[A-Za-z0-9_-]{22}$/);
        assert.notEqual(mallory.token, alice.token);
        const stolen = await mallory.reply(sessionId, 'hijacked');
        assert.deepEqual([stolen.status, stolen.body], [404, { error: 'Session not found' }]);
        const forged = await w.client('A'.repeat(22)).reply(sessionId, 'guessed token');
        assert.equal(forged.status, 404);
        const noToken = await w.client().reply(sessionId, 'no token');
        assert.equal(noToken.status, 404);
        const chosen = await mallory.post('/start', { message: 'x', sessionId: 'x' });
        assert.equal(chosen.status, 400, 'a client does not choose session ids');
        assert.match(chosen.body.error, /the server chooses session ids/);
        // The owner's own reply still works: nothing was touched.
        assert.deepEqual((await alice.reply(sessionId, 'Friday')).body, { answer: 'Plan for "my private plan" due Friday.' });
        // CORS: an origin that is not configured gets no CORS headers; a configured one does.
        const res = await fetch(`${w.url}/sessions`, { headers: { origin: 'https://evil.example', authorization: `Bearer ${alice.token}` } });
        assert.equal(res.headers.get('access-control-allow-origin'), null);
        await res.arrayBuffer();
      } finally {
        await w.stop();
      }
      const w2 = await start({ ALLOWED_ORIGINS: 'https://app.example' });
      try {
        const res = await fetch(`${w2.url}/sessions`, { headers: { origin: 'https://app.example' } });
        assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
        await res.arrayBuffer();
        const pre = await fetch(`${w2.url}/reply`, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
        assert.equal(pre.status, 204);
        assert.match(pre.headers.get('access-control-allow-headers'), /authorization/);
        const evil = await fetch(`${w2.url}/reply`, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
        assert.equal(evil.headers.get('access-control-allow-origin'), null);
      } finally {
        await w2.stop();
      }
    });

    test('CHECKPOINT_KEY + SEAL_CHECKPOINTS: KV holds sealed envelopes; one changed in KV is refused (Web Crypto in workerd)', async () => {
      const w = await start({ CHECKPOINT_KEY: 'a worker secret, 16+ bytes', SEAL_CHECKPOINTS: 'true' });
      try {
        const alice = w.client();
        const { body: first } = await alice.start('the app');
        assert.equal(first.question, 'What is your deadline?');
        const owner = await alice.owner();
        const records = (await keysOf(w, alice, first.sessionId)).filter((k) => k.includes('#~'));
        assert.ok(records.length >= 3);
        for (const key of records) {
          const stored = JSON.parse((await saverOp(w, { op: 'get-text', key, owner })).ok);
          assert.deepEqual(Object.keys(stored), ['version', 'kid', 'sealed']);
          assert.equal(JSON.stringify(stored).includes('deadline'), false, 'nothing readable in KV');
        }
        assert.deepEqual((await alice.reply(first.sessionId, 'May')).body, { answer: 'Plan for "the app" due May.' });

        const { body: second } = await alice.start('the app');
        const [key] = (await keysOf(w, alice, second.sessionId)).filter((k) => k.includes('#~')).slice(-1);
        const text = (await saverOp(w, { op: 'get-text', key, owner })).ok;
        const envelope = JSON.parse(text);
        // a character in the middle: every base64url character there carries 6 whole bits, so the text stays
        // valid base64url and only the ciphertext changes (the last one may carry padding bits)
        const at = envelope.sealed.length >> 1;
        envelope.sealed = envelope.sealed.slice(0, at) + (envelope.sealed[at] === 'A' ? 'B' : 'A') + envelope.sealed.slice(at + 1);
        const meta = (await saverOp(w, { op: 'list', prefix: key })).ok[0];
        await saverOp(w, { op: 'raw-put', key, value: JSON.stringify(envelope), metadata: { resumableAgent: 1, iterations: meta.iterations, inputTokens: 0, outputTokens: 0, interrupted: meta.interrupted, messageCount: meta.messageCount, step: meta.step } });
        const refused = await alice.reply(second.sessionId, 'May');
        assert.equal(refused.status, 422, JSON.stringify(refused.body));
        assert.match(refused.body.error, /checkpoint signature: saved under ".*": sealed: does not decrypt/);
      } finally {
        await w.stop();
      }
    });

    test('KEEP_COMPLETED=true keeps the finished session; the same reply sent again is refused, a new message continues it', async () => {
      const w = await start({ KEEP_COMPLETED: 'true' });
      try {
        const alice = w.client();
        const { body: { sessionId } } = await alice.start('the app');
        assert.equal((await alice.reply(sessionId, 'May')).body.answer, 'Plan for "the app" due May.');
        const again = await alice.reply(sessionId, 'May');
        assert.equal(again.status, 409, 'a retried reply does not run again as a new turn');
        assert.match(again.body.error, /waits for no answer/);
        const more = await alice.post('/message', { sessionId, message: 'budget is 10k' });
        assert.deepEqual([more.status, more.body], [200, { answer: 'Noted: budget is 10k.' }]);
        // The head a listing reads is written once KV allows it (the request's waitUntil, about a second on).
        const listed = await eventually(async () => (await alice.sessions()).body.sessions, (l) => l.length === 0);
        assert.equal(listed.length, 0, 'only paused sessions are listed');
        assert.equal((await w.client().post('/message', { sessionId, message: 'mine now' })).status, 404, "not another owner's");
      } finally {
        await w.stop();
      }
    });

    test('interleaved sessions stay isolated (A starts, B starts, B replies, A replies)', async () => {
      const w = await start();
      try {
        const c = w.client();
        const a = (await c.start('alpha')).body.sessionId;
        const b = (await c.start('beta')).body.sessionId;
        assert.deepEqual((await c.reply(b, 'May')).body, { answer: 'Plan for "beta" due May.' });
        assert.deepEqual((await c.reply(a, 'June')).body, { answer: 'Plan for "alpha" due June.' });
      } finally {
        await w.stop();
      }
    });

    test('bad requests get their status and message, and damage no existing session', async () => {
      const w = await start();
      try {
        const c = w.client();
        const { body: { sessionId } } = await c.start('keep me');
        const before = await keysOf(w, c, sessionId);

        let r = await c.post('/start', '{"message": ');
        assert.equal(r.status, 400);
        assert.match(r.body.error, /^Malformed JSON body: /);
        r = await c.post('/reply', { sessionId });
        assert.deepEqual([r.status, r.body], [400, { error: 'Missing field "answer": expected a string' }]);
        r = await c.post('/start', {});
        assert.deepEqual([r.status, r.body], [400, { error: 'Missing field "message": expected a string' }]);
        r = await c.reply('A'.repeat(22), 'x');
        assert.deepEqual([r.status, r.body], [404, { error: 'Session not found' }]);
        r = await c.reply('k'.repeat(600), 'x');
        assert.deepEqual([r.status, r.body], [404, { error: 'Session not found' }]);
        r = await c.start(OVER_25_MIB);
        assert.equal(r.status, 413);
        assert.match(r.body.error, /is \d+ bytes; the store accepts at most 26214400, so it was not written/);

        assert.deepEqual(await keysOf(w, c, sessionId), before, 'the existing session is unchanged');
        assert.deepEqual((await c.reply(sessionId, 'Q1')).body, { answer: 'Plan for "keep me" due Q1.' });
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
        // KV takes one write per second per key: the next write of kv/2 waits for it (production answers 429).
        await new Promise((r) => setTimeout(r, 1100));
        const tooBig = await saverOp(w, { op: 'put', key: 'kv/2', checkpoint: cp(OVER_25_MIB, null) });
        assert.equal(tooBig.err.kind, 'TOO_LARGE');
        assert.equal(JSON.parse((await saverOp(w, { op: 'get', key: 'kv/2' })).ok).question, 'Q two?', 'nothing was written');
        const longKey = await saverOp(w, { op: 'get', key: 'k'.repeat(505) });
        assert.equal(longKey.err.kind, 'KEY_LENGTH');
        await saverOp(w, { op: 'delete', key: 'kv/2' });
        assert.deepEqual(await saverOp(w, { op: 'get', key: 'kv/2' }), { ok: null });
        assert.deepEqual((await saverOp(w, { op: 'list', prefix: 'kv/' })).ok.map((s) => s.key), ['kv/1', 'kv/3']);
      } finally {
        await w.stop();
      }
    });
  });
}
