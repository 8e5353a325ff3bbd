//! # panewise-transport
//!
//! The HTTP transport of panewise's model API clients (the Anthropic Messages API, the OpenAI
//! Responses API and the Gemini API): [`HttpModelClient`] sends the request body
//! `panewise-providers` rendered, frames the streamed answer as server-sent events
//! (`eventsource-stream`), feeds each event to that crate's pure `StreamDecoder`, waits out the
//! retries its `RetryPolicy` asks for, and ends at once when cancelled. This is the only crate
//! of the model API clients that does I/O: reqwest (rustls on ring, no C toolchain), tokio for
//! waits and cancellation, fastrand for the retry jitter. Everything that decides (what the
//! bytes mean, whether and how long to wait, what a call cost) is in `panewise-providers`,
//! which links none of this.
//!
//! ## Invariants
//! - A call's stream ends with exactly one outcome: `Ok(ProviderEvent::CallEnded)` with the
//!   call's exact usage priced with the configured price table, `Err(ApiError::Failed)` with a
//!   classified failure (an HTTP error, an error event in a 200 stream, a connection error, or
//!   a stream that ended before its final event), or `Err(ApiError::Cancelled)`.
//! - Retries: only retryable kinds, only before any of the answer was passed on (text,
//!   thinking or a tool call), each announced by a `ProviderEvent::ProviderRetrying` before its
//!   wait, waiting what `retry-after` asks or the policy's backoff with jitter, bounded by
//!   attempts and total wait; a [`CancellationToken`] ends a request, a stream or a wait at
//!   once.
//! - An API key never shows: it travels in the API's own header, marked sensitive (left out
//!   of reqwest's `Debug` output), and no error or event carries it.
//! - The body sent is the one the caller rendered ([`ModelClient::stream_rendered`]) or the one
//!   `ApiKind::body` renders; nothing here changes it.
//!
//! ## API boundary
//! The [`ModelClient`] trait (what the host's agent loop and the window stage's summaries call,
//! and what their tests script) and its HTTP implementation [`HttpModelClient`], built from an
//! [`ApiConfig`] or `from_env()` (reading `ANTHROPIC_API_KEY`/`ANTHROPIC_BASE_URL`,
//! `OPENAI_API_KEY`/`OPENAI_BASE_URL`, `GEMINI_API_KEY`/`GOOGLE_GEMINI_BASE_URL`); a call's
//! events come as an [`EventStream`]; the retry jitter is a [`Jitter`] ([`FixedJitter`] in
//! tests). A client or configuration that cannot be made fails with this crate's
//! [`TransportError`]; a call fails with `panewise_providers::ApiError`, the one error of the
//! [`ModelClient`] trait (the host's scripted client yields it too, and its pure agent loop reads
//! it): the transport's own failures during a call (a refused or reset connection, a stream cut
//! short) are classified into that `ApiError::Failed` like an HTTP error answer, so that they
//! retry by the same policy, rather than surfacing as a second error type (`error.rs` says why).
//!
//! ## Where to start reading
//! `client.rs`: [`ModelClient`], then `Call::next`, the state machine of one call (connect,
//! stream, wait, done). For what the events mean, `panewise_providers::api`.
//!
//! ## Example
//!
//! Stream one completion from any of the three APIs pointed at a base URL; here the workspace's
//! mock server on 127.0.0.1 (`examples/stream.rs` takes a real base URL and key instead).
//!
//! ```
//! use futures_util::StreamExt as _;
//! use panewise_providers::{ApiKey, ApiKind, ApiMessage, ModelRequest, ProviderEvent};
//! use panewise_transport::{ApiConfig, CancellationToken, HttpModelClient, ModelClient};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! runtime.block_on(async {
//!     let mock = panewise_mock_server::MockServer::start(Default::default()).await?;
//!     for api in ApiKind::ALL {
//!         let config = ApiConfig::new(api, mock.base_url(), ApiKey::new("mock-key"));
//!         let client = HttpModelClient::new(config)?;
//!         let history = [ApiMessage::User { text: "Say hello.".into() }];
//!         let request = ModelRequest {
//!             model: "claude-sonnet-4-5".into(),
//!             system: None,
//!             messages: history.as_slice().into(),
//!             tools: Default::default(),
//!             max_output_tokens: 256,
//!             prompt_cache: true,
//!             cache_key: None,
//!             context_management: None,
//!         };
//!         let mut events = client.stream(&request, CancellationToken::new())?;
//!         let mut text = String::new();
//!         while let Some(event) = events.next().await {
//!             match event? {
//!                 ProviderEvent::TextDelta { text: piece } => text.push_str(&piece),
//!                 ProviderEvent::CallEnded { stats, .. } => assert!(stats.output_tokens.is_some()),
//!                 _ => {}
//!             }
//!         }
//!         assert!(!text.is_empty(), "{api}");
//!     }
//!     Ok(())
//! })
//! # }
//! ```
#![deny(missing_docs)]

mod client;
mod error;

pub use client::{
    ApiConfig, CancellationToken, EventStream, FixedJitter, HttpModelClient, Jitter, ModelClient,
    RandomJitter, ANTHROPIC_VERSION,
};
pub use error::TransportError;
pub use panewise_providers::{Completion, RenderedRequest, ToolCall};
