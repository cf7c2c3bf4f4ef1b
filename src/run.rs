//! The sans-IO run: a state machine over the checkpoint that says what it needs next and takes the
//! results back. It owns every rule of the loop; whoever drives it only does I/O.
//!
//! The checkpoint *is* the state; the next step is derived from it, so a run restored from JSON
//! continues exactly like the one that wrote it.
//!
//! ```
//! use resumable_agent::{ContentBlock, ModelResponse, Run, RunConfig, Step, ToolDefinition, ToolOutcome};
//! use serde_json::json;
//!
//! let config = RunConfig::new([ToolDefinition::new("lookup", "Look a key up.", json!({"type": "object"}))]);
//! let mut run = Run::start(&config, "Find k1", "run-1", 0);
//! let text = loop {
//!     match run.next_step() {
//!         // Your own I/O: call whatever model you like with run.checkpoint().messages.
//!         Step::CallModel if run.checkpoint().iterations == 0 => {
//!             run.model_replied(ModelResponse::tool_call("c1", "lookup", json!({"key": "k1"})), 1)?
//!         }
//!         Step::CallModel => run.model_replied(ModelResponse::text("k1 is 42."), 3)?,
//!         Step::CallTool(call) => run.tool_finished(&call.id, ToolOutcome::Output("42".into()), 2),
//!         Step::Review(calls) => run.reviewed(Vec::new(), 1), // nothing needs approval
//!         Step::Done(text) => break text,
//!         other => panic!("unexpected {other:?}"),
//!     }
//! };
//! assert_eq!(text, "k1 is 42.");
//! # Ok::<(), resumable_agent::ModelError>(())
//! ```

use std::collections::HashSet;

use serde_json::Value;

use crate::checkpoint::{Checkpoint, lost_result};
use crate::error::{AgentError, CheckpointError, ModelError};
use crate::interrupt::{Decision, Interrupt, InterruptKind, OnExpire, Resume};
use crate::message::{BlockProblem, Content, ContentBlock, Message, Role, ToolResult, ToolUse, block_problem};
use crate::model::{ModelResponse, ToolDefinition};
use crate::tool::InterruptError;

/// Default bound on model calls per run (across resumes).
pub const DEFAULT_MAX_ITERATIONS: u32 = 25;

/// What a run knows about its agent: the tools it may call (to refuse unknown tools and invalid input,
/// and to apply expiry policies) and the bound on model calls.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// What the model sees, in the agent's order.
    pub(crate) definitions: Vec<ToolDefinition>,
    /// The policies of the same tools, in the same order.
    pub(crate) policies: Vec<ToolPolicy>,
    pub(crate) max_iterations: u32,
    pub(crate) limits: crate::limits::Limits,
    /// The structured answer a run must end with, if any.
    pub(crate) output: Option<OutputRule>,
    /// How the history is kept within bounds before each model call, if at all.
    pub(crate) compaction: Option<Compaction>,
}

/// Keeps a long run's history within bounds: before a model call, when the history is over `max_bytes`
/// (its JSON) or `max_messages`, the oldest steps after the first `keep_first` messages are dropped — always
/// whole steps (a model turn with its tool results), so every request stays provider-valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compaction {
    /// Largest history, in bytes of JSON (`None`: no byte bound).
    pub max_bytes: Option<usize>,
    /// Most messages (`None`: no count bound).
    pub max_messages: Option<usize>,
    /// Leading messages always kept (default 1: the first user message), extended to a whole step.
    pub keep_first: usize,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            max_bytes: None,
            max_messages: None,
            keep_first: 1,
        }
    }
}

impl Compaction {
    /// At most `max_bytes` of history (its JSON).
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = Some(max_bytes);
        self
    }

    /// At most `max_messages` messages.
    pub fn max_messages(mut self, max_messages: usize) -> Self {
        self.max_messages = Some(max_messages);
        self
    }

    /// Always keeps the first `keep_first` messages (at least 1).
    pub fn keep_first(mut self, keep_first: usize) -> Self {
        self.keep_first = keep_first;
        self
    }
}

/// What one compaction removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compacted {
    pub(crate) messages: usize,
    pub(crate) bytes: usize,
}

/// The tool through which a model gives a structured answer, added to the tools of an agent with an output
/// schema (a tool of its own by that name is refused).
pub const FINAL_ANSWER_TOOL: &str = "final_answer";

/// Default bound on answers that do not match the output schema, each fed back to the model to correct.
pub const DEFAULT_MAX_OUTPUT_RETRIES: u32 = 2;

/// An agent's output schema and how often the model may miss it.
#[derive(Debug, Clone)]
pub(crate) struct OutputRule {
    /// The schema as given.
    schema: Value,
    /// True when the schema is not an object schema: the final_answer input is then `{ value }`.
    wrapped: bool,
    max_retries: u32,
}

impl OutputRule {
    /// The answer `text` (JSON, maybe in a code fence; or the text itself where the schema takes a string)
    /// as a value that matches the schema.
    fn parse_text(&self, text: &str, limits: &crate::limits::Limits) -> Result<Value, String> {
        let body = strip_fence(text.trim());
        let parsed = serde_json::from_str::<Value>(body);
        let value = match parsed {
            Ok(v) => v,
            Err(_)
                if self.wrapped
                    && crate::schema::check(&self.schema, &Value::String(text.to_owned()), "answer").is_ok() =>
            {
                return Ok(Value::String(text.to_owned()));
            }
            Err(e) if body.is_empty() => return Err(format!("the answer is empty ({e})")),
            Err(e) => return Err(format!("the answer is not JSON ({e})")),
        };
        self.check(value, limits)
    }

