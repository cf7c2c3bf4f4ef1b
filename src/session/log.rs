//! The session log's stored forms: the small **head**, and **records**, each what one saved step changed.
//!
//! A session stores its run as records under `<id>#~<seq>` (`seq` = 1, 2, 3, … in the order they were
//! written), each written once:
//! - a **diff record** `{"log": {…}, "d": {…}}`: what the step changed relative to its parent record — messages
//!   dropped (compaction), the open turn closed, messages kept and added, tool results kept and added, and the
//!   small fields that changed;
//! - a **full record**: the whole checkpoint (with `thread`) plus `"log": {…}` — the first record of a chain,
//!   an occasional snapshot that bounds what a load reads, and every record of a saver that stores only
//!   checkpoints. A checkpoint without `log` (a session saved by an earlier release) is a full record too.
//!
//! `log` holds the position (`seq`, `parent` when it is not `seq - 1`), the step-level events of the step (in a
//! compact form whose large payloads — a tool's input or result, the model's answer — are read back from the
//! state at that record), the error a failed call ended with, the end marker of a deleted session, and the
//! record's MAC when the agent signs.
//!
//! The head `{"session": 1, "seq", "at", "labels"}` under `<id>` is a hint for loading (the last record known
//! when it was written) and what listings show; the log itself is the truth, so a head that lags (on Workers
//! KV it is written at most once a second) only makes a load probe a few records further.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::checkpoint::Checkpoint;
use crate::checkpoint::CheckpointError;
use crate::event::Event;
use crate::interrupt::Interrupt;
use crate::keys::Signature;
use crate::message::{ContentBlock, Message, Role, ToolResult, Usage};
use crate::run::Saved;

/// Events of a session are numbered in blocks, one per record: the events after record `n` get
/// `n * BLOCK + k`. So numbers never repeat, even when a process dies mid-step and another continues.
pub const EVENT_BLOCK: u64 = 1 << 24;
/// `checkpoint-saved` of record `n`: `n * EVENT_BLOCK`.
pub(crate) const SAVED_AT: u64 = 0;
/// `interrupt` after a record that paused.
pub(crate) const INTERRUPT_AT: u64 = EVENT_BLOCK / 2;
/// `done` (or `error`) of a call that ended at a record.
pub(crate) const END_AT: u64 = EVENT_BLOCK / 2 + 1;
/// `checkpoint-loaded` of a later call that loads a record; the events it applies follow.
pub(crate) const LOADED_AT: u64 = EVENT_BLOCK / 2 + 2;

fn is_false(b: &bool) -> bool {
    !*b
}

/// Label → record position (a JSON object of numbers: serde_json's own map, no second map type in the .wasm).
pub(crate) type Labels = Map<String, Value>;

/// The label naming record `seq`.
pub(crate) fn label_of(labels: &Labels, seq: u64) -> Option<String> {
    labels
        .iter()
        .find(|(_, s)| s.as_u64() == Some(seq))
        .map(|(l, _)| l.clone())
}

/// Names record `seq` `name` (a label names one record; a record has one label).
pub(crate) fn relabel(labels: &mut Labels, seq: u64, name: &str) {
    labels.retain(|l, s| l != name && s.as_u64() != Some(seq));
    labels.insert(name.to_owned(), Value::from(seq));
}

/// What every record says about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct LogInfo {
    /// Its position.
    pub(crate) seq: u64,
    /// The record it continues from, when it is not `seq - 1` (a restore); 0: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parent: Option<u64>,
    /// The step's logged events, compact: `[offset, code, …]` (see [`entry`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) ev: Vec<Value>,
    /// How the call that wrote it failed: `{ name, message, code? }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) err: Option<Value>,
    /// The session ended here: it is being deleted.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) end: bool,
    /// Heads of savers that store only checkpoints: the labels, and when the head was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) labels: Option<Labels>,
    /// When a head was written (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) at: Option<u64>,
    /// The record's MAC, when the agent signs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sig: Option<Signature>,
}

impl LogInfo {
    /// The record it continues from (0: none).
    pub(crate) fn parent(&self) -> u64 {
        self.parent.unwrap_or(self.seq.saturating_sub(1))
    }
}

/// What a step changed, relative to its parent record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Diff {
    /// `(start, count)`: messages removed from the middle (compaction), applied first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) drop: Option<(usize, usize)>,
    /// The open turn was closed: its results joined the history as one user message.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) close: bool,
    /// Messages kept (absent: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) keep: Option<usize>,
    /// Messages added after them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) add: Vec<Message>,
    /// Results of the open turn kept (absent: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rk: Option<usize>,
    /// Results added after them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) radd: Vec<ToolResult>,
    /// Small fields that changed, by their checkpoint names.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) set: Map<String, Value>,
    /// Fields that are now absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unset: Vec<String>,
}

