//! Long runs within the stores' limits: before a model call, the oldest whole steps go while the history is
//! over its bounds (a model turn always with its tool results, so every request stays provider-valid).

use super::Run;
use crate::message::Role;

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
        results
            .saturating_add(state)
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

    /// Drops the oldest whole steps after the kept prefix until the history is within `rule` (or only the
    /// last step is left). The prefix ends with a user message; what follows starts with a model turn, so
    /// roles still alternate and every tool_result still follows its tool_use.
    pub(super) fn compact(&mut self, rule: Compaction) {
        self.read_bytes = None;
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
}
