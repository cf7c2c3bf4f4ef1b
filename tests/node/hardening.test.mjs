// Checkpoints that cannot be forged or broken, through the npm package: signed and sealed checkpoints,
// limits before parsing, forged resumes, saver timeouts and faults, secrets, lone surrogates, type mistakes,
// and an instance that traps (out of memory) being replaced.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  agent, scriptedModel, defineTool, InterruptError, memorySaver, memoryUsage, openai, anthropic, textStoreSaver,
  CheckpointError, ConfigError, ModelError, SaverError, ReleasedError, DecisionError, listSessions,
} from 'resumable-agent';

/** A text store over a Map the test can read and edit behind the saver's back. */
function rawStore() {
  const map = new Map();
  const saver = textStoreSaver({
    compareAndSet: true,
    async getText(key) { return map.get(key)?.value ?? null; },
    async putText(key, value, summary, condition) {
      if (condition?.ifAbsent && map.has(key)) throw Object.assign(new Error('taken'), { code: 'CONFLICT' });
      map.set(key, { value, summary });
    },
    async delete(key) { map.delete(key); },
    async list(prefix) { return [...map].filter(([k]) => k.startsWith(prefix)).sort().map(([key, { summary }]) => ({ key, summary })); },
  });
  return { map, saver };
}

const KEYS = { current: 'k2', keys: { k1: 'first secret, rotated out', k2: 'second secret, signs today' } };
const toolUse = (id, name, input) => ({ type: 'tool_use', id, name, input });

/** An agent whose model and tools count their calls. */
function counted(extra = {}, script) {
  const calls = { model: 0, lookup: 0, ask: 0 };
  const responses = script ?? [
    { content: [toolUse('c1', 'lookup', { key: 'a', n: 1.5e-7 }), toolUse('c2', 'ask', { question: 'When?' })] },
    { content: [{ type: 'text', text: 'Done.' }] },
  ];
  const played = scriptedModel(responses);
  const model = async (request) => { calls.model += 1; return played(request); };
  const tools = [
    defineTool({ name: 'lookup', description: 'Look up.', schema: { type: 'object' }, handle: ({ key }) => { calls.lookup += 1; return { key, value: `v-${key}` }; } }),
    defineTool({ name: 'ask', description: 'Ask.', schema: { type: 'object' }, handle: ({ question }) => { calls.ask += 1; throw new InterruptError(question); } }),
  ];
  return { calls, a: agent({ model, tools, ...extra }) };
}

async function refused(promise, code) {
  const e = await promise.then(() => assert.fail('expected a rejection'), (err) => err);
  assert.ok(e instanceof CheckpointError, `${e?.name}: ${e?.message}`);
  assert.equal(e.code, code, e.message);
  return e;
}

