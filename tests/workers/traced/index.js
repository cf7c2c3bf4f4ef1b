// POST / { sessionId, message } or { sessionId, approve: true }: a session in KV of an agent whose `pay` call
// needs approval, traced with the OpenTelemetry SDK; answers the call's result and the spans it made.
// POST /guarded { message }: an agent with a Zod tool schema and an input and an output guardrail; answers the
// result, or the error's name, guardrail, kind and info.
// POST /payments { sessionId, message } or { sessionId, decisions } with the approver's login in `x-user`: a session in
// KV of an agent whose approval policy asks two approvers for payments over 100; answers the result, or the error.
// POST /concurrent { sessionId, answer? }: a session in KV whose model calls two slow lookups around a question in one
// turn (issue 36, calls running together); answers the result, the turn's results so far, how many lookups ran in this
// request and how many were under way at once.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { agent, defineTool, kvSaver, scriptedModel, InterruptError } from 'resumable-agent';

const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('worker');

const pay = defineTool({ name: 'pay', schema: (s) => ({ amount: s.number().required() }), needsApproval: true, handle: ({ amount }) => `paid ${amount}` });
const model = scriptedModel([
  { content: [{ type: 'tool_use', id: 'p1', name: 'pay', input: { amount: 5 } }], usage: { inputTokens: 40, outputTokens: 9 } },
  { content: [{ type: 'text', text: 'Paid.' }], usage: { inputTokens: 60, outputTokens: 2 } },
]);

const weather = defineTool({
  name: 'weather',
  schema: z.object({ city: z.string().refine((c) => c !== 'Atlantis', 'no such city') }),
  handle: ({ city }) => `sunny in ${city}`,
});
const noPasswords = ({ messages }) => (JSON.stringify(messages.at(-1)).includes('password') ? { tripwire: true, info: 'a password' } : undefined);
const noMordor = ({ text }) => (text.includes('Mordor') ? { tripwire: true, info: 'off the map' } : undefined);
// The model asks for the city named after "weather in", then repeats what the tool answered.
const forecaster = async (request) => {
  const last = request.messages.at(-1);
  if (typeof last.content === 'string') {
    return { content: [{ type: 'tool_use', id: 'w1', name: 'weather', input: { city: last.content.replace(/^weather in /, '') } }] };
  }
  return { content: [{ type: 'text', text: `tool said: ${last.content[0].content}` }] };
};

async function guarded(request) {
  const { message } = await request.json();
  const a = agent({ model: forecaster, tools: [weather], guardrails: { input: [noPasswords], output: [noMordor] } });
  try {
    return Response.json({ text: (await a.prompt(message)).text });
  } catch (e) {
    return Response.json({ error: e.name, guardrail: e.guardrail, kind: e.kind, info: e.info });
  }
}

let paid = 0;
const transfer = defineTool({ name: 'transfer', schema: (s) => ({ amount: s.number().required() }), handle: ({ amount }) => { paid += 1; return `transferred ${amount} (${paid} so far in this isolate)`; } });
const approval = ({ toolName, input }) => (toolName === 'transfer' && input.amount > 100 ? { ask: true, approvers: 2 } : 'allow');

async function payments(request, env, ctx) {
  const { sessionId, message, decisions } = await request.json();
  // `by` comes from the application's own login (here a header standing for it), never from the body.
  const user = request.headers.get('x-user');
  const a = agent({
    model: scriptedModel([{ content: [{ type: 'tool_use', id: 't1', name: 'transfer', input: { amount: 900 } }] }, 'Transferred.']),
    tools: [transfer],
    approval,
  });
  const session = a.session(kvSaver(env.SESSIONS), sessionId, { keepCompleted: true, waitUntil: (p) => ctx.waitUntil(p) });
  try {
    const mine = decisions && Object.fromEntries(Object.entries(decisions).map(([id, d]) => [id, { ...d, by: user }]));
    const result = mine ? await session.reply({ decisions: mine }) : await session.prompt(message);
    return Response.json({ text: result.text, interrupted: result.interrupted === true, interrupts: result.interrupts, paid });
  } catch (e) {
    return Response.json({ error: e.name, message: e.message, paid });
  }
}

