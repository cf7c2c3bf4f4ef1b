//! What a listing shows about a stored run, without its messages: its own JSON, and the compact form stores
//! keep beside each value.

use serde::{Deserialize, Serialize};

use crate::message::Usage;

fn is_false(b: &bool) -> bool {
    !*b
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
