//! # panewise-window
//!
//! The context-window stage: before every model call it decides what of the conversation
//! still goes on the wire, and files a record that explains the decision. The behaviour is
//! specified rule by rule (W1–W61, W70–W77 for the archive, W80–W89 for the floor and the anchors, one line each in the repository's `docs/RULES.md`); tests cite the
//! rules they check.
//!
//! ## Invariants
//! - A removal is one contiguous span of whole turns, so a tool call and its results leave
//!   together and surviving messages keep their order.
//! - The turn holding the current request never leaves, under any strategy.
//! - Every engaged visit returns a [`WindowRecord`], including visits that removed nothing;
//!   every turn that refused to leave is named in it with a [`RefusalReason`].
//! - Character counts are exact; no record quotes a token count for a window not yet sent.
//! - Pure and synchronous: no I/O, no clock, no `async`, no executor. The visit time and the
//!   provider's usage come in as data ([`VisitContext`]); a summary the strategy needs goes out
//!   as data ([`SummaryRequest`]) and comes back as data ([`PendingSummary::complete`]).
//! - No interior mutability and no hidden state: no `Mutex`, atomics or cells. What one visit
//!   leaves for the next (the once-only warning, spans refused for a summary not smaller) is
//!   the caller's [`StageMemory`], passed to every visit.
//! - Restorable: every message an edit removes, masks or folds is in the plan's archived spans
//!   ([`WindowPlan::archived_spans`], which the caller reads before applying the plan), whole
//!   and content-addressed ([`archive`]), and the notice in its place names it by id.
//! - Deterministic: the same conversation, context and memory give the same plan and record.
//!   Every hasher has a fixed seed; nothing is seeded from the OS.
//! - Checked on generated histories, visit after visit, for every strategy: no call without its
//!   result, the current request and the pins kept, the budget met or the reason recorded
//!   (`properties`, built for the crate's tests and by the `properties` feature, which
//!   `cargo xtask fuzz --target window-properties` uses).
//!
//! ## API boundary
//! The caller owns a [`Conversation`] (messages plus cached counts and turns) and a
//! [`StageMemory`], builds a [`WindowStage`] from a [`StrategyConfig`] or from any
//! [`WindowStrategy`] impl, and calls [`WindowStage::visit`] at each iteration boundary. The
//! [`VisitOutcome`] is `NotEngaged`, `Ready(plan)`, or `NeedsSummary(pending)`: the caller asks
//! its summarizer with [`PendingSummary::request`] and gets the plan from
//! [`PendingSummary::complete`], with the summary or the failure. It applies the plan with
//! [`Conversation::apply`] and appends `plan.record` to its own ledger. Model calls, and the
//! async summarizer interface, belong to the caller (`panewise-host`); [`ExtractiveSummarizer`]
//! is a pure answer for offline use. A team with its own message type implements
//! [`WindowMessage`].
//!
//! ## Where to start reading
//! [`stage`]'s [`WindowStage::visit`] for the flow of one visit; [`visit`] holds the refusal
//! engine and the pins; [`strategy`] the built-in strategies (`summarize` for the fold that asks
//! for a summary); [`conversation`] the cached window that keeps a visit proportional to what
//! changed.
#![deny(missing_docs)]

pub mod archive;
pub mod cache;
pub mod config;
pub mod conversation;
mod dense;
mod error;
mod floor;
pub mod message;
pub mod notice;
pub mod openai;
pub mod plan;
#[cfg(any(test, feature = "properties"))]
#[doc(hidden)]
pub mod properties;
pub mod provider;
pub mod record;
mod scan;
pub mod span;
mod span_cache;
pub mod stage;
pub mod strategy;
mod strategy_docs;
pub mod tokens;
pub mod visit;

pub use archive::{ArchivedSpan, Removal, SpanId, SpanKind};
pub use config::{CacheGuard, PinConfig, StrategyConfig};
pub use conversation::{Conversation, Turn};
pub use error::{SummarizerError, WindowError};
pub use message::{Message, Role, ToolCall, ToolCallRef, WindowMessage};
pub use plan::{ContentReplacement, WindowEdit, WindowPlan};
pub use provider::{AppliedContextEdit, ProviderContext, ProviderEditRecord};
pub use record::{
    CacheImpact, CompactionRecord, EditDecision, FloorParts, FoldedSpan, Refusal, RefusalReason,
    Retain, Standing, Usage, WindowFloor, WindowObservations, WindowRecord,
};
pub use scan::char_count;
pub use stage::{PendingSummary, StageMemory, VisitOutcome, WindowStage};
pub use strategy::{
    ExtractiveSummarizer, Hybrid, ObservationMasking, Planned, SlidingWindow, SummarizeOldest,
    SummaryAsk, SummaryRequest, SummaryResponse, TokenBudget, WindowStrategy,
};
pub use tokens::{ApproxCounter, TokenCounter};
pub use visit::{Findings, Measured, Paused, PinSettings, Visit, VisitContext};

/// The stage id the stage writes on the notes it authors.
pub const STAGE_ID: &str = "window";
