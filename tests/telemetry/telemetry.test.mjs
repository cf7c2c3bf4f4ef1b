// OpenTelemetry GenAI spans through the package's real wasm, read back from the real OpenTelemetry JS SDK
// (in-memory exporter, async-hooks context manager): the span tree, a pause resumed in another Node process and
// its link, a session's calls linked, provider attributes through the 127.0.0.1 stand-ins, errors, content off
// and on, tracers that throw, and no tracer.
import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  agent, agentTool, defineTool, scriptedModel, memorySaver, InterruptError, ConfigError, CheckpointError, isInterrupted,
} from 'resumable-agent';
import { setUpOtel, spansOf } from './otel.mjs';
import { pausingAgent } from './agents.mjs';
import { startServer, API_KEY } from '../providers/server.mjs';
import { makeAgent } from '../providers/agent-config.mjs';

const { exporter, tracer } = setUpOtel();
beforeEach(() => exporter.reset());

const toolUse = (id, name, input) => ({ type: 'tool_use', id, name, input });
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const INTERNAL = 0;
const CLIENT = 2;
const ERROR = 2;

const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => `value of ${key}` });
const twoTools = () => scriptedModel([
  { content: [toolUse('c1', 'lookup', { key: 'a' }), toolUse('c2', 'lookup', { key: 'b' })], usage: { inputTokens: 100, outputTokens: 20 } },
  { content: [{ type: 'text', text: 'Both found.' }], usage: { inputTokens: 150, outputTokens: 5 } },
]);

const byName = (spans, prefix) => spans.filter((s) => s.name.startsWith(prefix));

test('a run with two tools: invoke_agent under the caller\'s span, a chat span per model call, an execute_tool span per call', async () => {
  const a = agent({ instructions: 'Look things up.', model: twoTools(), tools: [lookup], telemetry: { tracer, agentName: 'researcher' } });
  const result = await tracer.startActiveSpan('POST /chat', async (request) => {
    try { return await a.prompt('find a and b'); } finally { request.end(); }
  });
  assert.equal(result.text, 'Both found.');
  const spans = spansOf(exporter);
  const [root] = spans.filter((s) => s.name === 'POST /chat');
  const [run] = byName(spans, 'invoke_agent');
  assert.equal(run.name, 'invoke_agent researcher');
  assert.equal(run.kind, INTERNAL);
  assert.equal(run.parentSpanId, root.spanId, 'invoke_agent is a child of the span the caller was in');
  assert.equal(run.traceId, root.traceId);
  assert.deepEqual(run.attributes, {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'researcher',
    'gen_ai.conversation.id': result.checkpoint.runId,
    'resumable_agent.call': 'prompt',
    'gen_ai.usage.input_tokens': 250,
    'gen_ai.usage.output_tokens': 25,
    'resumable_agent.run.status': 'completed',
  });
  const chats = byName(spans, 'chat');
  assert.equal(chats.length, 2);
  for (const [k, chat] of chats.entries()) {
    assert.equal(chat.name, 'chat scripted');
    assert.equal(chat.kind, CLIENT);
    assert.equal(chat.parentSpanId, run.spanId);
    assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(chat.attributes['gen_ai.provider.name'], 'scripted');
    assert.equal(chat.attributes['resumable_agent.step'], k + 1);
  }
  assert.deepEqual(chats[0].attributes['gen_ai.response.finish_reasons'], ['tool_call']);
  assert.deepEqual(chats[1].attributes['gen_ai.response.finish_reasons'], ['stop']);
  assert.equal(chats[0].attributes['gen_ai.usage.input_tokens'], 100);
  assert.equal(chats[1].attributes['gen_ai.usage.output_tokens'], 5);
  const tools = byName(spans, 'execute_tool');
  assert.deepEqual(tools.map((t) => [t.name, t.parentSpanId, t.attributes['gen_ai.tool.call.id'], t.kind]), [
    ['execute_tool lookup', run.spanId, 'c1', INTERNAL],
    ['execute_tool lookup', run.spanId, 'c2', INTERNAL],
  ]);
  assert.equal(tools[0].attributes['gen_ai.tool.type'], 'function');
  // Message content is not recorded unless asked for.
  for (const s of spans) {
    for (const key of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result']) {
      assert.equal(s.attributes[key], undefined, `${s.name} records ${key} without recordContent`);
    }
  }
  // The checkpoint carries the run's span: what a resumed run links to.
  assert.equal(result.checkpoint.traceparent, `00-${run.traceId}-${run.spanId}-01`);
});

