//! Errors of this crate: a client that cannot be set up.
//!
//! A call's own errors are not here. Whatever ends a call short of its answer (an HTTP error
//! answer, a connection refused or reset, a stream cut before its final event, an error event in
//! a 200 stream) is classified into the call's `Failure` by `panewise_providers`, retried when
//! the retry policy says so, and ends the stream as `panewise_providers::ApiError::Failed`;
//! a cancelled call ends as `ApiError::Cancelled`. That `ApiError` is the one error of the
//! [`ModelClient`](crate::ModelClient) trait: this crate's HTTP client and the host's scripted
//! one both yield it, and the host's pure agent loop reads it as data, so a second enum for the
//! same outcomes would only be converted back into it.

/// An [`HttpModelClient`](crate::HttpModelClient) or its [`ApiConfig`](crate::ApiConfig) that
/// cannot be made. No variant ever holds an API key.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The API key's environment variable is unset or blank
    /// ([`ApiConfig::from_env`](crate::ApiConfig::from_env)).
    #[error("{variable} is not set")]
    MissingKey {
        /// The variable looked for (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`).
        variable: &'static str,
    },
    /// reqwest could not build its HTTP client (its TLS setup, say).
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(reqwest::Error),
}
