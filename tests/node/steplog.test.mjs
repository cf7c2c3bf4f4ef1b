// Sessions as a step log (issue 21), through the npm package: what a step writes on a text store and on a
// Workers KV binding that enforces KV's rules, sessions saved by the previous release on every Node saver,
// events replayed from another process, and deletes a store's write rule postpones.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  agent, defineTool, InterruptError, scriptedModel, memorySaver, fileSaver, kvSaver, textStoreSaver, listSessions,
  DecisionError,
} from 'resumable-agent';
import { kvStandIn } from './kv-standin.mjs';

const base = mkdtempSync(join(tmpdir(), 'steplog-'));
process.on('exit', () => rmSync(base, { recursive: true, force: true }));
const here = fileURLToPath(new URL('.', import.meta.url));

const call = (id, name, input) => ({ type: 'tool_use', id, name, input });

/** `steps` model calls: a lookup returning ~1 KB each, then the answer. */
function longAgent(steps) {
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => `${key}: ${'x'.repeat(1000)}` });
  const script = Array.from({ length: steps - 1 }, (_, k) => ({ content: [call(`l${k + 1}`, 'lookup', { key: `k${k + 1}` })] }));
  script.push('done', 'and again');
  return agent({ tools: [lookup], model: scriptedModel(script), maxIterations: steps + 1 });
}

/** A text store over a Map, counting what it is given. */
function countingTextStore() {
  const map = new Map();
  const counts = { writes: 0, bytesWritten: 0 };
  const bytes = (s) => Buffer.byteLength(s);
  const saver = textStoreSaver({
    compareAndSet: true,
    async getText(key) { return map.get(key)?.value ?? null; },
    async putText(key, value, summary, condition) {
      if (condition?.ifAbsent && map.has(key)) throw Object.assign(new Error('taken'), { code: 'CONFLICT' });
      counts.writes += 1;
      counts.bytesWritten += bytes(value) + bytes(summary);
      map.set(key, { value, summary });
    },
    async delete(key) { map.delete(key); },
    async list(prefix) { return [...map].filter(([k]) => k.startsWith(prefix)).sort().map(([key, { summary }]) => ({ key, summary })); },
  });
  const kept = () => [...map.values()].reduce((n, e) => n + bytes(e.value) + bytes(e.summary), 0);
  return { saver, counts, kept, map };
}

describe('what a step writes', () => {
  for (const steps of [20, 400]) {
    test(`${steps} steps of ~1 KB: bytes written and kept near the final checkpoint, two writes a step, on a text store and on KV`, async () => {
      for (const kind of ['text store', 'kv']) {
        const store = kind === 'kv' ? kvStandIn() : countingTextStore();
        const saver = kind === 'kv' ? kvSaver(store, { prefix: 's:' }) : store.saver;
        const done = await longAgent(steps).session(saver, 'long', { keepCompleted: true }).prompt('go');
        const finalBytes = Buffer.byteLength(JSON.stringify(done.checkpoint));
        const writes = kind === 'kv' ? store.counts.puts : store.counts.writes;
        const written = store.counts.bytesWritten;
        const kept = kind === 'kv' ? store.kept() : store.kept();
        console.log(`# ${kind}, ${steps} steps: final ${finalBytes} B; written ${written} B (${(written / finalBytes).toFixed(3)}x) in ${writes} writes (${(writes / steps).toFixed(4)} per model call); kept ${kept} B (${(kept / finalBytes).toFixed(3)}x)`);
        assert.ok(written / finalBytes <= 1.5, `${kind}: written ${written / finalBytes}`);
        assert.ok(kept / finalBytes <= 1.3, `${kind}: kept ${kept / finalBytes}`);
        assert.equal(writes, 2 * steps + 1, `${kind}: the prompt, each answer and each result, and the head once`);
        assert.deepEqual(await longAgent(steps).session(saver, 'long').checkpoint(), done.checkpoint);
      }
    });
  }
});

