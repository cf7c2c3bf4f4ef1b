//! The invariants a resume relies on: every `tool_use` answered once and in order, results before any other
//! block, an open turn's results and interrupts naming its calls, approvals only of calls that need them.

use std::collections::HashSet;

use super::{CHECKPOINT_VERSION, Checkpoint, CheckpointError};
use crate::interrupt::{Interrupt, InterruptKind};
use crate::message::{BlockProblem, ContentBlock, Message, Role, ToolResult, ToolUse, block_problem};

impl Checkpoint {
    /// Checks every invariant a resume relies on.
    ///
    /// # Errors
    /// The first broken invariant, with its JSON path.
    pub fn validate(&self) -> Result<(), CheckpointError> {
        if self.version > CHECKPOINT_VERSION {
            return Err(CheckpointError::UnsupportedVersion {
                found: u64::from(self.version),
                supported: CHECKPOINT_VERSION,
            });
        }
        if let Some(t) = self
            .traceparent
            .as_deref()
            .filter(|t| !crate::telemetry::is_traceparent(t))
        {
            let shown: String = t.chars().take(64).collect();
            return Err(CheckpointError::at(
                "traceparent",
                format!("expected a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), got {shown:?}"),
            ));
        }
        self.validate_failed_subagents()?;
        if let Some(s) = &self.summarized {
            let hex = s
                .hash
                .strip_prefix("fnv1a64:")
                .filter(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            if hex.is_none() || s.text.is_empty() || s.messages == 0 {
                return Err(CheckpointError::at(
                    "summarized",
                    "expected { text (not empty), messages (at least 1), hash (\"fnv1a64:\" and 16 hex digits) }",
                ));
            }
        }
        let mut remembered = HashSet::new();
        for (k, name) in self.remembered.iter().enumerate() {
            if crate::spec::check_tool_name(name).is_err() || !remembered.insert(name.as_str()) {
                return Err(CheckpointError::at(
                    format!("remembered[{k}]"),
                    format!("{name:?} is not a tool name, or is remembered twice"),
                ));
            }
        }
        let last = self.messages.len().saturating_sub(1);
        let mut call_ids: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (i, m) in self.messages.iter().enumerate() {
            check_blocks(m, i)?;
            let empty = match &m.content {
                crate::message::Content::Blocks(b) => b.is_empty(),
                crate::message::Content::Text(t) => t.is_empty(),
            };
            if empty && m.role != Role::Assistant {
                return Err(CheckpointError::at(
                    format!("messages[{i}].content"),
                    "empty: providers refuse a message without content",
                ));
            }
            if i != last && m.is_empty_answer() {
                return Err(CheckpointError::at(
                    format!("messages[{i}].content"),
                    "an assistant message that says nothing may only end a run (providers refuse it in a history)",
                ));
            }
            for (j, b) in m.blocks().iter().enumerate() {
                if let ContentBlock::ToolUse(u) = b {
                    if let Some(earlier) = call_ids.insert(u.id.as_str(), i) {
                        if earlier != i {
                            return Err(CheckpointError::at(
                                format!("messages[{i}].content[{j}].id"),
                                format!(
                                    "{:?} is also the id of a tool call in messages[{earlier}] (ids are unique in a conversation)",
                                    u.id
                                ),
                            ));
                        }
                    }
                }
            }
            // Results answer the assistant turn just before; whether they match is checked from that side.
            if m.tool_results().next().is_some() && !prev_has_calls(&self.messages, i) {
                return Err(CheckpointError::at(
                    format!("messages[{i}].content[{}]", first_result_index(m)),
                    "tool_result does not follow an assistant message with tool calls",
                ));
            }
            let calls: Vec<&ToolUse> = m.tool_uses().collect();
            // The last message may be a turn in progress (see validate_open_turn).
            if calls.is_empty() || i == last {
                continue;
            }
            let answer_path = format!("messages[{}]", i + 1);
            let next = self
                .messages
                .get(i + 1)
                .filter(|n| n.role == Role::User)
                .ok_or_else(|| {
                    CheckpointError::at(
                        &answer_path,
                        "expected a user message with the tool results of the previous message",
                    )
                })?;
            check_pairing(&calls, next.tool_results(), i, &answer_path)?;
        }
        self.validate_open_turn()
    }

    /// Each failed subagent's entry names its call and tool, says how it failed and keeps a run (an object: its
    /// agent reads it in full when it resumes it). A variant of the npm package without subagents carries them as
    /// they are (it runs none: `agentTool` is not there), checked only for their id and tool name being strings.
    fn validate_failed_subagents(&self) -> Result<(), CheckpointError> {
        if !crate::subagent::NESTS {
            return Ok(());
        }
        for (k, f) in self.failed_subagents.iter().enumerate() {
            let problem = if f.id.is_empty() || f.id.split('/').any(str::is_empty) {
                Some((
                    "id",
                    "expected the id of the call that ran it (`<call>` or `<call>/<call>`)",
                ))
            } else if crate::spec::check_tool_name(&f.tool_name).is_err() {
                Some(("toolName", "expected the agent tool's name"))
            } else if !f.error.get("message").is_some_and(serde_json::Value::is_string) {
                Some(("error", "expected { name, message, code? }"))
            } else if !f.checkpoint.is_object() {
                Some(("checkpoint", "expected the subagent's checkpoint (an object)"))
            } else {
                None
            };
            if let Some((field, what)) = problem {
                return Err(CheckpointError::at(format!("failedSubagents[{k}].{field}"), what));
            }
        }
        Ok(())
    }

    fn validate_open_turn(&self) -> Result<(), CheckpointError> {
        let Some(calls) = self.open_calls() else {
            return self.validate_closed_turn();
        };
        let turn = OpenTurn {
            calls,
            last: self.messages.len().saturating_sub(1),
        };
        let answered = self.validate_results(&turn)?;
        let pending = self.validate_interrupts(&turn, &answered)?;
        self.validate_pending_input(&turn, &answered)?;
        self.validate_pause()?;
        self.validate_approved(&turn, &pending)
    }

    /// Without calls in progress, nothing of a turn's bookkeeping is set — but for a run paused on its token
    /// budget, which waits for the one `budget` interrupt between turns.
    fn validate_closed_turn(&self) -> Result<(), CheckpointError> {
        let on_budget = matches!(self.interrupts.as_slice(), [i] if i.kind == InterruptKind::Budget);
        if on_budget {
            let i = self.interrupts.first().map(|i| (i.id.as_str(), i.question.is_some()));
            if i != Some((crate::interrupt::BUDGET_INTERRUPT, true)) {
                return Err(CheckpointError::at(
                    "interrupts[0]",
                    format!(
                        "a budget interrupt has the id {:?} and a question",
                        crate::interrupt::BUDGET_INTERRUPT
                    ),
                ));
            }
            self.validate_pause()?;
        }
        let stray = [
            ("interrupts", !self.interrupts.is_empty() && !on_budget),
            ("pendingToolUseId", self.pending_tool_use_id.is_some() && !on_budget),
            ("toolResults", !self.tool_results.is_empty()),
            ("approved", !self.approved.is_empty()),
            ("reviewed", self.reviewed),
            ("question", self.question.is_some() && !on_budget),
            ("pendingInput", self.pending_input.is_some()),
        ];
        match stray.iter().find(|(_, set)| *set) {
            Some((field, _)) => Err(CheckpointError::at(
                *field,
                "set, but the last message has no tool calls in progress",
            )),
            None => Ok(()),
        }
    }

    /// Each result answers a call of the turn, once; the ids answered.
    fn validate_results<'a>(&'a self, turn: &OpenTurn<'_>) -> Result<HashSet<&'a str>, CheckpointError> {
        let mut answered = HashSet::new();
        for (k, r) in self.tool_results.iter().enumerate() {
            let path = || format!("toolResults[{k}].toolUseId");
            turn.call(&r.tool_use_id, path)?;
            if !answered.insert(r.tool_use_id.as_str()) {
                return Err(CheckpointError::at(
                    path(),
                    format!("{:?} is answered twice", r.tool_use_id),
                ));
            }
        }
        Ok(answered)
    }

    /// Each interrupt is a call of the turn not answered yet, once, with the call's tool and input; a
    /// question has its text, and waits alone. The ids pending.
    fn validate_interrupts<'a>(
        &'a self,
        turn: &OpenTurn<'_>,
        answered: &HashSet<&str>,
    ) -> Result<HashSet<&'a str>, CheckpointError> {
        let mut pending = HashSet::new();
        for (k, i) in self.interrupts.iter().enumerate() {
            let at = |field: &str| format!("interrupts[{k}].{field}");
            if i.is_nested() {
                self.validate_nested(i, &at)?;
                if !pending.insert(i.id.as_str()) {
                    return Err(CheckpointError::at(at("id"), format!("{:?} is pending twice", i.id)));
                }
                continue;
            }
            if i.kind == InterruptKind::Elicitation {
                self.validate_elicitation(i, &at)?;
                if !pending.insert(i.id.as_str()) {
                    return Err(CheckpointError::at(at("id"), format!("{:?} is pending twice", i.id)));
                }
            }
            let call_id = match (&i.kind, &self.pending_input) {
                (InterruptKind::Elicitation, Some(p)) => p.call.as_str(),
                _ => i.id.as_str(),
            };
            let c = turn.call(call_id, || at("id"))?;
            if i.kind == InterruptKind::Elicitation {
                if i.tool_name != c.name || i.input != c.input {
                    return Err(CheckpointError::at(
                        at("toolName"),
                        format!("differs from the tool or input of call {call_id:?}"),
                    ));
                }
                continue;
            }
            if answered.contains(i.id.as_str()) {
                return Err(CheckpointError::at(
                    at("id"),
                    format!("{:?} already has a result in toolResults", i.id),
                ));
            }
            if !pending.insert(i.id.as_str()) {
                return Err(CheckpointError::at(at("id"), format!("{:?} is pending twice", i.id)));
            }
            if i.tool_name != c.name {
                return Err(CheckpointError::at(
                    at("toolName"),
                    format!("{:?} but call {:?} is to {:?}", i.tool_name, i.id, c.name),
                ));
            }
            if i.input != c.input {
                return Err(CheckpointError::at(
                    at("input"),
                    format!("differs from the input of call {:?}", i.id),
                ));
            }
            if i.kind == InterruptKind::Question && i.question.is_none() {
                return Err(CheckpointError::at(at("question"), "missing"));
            }
            validate_approvers(i, &at)?;
        }
        let nested = self.interrupts.iter().filter(|i| i.is_nested()).count();
        if nested > 0 {
            if nested < self.interrupts.len() {
                return Err(CheckpointError::at(
                    "interrupts",
                    "a run waits for one subagent's interrupts at a time, with nothing else",
                ));
            }
            return Ok(pending);
        }
        let questions = self
            .interrupts
            .iter()
            .filter(|i| i.kind == InterruptKind::Question)
            .count();
        if questions > 0 && self.interrupts.len() > 1 {
            return Err(CheckpointError::at(
                "interrupts",
                "a run waits for one question at a time, or for approvals only",
            ));
        }
        let elicitations = self
            .interrupts
            .iter()
            .filter(|i| i.kind == InterruptKind::Elicitation)
            .count();
        if elicitations > 0 && elicitations < self.interrupts.len() {
            return Err(CheckpointError::at(
                "interrupts",
                "a run waits for one call's requests for input at a time, with nothing else",
            ));
        }
        Ok(pending)
    }

    /// A subagent's interrupt names the call in `pendingInput` (a paused run's) first in its path, and its id is
    /// `<path…>/<id>`.
    fn validate_nested(&self, i: &Interrupt, at: &dyn Fn(&str) -> String) -> Result<(), CheckpointError> {
        let Some(p) = self.pending_input.as_ref().filter(|p| p.nested) else {
            return Err(CheckpointError::at(
                "pendingInput",
                format!(
                    "missing, or not a subagent's (nested), but {} is a subagent's",
                    at("id").trim_end_matches(".id")
                ),
            ));
        };
        if i.path.first() != Some(&p.call) {
            return Err(CheckpointError::at(
                at("path[0]"),
                format!("expected {:?} (the call whose subagent waits)", p.call),
            ));
        }
        let mut rest = i.id.as_str();
        for (k, call) in i.path.iter().enumerate() {
            match rest.strip_prefix(call.as_str()).and_then(|r| r.strip_prefix('/')) {
                Some(r) if !call.is_empty() => rest = r,
                _ => {
                    return Err(CheckpointError::at(
                        at("id"),
                        format!(
                            "expected it to start with path[{k}] {call:?} and a '/': \"{}/<id>\"",
                            i.path.join("/")
                        ),
                    ));
                }
            }
        }
        if rest.is_empty() {
            return Err(CheckpointError::at(at("id"), "names no interrupt after its path"));
        }
        validate_approvers(i, at)
    }

    /// An elicitation names a request of the call in `pendingInput` (`<call>/<key>`), with its message and
    /// the schema of its answer.
    fn validate_elicitation(&self, i: &Interrupt, at: &dyn Fn(&str) -> String) -> Result<(), CheckpointError> {
        let Some(p) = self.pending_input.as_ref().filter(|p| !p.nested) else {
            return Err(CheckpointError::at(
                "pendingInput",
                format!(
                    "missing, or a subagent's, but {} waits for input",
                    at("id").trim_end_matches(".id")
                ),
            ));
        };
        let key = i.id.strip_prefix(p.call.as_str()).and_then(|k| k.strip_prefix('/'));
        if key.is_none_or(str::is_empty) {
            return Err(CheckpointError::at(
                at("id"),
                format!("expected \"{}/<key>\" (the call waiting for input)", p.call),
            ));
        }
        if i.message.is_none() {
            return Err(CheckpointError::at(at("message"), "missing"));
        }
        if !i.requested_schema.as_ref().is_some_and(serde_json::Value::is_object) {
            return Err(CheckpointError::at(at("requestedSchema"), "missing, or not an object"));
        }
        Ok(())
    }

    /// The call in `pendingInput` is one of the open turn's, without a result; its answers are objects.
    fn validate_pending_input(&self, turn: &OpenTurn<'_>, answered: &HashSet<&str>) -> Result<(), CheckpointError> {
        let Some(p) = &self.pending_input else { return Ok(()) };
        turn.call(&p.call, || "pendingInput.call".to_owned())?;
        if answered.contains(p.call.as_str()) {
            return Err(CheckpointError::at(
                "pendingInput.call",
                format!("{:?} already has a result in toolResults", p.call),
            ));
        }
        if p.nested {
            const TYPES: [&str; 6] = ["approve", "deny", "answer", "accept", "decline", "cancel"];
            if let Some((key, _)) = p.responses.iter().find(|(_, r)| {
                !r.get("type")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(|t| TYPES.contains(&t))
            }) {
                return Err(CheckpointError::at(
                    format!("pendingInput.responses[{key:?}].type"),
                    "expected a decision: \"approve\", \"deny\", \"answer\", \"accept\", \"decline\" or \"cancel\"",
                ));
            }
            return Ok(());
        }
        if let Some((key, _)) = p.responses.iter().find(|(_, r)| {
            !r.get("action")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|a| matches!(a, "accept" | "decline" | "cancel"))
        }) {
            return Err(CheckpointError::at(
                format!("pendingInput.responses[{key:?}].action"),
                "expected \"accept\", \"decline\" or \"cancel\"",
            ));
        }
        Ok(())
    }

    /// A paused run was reviewed, and `pendingToolUseId` and `question` repeat its first interrupt.
    fn validate_pause(&self) -> Result<(), CheckpointError> {
        let on_budget = self.interrupts.iter().any(|i| i.kind == InterruptKind::Budget);
        if !self.interrupts.is_empty() && !self.reviewed && !on_budget {
            return Err(CheckpointError::at(
                "reviewed",
                "missing, but the run is paused (its turn was checked for approval)",
            ));
        }
        match (self.interrupts.first(), &self.pending_tool_use_id) {
            (Some(first), Some(id)) if &first.id == id => {}
            (None, None) => {}
            (Some(first), _) => {
                return Err(CheckpointError::at(
                    "pendingToolUseId",
                    format!("expected {:?}, the id of the first interrupt", first.id),
                ));
            }
            (None, Some(id)) => {
                return Err(CheckpointError::at(
                    "pendingToolUseId",
                    format!("{id:?} is set but interrupts is empty"),
                ));
            }
        }
        if self.question != self.interrupts.first().map(Interrupt::prompt) {
            return Err(CheckpointError::at("question", "does not match the first interrupt"));
        }
        Ok(())
    }

    /// Each approval names a call of the reviewed turn, once, not pending.
    fn validate_approved(&self, turn: &OpenTurn<'_>, pending: &HashSet<&str>) -> Result<(), CheckpointError> {
        let mut approved = HashSet::new();
        for (k, id) in self.approved.iter().enumerate() {
            let path = || format!("approved[{k}]");
            turn.call(id, path)?;
            if pending.contains(id.as_str()) || !approved.insert(id.as_str()) {
                return Err(CheckpointError::at(
                    path(),
                    format!("{id:?} is approved twice or still pending"),
                ));
            }
            if !self.reviewed {
                return Err(CheckpointError::at(path(), "approved before the turn was reviewed"));
            }
        }
        Ok(())
    }
}

