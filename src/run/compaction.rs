//! Long runs within the stores' limits: before a model call, the oldest whole steps go while the history is
//! over its bounds (a model turn always with its tool results, so every request stays provider-valid) — dropped, or
//! replaced by a summary the model writes.

use serde::{Deserialize, Serialize};

use super::{Run, Step};
use crate::message::{ContentBlock, Role};

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
    /// Trailing messages always kept (default 0: the last step is kept whatever this says), extended to a whole
    /// step.
    pub keep_last: usize,
    /// The oldest steps are replaced by a summary the model writes ([`Step::Summarize`]) instead of dropped; the
    /// summary brings the history to half its bounds, so that one summary serves several steps.
    pub summarize: bool,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            max_bytes: None,
            max_messages: None,
            keep_first: 1,
            keep_last: 0,
            summarize: false,
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

    /// Always keeps the last `keep_last` messages.
    pub fn keep_last(mut self, keep_last: usize) -> Self {
        self.keep_last = keep_last;
        self
    }

    /// Replaces the oldest steps with a summary the model writes, instead of dropping them.
    pub fn summarize(mut self) -> Self {
        self.summarize = true;
        self
    }
}

/// The summary that stands for the steps a summarizing compaction replaced (`checkpoint.summarized`): the model's
/// text, how many messages it replaced in all, and a hash of them. The model reads it after the agent's
/// instructions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "serde_json::Value")]
#[non_exhaustive]
pub struct Summarized {
    /// The summary, as the model wrote it (of the earlier summary too, when there was one).
    pub text: String,
    /// Messages replaced, in all the summaries of the run.
    pub messages: u64,
    /// `fnv1a64:` and 16 hex digits: FNV-1a over the earlier summary's hash and the JSON of each message replaced —
    /// what was replaced, told apart (not a signature: a signed checkpoint covers the summary).
    pub hash: String,
}

/// Read through the JSON value reader every variant has (a derived reader would add its own code to each); the
/// checkpoint's validation says what is wrong, by its path.
impl TryFrom<serde_json::Value> for Summarized {
    type Error = &'static str;

    fn try_from(value: serde_json::Value) -> Result<Self, &'static str> {
        use serde_json::Value;
        let Value::Object(mut o) = value else {
            return Err("summarized: expected { text, messages, hash }");
        };
        let mut take = |k: &str| o.remove(k).unwrap_or(Value::Null);
        match (take("text"), take("messages"), take("hash")) {
            (Value::String(text), Value::Number(n), Value::String(hash)) if n.as_u64().is_some() => Ok(Summarized {
                text,
                messages: n.as_u64().unwrap_or_default(),
                hash,
            }),
            _ => Err("summarized: expected { text, messages, hash }"),
        }
    }
}

/// What [`Step::Summarize`] asks the model to condense.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SummaryRequest {
    /// How many messages the summary replaces.
    pub messages: usize,
    /// The earlier summary, if any, and the replaced messages, as text: what to send the model (after the
    /// instructions for summarizing) as the one user message of its request.
    pub transcript: String,
}

/// False in the npm package's core variant (`js` without `js-summaries`): no run summarizes there, and the compiler
/// leaves the summarizing code out of it.
pub(crate) const SUMMARIZES: bool = cfg!(any(not(feature = "js"), feature = "js-summaries"));

/// The instructions of a summary call when the agent gives none.
pub const DEFAULT_SUMMARY_INSTRUCTIONS: &str = "Summarize the conversation below for the assistant who will continue \
it: the user's goal, what was decided, what the tools found (names, numbers, ids), and what is still open. Plain \
text, at most 300 words; no preamble.";

