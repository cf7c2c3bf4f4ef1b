// POST / { sessionId, message } or { sessionId, approve: true }: a session in KV of an agent whose `pay` call
// needs approval, traced with the OpenTelemetry SDK; answers the call's result and the spans it made.
// POST /guarded { message }: an agent with a Zod tool schema and an input and an output guardrail; answers the
// result, or the error's name, guardrail, kind and info.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { agent, defineTool, kvSaver, scriptedModel } from 'resumable-agent';

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

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === '/guarded') return guarded(request);
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
