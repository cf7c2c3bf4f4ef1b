// One framework's timing and size figures, in its own process (run.mjs starts one per framework, so no
// framework's heap, JIT state or GC pressure affects another's):
//
//   node --expose-gc lib/measure.mjs <ours|langgraph|openai-agents|ai-sdk>   -> JSON on stdout
//   node --expose-gc lib/measure.mjs floor                                    -> JSON on stdout
//
// For each n: warm-up runs, then timed repetitions (each a whole W(n), pause and resume included), every one
// verified (final text, and the history the last model call saw). No GC is forced between repetitions: each
// framework's garbage is collected when V8 decides, as in a server, and that time counts. Repetitions are bounded by count and
// time so the whole benchmark stays within a few minutes on 2 cores.
import { gzipSync } from 'node:zlib';
import { N_VALUES, floorMessages, verifyRun } from './workload.mjs';
import { median } from './stats.mjs';

// Warm-up until the JIT has settled: at least WARMUP_MIN runs and WARMUP_MS of running (capped at
// WARMUP_MAX runs), so a 0.3 ms W(1) gets hundreds of warm-up runs and a 2 s W(200) gets two.
// `cold` (third argument): exactly one warm-up run per n, as a Worker request or a page load gets no
// warmed-up loop; the repetitions are then timed as usual.
const COLD = process.argv[3] === 'cold';
const WARMUP_MIN = COLD ? 1 : 2;
const WARMUP_MS = COLD ? 0 : 1000;
const WARMUP_MAX = COLD ? 1 : 500;
const REPS_MIN = 5;
// Warm: up to 400 repetitions within the time budget, so a 0.2 ms W(1) is not a median of 25 runs that one
// GC pause can move (a 25-run median of ours at n=1 read 0.26 and 0.42 ms in two runs of `make bench`).
// Cold: 25, so that the figure stays close to the first runs after the one warm-up.
const REPS_MAX = COLD ? 25 : 400;
const REPS_BUDGET_MS = 6000;

const bytes = (s) => Buffer.byteLength(s, 'utf8');
const gz = (s) => gzipSync(s).length;

async function measureFramework(name) {
  const fw = await import(`../frameworks/${name}.mjs`);
  const out = { framework: name, label: fw.label, byN: {} };
  for (const n of N_VALUES) {
    let t = performance.now();
    let warmups = 0;
    while (warmups < WARMUP_MIN || (warmups < WARMUP_MAX && performance.now() - t < WARMUP_MS)) {
      verifyRun(n, await fw.runW(n));
      warmups++;
    }
    const runs = [];
    t = performance.now();
    while (runs.length < REPS_MAX && (runs.length < REPS_MIN || performance.now() - t < REPS_BUDGET_MS)) {
      const r = await fw.runW(n);
      verifyRun(n, r); // every repetition: final text + the whole history at the last model call
      runs.push(r);
    }
    const sizes = runs.map((r) => bytes(r.checkpointString));
    const last = runs.at(-1).checkpointString;
    out.byN[n] = {
      warmups,
      reps: runs.length,
      msPerStep: median(runs.map((r) => r.totalMs / n)),
      totalMs: median(runs.map((r) => r.totalMs)),
      pauseMs: median(runs.map((r) => r.pauseMs)),
      resumeFirstCallMs: median(runs.map((r) => r.resumeFirstCallMs)),
      checkpointBytes: median(sizes),
      checkpointGzip: gz(last),
      lastRequestMessageCount: runs.at(-1).lastRequestMessageCount,
    };
  }
  return out;
}

// The floor: JSON.stringify / JSON.parse of a plain message array with the same content as the paused state.
function measureFloor() {
  const out = { framework: 'floor', byN: {} };
  for (const n of N_VALUES) {
    const messages = floorMessages(n);
    const text = JSON.stringify(messages);
    for (let i = 0; i < (COLD ? 1 : 50); i++) JSON.parse(JSON.stringify(messages)); // warm-up
    const stringify = [];
    const parse = [];
    const t = performance.now();
    while (stringify.length < 2000 && (stringify.length < 50 || performance.now() - t < 1500)) {
      const a = performance.now();
      const s = JSON.stringify(messages);
      const b = performance.now();
      const back = JSON.parse(s);
      const c = performance.now();
      if (back.length !== messages.length) throw new Error('floor round trip');
      stringify.push(b - a);
      parse.push(c - b);
    }
    out.byN[n] = {
      reps: stringify.length,
      stringifyMs: median(stringify),
      parseMs: median(parse),
      bytes: bytes(text),
      gzip: gz(text),
      messages: messages.length,
    };
  }
  return out;
}

const which = process.argv[2];
const result = which === 'floor' ? measureFloor() : await measureFramework(which);
process.stdout.write(`${JSON.stringify(result)}\n`);
