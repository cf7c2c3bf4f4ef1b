//! The agent's own error: what a run, a resume or a session call can fail with. Each layer's error lives in
//! its layer ([`CheckpointError`], [`ModelError`], [`SaverError`]); this one holds any of them, and the
//! checkpoint of the progress a run made. No `JsValue` in here: JS errors are copied to name + message at the
//! edge.

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::model::ModelError;
use crate::saver::SaverError;

/// Everything [`Agent::prompt`](crate::Agent::prompt) and [`Agent::resume`](crate::Agent::resume) can fail with.
///
/// Errors that happen after the run made progress carry the last consistent checkpoint
/// ([`AgentError::checkpoint`]): resume it once the cause is fixed, nothing paid for is lost.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The checkpoint given to `resume` cannot be resumed; nothing ran.
    #[error("invalid checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The agent's configuration is unusable (e.g. two tools with one name).
    #[error("invalid agent config: {0}")]
    Config(String),
    /// An argument of a call is unusable (a session id, a label, a step that is not in the history, ...).
    /// Nothing ran.
    #[error("{0}")]
    Argument(String),
    /// The run used up `maxIterations` model calls (counted across resumes).
    #[error(
        "max iterations reached: the run has made {limit} model calls, its limit; resume the error's checkpoint with a higher maxIterations to continue"
    )]
    MaxIterations {
        /// The limit in force.
        limit: u32,
        /// The run so far.
        checkpoint: Box<Checkpoint>,
    },
    /// The run's token budget is spent: usage (counted across resumes) reached `limit` of `budget` before a
    /// model call. Resuming the checkpoint with a larger budget continues.
    #[error(
        "token budget spent: the run has used {} input and {} output tokens, reaching its {limit} of {}; resume the error's checkpoint with a larger budget to continue",
        usage.input_tokens, usage.output_tokens, budget_text(budget, limit)
    )]
    BudgetExceeded {
        /// The limit reached: `totalTokens`, `inputTokens` or `outputTokens`.
        limit: &'static str,
        /// The budget in force.
        budget: crate::approval::Budget,
        /// What the run has used.
        usage: crate::message::Usage,
        /// The run so far.
        checkpoint: Box<Checkpoint>,
    },
    /// The agent changed since the run paused mid-turn (tools added, removed or changed, other instructions or
    /// approval policy) and its [`OnDrift`](crate::OnDrift) is `Error`: nothing ran; `checkpoint` is the run as it
    /// was. Resume it with an agent whose `on_drift` is `Reapprove` or `Continue`, or with the agent it paused under.
    #[error(
        "the agent changed since this run paused (added: [{}], removed: [{}], changed: [{}]); resume it with onDrift 'reapprove' or 'continue', or with the agent it paused under",
        drift.added.join(", "), drift.removed.join(", "), drift.changed.join(", ")
    )]
    ConfigDrift {
        /// What changed.
        drift: crate::approval::Drift,
        /// The run, unchanged.
        checkpoint: Box<Checkpoint>,
    },
    /// The model failed; the checkpoint is the state before that call.
    #[error("{source}")]
    Model {
        /// What went wrong.
        source: ModelError,
        /// The run so far.
        checkpoint: Box<Checkpoint>,
    },
    /// [`Session::reply`](crate::Session::reply) found no saved checkpoint for the session.
    #[error("session {id:?} not found")]
    SessionNotFound {
        /// The session id.
        id: String,
    },
    /// [`Session::prompt`](crate::Session::prompt) found the session paused on a question.
    #[error("session {id:?} is waiting for an answer to: {question}; reply to it instead of starting over")]
    SessionBusy {
        /// The session id.
        id: String,
        /// The pending question.
        question: String,
    },
    /// The saver failed. When the run had made progress, `checkpoint` holds it (it was not saved).
    #[error("saver: {source}")]
    Saver {
        /// What went wrong.
        source: SaverError,
        /// The run that could not be saved, if any.
        checkpoint: Option<Box<Checkpoint>>,
    },
    /// The input of a resume does not answer exactly what the run waits for (a missing, extra or mistyped
    /// decision, `modifiedArgs` the tool's schema refuses, a text answer to approval requests, ...).
    /// Nothing ran.
    #[error("{}{problem}", id.as_ref().map(|id| format!("decision for {id:?}: ")).unwrap_or_default())]
    Decision {
        /// The interrupt the problem is about, when there is one.
        id: Option<String>,
        /// What is wrong.
        problem: String,
    },
    /// A pending interrupt expired and its tool's policy is to fail. Nothing ran; `checkpoint` is the
    /// run as it was given.
    #[error("interrupt {id:?} expired at {expires_at} (ms since the epoch); its tool's onExpire policy is 'error'")]
    InterruptExpired {
        /// The expired interrupt.
        id: String,
        /// When it expired.
        expires_at: u64,
        /// The unchanged run.
        checkpoint: Box<Checkpoint>,
    },
    /// With an output schema: the model's answer did not validate after the agent's `maxOutputRetries`
    /// corrections. `checkpoint` holds the run with the last answer; resuming it with `""` tries again.
    #[error("the model's answer does not match the output schema after {attempts} attempts: {problem}")]
    Output {
        /// Answers that did not validate.
        attempts: u32,
        /// What was wrong with the last one.
        problem: String,
        /// The run so far.
        checkpoint: Box<Checkpoint>,
    },
    /// A guardrail tripped (or failed): an input guardrail before the turn's first model call (nothing was
    /// sent), or an output guardrail on the final answer (the checkpoint holds the run with it).
    #[error("guardrail {guardrail:?} ({}) tripped: {info}", kind.as_str())]
    Guardrail {
        /// The guardrail's name.
        guardrail: String,
        /// Input or output.
        kind: crate::guardrail::GuardrailKind,
        /// What it found (plain JSON).
        info: serde_json::Value,
        /// The run so far.
        checkpoint: Box<Checkpoint>,
    },
    /// An MCP server (or another server a tool stands for) could not be reached or refused a call; the call
    /// is not recorded as done, and `checkpoint` (from before it) calls it again when resumed.
    #[error("MCP server {}", source)]
    Mcp {
        /// The server, its HTTP status if it answered, and what went wrong.
        source: crate::tool::Unavailable,
        /// The run so far (absent when no run was under way, e.g. listing a server's tools).
        checkpoint: Option<Box<Checkpoint>>,
    },
    /// The caller stopped the run (an aborted signal); `checkpoint` is where it stopped.
    #[error("the run was aborted; its checkpoint holds the progress so far")]
    Aborted {
        /// The run so far.
        checkpoint: Box<Checkpoint>,
    },
    /// [`Outcome::assert_complete`](crate::Outcome::assert_complete) found a paused run.
    #[error("the run is interrupted, waiting for an answer to: {question}")]
    Interrupted {
        /// The pending question.
        question: String,
        /// The paused run.
        checkpoint: Box<Checkpoint>,
    },
}

