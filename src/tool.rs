//! Tools: what the model can call, and how a tool pauses the run for a human.

use std::future::Future;

use serde_json::Value;

use crate::interrupt::{Approval, OnExpire};
use crate::model::ToolDefinition;
use crate::platform::{BoxFuture, MaybeSend, MaybeSync};

/// Raised by a tool to pause the run and ask the human `question`.
///
/// The run stops at once (calls of the turn before it keep their results, calls after it run on resume);
/// [`Agent::resume`](crate::Agent::resume) later turns the answer into this call's result.
///
/// ```
/// use resumable_agent::{InterruptError, ToolError};
/// fn ask(question: &str) -> Result<serde_json::Value, ToolError> {
///     Err(InterruptError::new(question).with_options(["yes", "no"]).expires_in_ms(3_600_000).into())
/// }
/// assert!(matches!(ask("Ship it?"), Err(ToolError::Interrupt(_))));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("interrupted: {question}")]
#[non_exhaustive]
pub struct InterruptError {
    /// What to ask the human.
    pub question: String,
    /// Choices a UI can offer.
    pub options: Option<Vec<String>>,
    /// Anything else a UI needs to render the question (plain JSON).
    pub data: Option<Value>,
    /// How long the question stays answerable, in milliseconds.
    pub expires_in_ms: Option<u64>,
}

impl InterruptError {
    /// Pauses with `question`.
    pub fn new(question: impl Into<String>) -> Self {
        InterruptError {
            question: question.into(),
            options: None,
            data: None,
            expires_in_ms: None,
        }
    }

    /// Offers these choices.
    pub fn with_options<S: Into<String>>(mut self, options: impl IntoIterator<Item = S>) -> Self {
        self.options = Some(options.into_iter().map(Into::into).collect());
        self
    }

    /// Attaches data for the UI.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// After `ms` milliseconds the tool's [`OnExpire`] policy applies instead of an answer.
    pub fn expires_in_ms(mut self, ms: u64) -> Self {
        self.expires_in_ms = Some(ms);
        self
    }
}

/// How a tool call can end other than with a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// Pause the run for a human answer.
    #[error(transparent)]
    Interrupt(#[from] InterruptError),
    /// The tool failed; the model receives the message as an error result and can recover. Tried again first
    /// when the tool's [`CallPolicy`] retries.
    #[error("{0}")]
    Failed(String),
    /// The tool failed and trying again would not help: never retried (the model reads the message).
    #[error("{0}")]
    Final(String),
    /// The tool cannot go on without input from the human (an MCP server's elicitation): the run pauses
    /// with one `elicitation` interrupt per request, and the resume calls the tool again with the answers
    /// ([`ToolContext::input`]).
    #[error("input required: {}", .0.requests.iter().map(|r| r.message.as_str()).collect::<Vec<_>>().join("; "))]
    Input(InputRequired),
    /// What the tool stands for could not be reached (an MCP server down, or answering with an HTTP
    /// error): the run ends with [`AgentError::Mcp`](crate::AgentError::Mcp) carrying the checkpoint from
    /// before the call, which is not recorded as done — resuming that checkpoint calls it again.
    #[error("{0}")]
    Unavailable(Unavailable),
    /// A run inside the call (a subagent, [`agent_tool`](crate::agent_tool)) paused: its interrupts become the
    /// run's (ids `<call id>/<its id>`, `path` starting with the call), and the resume calls the tool again with
    /// the decisions for them ([`ToolContext::input`], `nested`).
    #[error("paused: {} pending", .0.interrupts.len())]
    Nested(NestedPause),
}

/// What a [`ToolError::Nested`] paused on: the inner run's pending interrupts (its own ids), and its state for the
/// call made again once they are decided (plain JSON kept in the checkpoint verbatim: the inner run's checkpoint).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NestedPause {
    /// What the inner run waits for (at least one), as it names them.
    pub interrupts: Vec<crate::interrupt::Interrupt>,
    /// The inner run's state (its checkpoint), given back by [`ToolContext::input`].
    pub state: Value,
}

impl NestedPause {
    /// Paused on `interrupts`, to go on from `state`.
    pub fn new(interrupts: Vec<crate::interrupt::Interrupt>, state: Value) -> Self {
        NestedPause { interrupts, state }
    }
}