test('a pause resumed in another Node process: the paused run records the interrupt, the resumed one links to it and records the decision', async () => {
  const paused = await pausingAgent(tracer).prompt('pay 5');
  assert.ok(isInterrupted(paused));
  const [first] = byName(spansOf(exporter), 'invoke_agent');
  assert.equal(first.attributes['resumable_agent.run.status'], 'paused');
  const pausedEvent = first.events.find((e) => e.name === 'gen_ai.agent.paused');
  assert.deepEqual(pausedEvent.attributes, { 'gen_ai.agent.interrupt.ids': ['p1'], 'gen_ai.agent.interrupt.kinds': ['approval'] });
  assert.match(paused.checkpoint.traceparent, TRACEPARENT);
  assert.equal(paused.checkpoint.traceparent, `00-${first.traceId}-${first.spanId}-01`);

  const dir = mkdtempSync(join(tmpdir(), 'ra-otel-'));
  const file = join(dir, 'paused.json');
  writeFileSync(file, JSON.stringify(paused.checkpoint));
  const child = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('./child.mjs', import.meta.url)), file], { timeout: 30_000 });
  const out = JSON.parse(child.stdout);
  assert.equal(out.text, 'Paused.'.replace('Paused', 'Paid'));
  const [resumed] = byName(out.spans, 'invoke_agent');
  assert.equal(resumed.attributes['resumable_agent.call'], 'resume');
  assert.deepEqual(resumed.links, [{ traceId: first.traceId, spanId: first.spanId }], 'the resumed run links to the paused one');
  assert.notEqual(resumed.traceId, first.traceId, 'a new trace in the new process (no caller span there)');
  const decided = resumed.events.find((e) => e.name === 'gen_ai.agent.resumed');
  assert.deepEqual(decided.attributes, { 'gen_ai.agent.interrupt.ids': ['p1'], 'gen_ai.agent.decision.outcomes': ['approved'] });
  // The tool ran there, once, under the resumed run; usage counts only what this call spent.
  assert.deepEqual(byName(out.spans, 'execute_tool').map((t) => t.parentSpanId), [resumed.spanId]);
  assert.equal(resumed.attributes['gen_ai.usage.input_tokens'], 20);
  assert.equal(out.traceparent, `00-${resumed.traceId}-${resumed.spanId}-01`);
});

test('decision outcomes: denied, answered and expired are recorded as such', async () => {
  const ask = defineTool({ name: 'ask', schema: (s) => ({ q: s.string() }), handle: ({ q }) => { throw new InterruptError(q ?? 'what?'); } });
  const send = defineTool({ name: 'send', schema: (s) => ({}), needsApproval: true, handle: () => 'sent' });
  const late = defineTool({ name: 'late', schema: (s) => ({}), needsApproval: () => ({ expiresInMs: 1 }), onExpire: 'deny', handle: () => 'ran' });
  const model = scriptedModel([{ content: [toolUse('s', 'send', {}), toolUse('l', 'late', {})] }, { content: [toolUse('q', 'ask', { q: 'colour?' })] }, 'done']);
  const a = agent({ model, tools: [ask, send, late], telemetry: { tracer } });
  const first = await a.prompt('go');
  await new Promise((r) => setTimeout(r, 5));
  const second = await a.resume(first.checkpoint, { decisions: [{ type: 'deny', message: 'no' }, { type: 'approve' }] });
  assert.ok(isInterrupted(second));
  const third = await a.resume(second.checkpoint, 'blue');
  assert.equal(third.text, 'done');
  const runs = byName(spansOf(exporter), 'invoke_agent');
  const outcomes = runs.map((r) => r.events.find((e) => e.name === 'gen_ai.agent.resumed')?.attributes['gen_ai.agent.decision.outcomes']);
  assert.deepEqual(outcomes, [undefined, ['denied', 'expired'], ['answered']]);
  // The paused run says when its first interrupt expires.
  const paused = runs[0].events.find((e) => e.name === 'gen_ai.agent.paused');
  assert.equal(paused.attributes['gen_ai.agent.interrupt.expires_at'], first.checkpoint.interrupts[1].expiresAt);
  // The question tool's span ends normally, marked as the one that paused.
  const [asked] = byName(spansOf(exporter), 'execute_tool ask');
  assert.equal(asked.status.code, 0);
  assert.equal(asked.attributes['resumable_agent.tool.interrupted'], true);
  assert.equal(runs[1].links[0].spanId, runs[0].spanId);
  assert.equal(runs[2].links[0].spanId, runs[1].spanId);
});

