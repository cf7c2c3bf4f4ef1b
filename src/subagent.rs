//! Subagents: a tool whose call runs another agent ([`agent_tool`]).
//!
//! The child runs inside the parent's tool call. When it finishes, its answer (its text, or its structured output)
//! is the call's result. When it pauses, the call pauses the parent with [`ToolError::Nested`]: the child's
//! interrupts become the parent's (ids `<call id>/<child's id>`, `path` from the parent's call down) and the child's
//! checkpoint is kept in the parent's (`pendingInput`, `nested: true`) — one portable JSON, at any depth. The
//! parent's resume checks the decisions for them against the child ([`Tool::check_resume`]) before anything runs, then
//! calls the tool again, which resumes the child with them. The child's events reach the parent's listener as
//! [`Event::Nested`](crate::Event) with their path; the parent's approval policy reviews the child's calls beside the
//! child's own; the parent's token budget bounds the child's model calls, and the tokens the child spends count in the
//! parent's usage.

use serde_json::Value;

use crate::agent::{Agent, Input, Outcome};
use crate::event::{Event, EventSink, Nested};
use crate::message::Usage;
use crate::model::ToolDefinition;
use crate::platform::BoxFuture;
use crate::tool::{NestedPause, Nesting, PendingInput, Tool, ToolContext, ToolError};
use crate::{AgentError, Checkpoint, Resume};

/// False in the npm package's variants without subagents (`js` without `js-subagents`): no tool there runs a child,
/// and the compiler leaves the code that nests runs out of them. Such a variant refuses to resume a checkpoint that
/// waits for a subagent's decisions (a `DecisionError` naming the fix).
pub(crate) const NESTS: bool = cfg!(any(not(feature = "js"), feature = "js-subagents"));

/// A subagent's run that failed, as the calling run's checkpoint keeps it ([`Checkpoint::failed_subagents`]): the
/// model read the failure as the call's error result; once what failed is fixed (a provider back up, a budget raised),
/// the subagent's agent resumes [`FailedSubagent::checkpoint`] (with an empty answer: it goes on from where it stopped,
/// and what it had done is not done again).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", try_from = "Value")]
#[non_exhaustive]
pub struct FailedSubagent {
    /// The call that ran it (`<call id>`); a subagent's subagent: `<call id>/<its call id>`, as interrupt ids go.
    pub id: String,
    /// The agent tool's name.
    pub tool_name: String,
    /// How it failed, as an `error` event says it: `{ name, message, code? }`.
    pub error: Value,
    /// Its run as it stood when it failed (the error's checkpoint).
    pub checkpoint: Value,
}

/// Read from the JSON value every checkpoint reader already has (a derived reader of its own cost every variant of the
/// npm package 3 KB of `.wasm`); what the fields hold is checked with the checkpoint
/// (`failedSubagents[i].<field>`).
impl TryFrom<Value> for FailedSubagent {
    type Error = &'static str;

    fn try_from(value: Value) -> Result<Self, &'static str> {
        let Value::Object(mut o) = value else {
            return Err("a failed subagent: expected { id, toolName, error, checkpoint }");
        };
        let mut take = |k: &str| o.remove(k).unwrap_or(Value::Null);
        match (take("id"), take("toolName"), take("error"), take("checkpoint")) {
            (Value::String(id), Value::String(tool_name), error, checkpoint) => Ok(FailedSubagent {
                id,
                tool_name,
                error,
                checkpoint,
            }),
            _ => Err("a failed subagent: expected the strings id and toolName"),
        }
    }
}

impl FailedSubagent {
    /// The subagent's run, read back as its agent will resume it.
    ///
    /// # Errors
    /// [`crate::CheckpointError`] when what is kept is not a checkpoint.
    pub fn checkpoint(&self) -> Result<Checkpoint, crate::CheckpointError> {
        read_kept(&self.checkpoint)
    }

    /// Kept one call further out: the call `call` ran the subagent that ran this one.
    fn under(mut self, call: &str) -> Self {
        self.id = format!("{call}/{}", self.id);
        self
    }
}

/// A tool whose call runs `agent` (see [`agent_tool`]).
pub struct AgentTool {
    definition: ToolDefinition,
    agent: Agent,
    /// True while the input is the default `{ task }`: the task is the child's prompt (else the input's JSON is).
    task: bool,
}