describe('Workers KV rules', () => {
  test('a 60-step run of instant tools, then more calls at once: no key written twice within a second', async () => {
    const kv = kvStandIn();
    const saver = kvSaver(kv);
    const a = longAgent(60);
    const s = a.session(saver, 'fast', { keepCompleted: true });
    assert.equal((await s.prompt('go')).text, 'done');
    assert.equal((await s.prompt('again')).text, 'and again', 'a second call straight away');
    assert.equal(kv.counts.refused, 0);
    assert.equal((await s.checkpoint()).messages.at(-1).content[0].text, 'and again', 'the records past the older head are found');
    // Bulk reads: a load of 122 records is a handful of operations, not one per record.
    const gets = kv.counts.gets + kv.counts.bulkGets;
    await a.session(saver, 'fast').checkpoint();
    assert.ok(kv.counts.gets + kv.counts.bulkGets - gets < 12, `${kv.counts.gets + kv.counts.bulkGets - gets} read operations`);
  });

  test('a completed session that is not kept is gone; what KV does not let it delete yet goes with waitUntil', async () => {
    const kv = kvStandIn();
    const saver = kvSaver(kv);
    const later = [];
    const live = [];
    const r = await longAgent(3).session(saver, 'gone', { waitUntil: (p) => later.push(p) }).prompt('go', { onEvent: (e) => live.push(e) });
    assert.equal(r.text, 'done');
    assert.equal(await longAgent(3).session(saver, 'gone').checkpoint(), null, 'the session is gone at once');
    // Until its last keys go, a client that reconnects still learns how it ended, under the same number.
    const replayed = [];
    for await (const e of longAgent(3).session(saver, 'gone').replay()) replayed.push(e);
    assert.equal(replayed.at(-1).type, 'done');
    assert.equal(replayed.at(-1).seq, live.at(-1).seq, 'done numbered alike, live and replayed');
    assert.ok(later.length === 1, 'the rest is handed to waitUntil');
    await Promise.all(later);
    assert.deepEqual([...kv.data.keys()], [], 'every key deleted, none within a second of its write');
    assert.equal(kv.counts.refused, 0);
  });
});

// ---- sessions saved by the previous release -----------------------------------------------------------

const fixtures = JSON.parse(readFileSync(join(here, '..', 'fixtures', 'sessions-v0.json'), 'utf8')).sessions;
const FIXTURE_KEYS = { current: 'k1', keys: { k1: 'fixture-secret-0123456789' } };

function fixtureAgent(extra = {}) {
  const lookup = defineTool({ name: 'lookup', description: 'Look a key up.', schema: { type: 'object' }, handle: ({ key }) => `v-${key}` });
  const ask = defineTool({ name: 'ask_user', description: 'Ask the human.', schema: { type: 'object' }, handle: ({ question }) => { throw new InterruptError(question); } });
  const model = scriptedModel([
    { content: [call('l1', 'lookup', { key: 'a' })] },
    { content: [call('q1', 'ask_user', { question: 'Which city?' }), call('l2', 'lookup', { key: 'b' })] },
    (req) => `Done: ${req.messages.at(-1).content.map((b) => b.content).join(', ')}`,
    'Noted.',
  ]);
  return agent({ instructions: 'Plan trips.', tools: [lookup, ask], model, ...extra });
}

/** The previous release's file name for a key: [A-Za-z0-9_-] kept, every other byte %XX, then `.ckpt`. */
function legacyFileName(key) {
  let name = '';
  for (const b of new TextEncoder().encode(key)) {
    const c = String.fromCharCode(b);
    name += /[A-Za-z0-9_-]/.test(c) ? c : `%${b.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  return `${name}.ckpt`;
}

/** Each Node saver holding fixture `name` as the previous release stored it. */
function seeded(name) {
  const keys = Object.entries(fixtures[name].keys);
  const out = {};
  // A text store: the value and its summary as given.
  const text = countingTextStore();
  for (const [k, e] of keys) text.map.set(k, { value: e.value, summary: e.summary });
  out['text store'] = text.saver;
  // Workers KV: the value, the summary in the key's metadata.
  const kv = kvStandIn();
  for (const [k, e] of keys) kv.data.set(`p:${k}`, { value: e.value, metadata: e.kvMetadata });
  out.kv = kvSaver(kv, { prefix: 'p:' });
  // Files: the summary line, then the value.
  const dir = join(base, `fixture-${name}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir);
  for (const [k, e] of keys) writeFileSync(join(dir, legacyFileName(k)), `${e.summary}\n${e.value}`);
  out.file = fileSaver({ dir });
  return out;
}

