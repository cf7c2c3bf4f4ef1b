//! The agent and its async driver: the only place that awaits models and tools.

use serde_json::Value;

use std::sync::Arc;

use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::event::{Event, EventSink};
use crate::interrupt::{Approval, Interrupt, Resume};
use crate::message::{Message, ToolUse, Usage};
use crate::model::{DynModel, Model, ModelRequest, ToolDefinition};
use crate::platform::{BoxFuture, MaybeSend, new_run_id, now_ms};
use crate::run::{DEFAULT_MAX_ITERATIONS, Run, RunConfig, Step, ToolOutcome, ToolPolicy};
use crate::tool::{DynTool, StateSlot, Tool, ToolContext, ToolError};

/// The configuration a run needs besides the model: instructions, tools and the run's rules.
/// Everything but the tools is shared, not copied, by the agents built from one configuration
/// ([`Agent::with_parts`]).
pub(crate) struct AgentConfig {
    pub(crate) instructions: Option<Arc<str>>,
    pub(crate) tools: Vec<Box<dyn DynTool>>,
    pub(crate) rules: Arc<RunConfig>,
    /// The state a new run starts with (and a resumed checkpoint without state).
    pub(crate) initial_state: Option<Arc<Value>>,
    /// Signs (and maybe seals) what leaves; verifies what comes back.
    pub(crate) keys: Option<Arc<crate::keys::CheckpointKeys>>,
    /// With keys: the agent what they sign is bound to (the keys' name, or the agent's fingerprint).
    pub(crate) binding: Option<Arc<str>>,
}

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

    /// A checkpoint the library itself just read and checked (a session's load).
    pub(crate) fn checked(checkpoint: Checkpoint, config: &AgentConfig) -> Self {
        Decoded {
            checkpoint,
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
        let run = self.config.start(input).await?;
        drive(&self.config, &*self.model, run, &mut Hooks::new(events)).await
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
        let checkpoint = self.config.codec().decode(text).await?;
        Ok(Decoded::checked(checkpoint, &self.config))
    }
}

/// An [`EventSink`] that drops everything (and lets the run skip building events).
pub(crate) struct NoEvents;

impl EventSink for NoEvents {
    fn event(&mut self, _: &Event<'_>) {}
    fn wants_deltas(&self) -> bool {
        false
    }
    fn listening(&self) -> bool {
        false
    }
}

/// A model's deltas as events of step `step`.
struct DeltaEvents<'e, 'h> {
    hooks: &'e mut Hooks<'h>,
    step: u32,
}

impl crate::model::DeltaSink for DeltaEvents<'_, '_> {
    fn delta(&mut self, delta: crate::model::Delta<'_>) {
        use crate::model::Delta;
        let step = self.step;
        let event = match delta {
            Delta::Text(text) => Event::TextDelta { step, text },
            Delta::ToolCall { id, name, input } => Event::ToolCallDelta {
                step,
                id,
                tool_name: name,
                input_delta: input,
            },
            Delta::Restart => Event::StepRestart { step },
        };
        self.hooks.emit_ref(&event);
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
        if let Some(keys) = self.keys {
            config.set_keys(keys)?;
        }
        Ok(Agent {
            config,
            model: self.model,
        })
    }
}

/// The rule every provider accepts for a tool name: 1 to 64 ASCII letters, digits, `_` or `-`.
pub(crate) fn check_tool_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "expected 1-64 letters, digits, \"_\" or \"-\" (what every provider accepts), got {name:?}"
        ))
    }
}

impl AgentConfig {
    pub(crate) fn new(
        instructions: Option<Arc<str>>,
        tools: Vec<Box<dyn DynTool>>,
        max_iterations: u32,
    ) -> Result<Self, AgentError> {
        let described = tools.iter().map(|t| {
            let policy = ToolPolicy {
                may_need_approval: t.may_need_approval(),
                on_expire: t.on_expire(),
            };
            (t.definition(), policy)
        });
        let mut config = Self::described(instructions, described, max_iterations)?;
        config.tools = tools;
        Ok(config)
    }

