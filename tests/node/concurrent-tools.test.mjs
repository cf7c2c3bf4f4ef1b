// The calls of one model turn run together (issue 36, item 2), through the real wasm: they overlap (counted, not
// timed), results and events keep the call order, one call's question lets the others finish and none runs again on
// resume (a fresh agent, from JSON), an abort stops them all, state sets over a missed change are refused, and bad
// options are ConfigErrors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agent, defineTool, AbortedError, ConfigError, InterruptError, isInterrupted } from 'resumable-agent';
import { recordingModel, resultsOf, text, toolUse, turn } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `slow`: waits `input.ms`, counting how many calls are under way at once and the order they finish in. */
function flight() {
  const f = { now: 0, max: 0, finished: [] };
  f.tool = defineTool({
    name: 'slow',
    handle: async ({ ms }, { toolUseId }) => {
      f.now += 1;
      f.max = Math.max(f.max, f.now);
      await sleep(ms);
      f.now -= 1;
      f.finished.push(toolUseId);
      return `done ${toolUseId}`;
    },
  });
  return f;
}

const threeSlow = () => [turn(toolUse('c1', 'slow', { ms: 60 }), toolUse('c2', 'slow', { ms: 35 }), toolUse('c3', 'slow', { ms: 10 })), text('all done')];

test('three slow calls overlap; results and events keep the call order; toolConcurrency bounds them', async () => {
  const transcripts = [];
  for (const [toolConcurrency, overlap, finished] of [[undefined, 3, ['c3', 'c2', 'c1']], [2, 2, ['c2', 'c3', 'c1']], [1, 1, ['c1', 'c2', 'c3']]]) {
    const f = flight();
    const { model, requests } = recordingModel(threeSlow());
    const events = [];
    const r = await agent({ model, tools: [f.tool], toolConcurrency }).prompt('go', { onEvent: (e) => events.push(e) });
    assert.equal(r.text, 'all done');
    assert.equal(f.max, overlap, `at most ${toolConcurrency ?? 'all'} at once`);
    assert.deepEqual(f.finished, finished);
    const tools = events.filter((e) => e.type === 'tool-call' || e.type === 'tool-result').map((e) => `${e.type} ${e.id}`);
    assert.deepEqual(tools, toolConcurrency === 1
      ? ['tool-call c1', 'tool-result c1', 'tool-call c2', 'tool-result c2', 'tool-call c3', 'tool-result c3']
      : ['tool-call c1', 'tool-call c2', 'tool-call c3', 'tool-result c1', 'tool-result c2', 'tool-result c3']);
    assert.deepEqual(resultsOf(requests[1].messages.at(-1)).map((b) => b.content), ['done c1', 'done c2', 'done c3']);
    transcripts.push(r.checkpoint.messages);
  }
  assert.deepEqual(transcripts[0], transcripts[2], 'the same conversation as one at a time');
  assert.deepEqual(transcripts[1], transcripts[2]);
});

test('one call asks: the others finish, the run pauses with their results, and none runs again on resume', async () => {
  let lookups = 0;
  const lookup = defineTool({ name: 'lookup', handle: async ({ key }) => { lookups += 1; await sleep(5); return `v-${key}`; } });
  const ask = defineTool({ name: 'ask', handle: ({ q }) => { throw new InterruptError(q); } });
  const script = () => [turn(toolUse('c1', 'lookup', { key: 'a' }), toolUse('c2', 'ask', { q: 'Your deadline?' }), toolUse('c3', 'lookup', { key: 'b' })), text('Planned.')];
  const paused = await agent({ model: recordingModel(script()).model, tools: [lookup, ask] }).prompt('Plan');
  assert.ok(isInterrupted(paused));
  assert.equal(paused.question, 'Your deadline?');
  assert.deepEqual(paused.checkpoint.toolResults.map((r) => r.tool_use_id ?? r.toolUseId), ['c1', 'c3']);
  assert.equal(lookups, 2);
  const stored = JSON.parse(JSON.stringify(paused.checkpoint));
  const { model, requests } = recordingModel(script().slice(1));
  const done = await agent({ model, tools: [lookup, ask] }).resume(stored, 'Friday');
  assert.equal(done.text, 'Planned.');
  assert.equal(lookups, 2, 'no call ran again');
  assert.deepEqual(resultsOf(requests[0].messages.at(-1)).map((b) => b.content), ['v-a', 'Friday', 'v-b']);
});