describe('signed checkpoints', () => {
  test('every checkpoint an agent with keys returns is signed, and survives a JSON round trip', async () => {
    const { a } = counted({ checkpointKeys: KEYS });
    const paused = await a.prompt('Plan.');
    assert.equal(paused.checkpoint.signature.kid, 'k2');
    assert.match(paused.checkpoint.signature.mac, /^[A-Za-z0-9_-]{43}$/);
    const done = await a.resume(JSON.parse(JSON.stringify(paused.checkpoint)), 'Friday');
    assert.equal(done.text, 'Done.');
    assert.equal(done.checkpoint.signature.kid, 'k2');
    // Events carry signed checkpoints too.
    const seen = [];
    await a.prompt('Plan.', { onEvent: (e) => { if (e.type === 'checkpoint') seen.push(e.checkpoint); } });
    assert.ok(seen.length > 1 && seen.every((c) => c.signature?.kid === 'k2'));
    // Errors carry signed checkpoints.
    const failing = agent({ model: async () => { throw new Error('down'); }, checkpointKeys: KEYS });
    const err = await failing.prompt('x').catch((e) => e);
    assert.ok(err instanceof ModelError);
    assert.equal(err.checkpoint.signature.kid, 'k2');
  });

  test('rotation: checkpoints signed with an old key id still resume; an unknown one does not', async () => {
    const { a: before } = counted({ checkpointKeys: { current: 'k1', keys: { k1: KEYS.keys.k1 } } });
    const paused = await before.prompt('Plan.');
    assert.equal(paused.checkpoint.signature.kid, 'k1');
    const { a: after } = counted({ checkpointKeys: KEYS });
    assert.equal((await after.resume(paused.checkpoint, 'Friday')).text, 'Done.');
    const { a: stranger, calls } = counted({ checkpointKeys: { current: 'k9', keys: { k9: 'a third secret entirely' } } });
    const e = await refused(stranger.resume(paused.checkpoint, 'Friday'), 'SIGNATURE');
    assert.match(e.message, /unknown key id "k1"/);
    assert.deepEqual(calls, { model: 0, lookup: 0, ask: 0 });
  });

  test('any change, a stripped signature or a swapped key id is refused before any model or tool call', async () => {
    const { a, calls } = counted({ checkpointKeys: KEYS });
    const paused = await a.prompt('Plan.');
    const before = { ...calls };
    const forgeries = {
      'usage reset': (c) => { c.iterations = 0; },
      'a fake tool result': (c) => { c.toolResults[0].content = '{"value":"forged"}'; },
      'a call added to the open turn': (c) => { c.messages.at(-1).content.push(toolUse('c9', 'lookup', { key: 'x' })); },
      'the pending input changed': (c) => {
        c.messages.at(-1).content[1].input = { question: 'Wire $1M?' };
        c.interrupts[0].input = { question: 'Wire $1M?' };
      },
      'signature stripped': (c) => { delete c.signature; },
      'key id swapped': (c) => { c.signature.kid = 'k1'; },
      'mac of another checkpoint': (c) => { c.signature.mac = c.signature.mac.replace(/^./, (x) => (x === 'A' ? 'B' : 'A')); },
    };
    for (const [what, forge] of Object.entries(forgeries)) {
      const c = structuredClone(paused.checkpoint);
      forge(c);
      await refused(a.resume(c, 'Friday'), 'SIGNATURE').catch((e) => { throw new Error(`${what}: ${e.message}`); });
    }
    // An agent without keys ignores signatures (it cannot check them), and what it writes carries none.
    const { a: plain } = counted();
    const r = await plain.resume(paused.checkpoint, 'Friday');
    assert.equal(r.checkpoint.signature, undefined);
    assert.deepEqual(calls, before, 'nothing ran for the forgeries');
  });

  test('sampled single-byte changes of the JSON text: all refused or the very same checkpoint', async () => {
    const { a, calls } = counted({ checkpointKeys: KEYS });
    const text = JSON.stringify((await a.prompt('Plan.')).checkpoint);
    const before = { ...calls };
    const counts = {};
    let same = 0;
    for (let i = 0; i < text.length; i += 1) {
      for (const ch of ['0', '"', 'x', ' ']) {
        if (text[i] === ch) continue;
        const changed = text.slice(0, i) + ch + text.slice(i + 1);
        try {
          const r = await a.resume(changed, 'Friday');
          // Accepted: must be another spelling of the same JSON (e.g. a space between tokens).
          assert.deepEqual(JSON.parse(changed), JSON.parse(text), `accepted a change at ${i}`);
          assert.equal(r.text, 'Done.');
          same += 1;
        } catch (e) {
          if (!(e instanceof CheckpointError)) throw e;
          counts[e.code] = (counts[e.code] ?? 0) + 1;
        }
      }
    }
    const refusedCount = Object.values(counts).reduce((x, y) => x + y, 0);
    console.log(`# js tamper: ${refusedCount + same} one-byte changes of ${text.length} bytes: refused ${JSON.stringify(counts)}, same checkpoint ${same}`);
    assert.ok(counts.SIGNATURE > 100);
    assert.equal(calls.lookup, before.lookup, 'no tool ran for a refused change');
    assert.equal(calls.model - before.model, same, 'the model ran only for the unchanged ones');
  });
});

