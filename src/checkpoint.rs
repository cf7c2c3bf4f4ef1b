//! The checkpoint: the run state itself, serialized as plain JSON.
//!
//! Decoding is "fast path, slow explanation": a derived serde decode handles valid input in one pass;
//! only when it fails is the input walked as a `serde_json::Value` to name the exact JSON path and problem.
//! Every format ever written is read: the reference's (no `version`), `1` and `2`.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CheckpointError;
use crate::interrupt::{Interrupt, InterruptKind};
use crate::message::{BlockProblem, ContentBlock, Message, Role, ToolResult, ToolUse, Usage, block_problem};

/// The newest checkpoint format this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 2;

/// A whole run, as plain JSON (`camelCase`, no `undefined`, no class instances).
///
/// The reference's fields (`messages`, `iterations`, `usage`, `pendingToolUseId`) keep their meaning;
/// the others are ours. While the last message is an assistant turn whose tool calls are in progress,
/// `toolResults` holds the results of the calls that already ran (they never run again), `approved` the
/// calls a human approved, and `interrupts` what the run waits for. Checkpoints of older formats are
/// accepted and upgraded.
///
/// ```
/// use resumable_agent::Checkpoint;
/// let cp = Checkpoint::from_json(r#"{"messages":[{"role":"user","content":"hi"}],"iterations":0,
///     "usage":{"inputTokens":0,"outputTokens":0}}"#)?;
/// assert_eq!(cp.version, 2);
/// assert!(!cp.is_interrupted());
/// # Ok::<(), resumable_agent::CheckpointError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Checkpoint {
    /// Format version, [`CHECKPOINT_VERSION`] for everything this build writes.
    pub version: u32,
    /// Stable id of the run across pauses and resumes (absent in reference-format checkpoints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The conversation. Mid-turn it ends with the assistant message whose tool calls are in progress.
    pub messages: Vec<Message>,
    /// Model calls made so far, across all resumes.
    pub iterations: u32,
    /// Tokens used so far, across all resumes.
    pub usage: Usage,
    /// While paused: the id of the first pending interrupt (the reference's field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_tool_use_id: Option<String>,
    /// While paused: the first interrupt's question, or a sentence naming the tool of an approval request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// While paused: what the run waits for, in call order (approval requests, or one question).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interrupts: Vec<Interrupt>,
    /// Results of the open turn's calls that already ran or were denied (they never run again).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResult>,
    /// Ids of the open turn's calls a human approved (they run with the input the transcript shows).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approved: Vec<String>,
    /// True once the open turn's calls were checked for approval, so the check never repeats.
    #[serde(skip_serializing_if = "is_false")]
    pub reviewed: bool,
    /// The agent's state (plain JSON), which tools read and replace; absent when the agent has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    /// With an output schema: the run's answer as structured data, set once the model gave one that
    /// validates (the run is then finished); cleared by the next user turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// With an output schema: answers of this turn that did not validate (bounded by the agent's
    /// `maxOutputRetries`); cleared by the next user turn or resume.
    #[serde(skip_serializing_if = "is_zero")]
    pub output_attempts: u32,
    /// Where this checkpoint sits in a session's history (set by sessions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadInfo>,
    /// When the run started, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// When this checkpoint was taken, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
    /// The MAC of an agent with [`CheckpointKeys`](crate::CheckpointKeys) over everything else in the
    /// checkpoint; such an agent resumes only checkpoints whose signature verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<crate::keys::Signature>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A checkpoint's place in a session's history: `{ id, step, parentStep?, label? }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ThreadInfo {
    /// The session (thread) id.
    pub id: String,
    /// Its number in the thread's history: 1, 2, 3, … in the order they were saved (also across branches).
    #[serde(deserialize_with = "crate::json::whole")]
    pub step: u64,
    /// The step it continues from (after a restore, an earlier one).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::whole_opt"
    )]
    pub parent_step: Option<u64>,
    /// A name given with `label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl ThreadInfo {
    /// Step `step` of thread `id`, without a parent or label.
    pub fn new(id: impl Into<String>, step: u64) -> Self {
        ThreadInfo {
            id: id.into(),
            step,
            parent_step: None,
            label: None,
        }
    }
}