/// A tool named `name` that runs `agent` as a subagent: its input is `{ task: string }` (the child's prompt; see
/// [`AgentTool::input_schema`] for another), its result the child's final text — or its structured output, when the
/// child has an output schema.
///
/// ```
/// use resumable_agent::{agent_tool, Agent, ModelResponse, ScriptedModel};
/// use serde_json::json;
///
/// let researcher = Agent::builder(ScriptedModel::new([ModelResponse::text("Three sources agree.")]))
///     .instructions("Research the task.")
///     .build()?;
/// let lead = Agent::builder(ScriptedModel::new([
///     ModelResponse::tool_call("c1", "research", json!({"task": "Is it safe?"})),
///     ModelResponse::text("Yes: three sources agree."),
/// ]))
/// .tool(agent_tool("research", "Researches a task.", researcher))
/// .build()?;
/// let done = pollster::block_on(lead.prompt("Check it."))?.assert_complete()?;
/// assert_eq!(done.text, "Yes: three sources agree.");
/// # Ok::<(), resumable_agent::AgentError>(())
/// ```
pub fn agent_tool(name: impl Into<String>, description: impl Into<String>, agent: Agent) -> AgentTool {
    AgentTool {
        definition: ToolDefinition {
            name: name.into(),
            description: description.into(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": { "task": { "type": "string", "description": "What the subagent is to do." } },
                "required": ["task"],
            }),
        },
        agent,
        task: true,
    }
}

impl AgentTool {
    /// The tool `definition` running `agent`; `task`: the input is `{ task }` (the npm package's `agentTool()`).
    #[cfg_attr(not(feature = "js-subagents"), allow(dead_code))]
    pub(crate) fn from_parts(definition: ToolDefinition, agent: Agent, task: bool) -> Self {
        AgentTool {
            definition,
            agent,
            task,
        }
    }

    /// Takes input matching `schema` (a JSON Schema object) instead of `{ task }`: the child's prompt is then the
    /// input's JSON text.
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.definition.input_schema = schema;
        self.task = false;
        self
    }

    /// The child's prompt for a first call with `input`.
    fn prompt(&self, input: &Value) -> String {
        match input.get("task").and_then(Value::as_str) {
            Some(task) if self.task => task.to_owned(),
            _ => crate::keys::canonical_json(input),
        }
    }
}

/// The child's checkpoint and the decisions for it, from what the parent kept for the call.
fn resumed(input: &PendingInput) -> Result<(Checkpoint, Resume), AgentError> {
    Ok((
        read_kept(&input.state)?,
        Resume::Json(Value::Object(input.responses.clone())),
    ))
}

/// A subagent's run as the calling run keeps it: its checkpoint as a JSON value.
fn kept(checkpoint: &Checkpoint) -> Result<Value, String> {
    serde_json::from_str(&checkpoint.to_json()).map_err(|e| e.to_string())
}

/// A subagent's run kept as a JSON value ([`kept`]), read back as its agent reads any checkpoint.
fn read_kept(value: &Value) -> Result<Checkpoint, crate::CheckpointError> {
    // As text, through the reader every checkpoint takes (no reader of its own for a value in the .wasm).
    let text = crate::json::to_string(value).map_err(|e| crate::CheckpointError::at("checkpoint", e.to_string()))?;
    Checkpoint::from_json(&text)
}

/// `a - b`, saturating.
fn minus(a: Usage, b: Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens.saturating_sub(b.input_tokens),
        output_tokens: a.output_tokens.saturating_sub(b.output_tokens),
    }
}

/// The child's events, to the parent's listener with the call's id first in their path.
struct Forward<'a> {
    nest: Option<&'a (dyn Nesting + 'a)>,
    call: &'a str,
}

impl Forward<'_> {
    /// What the parent's listener answers (`otherwise` without one).
    fn ask<R>(&self, otherwise: R, f: impl Fn(&mut dyn EventSink) -> R) -> R {
        let mut answer = otherwise;
        if let Some(n) = self.nest {
            n.sink(&mut |s| answer = f(s));
        }
        answer
    }
}

impl EventSink for Forward<'_> {
    fn event(&mut self, event: &Event<'_>) {
        let nested = nested_event(self.call, event);
        self.ask((), |s| s.event(&nested));
    }
    fn wants_deltas(&self) -> bool {
        self.ask(false, |s| s.wants_deltas())
    }
    fn listening(&self) -> bool {
        self.ask(false, |s| s.listening())
    }
    fn aborted(&self) -> bool {
        self.ask(false, |s| s.aborted())
    }
    fn when_aborted(&self) -> Option<BoxFuture<'static, ()>> {
        self.ask(None, |s| s.when_aborted())
    }
}

/// A child's event as its parent's listener gets it.
fn nested_event<'a>(call: &'a str, event: &'a Event<'a>) -> Event<'a> {
    Event::Nested(Nested::of(call, event))
}