describe("sessions saved by the previous release (tests/fixtures/sessions-v0.json)", () => {
  for (const [name, extra] of [
    ['plain-paused', {}],
    ['signed-paused', { checkpointKeys: FIXTURE_KEYS }],
    ['sealed-paused', { checkpointKeys: FIXTURE_KEYS, sealed: true }],
  ]) {
    test(`${name}: listed, its history read, answered and continued on every Node saver`, async () => {
      for (const [kind, saver] of Object.entries(seeded(name))) {
        const s = fixtureAgent(extra).session(saver, 'trip', { keepCompleted: true });
        const [head] = await listSessions(saver);
        assert.equal(head.key, 'trip', kind);
        assert.equal(head.interrupted, true, kind);
        assert.deepEqual((await s.history()).map((h) => h.step), [5, 4, 3, 2, 1], kind);
        assert.equal((await s.reply('Paris')).text, 'Done: Paris, v-b', kind);
        assert.deepEqual((await s.history()).map((h) => h.step).slice(0, 4), [8, 7, 6, 5], `${kind}: the numbering goes on`);
        assert.equal((await s.prompt('And a hotel?')).text, 'Noted.', kind);
        const old = await s.checkpoint('5');
        if (extra.sealed) assert.deepEqual(Object.keys(old), ['version', 'kid', 'sealed'], `${kind}: handed out sealed`);
        else assert.equal(old.question, 'Which city?', `${kind}: an old step still loads`);
      }
    });
  }

  test('a branch, a completed session and a run that died mid-way continue too', async () => {
    for (const [kind, saver] of Object.entries(seeded('plain-branched'))) {
      const s = fixtureAgent().session(saver, 'trip', { keepCompleted: true });
      const history = await s.history();
      assert.equal(history[0].parentId, '5', kind);
      assert.equal(history.find((h) => h.label)?.step, 5, `${kind}: the old label`);
      assert.equal((await s.reply('Rome')).text, 'Done: Rome, v-b', kind);
      assert.equal((await s.restore('asked-city')).question, 'Which city?', kind);
    }
    for (const [kind, saver] of Object.entries(seeded('plain-completed'))) {
      const s = fixtureAgent().session(saver, 'trip', { keepCompleted: true });
      await assert.rejects(s.reply('Paris again'), DecisionError, kind);
      assert.equal((await s.prompt('And a hotel?')).text, 'Noted.', kind);
    }
    for (const [kind, saver] of Object.entries(seeded('plain-running'))) {
      const s = fixtureAgent().session(saver, 'trip', { keepCompleted: true });
      assert.equal((await s.resume()).question, 'Which city?', kind);
    }
  });
});

// ---- events replayed from another process -------------------------------------------------------------

test('the events a session logs, replayed in another process, are those seen live', async () => {
  const dir = join(base, 'replay');
  const saver = fileSaver({ dir });
  const live = [];
  const s = fixtureAgent().session(saver, 'r', { keepCompleted: true });
  for await (const e of s.stream({ prompt: 'Plan a trip' })) live.push(e);
  for await (const e of s.stream({ answer: 'Paris' })) live.push(e);
  assert.ok(live.every((e) => Number.isSafeInteger(e.seq)), 'every event is numbered');
  assert.ok(live.every((e, i) => i === 0 || e.seq > live[i - 1].seq), 'strictly increasing');
  const child = spawnSync(process.execPath, [join(here, 'scripts', 'replay-child.mjs'), dir, 'r', ''], { encoding: 'utf8' });
  assert.equal(child.status, 0, child.stderr);
  const replayed = JSON.parse(child.stdout);
  // Deltas, checkpoints and the loaded event are not logged (a replay has the steps they add up to).
  const logged = live.filter((e) => !['checkpoint', 'checkpoint-loaded', 'text-delta', 'tool-call-delta', 'step-restart'].includes(e.type));
  const compact = (e) => (e.type === 'done'
    ? { type: 'done', seq: e.seq, text: e.result.text ?? null, question: e.result.question ?? null }
    : e);
  assert.deepEqual(replayed.map(compact), logged.map(compact));
  // From an offset: only what came after it.
  const cut = logged[6].seq;
  const tail = JSON.parse(spawnSync(process.execPath, [join(here, 'scripts', 'replay-child.mjs'), dir, 'r', String(cut)], { encoding: 'utf8' }).stdout);
  assert.deepEqual(tail.map((e) => e.seq), logged.slice(7).map((e) => e.seq));
});