/// What a listing needs to know about a saved run, without its messages.
///
/// Stores keep it beside each value in a compact form ([`CheckpointSummary::to_stored`]); it reads back from
/// that form and from this struct's own JSON (what earlier releases stored).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "AnySummary")]
#[non_exhaustive]
pub struct CheckpointSummary {
    /// The run's id, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// When the checkpoint was taken (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
    /// Model calls so far.
    pub iterations: u32,
    /// Tokens so far.
    pub usage: Usage,
    /// True when the run waits for a human.
    pub interrupted: bool,
    /// The pending question (or approval sentence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Number of messages in the conversation.
    pub message_count: usize,
    /// Its step in a session's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// The step it continues from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_step: Option<u64>,
    /// Its name in the history, if labelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// The compact form stores keep: `{"v":2,"step",…}` with one-letter names (a session writes one per step).
/// `step` keeps its name: stores that compare and set read it. The parent is written only when it is not the
/// step before (a restore), and a head's step 1 has none.
#[derive(Serialize)]
struct StoredSummary<'a> {
    v: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<u64>,
    i: u32,
    #[serde(skip_serializing_if = "is_zero_usage")]
    u: [u64; 2],
    #[serde(skip_serializing_if = "is_false")]
    x: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    q: Option<&'a str>,
    m: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    t: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    r: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    l: Option<&'a str>,
}

fn is_zero_usage(u: &[u64; 2]) -> bool {
    *u == [0, 0]
}

/// Either form of a summary.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnySummary {
    /// 2 in the compact form, where an absent parent is the step before.
    #[serde(default)]
    v: Option<u8>,
    #[serde(default, alias = "r")]
    run_id: Option<String>,
    #[serde(default, alias = "t")]
    updated_at: Option<u64>,
    #[serde(default, alias = "i")]
    iterations: u32,
    #[serde(default, alias = "u")]
    usage: Option<AnyUsage>,
    #[serde(default, alias = "x")]
    interrupted: bool,
    #[serde(default, alias = "q")]
    question: Option<String>,
    #[serde(default, alias = "m")]
    message_count: usize,
    #[serde(default)]
    step: Option<u64>,
    #[serde(default, alias = "p")]
    parent_step: Option<u64>,
    #[serde(default, alias = "l")]
    label: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AnyUsage {
    Pair([u64; 2]),
    Object(Usage),
}

impl From<AnySummary> for CheckpointSummary {
    fn from(a: AnySummary) -> Self {
        CheckpointSummary {
            run_id: a.run_id,
            updated_at: a.updated_at,
            iterations: a.iterations,
            usage: match a.usage {
                Some(AnyUsage::Pair([input_tokens, output_tokens])) => Usage {
                    input_tokens,
                    output_tokens,
                },
                Some(AnyUsage::Object(u)) => u,
                None => Usage::default(),
            },
            interrupted: a.interrupted,
            question: a.question,
            message_count: a.message_count,
            step: a.step,
            parent_step: match (a.v, a.parent_step, a.step) {
                (Some(2), None, Some(step)) if step > 1 => Some(step - 1),
                (_, parent, _) => parent,
            },
            label: a.label,
        }
    }
}

impl CheckpointSummary {
    /// The compact JSON a store keeps beside a value (it reads back as a summary).
    pub fn to_stored(&self) -> String {
        let stored = StoredSummary {
            v: 2,
            step: self.step,
            // The step before is the usual parent: said only when it is another.
            p: self
                .parent_step
                .filter(|p| self.step.is_none_or(|s| s.checked_sub(1) != Some(*p))),
            i: self.iterations,
            u: [self.usage.input_tokens, self.usage.output_tokens],
            x: self.interrupted,
            q: self.question.as_deref(),
            m: self.message_count,
            t: self.updated_at,
            r: self.run_id.as_deref(),
            l: self.label.as_deref(),
        };
        crate::json::to_string(&stored).unwrap_or_default()
    }
}

/// JSON text parsed as it is, under `limits` (lone surrogates as U+FFFD, as everywhere), for what must be
/// authenticated before it is read as a checkpoint.
pub(crate) fn parse_value(text: &str, limits: &crate::limits::Limits) -> Result<Value, CheckpointError> {
    let text = crate::limits::repair_lone_surrogates(text);
    serde_json::from_str(&text).map_err(|e| {
        let (depth, max) = (crate::limits::text_depth(&text), limits.checkpoint_depth());
        if depth > max {
            CheckpointError::TooDeep { depth, max }
        } else {
            CheckpointError::Json { message: e.to_string() }
        }
    })
}

