//! OpenTelemetry spans of a run, named as the GenAI semantic conventions name them: `invoke_agent` for each
//! call (prompt, resume, session call), `chat` for each model call and `execute_tool` for each tool call under
//! it. The conventions are still a draft with no released constants, so every name used is defined here, once
//! ([`names`]); the hosts' tracers (an OpenTelemetry JS `Tracer` in the npm package, the `tracing` crate
//! natively) only carry what this module decides.
//!
//! A pause does not end the trace: the checkpoint keeps the W3C `traceparent` of the `invoke_agent` span that
//! made it ([`Checkpoint::traceparent`]), and the run that resumes it — in any process — links its own span to
//! that one. Without a tracer nothing here runs.

use std::sync::Arc;

use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::message::{ToolResult, ToolUse, Usage};
use crate::model::{ModelError, ModelInfo, ModelRequest, ModelResponse};
use crate::platform::{MaybeSend, MaybeSync};
use crate::run::Applied;

mod content;
#[cfg(feature = "tracing")]
mod tracing_tracer;
#[cfg(feature = "tracing")]
pub use tracing_tracer::TracingTracer;

/// The attribute, span and event names used (OpenTelemetry GenAI semantic conventions, as of 2026; ours
/// under `resumable_agent.`).
pub mod names {
    /// `invoke_agent`, `chat` or `execute_tool`.
    pub const OPERATION: &str = "gen_ai.operation.name";
    /// The agent's name (`telemetry.agentName`).
    pub const AGENT_NAME: &str = "gen_ai.agent.name";
    /// The session id in a session, else the run id (what resuming continues).
    pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
    /// `anthropic`, `openai`, `gcp.gemini`, …
    pub const PROVIDER: &str = "gen_ai.provider.name";
    /// The model asked for.
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    /// The provider's id of the answer.
    pub const RESPONSE_ID: &str = "gen_ai.response.id";
    /// The model that answered.
    pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
    /// Why the model stopped, as a list.
    pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
    /// Input tokens (of the call; of this prompt or resume on `invoke_agent`).
    pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    /// Output tokens.
    pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    /// The tool's name.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The tool call's id.
    pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    /// `function`.
    pub const TOOL_TYPE: &str = "gen_ai.tool.type";
    /// A failure's type (with the span's status ERROR).
    pub const ERROR_TYPE: &str = "error.type";
    /// The conversation sent (with `recordContent`), as JSON.
    pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
    /// The answer (with `recordContent`), as JSON.
    pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
    /// The agent's instructions (with `recordContent`), as JSON.
    pub const SYSTEM_INSTRUCTIONS: &str = "gen_ai.system_instructions";
    /// A tool call's input (with `recordContent`), as JSON.
    pub const TOOL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
    /// A tool call's result (with `recordContent`).
    pub const TOOL_RESULT: &str = "gen_ai.tool.call.result";
    /// Event: the run paused, waiting for people (the proposal's name).
    pub const PAUSED: &str = "gen_ai.agent.paused";
    /// Event: the run resumed with decisions (the proposal's name).
    pub const RESUMED: &str = "gen_ai.agent.resumed";
    /// On the pause and resume events: the interrupts' ids.
    pub const INTERRUPT_IDS: &str = "gen_ai.agent.interrupt.ids";
    /// On the pause event: their kinds (`approval`, `question`, `elicitation`).
    pub const INTERRUPT_KINDS: &str = "gen_ai.agent.interrupt.kinds";
    /// On the pause event: the earliest expiry, ms since the epoch.
    pub const INTERRUPT_EXPIRES_AT: &str = "gen_ai.agent.interrupt.expires_at";
    /// On the resume event: each decision's outcome (`approved`, `pending` — one approver of several —, `denied`, `answered`, `expired`).
    pub const DECISION_OUTCOMES: &str = "gen_ai.agent.decision.outcomes";
    /// How the call ended: `completed`, `paused` or `failed`.
    pub const RUN_STATUS: &str = "resumable_agent.run.status";
    /// The call: `prompt`, `resume`, or a session's `prompt`, `reply`, `resume`.
    pub const CALL: &str = "resumable_agent.call";
    /// The model call's number in the run (1-based, across resumes).
    pub const STEP: &str = "resumable_agent.step";
    /// Requests the provider retried before this answer or failure.
    pub const RETRIES: &str = "resumable_agent.retries";
    /// A tool call that paused the run (its span ends normally).
    pub const TOOL_INTERRUPTED: &str = "resumable_agent.tool.interrupted";
}

