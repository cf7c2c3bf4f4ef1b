// The reference's "stateless resume across HTTP requests" Worker, on the npm package: the same routes
// as the Rust example (examples/worker). Each request builds a fresh agent; the run lives in KV only.
import {
  agent, isInterrupted, InterruptError, defineTool, scriptedModel, kvSaver, anthropic, openai, workersAI,
  SessionNotFoundError, SessionBusyError, SaverError, ModelError,
} from 'resumable-agent';
import { saverTestRoute } from './test-routes.js';

const askUser = defineTool({
  name: 'ask_user',
  description: 'Ask the human a clarifying question before continuing.',
  schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => { throw new InterruptError(question); },
});

const firstUserText = (req) => req.messages[0].content;
const lastUserText = (req) => req.messages.at(-1).content;
const lastResult = (req) => req.messages.at(-1).content.find((b) => b.type === 'tool_result').content;

// A scripted stand-in for a real model; it picks its turn from the conversation, so any instance
// continues any session.
const scripted = scriptedModel([
  { content: [{ type: 'tool_use', id: 'call_1', name: 'ask_user', input: { question: 'What is your deadline?' } }] },
  (req) => `Plan for "${firstUserText(req)}" due ${lastResult(req)}.`,
  (req) => `Noted: ${lastUserText(req)}.`,
]);

// MODEL_PROVIDER picks a real model: anthropic (secret ANTHROPIC_API_KEY), openai (secret OPENAI_API_KEY,
// var OPENAI_BASE_URL for compatible servers) or workers-ai (the AI binding); MODEL names the model.
function modelFor(env) {
  switch (env.MODEL_PROVIDER || undefined) {
    case undefined: return scripted;
    case 'anthropic': return anthropic({ apiKey: env.ANTHROPIC_API_KEY, model: env.MODEL || 'claude-sonnet-4-5' });
    case 'openai': return openai({ apiKey: env.OPENAI_API_KEY, model: env.MODEL || 'gpt-4.1-mini', baseURL: env.OPENAI_BASE_URL || undefined });
    case 'workers-ai': return workersAI(env.AI, { model: env.MODEL || '@cf/meta/llama-3.3-70b-instruct-fp8-fast' });
    default: throw new Error(`MODEL_PROVIDER ${JSON.stringify(env.MODEL_PROVIDER)}: use anthropic, openai or workers-ai`);
  }
}

const agentConfig = (env) => ({
  instructions: 'You are a helpful assistant. Ask the user for any missing information.',
  tools: [askUser],
  model: modelFor(env),
});

const sessions = (env) => kvSaver(env.SESSIONS, { prefix: 'session:' });

// ── Request 1 ────────────────────────────────────────────────────────────────
async function handleStart(request, env) {
  const { message, sessionId } = await readBody(request, 'message');
  const result = await agent(agentConfig(env)).session(sessions(env), sessionId, options(env)).prompt(message);
  if (isInterrupted(result)) return Response.json({ question: result.question });
  return Response.json({ answer: result.text });
}

// ── Request 2 — new Worker instance, zero shared memory ──────────────────────
async function handleReply(request, env) {
  const { answer, sessionId } = await readBody(request, 'answer');
  const result = await agent(agentConfig(env)).session(sessions(env), sessionId, options(env)).reply(answer);
  if (isInterrupted(result)) return Response.json({ question: result.question });
  return Response.json({ answer: result.text });
}

// Paused sessions and their questions, from KV metadata alone.
async function handleSessions(env) {
  const listed = await sessions(env).list();
  return Response.json({
    sessions: listed.filter((s) => s.interrupted)
      .map(({ key, question, updatedAt, iterations }) => ({ sessionId: key, question, updatedAt, iterations })),
  });
}

const options = (env) => ({ keepCompleted: env.KEEP_COMPLETED === 'true' });

class BadRequest extends Error {}

async function readBody(request, field) {
  let body;
  try {
    body = JSON.parse(await request.text());
  } catch (e) {
    throw new BadRequest(`Malformed JSON body: ${e.message}`);
  }
  for (const name of [field, 'sessionId']) {
    if (typeof body?.[name] !== 'string') throw new BadRequest(`Missing field "${name}": expected a string`);
  }
  return body;
}

function errorResponse(e) {
  const [status, message] =
    e instanceof BadRequest ? [400, e.message]
    : e instanceof SessionNotFoundError ? [404, 'Session not found']
    : e instanceof SessionBusyError ? [409, e.message]
    : e instanceof SaverError && e.code === 'TOO_LARGE' ? [413, e.message]
    : e instanceof SaverError && e.code === 'KEY_LENGTH' ? [400, e.message]
    : e instanceof ModelError ? [502, e.message]
    : [500, e instanceof Error ? e.message : String(e)];
  return Response.json({ error: message }, { status });
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    try {
      if (request.method === 'POST' && pathname === '/start') return await handleStart(request, env);
      if (request.method === 'POST' && pathname === '/reply') return await handleReply(request, env);
      if (request.method === 'GET' && pathname === '/sessions') return await handleSessions(env);
      if (request.method === 'POST' && pathname === '/__test/saver' && env.TEST_ROUTES === 'true') {
        return await saverTestRoute(request, env, sessions(env));
      }
      return Response.json({ error: `No route for ${request.method} ${pathname}` }, { status: 404 });
    } catch (e) {
      return errorResponse(e);
    }
  },
};