describe('sealed checkpoints', () => {
  test('an envelope that hides the run, opens only intact, and only with the keys', async () => {
    const { a } = counted({ checkpointKeys: KEYS, sealed: true });
    const paused = await a.prompt('My card is 4242.');
    assert.deepEqual(Object.keys(paused.checkpoint), ['version', 'kid', 'sealed']);
    assert.equal(paused.checkpoint.version, 2);
    assert.equal(JSON.stringify(paused.checkpoint).includes('4242'), false);
    assert.equal(paused.question, 'When?');
    const tampered = { ...paused.checkpoint, sealed: paused.checkpoint.sealed.replace(/.$/, (x) => (x === 'A' ? 'Q' : 'A')) };
    await refused(a.resume(tampered, 'Friday'), 'SIGNATURE');
    await refused(counted().a.resume(paused.checkpoint, 'Friday'), 'SIGNATURE');
    assert.equal((await a.resume(JSON.stringify(paused.checkpoint), 'Friday')).text, 'Done.');
  });

  test('a sealed session keeps envelopes in the saver; its listing shows no question', async () => {
    const { a } = counted({ checkpointKeys: KEYS, sealed: true });
    const { map, saver } = rawStore();
    const s = a.session(saver, 'user-1');
    await s.prompt('My card is 4242.');
    // Every step record is an envelope; nothing stored shows the conversation or the question.
    const records = [...map.keys()].filter((k) => k.includes('#~'));
    assert.ok(records.length >= 3, records.join());
    for (const k of records) assert.deepEqual(Object.keys(JSON.parse(map.get(k).value)), ['version', 'kid', 'sealed'], k);
    for (const [k, { value, summary }] of map) assert.ok(!/4242|When\?/.test(value + summary), `${k} leaks: ${value.slice(0, 200)}`);
    const [head] = await listSessions(saver);
    assert.equal(head.interrupted, true);
    assert.equal(head.question, undefined);
    assert.deepEqual(Object.keys(await s.checkpoint()), ['version', 'kid', 'sealed']);
    assert.equal((await s.reply('Friday')).text, 'Done.');
  });

  test('a session refuses a stored checkpoint that was changed, and will not save an unsigned one', async () => {
    const { a, calls } = counted({ checkpointKeys: KEYS });
    const { map, saver } = rawStore();
    const s = a.session(saver, 'u2', { keepCompleted: true });
    await s.prompt('Plan.');
    const stored = await s.checkpoint();
    // Behind the saver's back: the lookup's result, in the step record that holds it, is changed.
    const [key, entry] = [...map].find(([k, { value }]) => k.includes('#~') && value.includes('v-a'));
    map.set(key, { ...entry, value: entry.value.replace('v-a', 'v-forged') });
    const before = { ...calls };
    await refused(s.reply('Friday'), 'SIGNATURE');
    map.set(key, entry);
    delete stored.signature;
    await refused(s.save(stored), 'SIGNATURE');
    assert.deepEqual(calls, before);
    assert.equal((await s.reply('Friday')).text, 'Done.', 'the untouched session continues');
  });

  test('key configuration mistakes are ConfigErrors that never show a secret', () => {
    const bad = [
      [{ checkpointKeys: { current: 'a', keys: { a: 'short' } } }, /at least 16/],
      [{ checkpointKeys: { current: 'b', keys: { a: 'long enough secret!' } } }, /"b" is not one of/],
      [{ checkpointKeys: { current: 'a', keys: { a: 42 } } }, /a string, Uint8Array or ArrayBuffer/],
      [{ checkpointKeys: 'secret' }, /expected \{ current, keys/],
      [{ sealed: true }, /sealing needs config.checkpointKeys/],
      [{ checkpointKeys: KEYS, sealed: 'yes' }, /config.sealed: expected a boolean/],
    ];
    for (const [extra, message] of bad) {
      assert.throws(() => agent({ model: scriptedModel([]), ...extra }), (e) => e instanceof ConfigError && message.test(e.message) && !e.message.includes('long enough'));
    }
    assert.ok(agent({ model: scriptedModel([]), checkpointKeys: { current: 'b', keys: { b: new Uint8Array(32).fill(7) } } }));
  });
});

describe('limits', () => {
  test('a checkpoint over the size limit is refused before it is copied into wasm', async () => {
    const { a, calls } = counted({ limits: { maxCheckpointBytes: 1_000_000 } });
    const huge = JSON.stringify({ version: 2, messages: [{ role: 'user', content: 'x'.repeat(40_000_000) }], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 } });
    const wasmBefore = memoryUsage().wasmBytes;
    const e = await refused(a.resume(huge, ''), 'TOO_LARGE');
    assert.match(e.message, /limit is 1000000/);
    assert.ok(memoryUsage().wasmBytes < wasmBefore + 8_000_000, 'the 40 MB text never reached wasm memory');
    // The default (32 MiB) holds as well, for text and objects.
    await refused(counted().a.resume(huge, ''), 'TOO_LARGE');
    await refused(counted().a.resume(JSON.parse(huge), ''), 'TOO_LARGE');
    assert.equal(calls.model, 0);
  });

  test('nesting beyond the depth limit is refused, however deep', async () => {
    const deep = `${'['.repeat(100_000)}0${']'.repeat(100_000)}`;
    const text = `{"version":2,"messages":[{"role":"user","content":"hi"}],"iterations":0,"usage":{"inputTokens":0,"outputTokens":0},"state":${deep}}`;
    await refused(counted().a.resume(text, ''), 'TOO_DEEP');
    // Just over the default (64 + the checkpoint's own frame) is refused as well, with the numbers.
    const over = text.replace(deep, `${'['.repeat(80)}0${']'.repeat(80)}`);
    assert.match((await refused(counted().a.resume(over, ''), 'TOO_DEEP')).message, /nests 81 deep; the limit is 70/);
    assert.throws(() => agent({ model: scriptedModel([]), limits: { maxDepth: 500 } }), /maxDepth: 500 is over 120/);
  });

  test('whatever the library accepts from a model or a tool, it can read back', async () => {
    const nest = (n) => { let v = 'leaf'; for (let i = 0; i < n; i += 1) v = { v }; return v; };
    // Just inside the limit: the run pauses, and the pause resumes.
    const { a: inside } = counted({}, [{ content: [toolUse('c1', 'ask', { question: 'Deep?', payload: nest(62) })] }, { content: [{ type: 'text', text: 'Done.' }] }]);
    const paused = await inside.prompt('Go.');
    assert.equal((await inside.resume(JSON.parse(JSON.stringify(paused.checkpoint)), 'yes')).text, 'Done.');
    // Beyond it: the model's answer is refused (a typed error with the checkpoint), not written.
    const { a: beyond } = counted({}, [{ content: [toolUse('c1', 'ask', { payload: nest(100) })] }]);
    const e = await beyond.prompt('Go.').catch((x) => x);
    assert.ok(e instanceof ModelError, e.message);
    assert.match(e.message, /nested 101 deep; at most 64/);
    assert.equal(e.checkpoint.messages.length, 1);
    // A tool's state and an interrupt's data follow the same rule: the tool fails, the run goes on.
    const tools = [
      defineTool({ name: 'deepstate', description: 'd', schema: { type: 'object' }, handle: (_, ctx) => { ctx.setState(nest(100)); return 'ok'; } }),
      defineTool({ name: 'deepask', description: 'd', schema: { type: 'object' }, handle: () => { throw new InterruptError('q', { data: nest(100) }); } }),
    ];
    const model = scriptedModel([{ content: [toolUse('c1', 'deepstate', {}), toolUse('c2', 'deepask', {})] }, { content: [{ type: 'text', text: 'Done.' }] }]);
    const r = await agent({ model, tools, state: {} }).prompt('Go.');
    const results = r.messages[2].content;
    assert.equal(r.text, 'Done.');
    assert.ok(results.every((b) => b.isError && /nested|deep/.test(b.content)), JSON.stringify(results));
  });
});

