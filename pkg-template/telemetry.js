// OpenTelemetry spans of a run: the adapter the core reports to (src/wasm/telemetry.rs). The core decides every
// span, name and attribute; this only calls the `Tracer` the program gave (`trace.getTracer('my-app')`) — no
// dependency on @opentelemetry/api. Whatever the tracer throws stays here: a broken tracer never breaks a run.
import { ConfigError, describe } from './errors.js';

// The OpenTelemetry JS API's own keys (Symbol.for: shared by every copy of the API, by design): the span of a
// context, and the registered API (whose context manager knows the active context).
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');
const API_KEY = Symbol.for('opentelemetry.js.api.1');
// SpanKind: invoke_agent and execute_tool are INTERNAL (0), chat is CLIENT (2).
const KINDS = [0, 2, 0];

/** The caller's active OpenTelemetry context (undefined when no API is registered). */
export function traceContext() {
  try {
    return globalThis[API_KEY]?.context?.active?.();
  } catch {
    return undefined;
  }
}

/** A context with only values set here, for a host whose tracer was handed no context of its own. */
class LoneContext {
  #values;
  constructor(values) { this.#values = values; }
  getValue(key) { return this.#values.get(key); }
  setValue(key, value) { return new LoneContext(new Map(this.#values).set(key, value)); }
  deleteValue(key) { const values = new Map(this.#values); values.delete(key); return new LoneContext(values); }
}

/** A started span and the context that has it as the current span (its children's parent). */
class Handle {
  constructor(span, ctx) { this.span = span; this.ctx = ctx; }
}

function contextWith(ctx, span) {
  if (ctx != null && typeof ctx.setValue === 'function') {
    try { return ctx.setValue(SPAN_KEY, span); } catch { /* a context that refuses: a lone one */ }
  }
  return new LoneContext(new Map([[SPAN_KEY, span]]));
}

function linkOf(traceparent) {
  const [, traceId, spanId, flags] = traceparent.split('-');
  return { context: { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true } };
}

/**
 * The adapter of `config.telemetry` (`{ tracer, agentName?, recordContent?, scalarAttributes? }`), checked:
 * ConfigError naming what is wrong.
 */
export function telemetryAdapter(options, where) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ConfigError(`${where}: expected { tracer, agentName?, recordContent? }, got ${describe(options)}`);
  }
  // The tracer is the host's object, checked here; the other options are checked by the core with the config.
  const { tracer, agentName, recordContent, scalarAttributes } = options;
  if (tracer === null || typeof tracer !== 'object' || typeof tracer.startSpan !== 'function') {
    throw new ConfigError(`${where}.tracer: expected an OpenTelemetry Tracer (trace.getTracer('my-app')), got ${describe(tracer)}`);
  }
  // Workers' own tracing takes scalar attributes only: lists go there as JSON text.
  const scalar = scalarAttributes ?? globalThis.navigator?.userAgent === 'Cloudflare-Workers';
  const fix = (v) => (scalar && Array.isArray(v) ? JSON.stringify(v) : v);
  const fixAll = (attributes) => {
    if (scalar) for (const k of Object.keys(attributes)) attributes[k] = fix(attributes[k]);
    return attributes;
  };
  return Object.freeze({
    agentName,
    recordContent: recordContent === true,
    start(kind, name, attributes, parent, links) {
      try {
        const ctx = parent instanceof Handle ? parent.ctx : parent;
        const options = { kind: KINDS[kind], attributes: fixAll(attributes) };
        if (links.length > 0) options.links = links.map(linkOf);
        const span = tracer.startSpan(name, options, ctx);
        return span == null ? undefined : new Handle(span, contextWith(ctx, span));
      } catch {
        return undefined;
      }
    },
    set(h, key, value) {
      try { h?.span.setAttribute(key, fix(value)); } catch { /* ignored */ }
    },
    event(h, name, attributes) {
      try { h?.span.addEvent(name, fixAll(attributes)); } catch { /* ignored */ }
    },
    end(h, error) {
      if (h === undefined) return;
      try {
        if (error != null) {
          h.span.setAttribute('error.type', error);
          h.span.setStatus({ code: 2, message: error });
        }
      } catch { /* ignored */ }
      try { h.span.end(); } catch { /* ignored */ }
    },
    // The span's context as a W3C traceparent; the core keeps it only when well-formed.
    traceparent(h) {
      try {
        const c = h?.span.spanContext?.();
        return c ? `00-${c.traceId}-${c.spanId}-${((c.traceFlags ?? 0) & 0xff).toString(16).padStart(2, '0')}` : undefined;
      } catch {
        return undefined;
      }
    },
  });
}