/// A new-format session head.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Head {
    /// Always 1: what tells a head from a record or a checkpoint.
    pub(crate) session: u32,
    /// The last record when it was written.
    pub(crate) seq: u64,
    /// When it was written (ms since the epoch).
    #[serde(default)]
    pub(crate) at: u64,
    /// Label → record.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) labels: Labels,
    /// Its MAC, when the agent signs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sig: Option<Signature>,
}

/// What a stored value is.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // made once per read and taken apart at once
pub(crate) enum Stored {
    /// A session head.
    Head(Head),
    /// A diff record.
    Diff(LogInfo, Body),
    /// A whole checkpoint: a full record (`log` present) or what an earlier release saved.
    Full(Checkpoint, Option<LogInfo>),
}

/// What a diff record changes: read, or — for an agent that signs — the record's JSON without the MAC and its
/// text, read only once the MAC (which chains it to its parent) is checked.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    Read(Diff),
    Signed(Value, String),
}

impl Body {
    /// The diff (read from the record's text, once it was authenticated).
    pub(crate) fn diff(self) -> Result<Diff, CheckpointError> {
        match self {
            Body::Read(d) => Ok(d),
            Body::Signed(_, text) => serde_json::from_str::<Peek>(&crate::limits::repair_lone_surrogates(&text))
                .ok()
                .and_then(|p| p.d)
                .ok_or_else(|| CheckpointError::at("d", "not a diff")),
        }
    }
}

#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    session: Option<u32>,
    #[serde(default)]
    log: Option<LogInfo>,
    #[serde(default)]
    d: Option<Diff>,
}

/// A diff record as this library writes it: `log` first, then `d`, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffRecord {
    log: LogInfo,
    d: Diff,
}

fn head(text: &str) -> Result<Stored, CheckpointError> {
    serde_json::from_str::<Head>(text)
        .map(Stored::Head)
        .map_err(|e| CheckpointError::at("session head", e.to_string()))
}

/// Reads a stored value's text (already opened when it was sealed), in one parse: a head and a record as this
/// library writes them are told by their first key; another spelling (a store that reorders keys) by a look at
/// its keys. A whole checkpoint is not validated here: the session validates the run it rebuilds, once.
///
/// # Errors
/// [`CheckpointError`] naming what is wrong.
pub(crate) fn parse(text: &str, limits: &crate::limits::Limits) -> Result<Stored, CheckpointError> {
    if text.len() > limits.max_checkpoint_bytes {
        return Err(CheckpointError::TooLarge {
            bytes: text.len(),
            max: limits.max_checkpoint_bytes,
        });
    }
    if text.starts_with("{\"session\":") {
        return head(text);
    }
    if text.starts_with("{\"log\":") {
        if let Ok(r) = serde_json::from_str::<DiffRecord>(text) {
            return Ok(Stored::Diff(r.log, Body::Read(r.d)));
        }
    }
    let full = Checkpoint::read_record(text, limits);
    let peek = match &full {
        Ok(_) => None,
        Err(_) => serde_json::from_str::<Peek>(text).ok(),
    };
    match (full, peek) {
        (_, Some(Peek { session: Some(_), .. })) => head(text),
        (
            _,
            Some(Peek {
                log: Some(log),
                d: Some(d),
                ..
            }),
        ) => Ok(Stored::Diff(log, Body::Read(d))),
        (Ok((cp, log)), _) => Ok(Stored::Full(cp, log.map(log_info).transpose()?)),
        (Err(e), _) => Err(e),
    }
}

/// A record's `log` member.
fn log_info(value: Value) -> Result<LogInfo, CheckpointError> {
    // Through its text: no decoder of parsed values for it in the .wasm.
    serde_json::from_str(&value.to_string()).map_err(|e| CheckpointError::at("log", e.to_string()))
}

/// What a stored value's parsed JSON is, for an agent that signs: the JSON is kept, to check each part's MAC
/// over it as it was stored (a member the format does not know included) before anything reads the rest.
pub(crate) enum Parsed {
    /// A head, and its JSON without `sig`.
    Head(Head, Value),
    /// A diff record's `log`; its JSON without `log.sig`.
    Diff(LogInfo, Value),
    /// A full record's `log`; its JSON without `log.sig` and `signature`.
    Full(LogInfo, Value),
    /// A checkpoint saved by an earlier release (its own `signature`).
    Checkpoint(Value),
}

/// Sorts a stored value's parsed JSON (see [`Parsed`]).
///
/// # Errors
/// [`CheckpointError`] for a `log` member that cannot be read.
pub(crate) fn parsed(mut value: Value) -> Result<Parsed, CheckpointError> {
    let Value::Object(map) = &mut value else {
        return Ok(Parsed::Checkpoint(value));
    };
    if map.contains_key("session") {
        let head = serde_json::from_str::<Head>(&value.to_string())
            .map_err(|e| CheckpointError::at("session head", e.to_string()))?;
        if let Value::Object(map) = &mut value {
            map.remove("sig");
        }
        return Ok(Parsed::Head(head, value));
    }
    let Some(mut log) = map.remove("log") else {
        return Ok(Parsed::Checkpoint(value));
    };
    let info = log_info(log.clone())?;
    if let Value::Object(l) = &mut log {
        l.remove("sig");
    }
    let diff = map.contains_key("d") && !map.contains_key("messages");
    if !diff {
        map.remove("signature");
    }
    map.insert("log".into(), log);
    Ok(if diff {
        Parsed::Diff(info, value)
    } else {
        Parsed::Full(info, value)
    })
}