test('a session of three calls: one conversation id, each call linked to the one before', async () => {
  const model = scriptedModel(['one', 'two', 'three']);
  const a = agent({ model, telemetry: { tracer, agentName: 'chat' } });
  const saver = memorySaver();
  const session = a.session(saver, 'conv-42', { keepCompleted: true });
  for (const m of ['a', 'b', 'c']) await session.prompt(m);
  const runs = byName(spansOf(exporter), 'invoke_agent');
  assert.equal(runs.length, 3);
  assert.deepEqual(runs.map((r) => r.attributes['gen_ai.conversation.id']), ['conv-42', 'conv-42', 'conv-42']);
  assert.deepEqual(runs.map((r) => r.attributes['resumable_agent.call']), ['session.prompt', 'session.prompt', 'session.prompt']);
  assert.deepEqual(runs[0].links, []);
  assert.deepEqual(runs[1].links, [{ traceId: runs[0].traceId, spanId: runs[0].spanId }]);
  assert.deepEqual(runs[2].links, [{ traceId: runs[1].traceId, spanId: runs[1].spanId }]);
  const saved = await session.checkpoint();
  assert.equal(saved.traceparent, `00-${runs[2].traceId}-${runs[2].spanId}-01`);
});

describe('providers: attributes through the 127.0.0.1 stand-ins', () => {
  let srv;
  let base;
  before(async () => { srv = await startServer(); base = `http://127.0.0.1:${srv.port}`; });
  after(() => srv.server.close());

  const expected = {
    anthropic: { provider: 'anthropic', model: 'claude-test', finish: ['tool_call', 'stop'] },
    openai: { provider: 'openai', model: 'gpt-test', finish: ['tool_call', 'stop'] },
    'openai-responses': { provider: 'openai', model: 'gpt-test', finish: ['tool_call', 'stop'] },
    gemini: { provider: 'gcp.gemini', model: 'gemini-test', finish: ['tool_call', 'stop'] },
  };
  for (const [provider, want] of Object.entries(expected)) {
    test(`${provider}: provider, request model, response id, finish reasons, usage`, async () => {
      const a = makeAgent(provider, base, API_KEY, {}, { telemetry: { tracer } });
      const r = await a.prompt('scenario:tool go');
      assert.match(r.text, /Found/);
      const chats = byName(spansOf(exporter), 'chat');
      assert.equal(chats.length, 2);
      for (const c of chats) {
        assert.equal(c.name, `chat ${want.model}`);
        assert.equal(c.attributes['gen_ai.provider.name'], want.provider);
        assert.equal(c.attributes['gen_ai.request.model'], want.model);
        assert.equal(typeof c.attributes['gen_ai.response.id'], 'string', `${provider}: response id`);
        assert.ok(c.attributes['gen_ai.response.id'].length > 0);
        assert.ok(Number.isInteger(c.attributes['gen_ai.usage.input_tokens']));
        assert.ok(Number.isInteger(c.attributes['gen_ai.usage.output_tokens']));
      }
      assert.deepEqual(chats.map((c) => c.attributes['gen_ai.response.finish_reasons']), want.finish.map((f) => [f]));
    });
  }

  test('a retried request shows its retries; a failed one is an ERROR span with the HTTP status as error.type', async () => {
    const a = makeAgent('openai', base, API_KEY, { maxRetries: 1 }, { telemetry: { tracer } });
    await a.prompt('scenario:retry429 hi');
    const [retried] = byName(spansOf(exporter), 'chat');
    assert.equal(retried.attributes['resumable_agent.retries'], 1);
    assert.equal(retried.status.code, 0);
    exporter.reset();
    const failing = makeAgent('anthropic', base, API_KEY, { maxRetries: 0 }, { telemetry: { tracer } });
    await assert.rejects(failing.prompt('scenario:error500 hi'), (e) => e.name === 'ModelError');
    const spans = spansOf(exporter);
    const [chat] = byName(spans, 'chat');
    assert.equal(chat.status.code, ERROR);
    assert.equal(chat.attributes['error.type'], '500');
    const [run] = byName(spans, 'invoke_agent');
    assert.equal(run.status.code, ERROR);
    assert.equal(run.attributes['error.type'], 'ModelError');
    assert.equal(run.attributes['resumable_agent.run.status'], 'failed');
  });
});

