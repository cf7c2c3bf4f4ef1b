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
            CheckpointError::Json { .. } => None,
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
    /// The response does not have the expected shape.
    #[error("model response {path}: {problem}")]
    InvalidResponse {
        /// JSON path inside the response, e.g. `content[1].id`.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// A [`ScriptedModel`](crate::ScriptedModel) was asked for a turn its script does not have.
    #[error(
        "scripted model: the script has {len} responses but the conversation asks for assistant turn {turn}; add a response to the script"
    )]
    ScriptExhausted {
        /// Responses in the script.
        len: usize,
        /// 1-based number of the assistant turn asked for.
        turn: usize,
    },
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
    /// A saver option is out of range.
    #[error("invalid saver option: {0}")]
    Option(String),
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
    /// A stable code for the kind of failure: `BACKEND`, `CORRUPT`, `KEY_LENGTH`, `TOO_LARGE`, `OPTION`,
    /// `QUOTA_EXCEEDED` or `BLOCKED` (the JS `SaverError.code`).
    pub fn code(&self) -> &'static str {
        match self {
            SaverError::Backend { .. } => "BACKEND",
            SaverError::Corrupt { .. } => "CORRUPT",
            SaverError::KeyLength { .. } => "KEY_LENGTH",
            SaverError::TooLarge { .. } => "TOO_LARGE",
            SaverError::Option(_) => "OPTION",
            SaverError::QuotaExceeded { .. } => "QUOTA_EXCEEDED",
            SaverError::Blocked { .. } => "BLOCKED",
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
    /// The last consistent checkpoint, when the run had made progress.
    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        match self {
            AgentError::MaxIterations { checkpoint, .. }
            | AgentError::Model { checkpoint, .. }
            | AgentError::Interrupted { checkpoint, .. } => Some(checkpoint),
            AgentError::Saver { checkpoint, .. } => checkpoint.as_deref(),
            AgentError::Checkpoint(_)
            | AgentError::Config(_)
            | AgentError::SessionNotFound { .. }
            | AgentError::SessionBusy { .. } => None,
        }
    }
}
