// The reference's documented examples, with only the import changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agent, isInterrupted, assertComplete, InterruptError, defineTool, scriptedModel } from 'resumable-agent';

const askUser = defineTool({
  name: 'ask_user',
  description: 'Ask the human a clarifying question before continuing.',
  schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => {
    throw new InterruptError(question);
  },
});

// The reference picks its model elsewhere; ours is part of the config. Each "request" builds a fresh
// agent from this config, as a new Worker instance would.
function config(script) {
  return {
    instructions: 'You are a helpful assistant. Ask the user for any missing information.',
    tools: [askUser],
    model: scriptedModel(script),
  };
}

class FakeKV {
  constructor() { this.map = new Map(); }
  async get(k) { return this.map.has(k) ? this.map.get(k) : null; }
  async put(k, v) { this.map.set(k, String(v)); }
  async delete(k) { this.map.delete(k); }
}

test('stateless resume across HTTP requests (the Workers example)', async () => {
  const script = [
    { content: [{ type: 'tool_use', id: 'toolu_1', name: 'ask_user', input: { question: 'What is your deadline?' } }] },
    (req) => `Your plan ends ${req.messages.at(-1).content[0].content}.`,
  ];
  const agentConfig = config(script);
  const kv = new FakeKV();

  async function handleStart(request, kv) {
    const { message, sessionId } = await request.json();
    const result = await agent(agentConfig).prompt(message);
    if (isInterrupted(result)) {
      await kv.put(sessionId, JSON.stringify(result.checkpoint));
      return Response.json({ question: result.question });
    }
    return Response.json({ answer: result.text });
  }

  async function handleReply(request, kv) {
    const { answer, sessionId } = await request.json();
    const checkpoint = JSON.parse((await kv.get(sessionId)) ?? 'null');
    if (!checkpoint) return new Response('Session not found', { status: 404 });
    const result = await agent(agentConfig).resume(checkpoint, answer);
    if (isInterrupted(result)) {
      await kv.put(sessionId, JSON.stringify(result.checkpoint));
      return Response.json({ question: result.question });
    }
    await kv.delete(sessionId);
    return Response.json({ answer: result.text });
  }

  const post = (body) => new Request('http://x/', { method: 'POST', body: JSON.stringify(body) });
  let res = await handleStart(post({ message: 'Plan my project.', sessionId: 's1' }), kv);
  assert.deepEqual(await res.json(), { question: 'What is your deadline?' });
  assert.ok(kv.map.has('s1'));
  res = await handleReply(post({ answer: 'end of Q2', sessionId: 's1' }), kv);
  assert.deepEqual(await res.json(), { answer: 'Your plan ends end of Q2.' });
  assert.equal(kv.map.has('s1'), false);
  res = await handleReply(post({ answer: 'x', sessionId: 'nope' }), kv);
  assert.equal(res.status, 404);
});

test('multi-turn loop until complete', async () => {
  const answers = ['a web app', 'end of Q2'];
  const script = [
    { content: [{ type: 'tool_use', id: 't1', name: 'ask_user', input: { question: 'What are you building?' } }] },
    { content: [{ type: 'tool_use', id: 't2', name: 'ask_user', input: { question: 'Your deadline?' } }] },
    (req) => `Plan: ${req.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'tool_result').map((b) => b.content).join(' by ')}.`,
  ];
  const agentConfig = config(script);
  const asked = [];
  let result = await agent(agentConfig).prompt('Plan my project.');
  while (isInterrupted(result)) {
    asked.push(result.question);
    const answer = answers.shift();
    result = await agent(agentConfig).resume(result.checkpoint, answer);
  }
  assert.deepEqual(asked, ['What are you building?', 'Your deadline?']);
  assert.equal(result.text, 'Plan: a web app by end of Q2.');
});

test('recovery after failure: a completed checkpoint resumed with "" returns its text, no model call', async () => {
  const db = new Map();
  const cfg = config(['The codebase is fine.']);
  const result = assertComplete(await agent(cfg).prompt('Analyse the codebase.'));
  db.set('last-run', JSON.parse(JSON.stringify(result.checkpoint)));
  const saved = db.get('last-run');
  // The script is used up: a model call would throw.
  const resumed = assertComplete(await agent(cfg).resume(saved, ''));
  assert.equal(resumed.text, 'The codebase is fine.');
  assert.deepEqual(resumed.messages, result.messages, 'nothing injected');
});

test('callers that never interrupt', async () => {
  const response = assertComplete(await agent(config(['Hello!'])).prompt('Hello'));
  assert.equal(response.text, 'Hello!');
  assert.equal(response.iterations, 1);
});
