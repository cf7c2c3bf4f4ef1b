// Guardrails through the real wasm: input guardrails before a turn's first model call (a tripped input is never
// sent), output guardrails on the final answer, async ones, one that throws, the guardrail events, a session that
// goes on after a trip, and bad options.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agent, scriptedModel, memorySaver, GuardrailError, ConfigError, defineTool } from 'resumable-agent';
import { recordingModel, toolUse, turn } from './helpers.mjs';

const noPasswords = ({ messages }) => {
  const last = messages.at(-1).content;
  const text = typeof last === 'string' ? last : last.map((b) => b.text ?? '').join(' ');
  return /password/i.test(text) ? { tripwire: true, info: { reason: 'a password' } } : undefined;
};

test('an input guardrail trips before the model is asked: GuardrailError with the checkpoint, and a guardrail event', async () => {
  const { model, requests } = recordingModel(['never']);
  const events = [];
  const a = agent({ model, guardrails: { input: [noPasswords] } });
  const e = await a.prompt('my password is hunter2', { onEvent: (ev) => events.push(ev) }).catch((x) => x);
  assert.ok(e instanceof GuardrailError, e.message);
  assert.deepEqual([e.guardrail, e.kind, e.info], ['noPasswords', 'input', { reason: 'a password' }]);
  assert.equal(requests.length, 0, 'nothing was sent to the model');
  assert.equal(e.checkpoint.messages.length, 1);
  assert.deepEqual(events.filter((x) => x.type === 'guardrail'), [{ type: 'guardrail', kind: 'input', name: 'noPasswords', tripwire: true }]);
  assert.equal(events.at(-1).type, 'error');
  assert.equal(events.at(-1).error.guardrail, 'noPasswords');
  // A clean prompt passes, reported as such.
  const ok = [];
  const r = await agent({ model: scriptedModel(['hi']), guardrails: { input: [noPasswords] } }).prompt('hello', { onEvent: (ev) => ok.push(ev) });
  assert.equal(r.text, 'hi');
  assert.deepEqual(ok.filter((x) => x.type === 'guardrail'), [{ type: 'guardrail', kind: 'input', name: 'noPasswords', tripwire: false }]);
});

test('output guardrails see the text and the structured answer; async ones are awaited; the first trip stops the rest', async () => {
  const seen = [];
  const looks = async ({ kind, text, structured }) => { seen.push({ kind, text, structured }); await new Promise((r) => setTimeout(r, 5)); };
  const tooCheap = ({ structured }) => (structured.price < 10 ? { tripwire: true, info: `price ${structured.price}` } : { tripwire: false });
  const never = () => { seen.push('never'); };
  const model = scriptedModel([{ content: [toolUse('f', 'final_answer', { item: 'pen', price: 3 })] }]);
  const a = agent({ model, output: (s) => ({ item: s.string().required(), price: s.number().required() }), guardrails: { output: [looks, tooCheap, never] } });
  const e = await a.prompt('price a pen').catch((x) => x);
  assert.ok(e instanceof GuardrailError);
  assert.deepEqual([e.guardrail, e.kind, e.info], ['tooCheap', 'output', 'price 3']);
  assert.deepEqual(seen, [{ kind: 'output', text: '', structured: { item: 'pen', price: 3 } }], 'an answer by final_answer has no text');
  assert.deepEqual(e.checkpoint.structured, { item: 'pen', price: 3 }, 'the run with the answer that tripped');
});

test('a guardrail that throws stops the run (a policy that could not be checked is not passed)', async () => {
  const down = () => { throw new Error('policy service down'); };
  const e = await agent({ model: scriptedModel(['x']), guardrails: { input: [down] } }).prompt('hi').catch((x) => x);
  assert.ok(e instanceof GuardrailError);
  assert.deepEqual(e.info, { error: 'policy service down' });
});

test('input guardrails run once per turn: not after tool results, not when a pause is resumed; a session goes on after a trip', async () => {
  let checks = 0;
  const counting = () => { checks += 1; };
  const send = defineTool({ name: 'send', needsApproval: true, handle: () => 'sent' });
  const lookup = defineTool({ name: 'lookup', handle: () => 'found' });
  const model = scriptedModel([turn(toolUse('l', 'lookup', {})), turn(toolUse('s', 'send', {})), 'done', 'fine', 'still fine']);
  const a = agent({ model, tools: [send, lookup], guardrails: { input: [counting, noPasswords] } });
  const session = a.session(memorySaver(), 'g1', { keepCompleted: true });
  const paused = await session.prompt('look up and send');
  assert.equal(paused.interrupted, true);
  assert.equal(checks, 1);
  assert.equal((await session.reply({ decisions: [{ type: 'approve' }] })).text, 'done');
  assert.equal(checks, 1, 'a resumed pause is the same turn');
  const e = await session.prompt('the password is x').catch((x) => x);
  assert.ok(e instanceof GuardrailError);
  const r = await session.prompt('never mind');
  assert.equal(r.text, 'fine');
  assert.ok(!JSON.stringify(r.checkpoint.messages).includes('password'), 'the tripped message was not kept in the session');
  assert.equal(checks, 3);
});

test('bad guardrails options are ConfigErrors naming them', () => {
  const m = scriptedModel(['x']);
  assert.throws(() => agent({ model: m, guardrails: [] }), (e) => e instanceof ConfigError && /config\.guardrails: expected/.test(e.message));
  assert.throws(() => agent({ model: m, guardrails: { inputs: [] } }), (e) => e instanceof ConfigError && /config\.guardrails\.inputs: unknown option/.test(e.message));
  assert.throws(() => agent({ model: m, guardrails: { output: [42] } }), (e) => e instanceof ConfigError && /config\.guardrails\.output\[0\]: expected a function/.test(e.message));
});

test("'resumable-agent/core' has no guardrails: a ConfigError says where to import them from", async () => {
  const { execFileSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const script = `import { agent, scriptedModel } from 'resumable-agent/core';
try { agent({ model: scriptedModel(['x']), guardrails: { input: [() => {}] } }); console.log('no error'); }
catch (e) { console.log(e.name + ': ' + e.message); }`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('.', import.meta.url)), encoding: 'utf8', timeout: 20_000 });
  assert.match(out, /^ConfigError: config\.guardrails needs guardrails, which 'resumable-agent\/core' does not have/);
});