/// Several approvers only for an approval request, between 2 and [`MAX_APPROVERS`](crate::MAX_APPROVERS);
/// its approvals fewer than it waits for, each by a different approver.
fn validate_approvers(i: &Interrupt, at: &dyn Fn(&str) -> String) -> Result<(), CheckpointError> {
    match i.approvers {
        None if i.approvals.is_empty() => return Ok(()),
        None => return Err(CheckpointError::at(at("approvals"), "set, but approvers is not")),
        Some(k) if i.kind != InterruptKind::Approval => {
            return Err(CheckpointError::at(
                at("approvers"),
                format!(
                    "{k} on a {}: only an approval request waits for several approvers",
                    i.kind.as_str()
                ),
            ));
        }
        Some(k) if !(2..=crate::approval::MAX_APPROVERS).contains(&k) => {
            return Err(CheckpointError::at(
                at("approvers"),
                format!(
                    "expected 2 to {} (absent for one), got {k}",
                    crate::approval::MAX_APPROVERS
                ),
            ));
        }
        Some(k) if i.approvals.len() >= k as usize => {
            return Err(CheckpointError::at(
                at("approvals"),
                format!(
                    "{} approvals of {k} needed: the request would not be pending",
                    i.approvals.len()
                ),
            ));
        }
        Some(_) => {}
    }
    let mut seen = HashSet::new();
    for (k, mark) in i.approvals.iter().enumerate() {
        if mark.by.is_empty() || !seen.insert(mark.by.as_str()) {
            return Err(CheckpointError::at(
                at(&format!("approvals[{k}].by")),
                format!("{:?} is empty or approved twice", mark.by),
            ));
        }
    }
    Ok(())
}

