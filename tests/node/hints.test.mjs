// The mistakes a newcomer makes get a message that says what to do (issue 24): a run's result where its
// checkpoint belongs, a checkpoint stringified twice, bytes instead of text, a network failure that names the
// host it could not reach, a timeout that says it timed out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { agent, openai, scriptedModel, defineTool, InterruptError, CheckpointError, ConfigError, ModelError } from 'resumable-agent';
import { toolUse, turn } from './helpers.mjs';

async function paused() {
  const ask = defineTool({ name: 'ask', handle: () => { throw new InterruptError('When?'); } });
  const a = agent({ tools: [ask], model: scriptedModel([turn(toolUse('q', 'ask', {})), 'ok']) });
  return { a, result: await a.prompt('Plan.') };
}

test('a run\'s result passed where its checkpoint belongs says to pass result.checkpoint', async () => {
  const { a, result } = await paused();
  for (const given of [result, JSON.stringify(result)]) {
    const e = await a.resume(given, 'Friday').catch((x) => x);
    assert.ok(e instanceof CheckpointError, String(e));
    assert.match(e.message, /this is a run's result, not its checkpoint \(pass result\.checkpoint\)/);
  }
});

test('a checkpoint stringified twice says so', async () => {
  const { a, result } = await paused();
  const e = await a.resume(JSON.stringify(JSON.stringify(result.checkpoint)), 'Friday').catch((x) => x);
  assert.ok(e instanceof CheckpointError, String(e));
  assert.match(e.message, /stringified twice \(JSON\.parse it once/);
});

test('bytes from readFileSync without an encoding say to read the file as text', async () => {
  const { a, result } = await paused();
  const e = await a.resume(Buffer.from(JSON.stringify(result.checkpoint)), 'Friday').catch((x) => x);
  assert.ok(e instanceof CheckpointError, String(e));
  assert.match(e.message, /got bytes \(read the file as text: readFileSync\(path, 'utf8'\)\)/);
});

test('new InterruptError({ question }) asks for the question as a string', () => {
  assert.throws(() => new InterruptError({ question: 'When?' }), (e) => e instanceof ConfigError && /the question comes first, as a string/.test(e.message));
});

test('a network failure names the host it could not reach', async () => {
  const closed = createServer();
  const port = await new Promise((resolve) => closed.listen(0, '127.0.0.1', () => resolve(closed.address().port)));
  await new Promise((resolve) => closed.close(resolve));
  const model = openai({ apiKey: 'sk-test', model: 'gpt-test', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  const e = await agent({ model }).prompt('hi').catch((x) => x);
  assert.ok(e instanceof ModelError, String(e));
  assert.equal(e.status, null);
  assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${port}: `));
});

test('timeoutMs says the request timed out, and after how long', async () => {
  const sockets = new Set();
  const silent = createServer(() => {}); // accepts, never answers
  silent.on('connection', (s) => sockets.add(s));
  const port = await new Promise((resolve) => silent.listen(0, '127.0.0.1', () => resolve(silent.address().port)));
  try {
    const model = openai({ apiKey: 'sk-test', model: 'gpt-test', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0, timeoutMs: 300 });
    const started = Date.now();
    const e = await agent({ model }).prompt('hi').catch((x) => x);
    assert.ok(e instanceof ModelError, String(e));
    assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${port}: timed out after 300 ms \\(timeoutMs\\)`));
    assert.equal(e.retryable, true);
    assert.ok(Date.now() - started < 5000);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});
