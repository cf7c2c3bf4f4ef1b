//! One error enum per layer. No `JsValue` in here: JS errors are copied to name + message at the edge.

use crate::checkpoint::Checkpoint;

/// A checkpoint that cannot be resumed: bad JSON, a bad shape, broken invariants, or a future version.
///
/// Raised before any model or tool call, so nothing has happened yet.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The value at `path` is wrong: `messages[2].content[0].type: unknown block type "foo"`.
    #[error("{path}: {problem}")]
    Invalid {
        /// JSON path of the offending value, e.g. `messages[2].content[0].type`.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Written by a newer release of this library.
    #[error(
        "version: checkpoint format version {found} is newer than this library supports (up to {supported}); upgrade resumable-agent to resume it"
    )]
    UnsupportedVersion {
        /// The version found in the checkpoint.
        found: u64,
        /// The newest version this build reads.
        supported: u32,
    },
    /// Not JSON at all.
    #[error("checkpoint is not valid JSON: {message}")]
    Json {
        /// The parser's message with line and column.
        message: String,
    },
    /// Larger than the size limit; refused before it was parsed.
    #[error("checkpoint is {bytes} bytes; the limit is {max} (limits.maxCheckpointBytes)")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Nested deeper than the depth limit allows; refused before it was parsed.
    #[error("checkpoint nests {depth} deep; the limit is {max} (limits.maxDepth plus the checkpoint's own frame)")]
    TooDeep {
        /// Its depth.
        depth: usize,
        /// The limit.
        max: usize,
    },
    /// A signed checkpoint whose signature does not verify, is missing while keys are configured, or names an
    /// unknown key: it was changed, or not written by an agent holding the keys.
    #[error("checkpoint signature: {problem}")]
    Signature {
        /// What is wrong.
        problem: String,
    },
    /// A checkpoint that belongs elsewhere: signed for another agent, or saved by another session.
    #[error("checkpoint binding: {problem}")]
    Binding {
        /// What it is bound to, and what it was used with.
        problem: String,
    },
}

impl CheckpointError {
    pub(crate) fn at(path: impl Into<String>, problem: impl Into<String>) -> Self {
        CheckpointError::Invalid {
            path: path.into(),
            problem: problem.into(),
        }
    }

    /// The JSON path of the problem, when there is one.
    pub fn path(&self) -> Option<&str> {
        match self {
            CheckpointError::Invalid { path, .. } => Some(path),
            CheckpointError::UnsupportedVersion { .. } => Some("version"),
            CheckpointError::Signature { .. } => Some("signature"),
            CheckpointError::Binding { .. } => None,
            CheckpointError::Json { .. } | CheckpointError::TooLarge { .. } | CheckpointError::TooDeep { .. } => None,
        }
    }

    /// A stable code for the kind of problem: `INVALID`, `VERSION`, `JSON`, `TOO_LARGE`, `TOO_DEEP`,
    /// `SIGNATURE` or `BINDING` (the JS `CheckpointError.code`).
    pub fn code(&self) -> &'static str {
        match self {
            CheckpointError::Invalid { .. } => "INVALID",
            CheckpointError::UnsupportedVersion { .. } => "VERSION",
            CheckpointError::Json { .. } => "JSON",
            CheckpointError::TooLarge { .. } => "TOO_LARGE",
            CheckpointError::TooDeep { .. } => "TOO_DEEP",
            CheckpointError::Signature { .. } => "SIGNATURE",
            CheckpointError::Binding { .. } => "BINDING",
        }
    }
}