/// The small fields of a checkpoint (not messages, results, state, structured answer, thread or signature),
/// by their JSON names.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rest<'a> {
    version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: &'a Option<String>,
    iterations: u32,
    usage: Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_tool_use_id: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    question: &'a Option<String>,
    #[serde(skip_serializing_if = "<[Interrupt]>::is_empty")]
    interrupts: &'a [Interrupt],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    approved: &'a [String],
    #[serde(skip_serializing_if = "is_false")]
    reviewed: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    remembered: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprint: &'a Option<crate::approval::Fingerprint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: &'a Option<crate::approval::Budget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_input: &'a Option<crate::tool::PendingInput>,
    #[serde(skip_serializing_if = "is_zero")]
    output_attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    traceparent: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summarized: &'a Option<crate::run::Summarized>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn rest(cp: &Checkpoint) -> Map<String, Value> {
    let r = Rest {
        version: cp.version,
        run_id: &cp.run_id,
        iterations: cp.iterations,
        usage: cp.usage,
        pending_tool_use_id: &cp.pending_tool_use_id,
        question: &cp.question,
        interrupts: &cp.interrupts,
        approved: &cp.approved,
        reviewed: cp.reviewed,
        remembered: &cp.remembered,
        fingerprint: &cp.fingerprint,
        budget: &cp.budget,
        pending_input: &cp.pending_input,
        output_attempts: cp.output_attempts,
        created_at: cp.created_at,
        updated_at: cp.updated_at,
        traceparent: &cp.traceparent,
        summarized: &cp.summarized,
    };
    // Through the text: the same result without a second serializer for these types in the .wasm.
    crate::json::to_string(&r)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// What a writer remembers of the last state it saved: enough to write the next diff, without a copy of
/// the conversation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Base {
    messages: usize,
    /// The ids of the open turn's calls (the last message's tool calls), in order.
    open_calls: Vec<String>,
    tool_results: Vec<ToolResult>,
    rest: Map<String, Value>,
    state: Option<Value>,
    structured: Option<Value>,
    /// The ids of the subagents' failed runs kept (`failedSubagents`): a kept run never changes, so its id stands
    /// for it, and a step does not write, read back or copy those runs (each as large as a whole checkpoint).
    failed: Vec<String>,
}

/// The ids of `cp`'s kept failed runs.
fn failed_ids(cp: &Checkpoint) -> Vec<String> {
    cp.failed_subagents.iter().map(|f| f.id.clone()).collect()
}

impl Base {
    /// What `cp` is, as a base for the next diff.
    pub(crate) fn of(cp: &Checkpoint) -> Self {
        Self::with_rest(cp, rest(cp))
    }

    /// [`Base::of`] with `cp`'s small fields already read.
    fn with_rest(cp: &Checkpoint, rest: Map<String, Value>) -> Self {
        Base {
            messages: cp.messages.len(),
            open_calls: open_call_ids(cp),
            tool_results: cp.tool_results.clone(),
            rest,
            state: cp.state.clone(),
            structured: cp.structured.clone(),
            failed: failed_ids(cp),
        }
    }
}

fn open_call_ids(cp: &Checkpoint) -> Vec<String> {
    cp.open_calls()
        .map(|calls| calls.iter().map(|c| c.id.clone()).collect())
        .unwrap_or_default()
}

/// True when `m` is the message closing a turn with calls `ids` and results `results` would make.
fn closes(m: &Message, ids: &[String], results: &[ToolResult]) -> bool {
    if m.role != Role::User || ids.is_empty() {
        return false;
    }
    let blocks = m.blocks();
    blocks.len() == ids.len()
        && blocks.iter().zip(ids).all(|(b, id)| match b {
            ContentBlock::ToolResult(r) => &r.tool_use_id == id && results.iter().any(|x| x == r),
            _ => false,
        })
}

