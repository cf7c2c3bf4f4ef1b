// Subagents (`agentTool`, issue 34 item 1) through the real wasm: a child's approval surfaces in the parent's result
// by `<call>/<child id>` with a path, is approved in another Node process from the JSON checkpoint and runs once; two
// levels of nesting answered with a text; denials; decisions with bad ids, types or arguments refused by id before
// anything runs; the parent's JS approval policy over the child's tools with two approvers; budgets counting the
// child's tokens; events with their path (onEvent and stream()); and bad options named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import {
  agent, agentTool, defineTool, scriptedModel, memorySaver, InterruptError, ConfigError, DecisionError, BudgetExceededError,
  ConfigDriftError, CheckpointError,
} from 'resumable-agent';
import { lead, payer, counted, runs } from './scripts/team-agent.mjs';
import { toolUse, turn, resultsOf } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(require.resolve('resumable-agent/checkpoint.schema.json'), 'utf8')));
const valid = (cp) => assert.ok(validate(cp), JSON.stringify(validate.errors));
const roundTrip = (cp) => JSON.parse(JSON.stringify(cp));
const reset = () => { runs.length = 0; };
const resultOf = (messages, id) => messages.flatMap((m) => (Array.isArray(m.content) ? resultsOf(m) : [])).find((r) => r.toolUseId === id);

