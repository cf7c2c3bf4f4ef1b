//! The checkpoint: the run state itself, serialized as plain JSON.
//!
//! Decoding is "fast path, slow explanation": a derived serde decode handles valid input in one pass;
//! only when it fails is the input walked as a `serde_json::Value` to name the exact JSON path and problem.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CheckpointError;
use crate::message::{BlockProblem, ContentBlock, Message, Role, ToolResult, ToolUse, Usage, block_problem};

/// The newest checkpoint format this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 1;

/// A whole run, as plain JSON (`camelCase`, no `undefined`, no class instances).
///
/// The reference's fields (`messages`, `iterations`, `usage`, `pendingToolUseId`) keep their meaning;
/// `version`, `runId`, `question`, `toolResults`, `createdAt` and `updatedAt` are ours. A checkpoint in the
/// reference's format (no `version`) is accepted and upgraded.
///
/// ```
/// use resumable_agent::Checkpoint;
/// let cp = Checkpoint::from_json(r#"{"messages":[{"role":"user","content":"hi"}],"iterations":0,
///     "usage":{"inputTokens":0,"outputTokens":0}}"#)?;
/// assert_eq!(cp.version, 1);
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
    /// The conversation. While paused it ends with the assistant message whose tool calls are in progress.
    pub messages: Vec<Message>,
    /// Model calls made so far, across all resumes.
    pub iterations: u32,
    /// Tokens used so far, across all resumes.
    pub usage: Usage,
    /// The tool call waiting for the human's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_tool_use_id: Option<String>,
    /// The question that call asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Results of the paused turn's calls that already ran (they never run again).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResult>,
    /// When the run started, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// When this checkpoint was taken, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
}

/// What a listing needs to know about a saved run, without its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    /// True when the run waits for an answer.
    pub interrupted: bool,
    /// The pending question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Number of messages in the conversation.
    pub message_count: usize,
}

/// The wire form, decoded by serde in one pass; `version` is optional for reference-format input.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    version: Option<u64>,
    run_id: Option<String>,
    messages: Vec<Message>,
    iterations: u32,
    usage: Usage,
    pending_tool_use_id: Option<String>,
    question: Option<String>,
    #[serde(default)]
    tool_results: Option<Vec<ToolResult>>,
    created_at: Option<u64>,
    updated_at: Option<u64>,
}

impl Checkpoint {
    pub(crate) fn new(run_id: String, now: u64) -> Self {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            run_id: Some(run_id),
            messages: Vec::new(),
            iterations: 0,
            usage: Usage::default(),
            pending_tool_use_id: None,
            question: None,
            tool_results: Vec::new(),
            created_at: Some(now),
            updated_at: Some(now),
        }
    }

    /// Decodes and validates a checkpoint from JSON text.
    ///
    /// # Errors
    /// [`CheckpointError`] naming the JSON path and the problem, or the unsupported version.
    pub fn from_json(json: &str) -> Result<Self, CheckpointError> {
        match serde_json::from_str::<Raw>(json) {
            Ok(raw) => raw.into_checkpoint(),
            Err(fast) => {
                let value: Value =
                    serde_json::from_str(json).map_err(|e| CheckpointError::Json { message: e.to_string() })?;
                explain(&value)?;
                Err(CheckpointError::at("checkpoint", fast.to_string()))
            }
        }
    }

    /// Decodes and validates a checkpoint from a JSON value.
    ///
    /// # Errors
    /// As [`Checkpoint::from_json`].
    pub fn from_value(value: Value) -> Result<Self, CheckpointError> {
        explain(&value)?;
        serde_json::from_value::<Raw>(value)
            .map_err(|e| CheckpointError::at("checkpoint", e.to_string()))?
            .into_checkpoint()
    }

    /// The checkpoint as compact JSON text.
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// True when the run waits for an answer ([`Checkpoint::question`]).
    pub fn is_interrupted(&self) -> bool {
        self.pending_tool_use_id.is_some()
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
        for (i, m) in self.messages.iter().enumerate() {
            check_blocks(m, i)?;
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
            if let Some(id) = &self.pending_tool_use_id {
                return Err(CheckpointError::at(
                    "pendingToolUseId",
                    format!("{id:?} is set but the last message has no tool calls to answer"),
                ));
            }
            if !self.tool_results.is_empty() {
                return Err(CheckpointError::at(
                    "toolResults",
                    "set but the last message has no tool calls in progress",
                ));
            }
            if self.question.is_some() {
                return Err(CheckpointError::at(
                    "question",
                    "set but the run is not interrupted (no pendingToolUseId)",
                ));
            }
            return Ok(());
        };
        let Some(pending) = &self.pending_tool_use_id else {
            return Err(CheckpointError::at(
                "pendingToolUseId",
                format!("missing, but messages[{n}] has tool calls without results"),
            ));
        };
        if !calls.iter().any(|c| &c.id == pending) {
            return Err(CheckpointError::at(
                "pendingToolUseId",
                format!("{pending:?} is not a tool call of the last message (messages[{n}])"),
            ));
        }
        for (k, r) in self.tool_results.iter().enumerate() {
            let path = format!("toolResults[{k}].toolUseId");
            if &r.tool_use_id == pending {
                return Err(CheckpointError::at(
                    path,
                    format!("{pending:?} is the pending call; its result is the answer"),
                ));
            }
            if !calls.iter().any(|c| c.id == r.tool_use_id) {
                return Err(CheckpointError::at(
                    path,
                    format!(
                        "{:?} is not a tool call of the last message (messages[{n}])",
                        r.tool_use_id
                    ),
                ));
            }
            if self.tool_results.iter().take(k).any(|p| p.tool_use_id == r.tool_use_id) {
                return Err(CheckpointError::at(
                    path,
                    format!("{:?} is answered twice", r.tool_use_id),
                ));
            }
        }
        Ok(())
    }
}

impl Raw {
    fn into_checkpoint(self) -> Result<Checkpoint, CheckpointError> {
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
        let mut cp = Checkpoint {
            version: CHECKPOINT_VERSION,
            run_id: self.run_id,
            messages: self.messages,
            iterations: self.iterations,
            usage: self.usage,
            pending_tool_use_id: self.pending_tool_use_id,
            question: self.question,
            tool_results: self.tool_results.unwrap_or_default(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        };
        if legacy {
            repair_legacy(&mut cp.messages);
        }
        cp.validate()?;
        Ok(cp)
    }
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
    match v.as_u64() {
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