/// The diff from `base` to `next`, given how the run changed the messages since (`saved`), and `next` as the
/// base of the diff after it.
pub(crate) fn diff(base: &Base, next: &Checkpoint, saved: Saved) -> (Diff, Base) {
    let mut d = Diff::default();
    let mut len = base.messages;
    if let Some((start, count)) = saved.dropped.filter(|(s, c)| s.saturating_add(*c) <= len) {
        d.drop = Some((start, count));
        len -= count;
    }
    let mut keep = saved.unchanged.min(len).min(next.messages.len());
    let mut results: &[ToolResult] = &base.tool_results;
    let mut rest_before = std::borrow::Cow::Borrowed(&base.rest);
    if keep == len
        && next
            .messages
            .get(keep)
            .is_some_and(|m| closes(m, &base.open_calls, results))
    {
        d.close = true;
        keep += 1;
        len += 1;
        results = &[];
        let r = rest_before.to_mut();
        r.remove("approved");
        r.remove("reviewed");
    }
    if keep != len {
        d.keep = Some(keep);
    }
    d.add = next.messages.get(keep..).unwrap_or_default().to_vec();
    let rk = results
        .iter()
        .zip(&next.tool_results)
        .take_while(|(a, b)| a == b)
        .count();
    if rk != results.len() {
        d.rk = Some(rk);
    }
    d.radd = next.tool_results.get(rk..).unwrap_or_default().to_vec();
    let now = rest(next);
    for (k, v) in &now {
        if rest_before.get(k) != Some(v) {
            d.set.insert(k.clone(), v.clone());
        }
    }
    for k in rest_before.keys() {
        if !now.contains_key(k) {
            d.unset.push(k.clone());
        }
    }
    drop(rest_before);
    let failed = failed_ids(next);
    if failed != base.failed {
        if next.failed_subagents.is_empty() {
            d.unset.push("failedSubagents".to_owned());
        } else {
            // Through the text, as `rest` writes the small fields.
            let v = crate::json::to_string(&next.failed_subagents)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            d.set.insert("failedSubagents".to_owned(), v);
        }
    }
    for (name, before, after) in [
        ("state", &base.state, &next.state),
        ("structured", &base.structured, &next.structured),
    ] {
        if before != after {
            match after {
                Some(v) => {
                    d.set.insert(name.to_owned(), v.clone());
                }
                None => d.unset.push(name.to_owned()),
            }
        }
    }
    (d, Base::with_rest(next, now))
}

fn bad(at: u64, problem: impl Into<String>) -> CheckpointError {
    CheckpointError::at(format!("session record {at}"), problem)
}

fn field<T: serde::de::DeserializeOwned>(at: u64, name: &str, v: Value) -> Result<T, CheckpointError> {
    // Through the text: these types' readers from text are in the .wasm already.
    serde_json::from_str(&v.to_string()).map_err(|e| bad(at, format!("set.{name}: {e}")))
}

/// Applies record `at`'s diff to its parent's state.
///
/// # Errors
/// [`CheckpointError`] naming the record and what does not fit.
pub(crate) fn apply(state: &mut Checkpoint, d: Diff, at: u64) -> Result<(), CheckpointError> {
    if let Some((start, count)) = d.drop {
        let end = start.saturating_add(count);
        if end > state.messages.len() {
            return Err(bad(
                at,
                format!("drop {start}..{end}: the parent has {} messages", state.messages.len()),
            ));
        }
        state.messages.drain(start..end);
    }
    if d.close {
        if state.open_calls().is_none() {
            return Err(bad(at, "close: the parent has no open turn"));
        }
        state.close_turn();
    }
    if let Some(keep) = d.keep {
        if keep > state.messages.len() {
            return Err(bad(
                at,
                format!("keep {keep}: the parent has {} messages", state.messages.len()),
            ));
        }
        state.messages.truncate(keep);
    }
    state.messages.extend(d.add);
    if let Some(rk) = d.rk {
        if rk > state.tool_results.len() {
            return Err(bad(
                at,
                format!("rk {rk}: the parent has {} results", state.tool_results.len()),
            ));
        }
        state.tool_results.truncate(rk);
    }
    state.tool_results.extend(d.radd);
    for (k, v) in d.set {
        set_field(state, at, &k, v)?;
    }
    for k in d.unset {
        unset_field(state, at, &k)?;
    }
    Ok(())
}

/// A diff's `set` of field `k` to `v` (record `at`).
fn set_field(state: &mut Checkpoint, at: u64, k: &str, v: Value) -> Result<(), CheckpointError> {
    match k {
        "version" => state.version = field(at, k, v)?,
        "runId" => state.run_id = field(at, k, v)?,
        "iterations" => state.iterations = field(at, k, v)?,
        "usage" => state.usage = field(at, k, v)?,
        "pendingToolUseId" => state.pending_tool_use_id = field(at, k, v)?,
        "question" => state.question = field(at, k, v)?,
        "interrupts" => state.interrupts = field(at, k, v)?,
        "approved" => state.approved = field(at, k, v)?,
        "reviewed" => state.reviewed = field(at, k, v)?,
        "remembered" => state.remembered = field(at, k, v)?,
        "fingerprint" => state.fingerprint = field(at, k, v)?,
        "budget" => state.budget = field(at, k, v)?,
        "pendingInput" => state.pending_input = field(at, k, v)?,
        "failedSubagents" => state.failed_subagents = field(at, k, v)?,
        "outputAttempts" => state.output_attempts = field(at, k, v)?,
        "createdAt" => state.created_at = field(at, k, v)?,
        "updatedAt" => state.updated_at = field(at, k, v)?,
        "traceparent" => state.traceparent = field(at, k, v)?,
        "summarized" => state.summarized = field(at, k, v)?,
        "state" => state.state = Some(v),
        "structured" => state.structured = Some(v),
        other => return Err(bad(at, format!("set: unknown field {other:?}"))),
    }
    Ok(())
}

