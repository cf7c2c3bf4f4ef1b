// The savers inside real workerd (wrangler dev): the conformance suite against Workers KV and the Durable
// Object saver of both example Workers, and D1 (local, as wrangler dev keeps it) in the JS Worker (each operation runs in the Worker, on the real binding, through its
// test route), sessions on the Durable Object surviving a restart, and exactly one of 50 concurrent replies.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSaverConformance } from 'resumable-agent/testing';
import { startWorker, ROOT } from './harness.mjs';

const WORKERS = {
  rust: join(ROOT, 'wrangler.toml'),
  js: join(ROOT, 'examples/worker-js/wrangler.toml'),
};

/** A saver whose every operation is done by the Worker, under `namespace/` (so namespaces are isolated). */
async function proxySaver(w, namespace) {
  const op = async (body) => {
    const { status, body: out } = await w.post('/__test/saver', body);
    if (out.err) throw Object.assign(new Error(out.err.message), { code: out.err.kind });
    if (status !== 200) throw Object.assign(new Error(out.error ?? `HTTP ${status}`), { code: status === 400 ? 'INVALID' : 'HTTP' });
    return out.ok;
  };
  const about = await op({ op: 'about' });
  const k = (key) => `${namespace}/${key}`;
  return {
    compareAndSet: about.compareAndSet,
    maxValueBytes: about.maxValueBytes ?? undefined,
    async get(key) { const t = await op({ op: 'get', key: k(key) }); return t === null ? null : JSON.parse(t); },
    async put(key, checkpoint, condition) { await op({ op: 'put', key: k(key), checkpoint, condition: condition ?? null }); },
    async delete(key) { await op({ op: 'delete', key: k(key) }); },
    async exists(key) { return op({ op: 'exists', key: k(key) }); },
    async list(prefix = '') {
      const listed = await op({ op: 'list', prefix: k(prefix) });
      return listed.map((e) => ({ ...e, key: e.key.slice(namespace.length + 1) }));
    },
  };
}