/// The requests for input of a [`ToolError::Input`], and what the tool needs to go on once answered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InputRequired {
    /// What to ask, by key (at least one).
    pub requests: Vec<InputRequest>,
    /// The tool's own state for the retry (plain JSON; kept in the checkpoint verbatim, so it must hold no
    /// secret): given back by [`ToolContext::input`].
    pub state: Value,
}

impl InputRequired {
    /// Requests `requests`, to go on from `state`.
    pub fn new(requests: Vec<InputRequest>, state: Value) -> Self {
        InputRequired { requests, state }
    }
}

/// One request for input: a message and the flat JSON Schema of the answer's `content` (MCP form-mode
/// elicitation: an object of strings, numbers, booleans and enums).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InputRequest {
    /// Names the request among its call's (the interrupt's id is `<call id>/<key>`).
    pub key: String,
    /// What to ask.
    pub message: String,
    /// The schema of an accepted answer's `content`.
    pub requested_schema: Value,
}

impl InputRequest {
    /// Asks `message`, answered by content matching `requested_schema`.
    pub fn new(key: impl Into<String>, message: impl Into<String>, requested_schema: Value) -> Self {
        InputRequest {
            key: key.into(),
            message: message.into(),
            requested_schema,
        }
    }
}

/// A server a tool stands for could not be reached or refused the call ([`ToolError::Unavailable`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{server}: {message}")]
#[non_exhaustive]
pub struct Unavailable {
    /// The server, as its origin (`https://host:port`; never a path, query or credential).
    pub server: String,
    /// The HTTP status it answered with, if it answered.
    pub status: Option<u16>,
    /// What went wrong (never a header value).
    pub message: String,
}

impl Unavailable {
    /// `server` failed with `message` (and the HTTP `status` it answered with, if any).
    pub fn new(server: impl Into<String>, status: Option<u16>, message: impl Into<String>) -> Self {
        Unavailable {
            server: server.into(),
            status,
            message: message.into(),
        }
    }
}

/// The human's answers to a tool's [`InputRequired`], given to the call when the run resumes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PendingInput {
    /// The call that asked (its `tool_use` id).
    pub call: String,
    /// The tool's [`InputRequired::state`], verbatim.
    pub state: Value,
    /// Each request's answer by key, as MCP's `ElicitResult`: `{ action: "accept", content }`,
    /// `{ action: "decline" }` or `{ action: "cancel" }` (empty while the run waits).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub responses: serde_json::Map<String, Value>,
    /// True when the call paused a run of its own ([`ToolError::Nested`]): `responses` are then the decisions for
    /// that run's interrupts, by their ids there (each as a `Decision` is written: `{ type, … }`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nested: bool,
}

impl PendingInput {
    /// An interrupt's id as the call knows it: `<call>/<key>` without `<call>/` (an elicitation's key, a
    /// subagent's own interrupt id).
    pub(crate) fn key_of<'i>(&self, id: &'i str) -> &'i str {
        id.strip_prefix(self.call.as_str())
            .and_then(|k| k.strip_prefix('/'))
            .unwrap_or(id)
    }
}

impl ToolError {
    /// A failure the model will read.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }
}

/// Where a call happens: stable ids to make side effects idempotent, and the agent's state.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolContext<'a> {
    /// The model's id for this call (its `tool_use` id).
    pub tool_use_id: &'a str,
    /// The run's id (stable across pauses and resumes).
    pub run_id: &'a str,
    pub(crate) state: Option<&'a StateSlot<'a>>,
    pub(crate) input: Option<&'a PendingInput>,
    /// What a subagent run inside the call shares with the run that called it (only for such tools).
    pub(crate) nest: Option<&'a (dyn Nesting + 'a)>,
}

impl std::fmt::Debug for dyn Nesting + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Nesting")
    }
}

/// What [`Nesting::traced`] hands over: the calling run's telemetry and the call's span.
pub(crate) type UnderTrace<'f> =
    dyn FnMut(Option<&crate::telemetry::Telemetry>, Option<&dyn crate::telemetry::Span>) + 'f;