    /// `value` if it matches the schema and the depth limit.
    fn check(&self, mut value: Value, limits: &crate::limits::Limits) -> Result<Value, String> {
        let depth = crate::limits::value_depth(&value);
        if depth > limits.max_depth {
            return Err(format!(
                "the answer nests {depth} deep; at most {} (limits.maxDepth)",
                limits.max_depth
            ));
        }
        crate::schema::check(&self.schema, &value, "answer")?;
        crate::limits::normalize_numbers(&mut value);
        Ok(value)
    }
}

/// The [`FINAL_ANSWER_TOOL`] for an output `schema`, and whether its input wraps the answer in `{ value }`
/// (for a schema that is not an object schema: tool inputs are objects).
pub(crate) fn final_answer_definition(schema: &Value) -> (ToolDefinition, bool) {
    let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
    let input_schema = if wrapped {
        serde_json::json!({"type": "object", "properties": {"value": schema}, "required": ["value"]})
    } else {
        schema.clone()
    };
    let definition = ToolDefinition {
        name: FINAL_ANSWER_TOOL.to_owned(),
        description: "Gives your final answer as structured data: call it once, when you are done, with the answer as its input, instead of answering in text.".to_owned(),
        input_schema,
    };
    (definition, wrapped)
}

/// Room kept in the size estimate for a checkpoint's fields other than its messages, results, state and
/// interrupts (ids, times, usage, signature).
const CHECKPOINT_FRAME_BYTES: usize = 2048;

/// The inside of a Markdown code fence (```json … ```), or `text` as it is.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // Past the fence's info string ("json").
    body.split_once('\n').map_or(body, |(_, b)| b).trim()
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolPolicy {
    pub(crate) may_need_approval: bool,
    pub(crate) on_expire: OnExpire,
}

impl RunConfig {
    /// The tools a run may call; [`DEFAULT_MAX_ITERATIONS`] model calls.
    pub fn new(tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        let definitions: Vec<ToolDefinition> = tools.into_iter().collect();
        RunConfig {
            policies: vec![ToolPolicy::default(); definitions.len()],
            definitions,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            limits: crate::limits::Limits::default(),
            output: None,
            compaction: None,
        }
    }

    /// Keeps the history within `compaction`'s bounds before each model call (see [`Compaction`]).
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// Runs must end with a structured answer matching the JSON Schema `schema`: the model gives it by
    /// calling [`FINAL_ANSWER_TOOL`] (added to the tools; its input is the answer, or `{ value }` when the
    /// schema is not an object schema) or as JSON text. An answer that does not match is fed back to the
    /// model to correct, up to `max_retries` times; then the run ends in [`AgentError::Output`].
    pub fn output(mut self, schema: Value, max_retries: u32) -> Self {
        self.set_output(schema, max_retries);
        self
    }

    pub(crate) fn set_output(&mut self, schema: Value, max_retries: u32) {
        let (definition, wrapped) = final_answer_definition(&schema);
        self.definitions.retain(|d| d.name != FINAL_ANSWER_TOOL);
        self.policies.truncate(self.definitions.len());
        self.definitions.push(definition);
        self.policies.push(ToolPolicy::default());
        self.output = Some(OutputRule {
            schema,
            wrapped,
            max_retries,
        });
    }

    /// Bounds the number of model calls of a run, counted across resumes.
    pub fn max_iterations(mut self, max_iterations: u32) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// The size and depth limits of what the run accepts (see [`Limits`](crate::Limits)).
    pub fn limits(mut self, limits: crate::limits::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Marks `tool` as one whose calls may need approval (only such calls are listed by [`Step::Review`]),
    /// with the policy for its expired interrupts.
    pub fn approval(mut self, tool: &str, on_expire: OnExpire) -> Self {
        if let Some(k) = self.index(tool) {
            if let Some(p) = self.policies.get_mut(k) {
                p.may_need_approval = true;
                p.on_expire = on_expire;
            }
        }
        self
    }

    /// The tool definitions, as sent to the model.
    pub fn tools(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.definitions.iter().position(|d| d.name == name)
    }

    fn tool(&self, name: &str) -> Option<(&ToolDefinition, ToolPolicy)> {
        let k = self.index(name)?;
        Some((
            self.definitions.get(k)?,
            self.policies.get(k).copied().unwrap_or_default(),
        ))
    }
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Step {
    /// Send `checkpoint().messages` to the model and feed the answer to [`Run::model_replied`].
    CallModel,
    /// Ask each of these calls' tools whether the call needs approval, then report the ones that do with
    /// [`Run::reviewed`] — before any call of the turn runs.
    Review(Vec<ToolUse>),
    /// Run this tool call and feed the outcome to [`Run::tool_finished`].
    CallTool(ToolUse),
    /// The run answered this call itself with an error result (unknown tool, input that is not a JSON
    /// object or breaks the tool's schema); nothing to do but report it.
    Refused(ToolUse, ToolResult),
    /// Paused: the checkpoint's `interrupts` say what the run waits for.
    Paused,
    /// The run answered this call itself with a success result: a valid structured answer (the
    /// [`FINAL_ANSWER_TOOL`] call); nothing to do but report it.
    Answered(ToolUse, ToolResult),
    /// Finished with this text.
    Done(String),
    /// The model missed the output schema more often than the agent allows: end the run with
    /// [`AgentError::Output`] and this problem.
    InvalidOutput(String),
    /// The next step would be a model call, but the run has used `maxIterations` of them.
    OutOfIterations,
}

/// How one tool call ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// Text for the model.
    Output(String),
    /// An error the model reads.
    Error(String),
    /// Pause and ask the human.
    Interrupt(InterruptError),
}

/// A decision a resume applied, for reporting (`approval-response`, or the answer's `tool-result`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Applied {
    /// The interrupt it answered.
    pub interrupt: Interrupt,
    /// True when the call will run (approved); false when denied or answered.
    pub approved: bool,
    /// The input the call will run with, when a human changed it.
    pub modified_args: Option<Value>,
    /// The result recorded for the call (a denial, an expiry, or an answer), if any.
    pub result: Option<ToolResult>,
}