describe('checkpoints bound to their agent and session (issue 22, findings 2 and 5)', () => {
  const ran = [];
  const tools = (approval) => [
    defineTool({ name: 'lookup', description: 'l', schema: { type: 'object' }, handle: () => { ran.push('lookup'); throw new InterruptError('Which account?'); } }),
    defineTool({ name: 'transfer', description: 't', schema: { type: 'object' }, needsApproval: approval, handle: () => { ran.push('transfer'); return 'sent'; } }),
  ];
  const script = () => scriptedModel([
    { content: [toolUse('c1', 'lookup', {})] },
    { content: [toolUse('c2', 'transfer', { amount: 100 })] },
    { content: [{ type: 'text', text: 'Done.' }] },
  ]);

  test("another agent with the same keys cannot resume a checkpoint to skip its approval rules; a named agent can", async () => {
    ran.length = 0;
    const a = agent({ model: script(), tools: tools(false), checkpointKeys: KEYS });
    const paused = await a.prompt('Pay.');
    const b = agent({ model: script(), tools: tools(true), checkpointKeys: KEYS });
    const e = await refused(b.resume(paused.checkpoint, 'savings'), 'BINDING');
    assert.match(e.message, /another agent/);
    assert.deepEqual(ran, ['lookup'], 'nothing ran in the other agent');
    // Named: checkpoints survive a deploy that changes the tools, and the new rules apply to what comes next.
    const named = { ...KEYS, agent: 'payments' };
    const v1 = agent({ model: script(), tools: tools(false), checkpointKeys: named });
    const v2 = agent({ model: script(), tools: tools(true), checkpointKeys: named, onDrift: 'reapprove' });
    const p1 = await v1.prompt('Pay.');
    // The signature lets it through; the changed tool is drift, refused by default (onDrift 'error').
    const drift = await agent({ model: script(), tools: tools(true), checkpointKeys: named }).resume(p1.checkpoint, 'savings').catch((x) => x);
    assert.equal(drift.name, 'ConfigDriftError', drift.message);
    assert.deepEqual(drift.changed, ['transfer']);
    const r2 = await v2.resume(p1.checkpoint, 'savings');
    assert.equal(r2.interrupts?.[0]?.kind, 'approval', 'the approval v2 added is asked');
    assert.ok(!ran.includes('transfer'));
    await refused(a.resume(p1.checkpoint, 'savings'), 'BINDING');
    assert.throws(() => agent({ model: script(), checkpointKeys: { ...KEYS, agent: '' } }), (x) => x instanceof ConfigError && /checkpointKeys.agent/.test(x.message));
    assert.throws(() => agent({ model: script(), checkpointKeys: { ...KEYS, agnet: 'x' } }), (x) => x instanceof ConfigError && /checkpointKeys.agnet: unknown option/.test(x.message));
  });

  for (const sealed of [false, true]) {
    test(`a ${sealed ? 'sealed' : 'signed'} session's records copied under another session id are refused`, async () => {
      ran.length = 0;
      const { map, saver } = rawStore();
      const a = agent({ model: script(), tools: tools(false), checkpointKeys: KEYS, sealed });
      await a.session(saver, 'alice').prompt('Pay.');
      for (const [k, v] of [...map]) if (k.startsWith('alice')) map.set(k.replace('alice', 'mallory'), { ...v });
      const e = await a.session(saver, 'mallory').reply('savings').catch((x) => x);
      assert.ok(e instanceof CheckpointError && ['BINDING', 'SIGNATURE'].includes(e.code), `${e?.name} ${e?.code}: ${e?.message}`);
      assert.deepEqual(ran, ['lookup'], "mallory's reply ran nothing of alice's");
      assert.equal((await a.session(saver, 'alice').reply('savings')).text, 'Done.', "alice's session is untouched");
    });
  }
});

