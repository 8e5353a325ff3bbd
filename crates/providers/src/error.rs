//! Errors of this crate: one line that could not be decoded, and a model table that could not be read.

use serde::{Deserialize, Serialize};

/// One input line that could not be decoded. Decoding goes on with the next line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DecodeError {
    /// The 1-based number of the offending line in the stream.
    pub line: u64,
    /// What was wrong with it, in words.
    pub message: String,
}

/// A model table given as configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelTableError {
    /// The text is not a valid model table document.
    #[error("the model table is not valid JSON of the expected shape: {0}")]
    Parse(#[from] serde_json::Error),
}
