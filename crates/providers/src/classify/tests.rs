//! Every row of every table, then the exact texts the CLIs write (captured where a capture
//! exists; the file names are in `tests/data`).

use super::*;

fn report(message: &str) -> ErrorReport<'_> {
    ErrorReport {
        message,
        ..ErrorReport::default()
    }
}

fn kind_of(provider: Option<Provider>, report: &ErrorReport<'_>) -> (FailureKind, bool) {
    let failure = classify(provider, report);
    (failure.kind, failure.retryable)
}

#[test]
fn every_status_row_decides() {
    for (status, kind) in STATUSES {
        let failure = classify_failure(Some(*status), None, "x");
        assert_eq!(failure.kind, *kind, "{status}");
        assert_eq!(failure.http_status, Some(*status));
        assert_eq!(failure.retryable, kind.default_retryable(), "{status}");
    }
    assert_eq!(
        classify_failure(Some(507), None, "x").kind,
        FailureKind::ServerError
    );
    assert_eq!(
        classify_failure(Some(400), None, "x").kind,
        FailureKind::Unknown
    );
}

#[test]
fn every_status_word_row_decides_from_the_embedded_body() {
    for row in STATUS_WORDS {
        let message = format!(
            r#"[API Error: {{"error":{{"message":"m","status":"{}"}}}}]"#,
            row.text
        );
        let report = report(&message);
        assert_eq!(
            kind_of(Some(Provider::GeminiCli), &report),
            (row.kind, row.retryable),
            "{}",
            row.text
        );
    }
}

#[test]
fn every_error_type_row_decides() {
    for row in ERROR_TYPES {
        let report = ErrorReport {
            error_type: Some(row.text),
            message: "m",
            ..ErrorReport::default()
        };
        assert_eq!(
            kind_of(None, &report),
            (row.kind, row.retryable),
            "{}",
            row.text
        );
    }
}

#[test]
fn every_wording_row_decides_in_its_own_cli() {
    let tables = [
        (Some(Provider::ClaudeCode), CLAUDE_WORDING),
        (Some(Provider::Codex), CODEX_WORDING),
        (Some(Provider::GeminiCli), GEMINI_WORDING),
        (None, COMMON_WORDING),
    ];
    for (provider, table) in tables {
        for row in table {
            let message = format!("Something: {}.", row.text.to_ascii_uppercase());
            assert_eq!(
                kind_of(provider, &report(&message)),
                (row.kind, row.retryable),
                "{provider:?}: {}",
                row.text
            );
        }
    }
}

#[test]
fn context_overflow_comes_before_the_status() {
    for phrase in CONTEXT_OVERFLOW {
        let failure = classify_failure(Some(400), None, &format!("error: {phrase} (x)"));
        assert_eq!(failure.kind, FailureKind::ContextOverflow, "{phrase}");
        assert!(!failure.retryable);
    }
}

#[test]
fn gemini_exit_codes_are_statuses_modulo_256_and_only_those() {
    assert_eq!(gemini_exit_status(173), Some(429));
    assert_eq!(gemini_exit_status(244), Some(500));
    assert_eq!(gemini_exit_status(247), Some(503));
    assert_eq!(gemini_exit_status(17), Some(529));
    assert_eq!(gemini_exit_status(1), None);
    assert_eq!(gemini_exit_status(41), None);
    let failure = classify_cli_failure(
        Provider::GeminiCli,
        &ErrorReport {
            error_type: Some("unknown"),
            message: "[API Error: something odd]",
            exit_code: Some(244),
            ..ErrorReport::default()
        },
    );
    assert_eq!(
        (failure.kind, failure.http_status),
        (FailureKind::ServerError, Some(500))
    );
    // Another CLI's exit code says nothing of a status.
    let failure = classify_cli_failure(
        Provider::Codex,
        &ErrorReport {
            message: "odd",
            exit_code: Some(244),
            ..ErrorReport::default()
        },
    );
    assert_eq!(failure.kind, FailureKind::Unknown);
}

