//! [`TracingTracer`]: a run's spans as `tracing` spans, with the names and fields `tracing-opentelemetry`
//! exports unchanged (`otel.name`, `otel.kind`, `otel.status_code`, the `gen_ai.*` attributes).

use std::sync::Arc;

use tracing::field::Empty;

use super::{Attr, Span, SpanKind, SpanStart, Tracer, names};

type Context = Arc<dyn Fn(&tracing::Span) -> Option<String> + Send + Sync>;
type Link = Arc<dyn Fn(&tracing::Span, &str) + Send + Sync>;

/// Reports spans through the `tracing` crate. Lists (finish reasons, interrupt ids) are written as JSON
/// arrays, `tracing` having no list values.
///
/// To carry the trace across a pause, tell it how to read a span's W3C `traceparent` and how to link a span
/// to one — with `tracing-opentelemetry`, through its `OpenTelemetrySpanExt` (`span.context()` and
/// `span.add_link(…)`). Without them, a resumed run's `invoke_agent` span still names the paused one in
/// `resumable_agent.resumed_from`.
#[derive(Clone, Default)]
pub struct TracingTracer {
    context: Option<Context>,
    link: Option<Link>,
}

impl std::fmt::Debug for TracingTracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracingTracer")
            .field("trace_context", &self.context.is_some())
            .finish()
    }
}

impl TracingTracer {
    /// Spans through `tracing`, without trace context.
    pub fn new() -> Self {
        TracingTracer::default()
    }

    /// Reads a span's `traceparent` with `context` (kept in the checkpoint) and links a resumed run's span to
    /// the paused one's with `link`.
    #[must_use]
    pub fn with_trace_context(
        mut self,
        context: impl Fn(&tracing::Span) -> Option<String> + Send + Sync + 'static,
        link: impl Fn(&tracing::Span, &str) + Send + Sync + 'static,
    ) -> Self {
        self.context = Some(Arc::new(context));
        self.link = Some(Arc::new(link));
        self
    }
}

/// A `tracing` span of a run.
struct TracingSpan {
    span: tracing::Span,
    context: Option<Context>,
}

fn record(span: &tracing::Span, key: &str, value: Attr<'_>) {
    match value {
        Attr::Str(s) => span.record(key, s),
        Attr::Int(n) => span.record(key, n),
        Attr::Bool(b) => span.record(key, b),
        Attr::List(l) => span.record(key, serde_json::to_string(l).unwrap_or_default().as_str()),
    };
}

fn text<'a>(attributes: &'a [(&'static str, Attr<'a>)], key: &str) -> Option<String> {
    attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| match v {
        Attr::Str(s) => (*s).to_owned(),
        Attr::Int(n) => n.to_string(),
        Attr::Bool(b) => b.to_string(),
        Attr::List(l) => serde_json::to_string(l).unwrap_or_default(),
    })
}

macro_rules! span_of {
    ($parent:expr, $name:literal, $otel_name:expr, $kind:literal, $($field:tt)*) => {
        match $parent {
            Some(parent) => tracing::info_span!(target: "resumable_agent", parent: parent, $name,
                otel.name = $otel_name, otel.kind = $kind, otel.status_code = Empty, error.type = Empty, $($field)*),
            None => tracing::info_span!(target: "resumable_agent", $name,
                otel.name = $otel_name, otel.kind = $kind, otel.status_code = Empty, error.type = Empty, $($field)*),
        }
    };
}

impl Tracer for TracingTracer {
    fn start(&self, start: SpanStart<'_>) -> Box<dyn Span> {
        let parent = start
            .parent
            .and_then(|p| p.as_any().downcast_ref::<TracingSpan>())
            .map(|p| &p.span);
        let span = match start.kind {
            SpanKind::Agent => span_of!(
                parent,
                "invoke_agent",
                start.name,
                "internal",
                gen_ai.operation.name = Empty,
                gen_ai.agent.name = Empty,
                gen_ai.conversation.id = Empty,
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty,
                resumable_agent.call = Empty,
                resumable_agent.run.status = Empty,
                resumable_agent.resumed_from = Empty
            ),
            SpanKind::Chat => span_of!(
                parent,
                "chat",
                start.name,
                "client",
                gen_ai.operation.name = Empty,
                gen_ai.provider.name = Empty,
                gen_ai.request.model = Empty,
                gen_ai.agent.name = Empty,
                gen_ai.response.id = Empty,
                gen_ai.response.model = Empty,
                gen_ai.response.finish_reasons = Empty,
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty,
                gen_ai.input.messages = Empty,
                gen_ai.output.messages = Empty,
                gen_ai.system_instructions = Empty,
                resumable_agent.step = Empty,
                resumable_agent.retries = Empty
            ),
            SpanKind::Tool => span_of!(parent, "execute_tool", start.name, "internal",
                gen_ai.operation.name = Empty, gen_ai.tool.name = Empty, gen_ai.tool.call.id = Empty,
                gen_ai.tool.type = Empty, gen_ai.tool.call.arguments = Empty, gen_ai.tool.call.result = Empty,
                resumable_agent.tool.interrupted = Empty),
        };
        for (key, value) in start.attributes {
            record(&span, key, *value);
        }
        for link in start.links {
            span.record("resumable_agent.resumed_from", *link);
            if let Some(f) = &self.link {
                f(&span, link);
            }
        }
        Box::new(TracingSpan {
            span,
            context: self.context.clone(),
        })
    }
}

impl Span for TracingSpan {
    fn set(&mut self, key: &'static str, value: Attr<'_>) {
        record(&self.span, key, value);
    }

    fn event(&mut self, name: &'static str, attributes: &[(&'static str, Attr<'_>)]) {
        let ids = text(attributes, names::INTERRUPT_IDS);
        let span = &self.span;
        match name {
            names::PAUSED => tracing::info!(name: "gen_ai.agent.paused", target: "resumable_agent", parent: span,
                message = names::PAUSED, gen_ai.agent.interrupt.ids = ids,
                gen_ai.agent.interrupt.kinds = text(attributes, names::INTERRUPT_KINDS),
                gen_ai.agent.interrupt.expires_at = text(attributes, names::INTERRUPT_EXPIRES_AT)),
            names::RESUMED => tracing::info!(name: "gen_ai.agent.resumed", target: "resumable_agent", parent: span,
                message = names::RESUMED, gen_ai.agent.interrupt.ids = ids,
                gen_ai.agent.decision.outcomes = text(attributes, names::DECISION_OUTCOMES)),
            other => tracing::info!(target: "resumable_agent", parent: span, message = other),
        }
    }

    fn end(self: Box<Self>, error: Option<&str>) {
        if let Some(e) = error {
            self.span.record("otel.status_code", "ERROR");
            self.span.record("error.type", e);
        }
        // Dropping the span closes it.
    }

    fn traceparent(&self) -> Option<String> {
        self.context.as_ref().and_then(|f| f(&self.span))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
