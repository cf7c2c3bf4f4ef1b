// The real OpenTelemetry JS SDK, set up as an application sets it up: the API's global tracer provider and an
// async-hooks context manager, spans kept in memory (InMemorySpanExporter) for the tests to read.
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

export function setUpOtel() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return { exporter, tracer: trace.getTracer('resumable-agent-tests'), provider };
}

/** A finished span as plain JSON: what the tests compare. */
export function plain(span) {
  const c = span.spanContext();
  return {
    name: span.name,
    kind: span.kind,
    traceId: c.traceId,
    spanId: c.spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    attributes: { ...span.attributes },
    events: span.events.map((e) => ({ name: e.name, attributes: { ...e.attributes } })),
    links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    status: { code: span.status.code, message: span.status.message },
  };
}

export const spansOf = (exporter) => exporter.getFinishedSpans().map(plain);