/// FNV-1a, 64 bits.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The messages of a summary's transcript, as text: who said what, what was called and what it returned.
fn transcript(out: &mut String, messages: &[crate::message::Message]) {
    use std::fmt::Write as _;
    for m in messages {
        let who = if m.role == Role::User { "User" } else { "Assistant" };
        for b in m.blocks().iter() {
            let _ = match b {
                ContentBlock::Text { text, .. } => writeln!(out, "{who}: {text}"),
                ContentBlock::ToolUse(u) => writeln!(
                    out,
                    "{who} called {} with {}",
                    u.name,
                    crate::keys::canonical_json(&u.input)
                ),
                ContentBlock::ToolResult(r) if r.is_error => writeln!(out, "The call failed: {}", r.content),
                ContentBlock::ToolResult(r) => writeln!(out, "The call returned: {}", r.content),
                _ => Ok(()),
            };
        }
    }
}

/// What one compaction removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compacted {
    pub(crate) messages: usize,
    pub(crate) bytes: usize,
}

/// What a compaction would remove: messages `keep..cut`, `bytes` of JSON.
struct Cut {
    keep: usize,
    cut: usize,
    bytes: usize,
}

/// How much longer the library writes messages than any JSON text they were read from can be: strings are
/// never written longer (escapes only shorten), whitespace and dropped keys shorten, a thinking block without
/// `signature` gains 15 bytes (on at least 33), and a number at most 4.5 times (`1e15` is written
/// `1000000000000000.0`; measured over every `<m>e<n>` spelling). A bound, rounded up.
const TEXT_GROWTH: usize = 5;

