// The reference's "stateless resume across HTTP requests" Worker, on the npm package: the same routes
// as the Rust example (examples/worker). Each request builds a fresh agent; the run lives in KV only.
import {
  agent, isInterrupted, InterruptError, defineTool, scriptedModel, kvSaver, durableObjectSaver, listSessions,
  anthropic, openai, workersAI, memoryUsage, SessionNotFoundError, SessionBusyError, SaverError, ModelError, ConfigError,
  CheckpointError,
} from 'resumable-agent';
// The Durable Object class behind durableObjectSaver (bound as CHECKPOINTS in wrangler.toml).
export { CheckpointStore } from 'resumable-agent';
import { saverTestRoute, stepsTestRoute, sessionTestRoute } from './test-routes.js';

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
    case undefined: {
      // Tests only: a slow model, so that concurrent requests overlap.
      const delay = Number(env.TEST_MODEL_DELAY_MS ?? 0);
      return delay > 0 ? async (req) => { await new Promise((r) => setTimeout(r, delay)); return scripted(req); } : scripted;
    }
    case 'anthropic': return anthropic({ apiKey: env.ANTHROPIC_API_KEY, model: env.MODEL || 'claude-sonnet-4-5' });
    case 'openai': return openai({ apiKey: env.OPENAI_API_KEY, model: env.MODEL || 'gpt-4.1-mini', baseURL: env.OPENAI_BASE_URL || undefined });
    case 'workers-ai': return workersAI(env.AI, { model: env.MODEL || '@cf/meta/llama-3.3-70b-instruct-fp8-fast' });
    default: throw new Error(`MODEL_PROVIDER ${JSON.stringify(env.MODEL_PROVIDER)}: use anthropic, openai or workers-ai`);
  }
}

// CHECKPOINT_KEY (a secret): sign every saved checkpoint and refuse any that was changed in KV;
// SEAL_CHECKPOINTS=true also encrypts them.
const agentConfig = (env) => ({
  instructions: 'You are a helpful assistant. Ask the user for any missing information.',
  tools: [askUser],
  model: modelFor(env),
  ...(env.CHECKPOINT_KEY
    ? { checkpointKeys: { current: 'k1', keys: { k1: env.CHECKPOINT_KEY } }, sealed: env.SEAL_CHECKPOINTS === 'true' }
    : {}),
});

// SAVER picks the store: "kv" (default) or "durable-object" (strongly consistent: of concurrent replies to a
// paused session exactly one runs).
const sessions = (env) => (env.SAVER === 'durable-object'
  ? durableObjectSaver(env.CHECKPOINTS, { name: 'sessions' })
  : kvSaver(env.SESSIONS, { prefix: 'session:' }));

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

// Paused sessions and their questions, from summaries alone (KV metadata; the Durable Object's summary entries).
async function handleSessions(env) {
  const listed = await listSessions(sessions(env));
  return Response.json({
    sessions: listed.filter((s) => s.interrupted)
      .map(({ key, question, updatedAt, iterations }) => ({ sessionId: key, question, updatedAt, iterations })),
  });
}

// ── Streaming: a run's events to the browser as server-sent events ───────────
// POST /stream { sessionId, message } starts (or continues) a session, { sessionId, answer } answers it.
// Text arrives as `text-delta` events while the model writes it, the question as `interrupt` the moment
// the run pauses, then `done` ({ answer } or { question }) or `error`. The session saves every step, so a
// client that disconnects loses nothing: the next request continues from the last saved step.
const FORWARDED = new Set(['step-start', 'text-delta', 'tool-call-delta', 'step-restart', 'step-finish', 'tool-call', 'tool-result', 'interrupt']);
const CORS = { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'POST, OPTIONS', 'access-control-allow-headers': 'content-type' };

async function handleStream(request, env, ctx) {
  let body;
  try {
    body = JSON.parse(await request.text());
  } catch (e) {
    throw new BadRequest(`Malformed JSON body: ${e.message}`);
  }
  if (typeof body?.sessionId !== 'string') throw new BadRequest('Missing field "sessionId": expected a string');
  const input = typeof body.answer === 'string' ? { answer: body.answer }
    : typeof body.message === 'string' ? { prompt: body.message }
      : null;
  if (!input) throw new BadRequest('Missing field "message" or "answer": expected a string');
  const events = agent(agentConfig(env)).session(sessions(env), body.sessionId, options(env)).stream(input);
  const { readable, writable } = new TransformStream();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  const send = (type, data) => writer.write(encoder.encode(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`));
  const pump = (async () => {
    try {
      for await (const e of events) {
        const { type, ...data } = e;
        if (FORWARDED.has(type)) await send(type, data);
        else if (type === 'done') {
          await send('done', isInterrupted(e.result) ? { question: e.result.question, interrupts: e.result.interrupts } : { answer: e.result.text });
        } else if (type === 'error') await send('error', { name: e.error.name, error: e.error.message });
      }
    } catch (e) {
      // The client went away (a write failed): leaving the loop stops the run at its next step; the
      // session has saved every step so far.
    } finally {
      await writer.close().catch(() => {});
    }
  })();
  ctx.waitUntil(pump);
  return new Response(readable, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...CORS } });
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

function withCors(response) {
  for (const [k, v] of Object.entries(CORS)) response.headers.set(k, v);
  return response;
}

function errorResponse(e) {
  const [status, message] =
    e instanceof BadRequest ? [400, e.message]
    : e instanceof SessionNotFoundError ? [404, 'Session not found']
    : e instanceof SessionBusyError ? [409, e.message]
    : e instanceof SaverError && e.code === 'TOO_LARGE' ? [413, e.message]
    : e instanceof SaverError && e.code === 'KEY_LENGTH' ? [400, e.message]
    : e instanceof ConfigError ? [400, e.message]
    : e instanceof CheckpointError ? [422, e.message]
    : e instanceof ModelError ? [502, e.message]
    : [500, e instanceof Error ? e.message : String(e)];
  return Response.json({ error: message }, { status });
}

export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    try {
      if (request.method === 'OPTIONS' && pathname === '/stream') return new Response(null, { status: 204, headers: CORS });
      if (request.method === 'POST' && pathname === '/stream') {
        return await handleStream(request, env, ctx).catch((e) => withCors(errorResponse(e)));
      }
      if (request.method === 'POST' && pathname === '/start') return await handleStart(request, env);
      if (request.method === 'POST' && pathname === '/reply') return await handleReply(request, env);
      if (request.method === 'GET' && pathname === '/sessions') return await handleSessions(env);
      if (request.method === 'POST' && pathname === '/__test/saver' && env.TEST_ROUTES === 'true') {
        return await saverTestRoute(request, env, sessions(env));
      }
      if (request.method === 'POST' && pathname === '/__test/session' && env.TEST_ROUTES === 'true') {
        const { sessionId } = await request.clone().json();
        return await sessionTestRoute(request, agent(agentConfig(env)).session(sessions(env), sessionId, { keepCompleted: true }));
      }
      if (request.method === 'POST' && pathname === '/__test/steps' && env.TEST_ROUTES === 'true') {
        return await stepsTestRoute(request, sessions(env), { agent, defineTool, scriptedModel });
      }
      // The isolate's wasm memory, to watch it stay flat over many requests.
      if (request.method === 'GET' && pathname === '/__test/memory' && env.TEST_ROUTES === 'true') {
        return Response.json(memoryUsage());
      }
      return Response.json({ error: `No route for ${request.method} ${pathname}` }, { status: 404 });
    } catch (e) {
      return errorResponse(e);
    }
  },
};
