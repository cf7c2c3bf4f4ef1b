// examples/browser in real headless Chromium talking to examples/worker-js under wrangler dev: the page
// shows the Worker's POST /stream events as they arrive — text while it is written, the question the
// moment the run pauses — with the scripted model and with openai() streaming from the loopback server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve-browser.mjs';
import { startWorker, ROOT } from '../workers/harness.mjs';
import { startServer, API_KEY } from '../providers/server.mjs';

const CONFIG = join(ROOT, 'examples/worker-js/wrangler.toml');
let server;
let browser;
let pageUrl;
let dir;
let provider;

before(async () => {
  server = await serve(0);
  pageUrl = `http://127.0.0.1:${server.address().port}/`;
  dir = mkdtempSync(join(tmpdir(), 'kv-page-'));
  provider = await startServer();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
  provider?.server.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function openAgainst(workerUrl) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${pageUrl}?worker=${encodeURIComponent(workerUrl)}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
  return { context, page, errors };
}

async function say(page, text, state) {
  await page.fill('#input', text);
  await page.click('#send');
  await page.waitForSelector(`body[data-state="${state}"]`, { timeout: 20_000 });
}

const chatTexts = (page) => page.$$eval('#chat li', (lis) => lis.map((li) => li.textContent));

const pageOrigin = () => new URL(pageUrl).origin;

test('scripted model in the Worker: the question appears when the run pauses; the answer streams in word by word', { timeout: 120_000 }, async () => {
  const w = await startWorker({ config: CONFIG, persistTo: dir, vars: { TEST_ROUTES: 'true', ALLOWED_ORIGINS: pageOrigin() } });
  try {
    const { context, page, errors } = await openAgainst(w.url);
    await say(page, 'the app', 'paused');
    assert.match(await page.textContent('#status'), /Waiting for your answer: What is your deadline\?/);
    assert.deepEqual(await chatTexts(page), ['the app', 'What is your deadline?']);
    await say(page, 'May', 'complete');
    const deltas = await page.evaluate(() => window.__deltas);
    assert.ok(deltas.length >= 3, `word by word: ${JSON.stringify(deltas)}`);
    assert.equal(deltas.join(''), 'Plan for "the app" due May.');
    assert.equal((await chatTexts(page)).at(-1), 'Plan for "the app" due May.');
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await w.stop();
  }
});

test('openai() in the Worker streams from the loopback server to the page', { timeout: 120_000 }, async () => {
  const w = await startWorker({
    config: CONFIG,
    persistTo: dir,
    vars: { TEST_ROUTES: 'true', ALLOWED_ORIGINS: pageOrigin(), MODEL_PROVIDER: 'openai', OPENAI_BASE_URL: `http://127.0.0.1:${provider.port}/openai`, OPENAI_API_KEY: API_KEY, MODEL: 'gpt-test' },
  });
  try {
    const { context, page, errors } = await openAgainst(w.url);
    await say(page, 'scenario:text please', 'complete');
    const deltas = await page.evaluate(() => window.__deltas);
    assert.ok(deltas.length >= 2, JSON.stringify(deltas));
    assert.equal(deltas.join(''), 'Hello from the model.');
    assert.equal((await chatTexts(page)).at(-1), 'Hello from the model.');
    assert.ok(provider.state.requests.every((r) => r.body.stream === true));
    assert.deepEqual(provider.state.errors, []);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await w.stop();
  }
});

test('openaiResponses() in the page itself: paused on a question, resumed from its JSON, the reasoning sent back verbatim', { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pageUrl);
  const before = provider.state.requests.length;
  const out = await page.evaluate(async ({ base, key }) => {
    const pkg = await import('/pkg/browser.js');
    const make = () => pkg.agent({
      model: pkg.openaiResponses({ apiKey: key, model: 'gpt-test', baseURL: `${base}/openai-responses` }),
      tools: [
        pkg.defineTool({ name: 'lookup', description: 'Looks a key up.', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => ({ key, value: `v-${key}` }) }),
        pkg.defineTool({ name: 'ask_user', description: 'Asks the human.', schema: (s) => ({ question: s.string().required() }), handle: ({ question }) => { throw new pkg.InterruptError(question); } }),
      ],
    });
    const paused = await make().prompt('scenario:parallel');
    const saved = JSON.stringify(paused.checkpoint);
    const done = await make().resume(saved, 'blue');
    return { question: paused.question, reasoning: JSON.parse(saved).messages[1].content[0], text: done.text };
  }, { base: `http://127.0.0.1:${provider.port}`, key: API_KEY });
  assert.equal(out.question, 'Which colour?');
  assert.deepEqual(out.reasoning, { type: 'reasoning', id: 'rs_0abc', summary: ['Weighing turn 0.'], encryptedContent: 'gAAAAB-enc-0-final' });
  assert.equal(out.text, 'Results: {"key":"a","value":"v-a"} | blue | {"key":"c","value":"v-c"}');
  const sent = provider.state.requests.slice(before);
  assert.equal(sent.length, 2);
  assert.ok(sent[1].body.input.some((x) => x.type === 'reasoning' && x.encrypted_content === 'gAAAAB-enc-0-final'));
  assert.deepEqual(provider.state.errors, []);
  assert.deepEqual(errors, []);
  await context.close();
});

