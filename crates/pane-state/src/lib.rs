//! # panewise-pane-state
//!
//! A pure, replayable reducer of one agent session as a person watches it:
//! [`update`]`(State, Msg) -> (State, Vec<Cmd>)`.
//!
//! The [`State`] holds what a pane shows: the turn phase (the single source of truth of "is the
//! agent working?"), stream liveness, the context meter, compaction, tool activity, failures,
//! queued messages, approvals and questions, and cost and token totals. [`Msg`] is everything
//! that can happen; [`Cmd`] is everything the reducer asks the host to do (arm or cancel a
//! turn's deadline, send a prompt, interrupt or kill the agent, unblock a tool) or to report to
//! a front end that reads it ([`Event`]). The host decides none of these itself.
//!
//! ## Invariants
//! - **Pure.** No I/O, no clock reads, no randomness, no threads, no tokio. Time arrives as
//!   data: in message fields and as `state.now_ms`, which [`step`] stamps before each message.
//!   Ids come from counters in the state. So the same `(State, Msg)` always gives the same
//!   result, and folding a recorded log ([`log`]) recomputes the state exactly.
//! - **Total.** `update` never panics. A message that makes no sense in the current state is a
//!   no-op, or is counted in `state.diagnostics`.
//! - **Cheap.** The state moves by value and handlers edit it in place; no message clones the
//!   whole state, and no handler does work that grows with the session's length.
//! - **Guarded.** No working phase while the stream is unsubscribed; no turn starts while init
//!   is pending; tool counts never go negative; learned windows never shrink; totals never
//!   decrease; a shown context reading never exceeds its window.
//!
//! ## API boundary
//! Public: [`State`] and its parts, [`Msg`], [`Cmd`], [`Event`], [`update`], [`step`], the
//! context helpers in [`context`], the turn ledger in [`ledger`], and the log format in [`log`]
//! (message lines, and checkpoint lines a replay compares its fold against).
//! The crate knows nothing of providers or of the host that runs commands.
//!
//! ## Where to start reading
//! [`Msg`] lists what can happen; [`reducer`] handles each message, rule by rule (the R-numbers
//! refer to the pane-state behaviour catalog); [`State`] documents every field's lifecycle.
#![deny(missing_docs)]

pub mod budget;
pub mod cmd;
pub mod context;
pub mod error;
pub mod ledger;
pub mod log;
pub mod msg;
pub mod reducer;
pub mod state;
pub mod vocabulary;

pub use cmd::{AnswerRefusal, Cmd, ConfirmAction, DeadlineKind, Event, IgnoreReason};
pub use context::{ContextReading, ReadingSource, WindowSource};
pub use error::{CheckpointMismatch, LogError};
pub use log::{
    parse_log, parse_log_bytes, Actor, LogEntry, LogHeader, LogLine, LogNote, LogReader,
    OwnLoopHeader, RecordedCheckpoint, Recorder, SessionLog, ToolCallStatus, TranscriptEntry,
    TranscriptLine,
};
pub use msg::{Msg, MsgKind};
pub use reducer::{step, step_into, update, update_into, WATCHDOG_TICK_MS};
pub use state::{
    BudgetCaps, BudgetHold, Deadlines, PaneState, State, TurnOutcome, TurnPhase, WindowStandDown,
};

pub use panewise_protocol::{
    CompactionTrigger, CostSource, Failure, FailureKind, PlanStep, PlanStepStatus, SessionStats,
    TurnId,
};