/// The calls of the last message, in progress.
struct OpenTurn<'c> {
    calls: Vec<&'c ToolUse>,
    /// The index of the last message.
    last: usize,
}

impl<'c> OpenTurn<'c> {
    /// The call `id`; an error at `path` when the turn has none.
    fn call(&self, id: &str, path: impl FnOnce() -> String) -> Result<&'c ToolUse, CheckpointError> {
        self.calls.iter().find(|c| c.id == id).copied().ok_or_else(|| {
            CheckpointError::at(
                path(),
                format!(
                    "{id:?} is not a tool call of the last message (messages[{}])",
                    self.last
                ),
            )
        })
    }
}

fn prev_has_calls(messages: &[Message], i: usize) -> bool {
    i.checked_sub(1)
        .and_then(|p| messages.get(p))
        .is_some_and(|p| p.role == Role::Assistant && p.tool_uses().next().is_some())
}

fn first_result_index(m: &Message) -> usize {
    m.blocks()
        .iter()
        .position(|b| matches!(b, ContentBlock::ToolResult(_)))
        .unwrap_or(0)
}

fn check_blocks(m: &Message, i: usize) -> Result<(), CheckpointError> {
    let Some((j, problem)) = block_problem(m.role, m.blocks()) else {
        return Ok(());
    };
    let block = format!("messages[{i}].content[{j}]");
    Err(match problem {
        BlockProblem::ToolUseOutsideAssistant => {
            CheckpointError::at(block, "tool_use block outside an assistant message")
        }
        BlockProblem::ToolResultOutsideUser => CheckpointError::at(block, "tool_result block outside a user message"),
        BlockProblem::ResultAfterOther => CheckpointError::at(
            block,
            "tool_result after another block: providers want a turn's tool results first",
        ),
        BlockProblem::ThinkingOutsideAssistant => {
            CheckpointError::at(block, "thinking block outside an assistant message")
        }
        BlockProblem::EmptyId => CheckpointError::at(format!("{block}.id"), "empty"),
        BlockProblem::DuplicateId(id) => CheckpointError::at(
            format!("{block}.id"),
            format!("{id:?} is used by an earlier tool call of the same message"),
        ),
    })
}

fn check_pairing<'a>(
    calls: &[&ToolUse],
    results: impl Iterator<Item = &'a ToolResult>,
    i: usize,
    answer_path: &str,
) -> Result<(), CheckpointError> {
    let results: Vec<&ToolResult> = results.collect();
    for (k, r) in results.iter().enumerate() {
        if !calls.iter().any(|c| c.id == r.tool_use_id) {
            return Err(CheckpointError::at(
                format!("{answer_path}.content[{k}].toolUseId"),
                format!("{:?} answers no tool call of messages[{i}]", r.tool_use_id),
            ));
        }
        if results.iter().take(k).any(|p| p.tool_use_id == r.tool_use_id) {
            return Err(CheckpointError::at(
                format!("{answer_path}.content[{k}].toolUseId"),
                format!("{:?} is answered twice", r.tool_use_id),
            ));
        }
    }
    for c in calls {
        if !results.iter().any(|r| r.tool_use_id == c.id) {
            return Err(CheckpointError::at(
                answer_path,
                format!("no tool_result for tool call {:?} of messages[{i}]", c.id),
            ));
        }
    }
    Ok(())
}

// ---- structural explanation of a value the fast decoder rejected ------------------------------------