for (const [name, config] of Object.entries(WORKERS)) {
  for (const saver of ['kv', 'durable-object', 'd1']) {
    describe(`${name} Worker, ${saver} saver`, () => {
      let dir;
      let w;
      before(async () => {
        dir = mkdtempSync(join(tmpdir(), `savers-${name}-${saver}-`));
        w = await startWorker({ config, persistTo: dir, vars: { TEST_ROUTES: 'true', SAVER: saver, TEST_MODEL_DELAY_MS: '200' } });
      });
      after(async () => {
        await w?.stop();
        rmSync(dir, { recursive: true, force: true });
      });

      test('passes the saver conformance suite', { timeout: 300_000 }, async () => {
        let run = 0;
        const results = await runSaverConformance((namespace) => proxySaver(w, `${namespace}-${run++}`), {
          // KV: write around the saver (the test route's raw-put keeps our metadata, replaces the value).
          corrupt: saver === 'kv' ? async (s, key) => {
            const listed = (await s.list('')).find((e) => e.key === key);
            const { key: _k, ...summary } = listed;
            const meta = { resumableAgent: 1, iterations: summary.iterations, inputTokens: 0, outputTokens: 0, interrupted: summary.interrupted, question: summary.question, messageCount: summary.messageCount };
            await w.post('/__test/saver', { op: 'raw-put', key: `lv-${run - 1}/${key}`, value: 'not a checkpoint', metadata: meta });
          } : saver === 'd1' ? async (s, key) => {
            await w.post('/__test/saver', { op: 'raw-put', key: `lv-${run - 1}/${key}`, value: 'not a checkpoint' });
          } : undefined,
        });
        const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.error?.message}`);
        assert.deepEqual(failed, []);
        const skipped = results.filter((r) => r.skipped).map((r) => r.name);
        if (saver === 'kv') {
          assert.deepEqual(skipped, [
            'compare-and-set: ifAbsent and ifStep refuse a changed key with CONFLICT',
            'compare-and-set: of 20 concurrent conditional puts exactly one wins',
            'session log: of 10 concurrent replies exactly one runs (positions are claimed only if free)',
          ], 'KV cannot compare and set');
        } else if (saver === 'd1') {
          assert.deepEqual(skipped, [], 'every case runs');
        } else {
          assert.deepEqual(skipped, ['list reads summaries, not values'], 'everything but the raw-write case runs');
        }
      });

      if (name === 'rust') {
        test('passes the Rust saver conformance suite, run inside the Worker', { timeout: 300_000 }, async () => {
          const { body } = await w.post('/__test/conformance', {});
          assert.deepEqual(body.results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.error}`), []);
          const skipped = body.results.filter((r) => r.skipped).map((r) => r.name);
          assert.deepEqual(skipped, saver === 'kv'
            ? ['compare-and-set: Absent and Step refuse a changed key with CONFLICT', 'compare-and-set: of 20 interleaved conditional puts exactly one wins', 'list reads summaries, not values',
              'session log: of 10 interleaved replies exactly one runs (positions are claimed only if free)']
            : ['list reads summaries, not values']);
        });
      }

      if (name === 'js') {
        test('history, label and restore round-trip on this saver', { timeout: 60_000 }, async () => {
          const op = async (opName, ...args) => {
            const { body } = await w.post('/__test/session', { sessionId: 'hist', op: opName, args });
            if (body.err) throw new Error(`${body.err.name}: ${body.err.message}`);
            return body.ok;
          };
          assert.equal((await op('prompt', 'the app')).question, 'What is your deadline?');
          const paused = (await op('history'))[0];
          assert.equal(paused.interrupted, true);
          await op('label', paused.id, 'asked');
          assert.equal((await op('reply', 'May')).text, 'Plan for "the app" due May.');
          const restored = await op('restore', 'asked');
          assert.equal(restored.thread.parentStep, paused.step);
          assert.equal((await op('reply', 'June')).text, 'Plan for "the app" due June.');
          const history = await op('history');
          assert.ok(history.some((h) => h.label === 'asked' && h.id === paused.id), 'the label is kept');
          assert.ok(history.some((h) => h.parentId === paused.id && h.step > paused.step + 2), 'a branch from the labelled step');
          assert.equal((await op('checkpoint', paused.id)).question, 'What is your deadline?');
        });
      }

      if (saver === 'durable-object' && name === 'js') {
        test('a run larger than one Durable Object value (2 MB) is kept across records and reads back', { timeout: 300_000 }, async () => {
          // 70 steps with 40 KB results: a 2.9 MB run.
          const { body } = await w.post('/__test/steps', { sessionId: 'beyond-2mb', steps: 70, valueBytes: 40_000, autoSave: 'step', events: false });
          assert.equal(body.text, 'done', JSON.stringify(body).slice(0, 300));
          assert.ok(body.lastCheckpointBytes > 2_500_000, `${body.lastCheckpointBytes} bytes`);
          const op = async (opName, ...args) => {
            const { body: out } = await w.post('/__test/session', { owner: 'bench', sessionId: 'beyond-2mb', op: opName, args });
            if (out.err) throw new Error(`${out.err.name}: ${out.err.message}`);
            return out.ok;
          };
          const back = await op('checkpoint');
          assert.equal(back.messages.length, 140, 'read back whole from its records');
          const history = await op('history', { limit: 3 });
          assert.equal(history.length, 3);
          assert.equal(history[0].messageCount, 140, 'its history, from summaries');
        });
      }

      if (saver === 'd1' && name === 'js') {
        test('a 3 MB tool result is stored in D1 rows of at most 2,000,000 bytes and reads back whole', { timeout: 120_000 }, async () => {
          const { body } = await w.post('/__test/steps', { sessionId: 'big-d1', steps: 2, valueBytes: 3_000_000, autoSave: 'step', events: false });
          assert.equal(body.text, 'done', JSON.stringify(body).slice(0, 300));
          const { body: rows } = await w.post('/__test/saver', { op: 'raw-rows', key: 'big-d1' });
          assert.ok(rows.ok.some((r) => r.part > 0), `a value spans several rows: ${JSON.stringify(rows.ok)}`);
          assert.ok(rows.ok.every((r) => r.bytes <= 2_000_000), `every row within D1's limit: ${JSON.stringify(rows.ok)}`);
          const { body: out } = await w.post('/__test/session', { owner: 'bench', sessionId: 'big-d1', op: 'checkpoint', args: [] });
          assert.equal(out.err, undefined, JSON.stringify(out.err));
          assert.ok(JSON.stringify(out.ok).length > 3_000_000, 'read back whole');
        });
      }

      if (saver !== 'kv') {
        test('a paused session survives a restart; of 50 concurrent replies exactly one runs, over 8 rounds (400 replies)', { timeout: 300_000 }, async () => {
          const alice = w.client();
          const { body: first } = await alice.start('the app');
          assert.equal(first.question, 'What is your deadline?');
          await w.stop();
          w = await startWorker({ config, persistTo: dir, vars: { TEST_ROUTES: 'true', SAVER: saver, TEST_MODEL_DELAY_MS: '200' } });
          const client = w.client(alice.token);
          const listed = (await client.sessions()).body.sessions.map((s) => s.sessionId);
          assert.deepEqual(listed, [first.sessionId], 'the paused session is listed after the restart, not its records');
          let busy = 0;
          for (let round = 0; round < 8; round += 1) {
            const sessionId = round === 0 ? first.sessionId : (await client.start('the app')).body.sessionId;
            // Fifty at once, then the same replies retried after the winner completed (a lost response).
            const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => client.reply(sessionId, `Q${i}`)));
            const retries = await Promise.all(Array.from({ length: 5 }, (_, i) => client.reply(sessionId, `Q${i}`)));
            const ok = [...replies, ...retries].filter((r) => r.status === 200);
            assert.equal(ok.length, 1, `round ${round}: exactly one reply ran: ${JSON.stringify(replies.map((r) => r.status))}`);
            assert.match(ok[0].body.answer, /^Plan for "the app" due Q\d+\.$/);
            const others = [...replies, ...retries].filter((r) => r.status !== 200);
            // Refused: busy while the winner runs (409), or gone once it completed (404, not kept).
            assert.ok(others.every((r) => r.status === 409 || r.status === 404), `round ${round}: ${JSON.stringify([...new Set(others.map((r) => `${r.status} ${r.body.error}`))])}`);
            assert.ok(retries.every((r) => r.status === 404), `round ${round}: a retry after completion finds nothing`);
            busy += others.filter((r) => r.status === 409).length;
          }
          assert.ok(busy > 0, 'some arrived while the winner ran');
        });
      }
    });
  }
}

