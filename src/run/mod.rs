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

mod compaction;
mod output;
mod resume;

use std::collections::HashSet;

use serde_json::Value;

pub(crate) use compaction::{Compacted, SUMMARIZES};
pub use compaction::{Compaction, DEFAULT_SUMMARY_INSTRUCTIONS, Summarized, SummaryRequest};
pub use output::{DEFAULT_MAX_OUTPUT_RETRIES, FINAL_ANSWER_TOOL};
pub(crate) use output::{OutputRule, final_answer_definition};

use crate::checkpoint::Checkpoint;
use crate::interrupt::{Interrupt, InterruptKind, OnExpire};
use crate::message::{BlockProblem, ContentBlock, Message, Role, ToolResult, ToolUse, block_problem};
use crate::model::ModelError;
use crate::model::{ModelResponse, ToolDefinition};
use crate::tool::{InputRequired, InterruptError, PendingInput};

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
    /// True when an agent-level approval policy sees every call ([`Step::Review`] lists them all).
    pub(crate) reviews_all: bool,
    /// The tokens a run may use, across resumes.
    pub(crate) budget: Option<crate::approval::Budget>,
    /// What decides the agent's approvals, part by part (kept in each checkpoint to tell drift on resume).
    pub(crate) fingerprint: Option<crate::approval::Fingerprint>,
    /// What a resume mid-turn does when the fingerprint changed.
    pub(crate) on_drift: crate::approval::OnDrift,
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
            reviews_all: false,
            budget: None,
            fingerprint: None,
            on_drift: crate::approval::OnDrift::Error,
        }
    }

    /// Records `fingerprint` in every checkpoint of the run, and compares it on resume with the one the checkpoint
    /// holds: a change mid-turn is handled as `on_drift` says ([`Run::drift`] reports it).
    pub fn fingerprint(
        mut self,
        fingerprint: crate::approval::Fingerprint,
        on_drift: crate::approval::OnDrift,
    ) -> Self {
        self.fingerprint = Some(fingerprint);
        self.on_drift = on_drift;
        self
    }

    /// Lists every call of a turn in [`Step::Review`] (an agent-level approval policy sees them all), not only
    /// those of tools marked with [`RunConfig::approval`].
    pub fn review_all(mut self) -> Self {
        self.reviews_all = true;
        self
    }

    /// Bounds the tokens of a run, counted from the usage its checkpoint carries: once usage reaches it, the
    /// next step is [`Step::OverBudget`] instead of a model call.
    pub fn budget(mut self, budget: crate::approval::Budget) -> Self {
        self.budget = Some(budget).filter(|b| !b.is_empty());
        self
    }

    /// Keeps the history within `compaction`'s bounds before each model call (see [`Compaction`]).
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// Runs must end with a structured answer matching the JSON Schema `schema`: the model gives it by
    /// calling [`FINAL_ANSWER_TOOL`] (added to the tools; its input is the answer, or `{ value }` when the
    /// schema is not an object schema) or as JSON text. An answer that does not match is fed back to the
    /// model to correct, up to `max_retries` times; then the run ends in [`AgentError::Output`](crate::AgentError::Output).
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

/// A call of a [`Step::Review`] that waits for approval: its id, when the request expires (ms from now) and
/// how many distinct approvers must approve it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Need {
    /// The call's id.
    pub id: String,
    /// When the request expires, from now.
    pub expires_in_ms: Option<u64>,
    /// Distinct approvers needed (1 or more).
    pub approvers: u32,
}

impl Need {
    /// Call `id` waits for one approver.
    pub fn new(id: impl Into<String>, expires_in_ms: Option<u64>) -> Self {
        Need {
            id: id.into(),
            expires_in_ms,
            approvers: 1,
        }
    }

