// The whole JS contract of the npm package, through the real wasm build.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as pkg from 'resumable-agent';
import {
  agent, defineTool, InterruptError, isInterrupted, assertComplete, scriptedModel, memorySaver,
  AgentError, CheckpointError, ConfigError, MaxIterationsError, ModelError, RunInterruptedError,
} from 'resumable-agent';
import { recordingModel, toolUse, turn, text, resultsOf, assertProviderValid } from './helpers.mjs';

function tools(log = []) {
  return [
    defineTool({
      name: 'lookup',
      description: 'Look a key up.',
      schema: (s) => ({ key: s.string().required().describe('the key') }),
      handle: async ({ key }) => { log.push(`lookup:${key}`); return { key, value: `v-${key}` }; },
    }),
    defineTool({
      name: 'ask_user',
      description: 'Ask the human.',
      schema: (s) => ({ question: s.string().required() }),
      handle: ({ question }) => { log.push(`ask:${question}`); throw new InterruptError(question); },
    }),
    defineTool({
      name: 'fail',
      description: 'Fails.',
      schema: { type: 'object', properties: {} },
      handle: () => { log.push('fail'); throw new TypeError('disk on fire'); },
    }),
  ];
}

const isPlainJson = (v) => {
  if (v === null || typeof v !== 'object') return v !== undefined && typeof v !== 'function' && typeof v !== 'bigint';
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== Array.prototype) return false;
  return Object.values(v).every(isPlainJson);
};

describe('exports', () => {
  test('everything the reference exports, plus our errors and savers', () => {
    for (const name of ['agent', 'defineTool', 'InterruptError', 'isInterrupted', 'assertComplete', 'scriptedModel',
      'memorySaver', 'AgentError', 'CheckpointError', 'ConfigError', 'MaxIterationsError', 'ModelError', 'RunInterruptedError']) {
      assert.equal(typeof pkg[name], 'function', name);
    }
    assert.equal('initSync' in pkg, false, 'no init call is needed, nor exposed');
  });
});

