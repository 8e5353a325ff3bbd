//! What the reducer asks for: effects for the host to run, and events for views and telemetry.
//!
//! `Cmd` is plain comparable data, so tests call [`crate::update`] and compare the commands it
//! returned. Effects name what to do, never how: arming a timer, cancelling a turn's tasks,
//! unblocking a tool. Events (`Cmd::Emit`) only report.
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
//! cancel) comes back with its turn and deadline, and the reducer drops it as stale (R81),
//! reporting it with [`Event::MessageIgnored`].

use panewise_protocol::{CompactionTrigger, FailureKind, TurnId};
use serde::{Deserialize, Serialize};

use crate::context::{ReadingSource, WindowSource};
use crate::msg::{Msg, MsgKind};
use crate::state::{DisconnectReason, TurnOutcome, WaitingReason, WorkingKind};
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
    /// Interrupt the agent and cancel every task of `turn`; report with `TurnCancelled` (R84).
    CancelScope {
        /// The turn to cancel.
        turn: Option<TurnId>,
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
    /// Carry out an action the user confirmed in the modal.
    RunConfirmed {
        /// The action.
        action: ConfirmAction,
    },
    /// Attach buffered context to the model request now starting (R89).
    AttachRequestContext {
        /// Hook context, in arrival order.
        hook_context: Vec<String>,
        /// Task notices, in arrival order.
        task_notices: Vec<String>,
    },
    /// Drain effects and exit (R85).
    Exit,
    /// Report an event to views and telemetry.
    Emit(Event),
}