    /// An agent without tool implementations yet, from its tools' definitions and policies (checked here:
    /// names valid and unique). The wasm package builds one per configuration and shares its rules.
    pub(crate) fn described(
        instructions: Option<Arc<str>>,
        described: impl IntoIterator<Item = (ToolDefinition, ToolPolicy)>,
        max_iterations: u32,
    ) -> Result<Self, AgentError> {
        let mut definitions: Vec<ToolDefinition> = Vec::new();
        let mut policies = Vec::new();
        for (i, (definition, policy)) in described.into_iter().enumerate() {
            check_tool_name(&definition.name).map_err(|p| AgentError::Config(format!("tools[{i}].name: {p}")))?;
            if definitions.iter().any(|d| d.name == definition.name) {
                return Err(AgentError::Config(format!(
                    "tools[{i}].name: {:?} is used by an earlier tool",
                    definition.name
                )));
            }
            definitions.push(definition);
            policies.push(policy);
        }
        Ok(AgentConfig {
            instructions,
            tools: Vec::new(),
            rules: Arc::new(RunConfig {
                definitions,
                policies,
                max_iterations,
                limits: crate::limits::Limits::default(),
                output: None,
                compaction: None,
            }),
            initial_state: None,
            keys: None,
            binding: None,
        })
    }

    /// The request for `messages`, of which the first `unchanged` are as in the run's previous request.
    pub(crate) fn request<'a>(&'a self, messages: &'a [Message], unchanged: usize) -> ModelRequest<'a> {
        ModelRequest {
            system: self.instructions.as_deref(),
            messages,
            tools: &self.rules.definitions,
            unchanged,
        }
    }

    pub(crate) fn set_limits(&mut self, limits: crate::limits::Limits) {
        Arc::make_mut(&mut self.rules).limits = limits;
    }

    /// Checks and sets the checkpoint keys (after the rest of the configuration: what they sign is bound to
    /// the agent as configured).
    pub(crate) fn set_keys(&mut self, keys: crate::keys::CheckpointKeys) -> Result<(), AgentError> {
        keys.check().map_err(AgentError::Config)?;
        self.binding = Some(Arc::from(match keys.agent_name() {
            Some(name) => format!("name:{name}"),
            None => self.fingerprint(),
        }));
        self.keys = Some(Arc::new(keys));
        Ok(())
    }

    /// A fingerprint of what decides a run's approvals: instructions, tool names, input schemas (the output
    /// schema among them) and approval policies.
    fn fingerprint(&self) -> String {
        let tools: Vec<Value> = self
            .rules
            .definitions
            .iter()
            .zip(&self.rules.policies)
            .map(|(d, p)| {
                serde_json::json!({
                    "name": d.name, "inputSchema": d.input_schema,
                    "approval": p.may_need_approval, "onExpire": p.on_expire,
                })
            })
            .collect();
        crate::keys::fingerprint(&serde_json::json!({"instructions": self.instructions.as_deref(), "tools": tools}))
    }