/// The most bytes of JSON one recorded content attribute holds (`recordContent`): older messages are left
/// out first, and one text longer than a quarter of it is cut, saying how much was cut.
pub const MAX_CONTENT_BYTES: usize = 32 * 1024;

/// What a span is (OpenTelemetry's kind: `invoke_agent` and `execute_tool` are INTERNAL, `chat` CLIENT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpanKind {
    /// `invoke_agent`.
    Agent,
    /// `chat`.
    Chat,
    /// `execute_tool`.
    Tool,
}

/// An attribute's value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Attr<'a> {
    /// Text.
    Str(&'a str),
    /// A whole number.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A list of texts (a host whose spans take scalars only writes it as a JSON array).
    List(&'a [String]),
}

/// A span to start.
#[non_exhaustive]
pub struct SpanStart<'a> {
    /// What it is.
    pub kind: SpanKind,
    /// Its name: `invoke_agent {agent}`, `chat {model}`, `execute_tool {tool}`.
    pub name: &'a str,
    /// The span it is part of (`None`: the caller's current one).
    pub parent: Option<&'a dyn Span>,
    /// Its attributes at the start.
    pub attributes: &'a [(&'static str, Attr<'a>)],
    /// Spans it continues, as W3C `traceparent`s (a resumed run's link to the paused one).
    pub links: &'a [&'a str],
}