describe('rule 1: the loop', () => {
  test('text-only answer completes; text blocks joined; usage and iterations', async () => {
    const { model, requests } = recordingModel([
      { content: [{ type: 'text', text: 'Hello, ' }, { type: 'text', text: 'world.' }], usage: { inputTokens: 7, outputTokens: 2 } },
    ]);
    const r = await agent({ instructions: 'Be brief.', tools: tools(), model }).prompt('Hi');
    assert.equal(isInterrupted(r), false);
    assert.equal(r.text, 'Hello, world.');
    assert.deepEqual(r.usage, { inputTokens: 7, outputTokens: 2 });
    assert.equal(r.iterations, 1);
    assert.deepEqual(r.messages, [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: [{ type: 'text', text: 'Hello, ' }, { type: 'text', text: 'world.' }] }]);
    assert.equal(requests[0].system, 'Be brief.');
    assert.deepEqual(requests[0].tools.map((t) => t.name), ['lookup', 'ask_user', 'fail']);
    assert.deepEqual(requests[0].tools[0].inputSchema, {
      type: 'object', properties: { key: { type: 'string', description: 'the key' } }, required: ['key'],
    });
    assert.equal(requests[0].tools[0].description, 'Look a key up.');
  });

  test('calls run in order, answered in one message; unknown tool and thrown error become isError results', async () => {
    const log = [];
    const { model, requests } = recordingModel([
      turn(toolUse('a', 'lookup', { key: 'x' }), toolUse('b', 'nope', {}), toolUse('c', 'fail', {}), toolUse('d', 'lookup', { key: 'y' })),
      text('done'),
    ]);
    const r = await agent({ tools: tools(log), model }).prompt('go');
    assert.equal(r.text, 'done');
    assert.deepEqual(log, ['lookup:x', 'fail', 'lookup:y']);
    const results = resultsOf(requests[1].messages[2]);
    assert.deepEqual(results.map((b) => b.toolUseId), ['a', 'b', 'c', 'd']);
    assert.equal(results[0].content, '{"key":"x","value":"v-x"}');
    assert.equal(results[0].isError, undefined);
    assert.equal(results[1].isError, true);
    assert.match(results[1].content, /unknown tool "nope"/);
    assert.deepEqual([results[2].content, results[2].isError], ['disk on fire', true]);
  });

  test('tool outputs: strings as is, other JSON encoded, sync or async, undefined as empty', async () => {
    const outputs = { s: 'plain "text"', n: 42, o: { a: [1, null] }, u: undefined, nul: null, b: false };
    const t = Object.entries(outputs).map(([name, value]) => defineTool({
      name, schema: { type: 'object' }, handle: name === 'o' ? async () => value : () => value,
    }));
    const { model, requests } = recordingModel([turn(...Object.keys(outputs).map((k) => toolUse(k, k, {}))), text('ok')]);
    await agent({ tools: t, model }).prompt('go');
    assert.deepEqual(resultsOf(requests[1].messages[2]).map((b) => b.content), ['plain "text"', '42', '{"a":[1,null]}', '', 'null', 'false']);
  });

  test('a tool result JSON cannot encode is an error result, not a crash', async () => {
    const cyclic = {}; cyclic.self = cyclic;
    const t = [defineTool({ name: 'cyc', handle: () => cyclic }), defineTool({ name: 'big', handle: () => 10n })];
    const { model, requests } = recordingModel([turn(toolUse('a', 'cyc', {}), toolUse('b', 'big', {})), text('ok')]);
    await agent({ tools: t, model }).prompt('go');
    const [a, b] = resultsOf(requests[1].messages[2]);
    assert.equal(a.isError, true);
    assert.match(a.content, /not JSON-serializable/);
    assert.equal(b.isError, true);
  });

  test('the tool gets its input and { toolUseId, runId }; runId is stable across resume', async () => {
    const seen = [];
    const t = [defineTool({
      name: 'probe', schema: (s) => ({ n: s.integer() }),
      handle: (input, ctx) => { seen.push({ input, ...ctx }); if (seen.length === 1) throw new InterruptError('more?'); return 'ok'; },
    })];
    const model = scriptedModel([turn(toolUse('p1', 'probe', { n: 1 })), turn(toolUse('p2', 'probe', { n: 2 })), 'end']);
    const paused = await agent({ tools: t, model }).prompt('go');
    const done = await agent({ tools: t, model }).resume(JSON.parse(JSON.stringify(paused.checkpoint)), 'yes');
    assert.equal(done.text, 'end');
    assert.deepEqual(seen.map((s) => [s.input, s.toolUseId]), [[{ n: 1 }, 'p1'], [{ n: 2 }, 'p2']]);
    assert.match(seen[0].runId, /^[0-9a-f]{32}$/);
    assert.equal(seen[1].runId, seen[0].runId);
    assert.equal(done.checkpoint.runId, seen[0].runId);
  });

  test('the model gets a copy: mutating request.messages changes nothing', async () => {
    const { model, requests } = recordingModel([
      (req) => { req.messages.length = 0; req.messages.push({ role: 'user', content: 'hijack' }); return turn(toolUse('a', 'lookup', { key: 'k' })); },
      text('done'),
    ]);
    const r = await agent({ tools: tools(), model }).prompt('go');
    assert.equal(r.messages[0].content, 'go');
    assert.equal(requests[1].messages.length, 3);
    assert.equal(requests[1].messages[0].content, 'go');
  });
});

