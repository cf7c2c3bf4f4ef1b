// A traced agent in a real local workerd (wrangler dev), its session in KV: the OpenTelemetry JS SDK bundled
// into the Worker, the spans of a paused call and of the request that resumes it, linked; lists written as
// JSON text (Workers' own tracing takes scalar attributes only). Beside it, in the same Worker: guardrails, and a payment
// that two approvers approve in requests of their own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker, ROOT } from './harness.mjs';

let dir;
let worker;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kv-traced-'));
  worker = await startWorker({ config: join(ROOT, 'tests/workers/traced/wrangler.toml'), persistTo: dir });
});
after(async () => {
  await worker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const post = async (body) => {
  const res = await fetch(worker.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
};

test('workerd: a paused session call and the request that resumes it, linked through the checkpoint in KV', async () => {
  const first = await post({ sessionId: 's1', message: 'pay 5' });
  assert.equal(first.interrupted, true);
  const run1 = first.spans.find((s) => s.name === 'invoke_agent payer');
  assert.equal(run1.attributes['gen_ai.conversation.id'], 's1');
  assert.equal(run1.attributes['resumable_agent.run.status'], 'paused');
  assert.deepEqual(run1.events.map((e) => e.name), ['gen_ai.agent.paused']);
  assert.equal(run1.events[0].attributes['gen_ai.agent.interrupt.ids'], '["p1"]', 'a list as JSON text in Workers');
  const chat = first.spans.find((s) => s.name === 'chat scripted');
  assert.equal(chat.parentSpanId, run1.spanId);
  assert.equal(chat.attributes['gen_ai.response.finish_reasons'], '["tool_call"]');
  assert.equal(first.traceparent, `00-${run1.traceId}-${run1.spanId}-01`);

  const second = await post({ sessionId: 's1', approve: true });
  assert.equal(second.text, 'Paid.');
  const run2 = second.spans.find((s) => s.name === 'invoke_agent payer');
  assert.deepEqual(run2.links, [{ traceId: run1.traceId, spanId: run1.spanId }], 'the resumed call links to the paused one');
  assert.equal(run2.attributes['resumable_agent.call'], 'session.reply');
  assert.equal(run2.events[0].attributes['gen_ai.agent.decision.outcomes'], '["approved"]');
  const tool = second.spans.find((s) => s.name === 'execute_tool pay');
  assert.equal(tool.parentSpanId, run2.spanId);
  // Someone else's session id: a fresh conversation, not linked to s1's trace.
  const other = await post({ sessionId: 's2', message: 'pay 5' });
  assert.deepEqual(other.spans.find((s) => s.name === 'invoke_agent payer').links, []);
});

test('workerd: a Zod tool schema and guardrails (issue 36): the validator refuses, the guardrails trip on input and output', async () => {
  const guarded = async (message) => {
    const res = await fetch(`${worker.url}/guarded`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }) });
    assert.equal(res.status, 200);
    return res.json();
  };
  assert.deepEqual(await guarded('weather in Oslo'), { text: 'tool said: sunny in Oslo' });
  // The Zod refinement refuses Atlantis: the model reads the issue.
  assert.deepEqual(await guarded('weather in Atlantis'), { text: 'tool said: invalid input for weather: city: no such city' });
  assert.deepEqual(await guarded('weather in Mordor'), { error: 'GuardrailError', guardrail: 'noMordor', kind: 'output', info: 'off the map' });
  assert.deepEqual(await guarded('weather in my password'), { error: 'GuardrailError', guardrail: 'noPasswords', kind: 'input', info: 'a password' });
});

// Two approvers of one payment, each in a request of their own to a real workerd, the session in KV (its one write per
// key per second held back by the saver): the login (x-user) is who approves; the same approver twice counts once;
// the transfer runs once, after the second.
test('workerd: a payment that waits for two approvers, each approving in a request of their own, runs once', async () => {
  const call = async (body, user) => {
    const res = await fetch(new URL('/payments', worker.url), { method: 'POST', headers: { 'content-type': 'application/json', 'x-user': user ?? '' }, body: JSON.stringify(body) });
    assert.equal(res.status, 200, await res.clone().text());
    return res.json();
  };
  const sessionId = `pay-${Date.now()}`;
  const first = await call({ sessionId, message: 'pay the invoice' });
  assert.equal(first.interrupted, true, JSON.stringify(first));
  assert.deepEqual(first.interrupts.map((i) => [i.id, i.approvers]), [['t1', 2]]);
  const ann = await call({ sessionId, decisions: { t1: { type: 'approve' } } }, 'ann');
  assert.equal(ann.interrupted, true, JSON.stringify(ann));
  assert.deepEqual(ann.interrupts[0].approvals.map((a) => a.by), ['ann']);
  // Ann's request replayed: still one approver of two.
  const again = await call({ sessionId, decisions: { t1: { type: 'approve' } } }, 'ann');
  assert.equal(again.interrupted, true);
  assert.equal(again.interrupts[0].approvals.length, 1);
  const before = again.paid;
  const bob = await call({ sessionId, decisions: { t1: { type: 'approve' } } }, 'bob');
  assert.equal(bob.text, 'Transferred.', JSON.stringify(bob));
  assert.equal(bob.paid, before + 1, 'the transfer ran once');
  // The session is finished (kept): a late approval is refused as a decision for nothing, and nothing runs again.
  const late = await call({ sessionId, decisions: { t1: { type: 'approve' } } }, 'carol');
  assert.equal(late.error, 'DecisionError', JSON.stringify(late));
  assert.equal(late.paid, bob.paid);
});

// A turn's calls running together in a real workerd (issue 36): the two lookups around a question overlap, the pause
// keeps both results in KV, and the reply in a request of its own runs neither again.
test('workerd: calls of one turn run together; the reply after the question runs none of them again', async () => {
  const post = async (body) => {
    const res = await fetch(new URL('/concurrent', worker.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(res.status, 200, await res.clone().text());
    return res.json();
  };
  const paused = await post({ sessionId: 'cc1' });
  assert.deepEqual(paused, { question: 'Which day?', results: ['c1', 'c3'], lookups: 2, maxInFlight: 2 });
  const done = await post({ sessionId: 'cc1', answer: 'Friday' });
  assert.deepEqual([done.text, done.lookups], ['Planned.', 0]);
});

// A summarizing compaction in a real workerd (issue 36): a session in KV whose 30 steps are summarized; the checkpoint
// the session keeps in KV holds the latest summary.
test('workerd: a run summarized at its bounds keeps the latest summary in its KV session', async () => {
  const res = await fetch(new URL('/summarized', worker.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sessionId: 'sum1' }) });
  assert.equal(res.status, 200, await res.clone().text());
  const out = await res.json();
  assert.equal(out.text, 'done');
  assert.ok(out.summaries >= 3, `${out.summaries} summaries`);
  assert.equal(out.summarized.text, `summary ${out.summaries}`);
  assert.match(out.summarized.hash, /^fnv1a64:[0-9a-f]{16}$/);
});
