//! Errors of this crate: one line that could not be decoded, a model or price table that could
//! not be read, a JSON-RPC channel line that cannot be written yet, a model API request that
//! could not be rendered, and a model API call that failed.

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

/// A line of a JSON-RPC channel (Codex app-server, ACP) that cannot be written in the session's
/// present state: what it needs has not been learnt from the agent yet, or the agent did not
/// offer it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// No thread (Codex) or session (ACP) has been started or resumed yet.
    #[error("no {0} has been started yet")]
    NoSession(&'static str),
    /// `turn/interrupt` needs the running turn's id, and no turn is running.
    #[error("no turn is running")]
    NoTurn,
    /// The agent's `initialize` answer did not advertise this method.
    #[error("the agent did not advertise `{0}`")]
    NotAdvertised(&'static str),
    /// No request of the agent with this id is waiting for an answer.
    #[error("no request `{0}` is waiting for an answer")]
    UnknownRequest(String),
    /// The permission request offers no option of the kind the decision needs.
    #[error("request `{request_id}` offers no `{kind}` option")]
    NoMatchingOption {
        /// The agent's request.
        request_id: String,
        /// The option kind the decision needed.
        kind: &'static str,
    },
}

/// A model table given as configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelTableError {
    /// The text is not a valid model table document.
    #[error("the model table is not valid JSON of the expected shape: {0}")]
    Parse(#[from] serde_json::Error),
}

/// A price table given as configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PriceTableError {
    /// The text is not a valid price table document.
    #[error("the price table is not valid JSON of the expected shape: {0}")]
    Parse(#[from] serde_json::Error),
    /// A price is negative or not a finite number.
    #[error("the price table's row for `{model}` has a bad `{field}` price {value}: prices are non-negative US dollars per million tokens")]
    BadPrice {
        /// The row's model pattern.
        model: String,
        /// The field with the bad value.
        field: &'static str,
        /// The value as written.
        value: String,
    },
}

/// A model API request that cannot be rendered as the API's body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A tool call's arguments are not JSON text.
    #[error("the arguments of tool call `{call_id}` are not JSON: {reason}")]
    ToolArguments {
        /// The call's id.
        call_id: String,
        /// What the JSON parser said.
        reason: String,
    },
    /// The body could not be written.
    #[error("the request body could not be written: {0}")]
    Render(String),
    /// The messages break the pairing rule of tool calls and results (a
    /// [`RenderedHistory`](crate::RenderedHistory) checks it before it assembles a body).
    #[error(transparent)]
    Pairing(#[from] PairingError),
    /// An edit of a [`RenderedHistory`](crate::RenderedHistory) outside its entries.
    #[error("the rendered history cannot take this edit: {0}")]
    HistoryEdit(String),
}

/// A request whose tool calls and results do not pair up: every tool result must answer a
/// call before it, every call must have a result after it, and no call id may be used twice.
/// The index is the offending message's position among the request's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairingError {
    /// A tool result whose call is not before it in the request.
    #[error("message {index}: the tool result for call `{call_id}` has no call before it in the request")]
    ResultWithoutCall {
        /// The call id the result quotes.
        call_id: String,
        /// Its position among the request's messages.
        index: usize,
    },
    /// A tool call with no result after it in the request.
    #[error("message {index}: tool call `{call_id}` has no result after it in the request")]
    CallWithoutResult {
        /// The call's id.
        call_id: String,
        /// Its position among the request's messages.
        index: usize,
    },
    /// Two calls with the same id.
    #[error("message {index}: tool call id `{call_id}` is used twice in the request")]
    DuplicateCall {
        /// The repeated id.
        call_id: String,
        /// The position of the second call.
        index: usize,
    },
}

/// A model API call that did not end with an answer. No variant ever holds an API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// The call failed, classified; retryable failures were retried first, as the retry
    /// policy allowed.
    #[error("{api} call failed ({kind:?}{status}): {message}", kind = .failure.kind, status = .failure.http_status.map(|status| format!(", HTTP {status}")).unwrap_or_default(), message = .failure.message)]
    Failed {
        /// The API called.
        api: crate::api_kind::ApiKind,
        /// What failed.
        failure: panewise_protocol::Failure,
    },
    /// The caller cancelled the call (during the request, the stream or a retry wait).
    #[error("the {api} call was cancelled")]
    Cancelled {
        /// The API called.
        api: crate::api_kind::ApiKind,
    },
    /// The request could not be rendered.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The client cannot make the call at all (a scripted client with no calls left). An HTTP
    /// client missing its key or its TLS fails earlier, when it is built (`panewise-transport`'s
    /// `TransportError`); a base URL it cannot reach fails the call, classified.
    #[error("{0}")]
    Config(String),
}