/// A model call that failed or answered with something unusable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model (a JS function, an HTTP provider, ...) failed.
    #[error("model call failed: {message}")]
    Failed {
        /// The error's name, e.g. `TypeError`, when it has one.
        name: Option<String>,
        /// What the model reported.
        message: String,
    },
    /// An HTTP provider answered with an error status, or could not be reached (`status` is `None`).
    #[error("{provider} request failed{}: {message}", status.map(|s| format!(" with HTTP {s}")).unwrap_or_default())]
    Http {
        /// `"anthropic"`, `"openai"`, ...
        provider: String,
        /// The HTTP status, or `None` for a network failure or timeout.
        status: Option<u16>,
        /// The provider's own message (the API key is never in it).
        message: String,
        /// True for 408, 429, 529, 5xx and network failures: trying again may work.
        retryable: bool,
    },
    /// The provider's settings are unusable (a setting the API would refuse); nothing was sent.
    #[error("{provider} settings: {problem}")]
    Settings {
        /// `"anthropic"`, `"openai"`, ...
        provider: String,
        /// The setting and what is wrong with it.
        problem: String,
    },
    /// The response does not have the expected shape.
    #[error("model response {path}: {problem}")]
    InvalidResponse {
        /// JSON path inside the response, e.g. `content[1].id`.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The model stopped without an answer to keep: cut at its output token limit, a refusal, or a content
    /// filter. Nothing of the answer was recorded (a cut tool call never runs); the run is as before the call.
    #[error("{}", stopped_message(reason, text))]
    Stopped {
        /// Why it stopped.
        reason: crate::model::StopReason,
        /// The text it wrote before stopping (for a refusal, its explanation).
        text: String,
    },
    /// A [`ScriptedModel`](crate::ScriptedModel) was asked for a turn its script does not have.
    #[error(
        "scriptedModel: the script has {len} responses but the conversation asks for assistant turn {turn}; add a response to the script"
    )]
    ScriptExhausted {
        /// Responses in the script.
        len: usize,
        /// 1-based number of the assistant turn asked for.
        turn: usize,
    },
}

fn stopped_message(reason: &crate::model::StopReason, text: &str) -> String {
    use crate::model::StopReason;
    match reason {
        StopReason::MaxTokens => "the model's answer was cut at its output token limit (max_tokens), so none of it was kept and no tool call of it ran: raise the model's maxTokens and resume the error's checkpoint with ''".to_owned(),
        StopReason::Refusal if text.is_empty() => "the model refused to answer (refusal)".to_owned(),
        StopReason::Refusal => format!("the model refused to answer (refusal): {text}"),
        StopReason::ContentFilter => "the provider's content filter stopped the model's answer (content_filter)".to_owned(),
        other => format!("the model stopped ({})", other.as_str()),
    }
}

/// A saver could not read or write.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SaverError {
    /// The storage backend failed.
    #[error("saver backend failed: {message}")]
    Backend {
        /// What the backend said.
        message: String,
    },
    /// The key is empty or longer than the store allows.
    #[error("key {key:?} is {bytes} bytes (with its prefix); the store allows 1 to {max}")]
    KeyLength {
        /// The key as given (without the saver's prefix).
        key: String,
        /// Its length in bytes, prefix included.
        bytes: usize,
        /// The store's limit.
        max: usize,
    },
    /// The checkpoint is larger than the store accepts; nothing was written.
    #[error("checkpoint for key {key:?} is {bytes} bytes; the store accepts at most {max}, so it was not written")]
    TooLarge {
        /// The key.
        key: String,
        /// The checkpoint's size as JSON.
        bytes: usize,
        /// The store's limit.
        max: usize,
    },
    /// The browser refused the write for lack of storage (IndexedDB's `QuotaExceededError`); nothing was written.
    #[error("storage quota exceeded while saving key {key:?}; nothing was written ({message})")]
    QuotaExceeded {
        /// The key.
        key: String,
        /// What the browser said.
        message: String,
    },
    /// Upgrading the database is blocked by another tab that keeps an older version open.
    #[error(
        "opening IndexedDB database {db:?} is blocked: another tab keeps an older version of it open; close or reload that tab and retry"
    )]
    Blocked {
        /// The database name.
        db: String,
    },
    /// A conditional write found something else stored (another writer got there first); nothing was written.
    #[error("key {key:?} changed: expected {}, found {}", expected.map_or("nothing stored".to_owned(), |s| format!("step {s}")), found.map_or("nothing".to_owned(), |s| format!("step {s}")))]
    Conflict {
        /// The key.
        key: String,
        /// The step the write expected (`None`: nothing stored).
        expected: Option<u64>,
        /// What was stored (`None`: nothing).
        found: Option<u64>,
    },
    /// The operation did not finish within the configured time.
    #[error("saver {op} of key {key:?} did not finish within {ms} ms")]
    Timeout {
        /// `get`, `put`, `delete` or `list`.
        op: String,
        /// The key (or prefix).
        key: String,
        /// The limit.
        ms: u64,
    },
    /// A saver option is out of range.
    #[error("invalid saver option: {0}")]
    Option(String),
    /// What is stored under `key` is part of a session (its head or a step record), not a checkpoint: read it
    /// through the session.
    #[error(
        "key {key:?} holds a session's head or step record, not a checkpoint: read it with agent.session(saver, id).checkpoint()"
    )]
    NotCheckpoint {
        /// The key.
        key: String,
    },
    /// What was stored under `key` is not a valid checkpoint.
    #[error("saved checkpoint {key:?} is invalid: {source}")]
    Corrupt {
        /// The key read.
        key: String,
        /// Why it does not decode.
        source: CheckpointError,
    },
}

