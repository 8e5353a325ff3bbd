//! The pure half of the model API clients: the request and its rendering per API, one stream
//! decoder per API (an SSE event's `event` and `data` in, [`ProviderEvent`]s out), the
//! classification of an HTTP error answer, the retry schedule, the API key type, and a call's
//! rendered request and assembled answer ([`call`]). Nothing here does I/O, reads a clock or
//! draws randomness; the `panewise-transport` crate does, and feeds these. [`ApiKind`] itself
//! is defined in the leaf `api_kind.rs`, so that the error types can name it without
//! importing this module; its rendering and decoding methods are added here.

use std::fmt;

use panewise_protocol::{CostSource, Failure, FailureKind, SessionStats};
use serde::Deserialize;

use crate::classify::classify;
use crate::classify::ErrorReport;
use crate::event::ProviderEvent;
use crate::price_table::PriceTable;

mod anthropic;
pub mod call;
pub mod context;
mod gemini;
pub mod history;
mod openai;
pub mod request;
mod retry;

pub use crate::api_kind::ApiKind;
pub use anthropic::AnthropicDecoder;
pub use call::{Completion, RenderedRequest, ToolCall};
pub use context::{check_provider_context, check_provider_context_in};
pub use gemini::GeminiDecoder;
pub use history::RenderedHistory;
pub use openai::OpenAiDecoder;
pub use request::{ApiMessage, ModelRequest, RequestHead, ToolDefinition};
pub use retry::RetryPolicy;

impl ApiKind {
    /// The request body of `request` in this API's shape.
    pub fn body(self, request: &ModelRequest<'_>) -> Result<Vec<u8>, crate::RequestError> {
        match self {
            ApiKind::Anthropic => request::anthropic::body(request),
            ApiKind::OpenAi => request::openai::body(request),
            ApiKind::Gemini => request::gemini::body(request),
        }
    }

    /// A fresh decoder of this API's stream.
    pub fn decoder(self) -> Box<dyn StreamDecoder + Send> {
        match self {
            ApiKind::Anthropic => Box::new(AnthropicDecoder::default()),
            ApiKind::OpenAi => Box::new(OpenAiDecoder::default()),
            ApiKind::Gemini => Box::new(GeminiDecoder::default()),
        }
    }
}

/// Decodes one API's server-sent events, one at a time, into [`ProviderEvent`]s.
///
/// A call's stream ends in one of two ways: a [`ProviderEvent::CallEnded`] with its usage, or
/// a [`ProviderEvent::Failure`] (an error event in a 200 stream, or, from [`finish`], a
/// stream that ended before its final event: `stream_disconnected`). Nothing follows either.
///
/// [`finish`]: StreamDecoder::finish
pub trait StreamDecoder {
    /// Decodes one event: its SSE `event` field (empty when it had none) and its `data`.
    fn feed(&mut self, event: &str, data: &str, out: &mut Vec<ProviderEvent>);

    /// The byte stream ended: what it lacked, if anything, as a failure.
    fn finish(&mut self, out: &mut Vec<ProviderEvent>);

    /// Whether the call has ended (its final event or a failure was decoded).
    fn is_done(&self) -> bool;
}

/// The failure of a stream that stopped before the API's final event.
pub fn disconnected(api: ApiKind) -> Failure {
    let message = format!("the {api} stream ended before its final event");
    classify(
        None,
        &ErrorReport {
            http_status: None,
            error_type: None,
            message: &format!("stream disconnected: {message}"),
            exit_code: None,
        },
    )
}

/// An API key. It never shows: its `Debug` and `Display` print `[redacted]`, and it is not
/// serializable; [`ApiKey::expose`] is the one way to the text, for the request header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key's text, to put in a request header and nowhere else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The error bodies of the three APIs: Anthropic `{"type":"error","error":{"type","message"}}`,
/// OpenAI `{"error":{"message","type","code"}}`, Gemini `{"error":{"code","message","status"}}`
/// (sometimes inside a one-element array).
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
pub(crate) struct ErrorDetail {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) code: Option<serde_json::Value>,
    pub(crate) status: Option<String>,
    pub(crate) message: Option<String>,
}