    /// How this agent's checkpoints enter and leave as text.
    pub(crate) fn codec(&self) -> crate::keys::Codec<'_> {
        crate::keys::Codec {
            limits: self.rules.limits,
            keys: self.keys.as_deref(),
            agent: self.binding.as_deref(),
        }
    }

    /// [`AgentConfig::begin`] after checking a resumed checkpoint this agent did not decode: its signature
    /// (with keys), then its validity.
    pub(crate) async fn start(&self, input: Input) -> Result<Run<'_>, AgentError> {
        let input = match input {
            Input::Decoded(d, resume) if !d.trusted_by(self) => Input::Resume(d.checkpoint, resume),
            other => other,
        };
        let input = match input {
            Input::Resume(checkpoint, resume) => {
                self.codec().verify(&checkpoint).await?;
                checkpoint.validate()?;
                Input::Decoded(Decoded::checked(checkpoint, self), resume)
            }
            other => other,
        };
        self.begin(input)
    }

    /// Sets the output schema (a JSON Schema object); a tool of the agent's own named
    /// [`FINAL_ANSWER_TOOL`](crate::FINAL_ANSWER_TOOL) is refused.
    pub(crate) fn set_output(&mut self, schema: Value, max_retries: u32) -> Result<(), AgentError> {
        use crate::run::FINAL_ANSWER_TOOL;
        if !schema.is_object() {
            return Err(AgentError::Config(format!(
                "output: expected a JSON Schema object, got {schema}"
            )));
        }
        // A final_answer among the definitions is a tool of the agent's own unless an output set it.
        let own = self.rules.output.is_none();
        if let Some(i) = self
            .rules
            .definitions
            .iter()
            .position(|d| own && d.name == FINAL_ANSWER_TOOL)
        {
            return Err(AgentError::Config(format!(
                "tools[{i}].name: {FINAL_ANSWER_TOOL:?} is the tool through which the model gives its structured answer (output); rename the tool"
            )));
        }
        Arc::make_mut(&mut self.rules).set_output(schema, max_retries);
        Ok(())
    }

    /// Sets the compaction rule: `keep_first` must keep the first user message.
    pub(crate) fn set_compaction(&mut self, compaction: crate::run::Compaction) -> Result<(), AgentError> {
        if compaction.keep_first == 0 {
            return Err(AgentError::Config(
                "compaction.keepFirst: at least 1 (the first user message is always kept)".into(),
            ));
        }
        if compaction.max_bytes.is_none() && compaction.max_messages.is_none() {
            return Err(AgentError::Config(
                "compaction: give maxBytes, maxMessages or both".into(),
            ));
        }
        Arc::make_mut(&mut self.rules).compaction = Some(compaction);
        Ok(())
    }

    /// The state a new run starts with, checked against the depth limit.
    pub(crate) fn set_state(&mut self, state: Option<Value>) -> Result<(), AgentError> {
        if let Some(depth) = state
            .as_ref()
            .map(crate::limits::value_depth)
            .filter(|d| *d > self.rules.limits.max_depth)
        {
            return Err(AgentError::Config(format!(
                "state: nested {depth} deep; at most {} (limits.maxDepth)",
                self.rules.limits.max_depth
            )));
        }
        self.initial_state = state.map(Arc::new);
        Ok(())
    }

    /// The run for `input`: a new one, or a checkpoint with the human's input applied (a [`Decoded`] one is
    /// known valid; any other is validated).
    pub(crate) fn begin(&self, input: Input) -> Result<Run<'_>, AgentError> {
        if matches!(&input, Input::Prompt(m) if m.is_empty()) {
            return Err(AgentError::Argument(
                "prompt(message): the message is empty (providers refuse an empty user message)".into(),
            ));
        }
        // What the human adds: with it the checkpoint must still be one that can be read back.
        let added = match &input {
            Input::Prompt(m) => Some(("message", crate::json::len(m.as_str()))),
            Input::Resume(_, Resume::Answer(a)) | Input::Decoded(_, Resume::Answer(a)) if !a.is_empty() => {
                Some(("answer", crate::json::len(a.as_str())))
            }
            Input::Resume(..) | Input::Decoded(..) => None,
        };
        let mut run = match input {
            Input::Prompt(message) => Run::start(&self.rules, &message, new_run_id(), now_ms()),
            Input::Decoded(d, resume) => Run::resume_valid(&self.rules, d.checkpoint, resume, now_ms())?,
            Input::Resume(checkpoint, resume) => Run::resume(&self.rules, checkpoint, resume, now_ms())?,
        };
        if let (None, Some(initial)) = (run.state(), &self.initial_state) {
            run.set_state(Value::clone(initial));
        }
        if let Some((what, bytes)) = added {
            if let Some(why) = run.too_large(bytes, bytes) {
                return Err(AgentError::Argument(format!("the {what} was not taken: {why}")));
            }
        }
        Ok(run)
    }

    fn tool(&self, name: &str) -> Option<&dyn DynTool> {
        self.tools.get(self.rules.index(name)?).map(|t| &**t)
    }
}