impl SaverError {
    /// A stable code for the kind of failure: `BACKEND`, `CORRUPT`, `NOT_CHECKPOINT`, `KEY_LENGTH`, `TOO_LARGE`,
    /// `OPTION`, `QUOTA_EXCEEDED`, `BLOCKED`, `CONFLICT` or `TIMEOUT` (the JS `SaverError.code`).
    pub fn code(&self) -> &'static str {
        match self {
            SaverError::Backend { .. } => "BACKEND",
            SaverError::Corrupt { .. } => "CORRUPT",
            SaverError::NotCheckpoint { .. } => "NOT_CHECKPOINT",
            SaverError::KeyLength { .. } => "KEY_LENGTH",
            SaverError::TooLarge { .. } => "TOO_LARGE",
            SaverError::Option(_) => "OPTION",
            SaverError::QuotaExceeded { .. } => "QUOTA_EXCEEDED",
            SaverError::Blocked { .. } => "BLOCKED",
            SaverError::Conflict { .. } => "CONFLICT",
            SaverError::Timeout { .. } => "TIMEOUT",
        }
    }
}

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
    /// The error's name in the npm package (its JS class): `ModelError`, `SaverError`, ….
    pub fn kind_name(&self) -> &'static str {
        match self {
            AgentError::Checkpoint(_) => "CheckpointError",
            AgentError::Config(_) | AgentError::Argument(_) => "ConfigError",
            AgentError::MaxIterations { .. } => "MaxIterationsError",
            AgentError::Model { .. } => "ModelError",
            AgentError::SessionNotFound { .. } => "SessionNotFoundError",
            AgentError::SessionBusy { .. } => "SessionBusyError",
            AgentError::Saver { .. } => "SaverError",
            AgentError::Decision { .. } => "DecisionError",
            AgentError::InterruptExpired { .. } => "InterruptExpiredError",
            AgentError::Output { .. } => "OutputError",
            AgentError::Aborted { .. } => "AbortedError",
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
            | AgentError::Model { checkpoint, .. }
            | AgentError::Interrupted { checkpoint, .. }
            | AgentError::InterruptExpired { checkpoint, .. }
            | AgentError::Output { checkpoint, .. }
            | AgentError::Aborted { checkpoint } => Some(checkpoint),
            AgentError::Saver { checkpoint, .. } => checkpoint.as_deref_mut(),
            _ => None,
        }
    }

    /// The last consistent checkpoint, when the run had made progress.
    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        match self {
            AgentError::MaxIterations { checkpoint, .. }
            | AgentError::Model { checkpoint, .. }
            | AgentError::Interrupted { checkpoint, .. }
            | AgentError::InterruptExpired { checkpoint, .. }
            | AgentError::Output { checkpoint, .. }
            | AgentError::Aborted { checkpoint } => Some(checkpoint),
            AgentError::Saver { checkpoint, .. } => checkpoint.as_deref(),
            AgentError::Checkpoint(_)
            | AgentError::Config(_)
            | AgentError::Argument(_)
            | AgentError::Decision { .. }
            | AgentError::SessionNotFound { .. }
            | AgentError::SessionBusy { .. } => None,
        }
    }
}
