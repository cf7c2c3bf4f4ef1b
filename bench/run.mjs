// The benchmark's entry point (`make bench` -> bench/run.sh -> `node --expose-gc run.mjs`).
// Runs every figure for LangGraph, the OpenAI Agents SDK, the AI SDK and ours on this machine, in one run,
// prints one markdown table (plus ms/step per n) and writes it to results.md (raw numbers: results.json).
// Progress goes to stderr; the tables go to stdout.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { buildWorker, buildNode, runInWorkerd, COMPAT_DATE } from './lib/bundle.mjs';
import { coldStart, bareNode } from './lib/cold.mjs';
import { measureFresh } from './fresh-workerd.mjs';
import { N_VALUES, ANSWER, finalText } from './lib/workload.mjs';
import { median } from './lib/stats.mjs';

const BENCH = fileURLToPath(new URL('./', import.meta.url));
const FRAMEWORKS = [
  { id: 'langgraph', column: 'LangGraph' },
  { id: 'openai-agents', column: 'OpenAI Agents' },
  { id: 'ai-sdk', column: 'AI SDK' },
  { id: 'ours', column: 'ours' },
  { id: 'ours-core', column: 'ours (/core)' },
];
const started = performance.now();
const log = (msg) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);

/** Runs `node --expose-gc <script> <args>` in a fresh process and parses the JSON it prints. */
function child(script, ...args) {
  const r = spawnSync(process.execPath, ['--expose-gc', join(BENCH, script), ...args], {
    cwd: BENCH,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    timeout: 300_000,
  });
  if (r.status !== 0) throw new Error(`${script} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

const version = (pkg) => JSON.parse(readFileSync(join(BENCH, 'node_modules', pkg, 'package.json'), 'utf8')).version;

// ---- 1-3: timing and sizes, one process per framework -------------------------------------------------
log('floor (JSON.stringify + JSON.parse of a plain message array)');
const floor = child('lib/measure.mjs', 'floor');
const timing = {};
for (const fw of FRAMEWORKS) {
  log(`W(n) for n in {${N_VALUES.join(', ')}}: ${fw.column}`);
  timing[fw.id] = child('lib/measure.mjs', fw.id);
}

// The same with a cold harness (one warm-up run per n, as a Worker request gets), for the targets table.
log('floor and W(n), cold harness (1 warm-up run)');
const floorCold = child('lib/measure.mjs', 'floor', 'cold');
const timingCold = {};
for (const fw of FRAMEWORKS) timingCold[fw.id] = child('lib/measure.mjs', fw.id, 'cold');

// ---- 6: memory while paused at n=200 ------------------------------------------------------------------
const memory = {};
for (const fw of FRAMEWORKS) {
  log(`memory held while paused at n=200: ${fw.column}`);
  memory[fw.id] = child('lib/memory.mjs', fw.id);
}

// ---- 4: Worker bundles, and whether they run in workerd without nodejs_compat --------------------------
const bundles = {};
for (const fw of FRAMEWORKS) {
  log(`Worker bundle + workerd: ${fw.column}`);
  const b = await buildWorker(fw.id);
  const expectText = finalText(ANSWER);
  const plain = await runInWorkerd(b, { nodejsCompat: false, expectText });
  const compat = plain.ok ? null : await runInWorkerd(b, { nodejsCompat: true, expectText });
  bundles[fw.id] = {
    ...b,
    runsWithoutCompat: plain.ok,
    runsWithCompat: plain.ok || compat.ok,
    failureWithoutCompat: plain.ok ? null : (plain.log.match(/(Uncaught [^\n]*|Error: [^\n]*)/)?.[1] ?? `HTTP ${plain.status}`),
    failureWithCompat: compat && !compat.ok ? compat.log.slice(0, 300) : null,
  };
}

// ---- 4a: the README's Worker shapes (tests/build-tools/shapes, built here against this package) -----------------
const SHAPES = { 'minimal Worker (resumable-agent/core)': 'minimal-worker', 'provider + KV session Worker': 'provider-kv-worker', 'everything Worker': 'everything-worker' };
const shapeBundles = {};
mkdirSync(join(BENCH, 'out', 'shapes'), { recursive: true });
for (const [label, file] of Object.entries(SHAPES)) {
  log(`Worker shape: ${label}`);
  // Copied under bench/ so that 'resumable-agent' resolves to this package (bench/node_modules), not a packed copy.
  const entry = join(BENCH, 'out', 'shapes', `${file}.js`);
  copyFileSync(join(BENCH, '..', 'tests', 'build-tools', 'shapes', `${file}.js`), entry);
  shapeBundles[label] = await buildWorker(`shape-${file}`, entry);
}

// ---- 4b: the first request in a fresh workerd isolate (a new workerd process per repetition) -----------
log('first request in a fresh workerd isolate: every framework, 7 fresh processes each');
const fresh = await measureFresh(FRAMEWORKS.map((fw) => fw.id), 21, bundles);

// ---- 5: cold start --------------------------------------------------------------------------------------
log('cold start: bare node');
const bare = bareNode();
const cold = {};
for (const fw of FRAMEWORKS) {
  log(`cold start: ${fw.column}`);
  cold[fw.id] = coldStart(await buildNode(fw.id));
}

// ---- 7: ours in a long-lived isolate: memory kept and time per request over 100,000 requests ---------------
// The request shapes of tests/leak/shapes.mjs (a fresh agent / session / saver per request, never yielding to
// the event loop, so no finalizer can help). Goal: at most 20 bytes kept per request, last 20k ≤ 1.2× first 20k.
const LONG_LIVED = ['resume-complete', 'session-memory', 'session-kv', 'saver-created', 'model-throws', 'saver-fails'];
const isolate = {};
for (const shape of LONG_LIVED) {
  log(`long-lived isolate, 100,000 requests: ${shape}`);
  isolate[shape] = child('../tests/leak/shapes.mjs', shape, '100000', '2000');
}

// ---- 8: savers: time per auto-save and bytes per step (bench/savers.mjs, each saver in its real host) ---------
log('savers: time per auto-save, bytes per step');
// Node 22 (the repository's own, from its devDependencies): node:sqlite.
const saversRun = spawnSync(join(BENCH, '../node_modules/.bin/node'), ['--no-warnings', join(BENCH, 'savers.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 600_000, maxBuffer: 16 << 20 });
if (saversRun.status !== 0) throw new Error(`savers.mjs failed (${saversRun.status ?? saversRun.signal}):\n${saversRun.stderr}`);
const saversTable = saversRun.stdout.trim();

// ---- 8b: sessions as a step log: bytes, writes and time against the run's length (bench/sessions.mjs) ------
log('sessions: bytes written and kept, writes per model call, session ÷ no session, at 20 and 400 steps');
const sessionsRun = spawnSync(process.execPath, [join(BENCH, 'sessions.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 900_000, maxBuffer: 16 << 20 });
if (sessionsRun.status !== 0) throw new Error(`sessions.mjs failed (${sessionsRun.status ?? sessionsRun.signal}):\n${sessionsRun.stderr}`);
const sessionsTable = sessionsRun.stdout.trim();

// ---- 8c: provider requests against the run's length (bench/providers.mjs) ---------------------------------
log('providers: request bytes and time per model call at 20 and 400 steps');
const providersRun = spawnSync(process.execPath, [join(BENCH, 'providers.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 600_000, maxBuffer: 16 << 20 });
if (providersRun.status !== 0) throw new Error(`providers.mjs failed (${providersRun.status ?? providersRun.signal}):\n${providersRun.stderr}`);
const providersTable = providersRun.stdout.trim();

// ---- 8d: MCP tools, client side (bench/mcp.mjs) -------------------------------------------------------------
log('mcp: time per MCP tool call at 20 and 400 steps, listing, an elicitation');
const mcpRun = spawnSync(process.execPath, [join(BENCH, 'mcp.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 600_000, maxBuffer: 16 << 20 });
if (mcpRun.status !== 0) throw new Error(`mcp.mjs failed (${mcpRun.status ?? mcpRun.signal}):\n${mcpRun.stderr}`);
const mcpTable = mcpRun.stdout.trim();

// ---- 8e: tracing: time per step with and without a tracer, the trace context's bytes (bench/telemetry.mjs) --
log('telemetry: ms per step with and without a tracer at n = 10/20/200/400, warm and cold');
const telemetryRun = spawnSync(process.execPath, [join(BENCH, 'telemetry.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 900_000, maxBuffer: 16 << 20 });
if (telemetryRun.status !== 0) throw new Error(`telemetry.mjs failed (${telemetryRun.status ?? telemetryRun.signal}):\n${telemetryRun.stderr}`);
const telemetryTable = telemetryRun.stdout.trim();

// ---- 8f: subagents: the paused checkpoint and time per step, nested vs flat (bench/subagents.mjs) -----------
log('subagents: checkpoint bytes and ms per step of a run nested in a parent vs flat, at n = 20/400');
const subagentsRun = spawnSync(process.execPath, [join(BENCH, 'subagents.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 900_000, maxBuffer: 16 << 20 });
if (subagentsRun.status !== 0) throw new Error(`subagents.mjs failed (${subagentsRun.status ?? subagentsRun.signal}):\n${subagentsRun.stderr}`);
const subagentsTable = subagentsRun.stdout.trim();

// ---- 8g: concurrent tool calls: a turn of three 100 ms tools, and the machinery's cost (bench/concurrency.mjs) --
log('concurrency: a turn of three 100 ms tools together vs one at a time; ms per step and session writes at n = 20/400');
const concurrencyRun = spawnSync(process.execPath, [join(BENCH, 'concurrency.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 900_000, maxBuffer: 16 << 20 });
if (concurrencyRun.status !== 0) throw new Error(`concurrency.mjs failed (${concurrencyRun.status ?? concurrencyRun.signal}):\n${concurrencyRun.stderr}`);
const concurrencyTable = concurrencyRun.stdout.trim();

// ---- 8h: summarizing compaction: checkpoint bytes and ms per step, none vs drop vs summarize (bench/summaries.mjs) --
log('summaries: a run of n lookups with no compaction, dropping, and summaries, at n = 20/400');
const summariesRun = spawnSync(process.execPath, [join(BENCH, 'summaries.mjs')], { cwd: BENCH, encoding: 'utf8', timeout: 900_000, maxBuffer: 16 << 20 });
if (summariesRun.status !== 0) throw new Error(`summaries.mjs failed (${summariesRun.status ?? summariesRun.signal}):\n${summariesRun.stderr}`);
const summariesTable = summariesRun.stdout.trim();

// ---- 9: streaming: a provider's first SSE byte -> the first text-delta event (ours, and a fetch floor) -----
log('streaming: first byte -> first text-delta, warm and cold');
const streamWarm = child('first-delta.mjs', '20', '50');
const streamCold = Array.from({ length: 5 }, () => child('first-delta.mjs', '1', '1'));

// ---- the tables -----------------------------------------------------------------------------------------
const f1 = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const ratio = (x) => `${x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)}×`;
const kib = (b) => (b / 1024).toFixed(1);
const N = 200;
const fl = floor.byN[N];
const floorMs = fl.stringifyMs + fl.parseMs;

const figures = {};
for (const fw of FRAMEWORKS) {
  const t = timing[fw.id].byN;
  const b = bundles[fw.id];
  const m = memory[fw.id];
  figures[fw.id] = {
    msStep200: t[200].msPerStep,
    msStep10: t[10].msPerStep,
    pauseResumeRatio: (t[N].pauseMs + t[N].resumeFirstCallMs) / floorMs,
    pauseRatio: t[N].pauseMs / fl.stringifyMs,
    resumeRatio: t[N].resumeFirstCallMs / fl.parseMs,
    bytesRatio: t[N].checkpointBytes / fl.bytes,
    gzipRatio: t[N].checkpointGzip / fl.gzip,
    bundleGzipKiB: (b.jsGzip + b.wasmGzip) / 1024,
    coldMs: cold[fw.id].medianMs,
    heldBytes: m.heldBytes,
  };
}

const targets = {
  msStep200: { text: '≤ 0.2', ok: (v) => v <= 0.2 },
  msStep10: { text: '≤ 0.1', ok: (v) => v <= 0.1 },
  pauseResumeRatio: { text: '≤ 3×', ok: (v) => v <= 3 },
  bytesRatio: { text: '≤ 1.1×', ok: (v) => v <= 1.1 },
  bundleGzipKiB: { text: '≤ 250', ok: (v) => v <= 250 },
  coldMs: { text: '≤ 110', ok: (v) => v <= 110 },
};
const met = (key) => (targets[key] ? (targets[key].ok(figures.ours[key]) ? 'yes' : '**no**') : '');

const rows = [];
const row = (label, key, cell, target = targets[key]?.text ?? '—') =>
  rows.push(`| ${label} | ${FRAMEWORKS.map((fw) => cell(fw.id)).join(' | ')} | ${target} | ${met(key)} |`);

row('ms per step, n=200 (whole W(n), pause and resume included; median)', 'msStep200', (id) => f1(figures[id].msStep200));
row('ms per step, n=10', 'msStep10', (id) => f1(figures[id].msStep10));
row(
  `pause+resume ÷ floor, n=200 (floor ${f1(floorMs)} ms); in brackets: pause + string→first model call, ms`,
  'pauseResumeRatio',
  (id) => `${ratio(figures[id].pauseResumeRatio)} (${f1(timing[id].byN[N].pauseMs)} + ${f1(timing[id].byN[N].resumeFirstCallMs)})`,
);
row(
  `pause ÷ floor stringify (${f1(fl.stringifyMs)} ms) / resume ÷ floor parse (${f1(fl.parseMs)} ms), n=200`,
  'split',
  (id) => `${ratio(figures[id].pauseRatio)} / ${ratio(figures[id].resumeRatio)}`,
);
row(
  `checkpoint bytes ÷ floor, n=200 (floor ${kib(fl.bytes)} KiB); in brackets: raw KiB`,
  'bytesRatio',
  (id) => `${ratio(figures[id].bytesRatio)} (${kib(timing[id].byN[N].checkpointBytes)})`,
);
row(
  `checkpoint gzip ÷ floor gzip, n=200 (floor ${kib(fl.gzip)} KiB); in brackets: gzip KiB`,
  'gzipRatio',
  (id) => `${ratio(figures[id].gzipRatio)} (${kib(timing[id].byN[N].checkpointGzip)})`,
);
row(
  'Worker bundle, gzip KiB (esbuild ESM minified; ours = JS + .wasm)',
  'bundleGzipKiB',
  (id) => {
    const b = bundles[id];
    const split = b.wasmBytes ? ` (${kib(b.jsGzip)} JS + ${kib(b.wasmGzip)} wasm)` : '';
    return `${kib(b.jsGzip + b.wasmGzip)}${split}`;
  },
);
row(
  'Worker bundle, raw KiB',
  'bundleRaw',
  (id) => kib(bundles[id].jsBytes + bundles[id].wasmBytes),
);
row(
  `needs nodejs_compat (ran in workerd ${version('workerd')}, compat date ${COMPAT_DATE})`,
  'compat',
  (id) => {
    const b = bundles[id];
    if (b.runsWithoutCompat) return 'no';
    if (b.runsWithCompat) return `yes${b.builtinsImported.length ? ` (imports ${b.builtinsImported.length} Node built-ins)` : ''}`;
    return 'fails even with it';
  },
  'no',
);
row(`cold start, whole process ms (bare node ${f1(bare.medianMs)})`, 'coldMs', (id) => f1(figures[id].coldMs));
row(
  'memory held while paused, n=200: JS heap + external (wasm / ArrayBuffers), KiB',
  'memory',
  (id) => {
    const m = memory[id];
    const ext = m.externalDelta;
    return `${kib(m.heldBytes)} (${kib(m.heapUsedDelta)} heap + ${kib(ext)} ${id.startsWith('ours') ? 'wasm' : 'ext'})`;
  },
);

const header = `| figure | ${FRAMEWORKS.map((fw) => fw.column).join(' | ')} | target (ours) | ours meets |`;
const sep = `|---|${FRAMEWORKS.map(() => '---:').join('|')}|---:|:---:|`;
const main = [header, sep, ...rows].join('\n');

const perN = [
  `| n | ${FRAMEWORKS.map((fw) => fw.column).join(' | ')} | floor: stringify + parse, ms | floor bytes |`,
  `|---:|${FRAMEWORKS.map(() => '---:').join('|')}|---:|---:|`,
  ...N_VALUES.map(
    (n) =>
      `| ${n} | ${FRAMEWORKS.map((fw) => `${f1(timing[fw.id].byN[n].msPerStep)}`).join(' | ')} | ${f1(floor.byN[n].stringifyMs + floor.byN[n].parseMs)} | ${floor.byN[n].bytes} |`,
  ),
].join('\n');

const isolateTable = [
  '| request shape (ours, a fresh agent/session/saver per request) | bytes kept per request | wasm memory before → after | last 20k ÷ first 20k | µs per request | meets (≤ 20 B, ≤ 1.2×) |',
  '|---|---:|---:|---:|---:|:---:|',
  ...LONG_LIVED.map((shape) => {
    const r = isolate[shape];
    const ok = r.keptBytesPerRequest <= 20 && r.lastFifthOverFirstFifth <= 1.2;
    return `| ${shape} | ${r.keptBytesPerRequest.toFixed(1)} | ${kib(r.wasmBytesBefore)} → ${kib(r.wasmBytesAfter)} KiB | ${r.lastFifthOverFirstFifth.toFixed(2)}× | ${(r.msPerRequest * 1000).toFixed(0)} | ${ok ? 'yes' : '**no**'} |`;
  }),
].join('\n');

const streamTable = [
  '| first SSE byte → first `text-delta` event, ms | ours (openai() through the package) | floor (fetch + getReader + JSON.parse) |',
  '|---|---:|---:|',
  `| warm: median of 50 after 20 warm-ups | ${f1(streamWarm.ours)} | ${f1(streamWarm.floor)} |`,
  `| cold: after 1 warm-up, median of 5 fresh processes | ${f1(median(streamCold.map((c) => c.ours)))} | ${f1(median(streamCold.map((c) => c.floor)))} |`,
  `| first request of a fresh process, median of 5 | ${f1(median(streamCold.map((c) => c.oursFirst)))} | ${f1(median(streamCold.map((c) => c.floorFirst)))} |`,
].join('\n');

// The targets of issue 23 (the binding only converts), as ratios measured side by side in this run, warm and
// with the cold harness; and the size of the binding, counted here.
const vsAiSdk = (t, n) => t.ours.byN[n].msPerStep / t['ai-sdk'].byN[n].msPerStep;
const prFloor = (t, f, n) => (t.ours.byN[n].pauseMs + t.ours.byN[n].resumeFirstCallMs) / (f.byN[n].stringifyMs + f.byN[n].parseMs);
const oursBundle = figures.ours.bundleGzipKiB;
const wasmDir = join(BENCH, '..', 'src', 'wasm');
const bindingLines = readdirSync(wasmDir).reduce((sum, f) => sum + readFileSync(join(wasmDir, f), 'utf8').split('\n').length - 1, 0);
const targetRows = [
  ['ms per step ÷ AI SDK\'s, n=1', vsAiSdk(timing, 1), vsAiSdk(timingCold, 1), 0.1],
  ['ms per step ÷ AI SDK\'s, n=10', vsAiSdk(timing, 10), vsAiSdk(timingCold, 10), 0.1],
  ['ms per step ÷ AI SDK\'s, n=200', vsAiSdk(timing, 200), vsAiSdk(timingCold, 200), 0.05],
  ['pause + resume ÷ JSON floor, n=10', prFloor(timing, floor, 10), prFloor(timingCold, floorCold, 10), 2],
  ['pause + resume ÷ JSON floor, n=200', prFloor(timing, floor, 200), prFloor(timingCold, floorCold, 200), 2],
  ['checkpoint bytes ÷ floor, n=200', figures.ours.bytesRatio, null, 1.05],
];
// Fresh isolates: ratios of medians, and the milliseconds behind them.
const freshRow = (label, pick) => {
  const r = pick(fresh.byFw.ours) / pick(fresh.byFw['ai-sdk']);
  return `| ${label}; ms: ours ${f1(pick(fresh.byFw.ours))}, AI SDK ${f1(pick(fresh.byFw['ai-sdk']))} | ${ratio(r)} | (same) | ≤ 0.5× | ${r <= 0.5 ? 'yes' : '**no**'} |`;
};
const targetTable = [
  '| figure (issue 23) | warm | cold harness (1 warm-up run) | target | meets (warm / cold) |',
  '|---|---:|---:|---:|:---:|',
  ...targetRows.map(([label, warm, coldV, target]) => {
    const ok = (v) => (v === null ? '—' : v <= target ? 'yes' : '**no**');
    return `| ${label} | ${ratio(warm)} | ${coldV === null ? '(same)' : ratio(coldV)} | ≤ ${target}× | ${ok(warm)} / ${ok(coldV ?? warm)} |`;
  }),
  `| Worker bundle, gzip (ours: JS + the whole .wasm) | ${f1(oursBundle)} KiB | (same) | ≤ 250 KiB | ${oursBundle <= 250 ? 'yes' : '**no**'} |`,
  freshRow('first request in a fresh workerd isolate ÷ AI SDK\'s (W(1): prompt, pause, resume, answer)', (m) => m.firstMs),
  freshRow('workerd start + first request ÷ AI SDK\'s', (m) => m.startupMs + m.firstMs),
  `| src/wasm/ lines (the binding, glue.js included) | ${bindingLines} | — | ≤ 1,800 | ${bindingLines <= 1800 ? 'yes' : '**no**'} |`,
].join('\n');

const freshTable = [
  `| | ${FRAMEWORKS.map((fw) => fw.column).join(' | ')} |`,
  `|---|${FRAMEWORKS.map(() => '---:').join('|')}|`,
  `| workerd start until it listens, ms (Worker loaded and evaluated) | ${FRAMEWORKS.map((fw) => f1(fresh.byFw[fw.id].startupMs)).join(' | ')} |`,
  `| first request, ms | ${FRAMEWORKS.map((fw) => f1(fresh.byFw[fw.id].firstMs)).join(' | ')} |`,
  `| second request, ms | ${FRAMEWORKS.map((fw) => f1(fresh.byFw[fw.id].secondMs)).join(' | ')} |`,
].join('\n');

// Issue 33's targets (pay for what you import): the minimal agent's bundle, the fresh isolate, the whole process and
// the cold per-step figures, for 'resumable-agent' and 'resumable-agent/core' (a Worker ships every .wasm it
// imports, so the main entry's Worker has the full variant; a page or a bundled Node program gets the smallest).
const coldVs = (id, n) => timingCold[id].byN[n].msPerStep / timingCold['ai-sdk'].byN[n].msPerStep;
const yes = (ok) => (ok ? 'yes' : '**no**');
const issue33 = [
  '| figure (issue 33) | ours | ours (/core) | target | meets (ours / core) |',
  '|---|---:|---:|---:|:---:|',
  (() => {
    const [a, b] = ['ours', 'ours-core'].map((id) => figures[id].bundleGzipKiB);
    return `| minimal agent's Worker bundle, gzip KiB (JS + .wasm; AI SDK ${f1(figures['ai-sdk'].bundleGzipKiB)}) | ${f1(a)} | ${f1(b)} | ≤ 155 | ${yes(a <= 155)} / ${yes(b <= 155)} |`;
  })(),
  (() => {
    const [a, b] = ['ours', 'ours-core'].map((id) => fresh.byFw[id].firstMs / fresh.byFw['ai-sdk'].firstMs);
    return `| first request in a fresh workerd isolate ÷ AI SDK's (ms: ${f1(fresh.byFw.ours.firstMs)}, ${f1(fresh.byFw['ours-core'].firstMs)}, AI SDK ${f1(fresh.byFw['ai-sdk'].firstMs)}) | ${ratio(a)} | ${ratio(b)} | ≤ 0.5× | ${yes(a <= 0.5)} / ${yes(b <= 0.5)} |`;
  })(),
  (() => {
    const [a, b] = ['ours', 'ours-core'].map((id) => fresh.byFw[id].startupMs + fresh.byFw[id].firstMs);
    const ai = fresh.byFw['ai-sdk'].startupMs + fresh.byFw['ai-sdk'].firstMs;
    return `| workerd start + first request, ms (AI SDK ${f1(ai)}) | ${f1(a)} (${ratio(a / ai)}) | ${f1(b)} (${ratio(b / ai)}) | — | |`;
  })(),
  (() => {
    const [a, b] = ['ours', 'ours-core'].map((id) => cold[id].medianMs - bare.medianMs);
    return `| whole-process cold start − bare node (${f1(bare.medianMs)} ms), ms | ${f1(a)} | ${f1(b)} | ≤ 20 | ${yes(a <= 20)} / ${yes(b <= 20)} |`;
  })(),
  ...[1, 10, 200].map((n) => {
    const [a, b] = ['ours', 'ours-core'].map((id) => coldVs(id, n));
    const target = n === 200 ? null : 0.1;
    return `| ms per step ÷ AI SDK's, n=${n}, cold harness (1 warm-up run) | ${ratio(a)} | ${ratio(b)} | ${target === null ? '—' : `≤ ${target}×`} | ${target === null ? '' : `${yes(a <= target)} / ${yes(b <= target)}`} |`;
  }),
].join('\n');