test('a tool that throws: its span is an ERROR with error.type tool_error; the run goes on', async () => {
  const broken = defineTool({ name: 'broken', schema: (s) => ({}), handle: () => { throw new TypeError('no database'); } });
  const a = agent({ model: scriptedModel([{ content: [toolUse('b', 'broken', {})] }, 'recovered']), tools: [broken], telemetry: { tracer } });
  assert.equal((await a.prompt('go')).text, 'recovered');
  const [span] = byName(spansOf(exporter), 'execute_tool');
  assert.equal(span.status.code, ERROR);
  assert.equal(span.attributes['error.type'], 'tool_error');
});

test('recordContent: the conventions\' message attributes, as JSON', async () => {
  const a = agent({ instructions: 'Look things up.', model: twoTools(), tools: [lookup], telemetry: { tracer, recordContent: true } });
  await a.prompt('find a and b');
  const spans = spansOf(exporter);
  const [first, second] = byName(spans, 'chat');
  assert.deepEqual(JSON.parse(first.attributes['gen_ai.system_instructions']), [{ type: 'text', content: 'Look things up.' }]);
  assert.deepEqual(JSON.parse(first.attributes['gen_ai.input.messages']), [{ role: 'user', parts: [{ type: 'text', content: 'find a and b' }] }]);
  assert.deepEqual(JSON.parse(first.attributes['gen_ai.output.messages']), [{
    role: 'assistant',
    parts: [{ type: 'tool_call', id: 'c1', name: 'lookup', arguments: { key: 'a' } }, { type: 'tool_call', id: 'c2', name: 'lookup', arguments: { key: 'b' } }],
    finish_reason: 'tool_call',
  }]);
  const input = JSON.parse(second.attributes['gen_ai.input.messages']);
  assert.deepEqual(input.at(-1), { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: 'value of a' }, { type: 'tool_call_response', id: 'c2', response: 'value of b' }] });
  const [tool] = byName(spans, 'execute_tool');
  assert.equal(tool.attributes['gen_ai.tool.call.arguments'], '{"key":"a"}');
  assert.equal(tool.attributes['gen_ai.tool.call.result'], 'value of a');
});

test('recordContent stays within its bound: the newest messages that fit, a long text cut and saying so', async () => {
  const big = 'x'.repeat(100_000);
  const a = agent({ model: scriptedModel(['ok']), telemetry: { tracer, recordContent: true } });
  await a.prompt(big);
  const [chat] = byName(spansOf(exporter), 'chat');
  const text = chat.attributes['gen_ai.input.messages'];
  assert.ok(text.length <= 32 * 1024, `${text.length} bytes`);
  const content = JSON.parse(text)[0].parts[0].content;
  assert.match(content, /…\[91808 more bytes\]$/);
});

test('a tracer that throws never breaks a run', async () => {
  const throwing = { startSpan() { throw new Error('exporter down'); } };
  const a = agent({ model: twoTools(), tools: [lookup], telemetry: { tracer: throwing } });
  const r = await a.prompt('go');
  assert.equal(r.text, 'Both found.');
  assert.equal(r.checkpoint.traceparent, undefined);
  // Spans whose every method throws, and whose context is nonsense.
  const bad = {
    startSpan() {
      const fail = () => { throw new Error('broken span'); };
      return { setAttribute: fail, addEvent: fail, setStatus: fail, end: fail, spanContext: () => ({ traceId: 'zz', spanId: 1 }) };
    },
  };
  const b = agent({ model: twoTools(), tools: [lookup], telemetry: { tracer: bad } });
  const rb = await b.prompt('go');
  assert.equal(rb.text, 'Both found.');
  assert.equal(rb.checkpoint.traceparent, undefined, 'a malformed span context is not kept');
  // Ids that look almost right (upper case, all zeros): not kept either, so the checkpoint still resumes.
  for (const [traceId, spanId] of [['A'.repeat(32), 'b'.repeat(16)], ['0'.repeat(32), 'b'.repeat(16)]]) {
    const odd = { startSpan: () => ({ setAttribute() {}, addEvent() {}, setStatus() {}, end() {}, spanContext: () => ({ traceId, spanId, traceFlags: 1 }) }) };
    const paused = await pausingAgent(odd).prompt('pay 5');
    assert.equal(paused.checkpoint.traceparent, undefined);
    assert.equal((await pausingAgent(odd).resume(paused.checkpoint, { decisions: [{ type: 'approve' }] })).text, 'Paid.');
  }
});

