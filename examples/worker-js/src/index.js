// The reference's "stateless resume across HTTP requests" Worker, on the npm package — deployable as it is:
// the same routes as the Rust example (examples/worker). Each request builds a fresh agent; the run lives
// in KV (or a Durable Object, or D1) only.
//
// Who may touch a session: its owner. A client is an owner by a token the server makes (128 random bits),
// sent back as `Authorization: Bearer <token>` (or the HttpOnly `ra_owner` cookie the server sets); the
// server stores sessions under a hash of it, so one owner can neither list nor name another's sessions.
// Session ids are made by the server too. CORS answers only the origins in the ALLOWED_ORIGINS var.
import {
  agent, isInterrupted, InterruptError, defineTool, scriptedModel, kvSaver, durableObjectSaver, d1Saver, listSessions,
  anthropic, openai, openaiResponses, gemini, workersAI, memoryUsage, SessionNotFoundError, mcpTools,
} from 'resumable-agent';
// The Durable Object class behind durableObjectSaver (bound as CHECKPOINTS in wrangler.toml).
export { CheckpointStore } from 'resumable-agent';
import { saverTestRoute, stepsTestRoute, sessionTestRoute, mcpTestRoute } from './test-routes.js';

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

// MODEL_PROVIDER picks a real model: anthropic (secret ANTHROPIC_API_KEY), openai or openai-responses (secret
// OPENAI_API_KEY, var OPENAI_BASE_URL for compatible servers), gemini (secret GEMINI_API_KEY, var GEMINI_BASE_URL)
// or workers-ai (the AI binding); MODEL names the model.
function modelFor(env) {
  switch (env.MODEL_PROVIDER || undefined) {
    case undefined: {
      // Tests only: a slow model, so that concurrent requests overlap.
      const delay = Number(env.TEST_MODEL_DELAY_MS ?? 0);
      return delay > 0 ? async (req) => { await new Promise((r) => setTimeout(r, delay)); return scripted(req); } : scripted;
    }
    case 'anthropic': return anthropic({ apiKey: env.ANTHROPIC_API_KEY, model: env.MODEL || 'claude-sonnet-4-5' });
    case 'openai': return openai({ apiKey: env.OPENAI_API_KEY, model: env.MODEL || 'gpt-4.1-mini', baseURL: env.OPENAI_BASE_URL || undefined });
    case 'openai-responses': return openaiResponses({ apiKey: env.OPENAI_API_KEY, model: env.MODEL || 'gpt-5-mini', baseURL: env.OPENAI_BASE_URL || undefined });
    case 'gemini': return gemini({ apiKey: env.GEMINI_API_KEY, model: env.MODEL || 'gemini-2.5-flash', baseURL: env.GEMINI_BASE_URL || undefined });
    case 'workers-ai': return workersAI(env.AI, { model: env.MODEL || '@cf/meta/llama-3.3-70b-instruct-fp8-fast' });
    default: throw new Error(`MODEL_PROVIDER ${JSON.stringify(env.MODEL_PROVIDER)}: use anthropic, openai, openai-responses, gemini or workers-ai`);
  }
}

// CHECKPOINT_KEY (a secret): sign every saved step and refuse any that was changed in KV; SEAL_CHECKPOINTS=true
// also encrypts them.
const agentConfig = (env) => ({
  instructions: 'You are a helpful assistant. Ask the user for any missing information.',
  tools: [askUser],
  model: modelFor(env),
  ...(env.CHECKPOINT_KEY
    ? { checkpointKeys: { current: 'k1', keys: { k1: env.CHECKPOINT_KEY } }, sealed: env.SEAL_CHECKPOINTS === 'true' }
    : {}),
});

// SAVER picks the store: "kv" (default), "durable-object" (strongly consistent: of concurrent replies to a paused
// session exactly one runs; each owner's sessions are a Durable Object of their own) or "d1" (the D1 database DB:
// one row per step, compare-and-set in SQL; every owner's sessions in one table, keyed by owner).
function saverFor(env, owner) {
  if (env.SAVER === 'durable-object') return durableObjectSaver(env.CHECKPOINTS, { name: owner.id });
  if (env.SAVER === 'd1') return d1Saver(env.DB);
  return kvSaver(env.SESSIONS, { prefix: 'session:' });
}

const sessionOptions = (env, ctx) => ({ keepCompleted: env.KEEP_COMPLETED === 'true', waitUntil: (p) => ctx.waitUntil(p) });