/// The wire form of every version, decoded by serde in one pass.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[serde(default, deserialize_with = "crate::json::whole_opt")]
    version: Option<u64>,
    run_id: Option<String>,
    messages: Vec<Message>,
    #[serde(deserialize_with = "crate::json::whole")]
    iterations: u32,
    usage: Usage,
    pending_tool_use_id: Option<String>,
    question: Option<String>,
    #[serde(default)]
    interrupts: Option<Vec<Interrupt>>,
    #[serde(default)]
    tool_results: Option<Vec<ToolResult>>,
    #[serde(default)]
    approved: Option<Vec<String>>,
    #[serde(default)]
    reviewed: Option<bool>,
    #[serde(default, deserialize_with = "crate::message::present")]
    state: Option<Value>,
    #[serde(default, deserialize_with = "crate::message::present")]
    structured: Option<Value>,
    #[serde(default, deserialize_with = "crate::json::whole_opt")]
    output_attempts: Option<u32>,
    #[serde(default)]
    thread: Option<ThreadInfo>,
    #[serde(default, deserialize_with = "crate::json::whole_opt")]
    created_at: Option<u64>,
    #[serde(default, deserialize_with = "crate::json::whole_opt")]
    updated_at: Option<u64>,
    #[serde(default)]
    signature: Option<crate::keys::Signature>,
    /// A session record's own member (kept only by [`Checkpoint::read_record`]).
    #[serde(default)]
    log: Option<Value>,
}

