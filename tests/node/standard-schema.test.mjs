// Standard Schema (Zod 4, Valibot, ArkType) as a tool's schema and as an agent's output, through the real wasm:
// the JSON Schema the model is shown, input the validator refuses answered as an error result naming the issue,
// handle given the validated (transformed) value, and a library without Standard JSON Schema refused naming the fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import * as v from 'valibot';
import { toStandardJsonSchema } from '@valibot/to-json-schema';
import { type } from 'arktype';
import { agent, defineTool, scriptedModel, ConfigError, isInterrupted } from 'resumable-agent';
import { recordingModel, toolUse, turn } from './helpers.mjs';

const libraries = {
  zod: () => z.object({ city: z.string().min(2), days: z.number().int().positive().optional() }),
  valibot: () => toStandardJsonSchema(v.object({ city: v.pipe(v.string(), v.minLength(2)), days: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))) })),
  arktype: () => type({ city: 'string >= 2', 'days?': 'number.integer > 0' }),
};

for (const [name, schemaOf] of Object.entries(libraries)) {
  test(`${name}: the model sees its JSON Schema; handle gets the validated input; what the validator refuses is an error result`, async () => {
    const seen = [];
    const weather = defineTool({ name: 'weather', description: 'The weather in a city.', schema: schemaOf(), handle: (input) => { seen.push(input); return `sunny in ${input.city}`; } });
    assert.equal(weather.inputSchema.type, 'object');
    assert.deepEqual(weather.inputSchema.required, ['city']);
    assert.equal(weather.inputSchema.properties.city.type, 'string');
    assert.equal(weather.inputSchema.$schema, undefined, 'the $schema keyword is left out');
    // 'O' passes the JSON Schema's type but not the validator's minimum length (ArkType and Valibot write it into
    // the JSON Schema too: then the core refuses it first). Either way the model reads an error naming city.
    const { model, requests } = recordingModel([
      turn(toolUse('w1', 'weather', { city: 'O' })),
      turn(toolUse('w2', 'weather', { city: 'Oslo', days: 2 })),
      { content: [{ type: 'text', text: 'done' }] },
    ]);
    const r = await agent({ model, tools: [weather] }).prompt('weather?');
    assert.equal(r.text, 'done');
    assert.deepEqual(requests[0].tools.map((t) => t.inputSchema.properties.city.type), ['string']);
    const first = requests[1].messages.at(-1).content[0];
    assert.equal(first.isError, true);
    assert.match(first.content, /city/);
    const second = requests[2].messages.at(-1).content[0];
    assert.deepEqual([second.isError, second.content], [undefined, 'sunny in Oslo']);
    assert.deepEqual(seen, [{ city: 'Oslo', days: 2 }], 'handle ran once, with the valid input');
  });

  test(`${name}: as the agent's output, its JSON Schema shapes the answer`, async () => {
    const model = scriptedModel([{ content: [toolUse('f', 'final_answer', { city: 'Paris', days: 3 })] }]);
    const r = await agent({ model, output: schemaOf() }).prompt('pick a city');
    assert.deepEqual(r.structured, { city: 'Paris', days: 3 });
    const bad = scriptedModel([{ content: [toolUse('f', 'final_answer', { days: 3 })] }, { content: [toolUse('g', 'final_answer', { city: 'Rome' })] }]);
    const fixed = await agent({ model: bad, output: schemaOf() }).prompt('pick a city');
    assert.deepEqual(fixed.structured, { city: 'Rome' }, 'an answer missing city was fed back and corrected');
  });
}

test('zod: a transform runs before handle (the validated value, not the raw input)', async () => {
  const seen = [];
  const t = defineTool({ name: 'count', schema: z.object({ word: z.string().transform((w) => w.toUpperCase()) }), handle: ({ word }) => { seen.push(word); return word; } });
  const r = await agent({ model: scriptedModel([turn(toolUse('c', 'count', { word: 'hi' })), 'ok']), tools: [t] }).prompt('go');
  assert.equal(r.text, 'ok');
  assert.deepEqual(seen, ['HI']);
});

test('a Standard Schema without Standard JSON Schema (plain Valibot) is a ConfigError naming the fix', () => {
  assert.throws(() => defineTool({ name: 'x', schema: v.object({ a: v.string() }), handle: () => 'x' }),
    (e) => e instanceof ConfigError && /defineTool\.schema: this valibot schema has no JSON Schema.*toStandardJsonSchema\(schema\) from '@valibot\/to-json-schema'/.test(e.message));
  assert.throws(() => agent({ model: scriptedModel(['x']), output: v.string() }),
    (e) => e instanceof ConfigError && /config\.output: this valibot schema/.test(e.message));
  // A schema its library cannot write as JSON Schema: the library's reason, named.
  assert.throws(() => defineTool({ name: 'y', schema: z.object({ d: z.date() }), handle: () => 'y' }),
    (e) => e instanceof ConfigError && /defineTool\.schema: zod could not write this schema as JSON Schema/.test(e.message));
});

test('a validator that throws or is async: async works; a throw is the tool\'s error result, the run goes on', async () => {
  const asyncSchema = { '~standard': { version: 1, vendor: 'mine', validate: async (x) => ({ value: { ...x, checked: true } }), jsonSchema: { input: () => ({ type: 'object', properties: { a: { type: 'string' } } }) } } };
  const seen = [];
  const ok = defineTool({ name: 'ok', schema: asyncSchema, handle: (input) => { seen.push(input); return 'fine'; } });
  const throwing = defineTool({ name: 'boom', schema: { '~standard': { ...asyncSchema['~standard'], validate: () => { throw new Error('validator broke'); } } }, handle: () => 'never' });
  const { model, requests } = recordingModel([turn(toolUse('a', 'ok', { a: 'x' }), toolUse('b', 'boom', { a: 'y' })), { content: [{ type: 'text', text: 'done' }] }]);
  const r = await agent({ model, tools: [ok, throwing] }).prompt('go');
  assert.ok(!isInterrupted(r));
  assert.deepEqual(seen, [{ a: 'x', checked: true }]);
  const results = requests[1].messages.at(-1).content;
  assert.deepEqual(results.map((b) => [b.toolUseId, b.isError ?? false]), [['a', false], ['b', true]]);
  assert.match(results[1].content, /validator broke/);
});

test('a refinement JSON Schema cannot say: the validator refuses it, and the model reads each issue with its path', async () => {
  const seen = [];
  const t = defineTool({
    name: 'weather',
    schema: z.object({ city: z.string().refine((c) => c !== 'Atlantis', 'no such city'), when: z.object({ day: z.number().refine((d) => d < 8, 'at most a week ahead') }) }),
    handle: (input) => { seen.push(input); return 'ok'; },
  });
  const { model, requests } = recordingModel([turn(toolUse('w', 'weather', { city: 'Atlantis', when: { day: 9 } })), { content: [{ type: 'text', text: 'done' }] }]);
  await agent({ model, tools: [t] }).prompt('go');
  const result = requests[1].messages.at(-1).content[0];
  assert.equal(result.isError, true);
  assert.equal(result.content, 'invalid input for weather: city: no such city; when.day: at most a week ahead');
  assert.deepEqual(seen, []);
});
