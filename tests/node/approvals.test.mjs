// Approvals, structured questions, decisions, expiry, events and stream() through the npm package (issue 9).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  agent, agent as makeAgent, defineTool, InterruptError, isInterrupted, scriptedModel, memorySaver,
  DecisionError, InterruptExpiredError, AbortedError, ReleasedError, ConfigError,
} from 'resumable-agent';
import { recordingModel, toolUse, turn, text, resultsOf, assertProviderValid } from './helpers.mjs';

function gatedTools(log) {
  return [
    defineTool({
      name: 'send', description: 'Send a message.', needsApproval: true,
      schema: (s) => ({ to: s.string().required() }),
      handle: (input) => { log.push(['send', input]); return { sent: input.to }; },
    }),
    defineTool({
      name: 'charge', description: 'Charge a card.',
      needsApproval: async (input) => input.amount > 100,
      schema: (s) => ({ amount: s.number().required() }),
      handle: (input) => { log.push(['charge', input]); return 'charged'; },
    }),
    defineTool({
      name: 'lookup', schema: (s) => ({ key: s.string() }),
      handle: (input) => { log.push(['lookup', input]); return `v-${input.key}`; },
    }),
  ];
}

const gatedTurn = () => turn(toolUse('a1', 'send', { to: 'ann' }), toolUse('p1', 'lookup', { key: 'k' }), toolUse('a2', 'charge', { amount: 500 }));