impl ApiError {
    /// The classified failure, when the call failed (`None` when it was cancelled or never
    /// sent).
    pub fn failure(&self) -> Option<&panewise_protocol::Failure> {
        match self {
            ApiError::Failed { failure, .. } => Some(failure),
            _ => None,
        }
    }
}

/// Words for serde's error on `raw` (one line): the line's column instead of serde's
/// "line 1 column N" (the caller knows the line's number in its file), the field by name, and
/// a wrong value quoted as written (integers as integers) rather than as serde re-printed it.
pub(crate) fn describe_json_error(raw: &[u8], error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    let message = text.strip_suffix(position.as_str()).unwrap_or(&text);
    let wrong_value = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "));
    let at = if error.line() == 1 {
        error.column().min(raw.len())
    } else {
        raw.len()
    };
    match (wrong_value, value_at(raw, at)) {
        (Some((_, expected)), Some((field, literal))) => format!(
            "field `{field}`: `{literal}` is not {} (column {})",
            expected_words(expected),
            error.column()
        ),
        (None, Some((field, literal))) if message == "number out of range" => format!(
            "field `{field}`: `{literal}` is out of range (column {})",
            error.column()
        ),
        _ => format!("{message} (column {})", error.column()),
    }
}

fn expected_words(expected: &str) -> String {
    match expected {
        "u64" => format!("a whole number from 0 to {}", u64::MAX),
        "u32" => format!("a whole number from 0 to {}", u32::MAX),
        "u16" => format!("a whole number from 0 to {}", u16::MAX),
        "i64" => format!("a whole number from {} to {}", i64::MIN, i64::MAX),
        "i32" => format!("a whole number from {} to {}", i32::MIN, i32::MAX),
        "f64" | "f32" => "a number".to_owned(),
        "a boolean" | "a string" | "a sequence" | "a map" => expected.to_owned(),
        other => format!("a valid value ({other})"),
    }
}

/// The key and the value text of the `"key": value` pair that ends at or around byte `at`.
fn value_at(raw: &[u8], at: usize) -> Option<(String, String)> {
    let before = raw.get(..at)?;
    let colon = before.iter().rposition(|byte| *byte == b':')?;
    let key_end = before[..colon].iter().rposition(|byte| *byte == b'"')?;
    let key_start = before[..key_end].iter().rposition(|byte| *byte == b'"')?;
    let key = std::str::from_utf8(raw.get(key_start + 1..key_end)?).ok()?;
    let value_end = raw[colon + 1..]
        .iter()
        .position(|byte| matches!(byte, b',' | b'}' | b']'))
        .map_or(raw.len(), |end| colon + 1 + end);
    let value = std::str::from_utf8(raw.get(colon + 1..value_end)?)
        .ok()?
        .trim();
    let shown: String = value.chars().take(40).collect();
    Some((key.to_owned(), shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe<T: serde::de::DeserializeOwned>(line: &str) -> String {
        match serde_json::from_str::<T>(line) {
            Ok(_) => String::from("parsed"),
            Err(error) => describe_json_error(line.as_bytes(), &error),
        }
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Usage {
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Line {
        usage: Option<Usage>,
    }

    #[test]
    fn a_wrong_number_names_its_field_and_is_quoted_as_written() {
        let message = describe::<Line>(r#"{"usage":{"output_tokens":2,"input_tokens":-5}}"#);
        assert!(
            message.starts_with("field `input_tokens`: `-5` is not a whole number"),
            "{message}"
        );
        assert!(!message.contains("line 1"), "{message}");
        let message = describe::<Line>(
            r#"{"usage":{"input_tokens":18446744073709551616,"output_tokens":1}}"#,
        );
        assert!(message.contains("`18446744073709551616`"), "{message}");
        assert!(!message.contains("e19"), "{message}");
        let message = describe::<Line>(r#"{"usage":{"input_tokens":1.5}}"#);
        assert!(message.contains("field `input_tokens`: `1.5`"), "{message}");
        let message = describe::<Line>(r#"{"usage":{"input_tokens":"many"}}"#);
        assert!(
            message.contains("field `input_tokens`: `\"many\"`"),
            "{message}"
        );
    }

    #[test]
    fn a_syntax_error_keeps_serde_words_with_the_column_only() {
        let message = describe::<Line>(r#"{"usage":"#);
        assert!(message.contains("(column"), "{message}");
        assert!(!message.contains("line 1"), "{message}");
    }
}

/// A provider-side strategy the session's API or model does not support, refused at start
/// (never sent and silently ignored): what was asked, where, why not, and what would work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the `{strategy}` window strategy cannot run on the {api} API with model `{model}`: {reason}; {instead}")]
pub struct Unsupported {
    /// The configured strategy.
    pub strategy: String,
    /// The session's API.
    pub api: String,
    /// The session's model.
    pub model: String,
    /// Why not.
    pub reason: String,
    /// What would work instead.
    pub instead: String,
}
