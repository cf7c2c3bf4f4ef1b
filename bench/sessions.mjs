// Sessions as a step log (issue 21): what a session writes and keeps, and what it costs, against the length of
// the run (part of `make bench`; alone: `node bench/sessions.mjs`). Prints markdown; writes bench/sessions.json.
//
// The run: n model calls — n−1 `lookup` calls each returning ~1 KB, then an answer — in a session with
// `keepCompleted: true`, on a text store over a Map (`textStoreSaver`, counting what it is given) and on a
// Workers KV binding stand-in that enforces production's rules (one write per second per key, else 429; the one
// the Node tests use). Times: the session run against the same run without a session (`agent.prompt`) in the
// same process; warm = best of 3 after 2 warm-up rounds, cold = the first run of a fresh process (no warm-up),
// median of 3 processes per kind.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { agent, defineTool, scriptedModel, kvSaver, textStoreSaver } from 'resumable-agent';
import { kvStandIn } from '../tests/node/kv-standin.mjs';
import { countingTextStore } from './lib/text-store.mjs';

const SIZES = [20, 400];
const log = (m) => process.stderr.write(`[sessions] ${m}\n`);
const bytes = (s) => Buffer.byteLength(s);

function longAgent(steps) {
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => `${key}: ${'x'.repeat(1000)}` });
  const script = Array.from({ length: steps - 1 }, (_, k) => ({ content: [{ type: 'tool_use', id: `l${k + 1}`, name: 'lookup', input: { key: `k${k + 1}` } }] }));
  script.push('done');
  return agent({ tools: [lookup], model: scriptedModel(script), maxIterations: steps + 1 });
}

/** One session run of n model calls on a fresh store; its counts and time. */
async function sessionRun(kind, n) {
  const store = kind === 'kv' ? kvStandIn() : countingTextStore(textStoreSaver);
  const saver = kind === 'kv' ? kvSaver(store, { prefix: 's:' }) : store.saver;
  const a = longAgent(n);
  const t0 = performance.now();
  const done = await a.session(saver, 'long', { keepCompleted: true }).prompt('go');
  const ms = performance.now() - t0;
  const finalBytes = bytes(JSON.stringify(done.checkpoint));
  const writes = kind === 'kv' ? store.counts.puts : store.counts.writes;
  // A client that reconnects: every logged event of the session, read back as another process would.
  let replay;
  if (kind === 'kv') {
    const before = store.counts.gets + store.counts.bulkGets;
    const t1 = performance.now();
    let events = 0;
    for await (const e of longAgent(n).session(kvSaver(store, { prefix: 's:' }), 'long').replay()) events += e ? 1 : 0;
    replay = { ms: performance.now() - t1, reads: store.counts.gets + store.counts.bulkGets - before, events };
  }
  return {
    ms, finalBytes, writes, replay,
    written: store.counts.bytesWritten,
    kept: store.kept(),
    refused: store.counts.refused ?? 0,
  };
}

/** The same session run with a listener (as `stream()` and a Worker's /stream have): every event made. */
async function listenedRun(n) {
  const store = countingTextStore(textStoreSaver);
  let events = 0;
  const t0 = performance.now();
  await longAgent(n).session(store.saver, 'long', { keepCompleted: true }).prompt('go', { onEvent: () => { events += 1; } });
  return { ms: performance.now() - t0, events };
}

async function plainRun(n) {
  const a = longAgent(n);
  const t0 = performance.now();
  await a.prompt('go');
  return performance.now() - t0;
}

// A child process measures a cold figure: the first run of one kind in a fresh process (no warm-up).
if (process.argv[2] === '--cold') {
  const [kind, n] = [process.argv[3], Number(process.argv[4])];
  process.stdout.write(JSON.stringify(kind === 'plain' ? await plainRun(n) : (await sessionRun(kind, n)).ms));
  process.exit(0);
}

/** Cold: the median of 3 fresh processes for each kind. */
function coldRuns(n) {
  const one = (kind) => {
    const times = [0, 1, 2].map(() => {
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--cold', kind, String(n)], { encoding: 'utf8', timeout: 300_000 });
      if (r.status !== 0) throw new Error(`cold ${kind} ${n}: ${r.stderr}`);
      return JSON.parse(r.stdout);
    }).sort((a, b) => a - b);
    return times[1];
  };
  return { plain: one('plain'), text: one('text'), kv: one('kv') };
}

const rows = [];
for (const n of SIZES) {
  log(`${n} steps`);
  const figures = {};
  for (const kind of ['text', 'kv']) {
    for (let i = 0; i < 2; i++) await sessionRun(kind, n); // warm-up
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await sessionRun(kind, n));
    figures[kind] = { ...runs[0], ms: Math.min(...runs.map((r) => r.ms)) };
  }
  for (let i = 0; i < 2; i++) await plainRun(n);
  const plain = Math.min(await plainRun(n), await plainRun(n), await plainRun(n));
  const cold = coldRuns(n);
  for (let i = 0; i < 2; i++) await listenedRun(n);
  const listened = await listenedRun(n);
  rows.push({ n, plain, cold, listened, ...figures });
}

