//! The checkpoint: the run state itself, serialized as plain JSON.
//!
//! Decoding is "fast path, slow explanation": a derived serde decode handles valid input in one pass;
//! only when it fails is the input walked as a `serde_json::Value` to name the exact JSON path and problem.
//! Every format ever written is read: the reference's (no `version`), `1` and `2`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod error;
mod explain;
mod summary;
mod upgrade;
mod validate;

pub use error::CheckpointError;
pub(crate) use explain::explain_blocks;
pub use summary::CheckpointSummary;
pub(crate) use upgrade::{lost_result, normalize_values};

use crate::interrupt::Interrupt;
use crate::message::{ContentBlock, Message, Role, ToolResult, ToolUse, Usage};

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
    /// Tools whose calls a human approved with `remember: "tool"`: later calls of them in this run are
    /// approved without asking (unless a policy denies them or asks for several approvers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remembered: Vec<String>,
    /// The token limits a human raised the run's budget to (a `budget` interrupt's decision), each replacing the
    /// agent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::approval::Budget>,
    /// What decided the run's approvals when this checkpoint was written, part by part (see
    /// [`Fingerprint`](crate::Fingerprint)): a resume by an agent that changed since reports the drift and applies its
    /// [`OnDrift`](crate::OnDrift). Absent in checkpoints of runs driven without an agent, and of older releases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<crate::approval::Fingerprint>,
    /// While a call waits for input (`elicitation` interrupts), and from the resume until it runs again:
    /// the call, its tool's state for the retry and the answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_input: Option<crate::tool::PendingInput>,
    /// Subagents' runs that failed ([`agent_tool`](crate::agent_tool)), each with its last checkpoint: the model read
    /// the failure as the call's error result, and the subagent's agent can resume its run once what failed is fixed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_subagents: Vec<crate::subagent::FailedSubagent>,
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
    /// The summary standing for the steps a summarizing compaction replaced (`compaction.summarize`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarized: Option<crate::run::Summarized>,
    /// Where this checkpoint sits in a session's history (set by sessions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadInfo>,
    /// The W3C `traceparent` of the traced run that made this checkpoint (its `invoke_agent` span): the run
    /// that resumes it links its own span to that one, in whatever process or isolate it runs. Set only by an
    /// agent with telemetry; kept as it is by one without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// When the run started, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// When this checkpoint was taken, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
    /// The MAC of an agent with [`CheckpointKeys`](crate::CheckpointKeys) over everything else in the
    /// checkpoint; such an agent resumes only checkpoints whose signature verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A checkpoint's signature: the key id, the agent it is bound to, and the base64url HMAC-SHA256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Signature {
    /// The id of the key that signed.
    pub kid: String,
    /// The agent the checkpoint is bound to: the name given with [`CheckpointKeys::agent`](crate::CheckpointKeys::agent), or a fingerprint of
    /// what decides approvals (instructions, tool names, schemas and approval rules). An agent resumes only
    /// checkpoints bound to itself. Absent in checkpoints signed by releases before the binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The MAC, base64url without padding.
    pub mac: String,
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
    #[serde(default)]
    remembered: Option<Vec<String>>,
    #[serde(default)]
    fingerprint: Option<crate::approval::Fingerprint>,
    #[serde(default)]
    budget: Option<crate::approval::Budget>,
    #[serde(default)]
    pending_input: Option<crate::tool::PendingInput>,
    #[serde(default)]
    failed_subagents: Option<Vec<crate::subagent::FailedSubagent>>,
    #[serde(default, deserialize_with = "crate::message::present")]
    state: Option<Value>,
    #[serde(default, deserialize_with = "crate::message::present")]
    structured: Option<Value>,
    #[serde(default, deserialize_with = "crate::json::whole_opt")]
    output_attempts: Option<u32>,
    #[serde(default)]
    summarized: Option<crate::run::Summarized>,
    #[serde(default)]
    thread: Option<ThreadInfo>,
    #[serde(default)]
    traceparent: Option<String>,
    #[serde(default, deserialize_with = "crate::json::whole_opt")]
    created_at: Option<u64>,
    #[serde(default, deserialize_with = "crate::json::whole_opt")]
    updated_at: Option<u64>,
    #[serde(default)]
    signature: Option<Signature>,
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
            remembered: Vec::new(),
            fingerprint: None,
            budget: None,
            pending_input: None,
            failed_subagents: Vec::new(),
            state: None,
            structured: None,
            output_attempts: 0,
            summarized: None,
            thread: None,
            traceparent: None,
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
                Ok(raw) => {
                    crate::message::altered();
                    return read(raw, &within);
                }
                Err(e) => (std::borrow::Cow::Owned(repaired), e),
            },
            unchanged => (unchanged, fast),
        };
        let value: Value = serde_json::from_str(&json).map_err(|e| CheckpointError::Json { message: e.to_string() })?;
        explain::explain(&value)?;
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
        explain::explain(&value)?;
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
            remembered: self.remembered.unwrap_or_default(),
            fingerprint: self.fingerprint,
            budget: self.budget,
            pending_input: self.pending_input,
            failed_subagents: self.failed_subagents.unwrap_or_default(),
            state: self.state,
            structured: self.structured,
            output_attempts: self.output_attempts.unwrap_or(0),
            summarized: self.summarized,
            thread: self.thread,
            traceparent: self.traceparent,
            created_at: self.created_at,
            updated_at: self.updated_at,
            signature: self.signature,
        };
        within(upgrade::normalize_values(&mut cp))?;
        if before_v2 {
            // An older format reads back in this one's shape.
            crate::message::altered();
        }
        if legacy {
            upgrade::repair_legacy(&mut cp.messages);
        }
        if before_v2 {
            upgrade::upgrade_pending_question(&mut cp)?;
        }
        Ok((cp, self.log))
    }
}