describe('rule 2/3: interrupts and resume', () => {
  const threeCalls = () => turn(toolUse('c1', 'lookup', { key: 'k1' }), toolUse('c2', 'ask_user', { question: 'Your deadline?' }), toolUse('c3', 'lookup', { key: 'k3' }));

  test('parallel calls with an interrupt in the middle, one at a time (the reference\'s order): kept, paused, resumed, none repeated', async () => {
    const log = [];
    const { model, requests } = recordingModel([threeCalls(), text('Planned.')]);
    const cfg = { tools: tools(log), model, toolConcurrency: 1 };
    const paused = await agent(cfg).prompt('Plan');
    assert.ok(isInterrupted(paused));
    assert.equal(paused.interrupted, true);
    assert.equal(paused.question, 'Your deadline?');
    assert.equal(paused.checkpoint.pendingToolUseId, 'c2');
    assert.equal(paused.checkpoint.question, 'Your deadline?');
    assert.deepEqual(paused.checkpoint.toolResults, [{ toolUseId: 'c1', content: '{"key":"k1","value":"v-k1"}' }]);
    assert.deepEqual(log, ['lookup:k1', 'ask:Your deadline?'], 'c3 has not run');

    const done = await agent({ ...cfg, tools: tools(log) }).resume(JSON.parse(JSON.stringify(paused.checkpoint)), 'end of Q2');
    assert.equal(done.text, 'Planned.');
    assert.deepEqual(log, ['lookup:k1', 'ask:Your deadline?', 'lookup:k3']);
    const results = resultsOf(requests[1].messages[2]);
    assert.deepEqual(results.map((b) => [b.toolUseId, b.content]), [
      ['c1', '{"key":"k1","value":"v-k1"}'], ['c2', 'end of Q2'], ['c3', '{"key":"k3","value":"v-k3"}'],
    ]);
    assertProviderValid(done.messages);
    assert.equal(done.checkpoint.pendingToolUseId, undefined);
    assert.equal('toolResults' in done.checkpoint, false);
  });

  test('parallel calls with an interrupt in the middle, run together (the default): the others finish, none repeated', async () => {
    const log = [];
    const { model, requests } = recordingModel([threeCalls(), text('Planned.')]);
    const paused = await agent({ tools: tools(log), model }).prompt('Plan');
    assert.equal(paused.question, 'Your deadline?');
    assert.equal(paused.checkpoint.pendingToolUseId, 'c2');
    assert.deepEqual(paused.checkpoint.toolResults, [
      { toolUseId: 'c1', content: '{"key":"k1","value":"v-k1"}' }, { toolUseId: 'c3', content: '{"key":"k3","value":"v-k3"}' },
    ]);
    assert.deepEqual(log, ['lookup:k1', 'ask:Your deadline?', 'lookup:k3'], 'c3 ran beside the question');
    const done = await agent({ tools: tools(log), model }).resume(JSON.parse(JSON.stringify(paused.checkpoint)), 'end of Q2');
    assert.equal(done.text, 'Planned.');
    assert.deepEqual(log, ['lookup:k1', 'ask:Your deadline?', 'lookup:k3'], 'none ran again');
    assert.deepEqual(resultsOf(requests[1].messages[2]).map((b) => [b.toolUseId, b.content]), [
      ['c1', '{"key":"k1","value":"v-k1"}'], ['c2', 'end of Q2'], ['c3', '{"key":"k3","value":"v-k3"}'],
    ]);
    assertProviderValid(done.messages);
  });

  test('two interrupts in one turn: both questions are asked, in order', async () => {
    const model = scriptedModel([turn(toolUse('q1', 'ask_user', { question: 'First?' }), toolUse('q2', 'ask_user', { question: 'Second?' })), 'ok']);
    const cfg = { tools: tools(), model };
    const r1 = await agent(cfg).prompt('go');
    assert.equal(r1.question, 'First?');
    const r2 = await agent(cfg).resume(r1.checkpoint, 'one');
    assert.equal(r2.question, 'Second?');
    const r3 = await agent(cfg).resume(r2.checkpoint, 'two');
    assert.deepEqual(resultsOf(r3.messages[2]).map((b) => b.content), ['one', 'two']);
  });

  test('InterruptError: an Error subclass; subclasses and async rejections pause; look-alikes do not', async () => {
    const e = new InterruptError('Q?');
    assert.ok(e instanceof Error);
    assert.ok(e instanceof InterruptError);
    assert.equal(e.name, 'InterruptError');
    assert.equal(e.message, 'Q?');
    assert.equal(e.question, 'Q?');
    // Its stack keeps the throw site only; the caller's stackTraceLimit is left as it was, even when the
    // question cannot be made a string.
    const before = Error.stackTraceLimit;
    const throwSite = () => new InterruptError('Where?');
    assert.match(throwSite().stack, /^InterruptError: Where\?\n {4}at throwSite \(.*contract\.test\.mjs:\d+:\d+\)$/);
    assert.throws(() => new InterruptError({ toString() { throw new RangeError('no text'); } }), RangeError);
    assert.equal(Error.stackTraceLimit, before);
    assert.ok(new Error('x').stack.split('\n').length > 2, 'other errors keep their frames');
    class AskAgain extends InterruptError {}
    assert.ok(new AskAgain('x') instanceof InterruptError);
    assert.equal(new InterruptError('x') instanceof AskAgain, false);
    class Fake extends Error { constructor(m) { super(m); this.name = 'InterruptError'; } }
    const t = [
      defineTool({ name: 'sub', handle: () => { throw new AskAgain('from subclass'); } }),
      defineTool({ name: 'rej', handle: () => Promise.reject(new InterruptError('from rejection')) }),
      defineTool({ name: 'fake', handle: () => { throw new Fake('not a pause'); } }),
    ];
    const model = scriptedModel([turn(toolUse('a', 'fake', {}), toolUse('b', 'sub', {}), toolUse('c', 'rej', {})), 'ok']);
    const r1 = await agent({ tools: t, model }).prompt('go');
    assert.equal(r1.question, 'from subclass');
    assert.deepEqual(r1.checkpoint.toolResults, [{ toolUseId: 'a', content: 'not a pause', isError: true }]);
    const r2 = await agent({ tools: t, model }).resume(r1.checkpoint, 'x');
    assert.equal(r2.question, 'from rejection');
  });

  test('resume accepts the checkpoint as JSON text', async () => {
    const model = scriptedModel([threeCalls(), 'fine']);
    const paused = await agent({ tools: tools(), model }).prompt('x');
    const done = await agent({ tools: tools(), model }).resume(JSON.stringify(paused.checkpoint), 'a');
    assert.equal(done.text, 'fine');
  });
});