const r400 = rows.find((r) => r.n === 400);
const x = (a, b) => `${(a / b).toFixed(3)}×`;
const yes = (ok) => (ok ? 'yes' : '**no**');
const kb = (b) => `${(b / 1000).toFixed(1)} KB`;
const targetRows = [
  ['bytes written ÷ final checkpoint JSON, text store / KV', `${x(r400.text.written, r400.text.finalBytes)} / ${x(r400.kv.written, r400.kv.finalBytes)}`, '≤ 1.5×',
    Math.max(r400.text.written / r400.text.finalBytes, r400.kv.written / r400.kv.finalBytes) <= 1.5],
  ['bytes kept ÷ final checkpoint JSON, text store / KV', `${x(r400.text.kept, r400.text.finalBytes)} / ${x(r400.kv.kept, r400.kv.finalBytes)}`, '≤ 1.3×',
    Math.max(r400.text.kept / r400.text.finalBytes, r400.kv.kept / r400.kv.finalBytes) <= 1.3],
  ['saver writes per model call, text store / KV', `${(r400.text.writes / 400).toFixed(4)} / ${(r400.kv.writes / 400).toFixed(4)}`, '≤ 2',
    Math.max(r400.text.writes, r400.kv.writes) / 400 <= 2],
  ['session run ÷ the same run without a session, best of 3 (text store / KV), warm', `${x(r400.text.ms, r400.plain)} / ${x(r400.kv.ms, r400.plain)}`, '≤ 2×',
    Math.max(r400.text.ms, r400.kv.ms) / r400.plain <= 2],
  ['the same, cold (first run of a fresh process, median of 3)', `${x(r400.cold.text, r400.cold.plain)} / ${x(r400.cold.kv, r400.cold.plain)}`, '≤ 2×',
    Math.max(r400.cold.text, r400.cold.kv) / r400.cold.plain <= 2],
  ['KV writes to one key within one second (429 from the stand-in), any n', `${rows.reduce((a, r) => a + r.kv.refused, 0)}`, '0', rows.every((r) => r.kv.refused === 0)],
];
const table = [
  'Sessions as a step log (`bench/sessions.mjs`): n model calls (n−1 lookups of ~1 KB, then an answer), `keepCompleted: true`.',
  '',
  '| figure, 400 steps | ours | target | meets |',
  '|---|---:|---:|:---:|',
  ...targetRows.map(([f, v, t, ok]) => `| ${f} | ${v} | ${t} | ${yes(ok)} |`),
  '',
  '| n | whole replay on KV (another process): events, KV read operations (bulk reads of ≤ 100 keys), ms warm |',
  '|---:|---:|',
  ...rows.map((r) => `| ${r.n} | ${r.kv.replay.events} events, ${r.kv.replay.reads} reads, ${r.kv.replay.ms.toFixed(1)} ms |`),
  '',
  '| n | the text-store session with a listener (onEvent, as stream() has): ms warm, ms per step |',
  '|---:|---:|',
  ...rows.map((r) => `| ${r.n} | ${r.listened.ms.toFixed(1)} ms, ${(r.listened.ms / r.n).toFixed(3)} ms per step (without a listener: ${(r.text.ms / r.n).toFixed(3)}) |`),
  '',
  'With a listener every step also hands the whole checkpoint to JS as a `checkpoint` event, so its cost per step grows with the run.',
  '',
  'A follower (`replay({ follow })`) then reads one bulk read of the next 4 positions per poll, at 20 steps as at 400 (`tests/node/steplog.test.mjs`).',
  '',
  '| n | final checkpoint | written (text / KV) | kept (text / KV) | writes (text / KV) | ms without a session, warm / cold | ms with a session, text warm / cold | KV warm / cold | ms per step with a session, text / KV (warm) |',
  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.n} | ${kb(r.text.finalBytes)} | ${kb(r.text.written)} / ${kb(r.kv.written)} | ${kb(r.text.kept)} / ${kb(r.kv.kept)} | ${r.text.writes} / ${r.kv.writes} | ${r.plain.toFixed(1)} / ${r.cold.plain.toFixed(1)} | ${r.text.ms.toFixed(1)} / ${r.cold.text.toFixed(1)} | ${r.kv.ms.toFixed(1)} / ${r.cold.kv.toFixed(1)} | ${(r.text.ms / r.n).toFixed(3)} / ${(r.kv.ms / r.n).toFixed(3)} |`),
].join('\n');
process.stdout.write(`${table}\n`);
writeFileSync(fileURLToPath(new URL('./sessions.json', import.meta.url)), `${JSON.stringify(rows, null, 2)}\n`);
