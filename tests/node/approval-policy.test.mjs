// Issue 34's agent-level rules through the real wasm: an approval policy over every call (async, the stricter of it
// and a tool's needsApproval), sticky approvals (`remember: 'tool'`) across a JSON round trip, k-of-n approvers —
// the second one in another Node process —, token budgets counted across resumes, the events and the session log
// that record who decided, and bad options and decisions named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  agent, defineTool, scriptedModel, memorySaver, BudgetExceededError, ConfigError, DecisionError, CheckpointError,
  ConfigDriftError,
} from 'resumable-agent';
import { paymentsAgent, runs } from './scripts/payments-agent.mjs';
import { toolUse, turn, resultsOf } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const roundTrip = (cp) => JSON.parse(JSON.stringify(cp));
const reset = () => { runs.length = 0; };

test('the policy asks, denies and allows calls of tools without a rule of their own; the denial reaches the model', async () => {
  reset();
  const a = paymentsAgent([turn(toolUse('c1', 'look', {}), toolUse('c2', 'wipe', {}), toolUse('c3', 'pay', { amount: 20 })), 'All done.']);
  const events = [];
  const paused = await a.prompt('tidy up', { onEvent: (e) => events.push(e) });
  assert.equal(paused.interrupted, true);
  assert.deepEqual(paused.interrupts.map((i) => [i.id, i.approvers]), [['c3', undefined]]);
  assert.deepEqual(runs, [], 'nothing of the turn ran before the pause');
  const denied = paused.checkpoint.toolResults.find((r) => r.toolUseId === 'c2');
  assert.equal(denied.isError, true);
  assert.match(denied.content, /approval policy denied this call to wipe; it did not run: wiping is never allowed/);
  assert.deepEqual(events.filter((e) => e.type === 'approval-requested').map((e) => e.id), ['c3']);
  const done = await a.resume(roundTrip(paused.checkpoint), { decisions: { c3: { type: 'approve' } } });
  assert.equal(done.text, 'All done.');
  assert.deepEqual(runs, ['look', 'pay 20']);
});

test("a policy's 'allow' never skips a tool's needsApproval; a throwing or malformed policy lets nothing run", async () => {
  const sent = [];
  const send = defineTool({ name: 'send', needsApproval: { expiresInMs: 60_000 }, handle: () => { sent.push(1); return 'sent'; } });
  const allowAll = agent({ model: scriptedModel([turn(toolUse('s', 'send', {})), 'ok']), tools: [send], approval: () => 'allow' });
  const paused = await allowAll.prompt('send');
  assert.equal(paused.interrupted, true);
  assert.ok(paused.interrupts[0].expiresAt > Date.now());
  for (const [approval, why] of [
    [() => { throw new Error('rules service down'); }, /config\.approval threw: rules service down/],
    [() => 'maybe', /config\.approval returned what is not a decision: expected 'allow'.*got "maybe"/],
    [() => ({ ask: true, approvers: 99 }), /approvers: expected an integer from 1 to 16/],
  ]) {
    const a = agent({ model: scriptedModel([turn(toolUse('s', 'send', {})), 'ok']), tools: [defineTool({ name: 'send', handle: () => { sent.push(2); return 'sent'; } })], approval });
    const r = await a.prompt('send');
    const [result] = resultsOf(r.messages[2]);
    assert.equal(result.isError, true);
    assert.match(result.content, why);
  }
  assert.deepEqual(sent, [], 'no call ran on a rule that could not be evaluated');
});