describe('rule 4/5: resume without a pending call, counting', () => {
  test('a non-empty answer is a new user turn; iterations and usage add up', async () => {
    const { model, requests } = recordingModel([
      { content: [{ type: 'text', text: 'one' }], usage: { inputTokens: 10, outputTokens: 1 } },
      { content: [{ type: 'text', text: 'two' }], usage: { inputTokens: 20, outputTokens: 2 } },
    ]);
    const r1 = await agent({ model }).prompt('first');
    const r2 = await agent({ model }).resume(r1.checkpoint, 'second');
    assert.equal(r2.text, 'two');
    assert.equal(r2.iterations, 2);
    assert.deepEqual(r2.usage, { inputTokens: 30, outputTokens: 3 });
    assert.deepEqual(requests[1].messages.at(-1), { role: 'user', content: 'second' });
  });

  test('maxIterations bounds the total across resumes; the error carries the checkpoint', async () => {
    const model = scriptedModel([
      turn(toolUse('l', 'lookup', { key: 'a' })), turn(toolUse('q', 'ask_user', { question: 'go on?' })),
      turn(toolUse('m', 'lookup', { key: 'b' })), 'finally',
    ]);
    const paused = await agent({ tools: tools(), model, maxIterations: 3 }).prompt('x');
    assert.equal(paused.checkpoint.iterations, 2);
    const err = await agent({ tools: tools(), model, maxIterations: 3 }).resume(paused.checkpoint, 'yes').catch((e) => e);
    assert.ok(err instanceof MaxIterationsError);
    assert.ok(err instanceof AgentError);
    assert.equal(err.name, 'MaxIterationsError');
    assert.equal(err.maxIterations, 3);
    assert.equal(err.checkpoint.iterations, 3);
    assert.ok(isPlainJson(err.checkpoint));
    const done = await agent({ tools: tools(), model, maxIterations: 4 }).resume(err.checkpoint, '');
    assert.equal(done.text, 'finally');
    assert.equal(done.iterations, 4);
  });
});

