// Sessions over savers, in Node (the real Workers KV binding is tested in workerd: tests/workers/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  agent, defineTool, InterruptError, scriptedModel, memorySaver, kvSaver, isInterrupted, listSessions,
  SessionNotFoundError, SessionBusyError, SaverError, ModelError, ConfigError, DecisionError,
} from 'resumable-agent';

const askUser = defineTool({
  name: 'ask_user',
  schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => { throw new InterruptError(question); },
});

const firstUserText = (req) => req.messages.find((m) => m.role === 'user').content;
const lastResult = (req) => req.messages.at(-1).content.find((b) => b.type === 'tool_result').content;

const config = {
  tools: [askUser],
  model: scriptedModel([
    { content: [{ type: 'tool_use', id: 'q1', name: 'ask_user', input: { question: 'Your deadline?' } }] },
    (req) => `Plan for ${firstUserText(req)} due ${lastResult(req)}.`,
    (req) => `Noted: ${req.messages.at(-1).content}.`,
  ]),
};

test('prompt saves a paused run, reply completes it and deletes it', async () => {
  const saver = memorySaver();
  const r1 = await agent(config).session(saver, 's1').prompt('the app');
  assert.equal(r1.question, 'Your deadline?');
  const saved = await agent(config).session(saver, 's1').checkpoint();
  assert.equal(saved.pendingToolUseId, 'q1');
  assert.deepEqual(saved, r1.checkpoint, 'what a later request reads is the checkpoint, nothing else');
  const r2 = await agent(config).session(saver, 's1').reply('Q2');
  assert.equal(r2.text, 'Plan for the app due Q2.');
  assert.equal(await agent(config).session(saver, 's1').checkpoint(), null);
  assert.deepEqual(await saver.list(), [], 'every key of the session is gone');
});

test('keepCompleted keeps the checkpoint; prompt then continues the conversation', async () => {
  const saver = memorySaver();
  const s = agent(config).session(saver, 'k', { keepCompleted: true });
  assert.equal(s.id, 'k');
  await s.prompt('the app');
  const done = await s.reply('Q3');
  assert.deepEqual(await s.checkpoint(), done.checkpoint);
  const more = await s.prompt('budget is 10k');
  assert.equal(more.text, 'Noted: budget is 10k.');
  assert.equal((await s.checkpoint()).messages.length, 6);
});

test('typed errors: reply to an unknown session, prompt on a paused one', async () => {
  const saver = memorySaver();
  const e1 = await agent(config).session(saver, 'nope').reply('x').catch((e) => e);
  assert.ok(e1 instanceof SessionNotFoundError);
  assert.equal(e1.sessionId, 'nope');
  assert.equal(e1.message, 'session "nope" not found');
  await agent(config).session(saver, 'b').prompt('one');
  const before = [await saver.list(), await agent(config).session(saver, 'b').checkpoint()];
  const e2 = await agent(config).session(saver, 'b').prompt('two').catch((e) => e);
  assert.ok(e2 instanceof SessionBusyError);
  assert.equal(e2.question, 'Your deadline?');
  assert.deepEqual([await saver.list(), await agent(config).session(saver, 'b').checkpoint()], before, 'the paused session is untouched');
  assert.throws(() => agent(config).session({}, 'x'), ConfigError);
  assert.throws(() => agent(config).session(saver, ''), ConfigError);
});

test('concurrent replies: one runs; the others are refused as the README says, whenever they loaded the session', async () => {
  for (const keepCompleted of [false, true]) {
    const saver = memorySaver();
    let ran = 0;
    const counting = { ...config, model: async (req) => { ran += 1; return config.model(req); } };
    await agent(config).session(saver, 'race', { keepCompleted }).prompt('the app');
    const replies = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => agent(counting).session(saver, 'race', { keepCompleted }).reply(`Q${i}`)));
    assert.equal(replies.filter((r) => r.status === 'fulfilled').length, 1, `keepCompleted ${keepCompleted}: exactly one reply runs`);
    assert.equal(ran, 1, 'one model call: the winner\'s');
    for (const { reason } of replies.filter((x) => x.status === 'rejected')) {
      // Busy while the winner runs or when it ended the session under this call; after it ended an unkept
      // session, nothing is left to find; after a kept one completed, nothing waits for an answer.
      const expected = reason instanceof SessionBusyError
        || (!keepCompleted && reason instanceof SessionNotFoundError)
        || (keepCompleted && reason instanceof DecisionError && /waits for no answer/.test(reason.message));
      assert.ok(expected, `keepCompleted ${keepCompleted}: ${reason}`);
    }
  }
});

test('sessions are isolated when interleaved', async () => {
  const saver = memorySaver();
  await agent(config).session(saver, 'A').prompt('alpha');
  await agent(config).session(saver, 'B').prompt('beta');
  const b = await agent(config).session(saver, 'B').reply('May');
  const a = await agent(config).session(saver, 'A').reply('June');
  assert.equal(b.text, 'Plan for beta due May.');
  assert.equal(a.text, 'Plan for alpha due June.');
});