impl Checkpoint {
    /// An empty run with id `run_id`, started at `now` (ms since the epoch).
    pub fn new(run_id: impl Into<String>, now: u64) -> Self {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            run_id: Some(run_id.into()),
            messages: Vec::new(),
            iterations: 0,
            usage: Usage::default(),
            pending_tool_use_id: None,
            question: None,
            interrupts: Vec::new(),
            tool_results: Vec::new(),
            approved: Vec::new(),
            reviewed: false,
            state: None,
            structured: None,
            output_attempts: 0,
            thread: None,
            created_at: Some(now),
            updated_at: Some(now),
            signature: None,
        }
    }

    /// Decodes and validates a checkpoint from JSON text, under the default [`Limits`](crate::Limits).
    ///
    /// # Errors
    /// [`CheckpointError`] naming the JSON path and the problem, the unsupported version, or a limit.
    pub fn from_json(json: &str) -> Result<Self, CheckpointError> {
        Self::from_json_with(json, &crate::limits::Limits::default())
    }

    /// Decodes and validates a checkpoint from JSON text, refusing text over `limits` before parsing it and
    /// values nested deeper than `limits` (with the depth of the text) after.
    ///
    /// # Errors
    /// As [`Checkpoint::from_json`].
    pub fn from_json_with(json: &str, limits: &crate::limits::Limits) -> Result<Self, CheckpointError> {
        Self::decode_text(json, limits, Raw::into_checkpoint)
    }

    /// Parses `json` under `limits` and makes it what `read` makes of its wire form.
    fn decode_text<T>(
        json: &str,
        limits: &crate::limits::Limits,
        read: impl Fn(Raw, &dyn Fn(usize) -> Result<(), CheckpointError>) -> Result<T, CheckpointError>,
    ) -> Result<T, CheckpointError> {
        if json.len() > limits.max_checkpoint_bytes {
            return Err(CheckpointError::TooLarge {
                bytes: json.len(),
                max: limits.max_checkpoint_bytes,
            });
        }
        let max = limits.checkpoint_depth();
        // The depth of the text, measured only when a value in it is too deep (or the parse failed): its
        // fixed frame nests 5 deep, less than any limit, and serde_json itself stops at 128.
        let too_deep = |json: &str| {
            let depth = crate::limits::text_depth(json);
            (depth > max).then_some(CheckpointError::TooDeep { depth, max })
        };
        let within = |deepest: usize| {
            if deepest > max {
                too_deep(json).map_or(Ok(()), Err)
            } else {
                Ok(())
            }
        };
        // Parsed first, scanned only on failure: nearly every text is valid as it is.
        let fast = match serde_json::from_str::<Raw>(json) {
            Ok(raw) => return read(raw, &within),
            Err(fast) => fast,
        };
        if let Some(e) = too_deep(json) {
            return Err(e);
        }
        // JS writes a lone surrogate as an escape serde_json refuses: repaired, and parsed again.
        let (json, fast) = match crate::limits::repair_lone_surrogates(json) {
            std::borrow::Cow::Owned(repaired) => match serde_json::from_str::<Raw>(&repaired) {
                Ok(raw) => return read(raw, &within),
                Err(e) => (std::borrow::Cow::Owned(repaired), e),
            },
            unchanged => (unchanged, fast),
        };
        let value: Value = serde_json::from_str(&json).map_err(|e| CheckpointError::Json { message: e.to_string() })?;
        explain(&value)?;
        Err(CheckpointError::at("checkpoint", fast.to_string()))
    }

    /// A session record's checkpoint and `log` member from its text, in one parse, not validated (the
    /// session validates the run it rebuilds, once).
    pub(crate) fn read_record(
        json: &str,
        limits: &crate::limits::Limits,
    ) -> Result<(Self, Option<Value>), CheckpointError> {
        Self::decode_text(json, limits, Raw::into_unvalidated)
    }

    /// Decodes and validates a checkpoint from a JSON value.
    ///
    /// # Errors
    /// As [`Checkpoint::from_json`].
    pub fn from_value(value: Value) -> Result<Self, CheckpointError> {
        let limits = crate::limits::Limits::default();
        let depth = crate::limits::value_depth(&value);
        if depth > limits.checkpoint_depth() {
            return Err(CheckpointError::TooDeep {
                depth,
                max: limits.checkpoint_depth(),
            });
        }
        explain(&value)?;
        serde_json::from_value::<Raw>(value)
            .map_err(|e| CheckpointError::at("checkpoint", e.to_string()))?
            .into_checkpoint(&|_| Ok(()))
    }

    /// The checkpoint as compact JSON text.
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        crate::json::to_string(self).unwrap_or_default()
    }

    /// True when the run waits for a human ([`Checkpoint::interrupts`]).
    pub fn is_interrupted(&self) -> bool {
        !self.interrupts.is_empty()
    }

    /// True when the run has finished: its last message is the model's answer without tool calls, or it
    /// holds a structured answer and its turn is closed.
    pub fn is_finished(&self) -> bool {
        if self.is_interrupted() {
            return false;
        }
        match self.messages.last() {
            Some(m) if m.role == Role::Assistant => m.tool_uses().next().is_none(),
            Some(_) => self.structured.is_some(),
            None => false,
        }
    }

    /// The summary a listing shows.
    pub fn summary(&self) -> CheckpointSummary {
        CheckpointSummary {
            run_id: self.run_id.clone(),
            updated_at: self.updated_at,
            iterations: self.iterations,
            usage: self.usage,
            interrupted: self.is_interrupted(),
            question: self.question.clone(),
            message_count: self.messages.len(),
            step: self.thread.as_ref().map(|t| t.step),
            parent_step: self.thread.as_ref().and_then(|t| t.parent_step),
            label: self.thread.as_ref().and_then(|t| t.label.clone()),
        }
    }

    /// The tool calls of the last message when it is an assistant turn still waiting for results.
    pub(crate) fn open_calls(&self) -> Option<Vec<&ToolUse>> {
        let last = self.messages.last()?;
        if last.role != Role::Assistant {
            return None;
        }
        let calls: Vec<&ToolUse> = last.tool_uses().collect();
        (!calls.is_empty()).then_some(calls)
    }

    /// All calls of the open turn have results: answers them in one user message, in call order, and
    /// clears the turn's bookkeeping. (The run does it when a turn completes; a session's log replays it.)
    pub(crate) fn close_turn(&mut self) {
        let mut results = std::mem::take(&mut self.tool_results);
        let order: Vec<String> = self
            .open_calls()
            .unwrap_or_default()
            .iter()
            .map(|c| c.id.clone())
            .collect();
        let blocks = order
            .iter()
            .filter_map(|id| {
                let k = results.iter().position(|r| &r.tool_use_id == id)?;
                Some(ContentBlock::ToolResult(results.swap_remove(k)))
            })
            .collect();
        self.approved.clear();
        self.reviewed = false;
        self.messages.push(Message {
            role: Role::User,
            content: crate::message::Content::Blocks(blocks),
        });
    }

    /// Sets `interrupts` and the reference's fields that mirror its first entry.
    pub(crate) fn set_interrupts(&mut self, interrupts: Vec<Interrupt>) {
        self.pending_tool_use_id = interrupts.first().map(|i| i.id.clone());
        self.question = interrupts.first().map(Interrupt::prompt);
        self.interrupts = interrupts;
    }

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

    fn validate_open_turn(&self) -> Result<(), CheckpointError> {
        let n = self.messages.len().saturating_sub(1);
        let Some(calls) = self.open_calls() else {
            let stray = [
                ("interrupts", !self.interrupts.is_empty()),
                ("pendingToolUseId", self.pending_tool_use_id.is_some()),
                ("toolResults", !self.tool_results.is_empty()),
                ("approved", !self.approved.is_empty()),
                ("reviewed", self.reviewed),
                ("question", self.question.is_some()),
            ];
            if let Some((field, _)) = stray.iter().find(|(_, set)| *set) {
                return Err(CheckpointError::at(
                    *field,
                    "set, but the last message has no tool calls in progress",
                ));
            }
            return Ok(());
        };
        let call = |id: &str| calls.iter().find(|c| c.id == id).copied();
        let not_a_call = |path: String, id: &str| {
            CheckpointError::at(
                path,
                format!("{id:?} is not a tool call of the last message (messages[{n}])"),
            )
        };
        let mut answered = HashSet::new();
        for (k, r) in self.tool_results.iter().enumerate() {
            let path = format!("toolResults[{k}].toolUseId");
            if call(&r.tool_use_id).is_none() {
                return Err(not_a_call(path, &r.tool_use_id));
            }
            if !answered.insert(r.tool_use_id.as_str()) {
                return Err(CheckpointError::at(
                    path,
                    format!("{:?} is answered twice", r.tool_use_id),
                ));
            }
        }
        let mut pending = HashSet::new();
        let questions = self
            .interrupts
            .iter()
            .filter(|i| i.kind == InterruptKind::Question)
            .count();
        for (k, i) in self.interrupts.iter().enumerate() {
            let path = format!("interrupts[{k}]");
            let Some(c) = call(&i.id) else {
                return Err(not_a_call(format!("{path}.id"), &i.id));
            };
            if answered.contains(i.id.as_str()) {
                return Err(CheckpointError::at(
                    format!("{path}.id"),
                    format!("{:?} already has a result in toolResults", i.id),
                ));
            }
            if !pending.insert(i.id.as_str()) {
                return Err(CheckpointError::at(
                    format!("{path}.id"),
                    format!("{:?} is pending twice", i.id),
                ));
            }
            if i.tool_name != c.name {
                return Err(CheckpointError::at(
                    format!("{path}.toolName"),
                    format!("{:?} but call {:?} is to {:?}", i.tool_name, i.id, c.name),
                ));
            }
            if i.input != c.input {
                return Err(CheckpointError::at(
                    format!("{path}.input"),
                    format!("differs from the input of call {:?}", i.id),
                ));
            }
            if i.kind == InterruptKind::Question && i.question.is_none() {
                return Err(CheckpointError::at(format!("{path}.question"), "missing"));
            }
        }
        if questions > 0 && self.interrupts.len() > 1 {
            return Err(CheckpointError::at(
                "interrupts",
                "a run waits for one question at a time, or for approvals only",
            ));
        }
        if !self.interrupts.is_empty() && !self.reviewed {
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
        let mut approved = HashSet::new();
        for (k, id) in self.approved.iter().enumerate() {
            let path = format!("approved[{k}]");
            if call(id).is_none() {
                return Err(not_a_call(path, id));
            }
            if pending.contains(id.as_str()) || !approved.insert(id.as_str()) {
                return Err(CheckpointError::at(
                    path,
                    format!("{id:?} is approved twice or still pending"),
                ));
            }
            if !self.reviewed {
                return Err(CheckpointError::at(path, "approved before the turn was reviewed"));
            }
        }
        Ok(())
    }
}

