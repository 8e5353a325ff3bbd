//! Reader: TODO.

use crate::error::EvalError;
use crate::recording::{Format, Recording};

/// The format of `text` when it is one this reader takes.
pub fn detect(text: &str) -> Option<Format> {
    let _ = text;
    None
}

/// Reads the recording.
pub fn read(text: &str, format: Format) -> Result<Recording, EvalError> {
    let _ = text;
    Err(EvalError::BadRecording { format: format.as_str(), reason: "not implemented".into() })
}
