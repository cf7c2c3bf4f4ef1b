//! Live events of a run: what happened, as it happens, as plain JSON (`{ "type": "step-start", ... }`).

use serde::Serialize;
use serde_json::Value;

use crate::checkpoint::Checkpoint;
use crate::interrupt::Interrupt;
use crate::message::{ContentBlock, Usage};
use crate::platform::MaybeSend;

/// One thing that happened in a run. Serializes to the JSON the npm package's events have.
///
/// A run reports `checkpoint` after every change of state: resuming any of them with `""` (or with the
/// answers it waits for) continues the same run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum Event<'a> {
    /// A model call starts; `step` counts model calls across resumes (1-based).
    StepStart {
        /// The model call's number.
        step: u32,
    },
    /// More text of the model's answer in step `step`, as it streams in (only when the run is streamed).
    TextDelta {
        /// The model call (1-based, across resumes).
        step: u32,
        /// The next piece of text.
        text: &'a str,
    },
    /// More of a tool call's input (JSON text in pieces) in step `step`, as it streams in.
    ToolCallDelta {
        /// The model call.
        step: u32,
        /// The call's id.
        id: &'a str,
        /// The tool it calls.
        tool_name: &'a str,
        /// The next piece of its input's JSON text.
        input_delta: &'a str,
    },
    /// The model's stream broke and step `step` is asked again: drop what its deltas showed so far.
    StepRestart {
        /// The model call asked again.
        step: u32,
    },
    /// Before a model call, the oldest steps were dropped to keep the history within the agent's
    /// compaction bounds.
    Compacted {
        /// Messages dropped.
        removed_messages: usize,
        /// Their size, in bytes of JSON.
        removed_bytes: usize,
        /// Messages left.
        messages: usize,
    },
    /// Before a model call, the oldest steps were replaced by a summary the model wrote
    /// (`compaction.summarize`; the checkpoint's `summarized`).
    Summarized {
        /// Messages replaced.
        removed_messages: usize,
        /// Their size, in bytes of JSON.
        removed_bytes: usize,
        /// Messages left.
        messages: usize,
        /// The summary (of the earlier summary too, when there was one).
        summary: &'a str,
    },
    /// A summary call failed: the history stays as it was and the run goes on to its model call.
    SummaryFailed {
        /// Why.
        error: &'a str,
    },
    /// The model answered.
    StepFinish {
        /// The model call's number.
        step: u32,
        /// What the model said: text and tool calls.
        content: &'a [ContentBlock],
        /// Tokens of this call, if reported.
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// A tool call starts.
    ToolCall {
        /// The call's id.
        id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// Its input.
        input: &'a Value,
    },
    /// A tool call's attempt failed or timed out, and the call is tried again after `delay_ms`.
    ToolRetry {
        /// The call's id.
        id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Why.
        error: &'a str,
        /// The wait before the next attempt.
        delay_ms: u64,
    },
    /// A tool call has its result (ran, failed, refused, denied or answered by the human).
    ToolResult {
        /// The call's id.
        id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// What the model will read.
        content: &'a str,
        /// True for an error result.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// A call waits for a human's approval.
    ApprovalRequested {
        /// The call's id.
        id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// The call's input.
        input: &'a Value,
        /// When the request expires (ms since the epoch).
        #[serde(skip_serializing_if = "Option::is_none")]
        expires_at: Option<u64>,
        /// How many distinct approvers must approve (absent: one).
        #[serde(skip_serializing_if = "Option::is_none")]
        approvers: Option<u32>,
    },
    /// A guardrail checked the turn's input or its final answer.
    Guardrail {
        /// `input` or `output`.
        kind: crate::guardrail::GuardrailKind,
        /// The guardrail.
        name: &'a str,
        /// True when it tripped (the run then ends in a `GuardrailError`).
        tripwire: bool,
    },
    /// A human approved or denied a call (on resume).
    ApprovalResponse {
        /// The call's id.
        id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// True when the call will run.
        approved: bool,
        /// The input it will run with, when changed.
        #[serde(skip_serializing_if = "Option::is_none")]
        modified_args: Option<&'a Value>,
        /// For a denial: what the model reads.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<&'a str>,
        /// Who decided, when the decision said (`by`).
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<&'a str>,
        /// True when no one was asked: an earlier approval of the tool with `remember: "tool"` approved it.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        remembered: bool,
        /// True when this approver approved a call that still waits for more approvers.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pending: bool,
    },
    /// The agent changed since the resumed checkpoint was written (reported before anything else of the resume).
    ConfigDrift {
        /// Tools the agent has now and did not have.
        added: &'a [String],
        /// Tools it had and has no longer.
        removed: &'a [String],
        /// Tools whose schema or approval rule changed; `instructions`, `approval` (the policy).
        changed: &'a [String],
    },
    /// The run pauses, waiting for these interrupts.
    Interrupt {
        /// The first interrupt's question (or approval sentence).
        question: &'a str,
        /// Everything it waits for, in call order.
        interrupts: &'a [Interrupt],
    },
    /// A tool replaced the agent's state.
    StateChanged {
        /// The new state.
        state: &'a Value,
    },
    /// A consistent state of the run; resuming it continues the same run.
    Checkpoint {
        /// The state.
        checkpoint: &'a Checkpoint,
    },
    /// A session loaded its checkpoint.
    CheckpointLoaded {
        /// The session's key.
        key: &'a str,
        /// Messages in the loaded conversation.
        message_count: usize,
        /// True when it was waiting for a human.
        interrupted: bool,
    },
    /// A session saved its checkpoint.
    CheckpointSaved {
        /// The session's key.
        key: &'a str,
        /// Messages in the saved conversation.
        message_count: usize,
    },
    /// A session call ended: paused, or finished with its answer (the npm package's streams carry the whole
    /// result, as `prompt()` returns it, in its place).
    Done {
        /// How it ended.
        result: CallResult<'a>,
    },
    /// A session call failed after it changed the session.
    Error {
        /// `{ name, message, code? }`.
        error: &'a Value,
    },
    /// An event of a subagent's run ([`agent_tool`](crate::agent_tool)): the subagent's own event, with `path`,
    /// the ids of the calls that led to it from this run down (`{ type, …, path: ["call_1"] }`).
    #[serde(untagged, serialize_with = "nested_json")]
    Nested(Nested<'a>),
}

/// A subagent's event as its calling run reports it ([`Event::Nested`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Nested<'a> {
    /// The subagent's event.
    pub event: &'a Event<'a>,
    /// The ids of the calls that led to it, outermost first.
    pub path: Vec<&'a str>,
}

/// `{ …the event's members, path }` for a serializer of the caller's own (serde): the event written as the crate
/// writes all JSON, read back as a value with its path added (a flattened event would make the compiler instantiate one
/// serializer per level of nesting). [`Event::to_json`], which the package's listeners get, adds the path to the text.
fn nested_json<S: serde::Serializer>(nested: &Nested<'_>, serializer: S) -> Result<S::Ok, S::Error> {
    let text = crate::json::to_string(nested.event).map_err(serde::ser::Error::custom)?;
    let mut value: Value = serde_json::from_str(&text).map_err(serde::ser::Error::custom)?;
    if let Value::Object(o) = &mut value {
        o.insert("path".into(), nested.path.iter().map(|p| Value::from(*p)).collect());
    }
    value.serialize(serializer)
}

impl<'a> Nested<'a> {
    /// `event`, reported by a run's call `call`: nested one level deeper (a nested event's path grows at the front).
    pub(crate) fn of(call: &'a str, event: &'a Event<'a>) -> Self {
        match event {
            Event::Nested(inner) => {
                let mut path = Vec::with_capacity(inner.path.len() + 1);
                path.push(call);
                path.extend(inner.path.iter().copied());
                Nested {
                    event: inner.event,
                    path,
                }
            }
            _ => Nested {
                event,
                path: vec![call],
            },
        }
    }
}

/// How a session call ended, as [`Event::Done`] reports it: `{ text, structured? }` when finished,
/// `{ interrupted: true, question, interrupts }` when paused.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallResult<'a> {
    /// The answer's text (finished).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'a str>,
    /// The structured answer (finished, with an output schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<&'a Value>,
    /// True when paused.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// What it asks (paused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<&'a str>,
    /// What it waits for (paused).
    #[serde(skip_serializing_if = "<[Interrupt]>::is_empty")]
    pub interrupts: &'a [Interrupt],
}

