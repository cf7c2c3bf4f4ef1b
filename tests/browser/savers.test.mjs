// indexedDbSaver in real Chromium: the saver conformance suite (every operation runs in the page, on real
// IndexedDB) and exactly one of 50 concurrent replies to a paused session.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { runSaverConformance } from 'resumable-agent/testing';
import { serve } from '../../scripts/serve-browser.mjs';

let server;
let browser;
let page;

before(async () => {
  server = await serve(0);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.evaluate(async () => {
    window.pkg = await import('/pkg/browser.js');
    // A page fetches the .wasm: the savers' synchronous properties (compareAndSet) need it loaded first.
    await window.pkg.loadWasm();
    window.savers = {};
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** A saver in Node whose operations run in the page, on `indexedDbSaver({ dbName: namespace })`. */
async function pageSaver(namespace) {
  const about = await page.evaluate((ns) => {
    window.savers[ns] = window.pkg.indexedDbSaver({ dbName: `conformance-${ns}`, durability: 'relaxed' });
    return { compareAndSet: window.savers[ns].compareAndSet, maxValueBytes: window.savers[ns].maxValueBytes ?? null };
  }, namespace);
  const op = async (name, ...args) => {
    const out = await page.evaluate(async ({ ns, name, args }) => {
      try {
        return { ok: (await window.savers[ns][name](...args)) ?? null };
      } catch (e) {
        return { err: { code: e.code, message: e.message } };
      }
    }, { ns: namespace, name, args });
    if (out.err) throw Object.assign(new Error(out.err.message), { code: out.err.code });
    return out.ok;
  };
  return {
    compareAndSet: about.compareAndSet,
    maxValueBytes: about.maxValueBytes ?? undefined,
    get: (key) => op('get', key),
    put: (key, cp, condition) => op('put', key, cp, condition),
    delete: (key) => op('delete', key),
    exists: (key) => op('exists', key),
    list: (prefix) => op('list', prefix ?? ''),
    namespace,
  };
}

test('indexedDbSaver passes the saver conformance suite in Chromium', { timeout: 120_000 }, async () => {
  let run = 0;
  const results = await runSaverConformance((ns) => pageSaver(`${ns}-${run++}`), {
    corrupt: (saver, key) => page.evaluate(({ db, key }) => new Promise((resolve, reject) => {
      // Behind the saver's back: replace the value, keep the summary.
      const open = indexedDB.open(db);
      open.onsuccess = () => {
        const tx = open.result.transaction(['checkpoints'], 'readwrite');
        tx.objectStore('checkpoints').put('not a checkpoint', key);
        tx.oncomplete = () => { open.result.close(); resolve(); };
        tx.onerror = () => reject(tx.error);
      };
      open.onerror = () => reject(open.error);
    }), { db: `conformance-${saver.namespace}`, key }),
  });
  assert.deepEqual(results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.error?.message}`), []);
  assert.deepEqual(results.filter((r) => r.skipped).map((r) => r.name), [], 'every case applies to IndexedDB');
});

test('history, label and restore round-trip on IndexedDB', { timeout: 60_000 }, async () => {
  const out = await page.evaluate(async () => {
    const { agent, defineTool, InterruptError, scriptedModel, indexedDbSaver } = window.pkg;
    const tools = [defineTool({ name: 'ask_user', handle: ({ question }) => { throw new InterruptError(question); } })];
    const model = scriptedModel([
      { content: [{ type: 'tool_use', id: 'q', name: 'ask_user', input: { question: 'When?' } }] },
      (req) => `due ${req.messages.at(-1).content[0].content}`,
    ]);
    const s = agent({ tools, model }).session(indexedDbSaver({ dbName: 'history' }), 'h', { keepCompleted: true });
    await s.prompt('plan');
    const paused = (await s.history())[0];
    await s.label(paused.id, 'asked');
    const first = (await s.reply('May')).text;
    const restored = await s.restore('asked');
    const second = (await s.reply('June')).text;
    const history = await s.history();
    return { first, second, parent: restored.thread.parentStep, pausedStep: paused.step, labelled: history.filter((h) => h.label === 'asked').map((h) => h.step), branch: history.some((h) => h.parentId === paused.id && h.step > paused.step + 2) };
  });
  assert.deepEqual(out, { first: 'due May', second: 'due June', parent: out.pausedStep, pausedStep: out.pausedStep, labelled: [out.pausedStep], branch: true });
});

test('of 50 concurrent replies to a paused session in a tab, exactly one runs', { timeout: 60_000 }, async () => {
  const out = await page.evaluate(async () => {
    const { agent, defineTool, InterruptError, scriptedModel, indexedDbSaver } = window.pkg;
    let ran = 0;
    const tools = [
      defineTool({ name: 'ask_user', handle: ({ question }) => { throw new InterruptError(question); } }),
      defineTool({ name: 'charge', handle: () => { ran += 1; return 'charged'; } }),
    ];
    const model = scriptedModel([
      { content: [{ type: 'tool_use', id: 'q', name: 'ask_user', input: { question: 'Charge?' } }] },
      { content: [{ type: 'tool_use', id: 'c', name: 'charge', input: {} }] },
      'done',
    ]);
    const saver = indexedDbSaver({ dbName: 'race' });
    await agent({ tools, model }).session(saver, 'card').prompt('pay');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => agent({ tools, model }).session(saver, 'card').reply('yes')));
    return {
      ok: results.filter((r) => r.status === 'fulfilled').length,
      refused: [...new Set(results.filter((r) => r.status === 'rejected').map((r) => r.reason.name))],
      ran,
    };
  });
  assert.deepEqual(out, { ok: 1, refused: ['SessionBusyError'], ran: 1 }, 'one reply ran, the card was charged once');
});

test('a signed, sealed session on IndexedDB (Web Crypto in Chromium): every record an envelope at rest, a changed one refused', { timeout: 60_000 }, async () => {
  const out = await page.evaluate(async () => {
    const { agent, defineTool, InterruptError, scriptedModel, indexedDbSaver } = window.pkg;
    const tools = [defineTool({ name: 'ask_user', handle: ({ question }) => { throw new InterruptError(question); } })];
    const model = scriptedModel([
      { content: [{ type: 'tool_use', id: 'q', name: 'ask_user', input: { question: 'Card number?' } }] },
      (req) => `charged ${req.messages.at(-1).content[0].content}`,
    ]);
    const keys = { current: 'k1', keys: { k1: crypto.getRandomValues(new Uint8Array(32)) } };
    const saver = indexedDbSaver({ dbName: 'sealed' });
    const a = agent({ tools, model, checkpointKeys: keys, sealed: true });
    const paused = await a.session(saver, 's').prompt('pay');
    // What is at rest, read from IndexedDB itself: every record of the session.
    const raw = (mode, work) => new Promise((resolve, reject) => {
      const open = indexedDB.open('sealed');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const db = open.result;
        const name = [...db.objectStoreNames].find((n) => !n.endsWith('-summaries'));
        const tx = db.transaction(name, mode);
        const out = work(tx.objectStore(name));
        tx.oncomplete = () => { db.close(); resolve(out.result); };
        tx.onerror = () => reject(tx.error);
      };
    });
    const stored = await raw('readonly', (store) => store.getAllKeys());
    const values = await raw('readonly', (store) => store.getAll());
    const records = values.filter((_, i) => stored[i].startsWith('s#~'));
    // Base64url has no space or '?': the question can appear only if the plaintext leaked. (A bare 'Card'
    // turned up by chance in one envelope: 4 characters in ~830 random ones, about 1 run in 20,000.)
    const shapes = [...new Set(records.map((v) => Object.keys(JSON.parse(v)).join(',')))];
    const readable = values.some((v) => v.includes('Card number?'));
    const done = (await a.session(saver, 's').reply('4242')).text;
    await a.session(saver, 't').prompt('pay');
    // Change one character of the newest record's ciphertext, at rest.
    const tKeys = (await raw('readonly', (store) => store.getAllKeys())).filter((k) => k.startsWith('t#~')).sort();
    const newest = tKeys.at(-1);
    const text = await raw('readonly', (store) => store.get(newest));
    const envelope = JSON.parse(text);
    envelope.sealed = envelope.sealed.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
    await raw('readwrite', (store) => store.put(JSON.stringify(envelope), newest));
    const refused = await a.session(saver, 't').reply('4242').catch((e) => `${e.name} ${e.code}`);
    return { question: paused.question, records: records.length > 0, shapes, readable, done, refused };
  });
  assert.deepEqual(out, { question: 'Card number?', records: true, shapes: ['version,kid,sealed'], readable: false, done: 'charged 4242', refused: 'CheckpointError SIGNATURE' });
});
