//! Errors of reading a recorded session log and of checking a replay against it.

use thiserror::Error;

use crate::state::State;

/// Why a session log could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LogError {
    /// A line is not a valid log entry.
    #[error("line {line}: malformed log entry: {reason}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A line carries no schema version.
    #[error("line {line}: log entry has no schema version (`v`)")]
    MissingVersion {
        /// 1-based line number.
        line: usize,
    },
    /// A line was written by a newer panewise than this one.
    #[error("line {line}: log schema version {found} is newer than the supported {supported}; upgrade panewise")]
    NewerVersion {
        /// 1-based line number.
        line: usize,
        /// The version found.
        found: u64,
        /// The newest version this build reads.
        supported: u64,
    },
}

/// A replay folded a different state than the one a log's checkpoint recorded: the build
/// reading the log does not fold it as the build that wrote it did.
#[derive(Debug, Clone, PartialEq, Error)]
#[error(
    "line {line}: the state folded after {after} messages differs from the recorded checkpoint"
)]
pub struct CheckpointMismatch {
    /// 1-based line number of the checkpoint.
    pub line: usize,
    /// How many messages had been folded.
    pub after: usize,
    /// The state the log recorded.
    pub recorded: Box<State>,
    /// The state this build folded.
    pub folded: Box<State>,
}