describe('limits where values enter a session (issue 22, findings 7, 9, 10)', () => {
  const nest = (n) => { let v = 'leaf'; for (let i = 0; i < n; i += 1) v = [v]; return v; };

  test('a tool result or state over maxCheckpointBytes becomes an error result; the session reads back and goes on', async () => {
    const tools = [
      defineTool({ name: 'fetch', description: 'f', schema: { type: 'object' }, handle: () => 'y'.repeat(3_000_000) }),
      defineTool({ name: 'hoard', description: 'h', schema: { type: 'object' }, handle: (_, ctx) => { ctx.setState({ blob: 'z'.repeat(2_000_000) }); return 'kept'; } }),
      defineTool({ name: 'ask', description: 'a', schema: { type: 'object' }, handle: () => { throw new InterruptError('Which page?'); } }),
    ];
    const model = scriptedModel([
      { content: [toolUse('c1', 'fetch', {}), toolUse('c2', 'hoard', {})] },
      { content: [toolUse('c3', 'ask', {})] },
      { content: [{ type: 'text', text: 'Done.' }] },
    ]);
    const { saver } = rawStore();
    const a = agent({ model, tools, limits: { maxCheckpointBytes: 1_000_000 } });
    const paused = await a.session(saver, 'big').prompt('Go.');
    assert.equal(paused.question, 'Which page?');
    const results = paused.checkpoint.messages[2].content;
    assert.match(results[0].content, /the tool's result was not kept: it is 3000002 bytes of JSON.*at most 1000000 \(limits.maxCheckpointBytes\)/);
    assert.match(results[1].content, /hoard set a state that was not kept/);
    assert.ok(results.every((b) => b.isError));
    // Before the fix the next reply failed CORRUPT for ever.
    assert.equal((await a.session(saver, 'big').reply('the first')).text, 'Done.');
  });

  test('with the default limits, a 34 MB tool result does not strand the session', async () => {
    const model = scriptedModel([{ content: [toolUse('c1', 'fetch', {})] }, { content: [toolUse('c2', 'ask', {})] }, { content: [{ type: 'text', text: 'Done.' }] }]);
    const tools = [
      defineTool({ name: 'fetch', description: 'f', schema: { type: 'object' }, handle: () => 'y'.repeat(34_000_000) }),
      defineTool({ name: 'ask', description: 'a', schema: { type: 'object' }, handle: () => { throw new InterruptError('Sure?'); } }),
    ];
    const { saver } = rawStore();
    const a = agent({ model, tools });
    const paused = await a.session(saver, 'huge').prompt('Go.');
    assert.match(paused.checkpoint.messages[2].content[0].content, /not kept.*limits.maxCheckpointBytes/);
    assert.equal((await a.session(saver, 'huge').reply('yes')).text, 'Done.');
  });

  test('a stored value over the limit is refused before it is copied into wasm memory', async () => {
    const { map, saver } = rawStore();
    const { a } = counted({ limits: { maxCheckpointBytes: 1_000_000 } });
    await a.session(saver, 's').prompt('Go.');
    const [key] = [...map.keys()].filter((k) => k.includes('#~')).slice(-1);
    map.get(key).value = `{"log":{"seq":1},"pad":"${'p'.repeat(60_000_000)}"}`;
    const before = memoryUsage().wasmBytes;
    const e = await a.session(saver, 's').reply('Friday').catch((x) => x);
    assert.ok(e instanceof SaverError, `${e?.name}: ${e?.message}`);
    assert.match(e.message, /at least 600000\d\d bytes; at most 1000000 are read \(limits.maxCheckpointBytes\)/);
    assert.ok(memoryUsage().wasmBytes < before + 8_000_000, `wasm memory grew ${memoryUsage().wasmBytes - before} bytes`);
  });

  test('state and interrupt data nested 128+ deep are refused with a typed error, never silently dropped', async () => {
    // 121–127 deep reach the run and are over limits.maxDepth; 128 and deeper (to 100,000) are refused in JS
    // before a stack can overflow. Each becomes the tool's error result.
    for (const depth of [125, 128, 300, 100_000]) {
      const tools = [
        defineTool({ name: 'deepstate', description: 'd', schema: { type: 'object' }, handle: (_, ctx) => { ctx.setState(nest(depth)); return 'ok'; } }),
        defineTool({ name: 'deepask', description: 'd', schema: { type: 'object' }, handle: () => { throw new InterruptError('q', { data: nest(depth) }); } }),
      ];
      const model = scriptedModel([{ content: [toolUse('c1', 'deepstate', {}), toolUse('c2', 'deepask', {})] }, { content: [{ type: 'text', text: 'Done.' }] }]);
      const r = await agent({ model, tools, state: { n: 1 } }).prompt('Go.');
      assert.equal(r.text, 'Done.', `depth ${depth}`);
      const results = r.messages[2].content;
      assert.ok(results.every((b) => b.isError && /nested|deep/.test(b.content)), `depth ${depth}: ${JSON.stringify(results).slice(0, 400)}`);
      assert.deepEqual(r.checkpoint.state, { n: 1 }, 'the state was not changed');
    }
    assert.throws(() => new InterruptError('q', { data: nest(100_000) }), (e) => e instanceof ConfigError && /nested more than 128 deep/.test(e.message));
  });
});

describe('forged resumes without keys', () => {
  test('a reused call id, a result for a call never made, text before results: refused, nothing runs', async () => {
    const { a, calls } = counted({}, [
      { content: [toolUse('c1', 'lookup', { key: 'a' })] },
      { content: [toolUse('c2', 'lookup', { key: 'b' }), toolUse('c3', 'ask', { question: 'Ok?' })] },
      { content: [{ type: 'text', text: 'Done.' }] },
    ]);
    const paused = await a.prompt('Go.');
    const before = { ...calls };
    const reused = structuredClone(paused.checkpoint);
    reused.messages.at(-1).content[0].id = 'c1';
    reused.toolResults[0].toolUseId = 'c1';
    assert.match((await refused(a.resume(reused, 'yes'), 'INVALID')).message, /"c1" is also the id of a tool call in messages\[1\]/);
    const fake = structuredClone(paused.checkpoint);
    fake.toolResults.push({ toolUseId: 'c9', content: 'fake' });
    assert.match((await refused(a.resume(fake, 'yes'), 'INVALID')).message, /"c9" is not a tool call/);
    const textFirst = structuredClone(paused.checkpoint);
    textFirst.messages[2].content.unshift({ type: 'text', text: 'hi' });
    await refused(a.resume(textFirst, 'yes'), 'INVALID');
    const empty = structuredClone(paused.checkpoint);
    empty.messages[1].content = [];
    await refused(a.resume(empty, 'yes'), 'INVALID');
    assert.deepEqual(calls, before);
  });
});

describe('savers', () => {
  test('a saver that never answers fails the session with SaverError TIMEOUT (timeoutMs)', async () => {
    const { a } = counted();
    const stuck = { get: () => new Promise(() => {}), put: async () => {}, delete: async () => {} };
    const started = Date.now();
    const e = await a.session(stuck, 's', { timeoutMs: 50 }).prompt('Go.').catch((x) => x);
    assert.ok(e instanceof SaverError, e.message);
    assert.equal(e.code, 'TIMEOUT');
    assert.match(e.message, /get of key "s" did not finish within 50 ms/);
    assert.ok(Date.now() - started < 5_000);
    // A put that hangs after the run made progress: the error carries the checkpoint, which goes back in.
    const inner = memorySaver();
    let hang = false;
    const flaky = { get: (k) => inner.get(k), put: (k, v, c) => (hang ? new Promise(() => {}) : inner.put(k, v, c)), delete: (k) => inner.delete(k), list: (p) => inner.list(p) };
    const s = a.session(flaky, 'p', { timeoutMs: 50 });
    hang = true;
    const lost = await s.prompt('Go.').catch((x) => x);
    assert.equal(lost.code, 'TIMEOUT');
    assert.ok(lost.checkpoint, 'the progress travels with the error');
    hang = false;
    await s.save(lost.checkpoint);
    assert.equal((await s.resume()).question, 'When?');
    assert.throws(() => a.session(inner, 'x', { timeoutMs: 0 }), ConfigError);
  });

  test('a saver failing 10 % of calls at random: typed errors, every run recovered, no tool twice', async () => {
    const ran = new Map();
    const tools = [
      defineTool({ name: 'lookup', description: 'l', schema: { type: 'object' }, handle: (_, ctx) => { const k = `${ctx.runId}/${ctx.toolUseId}`; ran.set(k, (ran.get(k) ?? 0) + 1); return 'found'; } }),
      defineTool({ name: 'ask', description: 'a', schema: { type: 'object' }, handle: (_, ctx) => { const k = `${ctx.runId}/${ctx.toolUseId}`; ran.set(k, (ran.get(k) ?? 0) + 1); throw new InterruptError('Which?'); } }),
    ];
    const model = scriptedModel([
      { content: [toolUse('a', 'lookup', {}), toolUse('b', 'ask', {})] },
      { content: [toolUse('c', 'lookup', {})] },
      { content: [{ type: 'text', text: 'Done.' }] },
    ]);
    const a = agent({ model, tools, checkpointKeys: KEYS });
    const inner = memorySaver();
    let seed = 7;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    const maybe = (f) => (...args) => {
      if (random() < 0.1) {
        const e = new Error('ECONNRESET: injected');
        e.code = 'ECONNRESET';
        return Promise.reject(e);
      }
      return f(...args);
    };
    const flaky = { get: maybe((k) => inner.get(k)), put: maybe((k, v, c) => inner.put(k, v, c)), delete: maybe((k) => inner.delete(k)), list: maybe((p) => inner.list(p)) };
    const codes = {};
    let steps = 0;
    let completed = 0;
    for (let n = 0; steps < 2_000; n += 1) {
      const s = a.session(flaky, `s${n}`);
      let next = () => s.prompt('Plan.');
      for (let guard = 0; next; guard += 1) {
        assert.ok(guard < 200, `s${n} never finished`);
        try {
          const r = await next();
          steps += 3;
          if (r.interrupted) next = () => s.reply('this one');
          else { assert.equal(r.text, 'Done.'); completed += 1; next = null; }
        } catch (e) {
          assert.ok(e instanceof SaverError, `${e.name}: ${e.message}`);
          assert.equal(e.code, 'BACKEND', 'one of our codes; the cause keeps its own');
          assert.equal(e.cause?.code, 'ECONNRESET');
          codes[e.code] = (codes[e.code] ?? 0) + 1;
          if (e.checkpoint) {
            for (let i = 0; ; i += 1) {
              assert.ok(i < 50);
              try { await s.save(e.checkpoint); break; } catch (again) { assert.ok(again instanceof SaverError, `${again.name}: ${again.message}`); }
            }
          }
          const saved = (await a.session(inner, `s${n}`).checkpoint()) !== null;
          next = saved || e.checkpoint ? () => s.resume() : () => s.prompt('Plan.');
        }
      }
    }
    const twice = [...ran].filter(([, k]) => k !== 1);
    console.log(`# js fault injection: ~${steps} steps, ${completed} sessions completed, errors ${JSON.stringify(codes)}`);
    assert.deepEqual(twice, []);
    assert.ok(codes.BACKEND > 20);
  });

  test('type mistakes and detached or released methods are typed errors, not wasm traps', async () => {
    const saver = memorySaver();
    await assert.rejects(saver.get(5), (e) => e instanceof ConfigError && /expected a string key, got number 5/.test(e.message));
    await assert.rejects(saver.put('k', 'not json'), CheckpointError);
    const { get } = saver;
    await assert.rejects(get('k'), (e) => e instanceof ConfigError && /detached/.test(e.message));
    const { a } = counted();
    const { prompt } = a;
    await assert.rejects(prompt('x'), (e) => e instanceof ConfigError && /detached/.test(e.message));
    saver.free();
    await assert.rejects(saver.get('k'), ReleasedError);
    await assert.rejects(a.resume({ decisions: 1 }, 'x'), CheckpointError);
    const paused = await a.prompt('Plan.');
    await assert.rejects(a.resume(paused.checkpoint, { decisions: [{ type: 'approve', id: 5 }] }), DecisionError);
  });
});

describe('secrets', () => {
  test('a tool that throws a plain object does not put it into the transcript', async () => {
    const tools = [defineTool({ name: 'call_api', description: 'c', schema: { type: 'object' }, handle: () => { throw { request: { headers: { Authorization: 'Bearer sk-live-0123456789' } } }; } })];
    const model = scriptedModel([{ content: [toolUse('c1', 'call_api', {})] }, { content: [{ type: 'text', text: 'Sorry.' }] }]);
    const r = await agent({ model, tools }).prompt('Go.');
    assert.equal(JSON.stringify(r.checkpoint).includes('sk-live'), false);
    assert.match(r.messages[2].content[0].content, /an object was thrown \(not an Error; its contents are not shown\)/);
  });

  test('provider errors redact the key before cutting, custom header values and baseURL credentials', async () => {
    const key = 'sk-0123456789abcdefghijklmnopqrstuvwxyz';
    const server = createServer((req, res) => {
      // Echoes everything it was sent, after 280 characters of padding: the key straddles the 300-byte cut.
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `${'x'.repeat(280)} ${req.headers.authorization} ${req.headers['x-api-key']} ${req.headers['x-gateway']} ${req.url}` } }));
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${server.address().port}`;
    try {
      for (const model of [
        openai({ apiKey: key, model: 'm', baseURL: `${base}/v1?token=tok-query-123456`, headers: { 'x-gateway': 'gw-header-654321' } }),
        anthropic({ apiKey: key, model: 'm', baseURL: `${base}/a?token=tok-query-123456`, headers: { 'x-gateway': 'gw-header-654321' } }),
      ]) {
        const e = await agent({ model }).prompt('hi').catch((x) => x);
        assert.ok(e instanceof ModelError, e.message);
        for (const s of ['sk-01234', 'abcdefghij', 'gw-header', 'tok-query']) assert.equal(e.message.includes(s), false, `${s} in ${e.message}`);
      }
      const withUser = openai({ apiKey: key, model: 'm', baseURL: `http://alice:pa55-word-99@127.0.0.1:${server.address().port}/v1` });
      const e = await agent({ model: withUser }).prompt('hi').catch((x) => x);
      assert.equal(e.message.includes('pa55-word'), false, e.message);
    } finally {
      server.close();
    }
  });
});

