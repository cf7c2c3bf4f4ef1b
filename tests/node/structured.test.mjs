// Structured output through the npm package: agent({ output }) with a JS model function and the scripted
// model, corrections fed back, OutputError past the bound, and a session that keeps the answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agent, scriptedModel, memorySaver, OutputError, ConfigError, defineTool } from 'resumable-agent';
import { recordingModel, toolUse, turn, text, resultsOf } from './helpers.mjs';

const cityOutput = (s) => ({ city: s.string().required(), population: s.integer().required(), tags: s.array(s.string()) });

test('a JS model sees final_answer with the output schema; a missing field is fed back; the correction fills structured', async () => {
  const { model, requests } = recordingModel([
    turn(toolUse('f1', 'final_answer', { city: 'Paris' })),
    turn({ type: 'text', text: 'Here it is.' }, toolUse('f2', 'final_answer', { city: 'Paris', population: 2102650, tags: ['capital'] })),
  ]);
  const r = await agent({ model, output: cityOutput }).prompt('The capital of France?');
  assert.deepEqual(r.structured, { city: 'Paris', population: 2102650, tags: ['capital'] });
  assert.equal(r.text, 'Here it is.');
  const tool = requests[0].tools.find((t) => t.name === 'final_answer');
  assert.deepEqual(tool.inputSchema.required, ['city', 'population']);
  const [feedback] = resultsOf(requests[1].messages.at(-1));
  assert.equal(feedback.isError, true);
  assert.match(feedback.content, /missing required property "population"/);
  assert.deepEqual(r.checkpoint.structured, r.structured, 'the checkpoint keeps the answer');
  // The finished checkpoint resumed with '' gives the same answer without a model call.
  const again = await agent({ model: scriptedModel([]), output: cityOutput }).resume(JSON.stringify(r.checkpoint), '');
  assert.deepEqual(again.structured, r.structured);
});

test('scripted model: JSON text counts; prose is corrected; a field schema is wrapped in { value }', async () => {
  const json = await agent({ model: scriptedModel(['```json\n{"city":"Rome","population":2}\n```']), output: cityOutput }).prompt('Italy?');
  assert.deepEqual(json.structured, { city: 'Rome', population: 2 });

  const verdict = agent({ model: scriptedModel(['perhaps', turn(toolUse('v', 'final_answer', { value: 'no' }))]), output: (s) => s.enum(['yes', 'no']) });
  const r = await verdict.prompt('Ready?');
  assert.equal(r.structured, 'no');
  assert.match(r.messages[2].content[0].text ?? r.messages[2].content, /does not match the required output schema/);

  const plain = await agent({ model: scriptedModel(['hello']) }).prompt('hi');
  assert.equal(plain.structured, undefined, 'no output schema, no structured');
});

test('past maxOutputRetries: OutputError with the checkpoint; resuming it gives the model another chance', async () => {
  const bad = (id) => turn(toolUse(id, 'final_answer', { city: 5, population: 1 }));
  const script = [bad('a'), bad('b'), turn(toolUse('c', 'final_answer', { city: 'Oslo', population: 1 }))];
  const a = agent({ model: scriptedModel(script), output: cityOutput, maxOutputRetries: 1 });
  const err = await a.prompt('Norway?').catch((e) => e);
  assert.ok(err instanceof OutputError, String(err));
  assert.equal(err.name, 'OutputError');
  assert.equal(err.attempts, 2);
  assert.match(err.problem, /answer\.city/);
  assert.equal(err.checkpoint.messages.length, 4);
  const r = await a.resume(err.checkpoint, '');
  assert.deepEqual(r.structured, { city: 'Oslo', population: 1 });
  // The same failure as a stream's last event: plain JSON with the error's fields.
  const events = [];
  for await (const e of agent({ model: scriptedModel(script), output: cityOutput, maxOutputRetries: 1 }).stream({ prompt: 'Norway?' })) events.push(e);
  const last = events.at(-1);
  assert.equal(last.type, 'error');
  assert.equal(last.error.name, 'OutputError');
  assert.equal(last.error.attempts, 2);
  assert.match(last.error.problem, /answer\.city/);
  assert.equal(last.checkpoint.messages.length, 4);
});

test('config errors: a tool named final_answer next to output, a bad output schema, a bad bound', () => {
  const own = defineTool({ name: 'final_answer', handle: () => 'x' });
  assert.throws(() => agent({ model: scriptedModel([]), tools: [own], output: cityOutput }), (e) => e instanceof ConfigError && /final_answer.*rename/.test(e.message));
  assert.throws(() => agent({ model: scriptedModel([]), output: 42 }), (e) => e instanceof ConfigError && /config\.output/.test(e.message));
  assert.throws(() => agent({ model: scriptedModel([]), output: cityOutput, maxOutputRetries: -1 }), (e) => e instanceof ConfigError && /maxOutputRetries/.test(e.message));
});

test('without output, a tool of your own may be called final_answer and runs like any tool', async () => {
  let ran = 0;
  const own = defineTool({ name: 'final_answer', handle: () => { ran += 1; return 'mine'; } });
  const r = await agent({ model: scriptedModel([turn(toolUse('f', 'final_answer', {})), 'ok']), tools: [own] }).prompt('go');
  assert.equal(ran, 1);
  assert.equal(r.structured, undefined);
  assert.equal(resultsOf(r.messages[2])[0].content, 'mine');
});

test('a session keeps the structured answer; the next prompt asks again', async () => {
  const saver = memorySaver();
  const model = scriptedModel([
    turn(toolUse('f1', 'final_answer', { city: 'Paris', population: 1 })),
    turn(toolUse('f2', 'final_answer', { city: 'Lyon', population: 2 })),
  ]);
  const s = agent({ model, output: cityOutput }).session(saver, 'cities', { keepCompleted: true });
  assert.equal((await s.prompt('France?')).structured.city, 'Paris');
  assert.equal((await s.prompt('And the second city?')).structured.city, 'Lyon');
  assert.equal((await s.checkpoint()).structured.city, 'Lyon');
});

test('a follow-up to a finished structured answer reaches the model: the text joins the last user message', async () => {
  const first = await agent({ model: scriptedModel([turn(toolUse('f1', 'final_answer', { city: 'Paris', population: 2 }))]), output: cityOutput }).prompt('France?');
  assert.equal(first.checkpoint.messages.at(-1).role, 'user', 'the run ends on the final_answer result');
  const { model, requests } = recordingModel([turn(toolUse('f2', 'final_answer', { city: 'Rome', population: 3 }))]);
  const again = await agent({ model, output: cityOutput }).resume(JSON.stringify(first.checkpoint), 'And Italy?');
  assert.deepEqual(again.structured, { city: 'Rome', population: 3 });
  const last = requests[0].messages.at(-1);
  assert.equal(last.role, 'user');
  assert.deepEqual(last.content.at(-1), { type: 'text', text: 'And Italy?' }, 'the model sees the follow-up');
  assert.equal(requests[0].messages.length, first.checkpoint.messages.length);
  assert.deepEqual(again.messages, again.checkpoint.messages);
});