const shapeTable = [
  '| Worker shape (esbuild ESM minified, as `wrangler deploy` bundles) | JS gzip KiB | .wasm gzip KiB | total gzip KiB | .wasm |',
  '|---|---:|---:|---:|---|',
  ...Object.entries(shapeBundles).map(([label, b]) => `| ${label} | ${kib(b.jsGzip)} | ${kib(b.wasmGzip)} | ${kib(b.jsGzip + b.wasmGzip)} | ${b.wasmFiles.join(', ')} |`),
].join('\n');

const versions = {
  '@langchain/langgraph': version('@langchain/langgraph'),
  '@langchain/core': version('@langchain/core'),
  '@openai/agents': version('@openai/agents'),
  ai: version('ai'),
  zod: version('zod'),
  esbuild: version('esbuild'),
  workerd: version('workerd'),
  'resumable-agent': version('resumable-agent'),
};
const reps = FRAMEWORKS.map((fw) => `${fw.column} ${N_VALUES.map((n) => timing[fw.id].byN[n].reps).join('/')}`).join(', ');
const elapsed = (performance.now() - started) / 1000;
const report = `## Benchmark: W(n) pause/resume, same machine, one run

Node ${process.version} on ${cpus().length} × ${cpus()[0]?.model?.trim() ?? 'CPU'}. ${Object.entries(versions).map(([k, v]) => `${k} ${v}`).join(', ')} (ours: ${kib(bundles.ours.wasmBytes)} KiB .wasm).

${main}

ms per step (median; whole W(n) ÷ n):

${perN}

Issue 23's targets, side by side in this run (ratios; the cold harness gives each framework one warm-up run per n):

${targetTable}

First request in a fresh workerd isolate (\`bench/fresh-workerd.mjs\`: each framework's minimal Worker, a new workerd process per repetition, medians of ${fresh.bare.reps}; a bare Worker answering at once: start ${f1(fresh.bare.startupMs)} ms, first request ${f1(fresh.bare.firstMs)} ms):

${freshTable}

Issue 33's targets (pay for what you import), side by side in this run:

${issue33}

The README's Worker shapes (the pages' shapes are measured by \`make test\`, tests/build-tools):

${shapeTable}

A long-lived isolate (100,000 requests per shape, one process each, never yielding to the event loop):

${isolateTable}

Streaming (\`bench/first-delta.mjs\`: a stand-in provider on 127.0.0.1 writes its first frame, the rest 20 ms later):

${streamTable}

Savers (\`bench/savers.mjs\`):

${saversTable}

${sessionsTable}

${providersTable}

${mcpTable}

${telemetryTable}

${subagentsTable}

${concurrencyTable}

${summariesTable}

Repetitions after warm-up, per n = ${N_VALUES.join('/')}: ${reps}. Every run, warm-up included, was checked: the final text, and that the last model call saw the whole history (2n+1 or 2n+2 messages in the framework's own representation, with all n tool results — n−1 lookups and the answer — in order). Whole run: ${elapsed.toFixed(0)} s.
`;

process.stdout.write(`${report}\n`);
writeFileSync(join(BENCH, 'results.md'), report);
writeFileSync(
  join(BENCH, 'results.json'),
  `${JSON.stringify({ node: process.version, versions, floor, floorCold, timing, timingCold, memory, bundles, fresh, cold, bare, figures, bindingLines, shapeBundles, isolate, streamWarm, streamCold, elapsedSeconds: elapsed }, null, 2)}\n`,
);
log('done: results.md, results.json');
