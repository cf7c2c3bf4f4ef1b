//! The agent: a model, tools and instructions, built from a builder or an [`AgentSpec`](crate::AgentSpec); what a
//! run starts from ([`Input`], [`Decoded`]) and how it ended ([`Outcome`]). The loop itself is driven by
//! [`driver`], the only code that awaits models and tools.

mod config;
pub(crate) mod driver;

use serde_json::Value;

use std::sync::Arc;

pub(crate) use config::AgentConfig;
pub(crate) use driver::{Hooks, NoEvents, Persist, drive};

use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::event::EventSink;
use crate::interrupt::{Interrupt, Resume};
use crate::message::{Message, Usage};
use crate::model::{DynModel, Model, ToolDefinition};
use crate::run::DEFAULT_MAX_ITERATIONS;
use crate::tool::{DynTool, Tool};

/// An agent: a model, tools and instructions. Cheap to keep and share; every call is independent.
///
/// ```
/// use resumable_agent::{tool, Agent, InterruptError, ModelResponse, ScriptedModel};
/// use serde_json::json;
///
/// let model = ScriptedModel::new([
///     ModelResponse::tool_call("c1", "ask_user", json!({"question": "Your deadline?"})),
///     ModelResponse::text("Planned for the end of Q2."),
/// ]);
/// let ask = tool("ask_user", "Ask the human.", json!({"type": "object"}), |input, _| async move {
///     Err(InterruptError::new(input["question"].as_str().unwrap_or_default()).into())
/// });
/// let agent = Agent::builder(model).tool(ask).build()?;
///
/// let paused = pollster::block_on(agent.prompt("Plan my project."))?;
/// assert_eq!(paused.question(), Some("Your deadline?"));
/// let json = paused.checkpoint().to_json(); // store it anywhere
///
/// let checkpoint = resumable_agent::Checkpoint::from_json(&json)?;
/// let done = pollster::block_on(agent.resume(checkpoint, "end of Q2"))?.assert_complete()?;
/// assert_eq!(done.text, "Planned for the end of Q2.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Agent {
    pub(crate) config: AgentConfig,
    pub(crate) model: Box<dyn DynModel>,
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    model: Box<dyn DynModel>,
    instructions: Option<String>,
    tools: Vec<Box<dyn DynTool>>,
    max_iterations: u32,
    state: Option<Value>,
    limits: crate::limits::Limits,
    keys: Option<crate::keys::CheckpointKeys>,
    output: Option<(Value, u32)>,
    compaction: Option<crate::run::Compaction>,
    telemetry: Option<crate::telemetry::Telemetry>,
    guardrails: crate::guardrail::Guardrails,
    tool_defaults: crate::tool::CallPolicy,
    tool_concurrency: u32,
    summarizer: crate::agent::config::Summarizer,
    timer: Option<crate::agent::config::Timer>,
    policy: Option<Arc<dyn crate::approval::ApprovalPolicy>>,
    budget: Option<crate::approval::Budget>,
    on_drift: crate::approval::OnDrift,
}

/// What a run starts from: a new user message, or a checkpoint and the human's input.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // built once per run and moved into it
pub enum Input {
    /// A new run with this user message.
    Prompt(String),
    /// Continue this checkpoint (checked when the run starts: signature, then validity).
    Resume(Checkpoint, Resume),
    /// Continue a checkpoint this agent decoded ([`Agent::decode`]): not checked again.
    Decoded(Decoded, Resume),
}

/// A checkpoint an agent decoded ([`Agent::decode`]): read under its limits, opened and authenticated first
/// (with keys), then validated — so an agent with the same keys resumes it without checking it again.
#[derive(Debug, Clone)]
pub struct Decoded {
    checkpoint: Checkpoint,
    /// Its messages are exactly what its text said ([`Decoded::messages_as_written`]).
    as_written: bool,
    /// The length of the text it was read from (`None`: not read from text).
    pub(crate) text_bytes: Option<usize>,
    /// The keys and binding it was checked with (`None`: an agent without keys decoded it).
    checked_with: Option<(Arc<crate::keys::CheckpointKeys>, Option<Arc<str>>)>,
}

/// The same checkpoint, checked with the same keys.
impl PartialEq for Decoded {
    fn eq(&self, other: &Self) -> bool {
        let same_check = match (&self.checked_with, &other.checked_with) {
            (None, None) => true,
            (Some((a, x)), Some((b, y))) => Arc::ptr_eq(a, b) && x == y,
            _ => false,
        };
        same_check && self.checkpoint == other.checkpoint
    }
}

