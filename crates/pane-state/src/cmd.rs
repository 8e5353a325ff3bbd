//! What the reducer asks for: effects for the host to run, and the few events a front end reads.
//!
//! `Cmd` is plain comparable data, so tests call [`crate::update`] and compare the commands it
//! returned. Effects name what to do, never how: arming a timer, cancelling a turn's tasks,
//! unblocking a tool. Events (`Cmd::Emit`) only report, and only what some front end reads:
//! everything else a view shows it reads from the folded state.
//!
//! ## Deadlines, for the runner
//! The reducer arms at most one deadline per [`DeadlineKind`], each for the turn it guards.
//! A tokio runner keeps one timer per `(turn, kind)` key:
//! - on [`Cmd::ScheduleDeadline`] it starts a sleep until `deadline_ms` (replacing a timer
//!   already armed under the same key) and, when it fires, sends back
//!   [`DeadlineKind::elapsed`]`(turn, deadline_ms)`, stamped with its clock as usual;
//! - on [`Cmd::CancelDeadline`] it aborts the timer under that key, if any. The reducer emits
//!   it as soon as the deadline stops mattering (the turn left the phase it guards, or a new
//!   turn replaced it), so no timer outlives its turn.
//!
//! Cancelling is for tidiness, not correctness: a timer that fires anyway (it raced the
//! cancel) comes back with its turn and deadline, and the reducer drops it as stale (R81): no
//! command, and the state unchanged.

use panewise_protocol::TurnId;
use serde::{Deserialize, Serialize};

use crate::msg::Msg;
use crate::vocabulary::Actor;

pub use crate::vocabulary::{ConfirmAction, DeadlineKind};

/// One command returned by [`crate::update`].
///
/// Exhaustive on purpose: the session engine matches every command with no wildcard arm, so a
/// command added here does not compile until the engine gives it an effect (R79 keeps the
/// reducer's own matches exhaustive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Cmd {
    /// Arm a timer that sends [`DeadlineKind::elapsed`]`(turn, deadline_ms)` at `deadline_ms`
    /// (R27). A deadline already armed for the same `(turn, kind)` is replaced.
    ScheduleDeadline {
        /// The turn the deadline guards; `None` only for a turn the reducer never numbered
        /// (one the backend reported running after a reset).
        turn: Option<TurnId>,
        /// Which deadline.
        kind: DeadlineKind,
        /// When it fires, on the same clock as `state.now_ms`.
        deadline_ms: u64,
    },
    /// Disarm the timer armed for `(turn, kind)`: it no longer matters.
    CancelDeadline {
        /// The turn it was armed for.
        turn: Option<TurnId>,
        /// Which deadline.
        kind: DeadlineKind,
    },
    /// Write `text` to the agent as the prompt of `turn` (R94): a user line on a persistent
    /// agent's stdin, or a new one-shot run (resuming the session) for a CLI that runs per turn.
    /// The reducer already started `turn`; a send that fails is reported with `TurnStartFailed`.
    SendPrompt {
        /// The turn the prompt starts.
        turn: TurnId,
        /// The prompt, verbatim.
        text: String,
    },
    /// Ask the agent to stop `turn` (R95): Claude Code's `interrupt` control request, or SIGINT
    /// to a one-shot CLI's process group. The interrupt deadline is armed alongside.
    InterruptAgent {
        /// The turn to stop.
        turn: Option<TurnId>,
    },
    /// Kill the agent's process group (SIGKILL) because `turn` did not stop in time, or the
    /// user asked to stop a second time (R95). The reducer already ended the turn as
    /// interrupted; the exit that follows is expected and is not a failure (R96).
    KillAgent {
        /// The turn being stopped.
        turn: Option<TurnId>,
    },
    /// Unblock the tool waiting on approval `id` (R86): the first answer to it (R101).
    ResolveApproval {
        /// The approval's id.
        id: String,
        /// The tool asking.
        tool: String,
        /// Whether it was approved.
        approved: bool,
        /// Allowed for the rest of the session (R103).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_session: bool,
        /// Who answered, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Actor>,
        /// What the agent is told with a denial, when the answer said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Unblock the tool waiting on question set `id` (R86).
    ResolveQuestion {
        /// The question set's id.
        id: String,
        /// The answers.
        answers: Vec<String>,
    },
    /// Report an event to the front ends.
    Emit(Event),
}

