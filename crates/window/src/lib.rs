//! # panewise-window
//!
//! The context-window stage: before every model call it decides what of the conversation
//! still goes on the wire, and files a record that explains the decision. The behaviour is
//! specified rule by rule (W1–W61) in `shared/reference/window-behaviour.md`; tests cite the
//! rules they check.
//!
//! ## Invariants
//! - A removal is one contiguous span of whole turns, so a tool call and its results leave
//!   together and surviving messages keep their order.
//! - The turn holding the current request never leaves, under any strategy.
//! - Every engaged visit returns a [`WindowRecord`], including visits that removed nothing;
//!   every turn that refused to leave is named in it with a [`RefusalReason`].
//! - Character counts are exact; no record quotes a token count for a window not yet sent.
//! - No I/O, no clock, no executor: the visit time and the provider's usage come in as data
//!   ([`VisitContext`]).
//!
//! ## API boundary
//! The caller owns a [`Conversation`] (messages plus cached counts and turns), builds a
//! [`WindowStage`] from a [`StrategyConfig`] or from any [`WindowStrategy`] impl, calls
//! [`WindowStage::visit`] at each iteration boundary, applies the returned [`WindowPlan`] with
//! [`Conversation::apply`], and appends `plan.record` to its own ledger. A team with its own
//! message type implements [`WindowMessage`].
//!
//! ## Where to start reading
//! [`visit`] holds the refusal engine and the pins; [`strategy`] the built-in strategies;
//! [`conversation`] the cached window that keeps a visit proportional to what changed.
#![deny(missing_docs)]

pub mod config;
pub mod conversation;
mod error;
pub mod message;
pub mod notice;
pub mod openai;
pub mod plan;
pub mod record;
mod scan;
mod stage;
pub mod strategy;
pub mod tokens;
pub mod visit;

pub use config::{PinConfig, StrategyConfig};
pub use conversation::{Conversation, Turn};
pub use error::{SummarizerError, WindowError};
pub use message::{Message, Role, ToolCall, ToolCallRef, WindowMessage};
pub use plan::{ContentReplacement, WindowEdit, WindowPlan};
pub use record::{
    CompactionRecord, FoldedSpan, Refusal, RefusalReason, Retain, Standing, Usage,
    WindowObservations, WindowRecord,
};
pub use stage::{complete_now, WindowStage};
pub use strategy::{
    ExtractiveSummarizer, Hybrid, ObservationMasking, SlidingWindow, SummarizeOldest, Summarizer,
    SummaryRequest, SummaryResponse, TokenBudget, WindowStrategy,
};
pub use tokens::{ApproxCounter, TokenCounter};
pub use visit::{Findings, Measured, Paused, PinSettings, Visit, VisitContext};

/// The stage id the stage writes on the notes it authors.
pub const STAGE_ID: &str = "window";