/** The caller's session `sessionId` (`keep`: keep it when it completes, whatever KEEP_COMPLETED says). */
const sessionOf = (env, ctx, owner, sessionId, keep = false) => agent(agentConfig(env))
  .session(saverFor(env, owner), `${owner.id}:${sessionId}`, { ...sessionOptions(env, ctx), ...(keep ? { keepCompleted: true } : {}) });

// ── Owners and session ids ────────────────────────────────────────────────────
const TOKEN = /^[A-Za-z0-9_-]{22,64}$/;
const SESSION_ID = /^[A-Za-z0-9_-]{22}$/;

function randomId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function cookie(request, name) {
  const header = request.headers.get('cookie') ?? '';
  return header.split(';').map((c) => c.trim().split('=')).find(([k]) => k === name)?.[1];
}

/** Who calls: `{ id, token, fresh }`. A caller without a valid token becomes a new owner. */
async function ownerOf(request) {
  const bearer = request.headers.get('authorization')?.match(/^Bearer (\S+)$/)?.[1];
  let token = bearer ?? cookie(request, 'ra_owner');
  const fresh = !(typeof token === 'string' && TOKEN.test(token));
  if (fresh) token = randomId();
  // Stored under a hash of the token: a listing of the store shows no token.
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token)));
  const id = [...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return { id, token, fresh };
}

/** A fresh owner's token: in the body (for a client that sends it as a bearer token) and as a cookie. */
function withOwner(response, owner, request) {
  if (!owner.fresh) return response;
  const secure = new URL(request.url).protocol === 'https:' ? '; Secure' : '';
  response.headers.append('set-cookie', `ra_owner=${owner.token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000${secure}`);
  return response;
}

const json = (body, owner, status = 200) => Response.json(owner?.fresh ? { ...body, token: owner.token } : body, { status });

// ── Request 1 ────────────────────────────────────────────────────────────────
async function handleStart(request, env, ctx, owner) {
  const body = await readBody(request, ['message']);
  if (body.sessionId !== undefined) throw new BadRequest('Field "sessionId": the server chooses session ids; omit it');
  const sessionId = randomId();
  const result = await sessionOf(env, ctx, owner, sessionId).prompt(body.message);
  return json(isInterrupted(result) ? { sessionId, question: result.question } : { sessionId, answer: result.text }, owner);
}

// ── Request 2 — new Worker instance, zero shared memory ──────────────────────
async function handleReply(request, env, ctx, owner) {
  const { answer, sessionId } = await readBody(request, ['answer', 'sessionId']);
  // Someone else's id (or a made-up one) is simply not found among the caller's sessions.
  if (!SESSION_ID.test(sessionId)) throw new SessionNotFoundError(`session ${JSON.stringify(sessionId)} not found`);
  const result = await sessionOf(env, ctx, owner, sessionId).reply(answer);
  return json(isInterrupted(result) ? { question: result.question } : { answer: result.text }, owner);
}

// A new message in one of the caller's sessions that finished and was kept (KEEP_COMPLETED): the conversation
// goes on. (A reply answers a question; sent twice, it is refused rather than run again as a new turn.)
async function handleMessage(request, env, ctx, owner) {
  const { message, sessionId } = await readBody(request, ['message', 'sessionId']);
  const session = SESSION_ID.test(sessionId) ? sessionOf(env, ctx, owner, sessionId) : null;
  // Only an existing session of the caller's: a client does not make sessions under ids it chooses.
  if (session === null || (await session.checkpoint()) === null) throw new SessionNotFoundError(`session ${JSON.stringify(sessionId)} not found`);
  const result = await session.prompt(message);
  return json(isInterrupted(result) ? { question: result.question } : { answer: result.text }, owner);
}

// The caller's paused sessions and their questions, from summaries alone (KV metadata; the Durable Object's
// summary entries).
async function handleSessions(env, owner) {
  const listed = await listSessions(saverFor(env, owner), `${owner.id}:`);
  return json({
    sessions: listed.filter((s) => s.interrupted)
      .map(({ key, question, updatedAt, iterations }) => ({ sessionId: key.slice(owner.id.length + 1), question, updatedAt, iterations })),
  }, owner);
}

