// resumable-agent/testing: the saver conformance suite. Run it against your own saver:
//
//   import { saverConformance } from 'resumable-agent/testing';
//   saverConformance((namespace) => mySaver({ prefix: `${namespace}:` }));
//
// `makeSaver(namespace)` returns a saver; savers made with different namespaces must not see each other's
// keys. Options: `corrupt(saver, key)` replaces a stored value with something that is not a checkpoint while
// leaving its summary (to prove that `list` reads no values); `maxValueBytes` (default: the saver's own).
import { test } from 'node:test';
import { agent, defineTool, InterruptError, scriptedModel } from './node.js';

const usage = { inputTokens: 3, outputTokens: 1 };

/** A plain checkpoint of `n` messages (the last one `text`), paused on a question when `question` is given. */
export function sampleCheckpoint(text, { question, step, padding = '' } = {}) {
  const messages = [{ role: 'user', content: `${text}${padding}` }];
  const cp = { version: 2, messages, iterations: question ? 1 : 0, usage };
  if (question) {
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: 'q1', name: 'ask_user', input: { question } }] });
    Object.assign(cp, {
      pendingToolUseId: 'q1', question, reviewed: true,
      interrupts: [{ kind: 'question', id: 'q1', toolName: 'ask_user', input: { question }, question }],
    });
  }
  if (step !== undefined) cp.thread = { id: 't', step };
  return cp;
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** JSON with object keys sorted: equal values give equal text, whatever order a store writes keys in. */
function stable(value) {
  return JSON.stringify(value, (_, v) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
    : v));
}

function same(actual, expected, what) {
  const a = stable(actual);
  const e = stable(expected);
  check(a === e, `${what}: expected ${e.slice(0, 300)}, got ${a === undefined ? 'undefined' : a.slice(0, 300)}`);
}

async function rejects(promise, code, what) {
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  check(error !== undefined, `${what}: expected an error with code ${code}, nothing was thrown`);
  check(error.code === code, `${what}: expected code ${code}, got ${error.code} (${error.message})`);
}

const conflictFree = (saver) => saver.compareAndSet === true;

/**
 * An agent for the session cases: `lookup` (counted), then `ask` pauses on "When?", then the answer; `ran`
 * counts the calls of each tool.
 */
function logAgent() {
  const ran = { lookup: 0, ask: 0 };
  const call = (id, name) => ({ content: [{ type: 'tool_use', id, name, input: {} }] });
  const tools = [
    defineTool({ name: 'lookup', description: 'Look up.', schema: { type: 'object' }, handle: () => { ran.lookup += 1; return 'found'; } }),
    defineTool({ name: 'ask', description: 'Ask.', schema: { type: 'object' }, handle: () => { ran.ask += 1; throw new InterruptError('When?'); } }),
  ];
  const model = (request) => {
    const answers = request.messages.filter((m) => m.role === 'assistant').length;
    if (answers === 0) return call('l1', 'lookup');
    if (answers === 1) return call('a1', 'ask');
    const results = request.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'tool_result');
    return { content: [{ type: 'text', text: `due ${results.at(-1).content}` }] };
  };
  return { ran, a: agent({ model, tools, maxIterations: 20 }) };
}

/**
 * The cases, each `[name, async (make) => void]`, where `make(namespace)` gives a fresh saver.
 * A case returns the string 'skipped: …' when it does not apply to the saver.
 */