describe('checkpoints', () => {
  test('plain JSON: survives JSON.parse(JSON.stringify(c)) unchanged, no undefined, no class instances', async () => {
    const model = scriptedModel([turn(toolUse('c1', 'lookup', { key: 'k' }), toolUse('c2', 'ask_user', { question: 'Q?' })), 'end']);
    const paused = await agent({ tools: tools(), model }).prompt('x');
    for (const c of [paused.checkpoint]) {
      assert.ok(isPlainJson(c));
      assert.deepEqual(JSON.parse(JSON.stringify(c)), c);
      assert.equal(c.version, 2);
      assert.deepEqual(c.usage, { inputTokens: 0, outputTokens: 0 });
      assert.equal(typeof c.createdAt, 'number');
    }
    const done = await agent({ tools: tools(), model }).resume(paused.checkpoint, 'a');
    assert.ok(isPlainJson(done.checkpoint));
    assert.deepEqual(JSON.parse(JSON.stringify(done.checkpoint)), done.checkpoint);
    done.messages.push({ role: 'user', content: 'mine' });
    assert.equal(done.checkpoint.messages.length, 4, 'messages is a separate copy');
  });

  test('a checkpoint in the reference format (no version) resumes', async () => {
    const reference = {
      messages: [
        { role: 'user', content: 'Plan my project.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'ask_user', input: { question: 'Your deadline?' } }] },
      ],
      iterations: 1,
      usage: { inputTokens: 30, outputTokens: 9 },
      pendingToolUseId: 'toolu_01',
    };
    const { model, requests } = recordingModel([{ content: [{ type: 'text', text: 'ok' }], usage: { inputTokens: 5, outputTokens: 1 } }]);
    const done = await agent({ tools: tools(), model }).resume(reference, 'end of Q2');
    assert.equal(done.text, 'ok');
    assert.equal(done.iterations, 2);
    assert.deepEqual(done.usage, { inputTokens: 35, outputTokens: 10 });
    assert.deepEqual(requests[0].messages[2], { role: 'user', content: [{ type: 'tool_result', toolUseId: 'toolu_01', content: 'end of Q2' }] });
    assert.equal(done.checkpoint.version, 2);
  });

  test('malformed checkpoints throw CheckpointError naming the path, before any model or tool call', async () => {
    const base = { iterations: 0, usage: { inputTokens: 0, outputTokens: 0 } };
    const cases = [
      [{ ...base, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: [{ type: 'foo' }] }] },
        'messages[2].content[0].type', /unknown block type "foo"/],
      [{ ...base, messages: 'nope' }, 'messages', /expected an array, got string/],
      [{ ...base, messages: [], usage: { inputTokens: -1, outputTokens: 0 } }, 'usage.inputTokens', /non-negative integer/],
      [{ ...base, messages: [{ role: 'user', content: 'a' }], pendingToolUseId: 'x' }, 'pendingToolUseId', /no tool calls to answer/],
      [{ ...base, version: 99, messages: [] }, 'version', /version 99 is newer than this library supports/],
      [null, 'checkpoint', /expected a checkpoint object or its JSON text, got null/],
      ['{"messages": [', undefined, /not valid JSON/],
    ];
    let calls = 0;
    const model = async () => { calls += 1; return { content: [] }; };
    for (const [cp, path, message] of cases) {
      const err = await agent({ tools: tools(), model }).resume(cp, 'answer').catch((e) => e);
      assert.ok(err instanceof CheckpointError, `${JSON.stringify(cp)} -> ${err}`);
      assert.equal(err.name, 'CheckpointError');
      assert.equal(err.path, path);
      assert.match(err.message, message);
    }
    assert.equal(calls, 0);
  });

  test('a model that throws gives ModelError with the last consistent checkpoint and the cause', async () => {
    const log = [];
    const boom = new Error('upstream overloaded');
    let n = 0;
    const model = async () => {
      n += 1;
      if (n === 1) return turn(toolUse('l', 'lookup', { key: 'a' }));
      if (n === 2) throw boom;
      return text('recovered');
    };
    const err = await agent({ tools: tools(log), model }).prompt('go').catch((e) => e);
    assert.ok(err instanceof ModelError);
    assert.equal(err.cause, boom);
    assert.match(err.message, /upstream overloaded/);
    assert.equal(err.checkpoint.messages.length, 3, 'the tool result is kept');
    const done = await agent({ tools: tools(log), model }).resume(err.checkpoint, '');
    assert.equal(done.text, 'recovered');
    assert.deepEqual(log, ['lookup:a'], 'not repeated');
  });

  test('an invalid model response is a ModelError naming the path', async () => {
    const model = async () => ({ content: [{ type: 'tool_use', name: 'lookup', input: {} }] });
    const err = await agent({ tools: tools(), model }).prompt('go').catch((e) => e);
    assert.ok(err instanceof ModelError);
    assert.match(err.message, /content\[0\]\.id: missing/);
    const none = await agent({ model: async () => undefined }).prompt('go').catch((e) => e);
    assert.match(none.message, /expected an object \{ content, usage\? \}, got undefined/);
  });
});

