//! A run's spans through the `tracing` crate (feature `tracing`), read back by a test subscriber that records
//! what `tracing-opentelemetry` would read: span names, `otel.*` fields, the GenAI fields, parents, events; and
//! the trace context carried across a pause by the checkpoint.
#![cfg(feature = "tracing")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;
use resumable_agent::{
    Agent, Checkpoint, Decision, ModelResponse, Outcome, Resume, ScriptedModel, Telemetry, TracingTracer, Usage, tool,
};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[derive(Debug, Clone, Default)]
struct SpanRec {
    name: &'static str,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
    events: Vec<BTreeMap<String, String>>,
    closed: bool,
}

/// Records every span and event; the current span is tracked per subscriber (the tests run one thread).
#[derive(Clone, Default)]
struct Recorder {
    spans: Arc<Mutex<Vec<SpanRec>>>,
    stack: Arc<Mutex<Vec<u64>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut spans = self.spans.lock().unwrap();
        let parent = match attrs.parent() {
            Some(p) => Some(p.into_u64()),
            None if attrs.is_contextual() => self.stack.lock().unwrap().last().copied(),
            None => None,
        };
        let mut rec = SpanRec {
            name: attrs.metadata().name(),
            parent,
            ..SpanRec::default()
        };
        attrs.record(&mut Fields(&mut rec.fields));
        spans.push(rec);
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        let rec = &mut spans[span.into_u64() as usize - 1];
        values.record(&mut Fields(&mut rec.fields));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let parent = event
            .parent()
            .map(Id::into_u64)
            .or_else(|| self.stack.lock().unwrap().last().copied());
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        if let Some(p) = parent {
            self.spans.lock().unwrap()[p as usize - 1].events.push(fields);
        }
    }
    fn enter(&self, span: &Id) {
        self.stack.lock().unwrap().push(span.into_u64());
    }
    fn exit(&self, _: &Id) {
        self.stack.lock().unwrap().pop();
    }
    fn try_close(&self, span: Id) -> bool {
        self.spans.lock().unwrap()[span.into_u64() as usize - 1].closed = true;
        true
    }
}

impl Recorder {
    fn spans(&self) -> Vec<(u64, SpanRec)> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, s)| (i as u64 + 1, s))
            .collect()
    }
    fn named(&self, name: &str) -> Vec<(u64, SpanRec)> {
        self.spans().into_iter().filter(|(_, s)| s.name == name).collect()
    }
}

fn usage(input: u64, output: u64) -> ModelResponse {
    let mut r = ModelResponse::text("Both found.");
    r.usage = Some(Usage {
        input_tokens: input,
        output_tokens: output,
    });
    r
}

