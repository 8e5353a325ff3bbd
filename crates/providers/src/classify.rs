//! Classification of provider errors into the closed [`FailureKind`] set, table-driven.
//!
//! Evidence is read in a fixed order, strongest first:
//! 1. the request did not fit the context window (providers send it as a plain 400 whose only
//!    clue is the text, so it is looked for before the status decides);
//! 2. an error type that says a limit is spent (`insufficient_quota`): rate limited but not
//!    retryable, whatever the status;
//! 3. the HTTP status: given, embedded in the message as the API's own JSON error body (Gemini
//!    CLI's `[API Error: {"error":{"code":500,…}}]`), written in the text (`last status: 429`,
//!    `Request rejected (429)`), or, for Gemini CLI, read back from its exit code;
//! 4. the status word of a Google API error (`INTERNAL`, `UNAVAILABLE`, …);
//! 5. the provider's error type (`overloaded_error`, `rate_limit_exceeded`, …);
//! 6. the CLI's own fixed wording, one table per CLI ([`CLAUDE_WORDING`], [`CODEX_WORDING`],
//!    [`GEMINI_WORDING`]);
//! 7. words every provider uses.
//!
//! Anything still unplaced is [`FailureKind::Unknown`], never a guess. Every row of every table
//! is tested, from captured text where there is one.

use panewise_protocol::{Failure, FailureKind};
use serde::Deserialize;

use crate::line::Provider;

/// One row of a table: text to look for (ASCII case ignored), what it means, and whether
/// retrying can help.
struct Row {
    text: &'static str,
    kind: FailureKind,
    retryable: bool,
}

const fn row(text: &'static str, kind: FailureKind) -> Row {
    Row {
        text,
        kind,
        retryable: kind.default_retryable(),
    }
}

/// A limit that waiting does not lift (a spent quota or plan allowance): rate limited, but not
/// retryable.
const fn spent(text: &'static str) -> Row {
    Row {
        text,
        kind: FailureKind::RateLimited,
        retryable: false,
    }
}

/// Phrases meaning the request did not fit the model's context window.
const CONTEXT_OVERFLOW: &[&str] = &[
    "prompt is too long",
    "context length",
    "context_length_exceeded",
    "context window",
    "maximum context",
    "too many tokens",
    "input token count",
    "request_too_large",
];

/// HTTP statuses.
const STATUSES: &[(u16, FailureKind)] = &[
    (401, FailureKind::Auth),
    (403, FailureKind::Auth),
    (408, FailureKind::ServerError),
    (413, FailureKind::ContextOverflow),
    (429, FailureKind::RateLimited),
    (500, FailureKind::ServerError),
    (502, FailureKind::ServerError),
    (503, FailureKind::Overloaded),
    (504, FailureKind::ServerError),
    (529, FailureKind::Overloaded),
];

/// JSON-RPC error codes of the stdio channels (Codex app-server, ACP) that say more than their
/// message: a code is protocol data, as strong as an HTTP status.
const RPC_CODES: &[(i64, FailureKind)] = &[
    // Codex app-server: the server's queue is full; the request may be sent again later.
    (-32001, FailureKind::Overloaded),
];

/// Status words of Google API errors (`error.status`).
const STATUS_WORDS: &[Row] = &[
    row("RESOURCE_EXHAUSTED", FailureKind::RateLimited),
    row("UNAVAILABLE", FailureKind::Overloaded),
    row("INTERNAL", FailureKind::ServerError),
    row("DEADLINE_EXCEEDED", FailureKind::ServerError),
    row("PERMISSION_DENIED", FailureKind::Auth),
    row("UNAUTHENTICATED", FailureKind::Auth),
    row("INVALID_ARGUMENT", FailureKind::Unknown),
    row("FAILED_PRECONDITION", FailureKind::Unknown),
    row("NOT_FOUND", FailureKind::Unknown),
];