test('no tracer: no spans, no trace context in the checkpoint; a bad telemetry option is a ConfigError naming it', async () => {
  const a = agent({ model: twoTools(), tools: [lookup] });
  const r = await a.prompt('go');
  assert.equal(spansOf(exporter).length, 0);
  assert.equal(r.checkpoint.traceparent, undefined);
  assert.throws(() => agent({ model: twoTools(), telemetry: { tracer: {} } }), (e) => e instanceof ConfigError && /config\.telemetry\.tracer: expected an OpenTelemetry Tracer/.test(e.message));
  assert.throws(() => agent({ model: twoTools(), telemetry: { tracer, agentname: 'x' } }), (e) => e instanceof ConfigError && /config\.telemetry\.agentname: unknown option/.test(e.message));
  assert.throws(() => agent({ model: twoTools(), telemetry: { tracer, recordContent: 'yes' } }), (e) => e instanceof ConfigError && /recordContent: expected a boolean/.test(e.message));
});

test('an untraced agent resumes a traced checkpoint and keeps its trace context; old checkpoints without it load', async () => {
  const paused = await pausingAgent(tracer).prompt('pay 5');
  // The same agent but for its tracer (which is not part of it: no drift).
  const untraced = agent({ instructions: 'Pay what is asked.', model: scriptedModel([{ content: [toolUse('p1', 'pay', { amount: 5 })] }, 'Paid.']), tools: [defineTool({ name: 'pay', schema: (s) => ({ amount: s.number().required() }), needsApproval: true, handle: () => 'paid' })] });
  const done = await untraced.resume(paused.checkpoint, { decisions: [{ type: 'approve' }] });
  assert.equal(done.checkpoint.traceparent, paused.checkpoint.traceparent);
  const old = { ...paused.checkpoint };
  delete old.traceparent;
  assert.equal((await pausingAgent(tracer).resume(old, { decisions: [{ type: 'approve' }] })).text, 'Paid.');
});

