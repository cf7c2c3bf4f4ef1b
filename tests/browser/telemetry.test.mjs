// A traced agent in real headless Chromium: the OpenTelemetry JS SDK (bundled for the page by esbuild) records
// the spans of a run that pauses; the checkpoint goes through localStorage, the tab reloads, and the resumed
// run's invoke_agent span links to the paused one.
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
    stdin: { contents: "export { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';", resolveDir: fileURLToPath(new URL('../..', import.meta.url)) },
    bundle: true, format: 'esm', platform: 'browser', outfile: `${OUT}otel.js`, logLevel: 'error',
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

test('Chromium: a traced run pauses, the tab reloads, and the resumed run links to the paused one', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/pkg/package.json`);
  const run = (approve) => page.evaluate(async (approve) => {
    const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import('/__test/otel.js');
    const { agent, defineTool, isInterrupted } = await import('/pkg/browser.js');
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('page');
    const pay = defineTool({ name: 'pay', schema: (s) => ({ amount: s.number().required() }), needsApproval: true, handle: ({ amount }) => `paid ${amount}` });
    const model = Object.assign(async (request) => (request.messages.length === 1
      ? { content: [{ type: 'tool_use', id: 'p1', name: 'pay', input: { amount: 5 } }], id: 'resp_1' }
      : { content: [{ type: 'text', text: 'Paid.' }], id: 'resp_2' }), { provider: 'in-page', modelId: 'tiny-1' });
    const a = agent({ model, tools: [pay], telemetry: { tracer, agentName: 'payer' } });
    const result = approve ? await a.resume(localStorage.getItem('cp'), { decisions: [{ type: 'approve' }] }) : await a.prompt('pay 5');
    if (isInterrupted(result)) localStorage.setItem('cp', JSON.stringify(result.checkpoint));
    return {
      text: result.text,
      spans: exporter.getFinishedSpans().map((s) => ({
        name: s.name, spanId: s.spanContext().spanId, parentSpanId: s.parentSpanContext?.spanId, attributes: s.attributes,
        links: s.links.map((l) => l.context.spanId), events: s.events.map((e) => e.name),
      })),
    };
  }, approve);
  const paused = await run(false);
  const first = paused.spans.find((s) => s.name === 'invoke_agent payer');
  assert.deepEqual(first.events, ['gen_ai.agent.paused']);
  const chat = paused.spans.find((s) => s.name === 'chat tiny-1');
  assert.equal(chat.parentSpanId, first.spanId);
  assert.equal(chat.attributes['gen_ai.provider.name'], 'in-page');
  assert.equal(chat.attributes['gen_ai.response.id'], 'resp_1');
  assert.deepEqual(chat.attributes['gen_ai.response.finish_reasons'], ['tool_call'], 'a list stays a list in a page');
  await page.reload();
  const done = await run(true);
  assert.equal(done.text, 'Paid.');
  const second = done.spans.find((s) => s.name === 'invoke_agent payer');
  assert.deepEqual(second.links, [first.spanId]);
  assert.deepEqual(second.events, ['gen_ai.agent.resumed']);
  assert.equal(done.spans.find((s) => s.name === 'execute_tool pay').parentSpanId, second.spanId);
  assert.deepEqual(errors, []);
  await context.close();
});