/// A diff's `unset` of field `k` (record `at`).
fn unset_field(state: &mut Checkpoint, at: u64, k: &str) -> Result<(), CheckpointError> {
    match k {
        "runId" => state.run_id = None,
        "pendingToolUseId" => state.pending_tool_use_id = None,
        "question" => state.question = None,
        "interrupts" => state.interrupts.clear(),
        "approved" => state.approved.clear(),
        "reviewed" => state.reviewed = false,
        "remembered" => state.remembered.clear(),
        "fingerprint" => state.fingerprint = None,
        "budget" => state.budget = None,
        "pendingInput" => state.pending_input = None,
        "failedSubagents" => state.failed_subagents.clear(),
        "outputAttempts" => state.output_attempts = 0,
        "createdAt" => state.created_at = None,
        "updatedAt" => state.updated_at = None,
        "traceparent" => state.traceparent = None,
        "summarized" => state.summarized = None,
        "state" => state.state = None,
        "structured" => state.structured = None,
        other => return Err(bad(at, format!("unset: unknown field {other:?}"))),
    }
    Ok(())
}

/// The compact log entry of a step-level event at `offset` in its block; `None` for events that are not
/// logged (deltas, checkpoints, and what is derived from the records: saved, loaded, interrupt).
pub(crate) fn entry(offset: u64, event: &Event<'_>) -> Option<Value> {
    let o = Value::from(offset);
    let e = match event {
        Event::StepStart { step } => vec![o, "ss".into(), (*step).into()],
        Event::StepFinish { step, usage, .. } => {
            let mut v = vec![o, "sf".into(), (*step).into()];
            if let Some(u) = usage {
                v.push(Value::from(u.input_tokens));
                v.push(Value::from(u.output_tokens));
            }
            v
        }
        Event::ToolCall { id, .. } => vec![o, "tc".into(), (*id).into()],
        Event::ToolResult { id, .. } => vec![o, "tr".into(), (*id).into()],
        Event::ApprovalRequested { id, .. } => vec![o, "aq".into(), (*id).into()],
        Event::ApprovalResponse {
            id,
            approved,
            modified_args,
            message,
            by,
            remembered,
            pending,
            ..
        } => {
            let mut v = vec![
                o,
                "ar".into(),
                (*id).into(),
                (*approved).into(),
                modified_args.cloned().unwrap_or(Value::Null),
                message.map_or(Value::Null, Value::from),
            ];
            // Who decided, and how: only when there is something to say (older entries end before).
            if by.is_some() || *remembered || *pending {
                v.push(by.map_or(Value::Null, Value::from));
                v.push((*remembered).into());
                v.push((*pending).into());
            }
            v
        }
        Event::StateChanged { .. } => vec![o, "sc".into()],
        // A subagent's: whole, with its path (its payload is in no state of this session when the subagent ends).
        Event::Nested(n) if crate::subagent::NESTS => {
            entry(0, n.event)?;
            vec![o, "n".into(), serde_json::from_str(&event.to_json()).ok()?]
        }
        Event::Compacted {
            removed_messages,
            removed_bytes,
            messages,
        } => vec![
            o,
            "cp".into(),
            (*removed_messages).into(),
            (*removed_bytes).into(),
            (*messages).into(),
        ],
        // The summary is the state's (`summarized`) at the record that follows.
        Event::Summarized {
            removed_messages,
            removed_bytes,
            messages,
            ..
        } => vec![
            o,
            "sm".into(),
            (*removed_messages).into(),
            (*removed_bytes).into(),
            (*messages).into(),
        ],
        Event::SummaryFailed { error } => vec![o, "sx".into(), (*error).into()],
        _ => return None,
    };
    Some(Value::Array(e))
}

/// The call `id` of the state's open turn (or of any assistant message, newest first).
fn call<'a>(state: &'a Checkpoint, id: &str) -> Option<&'a crate::message::ToolUse> {
    state
        .messages
        .iter()
        .rev()
        .find_map(|m| m.tool_uses().find(|u| u.id == id))
}

/// The result of call `id` in the state at the record that logged it.
fn result<'a>(state: &'a Checkpoint, id: &str) -> Option<&'a ToolResult> {
    state.tool_results.iter().find(|r| r.tool_use_id == id).or_else(|| {
        state
            .messages
            .iter()
            .rev()
            .find_map(|m| m.tool_results().find(|r| r.tool_use_id == id))
    })
}