test('lone surrogates become U+FFFD the same way in model replies, tool results and checkpoints', async () => {
  const lone = 'a\ud800b';
  const tools = [defineTool({ name: 'echo', description: 'e', schema: { type: 'object' }, handle: () => `tool ${lone}` })];
  const model = scriptedModel([{ content: [{ type: 'text', text: `model ${lone}` }, toolUse('c1', 'echo', { s: lone })] }, { content: [{ type: 'text', text: `done ${lone}` }] }]);
  const r = await agent({ model, tools }).prompt(`user ${lone}`);
  assert.equal(r.text, 'done a\ufffdb');
  const text = JSON.stringify(r.checkpoint);
  assert.equal(text.includes('\\ud800'), false);
  assert.equal(r.checkpoint.messages[1].content[0].text, 'model a\ufffdb');
  assert.equal(r.checkpoint.messages[1].content[1].input.s, 'a\ufffdb');
  assert.equal(r.checkpoint.messages[2].content[0].content, 'tool a\ufffdb');
  // A checkpoint holding one (e.g. edited in JS) resumes with the same replacement.
  const cp = structuredClone(r.checkpoint);
  cp.messages[0].content = `user ${lone}`;
  const again = await agent({ model: scriptedModel([{ content: [{ type: 'text', text: 'ok' }] }]) }).resume(cp, '');
  assert.equal(again.checkpoint.messages[0].content, 'user a\ufffdb');
});

