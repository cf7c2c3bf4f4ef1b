// Issue 36's parts in real headless Chromium: a Zod tool schema (Zod bundled for the page by esbuild) whose
// refinement the model reads, and input and output guardrails tripping with GuardrailError.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve-browser.mjs';

const OUT = fileURLToPath(new URL('../../target/browser-test/', import.meta.url));
let server;
let browser;

before(async () => {
  mkdirSync(OUT, { recursive: true });
  await build({
    stdin: { contents: "export { z } from 'zod';", resolveDir: fileURLToPath(new URL('../..', import.meta.url)) },
    bundle: true, format: 'esm', platform: 'browser', outfile: `${OUT}zod.js`, logLevel: 'error',
  });
  server = await serve(0);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

test('Chromium: a Zod tool schema and input and output guardrails', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/pkg/package.json`);
  const outcomes = await page.evaluate(async () => {
    const { z } = await import('/__test/zod.js');
    const { agent, defineTool } = await import('/pkg/browser.js');
    const weather = defineTool({ name: 'weather', schema: z.object({ city: z.string().refine((c) => c !== 'Atlantis', 'no such city') }), handle: ({ city }) => `sunny in ${city}` });
    const model = async (request) => {
      const last = request.messages.at(-1);
      return typeof last.content === 'string'
        ? { content: [{ type: 'tool_use', id: 'w1', name: 'weather', input: { city: last.content.replace(/^weather in /, '') } }] }
        : { content: [{ type: 'text', text: `tool said: ${last.content[0].content}` }] };
    };
    const noPasswords = ({ messages }) => (JSON.stringify(messages.at(-1)).includes('password') ? { tripwire: true, info: 'a password' } : undefined);
    const noMordor = async ({ text }) => (text.includes('Mordor') ? { tripwire: true, info: 'off the map' } : undefined);
    const a = agent({ model, tools: [weather], guardrails: { input: [noPasswords], output: [noMordor] } });
    const run = (m) => a.prompt(m).then((r) => ({ text: r.text }), (e) => ({ error: e.name, guardrail: e.guardrail, kind: e.kind, info: e.info }));
    return Promise.all(['weather in Oslo', 'weather in Atlantis', 'weather in Mordor', 'weather in my password'].map(run));
  });
  assert.deepEqual(outcomes, [
    { text: 'tool said: sunny in Oslo' },
    { text: 'tool said: invalid input for weather: city: no such city' },
    { error: 'GuardrailError', guardrail: 'noMordor', kind: 'output', info: 'off the map' },
    { error: 'GuardrailError', guardrail: 'noPasswords', kind: 'input', info: 'a password' },
  ]);
  assert.deepEqual(errors, []);
  await context.close();
});

// A turn's calls running together in a page (issue 36): they overlap (counted), results keep the call order, and a
// question in the middle lets the others finish; the pause, stored as JSON, resumes without running them again.
test('Chromium: calls of one turn run together and a question lets the others finish', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/pkg/package.json`);
  const seen = await page.evaluate(async () => {
    const { agent, defineTool, scriptedModel, InterruptError } = await import('/pkg/browser.js');
    const f = { now: 0, max: 0, lookups: 0, finished: [] };
    const lookup = defineTool({
      name: 'lookup',
      handle: async ({ key, ms }, { toolUseId }) => {
        f.lookups += 1;
        f.max = Math.max(f.max, ++f.now);
        await new Promise((r) => setTimeout(r, ms));
        f.now -= 1;
        f.finished.push(toolUseId);
        return `v-${key}`;
      },
    });
    const ask = defineTool({ name: 'ask', handle: ({ q }) => { throw new InterruptError(q); } });
    const script = () => scriptedModel([
      { content: [
        { type: 'tool_use', id: 'c1', name: 'lookup', input: { key: 'a', ms: 40 } },
        { type: 'tool_use', id: 'c2', name: 'ask', input: { q: 'Which day?' } },
        { type: 'tool_use', id: 'c3', name: 'lookup', input: { key: 'b', ms: 10 } },
      ] },
      'Planned.',
    ]);
    const paused = await agent({ model: script(), tools: [lookup, ask] }).prompt('Plan');
    const stored = JSON.stringify(paused.checkpoint);
    const lookupsAtPause = f.lookups;
    const done = await agent({ model: script(), tools: [lookup, ask] }).resume(JSON.parse(stored), 'Friday');
    const results = done.checkpoint.messages[2].content.map((b) => b.content);
    return { question: paused.question, max: f.max, finished: f.finished, lookupsAtPause, lookups: f.lookups, text: done.text, results };
  });
  assert.deepEqual(seen, {
    question: 'Which day?', max: 2, finished: ['c3', 'c1'], lookupsAtPause: 2, lookups: 2, text: 'Planned.', results: ['v-a', 'Friday', 'v-b'],
  });
  assert.deepEqual(errors, []);
  await context.close();
});

// A summarizing compaction in a page (issue 36): paused mid-run, stored as JSON and resumed by a fresh agent, the
// summary carried across.
test('Chromium: a run summarized at its bounds, paused and resumed from JSON', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/pkg/package.json`);
  const seen = await page.evaluate(async () => {
    const { agent, defineTool, InterruptError } = await import('/pkg/browser.js');
    let summaries = 0;
    const lookup = defineTool({ name: 'lookup', handle: ({ key }) => `v-${key}` });
    const ask = defineTool({ name: 'ask', handle: () => { throw new InterruptError('Go on?'); } });
    const model = async (req) => {
      if (req.tools.length === 0) return { content: [{ type: 'text', text: `summary ${++summaries}` }] };
      const last = req.messages.findLast((m) => m.role === 'assistant')?.content.find((b) => b.type === 'tool_use');
      const i = last ? Number(last.id.slice(1)) + 1 : 0;
      if (i === 20) return { content: [{ type: 'tool_use', id: 'c20', name: 'ask', input: {} }] };
      return i < 30 ? { content: [{ type: 'tool_use', id: `c${i}`, name: 'lookup', input: { key: `k${i}` } }] } : { content: [{ type: 'text', text: 'done' }] };
    };
    const make = () => agent({ model, tools: [lookup, ask], maxIterations: 40, compaction: { summarize: { maxMessages: 12 } } });
    const paused = await make().prompt('go');
    const stored = JSON.stringify(paused.checkpoint);
    const done = await make().resume(JSON.parse(stored), 'yes');
    return { question: paused.question, atPause: paused.checkpoint.summarized.text, text: done.text, last: done.checkpoint.summarized.text, summaries };
  });
  assert.equal(seen.question, 'Go on?');
  assert.equal(seen.text, 'done');
  assert.match(seen.atPause, /^summary \d+$/);
  assert.equal(seen.last, `summary ${seen.summaries}`);
  assert.deepEqual(errors, []);
  await context.close();
});
