// Time per auto-save for every saver in its real environment, at 20 and at 400 steps (part of `make bench`;
// alone: `node bench/savers.mjs`). Prints a markdown table; writes bench/savers.json.
//
// The same session on each saver: n model calls (n−1 `lookup` calls returning ~500 bytes, then an answer),
// once with `autoSave: 'step'` (a record after every step: 2n) and once with `autoSave: 'stop'` (when the run
// starts and stops: 2). Time per auto-save = (median time with 'step' − median time with 'stop') ÷ (the extra
// records): flat when a save costs what its step added, growing when it rewrites the run. Warm: medians after
// two warm-up rounds; cold: the first round (no warm-up). No onEvent: its per-step checkpoint events would
// be timed too. Bytes per step: bench/sessions.mjs; for the SQL savers also here, as the database holds them (key,
// summary and value of every row of the 'step' session, ÷ its steps). Run by Node 22 (node:sqlite).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { agent, defineTool, scriptedModel, memorySaver, fileSaver, sqliteSaver, postgresSaver } from 'resumable-agent';
import { startPostgres } from '../tests/sql/postgres.mjs';
import { startWorker, ROOT } from '../tests/workers/harness.mjs';
import { serve } from '../scripts/serve-browser.mjs';
import { median } from './lib/stats.mjs';

const SIZES = process.env.SAVER_BENCH_STEPS ? [Number(process.env.SAVER_BENCH_STEPS)] : [20, 400];
const REPS = { 20: 7, 400: 3 };
const WARMUP = 2;
let STEPS = SIZES[0];
/** Records a session writes: a record per model answer and per tool result, the prompt's; or first and last. */
const savesOf = (mode, steps) => (mode === 'step' ? 2 * steps : 2);
const log = (m) => process.stderr.write(`[savers] ${m}\n`);

/** The session, in this process; returns { ms }. */
async function runHere(saver, sessionId, autoSave) {
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => ({ key, value: 'x'.repeat(480) }) });
  const model = scriptedModel(Array.from({ length: STEPS }, (_, k) => (k < STEPS - 1
    ? { content: [{ type: 'tool_use', id: `c${k}`, name: 'lookup', input: { key: `k${k}` } }] }
    : 'done')));
  const t0 = performance.now();
  await agent({ tools: [lookup], model, maxIterations: STEPS + 1 }).session(saver, sessionId, { autoSave, keepCompleted: true }).prompt('go');
  return { ms: performance.now() - t0 };
}

/** Medians of `run(id, autoSave)` for both modes; returns the figures. `stored(id)`: the bytes a session takes. */
async function measure(name, run, stored) {
  const out = { saver: name, bySteps: {} };
  for (const steps of SIZES) {
    STEPS = steps;
    const times = { step: [], stop: [] };
    const cold = {};
    for (let i = 0; i < WARMUP + (REPS[steps] ?? 3); i++) {
      for (const mode of ['step', 'stop']) {
        const r = await run(`${name}-${steps}-${mode}-${i}`, mode);
        if (i === 0) cold[mode] = r.ms;
        if (i >= WARMUP) times[mode].push(r.ms);
      }
    }
    const extra = savesOf('step', steps) - savesOf('stop', steps);
    out.bySteps[steps] = {
      medianMs: { step: median(times.step), stop: median(times.stop) },
      msPerAutoSave: (median(times.step) - median(times.stop)) / extra,
      msPerAutoSaveCold: (cold.step - cold.stop) / extra,
    };
    if (stored) out.bySteps[steps].bytesPerStep = (await stored(`${name}-${steps}-step-${WARMUP}`)) / steps;
  }
  return out;
}

const results = [];

log('memory (Node)');
const memory = memorySaver();
results.push(await measure('memory (Node)', (id, mode) => runHere(memory, id, mode)));

log('file (Node)');
const dir = mkdtempSync(join(tmpdir(), 'saver-bench-'));
const file = fileSaver({ dir });
results.push(await measure('file (Node, fsync + rename)', (id, mode) => runHere(file, id, mode)));
rmSync(dir, { recursive: true, force: true });

// The SQL savers: rows of the session's keys (its head and records), as stored.
const SUM = "SELECT sum(length(CAST(key AS BLOB)) + length(CAST(coalesce(summary, '') AS BLOB)) + length(CAST(value AS BLOB))) AS n FROM resumable_agent_checkpoints WHERE key = ? OR (key >= ? AND key < ?)";
log('SQLite (Node, node:sqlite, WAL)');
const sqliteDir = mkdtempSync(join(tmpdir(), 'saver-bench-sqlite-'));
const sqlite = new DatabaseSync(join(sqliteDir, 'bench.db'));
sqlite.exec('PRAGMA journal_mode = WAL');
const sqliteS = sqliteSaver(sqlite);
const sync = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][sqlite.prepare('PRAGMA synchronous').get().synchronous];
results.push(await measure(`SQLite (Node 22 node:sqlite, WAL, synchronous=${sync})`, (id, mode) => runHere(sqliteS, id, mode),
  async (id) => Number(sqlite.prepare(SUM).get(id, `${id}#~`, `${id}#\u007f`).n)));