impl Decoded {
    /// The checkpoint.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The checkpoint, to keep or change (a changed one is checked again when resumed).
    pub fn into_checkpoint(self) -> Checkpoint {
        self.checkpoint
    }

    /// True when its messages are exactly what the decoded text says — no key dropped, no default filled in
    /// or left out, nothing repaired, no older format upgraded, not opened from an envelope — so a host that
    /// parsed the same text with its own JSON parser holds these very messages (the npm package's JS model
    /// is shown that parse instead of a second copy written out of Rust).
    pub fn messages_as_written(&self) -> bool {
        self.as_written
    }

    /// A checkpoint the library itself just read and checked (a session's load).
    pub(crate) fn checked(checkpoint: Checkpoint, config: &AgentConfig) -> Self {
        Decoded {
            checkpoint,
            as_written: false,
            text_bytes: None,
            checked_with: config.keys.clone().map(|k| (k, config.binding.clone())),
        }
    }

    /// True when `config` would check it exactly as it was checked.
    fn trusted_by(&self, config: &AgentConfig) -> bool {
        match (&self.checked_with, &config.keys) {
            (None, None) => true,
            (Some((keys, binding)), Some(own)) => Arc::ptr_eq(keys, own) && *binding == config.binding,
            _ => false,
        }
    }
}

impl Input {
    /// A new run.
    pub fn prompt(message: impl Into<String>) -> Self {
        Input::Prompt(message.into())
    }
    /// Continue `checkpoint` with an answer or decisions.
    pub fn resume(checkpoint: Checkpoint, input: impl Into<Resume>) -> Self {
        Input::Resume(checkpoint, input.into())
    }
}