// ── Streaming: a run's events to the browser as server-sent events ───────────
// POST /stream { message } starts a session, { sessionId, answer } answers it, { sessionId, message } goes on
// with a finished one (streamed sessions are kept when they complete). The first frame names the
// session (`event: session`); every event after it carries `id: <seq>`. Text arrives as `text-delta` events
// while the model writes it, the question as `interrupt` the moment the run pauses, then `done` ({ answer }
// or { question }) or `error`. The run goes on when the client goes away (the session saves every step); a
// client that reconnects POSTs { sessionId } with the `Last-Event-ID` header and gets every event it missed,
// then the rest as the run writes them.
const FORWARDED = new Set(['step-start', 'text-delta', 'tool-call-delta', 'step-restart', 'step-finish', 'tool-call', 'tool-result', 'interrupt']);
const END = new Set(['done', 'error']);
const REPLAY_FOR_MS = 60_000;
/** Statuses of errors a stream answers with instead of events: the call was refused before anything ran. */
const REFUSED = new Set([400, 404, 409, 422]);

function frame(type, data, id) {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A session event as the stream sends it. */
function sseEvent(e) {
  const { type, seq, ...data } = e;
  if (type === 'done') {
    const r = e.result;
    const ended = r.interrupted ? { question: r.question, interrupts: r.interrupts } : { answer: r.text };
    return frame('done', ended, seq);
  }
  if (type === 'error') return frame('error', { name: e.error.name, error: e.error.message }, seq);
  return FORWARDED.has(type) ? frame(type, data, seq) : null;
}

async function handleStream(request, env, ctx, owner) {
  const body = await readBody(request, []);
  const lastEventId = request.headers.get('last-event-id');
  const { readable, writable } = new TransformStream();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  let open = true;
  // Not awaited: the run goes at its own pace, not the client's (a client that went away may never read
  // again; its writes fail or wait, and the events are in the session's log for when it reconnects).
  const send = (text) => {
    if (!open || text === null) return;
    writer.write(encoder.encode(text)).catch(() => { open = false; });
  };
  let work;
  if (lastEventId !== null) {
    if (!SESSION_ID.test(body.sessionId ?? '')) throw new BadRequest('Reconnecting needs the "sessionId" the stream named');
    const after = Number(lastEventId);
    if (!Number.isSafeInteger(after) || after < 0) throw new BadRequest('Last-Event-ID: expected the id of an event of this stream');
    const session = sessionOf(env, ctx, owner, body.sessionId);
    // What was missed, then what the running call adds (each poll reads only the new records), until it ends.
    // Someone else's session, or one that does not exist, is a 404 before anything is sent.
    const replayed = session.replay({ after, follow: { timeoutMs: REPLAY_FOR_MS } })[Symbol.asyncIterator]();
    const first = await replayed.next();
    work = (async () => {
      for (let e = first; !e.done && open; e = await replayed.next()) send(sseEvent(e.value));
      await replayed.return();
    })();
  } else {
    let sessionId = body.sessionId;
    let input;
    // Streamed sessions are kept when they complete: a page that reconnects after the end still gets the
    // answer, and the conversation goes on with { sessionId, message }.
    const session = () => sessionOf(env, ctx, owner, sessionId, true);
    if (typeof body.answer === 'string') {
      if (!SESSION_ID.test(sessionId ?? '')) throw new SessionNotFoundError(`session ${JSON.stringify(sessionId)} not found`);
      input = { answer: body.answer };
    } else if (typeof body.message === 'string' && sessionId !== undefined) {
      // Only an existing session of the caller's: a client does not make sessions under ids it chooses.
      if (!SESSION_ID.test(sessionId) || (await session().checkpoint()) === null) throw new SessionNotFoundError(`session ${JSON.stringify(sessionId)} not found`);
      input = { prompt: body.message };
    } else if (typeof body.message === 'string') {
      sessionId = randomId();
      input = { prompt: body.message };
    } else {
      throw new BadRequest('Missing field "message" or "answer": expected a string');
    }
    const events = session().stream(input)[Symbol.asyncIterator]();
    // A call refused before it ran (an unknown session, one waiting for no answer) answers with its status:
    // look past `checkpoint-loaded` at the first event of the run.
    const head = [];
    for (let e = await events.next(); ; e = await events.next()) {
      head.push(e);
      if (e.done || e.value.type !== 'checkpoint-loaded') break;
    }
    const first = head.at(-1);
    if (!first.done && first.value.type === 'error' && REFUSED.has(statusOf(first.value.error))) {
      return withOwner(errorJson(first.value.error), owner, request);
    }
    work = (async () => {
      send(frame('session', owner.fresh ? { sessionId, token: owner.token } : { sessionId }));
      for (const e of head) if (!e.done) send(sseEvent(e.value));
      for (let e = first; !e.done;) { e = await events.next(); if (!e.done) send(sseEvent(e.value)); }
    })();
  }
  const done = work.catch(() => {}).finally(() => writer.close().catch(() => {}));
  ctx.waitUntil(done);
  return withOwner(new Response(readable, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } }), owner, request);
}