    /// … for `k` distinct approvers.
    #[must_use]
    pub fn approvers(mut self, k: u32) -> Self {
        self.approvers = k;
        self
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
    /// The history is over the agent's compaction bounds and its oldest steps are to be summarized: send the
    /// request's transcript to the model and feed its text to [`Run::summarized`] (or call [`Run::summary_failed`]).
    Summarize(SummaryRequest),
    /// The model missed the output schema more often than the agent allows: end the run with
    /// [`AgentError::Output`](crate::AgentError::Output) and this problem.
    InvalidOutput(String),
    /// The next step would be a model call, but the run has used `maxIterations` of them.
    OutOfIterations,
    /// The next step would be a model call, but the run's usage has reached this limit of its budget
    /// (`totalTokens`, `inputTokens` or `outputTokens`).
    OverBudget(&'static str),
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
    /// Pause for the input the tool needs; the resume calls it again with the answers.
    Input(InputRequired),
    /// A run inside the call (a subagent) paused: the run pauses on its interrupts; the resume calls the tool again
    /// with the decisions for them.
    Nested(crate::tool::NestedPause),
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
    /// True when the interrupt had expired and its tool's policy denied it (whatever was decided).
    pub expired: bool,
    /// Who decided, when the decision said (`by`).
    pub by: Option<String>,
    /// True for an approval of a call that still waits for more approvers (it stays pending; its
    /// `interrupt.approvals` lists who approved so far).
    pub pending: bool,
}

/// One run of the loop, driven step by step: the state machine described in the crate's docs ("The state
/// machine is public").
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
    /// Set when a summary call failed, until the next model call: the run goes on without one.
    summary_failed: bool,
    /// JSON sizes of the messages, as of the last compaction check: a run only appends messages (and
    /// changes at most the last one), so each check measures only what is new.
    sizes: Vec<usize>,
    /// JSON sizes of the messages after those the text a resumed run was read from covers (see `read_bytes`).
    newer_sizes: Vec<usize>,
    /// What changed in the agent since the resumed checkpoint was written, if anything.
    drift: Option<crate::approval::Drift>,
    /// Interrupts asked again on this resume because their agent changed (they may stay undecided).
    asked_again: Vec<String>,
    /// Set when this resume denied a larger budget: the run ends instead of asking again.
    budget_denied: bool,
    /// For a subagent's run: what the runs that called it impose (their budgets, their policies).
    outer: Option<Box<Outer>>,
    /// The JSON size of the subagents' failed runs kept (`failedSubagents`), measured once each: they never change,
    /// and each may be as large as a whole checkpoint.
    failed_bytes: usize,
    /// The run of the subagent this resume's call goes on with, as the check before anything ran opened it (its
    /// signature verified, its invariants checked): the call takes it instead of reading that run again. Not in the
    /// npm package's variants without subagents (see [`crate::subagent::NESTS`]).
    #[cfg(any(not(feature = "js"), feature = "js-subagents"))]
    opened: Option<Box<crate::agent::Decoded>>,
    /// `(bytes, covered)`: the length of the JSON text the run was resumed from, and how many of its messages
    /// that text covers as they still are (all but the last, which a resume may change) — an upper bound of
    /// their size that spares measuring them until a value nears the limit ([`Run::too_large`]).
    read_bytes: Option<(usize, usize)>,
    /// How many leading messages are as they were when the run began or was last asked
    /// ([`Run::take_unchanged`]): appending keeps them, an edit, a removal or a compaction lowers it.
    unchanged: usize,
    /// What changed in the messages since the run's state was last taken for saving ([`Run::take_saved`]),
    /// so a session's log record holds only what changed.
    saved: Saved,
}

/// What the runs that called a subagent impose on its run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outer {
    /// Their token budgets, each with the usage counted against it outside this run.
    pub(crate) budgets: Vec<(crate::approval::Budget, crate::message::Usage)>,
    /// True when an approval policy of theirs sees every call of this run.
    pub(crate) reviews_all: bool,
    /// The budget of theirs this run reached, and the usage that reached it.
    reached: Option<(crate::approval::Budget, crate::message::Usage)>,
}

