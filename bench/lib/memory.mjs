// Memory held while paused at n=200, in a fresh process per framework:
//
//   node --expose-gc lib/memory.mjs <framework>   -> JSON on stdout
//
// Baseline: after importing the framework and running one whole W(1) (so lazy initialisation and compiled
// code are in place) and forcing GC. Then W(200) runs to the pause; we keep what a live process would hold
// while waiting for the human — the framework's pause result, its own state store where it has one
// (LangGraph's MemorySaver), and the checkpoint string — force GC again and take the deltas of
// process.memoryUsage(): heapUsed (JS heap), external and arrayBuffers.
//
// The figure is heapUsed delta + external delta. `external` covers memory V8 holds outside its heap:
// ArrayBuffer backing stores (`arrayBuffers`, e.g. the Uint8Arrays LangGraph's MemorySaver stores) and wasm
// linear memory (checked: growing a WebAssembly.Memory by 64 MiB raises external by 64 MiB and leaves
// arrayBuffers unchanged). For ours the wasm linear memory is also read exactly: the package's memoryUsage()
// reports its size. Wasm memory never shrinks, so its growth is the run's high-water mark, all of it held by the process
// while paused (and after).
import { ANSWER } from './workload.mjs';

const name = process.argv[2];
const fw = await import(`../frameworks/${name}.mjs`);

let wasmMemory = () => 0;
if (name.startsWith('ours')) {
  await fw.loadWasm();
  wasmMemory = () => fw.memoryUsage().wasmBytes;
}

const settle = async () => {
  for (let i = 0; i < 4; i++) {
    globalThis.gc();
    await new Promise((r) => setImmediate(r));
  }
};

await fw.runW(1, ANSWER);
await settle();
const before = process.memoryUsage();
const wasmBefore = wasmMemory();

const paused = await fw.pauseW(200, ANSWER);
await settle();
const after = process.memoryUsage();
const wasmAfter = wasmMemory();

const result = {
  framework: name,
  heapUsedDelta: after.heapUsed - before.heapUsed,
  externalDelta: after.external - before.external,
  arrayBuffersDelta: after.arrayBuffers - before.arrayBuffers,
  wasmMemoryBefore: wasmBefore,
  wasmMemoryAfter: wasmAfter,
  wasmMemoryDelta: wasmAfter - wasmBefore,
  heldBytes: after.heapUsed - before.heapUsed + (after.external - before.external),
  checkpointBytes: Buffer.byteLength(paused.checkpointString),
  heldKeys: Object.keys(paused.held ?? {}),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