/// A logged entry as the event it was, its payload read from `state` (the state at its record); with its
/// offset. `None` for an entry this build does not know.
pub(crate) fn expand<'a>(e: &'a Value, state: &'a Checkpoint) -> Option<(u64, Event<'a>)> {
    let a = e.as_array()?;
    let offset = a.first()?.as_u64()?;
    let str_at = |i: usize| a.get(i).and_then(Value::as_str);
    let u64_at = |i: usize| a.get(i).and_then(Value::as_u64);
    let step = || u64_at(2).and_then(|s| u32::try_from(s).ok());
    let event = match str_at(1)? {
        "ss" => Event::StepStart { step: step()? },
        "sf" => Event::StepFinish {
            step: step()?,
            content: state
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::Assistant)?
                .blocks(),
            usage: match (u64_at(3), u64_at(4)) {
                (Some(input_tokens), Some(output_tokens)) => Some(Usage {
                    input_tokens,
                    output_tokens,
                }),
                _ => None,
            },
        },
        "tc" => {
            let c = call(state, str_at(2)?)?;
            Event::ToolCall {
                id: &c.id,
                tool_name: &c.name,
                input: &c.input,
            }
        }
        "tr" => {
            let id = str_at(2)?;
            let r = result(state, id)?;
            Event::ToolResult {
                id: &r.tool_use_id,
                tool_name: call(state, id).map_or("", |c| c.name.as_str()),
                content: &r.content,
                is_error: r.is_error,
            }
        }
        "aq" => {
            let i = state.interrupts.iter().find(|i| Some(i.id.as_str()) == str_at(2))?;
            Event::ApprovalRequested {
                id: &i.id,
                tool_name: &i.tool_name,
                input: &i.input,
                expires_at: i.expires_at,
                approvers: i.approvers,
            }
        }
        "ar" => {
            let id = str_at(2)?;
            Event::ApprovalResponse {
                id,
                tool_name: call(state, id).map_or("", |c| c.name.as_str()),
                approved: a.get(3)?.as_bool()?,
                modified_args: a.get(4).filter(|v| !v.is_null()),
                message: str_at(5),
                by: str_at(6),
                remembered: a.get(7).and_then(Value::as_bool).unwrap_or(false),
                pending: a.get(8).and_then(Value::as_bool).unwrap_or(false),
            }
        }
        "sc" => Event::StateChanged {
            state: state.state.as_ref()?,
        },
        "cp" => Event::Compacted {
            removed_messages: usize::try_from(u64_at(2)?).ok()?,
            removed_bytes: usize::try_from(u64_at(3)?).ok()?,
            messages: usize::try_from(u64_at(4)?).ok()?,
        },
        "sm" => Event::Summarized {
            removed_messages: usize::try_from(u64_at(2)?).ok()?,
            removed_bytes: usize::try_from(u64_at(3)?).ok()?,
            messages: usize::try_from(u64_at(4)?).ok()?,
            summary: &state.summarized.as_ref()?.text,
        },
        "sx" => Event::SummaryFailed { error: str_at(2)? },
        _ => return None,
    };
    Some((offset, event))
}

/// A subagent's logged event (`[offset, "n", event]`): what it is read back from.
pub(crate) struct Logged<'a> {
    pub(crate) offset: u64,
    event: &'a Value,
    path: Vec<&'a str>,
    /// A `step-finish`'s content, read.
    content: Vec<ContentBlock>,
}

impl<'a> Logged<'a> {
    /// The entry `e` when it is a subagent's event.
    pub(crate) fn of(e: &'a Value) -> Option<Self> {
        let [offset, code, event] = e.as_array()?.as_slice() else {
            return None;
        };
        if code.as_str() != Some("n") || !crate::subagent::NESTS {
            return None;
        }
        let path = event
            .get("path")?
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()?;
        let content = match event.get("content") {
            Some(c @ Value::Array(_)) => serde_json::from_str(&c.to_string()).ok()?,
            _ => Vec::new(),
        };
        Some(Logged {
            offset: offset.as_u64()?,
            event,
            path,
            content,
        })
    }

