// One workerd isolate serving many requests of the example Worker (a fresh agent, kvSaver and session per
// request, as in the reference's Worker): its wasm memory stays the same size (issue 15).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker, ROOT } from './harness.mjs';

const REQUESTS = Number(process.env.WORKER_MEMORY_REQUESTS ?? 4000);

test(`the JS example Worker: wasm memory is flat over ${REQUESTS} requests to one isolate`, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kv-memory-'));
  const w = await startWorker({ config: join(ROOT, 'examples/worker-js/wrangler.toml'), persistTo: dir, vars: { TEST_ROUTES: 'true' } });
  try {
    // Each pair of requests: start a session (pauses, saved in KV), then reply (completes, deleted). Fifty
    // owners take turns.
    const owners = Array.from({ length: 50 }, () => w.client());
    const pair = async (i) => {
      const c = owners[i % 50];
      const a = await c.start('the app');
      assert.equal(a.body.question, 'What is your deadline?', JSON.stringify(a));
      const b = await c.reply(a.body.sessionId, 'May');
      assert.equal(b.body.answer, 'Plan for "the app" due May.');
    };
    const run = async (from, count) => {
      let next = from;
      // Four concurrent clients, each on its own sessions.
      await Promise.all([0, 1, 2, 3].map(async (lane) => {
        for (;;) {
          const i = next++;
          if (i >= from + count) return;
          await pair(i * 4 + lane);
        }
      }));
    };
    await run(0, 200); // warm-up
    const before = (await w.get('/__test/memory')).body.wasmBytes;
    const t0 = performance.now();
    await run(200, REQUESTS / 4);
    const middle = (await w.get('/__test/memory')).body.wasmBytes;
    await run(200 + REQUESTS / 4, REQUESTS / 4);
    const after = (await w.get('/__test/memory')).body.wasmBytes;
    process.stdout.write(`# ${REQUESTS} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; wasm memory ${before} -> ${middle} -> ${after} bytes\n`);
    // Wasm memory grows by whole 64 KiB pages and never shrinks: on a loaded machine the four lanes and the
    // background settles can overlap more than in the warm-up and raise the high-water mark by a page, once
    // (seen in 1 run of 4 under `make test`). A leak of 33 bytes per request or more grows it by two pages or
    // more over these 4,000 requests; smaller ones are the Node leak tests' (at most 20 bytes per request).
    assert.ok(after - before <= 65536, `wasm memory grew by ${after - before} bytes`);
  } finally {
    await w.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test(`the JS example Worker's POST /stream: wasm memory is flat over ${REQUESTS / 2} streamed requests to one isolate`, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kv-memory-stream-'));
  const w = await startWorker({ config: join(ROOT, 'examples/worker-js/wrangler.toml'), persistTo: dir, vars: { TEST_ROUTES: 'true' } });
  const owner = w.client();
  await owner.sessions(); // its token
  const stream = async (body) => (await (await fetch(`${w.url}/stream`, { method: 'POST', headers: owner.headers(), body: JSON.stringify(body) })).text());
  try {
    const pair = async () => {
      const first = await stream({ message: 'the app' });
      assert.match(first, /event: interrupt/);
      const sessionId = JSON.parse(first.match(/^event: session\ndata: (.*)$/m)[1]).sessionId;
      const answer = await stream({ answer: 'May', sessionId });
      assert.match(answer, /event: done\ndata: \{"answer":"Plan for \\"the app\\" due May."\}/);
    };
    // One client: with several streams in flight at once, the wasm memory's high-water mark depends on
    // how they happen to overlap (it reached one page more at a random point, then stayed there over
    // 6,400 requests), which would blur a leak of a few bytes per request.
    const run = async (from, count) => {
      for (let i = from; i < from + count; i++) await pair(i);
    };
    // Even so the high-water mark can rise once, by a page, at a point that depends on the bundle and on how
    // allocations and collections interleave (anywhere from the 250th to the 700th pair here, with and without
    // the SQL savers in the bundle, then flat over 1,500 more pairs). As in the test above: at most that one
    // page over 2,000 requests; a leak of 66 bytes per request or more grows two (smaller ones are the Node
    // leak tests', at most 20 bytes per request).
    await run(0, 200); // warm-up
    const memory = async () => (await w.get('/__test/memory')).body.wasmBytes;
    const before = await memory();
    const t0 = performance.now();
    await run(200, REQUESTS / 8);
    const middle = await memory();
    await run(200 + REQUESTS / 8, REQUESTS / 8);
    const after = await memory();
    process.stdout.write(`# ${REQUESTS / 2} streamed requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; wasm memory ${before} -> ${middle} -> ${after} bytes\n`);
    assert.ok(after - before <= 65_536, `wasm memory grew ${after - before} bytes (more than one page)`);
  } finally {
    await w.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
