//! # panewise-window-eval
//!
//! Which window strategy to deploy: replays recorded agent sessions (Claude Code, Codex,
//! Gemini CLI, SpecStory, SWE-agent, panewise's own logs) through window strategies and
//! measures, per strategy and session, the input tokens sent, the prompt cache's reads and
//! writes under each provider's rules, the cost with the cache counted, and what the model
//! lost (evicted-before-use, re-fetch).
//!
//! ## Invariants
//! - Pure and synchronous: no I/O, no clock, no `async`, no randomness (the bootstrap's and
//!   the split-half check's draws come from a fixed-seed generator written out in [`stats`]).
//!   The caller reads the files and times the replays; this crate takes text and returns
//!   figures.
//! - Deterministic: the same recordings and configurations give the same figures, bit for bit
//!   (ordered maps only, fixed-seed hashing).
//! - A recording that cannot be read is an [`EvalError`], never a panic.
//!
//! ## API boundary
//! [`formats::read`] turns a file's text into a [`Recording`]; [`replay::replay`] runs one
//! recording through one strategy (or the raw history); [`report`] aggregates and renders; [`stats`] says how far the totals can be trusted.
//!
//! ## Where to start reading
//! [`replay`] for the replay of one session, [`loss`] for the two loss measures, [`formats`]
//! for the readers.
#![deny(missing_docs)]

pub mod anchor;
mod error;
pub mod formats;
pub mod loss;
pub mod recording;
pub mod replay;
pub mod report;
pub mod stats;

pub use error::EvalError;
pub use recording::{Family, Format, ModelCall, RecordedUsage, Recording};