/// The exact texts each CLI writes, with the classification they must get.
struct Case {
    provider: Provider,
    http_status: Option<u16>,
    error_type: Option<&'static str>,
    message: &'static str,
    kind: FailureKind,
    retryable: bool,
    status: Option<u16>,
}

const CASES: &[Case] = &[
    // Codex `exec --json`, HTTP 500: its own sentence replaces the server's (codex/error-500.jsonl).
    Case {
        provider: Provider::Codex,
        http_status: None,
        error_type: None,
        message: "We\u{2019}re currently experiencing high demand, which may cause temporary errors.",
        kind: FailureKind::ServerError,
        retryable: true,
        status: None,
    },
    // Codex, HTTP 503 and 529 (codex/error-503.jsonl, codex/error-529.jsonl).
    Case {
        provider: Provider::Codex,
        http_status: None,
        error_type: None,
        message: "unexpected status 503 Service Unavailable: The engine is currently overloaded, please try again later, url: http://127.0.0.1:41007/v1/responses, request id: req_1",
        kind: FailureKind::Overloaded,
        retryable: true,
        status: Some(503),
    },
    Case {
        provider: Provider::Codex,
        http_status: None,
        error_type: None,
        message: "unexpected status 529 <unknown status code>: The engine is currently overloaded, please try again later, url: http://127.0.0.1:41007/v1/responses, request id: req_1",
        kind: FailureKind::Overloaded,
        retryable: true,
        status: Some(529),
    },
    // Codex, the connection cut in the middle of a 200 stream (codex/stream-cut.jsonl).
    Case {
        provider: Provider::Codex,
        http_status: None,
        error_type: None,
        message: "stream disconnected before completion: Transport error: network error: error decoding response body",
        kind: FailureKind::StreamDisconnected,
        retryable: true,
        status: None,
    },
    // Claude Code, HTTP 500, 503 and 529: the result's text with `api_error_status`
    // (claude-code/error-500.ndjson and the others); the synthetic assistant message carries
    // the same text without the status field.
    Case {
        provider: Provider::ClaudeCode,
        http_status: None,
        error_type: Some("server_error"),
        message: "API Error: 500 Internal server error. This is a server-side issue, usually temporary \u{2014} try again in a moment.",
        kind: FailureKind::ServerError,
        retryable: true,
        status: Some(500),
    },
    Case {
        provider: Provider::ClaudeCode,
        http_status: Some(503),
        error_type: Some("overloaded"),
        message: "API Error: 503 Service unavailable. This is a server-side issue, usually temporary \u{2014} try again in a moment.",
        kind: FailureKind::Overloaded,
        retryable: true,
        status: Some(503),
    },
    Case {
        provider: Provider::ClaudeCode,
        http_status: None,
        error_type: Some("overloaded"),
        message: "API Error: 529 Overloaded. This is a server-side issue, usually temporary \u{2014} try again in a moment.",
        kind: FailureKind::Overloaded,
        retryable: true,
        status: Some(529),
    },
    // Claude Code, the connection cut mid-stream (claude-code/stream-cut.ndjson).
    Case {
        provider: Provider::ClaudeCode,
        http_status: None,
        error_type: None,
        message: "API Error: Connection to the API was lost (ECONNRESET). This is usually temporary \u{2014} try again.",
        kind: FailureKind::StreamDisconnected,
        retryable: true,
        status: None,
    },
    // Gemini CLI, HTTP 503: the API's words without its JSON (gemini-cli/error-503.jsonl).
    Case {
        provider: Provider::GeminiCli,
        http_status: None,
        error_type: Some("unknown"),
        message: "[API Error: The model is overloaded. Please try again later.]",
        kind: FailureKind::Overloaded,
        retryable: true,
        status: None,
    },
    // Gemini CLI, HTTP 529 (gemini-cli/error-529.jsonl).
    Case {
        provider: Provider::GeminiCli,
        http_status: None,
        error_type: Some("unknown"),
        message: r#"[API Error: {"error":{"code":529,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]"#,
        kind: FailureKind::Overloaded,
        retryable: true,
        status: Some(529),
    },
    // Gemini CLI, the connection cut mid-stream (gemini-cli/stream-cut.jsonl).
    Case {
        provider: Provider::GeminiCli,
        http_status: None,
        error_type: Some("unknown"),
        message: "[API Error: terminated]",
        kind: FailureKind::StreamDisconnected,
        retryable: true,
        status: None,
    },
    // Codex `exec --json`, HTTP 429 (tests/data/codex/error-429.jsonl).
    Case {
        provider: Provider::Codex,
        http_status: None,
        error_type: None,
        message: "exceeded retry limit, last status: 429 Too Many Requests, request id: req_0c5e3ac913aa4c6aa08c390e",
        kind: FailureKind::RateLimited,
        retryable: true,
        status: Some(429),
    },
    // Gemini CLI, HTTP 429 (tests/data/gemini-cli/error-429.jsonl).
    Case {
        provider: Provider::GeminiCli,
        http_status: None,
        error_type: Some("unknown"),
        message: "[API Error: Resource has been exhausted (e.g. check quota).]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
        kind: FailureKind::RateLimited,
        retryable: true,
        status: None,
    },
    // Gemini CLI, HTTP 500, the API's JSON error embedded (gemini-cli/error-500.jsonl).
    Case {
        provider: Provider::GeminiCli,
        http_status: None,
        error_type: Some("unknown"),
        message: r#"[API Error: {"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}]"#,
        kind: FailureKind::ServerError,
        retryable: true,
        status: Some(500),
    },
    Case {
        provider: Provider::GeminiCli,
        http_status: None,
        error_type: Some("unknown"),
        message: r#"[API Error: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]"#,
        kind: FailureKind::Overloaded,
        retryable: true,
        status: Some(503),
    },
    Case {
        provider: Provider::GeminiCli,
        http_status: None,
        error_type: Some("unknown"),
        message: r#"[API Error: {"error":{"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]"#,
        kind: FailureKind::Unknown,
        retryable: false,
        status: None,
    },
    // Claude Code, HTTP 429 (tests/data/claude-code/error-429.ndjson).
    Case {
        provider: Provider::ClaudeCode,
        http_status: Some(429),
        error_type: Some("rate_limit"),
        message: "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
        kind: FailureKind::RateLimited,
        retryable: true,
        status: Some(429),
    },
    Case {
        provider: Provider::ClaudeCode,
        http_status: None,
        error_type: None,
        message: r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        kind: FailureKind::Overloaded,
        retryable: true,
        status: Some(529),
    },
];

#[test]
fn the_texts_each_cli_writes_are_classified() {
    for case in CASES {
        let failure = classify_cli_failure(
            case.provider,
            &ErrorReport {
                http_status: case.http_status,
                error_type: case.error_type,
                message: case.message,
                exit_code: None,
            },
        );
        assert_eq!(failure.kind, case.kind, "{}", case.message);
        assert_eq!(failure.retryable, case.retryable, "{}", case.message);
        assert_eq!(failure.http_status, case.status, "{}", case.message);
        assert_eq!(failure.message, case.message);
    }
}

#[test]
fn unplaced_text_is_unknown_and_not_retryable() {
    let failure = classify_failure(None, None, "weird");
    assert_eq!(
        (failure.kind, failure.retryable),
        (FailureKind::Unknown, false)
    );
}

#[test]
fn status_search_survives_odd_text() {
    assert_eq!(status_in_message("(4"), None);
    assert_eq!(status_in_message("status: 4290"), None);
    assert_eq!(status_in_message("é(429)"), Some(429));
    assert!(
        embedded_api_error("{ not json {\"error\":{\"code\":99999}}")
            .is_some_and(|e| e.code.is_none())
    );
    assert!(embedded_api_error("{{{{").is_none());
}
