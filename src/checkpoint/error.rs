//! What makes a checkpoint unusable.

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