async function concurrent(request, env) {
  const { sessionId, answer } = await request.json();
  const seen = { now: 0, max: 0, lookups: 0 };
  const lookup = defineTool({
    name: 'lookup',
    handle: async ({ key, ms }) => {
      seen.lookups += 1;
      seen.max = Math.max(seen.max, ++seen.now);
      await new Promise((r) => setTimeout(r, ms));
      seen.now -= 1;
      return `v-${key}`;
    },
  });
  const ask = defineTool({ name: 'ask', handle: ({ q }) => { throw new InterruptError(q); } });
  const planner = agent({
    model: scriptedModel([
      { content: [
        { type: 'tool_use', id: 'c1', name: 'lookup', input: { key: 'a', ms: 30 } },
        { type: 'tool_use', id: 'c2', name: 'ask', input: { q: 'Which day?' } },
        { type: 'tool_use', id: 'c3', name: 'lookup', input: { key: 'b', ms: 10 } },
      ] },
      'Planned.',
    ]),
    tools: [lookup, ask],
  });
  const session = planner.session(kvSaver(env.SESSIONS), sessionId);
  const r = answer ? await session.reply(answer) : await session.prompt('Plan');
  const results = (r.checkpoint.toolResults ?? []).map((x) => x.tool_use_id ?? x.toolUseId);
  return Response.json({ text: r.text, question: r.question, results, lookups: seen.lookups, maxInFlight: seen.max });
}

// POST /summarized { sessionId }: a session in KV whose run of 30 lookups is summarized at 12 messages (issue 36):
// answers the result, the summary kept in the session's checkpoint and how many summaries were written.
async function summarized(request, env) {
  const { sessionId } = await request.json();
  let summaries = 0;
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => `v-${key}` });
  const model = async (req) => {
    if (req.tools.length === 0) return { content: [{ type: 'text', text: `summary ${++summaries}` }] };
    const last = req.messages.findLast((m) => m.role === 'assistant')?.content.find((b) => b.type === 'tool_use');
    const i = last ? Number(last.id.slice(1)) + 1 : 0;
    return i < 30 ? { content: [{ type: 'tool_use', id: `c${i}`, name: 'lookup', input: { key: `k${i}` } }] } : { content: [{ type: 'text', text: 'done' }] };
  };
  const a = agent({ model, tools: [lookup], maxIterations: 40, compaction: { summarize: { maxMessages: 12 } } });
  const r = await a.session(kvSaver(env.SESSIONS), sessionId, { keepCompleted: true }).prompt('go');
  const kept = await a.session(kvSaver(env.SESSIONS), sessionId).checkpoint();
  return Response.json({ text: r.text, summaries, summarized: kept.summarized });
}

export default {
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname === '/summarized') return summarized(request, env);
    if (new URL(request.url).pathname === '/concurrent') return concurrent(request, env);
    if (new URL(request.url).pathname === '/guarded') return guarded(request);
    if (new URL(request.url).pathname === '/payments') return payments(request, env, ctx);
    exporter.reset();
    const { sessionId, message, approve } = await request.json();
    const payer = agent({ model, tools: [pay], telemetry: { tracer, agentName: 'payer' } });
    const session = payer.session(kvSaver(env.SESSIONS), sessionId);
    const result = approve ? await session.reply({ decisions: [{ type: 'approve' }] }) : await session.prompt(message);
    const spans = exporter.getFinishedSpans().map((s) => ({
      name: s.name,
      spanId: s.spanContext().spanId,
      traceId: s.spanContext().traceId,
      parentSpanId: s.parentSpanContext?.spanId,
      attributes: s.attributes,
      events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
      links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    }));
    return Response.json({ text: result.text, interrupted: result.interrupted === true, traceparent: result.checkpoint?.traceparent, spans });
  },
};