/// Events for the front ends (R76): each has a reader. The terminal of `panewise run` says
/// [`Event::StreamStuck`]; the session engine tells the answerer of [`Event::AnswerRefused`].
/// A change a view can see in the folded state is not also announced as an event.
///
/// Non-exhaustive: a view matches the events it shows and ignores the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// No activity for a while, but not long enough to recover.
    StreamStuck {
        /// Milliseconds without activity.
        idle_since_ms: u64,
        /// The threshold that was crossed.
        threshold_ms: u64,
    },
    /// An answer was refused: the request it names no longer waits, or none waits (R101).
    /// The answer stays in the log with this refusal beside it.
    AnswerRefused {
        /// The request the answer named, if it named one.
        id: Option<String>,
        /// Why.
        refusal: AnswerRefusal,
    },
}

/// Why an answer was refused (R101).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "refusal", rename_all = "snake_case")]
pub enum AnswerRefusal {
    /// The request was answered already; the first answer stands.
    AlreadyAnswered {
        /// What the first answer was.
        approved: bool,
        /// Who gave it, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Actor>,
    },
    /// The agent withdrew the request (or a stop cleared it) before the answer came.
    Withdrawn,
    /// No request with that id is or was waiting.
    Unknown,
    /// No request waits at all.
    NothingWaiting,
}

impl AnswerRefusal {
    /// Why, in a sentence for the person who answered.
    pub fn describe(&self) -> String {
        match self {
            AnswerRefusal::AlreadyAnswered { approved, by } => {
                let what = if *approved { "allowed" } else { "denied" };
                match by {
                    Some(by) => format!("it was already {what} by {}", by.describe()),
                    None => format!("it was already {what}"),
                }
            }
            AnswerRefusal::Withdrawn => {
                "the agent no longer waits for it (withdrawn, or the turn was stopped)".to_owned()
            }
            AnswerRefusal::Unknown => "no request with that id waits".to_owned(),
            AnswerRefusal::NothingWaiting => "no request waits for an answer".to_owned(),
        }
    }
}

/// Why a message was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IgnoreReason {
    /// An approval answer arrived with no approval pending (R86).
    NoApprovalPending,
    /// A question answer arrived with no question set pending (R86).
    NoQuestionPending,
    /// A confirmation answer arrived with no confirmation pending.
    NoConfirmationPending,
    /// A byte-capped buffer was full; the text was cut to fit (R89).
    BufferFull,
}

impl IgnoreReason {
    /// A sentence for people, as kept in `state.diagnostics.last`.
    pub fn describe(self) -> &'static str {
        match self {
            IgnoreReason::NoApprovalPending => "no approval is pending",
            IgnoreReason::NoQuestionPending => "no question is pending",
            IgnoreReason::NoConfirmationPending => "no confirmation is pending",
            IgnoreReason::BufferFull => "the 16 KiB buffer is full; the rest was cut",
        }
    }
}

impl DeadlineKind {
    /// The message a runner sends back when the deadline armed by
    /// [`Cmd::ScheduleDeadline`]`{ turn, kind: self, deadline_ms }` fires.
    pub fn elapsed(self, turn: Option<TurnId>, deadline_ms: u64) -> Msg {
        let deadline_ms = Some(deadline_ms);
        match self {
            DeadlineKind::Submit => Msg::SubmitTimeoutElapsed { turn, deadline_ms },
            DeadlineKind::Interrupt => Msg::InterruptTimeoutElapsed { turn, deadline_ms },
        }
    }
}