/// Saves each consistent state of a run (sessions): called before its `checkpoint` event, and awaited.
pub(crate) trait Persist: MaybeSend {
    /// Saves `checkpoint` (and may add thread information to it), reporting `checkpoint-saved` to `events`.
    /// `saved`: how its messages changed since the last call; `first`: the run's first save.
    fn persist<'a>(
        &'a mut self,
        checkpoint: &'a mut Checkpoint,
        saved: crate::run::Saved,
        first: bool,
        events: &'a mut dyn EventSink,
    ) -> BoxFuture<'a, Result<(), AgentError>>;

    /// The number of an event of the run (a session also logs the step-level ones); `None`: not numbered.
    fn observe(&mut self, event: &Event<'_>) -> Option<u64>;
}

/// What a driver reports to and asks of its caller besides the model and tools.
pub(crate) struct Hooks<'h> {
    /// Where events go; asked before each model and tool call whether to stop.
    pub(crate) events: &'h mut dyn EventSink,
    pub(crate) persist: Option<&'h mut dyn Persist>,
    /// Saves made so far by `persist`.
    pub(crate) saves: u32,
}

impl<'h> Hooks<'h> {
    pub(crate) fn new(events: &'h mut dyn EventSink) -> Self {
        Hooks {
            events,
            persist: None,
            saves: 0,
        }
    }

    /// True when events are listened to or logged: they must be made.
    fn watching(&self) -> bool {
        self.events.listening() || self.persist.is_some()
    }

    fn emit(&mut self, event: impl FnOnce() -> Event<'static>) {
        if self.watching() {
            self.emit_ref(&event());
        }
    }

    fn emit_ref(&mut self, event: &Event<'_>) {
        let seq = self.persist.as_deref_mut().and_then(|p| p.observe(event));
        self.events.sequenced(seq, event);
    }

    /// A consistent state: saved (sessions) and then reported, signed.
    async fn checkpoint(&mut self, run: &mut Run<'_>, codec: crate::keys::Codec<'_>) -> Result<(), AgentError> {
        if let Some(p) = self.persist.as_deref_mut() {
            let first = self.saves == 0;
            let saved = run.take_saved();
            p.persist(run.checkpoint_mut(), saved, first, &mut *self.events).await?;
            self.saves = self.saves.saturating_add(1);
        }
        if self.events.listening() {
            if codec.keys.is_some() {
                codec.sign(run.checkpoint_mut()).await?;
            }
            self.emit_ref(&Event::Checkpoint {
                checkpoint: run.checkpoint(),
            });
        }
        Ok(())
    }

    fn result(&mut self, run: &Run<'_>, call: &ToolUse) {
        if !self.watching() {
            return;
        }
        if let Some(r) = run.checkpoint().tool_results.iter().find(|r| r.tool_use_id == call.id) {
            self.emit_ref(&Event::ToolResult {
                id: &call.id,
                tool_name: &call.name,
                content: &r.content,
                is_error: r.is_error,
            });
        }
    }
}

/// Runs the state machine to its next stop, doing the I/O it asks for and reporting what happens; the
/// checkpoint it ends with (in the outcome or the error) is signed when the agent has keys.
pub(crate) async fn drive(
    config: &AgentConfig,
    model: &dyn DynModel,
    run: Run<'_>,
    hooks: &mut Hooks<'_>,
) -> Result<Outcome, AgentError> {
    let mut result = drive_steps(config, model, run, hooks).await;
    let checkpoint = match &mut result {
        Ok(outcome) => Some(outcome.checkpoint_mut()),
        Err(e) => e.checkpoint_mut(),
    };
    if let Some(checkpoint) = checkpoint {
        config.codec().sign(checkpoint).await?;
    }
    result
}