/// Room kept in the size estimate for a checkpoint's fields other than its messages, results, state and
/// interrupts (ids, times, usage, signature).
const CHECKPOINT_FRAME_BYTES: usize = 2048;
impl Run<'_> {
    /// Brings the JSON sizes of the messages up to date: those measured before stay valid but for the last
    /// one measured (a user text may have joined it, a tool call's input may have been edited).
    pub(super) fn measure(&mut self) {
        let messages = &self.state.messages;
        let valid = self.sizes.len().saturating_sub(1).min(messages.len());
        self.sizes.truncate(valid);
        self.sizes.extend(messages.iter().skip(valid).map(crate::json::len));
    }

    /// About how many bytes the checkpoint's JSON takes now (messages, results, state, interrupts; a little
    /// over), for the size limit where values enter the run.
    pub(super) fn bytes(&mut self) -> usize {
        self.measure();
        let messages: usize = self.sizes.iter().sum();
        messages.saturating_add(self.other_bytes())
    }

    /// [`Run::bytes`] or more: the text the run was resumed from, times [`TEXT_GROWTH`], stands for the
    /// messages it still covers (what it says besides them is counted twice), the rest measured.
    fn bytes_at_most(&mut self) -> usize {
        let Some((text, covered)) = self.read_bytes.filter(|_| self.sizes.is_empty()) else {
            return self.bytes();
        };
        // Measured once each, as `measure` does (only the last one measured may have changed): re-measuring every
        // newer message each time made a long resumed run quadratic.
        let newer = self.state.messages.get(covered..).unwrap_or_default();
        let valid = self.newer_sizes.len().saturating_sub(1).min(newer.len());
        self.newer_sizes.truncate(valid);
        self.newer_sizes.extend(newer.iter().skip(valid).map(crate::json::len));
        let newer: usize = self.newer_sizes.iter().sum();
        text.saturating_mul(TEXT_GROWTH)
            .saturating_add(newer)
            .saturating_add(self.other_bytes())
    }

    /// The JSON size of the results, state and interrupts, and the frame around them.
    fn other_bytes(&self) -> usize {
        let results: usize = self.state.tool_results.iter().map(crate::json::len).sum();
        let state = self.state.state.as_ref().map_or(0, crate::json::len);
        let interrupts: usize = self.state.interrupts.iter().map(crate::json::len).sum();
        let failed = self.failed_bytes;
        let summary = self.state.summarized.as_ref().map_or(0, crate::json::len);
        results
            .saturating_add(state)
            .saturating_add(summary)
            .saturating_add(interrupts)
            .saturating_add(failed)
            .saturating_add(CHECKPOINT_FRAME_BYTES)
    }

    /// Why a value of `adding` more bytes (or replacing `replacing` bytes with `adding`) would make the
    /// checkpoint too large to read back (`limits.maxCheckpointBytes`), if it would.
    pub(crate) fn too_large(&mut self, adding: usize, replacing: usize) -> Option<String> {
        let max = self.config.limits.max_checkpoint_bytes;
        // An upper bound first; measured exactly only when it says no.
        if self.bytes_at_most().saturating_sub(replacing).saturating_add(adding) <= max {
            return None;
        }
        let total = self.bytes().saturating_sub(replacing).saturating_add(adding);
        (total > max).then(|| {
            format!("it is {adding} bytes of JSON, and the checkpoint would be about {total} bytes; at most {max} (limits.maxCheckpointBytes)")
        })
    }

    /// What the last compaction removed (once), for the driver to report.
    pub(crate) fn take_compacted(&mut self) -> Option<Compacted> {
        self.compacted.take()
    }

    /// The oldest whole steps after the kept prefix that bring the history within `rule`'s bounds divided by
    /// `divisor` (or as near as the last step and `keep_last` allow), when it is over them; `None` when it is not
    /// over them or nothing can go. The prefix ends with a user message; what follows starts with a model turn, so
    /// roles still alternate and every tool_result still follows its tool_use.
    fn cut(&mut self, rule: Compaction, divisor: usize) -> Option<Cut> {
        self.read_bytes = None;
        self.measure();
        let messages = &self.state.messages;
        let sizes = &self.sizes;
        let total: usize = sizes.iter().sum();
        let over = |count: usize, bytes: usize, divisor: usize| {
            rule.max_messages.is_some_and(|max| count > max / divisor)
                || rule.max_bytes.is_some_and(|max| bytes > max / divisor)
        };
        if !over(messages.len(), total, 1) {
            return None;
        }
        // The kept prefix, extended so that it ends with a user message.
        let mut keep = rule.keep_first.min(messages.len());
        while keep < messages.len() && messages.get(keep.wrapping_sub(1)).is_some_and(|m| m.role != Role::User) {
            keep += 1;
        }
        // The history after the prefix may start at any assistant message but the last step's, and keeps the last
        // `keep_last` messages.
        let len = messages.len();
        let limit = len
            .saturating_sub(1)
            .min(len.saturating_sub(rule.keep_last).saturating_add(1));
        // `cut`: where the kept history resumes; `removed`: the bytes of messages[keep..cut].
        let (mut cut, mut removed) = (keep, 0usize);
        let mut passed = 0usize;
        for (i, m) in messages.iter().enumerate().skip(keep) {
            if i >= limit {
                break;
            }
            if m.role == Role::Assistant && i > keep {
                (cut, removed) = (i, passed);
                if !over(messages.len() - (cut - keep), total - removed, divisor) {
                    break;
                }
            }
            passed += sizes.get(i).copied().unwrap_or_default();
        }
        (cut > keep).then_some(Cut {
            keep,
            cut,
            bytes: removed,
        })
    }

    /// Drops the oldest whole steps after the kept prefix until the history is within `rule` (or only the
    /// last step is left).
    pub(super) fn compact(&mut self, rule: Compaction) {
        let Some(Cut { keep, cut, bytes }) = self.cut(rule, 1) else {
            return;
        };
        self.state.messages.drain(keep..cut);
        self.sizes.drain(keep..cut);
        self.dropped(keep, cut);
        self.compacted = Some(Compacted {
            messages: cut - keep,
            bytes,
        });
    }

    /// [`Step::Summarize`] when the history is over `rule`'s bounds and its oldest steps can be summarized (not
    /// again before the next model call once a summary failed).
    pub(super) fn summary_step(&mut self, rule: Compaction) -> Option<Step> {
        if !SUMMARIZES || self.summary_failed {
            return None;
        }
        let Cut { keep, cut, .. } = self.cut(rule, 2)?;
        let mut text = String::new();
        if let Some(s) = &self.state.summarized {
            text.push_str("Summary of what came before:\n");
            text.push_str(&s.text);
            text.push_str("\n\nThen:\n");
        }
        transcript(&mut text, self.state.messages.get(keep..cut).unwrap_or_default());
        Some(Step::Summarize(SummaryRequest {
            messages: cut - keep,
            transcript: text,
        }))
    }

    /// The summary the model wrote for the last [`Step::Summarize`]: the messages it covers are replaced by it
    /// (`checkpoint.summarized`), and its tokens count in the run's usage.
    ///
    /// # Errors
    /// Why the summary was not kept (the run is then as it was, as after [`Run::summary_failed`]): it is empty, or
    /// it would make the checkpoint too large to read back (`limits.maxCheckpointBytes`) — it enters the run as any
    /// value does.
    pub fn summarized(&mut self, text: String, usage: Option<crate::message::Usage>, now: u64) -> Result<(), String> {
        self.replace_with_summary(text, usage, now).map(|_| ())
    }

    /// [`Run::summarized`], saying what the summary replaced.
    pub(crate) fn replace_with_summary(
        &mut self,
        text: String,
        usage: Option<crate::message::Usage>,
        now: u64,
    ) -> Result<Compacted, String> {
        if let Some(u) = usage {
            self.state.usage.add(u);
        }
        let rule = self.config.compaction.unwrap_or_default();
        let text = text.trim().to_owned();
        let cut = match self.cut(rule, 2) {
            Some(_) if text.is_empty() => Err("the model wrote no summary text".to_owned()),
            Some(c) => match self.too_large(crate::json::len(&text).saturating_add(64), c.bytes) {
                Some(why) => Err(format!("the summary was not kept: {why}")),
                None => Ok(c),
            },
            None => Err("nothing to summarize".to_owned()),
        };
        let Cut { keep, cut, bytes } = cut.inspect_err(|_| self.summary_failed = true)?;
        self.touch(now);
        let before = self.state.summarized.take();
        let mut hash = fnv1a(
            0xcbf2_9ce4_8422_2325,
            before.as_ref().map_or("", |s| s.hash.as_str()).as_bytes(),
        );
        for m in self.state.messages.get(keep..cut).unwrap_or_default() {
            hash = fnv1a(hash, crate::json::to_string(m).unwrap_or_default().as_bytes());
        }
        let replaced = u64::try_from(cut - keep).unwrap_or(u64::MAX);
        self.state.summarized = Some(Summarized {
            text,
            messages: before.map_or(0, |s| s.messages).saturating_add(replaced),
            hash: format!("fnv1a64:{hash:016x}"),
        });
        self.state.messages.drain(keep..cut);
        self.sizes.drain(keep..cut);
        self.dropped(keep, cut);
        Ok(Compacted {
            messages: cut - keep,
            bytes,
        })
    }

    /// The summary call of the last [`Step::Summarize`] failed: the run stays as it was, and goes on to its model
    /// call (the next step asks again).
    pub fn summary_failed(&mut self) {
        self.summary_failed = true;
    }

    /// The system text of the next model call: the agent's instructions and, once steps were summarized, the
    /// summary standing for them.
    pub(crate) fn system<'a>(&self, instructions: Option<&'a str>) -> Option<std::borrow::Cow<'a, str>> {
        let Some(s) = &self.state.summarized else {
            return instructions.map(std::borrow::Cow::Borrowed);
        };
        let mut text = instructions.map(|i| format!("{i}\n\n")).unwrap_or_default();
        text.push_str(&format!(
            "A summary of the {} earlier messages of this conversation, which were removed to keep it short:\n{}",
            s.messages, s.text
        ));
        Some(std::borrow::Cow::Owned(text))
    }
}
