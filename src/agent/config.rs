//! What a run needs besides the model: instructions, tools, the run's rules, the initial state and the keys —
//! checked once when the agent is built, and shared by the agents built from them.

use std::sync::Arc;

use serde_json::Value;

use super::{Decoded, Input};
use crate::error::AgentError;
use crate::interrupt::Resume;
use crate::message::Message;
use crate::model::{DynModel, ModelRequest, ToolDefinition};
use crate::platform::{new_run_id, now_ms};
use crate::run::{Run, RunConfig, ToolPolicy};
use crate::tool::DynTool;

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
    /// Where spans go (not part of the agent's identity: a tracer changed while a run waits changes nothing).
    pub(crate) telemetry: Option<crate::telemetry::Telemetry>,
    /// The approval rule over every call, if any.
    pub(crate) policy: Option<Arc<dyn crate::approval::ApprovalPolicy>>,
    /// Checks before a turn's first model call and on its final answer.
    pub(crate) guardrails: crate::guardrail::Guardrails,
    /// Timeouts and retries of tools that set none.
    pub(crate) tool_defaults: crate::tool::CallPolicy,
    /// How many calls of a turn run at once (0: all of them).
    pub(crate) tool_concurrency: u32,
    /// For a summarizing compaction: the model that writes summaries (the agent's own when `None`) and its
    /// instructions (else [`DEFAULT_SUMMARY_INSTRUCTIONS`](crate::DEFAULT_SUMMARY_INSTRUCTIONS)).
    pub(crate) summarizer: Summarizer,
    /// A timer for tool timeouts and backoff (natively; on wasm32 the host's `setTimeout` is used without one).
    pub(crate) timer: Option<Timer>,
}

/// Who writes a summarizing compaction's summaries, and how.
#[derive(Clone, Default)]
pub(crate) struct Summarizer {
    pub(crate) model: Option<Arc<dyn DynModel>>,
    pub(crate) instructions: Option<String>,
}

/// Waits the given ms: see [`AgentBuilder::timer`](crate::AgentBuilder::timer).
pub(crate) type Timer = Arc<dyn Fn(u64) -> crate::platform::BoxFuture<'static, ()> + Send + Sync>;