impl Raw {
    /// The checkpoint, checked; `within` is given how deeply its deepest value sits in the text and
    /// refuses what is too deep, before anything else is checked.
    fn into_checkpoint(
        self,
        within: &dyn Fn(usize) -> Result<(), CheckpointError>,
    ) -> Result<Checkpoint, CheckpointError> {
        let (checkpoint, _) = self.into_unvalidated(within)?;
        checkpoint.validate()?;
        Ok(checkpoint)
    }

    /// [`Raw::into_checkpoint`] without the validation (the caller validates the run it rebuilds from it),
    /// and the `log` member.
    fn into_unvalidated(
        self,
        within: &dyn Fn(usize) -> Result<(), CheckpointError>,
    ) -> Result<(Checkpoint, Option<Value>), CheckpointError> {
        let legacy = self.version.is_none();
        if let Some(v) = self.version {
            if v == 0 {
                return Err(CheckpointError::at("version", "expected a positive integer, got 0"));
            }
            if v > u64::from(CHECKPOINT_VERSION) {
                return Err(CheckpointError::UnsupportedVersion {
                    found: v,
                    supported: CHECKPOINT_VERSION,
                });
            }
        }
        let before_v2 = self.version.is_none_or(|v| v < 2);
        let mut cp = Checkpoint {
            version: CHECKPOINT_VERSION,
            run_id: self.run_id,
            messages: self.messages,
            iterations: self.iterations,
            usage: self.usage,
            pending_tool_use_id: self.pending_tool_use_id,
            question: self.question,
            interrupts: self.interrupts.unwrap_or_default(),
            tool_results: self.tool_results.unwrap_or_default(),
            approved: self.approved.unwrap_or_default(),
            reviewed: self.reviewed.unwrap_or(false),
            state: self.state,
            structured: self.structured,
            output_attempts: self.output_attempts.unwrap_or(0),
            thread: self.thread,
            created_at: self.created_at,
            updated_at: self.updated_at,
            signature: self.signature,
        };
        within(normalize_values(&mut cp))?;
        if legacy {
            repair_legacy(&mut cp.messages);
        }
        if before_v2 {
            upgrade_pending_question(&mut cp)?;
        }
        Ok((cp, self.log))
    }
}

