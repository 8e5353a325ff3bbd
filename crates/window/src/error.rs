//! Every error the window stage can return.

/// What went wrong in the window stage.
///
/// Bad input is always one of these, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// The provider reported a usage of 0 input and 0 output tokens. That reading says the
    /// provider counted nothing, which is not the same as a free call, so no threshold can be
    /// checked against it (W55).
    #[error(
        "CompactionUnmeasurableError: provider `{provider}` reported 0 input and 0 output tokens; \
         a 0/0 reading cannot be measured against a token threshold. Make the provider report \
         usage, or use `sliding-window`, which needs no usage figures"
    )]
    Unmeasurable {
        /// The provider whose reading was 0/0.
        provider: String,
    },
    /// A strategy configuration field is missing or has a bad value.
    #[error("invalid window configuration: {}", config_problem(field, reason))]
    InvalidConfig {
        /// The configuration field at fault, spelled as in the configuration file.
        field: String,
        /// Why the value was rejected.
        reason: String,
    },
    /// A message could not be read from a conversation file.
    #[error("conversation line {line}: {reason}")]
    InvalidMessage {
        /// The 1-based line of the conversation file.
        line: usize,
        /// Why the message was rejected.
        reason: String,
    },
    /// A JSON value is not a chat-completions message.
    #[error("not a chat-completions message: {0}")]
    MessageShape(String),
    /// A plan's edit does not fit the conversation it is applied to.
    #[error("the window edit does not fit this conversation: {0}")]
    EditMismatch(String),
}

/// Why the caller could not obtain a summary, handed to [`crate::PendingSummary::complete`].
/// The stage never retries: any failure becomes the `summarizer-failed` refusal (W42).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SummarizerError {
    /// What the summarizer reported.
    pub message: String,
}

impl SummarizerError {
    /// Builds an error from any message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// `field `name`: reason`, or the reason alone when no single field is at fault (a syntax
/// error), so no message names an empty field.
fn config_problem(field: &str, reason: &str) -> String {
    if field.is_empty() {
        reason.to_string()
    } else {
        format!("field `{field}`: {reason}")
    }
}
