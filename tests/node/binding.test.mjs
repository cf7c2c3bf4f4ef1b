// The binding only converts (issue 23): every options object is read by the core — an unknown or misspelled
// key is a ConfigError naming it and the nearest known one, never a silent default; a signed checkpoint is
// authenticated before it is read; a JS model is shown the checked history; a tool's result has one text
// whatever host ran it; numbers re-spelled by a store still read.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  agent, scriptedModel, defineTool, InterruptError, memorySaver, openai, anthropic, kvSaver, indexedDbSaver, workersAI,
  fileSaver, CheckpointError, ConfigError,
} from 'resumable-agent';
import { kvStandIn } from './kv-standin.mjs';
import { toolUse, turn } from './helpers.mjs';

const model = scriptedModel(['ok']);
const refusedWith = (fn, pattern) => assert.throws(fn, (e) => e instanceof ConfigError && pattern.test(e.message), String(pattern));

describe('every options object refuses what it does not know, naming the nearest known key', () => {
  test('agent config', () => {
    refusedWith(() => agent({ model, system: 'Be brief.' }), /config\.system: unknown option; did you mean "instructions"\?/);
    refusedWith(() => agent({ model, maxSteps: 3 }), /config\.maxSteps: unknown option; did you mean "maxIterations"\?/);
    refusedWith(() => agent({ model, tool: [] }), /config\.tool: unknown option; did you mean "tools"\?/);
    refusedWith(() => agent({ model, limits: { maxBytes: 10 } }), /config\.limits\.maxBytes: unknown option; did you mean "maxCheckpointBytes"\?/);
    refusedWith(() => agent({ model, onEvent: () => {} }), /config\.onEvent: unknown option/);
    refusedWith(() => agent({ model, compaction: { maxBytes: 1000, maxMesages: 4 } }), /config\.compaction\.maxMesages: unknown option; did you mean "maxMessages"\?/);
    refusedWith(() => agent({ model, maxIterations: '3' }), /config\.maxIterations: expected a positive integer, got string "3"/);
  });

  test('tools and their JSON Schemas, checked where they are defined', () => {
    const handle = () => 'x';
    refusedWith(() => defineTool({ name: 'a', parameters: { type: 'object' }, handle }), /defineTool\.parameters: unknown option; did you mean "schema"\?/);
    refusedWith(() => defineTool({ name: 'a', execute: handle, handle }), /defineTool\.execute: unknown option; did you mean "handle"\?/);
    refusedWith(() => defineTool({ name: 'a', schema: { type: 'object', properties: { q: { type: 'strng' } } }, handle }),
      /defineTool\.inputSchema\.properties\.q\.type: unknown type "strng"; did you mean "string"\?/);
    refusedWith(() => defineTool({ name: 'a', schema: { type: 'object', required: 'q' }, handle }), /inputSchema\.required: expected an array of property names, got string "q"/);
    refusedWith(() => defineTool({ name: 'a', schema: { type: 'object', propertys: {} }, handle }), /inputSchema\.propertys: unknown JSON Schema keyword; did you mean "properties"\?/);
    refusedWith(() => agent({ model, output: { type: 'object', properties: { n: { type: 'int' } } } }), /config\.output\.properties\.n\.type: unknown type "int"; did you mean "integer"\?/);
    // A JSON Schema of the full language still passes: formats, bounds, combinators, $defs, extensions.
    const rich = { type: 'object', properties: { when: { type: 'string', format: 'date', pattern: '^2' }, n: { type: ['integer', 'null'], minimum: 0 } }, $defs: {}, 'x-note': 1, additionalProperties: false };
    assert.deepEqual(defineTool({ name: 'ok', schema: rich, handle }).inputSchema, rich);
  });

  test('providers, savers and sessions', () => {
    refusedWith(() => openai({ model: 'm', baseUrl: 'http://127.0.0.1:1' }), /openai\(options\)\.baseUrl: unknown option; did you mean "baseURL"\?/);
    refusedWith(() => anthropic({ apiKey: 'k', model: 'm', max_tokens: 10 }), /anthropic\(options\)\.max_tokens: unknown option; did you mean "maxTokens"\?/);
    refusedWith(() => anthropic({ apiKey: 'k', model: 'm', thinking: { budgetTokens: 8000 } }), /thinking\.budgetTokens: must be below maxTokens \(4096\)/);
    refusedWith(() => workersAI({ run: async () => ({}) }, { model: 'm', stream: true }), /workersAI\(binding, options\)\.stream: unknown option/);
    refusedWith(() => kvSaver(kvStandIn(), { prefx: 'a:' }), /kvSaver options\.prefx: unknown option; did you mean "prefix"\?/);
    refusedWith(() => indexedDbSaver({ database: 'x' }), /indexedDbSaver options\.database: unknown option/);
    refusedWith(() => agent({ model }).session(memorySaver(), 's', { keepComplete: true }), /session options\.keepComplete: unknown option; did you mean "keepCompleted"\?/);
    const dir = mkdtempSync(join(tmpdir(), 'ra-options-'));
    try {
      refusedWith(() => fileSaver({ dir, namespace: 'x' }), /fileSaver options\.namespace: unknown option/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('call options and InterruptError', async () => {
    await assert.rejects(agent({ model }).prompt('hi', { onevent: () => {} }), /options\.onevent: unknown option \(known: onEvent, signal\)/);
    assert.throws(() => new InterruptError({ question: 'Which plan?' }), (e) => e instanceof ConfigError && /the question comes first, as a string: new InterruptError\("Which plan\?"/.test(e.message));
    assert.throws(() => new InterruptError('Q?', { choices: ['a'] }), /InterruptError options\.choices: unknown option/);
  });
});

const KEYS = { current: 'k', keys: { k: 'a secret of sixteen+ bytes' } };
const ask = defineTool({ name: 'ask_user', schema: (s) => ({ question: s.string().required() }), handle: ({ question }) => { throw new InterruptError(question); } });

describe('what a run reads back is what was checked', () => {
  test('a signed checkpoint with a field added anywhere is refused by its signature, not read without it', async () => {
    const a = agent({ model: scriptedModel([turn(toolUse('q', 'ask_user', { question: 'When?' })), 'Done.']), tools: [ask], checkpointKeys: KEYS });
    const paused = await a.prompt('Plan');
    for (const edit of [(c) => { c.note = 'approved'; }, (c) => { c.messages[0].name = 'admin'; }, (c) => { c.messages[1].content[0].cache_control = { type: 'ephemeral' }; }]) {
      const changed = structuredClone(paused.checkpoint);
      edit(changed);
      const e = await a.resume(changed, 'May').catch((x) => x);
      assert.ok(e instanceof CheckpointError && e.code === 'SIGNATURE', `${e?.code}: ${e?.message}`);
    }
    assert.equal((await a.resume(structuredClone(paused.checkpoint), 'May')).text, 'Done.');
  });

  test('a JS model is shown the history as the core read it: fields the format lacks dropped, lone surrogates replaced', async () => {
    let seen;
    const a = agent({ model: async (request) => { seen = request.messages; return { content: [{ type: 'text', text: 'ok' }] }; } });
    const text = '{"version":2,"messages":[{"role":"user","content":"a\\ud800b","name":"admin"},'
      + '{"role":"assistant","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],'
      + '"iterations":1,"usage":{"inputTokens":0,"outputTokens":0}}';
    await a.resume(text, 'next');
    assert.deepEqual(seen[0], { role: 'user', content: 'a\ufffdb' });
    assert.deepEqual(seen[1], { role: 'assistant', content: [{ type: 'text', text: 'hi' }] });
  });

  test('a resumed JS model sees the messages the core holds, whether JS parsed the text itself or the core wrote them', async () => {
    const ask = defineTool({ name: 'ask', handle: () => { throw new InterruptError('When?'); } });
    const lookup = defineTool({ name: 'lookup', handle: () => ({ b: 1, a: 'é' }) });
    const script = [turn(toolUse('l1', 'lookup', { n: 1 })), turn(toolUse('a1', 'ask', {}))];
    const paused = await agent({ model: scriptedModel(script), tools: [ask, lookup] }).prompt('Plan \u{1F600}.');
    const text = JSON.stringify(paused.checkpoint);
    const variants = {
      'the text as written': text,
      'the object': paused.checkpoint,
      'a key the format lacks': text.replace('"role":"user"', '"role":"user","name":"admin"'),
      'isError: false, left out when written': text.replace('"toolUseId":"l1"', '"toolUseId":"l1","isError":false'),
      'a number spelled otherwise': text.replace('"n":1', '"n":1.0'),
      'a lone surrogate': text.replace('Plan ', 'Plan \\ud800'),
    };
    for (const [what, checkpoint] of Object.entries(variants)) {
      let seen;
      const model = async (request) => { seen = request.messages; return { content: [{ type: 'text', text: 'ok' }] }; };
      const done = await agent({ model, tools: [ask, lookup] }).resume(checkpoint, 'Friday');
      assert.equal(seen.length, done.checkpoint.messages.length - 1, what);
      assert.deepEqual(seen, done.checkpoint.messages.slice(0, -1), what);
    }
  });

  test("a tool's object result reaches the model as one text, whatever host ran the tool (keys sorted, numbers as JS writes them)", async () => {
    const lookup = defineTool({ name: 'lookup', handle: () => ({ b: 1, a: 1.0, c: { z: [2.5, 'x'], y: null } }) });
    const r = await agent({ model: scriptedModel([turn(toolUse('c1', 'lookup', {})), 'done']), tools: [lookup] }).prompt('go');
    assert.equal(r.messages[2].content[0].content, '{"a":1,"b":1,"c":{"y":null,"z":[2.5,"x"]}}');
  });

  test('whole numbers a store re-spelled (8.0) read as they were written', async () => {
    const a = agent({ model: scriptedModel([turn(toolUse('q', 'ask_user', { question: 'When?' })), 'Done.']), tools: [ask] });
    const paused = await a.prompt('Plan');
    const text = JSON.stringify(paused.checkpoint)
      .replace('"iterations":1', '"iterations":1.0')
      .replace('"inputTokens":0', '"inputTokens":0.0')
      .replace('"version":2', '"version":2e0');
    assert.notEqual(text, JSON.stringify(paused.checkpoint));
    const done = await a.resume(text, 'May');
    assert.equal(done.text, 'Done.');
    assert.equal(done.iterations, 2);
  });
});

test('a DecisionError names the interrupt it is about, also for a decision given by its place', async () => {
  const send = defineTool({ name: 'send', needsApproval: true, handle: () => 'sent' });
  const a = agent({ model: scriptedModel([turn(toolUse('c1', 'send', {}), toolUse('c2', 'send', {})), 'done']), tools: [send] });
  const paused = await a.prompt('go');
  for (const [decisions, id] of [[[{ type: 'approve' }, { type: 'maybe' }], 'c2'], [[{ type: 'approve', extra: 1 }, { type: 'deny' }], 'c1'], [{ c2: { type: 'nope' }, c1: { type: 'approve' } }, 'c2']]) {
    const e = await a.resume(paused.checkpoint, { decisions }).catch((x) => x);
    assert.equal(e.name, 'DecisionError', e.message);
    assert.equal(e.interruptId, id, e.message);
    assert.match(e.message, new RegExp(`decision for "${id}"`));
  }
});

test("a provider error that echoes the API key in pieces shows none of them, in the message or the stack", async () => {
  const { createServer } = await import('node:http');
  const key = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${key.slice(0, 20)}…${key.slice(-4)}` } }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const model = openai({ apiKey: key, model: 'gpt-test', baseURL: `http://127.0.0.1:${server.address().port}/v1`, maxRetries: 0 });
    const e = await agent({ model }).prompt('hi').catch((x) => x);
    assert.equal(e.name, 'ModelError');
    assert.equal(e.status, 401);
    for (const text of [e.message, e.stack, JSON.stringify(e)]) {
      assert.ok(!text.includes(key.slice(0, 8)) && !text.includes(key.slice(8, 20)), text);
    }
  } finally {
    server.close();
  }
});

test("one name per concept: a history entry reads as a checkpoint's thread and a listing do (step, parentStep, updatedAt)", async () => {
  const saver = memorySaver();
  const a = agent({ model: scriptedModel([turn(toolUse('q', 'ask_user', { question: 'When?' })), 'Done.']), tools: [ask] });
  const s = a.session(saver, 'names', { keepCompleted: true, autoSave: 'step' });
  await s.prompt('Plan');
  await s.label(2, 'asked');
  await s.restore('asked');
  const [latest] = await s.history({ limit: 1 });
  const cp = await s.checkpoint();
  assert.equal(latest.step, cp.thread.step);
  assert.equal(latest.parentStep, cp.thread.parentStep);
  assert.equal(latest.parentStep, 2, 'a restore branches from the step it restored');
  assert.equal(latest.updatedAt, cp.updatedAt);
  // The older names, deprecated, say the same.
  assert.deepEqual([latest.id, latest.parentId, latest.createdAt], [String(latest.step), String(latest.parentStep), latest.updatedAt]);
  assert.equal((await s.checkpoint(latest.step)).thread.step, latest.step);
});