test("remember: 'tool' approves later calls of the tool after a JSON round trip, says so in the event, never lifts a denial or two approvers", async () => {
  reset();
  const script = [
    turn(toolUse('c1', 'pay', { amount: 10 })), turn(toolUse('c2', 'pay', { amount: 30 })), turn(toolUse('c3', 'pay', { amount: 500 })), 'paid',
  ];
  const a = paymentsAgent(script);
  const paused = await a.prompt('pay three bills');
  const events = [];
  const next = await a.resume(roundTrip(paused.checkpoint), { decisions: { c1: { type: 'approve', remember: 'tool', by: 'ann' } } }, { onEvent: (e) => events.push(e) });
  assert.deepEqual(
    events.filter((e) => e.type === 'approval-response').map(({ id, approved, by, remembered }) => ({ id, approved, by, remembered })),
    [{ id: 'c1', approved: true, by: 'ann', remembered: undefined }, { id: 'c2', approved: true, by: undefined, remembered: true }],
  );
  assert.deepEqual(next.checkpoint.remembered, ['pay']);
  assert.deepEqual(next.interrupts.map((i) => [i.id, i.approvers]), [['c3', 2]], 'a payment over 100 still waits for two approvers');
  assert.deepEqual(runs, ['pay 10', 'pay 30']);
  // A remembered tool the policy denies stays denied.
  reset();
  const wiping = paymentsAgent([turn(toolUse('w', 'wipe', {})), 'no']);
  const carried = { ...roundTrip(next.checkpoint), messages: [{ role: 'user', content: 'wipe' }], interrupts: undefined, pendingToolUseId: undefined, question: undefined, reviewed: undefined, toolResults: undefined, approved: undefined, remembered: ['wipe'] };
  const r = await wiping.resume(carried, '');
  assert.equal(resultsOf(r.messages[2])[0].isError, true);
  assert.deepEqual(runs, []);
});

