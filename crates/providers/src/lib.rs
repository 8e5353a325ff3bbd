//! # panewise-providers
//!
//! Pure decoders of the streaming JSON that coding-agent CLIs write (Claude Code
//! `--output-format stream-json`, Codex `exec --json`, Gemini CLI `--output-format stream-json`,
//! and the two JSON-RPC stdio channels: Codex `app-server` and the Agent Client Protocol that
//! Gemini CLI `--acp` speaks), normalised into one event vocabulary, [`ProviderEvent`], and the
//! pure client halves of the control channels (the lines a host writes, and what it learns from
//! the answers); and clients of the model APIs themselves (the Anthropic Messages API, the
//! OpenAI Responses API and the Gemini API), whose streamed answers decode into the same
//! vocabulary, for panewise's own agent loop and its window stage's summaries.
//!
//! The API clients come in two halves. The pure half, [`api`], always built: the request
//! ([`ModelRequest`], borrowing the caller's history), its rendering as each API's body, one
//! [`StreamDecoder`] per API fed one server-sent event at a time, the classification of error
//! answers, the [`RetryPolicy`] schedule and the redacted [`ApiKey`]. The transport,
//! `transport` (cargo feature `api`, off by default), is the one module with I/O: reqwest (rustls
//! on ring, no C toolchain), `eventsource-stream` for the SSE framing, tokio for waits and
//! cancellation, and the `transport::ModelClient` trait with its HTTP
//! implementation.
//!
//! ## Invariants
//! - No I/O, no clock, no async: bytes go in, events come out. Reading files and pipes is the
//!   host's job.
//! - Bytes may arrive split anywhere; splitting a stream at any byte gives the same events as
//!   reading it whole.
//! - Bad input never panics and never stops decoding: a malformed line becomes a [`DecodeError`]
//!   with its line number, and decoding goes on with the next line.
//! - Nothing is dropped silently: a well-formed line of an unknown type becomes
//!   [`ProviderEvent::Unknown`] (kept verbatim) and is counted in [`DecodeCounts`]; a known line
//!   that carries nothing for the pane is counted as silent.
//! - Two readers, one meaning: Claude Code's hot lines (`stream_event` deltas, `assistant` and
//!   `user` lines) go through a validating one-pass scanner, everything else through serde; the
//!   scanner gives a line up to serde whenever it is unsure, and tests require both to emit the
//!   same events. Fields a hot line does not use are checked for JSON syntax, not for type.
//! - Figures are the provider's own, each token counted once: per-call usage is reported once per
//!   model call even when the CLI repeats it, and turn figures are the turn's own, never a running
//!   total of the session.
//! - An API call's stream ends with exactly one outcome: [`ProviderEvent::CallEnded`] with
//!   the call's exact usage (each field the provider's own, absent when not reported, never a
//!   0 standing in for it; priced with the [`PriceTable`] and its `cost_source`), a classified
//!   failure (an HTTP error, an error event in a 200 stream, or a stream that ended before its
//!   final event: `stream_disconnected`), or a cancellation. Tool calls arrive whole, as
//!   [`ProviderEvent::ToolCallRequested`], their streamed argument pieces assembled.
//! - Retries are the transport's: only retryable kinds, only before any of the answer was
//!   passed on, after a [`ProviderEvent::ProviderRetrying`], waiting what `retry-after` asks
//!   or an exponential backoff with jitter, bounded by attempts and total wait; a cancel
//!   token ends a request, a stream or a wait at once.
//! - An API key never shows: [`ApiKey`] prints `[redacted]`, the header carrying it is marked
//!   sensitive, and no error holds it.
//!
//! ## API boundary
//! [`Decoder`] (one per stream, [`Provider`] chooses the format) with [`decode_all`] as a
//! shortcut; [`classify_failure`] for errors seen outside a stream and
//! [`process_exited_failure`] for a stream that ended mid-turn;
//! [`oneshot`] for the per-turn arguments of Codex and Gemini CLI; [`claude_control`],
//! [`codex_appserver::AppServerSession`] and [`acp::AcpSession`] for the lines written to a
//! persistent agent (requests numbered and matched with their answers, approvals answered),
//! failing with [`ChannelError`] when a line needs what the agent has not said yet;
//! [`ModelTable`] for context windows the CLIs do not report; [`Mapper`] from events to the
//! reducer's `Msg`s, with [`fold_events`] and [`summarize`] for a whole captured stream.
//! For the model APIs: [`ApiKind`] (endpoint, body, decoder of each API), [`RenderedHistory`]
//! (each message's body fragment rendered once, the body assembled from them) and, with the `api`
//! feature, `transport::HttpModelClient` (built from an `ApiConfig` or `from_env()`, reading
//! `ANTHROPIC_API_KEY`/`ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`/`OPENAI_BASE_URL`,
//! `GEMINI_API_KEY`/`GOOGLE_GEMINI_BASE_URL`); errors are [`ApiError`] and [`RequestError`].
//!
//! ## Where to start reading
//! [`event`] for the vocabulary, then [`decoder`] for the byte front end, then one of
//! `claude`, `codex`, `gemini`, [`codex_appserver`], [`acp`] for a format (`scan` is the Claude
//! hot path's JSON scanner, `rpc` the JSON-RPC envelope the last two share), then [`mapping`]
//! for what the reducer is told. For the API clients: [`api`], then one of its decoders
//! (`api/anthropic.rs`, `api/openai.rs`, `api/gemini.rs`), then `transport.rs`.
#![cfg_attr(
    feature = "api",
    doc = r#"