/// Error types of the Anthropic and OpenAI APIs (`error.type`, `error.code`), as the CLIs pass
/// them on.
const ERROR_TYPES: &[Row] = &[
    row("rate_limit_error", FailureKind::RateLimited),
    row("rate_limit_exceeded", FailureKind::RateLimited),
    row("rate_limit", FailureKind::RateLimited),
    spent("insufficient_quota"),
    row("overloaded_error", FailureKind::Overloaded),
    row("api_error", FailureKind::ServerError),
    row("server_error", FailureKind::ServerError),
    row("server_overloaded", FailureKind::Overloaded),
    row("authentication_error", FailureKind::Auth),
    row("permission_error", FailureKind::Auth),
    row("invalid_api_key", FailureKind::Auth),
    // Claude Code's own word (`api_error`) for a connection lost mid-call.
    row("connection_failed", FailureKind::StreamDisconnected),
];

/// Claude Code's own sentences (its synthetic `API Error: …` assistant message and result).
const CLAUDE_WORDING: &[Row] = &[
    row("repeated 529 overloaded errors", FailureKind::Overloaded),
    row("overloaded", FailureKind::Overloaded),
    row("invalid api key", FailureKind::Auth),
    row("credit balance is too low", FailureKind::Auth),
    row("request timed out", FailureKind::StreamDisconnected),
    row("connection error", FailureKind::StreamDisconnected),
    row(
        "connection to the api was lost",
        FailureKind::StreamDisconnected,
    ),
];

/// Codex's own sentences. For HTTP 500 and 503 `exec --json` shows only a generic sentence
/// about high demand and temporary errors, without the status.
const CODEX_WORDING: &[Row] = &[
    row("experiencing high demand", FailureKind::ServerError),
    row("temporary errors", FailureKind::ServerError),
    row("at capacity", FailureKind::Overloaded),
    row(
        "stream disconnected before completion",
        FailureKind::StreamDisconnected,
    ),
    spent("you've hit your usage limit"),
    spent("quota exceeded"),
];

/// Gemini CLI's own sentences.
const GEMINI_WORDING: &[Row] = &[
    row("resource has been exhausted", FailureKind::RateLimited),
    row("model is overloaded", FailureKind::Overloaded),
    row("internal error encountered", FailureKind::ServerError),
    row("api key not valid", FailureKind::Auth),
    row("api error: terminated", FailureKind::StreamDisconnected),
];

/// Words every provider uses, the last resort before `unknown`.
const COMMON_WORDING: &[Row] = &[
    row("rate limit", FailureKind::RateLimited),
    row("too many requests", FailureKind::RateLimited),
    row("quota", FailureKind::RateLimited),
    row("overloaded", FailureKind::Overloaded),
    row("authentication", FailureKind::Auth),
    row("unauthorized", FailureKind::Auth),
    row("invalid x-api-key", FailureKind::Auth),
    row("permission denied", FailureKind::Auth),
    row("stream disconnected", FailureKind::StreamDisconnected),
    row("stream closed", FailureKind::StreamDisconnected),
    row("connection reset", FailureKind::StreamDisconnected),
    row("connection closed", FailureKind::StreamDisconnected),
    row("socket hang up", FailureKind::StreamDisconnected),
    row("internal server error", FailureKind::ServerError),
    row("server error", FailureKind::ServerError),
    row("service unavailable", FailureKind::Overloaded),
    row("bad gateway", FailureKind::ServerError),
];

/// HTTP statuses Gemini CLI can end with: it exits with the status modulo 256.
const GEMINI_EXIT_STATUSES: &[u16] = &[400, 401, 403, 404, 408, 429, 500, 502, 503, 504, 529];