impl Tool for AgentTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl std::future::Future<Output = Result<Value, ToolError>> + crate::MaybeSend + 'a {
        async move {
            let nest = ctx.nest;
            let (run, before) = match (ctx.input().filter(|p| p.nested), nest.and_then(|n| n.opened())) {
                // Opened by the check before the resume ran anything: not read again.
                (Some(p), Some(opened)) => {
                    let before = opened.checkpoint().usage;
                    let decisions = Resume::Json(Value::Object(p.responses.clone()));
                    (Input::Decoded(opened.clone(), decisions), before)
                }
                (Some(p), None) => {
                    let (checkpoint, decisions) =
                        resumed(p).map_err(|e| ToolError::Final(format!("the subagent could not resume: {e}")))?;
                    let before = checkpoint.usage;
                    (Input::Resume(checkpoint, decisions), before)
                }
                (None, _) => (Input::prompt(self.prompt(&input)), Usage::default()),
            };
            let outer = crate::run::Outer::new(
                nest.map(|n| n.budgets().iter().map(|(b, used)| (*b, minus(*used, before))).collect())
                    .unwrap_or_default(),
                nest.is_some_and(|n| !n.policies().is_empty()),
            );
            let policies = nest.map(|n| n.policies().to_vec()).unwrap_or_default();
            let mut events = Forward {
                nest,
                call: ctx.tool_use_id,
            };
            let under = nest.map(|n| (n, self.definition.name.as_str()));
            let ran = self.agent.run_in(run, &mut events, outer, policies, under).await;
            let after = match &ran {
                Ok(outcome) => Some(outcome.checkpoint().usage),
                Err(e) => e.checkpoint().map(|c| c.usage),
            };
            if let (Some(n), Some(after)) = (nest, after) {
                n.spend(minus(after, before));
            }
            match ran {
                Ok(Outcome::Complete(mut done)) => {
                    // Its own subagents' failed runs move out with it: the calling run keeps them.
                    if let Some(n) = nest {
                        for failed in std::mem::take(&mut done.checkpoint.failed_subagents) {
                            n.failed(failed.under(ctx.tool_use_id));
                        }
                    }
                    Ok(match done.checkpoint.structured {
                        Some(structured) => structured,
                        None => Value::String(done.text),
                    })
                }
                Ok(Outcome::Interrupted(paused)) => {
                    let checkpoint = paused.checkpoint;
                    let interrupts = checkpoint.interrupts.clone();
                    let state = kept(&checkpoint)
                        .map_err(|e| ToolError::Final(format!("the subagent's checkpoint could not be kept: {e}")))?;
                    Err(ToolError::Nested(NestedPause::new(interrupts, state)))
                }
                // Stopped by the parent's signal: the parent's run is aborted, as with any call it stops.
                Err(AgentError::Aborted { .. }) if events.aborted() => Err(ToolError::Unavailable(
                    crate::tool::Unavailable::new("subagent", None, "stopped by the run's signal"),
                )),
                Err(e) => {
                    // Its run is kept in the calling run's checkpoint, to be resumed once what failed is fixed.
                    if let (Some(n), Some(Ok(checkpoint))) = (nest, e.checkpoint().map(kept)) {
                        n.failed(FailedSubagent {
                            id: ctx.tool_use_id.to_owned(),
                            tool_name: self.definition.name.clone(),
                            error: e.to_plain_json(),
                            checkpoint,
                        });
                    }
                    Err(ToolError::Final(format!(
                        "the subagent {} failed: {e}",
                        self.definition.name
                    )))
                }
            }
        }
    }

    /// The child's fingerprint: a child changed while a run waits makes a changed tool of the parent (config drift).
    fn approval_rule(&self) -> Value {
        serde_json::json!({ "agent": self.agent.config.fingerprint() })
    }

    fn check_resume<'a>(
        &'a self,
        input: &'a PendingInput,
    ) -> impl std::future::Future<Output = Result<Option<crate::Decoded>, AgentError>> + crate::MaybeSend + 'a {
        async move {
            if !input.nested {
                return Ok(None);
            }
            let (checkpoint, decisions) = resumed(input)?;
            // As the call will open it: its signature (a child with keys), its validity — kept for the call, which
            // then does not read it again — and then the decisions and its own subagents', on a copy.
            let config = &self.agent.config;
            config.codec().verify(&checkpoint).await?;
            checkpoint.validate()?;
            let opened = crate::Decoded::checked(checkpoint, config);
            config.start(Input::Decoded(opened.clone(), decisions)).await?;
            Ok(Some(opened))
        }
    }

    fn runs_agent(&self) -> bool {
        true
    }
}