    /// The subagent's event as it was reported, and its path (`None` for an event this build does not log).
    pub(crate) fn event(&self) -> Option<(Event<'_>, &[&'a str])> {
        let v = self.event;
        let str_of = |k: &str| v.get(k).and_then(Value::as_str);
        let u64_of = |k: &str| v.get(k).and_then(Value::as_u64);
        let step = || u64_of("step").and_then(|s| u32::try_from(s).ok());
        let size = |k: &str| u64_of(k).and_then(|n| usize::try_from(n).ok());
        let event = match str_of("type")? {
            "step-start" => Event::StepStart { step: step()? },
            "step-finish" => Event::StepFinish {
                step: step()?,
                content: &self.content,
                usage: match v.get("usage") {
                    Some(u) => Some(serde_json::from_str(&u.to_string()).ok()?),
                    None => None,
                },
            },
            "tool-call" => Event::ToolCall {
                id: str_of("id")?,
                tool_name: str_of("toolName")?,
                input: v.get("input")?,
            },
            "tool-result" => Event::ToolResult {
                id: str_of("id")?,
                tool_name: str_of("toolName")?,
                content: str_of("content")?,
                is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
            },
            "approval-requested" => Event::ApprovalRequested {
                id: str_of("id")?,
                tool_name: str_of("toolName")?,
                input: v.get("input")?,
                expires_at: u64_of("expiresAt"),
                approvers: u64_of("approvers").and_then(|n| u32::try_from(n).ok()),
            },
            "approval-response" => Event::ApprovalResponse {
                id: str_of("id")?,
                tool_name: str_of("toolName")?,
                approved: v.get("approved")?.as_bool()?,
                modified_args: v.get("modifiedArgs"),
                message: str_of("message"),
                by: str_of("by"),
                remembered: v.get("remembered").and_then(Value::as_bool).unwrap_or(false),
                pending: v.get("pending").and_then(Value::as_bool).unwrap_or(false),
            },
            "state-changed" => Event::StateChanged { state: v.get("state")? },
            "compacted" => Event::Compacted {
                removed_messages: size("removedMessages")?,
                removed_bytes: size("removedBytes")?,
                messages: size("messages")?,
            },
            "summarized" => Event::Summarized {
                removed_messages: size("removedMessages")?,
                removed_bytes: size("removedBytes")?,
                messages: size("messages")?,
                summary: str_of("summary")?,
            },
            "summary-failed" => Event::SummaryFailed {
                error: str_of("error")?,
            },
            _ => return None,
        };
        Some((event, &self.path))
    }
}

/// The summary kept beside a record: the state's, at position `seq` after `parent`.
pub(crate) fn summary(state: &Checkpoint, seq: u64, parent: u64) -> crate::checkpoint::CheckpointSummary {
    let mut s = state.summary();
    s.step = Some(seq);
    s.parent_step = (parent > 0).then_some(parent);
    s.label = None;
    // The run's id is the head's to show; a record's summary does without it.
    s.run_id = None;
    s
}