## Example

Stream one completion from any of the three APIs pointed at a base URL; here the workspace's
mock server on 127.0.0.1 (`examples/stream.rs` takes a real base URL and key instead).

```
use futures_util::StreamExt as _;
use panewise_providers::transport::{ApiConfig, CancellationToken, HttpModelClient, ModelClient};
use panewise_providers::{ApiKey, ApiKind, ApiMessage, ModelRequest, ProviderEvent};

# fn main() -> Result<(), Box<dyn std::error::Error>> {
let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
runtime.block_on(async {
    let mock = panewise_mock_server::MockServer::start(Default::default()).await?;
    for api in ApiKind::ALL {
        let config = ApiConfig::new(api, mock.base_url(), ApiKey::new("mock-key"));
        let client = HttpModelClient::new(config)?;
        let history = [ApiMessage::User { text: "Say hello.".into() }];
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: None,
            messages: history.as_slice().into(),
            tools: Default::default(),
            max_output_tokens: 256,
            prompt_cache: true,
            cache_key: None,
            context_management: None,
        };
        let mut events = client.stream(&request, CancellationToken::new())?;
        let mut text = String::new();
        while let Some(event) = events.next().await {
            match event? {
                ProviderEvent::TextDelta { text: piece } => text.push_str(&piece),
                ProviderEvent::CallEnded { stats, .. } => assert!(stats.output_tokens.is_some()),
                _ => {}
            }
        }
        assert!(!text.is_empty(), "{api}");
    }
    Ok(())
})
# }
```
"#
)]
#![deny(missing_docs)]

pub mod acp;
pub mod api;
mod args;
pub mod call_usage;
mod classify;
mod claude;
pub mod claude_control;
mod codex;
pub mod codex_appserver;
pub mod decoder;
mod error;
pub mod event;
mod figures;
mod gemini;
pub mod keys;
mod line;
pub mod mapping;
mod model_table;
pub mod oneshot;
mod price_table;
mod rpc;
pub mod rpc_client;
mod scan;
pub mod sniff;
pub mod summary;
#[cfg(feature = "api")]
pub mod transport;

pub use api::{
    check_provider_context, check_provider_context_in, ApiKey, ApiKind, ApiMessage, ModelRequest,
    RenderedHistory, RequestHead, RetryPolicy, StreamDecoder, ToolDefinition,
};
pub use call_usage::CallTokens;
pub use classify::{
    classify_cli_failure, classify_failure, gemini_exit_status, process_exited_failure, ErrorReport,
};
pub use decoder::{decode_all, DecodeCounts, Decoded, Decoder, Provider, UnknownProvider};
pub use error::{
    ApiError, ChannelError, DecodeError, ModelTableError, PairingError, PriceTableError,
    RequestError, Unsupported,
};
pub use event::{ProviderEvent, ToolStatus, UsageScope};
pub use mapping::{fold_events, Fold, LiveFold, Mapper, ModelSource};
pub use model_table::{ContextRule, ModelTable, WindowRule};
pub use price_table::{CostSplit, ModelPrice, PriceTable};
pub use sniff::Sniffer;
pub use summary::{summarize, summarize_tally, PaneSummary, SummaryFailure, ToolCount, ToolTally};

pub use panewise_protocol::{
    CompactionTrigger, CostSource, Failure, FailureKind, PlanStep, PlanStepStatus, SessionStats,
};