impl AgentConfig {
    /// A wait of `ms`: the agent's timer, else the host's (wasm32); `None` natively without a timer.
    pub(crate) fn wait(&self, ms: u64) -> Option<crate::platform::BoxFuture<'static, ()>> {
        match &self.timer {
            Some(t) => Some(t(ms)),
            None => crate::platform::Timer::start(ms).map(|t| Box::pin(t) as crate::platform::BoxFuture<'static, ()>),
        }
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
            crate::spec::check_tool_name(&definition.name)
                .map_err(|p| AgentError::Config(format!("tools[{i}].name: {p}")))?;
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
                reviews_all: false,
                budget: None,
                fingerprint: None,
                on_drift: crate::approval::OnDrift::Error,
            }),
            initial_state: None,
            keys: None,
            binding: None,
            telemetry: None,
            policy: None,
            guardrails: crate::guardrail::Guardrails::default(),
            tool_defaults: crate::tool::CallPolicy::default(),
            tool_concurrency: 0,
            summarizer: Summarizer::default(),
            timer: None,
        })
    }

    /// The request for `messages`, of which the first `unchanged` are as in the run's previous request.
    pub(crate) fn request<'a>(&'a self, messages: &'a [Message], unchanged: usize) -> ModelRequest<'a> {
        ModelRequest {
            system: self.instructions.as_deref(),
            messages,
            tools: &self.rules.definitions,
            unchanged,
            max_response_bytes: self.rules.limits.max_checkpoint_bytes,
            retries: None,
        }
    }

    /// Sets the approval policy (before the keys: the fingerprint covers it).
    pub(crate) fn set_policy(&mut self, policy: Option<Arc<dyn crate::approval::ApprovalPolicy>>) {
        Arc::make_mut(&mut self.rules).reviews_all = policy.is_some();
        self.policy = policy;
    }

    pub(crate) fn set_budget(&mut self, budget: Option<crate::approval::Budget>) {
        Arc::make_mut(&mut self.rules).budget = budget.filter(|b| !b.is_empty());
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

    /// What decides each tool's approvals, as JSON: its name, input schema, approval rule by kind (and its code's name
    /// or source text) and expiry policy — a rule tightened while a run waits makes a different agent.
    fn tool_parts(&self) -> Vec<Value> {
        self.rules
            .definitions
            .iter()
            .zip(&self.rules.policies)
            .enumerate()
            .map(|(i, (d, p))| {
                let rule = self
                    .tools
                    .get(i)
                    .map_or(Value::Bool(p.may_need_approval), |t| t.approval_rule());
                serde_json::json!({
                    "name": d.name, "inputSchema": d.input_schema,
                    "approval": rule, "onExpire": p.on_expire,
                })
            })
            .collect()
    }

    /// A fingerprint of what decides a run's approvals: instructions, tool names, input schemas (the output
    /// schema among them) and approval policies.
    pub(crate) fn fingerprint(&self) -> String {
        let mut what = serde_json::json!({"instructions": self.instructions.as_deref(), "tools": self.tool_parts()});
        // Only with a policy: the fingerprint of an agent without one is what it always was.
        if let (Some(p), Some(o)) = (&self.policy, what.as_object_mut()) {
            o.insert("policy".into(), p.rule());
        }
        crate::keys::fingerprint(&what)
    }

    /// Records what decides the agent's approvals, part by part, in every checkpoint (after the tools and the
    /// policy are set), and how a resume mid-turn treats a change.
    pub(crate) fn set_fingerprint(&mut self, on_drift: crate::approval::OnDrift) {
        // One insert at a time: collecting into the map would bring a sort of its own into the .wasm.
        let mut tools = serde_json::Map::new();
        for t in self.tool_parts() {
            if let Some(name) = t.get("name").and_then(Value::as_str) {
                tools.insert(name.to_owned(), Value::String(crate::approval::part_hash(&t)));
            }
        }
        let fingerprint = crate::approval::Fingerprint {
            instructions: self
                .instructions
                .as_deref()
                .map(|i| crate::approval::part_hash(&Value::from(i))),
            tools,
            approval: self.policy.as_ref().map(|p| crate::approval::part_hash(&p.rule())),
        };
        let rules = Arc::make_mut(&mut self.rules);
        rules.fingerprint = Some(fingerprint);
        rules.on_drift = on_drift;
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
        let mut run = self.begin(input)?;
        self.check_nested(&mut run).await?;
        Ok(run)
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
            Input::Decoded(d, resume) => {
                let bytes = d.text_bytes;
                Run::resume_valid(&self.rules, d.checkpoint, resume, now_ms(), bytes)?
            }
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

    /// A resume that decided a subagent's interrupts: the subagent checks the decisions (and so on down), before
    /// anything runs. What it refuses is named by the interrupt's id in this run.
    pub(crate) async fn check_nested(&self, run: &mut Run<'_>) -> Result<(), AgentError> {
        if !crate::subagent::NESTS {
            return Ok(());
        }
        let opened = self.open_nested(run.checkpoint()).await?;
        run.set_opened(opened);
        Ok(())
    }

    /// [`AgentConfig::check_nested`]'s check: the subagent's run, opened by its tool, when the resume goes on with one.
    async fn open_nested(&self, cp: &crate::Checkpoint) -> Result<Option<crate::agent::Decoded>, AgentError> {
        let Some(p) = cp
            .pending_input
            .as_ref()
            .filter(|p| p.nested && cp.interrupts.is_empty() && !p.responses.is_empty())
        else {
            return Ok(None);
        };
        let Some(call) = cp
            .open_calls()
            .and_then(|calls| calls.into_iter().find(|c| c.id == p.call))
        else {
            return Ok(None);
        };
        let Some(tool) = self.tool(&call.name) else {
            return Ok(None);
        };
        // A subagent's run kept for a call whose tool runs none (a checkpoint moved to another agent, or forged): the
        // decisions would reach a tool that never asked for them, and it would run unasked.
        if !tool.runs_agent() {
            return Err(AgentError::Checkpoint(crate::CheckpointError::at(
                "pendingInput.nested",
                format!(
                    "call {:?} waits for a subagent, but this agent's {:?} runs none: resume it with the agent that paused it",
                    p.call, call.name
                ),
            )));
        }
        tool.check_resume_dyn(p).await.map_err(|e| match e {
            AgentError::Decision { id, problem } => AgentError::Decision {
                id: Some(match id {
                    Some(id) => format!("{}/{id}", p.call),
                    None => p.call.clone(),
                }),
                problem,
            },
            // The subagent's run kept in this checkpoint is not one its agent accepts (a signature, an invariant).
            AgentError::Checkpoint(e) => AgentError::Checkpoint(crate::CheckpointError::at(
                "pendingInput.state",
                format!("the subagent's run of call {:?}: {e}", p.call),
            )),
            other => AgentError::Decision {
                id: Some(p.call.clone()),
                problem: format!("the subagent of this call refused the decisions: {other}"),
            },
        })
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&dyn DynTool> {
        self.tools.get(self.rules.index(name)?).map(|t| &**t)
    }
}