test('k-of-n: Ann approves here, Bob in another Node process; the same approver twice counts once; a deny by anyone denies', async () => {
  reset();
  const script = [turn(toolUse('big', 'pay', { amount: 900 }), toolUse('small', 'pay', { amount: 5 })), 'finished'];
  const a = paymentsAgent(script);
  const paused = await a.prompt('pay');
  assert.deepEqual(paused.interrupts.map((i) => i.approvers), [2, undefined]);
  // Without a name, or with modifiedArgs, an approval of the big one is refused, naming it.
  let e = await a.resume(paused.checkpoint, { decisions: { big: { type: 'approve' }, small: { type: 'approve' } } }).catch((x) => x);
  assert.ok(e instanceof DecisionError && e.interruptId === 'big' && /2 distinct approvers/.test(e.message), e.message);
  e = await a.resume(paused.checkpoint, { decisions: { big: { type: 'approve', by: 42 } } }).catch((x) => x);
  assert.ok(e instanceof DecisionError && /\.by: expected a string/.test(e.message), e.message);
  e = await a.resume(paused.checkpoint, { decisions: { big: { type: 'approve', remember: 'forever', by: 'ann' } } }).catch((x) => x);
  assert.ok(e instanceof DecisionError && /\.remember: expected "tool"/.test(e.message), e.message);
  // Ann approves both (the small one needs only her); the run stays paused on the big one.
  const events = [];
  const ann = await a.resume(roundTrip(paused.checkpoint), { decisions: { big: { type: 'approve', by: 'ann' }, small: { type: 'approve', by: 'ann' } } }, { onEvent: (ev) => events.push(ev) });
  assert.equal(ann.interrupted, true);
  assert.deepEqual(ann.interrupts.map((i) => [i.id, i.approvals.map((x) => x.by)]), [['big', ['ann']]]);
  assert.ok(ann.interrupts[0].approvals[0].at > 0);
  assert.deepEqual(events.filter((ev) => ev.type === 'approval-response').map(({ id, by, pending, approved }) => [id, by, pending, approved]), [['big', 'ann', true, false], ['small', 'ann', undefined, true]]);
  assert.deepEqual(runs, [], 'nothing of the turn runs while one of its calls waits');
  // Ann again: still one of two.
  const again = await a.resume(roundTrip(ann.checkpoint), { decisions: { big: { type: 'approve', by: 'ann' } } });
  assert.equal(again.interrupted, true);
  assert.equal(again.interrupts[0].approvals.length, 1);
  // Bob, in a new process, with the checkpoint as stored JSON: both payments run once there, and the run completes.
  const dir = mkdtempSync(join(tmpdir(), 'approvers-'));
  try {
    writeFileSync(join(dir, 'cp.json'), JSON.stringify(again.checkpoint));
    writeFileSync(join(dir, 'script.json'), JSON.stringify(script));
    writeFileSync(join(dir, 'decisions.json'), JSON.stringify({ big: { type: 'approve', by: 'bob' } }));
    const child = spawnSync(process.execPath, [join(here, 'scripts', 'approver-child.mjs'), join(dir, 'cp.json'), join(dir, 'script.json'), join(dir, 'decisions.json')], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(child.status, 0, child.stderr);
    const out = JSON.parse(child.stdout);
    assert.notEqual(out.pid, process.pid);
    assert.equal(out.result.text, 'finished');
    assert.deepEqual(out.runs, ['pay 900', 'pay 5']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(runs, [], 'nothing ran in this process');
  // From Ann's pause, Bob denies instead: the model reads who denied; the big payment never runs.
  const denied = await a.resume(roundTrip(ann.checkpoint), { decisions: { big: { type: 'deny', message: 'too much', by: 'bob' } } });
  const [big] = resultsOf(denied.messages[2]);
  assert.match(big.content, /The user "bob" denied this call to pay; it did not run: too much/);
  assert.deepEqual(runs, ['pay 5']);
});

test('a forged checkpoint cannot lower the approvers: approvals as many as needed, or one approver twice, are CheckpointErrors', async () => {
  const a = paymentsAgent([turn(toolUse('big', 'pay', { amount: 900 })), 'x']);
  const paused = await a.prompt('pay');
  const forged = roundTrip(paused.checkpoint);
  forged.interrupts[0].approvals = [{ by: 'mallory', at: 1 }, { by: 'mallory2', at: 2 }];
  let e = await a.resume(forged, { decisions: {} }).catch((x) => x);
  assert.ok(e instanceof CheckpointError && e.path === 'interrupts[0].approvals', e.message);
  forged.interrupts[0].approvers = 3;
  forged.interrupts[0].approvals = [{ by: 'mallory', at: 1 }, { by: 'mallory', at: 2 }];
  e = await a.resume(forged, { decisions: {} }).catch((x) => x);
  assert.ok(e instanceof CheckpointError && e.path === 'interrupts[0].approvals[1].by', e.message);
});

test('the policy is part of the signed agent: a checkpoint signed under one policy is refused by an agent with another', async () => {
  reset();
  const checkpointKeys = { current: 'k1', keys: { k1: 'a secret of at least 32 bytes long!!' } };
  const script = [turn(toolUse('c', 'pay', { amount: 5 })), 'ok'];
  const strict = paymentsAgent(script, { checkpointKeys });
  const paused = await strict.prompt('pay');
  const loose = paymentsAgent(script, { checkpointKeys, approval: () => 'allow' });
  const e = await loose.resume(paused.checkpoint, { decisions: [{ type: 'approve' }] }).catch((x) => x);
  assert.ok(e instanceof CheckpointError && e.code === 'BINDING', e.message);
  assert.deepEqual(runs, []);
  assert.equal((await paymentsAgent(script, { checkpointKeys }).resume(paused.checkpoint, { decisions: [{ type: 'approve' }] })).text, 'ok');
  assert.deepEqual(runs, ['pay 5']);
});

test('a budget counts usage across resumes: BudgetExceededError with the checkpoint, and a larger budget continues', async () => {
  reset();
  const usage = { inputTokens: 40, outputTokens: 20 };
  const script = [
    { content: [toolUse('c1', 'pay', { amount: 1 })], usage },
    { content: [toolUse('c2', 'look', {})], usage },
    { content: [{ type: 'text', text: 'done' }], usage },
  ];
  const paused = await paymentsAgent(script, { budget: { totalTokens: 100 } }).prompt('go');
  assert.equal(paused.interrupted, true);
  const events = [];
  const e = await paymentsAgent(script, { budget: { totalTokens: 100 } })
    .resume(roundTrip(paused.checkpoint), { decisions: [{ type: 'approve' }] }, { onEvent: (ev) => events.push(ev) })
    .catch((x) => x);
  assert.ok(e instanceof BudgetExceededError, e.message);
  assert.equal(e.limit, 'totalTokens');
  assert.deepEqual(e.budget, { totalTokens: 100 });
  assert.deepEqual(e.usage, { inputTokens: 80, outputTokens: 40 });
  assert.equal(e.checkpoint.iterations, 2);
  assert.equal(events.at(-1).type, 'error');
  assert.equal(events.at(-1).error.limit, 'totalTokens');
  assert.deepEqual(runs, ['pay 1', 'look']);
  const done = await paymentsAgent(script, { budget: { totalTokens: 1000 } }).resume(roundTrip(e.checkpoint));
  assert.equal(done.text, 'done');
  assert.deepEqual(runs, ['pay 1', 'look'], 'nothing ran twice');
});

test('in a session the log records who decided and what was remembered; replay shows it', async () => {
  reset();
  const script = [turn(toolUse('c1', 'pay', { amount: 10 })), turn(toolUse('c2', 'pay', { amount: 20 })), 'paid'];
  const saver = memorySaver();
  const s = paymentsAgent(script).session(saver, 'pay-1', { keepCompleted: true });
  assert.equal((await s.prompt('pay')).interrupted, true);
  assert.equal((await s.reply({ decisions: [{ type: 'approve', remember: 'tool', by: 'ann' }] })).text, 'paid');
  const replayed = [];
  for await (const e of paymentsAgent(script).session(saver, 'pay-1').replay()) replayed.push(e);
  assert.deepEqual(
    replayed.filter((e) => e.type === 'approval-response').map(({ id, by, remembered }) => ({ id, by, remembered })),
    [{ id: 'c1', by: 'ann', remembered: undefined }, { id: 'c2', by: undefined, remembered: true }],
  );
  assert.deepEqual(runs, ['pay 10', 'pay 20']);
});

test('config drift: a run paused under one deploy and resumed under the next is refused by default, asked again with reapprove', async () => {
  reset();
  const script = [turn(toolUse('big', 'pay', { amount: 900 }), toolUse('l', 'look', {})), 'ok'];
  const v1 = paymentsAgent(script);
  const paused = await v1.prompt('pay');
  const ann = await v1.resume(roundTrip(paused.checkpoint), { decisions: { big: { type: 'approve', by: 'ann' } } });
  assert.deepEqual(Object.keys(ann.checkpoint.fingerprint.tools), ['look', 'pay', 'wipe']);
  // v2: pay takes a currency, wipe went, refund is new.
  const refund = defineTool({ name: 'refund', handle: () => 'refunded' });
  const pay2 = defineTool({ name: 'pay', schema: (s) => ({ amount: s.number().required(), currency: s.string() }), handle: ({ amount }) => { runs.push(`pay ${amount}`); return 'paid'; } });
  const look = defineTool({ name: 'look', handle: () => { runs.push('look'); return 'seen'; } });
  const v2 = (onDrift) => paymentsAgent(script, { tools: [pay2, look, refund], onDrift });
  const events = [];
  const e = await v2(undefined).resume(roundTrip(ann.checkpoint), { decisions: { big: { type: 'approve', by: 'bob' } } }, { onEvent: (ev) => events.push(ev) }).catch((x) => x);
  assert.ok(e instanceof ConfigDriftError, e.message);
  assert.deepEqual([e.added, e.removed, e.changed], [['refund'], ['wipe'], ['pay']]);
  assert.deepEqual(e.checkpoint, roundTrip(ann.checkpoint), 'the checkpoint comes back as it was');
  assert.equal(events.at(-1).type, 'error');
  assert.deepEqual(events.at(-1).error.changed, ['pay']);
  // reapprove: Bob's approval of the old interrupt is set aside; the payment is asked again, fresh.
  const drift = [];
  const again = await v2('reapprove').resume(roundTrip(ann.checkpoint), { decisions: { big: { type: 'approve', by: 'bob' } } }, { onEvent: (ev) => drift.push(ev) });
  assert.deepEqual(drift.filter((ev) => ev.type === 'config-drift'), [{ type: 'config-drift', added: ['refund'], removed: ['wipe'], changed: ['pay'] }]);
  assert.equal(again.interrupted, true);
  assert.deepEqual(again.interrupts.map((i) => [i.id, i.approvals]), [['big', undefined]]);
  assert.ok(again.checkpoint.fingerprint.tools.refund, 'the new checkpoint records the new agent');
  const one = await v2('reapprove').resume(roundTrip(again.checkpoint), { decisions: { big: { type: 'approve', by: 'ann' } } });
  const done = await v2('reapprove').resume(roundTrip(one.checkpoint), { decisions: { big: { type: 'approve', by: 'bob' } } });
  assert.equal(done.text, 'ok');
  assert.deepEqual(runs, ['pay 900', 'look']);
  // 'continue' takes the old approvals as they are.
  reset();
  const cont = await v2('continue').resume(roundTrip(ann.checkpoint), { decisions: { big: { type: 'approve', by: 'bob' } } });
  assert.equal(cont.text, 'ok');
  assert.deepEqual(runs, ['pay 900', 'look']);
});

test('bad approval and budget options are ConfigErrors naming them', () => {
  const m = scriptedModel(['x']);
  // Refused when the agent is made (the .wasm is loaded) or at its first call (it is not yet).
  const check = async (config, re) => {
    const e = await (async () => agent({ model: m, ...config }).prompt('x'))().catch((x) => x);
    assert.ok(e instanceof ConfigError && re.test(e.message), e.message);
  };
  return Promise.all([
    check({ approval: 'ask' }, /config\.approval: expected a function/),
    check({ approvalPolicy: () => 'ask' }, /config\.approvalPolicy: unknown option; did you mean "approval"/),
    check({ budget: {} }, /config\.budget: give totalTokens/),
    check({ budget: { total: 5 } }, /did you mean "totalTokens"/),
    check({ budget: { totalTokens: -1 } }, /config\.budget\.totalTokens/),
    check({ budget: { totalTokens: 5, onExceeded: 'pause' } }, /config\.budget\.onExceeded: expected "error" or "ask", got "pause"/),
    check({ onDrift: 'ignore' }, /config\.onDrift: expected "error", "reapprove" or "continue", got "ignore"/),
  ]);
});

test("a budget that asks: the run pauses between turns on a 'budget' interrupt, a raise in another call continues it, a denial ends it", async () => {
  reset();
  const usage = { inputTokens: 40, outputTokens: 20 };
  const script = [
    { content: [toolUse('c1', 'look', {})], usage },
    { content: [toolUse('c2', 'look', {})], usage },
    { content: [{ type: 'text', text: 'done' }], usage },
  ];
  const a = () => paymentsAgent(script, { budget: { totalTokens: 100, onExceeded: 'ask' } });
  const paused = await a().prompt('go');
  assert.equal(paused.interrupted, true);
  assert.deepEqual(paused.interrupts.map(({ kind, id, input }) => ({ kind, id, input })), [
    { kind: 'budget', id: 'budget', input: { limit: 'totalTokens', budget: { totalTokens: 100 }, usage: { inputTokens: 80, outputTokens: 40 } } },
  ]);
  assert.match(paused.question, /80 input and 40 output tokens/);
  let e = await a().resume(roundTrip(paused.checkpoint)).catch((x) => x);
  assert.ok(e instanceof DecisionError && /token budget/.test(e.message), e.message);
  e = await a().resume(roundTrip(paused.checkpoint), { type: 'approve', budget: { totalTokens: 'lots' } }).catch((x) => x);
  assert.ok(e instanceof DecisionError && /budget\.totalTokens: expected a whole number/.test(e.message), e.message);
  const done = await a().resume(roundTrip(paused.checkpoint), { type: 'approve', budget: { totalTokens: 1000 } });
  assert.equal(done.text, 'done');
  assert.deepEqual(done.checkpoint.budget, { totalTokens: 1000 });
  assert.deepEqual(runs, ['look', 'look']);
  const denied = await a().resume(roundTrip(paused.checkpoint), { type: 'deny' }).catch((x) => x);
  assert.ok(denied instanceof BudgetExceededError, denied.message);
  assert.equal(denied.checkpoint.interrupts, undefined);
});