describe('following a running session (replay with follow)', () => {
  for (const steps of [20, 400]) {
    test(`${steps} steps: a follower gets what the run writes as it writes it, each idle poll one bulk read`, async () => {
      const kv = kvStandIn();
      const saver = () => kvSaver(kv, { prefix: 'f:' });
      let release;
      const gate = new Promise((r) => { release = r; });
      let blocked;
      const atGate = new Promise((r) => { blocked = r; });
      const lookup = defineTool({
        name: 'lookup',
        handle: async ({ key }) => {
          if (key === `k${steps - 1}`) { blocked(); await gate; }
          return `${key}: ${'x'.repeat(1000)}`;
        },
      });
      const script = Array.from({ length: steps - 1 }, (_, k) => ({ content: [call(`l${k + 1}`, 'lookup', { key: `k${k + 1}` })] }));
      script.push('done');
      const a = agent({ tools: [lookup], model: scriptedModel(script), maxIterations: steps + 1 });
      const live = [];
      const run = a.session(saver(), 'run', { keepCompleted: true }).prompt('go', { onEvent: (e) => live.push(e) });
      await atGate;
      // Another process would follow it: a session of its own over the same store.
      const followed = [];
      const follower = (async () => {
        for await (const e of a.session(saver(), 'run').replay({ follow: { timeoutMs: 30_000, pollMs: 20 } })) followed.push(e);
      })();
      // Idle: the run waits at the gate; count what each poll reads.
      await new Promise((r) => setTimeout(r, 300));
      const before = { ...kv.counts };
      await new Promise((r) => setTimeout(r, 400));
      const reads = kv.counts.gets + kv.counts.bulkGets - before.gets - before.bulkGets;
      assert.ok(reads >= 5 && reads <= 21, `about one bulk read per 20 ms poll over 400 ms, whatever the length: ${reads}`);
      assert.equal(kv.counts.gets - before.gets, 0, 'no single reads while idle');
      release();
      assert.equal((await run).text, 'done');
      await follower;
      const logged = live.filter((e) => !['checkpoint', 'checkpoint-loaded', 'text-delta', 'tool-call-delta', 'step-restart', 'done'].includes(e.type));
      const seqs = (l) => l.map((e) => `${e.seq}:${e.type}`);
      assert.deepEqual(seqs(followed.filter((e) => e.type !== 'done')), seqs(logged), 'every logged event, in order, numbered as live');
      assert.equal(followed.at(-1).type, 'done', 'it ends with the run');
      assert.equal(followed.at(-1).seq, live.at(-1).seq);
    });
  }

  test("someone else's or a made-up session: SessionNotFoundError at once, nothing followed", async () => {
    const kv = kvStandIn();
    await longAgent(3).session(kvSaver(kv), 'alice', { keepCompleted: true }).prompt('go');
    const t0 = Date.now();
    const events = longAgent(3).session(kvSaver(kv), 'mallory').replay({ follow: true });
    await assert.rejects(async () => { for await (const e of events) assert.fail(`an event: ${e.type}`); }, (e) => e.name === 'SessionNotFoundError');
    assert.ok(Date.now() - t0 < 1000, 'not polled for');
    // A finished session has nothing running to follow: the replay ends with it.
    const done = [];
    for await (const e of longAgent(3).session(kvSaver(kv), 'alice').replay({ follow: true })) done.push(e.type);
    assert.equal(done.at(-1), 'done');
  });
});
