// Every checkpoint format still resumes through the npm package, to the transcript in tests/fixtures/cases.json,
// and every fixture (and what resuming writes) validates against the published JSON Schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import { agent, defineTool, InterruptError, isInterrupted } from 'resumable-agent';

const require = createRequire(import.meta.url);
const FIXTURES = new URL('../fixtures/', import.meta.url);
const read = (name) => readFileSync(new URL(name, FIXTURES), 'utf8');
const { cases } = JSON.parse(read('cases.json'));
const schema = JSON.parse(readFileSync(require.resolve('resumable-agent/checkpoint.schema.json'), 'utf8'));
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

const tools = [
  defineTool({ name: 'lookup', handle: ({ key }) => ({ key, value: `v-${key}` }) }),
  defineTool({ name: 'ask_user', handle: ({ question }) => { throw new InterruptError(question); } }),
  defineTool({ name: 'send', needsApproval: true, handle: ({ to }) => ({ sent: to }) }),
];
const model = async (request) => ({ content: [{ type: 'text', text: `done after ${request.messages.length} messages` }] });

for (const c of cases) {
  test(`${c.file}: validates against the schema and resumes to its known transcript`, async () => {
    const text = read(c.file);
    assert.ok(validate(JSON.parse(text)), JSON.stringify(validate.errors));
    const done = await agent({ tools, model }).resume(text, c.answer);
    assert.equal(isInterrupted(done), false);
    assert.equal(done.text, c.expect.text);
    assert.deepEqual(done.messages, c.expect.messages);
    assert.ok(validate(done.checkpoint), JSON.stringify(validate.errors));
    assert.equal(done.checkpoint.version, 2);
  });
}

test('the schema refuses what is not a checkpoint', () => {
  for (const bad of [{}, { messages: [], iterations: -1, usage: { inputTokens: 0, outputTokens: 0 } },
    { messages: [{ role: 'bot', content: 'x' }], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 } },
    { messages: [], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 }, interrupts: [{ kind: 'question', id: 'a', toolName: 't', input: {} }] },
    { messages: [], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 }, version: 3 }]) {
    assert.equal(validate(bad), false, JSON.stringify(bad));
  }
});

test('the signed and sealed fixtures validate (a checkpoint, and the sealed envelope definition)', () => {
  const signed = JSON.parse(read('v2-signed.json'));
  assert.ok(validate(signed), JSON.stringify(validate.errors));
  assert.equal(validate({ ...signed, signature: { kid: 'k' } }), false, 'a signature needs its mac');
  const sealedSchema = new Ajv2020({ strict: false }).addSchema(schema).getSchema(`${schema.$id}#/$defs/sealed`);
  assert.ok(sealedSchema(JSON.parse(read('v2-sealed.json'))), JSON.stringify(sealedSchema.errors));
  assert.equal(sealedSchema({ version: 2, kid: 'k', sealed: 'x', messages: [] }), false);
});