/// One run of the loop, driven step by step. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Run<'c> {
    state: Checkpoint,
    config: &'c RunConfig,
    applied: Vec<Applied>,
    /// Set when [`Run::next_step`] changed the state on its way to [`Step::Done`] (a structured answer
    /// recorded, its turn closed): that final state is a checkpoint of its own.
    changed_at_done: bool,
    /// What the last compaction removed, until the driver reports it.
    compacted: Option<Compacted>,
    /// JSON sizes of the messages, as of the last compaction check: a run only appends messages (and
    /// changes at most the last one), so each check measures only what is new.
    sizes: Vec<usize>,
    /// How many leading messages are as they were when the run began or was last asked
    /// ([`Run::take_unchanged`]): appending keeps them, an edit, a removal or a compaction lowers it.
    unchanged: usize,
    /// What changed in the messages since the run's state was last taken for saving ([`Run::take_saved`]),
    /// so a session's log record holds only what changed.
    saved: Saved,
}

/// How the messages changed since the last save: the saved messages lost the range `dropped` (compaction),
/// and after that the first `unchanged` messages are as saved; the rest are new or edited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Saved {
    /// Leading messages as saved (counted after `dropped` was removed).
    pub(crate) unchanged: usize,
    /// `(start, count)`: saved messages removed from the middle since.
    pub(crate) dropped: Option<(usize, usize)>,
}

impl<'c> Run<'c> {
    /// A new run whose first message is `message`; `now` is the time in ms since the epoch. `message` must
    /// not be empty: providers refuse an empty user message ([`Agent::prompt`](crate::Agent::prompt) refuses
    /// it with [`AgentError::Argument`]).
    pub fn start(config: &'c RunConfig, message: &str, run_id: impl Into<String>, now: u64) -> Self {
        let mut state = Checkpoint::new(run_id, now);
        state.messages.push(Message::user(message));
        Run {
            state,
            config,
            applied: Vec::new(),
            changed_at_done: false,
            compacted: None,
            sizes: Vec::new(),
            unchanged: 0,
            saved: Saved::default(),
        }
    }

    /// Restores a run and applies the human's input: answers and decisions for its pending interrupts, or,
    /// with nothing pending, a new user turn (`""` continues as is). Everything is checked before anything
    /// changes.
    ///
    /// # Errors
    /// [`AgentError::Checkpoint`] for a checkpoint that breaks an invariant; [`AgentError::Decision`] for
    /// input that does not answer exactly what is pending; [`AgentError::InterruptExpired`] (with the
    /// checkpoint) for an expired interrupt whose tool's policy is [`OnExpire::Error`].
    pub fn resume(config: &'c RunConfig, state: Checkpoint, input: Resume, now: u64) -> Result<Self, AgentError> {
        state.validate()?;
        Self::resume_valid(config, state, input, now)
    }

    /// [`Run::resume`] of a checkpoint known to be valid: one [`Checkpoint::from_json`] has just returned.
    pub(crate) fn resume_valid(
        config: &'c RunConfig,
        mut state: Checkpoint,
        input: Resume,
        now: u64,
    ) -> Result<Self, AgentError> {
        // What the run writes next is a new checkpoint: the old signature does not cover it.
        state.signature = None;
        // Each prompt or resume gets the whole bound of output corrections.
        state.output_attempts = 0;
        if state.run_id.is_none() {
            state.run_id = Some(crate::platform::new_run_id());
        }
        let unchanged = state.messages.len();
        let mut run = Run {
            state,
            config,
            applied: Vec::new(),
            changed_at_done: false,
            compacted: None,
            sizes: Vec::new(),
            unchanged,
            saved: Saved {
                unchanged,
                dropped: None,
            },
        };
        if run.state.interrupts.is_empty() {
            run.continue_with(input)?;
        } else {
            run.answer(input, now)?;
        }
        Ok(run)
    }

