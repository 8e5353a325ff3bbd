//! Every error the window stage can return.

use serde_json::Value;

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

/// A configuration value as a person wrote it: integers as integers, however large, and no
/// exponent notation.
pub fn describe_value(value: &Value) -> String {
    match value {
        Value::Number(number) if number.as_u64().is_some() || number.as_i64().is_some() => {
            number.to_string()
        }
        Value::Number(number) => match number.as_f64() {
            // Past 2^53 a float no longer says which integer was written; say what it is instead.
            Some(float) if float >= 9_007_199_254_740_992.0 => {
                format!("a number larger than {} (the largest accepted)", u64::MAX)
            }
            Some(float) if float <= -9_007_199_254_740_992.0 => "a large negative number".into(),
            Some(float) => float.to_string(),
            None => number.to_string(),
        },
        Value::String(_) => format!("the string {value}"),
        Value::Bool(flag) => flag.to_string(),
        Value::Null => "null".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a table".into(),
    }
}