#[test]
fn a_run_is_an_invoke_agent_span_with_chat_and_execute_tool_spans_under_it() {
    let recorder = Recorder::default();
    let model = ScriptedModel::new([
        turn(vec![
            call("c1", "lookup", json!({"key": "a"})),
            call("c2", "lookup", json!({"key": "b"})),
        ]),
        usage(150, 5),
    ]);
    let agent = Agent::builder(model)
        .tool(tool(
            "lookup",
            "Looks a key up.",
            json!({"type": "object"}),
            |input, _| std::future::ready(Ok(json!(format!("value of {}", input["key"])))),
        ))
        .telemetry(Telemetry::new(TracingTracer::new()).agent_name("researcher"))
        .build()
        .unwrap();
    let outer = tracing::subscriber::with_default(recorder.clone(), || {
        let request = tracing::info_span!("request");
        let _in = request.enter();
        block_on(agent.prompt("find a and b")).unwrap()
    });
    let Outcome::Complete(done) = outer else {
        panic!("expected an answer")
    };
    assert_eq!(done.text, "Both found.");
    let (request_id, _) = recorder.named("request")[0].clone();
    let runs = recorder.named("invoke_agent");
    assert_eq!(runs.len(), 1);
    let (run_id, run) = &runs[0];
    assert_eq!(run.parent, Some(request_id), "a child of the caller's current span");
    assert!(run.closed);
    let f = &run.fields;
    assert_eq!(f["otel.name"], "invoke_agent researcher");
    assert_eq!(f["otel.kind"], "internal");
    assert_eq!(f["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(f["gen_ai.agent.name"], "researcher");
    assert_eq!(f["gen_ai.conversation.id"], done.checkpoint.run_id.clone().unwrap());
    assert_eq!(f["gen_ai.usage.input_tokens"], "150");
    assert_eq!(f["resumable_agent.run.status"], "completed");
    assert!(!f.contains_key("otel.status_code"));
    let chats = recorder.named("chat");
    assert_eq!(chats.len(), 2);
    for (k, (_, chat)) in chats.iter().enumerate() {
        assert_eq!(chat.parent, Some(*run_id));
        assert_eq!(chat.fields["otel.name"], "chat scripted");
        assert_eq!(chat.fields["otel.kind"], "client");
        assert_eq!(chat.fields["gen_ai.provider.name"], "scripted");
        assert_eq!(chat.fields["resumable_agent.step"], (k + 1).to_string());
    }
    assert_eq!(chats[0].1.fields["gen_ai.response.finish_reasons"], r#"["tool_call"]"#);
    assert_eq!(chats[1].1.fields["gen_ai.response.finish_reasons"], r#"["stop"]"#);
    let tools: Vec<(Option<u64>, String, String)> = recorder
        .named("execute_tool")
        .into_iter()
        .map(|(_, t)| {
            (
                t.parent,
                t.fields["otel.name"].clone(),
                t.fields["gen_ai.tool.call.id"].clone(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            (Some(*run_id), "execute_tool lookup".to_owned(), "c1".to_owned()),
            (Some(*run_id), "execute_tool lookup".to_owned(), "c2".to_owned())
        ]
    );
    // Content is not recorded by default.
    assert!(
        recorder
            .spans()
            .iter()
            .all(|(_, s)| !s.fields.contains_key("gen_ai.input.messages"))
    );
}

/// The W3C context a test "exporter" gives each span: its id in both ids.
fn fake_traceparent(span: &tracing::Span) -> Option<String> {
    span.id()
        .map(|id| format!("00-{:032x}-{:016x}-01", id.into_u64() + 0x1000, id.into_u64()))
}

#[test]
fn a_pause_carries_the_trace_context_and_the_resumed_run_links_to_it() {
    let recorder = Recorder::default();
    let links: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
    let seen = links.clone();
    let tracer = TracingTracer::new().with_trace_context(fake_traceparent, move |span, link| {
        seen.lock()
            .unwrap()
            .push((span.id().unwrap().into_u64(), link.to_owned()));
    });
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![call("a1", "send", json!({"to": "ann"}))]),
        ModelResponse::text("Done."),
    ]);
    let agent = agent_with_gates(model, &counters)
        .telemetry(Telemetry::new(tracer))
        .build()
        .unwrap();
    let paused = tracing::subscriber::with_default(recorder.clone(), || block_on(agent.prompt("Pay Ann")).unwrap());
    let Outcome::Interrupted(paused) = paused else {
        panic!("expected a pause")
    };
    let (first_id, first) = recorder.named("invoke_agent")[0].clone();
    assert_eq!(first.fields["resumable_agent.run.status"], "paused");
    assert_eq!(first.events[0]["message"], "gen_ai.agent.paused");
    assert_eq!(first.events[0]["gen_ai.agent.interrupt.ids"], r#"["a1"]"#);
    assert_eq!(first.events[0]["gen_ai.agent.interrupt.kinds"], r#"["approval"]"#);
    let carried = paused.checkpoint.traceparent.clone().unwrap();
    assert_eq!(Some(carried.clone()), fake_traceparent_of(first_id));
    // Another process: the checkpoint as JSON.
    let moved = Checkpoint::from_json(&paused.checkpoint.to_json()).unwrap();
    let resumed = tracing::subscriber::with_default(recorder.clone(), || {
        block_on(agent.resume(moved, Resume::Decisions(vec![Decision::approve()]))).unwrap()
    });
    assert!(matches!(resumed, Outcome::Complete(_)));
    let (second_id, second) = recorder.named("invoke_agent")[1].clone();
    assert_eq!(second.fields["resumable_agent.call"], "resume");
    assert_eq!(second.fields["resumable_agent.resumed_from"], carried);
    assert_eq!(*links.lock().unwrap(), [(second_id, carried)]);
    assert_eq!(second.events[0]["message"], "gen_ai.agent.resumed");
    assert_eq!(second.events[0]["gen_ai.agent.decision.outcomes"], r#"["approved"]"#);
    assert_eq!(resumed.checkpoint().traceparent, fake_traceparent_of(second_id));
}

fn fake_traceparent_of(id: u64) -> Option<String> {
    Some(format!("00-{:032x}-{:016x}-01", id + 0x1000, id))
}

#[test]
fn a_failed_model_call_is_an_error_span_and_so_is_the_run() {
    let recorder = Recorder::default();
    let agent = Agent::builder(ScriptedModel::new([]))
        .telemetry(Telemetry::new(TracingTracer::new()).record_content(true))
        .instructions("Be brief.")
        .build()
        .unwrap();
    let err = tracing::subscriber::with_default(recorder.clone(), || block_on(agent.prompt("hi")).unwrap_err());
    assert_eq!(err.kind_name(), "ModelError");
    let (_, chat) = recorder.named("chat")[0].clone();
    assert_eq!(chat.fields["otel.status_code"], "ERROR");
    assert_eq!(chat.fields["error.type"], "ModelError");
    assert_eq!(
        chat.fields["gen_ai.input.messages"],
        r#"[{"role":"user","parts":[{"type":"text","content":"hi"}]}]"#
    );
    assert_eq!(
        chat.fields["gen_ai.system_instructions"],
        r#"[{"type":"text","content":"Be brief."}]"#
    );
    let (_, run) = recorder.named("invoke_agent")[0].clone();
    assert_eq!(run.fields["otel.status_code"], "ERROR");
    assert_eq!(run.fields["error.type"], "ModelError");
    assert_eq!(run.fields["resumable_agent.run.status"], "failed");
}

#[test]
fn without_telemetry_no_span_is_made_and_the_checkpoint_has_no_trace_context() {
    let recorder = Recorder::default();
    let agent = Agent::builder(ScriptedModel::new([ModelResponse::text("hi")]))
        .build()
        .unwrap();
    let done = tracing::subscriber::with_default(recorder.clone(), || block_on(agent.prompt("hi")).unwrap());
    assert!(recorder.spans().is_empty());
    assert_eq!(done.checkpoint().traceparent, None);
}

#[test]
fn a_malformed_trace_context_from_the_tracer_never_reaches_the_checkpoint() {
    let recorder = Recorder::default();
    let tracer = TracingTracer::new().with_trace_context(|_| Some("00-NOT-A-TRACE-01".to_owned()), |_, _| {});
    let agent = Agent::builder(ScriptedModel::new([ModelResponse::text("hi")]))
        .telemetry(Telemetry::new(tracer))
        .build()
        .unwrap();
    let done = tracing::subscriber::with_default(recorder.clone(), || block_on(agent.prompt("hi")).unwrap());
    assert_eq!(done.checkpoint().traceparent, None);
    assert_eq!(recorder.named("invoke_agent").len(), 1, "the span itself is still made");
    Checkpoint::from_json(&done.checkpoint().to_json())
        .unwrap()
        .validate()
        .unwrap();
}

/// A lead that calls the subagent `payments` (its `pay` needs approval), and answers.
fn team(child_telemetry: bool) -> Agent {
    let mut child = Agent::builder(ScriptedModel::new([
        turn(vec![call("k1", "pay", json!({"amount": 20}))]),
        ModelResponse::text("Paid."),
    ]))
    .tool(
        tool("pay", "Pays.", json!({"type": "object"}), |_, _| {
            std::future::ready(Ok(json!("paid")))
        })
        .needs_approval(),
    );
    if child_telemetry {
        child = child.telemetry(Telemetry::new(TracingTracer::new()).agent_name("payer"));
    }
    Agent::builder(ScriptedModel::new([
        turn(vec![call("c1", "payments", json!({"task": "pay"}))]),
        ModelResponse::text("Settled."),
    ]))
    .tool(resumable_agent::agent_tool(
        "payments",
        "Pays invoices.",
        child.build().unwrap(),
    ))
    .telemetry(Telemetry::new(TracingTracer::new()).agent_name("lead"))
    .build()
    .unwrap()
}

#[test]
fn a_subagents_run_is_traced_under_the_span_of_the_call_that_runs_it_before_and_after_its_pause() {
    for child_telemetry in [false, true] {
        let recorder = Recorder::default();
        let done = tracing::subscriber::with_default(recorder.clone(), || {
            let paused = block_on(team(child_telemetry).prompt("settle")).unwrap();
            let cp = Checkpoint::from_json(&paused.checkpoint().to_json()).unwrap();
            block_on(team(child_telemetry).resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())])))
                .unwrap()
        });
        assert!(matches!(done, Outcome::Complete(_)));
        // Two calls of the lead (the prompt, then the resume), each with an execute_tool span for c1, and under each
        // the subagent's own invoke_agent span, its chat spans under that.
        let runs = recorder.named("invoke_agent");
        let lead: Vec<&(u64, SpanRec)> = runs
            .iter()
            .filter(|(_, s)| s.fields["gen_ai.agent.name"] == "lead")
            .collect();
        let name = if child_telemetry { "payer" } else { "payments" };
        let child: Vec<&(u64, SpanRec)> = runs
            .iter()
            .filter(|(_, s)| s.fields["gen_ai.agent.name"] == name)
            .collect();
        assert_eq!(
            (lead.len(), child.len()),
            (2, 2),
            "child telemetry {child_telemetry}: {runs:?}"
        );
        let tools = recorder.named("execute_tool");
        for (k, (child_id, c)) in child.iter().enumerate() {
            let (tool_id, t) = tools
                .iter()
                .find(|(id, _)| Some(*id) == c.parent)
                .unwrap_or_else(|| panic!("the subagent's run {k} is under a tool span: {c:?}"));
            assert_eq!(t.fields["otel.name"], "execute_tool payments");
            assert_eq!(t.parent, Some(lead[k].0), "the call is the lead's {k}th run's");
            assert_eq!(c.fields["otel.name"], format!("invoke_agent {name}"));
            let chats: Vec<_> = recorder
                .named("chat")
                .into_iter()
                .filter(|(_, s)| s.parent == Some(*child_id))
                .collect();
            assert_eq!(chats.len(), 1, "one model call of the subagent in each of its runs");
            let _ = tool_id;
        }
        // The pause and the decision are the subagent's, recorded on its spans.
        assert_eq!(child[0].1.fields["resumable_agent.run.status"], "paused");
        assert_eq!(child[1].1.fields["resumable_agent.run.status"], "completed");
    }
}
