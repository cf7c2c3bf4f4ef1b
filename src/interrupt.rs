//! Pauses and the human's answers: pending [`Interrupt`]s, [`Decision`]s and the [`Resume`] input.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The id of the interrupt a run whose token budget is spent pauses on (`onExceeded: 'ask'`).
pub const BUDGET_INTERRUPT: &str = "budget";

/// Why a run waits for a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum InterruptKind {
    /// A call of a tool with `needs_approval` waits for approve / deny, before any call of its turn ran.
    Approval,
    /// A tool asked a question ([`InterruptError`](crate::InterruptError)).
    Question,
    /// A tool needs input to go on ([`ToolError::Input`](crate::ToolError::Input), an MCP server's
    /// elicitation): answered with accept (and content), decline or cancel, after which the call runs again.
    Elicitation,
    /// The run's token budget is spent and its agent asks (`onExceeded: 'ask'`): approved with a larger budget, the
    /// run goes on; denied, it ends in [`AgentError::BudgetExceeded`](crate::AgentError). Id `budget`, between turns.
    Budget,
}

impl InterruptKind {
    /// `approval`, `question` or `elicitation`: the name the checkpoint and events use.
    pub fn as_str(self) -> &'static str {
        match self {
            InterruptKind::Approval => "approval",
            InterruptKind::Question => "question",
            InterruptKind::Elicitation => "elicitation",
            InterruptKind::Budget => "budget",
        }
    }
}

/// One thing a paused run waits for, named by the id of the tool call it is about.
///
/// `{ kind: "approval", id, toolName, input, expiresAt? }`,
/// `{ kind: "question", id, toolName, input, question, options?, data?, expiresAt? }` or
/// `{ kind: "elicitation", id: "<call id>/<key>", toolName, input, message, requestedSchema }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Interrupt {
    /// Approval request or question.
    pub kind: InterruptKind,
    /// The tool call's id (its `tool_use` id); for an elicitation `<call id>/<key>`.
    pub id: String,
    /// The tool called.
    pub tool_name: String,
    /// The call's input, as the model wrote it.
    pub input: Value,
    /// The question (questions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Choices a UI can offer (questions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// Anything else the tool attached (questions only).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::message::present"
    )]
    pub data: Option<Value>,
    /// After this moment (ms since the epoch) the tool's `on_expire` policy applies instead of an answer.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::whole_opt"
    )]
    pub expires_at: Option<u64>,
    /// What the tool asks (elicitations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The flat JSON Schema an accepted answer's `content` must match (elicitations only).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::message::present"
    )]
    pub requested_schema: Option<Value>,
    /// How many distinct approvers must approve (approval requests of a policy that asks for more than one).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::whole_opt"
    )]
    pub approvers: Option<u32>,
    /// Who approved so far, and when (while fewer than `approvers` did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<crate::approval::ApprovalMark>,
    /// For an interrupt of a subagent ([`agent_tool`](crate::agent_tool)): the ids of the calls that led to it, from
    /// this run's call of the subagent down (its `id` is `<path…>/<the subagent's own interrupt id>`); empty for the
    /// run's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
}

impl Interrupt {
    /// An interrupt of `kind` named `id`, about a call of `tool_name` with `input`; nothing else set.
    pub(crate) fn new(kind: InterruptKind, id: impl Into<String>, tool_name: impl Into<String>, input: Value) -> Self {
        Interrupt {
            kind,
            id: id.into(),
            tool_name: tool_name.into(),
            input,
            question: None,
            options: None,
            data: None,
            expires_at: None,
            message: None,
            requested_schema: None,
            approvers: None,
            approvals: Vec::new(),
            path: Vec::new(),
        }
    }

    /// True for an interrupt of a subagent (its decision goes to the subagent's run).
    pub fn is_nested(&self) -> bool {
        !self.path.is_empty()
    }

    /// What to show the human: the question, or a sentence naming the tool of an approval request.
    pub fn prompt(&self) -> String {
        match (&self.kind, &self.question, &self.message) {
            (InterruptKind::Question | InterruptKind::Budget, Some(q), _) => q.clone(),
            (InterruptKind::Elicitation, _, Some(m)) => m.clone(),
            _ => approval_sentence(&self.tool_name),
        }
    }
}

pub(crate) fn approval_sentence(tool: &str) -> String {
    format!("Approve the call to {tool}?")
}

/// The human's answer to one [`Interrupt`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Decision {
    /// Run the call — with `modified_args` instead of the model's input when given (validated against the
    /// tool's schema; the transcript then shows the input the tool really ran with).
    Approve {
        /// Replacement input.
        #[serde(rename = "modifiedArgs", default, skip_serializing_if = "Option::is_none")]
        modified_args: Option<Value>,
        /// `tool`: approve later calls of the same tool in this run without asking (never one a policy
        /// denies, nor one that waits for several approvers).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remember: Option<crate::approval::Remember>,
        /// Who approves, as the application names them from its own login (needed where an interrupt waits
        /// for several approvers).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// For a `budget` interrupt: the larger budget the run goes on with (`{ totalTokens?, inputTokens?,
        /// outputTokens? }`, each limit given replacing the agent's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<crate::approval::Budget>,
    },
    /// Do not run the call (or decline to answer a question): the model gets an error result with `message`.
    Deny {
        /// Why, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Who denies (recorded in the result the model reads).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// Answer a question.
    Answer {
        /// The answer, which becomes the call's result.
        text: String,
    },
    /// Give an elicitation the input it asks for: `content` must match its `requestedSchema`.
    Accept {
        /// The answer (an object of the schema's properties).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
    },
    /// Refuse an elicitation's request (the server reads `decline` and goes on as it sees fit).
    Decline,
    /// Dismiss an elicitation without a choice (the server reads `cancel`).
    Cancel,
}

