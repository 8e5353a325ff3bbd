//! Every error the evaluation can return.

/// What went wrong reading a recording or a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The text is in none of the formats the evaluation reads.
    #[error("not a recorded session panewise can read ({0})")]
    UnknownFormat(String),
    /// The text looked like `format` but could not be read as one.
    #[error("{format}: {reason}")]
    BadRecording {
        /// The format it was detected as.
        format: &'static str,
        /// What was wrong, with the line or field when known.
        reason: String,
    },
    /// The recording holds no model call to replay.
    #[error("{0}: no model call to replay")]
    Empty(&'static str),
    /// The window stage refused the replay (its own message says why).
    #[error(transparent)]
    Window(#[from] panewise_window::WindowError),
}