test('hostile checkpoints: a malformed or oversized traceparent is refused naming it; signed checkpoints cover it', async () => {
  const paused = await pausingAgent(tracer).prompt('pay 5');
  for (const bad of ['00-zz', `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`, 'x'.repeat(10_000), 42]) {
    await assert.rejects(pausingAgent(tracer).resume({ ...paused.checkpoint, traceparent: bad }, { decisions: [{ type: 'approve' }] }),
      (e) => e instanceof CheckpointError && /traceparent/.test(e.message), `traceparent ${String(bad).slice(0, 20)}`);
  }
  const keys = { current: 'k1', keys: { k1: 'a-secret-of-at-least-32-bytes-long!!' } };
  const signed = agent({ model: scriptedModel([{ content: [toolUse('p1', 'pay', { amount: 5 })] }, 'Paid.']), tools: [defineTool({ name: 'pay', schema: (s) => ({ amount: s.number() }), needsApproval: true, handle: () => 'paid' })], checkpointKeys: keys, telemetry: { tracer } });
  const p = await signed.prompt('pay');
  assert.match(p.checkpoint.traceparent, TRACEPARENT);
  const moved = { ...p.checkpoint, traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` };
  await assert.rejects(signed.resume(moved, { decisions: [{ type: 'approve' }] }), (e) => e instanceof CheckpointError && e.code === 'SIGNATURE');
  assert.equal((await signed.resume(p.checkpoint, { decisions: [{ type: 'approve' }] })).text, 'Paid.');
});

test("'resumable-agent/core' has no telemetry: a ConfigError says where to import it from", async () => {
  const { execFileSync } = await import('node:child_process');
  const script = `import { agent, scriptedModel } from 'resumable-agent/core';
try { agent({ model: scriptedModel(['x']), telemetry: { tracer: { startSpan() {} } } }); console.log('no error'); }
catch (e) { console.log(e.name + ': ' + e.message); }`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('.', import.meta.url)), encoding: 'utf8', timeout: 20_000 });
  assert.match(out, /^ConfigError: config\.telemetry needs telemetry, which 'resumable-agent\/core' does not have/);
});

test('MCP tools: an execute_tool span per call; an elicitation pauses the run with an elicitation interrupt and its answer resumes it', async () => {
  const { mcpTools } = await import('resumable-agent');
  const { modernServer, TOKEN } = await import('../mcp/servers.mjs');
  const server = await modernServer();
  try {
    const tools = await mcpTools({ url: server.url, headers: { authorization: `Bearer ${TOKEN}` } });
    const model = async (request) => (request.messages.length === 1
      ? { content: [toolUse('b1', 'book', { city: 'Oslo' })] }
      : { content: [{ type: 'text', text: `read: ${request.messages.at(-1).content[0].content}` }] });
    const a = agent({ model, tools, telemetry: { tracer } });
    const paused = await a.prompt('book');
    assert.ok(isInterrupted(paused));
    const first = spansOf(exporter);
    const [call] = byName(first, 'execute_tool book');
    assert.equal(call.attributes['gen_ai.tool.call.id'], 'b1');
    assert.equal(call.attributes['resumable_agent.tool.interrupted'], true, 'the call that asked for input paused the run');
    const [run1] = byName(first, 'invoke_agent');
    assert.deepEqual(run1.events.find((e) => e.name === 'gen_ai.agent.paused').attributes['gen_ai.agent.interrupt.kinds'], ['elicitation']);
    exporter.reset();
    const done = await a.resume(paused.checkpoint, { type: 'accept', content: { date: '2026-11-30' } });
    assert.equal(done.text, 'read: booked Oslo on 2026-11-30');
    const second = spansOf(exporter);
    const [run2] = byName(second, 'invoke_agent');
    assert.deepEqual(run2.events.find((e) => e.name === 'gen_ai.agent.resumed').attributes['gen_ai.agent.decision.outcomes'], ['answered']);
    const [again] = byName(second, 'execute_tool book');
    assert.equal(again.parentSpanId, run2.spanId);
    assert.equal(again.status.code, 0);
    assert.equal(again.attributes['resumable_agent.tool.interrupted'], undefined);
  } finally {
    await server.close();
  }
});

test("a subagent's run is traced under the lead's execute_tool span, by the lead's tracer when it has none, and its resumed run links to its paused one", async () => {
  const pay = defineTool({ name: 'pay', needsApproval: true, handle: () => 'paid' });
  const payments = agent({ model: scriptedModel([{ content: [toolUse('k1', 'pay', { amount: 20 })] }, 'Paid.']), tools: [pay] });
  const lead = () => agent({
    model: scriptedModel([{ content: [toolUse('c1', 'payments', { task: 'pay' })] }, 'Settled.']),
    tools: [agentTool({ name: 'payments', description: 'Pays invoices.', agent: payments })],
    telemetry: { tracer, agentName: 'lead' },
  });
  const paused = await lead().prompt('settle');
  const done = await lead().resume(JSON.parse(JSON.stringify(paused.checkpoint)), { decisions: { 'c1/k1': { type: 'approve' } } });
  assert.equal(done.text, 'Settled.');
  const spans = spansOf(exporter);
  const leads = spans.filter((s) => s.name === 'invoke_agent lead');
  const children = spans.filter((s) => s.name === 'invoke_agent payments');
  assert.equal(leads.length, 2);
  assert.equal(children.length, 2, spans.map((s) => s.name).join(', '));
  for (const [k, child] of children.entries()) {
    const call = spans.find((s) => s.spanId === child.parentSpanId);
    assert.equal(call?.name, 'execute_tool payments', `the subagent's run ${k} is under the lead's call`);
    assert.equal(call.parentSpanId, leads[k].spanId);
    assert.equal(child.traceId, leads[k].traceId);
    assert.equal(child.attributes['gen_ai.agent.name'], 'payments');
    assert.ok(spans.some((s) => s.name.startsWith('chat') && s.parentSpanId === child.spanId), "the subagent's model call under its run");
  }
  assert.equal(children[0].attributes['resumable_agent.run.status'], 'paused');
  assert.equal(children[1].attributes['resumable_agent.run.status'], 'completed');
  // The subagent's run kept in the lead's checkpoint carries its span; its resumed run links to it.
  assert.equal(paused.checkpoint.pendingInput.state.traceparent, `00-${children[0].traceId}-${children[0].spanId}-01`);
  assert.deepEqual(children[1].links, [{ traceId: children[0].traceId, spanId: children[0].spanId }]);
});
