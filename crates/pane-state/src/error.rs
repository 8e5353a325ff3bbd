//! Errors of reading a recorded session log.

use thiserror::Error;

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