/// Where spans go: the npm package's adapter over an OpenTelemetry `Tracer`, [`TracingTracer`] (feature
/// `tracing`), or your own. A tracer must not fail the run: whatever goes wrong in it stays in it.
pub trait Tracer: MaybeSend + MaybeSync {
    /// Starts a span.
    fn start(&self, span: SpanStart<'_>) -> Box<dyn Span>;
}

/// A started span; dropped without [`Span::end`] it ends as it is.
pub trait Span: MaybeSend {
    /// Sets an attribute.
    fn set(&mut self, key: &'static str, value: Attr<'_>);
    /// Adds an event.
    fn event(&mut self, name: &'static str, attributes: &[(&'static str, Attr<'_>)]);
    /// Ends the span; `error`: its `error.type`, with the status ERROR.
    fn end(self: Box<Self>, error: Option<&str>);
    /// Its W3C `traceparent`, when the tracer knows its trace and span ids.
    fn traceparent(&self) -> Option<String> {
        None
    }
    /// The span itself, for a tracer that starts a child of it.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// An agent's telemetry: its tracer and what to record. Cheap to clone.
#[derive(Clone)]
pub struct Telemetry {
    tracer: Arc<dyn Tracer>,
    agent_name: Option<Arc<str>>,
    record_content: bool,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("agent_name", &self.agent_name)
            .field("record_content", &self.record_content)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Spans to `tracer`, message content left out.
    pub fn new(tracer: impl Tracer + 'static) -> Self {
        Telemetry {
            tracer: Arc::new(tracer),
            agent_name: None,
            record_content: false,
        }
    }

    /// The calling run's telemetry as a subagent without its own traces with: named after its tool.
    pub(crate) fn for_subagent(&self, name: &str) -> Self {
        Telemetry {
            agent_name: Some(name.into()),
            ..self.clone()
        }
    }

    /// Names the agent (`gen_ai.agent.name`, and the `invoke_agent` span's name).
    #[must_use]
    pub fn agent_name(mut self, name: impl Into<String>) -> Self {
        self.agent_name = Some(name.into().into());
        self
    }

    /// Records the messages, instructions and tool inputs and results (off by default: they may hold
    /// personal data), each attribute within [`MAX_CONTENT_BYTES`].
    #[must_use]
    pub fn record_content(mut self, record: bool) -> Self {
        self.record_content = record;
        self
    }
}

/// True for a W3C `traceparent` of version 00 with non-zero ids.
pub(crate) fn is_traceparent(text: &str) -> bool {
    let id = |part: Option<&str>, len: usize| {
        part.filter(|p| p.len() == len && p.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
            .is_some_and(|p| p.bytes().any(|c| c != b'0') || len == 2)
    };
    let mut parts = text.split('-');
    parts.next() == Some("00")
        && id(parts.next(), 32)
        && id(parts.next(), 16)
        && id(parts.next(), 2)
        && parts.next().is_none()
}

/// The spans of one call of a traced agent: the `invoke_agent` span and the model or tool call under way.
pub(crate) struct RunTrace {
    telemetry: Telemetry,
    agent: Box<dyn Span>,
    chat: Option<Box<dyn Span>>,
    /// The tool calls under way, by call id (several when a turn's calls run concurrently).
    tools: Vec<(String, Box<dyn Span>)>,
    usage_before: Usage,
}

/// How a decision a resume applied turned out.
fn outcome_of(a: &Applied) -> &'static str {
    use crate::interrupt::InterruptKind;
    if a.expired {
        "expired"
    } else if a.approved {
        "approved"
    } else if a.pending {
        // One approver of several: the call still waits.
        "pending"
    } else if matches!(a.interrupt.kind, InterruptKind::Approval | InterruptKind::Budget)
        || a.result.as_ref().is_some_and(|r| r.is_error)
    {
        "denied"
    } else {
        "answered"
    }
}

/// A model failure's `error.type`: the HTTP status, or the kind of failure.
fn model_error_type(e: &ModelError) -> String {
    match e {
        ModelError::Http { status: Some(s), .. } => s.to_string(),
        ModelError::Http { status: None, .. } => "network".into(),
        ModelError::Failed { name: Some(n), .. } => n.clone(),
        ModelError::Settings { .. } => "settings".into(),
        ModelError::InvalidResponse { .. } => "invalid_response".into(),
        ModelError::Stopped { reason, .. } => String::from(reason.clone()),
        ModelError::Aborted { .. } => "aborted".into(),
        _ => "ModelError".into(),
    }
}

impl RunTrace {
    /// Starts the `invoke_agent` span of a call (`call`: `prompt`, `resume`, `session.prompt`, …) that runs
    /// `checkpoint`, linked to the span that made it; [`RunTrace::traceparent`] is what the checkpoint carries next.
    pub(crate) fn start(
        telemetry: &Telemetry,
        call: &str,
        conversation: Option<&str>,
        checkpoint: &Checkpoint,
        applied: &[Applied],
        parent: Option<&dyn Span>,
    ) -> RunTrace {
        let name = match telemetry.agent_name.as_deref() {
            Some(agent) => format!("invoke_agent {agent}"),
            None => "invoke_agent".to_owned(),
        };
        let conversation = conversation.or(checkpoint.run_id.as_deref()).unwrap_or_default();
        let mut attributes = vec![
            (names::OPERATION, Attr::Str("invoke_agent")),
            (names::CALL, Attr::Str(call)),
        ];
        if let Some(agent) = telemetry.agent_name.as_deref() {
            attributes.push((names::AGENT_NAME, Attr::Str(agent)));
        }
        if !conversation.is_empty() {
            attributes.push((names::CONVERSATION_ID, Attr::Str(conversation)));
        }
        let link = checkpoint.traceparent.as_deref().filter(|t| is_traceparent(t));
        let links: Vec<&str> = link.into_iter().collect();
        let mut agent = telemetry.tracer.start(SpanStart {
            kind: SpanKind::Agent,
            name: &name,
            parent,
            attributes: &attributes,
            links: &links,
        });
        if !applied.is_empty() {
            let ids: Vec<String> = applied.iter().map(|a| a.interrupt.id.clone()).collect();
            let outcomes: Vec<String> = applied.iter().map(|a| outcome_of(a).to_owned()).collect();
            agent.event(
                names::RESUMED,
                &[
                    (names::INTERRUPT_IDS, Attr::List(&ids)),
                    (names::DECISION_OUTCOMES, Attr::List(&outcomes)),
                ],
            );
        }
        RunTrace {
            telemetry: telemetry.clone(),
            agent,
            chat: None,
            tools: Vec::new(),
            usage_before: checkpoint.usage,
        }
    }

    /// The telemetry it traces with.
    pub(crate) fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// The span of the tool call started last, if one is under way (a subagent's call runs alone).
    pub(crate) fn tool_span(&self) -> Option<&dyn Span> {
        self.tools.last().map(|(_, s)| &**s)
    }

    /// The `invoke_agent` span's W3C context, when the tracer gives a well-formed one (a tracer's malformed answer
    /// never reaches a checkpoint, which would then be refused on resume).
    pub(crate) fn traceparent(&self) -> Option<String> {
        self.agent.traceparent().filter(|t| is_traceparent(t))
    }

    /// A model call starts.
    pub(crate) fn chat_start(&mut self, step: u32, info: ModelInfo<'_>, request: &ModelRequest<'_>) {
        let name = if info.model.is_empty() {
            "chat".to_owned()
        } else {
            format!("chat {}", info.model)
        };
        let mut attributes = vec![
            (names::OPERATION, Attr::Str("chat")),
            (names::STEP, Attr::Int(i64::from(step))),
        ];
        if !info.provider.is_empty() {
            attributes.push((names::PROVIDER, Attr::Str(info.provider)));
        }
        if !info.model.is_empty() {
            attributes.push((names::REQUEST_MODEL, Attr::Str(info.model)));
        }
        if let Some(name) = self.telemetry.agent_name.as_deref() {
            attributes.push((names::AGENT_NAME, Attr::Str(name)));
        }
        let (messages, system);
        if self.telemetry.record_content {
            messages = content::input_messages(request.messages);
            attributes.push((names::INPUT_MESSAGES, Attr::Str(&messages)));
            if let Some(s) = request.system {
                system = content::system_instructions(s);
                attributes.push((names::SYSTEM_INSTRUCTIONS, Attr::Str(&system)));
            }
        }
        self.chat = Some(self.telemetry.tracer.start(SpanStart {
            kind: SpanKind::Chat,
            name: &name,
            parent: Some(&*self.agent),
            attributes: &attributes,
            links: &[],
        }));
    }

    /// The model call ended (`retries`: the requests its provider tried again).
    pub(crate) fn chat_end(&mut self, result: Result<&ModelResponse, &ModelError>, retries: u32) {
        let Some(mut span) = self.chat.take() else { return };
        if retries > 0 {
            span.set(names::RETRIES, Attr::Int(i64::from(retries)));
        }
        let usage = match result {
            Ok(r) => r.usage,
            Err(ModelError::Stopped { usage, .. }) => *usage,
            Err(_) => None,
        };
        if let Some(u) = usage {
            span.set(
                names::INPUT_TOKENS,
                Attr::Int(i64::try_from(u.input_tokens).unwrap_or(i64::MAX)),
            );
            span.set(
                names::OUTPUT_TOKENS,
                Attr::Int(i64::try_from(u.output_tokens).unwrap_or(i64::MAX)),
            );
        }
        match result {
            Ok(r) => {
                if let Some(id) = &r.id {
                    span.set(names::RESPONSE_ID, Attr::Str(id));
                }
                if let Some(model) = &r.model {
                    span.set(names::RESPONSE_MODEL, Attr::Str(model));
                }
                let reason = content::finish_reason(r);
                span.set(names::FINISH_REASONS, Attr::List(std::slice::from_ref(&reason)));
                if self.telemetry.record_content {
                    span.set(names::OUTPUT_MESSAGES, Attr::Str(&content::output_messages(r, &reason)));
                }
                span.end(None);
            }
            Err(e) => {
                if let ModelError::Stopped { reason, .. } = e {
                    let reason = String::from(reason.clone());
                    span.set(names::FINISH_REASONS, Attr::List(std::slice::from_ref(&reason)));
                }
                span.end(Some(&model_error_type(e)));
            }
        }
    }

    /// A tool call starts.
    pub(crate) fn tool_start(&mut self, call: &ToolUse) {
        let name = format!("execute_tool {}", call.name);
        let mut attributes = vec![
            (names::OPERATION, Attr::Str("execute_tool")),
            (names::TOOL_NAME, Attr::Str(&call.name)),
            (names::TOOL_CALL_ID, Attr::Str(&call.id)),
            (names::TOOL_TYPE, Attr::Str("function")),
        ];
        let input;
        if self.telemetry.record_content {
            input = content::bounded(crate::keys::canonical_json(&call.input));
            attributes.push((names::TOOL_ARGUMENTS, Attr::Str(&input)));
        }
        let span = self.telemetry.tracer.start(SpanStart {
            kind: SpanKind::Tool,
            name: &name,
            parent: Some(&*self.agent),
            attributes: &attributes,
            links: &[],
        });
        self.tools.push((call.id.clone(), span));
    }

    /// Tool call `id` ended: with its result, paused (`None`: an interrupt or a request for input), or not
    /// finished (`error`: why).
    pub(crate) fn tool_end(&mut self, id: &str, result: Option<&ToolResult>, error: Option<&str>) {
        let Some(k) = self.tools.iter().position(|(i, _)| i == id) else {
            return;
        };
        let (_, mut span) = self.tools.remove(k);
        match (result, error) {
            (_, Some(why)) => span.end(Some(why)),
            (Some(r), None) => {
                if self.telemetry.record_content {
                    span.set(names::TOOL_RESULT, Attr::Str(&content::bounded(r.content.clone())));
                }
                span.end(r.is_error.then_some("tool_error"));
            }
            (None, None) => {
                span.set(names::TOOL_INTERRUPTED, Attr::Bool(true));
                span.end(None);
            }
        }
    }

    /// The tool calls under way ended without a result (`why`: the run was stopped, or a call's server could not
    /// be reached).
    pub(crate) fn end_tools(&mut self, why: &str) {
        for (_, tool) in self.tools.drain(..) {
            tool.end(Some(why));
        }
    }

    /// The call ended: completed or paused (`checkpoint`), or failed.
    pub(crate) fn end(mut self, checkpoint: Option<&Checkpoint>, error: Option<&AgentError>) {
        // A span still open (an error between start and end) ends with the call.
        let failed = error.map(AgentError::kind_name);
        if let Some(chat) = self.chat.take() {
            chat.end(Some(failed.unwrap_or("interrupted")));
        }
        for (_, tool) in self.tools.drain(..) {
            tool.end(Some(failed.unwrap_or("interrupted")));
        }
        if let Some(cp) = checkpoint {
            let input = cp.usage.input_tokens.saturating_sub(self.usage_before.input_tokens);
            let output = cp.usage.output_tokens.saturating_sub(self.usage_before.output_tokens);
            self.agent
                .set(names::INPUT_TOKENS, Attr::Int(i64::try_from(input).unwrap_or(i64::MAX)));
            self.agent.set(
                names::OUTPUT_TOKENS,
                Attr::Int(i64::try_from(output).unwrap_or(i64::MAX)),
            );
        }
        let status = match (error, checkpoint) {
            (Some(_), _) => "failed",
            (None, Some(cp)) if cp.is_interrupted() => {
                let ids: Vec<String> = cp.interrupts.iter().map(|i| i.id.clone()).collect();
                let kinds: Vec<String> = cp.interrupts.iter().map(|i| i.kind.as_str().to_owned()).collect();
                let mut attributes = vec![
                    (names::INTERRUPT_IDS, Attr::List(&ids)),
                    (names::INTERRUPT_KINDS, Attr::List(&kinds)),
                ];
                if let Some(at) = cp.interrupts.iter().filter_map(|i| i.expires_at).min() {
                    attributes.push((
                        names::INTERRUPT_EXPIRES_AT,
                        Attr::Int(i64::try_from(at).unwrap_or(i64::MAX)),
                    ));
                }
                self.agent.event(names::PAUSED, &attributes);
                "paused"
            }
            (None, _) => "completed",
        };
        self.agent.set(names::RUN_STATUS, Attr::Str(status));
        self.agent.end(failed);
    }
}

#[cfg(test)]
mod tests {
    use super::is_traceparent;

    #[test]
    fn an_approval_of_one_approver_of_several_is_pending_not_denied() {
        let cp = crate::Checkpoint::from_json(
            r#"{"version":2,"messages":[{"role":"user","content":"pay"},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"pay","input":{}}]}],
                "iterations":1,"usage":{"inputTokens":0,"outputTokens":0},"reviewed":true,"pendingToolUseId":"c",
                "question":"Approve the call to pay?","interrupts":[{"kind":"approval","id":"c","toolName":"pay","input":{},"approvers":2}]}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let config = crate::RunConfig::new([crate::ToolDefinition::new(
            "pay",
            "Pays.",
            serde_json::json!({"type": "object"}),
        )])
        .approval("pay", crate::OnExpire::Error);
        let resume = crate::Resume::decisions_by_id([("c", crate::Decision::approve().by("ann"))]);
        let run = crate::Run::resume(&config, cp, resume, 1).unwrap_or_else(|e| panic!("{e}"));
        let outcomes: Vec<&str> = run.applied().iter().map(super::outcome_of).collect();
        assert_eq!(outcomes, ["pending"]);
    }

    #[test]
    fn traceparents_are_version_00_with_lowercase_hex_ids_that_are_not_zero() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(is_traceparent(good));
        assert!(is_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        ));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1x",
        ] {
            assert!(!is_traceparent(bad), "{bad}");
        }
    }
}