/// What a run lends a call that runs a subagent: where the subagent's events go, the approval policies and token
/// budgets over it, and where the tokens it spent are counted.
pub(crate) trait Nesting: MaybeSend + MaybeSync {
    /// Hands `f` the calling run's listener (where the subagent's events go, with their path, and whom it asks
    /// whether to stop).
    fn sink(&self, f: &mut dyn FnMut(&mut dyn crate::event::EventSink));
    /// The approval policies over the subagent's calls: the calling agent's and those over it.
    fn policies(&self) -> &[std::sync::Arc<dyn crate::approval::ApprovalPolicy>];
    /// The token budgets over the subagent: each with the usage counted against it so far (the calling runs').
    fn budgets(&self) -> &[(crate::approval::Budget, crate::message::Usage)];
    /// Counts tokens the subagent spent in the calling run's usage.
    fn spend(&self, usage: crate::message::Usage);
    /// The subagent's run this call goes on with, as the check before the resume opened it (`None`: read it).
    fn opened(&self) -> Option<&crate::agent::Decoded>;
    /// Hands `f` the calling run's telemetry and the span of this call (`None`, `None`: the calling run is not
    /// traced): the subagent's run is traced under that span.
    fn traced(&self, f: &mut UnderTrace<'_>);
    /// Keeps a subagent's failed run in the calling run's checkpoint.
    fn failed(&self, failed: crate::subagent::FailedSubagent);
}

/// The agent's state as one tool call sees it: the current value, and the value it set, if any.
#[derive(Debug)]
pub(crate) struct StateSlot<'a> {
    pub(crate) current: Option<&'a Value>,
    pub(crate) next: std::sync::Mutex<Option<Value>>,
    /// For calls that run together: the value any of them set last and how many sets there were, which each sees
    /// until it sets its own (two calls adding to a list one after the other both count).
    pub(crate) latest: Option<&'a std::sync::Mutex<(u32, Option<Value>)>>,
    /// The number of sets the call's last read of the state saw (`u32::MAX`: it has not read it).
    pub(crate) seen: std::sync::atomic::AtomicU32,
    /// Set when the call set the state after another call running with it had changed what it read: a lost update,
    /// which the run refuses.
    pub(crate) stale: std::sync::atomic::AtomicBool,
}