impl Agent {
    /// Starts building an agent around `model`.
    pub fn builder(model: impl Model + 'static) -> AgentBuilder {
        AgentBuilder {
            model: Box::new(model),
            instructions: None,
            tools: Vec::new(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
            state: None,
            limits: crate::limits::Limits::default(),
            keys: None,
            output: None,
            compaction: None,
            telemetry: None,
            guardrails: crate::guardrail::Guardrails::default(),
            tool_defaults: crate::tool::CallPolicy::default(),
            tool_concurrency: 0,
            summarizer: crate::agent::config::Summarizer::default(),
            timer: None,
            policy: None,
            budget: None,
            on_drift: crate::approval::OnDrift::Error,
        }
    }

    /// Starts a run with a user message.
    ///
    /// # Errors
    /// [`AgentError::Model`] or [`AgentError::MaxIterations`], each with the last checkpoint.
    pub async fn prompt(&self, message: &str) -> Result<Outcome, AgentError> {
        self.run(Input::prompt(message), &mut NoEvents).await
    }

    /// Continues a checkpoint. `input` is a text answer to the pending question (with nothing pending, a
    /// non-empty text is a new user turn and `""` continues as is), or decisions for pending approvals.
    ///
    /// # Errors
    /// [`AgentError::Checkpoint`] or [`AgentError::Decision`] before anything runs;
    /// [`AgentError::InterruptExpired`]; then as [`Agent::prompt`].
    pub async fn resume(&self, checkpoint: Checkpoint, input: impl Into<Resume>) -> Result<Outcome, AgentError> {
        self.run(Input::Resume(checkpoint, input.into()), &mut NoEvents).await
    }

    /// Runs `input` to its next stop, reporting every [`Event`] to `events` as it happens.
    ///
    /// # Errors
    /// As [`Agent::prompt`] and [`Agent::resume`].
    pub async fn run(&self, input: Input, events: &mut dyn EventSink) -> Result<Outcome, AgentError> {
        let call = if matches!(input, Input::Prompt(_)) {
            "prompt"
        } else {
            "resume"
        };
        let run = self.config.start(input).await?;
        let mut hooks = Hooks::new(events);
        hooks.traced(self.config.telemetry.as_ref(), call, None);
        drive(&self.config, &*self.model, run, &mut hooks).await
    }

    /// [`Agent::run`] as a subagent ([`agent_tool`](crate::agent_tool)): bounded by `outer` (the calling runs'
    /// budgets) and reviewed by `policies` (theirs) beside its own.
    pub(crate) async fn run_in(
        &self,
        input: Input,
        events: &mut dyn EventSink,
        outer: crate::run::Outer,
        policies: Vec<Arc<dyn crate::approval::ApprovalPolicy>>,
        under: Option<(&dyn crate::tool::Nesting, &str)>,
    ) -> Result<Outcome, AgentError> {
        let call = if matches!(input, Input::Prompt(_)) {
            "prompt"
        } else {
            "resume"
        };
        let mut run = self.config.start(input).await?;
        run.set_outer(outer);
        let mut hooks = Hooks::new(events);
        hooks.policies = policies;
        hooks.traced(self.config.telemetry.as_ref(), call, None);
        hooks.under = under.map(|(nest, name)| crate::agent::driver::Under { nest, name, call });
        drive(&self.config, &*self.model, run, &mut hooks).await
    }
}

impl Agent {
    /// The same agent — its checked instructions, rules, state and keys, shared rather than copied — answering
    /// with `model` and running `tools`, the code of its own tools in their order (without `final_answer`):
    /// cheap, for a host that builds an agent per request from one configuration (a Worker).
    ///
    /// ```
    /// use resumable_agent::{tool, Agent, ModelResponse, ScriptedModel};
    /// let hello = || tool("hello", "Says hello.", serde_json::json!({"type": "object"}), |_, _| async { Ok("hi".into()) });
    /// let template = Agent::builder(ScriptedModel::new([])).instructions("Be brief.").tool(hello()).build()?;
    /// let agent = template.with_parts(ScriptedModel::new([ModelResponse::text("Done.")]), vec![hello()])?;
    /// assert_eq!(pollster::block_on(agent.prompt("go"))?.assert_complete()?.text, "Done.");
    /// # Ok::<(), resumable_agent::AgentError>(())
    /// ```
    ///
    /// # Errors
    /// [`AgentError::Config`] when `tools` is not one tool for each of the agent's.
    pub fn with_parts<T: Tool + 'static>(
        &self,
        model: impl Model + 'static,
        tools: Vec<T>,
    ) -> Result<Agent, AgentError> {
        if tools.len() != self.config.tools.len() {
            return Err(AgentError::Config(format!(
                "with_parts: {} tools given for the agent's {}",
                tools.len(),
                self.config.tools.len()
            )));
        }
        let c = &self.config;
        Ok(Agent {
            config: AgentConfig {
                instructions: c.instructions.clone(),
                tools: tools.into_iter().map(|t| Box::new(t) as Box<dyn DynTool>).collect(),
                rules: c.rules.clone(),
                initial_state: c.initial_state.clone(),
                keys: c.keys.clone(),
                binding: c.binding.clone(),
                telemetry: c.telemetry.clone(),
                guardrails: c.guardrails.clone(),
                policy: c.policy.clone(),
                tool_defaults: c.tool_defaults,
                tool_concurrency: c.tool_concurrency,
                summarizer: c.summarizer.clone(),
                timer: c.timer.clone(),
            },
            model: Box::new(model),
        })
    }

    /// The tools the model is shown, in order (with an output schema, its `final_answer` tool last).
    pub fn tools(&self) -> &[ToolDefinition] {
        &self.config.rules.definitions
    }

    /// The size and depth limits of what the agent accepts.
    pub fn limits(&self) -> crate::limits::Limits {
        self.config.rules.limits
    }

    /// True when the agent's keys seal what it hands out ([`CheckpointKeys::sealed`](crate::CheckpointKeys)).
    pub fn seals(&self) -> bool {
        self.config.codec().sealed()
    }

    /// The text to store `checkpoint` as: signed with the agent's [`CheckpointKeys`](crate::CheckpointKeys)
    /// (sealed when they say so), plain JSON without keys.
    ///
    /// # Errors
    /// [`CheckpointError::Signature`](crate::CheckpointError) when the host's crypto fails.
    pub async fn encode_checkpoint(&self, checkpoint: &Checkpoint) -> Result<String, crate::CheckpointError> {
        self.config.codec().encode(&mut checkpoint.clone()).await
    }

    /// Reads checkpoint text as the agent's `resume` does: refused over the size and depth limits before it
    /// is parsed, opened when sealed, and, with keys, only when its signature verifies.
    ///
    /// # Errors
    /// [`CheckpointError`](crate::CheckpointError): `TOO_LARGE`, `TOO_DEEP`, `JSON`, `INVALID`, `VERSION` or
    /// `SIGNATURE`.
    pub async fn decode_checkpoint(&self, text: &str) -> Result<Checkpoint, crate::CheckpointError> {
        self.config.codec().decode(text).await
    }