class BadRequest extends Error {}

async function readBody(request, fields) {
  let body;
  try {
    body = JSON.parse(await request.text());
  } catch (e) {
    throw new BadRequest(`Malformed JSON body: ${e.message}`);
  }
  if (body === null || typeof body !== 'object') throw new BadRequest('Malformed JSON body: expected an object');
  for (const name of fields) {
    if (typeof body[name] !== 'string') throw new BadRequest(`Missing field "${name}": expected a string`);
  }
  return body;
}

// ── CORS: only the origins configured ─────────────────────────────────────────
function corsHeaders(request, env) {
  const origin = request.headers.get('origin');
  const allowed = (env.ALLOWED_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  if (!origin || !allowed.includes(origin)) return {};
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': 'authorization, content-type, last-event-id',
    'access-control-max-age': '600',
    vary: 'Origin',
  };
}

function withCors(response, request, env) {
  for (const [k, v] of Object.entries(corsHeaders(request, env))) response.headers.set(k, v);
  return response;
}

/** The status an error answers with, from its name and code (an error object or an `error` event's). */
function statusOf({ name, code }) {
  if (name === 'SaverError') return code === 'TOO_LARGE' ? 413 : code === 'KEY_LENGTH' ? 400 : 500;
  return { SessionNotFoundError: 404, SessionBusyError: 409, DecisionError: 409, ConfigError: 400, CheckpointError: 422, ModelError: 502 }[name] ?? 500;
}

/** An error as the API's answer: `{ error }` with its status. */
function errorJson(e) {
  const status = statusOf(e);
  return Response.json({ error: status === 404 ? 'Session not found' : e.message ?? String(e) }, { status });
}

function errorResponse(e) {
  return e instanceof BadRequest ? Response.json({ error: e.message }, { status: 400 }) : errorJson(e);
}

export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (request.method === 'OPTIONS') return withCors(new Response(null, { status: 204 }), request, env);
    // Served only with TEST_ROUTES="true" (the test suite turns it on).
    if (env.TEST_ROUTES === 'true' && pathname.startsWith('/__test/')) {
      if (request.method === 'POST' && pathname === '/__test/saver') {
        const { owner } = await request.clone().json();
        return saverTestRoute(request, env, saverFor(env, { id: owner ?? 'test' }));
      }
      if (request.method === 'POST' && pathname === '/__test/session') {
        const { sessionId, owner } = await request.clone().json();
        return sessionTestRoute(request, agent(agentConfig(env)).session(saverFor(env, { id: owner ?? 'test' }), sessionId, { keepCompleted: true }));
      }
      if (request.method === 'POST' && pathname === '/__test/steps') {
        return stepsTestRoute(request, saverFor(env, { id: 'bench' }), { agent, defineTool, scriptedModel });
      }
      if (request.method === 'POST' && pathname === '/__test/mcp') {
        return mcpTestRoute(request, { agent, mcpTools, isInterrupted });
      }
      // The isolate's wasm memory, to watch it stay flat over many requests.
      if (request.method === 'GET' && pathname === '/__test/memory') return Response.json(memoryUsage());
    }
    let owner;
    try {
      owner = await ownerOf(request);
      let response;
      if (request.method === 'POST' && pathname === '/stream') response = await handleStream(request, env, ctx, owner);
      else if (request.method === 'POST' && pathname === '/start') response = await handleStart(request, env, ctx, owner);
      else if (request.method === 'POST' && pathname === '/reply') response = await handleReply(request, env, ctx, owner);
      else if (request.method === 'POST' && pathname === '/message') response = await handleMessage(request, env, ctx, owner);
      else if (request.method === 'GET' && pathname === '/sessions') response = await handleSessions(env, owner);
      else response = Response.json({ error: `No route for ${request.method} ${pathname}` }, { status: 404 });
      return withCors(withOwner(response, owner, request), request, env);
    } catch (e) {
      return withCors(errorResponse(e), request, env);
    }
  },
};