test('a failing model saves the progress, and a saver failure hands back the checkpoint', async () => {
  const saver = memorySaver();
  let fail = true;
  const flaky = { tools: [askUser], model: async (req) => {
    if (req.messages.length === 3 && fail) throw new Error('overloaded');
    return config.model(req);
  } };
  await agent(flaky).session(saver, 'f').prompt('the app');
  const err = await agent(flaky).session(saver, 'f').reply('Q4').catch((e) => e);
  assert.ok(err instanceof ModelError);
  const saved = await agent(flaky).session(saver, 'f').checkpoint();
  assert.equal(saved.pendingToolUseId, undefined, 'the answer was applied and saved');
  assert.equal(saved.messages.at(-1).content[0].content, 'Q4');
  fail = false;
  const done = await agent(flaky).session(saver, 'f').reply('');
  assert.equal(done.text, 'Plan for the app due Q4.');

  // A saver that refuses the first save stops the session before the model is called (nothing paid for is
  // lost, because nothing was paid for); the caller gets the run so far.
  const broken = { get: async () => null, put: async () => { const e = new Error('disk full'); e.code = 'ENOSPC'; throw e; }, delete: async () => {} };
  let calls = 0;
  const counting = { ...config, model: async (req) => { calls += 1; return config.model(req); } };
  const e2 = await agent(counting).session(broken, 'x').prompt('the app').catch((e) => e);
  assert.ok(e2 instanceof SaverError);
  assert.match(e2.message, /disk full/);
  assert.equal(e2.code, 'BACKEND', "always one of the package's codes; the cause keeps its own");
  assert.equal(e2.checkpoint.messages[0].content, 'the app', 'the caller still gets the checkpoint');
  assert.equal(calls, 0);
  assert.equal(e2.cause.code, 'ENOSPC');
});

/** An in-process stand-in with the KV binding's API and its metadata, used here only to test our side. */
function fakeKv() {
  const data = new Map();
  return {
    data,
    async get(k) { return data.has(k) ? data.get(k).value : null; },
    async getWithMetadata(k) { return data.has(k) ? { value: data.get(k).value, metadata: data.get(k).metadata ?? null } : { value: null, metadata: null }; },
    async put(k, value, opts = {}) { data.set(k, { value, metadata: opts.metadata, ttl: opts.expirationTtl }); },
    async delete(k) { data.delete(k); },
    async list({ prefix = '', cursor } = {}) {
      const all = [...data.keys()].filter((k) => k.startsWith(prefix)).sort();
      const start = cursor ? Number(cursor) : 0;
      const page = all.slice(start, start + 2);
      const done = start + 2 >= all.length;
      return { keys: page.map((name) => ({ name, metadata: data.get(name).metadata })), list_complete: done, cursor: done ? undefined : String(start + 2) };
    },
  };
}

test('kvSaver: prefix, ttl, metadata summaries across list pages, limits refused before writing', async () => {
  const kv = fakeKv();
  const saver = kvSaver(kv, { prefix: 'sess:', expirationTtl: 3600 });
  for (const id of ['a', 'b', 'c']) await agent(config).session(saver, id).prompt(`app ${id}`);
  const keys = [...kv.data.keys()].sort();
  assert.deepEqual(keys.filter((k) => !k.includes('#~')), ['sess:a', 'sess:b', 'sess:c'], 'a head per session');
  assert.ok(keys.every((k) => k.startsWith('sess:')), keys.join());
  assert.ok(keys.every((k) => kv.data.get(k).ttl === 3600), 'every key expires');
  const a = await agent(config).session(saver, 'a').checkpoint();
  kv.data.get('sess:b').value = 'not json at all'; // list must not read values
  const listed = await listSessions(saver);
  assert.deepEqual(listed.map((e) => [e.key, e.interrupted, e.question]), [['a', true, 'Your deadline?'], ['b', true, 'Your deadline?'], ['c', true, 'Your deadline?']]);
  const bad = await saver.get('b').catch((e) => e);
  assert.ok(bad instanceof SaverError);
  assert.equal(bad.code, 'CORRUPT');
  const head = await saver.get('a').catch((e) => e);
  assert.equal(head.code, 'NOT_CHECKPOINT', 'a session head read as a checkpoint says what it is');
  const long = await saver.put('k'.repeat(508), a).catch((e) => e);
  assert.equal(long.code, 'KEY_LENGTH');
  assert.throws(() => kvSaver(kv, { expirationTtl: 5 }), (e) => e instanceof SaverError && e.code === 'OPTION');
  assert.throws(() => kvSaver({ get() {} }), (e) => e instanceof ConfigError && /missing method\(s\) getWithMetadata, put, delete, list/.test(e.message));
});