    /// [`Agent::decode_checkpoint`], as a [`Decoded`] checkpoint this agent resumes ([`Input::Decoded`])
    /// without checking it a second time: one parse and one validation per resume.
    ///
    /// ```
    /// use resumable_agent::{Agent, Event, Input, ModelResponse, Resume, ScriptedModel};
    /// let agent = Agent::builder(ScriptedModel::new([ModelResponse::text("Hi!")])).build()?;
    /// let text = pollster::block_on(agent.prompt("Hello"))?.checkpoint().to_json();
    /// let decoded = pollster::block_on(agent.decode(&text))?;
    /// let mut events = Vec::new();
    /// let mut sink = |e: &Event<'_>| events.push(e.to_json());
    /// let again = pollster::block_on(agent.run(Input::Decoded(decoded, Resume::Answer(String::new())), &mut sink))?;
    /// assert_eq!(again.assert_complete()?.text, "Hi!");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Agent::decode_checkpoint`].
    pub async fn decode(&self, text: &str) -> Result<Decoded, crate::CheckpointError> {
        let (checkpoint, as_written) = self.config.codec().decode_as_written(text).await?;
        let mut decoded = Decoded::checked(checkpoint, &self.config);
        decoded.as_written = as_written;
        decoded.text_bytes = Some(text.len());
        Ok(decoded)
    }
}
impl AgentBuilder {
    /// An agent as `spec` describes it, answering with `model`: instructions, limits, state, output,
    /// compaction and keys as given. The spec's tools are declarations without code: bind each with
    /// [`ToolSpec::handle`](crate::ToolSpec::handle) and add it with [`AgentBuilder::tool`].
    ///
    /// ```
    /// use resumable_agent::{AgentBuilder, AgentSpec, ModelResponse, ScriptedModel};
    /// let spec = AgentSpec::from_json(r#"{"tools": [{"name": "now", "description": "The time."}]}"#)?;
    /// let mut builder = AgentBuilder::from_spec(ScriptedModel::new([ModelResponse::text("Noon.")]), spec.clone());
    /// for declared in spec.tools {
    ///     builder = builder.tool(declared.handle(|_, _| async { Ok("12:00".into()) }));
    /// }
    /// let agent = builder.build()?;
    /// # let _ = agent;
    /// # Ok::<(), resumable_agent::AgentError>(())
    /// ```
    pub fn from_spec(model: impl Model + 'static, spec: crate::spec::AgentSpec) -> Self {
        let mut b = Agent::builder(model)
            .max_iterations(spec.max_iterations)
            .limits(spec.limits);
        b.instructions = spec.instructions;
        b.state = spec.state;
        b.output = spec.output;
        b.compaction = spec.compaction;
        b.keys = spec.checkpoint_keys;
        b.tool_defaults = spec.tool_defaults;
        b.tool_concurrency = spec.tool_concurrency;
        b.summarizer.instructions = spec.summary_instructions;
        b.budget = spec.budget;
        b.on_drift = spec.on_drift;
        if let Some(source) = spec.approval {
            // The host's function, bound by the host per call; until then (and natively) a policy that fails
            // closed: no call runs on a rule nobody can evaluate.
            b.policy = Some(Arc::new(crate::approval::HostPolicy::new(source)));
        }
        b
    }

