//! What makes a saver fail.

use crate::checkpoint::CheckpointError;

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