impl AgentError {
    /// The plain JSON of the error, as an `error` event carries it: `{ name, message, code? }`.
    pub(crate) fn to_plain_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), self.kind_name().into());
        m.insert("message".into(), self.to_string().into());
        if let Some(code) = self.code() {
            m.insert("code".into(), code.into());
        }
        serde_json::Value::Object(m)
    }

    /// The error's name in the npm package (its JS class): `ModelError`, `SaverError`, ….
    pub fn kind_name(&self) -> &'static str {
        match self {
            AgentError::Checkpoint(_) => "CheckpointError",
            AgentError::Config(_) | AgentError::Argument(_) => "ConfigError",
            AgentError::MaxIterations { .. } => "MaxIterationsError",
            AgentError::BudgetExceeded { .. } => "BudgetExceededError",
            AgentError::ConfigDrift { .. } => "ConfigDriftError",
            AgentError::Model { .. } => "ModelError",
            AgentError::SessionNotFound { .. } => "SessionNotFoundError",
            AgentError::SessionBusy { .. } => "SessionBusyError",
            AgentError::Saver { .. } => "SaverError",
            AgentError::Decision { .. } => "DecisionError",
            AgentError::InterruptExpired { .. } => "InterruptExpiredError",
            AgentError::Output { .. } => "OutputError",
            AgentError::Guardrail { .. } => "GuardrailError",
            AgentError::Aborted { .. } => "AbortedError",
            AgentError::Mcp { .. } => "McpError",
            AgentError::Interrupted { .. } => "RunInterruptedError",
        }
    }

    /// The code of a checkpoint or saver error (`SIGNATURE`, `CONFLICT`, …).
    pub fn code(&self) -> Option<&'static str> {
        match self {
            AgentError::Checkpoint(e) => Some(e.code()),
            AgentError::Saver { source, .. } => Some(source.code()),
            _ => None,
        }
    }

    pub(crate) fn checkpoint_mut(&mut self) -> Option<&mut Checkpoint> {
        match self {
            AgentError::MaxIterations { checkpoint, .. }
            | AgentError::BudgetExceeded { checkpoint, .. }
            | AgentError::ConfigDrift { checkpoint, .. }
            | AgentError::Model { checkpoint, .. }
            | AgentError::Interrupted { checkpoint, .. }
            | AgentError::InterruptExpired { checkpoint, .. }
            | AgentError::Output { checkpoint, .. }
            | AgentError::Guardrail { checkpoint, .. }
            | AgentError::Aborted { checkpoint } => Some(checkpoint),
            AgentError::Saver { checkpoint, .. } | AgentError::Mcp { checkpoint, .. } => checkpoint.as_deref_mut(),
            _ => None,
        }
    }

    /// The last consistent checkpoint, when the run had made progress.
    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        match self {
            AgentError::MaxIterations { checkpoint, .. }
            | AgentError::BudgetExceeded { checkpoint, .. }
            | AgentError::ConfigDrift { checkpoint, .. }
            | AgentError::Model { checkpoint, .. }
            | AgentError::Interrupted { checkpoint, .. }
            | AgentError::InterruptExpired { checkpoint, .. }
            | AgentError::Output { checkpoint, .. }
            | AgentError::Guardrail { checkpoint, .. }
            | AgentError::Aborted { checkpoint } => Some(checkpoint),
            AgentError::Saver { checkpoint, .. } | AgentError::Mcp { checkpoint, .. } => checkpoint.as_deref(),
            AgentError::Checkpoint(_)
            | AgentError::Config(_)
            | AgentError::Argument(_)
            | AgentError::Decision { .. }
            | AgentError::SessionNotFound { .. }
            | AgentError::SessionBusy { .. } => None,
        }
    }
}

/// The limit `limit` of `budget`, as a number.
fn budget_text(budget: &crate::approval::Budget, limit: &str) -> String {
    let n = match limit {
        "inputTokens" => budget.input_tokens,
        "outputTokens" => budget.output_tokens,
        _ => budget.total_tokens,
    };
    n.map_or_else(|| "?".into(), |n| n.to_string())
}
