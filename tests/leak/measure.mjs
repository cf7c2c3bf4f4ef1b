// How a request shape's memory is measured (shapes.mjs, core-shapes.mjs): requests in a loop that never yields to
// the event loop, memory sampled after a full GC every `requests / 10` requests; `keptBytesPerRequest` is the
// least-squares slope of (JS heap + external, which includes the wasm memory) over those samples.
const gc = () => { for (let k = 0; k < 3; k++) globalThis.gc(); };
const used = () => { const m = process.memoryUsage(); return m.heapUsed + m.external; };

/** Runs `requests` requests of `shape` (one of `shapes`) after `warmup` ones; returns the figures. */
export async function measureShape(shapes, shape, requests, warmup, wasmBytes) {
  const run = shapes[shape];
  if (!run) throw new Error(`unknown shape ${shape}; shapes: ${Object.keys(shapes).join(', ')}`);
  for (let i = 0; i < warmup; i++) await run(i);
  const step = Math.max(1, Math.floor(requests / 10));
  gc();
  const samples = [[0, used()]];
  const wasmBefore = wasmBytes();
  const t0 = performance.now();
  let firstFifthMs = 0;
  let lastFifthMs = 0;
  let mark = t0;
  for (let i = 1; i <= requests; i++) {
    await run(warmup + i);
    if (i === Math.floor(requests / 5)) firstFifthMs = performance.now() - t0;
    if (i === requests - Math.floor(requests / 5)) mark = performance.now();
    if (i % step === 0) {
      if (i === requests) lastFifthMs = performance.now() - mark;
      gc();
      samples.push([i, used()]);
    }
  }
  const n = samples.length;
  const mx = samples.reduce((a, [x]) => a + x, 0) / n;
  const my = samples.reduce((a, [, y]) => a + y, 0) / n;
  const slope = samples.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / samples.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return {
    shape,
    requests,
    warmup,
    keptBytesPerRequest: slope,
    heapPlusExternalBefore: samples[0][1],
    heapPlusExternalAfter: samples.at(-1)[1],
    wasmBytesBefore: wasmBefore,
    wasmBytesAfter: wasmBytes(),
    lastFifthOverFirstFifth: lastFifthMs / firstFifthMs,
    msPerRequest: (performance.now() - t0) / requests,
  };
}