describe('helpers and config', () => {
  test('the instructions reach a JS model as given, long and non-ASCII ones too; none gives no system', async () => {
    const long = `Réponds brièvement. 回答は短く。 ${'x'.repeat(10_000)} 😀`;
    const seen = [];
    const model = async (req) => { seen.push(req.system); return { content: [{ type: 'text', text: 'ok' }] }; };
    await agent({ instructions: long, model }).prompt('hi');
    await agent({ instructions: '', model }).prompt('hi');
    await agent({ model }).prompt('hi');
    assert.equal(seen[0], long);
    assert.equal(seen[1], '');
    assert.equal(seen[2], undefined);
  });

  test('agents with the same config share its checked rules, never its functions, state or keys', async () => {
    // Built per request from one config, as a Worker does: each agent calls its own handle and model, and
    // starts from the config's state whatever an earlier run set.
    const make = (tag, extra = {}) => agent({
      instructions: 'Same.',
      tools: [defineTool({ name: 'who', description: 'd', schema: { type: 'object' }, handle: (_, ctx) => {
        const seen = ctx.state.n;
        ctx.setState({ n: seen + 1 });
        return `handled by ${tag} at ${seen}`;
      } })],
      model: scriptedModel([turn(toolUse('c1', 'who', {})), `model ${tag}`]),
      state: { n: 1 },
      ...extra,
    });
    for (const tag of ['a', 'b', 'c']) {
      const r = await make(tag).prompt('go');
      assert.equal(r.text, `model ${tag}`);
      assert.equal(resultsOf(r.messages[2])[0].content, `handled by ${tag} at 1`);
      assert.deepEqual(r.checkpoint.state, { n: 2 });
      assert.equal(r.checkpoint.signature, undefined, 'no keys, no signature');
    }
    // Keys are the agent's own, not the config's: the same config with keys signs, and the next without does not.
    const signed = await make('k', { checkpointKeys: { current: 'k1', keys: { k1: 'a secret of enough length' } } }).prompt('go');
    assert.equal(signed.checkpoint.signature?.kid, 'k1');
    assert.equal((await make('d').prompt('go')).checkpoint.signature, undefined);
    // More configurations than are kept, and one too large to keep: each run calls its own config's tool,
    // which only that config's rules know (an unknown tool would come back as an error result).
    const configs = Array.from({ length: 7 }, (_, i) => ({
      instructions: `Agent ${i}.${i === 6 ? ' '.repeat(40_000) : ''}`,
      maxIterations: i + 2,
      tools: [defineTool({ name: `t${i}`, description: 'd', schema: (s) => ({ k: s.integer().required() }), handle: ({ k }) => `t${i}:${k}` })],
      model: async (req) => (req.messages.length === 1
        ? { content: [toolUse('c1', `t${i}`, { k: i })] }
        : { content: [{ type: 'text', text: `${req.system.length}/${req.messages[2].content[0].content}` }] }),
    }));
    for (let round = 0; round < 3; round++) {
      for (const [i, c] of configs.entries()) {
        const r = await agent(c).prompt('hi');
        assert.equal(r.text, `${c.instructions.length}/t${i}:${i}`);
      }
    }
    // The rules (maxIterations here) belong to the config they were checked for.
    const loop = (max) => agent({ maxIterations: max, tools: [defineTool({ name: 'again', description: 'd', schema: { type: 'object' }, handle: () => 'x' })], model: async (req) => ({ content: [toolUse(`c${req.messages.length}`, 'again', {})] }) });
    for (const max of [2, 3, 2]) {
      const e = await loop(max).prompt('go').catch((x) => x);
      assert.ok(e instanceof MaxIterationsError, String(e));
      assert.equal(e.checkpoint.iterations, max);
    }
  });

  test('assertComplete returns a finished result and throws RunInterruptedError with the checkpoint', async () => {
    const model = scriptedModel([turn(toolUse('q', 'ask_user', { question: 'Q?' }))]);
    const paused = await agent({ tools: tools(), model }).prompt('x');
    const err = (() => { try { assertComplete(paused); } catch (e) { return e; } })();
    assert.ok(err instanceof RunInterruptedError);
    assert.equal(err.question, 'Q?');
    assert.equal(err.checkpoint, paused.checkpoint);
    const done = await agent({ model: scriptedModel(['hi']) }).prompt('x');
    assert.equal(assertComplete(done), done);
  });

  test('scriptedModel: strings, functions of the request, keyed on the conversation, and a clear error when it runs out', async () => {
    const model = scriptedModel(['one', (req) => `you said ${req.messages.at(-1).content}`]);
    const cfg = { model };
    const r1 = await agent(cfg).prompt('a');
    const r2 = await agent(cfg).resume(r1.checkpoint, 'b');
    assert.equal(r2.text, 'you said b');
    const err = await agent(cfg).resume(r2.checkpoint, 'c').catch((e) => e);
    assert.ok(err instanceof ModelError);
    assert.match(err.message, /scriptedModel: the script has 2 responses but the conversation asks for assistant turn 3/);
    assert.equal(err.checkpoint.messages.at(-1).content, 'c', 'the new user turn is kept');
    // A second run with the same model starts at the top of the script again.
    assert.equal((await agent(cfg).prompt('again')).text, 'one');
  });

  test('schema builder: every field kind, required, describe, nested; JSON Schema objects pass through', () => {
    const t = defineTool({
      name: 'all',
      schema: (s) => ({
        a: s.string().required(), b: s.number(), c: s.integer().describe('count'), d: s.boolean(),
        e: s.array(s.string()), f: s.object({ x: s.number().required() }).required(), g: s.enum(['x', 'y']),
      }),
      handle: () => 'ok',
    });
    assert.deepEqual(t.inputSchema, {
      type: 'object',
      properties: {
        a: { type: 'string' }, b: { type: 'number' }, c: { type: 'integer', description: 'count' }, d: { type: 'boolean' },
        e: { type: 'array', items: { type: 'string' } },
        f: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
        g: { type: 'string', enum: ['x', 'y'] },
      },
      required: ['a', 'f'],
    });
    const json = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };
    assert.deepEqual(defineTool({ name: 'j', schema: json, handle: () => 1 }).inputSchema, json);
  });

  test('config errors are ConfigError with a clear message, thrown at once', async () => {
    const bad = [
      [() => defineTool({ name: 'has space', handle: () => 1 }), /defineTool.name: expected 1-64 letters/],
      [() => defineTool({ name: 'x' }), /defineTool.handle: expected a function/],
      [() => defineTool({ name: 'x', schema: { type: 'string' }, handle: () => 1 }), /must describe an object/],
      [() => defineTool({ name: 'x', schema: (s) => ({ a: 'string' }), handle: () => 1 }), /defineTool.schema\(s\).a: expected a schema field/],
      [() => agent({ tools: [] }), /config.model: expected a model function/],
      [() => agent({ model: () => ({}), maxIterations: 0 }), /config.maxIterations: expected a positive integer/],
      [() => agent({ model: () => ({}), tools: [{ name: 'a', handle: () => 1 }, { name: 'a', handle: () => 1 }] }), /tools\[1\].name: "a" is used by an earlier tool/],
      [() => agent({ model: () => ({}), tools: {} }), /config.tools: expected an array/],
    ];
    for (const [fn, message] of bad) {
      assert.throws(fn, (e) => e instanceof ConfigError && message.test(e.message), String(message));
    }
    const err = await agent({ model: () => ({}) }).prompt(42).catch((e) => e);
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /prompt\(message\): expected a string/);
  });

  test('memorySaver: get/put/delete/list with summaries; stores copies; refuses invalid checkpoints', async () => {
    const saver = memorySaver();
    const model = scriptedModel([turn(toolUse('q', 'ask_user', { question: 'Q?' }))]);
    const paused = await agent({ tools: tools(), model }).prompt('x');
    await saver.put('s/1', paused.checkpoint);
    await saver.put('s/2', (await agent({ model: scriptedModel(['done']) }).prompt('y')).checkpoint);
    await saver.put('t/1', paused.checkpoint);
    paused.checkpoint.messages.length = 0;
    const got = await saver.get('s/1');
    assert.equal(got.messages.length, 2, 'a copy was stored');
    assert.equal(await saver.get('missing'), null);
    const listed = await saver.list('s/');
    assert.deepEqual(listed.map((e) => [e.key, e.interrupted, e.question, e.messageCount]), [['s/1', true, 'Q?', 2], ['s/2', false, undefined, 2]]);
    assert.equal((await saver.list()).length, 3);
    await saver.delete('s/1');
    await saver.delete('s/1');
    assert.equal(await saver.get('s/1'), null);
    const err = await saver.put('bad', { messages: 3 }).catch((e) => e);
    assert.ok(err instanceof CheckpointError);
  });
});