/// What is known of one error: everything is optional but the message.
#[derive(Debug, Clone, Copy, Default)]
pub struct ErrorReport<'a> {
    /// The HTTP status, when the stream gives it as a field.
    pub http_status: Option<u16>,
    /// The provider's error type or code word (`rate_limit_error`, `unknown`, …).
    pub error_type: Option<&'a str>,
    /// The message, kept verbatim in the failure.
    pub message: &'a str,
    /// The CLI's exit code, when the host saw the process exit.
    pub exit_code: Option<i32>,
}

/// Classifies a JSON-RPC error (`code`, `message`) from `provider`'s channel: an error saying
/// the request did not fit the context window stays an overflow, a code of [`RPC_CODES`] decides next, and
/// the message is read like any other otherwise.
pub(crate) fn classify_rpc_error(provider: Provider, code: Option<i64>, message: &str) -> Failure {
    // A code in the range of HTTP error statuses is the API's status passed on (Gemini CLI
    // answers a prompt whose model calls failed with 429 or 500); JSON-RPC's own codes are
    // negative.
    let http_status = code
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    let failure = classify(
        Some(provider),
        &ErrorReport {
            http_status,
            message,
            ..ErrorReport::default()
        },
    );
    if failure.kind == FailureKind::ContextOverflow {
        return failure;
    }
    match RPC_CODES.iter().find(|(known, _)| Some(*known) == code) {
        Some((_, kind)) => Failure {
            kind: *kind,
            retryable: kind.default_retryable(),
            ..failure
        },
        None => failure,
    }
}

/// Classifies an error reported by `provider`'s CLI, with every table that applies to it.
pub fn classify_cli_failure(provider: Provider, report: &ErrorReport<'_>) -> Failure {
    classify(Some(provider), report)
}

/// Classifies a provider error from whatever is known of it: an HTTP status, the provider's
/// error type word, and its message, with the tables every provider shares. The message is
/// kept verbatim in the result.
pub fn classify_failure(
    http_status: Option<u16>,
    error_type: Option<&str>,
    message: &str,
) -> Failure {
    classify(
        None,
        &ErrorReport {
            http_status,
            error_type,
            message,
            exit_code: None,
        },
    )
}

pub(crate) fn classify(provider: Option<Provider>, report: &ErrorReport<'_>) -> Failure {
    let embedded = embedded_api_error(report.message);
    let status = report
        .http_status
        .or(embedded.as_ref().and_then(|body| body.code))
        .or_else(|| status_in_message(report.message))
        .or_else(|| match (provider, report.exit_code) {
            (Some(Provider::GeminiCli), Some(code)) => gemini_exit_status(code),
            _ => None,
        });
    let text = report.message.to_ascii_lowercase();
    let (kind, retryable) = decide(provider, report, embedded.as_ref(), status, &text);
    Failure {
        kind,
        retryable,
        message: report.message.to_owned(),
        http_status: status,
    }
}