describe('approvals', () => {
  test('two gated calls and a plain one: one pause, nothing runs; approve with edits + deny; each runs as decided', async () => {
    const log = [];
    const { model, requests } = recordingModel([gatedTurn(), text('Done.')]);
    const paused = await agent({ tools: gatedTools(log), model }).prompt('pay');
    assert.ok(isInterrupted(paused));
    assert.deepEqual(log, [], 'no call of the turn ran');
    assert.deepEqual(paused.interrupts, [
      { kind: 'approval', id: 'a1', toolName: 'send', input: { to: 'ann' } },
      { kind: 'approval', id: 'a2', toolName: 'charge', input: { amount: 500 } },
    ]);
    assert.equal(paused.question, 'Approve the call to send?');
    assert.equal(paused.checkpoint.pendingToolUseId, 'a1');
    const stored = JSON.parse(JSON.stringify(paused.checkpoint));
    const done = await agent({ tools: gatedTools(log), model }).resume(stored, {
      decisions: { a2: { type: 'deny', message: 'too expensive' }, a1: { type: 'approve', modifiedArgs: { to: 'bob' } } },
    });
    assert.equal(done.text, 'Done.');
    assert.deepEqual(log, [['send', { to: 'bob' }], ['lookup', { key: 'k' }]], 'send once, edited; charge never; lookup once');
    const results = resultsOf(requests[1].messages.at(-1));
    assert.deepEqual(results.map((r) => [r.toolUseId, r.isError ?? false]), [['a1', false], ['p1', false], ['a2', true]]);
    assert.equal(results[2].content, 'The user denied this call to charge; it did not run: too expensive');
    assert.deepEqual(requests[1].messages[1].content[0].input, { to: 'bob' }, 'the transcript shows the input it ran with');
    assertProviderValid(done.messages);
  });

  test('decisions as an array in interrupt order; needsApproval as a function decides per call', async () => {
    const log = [];
    const model = scriptedModel([turn(toolUse('c1', 'charge', { amount: 5 }), toolUse('c2', 'charge', { amount: 900 })), 'ok']);
    const paused = await agent({ tools: gatedTools(log), model }).prompt('x');
    assert.deepEqual(paused.interrupts.map((i) => i.id), ['c2'], 'only the call over 100 waits');
    const done = await agent({ tools: gatedTools(log), model }).resume(paused.checkpoint, { decisions: [{ type: 'approve' }] });
    assert.equal(done.text, 'ok');
    assert.deepEqual(log.map(([, i]) => i.amount), [5, 900]);
  });

  test('every malformed decision is a DecisionError naming the interrupt, before any tool or model call', async () => {
    const log = [];
    let modelCalls = 0;
    const base = recordingModel([gatedTurn()]);
    const paused = await agent({ tools: gatedTools(log), model: base.model }).prompt('pay');
    const model = async () => { modelCalls += 1; return text('never'); };
    const cases = [
      ['yes', 'a1', /resume with \{ decisions \}/],
      [{ decisions: [{ type: 'approve' }] }, 'a2', /expected 2 decision\(s\)/],
      [{ decisions: { a1: { type: 'approve' }, zz: { type: 'approve' } } }, 'zz', /no pending interrupt has this id/],
      [{ decisions: { a1: { type: 'approve' } } }, 'a2', /missing decision/],
      [{ decisions: [{ type: 'answer', text: 'hi' }, { type: 'approve' }] }, 'a1', /got "answer"/],
      [{ decisions: [{ type: 'approve', modifiedArgs: { to: 5 } }, { type: 'approve' }] }, 'a1', /modifiedArgs\.to: expected string, got integer/],
      [{ decisions: [{ type: 'approve', modifiedArgs: {} }, { type: 'approve' }] }, 'a1', /modifiedArgs: missing required property "to"/],
      // A decision given by its place names the interrupt at that place (issue 23: it named only the place).
      [{ decisions: [{ type: 'maybe' }, { type: 'approve' }] }, 'a1', /decisions\[0\]\.type: expected "approve", "deny", "answer", "accept", "decline" or "cancel", got "maybe"/],
      [{ decisions: [{ type: 'deny', message: 3 }, { type: 'approve' }] }, 'a1', /decisions\[0\]\.message: expected a string/],
      [{ decisions: [{ type: 'approve', extra: 1 }, { type: 'approve' }] }, 'a1', /decisions\[0\]\.extra: not a field/],
      [{ decisions: [{ id: 'a1', type: 'approve' }, { type: 'approve' }] }, undefined, /an id in every decision or in none/],
      [{ decisions: 5 }, undefined, /decisions: expected an array or an object keyed by interrupt id/],
      [42, undefined, /answer: expected a string, a decision \{ type, \.\.\. \} or \{ decisions \}, got number/],
      // A forgotten answer is not an answer (issue 24), and one decision answers one interrupt only.
      [undefined, 'a1', /no answer given, but the run waits for approval of "a1", "a2"/],
      [null, 'a1', /no answer given, but the run waits for approval of/],
      [{ type: 'approve' }, 'a2', /expected 2 decision\(s\)/],
    ];
    for (const [answer, id, message] of cases) {
      const err = await agent({ tools: gatedTools(log), model }).resume(paused.checkpoint, answer).catch((e) => e);
      assert.ok(err instanceof DecisionError, `${JSON.stringify(answer)} -> ${err}`);
      assert.equal(err.interruptId, id, JSON.stringify(answer));
      assert.match(err.message, message);
    }
    assert.deepEqual(log, []);
    assert.equal(modelCalls, 0);
  });

  test('structured questions: options and data reach the caller; answered by text or an answer decision', async () => {
    const tools = [defineTool({
      name: 'pick', handle: () => { throw new InterruptError('Which plan?', { options: ['basic', 'pro'], data: { prices: [5, 20] } }); },
    })];
    const model = scriptedModel([turn(toolUse('q', 'pick', {})), (req) => `chose ${req.messages.at(-1).content[0].content}`]);
    const paused = await agent({ tools, model }).prompt('go');
    assert.deepEqual(paused.interrupts, [{ kind: 'question', id: 'q', toolName: 'pick', input: {}, question: 'Which plan?', options: ['basic', 'pro'], data: { prices: [5, 20] } }]);
    assert.equal((await agent({ tools, model }).resume(paused.checkpoint, 'pro')).text, 'chose pro');
    assert.equal((await agent({ tools, model }).resume(paused.checkpoint, { decisions: { q: { type: 'answer', text: 'basic' } } })).text, 'chose basic');
    assert.throws(() => new InterruptError('q', { options: [1] }), ConfigError);
  });

  test('after an approval with modifiedArgs, result.messages is the checkpoint\'s: the input that ran, also when the next answer is a plain string', async () => {
    const log = [];
    const send = defineTool({ name: 'send', schema: (s) => ({ to: s.string().required() }), needsApproval: true, handle: (i) => { log.push(i); return `sent to ${i.to}`; } });
    const model = scriptedModel([turn(toolUse('s1', 'send', { to: 'bob' })), 'done']);
    const paused = await agent({ tools: [send], model }).prompt('x');
    const r = await agent({ tools: [send], model }).resume(paused.checkpoint, { decisions: [{ type: 'approve', modifiedArgs: { to: 'ann' } }] });
    assert.deepEqual(r.messages, r.checkpoint.messages);
    assert.deepEqual(r.messages[1].content[0].input, { to: 'ann' });
    assert.deepEqual(log, [{ to: 'ann' }]);
  });

  test('a question: no answer (or null) is a DecisionError naming it; a single decision answers or denies it directly', async () => {
    let ran = 0;
    const tools = [defineTool({ name: 'ask', handle: () => { ran += 1; throw new InterruptError('Which day?'); } })];
    const model = scriptedModel([turn(toolUse('q', 'ask', {})), (req) => `got ${JSON.stringify(req.messages.at(-1).content[0])}`]);
    const paused = await agent({ tools, model }).prompt('go');
    for (const answer of [undefined, null]) {
      const err = await agent({ tools, model }).resume(paused.checkpoint, answer).catch((e) => e);
      assert.ok(err instanceof DecisionError, `${answer} -> ${err}`);
      assert.equal(err.interruptId, 'q');
      assert.match(err.message, /no answer given, but the run waits for an answer to "Which day\?"/);
    }
    const answered = await agent({ tools, model }).resume(paused.checkpoint, { type: 'answer', text: 'Friday' });
    assert.match(answered.text, /"content":"Friday"/);
    const denied = await agent({ tools, model }).resume(paused.checkpoint, { type: 'deny', message: 'not telling' });
    assert.match(denied.text, /not telling/);
    assert.match(denied.text, /"isError":true/);
    // An empty string is an answer, given on purpose.
    assert.match((await agent({ tools, model }).resume(paused.checkpoint, '')).text, /"content":""/);
    assert.equal(ran, 1, 'the asking tool ran once, for the pause');
  });

  test('expiry: onExpire "deny" answers with a denial; the default fails with InterruptExpiredError carrying the checkpoint', async () => {
    const log = [];
    const mk = (onExpire) => [defineTool({
      name: 'send', needsApproval: { expiresInMs: 1 }, ...(onExpire ? { onExpire } : {}),
      handle: (i) => { log.push(i); return 'sent'; },
    })];
    const model = scriptedModel([turn(toolUse('s', 'send', {})), (req) => req.messages.at(-1).content[0].content]);
    const paused = await agent({ tools: mk('deny'), model }).prompt('x');
    assert.equal(typeof paused.interrupts[0].expiresAt, 'number');
    await new Promise((r) => setTimeout(r, 10));
    const denied = await agent({ tools: mk('deny'), model }).resume(paused.checkpoint, { decisions: [{ type: 'approve' }] });
    assert.match(denied.text, /approval request expired/);
    // The tool's onExpire differs from the one the run paused under: a change of its approval rule, taken as it is.
    const err = await agent({ tools: mk(), model, onDrift: 'continue' }).resume(paused.checkpoint, { decisions: [{ type: 'approve' }] }).catch((e) => e);
    assert.ok(err instanceof InterruptExpiredError, err.message);
    assert.equal(err.interruptId, 's');
    assert.deepEqual(err.checkpoint, paused.checkpoint);
    assert.deepEqual(log, []);
    assert.throws(() => defineTool({ name: 'x', handle: () => 1, onExpire: 'later' }), ConfigError);
    assert.throws(() => defineTool({ name: 'x', handle: () => 1, needsApproval: 'yes' }), ConfigError);
  });
});