impl Decision {
    /// Approve as the model asked.
    pub fn approve() -> Self {
        Decision::Approve {
            modified_args: None,
            remember: None,
            by: None,
            budget: None,
        }
    }
    /// Approve with edited input.
    pub fn approve_with(input: Value) -> Self {
        Decision::Approve {
            modified_args: Some(input),
            remember: None,
            by: None,
            budget: None,
        }
    }
    /// Approve this call and, without asking, later calls of the same tool in this run.
    pub fn approve_and_remember() -> Self {
        Decision::Approve {
            modified_args: None,
            remember: Some(crate::approval::Remember::Tool),
            by: None,
            budget: None,
        }
    }
    /// Go on with a larger token budget (a `budget` interrupt).
    pub fn raise_budget(budget: crate::approval::Budget) -> Self {
        Decision::Approve {
            modified_args: None,
            remember: None,
            by: None,
            budget: Some(budget),
        }
    }
    /// Deny, telling the model why.
    pub fn deny(message: impl Into<String>) -> Self {
        Decision::Deny {
            message: Some(message.into()),
            by: None,
        }
    }
    /// The same decision, made by `approver` (the application's name for the person).
    #[must_use]
    pub fn by(mut self, approver: impl Into<String>) -> Self {
        match &mut self {
            Decision::Approve { by, .. } | Decision::Deny { by, .. } => *by = Some(approver.into()),
            _ => {}
        }
        self
    }
    /// Who made it, when it says.
    pub fn approver(&self) -> Option<&str> {
        match self {
            Decision::Approve { by, .. } | Decision::Deny { by, .. } => by.as_deref(),
            _ => None,
        }
    }
    /// Answer a question.
    pub fn answer(text: impl Into<String>) -> Self {
        Decision::Answer { text: text.into() }
    }
    /// Accept an elicitation with `content`.
    pub fn accept(content: Value) -> Self {
        Decision::Accept { content: Some(content) }
    }
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Decision::Approve { .. } => "approve",
            Decision::Deny { .. } => "deny",
            Decision::Answer { .. } => "answer",
            Decision::Accept { .. } => "accept",
            Decision::Decline => "decline",
            Decision::Cancel => "cancel",
        }
    }
}

/// What [`Agent::resume`](crate::Agent::resume) continues with.
///
/// A string answers the single pending question (or, with nothing pending, is a new user turn; `""`
/// continues as is). Decisions answer each pending interrupt, in order or by id.
///
/// ```
/// use resumable_agent::{Decision, Resume};
/// let by_text: Resume = "end of Q2".into();
/// let by_id = Resume::decisions_by_id([("call_1", Decision::approve()), ("call_2", Decision::deny("not today"))]);
/// # let _ = (by_text, by_id);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Resume {
    /// A text answer (see above).
    Answer(String),
    /// One decision per pending interrupt, in the order of [`Checkpoint::interrupts`](crate::Checkpoint).
    Decisions(Vec<Decision>),
    /// One decision per pending interrupt, keyed by interrupt id.
    DecisionsById(Vec<(String, Decision)>),
    /// Decisions as JSON — an array in interrupt order or an object keyed by interrupt id, as the npm package's
    /// `{ decisions }` — read against what the run waits for, so a problem names the interrupt it is about.
    Json(Value),
    /// No answer at all (the npm package's `resume(checkpoint)` or `resume(checkpoint, null)`): continues a
    /// run that waits for nothing, and is refused with a [`DecisionError`](crate::AgentError::Decision) by a
    /// run that waits for an answer or decisions — a forgotten answer is not the answer `""`.
    Nothing,
}

impl Resume {
    /// Decisions in the order of the pending interrupts.
    pub fn decisions(decisions: impl IntoIterator<Item = Decision>) -> Self {
        Resume::Decisions(decisions.into_iter().collect())
    }
    /// Decisions keyed by interrupt id.
    pub fn decisions_by_id<I: Into<String>>(decisions: impl IntoIterator<Item = (I, Decision)>) -> Self {
        Resume::DecisionsById(decisions.into_iter().map(|(id, d)| (id.into(), d)).collect())
    }
}

impl From<&str> for Resume {
    fn from(s: &str) -> Self {
        Resume::Answer(s.to_owned())
    }
}

impl From<String> for Resume {
    fn from(s: String) -> Self {
        Resume::Answer(s)
    }
}

impl From<&String> for Resume {
    fn from(s: &String) -> Self {
        Resume::Answer(s.clone())
    }
}

/// What happens when a pending interrupt is answered after its `expiresAt`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum OnExpire {
    /// The resume fails with [`AgentError::InterruptExpired`](crate::AgentError) (carrying the checkpoint).
    #[default]
    Error,
    /// The call is treated as denied: it never runs and the model reads that it expired.
    Deny,
}

/// A tool's answer to "does this call need a human's approval?".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Approval {
    /// Run it.
    #[default]
    NotNeeded,
    /// Pause the turn until a human approves or denies it; after `expires_in_ms` the tool's [`OnExpire`]
    /// policy applies.
    Needed {
        /// How long the request stays answerable, in milliseconds.
        expires_in_ms: Option<u64>,
    },
}

impl Approval {
    /// Approval needed, without expiry.
    pub fn needed() -> Self {
        Approval::Needed { expires_in_ms: None }
    }
    /// Approval needed within `ms` milliseconds.
    pub fn needed_within(ms: u64) -> Self {
        Approval::Needed {
            expires_in_ms: Some(ms),
        }
    }
}