impl<'a> StateSlot<'a> {
    /// One call's view of `current`, shared with the calls that run with it through `latest`.
    pub(crate) fn new(current: Option<&'a Value>, latest: Option<&'a std::sync::Mutex<(u32, Option<Value>)>>) -> Self {
        StateSlot {
            current,
            next: std::sync::Mutex::new(None),
            latest,
            seen: std::sync::atomic::AtomicU32::new(u32::MAX),
            stale: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl<'a> ToolContext<'a> {
    /// A context for calling a tool yourself (ids only, no agent state).
    pub fn new(tool_use_id: &'a str, run_id: &'a str) -> Self {
        ToolContext {
            tool_use_id,
            run_id,
            state: None,
            input: None,
            nest: None,
        }
    }

    /// The same context, for a call resumed with the human's answers to its [`InputRequired`].
    #[must_use]
    pub fn with_input(mut self, input: &'a PendingInput) -> Self {
        self.input = Some(input);
        self
    }

    /// When this call asked for input ([`ToolError::Input`]) and the run was resumed with the answers: its
    /// state and the answers. `None` for a first call.
    pub fn input(&self) -> Option<&'a PendingInput> {
        self.input
    }

    /// `run_id:tool_use_id`: the same for every attempt of this call, in any process — a tool that may run
    /// again after a crash can use it to do its side effect once.
    pub fn idempotency_key(&self) -> String {
        format!("{}:{}", self.run_id, self.tool_use_id)
    }

    /// The agent's state as this call sees it: what an earlier [`ToolContext::set_state`] of this call set, else
    /// what a call running with it set last, else the run's state.
    pub fn state(&self) -> Option<Value> {
        let slot = self.state?;
        let own = slot
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if own.is_some() {
            return own;
        }
        if let Some(latest) = slot.latest {
            let latest = latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            slot.seen.store(latest.0, std::sync::atomic::Ordering::Relaxed);
            if latest.1.is_some() {
                return latest.1.clone();
            }
        }
        slot.current.cloned()
    }

    /// Replaces the agent's state; the run records it when the call ends (a `state-changed` event), in call order
    /// among calls that run together.
    pub fn set_state(&self, next: Value) {
        if let Some(slot) = self.state {
            if let Some(latest) = slot.latest {
                let mut latest = latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let seen = slot.seen.load(std::sync::atomic::Ordering::Relaxed);
                if seen != u32::MAX && seen != latest.0 {
                    // What it read was changed by another call meanwhile: its set would lose that change.
                    slot.stale.store(true, std::sync::atomic::Ordering::Relaxed);
                } else {
                    latest.0 = latest.0.saturating_add(1);
                    latest.1 = Some(next.clone());
                    slot.seen.store(latest.0, std::sync::atomic::Ordering::Relaxed);
                }
            }
            *slot.next.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(next);
        }
    }
}

/// A tool the model can call.
pub trait Tool: MaybeSend + MaybeSync {
    /// Name, description and input schema, as sent to the model.
    fn definition(&self) -> ToolDefinition;

    /// Runs the call. Return a string (sent as is) or any JSON value (sent JSON-encoded).
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Value, ToolError>> + MaybeSend + 'a;

    /// Whether this call must wait for a human's approval before it runs (default: never). Asked for every
    /// call of a turn before any of them runs.
    ///
    /// # Errors
    /// A failure is answered to the model as an error result; the call does not run.
    fn needs_approval<'a>(
        &'a self,
        input: &'a Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Approval, ToolError>> + MaybeSend + 'a {
        let _ = (input, ctx);
        std::future::ready(Ok(Approval::NotNeeded))
    }

    /// True when [`Tool::needs_approval`] may ever answer "needed" (lets the loop skip asking otherwise).
    fn may_need_approval(&self) -> bool {
        false
    }

    /// What decides this tool's approvals, as JSON the agent's fingerprint covers (so a checkpoint signed by an
    /// agent with one rule is refused by an agent with another): `false` (never asks), `true` (every call
    /// asks), `{ "expiresInMs": n }` (every call asks, answerable for n ms) or `{ "perCall": text }` (code
    /// decides per call; `text` names the code: a JS function's source, a Rust rule's name). The default says
    /// only whether it may ask: a tool whose [`Tool::needs_approval`] is code should name it, and rename it
    /// when it changes.
    fn approval_rule(&self) -> Value {
        Value::Bool(self.may_need_approval())
    }

    /// What a resume does with this tool's interrupts once they expired (default: fail with
    /// [`AgentError::InterruptExpired`](crate::AgentError)).
    fn on_expire(&self) -> OnExpire {
        OnExpire::Error
    }

    /// How long a call may take and how often a failed one is tried (default: the agent's, else unbounded and
    /// once).
    fn call_policy(&self) -> CallPolicy {
        CallPolicy::default()
    }

    /// Checks the decisions a resume gives a call paused by [`ToolError::Nested`] (`input`), before anything
    /// runs: a subagent opens its checkpoint as it would (its signature, when it has keys) and resumes it with them
    /// (and throws that away). The default accepts them.
    ///
    /// # Errors
    /// What is wrong, as the inner run says it (ids are the inner run's).
    #[doc(hidden)]
    fn check_resume<'a>(
        &'a self,
        input: &'a PendingInput,
    ) -> impl Future<Output = Result<Option<crate::agent::Decoded>, crate::AgentError>> + MaybeSend + 'a {
        let _ = input;
        std::future::ready(Ok(None))
    }

    /// True for a tool that runs a subagent: its calls are lent the run's events, policies and budgets.
    #[doc(hidden)]
    fn runs_agent(&self) -> bool {
        false
    }

    /// True for a tool whose calls see the run's signal themselves and end when it aborts, after what they must do
    /// then (an MCP call tells its server it is cancelled; a subagent keeps its run): an abort waits for them
    /// instead of dropping them.
    #[doc(hidden)]
    fn stops_itself(&self) -> bool {
        self.runs_agent()
    }
}

