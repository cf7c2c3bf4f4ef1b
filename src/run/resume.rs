//! Resuming: the human's answer or decisions applied to a paused run (every one checked before anything
//! changes), a new user turn to a finished one, and the decisions' JSON read against what the run waits for.

use serde_json::Value;

use super::{Applied, Run, RunConfig, Saved};
use crate::checkpoint::{Checkpoint, CheckpointError, lost_result};
use crate::error::AgentError;
use crate::interrupt::{Decision, Interrupt, InterruptKind, OnExpire, Resume};
use crate::message::{Content, ContentBlock, Message, Role, ToolResult};

impl<'c> Run<'c> {
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
        Self::resume_valid(config, state, input, now, None)
    }

    /// [`Run::resume`] of a checkpoint known to be valid: one [`Checkpoint::from_json`] has just returned.
    /// `text_bytes`: the length of the JSON text it was read from, when it was.
    pub(crate) fn resume_valid(
        config: &'c RunConfig,
        mut state: Checkpoint,
        input: Resume,
        now: u64,
        text_bytes: Option<usize>,
    ) -> Result<Self, AgentError> {
        // The agent changed since the checkpoint was written: in the middle of a turn, as the agent says.
        let drift = match (&config.fingerprint, &state.fingerprint) {
            (Some(now), Some(then)) => now.drift_from(then),
            _ => None,
        };
        let mut input = input;
        let mut asked_again = Vec::new();
        if let Some(d) = drift.as_ref().filter(|_| state.open_calls().is_some()) {
            match config.on_drift {
                crate::approval::OnDrift::Error => {
                    return Err(AgentError::ConfigDrift {
                        drift: d.clone(),
                        checkpoint: Box::new(state),
                    });
                }
                crate::approval::OnDrift::Reapprove => {
                    (input, asked_again) = set_aside(&mut state, d, input)?;
                }
                crate::approval::OnDrift::Continue => {}
            }
        }
        // What the run writes next is a new checkpoint: the old signature does not cover it.
        state.signature = None;
        // Each prompt or resume gets the whole bound of output corrections.
        state.output_attempts = 0;
        if state.run_id.is_none() {
            state.run_id = Some(crate::platform::new_run_id());
        }
        let unchanged = state.messages.len();
        let state_failed_bytes = state.failed_subagents.iter().map(crate::json::len).sum();
        let mut run = Run {
            state,
            config,
            applied: Vec::new(),
            changed_at_done: false,
            compacted: None,
            summary_failed: false,
            sizes: Vec::new(),
            newer_sizes: Vec::new(),
            read_bytes: text_bytes.map(|bytes| (bytes, unchanged.saturating_sub(1))),
            unchanged,
            saved: Saved {
                unchanged,
                dropped: None,
            },
            drift: None,
            asked_again: Vec::new(),
            budget_denied: false,
            outer: None,
            failed_bytes: state_failed_bytes,
            #[cfg(any(not(feature = "js"), feature = "js-subagents"))]
            opened: None,
        };
        if run.state.interrupts.is_empty() {
            run.continue_with(input)?;
        } else {
            run.asked_again = asked_again;
            run.answer(input, now)?;
        }
        // The checkpoints it writes from now on are the current agent's (an error above hands back the one it read).
        run.state.fingerprint.clone_from(&config.fingerprint);
        run.drift = drift;
        Ok(run)
    }

    /// Nothing is pending: `input` is a new user turn (`""` continues as is).
    pub(super) fn continue_with(&mut self, input: Resume) -> Result<(), AgentError> {
        let text = match input {
            Resume::Answer(text) => text,
            Resume::Nothing => String::new(),
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
    pub(super) fn push_user_text(&mut self, text: String) {
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
                    Content::Text(t) => vec![ContentBlock::text(t)],
                    Content::Blocks(b) => b,
                };
                let mut blocks = earlier;
                blocks.push(ContentBlock::text(text));
                last.content = Content::Blocks(blocks);
            }
            _ => self.state.messages.push(Message::user(text)),
        }
    }

    /// Applies one decision per pending interrupt, after checking all of them.
    pub(super) fn answer(&mut self, input: Resume, now: u64) -> Result<(), AgentError> {
        let plan = match self.plan(input, now) {
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
        if let Some(q) = pending
            .iter()
            .find(|i| i.kind == InterruptKind::Question && !i.is_nested())
        {
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
        let mut still = Vec::new();
        for (mut interrupt, decision) in pending.into_iter().zip(plan) {
            // Undecided (an interrupt of a resume that waits for several approvers): it stays as it was.
            let Some(decision) = decision else {
                // A subagent's undecided interrupt: its run keeps it, and pauses on it again.
                if !(crate::subagent::NESTS && interrupt.is_nested()) {
                    still.push(interrupt);
                }
                continue;
            };
            if crate::subagent::NESTS && interrupt.is_nested() {
                self.forward(&interrupt, &decision);
                self.applied.push(Applied {
                    approved: matches!(decision, Decision::Approve { .. }),
                    interrupt,
                    modified_args: None,
                    result: None,
                    expired: false,
                    by: decision.approver().map(str::to_owned),
                    pending: false,
                });
                continue;
            }
            let expired = interrupt.expires_at.is_some_and(|at| now > at);
            // One more approver of a call that waits for several: it runs once enough distinct ones approved.
            if let (Some(k), Decision::Approve { by: Some(by), .. }) = (interrupt.approvers, &decision) {
                if !interrupt.approvals.iter().any(|m| m.by == *by) {
                    interrupt
                        .approvals
                        .push(crate::approval::ApprovalMark::new(by.clone(), now));
                }
                if interrupt.approvals.len() < k as usize {
                    self.applied.push(Applied {
                        interrupt: interrupt.clone(),
                        approved: false,
                        modified_args: None,
                        result: None,
                        expired: false,
                        by: Some(by.clone()),
                        pending: true,
                    });
                    still.push(interrupt);
                    continue;
                }
            }
            let by = decision.approver().map(str::to_owned);
            let mut applied = self.apply(interrupt, decision);
            applied.expired = expired;
            applied.by = by;
            self.applied.push(applied);
        }
        if !still.is_empty() {
            self.state.set_interrupts(still);
        }
        self.touch(now);
        Ok(())
    }

    /// A variant without subagents cannot go on with a subagent's run: refused before anything changes.
    fn nests_or_refuses(&self) -> Result<(), AgentError> {
        match self.state.interrupts.iter().find(|i| i.is_nested()) {
            Some(i) if !crate::subagent::NESTS => Err(decision_error(
                Some(&i.id),
                "the run waits for a subagent (agentTool), and the loaded WebAssembly has no subagents: resume it with the agent whose agentTool() made it (imported from 'resumable-agent', not 'resumable-agent/core')",
            )),
            _ => Ok(()),
        }
    }

    /// The decision for each pending interrupt, in order, each checked (an expired one is an
    /// `InterruptExpired` without its checkpoint, which the caller adds); `None` for one left undecided.
    fn plan(&self, input: Resume, now: u64) -> Result<Vec<Option<Decision>>, AgentError> {
        self.nests_or_refuses()?;
        let decisions = match_decisions(&self.state.interrupts, input, &self.asked_again)?;
        self.state
            .interrupts
            .iter()
            .zip(decisions)
            .map(|(interrupt, decision)| {
                let Some(decision) = decision else { return Ok(None) };
                match self.check_decision(interrupt, decision, now) {
                    Ok(d) => Ok(Some(d)),
                    Err(Check::Invalid(e)) => Err(e),
                    Err(Check::Expired) => Err(AgentError::InterruptExpired {
                        id: interrupt.id.clone(),
                        expires_at: interrupt.expires_at.unwrap_or_default(),
                        checkpoint: Box::new(Checkpoint::new("", 0)),
                    }),
                }
            })
            .collect()
    }

    /// Applies a checked decision to its interrupt: an approval (with the input it may replace), or a result
    /// (a denial, or the human's answer).
    fn apply(&mut self, interrupt: Interrupt, decision: Decision) -> Applied {
        let result = match decision {
            Decision::Approve {
                budget: Some(raise), ..
            } if interrupt.kind == InterruptKind::Budget => {
                let kept = self.state.budget.unwrap_or_default().raised(&raise);
                self.state.budget = Some(kept);
                return Applied {
                    interrupt,
                    approved: true,
                    modified_args: None,
                    result: None,
                    expired: false,
                    by: None,
                    pending: false,
                };
            }
            Decision::Deny { .. } if interrupt.kind == InterruptKind::Budget => {
                self.budget_denied = true;
                return Applied {
                    interrupt,
                    approved: false,
                    modified_args: None,
                    result: None,
                    expired: false,
                    by: None,
                    pending: false,
                };
            }
            Decision::Approve {
                modified_args,
                remember,
                ..
            } => {
                if let Some(input) = &modified_args {
                    self.replace_input(&interrupt.id, input.clone());
                }
                self.state.approved.push(interrupt.id.clone());
                // Remembered only where one approver suffices: never a way around several.
                let remembers = remember.is_some() && interrupt.approvers.is_none();
                if remembers && !self.remembers(&interrupt.tool_name) {
                    self.state.remembered.push(interrupt.tool_name.clone());
                }
                return Applied {
                    interrupt,
                    approved: true,
                    modified_args,
                    result: None,
                    expired: false,
                    by: None,
                    pending: false,
                };
            }
            Decision::Deny { message, by } => ToolResult {
                tool_use_id: interrupt.id.clone(),
                content: denial(&interrupt, message.as_deref(), by.as_deref()),
                is_error: true,
            },
            Decision::Answer { text } => ToolResult {
                tool_use_id: interrupt.id.clone(),
                content: text,
                is_error: false,
            },
            Decision::Accept { .. } | Decision::Decline | Decision::Cancel => {
                self.give_input(&interrupt, decision);
                return Applied {
                    interrupt,
                    approved: false,
                    modified_args: None,
                    result: None,
                    expired: false,
                    by: None,
                    pending: false,
                };
            }
        };
        // A denied elicitation ends its call: the model reads that the user declined, and the tool is not
        // called again (one result, however many of its requests were denied).
        let result = match self.state.pending_input.take() {
            Some(p) if interrupt.kind == InterruptKind::Elicitation => {
                match self.state.tool_results.iter().find(|r| r.tool_use_id == p.call) {
                    Some(earlier) => {
                        return Applied {
                            interrupt,
                            approved: false,
                            modified_args: None,
                            result: Some(earlier.clone()),
                            expired: false,
                            by: None,
                            pending: false,
                        };
                    }
                    None => ToolResult {
                        tool_use_id: p.call,
                        ..result
                    },
                }
            }
            other => {
                self.state.pending_input = other;
                result
            }
        };
        self.state.tool_results.push(result.clone());
        Applied {
            interrupt,
            approved: false,
            modified_args: None,
            result: Some(result),
            expired: false,
            by: None,
            pending: false,
        }
    }

    /// The decision to apply for `interrupt`: checked against its kind and the tool's schema, and replaced
    /// by a denial when it expired under a `deny` policy.
    fn check_decision(&self, interrupt: &Interrupt, decision: Decision, now: u64) -> Result<Decision, Check> {
        // A subagent's interrupt is about its tools, its budget and its expiry rules: its run checks the decision
        // (the agent's resume asks it before anything runs, `Tool::check_resume`); here only its shape.
        let nested = crate::subagent::NESTS && interrupt.is_nested();
        let tool = if nested {
            None
        } else {
            self.config.tool(&interrupt.tool_name)
        };
        if !nested && interrupt.expires_at.is_some_and(|at| now > at) {
            return match tool.map_or(OnExpire::Error, |(_, p)| p.on_expire) {
                OnExpire::Deny => Ok(Decision::Deny {
                    by: None,
                    message: Some(format!(
                        "the {} expired before anyone answered it",
                        match interrupt.kind {
                            InterruptKind::Approval => "approval request",
                            InterruptKind::Question => "question",
                            InterruptKind::Elicitation => "request for input",
                            InterruptKind::Budget => "budget request",
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
                | (InterruptKind::Budget, Decision::Approve { .. } | Decision::Deny { .. })
                | (
                    InterruptKind::Elicitation,
                    Decision::Accept { .. } | Decision::Decline | Decision::Cancel | Decision::Deny { .. }
                )
        );
        if !fits {
            let expected = match interrupt.kind {
                InterruptKind::Approval => "\"approve\" or \"deny\" for an approval request",
                InterruptKind::Question => "\"answer\" or \"deny\" for a question",
                InterruptKind::Budget => "\"approve\" (with a larger budget) or \"deny\" for a budget request",
                InterruptKind::Elicitation => {
                    "\"accept\" (with content), \"decline\" or \"cancel\" for an elicitation (or \"deny\" to end the call)"
                }
            };
            return Err(Check::Invalid(decision_error(
                Some(&interrupt.id),
                format!("expected {expected}, got \"{}\"", decision.type_name()),
            )));
        }
        if !nested {
            if let Err(problem) = self.check_budget(interrupt, &decision) {
                return Err(Check::Invalid(decision_error(Some(&interrupt.id), problem)));
            }
        }
        if let Some(by) = decision.approver() {
            if by.is_empty() || by.chars().count() > 200 {
                return Err(Check::Invalid(decision_error(
                    Some(&interrupt.id),
                    "by: expected the approver's name (a non-empty string of at most 200 characters)",
                )));
            }
        }
        if let (Some(k), Decision::Approve { modified_args, by, .. }) = (interrupt.approvers, &decision) {
            if by.is_none() {
                return Err(Check::Invalid(decision_error(
                    Some(&interrupt.id),
                    format!(
                        "this call waits for {k} distinct approvers: give by (the approver's name, from your own login) with each approval"
                    ),
                )));
            }
            if modified_args.is_some() {
                return Err(Check::Invalid(decision_error(
                    Some(&interrupt.id),
                    format!(
                        "modifiedArgs: this call waits for {k} approvers, who approve the input as the model wrote it (deny it instead)"
                    ),
                )));
            }
        }
        if let Decision::Accept { content } = &decision {
            let schema = interrupt.requested_schema.as_ref().unwrap_or(&Value::Null);
            crate::schema::check_elicited(schema, content.as_ref(), self.config.limits.max_depth)
                .map_err(|p| Check::Invalid(decision_error(Some(&interrupt.id), p)))?;
        }
        if let (
            Decision::Approve {
                modified_args: Some(input),
                ..
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

    /// A budget interrupt is approved with a budget the run's usage has not reached (else it would ask again at
    /// once), and only it takes one; nor does it take `modifiedArgs` or `remember`.
    fn check_budget(&self, interrupt: &Interrupt, decision: &Decision) -> Result<(), String> {
        let Decision::Approve {
            modified_args,
            remember,
            budget,
            ..
        } = decision
        else {
            return Ok(());
        };
        if interrupt.kind != InterruptKind::Budget {
            return match budget {
                Some(_) => Err("budget: only a budget request takes one".into()),
                None => Ok(()),
            };
        }
        if modified_args.is_some() || remember.is_some() {
            return Err("a budget request is approved with { type: 'approve', budget } only".into());
        }
        let Some(raise) = budget.filter(|b| !b.is_empty()) else {
            return Err("budget: missing; approve a budget request with a larger budget: { type: 'approve', budget: { totalTokens } }".into());
        };
        let now = self.budget().unwrap_or_default().raised(&raise);
        match now.spent(self.state.usage) {
            Some(limit) => Err(format!(
                "budget: the run has used {} input and {} output tokens, which still reaches the {limit} given; give more",
                self.state.usage.input_tokens, self.state.usage.output_tokens
            )),
            None => Ok(()),
        }
    }

    /// Records the decision for a subagent's interrupt, by its id in the subagent's run, for the call that runs
    /// it, which runs again and resumes it with them.
    fn forward(&mut self, interrupt: &Interrupt, decision: &Decision) {
        let Some(pending) = self.state.pending_input.as_mut().filter(|p| p.nested) else {
            return;
        };
        let key = pending.key_of(&interrupt.id).to_owned();
        // As the package writes a decision (its serializer, read back as a value).
        let Ok(mut value) = crate::json::to_string(decision).and_then(|t| serde_json::from_str(&t)) else {
            return;
        };
        crate::limits::normalize_numbers(&mut value);
        pending.responses.insert(key, value);
    }

    /// Records an elicitation's answer (MCP's `ElicitResult`) for the call that asked, which runs again.
    fn give_input(&mut self, interrupt: &Interrupt, decision: Decision) {
        let Some(pending) = self.state.pending_input.as_mut() else {
            return;
        };
        let key = pending.key_of(&interrupt.id).to_owned();
        let mut answer = serde_json::Map::new();
        answer.insert("action".into(), decision.type_name().into());
        if let Decision::Accept {
            content: Some(mut content),
        } = decision
        {
            crate::limits::normalize_numbers(&mut content);
            answer.insert("content".into(), content);
        }
        pending.responses.insert(key, Value::Object(answer));
    }

    pub(super) fn replace_input(&mut self, id: &str, mut input: Value) {
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

/// [`OnDrift::Reapprove`](crate::OnDrift): the pending approvals of the tools `drift` touches are asked again — fresh
/// (no approvals yet), the decisions sent for them set aside — and so are approved calls of those tools that did not
/// run yet. The input, by id, without those decisions; the ids asked again.
fn set_aside(
    state: &mut Checkpoint,
    drift: &crate::approval::Drift,
    input: Resume,
) -> Result<(Resume, Vec<String>), AgentError> {
    let mut again: Vec<String> = state
        .interrupts
        .iter()
        .filter(|i| i.kind == InterruptKind::Approval && !i.is_nested() && drift.touches(&i.tool_name))
        .map(|i| i.id.clone())
        .collect();
    let calls = state.open_calls().unwrap_or_default();
    let unrun: Vec<crate::message::ToolUse> = calls
        .into_iter()
        .filter(|c| state.approved.contains(&c.id) && drift.touches(&c.name))
        .cloned()
        .collect();
    if again.is_empty() && unrun.is_empty() {
        return Ok((input, again));
    }
    // By id, read against the interrupts as they were (a decision by its place names the interrupt at that place).
    let input = match input.read(&state.interrupts)? {
        Resume::Decisions(list) if list.len() == state.interrupts.len() => Resume::DecisionsById(
            state
                .interrupts
                .iter()
                .map(|i| i.id.clone())
                .zip(list)
                .filter(|(id, _)| !again.contains(id))
                .collect(),
        ),
        Resume::DecisionsById(list) => {
            Resume::DecisionsById(list.into_iter().filter(|(id, _)| !again.contains(id)).collect())
        }
        other => other,
    };
    for i in &mut state.interrupts {
        if again.contains(&i.id) {
            i.approvals.clear();
        }
    }
    let mut interrupts = std::mem::take(&mut state.interrupts);
    for c in unrun {
        state.approved.retain(|id| *id != c.id);
        again.push(c.id.clone());
        interrupts.push(Interrupt::new(InterruptKind::Approval, c.id, c.name, c.input));
    }
    // In call order, as every pause lists them (a question or approvals; never an elicitation beside them).
    let mut ordered = Vec::with_capacity(interrupts.len());
    for c in state.open_calls().unwrap_or_default() {
        if let Some(k) = interrupts.iter().position(|i| i.id == c.id) {
            ordered.push(interrupts.swap_remove(k));
        }
    }
    ordered.append(&mut interrupts);
    state.set_interrupts(ordered);
    Ok((input, again))
}

pub(super) fn decision_error(id: Option<&str>, problem: impl Into<String>) -> AgentError {
    AgentError::Decision {
        id: id.map(str::to_owned),
        problem: problem.into(),
    }
}

/// The content of a denied call's result.
pub(super) fn denial(interrupt: &Interrupt, message: Option<&str>, by: Option<&str>) -> String {
    let who = by.map_or_else(|| "The user".to_owned(), |b| format!("The user {b:?}"));
    let what = match interrupt.kind {
        InterruptKind::Approval => format!("{who} denied this call to {}; it did not run", interrupt.tool_name),
        InterruptKind::Question | InterruptKind::Elicitation | InterruptKind::Budget => {
            format!("{who} declined to answer")
        }
    };
    match message {
        Some(m) if !m.is_empty() => format!("{what}: {m}"),
        _ => format!("{what}."),
    }
}

/// One decision per pending interrupt, in interrupt order.
/// The error of a resume without an answer for a run that waits for one (`pending`).
fn no_answer(pending: &[Interrupt]) -> AgentError {
    let problem = match pending {
        [only] if only.kind == InterruptKind::Budget => format!(
            "no answer given, but the run waits for a decision on its token budget ({:?}): resume with {{ type: 'approve', budget: {{ totalTokens }} }} or {{ type: 'deny' }}",
            only.prompt()
        ),
        [first, ..] if first.kind == InterruptKind::Elicitation => format!(
            "no answer given, but the run waits for input: {}; resume with {{ type: 'accept', content }}, {{ type: 'decline' }} or {{ type: 'cancel' }} (or {{ decisions }}, one per request)",
            pending
                .iter()
                .map(|i| format!("{:?} ({:?})", i.id, i.prompt()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        [only] if only.kind == InterruptKind::Question => format!(
            "no answer given, but the run waits for an answer to {:?}: resume(checkpoint, answer) (\"\" is an answer too)",
            only.prompt()
        ),
        _ => format!(
            "no answer given, but the run waits for approval of {}: resume with {{ decisions }} (approve or deny each)",
            pending
                .iter()
                .map(|i| format!("{:?}", i.id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    decision_error(pending.first().map(|i| i.id.as_str()), problem)
}

/// `None` leaves an interrupt undecided: allowed (by id) while one of them waits for several approvers, who may come
/// one resume at a time, and for those `asked_again` (their agent changed, see `set_aside`).
pub(super) fn match_decisions(
    pending: &[Interrupt],
    input: Resume,
    asked_again: &[String],
) -> Result<Vec<Option<Decision>>, AgentError> {
    let partial = pending.iter().any(|i| i.approvers.is_some());
    let input = input.read(pending)?;
    let ids = || {
        pending
            .iter()
            .map(|i| format!("{:?}", i.id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match input {
        // A text answers the one question pending — beside approvals asked again because the agent changed, which
        // stay undecided.
        Resume::Answer(text) => match question(pending, asked_again) {
            Some(q) => {
                let mut text = Some(text);
                Ok(pending
                    .iter()
                    .map(|i| {
                        (i.id == q)
                            .then(|| text.take().map(|text| Decision::Answer { text }))
                            .flatten()
                    })
                    .collect())
            }
            None => match pending {
                [first, ..] if first.kind == InterruptKind::Elicitation => Err(decision_error(
                    Some(&first.id),
                    format!(
                        "the run waits for input ({}), not a text answer: resume with {{ type: 'accept', content }} matching its requestedSchema, {{ type: 'decline' }} or {{ type: 'cancel' }}",
                        ids()
                    ),
                )),
                _ => Err(decision_error(
                    pending.first().map(|i| i.id.as_str()),
                    format!(
                        "the run waits for approval of {}; resume with {{ decisions }} (approve or deny each), not a text answer",
                        ids()
                    ),
                )),
            },
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
            Ok(list.into_iter().map(Some).collect())
        }
        Resume::Json(_) => Err(decision_error(None, "decisions were not read")),
        Resume::Nothing => Err(no_answer(pending)),
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
                        out.push(Some(d));
                    }
                    [] if partial || asked_again.contains(&i.id) => out.push(None),
                    [] => return Err(decision_error(Some(&i.id), "missing decision for this interrupt")),
                    _ => return Err(decision_error(Some(&i.id), "more than one decision for this interrupt")),
                }
            }
            Ok(out)
        }
    }
}

/// The id of the one pending interrupt not `asked_again`, when it is a question.
fn question<'a>(pending: &'a [Interrupt], asked_again: &[String]) -> Option<&'a str> {
    let mut waiting = pending.iter().filter(|i| !asked_again.contains(&i.id));
    match (waiting.next(), waiting.next()) {
        (Some(q), None) if q.kind == InterruptKind::Question => Some(&q.id),
        _ => None,
    }
}

impl Resume {
    /// Decisions from their JSON text, as the JS API takes them: an array in interrupt order (with an `id`
    /// in every decision or in none) or an object keyed by interrupt id; each `{ type: "approve",
    /// modifiedArgs? }`, `{ type: "deny", message? }` or `{ type: "answer", text }`.
    ///
    /// # Errors
    /// [`AgentError::Decision`](crate::AgentError) naming the path of what is wrong.
    pub fn from_decisions_json(text: &str) -> Result<Self, crate::AgentError> {
        decisions_value(text)?.read(&[])
    }

    /// [`Resume::Json`] read against `pending`, the interrupts the run waits for: a decision given by its
    /// place names the interrupt at that place when something is wrong with it. Any other input as it is.
    ///
    /// # Errors
    /// [`AgentError::Decision`](crate::AgentError) naming the interrupt and the path of what is wrong.
    pub fn read(self, pending: &[Interrupt]) -> Result<Self, crate::AgentError> {
        let Resume::Json(value) = self else {
            return Ok(self);
        };
        let problem = |p: String| crate::AgentError::Decision { id: None, problem: p };
        match value {
            Value::Array(list) => {
                let with_ids = list.iter().filter(|d| d.get("id").is_some()).count();
                if with_ids > 0 && with_ids < list.len() {
                    return Err(problem("decisions: give an id in every decision or in none".into()));
                }
                let decoded = list
                    .into_iter()
                    .enumerate()
                    .map(|(k, d)| {
                        let id = d.get("id").and_then(Value::as_str).map(str::to_owned);
                        let about = id.clone().or_else(|| pending.get(k).map(|i| i.id.clone()));
                        decision(d, &format!("decisions[{k}]"), about).map(|dec| (id, dec))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if with_ids > 0 {
                    Ok(Resume::DecisionsById(
                        decoded.into_iter().map(|(id, d)| (id.unwrap_or_default(), d)).collect(),
                    ))
                } else {
                    Ok(Resume::Decisions(decoded.into_iter().map(|(_, d)| d).collect()))
                }
            }
            Value::Object(map) => Ok(Resume::DecisionsById(
                map.into_iter()
                    .map(|(id, d)| decision(d, &format!("decisions[{id:?}]"), Some(id.clone())).map(|dec| (id, dec)))
                    .collect::<Result<Vec<_>, _>>()?,
            )),
            other => Err(problem(format!(
                "decisions: expected an array or an object keyed by interrupt id, got {}",
                match other {
                    Value::Null => "null",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    _ => "a boolean",
                }
            ))),
        }
    }
}

impl Resume {
    /// The answer of the npm package's `resume(checkpoint, answer)`, as JSON: a string (a text answer), `null`
    /// (no answer: `""`), or `{ decisions }` (see [`Resume::from_decisions_json`]).
    ///
    /// # Errors
    /// [`AgentError::Decision`](crate::AgentError) naming what is wrong.
    pub fn from_answer_json(text: &str) -> Result<Self, crate::AgentError> {
        let problem = |p: String| crate::AgentError::Decision { id: None, problem: p };
        let value: Value = serde_json::from_str(&crate::limits::repair_lone_surrogates(text))
            .map_err(|e| problem(format!("answer: {e}")))?;
        match value {
            Value::Null => Ok(Resume::Nothing),
            Value::String(s) => Ok(Resume::Answer(s)),
            // One decision, for a run that waits for one interrupt (a question, most often).
            Value::Object(o) if o.contains_key("type") && !o.contains_key("decisions") => {
                Ok(Resume::Json(Value::Array(vec![Value::Object(o)])))
            }
            Value::Object(mut o) if o.contains_key("decisions") => {
                if let Some(k) = o.keys().find(|k| *k != "decisions") {
                    return Err(problem(crate::options::unknown_option(
                        "answer",
                        k,
                        &["decisions"],
                        &[],
                    )));
                }
                let decisions = decisions_value(&o.remove("decisions").unwrap_or(Value::Null).to_string())?;
                // No decisions at all mean "continue": read at once, so a session sees it.
                match &decisions {
                    Resume::Json(Value::Array(a)) if a.is_empty() => decisions.read(&[]),
                    Resume::Json(Value::Object(m)) if m.is_empty() => decisions.read(&[]),
                    _ => Ok(decisions),
                }
            }
            other => Err(problem(format!(
                "answer: expected a string, a decision {{ type, ... }} or {{ decisions }}, got {}",
                crate::options::describe(&other)
            ))),
        }
    }
}

/// Decisions' JSON text as a value (lone surrogates as U+FFFD; no deeper than the limits allow).
fn decisions_value(text: &str) -> Result<Resume, crate::AgentError> {
    let problem = |p: String| crate::AgentError::Decision { id: None, problem: p };
    let text = crate::limits::repair_lone_surrogates(text);
    if crate::limits::text_depth(&text) > crate::limits::MAX_DEPTH_LIMIT {
        return Err(problem("decisions: nested too deep".into()));
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| problem(format!("decisions: {e}")))?;
    Ok(Resume::Json(value))
}

/// One decision, naming the path of what is wrong with it.
fn decision(mut value: Value, path: &str, id: Option<String>) -> Result<Decision, crate::AgentError> {
    let fail = |p: String| crate::AgentError::Decision {
        id: id.clone(),
        problem: format!("{path}{p}"),
    };
    let Some(o) = value.as_object_mut() else {
        return Err(fail(": expected an object { type, ... }".into()));
    };
    if o.get("id").is_some_and(|i| !i.is_string()) {
        return Err(fail(".id: expected a string (an interrupt id)".into()));
    }
    o.remove("id");
    if o.get("by").is_some_and(|b| !b.is_string() && !b.is_null()) {
        return Err(fail(".by: expected a string (the approver's name)".into()));
    }
    if o.get("by").is_some_and(Value::is_null) {
        o.remove("by");
    }
    let ty = o.get("type").and_then(Value::as_str).map(str::to_owned);
    match ty.as_deref() {
        Some("approve") => {
            if let Some(extra) = o
                .keys()
                .find(|k| !matches!(k.as_str(), "type" | "modifiedArgs" | "remember" | "by" | "budget"))
            {
                return Err(fail(format!(".{extra}: not a field of an approve decision")));
            }
            if let Some(b) = o.get("budget").filter(|b| !b.is_null()) {
                crate::approval::Budget::from_value(b).map_err(|p| fail(format!(".{p}")))?;
            }
            match o.get("remember") {
                None | Some(Value::Null) => {}
                Some(Value::String(r)) if r == "tool" => {}
                Some(v) => {
                    return Err(fail(format!(
                        ".remember: expected \"tool\" (approve later calls of this tool in this run), got {}",
                        crate::options::describe(v)
                    )));
                }
            }
        }
        Some("deny") => {
            if o.get("message").is_some_and(|m| !m.is_string() && !m.is_null()) {
                return Err(fail(".message: expected a string".into()));
            }
        }
        Some("answer") => {
            if !o.get("text").is_some_and(Value::is_string) {
                return Err(fail(".text: expected a string".into()));
            }
        }
        Some("accept") => {
            if let Some(extra) = o.keys().find(|k| !matches!(k.as_str(), "type" | "content")) {
                return Err(fail(format!(".{extra}: not a field of an accept decision")));
            }
            if o.get("content").is_some_and(|c| !c.is_object()) {
                return Err(fail(
                    ".content: expected an object (the requested schema's properties)".into(),
                ));
            }
        }
        Some(kind @ ("decline" | "cancel")) => {
            if let Some(extra) = o.keys().find(|k| k.as_str() != "type") {
                return Err(fail(format!(".{extra}: not a field of a {kind} decision")));
            }
        }
        Some(other) => {
            return Err(fail(format!(
                ".type: expected \"approve\", \"deny\", \"answer\", \"accept\", \"decline\" or \"cancel\", got {other:?}"
            )));
        }
        None => {
            return Err(fail(
                ".type: missing (\"approve\", \"deny\", \"answer\", \"accept\", \"decline\" or \"cancel\")".into(),
            ));
        }
    }
    serde_json::from_value(value).map_err(|e| fail(format!(": {e}")))
}