async fn drive_steps(
    config: &AgentConfig,
    model: &dyn DynModel,
    mut run: Run<'_>,
    hooks: &mut Hooks<'_>,
) -> Result<Outcome, AgentError> {
    if hooks.watching() {
        for a in run.applied() {
            let (id, tool_name) = (&a.interrupt.id, &a.interrupt.tool_name);
            match (&a.interrupt.kind, &a.result) {
                (crate::interrupt::InterruptKind::Approval, result) => hooks.emit_ref(&Event::ApprovalResponse {
                    id,
                    tool_name,
                    approved: a.approved,
                    modified_args: a.modified_args.as_ref(),
                    message: result.as_ref().map(|r| r.content.as_str()),
                }),
                (_, Some(r)) => hooks.emit_ref(&Event::ToolResult {
                    id,
                    tool_name,
                    content: &r.content,
                    is_error: r.is_error,
                }),
                (_, None) => {}
            }
        }
    }
    hooks.checkpoint(&mut run, config.codec()).await?;
    loop {
        if hooks.events.aborted() {
            run.touch(now_ms());
            return Err(AgentError::Aborted {
                checkpoint: Box::new(run.into_checkpoint()),
            });
        }
        match run.next_step() {
            Step::CallModel => {
                let step = run.checkpoint().iterations.saturating_add(1);
                if let Some(c) = run.take_compacted() {
                    hooks.emit_ref(&Event::Compacted {
                        removed_messages: c.messages,
                        removed_bytes: c.bytes,
                        messages: run.checkpoint().messages.len(),
                    });
                    run.touch(now_ms());
                    hooks.checkpoint(&mut run, config.codec()).await?;
                }
                hooks.emit(|| Event::StepStart { step });
                let unchanged = run.take_unchanged();
                let request = config.request(&run.checkpoint().messages, unchanged);
                let reply = if hooks.events.wants_deltas() {
                    let mut sink = DeltaEvents { hooks, step };
                    model.stream_dyn(request, &mut sink).await
                } else {
                    model.complete_dyn(request).await
                };
                let mut usage: Option<Usage> = None;
                let recorded = reply.and_then(|response| {
                    usage = response.usage;
                    run.model_replied(response, now_ms())
                });
                if let Err(source) = recorded {
                    run.touch(now_ms());
                    return Err(AgentError::Model {
                        source,
                        checkpoint: Box::new(run.into_checkpoint()),
                    });
                }
                if hooks.watching() {
                    let content = run
                        .checkpoint()
                        .messages
                        .last()
                        .map(Message::blocks)
                        .unwrap_or_default();
                    hooks.emit_ref(&Event::StepFinish { step, content, usage });
                }
                hooks.checkpoint(&mut run, config.codec()).await?;
            }
            Step::Review(calls) => {
                let mut needed = Vec::new();
                for call in &calls {
                    let Some(tool) = config.tool(&call.name) else { continue };
                    let ctx = ToolContext::new(&call.id, run.run_id());
                    match tool.needs_approval_dyn(&call.input, ctx).await {
                        Ok(Approval::Needed { expires_in_ms }) => needed.push((call.id.clone(), expires_in_ms)),
                        Ok(_) => {}
                        Err(e) => {
                            let message = format!("the approval check of {} failed, so it did not run: {e}", call.name);
                            run.tool_finished(&call.id, ToolOutcome::Error(message), now_ms());
                            hooks.result(&run, call);
                        }
                    }
                }
                run.reviewed(needed, now_ms());
                if hooks.watching() {
                    for i in &run.checkpoint().interrupts {
                        hooks.emit_ref(&Event::ApprovalRequested {
                            id: &i.id,
                            tool_name: &i.tool_name,
                            input: &i.input,
                            expires_at: i.expires_at,
                        });
                    }
                }
                hooks.checkpoint(&mut run, config.codec()).await?;
            }
            Step::CallTool(call) => {
                if hooks.watching() {
                    hooks.emit_ref(&Event::ToolCall {
                        id: &call.id,
                        tool_name: &call.name,
                        input: &call.input,
                    });
                }
                let slot = StateSlot {
                    current: run.state(),
                    next: std::sync::Mutex::new(None),
                };
                let mut outcome = call_tool(config, run.run_id(), &call, &slot).await;
                let next = slot
                    .next
                    .into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let max = config.rules.limits.max_depth;
                match next.map(|state| (crate::limits::value_depth(&state), state)) {
                    // Refused like any input over the limits, so the run can always be read back.
                    Some((depth, _)) if depth > max => {
                        outcome = ToolOutcome::Error(format!(
                            "{} set a state nested {depth} deep; at most {max} (limits.maxDepth): the state was not changed",
                            call.name
                        ));
                    }
                    Some((_, state)) => {
                        let now = run.state().map_or(0, crate::json::len);
                        if let Some(why) = run.too_large(crate::json::len(&state), now) {
                            outcome = ToolOutcome::Error(format!("{} set a state that was not kept: {why}", call.name));
                        } else {
                            run.set_state(state);
                            if let (Some(state), true) = (run.state(), hooks.watching()) {
                                hooks.emit_ref(&Event::StateChanged { state });
                            }
                        }
                    }
                    None => {}
                }
                run.tool_finished(&call.id, outcome, now_ms());
                hooks.result(&run, &call);
                hooks.checkpoint(&mut run, config.codec()).await?;
            }
            Step::InvalidOutput(problem) => {
                run.touch(now_ms());
                let checkpoint = run.into_checkpoint();
                return Err(AgentError::Output {
                    attempts: checkpoint.output_attempts,
                    problem,
                    checkpoint: Box::new(checkpoint),
                });
            }
            Step::Refused(call, result) | Step::Answered(call, result) => {
                if hooks.watching() {
                    hooks.emit_ref(&Event::ToolCall {
                        id: &call.id,
                        tool_name: &call.name,
                        input: &call.input,
                    });
                    hooks.emit_ref(&Event::ToolResult {
                        id: &call.id,
                        tool_name: &call.name,
                        content: &result.content,
                        is_error: result.is_error,
                    });
                }
                hooks.checkpoint(&mut run, config.codec()).await?;
            }
            Step::OutOfIterations => {
                run.touch(now_ms());
                return Err(AgentError::MaxIterations {
                    limit: run.config().max_iterations,
                    checkpoint: Box::new(run.into_checkpoint()),
                });
            }
            Step::Paused => {
                let checkpoint = run.into_checkpoint();
                if hooks.watching() {
                    hooks.emit_ref(&Event::Interrupt {
                        question: checkpoint.question.as_deref().unwrap_or_default(),
                        interrupts: &checkpoint.interrupts,
                    });
                }
                return Ok(Outcome::Interrupted(InterruptedResponse {
                    question: checkpoint.question.clone().unwrap_or_default(),
                    checkpoint,
                }));
            }
            Step::Done(text) => {
                if run.take_changed_at_done() {
                    run.touch(now_ms());
                    hooks.checkpoint(&mut run, config.codec()).await?;
                }
                return Ok(Outcome::Complete(AgentResponse {
                    text,
                    checkpoint: run.into_checkpoint(),
                }));
            }
        }
    }
}

async fn call_tool(config: &AgentConfig, run_id: &str, call: &ToolUse, state: &StateSlot<'_>) -> ToolOutcome {
    let Some(tool) = config.tool(&call.name) else {
        return ToolOutcome::Error(format!("unknown tool {:?}", call.name));
    };
    let ctx = ToolContext {
        tool_use_id: &call.id,
        run_id,
        state: Some(state),
    };
    match tool.call_dyn(call.input.clone(), ctx).await {
        Ok(Value::String(text)) => ToolOutcome::Output(text),
        // Spelled as a JS tool's result is (keys sorted, numbers as JS reads them): one text in every host.
        Ok(value) => ToolOutcome::Output(crate::keys::canonical_json(&value)),
        Err(ToolError::Interrupt(i)) => ToolOutcome::Interrupt(i),
        Err(ToolError::Failed(message)) => ToolOutcome::Error(message),
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