describe('one D1 database, both Workers: what the JS d1Saver writes the Rust D1Saver reads, and back', () => {
  let dir;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'savers-d1-shared-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a 3 MB checkpoint over several rows and a small one, written by each, read by the other', { timeout: 300_000 }, async () => {
    // The same persisted local D1 (same database_id, same directory), one Worker at a time.
    const big = (who) => ({ version: 2, messages: [{ role: 'user', content: `${who} ${'m'.repeat(3_000_000)}` }], iterations: 0, usage: { inputTokens: 1, outputTokens: 2 } });
    const small = (who) => ({ version: 2, messages: [{ role: 'user', content: `from ${who}` }], iterations: 0, usage: { inputTokens: 1, outputTokens: 2 } });
    const vars = { TEST_ROUTES: 'true', SAVER: 'd1' };
    const call = async (w, body) => {
      const { body: out } = await w.post('/__test/saver', body);
      assert.equal(out.err, undefined, JSON.stringify(out.err));
      return out.ok;
    };
    const order = [['js', 'rust'], ['rust', 'js']];
    for (const [writer, reader] of order) {
      let w = await startWorker({ config: WORKERS[writer], persistTo: dir, vars });
      try {
        await call(w, { op: 'put', key: `${writer}/big`, checkpoint: big(writer) });
        await call(w, { op: 'put', key: `${writer}/small`, checkpoint: small(writer), condition: { ifAbsent: true } });
      } finally {
        await w.stop();
      }
      w = await startWorker({ config: WORKERS[reader], persistTo: dir, vars });
      try {
        const bigBack = JSON.parse(await call(w, { op: 'get', key: `${writer}/big` }));
        assert.equal(bigBack.messages[0].content, big(writer).messages[0].content, `${reader} reads ${writer}'s 3 MB value whole`);
        assert.equal(JSON.parse(await call(w, { op: 'get', key: `${writer}/small` })).messages[0].content, `from ${writer}`);
        const listed = await call(w, { op: 'list', prefix: `${writer}/` });
        assert.deepEqual(listed.map((e) => e.key), [`${writer}/big`, `${writer}/small`], `${reader} lists ${writer}'s keys`);
        // Compare-and-set across them: the reader's ifAbsent on the writer's key is a conflict.
        const { body } = await w.post('/__test/saver', { op: 'put', key: `${writer}/small`, checkpoint: small(reader), condition: { ifAbsent: true } });
        assert.equal(body.err?.kind, 'CONFLICT', JSON.stringify(body));
      } finally {
        await w.stop();
      }
    }
  });
});