/// How long a tool's call may take and how often a failed one is tried: `timeout_ms` bounds each attempt
/// (a late result is ignored), `max_attempts` (at least 1) and `backoff_ms` (doubled after each retry) retry a
/// call that failed with [`ToolError::Failed`] or timed out. Every attempt has the call's `idempotency_key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CallPolicy {
    /// The longest an attempt may take, in ms (`None`: unbounded).
    pub timeout_ms: Option<u64>,
    /// Attempts in all (`None`: the agent's default, else 1).
    pub max_attempts: Option<u32>,
    /// The wait before the first retry, in ms (`None`: the agent's default, else 0).
    pub backoff_ms: Option<u64>,
}

impl CallPolicy {
    /// Each attempt bounded to `ms`.
    #[must_use]
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }

    /// Up to `max_attempts` attempts, the first retry after `backoff_ms` (doubled each time).
    #[must_use]
    pub fn retry(mut self, max_attempts: u32, backoff_ms: u64) -> Self {
        self.max_attempts = Some(max_attempts.max(1));
        self.backoff_ms = Some(backoff_ms);
        self
    }

    /// This policy, with `defaults` where it says nothing.
    pub(crate) fn or(self, defaults: CallPolicy) -> CallPolicy {
        CallPolicy {
            timeout_ms: self.timeout_ms.or(defaults.timeout_ms),
            max_attempts: self.max_attempts.or(defaults.max_attempts),
            backoff_ms: self.backoff_ms.or(defaults.backoff_ms),
        }
    }
}

/// Object-safe form of [`Tool`], implemented for every tool.
pub(crate) trait DynTool: MaybeSend + MaybeSync {
    fn definition(&self) -> ToolDefinition;
    fn call_dyn<'a>(&'a self, input: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value, ToolError>>;
    fn needs_approval_dyn<'a>(
        &'a self,
        input: &'a Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Approval, ToolError>>;
    fn may_need_approval(&self) -> bool;
    fn approval_rule(&self) -> Value;
    fn on_expire(&self) -> OnExpire;
    fn call_policy(&self) -> CallPolicy;
    fn check_resume_dyn<'a>(
        &'a self,
        input: &'a PendingInput,
    ) -> BoxFuture<'a, Result<Option<crate::agent::Decoded>, crate::AgentError>>;
    fn runs_agent(&self) -> bool;
    fn stops_itself(&self) -> bool;
}

/// The JSON an approval rule is fingerprinted as ([`Tool::approval_rule`]): `fixed` for a rule that answers
/// the same for every call, else `per_call` names the code that decides.
pub(crate) fn rule_json(fixed: Option<Approval>, per_call: &str) -> Value {
    match fixed {
        Some(Approval::NotNeeded) => Value::Bool(false),
        Some(Approval::Needed { expires_in_ms: None }) => Value::Bool(true),
        Some(Approval::Needed {
            expires_in_ms: Some(ms),
        }) => serde_json::json!({ "expiresInMs": ms }),
        None => serde_json::json!({ "perCall": per_call }),
    }
}

impl<T: Tool> DynTool for T {
    fn definition(&self) -> ToolDefinition {
        Tool::definition(self)
    }
    fn call_dyn<'a>(&'a self, input: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.call(input, ctx))
    }
    fn needs_approval_dyn<'a>(
        &'a self,
        input: &'a Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Approval, ToolError>> {
        Box::pin(self.needs_approval(input, ctx))
    }
    fn may_need_approval(&self) -> bool {
        Tool::may_need_approval(self)
    }
    fn approval_rule(&self) -> Value {
        Tool::approval_rule(self)
    }
    fn on_expire(&self) -> OnExpire {
        Tool::on_expire(self)
    }
    fn call_policy(&self) -> CallPolicy {
        Tool::call_policy(self)
    }
    fn check_resume_dyn<'a>(
        &'a self,
        input: &'a PendingInput,
    ) -> BoxFuture<'a, Result<Option<crate::agent::Decoded>, crate::AgentError>> {
        Box::pin(Tool::check_resume(self, input))
    }
    fn runs_agent(&self) -> bool {
        Tool::runs_agent(self)
    }
    fn stops_itself(&self) -> bool {
        Tool::stops_itself(self)
    }
}

/// A tool made of a definition and an async function; see [`tool`].
pub struct FnTool<F> {
    definition: ToolDefinition,
    f: F,
    approval: Option<ApprovalRule>,
    on_expire: OnExpire,
    policy: CallPolicy,
}

