//! A run's spans to an OpenTelemetry JS `Tracer`, through the adapter the package's front makes of
//! `config.telemetry` (telemetry.js): the core decides the spans, the adapter only starts and ends them. The
//! adapter never throws (a tracer that throws is ignored there); what it would throw anyway is dropped here.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::convert::get;
use crate::telemetry::{Attr, Span, SpanKind, SpanStart, Telemetry, Tracer};

#[wasm_bindgen]
extern "C" {
    /// telemetry.js's adapter: `{ start, set, event, end, traceparent, agentName, recordContent }`.
    pub(super) type Adapter;
    #[wasm_bindgen(method, catch)]
    fn start(
        this: &Adapter,
        kind: u32,
        name: &str,
        attributes: &JsValue,
        parent: &JsValue,
        links: &JsValue,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn set(this: &Adapter, span: &JsValue, key: &str, value: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch)]
    fn event(this: &Adapter, span: &JsValue, name: &str, attributes: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch)]
    fn end(this: &Adapter, span: &JsValue, error: Option<String>) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch)]
    fn traceparent(this: &Adapter, span: &JsValue) -> Result<JsValue, JsValue>;
}

/// The adapter of one call: `parent` is the caller's context when the call began (the `invoke_agent` span's
/// parent).
struct JsTracer {
    adapter: Adapter,
    parent: JsValue,
}

struct JsSpan {
    adapter: Adapter,
    span: JsValue,
}

fn value(v: Attr<'_>) -> JsValue {
    match v {
        Attr::Str(s) => JsValue::from_str(s),
        #[allow(clippy::cast_precision_loss)] // token counts and times, far below 2^53
        Attr::Int(n) => JsValue::from_f64(n as f64),
        Attr::Bool(b) => JsValue::from_bool(b),
        Attr::List(l) => l.iter().map(|s| JsValue::from_str(s)).collect::<Array>().into(),
    }
}

fn attributes(list: &[(&'static str, Attr<'_>)]) -> JsValue {
    let o = Object::new();
    for (k, v) in list {
        let _ = Reflect::set(&o, &JsValue::from_str(k), &value(*v));
    }
    o.into()
}

impl Tracer for JsTracer {
    fn start(&self, s: SpanStart<'_>) -> Box<dyn Span> {
        let kind = match s.kind {
            SpanKind::Agent => 0,
            SpanKind::Chat => 1,
            SpanKind::Tool => 2,
        };
        let parent = s
            .parent
            .and_then(|p| p.as_any().downcast_ref::<JsSpan>())
            .map_or_else(|| self.parent.clone(), |p| p.span.clone());
        let links: Array = s.links.iter().map(|l| JsValue::from_str(l)).collect();
        let span = self
            .adapter
            .start(kind, s.name, &attributes(s.attributes), &parent, &links)
            .unwrap_or(JsValue::UNDEFINED);
        Box::new(JsSpan {
            adapter: self.adapter.clone().unchecked_into(),
            span,
        })
    }
}

impl Span for JsSpan {
    fn set(&mut self, key: &'static str, v: Attr<'_>) {
        let _ = self.adapter.set(&self.span, key, &value(v));
    }
    fn event(&mut self, name: &'static str, list: &[(&'static str, Attr<'_>)]) {
        let _ = self.adapter.event(&self.span, name, &attributes(list));
    }
    fn end(self: Box<Self>, error: Option<&str>) {
        let _ = self.adapter.end(&self.span, error.map(str::to_owned));
    }
    fn traceparent(&self) -> Option<String> {
        self.adapter.traceparent(&self.span).ok().and_then(|t| t.as_string())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The telemetry of an agent spec whose config had `telemetry` (its adapter under `spec.telemetry`), for a
/// call that began in the caller's context `parent`.
pub(super) fn telemetry_of(spec: &JsValue, parent: &JsValue) -> Option<Telemetry> {
    let adapter = get(spec, "telemetry");
    if !adapter.is_object() {
        return None;
    }
    let name = get(&adapter, "agentName").as_string();
    let record = get(&adapter, "recordContent").as_bool() == Some(true);
    let tracer = JsTracer {
        adapter: adapter.unchecked_into(),
        parent: parent.clone(),
    };
    let mut telemetry = Telemetry::new(tracer).record_content(record);
    if let Some(name) = name {
        telemetry = telemetry.agent_name(name);
    }
    Some(telemetry)
}