/// Every JSON value in a checkpoint with its numbers as doubles ([`normalize_numbers`](crate::limits::normalize_numbers)).
/// Returns how deep the deepest of them reaches in the checkpoint's text: a tool input sits 5 levels in
/// (`{ messages: [ { content: [ { input` ), an interrupt's input and data 3, the state and structured answer 1.
pub(crate) fn normalize_values(cp: &mut Checkpoint) -> usize {
    use crate::limits::normalize_numbers_depth as walk;
    let mut deepest = 0;
    for m in &mut cp.messages {
        if let crate::message::Content::Blocks(blocks) = &mut m.content {
            for b in blocks {
                if let ContentBlock::ToolUse(u) = b {
                    deepest = deepest.max(5 + walk(&mut u.input));
                }
            }
        }
    }
    for i in &mut cp.interrupts {
        deepest = deepest.max(3 + walk(&mut i.input));
        if let Some(d) = i.data.as_mut() {
            deepest = deepest.max(3 + walk(d));
        }
    }
    if let Some(s) = cp.state.as_mut() {
        deepest = deepest.max(1 + walk(s));
    }
    if let Some(s) = cp.structured.as_mut() {
        deepest = deepest.max(1 + walk(s));
    }
    deepest
}

/// Formats before 2 mark a pause with `pendingToolUseId` (+ `question`) alone: that is one question
/// interrupt, asked after the turn's calls started running (so the turn counts as reviewed).
fn upgrade_pending_question(cp: &mut Checkpoint) -> Result<(), CheckpointError> {
    if !cp.interrupts.is_empty() || !cp.approved.is_empty() {
        return Err(CheckpointError::at(
            "version",
            "interrupts and approved need format version 2",
        ));
    }
    let n = cp.messages.len().saturating_sub(1);
    if cp.open_calls().is_some() {
        cp.reviewed = true;
    }
    let Some(id) = cp.pending_tool_use_id.clone() else {
        // Before format 2 a turn in progress was always a pause: no mid-turn checkpoints were written.
        if cp.open_calls().is_some() {
            return Err(CheckpointError::at(
                "pendingToolUseId",
                format!("missing, but messages[{n}] has tool calls without results"),
            ));
        }
        return Ok(());
    };
    let Some(call) = cp
        .open_calls()
        .and_then(|calls| calls.into_iter().find(|c| c.id == id).cloned())
    else {
        let problem = if cp.open_calls().is_some() {
            format!("{id:?} is not a tool call of the last message (messages[{n}])")
        } else {
            format!("{id:?} is set but the last message has no tool calls to answer")
        };
        return Err(CheckpointError::at("pendingToolUseId", problem));
    };
    if let Some(k) = cp.tool_results.iter().position(|r| r.tool_use_id == id) {
        return Err(CheckpointError::at(
            format!("toolResults[{k}].toolUseId"),
            format!("{id:?} is the pending call; its result is the answer"),
        ));
    }
    let question = cp.question.clone().unwrap_or_default();
    cp.set_interrupts(vec![Interrupt {
        kind: InterruptKind::Question,
        id,
        tool_name: call.name,
        input: call.input,
        question: Some(question),
        options: None,
        data: None,
        expires_at: None,
    }]);
    Ok(())
}

/// The reference dropped the results of a turn's other calls when one interrupted and resumed with only
/// the pending call's result. Those calls may have run, so they must not run again: answer each with an
/// error result the model can read, which makes the history provider-valid again.
fn repair_legacy(messages: &mut [Message]) {
    for i in 1..messages.len() {
        let (before, after) = messages.split_at_mut(i);
        let (Some(prev), Some(next)) = (before.last(), after.first_mut()) else {
            continue;
        };
        if prev.role != Role::Assistant || next.role != Role::User || next.tool_results().next().is_none() {
            continue;
        }
        let answered = next.tool_results().count();
        let mut blocks: Vec<ContentBlock> = Vec::new();
        for call in prev.tool_uses() {
            match next.tool_results().find(|r| r.tool_use_id == call.id) {
                Some(r) => blocks.push(ContentBlock::ToolResult(r.clone())),
                None => blocks.push(ContentBlock::ToolResult(lost_result(&call.id))),
            }
        }
        if blocks.len() == answered {
            continue; // nothing was missing
        }
        blocks.extend(
            next.blocks()
                .iter()
                .filter(|b| !matches!(b, ContentBlock::ToolResult(_)))
                .cloned(),
        );
        next.content = crate::message::Content::Blocks(blocks);
    }
}