    /// The run's state: save it (as JSON) to resume later.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.state
    }

    /// The state, by value.
    pub fn into_checkpoint(self) -> Checkpoint {
        self.state
    }

    /// What the resume that built this run applied (empty after [`Run::start`]).
    pub fn applied(&self) -> &[Applied] {
        &self.applied
    }

    pub(crate) fn config(&self) -> &'c RunConfig {
        self.config
    }

    /// The run's id (stable across resumes).
    pub fn run_id(&self) -> &str {
        self.state.run_id.as_deref().unwrap_or_default()
    }

    pub(crate) fn touch(&mut self, now: u64) {
        self.state.updated_at = Some(now);
    }

    /// The agent's state (plain JSON), if it has one.
    pub fn state(&self) -> Option<&Value> {
        self.state.state.as_ref()
    }

    /// Replaces the agent's state.
    pub fn set_state(&mut self, mut state: Value) {
        crate::limits::normalize_numbers(&mut state);
        self.state.state = Some(state);
    }

    pub(crate) fn checkpoint_mut(&mut self) -> &mut Checkpoint {
        &mut self.state
    }

    /// How many leading messages are unchanged since the run began or since the last call; from now on
    /// all of them count as unchanged. A model that keeps its own copy of the history (the JS model's
    /// mirror) keeps that many of its messages and replaces the rest.
    pub(crate) fn take_unchanged(&mut self) -> usize {
        std::mem::replace(&mut self.unchanged, self.state.messages.len())
    }

    /// How many leading messages are unchanged since the run began or its state was last taken for saving;
    /// from now on all of them count as saved.
    pub(crate) fn take_saved(&mut self) -> Saved {
        let all = Saved {
            unchanged: self.state.messages.len(),
            dropped: None,
        };
        std::mem::replace(&mut self.saved, all)
    }

    /// Notes that the messages from `index` on changed in place or went.
    fn edited(&mut self, index: usize) {
        self.unchanged = self.unchanged.min(index);
        self.saved.unchanged = self.saved.unchanged.min(index);
    }

    /// Notes that the messages `start..end` went (compaction).
    fn dropped(&mut self, start: usize, end: usize) {
        self.unchanged = self.unchanged.min(start);
        let saved = &mut self.saved;
        if saved.dropped.is_none() && start < saved.unchanged {
            // Saved messages left the middle: the ones after the range are still as saved.
            let gone = end.min(saved.unchanged) - start;
            saved.dropped = Some((start, gone));
            saved.unchanged -= gone;
        } else {
            saved.unchanged = saved.unchanged.min(start);
        }
    }

    /// The next step, closing a finished tool turn on the way.
    pub fn next_step(&mut self) -> Step {
        let mut closed = false;
        if self.state.is_interrupted() {
            return Step::Paused;
        }
        if !self.state.reviewed && self.state.open_calls().is_some() {
            let review: Vec<ToolUse> = self
                .state
                .open_calls()
                .unwrap_or_default()
                .into_iter()
                .filter(|c| self.config.tool(&c.name).is_some_and(|(_, p)| p.may_need_approval))
                .filter(|c| !self.state.tool_results.iter().any(|r| r.tool_use_id == c.id))
                .filter(|c| self.refusal(c).is_none())
                .cloned()
                .collect();
            if !review.is_empty() {
                return Step::Review(review);
            }
            self.state.reviewed = true;
        }
        if let Some(calls) = self.state.open_calls() {
            let answered: HashSet<&str> = self.state.tool_results.iter().map(|r| r.tool_use_id.as_str()).collect();
            let next = calls.into_iter().find(|c| !answered.contains(c.id.as_str())).cloned();
            if let Some(call) = next {
                if call.name == FINAL_ANSWER_TOOL && self.config.output.is_some() {
                    return self.final_answer(call);
                }
                if let Some(problem) = self.refusal(&call) {
                    let result = ToolResult {
                        tool_use_id: call.id.clone(),
                        content: problem,
                        is_error: true,
                    };
                    self.state.tool_results.push(result.clone());
                    return Step::Refused(call, result);
                }
                return Step::CallTool(call);
            }
            self.state.close_turn();
            closed = true;
        }
        match self.state.messages.last() {
            Some(last) if last.role == Role::Assistant => {
                let text = last.text();
                match &self.config.output {
                    Some(rule) if self.state.structured.is_none() => {
                        match rule.parse_text(&text, &self.config.limits) {
                            Ok(value) => {
                                self.state.structured = Some(value);
                                self.changed_at_done = true;
                            }
                            Err(problem) => return self.missed_output(problem, None),
                        }
                        Step::Done(text)
                    }
                    _ => Step::Done(text),
                }
            }
            // The structured answer came by a final_answer call: its turn is closed, the run is done.
            _ if self.state.structured.is_some() => {
                self.changed_at_done |= closed;
                Step::Done(self.answer_text())
            }
            _ => self.model_or_limit(),
        }
    }

    /// True (once) when the last [`Step::Done`] came with a change to the state not yet reported as a
    /// checkpoint: the driver saves and reports it.
    pub(crate) fn take_changed_at_done(&mut self) -> bool {
        std::mem::take(&mut self.changed_at_done)
    }

    fn model_or_limit(&mut self) -> Step {
        if self.state.iterations >= self.config.max_iterations {
            return Step::OutOfIterations;
        }
        if let Some(rule) = self.config.compaction {
            self.compact(rule);
        }
        Step::CallModel
    }

    /// Brings the JSON sizes of the messages up to date: those measured before stay valid but for the last
    /// one measured (a user text may have joined it, a tool call's input may have been edited).
    fn measure(&mut self) {
        let messages = &self.state.messages;
        let valid = self.sizes.len().saturating_sub(1).min(messages.len());
        self.sizes.truncate(valid);
        self.sizes.extend(messages.iter().skip(valid).map(crate::json::len));
    }

    /// About how many bytes the checkpoint's JSON takes now (messages, results, state, interrupts; a little
    /// over), for the size limit where values enter the run.
    fn bytes(&mut self) -> usize {
        self.measure();
        let messages: usize = self.sizes.iter().sum();
        let results: usize = self.state.tool_results.iter().map(crate::json::len).sum();
        let state = self.state.state.as_ref().map_or(0, crate::json::len);
        let interrupts: usize = self.state.interrupts.iter().map(crate::json::len).sum();
        messages
            .saturating_add(results)
            .saturating_add(state)
            .saturating_add(interrupts)
            .saturating_add(CHECKPOINT_FRAME_BYTES)
    }

    /// Why a value of `adding` more bytes (or replacing `replacing` bytes with `adding`) would make the
    /// checkpoint too large to read back (`limits.maxCheckpointBytes`), if it would.
    pub(crate) fn too_large(&mut self, adding: usize, replacing: usize) -> Option<String> {
        let max = self.config.limits.max_checkpoint_bytes;
        let total = self.bytes().saturating_sub(replacing).saturating_add(adding);
        (total > max).then(|| {
            format!("it is {adding} bytes of JSON, and the checkpoint would be about {total} bytes; at most {max} (limits.maxCheckpointBytes)")
        })
    }

    /// What the last compaction removed (once), for the driver to report.
    pub(crate) fn take_compacted(&mut self) -> Option<Compacted> {
        self.compacted.take()
    }

    /// Drops the oldest whole steps after the kept prefix until the history is within `rule` (or only the
    /// last step is left). The prefix ends with a user message; what follows starts with a model turn, so
    /// roles still alternate and every tool_result still follows its tool_use.
    fn compact(&mut self, rule: Compaction) {
        self.measure();
        let messages = &self.state.messages;
        let sizes = &self.sizes;
        let total: usize = sizes.iter().sum();
        let over = |count: usize, bytes: usize| {
            rule.max_messages.is_some_and(|max| count > max) || rule.max_bytes.is_some_and(|max| bytes > max)
        };
        if !over(messages.len(), total) {
            return;
        }
        // The kept prefix, extended so that it ends with a user message.
        let mut keep = rule.keep_first.min(messages.len());
        while keep < messages.len() && messages.get(keep.wrapping_sub(1)).is_some_and(|m| m.role != Role::User) {
            keep += 1;
        }
        // The history after the prefix may start at any assistant message but the last step's.
        let last = messages.len().saturating_sub(1);
        // `cut`: where the kept history resumes; `removed`: the bytes of messages[keep..cut].
        let (mut cut, mut removed) = (keep, 0usize);
        let mut passed = 0usize;
        for (i, m) in messages.iter().enumerate().skip(keep) {
            if i >= last {
                break;
            }
            if m.role == Role::Assistant && i > keep {
                (cut, removed) = (i, passed);
                if !over(messages.len() - (cut - keep), total - removed) {
                    break;
                }
            }
            passed += sizes.get(i).copied().unwrap_or_default();
        }
        if cut <= keep {
            return;
        }
        self.state.messages.drain(keep..cut);
        self.sizes.drain(keep..cut);
        self.dropped(keep, cut);
        self.compacted = Some(Compacted {
            messages: cut - keep,
            bytes: removed,
        });
    }

    /// The text of the model's last turn.
    fn answer_text(&self) -> String {
        self.state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(Message::text)
            .unwrap_or_default()
    }

    /// The run answers a final_answer call itself: "Received." and the run's structured answer when the
    /// input matches the schema, else an error result the model can correct (within the bound).
    fn final_answer(&mut self, call: ToolUse) -> Step {
        let checked = match (&self.config.output, call.input.as_object()) {
            (None, _) => Err("this agent has no output schema".to_owned()),
            (Some(_), None) => Err("the arguments are not a JSON object".to_owned()),
            (Some(rule), Some(input)) => {
                let value = if rule.wrapped {
                    input
                        .get("value")
                        .cloned()
                        .ok_or_else(|| "the input has no \"value\"".to_owned())
                } else {
                    Ok(call.input.clone())
                };
                value.and_then(|v| rule.check(v, &self.config.limits))
            }
        };
        match checked {
            Ok(value) => {
                self.state.structured = Some(value);
                let result = ToolResult {
                    tool_use_id: call.id.clone(),
                    content: "Received.".to_owned(),
                    is_error: false,
                };
                self.state.tool_results.push(result.clone());
                Step::Answered(call, result)
            }
            Err(problem) => self.missed_output(problem, Some(call)),
        }
    }

    /// An answer that missed the output schema: fed back to the model (as the call's error result, or a
    /// user message after a text answer) while the bound allows, else [`Step::InvalidOutput`].
    fn missed_output(&mut self, problem: String, call: Option<ToolUse>) -> Step {
        self.state.output_attempts = self.state.output_attempts.saturating_add(1);
        let max = self.config.output.as_ref().map_or(0, |r| r.max_retries);
        let feedback = format!(
            "The answer does not match the required output schema: {problem}. Call {FINAL_ANSWER_TOOL} again with an input that matches its schema."
        );
        match call {
            Some(call) => {
                let result = ToolResult {
                    tool_use_id: call.id.clone(),
                    content: feedback,
                    is_error: true,
                };
                self.state.tool_results.push(result.clone());
                if self.state.output_attempts > max {
                    return Step::InvalidOutput(problem);
                }
                Step::Refused(call, result)
            }
            None if self.state.output_attempts > max => Step::InvalidOutput(problem),
            None => {
                self.push_user_text(feedback);
                self.model_or_limit()
            }
        }
    }

    /// Why the run answers `call` itself instead of running it: an unknown tool, arguments that are not a
    /// JSON object, or input that breaks the tool's schema.
    fn refusal(&self, call: &ToolUse) -> Option<String> {
        let Some((tool, _)) = self.config.tool(&call.name) else {
            let known: Vec<&str> = self.config.tools().iter().map(|d| d.name.as_str()).collect();
            return Some(format!(
                "unknown tool {:?}; available tools: {}",
                call.name,
                known.join(", ")
            ));
        };
        // Providers keep arguments that were not a JSON object as their raw text.
        if !call.input.is_object() {
            let raw = call
                .input
                .as_str()
                .map_or_else(|| call.input.to_string(), str::to_owned);
            return Some(format!(
                "the arguments of this call are not a JSON object, so {} did not run: {raw}; call it again with valid JSON arguments",
                call.name
            ));
        }
        crate::schema::check(&tool.input_schema, &call.input, "input")
            .err()
            .map(|problem| {
                format!(
                    "the input does not match the schema of {}, so it did not run: {problem}; call it again with valid input",
                    call.name
                )
            })
    }

    /// Records the model's turn. A response that would make the next request invalid is refused whole.
    ///
    /// # Errors
    /// [`ModelError::InvalidResponse`] naming the offending block; the run is unchanged.
    pub fn model_replied(&mut self, mut response: ModelResponse, now: u64) -> Result<(), ModelError> {
        if let Some(reason) = response
            .stop_reason
            .clone()
            .filter(crate::model::StopReason::is_unusable)
        {
            let text = Message::assistant(response.content).text();
            return Err(ModelError::Stopped { reason, text });
        }
        // Providers refuse empty text blocks in a history.
        response
            .content
            .retain(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()));
        if let Some((j, problem)) = block_problem(Role::Assistant, &response.content) {
            let problem = match problem {
                BlockProblem::ToolResultOutsideUser => {
                    "tool_result blocks belong in user messages, not in a model response".to_owned()
                }
                BlockProblem::EmptyId => "tool_use with an empty id".to_owned(),
                BlockProblem::ResultAfterOther => "tool_result in a model response".to_owned(),
                BlockProblem::ThinkingOutsideAssistant => "thinking outside an assistant turn".to_owned(),
                BlockProblem::DuplicateId(id) => format!("tool_use id {id:?} appears twice in one response"),
                BlockProblem::ToolUseOutsideAssistant => "tool_use outside an assistant turn".to_owned(),
            };
            return Err(ModelError::InvalidResponse {
                path: format!("content[{j}]"),
                problem,
            });
        }
        for (j, b) in response.content.iter().enumerate() {
            if let ContentBlock::ToolUse(u) = b {
                let reused = self
                    .state
                    .messages
                    .iter()
                    .any(|m| m.tool_uses().any(|earlier| earlier.id == u.id));
                if reused {
                    return Err(ModelError::InvalidResponse {
                        path: format!("content[{j}].id"),
                        problem: format!(
                            "{:?} is the id of an earlier tool call (ids are unique in a conversation)",
                            u.id
                        ),
                    });
                }
                let depth = crate::limits::value_depth(&u.input);
                if depth > self.config.limits.max_depth {
                    return Err(ModelError::InvalidResponse {
                        path: format!("content[{j}].input"),
                        problem: format!(
                            "nested {depth} deep; at most {} (limits.maxDepth)",
                            self.config.limits.max_depth
                        ),
                    });
                }
            }
        }
        for b in &mut response.content {
            if let ContentBlock::ToolUse(u) = b {
                crate::limits::normalize_numbers(&mut u.input);
            }
        }
        let message = Message::assistant(response.content);
        if let Some(why) = self.too_large(crate::json::len(&message), 0) {
            return Err(ModelError::InvalidResponse {
                path: "content".into(),
                problem: format!("the model's turn was not kept: {why}"),
            });
        }
        self.state.iterations = self.state.iterations.saturating_add(1);
        if let Some(usage) = response.usage {
            self.state.usage.add(usage);
        }
        self.state.messages.push(message);
        self.touch(now);
        Ok(())
    }

    /// Reports which calls of a [`Step::Review`] need approval: `(call id, expires in ms)`. With any, the
    /// run pauses on them (in call order) before a call of the turn runs. Ids not in the open turn are
    /// ignored.
    pub fn reviewed(&mut self, needed: Vec<(String, Option<u64>)>, now: u64) {
        let calls = self.state.open_calls().unwrap_or_default();
        let interrupts: Vec<Interrupt> = calls
            .iter()
            .filter_map(|c| {
                let (_, expires_in) = needed.iter().find(|(id, _)| *id == c.id)?;
                Some(Interrupt {
                    kind: InterruptKind::Approval,
                    id: c.id.clone(),
                    tool_name: c.name.clone(),
                    input: c.input.clone(),
                    question: None,
                    options: None,
                    data: None,
                    expires_at: expires_in.map(|ms| now.saturating_add(ms)),
                })
            })
            .collect();
        self.state.reviewed = true;
        self.state.set_interrupts(interrupts);
        self.touch(now);
    }

    /// Records how the call `id` (the one [`Step::CallTool`] named) ended.
    pub fn tool_finished(&mut self, id: &str, mut outcome: ToolOutcome, now: u64) {
        self.touch(now);
        // A result the checkpoint could not hold is refused where it enters: the model reads why, and what
        // is saved can always be read back.
        let size = match &outcome {
            ToolOutcome::Output(text) | ToolOutcome::Error(text) => crate::json::len(text.as_str()),
            ToolOutcome::Interrupt(ask) => {
                crate::json::len(&ask.question) + ask.data.as_ref().map_or(0, crate::json::len)
            }
        };
        if let Some(why) = self.too_large(size, 0) {
            let what = if matches!(outcome, ToolOutcome::Interrupt(_)) {
                "question"
            } else {
                "result"
            };
            outcome = ToolOutcome::Error(format!(
                "the tool's {what} was not kept: {why}; return less (e.g. a summary, or a reference to where the data is)"
            ));
        }
        let max = self.config.limits.max_depth;
        if let ToolOutcome::Interrupt(ask) = &outcome {
            if let Some(depth) = ask.data.as_ref().map(crate::limits::value_depth).filter(|d| *d > max) {
                outcome = ToolOutcome::Error(format!(
                    "the question's data nests {depth} deep; at most {max} (limits.maxDepth)"
                ));
            }
        }
        let (content, is_error) = match outcome {
            ToolOutcome::Output(text) => (text, false),
            ToolOutcome::Error(message) => (message, true),
            ToolOutcome::Interrupt(ask) => {
                let Some(call) = self
                    .state
                    .open_calls()
                    .and_then(|calls| calls.into_iter().find(|c| c.id == id).cloned())
                else {
                    return;
                };
                // The approval was used up: the call ran, and its answer will be the human's.
                self.state.approved.retain(|a| *a != call.id);
                self.state.set_interrupts(vec![Interrupt {
                    kind: InterruptKind::Question,
                    id: call.id,
                    tool_name: call.name,
                    input: call.input,
                    question: Some(ask.question),
                    options: ask.options,
                    data: ask.data.map(|mut d| {
                        crate::limits::normalize_numbers(&mut d);
                        d
                    }),
                    expires_at: ask.expires_in_ms.map(|ms| now.saturating_add(ms)),
                }]);
                return;
            }
        };
        self.state.tool_results.push(ToolResult {
            tool_use_id: id.to_owned(),
            content,
            is_error,
        });
    }

    /// Nothing is pending: `input` is a new user turn (`""` continues as is).
    fn continue_with(&mut self, input: Resume) -> Result<(), AgentError> {
        let text = match input {
            Resume::Answer(text) => text,
            Resume::Decisions(d) if d.is_empty() => String::new(),
            Resume::DecisionsById(d) if d.is_empty() => String::new(),
            Resume::Decisions(_) | Resume::DecisionsById(_) | Resume::Json(_) => {
                return Err(decision_error(
                    None,
                    "the run waits for nothing: there is nothing to decide",
                ));
            }
        };
        if text.is_empty() {
            if self.state.messages.is_empty() {
                return Err(CheckpointError::at(
                    "messages",
                    "empty, and the answer is empty: there is nothing to resume",
                )
                .into());
            }
            return Ok(());
        }
        if self.state.open_calls().is_some() {
            let n = self.state.messages.len().saturating_sub(1);
            return Err(decision_error(
                None,
                format!(
                    "the run is in the middle of the tool calls of messages[{n}]; resume it with an empty answer to finish them first"
                ),
            ));
        }
        self.state.structured = None;
        self.push_user_text(text);
        Ok(())
    }

    /// Adds user text to the history: an answer that said nothing goes (providers refuse it in a history),
    /// and the text joins the user message it would follow.
    fn push_user_text(&mut self, text: String) {
        if self.state.messages.last().is_some_and(Message::is_empty_answer) {
            self.state.messages.pop();
            self.edited(self.state.messages.len());
        }
        if self.state.messages.last().is_some_and(|m| m.role == Role::User) {
            self.edited(self.state.messages.len().saturating_sub(1));
        }
        match self.state.messages.last_mut() {
            Some(last) if last.role == Role::User => {
                let earlier = match std::mem::replace(&mut last.content, Content::Blocks(Vec::new())) {
                    Content::Text(t) => vec![ContentBlock::Text { text: t }],
                    Content::Blocks(b) => b,
                };
                let mut blocks = earlier;
                blocks.push(ContentBlock::Text { text });
                last.content = Content::Blocks(blocks);
            }
            _ => self.state.messages.push(Message::user(text)),
        }
    }

    /// Applies one decision per pending interrupt, after checking all of them.
    fn answer(&mut self, input: Resume, now: u64) -> Result<(), AgentError> {
        let plan = match_decisions(&self.state.interrupts, input).and_then(|decisions| {
            self.state
                .interrupts
                .iter()
                .zip(decisions)
                .map(
                    |(interrupt, decision)| match self.check_decision(interrupt, decision, now) {
                        Ok(d) => Ok(d),
                        Err(Check::Invalid(e)) => Err(e),
                        Err(Check::Expired) => Err(AgentError::InterruptExpired {
                            id: interrupt.id.clone(),
                            expires_at: interrupt.expires_at.unwrap_or_default(),
                            checkpoint: Box::new(Checkpoint::new("", 0)),
                        }),
                    },
                )
                .collect::<Result<Vec<Decision>, AgentError>>()
        });
        let plan = match plan {
            Ok(plan) => plan,
            Err(AgentError::InterruptExpired { id, expires_at, .. }) => {
                let checkpoint = Box::new(std::mem::replace(&mut self.state, Checkpoint::new("", 0)));
                return Err(AgentError::InterruptExpired {
                    id,
                    expires_at,
                    checkpoint,
                });
            }
            Err(e) => return Err(e),
        };
        let pending = std::mem::take(&mut self.state.interrupts);
        self.state.pending_tool_use_id = None;
        self.state.question = None;
        // Questions were asked mid-turn: calls before them without a result are lost (older formats only).
        if let Some(q) = pending.iter().find(|i| i.kind == InterruptKind::Question) {
            let lost: Vec<ToolResult> = self
                .state
                .open_calls()
                .unwrap_or_default()
                .into_iter()
                .take_while(|c| c.id != q.id)
                .filter(|c| !self.state.tool_results.iter().any(|r| r.tool_use_id == c.id))
                .map(|c| lost_result(&c.id))
                .collect();
            self.state.tool_results.extend(lost);
        }
        for (interrupt, decision) in pending.into_iter().zip(plan) {
            let applied = match decision {
                Decision::Approve { modified_args } => {
                    if let Some(input) = &modified_args {
                        self.replace_input(&interrupt.id, input.clone());
                    }
                    self.state.approved.push(interrupt.id.clone());
                    Applied {
                        interrupt,
                        approved: true,
                        modified_args,
                        result: None,
                    }
                }
                Decision::Deny { message } => {
                    let result = ToolResult {
                        tool_use_id: interrupt.id.clone(),
                        content: denial(&interrupt, message.as_deref()),
                        is_error: true,
                    };
                    self.state.tool_results.push(result.clone());
                    Applied {
                        interrupt,
                        approved: false,
                        modified_args: None,
                        result: Some(result),
                    }
                }
                Decision::Answer { text } => {
                    let result = ToolResult {
                        tool_use_id: interrupt.id.clone(),
                        content: text,
                        is_error: false,
                    };
                    self.state.tool_results.push(result.clone());
                    Applied {
                        interrupt,
                        approved: false,
                        modified_args: None,
                        result: Some(result),
                    }
                }
            };
            self.applied.push(applied);
        }
        self.touch(now);
        Ok(())
    }

    /// The decision to apply for `interrupt`: checked against its kind and the tool's schema, and replaced
    /// by a denial when it expired under a `deny` policy.
    fn check_decision(&self, interrupt: &Interrupt, decision: Decision, now: u64) -> Result<Decision, Check> {
        let tool = self.config.tool(&interrupt.tool_name);
        if interrupt.expires_at.is_some_and(|at| now > at) {
            return match tool.map_or(OnExpire::Error, |(_, p)| p.on_expire) {
                OnExpire::Deny => Ok(Decision::Deny {
                    message: Some(format!(
                        "the {} expired before anyone answered it",
                        match interrupt.kind {
                            InterruptKind::Approval => "approval request",
                            InterruptKind::Question => "question",
                        }
                    )),
                }),
                OnExpire::Error => Err(Check::Expired),
            };
        }
        let fits = matches!(
            (interrupt.kind, &decision),
            (
                InterruptKind::Approval,
                Decision::Approve { .. } | Decision::Deny { .. }
            ) | (InterruptKind::Question, Decision::Answer { .. } | Decision::Deny { .. })
        );
        if !fits {
            let expected = match interrupt.kind {
                InterruptKind::Approval => "\"approve\" or \"deny\" for an approval request",
                InterruptKind::Question => "\"answer\" or \"deny\" for a question",
            };
            return Err(Check::Invalid(decision_error(
                Some(&interrupt.id),
                format!("expected {expected}, got \"{}\"", decision.type_name()),
            )));
        }
        if let (
            Decision::Approve {
                modified_args: Some(input),
            },
            Some((tool, _)),
        ) = (&decision, tool)
        {
            if !input.is_object() {
                return Err(Check::Invalid(decision_error(
                    Some(&interrupt.id),
                    "modifiedArgs: expected a JSON object (the tool's input)",
                )));
            }
            let depth = crate::limits::value_depth(input);
            if depth > self.config.limits.max_depth {
                return Err(Check::Invalid(decision_error(
                    Some(&interrupt.id),
                    format!(
                        "modifiedArgs: nested {depth} deep; at most {} (limits.maxDepth)",
                        self.config.limits.max_depth
                    ),
                )));
            }
            crate::schema::check(&tool.input_schema, input, "modifiedArgs")
                .map_err(|p| Check::Invalid(decision_error(Some(&interrupt.id), p)))?;
        }
        Ok(decision)
    }

    fn replace_input(&mut self, id: &str, mut input: Value) {
        crate::limits::normalize_numbers(&mut input);
        self.edited(self.state.messages.len().saturating_sub(1));
        if let Some(Content::Blocks(blocks)) = self.state.messages.last_mut().map(|m| &mut m.content) {
            for b in blocks {
                if let ContentBlock::ToolUse(u) = b {
                    if u.id == id {
                        u.input = input;
                        return;
                    }
                }
            }
        }
    }
}