impl<'a> CallResult<'a> {
    /// How a call that stopped at `state` ended (`text`: the answer's text when it finished).
    pub(crate) fn of(state: &'a Checkpoint, text: &'a str) -> Self {
        if state.is_interrupted() {
            CallResult {
                text: None,
                structured: None,
                interrupted: true,
                question: state.question.as_deref(),
                interrupts: &state.interrupts,
            }
        } else {
            CallResult {
                text: Some(text),
                structured: state.structured.as_ref(),
                interrupted: false,
                question: None,
                interrupts: &[],
            }
        }
    }
}

impl Event<'_> {
    /// The event as JSON text.
    pub fn to_json(&self) -> String {
        if let Event::Nested(n) = self {
            // A subagent's event as written, its path added to the text (not read back and written again: a child's
            // deltas come this way, one per piece of streamed text).
            let mut text = n.event.to_json();
            if text.ends_with('}') {
                text.pop();
                text.push_str(",\"path\":");
                text.push_str(&crate::json::to_string(&n.path).unwrap_or_default());
                text.push('}');
            }
            return text;
        }
        crate::json::to_string(self).unwrap_or_default()
    }
}

/// Receives a run's events, in order. Any `FnMut(&Event)` is one.
///
/// ```
/// use resumable_agent::{Agent, Event, Input, ModelResponse, ScriptedModel};
/// let agent = Agent::builder(ScriptedModel::new([ModelResponse::text("hi")])).build()?;
/// let mut seen = Vec::new();
/// let done = pollster::block_on(agent.run(Input::prompt("hello"), &mut |e: &Event<'_>| {
///     seen.push(e.to_json());
/// }))?;
/// assert!(seen[0].starts_with(r#"{"type":"checkpoint""#));
/// assert!(seen.iter().any(|e| e.starts_with(r#"{"type":"step-finish""#)));
/// # let _ = done;
/// # Ok::<(), resumable_agent::AgentError>(())
/// ```
pub trait EventSink: MaybeSend {
    /// Called for each event, in order.
    fn event(&mut self, event: &Event<'_>);

    /// Called for each event with its number when the run is a session's (`seq`: strictly increasing per
    /// session across calls, resumes and processes; what `Session::replay` takes). The default forgets the
    /// number and calls [`EventSink::event`].
    fn sequenced(&mut self, seq: Option<u64>, event: &Event<'_>) {
        let _ = seq;
        self.event(event);
    }

    /// True when the sink shows the run live: the model is then asked to stream
    /// ([`Model::stream`](crate::Model::stream)) and its pieces arrive as `text-delta` and
    /// `tool-call-delta` events. The default is true.
    fn wants_deltas(&self) -> bool {
        true
    }

    /// False for a sink that drops every event: a run then skips building them. The default is true.
    fn listening(&self) -> bool {
        true
    }

    /// True once whoever watches the run wants it to stop (a client that left, an aborted signal): asked
    /// before each model and tool call, and between the polls of a following replay. The run then ends in
    /// [`AgentError::Aborted`](crate::AgentError::Aborted) carrying its checkpoint. The default is false.
    fn aborted(&self) -> bool {
        false
    }

    /// What resolves once whoever watches the run wants it to stop, to stop waiting on a model call then:
    /// the call is dropped (a provider's request with it) and the run ends in
    /// [`AgentError::Aborted`](crate::AgentError::Aborted) with its checkpoint from before the call. `None`
    /// (the default): only [`EventSink::aborted`], between calls.
    fn when_aborted(&self) -> Option<crate::BoxFuture<'static, ()>> {
        None
    }
}

impl<F: FnMut(&Event<'_>) + MaybeSend> EventSink for F {
    fn event(&mut self, event: &Event<'_>) {
        self(event)
    }
}
