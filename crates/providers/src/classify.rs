//! Classification of provider errors into the closed [`FailureKind`] set.

use panewise_protocol::{Failure, FailureKind};

/// Classifies a provider error from whatever the stream offers: an HTTP status, the provider's
/// error type word, and its message. The message is kept verbatim in the result.
///
/// The status decides when present; otherwise the type word and the message are searched for the
/// phrases each provider uses. Anything unplaced is [`FailureKind::Unknown`], never a guess.
pub fn classify_failure(
    http_status: Option<u16>,
    error_type: Option<&str>,
    message: &str,
) -> Failure {
    let status = http_status.or_else(|| status_in_message(message));
    let mut haystack = String::with_capacity(message.len() + 32);
    if let Some(kind) = error_type {
        haystack.push_str(kind);
        haystack.push(' ');
    }
    haystack.push_str(message);
    let haystack = haystack.to_ascii_lowercase();
    let kind = kind_of(status, &haystack);
    Failure {
        kind,
        retryable: kind.default_retryable(),
        message: message.to_owned(),
        http_status: status,
    }
}

/// The failure to show when the agent's output ended in the middle of a turn: the process
/// exited (or closed its output) without writing the turn's result.
pub fn process_exited_failure(exit_code: Option<i32>) -> Failure {
    let message = match exit_code {
        Some(code) => {
            format!("the agent process exited with code {code} before finishing its turn")
        }
        None => "the agent's output ended before its turn finished".to_owned(),
    };
    Failure {
        kind: FailureKind::ProcessExited,
        retryable: FailureKind::ProcessExited.default_retryable(),
        message,
        http_status: None,
    }
}

fn kind_of(status: Option<u16>, text: &str) -> FailureKind {
    let says = |phrases: &[&str]| phrases.iter().any(|phrase| text.contains(phrase));
    // Context overflow comes first: providers send it as a plain 400 whose only clue is the text.
    if says(&[
        "prompt is too long",
        "context length",
        "context_length_exceeded",
        "context window",
        "maximum context",
        "too many tokens",
    ]) {
        return FailureKind::ContextOverflow;
    }
    match status {
        Some(429) => return FailureKind::RateLimited,
        Some(529) => return FailureKind::Overloaded,
        Some(401) | Some(403) => return FailureKind::Auth,
        Some(503) if says(&["overload"]) => return FailureKind::Overloaded,
        Some(code) if (500..600).contains(&code) => return FailureKind::ServerError,
        _ => {}
    }
    if says(&[
        "rate_limit",
        "rate limit",
        "too many requests",
        "resource has been exhausted",
        "resource_exhausted",
        "quota",
    ]) {
        FailureKind::RateLimited
    } else if says(&["overloaded"]) {
        FailureKind::Overloaded
    } else if says(&[
        "authentication",
        "unauthorized",
        "invalid api key",
        "invalid x-api-key",
        "permission denied",
        "permission_error",
    ]) {
        FailureKind::Auth
    } else if says(&[
        "stream disconnected",
        "stream closed",
        "connection reset",
        "connection closed",
        "socket hang up",
    ]) {
        FailureKind::StreamDisconnected
    } else if says(&[
        "internal server error",
        "server error",
        "service unavailable",
        "bad gateway",
        "api_error",
    ]) {
        FailureKind::ServerError
    } else {
        FailureKind::Unknown
    }
}

/// Finds an HTTP error status written into a message, as in `last status: 429 Too Many Requests`
/// or `Request rejected (429)`: a 4xx or 5xx number right after `status: `, `status ` or `(`.
fn status_in_message(message: &str) -> Option<u16> {
    let bytes = message.as_bytes();
    for marker in ["status: ", "status ", "("] {
        let mut from = 0;
        while let Some(found) = message[from..].find(marker) {
            let start = from + found + marker.len();
            let digits = bytes.get(start..start + 3).unwrap_or_default();
            let after_is_boundary =
                !matches!(bytes.get(start + 3), Some(byte) if byte.is_ascii_digit());
            if digits.len() == 3 && digits.iter().all(u8::is_ascii_digit) && after_is_boundary {
                let code = digits
                    .iter()
                    .fold(0u16, |acc, digit| acc * 10 + u16::from(digit - b'0'));
                if (400..600).contains(&code) {
                    return Some(code);
                }
            }
            from = start;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_retry_limit_message_is_a_rate_limit_with_its_status() {
        let failure = classify_failure(
            None,
            None,
            "exceeded retry limit, last status: 429 Too Many Requests, request id: x",
        );
        assert_eq!(failure.kind, FailureKind::RateLimited);
        assert_eq!(failure.http_status, Some(429));
        assert!(failure.retryable);
    }

    #[test]
    fn gemini_quota_message_is_a_rate_limit() {
        let failure = classify_failure(
            None,
            Some("unknown"),
            "[API Error: Resource has been exhausted (e.g. check quota).]",
        );
        assert_eq!(failure.kind, FailureKind::RateLimited);
        assert_eq!(failure.http_status, None);
    }

    #[test]
    fn statuses_decide_before_words() {
        assert_eq!(
            classify_failure(Some(401), None, "x").kind,
            FailureKind::Auth
        );
        assert_eq!(
            classify_failure(Some(529), None, "x").kind,
            FailureKind::Overloaded
        );
        assert_eq!(
            classify_failure(Some(500), None, "x").kind,
            FailureKind::ServerError
        );
        assert_eq!(
            classify_failure(Some(400), None, "prompt is too long: 210000 tokens").kind,
            FailureKind::ContextOverflow
        );
        assert_eq!(
            classify_failure(None, None, "weird").kind,
            FailureKind::Unknown
        );
        assert!(!classify_failure(None, None, "weird").retryable);
    }

    #[test]
    fn status_search_survives_odd_text() {
        assert_eq!(status_in_message("(4"), None);
        assert_eq!(status_in_message("status: 4290"), None);
        assert_eq!(status_in_message("é(429)"), Some(429));
    }
}
