// Per-tool timeouts and retries through the real wasm: a tool failing twice then succeeding, tool-retry events, one
// idempotency key for every attempt, a timeout (the late result ignored), retryOn refusing, the agent's defaults, an
// abort during a retry's wait, and bad options.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agent, defineTool, scriptedModel, AbortedError, ConfigError, InterruptError, isInterrupted } from 'resumable-agent';
import { recordingModel, toolUse, turn } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const resultOf = (requests, k = 1) => requests[k].messages.at(-1).content[0];

test('a tool failing twice then succeeding: three attempts, two tool-retry events, one idempotency key', async () => {
  const keys = [];
  let calls = 0;
  const flaky = defineTool({
    name: 'flaky', retry: { maxAttempts: 3, backoffMs: 5 },
    handle: (input, ctx) => { keys.push(ctx.idempotencyKey); calls += 1; if (calls < 3) throw new Error(`busy ${calls}`); return 'done'; },
  });
  const { model, requests } = recordingModel([turn(toolUse('f', 'flaky', {})), { content: [{ type: 'text', text: 'ok' }] }]);
  const events = [];
  const r = await agent({ model, tools: [flaky] }).prompt('go', { onEvent: (e) => events.push(e) });
  assert.equal(r.text, 'ok');
  assert.equal(calls, 3);
  assert.equal(new Set(keys).size, 1, 'every attempt has the same idempotency key');
  assert.deepEqual(resultOf(requests).content, 'done');
  assert.deepEqual(events.filter((e) => e.type === 'tool-retry'), [
    { type: 'tool-retry', id: 'f', toolName: 'flaky', attempt: 1, error: 'busy 1', delayMs: 5 },
    { type: 'tool-retry', id: 'f', toolName: 'flaky', attempt: 2, error: 'busy 2', delayMs: 10 },
  ]);
});

test('attempts used up: the error result says how many; an InterruptError is never retried', async () => {
  let calls = 0;
  const down = defineTool({ name: 'down', retry: { maxAttempts: 2 }, handle: () => { calls += 1; throw new Error('still down'); } });
  const { model, requests } = recordingModel([turn(toolUse('d', 'down', {})), { content: [{ type: 'text', text: 'gave up' }] }]);
  await agent({ model, tools: [down] }).prompt('go');
  assert.equal(calls, 2);
  assert.deepEqual([resultOf(requests).isError, resultOf(requests).content], [true, 'still down (after 2 attempts)']);
  let asked = 0;
  const ask = defineTool({ name: 'ask', retry: { maxAttempts: 3 }, handle: () => { asked += 1; throw new InterruptError('which?'); } });
  const paused = await agent({ model: scriptedModel([turn(toolUse('a', 'ask', {})), 'x']), tools: [ask] }).prompt('go');
  assert.ok(isInterrupted(paused));
  assert.equal(asked, 1);
});

test('a timeout: the slow attempt counts as failed and its late result is ignored; the next attempt answers', async () => {
  let calls = 0;
  let lateSettled = false;
  const slow = defineTool({
    name: 'slow', timeoutMs: 30, retry: { maxAttempts: 2 },
    handle: async () => { calls += 1; if (calls === 1) { await sleep(300); lateSettled = true; return 'late'; } return 'fast'; },
  });
  const { model, requests } = recordingModel([turn(toolUse('s', 'slow', {})), { content: [{ type: 'text', text: 'ok' }] }]);
  const events = [];
  await agent({ model, tools: [slow] }).prompt('go', { onEvent: (e) => events.push(e) });
  assert.equal(resultOf(requests).content, 'fast');
  assert.deepEqual(events.filter((e) => e.type === 'tool-retry').map((e) => e.error), ['slow took longer than its timeout of 30 ms']);
  await sleep(320);
  assert.equal(lateSettled, true, 'the first attempt did finish, later');
  assert.equal(requests.length, 2, 'and nothing happened because of it');
  // Without retries: the timeout is the call's error result.
  const hung = defineTool({ name: 'hung', timeoutMs: 20, handle: () => sleep(200).then(() => 'never seen') });
  const second = recordingModel([turn(toolUse('h', 'hung', {})), { content: [{ type: 'text', text: 'ok' }] }]);
  await agent({ model: second.model, tools: [hung] }).prompt('go');
  assert.deepEqual([resultOf(second.requests).isError, resultOf(second.requests).content], [true, 'hung took longer than its timeout of 20 ms']);
});

test('retryOn decides per error; the agent\'s toolDefaults apply to tools that set nothing', async () => {
  let calls = 0;
  const picky = defineTool({
    name: 'picky', retry: { maxAttempts: 5, retryOn: (e) => e.code !== 'BAD_INPUT' },
    handle: () => { calls += 1; const e = new Error('bad input'); e.code = calls === 1 ? 'TIMEOUT' : 'BAD_INPUT'; throw e; },
  });
  const { model, requests } = recordingModel([turn(toolUse('p', 'picky', {})), { content: [{ type: 'text', text: 'ok' }] }]);
  await agent({ model, tools: [picky] }).prompt('go');
  assert.equal(calls, 2, 'retried after TIMEOUT, not after BAD_INPUT');
  assert.equal(resultOf(requests).content, 'bad input');
  let plain = 0;
  const plainTool = defineTool({ name: 'plain', handle: () => { plain += 1; throw new Error('nope'); } });
  const second = recordingModel([turn(toolUse('x', 'plain', {})), { content: [{ type: 'text', text: 'ok' }] }]);
  await agent({ model: second.model, tools: [plainTool], toolDefaults: { retry: { maxAttempts: 3 } } }).prompt('go');
  assert.equal(plain, 3);
});

test('an abort during a retry\'s wait ends the run at once in AbortedError, the call not recorded', async () => {
  let calls = 0;
  const flaky = defineTool({ name: 'flaky', retry: { maxAttempts: 3, backoffMs: 10_000 }, handle: () => { calls += 1; throw new Error('busy'); } });
  const controller = new AbortController();
  const started = Date.now();
  const run = agent({ model: scriptedModel([turn(toolUse('f', 'flaky', {})), 'x']), tools: [flaky] })
    .prompt('go', { signal: controller.signal, onEvent: (e) => { if (e.type === 'tool-retry') setTimeout(() => controller.abort(), 20); } });
  const e = await run.catch((x) => x);
  assert.ok(e instanceof AbortedError, e.message);
  assert.ok(Date.now() - started < 5_000, 'the 10 s wait was cut short');
  assert.equal(calls, 1);
  assert.deepEqual(e.checkpoint.toolResults ?? [], [], 'the call has no result: resuming calls it again');
});

test('bad timeout and retry options are ConfigErrors naming them', () => {
  assert.throws(() => defineTool({ name: 'a', handle: () => 1, retry: { maxAttempts: 0 } }), (e) => e instanceof ConfigError && /defineTool\.retry\.maxAttempts/.test(e.message));
  assert.throws(() => defineTool({ name: 'a', handle: () => 1, timeoutMs: -1 }), (e) => e instanceof ConfigError && /defineTool\.timeoutMs/.test(e.message));
  assert.throws(() => defineTool({ name: 'a', handle: () => 1, retry: { maxAttempts: 2, retryOn: 'yes' } }), (e) => e instanceof ConfigError && /retry\.retryOn: expected a function/.test(e.message));
  assert.throws(() => agent({ model: scriptedModel(['x']), toolDefaults: { retries: 3 } }), (e) => e instanceof ConfigError && /config\.toolDefaults\.retries: unknown option/.test(e.message));
});