impl Outer {
    pub(crate) fn new(budgets: Vec<(crate::approval::Budget, crate::message::Usage)>, reviews_all: bool) -> Self {
        Outer {
            budgets,
            reviews_all,
            reached: None,
        }
    }
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
    /// it with [`AgentError::Argument`](crate::AgentError::Argument)).
    pub fn start(config: &'c RunConfig, message: &str, run_id: impl Into<String>, now: u64) -> Self {
        let mut state = Checkpoint::new(run_id, now);
        state.messages.push(Message::user(message));
        state.fingerprint.clone_from(&config.fingerprint);
        Run {
            state,
            config,
            applied: Vec::new(),
            changed_at_done: false,
            compacted: None,
            summary_failed: false,
            sizes: Vec::new(),
            newer_sizes: Vec::new(),
            drift: None,
            asked_again: Vec::new(),
            budget_denied: false,
            outer: None,
            failed_bytes: 0,
            #[cfg(any(not(feature = "js"), feature = "js-subagents"))]
            opened: None,
            read_bytes: None,
            unchanged: 0,
            saved: Saved::default(),
        }
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
    pub(super) fn edited(&mut self, index: usize) {
        if self.read_bytes.is_some_and(|(_, covered)| index < covered) {
            self.read_bytes = None;
        }
        self.unchanged = self.unchanged.min(index);
        self.saved.unchanged = self.saved.unchanged.min(index);
    }

    /// The next model request shares no messages with the previous one (a summary call was made between).
    #[cfg_attr(all(feature = "js", not(feature = "js-summaries")), allow(dead_code))]
    pub(crate) fn forget_unchanged(&mut self) {
        self.unchanged = 0;
    }

    /// Notes that the messages `start..end` went (compaction).
    pub(super) fn dropped(&mut self, start: usize, end: usize) {
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
                .filter(|c| {
                    self.config
                        .tool(&c.name)
                        .is_some_and(|(_, p)| p.may_need_approval || self.reviews_all())
                })
                .filter(|c| !self.state.tool_results.iter().any(|r| r.tool_use_id == c.id))
                .filter(|c| !self.state.approved.contains(&c.id))
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

    pub(super) fn model_or_limit(&mut self) -> Step {
        if self.state.iterations >= self.config.max_iterations {
            return Step::OutOfIterations;
        }
        if let Some(budget) = self.budget() {
            if let Some(limit) = budget.spent(self.state.usage) {
                if budget.on_exceeded == crate::approval::OnExceeded::Ask && !self.budget_denied {
                    self.ask_budget(budget, limit);
                    return Step::Paused;
                }
                return Step::OverBudget(limit);
            }
        }
        if let Some(outer) = self.outer.as_deref_mut().filter(|_| crate::subagent::NESTS) {
            let usage = self.state.usage;
            let reached = outer.budgets.iter().find_map(|(b, base)| {
                let mut used = *base;
                used.add(usage);
                b.spent(used).map(|limit| (*b, used, limit))
            });
            if let Some((budget, used, limit)) = reached {
                outer.reached = Some((budget, used));
                return Step::OverBudget(limit);
            }
        }
        if let Some(rule) = self.config.compaction {
            if !rule.summarize {
                self.compact(rule);
            } else if let Some(step) = self.summary_step(rule) {
                return step;
            }
        }
        Step::CallModel
    }

    /// The calls that run together with `first` (what [`Step::CallTool`] gave): it and the open calls right after it
    /// that wait for a result and would run as they are (not refused, not the structured answer), up to the first
    /// that would not or whose tool `together` keeps apart. Their results are taken in call order ([`Run::tool_finished`]).
    pub(crate) fn runs_with(&self, first: ToolUse, together: impl Fn(&str) -> bool) -> Vec<ToolUse> {
        let calls = self.state.open_calls().unwrap_or_default();
        let after = calls
            .iter()
            .position(|c| c.id == first.id)
            .map_or(calls.len(), |k| k + 1);
        if !together(&first.name) {
            return vec![first];
        }
        let mut batch = vec![first];
        let answered = |c: &ToolUse| self.state.tool_results.iter().any(|r| r.tool_use_id == c.id);
        let final_answer = |c: &ToolUse| c.name == FINAL_ANSWER_TOOL && self.config.output.is_some();
        for &c in calls.iter().skip(after).filter(|c| !answered(c)) {
            if final_answer(c) || !together(&c.name) || self.refusal(c).is_some() {
                break;
            }
            batch.push(c.clone());
        }
        batch
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

    /// Takes in a model call that failed: the tokens of an answer the model stopped abnormally
    /// ([`ModelError::Stopped`] with its usage, as a provider reports one it will not hand over) were spent and
    /// billed all the same, so the run counts them. Other failures change nothing.
    pub fn model_failed(&mut self, error: &ModelError) {
        if let ModelError::Stopped { usage: Some(usage), .. } = error {
            self.state.usage.add(*usage);
        }
    }

    /// Records the model's turn. A response that would make the next request invalid is refused whole. The
    /// call's usage is counted in every case: the run's usage is what every call made spent.
    ///
    /// # Errors
    /// [`ModelError::Stopped`] for an answer cut, refused or filtered, [`ModelError::InvalidResponse`] naming the
    /// offending block; the run is unchanged but for its usage.
    pub fn model_replied(&mut self, mut response: ModelResponse, now: u64) -> Result<(), ModelError> {
        self.summary_failed = false;
        // Every call's tokens were spent and billed, also those of an answer that is not kept.
        if let Some(usage) = response.usage {
            self.state.usage.add(usage);
        }
        if let Some(reason) = response
            .stop_reason
            .clone()
            .filter(crate::model::StopReason::is_unusable)
        {
            let text = Message::assistant(response.content).text();
            return Err(ModelError::Stopped {
                reason,
                text,
                usage: response.usage,
            });
        }
        // Providers refuse empty text blocks in a history.
        // A signed one stays: the signature goes back on that part (Gemini signs an empty final part).
        response
            .content
            .retain(|b| !matches!(b, ContentBlock::Text { text, signature: None } if text.is_empty()));
        self.check_response(&response.content)?;
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
        self.state.messages.push(message);
        self.touch(now);
        Ok(())
    }

    /// The blocks of a model's turn, as the next request needs them: where a turn allows them, tool call ids
    /// new to the conversation, inputs within the depth limit.
    fn check_response(&self, content: &[ContentBlock]) -> Result<(), ModelError> {
        if let Some((j, problem)) = block_problem(Role::Assistant, content) {
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
        for (j, b) in content.iter().enumerate() {
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
        Ok(())
    }

    /// Reports which calls of a [`Step::Review`] need approval: `(call id, expires in ms)`. With any, the
    /// run pauses on them (in call order) before a call of the turn runs. Ids not in the open turn are
    /// ignored.
    pub fn reviewed(&mut self, needed: Vec<(String, Option<u64>)>, now: u64) {
        self.reviewed_with(
            needed
                .into_iter()
                .map(|(id, expires_in_ms)| Need::new(id, expires_in_ms))
                .collect(),
            now,
        );
    }

    /// [`Run::reviewed`] with the number of distinct approvers each call waits for.
    pub fn reviewed_with(&mut self, needed: Vec<Need>, now: u64) {
        let calls = self.state.open_calls().unwrap_or_default();
        let interrupts: Vec<Interrupt> = calls
            .iter()
            .filter_map(|c| {
                let need = needed.iter().find(|n| n.id == c.id)?;
                let approvers = need.approvers.clamp(1, crate::approval::MAX_APPROVERS);
                Some(Interrupt {
                    expires_at: need.expires_in_ms.map(|ms| now.saturating_add(ms)),
                    approvers: (approvers > 1).then_some(approvers),
                    ..Interrupt::new(InterruptKind::Approval, c.id.clone(), c.name.clone(), c.input.clone())
                })
            })
            .collect();
        self.state.reviewed = true;
        self.state.set_interrupts(interrupts);
        self.touch(now);
    }

    /// What changed in the agent since the resumed checkpoint was written (see [`RunConfig::fingerprint`]).
    pub fn drift(&self) -> Option<&crate::approval::Drift> {
        self.drift.as_ref()
    }

    /// True when every call of a turn is reviewed: an approval policy (the agent's, or one over a subagent) sees it.
    fn reviews_all(&self) -> bool {
        self.config.reviews_all || self.outer.as_deref().is_some_and(|o| o.reviews_all)
    }

    /// A subagent's run: bounded by the budgets of the runs that called it, reviewed by their policies.
    /// Keeps the subagent's run that the check before anything ran opened (see [`Run::take_opened`]).
    pub(crate) fn set_opened(&mut self, opened: Option<crate::agent::Decoded>) {
        #[cfg(any(not(feature = "js"), feature = "js-subagents"))]
        {
            self.opened = opened.map(Box::new);
        }
        #[cfg(not(any(not(feature = "js"), feature = "js-subagents")))]
        drop(opened);
    }

    /// The subagent's run opened for call `id`, once.
    pub(crate) fn take_opened(&mut self, id: &str) -> Option<crate::agent::Decoded> {
        #[cfg(any(not(feature = "js"), feature = "js-subagents"))]
        {
            let for_it = self
                .state
                .pending_input
                .as_ref()
                .is_some_and(|p| p.nested && p.call == id);
            if for_it { self.opened.take().map(|d| *d) } else { None }
        }
        #[cfg(not(any(not(feature = "js"), feature = "js-subagents")))]
        {
            let _ = id;
            None
        }
    }

    pub(crate) fn set_outer(&mut self, outer: Outer) {
        self.outer = Some(Box::new(outer));
    }

    /// The budgets a subagent called by this run is bounded by: those over this run and its own, each with the usage
    /// counted against it so far.
    pub(crate) fn budgets_within(&self) -> Vec<(crate::approval::Budget, crate::message::Usage)> {
        let usage = self.state.usage;
        let mut all: Vec<_> = self
            .outer
            .as_deref()
            .map(|o| {
                o.budgets
                    .iter()
                    .map(|(b, base)| {
                        let mut used = *base;
                        used.add(usage);
                        (*b, used)
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(own) = self.budget() {
            all.push((own, usage));
        }
        all
    }

    /// Counts tokens spent inside a tool call (a subagent's model calls) in the run's usage.
    pub(crate) fn spent(&mut self, usage: crate::message::Usage) {
        self.state.usage.add(usage);
    }

    /// The budget a [`Step::OverBudget`] reached and the usage that reached it: the run's own, or one of the runs
    /// that called this subagent.
    pub(crate) fn over_budget(&self) -> (crate::approval::Budget, crate::message::Usage) {
        match self.outer.as_deref().and_then(|o| o.reached) {
            Some(reached) => reached,
            None => (self.budget().unwrap_or_default(), self.state.usage),
        }
    }

    /// The run's token budget: the agent's, with what a decision raised it to (kept in the checkpoint).
    pub fn budget(&self) -> Option<crate::approval::Budget> {
        let b = self.config.budget?;
        Some(self.state.budget.map_or(b, |raise| b.raised(&raise)))
    }

    /// Pauses between turns with the `budget` interrupt: the usage, the limit reached and the budget, for a decision
    /// that raises it.
    fn ask_budget(&mut self, budget: crate::approval::Budget, limit: &str) {
        let used = self.state.usage;
        let question = format!(
            "The run has used {} input and {} output tokens, reaching its {limit} budget. Go on with a larger budget?",
            used.input_tokens, used.output_tokens
        );
        let mut input = serde_json::Map::new();
        input.insert("limit".into(), limit.into());
        input.insert("budget".into(), budget.to_value());
        input.insert(
            "usage".into(),
            serde_json::json!({ "inputTokens": used.input_tokens, "outputTokens": used.output_tokens }),
        );
        self.state.set_interrupts(vec![Interrupt {
            question: Some(question),
            ..Interrupt::new(
                InterruptKind::Budget,
                crate::interrupt::BUDGET_INTERRUPT,
                "",
                Value::Object(input),
            )
        }]);
    }

    /// True when a human approved calls of `tool` with `remember: "tool"` earlier in this run.
    pub fn remembers(&self, tool: &str) -> bool {
        self.state.remembered.iter().any(|t| t == tool)
    }

    /// Approves the call `id` of a [`Step::Review`] without asking, by a remembered approval of its tool
    /// (before [`Run::reviewed`]); false when it is not a call of the open turn or its tool is not remembered.
    pub fn approve_remembered(&mut self, id: &str) -> bool {
        let Some(call) = self.open_call(id) else { return false };
        if !self.remembers(&call.name) || self.state.approved.iter().any(|a| a == id) {
            return false;
        }
        self.state.approved.push(id.to_owned());
        true
    }

    /// Records how the call `id` (the one [`Step::CallTool`] named) ended.
    pub fn tool_finished(&mut self, id: &str, outcome: ToolOutcome, now: u64) {
        self.touch(now);
        // The answers it was resumed with are used up, whatever it did with them.
        if self.state.pending_input.as_ref().is_some_and(|p| p.call == id) {
            self.state.pending_input = None;
        }
        let (content, is_error) = match self.admit(outcome) {
            ToolOutcome::Output(text) => (text, false),
            ToolOutcome::Error(message) => (message, true),
            ToolOutcome::Interrupt(ask) => return self.ask(id, ask, now),
            ToolOutcome::Input(input) => return self.ask_input(id, input),
            ToolOutcome::Nested(pause) if crate::subagent::NESTS => return self.ask_nested(id, pause),
            ToolOutcome::Nested(_) => ("this variant of the package runs no subagent".to_owned(), true),
        };
        self.state.tool_results.push(ToolResult {
            tool_use_id: id.to_owned(),
            content,
            is_error,
        });
    }

    /// Keeps subagents' failed runs (those of the call that just ran, and those its subagent kept), or says why
    /// one could not be kept (the checkpoint would pass its limits).
    pub(crate) fn keep_failed(&mut self, failed: Vec<crate::subagent::FailedSubagent>) -> Option<String> {
        if !crate::subagent::NESTS {
            return None;
        }
        let mut refused = None;
        for f in failed {
            let depth = 3 + crate::limits::value_depth(&f.checkpoint);
            let max = self.config.limits.max_depth;
            let why = if depth > max {
                Some(format!("it nests {depth} deep; at most {max} (limits.maxDepth)"))
            } else {
                self.too_large(crate::json::len(&f), 0)
            };
            match why {
                None => {
                    self.failed_bytes = self.failed_bytes.saturating_add(crate::json::len(&f));
                    self.state.failed_subagents.push(f);
                }
                Some(why) => refused = Some(format!("the run of {} ({}) was not kept: {why}", f.tool_name, f.id)),
            }
        }
        refused
    }

    /// `outcome`, or the error result the model reads instead when the checkpoint could not hold it.
    fn admit(&mut self, outcome: ToolOutcome) -> ToolOutcome {
        // A result the checkpoint could not hold is refused where it enters: the model reads why, and what
        // is saved can always be read back.
        let size = match &outcome {
            ToolOutcome::Output(text) | ToolOutcome::Error(text) => crate::json::len(text.as_str()),
            ToolOutcome::Interrupt(ask) => {
                crate::json::len(&ask.question) + ask.data.as_ref().map_or(0, crate::json::len)
            }
            ToolOutcome::Input(input) => {
                crate::json::len(&input.state)
                    + input
                        .requests
                        .iter()
                        .map(|r| crate::json::len(&r.message) + crate::json::len(&r.requested_schema))
                        .sum::<usize>()
            }
            ToolOutcome::Nested(pause) => {
                crate::json::len(&pause.state) + pause.interrupts.iter().map(crate::json::len).sum::<usize>()
            }
        };
        let what = match &outcome {
            ToolOutcome::Interrupt(_) => "question",
            ToolOutcome::Input(_) => "request for input",
            ToolOutcome::Nested(_) => "paused run",
            _ => "result",
        };
        if let Some(why) = self.too_large(size, 0) {
            return ToolOutcome::Error(format!(
                "the tool's {what} was not kept: {why}; return less (e.g. a summary, or a reference to where the data is)"
            ));
        }
        let max = self.config.limits.max_depth;
        let depth = match &outcome {
            ToolOutcome::Interrupt(ask) => ask.data.as_ref().map_or(0, crate::limits::value_depth),
            ToolOutcome::Input(input) => input
                .requests
                .iter()
                .map(|r| crate::limits::value_depth(&r.requested_schema))
                .chain([crate::limits::value_depth(&input.state)])
                .max()
                .unwrap_or(0),
            ToolOutcome::Nested(pause) => crate::limits::value_depth(&pause.state),
            _ => 0,
        };
        if depth > max {
            return ToolOutcome::Error(format!(
                "the tool's {what} nests {depth} deep; at most {max} (limits.maxDepth)"
            ));
        }
        if let ToolOutcome::Input(input) = &outcome {
            if let Some(problem) = input_problem(input) {
                return ToolOutcome::Error(format!("the tool's request for input was refused: {problem}"));
            }
        }
        if let ToolOutcome::Nested(pause) = &outcome {
            if pause.interrupts.is_empty() {
                return ToolOutcome::Error("the tool paused a run that waits for nothing".into());
            }
        }
        outcome
    }

    /// The call `id` asked the human a question: the run pauses on it.
    fn ask(&mut self, id: &str, ask: InterruptError, now: u64) {
        let Some(call) = self.open_call(id) else { return };
        // The approval was used up: the call ran, and its answer will be the human's.
        self.state.approved.retain(|a| *a != call.id);
        self.state.set_interrupts(vec![Interrupt {
            question: Some(ask.question),
            options: ask.options,
            data: ask.data.map(|mut d| {
                crate::limits::normalize_numbers(&mut d);
                d
            }),
            expires_at: ask.expires_in_ms.map(|ms| now.saturating_add(ms)),
            ..Interrupt::new(InterruptKind::Question, call.id, call.name, call.input)
        }]);
    }

    /// The call `id` needs input: the run pauses with an elicitation per request, and keeps the tool's state
    /// for the call it makes again once they are answered.
    fn ask_input(&mut self, id: &str, input: InputRequired) {
        let Some(call) = self.open_call(id) else { return };
        let interrupts = input
            .requests
            .into_iter()
            .map(|r| Interrupt {
                message: Some(r.message),
                requested_schema: Some(r.requested_schema),
                ..Interrupt::new(
                    InterruptKind::Elicitation,
                    format!("{}/{}", call.id, r.key),
                    call.name.clone(),
                    call.input.clone(),
                )
            })
            .collect();
        let mut state = input.state;
        crate::limits::normalize_numbers(&mut state);
        self.state.pending_input = Some(PendingInput {
            call: call.id,
            state,
            responses: serde_json::Map::new(),
            nested: false,
        });
        self.state.set_interrupts(interrupts);
    }

    /// The call `id` paused a run of its own (a subagent): the run pauses on that run's interrupts, each named
    /// `<id>/<its id>` with the path of calls to it, and keeps its state for the call made again once they are
    /// decided.
    fn ask_nested(&mut self, id: &str, pause: crate::tool::NestedPause) {
        let Some(call) = self.open_call(id) else { return };
        let interrupts = pause
            .interrupts
            .into_iter()
            .map(|mut i| {
                i.id = format!("{}/{}", call.id, i.id);
                i.path.insert(0, call.id.clone());
                i
            })
            .collect();
        let mut state = pause.state;
        crate::limits::normalize_numbers(&mut state);
        self.state.pending_input = Some(PendingInput {
            call: call.id,
            state,
            responses: serde_json::Map::new(),
            nested: true,
        });
        self.state.set_interrupts(interrupts);
    }

    /// The call `id`, resumed with answers to its requests for input, could not reach what it stands for: the
    /// run is paused on those requests again (as the resume found it), so a caller can answer again — or
    /// deny, ending the call.
    pub(crate) fn reopen_input(&mut self, id: &str) {
        let again: Vec<Interrupt> = self
            .applied
            .iter()
            .filter(|a| a.interrupt.kind == InterruptKind::Elicitation)
            .map(|a| a.interrupt.clone())
            .collect();
        match self.state.pending_input.as_mut() {
            Some(p) if p.call == id && !again.is_empty() => {
                p.responses.clear();
                self.state.set_interrupts(again);
            }
            _ => {}
        }
    }

    fn open_call(&self, id: &str) -> Option<ToolUse> {
        self.state
            .open_calls()
            .and_then(|calls| calls.into_iter().find(|c| c.id == id).cloned())
    }
}

/// What is wrong with a tool's request for input, if anything: none, or two with one key.
fn input_problem(input: &InputRequired) -> Option<String> {
    if input.requests.is_empty() {
        return Some("it asks for nothing".to_owned());
    }
    let mut keys = HashSet::new();
    for r in &input.requests {
        if !keys.insert(r.key.as_str()) {
            return Some(format!("the key {:?} is asked twice", r.key));
        }
        if !r.requested_schema.is_object() {
            return Some(format!("the request {:?} has no requestedSchema object", r.key));
        }
    }
    None
}