describe('events', () => {
  const threeSteps = () => scriptedModel([turn(toolUse('l1', 'lookup', { key: 'a' })), turn(toolUse('l2', 'lookup', { key: 'b' })), { content: [{ type: 'text', text: 'fin' }], usage: { inputTokens: 2, outputTokens: 1 } }]);

  test('stream(): the event sequence of a three-step run; done carries what prompt() returns; events are plain JSON', async () => {
    const events = [];
    for await (const e of agent({ tools: gatedTools([]), model: threeSteps() }).stream({ prompt: 'go' })) events.push(e);
    // The scripted model streams: each call's input as one tool-call-delta, text word by word.
    const step = ['step-start', 'tool-call-delta', 'step-finish', 'checkpoint', 'tool-call', 'tool-result', 'checkpoint'];
    assert.deepEqual(events.map((e) => e.type), ['checkpoint', ...step, ...step, 'step-start', 'text-delta', 'step-finish', 'checkpoint', 'done']);
    assert.deepEqual(events[2], { type: 'tool-call-delta', step: 1, id: 'l1', toolName: 'lookup', inputDelta: '{"key":"a"}' });
    assert.deepEqual(events.at(-4), { type: 'text-delta', step: 3, text: 'fin' });
    for (const e of events) assert.deepEqual(JSON.parse(JSON.stringify(e)), e);
    const plain = await agent({ tools: gatedTools([]), model: threeSteps() }).prompt('go');
    const done = events.at(-1).result;
    assert.equal(done.text, plain.text);
    assert.deepEqual(done.messages, plain.messages);
    assert.deepEqual(events[1], { type: 'step-start', step: 1 });
    assert.deepEqual(events.at(-3), { type: 'step-finish', step: 3, content: [{ type: 'text', text: 'fin' }], usage: { inputTokens: 2, outputTokens: 1 } });
    assert.deepEqual(events[5], { type: 'tool-call', id: 'l1', toolName: 'lookup', input: { key: 'a' } });
    assert.deepEqual(events[6], { type: 'tool-result', id: 'l1', toolName: 'lookup', content: 'v-a' });
    const viaCallback = [];
    await agent({ tools: gatedTools([]), model: threeSteps() }).prompt('go', { onEvent: (e) => viaCallback.push(e.type) });
    assert.deepEqual(viaCallback, events.map((e) => e.type), 'a callback gets the same events, done last');
  });

  // One at a time (a checkpoint after each call) and run together (one after the calls of a turn).
  for (const [toolConcurrency, atLeast] of [[1, 11], [undefined, 7]]) test(`resuming from any checkpoint event gives the same final transcript (toolConcurrency ${toolConcurrency ?? 'all'})`, async () => {
    const model = scriptedModel([gatedTurn(), turn(toolUse('q', 'ask', {}), toolUse('l9', 'lookup', { key: 'z' })), 'finished']);
    const agent = (config) => makeAgent({ ...config, toolConcurrency });
    const tools = () => [...gatedTools([]), defineTool({ name: 'ask', handle: () => { throw new InterruptError('Sure?'); } })];
    const answerFor = (r) => (r.interrupts?.[0]?.kind === 'approval' ? { decisions: r.interrupts.map(() => ({ type: 'approve' })) } : 'yes');
    const checkpoints = [];
    const onEvent = (e) => { if (e.type === 'checkpoint') checkpoints.push(JSON.stringify(e.checkpoint)); };
    let r = await agent({ tools: tools(), model }).prompt('go', { onEvent });
    while (isInterrupted(r)) r = await agent({ tools: tools(), model }).resume(r.checkpoint, answerFor(r), { onEvent });
    assert.ok(checkpoints.length >= atLeast, String(checkpoints.length));
    for (const [k, cp] of checkpoints.entries()) {
      const parsed = JSON.parse(cp);
      let s = await agent({ tools: tools(), model }).resume(cp, parsed.interrupts ? answerFor(parsed) : '');
      while (isInterrupted(s)) s = await agent({ tools: tools(), model }).resume(s.checkpoint, answerFor(s));
      assert.deepEqual(s.messages, r.messages, `from checkpoint event ${k}`);
    }
  });

  test('an error ends the stream with an error event carrying the checkpoint; .result rejects with the typed error', async () => {
    let n = 0;
    const model = async () => { n += 1; if (n === 1) return turn(toolUse('l1', 'lookup', { key: 'a' })); throw new Error('overloaded'); };
    const s = agent({ tools: gatedTools([]), model }).stream({ prompt: 'go' });
    const events = [];
    for await (const e of s) events.push(e);
    const last = events.at(-1);
    assert.equal(last.type, 'error');
    assert.equal(last.error.name, 'ModelError');
    assert.match(last.error.message, /overloaded/);
    assert.equal(last.checkpoint.messages.length, 3);
    await assert.rejects(s.result, (e) => e.name === 'ModelError' && e.checkpoint.messages.length === 3);
    // The same as a callback of prompt(): the error is its last event (issue 21: it used to be missing).
    n = 0;
    const seen = [];
    const err = await agent({ tools: gatedTools([]), model }).prompt('go', { onEvent: (e) => seen.push(e) }).catch((e) => e);
    assert.equal(err.name, 'ModelError');
    assert.equal(seen.at(-1).type, 'error');
    assert.equal(seen.at(-1).error.name, 'ModelError');
    assert.equal(seen.at(-1).checkpoint.messages.length, 3);
    assert.deepEqual(seen.map((e) => e.type), events.map((e) => e.type));
  });

  test('leaving the loop early stops the run at its next step; signal does the same for prompt()', async () => {
    let calls = 0;
    const model = async () => { calls += 1; return turn(toolUse(`l${calls}`, 'lookup', { key: 'x' })); };
    const s = agent({ tools: gatedTools([]), model, maxIterations: 50 }).stream({ prompt: 'go' });
    for await (const e of s) if (e.type === 'step-finish') break;
    const err = await s.result.catch((e) => e);
    assert.ok(err instanceof AbortedError, String(err));
    assert.ok(calls <= 2, `stopped early (${calls} model calls)`);
    const controller = new AbortController();
    const err2 = await agent({ tools: gatedTools([]), model: async () => { controller.abort(); return turn(toolUse('z', 'lookup', {})); } })
      .prompt('go', { signal: controller.signal }).catch((e) => e);
    assert.ok(err2 instanceof AbortedError);
    assert.equal(err2.checkpoint.messages.length, 2, 'the model answer is kept');
  });

  test('sessions: reply with decisions; checkpoint-loaded and checkpoint-saved events', async () => {
    const log = [];
    const saver = memorySaver();
    const model = scriptedModel([gatedTurn(), 'Done.']);
    const a = agent({ tools: gatedTools(log), model });
    const paused = await a.session(saver, 's').prompt('pay');
    assert.deepEqual(paused.interrupts.map((i) => i.id), ['a1', 'a2']);
    const types = [];
    const done = await a.session(saver, 's').reply({ decisions: [{ type: 'approve' }, { type: 'deny' }] }, { onEvent: (e) => types.push(e.type) });
    assert.equal(done.text, 'Done.');
    assert.equal(types[0], 'checkpoint-loaded');
    assert.deepEqual(types.filter((t) => t.startsWith('approval')), ['approval-response', 'approval-response']);
    assert.equal(await saver.get('s'), null, 'deleted on completion');
    const streamed = [];
    for await (const e of a.session(saver, 't').stream({ prompt: 'pay' })) streamed.push(e.type);
    assert.deepEqual(streamed.slice(-2), ['interrupt', 'done']);
    // Saved after every step: each checkpoint event follows its save.
    streamed.forEach((t, i) => { if (t === 'checkpoint') assert.equal(streamed[i - 1], 'checkpoint-saved', `event ${i}`); });
  });
});

describe('release', () => {
  test('free() and Symbol.dispose release agents, sessions and savers; later calls are ReleasedError, detached methods ConfigError', async () => {
    const a = agent({ model: scriptedModel(['hi']) });
    const saver = memorySaver();
    const session = a.session(saver, 'x');
    const prompt = a.prompt;
    await assert.rejects(prompt('x'), ConfigError);
    a[Symbol.dispose ?? Symbol.for('Symbol.dispose')]();
    await assert.rejects(a.prompt('x'), ReleasedError);
    assert.throws(() => a.session(saver, 'y'), ReleasedError);
    assert.equal((await session.prompt('a session holds what it needs: freeing its agent does not stop it')).text, 'hi');
    saver.free();
    await assert.rejects(saver.get('x'), ReleasedError);
    await assert.rejects(session.reply('x'), ReleasedError);
  });
});