    /// The system instructions.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Box::new(tool));
        self
    }

    /// Bounds the number of model calls of a run, counted across resumes (default 25).
    pub fn max_iterations(mut self, max_iterations: u32) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// The agent's state at the start of a run (plain JSON: todos, files, …). Tools read and replace it
    /// through their [`ToolContext`]; it lives in the checkpoint.
    pub fn state(mut self, initial: Value) -> Self {
        self.state = Some(initial);
        self
    }

    /// Size and depth limits of what runs accept: checkpoints (before parsing), tool inputs, state and
    /// interrupt data (default [`Limits::default`](crate::Limits)).
    pub fn limits(mut self, limits: crate::limits::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs end with a structured answer matching the JSON Schema `schema`
    /// ([`AgentResponse::structured`]): the model gives it by calling the
    /// [`FINAL_ANSWER_TOOL`](crate::FINAL_ANSWER_TOOL) tool (added to the agent's tools) or as JSON text;
    /// an answer that does not match is fed back for the model to correct, up to `max_retries` times
    /// ([`DEFAULT_MAX_OUTPUT_RETRIES`](crate::DEFAULT_MAX_OUTPUT_RETRIES) is a good default), then the run
    /// ends in [`AgentError::Output`] carrying the checkpoint.
    pub fn output(mut self, schema: Value, max_retries: u32) -> Self {
        self.output = Some((schema, max_retries));
        self
    }

    /// Keeps long runs within bounds: before each model call, the oldest whole steps after the first
    /// messages are dropped while the history is over the bounds (see [`Compaction`](crate::Compaction)).
    pub fn compaction(mut self, compaction: crate::run::Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// Timeouts and retries for the tools that set none ([`CallPolicy`](crate::CallPolicy)).
    pub fn tool_defaults(mut self, policy: crate::tool::CallPolicy) -> Self {
        self.tool_defaults = policy;
        self
    }

    /// How many calls of one model turn run at once: by default all of them, concurrently; `1` runs them one after
    /// another, as before 0.4 (`0` means no bound). Whatever the bound, results, events and the checkpoint keep the
    /// model's call order; calls that run together each see the state from before them (what they set is kept in
    /// call order); a subagent's call runs alone.
    pub fn tool_concurrency(mut self, n: u32) -> Self {
        self.tool_concurrency = n;
        self
    }

    /// The model that writes a summarizing compaction's summaries ([`Compaction::summarize`](crate::Compaction::summarize)),
    /// when not the agent's own (a cheaper one, say).
    pub fn summary_model(mut self, model: impl Model + 'static) -> Self {
        self.summarizer.model = Some(Arc::new(model));
        self
    }

    /// What a summary call is told to do, instead of [`DEFAULT_SUMMARY_INSTRUCTIONS`](crate::DEFAULT_SUMMARY_INSTRUCTIONS).
    pub fn summary_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.summarizer.instructions = Some(instructions.into());
        self
    }

    /// How the agent waits for a tool's timeout and backoff: `wait(ms)` resolves after `ms`. On wasm32 the host's
    /// `setTimeout` serves without one; natively there is no timer without a runtime, so without this tool
    /// timeouts are not enforced and retries do not wait (with tokio:
    /// `.timer(|ms| Box::pin(tokio::time::sleep(Duration::from_millis(ms))))`).
    pub fn timer(
        mut self,
        wait: impl Fn(u64) -> crate::platform::BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Self {
        self.timer = Some(std::sync::Arc::new(wait));
        self
    }

    /// Checks each turn's conversation before its first model call (in the order added; the first that trips
    /// stops the run with [`AgentError::Guardrail`], and nothing is sent to the model).
    pub fn input_guardrail(mut self, guardrail: impl crate::guardrail::Guardrail + 'static) -> Self {
        self.guardrails.input.push(std::sync::Arc::new(guardrail));
        self
    }

    /// Checks the final answer (and the structured answer) before it is returned; the first that trips stops
    /// the run with [`AgentError::Guardrail`], whose checkpoint holds the run with the answer.
    pub fn output_guardrail(mut self, guardrail: impl crate::guardrail::Guardrail + 'static) -> Self {
        self.guardrails.output.push(std::sync::Arc::new(guardrail));
        self
    }

    /// An approval rule over every tool call of the agent (see [`ApprovalPolicy`](crate::ApprovalPolicy)): the
    /// stricter of it and a tool's own `needs_approval` applies; its [`rule`](crate::ApprovalPolicy::rule) is
    /// part of the agent's fingerprint.
    pub fn approval_policy(mut self, policy: impl crate::approval::ApprovalPolicy + 'static) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Bounds the tokens of a run, counted across resumes from the usage in its checkpoint: a model call that
    /// would start at or past the budget ends the run in [`AgentError::BudgetExceeded`] (with the checkpoint,
    /// which a resume with a larger budget continues). Not part of the agent's fingerprint.
    pub fn budget(mut self, budget: crate::approval::Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// What a resume does when the agent changed since the run paused mid-turn (its checkpoint records what decided
    /// its approvals, part by part): [`OnDrift::Error`](crate::OnDrift) by default.
    pub fn on_drift(mut self, on_drift: crate::approval::OnDrift) -> Self {
        self.on_drift = on_drift;
        self
    }

    /// Reports each call as OpenTelemetry GenAI spans (`invoke_agent`, `chat`, `execute_tool`) to the
    /// telemetry's tracer, and keeps the trace context in the checkpoint so that a resumed run links to the
    /// paused one (see [`Telemetry`](crate::Telemetry); [`TracingTracer`](crate::TracingTracer) with the
    /// `tracing` feature).
    pub fn telemetry(mut self, telemetry: crate::telemetry::Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Signs every checkpoint the agent returns or saves, and resumes only checkpoints signed with one of
    /// these keys (see [`CheckpointKeys`](crate::CheckpointKeys)); sealed too when the keys say so.
    pub fn checkpoint_keys(mut self, keys: crate::keys::CheckpointKeys) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Checks the configuration and builds the agent.
    ///
    /// # Errors
    /// [`AgentError::Config`] for a tool name providers refuse, one used twice, or a state nested deeper than
    /// the limits allow.
    pub fn build(self) -> Result<Agent, AgentError> {
        let mut config = AgentConfig::new(self.instructions.map(Arc::from), self.tools, self.max_iterations)?;
        config.set_limits(self.limits);
        config.set_state(self.state)?;
        if let Some((schema, max_retries)) = self.output {
            config.set_output(schema, max_retries)?;
        }
        if let Some(compaction) = self.compaction {
            config.set_compaction(compaction)?;
        }
        config.set_policy(self.policy);
        config.set_budget(self.budget);
        config.set_fingerprint(self.on_drift);
        if let Some(keys) = self.keys {
            config.set_keys(keys)?;
        }
        config.telemetry = self.telemetry;
        config.guardrails = self.guardrails;
        config.tool_defaults = self.tool_defaults;
        config.tool_concurrency = self.tool_concurrency;
        config.summarizer = self.summarizer;
        config.timer = self.timer;
        Ok(Agent {
            config,
            model: self.model,
        })
    }
}

/// A run that finished: the final text and the checkpoint of the whole run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentResponse {
    /// The model's final text (its text blocks joined).
    pub text: String,
    /// The whole run; save it to continue the conversation later.
    pub checkpoint: Checkpoint,
}

impl AgentResponse {
    /// The conversation.
    pub fn messages(&self) -> &[Message] {
        &self.checkpoint.messages
    }
    /// With an output schema: the answer as structured data, validated against it.
    pub fn structured(&self) -> Option<&Value> {
        self.checkpoint.structured.as_ref()
    }
    /// Tokens used by the whole run.
    pub fn usage(&self) -> Usage {
        self.checkpoint.usage
    }
    /// Model calls made by the whole run.
    pub fn iterations(&self) -> u32 {
        self.checkpoint.iterations
    }
}

/// A run paused for a human: a tool's [`InterruptError`](crate::InterruptError), or calls that need approval.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InterruptedResponse {
    /// What to ask the human: the first interrupt's question, or a sentence naming the tool to approve.
    pub question: String,
    /// Save it; pass it to [`Agent::resume`] with the answer or decisions.
    pub checkpoint: Checkpoint,
}

impl InterruptedResponse {
    /// Everything the run waits for, in call order.
    pub fn interrupts(&self) -> &[Interrupt] {
        &self.checkpoint.interrupts
    }
}

/// How a call to [`Agent::prompt`] or [`Agent::resume`] ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Finished.
    Complete(AgentResponse),
    /// Paused on a question.
    Interrupted(InterruptedResponse),
}

impl Outcome {
    /// True when paused on a question.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Outcome::Interrupted(_))
    }

    /// The pending question, if paused.
    pub fn question(&self) -> Option<&str> {
        match self {
            Outcome::Interrupted(i) => Some(&i.question),
            Outcome::Complete(_) => None,
        }
    }

    /// The checkpoint, either way.
    pub fn checkpoint(&self) -> &Checkpoint {
        match self {
            Outcome::Complete(r) => &r.checkpoint,
            Outcome::Interrupted(i) => &i.checkpoint,
        }
    }

    pub(crate) fn checkpoint_mut(&mut self) -> &mut Checkpoint {
        match self {
            Outcome::Complete(r) => &mut r.checkpoint,
            Outcome::Interrupted(i) => &mut i.checkpoint,
        }
    }

    /// The response of a finished run.
    ///
    /// # Errors
    /// [`AgentError::Interrupted`] (with the question and checkpoint) when the run is paused.
    pub fn assert_complete(self) -> Result<AgentResponse, AgentError> {
        match self {
            Outcome::Complete(r) => Ok(r),
            Outcome::Interrupted(i) => Err(AgentError::Interrupted {
                question: i.question,
                checkpoint: Box::new(i.checkpoint),
            }),
        }
    }
}