/// Events for views and telemetry (R76).
///
/// Non-exhaustive: a view matches the events it shows and ignores the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// History loaded.
    InitReady,
    /// History failed to load.
    InitFailed {
        /// Why.
        reason: String,
    },
    /// The stream was attached.
    StreamSubscribed,
    /// The stream was torn down mid-turn.
    StreamUnsubscribed,
    /// A working turn lost its stream.
    StreamDisconnected {
        /// The phase it was in.
        last_kind: WorkingKind,
        /// Why.
        reason: DisconnectReason,
    },
    /// Live content was rendered.
    StreamFlushObserved {
        /// How many items.
        added_count: u64,
    },
    /// No activity for a while, but not long enough to recover.
    StreamStuck {
        /// Milliseconds without activity.
        idle_since_ms: u64,
        /// The threshold that was crossed.
        threshold_ms: u64,
    },
    /// The watchdog ended a turn that stopped producing anything.
    WorkingRecovered {
        /// Milliseconds without activity.
        idle_since_ms: u64,
        /// The recovery threshold.
        threshold_ms: u64,
    },
    /// A turn started.
    TurnStarted {
        /// When.
        at: u64,
        /// Its id.
        turn: TurnId,
    },
    /// The backend says a turn is running.
    TurnActiveReconciled,
    /// The backend says no turn is running.
    TurnInactiveReconciled {
        /// When.
        at: u64,
    },
    /// A turn ended.
    TurnEnded {
        /// How.
        outcome: TurnOutcome,
        /// Whether stats were merged.
        stats_merged: bool,
        /// Whether a stop was pending.
        stopping_cleared: bool,
    },
    /// The runner confirmed a cancelled turn drained.
    TurnCancelled {
        /// The turn.
        turn: TurnId,
    },
    /// Everything per-turn and per-session was wiped.
    TurnReset,
    /// An optimistic start was undone.
    TurnStartFailed,
    /// A start was refused.
    TurnStartSuppressed {
        /// Why.
        reason: SuppressReason,
    },
    /// A tool started.
    ToolStarted {
        /// Its name.
        name: String,
    },
    /// A tool ended.
    ToolEnded,
    /// Token figures changed.
    TokensUpdated,
    /// A history seed landed.
    ContextReconciledAtMount {
        /// Its tokens.
        tokens: u64,
    },
    /// The context was compacted.
    ContextCompacted {
        /// Tokens before.
        tokens_before: u64,
        /// Tokens after.
        tokens_after: u64,
        /// Whether a real boundary or the token-drop heuristic saw it.
        source: CompactionSource,
        /// Who asked, for real boundaries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger: Option<CompactionTrigger>,
        /// How long it took, for real boundaries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// The boundary's own time, for real boundaries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_timestamp: Option<u64>,
    },
    /// A reading became implausible and is not shown.
    ContextReadingRejected {
        /// Its tokens.
        tokens: u64,
        /// Its window.
        window: Option<u64>,
        /// Its model.
        model: Option<String>,
        /// Where the tokens came from.
        source: ReadingSource,
        /// Why it is implausible.
        reason: String,
    },
    /// A prompt larger than the reported window proved the report wrong.
    ContextWindowRefuted {
        /// The model.
        model: String,
        /// The reported window.
        reported: u64,
        /// The prompt's tokens.
        tokens: u64,
        /// The window now assumed.
        window: u64,
        /// Its source.
        window_source: WindowSource,
    },
    /// A compaction started.
    CompactionStarted {
        /// Who asked.
        trigger: CompactionTrigger,
    },
    /// A compaction start was held until the turn is known to be working.
    CompactionStartedBuffered {
        /// Who asked.
        trigger: CompactionTrigger,
    },
    /// The provider is waiting to retry.
    ProviderWaiting {
        /// Why.
        reason: WaitingReason,
        /// For how long.
        retry_after_ms: Option<u64>,
    },
    /// A failure arrived.
    FailureObserved {
        /// Its kind.
        code: FailureKind,
        /// Whether it ended a working turn.
        turn_was_ended: bool,
    },
    /// The failure was cleared.
    FailureCleared,
    /// The user asked to stop.
    StopRequested,
    /// The stop failed.
    StopFailed,
    /// The interrupt deadline passed.
    InterruptTimedOut {
        /// When.
        at: u64,
    },
    /// The submit deadline passed.
    SubmitTimedOut {
        /// When.
        at: u64,
    },
    /// A message was queued.
    PendingQueued {
        /// Its id.
        id: String,
    },
    /// A pending message was delivered.
    PendingAccepted {
        /// Its id.
        id: String,
        /// Whether it was in the queue.
        was_present: bool,
    },
    /// A pending message was refused.
    PendingRejected {
        /// Its id.
        id: String,
        /// Whether it was in the queue.
        was_present: bool,
    },
    /// A pending message expired.
    PendingExpired {
        /// Its id.
        id: String,
        /// When it was queued (0 when unknown).
        queued_at: u64,
        /// How long it waited (0 when unknown).
        age_ms: u64,
        /// Whether it was in the queue.
        was_present: bool,
    },
    /// Delivery of a held message began.
    PendingFlushStarted {
        /// Its id.
        id: String,
    },
    /// A modal waits for the user (approval, question or confirmation).
    WaitingForInput,
    /// No modal waits any more.
    WaitingEnded,
    /// An answer was refused: the request it names no longer waits, or none waits (R101).
    /// The answer stays in the log with this refusal beside it.
    AnswerRefused {
        /// The request the answer named, if it named one.
        id: Option<String>,
        /// Why.
        refusal: AnswerRefusal,
    },
    /// An attached task was seen.
    AttachedTaskObserved,
    /// The attached task went away.
    AttachedTaskCleared,
    /// A prompt waits in the queue until the working turn ends (R94).
    PromptQueued {
        /// Prompts waiting, this one included.
        queued: u64,
    },
    /// Queued prompts were dropped unsent (R94).
    PromptsDropped {
        /// How many.
        count: u64,
        /// Why.
        reason: PromptDropReason,
    },
    /// The agent's process group is being killed to end a turn (R95).
    AgentKillRequested {
        /// The turn it ends.
        turn: Option<TurnId>,
    },
    /// A message could not be applied in the current state; it was counted.
    MessageIgnored {
        /// The message's kind.
        kind: MsgKind,
        /// Why.
        reason: IgnoreReason,
    },
}

/// Why queued prompts were dropped unsent (R94).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PromptDropReason {
    /// The session was reset: prompts typed for the old conversation do not carry over.
    Reset,
    /// The user quit: nothing will send them.
    Quit,
    /// The queue was full; its oldest prompt made room for the new one (R88's cap).
    QueueFull,
}

/// Why a turn start was refused (R28, R29).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SuppressReason {
    /// The stream is not subscribed (R28).
    StreamNotActive,
    /// History is still loading (R29).
    InitStillLoading,
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
    /// It belongs to a turn that is no longer current (R81). The state is unchanged.
    StaleTurn,
    /// A deadline re-armed since this one was set; only the newest counts. The state is
    /// unchanged.
    SupersededDeadline,
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
            IgnoreReason::StaleTurn => "it belongs to a turn that is no longer current",
            IgnoreReason::SupersededDeadline => "a newer deadline replaced it",
            IgnoreReason::NoApprovalPending => "no approval is pending",
            IgnoreReason::NoQuestionPending => "no question is pending",
            IgnoreReason::NoConfirmationPending => "no confirmation is pending",
            IgnoreReason::BufferFull => "the 16 KiB buffer is full; the rest was cut",
        }
    }
}

/// Who saw a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionSource {
    /// A real boundary frame from the provider.
    Real,
    /// The ≥50% token-drop heuristic (R49).
    Heuristic,
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