test('an abort stops every call under way: AbortedError keeping the results taken before it', async () => {
  let settled = 0;
  const quick = defineTool({ name: 'quick', handle: () => 'quick' });
  const hang = defineTool({ name: 'hang', handle: () => new Promise(() => {}) });
  const later = defineTool({ name: 'later', handle: async () => { await sleep(5); settled += 1; return 'later'; } });
  const { model } = recordingModel([turn(toolUse('c1', 'quick', {}), toolUse('c2', 'hang', {}), toolUse('c3', 'later', {})), text('never')]);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 40);
  const started = Date.now();
  const e = await agent({ model, tools: [quick, hang, later] }).prompt('go', { signal: controller.signal }).catch((x) => x);
  assert.ok(e instanceof AbortedError, String(e));
  assert.ok(Date.now() - started < 2000, 'the hung call did not hold the run');
  assert.deepEqual(e.checkpoint.toolResults.map((r) => r.tool_use_id ?? r.toolUseId), ['c1'], 'c3 comes after the stopped c2 in call order');
  assert.equal(settled, 1, 'c3 had finished; it runs again on resume');
});

test('state: a set made at once is seen by the next call; a set over a change the call missed is refused', async () => {
  const add = defineTool({ name: 'add', handle: ({ item }, ctx) => { ctx.setState({ items: [...ctx.state.items, item] }); return 'added'; } });
  const both = await agent({
    model: recordingModel([turn(toolUse('a', 'add', { item: 'a' }), toolUse('b', 'add', { item: 'b' })), text('ok')]).model,
    tools: [add], state: { items: [] },
  }).prompt('go');
  assert.deepEqual(both.checkpoint.state, { items: ['a', 'b'] });

  const late = defineTool({
    name: 'late',
    handle: async ({ item, ms }, ctx) => { const items = ctx.state.items; await sleep(ms); ctx.setState({ items: [...items, item] }); return `set ${item}`; },
  });
  const script = () => [turn(toolUse('a', 'late', { item: 'a', ms: 5 }), toolUse('b', 'late', { item: 'b', ms: 30 })), text('ok')];
  const { model, requests } = recordingModel(script());
  const r = await agent({ model, tools: [late], state: { items: [] } }).prompt('go');
  assert.deepEqual(r.checkpoint.state, { items: ['a'] }, 'the lost update was not kept');
  const [ra, rb] = resultsOf(requests[1].messages.at(-1));
  assert.deepEqual([ra.content, ra.isError ?? false], ['set a', false]);
  assert.equal(rb.isError, true);
  assert.match(rb.content, /late set the state after a call running with it had changed it.*toolConcurrency: 1/);
  const one = await agent({ model: recordingModel(script()).model, tools: [late], state: { items: [] }, toolConcurrency: 1 }).prompt('go');
  assert.deepEqual(one.checkpoint.state, { items: ['a', 'b'] }, 'one at a time, both count');
});

test('toolConcurrency must be a whole number of at least 1', () => {
  for (const [bad, why] of [[0, /config\.toolConcurrency/], ['2', /config\.toolConcurrency/], [1.5, /config\.toolConcurrency/]]) {
    assert.throws(() => agent({ model: () => text('x'), toolConcurrency: bad }), (e) => e instanceof ConfigError && why.test(e.message), String(bad));
  }
  assert.throws(() => agent({ model: () => text('x'), parallelToolCalls: true }), /did you mean "toolConcurrency"/);
});