test('gemini() in the page itself: paused on a question, resumed from its JSON, the call\'s signature sent back', { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pageUrl);
  const before = provider.state.requests.length;
  const out = await page.evaluate(async ({ base, key }) => {
    const pkg = await import('/pkg/browser.js');
    const make = () => pkg.agent({
      model: pkg.gemini({ apiKey: key, model: 'gemini-test', baseURL: `${base}/gemini` }),
      tools: [
        pkg.defineTool({ name: 'lookup', description: 'Looks a key up.', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => ({ key, value: `v-${key}` }) }),
        pkg.defineTool({ name: 'ask_user', description: 'Asks the human.', schema: (s) => ({ question: s.string().required() }), handle: ({ question }) => { throw new pkg.InterruptError(question); } }),
      ],
    });
    const paused = await make().prompt('scenario:parallel');
    const saved = JSON.stringify(paused.checkpoint);
    const done = await make().resume(saved, 'blue');
    return { question: paused.question, text: done.text };
  }, { base: `http://127.0.0.1:${provider.port}`, key: API_KEY });
  assert.equal(out.question, 'Which colour?');
  assert.equal(out.text, 'Results: {"key":"a","value":"v-a"} | blue | {"key":"c","value":"v-c"}');
  const sent = provider.state.requests.slice(before);
  assert.equal(sent.length, 2);
  assert.equal(sent[1].body.contents[1].parts[1].thoughtSignature, 'sig-call-0');
  assert.deepEqual(provider.state.errors, []);
  assert.deepEqual(errors, []);
  await context.close();
});

test('the page reloaded mid-run reconnects with Last-Event-ID: the run went on in the Worker and nothing is missed', { timeout: 120_000 }, async () => {
  // A slow model: the answer is still being made when the page reloads.
  const w = await startWorker({ config: CONFIG, persistTo: dir, vars: { TEST_ROUTES: 'true', ALLOWED_ORIGINS: pageOrigin(), TEST_MODEL_DELAY_MS: '1500' } });
  try {
    const { context, page, errors } = await openAgainst(w.url);
    await say(page, 'the app', 'paused');
    await page.fill('#input', 'May');
    await page.click('#send');
    // The first numbered event of the answer's stream has arrived; the model is still at work.
    await page.waitForFunction(() => Number.isInteger(JSON.parse(sessionStorage.getItem('ra-worker-streaming') ?? '{}').lastEventId), null, { timeout: 10_000 });
    await page.reload();
    await page.waitForSelector('body[data-reconnected="true"]', { timeout: 15_000 });
    await page.waitForSelector('body[data-state="complete"]', { timeout: 30_000 });
    assert.equal((await chatTexts(page)).at(-1), 'Plan for "the app" due May.', 'the answer written while the page was away');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('ra-worker-streaming')), null);
    assert.deepEqual(errors, []);
    await page.screenshot({ path: join(ROOT, 'test-results', 'browser-reconnected.png') });
    await context.close();
  } finally {
    await w.stop();
  }
});
