// POST / { sessionId, message } or { sessionId, approve: true }: a session in KV of an agent whose `pay` call
// needs approval, traced with the OpenTelemetry SDK; answers the call's result and the spans it made.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { agent, defineTool, kvSaver, scriptedModel } from 'resumable-agent';

const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('worker');

const pay = defineTool({ name: 'pay', schema: (s) => ({ amount: s.number().required() }), needsApproval: true, handle: ({ amount }) => `paid ${amount}` });
const model = scriptedModel([
  { content: [{ type: 'tool_use', id: 'p1', name: 'pay', input: { amount: 5 } }], usage: { inputTokens: 40, outputTokens: 9 } },
  { content: [{ type: 'text', text: 'Paid.' }], usage: { inputTokens: 60, outputTokens: 2 } },
]);

export default {
  async fetch(request, env) {
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