/// The messages of an answer that ends a call: the last assistant message's text.
pub(crate) fn answer_text(state: &Checkpoint) -> String {
    state
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(Message::text)
        .unwrap_or_default()
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use serde_json::json;

    fn cp(v: Value) -> Checkpoint {
        Checkpoint::from_value(v).unwrap()
    }

    fn round_trip(base: &Checkpoint, next: &Checkpoint, saved: Saved) -> Diff {
        let (d, _) = diff(&Base::of(base), next, saved);
        let text = crate::json::to_string(&d).unwrap();
        let back: Diff = serde_json::from_str(&text).unwrap();
        let mut state = base.clone();
        apply(&mut state, back, 2).unwrap();
        assert_eq!(&state, next, "diff {text}");
        d
    }

    fn open_turn() -> Checkpoint {
        cp(
            json!({"version": 2, "runId": "r", "iterations": 1, "usage": {"inputTokens": 1, "outputTokens": 2},
            "messages": [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}},
                                                  {"type": "tool_use", "id": "b", "name": "t", "input": {}}]}],
            "toolResults": [{"toolUseId": "b", "content": "B"}], "reviewed": true, "approved": ["b"], "updatedAt": 5}),
        )
    }

    #[test]
    fn a_kept_failed_run_is_written_by_the_step_that_kept_it_only() {
        let base = open_turn();
        let mut next = base.clone();
        let failed = json!([{"id": "a", "toolName": "t", "error": {"name": "ModelError", "message": "down"},
            "checkpoint": {"version": 2, "messages": [{"role": "user", "content": "x"}], "iterations": 0,
                           "usage": {"inputTokens": 0, "outputTokens": 0}}}]);
        next.failed_subagents = serde_json::from_value(failed.clone()).unwrap();
        let d = round_trip(&base, &next, Saved::default());
        assert_eq!(d.set.get("failedSubagents"), Some(&failed));
        // A later step that keeps it as it was writes nothing of it.
        let mut later = next.clone();
        later.updated_at = Some(6);
        let d = round_trip(&next, &later, Saved::default());
        assert!(!d.set.contains_key("failedSubagents"), "{d:?}");
        // Gone (a restore to before it): unset.
        let d = round_trip(&later, &base, Saved::default());
        assert!(d.unset.contains(&"failedSubagents".to_owned()), "{d:?}");
    }

    #[test]
    fn a_result_then_a_closed_turn_and_an_answer_write_only_what_is_new() {
        let base = open_turn();
        let mut next = base.clone();
        next.tool_results.push(ToolResult {
            tool_use_id: "a".into(),
            content: "A".into(),
            is_error: false,
        });
        next.updated_at = Some(6);
        let d = round_trip(
            &base,
            &next,
            Saved {
                unchanged: 2,
                dropped: None,
            },
        );
        assert!(d.add.is_empty() && d.rk.is_none() && d.radd.len() == 1, "{d:?}");
        assert_eq!(d.set.keys().collect::<Vec<_>>(), ["updatedAt"]);

        // The turn closes (results in call order) and the model answers.
        let mut after = next.clone();
        after.close_turn();
        after
            .messages
            .push(Message::assistant(vec![ContentBlock::text("done")]));
        after.iterations = 2;
        let d = round_trip(
            &next,
            &after,
            Saved {
                unchanged: 2,
                dropped: None,
            },
        );
        assert!(
            d.close && d.keep.is_none() && d.add.len() == 1 && d.radd.is_empty(),
            "{d:?}"
        );
        let text = crate::json::to_string(&d).unwrap();
        assert!(!text.contains("\"A\""), "the results are not written again: {text}");
    }

    #[test]
    fn compaction_edits_and_small_fields_round_trip() {
        let mut base = open_turn();
        base.tool_results.clear();
        base.messages.truncate(1);
        for i in 0..6 {
            base.messages
                .push(Message::assistant(vec![ContentBlock::text(format!("a{i}"))]));
            base.messages.push(Message::user(format!("u{i}")));
        }
        // Compaction dropped 1..5, then the last user message was edited and a state appeared.
        let mut next = base.clone();
        next.messages.drain(1..5);
        let last = next.messages.len() - 1;
        next.messages[last] = Message::user("edited");
        next.state = Some(json!({"todos": [1, 2.5]}));
        next.approved.clear();
        next.question = Some("Q?".into());
        let d = round_trip(
            &base,
            &next,
            Saved {
                unchanged: last,
                dropped: Some((1, 4)),
            },
        );
        assert_eq!(d.drop, Some((1, 4)));
        assert_eq!(d.add.len(), 1);
        assert!(
            d.unset.contains(&"approved".to_owned()) && d.set.contains_key("state"),
            "{d:?}"
        );
        // And back: the state goes, structured appears.
        let mut again = next.clone();
        again.state = None;
        again.structured = Some(Value::Null);
        round_trip(
            &next,
            &again,
            Saved {
                unchanged: again.messages.len(),
                dropped: None,
            },
        );
    }

    #[test]
    fn a_diff_that_does_not_fit_its_parent_is_refused_with_its_record() {
        let mut state = open_turn();
        let d = Diff {
            keep: Some(9),
            ..Diff::default()
        };
        let e = apply(&mut state, d, 7).unwrap_err();
        assert_eq!(e.to_string(), "session record 7: keep 9: the parent has 2 messages");
        let d = Diff {
            set: [("nope".to_owned(), json!(1))].into_iter().collect(),
            ..Diff::default()
        };
        assert!(apply(&mut state, d, 7).is_err());
    }

    #[test]
    fn stored_values_are_told_apart() {
        let limits = crate::limits::Limits::default();
        let head = r#"{"session":1,"seq":4,"at":9,"labels":{"x":2}}"#;
        assert!(matches!(parse(head, &limits), Ok(Stored::Head(h)) if h.seq == 4 && h.labels["x"] == 2));
        let mut labels = Labels::new();
        relabel(&mut labels, 3, "a");
        relabel(&mut labels, 3, "b");
        relabel(&mut labels, 5, "b");
        assert_eq!(
            (label_of(&labels, 3), label_of(&labels, 5)),
            (None, Some("b".to_owned()))
        );
        let rec = r#"{"log":{"seq":3,"ev":[[1,"ss",2]]},"d":{"radd":[{"toolUseId":"a","content":"A"}]}}"#;
        assert!(
            matches!(parse(rec, &limits), Ok(Stored::Diff(l, Body::Read(d))) if l.seq == 3 && l.parent() == 2 && d.radd.len() == 1)
        );
        let full = open_turn().to_json();
        assert!(matches!(parse(&full, &limits), Ok(Stored::Full(_, None))));
        let with_log = full.replacen('{', r#"{"log":{"seq":1},"#, 1);
        assert!(matches!(parse(&with_log, &limits), Ok(Stored::Full(_, Some(l))) if l.seq == 1));
        assert!(parse("[1]", &limits).is_err());
    }

    #[test]
    fn logged_events_come_back_with_their_payload_from_the_state() {
        let state = open_turn();
        let input = json!({});
        for event in [
            Event::ToolCall {
                id: "a",
                tool_name: "t",
                input: &input,
            },
            Event::ToolResult {
                id: "b",
                tool_name: "t",
                content: "B",
                is_error: false,
            },
            Event::StepStart { step: 3 },
        ] {
            let e = entry(7, &event).unwrap();
            assert!(crate::json::to_string(&e).unwrap().len() < 24, "{e}");
            let (offset, back) = expand(&e, &state).unwrap();
            assert_eq!((offset, back), (7, event));
        }
        assert!(entry(1, &Event::TextDelta { step: 1, text: "x" }).is_none());
    }
}
