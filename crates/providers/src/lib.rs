//! # panewise-providers
//!
//! Pure decoders of the streaming JSON that coding-agent CLIs write (Claude Code
//! `--output-format stream-json`, Codex `exec --json`, Gemini CLI `--output-format stream-json`),
//! normalised into one event vocabulary, [`ProviderEvent`].
//!
//! ## Invariants
//! - No I/O, no clock, no async: bytes go in, events come out. Reading files and pipes is the
//!   host's job.
//! - Bytes may arrive split anywhere; splitting a stream at any byte gives the same events as
//!   reading it whole.
//! - Bad input never panics and never stops decoding: a malformed line becomes a [`DecodeError`]
//!   with its line number, and decoding goes on with the next line.
//! - Nothing is dropped silently: a well-formed line of an unknown type becomes
//!   [`ProviderEvent::Unknown`] (kept verbatim) and is counted in [`DecodeCounts`].
//! - Two readers, one meaning: Claude Code's hot lines (`stream_event` deltas, `assistant` and
//!   `user` lines) go through a validating one-pass scanner, everything else through serde; the
//!   scanner gives a line up to serde whenever it is unsure, and tests require both to emit the
//!   same events. Fields a hot line does not use are checked for JSON syntax, not for type.
//! - Figures are the provider's own, each token counted once: per-call usage is reported once per
//!   model call even when the CLI repeats it, and turn figures are the turn's own, never a running
//!   total of the session.
//!
//! ## API boundary
//! [`Decoder`] (one per stream, [`Provider`] chooses the format) with [`decode_all`] as a
//! shortcut; [`classify_failure`] for errors seen outside a stream and
//! [`process_exited_failure`] for a stream that ended mid-turn;
//! [`oneshot`] for the per-turn arguments of Codex and Gemini CLI;
//! [`ModelTable`] for context windows the CLIs do not report; [`Mapper`] from events to the
//! reducer's `Msg`s, with [`fold_events`] and [`summarize`] for a whole captured stream.
//!
//! ## Where to start reading
//! [`event`] for the vocabulary, then [`decoder`] for the byte front end, then one of
//! `claude`, `codex`, `gemini` for a format (`scan` is the Claude hot path's JSON scanner), then
//! [`mapping`] for what the reducer is told.
#![deny(missing_docs)]

pub mod api;
mod args;
mod classify;
mod claude;
pub mod claude_control;
mod codex;
pub mod decoder;
mod error;
pub mod event;
mod figures;
mod gemini;
pub mod mapping;
mod model_table;
pub mod oneshot;
mod price_table;
mod scan;
#[cfg(feature = "api")]
pub mod transport;

pub use api::{
    ApiKey, ApiKind, ApiMessage, ModelRequest, RetryPolicy, StreamDecoder, ToolDefinition,
};
pub use classify::{
    classify_cli_failure, classify_failure, gemini_exit_status, process_exited_failure, ErrorReport,
};
pub use decoder::{decode_all, DecodeCounts, Decoded, Decoder, Provider, UnknownProvider};
pub use error::{ApiError, DecodeError, ModelTableError, PriceTableError, RequestError};
pub use event::{ProviderEvent, ToolStatus, UsageScope};
pub use mapping::{
    fold_events, summarize, Fold, LiveFold, Mapper, ModelSource, PaneSummary, SummaryFailure,
};
pub use model_table::{ModelTable, WindowRule};
pub use price_table::{ModelPrice, PriceTable};

pub use panewise_protocol::{
    CompactionTrigger, CostSource, Failure, FailureKind, PlanStep, PlanStepStatus, SessionStats,
};