/// The result recorded for a call whose outcome was not saved (only reference-format checkpoints lack it).
pub(crate) fn lost_result(id: &str) -> ToolResult {
    ToolResult {
        tool_use_id: id.to_owned(),
        content:
            "this tool call's result was not saved in the checkpoint; it is not repeated, to avoid running it twice"
                .to_owned(),
        is_error: true,
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

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn expected(path: &str, what: &str, got: &Value) -> CheckpointError {
    CheckpointError::at(path, format!("expected {what}, got {}", kind(got)))
}

fn obj<'a>(v: &'a Value, path: &str) -> Result<&'a serde_json::Map<String, Value>, CheckpointError> {
    v.as_object().ok_or_else(|| expected(path, "an object", v))
}

fn required<'a>(o: &'a serde_json::Map<String, Value>, key: &str, path: &str) -> Result<&'a Value, CheckpointError> {
    o.get(key)
        .ok_or_else(|| CheckpointError::at(join(path, key), "missing"))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn string(o: &serde_json::Map<String, Value>, key: &str, path: &str, optional: bool) -> Result<(), CheckpointError> {
    match o.get(key) {
        None | Some(Value::Null) if optional => Ok(()),
        None => Err(CheckpointError::at(join(path, key), "missing")),
        Some(Value::String(_)) => Ok(()),
        Some(v) => Err(expected(&join(path, key), "a string", v)),
    }
}

fn count(v: &Value, path: &str, max: u64) -> Result<(), CheckpointError> {
    // `8.0` is `8`, as the decoder reads it (crate::json::Whole).
    let whole = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    });
    match whole {
        Some(n) if n <= max => Ok(()),
        Some(n) => Err(CheckpointError::at(path, format!("{n} is too large (at most {max})"))),
        None => Err(expected(path, "a non-negative integer", v)),
    }
}

/// Walks a checkpoint value and names the first structural problem. `Ok` means none was found.
fn explain(v: &Value) -> Result<(), CheckpointError> {
    let root = obj(v, "checkpoint")?;
    if let Some(version) = root.get("version").filter(|v| !v.is_null()) {
        count(version, "version", u64::MAX)?;
        let found = version.as_u64().unwrap_or(0);
        if found > u64::from(CHECKPOINT_VERSION) {
            return Err(CheckpointError::UnsupportedVersion {
                found,
                supported: CHECKPOINT_VERSION,
            });
        }
    }
    let messages = required(root, "messages", "")?;
    let messages = messages
        .as_array()
        .ok_or_else(|| expected("messages", "an array", messages))?;
    for (i, m) in messages.iter().enumerate() {
        explain_message(m, &format!("messages[{i}]"))?;
    }
    count(required(root, "iterations", "")?, "iterations", u64::from(u32::MAX))?;
    let usage = obj(required(root, "usage", "")?, "usage")?;
    for key in ["inputTokens", "outputTokens"] {
        count(required(usage, key, "usage")?, &join("usage", key), u64::MAX)?;
    }
    for key in ["pendingToolUseId", "question", "runId"] {
        string(root, key, "", true)?;
    }
    for key in ["createdAt", "updatedAt"] {
        if let Some(t) = root.get(key).filter(|t| !t.is_null()) {
            count(t, key, u64::MAX)?;
        }
    }
    if let Some(results) = root.get("toolResults").filter(|r| !r.is_null()) {
        let results = results
            .as_array()
            .ok_or_else(|| expected("toolResults", "an array", results))?;
        for (k, r) in results.iter().enumerate() {
            explain_tool_result(obj(r, &format!("toolResults[{k}]"))?, &format!("toolResults[{k}]"))?;
        }
    }
    if let Some(list) = array_field(root, "interrupts")? {
        for (k, i) in list.iter().enumerate() {
            explain_interrupt(i, &format!("interrupts[{k}]"))?;
        }
    }
    if let Some(list) = array_field(root, "approved")? {
        for (k, id) in list.iter().enumerate() {
            if !id.is_string() {
                return Err(expected(&format!("approved[{k}]"), "a string (a tool call id)", id));
            }
        }
    }
    match root.get("reviewed") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => {}
        Some(v) => return Err(expected("reviewed", "a boolean", v)),
    }
    if let Some(t) = root.get("thread").filter(|t| !t.is_null()) {
        let o = obj(t, "thread")?;
        string(o, "id", "thread", false)?;
        count(required(o, "step", "thread")?, "thread.step", u64::MAX)?;
        if let Some(p) = o.get("parentStep").filter(|p| !p.is_null()) {
            count(p, "thread.parentStep", u64::MAX)?;
        }
        string(o, "label", "thread", true)?;
    }
    if let Some(sig) = root.get("signature").filter(|s| !s.is_null()) {
        let o = obj(sig, "signature")?;
        string(o, "kid", "signature", false)?;
        string(o, "mac", "signature", false)?;
    }
    Ok(())
}