fn decide(
    provider: Option<Provider>,
    report: &ErrorReport<'_>,
    embedded: Option<&EmbeddedError>,
    status: Option<u16>,
    text: &str,
) -> (FailureKind, bool) {
    let by_kind = |kind: FailureKind| (kind, kind.default_retryable());
    let embedded_type = embedded.and_then(|body| body.kind.as_deref());
    if CONTEXT_OVERFLOW.iter().any(|phrase| text.contains(phrase))
        || embedded_type == Some("request_too_large")
    {
        return by_kind(FailureKind::ContextOverflow);
    }
    // A spent quota comes as a plain 429: its type says waiting will not lift it.
    for word in [report.error_type, embedded_type].into_iter().flatten() {
        if let Some(row) = exact(ERROR_TYPES, word).filter(|row| !row.retryable) {
            return (row.kind, row.retryable);
        }
    }
    if let Some((_, kind)) = STATUSES.iter().find(|(code, _)| Some(*code) == status) {
        return by_kind(*kind);
    }
    // A Google status word, embedded or given as the error type (the API clients pass it).
    let status_word = embedded.and_then(|body| body.status.as_deref());
    for word in [status_word, report.error_type].into_iter().flatten() {
        if let Some(row) = exact(STATUS_WORDS, word) {
            return (row.kind, row.retryable);
        }
    }
    for word in [report.error_type, embedded_type].into_iter().flatten() {
        if let Some(row) = exact(ERROR_TYPES, word) {
            return (row.kind, row.retryable);
        }
    }
    if status.is_some_and(|status| (500..600).contains(&status)) {
        // A 5xx without a row of its own is still the server's failure.
        return by_kind(FailureKind::ServerError);
    }
    let tables: &[&[Row]] = match provider {
        // A CLI's stream is read with its own table, then the common words.
        Some(Provider::ClaudeCode) => &[CLAUDE_WORDING, COMMON_WORDING],
        Some(Provider::Codex | Provider::CodexAppServer) => &[CODEX_WORDING, COMMON_WORDING],
        Some(Provider::GeminiCli) => &[GEMINI_WORDING, COMMON_WORDING],
        // An error of unknown origin, or from an ACP agent (any CLI may be behind it), may be
        // in any CLI's words.
        Some(Provider::Acp) | None => &[
            CLAUDE_WORDING,
            CODEX_WORDING,
            GEMINI_WORDING,
            COMMON_WORDING,
        ],
    };
    for table in tables {
        if let Some(row) = table.iter().find(|row| text.contains(row.text)) {
            return (row.kind, row.retryable);
        }
    }
    by_kind(FailureKind::Unknown)
}

fn exact<'t>(table: &'t [Row], word: &str) -> Option<&'t Row> {
    table.iter().find(|row| row.text.eq_ignore_ascii_case(word))
}

/// The HTTP status a Gemini CLI exit code stands for: it exits with the status modulo 256.
/// Only statuses an API answers with are considered, so ordinary exit codes map to none.
pub fn gemini_exit_status(exit_code: i32) -> Option<u16> {
    GEMINI_EXIT_STATUSES
        .iter()
        .copied()
        .find(|status| i32::from(*status % 256) == exit_code)
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

/// The API's own JSON error body, as CLIs embed it in their messages.
struct EmbeddedError {
    code: Option<u16>,
    status: Option<String>,
    kind: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ErrorFields,
}

#[derive(Deserialize)]
struct ErrorFields {
    code: Option<serde_json::Value>,
    status: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// Finds `{"error":{…}}` inside a message (`[API Error: {"error":{"code":500,…}}]`,
/// `API Error: 500 {"type":"error","error":{"type":"api_error",…}}`) and reads its code,
/// status word and type. Text after the JSON is ignored.
fn embedded_api_error(message: &str) -> Option<EmbeddedError> {
    let mut from = 0;
    while let Some(found) = message.get(from..)?.find('{') {
        let start = from + found;
        let mut values =
            serde_json::Deserializer::from_str(&message[start..]).into_iter::<ErrorEnvelope>();
        if let Some(Ok(envelope)) = values.next() {
            let code = envelope.error.code.and_then(|code| match code {
                serde_json::Value::Number(number) => number.as_u64(),
                serde_json::Value::String(text) => text.parse().ok(),
                _ => None,
            });
            return Some(EmbeddedError {
                code: code
                    .and_then(|code| u16::try_from(code).ok())
                    .filter(|code| (400..600).contains(code)),
                status: envelope.error.status,
                kind: envelope.error.kind,
            });
        }
        from = start + 1;
    }
    None
}

/// Finds an HTTP error status written into a message, as in `last status: 429 Too Many
/// Requests`, `Request rejected (429)` or `API Error: 500 Internal server error`: a 4xx or 5xx
/// number right after `status: `, `status `, `(` or `API Error: `.
fn status_in_message(message: &str) -> Option<u16> {
    let bytes = message.as_bytes();
    for marker in ["status: ", "status ", "(", "API Error: "] {
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
mod tests;
