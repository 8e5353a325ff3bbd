//! Reader: TODO.

use crate::error::EvalError;
use crate::recording::{Format, Recording};

/// Whether `text` is in this format.
pub fn detect(text: &str) -> bool {
    let _ = text;
    false
}

/// Reads the recording.
pub fn read(text: &str) -> Result<Recording, EvalError> {
    let _ = text;
    Err(EvalError::BadRecording { format: "todo", reason: "not implemented".into() })
}

#[allow(dead_code)]
const _F: Option<Format> = None;