sqlite.close();
rmSync(sqliteDir, { recursive: true, force: true });

log('Postgres (a local server, pg Pool)');
const server0 = await startPostgres();
const pool = new pg.Pool({ ...server0.config, max: 4 });
try {
  const postgresS = postgresSaver(pool);
  results.push(await measure('Postgres (local server on 127.0.0.1, pg Pool)', (id, mode) => runHere(postgresS, id, mode),
    async (id) => Number((await pool.query("SELECT sum(octet_length(key) + octet_length(coalesce(summary, '')) + octet_length(value)) AS n FROM resumable_agent_checkpoints WHERE key = $1 OR (key >= $2 AND key < $3)", [id, `${id}#~`, `${id}#\u007f`])).rows[0].n)));
} finally {
  await pool.end();
  server0.stop();
}

log('IndexedDB (Chromium)');
const server = await serve(0);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.evaluate(async () => { window.pkg = await import('/pkg/browser.js'); window.saver = window.pkg.indexedDbSaver({ dbName: 'bench' }); });
  results.push(await measure('IndexedDB (Chromium, strict durability)', (id, mode) => page.evaluate(async ({ id, mode, steps }) => {
    const { agent, defineTool, scriptedModel } = window.pkg;
    const lookup = defineTool({ name: 'lookup', handle: ({ key }) => ({ key, value: 'x'.repeat(480) }) });
    const model = scriptedModel(Array.from({ length: steps }, (_, k) => (k < steps - 1 ? { content: [{ type: 'tool_use', id: `c${k}`, name: 'lookup', input: { key: `k${k}` } }] } : 'done')));
    const t0 = performance.now();
    await agent({ tools: [lookup], model, maxIterations: steps + 1 }).session(window.saver, id, { autoSave: mode, keepCompleted: true }).prompt('go');
    return { ms: performance.now() - t0 };
  }, { id, mode, steps: STEPS })));
} finally {
  await browser.close();
  server.close();
}

const NAMES = { kv: 'Workers KV', 'durable-object': 'Durable Object', d1: 'D1' };
for (const saver of ['kv', 'durable-object', 'd1']) {
  log(`${saver} (workerd)`);
  const persist = mkdtempSync(join(tmpdir(), `saver-bench-${saver}-`));
  const w = await startWorker({ config: join(ROOT, 'examples/worker-js/wrangler.toml'), persistTo: persist, vars: { TEST_ROUTES: 'true', SAVER: saver } });
  try {
    results.push(await measure(`${NAMES[saver]} (local workerd, from the caller)`, async (id, mode) => {
      const t0 = performance.now();
      const { body } = await w.post('/__test/steps', { sessionId: id, steps: STEPS, autoSave: mode, events: false });
      if (body.text !== 'done') throw new Error(JSON.stringify(body));
      return { ms: performance.now() - t0 };
    }));
  } finally {
    await w.stop();
    rmSync(persist, { recursive: true, force: true });
  }
}

const row = (r) => {
  const [a, b] = SIZES.map((n) => r.bySteps[n]);
  const cells = [a, b].filter(Boolean).map((x) => `${x.msPerAutoSave.toFixed(3)} / ${x.msPerAutoSaveCold.toFixed(3)}`);
  const flat = b ? (b.msPerAutoSave <= 2 * Math.max(a.msPerAutoSave, 0.01) ? 'yes' : '**no**') : '';
  const bytes = [a, b].filter(Boolean).map((x) => (x.bytesPerStep === undefined ? '—' : Math.round(x.bytesPerStep))).join(' / ');
  return `| ${r.saver} | ${cells.join(' | ')} | ${flat} | ${bytes} |`;
};
const table = [
  `Time per auto-save (a record per step), sessions of ${SIZES.join(' and ')} model calls (lookups of ~500 bytes, then an answer); warm = medians after ${WARMUP} warm-up rounds (${SIZES.map((n) => REPS[n] ?? 3).join(' / ')} runs), cold = the first round.`,
  '',
  `| saver | ${SIZES.map((n) => `ms per auto-save at ${n} steps, warm / cold`).join(' | ')} | flat (at ${SIZES.at(-1)} ≤ 2× at ${SIZES[0]}, warm) | bytes stored per step at ${SIZES.join(' / ')} (SQL: rows as stored) |`,
  `|---|${SIZES.map(() => '---:').join('|')}|:---:|---:|`,
  ...results.map(row),
].join('\n');
process.stdout.write(`${table}\n`);
writeFileSync(fileURLToPath(new URL('./savers.json', import.meta.url)), `${JSON.stringify({ sizes: SIZES, results }, null, 2)}\n`);
export { table };
