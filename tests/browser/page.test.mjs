// examples/browser in real headless Chromium (Debian's /usr/bin/chromium via playwright-core).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve-browser.mjs';

const ARTIFACTS = fileURLToPath(new URL('../../test-results/', import.meta.url));
let server;
let browser;
let url;

before(async () => {
  server = await serve(0);
  url = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    // No sandbox as root; no background traffic on this closed network.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function open(context) {
  const page = await context.newPage();
  // Records the durability of every write transaction the page opens.
  await page.addInitScript(() => {
    const original = IDBDatabase.prototype.transaction;
    window.__durabilities = [];
    IDBDatabase.prototype.transaction = function (stores, mode, options) {
      if (mode === 'readwrite') window.__durabilities.push(options?.durability ?? 'unspecified');
      return original.call(this, stores, mode, options);
    };
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
  return { page, errors };
}

async function say(page, text, state) {
  await page.fill('#input', text);
  await page.click('#send');
  await page.waitForSelector(`body[data-state="${state}"]`, { timeout: 10_000 });
}

const chatTexts = (page) => page.$$eval('#chat li', (lis) => lis.map((li) => li.textContent));
const listed = (page) => page.$$eval('#sessions li', (lis) => lis.map((li) => li.querySelector('small').textContent));

test('start → question → reload → the question is still there → answer → completed', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const { page, errors } = await open(context);
  await say(page, 'Launch the new website', 'paused');
  assert.match(await page.textContent('#status'), /Waiting for your answer: What is your deadline\?/);
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: `${ARTIFACTS}browser-paused.png`, fullPage: true });

  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.getAttribute('body', 'data-state'), 'paused', 'the pause survived the reload');
  assert.deepEqual(await chatTexts(page), ['Launch the new website', 'Happy to plan that.', 'What is your deadline?']);
  assert.deepEqual(await listed(page), ['Waiting: What is your deadline?']);

  await say(page, 'the end of June', 'complete');
  const durabilities = await page.evaluate(() => window.__durabilities);
  assert.ok(durabilities.length >= 1);
  assert.deepEqual([...new Set(durabilities)], ['strict'], 'every save is a strict-durability write');
  assert.equal((await chatTexts(page)).at(-1), 'Here is the plan for "Launch the new website": design, build and test, done by the end of June.');
  // The answer streamed in (the in-tab scripted model plays it back word by word) before the page re-rendered.
  const deltas = await page.evaluate(() => window.__deltas);
  assert.ok(deltas.length > 5);
  assert.equal(deltas.join(''), 'Here is the plan for "Launch the new website": design, build and test, done by the end of June.');
  assert.deepEqual(await listed(page), ['Done (4 messages)']);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a crashed tab loses nothing: a new tab shows the pending question', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const { page } = await open(context);
  await say(page, 'Rebuild the shed', 'paused');
  const id = new URL(page.url()).hash.slice(1);
  const cdp = await context.newCDPSession(page);
  const crashed = page.waitForEvent('crash', { timeout: 10_000 });
  cdp.send('Page.crash').catch(() => {}); // never answers: the renderer is gone
  await crashed;
  const { page: again } = await open(context);
  assert.equal(new URL(again.url()).hash.slice(1), id, 'the waiting session reopens');
  assert.equal(await again.getAttribute('body', 'data-state'), 'paused');
  await say(again, 'next spring', 'complete');
  assert.match((await chatTexts(again)).at(-1), /"Rebuild the shed".*next spring\.$/);
  await context.close();
});

test('two tabs: a session saved in one is listed in the other, live; delete reaches both', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const { page: a } = await open(context);
  const { page: b } = await open(context);
  await say(a, 'Plan the offsite', 'paused');
  await b.waitForFunction(() => document.querySelectorAll('#sessions li').length === 1, null, { timeout: 5000 });
  assert.deepEqual(await listed(b), ['Waiting: What is your deadline?']);
  // The other tab answers it.
  await b.click('#sessions .open');
  await b.waitForSelector('body[data-state="paused"]');
  await say(b, 'Friday', 'complete');
  await a.waitForFunction(() => document.querySelector('#sessions small')?.textContent.startsWith('Done'), null, { timeout: 5000 });
  await a.click('#sessions .delete');
  await b.waitForFunction(() => document.querySelectorAll('#sessions li').length === 0, null, { timeout: 5000 });
  await context.close();
});

test('a full disk is a typed error the page can explain; nothing half-written', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const { page } = await open(context);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(url).origin, quotaSize: 64 * 1024 });
  await page.fill('#input', 'x'.repeat(256 * 1024));
  await page.click('#send');
  await page.waitForFunction(() => /out of storage/.test(document.getElementById('status').textContent), null, { timeout: 10_000 });
  assert.deepEqual(await listed(page), [], 'no session was half-saved');
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(url).origin });
  await say(page, 'A small plan', 'paused');
  await context.close();
});