type ApprovalFn = Box<dyn Fn(&Value) -> Approval + Send + Sync>;

enum ApprovalRule {
    Always(Approval),
    /// Decided per call by the function, known to the agent's fingerprint by the name.
    Computed(ApprovalFn, String),
}

/// Makes a tool from a closure returning a future.
///
/// ```
/// use resumable_agent::{tool, InterruptError};
/// use serde_json::json;
/// let ask_user = tool(
///     "ask_user",
///     "Ask the human a clarifying question.",
///     json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}),
///     |input, _ctx| async move {
///         let q = input["question"].as_str().unwrap_or("?").to_owned();
///         Err(InterruptError::new(q).into())
///     },
/// );
/// # let _ = ask_user;
/// ```
pub fn tool<F, Fut>(name: impl Into<String>, description: impl Into<String>, input_schema: Value, f: F) -> FnTool<F>
where
    F: Fn(Value, ToolContext<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<Value, ToolError>> + MaybeSend + 'static,
{
    FnTool {
        definition: ToolDefinition {
            name: name.into(),
            description: description.into(),
            input_schema,
        },
        f,
        approval: None,
        on_expire: OnExpire::Error,
        policy: CallPolicy::default(),
    }
}

impl<F> FnTool<F> {
    /// Every call waits for a human's approval before it runs.
    pub fn needs_approval(mut self) -> Self {
        self.approval = Some(ApprovalRule::Always(Approval::needed()));
        self
    }

    /// Every call waits for approval, answerable for `ms` milliseconds (then [`FnTool::on_expire`] applies).
    pub fn needs_approval_within(mut self, ms: u64) -> Self {
        self.approval = Some(ApprovalRule::Always(Approval::needed_within(ms)));
        self
    }

    /// Decides per call, from its input, whether it waits for approval.
    pub fn needs_approval_if(mut self, rule: impl Fn(&Value) -> Approval + Send + Sync + 'static) -> Self {
        self.approval = Some(ApprovalRule::Computed(Box::new(rule), String::new()));
        self
    }

    /// Decides per call, from its input, whether it waits for approval; `name` is what the agent's fingerprint
    /// knows the rule by ([`Tool::approval_rule`]): give it a new name when the rule changes, and checkpoints
    /// signed under the old rule are refused rather than resumed under the new one.
    pub fn needs_approval_by(
        mut self,
        name: impl Into<String>,
        rule: impl Fn(&Value) -> Approval + Send + Sync + 'static,
    ) -> Self {
        self.approval = Some(ApprovalRule::Computed(Box::new(rule), name.into()));
        self
    }

    /// What a resume does once this tool's interrupt expired.
    pub fn on_expire(mut self, policy: OnExpire) -> Self {
        self.on_expire = policy;
        self
    }

    /// How long a call may take and how often a failed one is tried ([`CallPolicy`]).
    pub fn call_policy(mut self, policy: CallPolicy) -> Self {
        self.policy = policy;
        self
    }
}

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Value, ToolContext<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<Value, ToolError>> + MaybeSend + 'static,
{
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Value, ToolError>> + MaybeSend + 'a {
        (self.f)(input, ctx)
    }
    fn needs_approval<'a>(
        &'a self,
        input: &'a Value,
        _ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Approval, ToolError>> + MaybeSend + 'a {
        let approval = match &self.approval {
            None => Approval::NotNeeded,
            Some(ApprovalRule::Always(a)) => *a,
            Some(ApprovalRule::Computed(f, _)) => f(input),
        };
        std::future::ready(Ok(approval))
    }
    fn may_need_approval(&self) -> bool {
        self.approval.is_some()
    }
    fn approval_rule(&self) -> Value {
        match &self.approval {
            None => rule_json(Some(Approval::NotNeeded), ""),
            Some(ApprovalRule::Always(a)) => rule_json(Some(*a), ""),
            Some(ApprovalRule::Computed(_, name)) => rule_json(None, name),
        }
    }
    fn on_expire(&self) -> OnExpire {
        self.on_expire
    }
    fn call_policy(&self) -> CallPolicy {
        self.policy
    }
}