function cases(options) {
  return [
    ['round trip: what is put is what is got', async (make) => {
      const s = await make('rt');
      const cp = sampleCheckpoint('hello', { question: 'When?' });
      await s.put('k1', cp);
      same(await s.get('k1'), cp, 'get after put');
    }],
    ['overwrite: a second put replaces the value whole', async (make) => {
      const s = await make('ow');
      await s.put('k', sampleCheckpoint('one', { question: 'A?' }));
      const two = sampleCheckpoint('two');
      await s.put('k', two);
      same(await s.get('k'), two, 'get after overwrite');
      const listed = (await s.list('')).filter((e) => e.key === 'k');
      check(listed.length === 1, `one entry for the key, got ${listed.length}`);
      check(listed[0].interrupted === false, 'the summary follows the value');
    }],
    ['missing keys: get is null, delete is no error, exists is false', async (make) => {
      const s = await make('mk');
      same(await s.get('nowhere'), null, 'get of a missing key');
      await s.delete('nowhere');
      if (typeof s.exists === 'function') check((await s.exists('nowhere')) === false, 'exists of a missing key');
    }],
    ['delete removes the value and its listing entry', async (make) => {
      const s = await make('del');
      await s.put('gone', sampleCheckpoint('x'));
      await s.put('kept', sampleCheckpoint('y'));
      await s.delete('gone');
      same(await s.get('gone'), null, 'get after delete');
      same((await s.list('')).map((e) => e.key), ['kept'], 'keys listed after delete');
      if (typeof s.exists === 'function') check((await s.exists('kept')) === true, 'exists of a stored key');
    }],
    ['list: every key under the prefix, in key order, with its summary', async (make) => {
      const s = await make('ls');
      const keys = ['b', 'a', 'a/1', 'a/2', 'c'];
      for (const k of keys) await s.put(k, sampleCheckpoint(k, k === 'a/2' ? { question: 'Q?' } : {}));
      same((await s.list('')).map((e) => e.key), ['a', 'a/1', 'a/2', 'b', 'c'], 'all keys, sorted');
      const under = await s.list('a/');
      same(under.map((e) => e.key), ['a/1', 'a/2'], 'keys under a/');
      const q = under.find((e) => e.key === 'a/2');
      check(q.interrupted === true && q.question === 'Q?' && q.messageCount === 2 && q.iterations === 1, `summary of a/2: ${JSON.stringify(q)}`);
    }],
    ['list reads summaries, not values', async (make) => {
      if (!options.corrupt) return 'skipped: no corrupt(saver, key) option';
      const s = await make('lv');
      await s.put('ok', sampleCheckpoint('fine'));
      await s.put('bad', sampleCheckpoint('to be corrupted', { question: 'Still listed?' }));
      await options.corrupt(s, 'bad');
      const listed = await s.list('');
      same(listed.map((e) => e.key), ['bad', 'ok'], 'both keys still listed');
      check(listed[0].question === 'Still listed?', 'the summary of the corrupted value');
      await rejects(s.get('bad'), 'CORRUPT', 'get of the corrupted value');
    }],
    ['namespaces are isolated', async (make) => {
      const a = await make('iso-a');
      const b = await make('iso-b');
      await a.put('shared', sampleCheckpoint('from a'));
      same(await b.get('shared'), null, 'b does not see a\'s key');
      same((await b.list('')).map((e) => e.key), [], 'b lists nothing');
      await b.put('shared', sampleCheckpoint('from b'));
      same((await a.get('shared')).messages[0].content, 'from a', 'a keeps its value');
    }],
    ['threads are isolated: a prefix lists one thread only', async (make) => {
      const s = await make('th');
      for (const k of ['t1', 't1#~0000000001', 't1#~0000000002', 't10', 't10#~0000000001', 't2']) await s.put(k, sampleCheckpoint(k));
      same((await s.list('t1#~')).map((e) => e.key), ['t1#~0000000001', 't1#~0000000002'], 'history of t1 only');
      same((await s.list('t10')).map((e) => e.key), ['t10', 't10#~0000000001'], 'keys under t10');
    }],
    ['keys with any characters round-trip', async (make) => {
      const s = await make('chars');
      const keys = ['ünï cödé', 'a/b/../c', '%2F%', 'emoji 🎉', 'dots...', 'UPPER lower'];
      for (const k of keys) await s.put(k, sampleCheckpoint(k));
      for (const k of keys) same((await s.get(k))?.messages[0].content, k, `value under ${JSON.stringify(k)}`);
      same((await s.list('')).map((e) => e.key).sort(), [...keys].sort(), 'keys listed as given');
    }],
    ['compare-and-set: ifAbsent and ifStep refuse a changed key with CONFLICT', async (make) => {
      const s = await make('cas');
      if (!conflictFree(s)) return 'skipped: the saver does not compare and set (compareAndSet is not true)';
      await s.put('head', sampleCheckpoint('first', { step: 1 }), { ifAbsent: true });
      await rejects(s.put('head', sampleCheckpoint('again', { step: 1 }), { ifAbsent: true }), 'CONFLICT', 'ifAbsent on a stored key');
      await rejects(s.put('head', sampleCheckpoint('stale', { step: 2 }), { ifStep: 7 }), 'CONFLICT', 'ifStep with the wrong step');
      await s.put('head', sampleCheckpoint('second', { step: 2 }), { ifStep: 1 });
      same((await s.get('head')).messages[0].content, 'second', 'the conditional put that matched');
      await rejects(s.put('nothing', sampleCheckpoint('x', { step: 1 }), { ifStep: 0 }), 'CONFLICT', 'ifStep on a missing key');
    }],
    ['compare-and-set: of 20 concurrent conditional puts exactly one wins', async (make) => {
      const s = await make('race');
      if (!conflictFree(s)) return 'skipped: the saver does not compare and set (compareAndSet is not true)';
      await s.put('head', sampleCheckpoint('start', { step: 1 }));
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => s.put('head', sampleCheckpoint(`writer ${i}`, { step: 2 }), { ifStep: 1 })));
      const won = results.filter((r) => r.status === 'fulfilled').length;
      check(won === 1, `exactly one winner, got ${won}`);
      for (const r of results) if (r.status === 'rejected') check(r.reason?.code === 'CONFLICT', `losers get CONFLICT, got ${r.reason?.code}: ${r.reason?.message}`);
    }],
    ['session log: each step appends a record; every position reads back as it was', async (make) => {
      const s = await make('log');
      const { a, ran } = logAgent();
      const session = a.session(s, 'conv', { keepCompleted: true });
      const paused = await session.prompt('Plan.');
      check(paused.question === 'When?', `paused on the question, got ${JSON.stringify(paused.question)}`);
      same(await session.checkpoint(), paused.checkpoint, 'the latest checkpoint, read back');
      const before = await session.history();
      check(before.length >= 4, `a record per step (prompt, lookup call, its result, ask call), got ${before.length}`);
      same(before.map((h) => h.step), before.map((_, i) => before[0].step - i), 'consecutive positions, newest first');
      for (const h of before) {
        const cp = await session.checkpoint(h.id);
        check(cp.thread.step === h.step && cp.messages.length === h.messageCount, `position ${h.step} reads back as listed`);
      }
      check((await session.reply('Friday')).text === 'due Friday', 'the answer');
      const after = await session.history();
      check(after.length > before.length && after.at(-before.length).step === before[0].step, 'the reply appended after the last position');
      same(await session.checkpoint(before[0].id), paused.checkpoint, 'an earlier position is unchanged by the reply');
      check(ran.lookup === 1 && ran.ask === 1, `each tool ran once: ${JSON.stringify(ran)}`);
    }],
    ['session log: a crash between a record and the head that names it loses nothing', async (make) => {
      const s = await make('crash');
      const { a, ran } = logAgent();
      const paused = await a.session(s, 'conv').prompt('Plan.');
      // The records are written; the head is not (a crash before it): only the records remain.
      await s.delete('conv');
      same(await a.session(s, 'conv').checkpoint(), paused.checkpoint, 'found from the records alone');
      check((await a.session(s, 'conv').reply('Monday')).text === 'due Monday', 'the reply continues it');
      check(ran.lookup === 1, 'no completed call ran again');
    }],
    ['session log: restore a position, then branch from it', async (make) => {
      const s = await make('branch');
      const { a } = logAgent();
      const session = a.session(s, 'conv', { keepCompleted: true });
      const paused = await session.prompt('Plan.');
      await session.label(paused.checkpoint.thread.step, 'asked');
      check((await session.reply('May')).text === 'due May', 'the first answer');
      const restored = await session.restore('asked');
      check(restored.thread.parentStep === paused.checkpoint.thread.step, `the new head continues from the label: ${JSON.stringify(restored.thread)}`);
      check((await session.reply('June')).text === 'due June', 'a second answer, on the branch');
      const history = await session.history();
      check(history.some((h) => h.label === 'asked' && h.step === paused.checkpoint.thread.step), 'the label stays');
      const branch = await session.checkpoint(restored.thread.step);
      check(branch?.thread.parentStep === paused.checkpoint.thread.step, `the restored position, read back, names the labelled one as its parent: ${JSON.stringify(branch?.thread)}`);
      check(history.some((h) => h.messageCount === paused.checkpoint.messages.length + 2 && h.step > restored.thread.step), 'the branch goes on from there');
    }],
    ['session log: of 10 concurrent replies exactly one runs (positions are claimed only if free)', async (make) => {
      const s = await make('claim');
      if (!conflictFree(s)) return 'skipped: the saver does not compare and set (compareAndSet is not true)';
      const { a, ran } = logAgent();
      await a.session(s, 'conv').prompt('Plan.');
      const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => a.session(s, 'conv').reply(`day ${i}`)));
      const won = results.filter((r) => r.status === 'fulfilled');
      check(won.length === 1, `exactly one reply runs, got ${won.length}`);
      for (const r of results) {
        if (r.status === 'rejected') check(['SessionBusyError', 'SessionNotFoundError', 'DecisionError'].includes(r.reason?.name), `the others are refused before running: ${r.reason?.name}: ${r.reason?.message}`);
      }
      check(ran.lookup === 1 && ran.ask === 1, `no tool ran twice: ${JSON.stringify(ran)}`);
      return undefined;
    }],
    ['large values near the store\'s limit', async (make) => {
      const s = await make('big');
      const limit = options.maxValueBytes ?? s.maxValueBytes;
      const base = JSON.stringify(sampleCheckpoint('x')).length;
      if (!limit) {
        const big = sampleCheckpoint('x', { padding: 'p'.repeat(1024 * 1024) });
        await s.put('big', big);
        check((await s.get('big')).messages[0].content.length === 1024 * 1024 + 1, 'a 1 MiB value round-trips');
        return undefined;
      }
      const under = sampleCheckpoint('x', { padding: 'p'.repeat(limit - base - 64) });
      await s.put('big', under);
      check((await s.get('big')).messages[0].content.length === under.messages[0].content.length, 'a value just under the limit round-trips');
      await rejects(s.put('big', sampleCheckpoint('x', { padding: 'p'.repeat(limit - base + 64) })), 'TOO_LARGE', 'a value just over the limit');
      check((await s.get('big')).messages[0].content.length === under.messages[0].content.length, 'a refused put leaves the value as it was');
    }],
  ];
}

/** Runs every case; resolves to `[{ name, ok, skipped?, error? }]` (never rejects). */
export async function runSaverConformance(makeSaver, options = {}) {
  const out = [];
  for (const [name, run] of cases(options)) {
    try {
      const result = await run(async (namespace) => makeSaver(namespace));
      out.push(typeof result === 'string' ? { name, ok: true, skipped: result } : { name, ok: true });
    } catch (error) {
      out.push({ name, ok: false, error });
    }
  }
  return out;
}

/** Registers every case as a `node:test` test. */
export function saverConformance(makeSaver, options = {}) {
  for (const [name, run] of cases(options)) {
    test(`saver conformance: ${name}`, async (t) => {
      const result = await run(async (namespace) => makeSaver(namespace));
      if (typeof result === 'string') t.skip(result);
    });
  }
}