enum Check {
    Invalid(AgentError),
    Expired,
}

fn decision_error(id: Option<&str>, problem: impl Into<String>) -> AgentError {
    AgentError::Decision {
        id: id.map(str::to_owned),
        problem: problem.into(),
    }
}

/// The content of a denied call's result.
fn denial(interrupt: &Interrupt, message: Option<&str>) -> String {
    let what = match interrupt.kind {
        InterruptKind::Approval => format!("The user denied this call to {}; it did not run", interrupt.tool_name),
        InterruptKind::Question => "The user declined to answer".to_owned(),
    };
    match message {
        Some(m) if !m.is_empty() => format!("{what}: {m}"),
        _ => format!("{what}."),
    }
}

/// One decision per pending interrupt, in interrupt order.
fn match_decisions(pending: &[Interrupt], input: Resume) -> Result<Vec<Decision>, AgentError> {
    let input = input.read(pending)?;
    let ids = || {
        pending
            .iter()
            .map(|i| format!("{:?}", i.id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match input {
        Resume::Answer(text) => match pending {
            [only] if only.kind == InterruptKind::Question => Ok(vec![Decision::Answer { text }]),
            _ => Err(decision_error(
                pending.first().map(|i| i.id.as_str()),
                format!(
                    "the run waits for approval of {}; resume with {{ decisions }} (approve or deny each), not a text answer",
                    ids()
                ),
            )),
        },
        Resume::Decisions(list) => {
            if list.len() != pending.len() {
                let id = pending.get(list.len()).map(|i| i.id.as_str());
                return Err(decision_error(
                    id,
                    format!(
                        "expected {} decision(s), one for each of {} in order, got {}",
                        pending.len(),
                        ids(),
                        list.len()
                    ),
                ));
            }
            Ok(list)
        }
        Resume::Json(_) => Err(decision_error(None, "decisions were not read")),
        Resume::DecisionsById(mut list) => {
            for (id, _) in &list {
                if !pending.iter().any(|i| &i.id == id) {
                    return Err(decision_error(
                        Some(id),
                        format!("no pending interrupt has this id (pending: {})", ids()),
                    ));
                }
            }
            let mut out = Vec::with_capacity(pending.len());
            for i in pending {
                let found: Vec<usize> = list
                    .iter()
                    .enumerate()
                    .filter(|(_, (id, _))| *id == i.id)
                    .map(|(k, _)| k)
                    .collect();
                match found.as_slice() {
                    [k] => {
                        let (_, d) = list.swap_remove(*k);
                        out.push(d);
                    }
                    [] => return Err(decision_error(Some(&i.id), "missing decision for this interrupt")),
                    _ => return Err(decision_error(Some(&i.id), "more than one decision for this interrupt")),
                }
            }
            Ok(out)
        }
    }
}
