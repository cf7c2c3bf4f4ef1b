// Time per auto-save and bytes stored per step, for every saver in its real environment (part of
// `make bench`; alone: `node bench/savers.mjs`). Prints a markdown table; writes bench/savers.json.
//
// The same session on each saver: n model calls (n−1 `lookup` calls returning ~500 bytes, then an answer),
// once with `autoSave: 'step'` (saved after every step) and once with `autoSave: 'stop'` (saved when the run
// starts and stops). Time per auto-save = (median time with 'step' − median time with 'stop') ÷ (the extra
// saves). Each save writes the head and a history entry, so bytes written per step ≈ 2 × the checkpoint's
// size at that step; bytes stored = the history plus the head at the end.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { agent, defineTool, scriptedModel, memorySaver, fileSaver } from 'resumable-agent';
import { startWorker, ROOT } from '../tests/workers/harness.mjs';
import { serve } from '../scripts/serve-browser.mjs';
import { median } from './lib/stats.mjs';

const STEPS = Number(process.env.SAVER_BENCH_STEPS ?? 20);
const REPS = 7;
const WARMUP = 2;
const log = (m) => process.stderr.write(`[savers] ${m}\n`);

/** The session, in this process; returns { ms, saves, bytes: [checkpoint size at each save] }. */
async function runHere(saver, sessionId, autoSave) {
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => ({ key, value: 'x'.repeat(480) }) });
  const model = scriptedModel(Array.from({ length: STEPS }, (_, k) => (k < STEPS - 1
    ? { content: [{ type: 'tool_use', id: `c${k}`, name: 'lookup', input: { key: `k${k}` } }] }
    : 'done')));
  const bytes = [];
  let saves = 0;
  const t0 = performance.now();
  await agent({ tools: [lookup], model, maxIterations: STEPS + 1 }).session(saver, sessionId, { autoSave, keepCompleted: true })
    .prompt('go', { onEvent: (e) => { if (e.type === 'checkpoint-saved') saves += 1; if (e.type === 'checkpoint') bytes.push(JSON.stringify(e.checkpoint).length); } });
  return { ms: performance.now() - t0, saves, bytes };
}

/** Medians of `run(id, autoSave)` for both modes; returns the figures. */
async function measure(name, run) {
  const times = { step: [], stop: [] };
  let saves = {};
  let bytes = [];
  for (let i = 0; i < WARMUP + REPS; i++) {
    for (const mode of ['step', 'stop']) {
      const r = await run(`${name}-${mode}-${i}`, mode);
      if (i >= WARMUP) times[mode].push(r.ms);
      saves[mode] = r.saves;
      if (mode === 'step' && r.bytes) bytes = r.bytes;
    }
  }
  const perSave = (median(times.step) - median(times.stop)) / (saves.step - saves.stop);
  return { saver: name, steps: STEPS, saves, medianMs: { step: median(times.step), stop: median(times.stop) }, msPerAutoSave: perSave, checkpointBytes: bytes };
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
    let saves = 0;
    const t0 = performance.now();
    await agent({ tools: [lookup], model, maxIterations: steps + 1 }).session(window.saver, id, { autoSave: mode, keepCompleted: true })
      .prompt('go', { onEvent: (e) => { if (e.type === 'checkpoint-saved') saves += 1; } });
    return { ms: performance.now() - t0, saves };
  }, { id, mode, steps: STEPS })));
} finally {
  await browser.close();
  server.close();
}

for (const saver of ['kv', 'durable-object']) {
  log(`${saver} (workerd)`);
  const persist = mkdtempSync(join(tmpdir(), `saver-bench-${saver}-`));
  const w = await startWorker({ config: join(ROOT, 'examples/worker-js/wrangler.toml'), persistTo: persist, vars: { TEST_ROUTES: 'true', SAVER: saver } });
  try {
    results.push(await measure(`${saver === 'kv' ? 'Workers KV' : 'Durable Object'} (local workerd, from the caller)`, async (id, mode) => {
      const t0 = performance.now();
      const { body } = await w.post('/__test/steps', { sessionId: id, steps: STEPS, autoSave: mode });
      if (body.text !== 'done') throw new Error(JSON.stringify(body));
      return { ms: performance.now() - t0, saves: body.saves };
    }));
  } finally {
    await w.stop();
    rmSync(persist, { recursive: true, force: true });
  }
}

const sizes = results.find((r) => r.checkpointBytes.length).checkpointBytes;
const written = sizes.reduce((a, b) => a + 2 * b, 0);
const stored = sizes.reduce((a, b) => a + b, 0) + sizes.at(-1);
const table = [
  `Sessions saved after every step, ${STEPS} model calls (${STEPS - 1} lookups of ~500 bytes, then an answer); medians of ${REPS} runs after ${WARMUP} warm-ups.`,
  '',
  '| saver | saves (step / stop) | ms per run (step / stop) | ms per auto-save |',
  '|---|---:|---:|---:|',
  ...results.map((r) => `| ${r.saver} | ${r.saves.step} / ${r.saves.stop} | ${r.medianMs.step.toFixed(1)} / ${r.medianMs.stop.toFixed(1)} | ${r.msPerAutoSave.toFixed(3)} |`),
  '',
  `Bytes: the checkpoint grows from ${sizes[0]} to ${sizes.at(-1)} bytes over the run; each save writes the head and a history entry, so the run writes ${written} bytes (${Math.round(written / STEPS)} per step on average) and leaves ${stored} bytes stored (history + head; bounded by maxHistory).`,
].join('\n');
process.stdout.write(`${table}\n`);
writeFileSync(fileURLToPath(new URL('./savers.json', import.meta.url)), `${JSON.stringify({ steps: STEPS, results, written, stored }, null, 2)}\n`);
export { table };
