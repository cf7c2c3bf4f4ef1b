// Stop means stop (issue 24): the run's signal, stream.abort() or leaving a `for await` cancels the model
// request in flight and makes no further call; the run ends in AbortedError carrying the checkpoint from
// before the cancelled call; a provider's own signal is an abort too, never a retried network failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { agent, openai, defineTool, AbortedError } from 'resumable-agent';
import { toolUse, turn } from './helpers.mjs';

const within = (ms, promise, what) => Promise.race([
  promise,
  new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: still running after ${ms} ms`)), ms)),
]);

/** An OpenAI-compatible server that streams a long answer slowly (a piece every 40 ms for 20 s). */
async function slowServer() {
  const state = { requests: 0, closedEarly: 0, closedAt: [] };
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    state.requests += 1;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let done = false;
    res.on('close', () => { if (!done) { state.closedEarly += 1; state.closedAt.push(Date.now()); } });
    const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }));
    for (let i = 0; i < 500 && !res.destroyed; i++) {
      res.write(chunk({ content: `word${i} ` }));
      await new Promise((r) => setTimeout(r, 40));
    }
    done = true;
    res.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
  });
  const port = await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
  return { state, port, close: () => { server.closeAllConnections(); return new Promise((r) => server.close(r)); } };
}

test('the run\'s signal stops a model function that never answers: AbortedError with the checkpoint from before the call', async () => {
  let seen;
  const model = (request, call) => { seen = call?.signal; return new Promise(() => {}); };
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 50);
  const e = await within(2000, agent({ model }).prompt('Plan.', { signal: controller.signal }).catch((x) => x), 'prompt');
  assert.ok(e instanceof AbortedError, String(e));
  assert.deepEqual(e.checkpoint.messages, [{ role: 'user', content: 'Plan.' }]);
  assert.equal(e.checkpoint.iterations, 0);
  assert.equal(seen, controller.signal, 'the model function is handed the call\'s signal');
});

test('leaving a for await stops the run: a model call waiting is dropped, nothing further runs', async () => {
  let calls = 0;
  const lookup = defineTool({ name: 'lookup', handle: () => 'found' });
  const model = (request) => {
    calls += 1;
    return calls === 1 ? turn(toolUse('l1', 'lookup', {})) : new Promise(() => {});
  };
  const stream = agent({ model, tools: [lookup] }).stream({ prompt: 'Plan.' });
  for await (const event of stream) if (event.type === 'tool-result') break;
  const e = await within(2000, stream.result.catch((x) => x), 'the stream\'s result');
  assert.ok(e instanceof AbortedError, String(e));
  assert.ok(calls <= 2, `model calls: ${calls}`);
  assert.equal(e.checkpoint.messages.length, 3, 'the tool result is kept; the dropped call left nothing');
});

for (const how of ['the run\'s signal', 'stream.abort()', 'leaving the loop', 'the provider\'s own signal']) {
  test(`${how} cancels a streaming provider request mid-answer: AbortedError, not retried, the connection closed`, async () => {
    const srv = await slowServer();
    try {
      const run = new AbortController();
      const own = new AbortController();
      const model = openai({ apiKey: 'sk-test', model: 'gpt-test', baseURL: `http://127.0.0.1:${srv.port}/v1`, maxRetries: 3, signal: own.signal });
      const a = agent({ model });
      const stream = a.stream({ prompt: 'Write a long essay.' }, how === 'the run\'s signal' ? { signal: run.signal } : undefined);
      let deltas = 0;
      let abortedAt;
      for await (const event of stream) {
        if (event.type !== 'text-delta' || ++deltas < 3) continue;
        abortedAt = Date.now();
        if (how === 'the run\'s signal') run.abort();
        else if (how === 'stream.abort()') stream.abort();
        else if (how === 'the provider\'s own signal') own.abort();
        else break;
      }
      const e = await within(3000, stream.result.catch((x) => x), 'the result');
      assert.ok(e instanceof AbortedError, `${how}: ${e}`);
      assert.deepEqual(e.checkpoint.messages, [{ role: 'user', content: 'Write a long essay.' }]);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(srv.state.requests, 1, 'not retried');
      assert.equal(srv.state.closedEarly, 1, 'the request was cancelled, not read to its end');
      assert.ok(srv.state.closedAt[0] - abortedAt < 1000, `closed ${srv.state.closedAt[0] - abortedAt} ms after the abort`);
    } finally {
      await srv.close();
    }
  });
}