impl ErrorDetail {
    /// The classified failure, `http_status` when the answer had one.
    pub(crate) fn classify(&self, http_status: Option<u16>, raw: &str) -> Failure {
        let code_word = self.code.as_ref().and_then(serde_json::Value::as_str);
        let code_number = self
            .code
            .as_ref()
            .and_then(serde_json::Value::as_u64)
            .and_then(|code| u16::try_from(code).ok())
            .filter(|code| (400..600).contains(code));
        // The most specific word first: OpenAI's `code`, then the `type`, then Google's status.
        let word = code_word
            .or(self.kind.as_deref())
            .or(self.status.as_deref());
        classify(
            None,
            &ErrorReport {
                http_status: http_status.or(code_number),
                error_type: word,
                message: self.message.as_deref().unwrap_or(raw),
                exit_code: None,
            },
        )
    }
}

/// Classifies an API's error answer from its HTTP status, its `retry-after` header (kept as
/// the failure's wait, see [`retry_after_ms`]) and its body. A body that is not one of the
/// APIs' error shapes is kept verbatim as the message.
pub fn classify_http_error(status: u16, body: &str) -> Failure {
    let trimmed = body.trim_start();
    let detail = serde_json::from_str::<ErrorBody>(trimmed)
        .or_else(|_| {
            serde_json::from_str::<Vec<ErrorBody>>(trimmed)
                .map_err(|_| ())
                .and_then(|mut all| {
                    if all.is_empty() {
                        Err(())
                    } else {
                        Ok(all.swap_remove(0))
                    }
                })
        })
        .ok();
    match detail {
        Some(detail) => detail.error.classify(Some(status), body),
        None => {
            let message = if body.trim().is_empty() {
                format!("HTTP {status} with an empty body")
            } else {
                body.to_owned()
            };
            classify(
                None,
                &ErrorReport {
                    http_status: Some(status),
                    error_type: None,
                    message: &message,
                    exit_code: None,
                },
            )
        }
    }
}

/// The wait a `retry-after` header asks for, in milliseconds: whole or fractional seconds.
/// The HTTP-date form would need a clock and is read as absent (the backoff applies).
pub fn retry_after_ms(header: &str) -> Option<u64> {
    let seconds: f64 = header.trim().parse().ok()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    let millis = (seconds * 1000.0).ceil();
    // An absurd value saturates; the retry policy's bounds decide what is waited.
    Some(if millis >= u64::MAX as f64 {
        u64::MAX
    } else {
        millis as u64
    })
}

/// Prices one call's `stats` on `model` with `table`: `cost_usd` with `cost_source`
/// `estimated`, or no cost and `cost_source` `unknown` when the model has no price.
pub fn price_call(table: &PriceTable, model: Option<&str>, stats: &mut SessionStats) {
    match model.and_then(|model| table.estimate(model, stats)) {
        Some(cost) => {
            stats.cost_usd = Some(cost);
            stats.cost_source = Some(CostSource::Estimated);
        }
        None => {
            stats.cost_usd = None;
            stats.cost_source = Some(CostSource::Unknown);
        }
    }
}

/// The failure event of an error decoded from a stream.
pub(crate) fn failure_event(failure: Failure) -> ProviderEvent {
    ProviderEvent::Failure { failure }
}

/// A data line that is not the JSON the API sends: reported, never a panic.
pub(crate) fn malformed(api: ApiKind, event: &str, error: &serde_json::Error) -> ProviderEvent {
    ProviderEvent::Warning {
        message: format!("{api} event `{event}` is not the expected JSON: {error}"),
    }
}

/// Whether a failure kind is worth a retry by the transport.
pub fn is_retryable(failure: &Failure) -> bool {
    failure.retryable
        && matches!(
            failure.kind,
            FailureKind::RateLimited
                | FailureKind::Overloaded
                | FailureKind::ServerError
                | FailureKind::StreamDisconnected
        )
}

/// `a - b` when both are known; `a` alone when `b` is not reported; absent when `a` is.
pub(crate) fn known_difference(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.map(|a| a.saturating_sub(b.unwrap_or(0)))
}

#[cfg(test)]
mod tests;