test('long texts with non-ASCII characters cross into wasm intact, wherever the first non-ASCII one sits', async () => {
  // A long JS string is written into wasm memory one byte per character first, the rest with room for 3
  // bytes per unit: accents (2 bytes), CJK (3), an emoji (a surrogate pair, 4), a lone surrogate (U+FFFD).
  const tail = 'é漢😀\ud800z';
  for (const at of [0, 1, 255, 300, 1000]) {
    const text = 'a'.repeat(at) + tail + 'b'.repeat(400);
    const tools = [defineTool({ name: 'echo', description: 'e', schema: { type: 'object' }, handle: () => text })];
    const model = scriptedModel([{ content: [toolUse('c1', 'echo', {})] }, { content: [{ type: 'text', text: 'ok' }] }]);
    const r = await agent({ model, tools }).prompt(text);
    const want = text.replace('\ud800', '\ufffd');
    assert.equal(r.checkpoint.messages[0].content, want, `prompt, non-ASCII at ${at}`);
    assert.equal(r.checkpoint.messages[2].content[0].content, want, `tool result, non-ASCII at ${at}`);
    const again = await agent({ model: async () => ({ content: [{ type: 'text', text: 'ok' }] }) }).resume(JSON.stringify(r.checkpoint), text);
    assert.equal(again.checkpoint.messages.at(-2).content, want, `resumed checkpoint and answer, non-ASCII at ${at}`);
  }
});

