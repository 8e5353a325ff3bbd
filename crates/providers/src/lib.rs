//! # panewise-providers
//!
//! Pure decoders of the streaming JSON that coding-agent CLIs write (Claude Code
//! `--output-format stream-json`, Codex `exec --json`, Gemini CLI `--output-format stream-json`,
//! and the two JSON-RPC stdio channels: Codex `app-server` and the Agent Client Protocol that
//! Gemini CLI `--acp` speaks), normalised into one event vocabulary, [`ProviderEvent`], and the
//! pure client halves of the control channels (the lines a host writes, and what it learns from
//! the answers, as [`rpc_client::Step`]s); and the pure half of the clients of the model APIs
//! themselves (the Anthropic Messages API, the OpenAI Responses API and the Gemini API), whose
//! streamed answers decode into the same vocabulary, for panewise's own agent loop and its
//! window stage's summaries.
//!
//! The API clients' pure half, [`api`]: the request ([`ModelRequest`], borrowing the caller's
//! history), its rendering as each API's body, one [`StreamDecoder`] per API fed one
//! server-sent event at a time, the classification of error answers, the [`RetryPolicy`]
//! schedule, the redacted [`ApiKey`], and a call's [`RenderedRequest`] and assembled
//! [`Completion`]. The transport that feeds them (HTTP, SSE framing, tokio, retry waits and
//! cancellation) is another crate, `panewise-transport`; this one links none of it.
//!
//! ## Invariants
//! - No I/O, no clock, no async, no randomness, no lock, in the whole crate: bytes go in, events
//!   come out, and a channel's next lines come out as data. Reading files and pipes, sending
//!   requests and waiting are the host's and `panewise-transport`'s job. `cargo xtask deps`
//!   checks the whole crate, with no exclusion.
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
//! - Retries are decided here and waited by the transport: [`RetryPolicy::delay`] retries only
//!   retryable kinds ([`api::is_retryable`]), waiting what `retry-after` asks or an exponential
//!   backoff with the jitter the caller drew, bounded by attempts and total wait.
//! - An API key never shows: [`ApiKey`] prints `[redacted]` and no error holds it.
//!
//! ## API boundary
//! [`Decoder`] (one per stream, [`Provider`] chooses the format) with [`decode_all`] as a
//! shortcut; [`classify_failure`] for errors seen outside a stream and
//! [`process_exited_failure`] for a stream that ended mid-turn;
//! [`oneshot`] for the per-turn arguments of Codex and Gemini CLI; [`claude_control`] (with
//! [`claude_control::ControlRequests`] numbering the host's control requests),
//! [`codex_appserver::AppServerSession`] and [`acp::AcpSession`] for the lines written to a
//! persistent agent (requests numbered and matched with their answers, approvals answered),
//! failing with [`ChannelError`] when a line needs what the agent has not said yet, and
//! [`rpc_client::RpcClient`] driving either JSON-RPC channel as pure [`rpc_client::Step`]s;
//! [`ModelTable`] for context windows the CLIs do not report; [`Mapper`] from events to the
//! reducer's `Msg`s, with [`fold_events`] and [`summarize`] for a whole captured stream.
//! For the model APIs: [`ApiKind`] (endpoint, body, decoder of each API), [`RenderedHistory`]
//! (each message's body fragment rendered once, the body assembled from them), [`RenderedRequest`]
//! (what the transport sends) and [`Completion`] (a call's events assembled); errors are
//! [`ApiError`] and [`RequestError`].
//!
//! ## Where to start reading
//! [`event`] for the vocabulary, then [`decoder`] for the byte front end, then one of
//! `claude`, `codex`, `gemini`, [`codex_appserver`], [`acp`] for a format (`scan` is the Claude
//! hot path's JSON scanner, `rpc` the JSON-RPC envelope the last two share, `channel` the
//! helpers every channel repeats), then [`mapping`] for what the reducer is told. For the API
//! clients: `api_kind.rs`, then [`api`], then one of its decoders (`api/anthropic.rs`,
//! `api/openai.rs`, `api/gemini.rs`).
#![deny(missing_docs)]

pub mod acp;
pub mod api;
mod api_kind;
mod args;
pub mod call_usage;
mod channel;
mod classify;
mod claude;
pub mod claude_control;
pub mod claude_question;
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

pub use api::{
    check_provider_context, check_provider_context_in, ApiKey, ApiKind, ApiMessage, Completion,
    ModelRequest, RenderedHistory, RenderedRequest, RequestHead, RetryPolicy, StreamDecoder,
    ToolCall, ToolDefinition,
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