/// An optional array field of the checkpoint.
fn array_field<'a>(
    o: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Vec<Value>>, CheckpointError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(v) => Err(expected(key, "an array", v)),
    }
}

fn explain_interrupt(v: &Value, path: &str) -> Result<(), CheckpointError> {
    let o = obj(v, path)?;
    match required(o, "kind", path)? {
        Value::String(k) if k == "approval" || k == "question" => {}
        other => {
            return Err(CheckpointError::at(
                join(path, "kind"),
                format!("expected \"approval\" or \"question\", got {other}"),
            ));
        }
    }
    string(o, "id", path, false)?;
    string(o, "toolName", path, false)?;
    required(o, "input", path)?;
    string(o, "question", path, true)?;
    match o.get("options") {
        None | Some(Value::Null) => {}
        Some(Value::Array(options)) => {
            if let Some((k, x)) = options.iter().enumerate().find(|(_, x)| !x.is_string()) {
                return Err(expected(&format!("{path}.options[{k}]"), "a string", x));
            }
        }
        Some(v) => return Err(expected(&join(path, "options"), "an array of strings", v)),
    }
    if let Some(t) = o.get("expiresAt").filter(|t| !t.is_null()) {
        count(t, &join(path, "expiresAt"), u64::MAX)?;
    }
    Ok(())
}

fn explain_message(m: &Value, path: &str) -> Result<(), CheckpointError> {
    let o = obj(m, path)?;
    let role_path = join(path, "role");
    match required(o, "role", path)? {
        Value::String(r) if matches!(r.as_str(), "user" | "assistant" | "system") => {}
        Value::String(r) => {
            return Err(CheckpointError::at(
                role_path,
                format!("expected \"user\", \"assistant\" or \"system\", got {r:?}"),
            ));
        }
        other => return Err(expected(&role_path, "a string", other)),
    }
    match required(o, "content", path)? {
        Value::String(_) => Ok(()),
        Value::Array(blocks) => explain_blocks(blocks, &join(path, "content")),
        other => Err(expected(
            &join(path, "content"),
            "a string or an array of content blocks",
            other,
        )),
    }
}

/// Names the first malformed block of `blocks` (also used for model responses).
pub(crate) fn explain_blocks(blocks: &[Value], path: &str) -> Result<(), CheckpointError> {
    for (j, b) in blocks.iter().enumerate() {
        let bp = format!("{path}[{j}]");
        let o = obj(b, &bp)?;
        let ty = required(o, "type", &bp)?;
        let ty = ty
            .as_str()
            .ok_or_else(|| expected(&join(&bp, "type"), "a string", ty))?;
        match ty {
            "text" => string(o, "text", &bp, false)?,
            "image" => {
                string(o, "url", &bp, false)?;
                string(o, "mimeType", &bp, true)?;
            }
            "image_base64" => {
                string(o, "data", &bp, false)?;
                string(o, "mimeType", &bp, false)?;
            }
            "tool_use" => {
                string(o, "id", &bp, false)?;
                string(o, "name", &bp, false)?;
                required(o, "input", &bp)?;
            }
            "tool_result" => explain_tool_result(o, &bp)?,
            other => {
                return Err(CheckpointError::at(
                    join(&bp, "type"),
                    format!(
                        "unknown block type {other:?} (expected text, image, image_base64, tool_use or tool_result)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn explain_tool_result(o: &serde_json::Map<String, Value>, path: &str) -> Result<(), CheckpointError> {
    string(o, "toolUseId", path, false)?;
    string(o, "content", path, false)?;
    match o.get("isError") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => Ok(()),
        Some(v) => Err(expected(&join(path, "isError"), "a boolean", v)),
    }
}