test("a child's approval surfaces in the parent; approved in another process, each tool runs once and the parent completes", async () => {
  reset();
  const paused = await lead().prompt('settle up');
  assert.equal(paused.interrupted, true);
  assert.deepEqual(paused.interrupts.map(({ kind, id, toolName, input, path }) => ({ kind, id, toolName, input, path })), [
    { kind: 'approval', id: 'c1/k1', toolName: 'pay', input: { amount: 20 }, path: ['c1'] },
  ]);
  assert.deepEqual(runs, ['look'], 'the call before the subagent ran; the one after waits');
  // The child's run is inside the parent's checkpoint: one plain JSON.
  const kept = paused.checkpoint.pendingInput;
  assert.equal(kept.nested, true);
  assert.equal(kept.call, 'c1');
  assert.equal(kept.state.interrupts[0].id, 'k1');
  assert.deepEqual(roundTrip(paused.checkpoint), paused.checkpoint);

  const dir = mkdtempSync(join(tmpdir(), 'ra-team-'));
  try {
    writeFileSync(join(dir, 'cp.json'), JSON.stringify(paused.checkpoint));
    writeFileSync(join(dir, 'decisions.json'), JSON.stringify({ 'c1/k1': { type: 'approve' } }));
    const child = spawnSync(process.execPath, [join(here, 'scripts/team-child.mjs'), join(dir, 'cp.json'), join(dir, 'decisions.json')], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(child.status, 0, child.stderr);
    const { result, runs: ran } = JSON.parse(child.stdout);
    assert.equal(result.text, 'All settled.');
    assert.deepEqual(ran, ['pay', 'look'], 'pay ran once in the child; c0 did not run again, c2 ran once');
    assert.equal(resultOf(result.messages, 'c1').content, 'Paid.');
    assert.equal(resultOf(result.messages, 'c0').content, 'done look');
    assert.equal(result.checkpoint.pendingInput, undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a denial through the parent reaches the child's model, which answers the parent", async () => {
  reset();
  const a = lead();
  const paused = await a.prompt('settle up');
  const done = await a.resume(roundTrip(paused.checkpoint), { decisions: { 'c1/k1': { type: 'deny', message: 'not this month' } } });
  assert.equal(done.text, 'All settled.');
  assert.deepEqual(runs, ['look', 'look'], 'pay never ran');
  assert.equal(resultOf(done.messages, 'c1').content, 'Paid.');
});

test("two levels of nesting: a grandchild's question is answered with a text through the top; its tool does not run again", async () => {
  let asked = 0;
  const ask = defineTool({ name: 'ask', handle: () => { asked += 1; throw new InterruptError('Which account?', { options: ['main', 'savings'] }); } });
  const leaf = agent({ model: scriptedModel([turn(toolUse('g1', 'ask', {})), 'Leaf used the answer.']), tools: [ask] });
  // A config object works as well as an agent.
  const middle = { model: scriptedModel([turn(toolUse('m1', 'leaf', { task: 'find the account' })), 'Middle done.']), tools: [agentTool({ name: 'leaf', agent: leaf })] };
  const top = () => agent({ model: scriptedModel([turn(toolUse('c1', 'middle', { task: 'go' })), 'Top done.']), tools: [agentTool({ name: 'middle', description: 'The middle.', agent: middle })] });
  const paused = await top().prompt('start');
  assert.equal(paused.question, 'Which account?');
  const [i] = paused.interrupts;
  assert.deepEqual([i.id, i.kind, i.path, i.options], ['c1/m1/g1', 'question', ['c1', 'm1'], ['main', 'savings']]);
  assert.equal(paused.checkpoint.pendingInput.state.pendingInput.nested, true, 'the grandchild sits in the child, in the parent');
  // The published schema takes the parent's checkpoint and the ones nested in it.
  valid(paused.checkpoint);
  valid(paused.checkpoint.pendingInput.state);
  valid(paused.checkpoint.pendingInput.state.pendingInput.state);
  const done = await top().resume(roundTrip(paused.checkpoint), 'savings');
  assert.equal(done.text, 'Top done.');
  assert.equal(asked, 1);
  assert.equal(resultOf(done.messages, 'c1').content, 'Middle done.');
});

test('decisions with an unknown or malformed nested id, the wrong type, or arguments the child refuses are DecisionErrors naming the id', async () => {
  reset();
  const a = lead();
  const paused = await a.prompt('settle up');
  const cp = roundTrip(paused.checkpoint);
  const refused = async (decisions, id, why) => {
    const e = await a.resume(cp, { decisions }).then(() => null, (err) => err);
    assert.ok(e instanceof DecisionError, String(e));
    assert.equal(e.interruptId, id);
    assert.match(e.message, why);
  };
  await refused({ 'c1/k9': { type: 'approve' } }, 'c1/k9', /no pending interrupt has this id/);
  await refused({ 'c1/': { type: 'approve' } }, 'c1/', /no pending interrupt has this id/);
  await refused({ k1: { type: 'approve' } }, 'k1', /no pending interrupt has this id/);
  await refused({ 'c1/k1': { type: 'answer', text: 'yes' } }, 'c1/k1', /"approve" or "deny"/);
  // Checked by the child, against its own tool's schema, before anything of either runs.
  await refused({ 'c1/k1': { type: 'approve', modifiedArgs: { amount: 'lots' } } }, 'c1/k1', /modifiedArgs/);
  assert.deepEqual(runs, ['look']);
  assert.deepEqual(roundTrip(paused.checkpoint), cp, 'the checkpoint handed in is unchanged');
});

test("the parent's approval policy reviews the child's calls: a denial, and a payment that waits for two distinct approvers", async () => {
  reset();
  const child = agent({
    model: scriptedModel([turn(toolUse('k1', 'wipe', {}), toolUse('k2', 'pay', { amount: 500 })), 'Child done.']),
    tools: [counted('wipe'), counted('pay')],
  });
  const approval = ({ toolName }) => (toolName === 'wipe' ? { deny: true, message: 'never' } : toolName === 'pay' ? { ask: true, approvers: 2 } : 'allow');
  const a = agent({
    model: scriptedModel([turn(toolUse('c1', 'worker', { task: 'clean and pay' })), 'Parent done.']),
    tools: [agentTool({ name: 'worker', agent: child })],
    approval,
  });
  const paused = await a.prompt('go');
  assert.deepEqual(paused.interrupts.map((i) => [i.id, i.approvers]), [['c1/k2', 2]]);
  assert.match(paused.checkpoint.pendingInput.state.toolResults[0].content, /denied this call to wipe; it did not run: never/);
  const approve = (by) => ({ decisions: { 'c1/k2': { type: 'approve', by } } });
  // Every checkpoint on the way, the one between the decisions and the child's run among them (responses set).
  const seen = [];
  const once = await a.resume(roundTrip(paused.checkpoint), { ...approve('alice'), }, { onEvent: (e) => { if (e.type === 'checkpoint' && e.path === undefined) seen.push(e.checkpoint); } });
  assert.ok(seen.length > 0);
  for (const cp of seen) valid(cp);
  assert.deepEqual(once.interrupts[0].approvals.map((m) => m.by), ['alice']);
  const twice = await a.resume(roundTrip(once.checkpoint), approve('alice'));
  assert.deepEqual(twice.interrupts[0].approvals.map((m) => m.by), ['alice'], 'the same approver counts once');
  assert.deepEqual(runs, []);
  const done = await a.resume(roundTrip(twice.checkpoint), approve('bob'));
  assert.equal(done.text, 'Parent done.');
  assert.deepEqual(runs, ['pay'], 'pay ran once, wipe never');
});

test("the parent's budget counts the child's tokens across a resume; a larger budget continues without running anything twice", async () => {
  reset();
  const usage = { inputTokens: 40, outputTokens: 10 };
  const child = () => payer([{ content: [toolUse('k1', 'pay', { amount: 1 })], usage }, { content: [{ type: 'text', text: 'Paid.' }], usage }]);
  const parentUsage = { inputTokens: 10, outputTokens: 0 };
  const script = [{ content: [toolUse('c1', 'payments', { task: 'pay' })], usage: parentUsage }, { content: [{ type: 'text', text: 'Done.' }], usage: parentUsage }];
  const paused = await lead({ child: child(), script, budget: { totalTokens: 100 } }).prompt('go');
  assert.deepEqual(paused.checkpoint.usage, { inputTokens: 50, outputTokens: 10 }, "the child's first call is counted in the parent");
  const e = await lead({ child: child(), script, budget: { totalTokens: 100 } })
    .resume(roundTrip(paused.checkpoint), { decisions: { 'c1/k1': { type: 'approve' } } })
    .then(() => null, (err) => err);
  assert.ok(e instanceof BudgetExceededError, String(e));
  assert.equal(e.usage.inputTokens + e.usage.outputTokens, 110);
  assert.deepEqual(runs, ['pay']);
  const done = await lead({ child: child(), script, budget: { totalTokens: 1000 } }).resume(e.checkpoint, '');
  assert.equal(done.text, 'Done.');
  assert.deepEqual(runs, ['pay'], 'nothing ran twice');
});

test("the child's events reach the parent's onEvent and stream() with their path; the parent does not repeat the child's decisions", async () => {
  reset();
  const a = lead();
  const events = [];
  const paused = await a.prompt('settle up', { onEvent: (e) => events.push(e) });
  const nested = events.filter((e) => e.path !== undefined);
  assert.ok(nested.length > 0);
  assert.ok(nested.every((e) => JSON.stringify(e.path) === '["c1"]'));
  assert.ok(nested.some((e) => e.type === 'approval-requested' && e.id === 'k1'));
  assert.ok(nested.some((e) => e.type === 'step-finish'));
  const pause = events.findLast((e) => e.type === 'interrupt');
  assert.equal(pause.path, undefined);
  assert.equal(pause.interrupts[0].id, 'c1/k1');
  assert.equal(events.at(-1).type, 'done');
  assert.equal(events.at(-1).result.interrupts[0].id, 'c1/k1');
  const streamed = [];
  for await (const e of a.stream({ checkpoint: roundTrip(paused.checkpoint), answer: { decisions: { 'c1/k1': { type: 'approve' } } } })) streamed.push(e);
  assert.ok(streamed.some((e) => e.type === 'approval-response' && e.id === 'k1' && e.path?.[0] === 'c1'));
  assert.ok(!streamed.some((e) => e.type === 'approval-response' && e.path === undefined));
  assert.ok(streamed.some((e) => e.type === 'tool-result' && e.content === 'done pay' && e.path?.[0] === 'c1'));
  assert.equal(streamed.at(-1).type, 'done');
  assert.equal(streamed.at(-1).result.text, 'All settled.');
});

test('a child with an input schema and structured output: the input is its prompt as JSON, its structured answer the result', async () => {
  const prompts = [];
  const child = agent({
    model: (request) => {
      prompts.push(request.messages[0].content);
      return { content: [toolUse('f1', 'final_answer', { city: 'Paris', population: 2 })] };
    },
    output: { type: 'object', properties: { city: { type: 'string' }, population: { type: 'number' } }, required: ['city', 'population'] },
  });
  const a = agent({
    model: scriptedModel([turn(toolUse('c1', 'census', { country: 'France' })), 'Got it.']),
    tools: [agentTool({ name: 'census', agent: child, input: (s) => ({ country: s.string().required() }) })],
  });
  const done = await a.prompt('census please');
  assert.equal(done.text, 'Got it.');
  assert.deepEqual(prompts, ['{"country":"France"}']);
  assert.deepEqual(JSON.parse(resultOf(done.messages, 'c1').content), { city: 'Paris', population: 2 });
});

test("a child that fails is an error result the parent's model reads; a changed child is config drift of the parent", async () => {
  reset();
  const broken = agent({ model: () => { throw new Error('provider down'); } });
  const a = agent({ model: scriptedModel([turn(toolUse('c1', 'helper', { task: 'x' })), 'Recovered.']), tools: [agentTool({ name: 'helper', agent: broken })] });
  const done = await a.prompt('go');
  assert.equal(done.text, 'Recovered.');
  const r = resultOf(done.messages, 'c1');
  assert.equal(r.isError, true);
  assert.match(r.content, /the subagent helper failed: .*provider down/);

  const paused = await lead().prompt('settle up');
  const changed = payer();
  const other = agent({
    instructions: 'You pay invoices, carefully.',
    model: scriptedModel(['x']),
    tools: [counted('pay', { needsApproval: true, schema: (s) => ({ amount: s.number().required() }) })],
  });
  assert.ok(changed);
  const e = await lead({ child: other }).resume(roundTrip(paused.checkpoint), { decisions: { 'c1/k1': { type: 'approve' } } }).then(() => null, (err) => err);
  assert.ok(e instanceof ConfigDriftError, String(e));
  assert.deepEqual(e.changed, ['payments']);
});

test('bad agentTool options are ConfigErrors naming what is wrong', () => {
  assert.throws(() => agentTool(null), (e) => e instanceof ConfigError && /agentTool\(def\): expected/.test(e.message));
  assert.throws(() => agentTool({ name: 'x' }), (e) => e instanceof ConfigError && /agentTool\(def\)\.agent: expected an agent/.test(e.message));
  assert.throws(() => agentTool({ name: 'x', agent: payer(), handle: () => 1 }), (e) => e instanceof ConfigError && /agentTool\(def\)\.handle/.test(e.message));
  assert.throws(() => agentTool({ name: 'x', agent: {} }), (e) => e instanceof ConfigError && /config\.model/.test(e.message));
  assert.throws(() => agentTool({ name: 'bad name', agent: payer() }), (e) => e instanceof ConfigError && /agentTool\(def\)\.name: expected 1-64 letters/.test(e.message));
});

test("a subagent in a session: the parent's step log keeps the child's run and its step events, a reply by the nested id goes on, and replay shows both runs' events as they happened", async () => {
  reset();
  const saver = memorySaver();
  const live = [];
  const onEvent = (e) => live.push(e);
  const paused = await lead().session(saver, 'team-1').prompt('settle up', { onEvent });
  assert.deepEqual(paused.interrupts.map((i) => i.id), ['c1/k1']);
  // Another request, another agent object: the session's head holds the child's run.
  const stored = await lead().session(saver, 'team-1').checkpoint();
  assert.equal(stored.pendingInput.nested, true);
  assert.equal(stored.pendingInput.state.interrupts[0].id, 'k1');
  const done = await lead().session(saver, 'team-1', { keepCompleted: true }).reply({ decisions: { 'c1/k1': { type: 'approve' } } }, { onEvent });
  assert.equal(done.text, 'All settled.');
  assert.deepEqual(runs, ['look', 'pay', 'look']);
  const replayed = [];
  for await (const e of lead().session(saver, 'team-1').replay()) replayed.push(e);
  assert.ok(replayed.some((e) => e.type === 'interrupt' && e.interrupts[0].id === 'c1/k1'));
  assert.ok(replayed.some((e) => e.type === 'tool-result' && e.id === 'c1' && e.content === 'Paid.'));
  assert.equal(replayed.at(-1).type, 'done');
  // The child's step-level events are in the log: numbered in the parent's order, with their path, as reported live.
  const child = (e) => Array.isArray(e.path);
  for (const type of ['step-start', 'step-finish', 'approval-requested', 'approval-response', 'tool-call', 'tool-result']) {
    assert.ok(replayed.some((e) => child(e) && e.type === type && e.path[0] === 'c1'), `the child's ${type} is replayed`);
  }
  assert.ok(replayed.some((e) => child(e) && e.type === 'tool-result' && e.id === 'k1' && e.content === 'done pay'));
  // Each as it was reported live, with its number (not logged: a child's deltas, checkpoints and own `interrupt`).
  const logged = (e) => child(e) && !['checkpoint', 'text-delta', 'tool-call-delta', 'interrupt'].includes(e.type);
  assert.deepEqual(replayed.filter(child), live.filter(logged));
  assert.ok(live.filter(logged).every((e) => Number.isSafeInteger(e.seq)));
  // From the number of the child's first event: what came after it.
  const first = replayed.findIndex(child);
  const tail = [];
  for await (const e of lead().session(saver, 'team-1').replay({ after: replayed[first].seq })) tail.push(e);
  assert.deepEqual(tail, replayed.slice(first + 1));
});

test("a signed child's run tampered inside an unsigned parent is a CheckpointError before anything runs", async () => {
  reset();
  const signedLead = () => lead({ child: agent({
    instructions: 'You pay invoices.',
    model: scriptedModel([turn(toolUse('k1', 'pay', { amount: 20 })), 'Paid.']),
    tools: [counted('pay', { needsApproval: true, schema: (s) => ({ amount: s.number().required() }) })],
    checkpointKeys: { current: 'k', keys: { k: 'a secret only the payments agent signs with' } },
  }) });
  const paused = await signedLead().prompt('settle up');
  assert.equal(typeof paused.checkpoint.pendingInput.state.signature, 'object', "the child's run is signed");
  const forged = roundTrip(paused.checkpoint);
  forged.pendingInput.state.messages[1].content[0].input.amount = 20_000;
  forged.pendingInput.state.interrupts[0].input.amount = 20_000;
  const e = await signedLead().resume(forged, { decisions: { 'c1/k1': { type: 'approve' } } }).then(() => null, (err) => err);
  assert.ok(e instanceof CheckpointError, String(e));
  assert.match(e.message, /pendingInput\.state: the subagent's run of call "c1": checkpoint signature/);
  assert.deepEqual(runs, ['look'], 'pay never ran');
  const done = await signedLead().resume(roundTrip(paused.checkpoint), { decisions: { 'c1/k1': { type: 'approve' } } });
  assert.equal(done.text, 'All settled.');
  assert.deepEqual(runs, ['look', 'pay', 'look']);
});

test("a child that fails is an error result the parent's model reads, and its run is kept in the parent's checkpoint for its agent to resume without paying twice", async () => {
  reset();
  let calls = 0;
  // The child pays (no approval), then its model is down.
  const down = async () => {
    calls += 1;
    if (calls === 1) return turn(toolUse('k1', 'pay', { amount: 20 }));
    const e = new Error('overloaded'); e.name = 'OverloadedError'; throw e;
  };
  const child = (model) => agent({ instructions: 'You pay invoices.', model, tools: [counted('pay')] });
  const boss = (kid) => agent({
    model: scriptedModel([turn(toolUse('c1', 'payments', { task: 'pay the invoice' })), 'The payment could not finish.']),
    tools: [agentTool({ name: 'payments', description: 'Pays invoices.', agent: kid })],
  });
  const done = await boss(child(down)).prompt('settle up');
  assert.equal(done.text, 'The payment could not finish.');
  const c1 = resultOf(done.messages, 'c1');
  assert.equal(c1.isError, true);
  assert.match(c1.content, /^the subagent payments failed: .*overloaded/);
  valid(done.checkpoint);
  const [failed, ...more] = roundTrip(done.checkpoint).failedSubagents;
  assert.equal(more.length, 0);
  assert.equal(failed.id, 'c1');
  assert.equal(failed.toolName, 'payments');
  assert.equal(failed.error.name, 'ModelError');
  assert.match(failed.error.message, /overloaded/);
  assert.deepEqual(runs, ['pay']);
  // Once the model is back: the child's agent resumes the kept run; pay does not run again.
  const resumed = await child(scriptedModel([turn(toolUse('k1', 'pay', { amount: 20 })), 'Paid.'])).resume(failed.checkpoint, '');
  assert.equal(resumed.text, 'Paid.');
  assert.deepEqual(runs, ['pay'], 'pay ran once in all');
  // An edited kept run is refused by its path.
  const bad = roundTrip(done.checkpoint);
  bad.failedSubagents[0].checkpoint = 'not a checkpoint';
  const e = await boss(child(down)).resume(bad, 'And now?').then(() => null, (err) => err);
  assert.ok(e instanceof CheckpointError, String(e));
  assert.match(e.message, /failedSubagents\[0\]\.checkpoint/);
});
