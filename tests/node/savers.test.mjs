// The saver conformance suite (resumable-agent/testing) against every saver that runs in Node, a saver
// written by a user, and a broken one it must catch. KV and Durable Objects run it in workerd
// (tests/workers/), IndexedDB in Chromium (tests/browser/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memorySaver, fileSaver } from 'resumable-agent';
import { saverConformance, runSaverConformance } from 'resumable-agent/testing';

const base = mkdtempSync(join(tmpdir(), 'file-saver-'));
process.on('exit', () => rmSync(base, { recursive: true, force: true }));

saverConformance(() => memorySaver());

saverConformance((namespace) => fileSaver({ dir: join(base, namespace) }), {
  corrupt: async (saver, key) => {
    // Behind the saver's back: keep the summary line, break the value.
    // The case uses plain keys, so the file is named after the key.
    const file = join(base, 'lv', `${key}.ckpt`);
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, `${text.slice(0, text.indexOf('\n'))}\nnot a checkpoint`);
  },
});

/** A saver a user might write: a Map, with compare-and-set. */
function userSaver() {
  const m = new Map();
  const conflict = () => Object.assign(new Error('changed'), { code: 'CONFLICT' });
  const summary = (key, cp) => ({ key, iterations: cp.iterations, usage: cp.usage, interrupted: (cp.interrupts?.length ?? 0) > 0, question: cp.question, messageCount: cp.messages.length, step: cp.thread?.step });
  return {
    compareAndSet: true,
    async get(key) { return m.has(key) ? structuredClone(m.get(key)) : null; },
    async put(key, cp, condition) {
      const cur = m.get(key);
      if (condition?.ifAbsent && cur) throw conflict();
      if (condition?.ifStep !== undefined && (cur === undefined || (cur.thread?.step ?? 0) !== condition.ifStep)) throw conflict();
      m.set(key, structuredClone(cp));
    },
    async delete(key) { m.delete(key); },
    async exists(key) { return m.has(key); },
    async list(prefix = '') { return [...m.keys()].filter((k) => k.startsWith(prefix)).sort().map((k) => summary(k, m.get(k))); },
  };
}

saverConformance(() => userSaver());

test('the suite catches a broken saver: one whose list drops a key, and one that ignores conditions', async () => {
  const dropping = () => {
    const s = userSaver();
    const list = s.list;
    return { ...s, list: async (p) => (await list(p)).slice(1) };
  };
  const results = await runSaverConformance(dropping);
  const failed = results.filter((r) => !r.ok).map((r) => r.name);
  assert.ok(failed.includes('list: every key under the prefix, in key order, with its summary'), failed.join('; '));
  assert.ok(failed.length >= 3, `several cases notice: ${failed.join('; ')}`);

  const lying = () => {
    const s = userSaver();
    return { ...s, put: (key, cp) => s.put(key, cp) }; // says compareAndSet, ignores the condition
  };
  const results2 = await runSaverConformance(lying);
  const failed2 = results2.filter((r) => !r.ok).map((r) => r.name);
  assert.deepEqual(failed2.filter((n) => n.startsWith('compare-and-set')).length, 2, failed2.join('; '));
});

test('memory and file savers pass every case (none skipped that applies)', async () => {
  for (const [name, make] of [['memory', () => memorySaver()], ['file', (ns) => fileSaver({ dir: join(base, `again-${ns}`) })]]) {
    const results = await runSaverConformance(make);
    const failed = results.filter((r) => !r.ok);
    assert.deepEqual(failed.map((r) => `${r.name}: ${r.error?.message}`), [], name);
    assert.deepEqual(results.filter((r) => r.skipped).map((r) => r.name), ['list reads summaries, not values'], `${name}: only the case needing raw access is skipped`);
  }
});