test('lone surrogates in the agent config (state, a tool description) become U+FFFD too, not a broken agent', async () => {
  const lone = 'a\ud800b';
  const seen = [];
  const tools = [defineTool({ name: 'note', description: `d ${lone}`, schema: { type: 'object' }, handle: (_, ctx) => { seen.push(ctx.state.s); return 'ok'; } })];
  const model = async (req) => (req.messages.length === 1
    ? { content: [toolUse('c1', 'note', {})] }
    : { content: [{ type: 'text', text: req.tools[0].description }] });
  const r = await agent({ model, tools, state: { s: lone } }).prompt('go');
  assert.deepEqual(seen, ['a\ufffdb'], 'the tool saw the state');
  assert.equal(r.checkpoint.state.s, 'a\ufffdb');
  assert.equal(r.text, 'd a\ufffdb', 'the description reached the model (and its answer is repaired as always)');
});

test('an instance that runs out of memory is replaced: every call settles, later calls work (child process)', () => {
  const child = fileURLToPath(new URL('./scripts/out-of-memory.mjs', import.meta.url));
  // 128 MiB of wasm memory at most, so concurrent resumes of 20 MB checkpoints exhaust it quickly.
  const run = spawnSync(process.execPath, ['--wasm-max-mem-pages=2048', child], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  const report = JSON.parse(run.stdout.trim().split('\n').at(-1));
  assert.ok(report.lost > 0, JSON.stringify(report));
  assert.equal(report.settled, report.started);
  assert.equal(report.instancesReplaced, 1);
  assert.equal(report.after, 'ok');
  assert.equal(report.sessionAfter, 'Done.');
});
