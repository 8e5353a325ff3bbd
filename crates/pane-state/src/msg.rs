//! The messages the reducer folds: everything that can happen to one agent pane.
//!
//! `Msg` is closed and serde-tagged (`{"type": "tool_start", ...}`), so a recorded log is plain
//! JSON lines and every variant survives a round trip. Times are milliseconds since the Unix
//! epoch, always carried as data: the reducer never reads a clock.

use std::collections::BTreeMap;

use panewise_protocol::{CompactionTrigger, Failure, PlanStep, SessionStats, TurnId};
use serde::{Deserialize, Serialize};

use crate::ledger::TurnLedger;
use crate::state::{BudgetCaps, ContextInvalidation, WaitingReason};
use crate::vocabulary::Actor;
use crate::vocabulary::ConfirmAction;
#[cfg(doc)]
use crate::vocabulary::DeadlineKind;

/// One thing that happened to the pane. See each variant for the rules (R-numbers refer to the
/// pane-state behaviour catalog) it follows.
///
/// Exhaustive on purpose: the workspace's own hosts match every message, so a kind added here
/// does not compile until each of them decides what to do with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Msg {
    /// History load began. Always a no-op (R75).
    InitStart,
    /// History load succeeded. One way only: the first init result wins (R3).
    InitReady {
        /// When the history finished loading.
        at: u64,
    },
    /// History load failed. One way only; turns are then allowed (fail open, R29).
    InitFailed {
        /// When the load failed.
        at: u64,
        /// Why it failed, for the user.
        reason: String,
    },
    /// The live stream was attached (R1, R2).
    StreamSubscribe {
        /// When it was attached.
        at: u64,
    },
    /// The live stream was torn down.
    StreamUnsubscribe {
        /// When it was torn down.
        at: u64,
    },
    /// A batch of live stream content was rendered.
    StreamFlushObserved {
        /// How many items the batch added.
        added_count: u64,
        /// When it was rendered.
        at: u64,
    },
    /// Periodic liveness check (R39). The time of the check is `state.now_ms`, the one clock.
    StreamWatchdogTick,
    /// A new CLI session began in the stream (R70).
    StreamSessionStarted,
    /// The backend's authoritative "a turn is in flight" flag (R23, R46, R47).
    ReconcileTurnActive {
        /// When the backend said so.
        at: u64,
        /// Whether a turn is in flight.
        active: bool,
    },
    /// A context seed from restored history (R56).
    ReconcileContextFromHistory {
        /// Tokens in context when the history was written, if known.
        tokens: Option<u64>,
        /// The model those tokens were measured on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// When the history reading was taken.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
        /// Context windows the history recorded, per model.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        reported_windows: BTreeMap<String, u64>,
    },
    /// Context windows per model, as the provider reported them (R53).
    ContextWindowsReported {
        /// Window size in tokens per model id.
        windows: BTreeMap<String, u64>,
    },
    /// The agent replaced its plan (a to-do list it keeps, such as Codex's `todo_list` item). The
    /// pane shows the newest plan; it is not turn-scoped, a plan outlives the turn that wrote it.
    PlanUpdated {
        /// Every step of the plan, in the agent's order.
        steps: Vec<PlanStep>,
    },
    /// The conversation was replaced (R57).
    ContextInvalidated {
        /// Why it was replaced.
        reason: ContextInvalidation,
    },
    /// The user changed the model setting (R58).
    ContextModelSwitched {
        /// The model switched to.
        model: String,
    },
    /// The user sent something; the start is optimistic (R28, R29, R31).
    TurnStart {
        /// When it was sent.
        at: u64,
        /// What was sent (`/compact` starts a manual compaction turn, R14).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
    },
    /// The turn's result arrived (R32).
    TurnEnd {
        /// The turn's own figures, when the provider reported them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stats: Option<SessionStats>,
        /// The turn this result belongs to; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
        /// The agent ended the turn because the person interrupted it: the turn ends stopped,
        /// never failed, whether or not panewise asked for the stop (R98).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
    },
    /// Full wipe of per-turn and session state (R33).
    TurnReset,
    /// Undo an optimistic start whose send failed (R34).
    TurnStartFailed,
    /// The effect runner finished draining a cancelled turn's tasks (R84).
    TurnCancelled {
        /// The cancelled turn.
        turn: TurnId,
    },
    /// A tool began (R7, R25).
    ToolStart {
        /// The tool's name.
        name: String,
        /// Its first significant argument: a command, a file path.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arg: Option<String>,
        /// The turn the tool runs in; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// A tool finished (R7, R25, R37).
    ToolEnd {
        /// The turn the tool ran in; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// A new model call started, with its prompt size (R49, R50, R67).
    TokensIn {
        /// Tokens of the prompt: the context the model sees (fresh input, cache reads and
        /// cache writes together).
        input: u64,
        /// The model answering, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The part of `input` read from the provider's prompt cache, when the provider reports
        /// it per call. It only annotates the call (replay, cost): the reducer reads `input`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_read: Option<u64>,
        /// The part of `input` written to the provider's prompt cache, when reported per call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write: Option<u64>,
        /// The part of `cache_write` kept for an hour (Anthropic's one-hour cache), when
        /// reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write_1h: Option<u64>,
        /// The turn the call belongs to; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// The cumulative output count of the current call (R68).
    TokensOut {
        /// Output tokens so far in this call.
        output: u64,
        /// The turn the call belongs to; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// Characters of output streamed, used for the estimate (R68).
    OutputStreamed {
        /// Characters streamed since the last message.
        chars: u64,
        /// The turn the output belongs to; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// A model request is in flight, e.g. after a tool result (R68). It also clears the
    /// buffered hook context and task notices, which were for this request (R89).
    RequestStarted {
        /// The turn the request belongs to; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// The user pressed Stop or Esc: the one cancel path (R36, R84). It interrupts the agent;
    /// pressed again while the turn is still stopping, it kills the agent (R95).
    RequestStop {
        /// When it was pressed.
        at: u64,
    },
    /// The stop request failed (R25 table).
    StopFailed,
    /// The interrupt deadline fired (R35); build it with [`DeadlineKind::elapsed`]. It acts at
    /// `state.now_ms`.
    InterruptTimeoutElapsed {
        /// The turn the deadline was armed for; a stale one is dropped (R81). `None` (logs
        /// older than turn-scoped deadlines) skips the check.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
        /// The deadline as armed; one that a newer deadline replaced is dropped. `None` skips
        /// the check.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_ms: Option<u64>,
    },
    /// The submit deadline fired (R35); build it with [`DeadlineKind::elapsed`]. It acts at
    /// `state.now_ms`.
    SubmitTimeoutElapsed {
        /// The turn the deadline was armed for; a stale one is dropped (R81). `None` (logs
        /// older than turn-scoped deadlines) skips the check.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
        /// The deadline as armed; one that a newer deadline replaced is dropped. `None` skips
        /// the check.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_ms: Option<u64>,
    },
    /// Add a message to the pending queue (R63).
    PendingMessageQueued {
        /// The message's id.
        id: String,
        /// Its text.
        text: String,
        /// When it was queued.
        at: u64,
        /// Whether a turn was running when it was queued.
        enqueued_while_busy: bool,
    },
    /// A pending message was delivered (R64).
    PendingMessageAccepted {
        /// The message's id.
        id: String,
    },
    /// A pending message was refused (R64).
    PendingMessageRejected {
        /// The message's id.
        id: String,
    },
    /// A pending message expired (R65).
    PendingMessageExpired {
        /// The message's id.
        id: String,
    },
    /// Delivery of a held message began (R66).
    PendingMessageFlushStarted {
        /// The message's id.
        id: String,
    },
    /// The provider is rate limiting; a retry is pending (R42).
    ProviderWaiting {
        /// Why it waits.
        reason: WaitingReason,
        /// How long until the retry, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
        /// When the provider said so.
        at: u64,
    },
    /// A classified failure arrived (R11, R62).
    FailureObserved {
        /// The failure.
        failure: Failure,
        /// When it arrived.
        at: u64,
    },
    /// The user dismissed the failure (R11).
    FailureCleared,
    /// Toggle the details (shell) drawer (R10).
    DetailsToggle,
    /// Open the details drawer (R10).
    DetailsExpand,
    /// Close the details drawer (R10).
    DetailsCollapse,
    /// Toggle the stash drawer, independent of the details drawer.
    StashToggle,
    /// The compaction-start hook fired (R44).
    CompactionStarted {
        /// Who asked for it.
        trigger: CompactionTrigger,
        /// When it started.
        at: u64,
    },
    /// The real end-of-compaction frame (R45, R52).
    CompactionBoundary {
        /// Who asked for it.
        trigger: CompactionTrigger,
        /// Context tokens before compaction.
        pre_tokens: u64,
        /// Tokens of the summary that replaced them.
        post_tokens: u64,
        /// How long it took, when reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// When the frame was received.
        at: u64,
        /// The boundary's own completion time, when the frame carries one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_timestamp: Option<u64>,
    },
    /// The transcript's attached-task axis went from 0 to 1 (R16).
    AttachedTaskObserved {
        /// When the task was seen.
        at: u64,
    },
    /// The transcript's attached-task axis went from 1 to 0 (R16).
    AttachedTaskCleared,
    /// The task registry reports running tasks, the earliest started at `since`.
    RegistryAttachedTaskObserved {
        /// The earliest start among running registry tasks.
        since: u64,
    },
    /// The task registry reports no running task.
    RegistryAttachedTaskCleared,
    /// Reconnecting after a stale resume id began.
    ResumeRetryStarted {
        /// When the retry began.
        at: u64,
        /// The resume id the provider refused.
        stale_session_id: String,
    },
    /// Reconnecting finished (either way).
    ResumeRetryResolved,
    /// The server published a turn-ledger snapshot (R71, R72).
    TurnLedgerObserved {
        /// The snapshot (boxed: it is large and rare, and every message is as big as its
        /// largest variant).
        ledger: Box<TurnLedger>,
    },
    /// A tool asks the user to approve an action; queued FIFO (R86).
    ApprovalRequested {
        /// The request's id, echoed in the resolution.
        id: String,
        /// The tool asking.
        tool: String,
        /// What it wants to do, for the modal.
        summary: String,
        /// The turn the tool runs in; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// The agent withdrew an approval request it no longer needs answered (Claude Code's
    /// `control_cancel_request`): it leaves the queue unanswered, and an answer the user gives
    /// for it afterwards cannot reach the agent.
    ApprovalWithdrawn {
        /// The withdrawn request's id.
        id: String,
    },
    /// The session put the waiting request `id` to a person (the approval mode asks): it
    /// now waits for their answer (R102).
    ApprovalAsked {
        /// The request's id.
        id: String,
    },
    /// Request `id` was answered (R86, R101): by a person, an API client, the approval mode or
    /// the session. The first answer wins; an answer to a request that no longer waits is
    /// refused, and recorded with the refusal (`Event::AnswerRefused`).
    ApprovalAnswered {
        /// The request answered; `None` (logs written before ids were carried) answers the
        /// front request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Whether the action is allowed.
        approved: bool,
        /// Allowed for the rest of the session: the tool is not asked about again (R103).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_session: bool,
        /// Who answered (absent in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Actor>,
        /// What the agent is told with a denial.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A tool asks the user questions; queued FIFO (R86).
    QuestionAsked {
        /// The question set's id, echoed in the resolution.
        id: String,
        /// The questions, in order.
        questions: Vec<String>,
        /// The turn the tool runs in; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// The user answered a question set (R86, R101).
    QuestionAnswered {
        /// The set answered; `None` (older logs) answers the front set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// One answer per question.
        answers: Vec<String>,
    },
    /// Ask the user to confirm a destructive action in a modal.
    ConfirmRequested {
        /// The action to confirm.
        action: ConfirmAction,
        /// The text of the modal.
        prompt: String,
    },
    /// The user answered the confirmation modal.
    ConfirmAnswered {
        /// Whether the user confirmed.
        accepted: bool,
    },
    /// Context from a plugin hook for the next model request (R89).
    HookContextAdded {
        /// The context text.
        text: String,
        /// The turn it was produced in; only the current turn's is accepted.
        turn: TurnId,
    },
    /// A one-line notice about the task list for the next model request.
    TaskNoticeAdded {
        /// The notice.
        text: String,
    },
    /// The user quit (R85). Idempotent.
    Quit,
    /// The user typed a prompt into panewise (R94). With no turn working it starts a turn as
    /// [`Msg::TurnStart`] does and asks the runner to send it ([`crate::Cmd::SendPrompt`]);
    /// otherwise it waits in `state.queued_prompts` and is sent, with a new turn, once the
    /// working turn ends. It acts at `state.now_ms`.
    PromptSubmitted {
        /// What the user typed, sent verbatim.
        text: String,
    },
    /// The supervised agent process ended (R96). The runner sends it after the process's
    /// decoded output, so a turn result the process wrote before exiting is folded first.
    AgentExited {
        /// The exit code, when the process exited normally.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that ended the process, when a signal did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// The agent has not exited a grace period after its input ended: it is killed (R100).
    AgentShutdownOverdue,
    /// The own loop's window stage stood down: what must stay is over its threshold, so it
    /// removes nothing until that changes (R110).
    WindowStoodDown {
        /// What must stay, in tokens.
        floor_tokens: u64,
        /// The strategy's threshold.
        threshold_tokens: u64,
        /// When.
        at: u64,
    },
    /// The window stage engaged again after a stand-down (R111).
    WindowResumed {
        /// When.
        at: u64,
    },
    /// The session's spend caps, as configured or as raised (R112): the latest replaces the
    /// earlier.
    BudgetSet {
        /// The caps.
        caps: BudgetCaps,
    },
    /// The session reached a cap and is held (R112).
    BudgetReached {
        /// Why, as shown: "budget reached: $X of $Y (…)".
        reason: String,
    },
    /// The session is within its caps again and goes on (R113).
    BudgetReleased {
        /// What changed, as shown.
        reason: String,
    },
    /// The session's deadlines, as configured (`panewise.toml` `[deadlines]`, `run`'s flags):
    /// recorded before the first prompt, so a replay arms the same deadlines the live session
    /// did. Absent, the defaults hold ([`crate::vocabulary::SUBMIT_TIMEOUT_MS`],
    /// [`crate::vocabulary::STUCK_THRESHOLD_MS`]).
    DeadlinesConfigured {
        /// How long a sent prompt may wait for the agent's first sign of life.
        submit_ms: u64,
        /// How long a working stream may stay silent before it is reported stuck.
        stuck_ms: u64,
    },
}

impl Msg {
    /// The turn this message is scoped to, when it is an effect result tied to one turn (R81).
    ///
    /// Every variant is listed (no wildcard arm), so a new turn-scoped message cannot skip the
    /// stale-turn drop by accident.
    pub fn turn_id(&self) -> Option<TurnId> {
        match self {
            Msg::TurnEnd { turn, .. }
            | Msg::ToolStart { turn, .. }
            | Msg::ToolEnd { turn, .. }
            | Msg::TokensIn { turn, .. }
            | Msg::TokensOut { turn, .. }
            | Msg::OutputStreamed { turn, .. }
            | Msg::RequestStarted { turn, .. }
            | Msg::ApprovalRequested { turn, .. }
            | Msg::QuestionAsked { turn, .. }
            | Msg::InterruptTimeoutElapsed { turn, .. }
            | Msg::SubmitTimeoutElapsed { turn, .. } => *turn,
            Msg::TurnCancelled { turn, .. } | Msg::HookContextAdded { turn, .. } => Some(*turn),
            Msg::InitStart
            | Msg::InitReady { .. }
            | Msg::InitFailed { .. }
            | Msg::StreamSubscribe { .. }
            | Msg::StreamUnsubscribe { .. }
            | Msg::StreamFlushObserved { .. }
            | Msg::StreamWatchdogTick
            | Msg::StreamSessionStarted
            | Msg::ReconcileTurnActive { .. }
            | Msg::ReconcileContextFromHistory { .. }
            | Msg::ContextWindowsReported { .. }
            | Msg::PlanUpdated { .. }
            | Msg::ContextInvalidated { .. }
            | Msg::ContextModelSwitched { .. }
            | Msg::TurnStart { .. }
            | Msg::TurnReset
            | Msg::TurnStartFailed
            | Msg::RequestStop { .. }
            | Msg::StopFailed
            | Msg::PendingMessageQueued { .. }
            | Msg::PendingMessageAccepted { .. }
            | Msg::PendingMessageRejected { .. }
            | Msg::PendingMessageExpired { .. }
            | Msg::PendingMessageFlushStarted { .. }
            | Msg::ProviderWaiting { .. }
            | Msg::FailureObserved { .. }
            | Msg::FailureCleared
            | Msg::DetailsToggle
            | Msg::DetailsExpand
            | Msg::DetailsCollapse
            | Msg::StashToggle
            | Msg::CompactionStarted { .. }
            | Msg::CompactionBoundary { .. }
            | Msg::AttachedTaskObserved { .. }
            | Msg::AttachedTaskCleared
            | Msg::RegistryAttachedTaskObserved { .. }
            | Msg::RegistryAttachedTaskCleared
            | Msg::ResumeRetryStarted { .. }
            | Msg::ResumeRetryResolved
            | Msg::TurnLedgerObserved { .. }
            | Msg::ApprovalAsked { .. }
            | Msg::ApprovalAnswered { .. }
            | Msg::ApprovalWithdrawn { .. }
            | Msg::QuestionAnswered { .. }
            | Msg::ConfirmRequested { .. }
            | Msg::ConfirmAnswered { .. }
            | Msg::TaskNoticeAdded { .. }
            | Msg::Quit
            | Msg::PromptSubmitted { .. }
            | Msg::AgentExited { .. }
            | Msg::AgentShutdownOverdue
            | Msg::DeadlinesConfigured { .. }
            | Msg::WindowStoodDown { .. }
            | Msg::WindowResumed { .. }
            | Msg::BudgetSet { .. }
            | Msg::BudgetReached { .. }
            | Msg::BudgetReleased { .. } => None,
        }
    }

    /// The closed kind of this message: its serde tag, for diagnostics and logs.
    pub fn kind(&self) -> MsgKind {
        match self {
            Msg::InitStart => MsgKind::InitStart,
            Msg::InitReady { .. } => MsgKind::InitReady,
            Msg::InitFailed { .. } => MsgKind::InitFailed,
            Msg::StreamSubscribe { .. } => MsgKind::StreamSubscribe,
            Msg::StreamUnsubscribe { .. } => MsgKind::StreamUnsubscribe,
            Msg::StreamFlushObserved { .. } => MsgKind::StreamFlushObserved,
            Msg::StreamWatchdogTick => MsgKind::StreamWatchdogTick,
            Msg::StreamSessionStarted => MsgKind::StreamSessionStarted,
            Msg::ReconcileTurnActive { .. } => MsgKind::ReconcileTurnActive,
            Msg::ReconcileContextFromHistory { .. } => MsgKind::ReconcileContextFromHistory,
            Msg::ContextWindowsReported { .. } => MsgKind::ContextWindowsReported,
            Msg::PlanUpdated { .. } => MsgKind::PlanUpdated,
            Msg::ContextInvalidated { .. } => MsgKind::ContextInvalidated,
            Msg::ContextModelSwitched { .. } => MsgKind::ContextModelSwitched,
            Msg::TurnStart { .. } => MsgKind::TurnStart,
            Msg::TurnEnd { .. } => MsgKind::TurnEnd,
            Msg::TurnReset => MsgKind::TurnReset,
            Msg::TurnStartFailed => MsgKind::TurnStartFailed,
            Msg::TurnCancelled { .. } => MsgKind::TurnCancelled,
            Msg::ToolStart { .. } => MsgKind::ToolStart,
            Msg::ToolEnd { .. } => MsgKind::ToolEnd,
            Msg::TokensIn { .. } => MsgKind::TokensIn,
            Msg::TokensOut { .. } => MsgKind::TokensOut,
            Msg::OutputStreamed { .. } => MsgKind::OutputStreamed,
            Msg::RequestStarted { .. } => MsgKind::RequestStarted,
            Msg::RequestStop { .. } => MsgKind::RequestStop,
            Msg::StopFailed => MsgKind::StopFailed,
            Msg::InterruptTimeoutElapsed { .. } => MsgKind::InterruptTimeoutElapsed,
            Msg::SubmitTimeoutElapsed { .. } => MsgKind::SubmitTimeoutElapsed,
            Msg::PendingMessageQueued { .. } => MsgKind::PendingMessageQueued,
            Msg::PendingMessageAccepted { .. } => MsgKind::PendingMessageAccepted,
            Msg::PendingMessageRejected { .. } => MsgKind::PendingMessageRejected,
            Msg::PendingMessageExpired { .. } => MsgKind::PendingMessageExpired,
            Msg::PendingMessageFlushStarted { .. } => MsgKind::PendingMessageFlushStarted,
            Msg::ProviderWaiting { .. } => MsgKind::ProviderWaiting,
            Msg::FailureObserved { .. } => MsgKind::FailureObserved,
            Msg::FailureCleared => MsgKind::FailureCleared,
            Msg::DetailsToggle => MsgKind::DetailsToggle,
            Msg::DetailsExpand => MsgKind::DetailsExpand,
            Msg::DetailsCollapse => MsgKind::DetailsCollapse,
            Msg::StashToggle => MsgKind::StashToggle,
            Msg::CompactionStarted { .. } => MsgKind::CompactionStarted,
            Msg::CompactionBoundary { .. } => MsgKind::CompactionBoundary,
            Msg::AttachedTaskObserved { .. } => MsgKind::AttachedTaskObserved,
            Msg::AttachedTaskCleared => MsgKind::AttachedTaskCleared,
            Msg::RegistryAttachedTaskObserved { .. } => MsgKind::RegistryAttachedTaskObserved,
            Msg::RegistryAttachedTaskCleared => MsgKind::RegistryAttachedTaskCleared,
            Msg::ResumeRetryStarted { .. } => MsgKind::ResumeRetryStarted,
            Msg::ResumeRetryResolved => MsgKind::ResumeRetryResolved,
            Msg::TurnLedgerObserved { .. } => MsgKind::TurnLedgerObserved,
            Msg::ApprovalRequested { .. } => MsgKind::ApprovalRequested,
            Msg::ApprovalAsked { .. } => MsgKind::ApprovalAsked,
            Msg::ApprovalAnswered { .. } => MsgKind::ApprovalAnswered,
            Msg::ApprovalWithdrawn { .. } => MsgKind::ApprovalWithdrawn,
            Msg::QuestionAsked { .. } => MsgKind::QuestionAsked,
            Msg::QuestionAnswered { .. } => MsgKind::QuestionAnswered,
            Msg::ConfirmRequested { .. } => MsgKind::ConfirmRequested,
            Msg::ConfirmAnswered { .. } => MsgKind::ConfirmAnswered,
            Msg::HookContextAdded { .. } => MsgKind::HookContextAdded,
            Msg::TaskNoticeAdded { .. } => MsgKind::TaskNoticeAdded,
            Msg::Quit => MsgKind::Quit,
            Msg::PromptSubmitted { .. } => MsgKind::PromptSubmitted,
            Msg::AgentExited { .. } => MsgKind::AgentExited,
            Msg::AgentShutdownOverdue => MsgKind::AgentShutdownOverdue,
            Msg::DeadlinesConfigured { .. } => MsgKind::DeadlinesConfigured,
            Msg::WindowStoodDown { .. } => MsgKind::WindowStoodDown,
            Msg::WindowResumed { .. } => MsgKind::WindowResumed,
            Msg::BudgetSet { .. } => MsgKind::BudgetSet,
            Msg::BudgetReached { .. } => MsgKind::BudgetReached,
            Msg::BudgetReleased { .. } => MsgKind::BudgetReleased,
        }
    }
}

/// The kind of a [`Msg`] without its fields: one value per variant, serialised as the
/// message's serde tag (`"tool_start"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
#[allow(missing_docs)] // Each kind is documented on its `Msg` variant.
pub enum MsgKind {
    InitStart,
    InitReady,
    InitFailed,
    StreamSubscribe,
    StreamUnsubscribe,
    StreamFlushObserved,
    StreamWatchdogTick,
    StreamSessionStarted,
    ReconcileTurnActive,
    ReconcileContextFromHistory,
    ContextWindowsReported,
    ContextInvalidated,
    ContextModelSwitched,
    TurnStart,
    TurnEnd,
    TurnReset,
    TurnStartFailed,
    TurnCancelled,
    ToolStart,
    ToolEnd,
    TokensIn,
    TokensOut,
    OutputStreamed,
    RequestStarted,
    RequestStop,
    StopFailed,
    InterruptTimeoutElapsed,
    SubmitTimeoutElapsed,
    PendingMessageQueued,
    PendingMessageAccepted,
    PendingMessageRejected,
    PendingMessageExpired,
    PendingMessageFlushStarted,
    ProviderWaiting,
    FailureObserved,
    FailureCleared,
    DetailsToggle,
    DetailsExpand,
    DetailsCollapse,
    StashToggle,
    CompactionStarted,
    CompactionBoundary,
    AttachedTaskObserved,
    AttachedTaskCleared,
    RegistryAttachedTaskObserved,
    RegistryAttachedTaskCleared,
    ResumeRetryStarted,
    ResumeRetryResolved,
    TurnLedgerObserved,
    ApprovalRequested,
    ApprovalAnswered,
    QuestionAsked,
    QuestionAnswered,
    ConfirmRequested,
    ConfirmAnswered,
    HookContextAdded,
    TaskNoticeAdded,
    Quit,
    PlanUpdated,
    ApprovalWithdrawn,
    PromptSubmitted,
    AgentExited,
    AgentShutdownOverdue,
    DeadlinesConfigured,
    ApprovalAsked,
    WindowStoodDown,
    WindowResumed,
    BudgetSet,
    BudgetReached,
    BudgetReleased,
}

impl Msg {
    /// An answer to request `id` (`None`: the front one) by `by`, allowed once or denied.
    pub fn approval_answer(id: Option<&str>, approved: bool, by: Option<Actor>) -> Msg {
        Msg::ApprovalAnswered {
            id: id.map(str::to_owned),
            approved,
            for_session: false,
            by,
            reason: None,
        }
    }
}

impl MsgKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [MsgKind] = &[
        MsgKind::InitStart,
        MsgKind::InitReady,
        MsgKind::InitFailed,
        MsgKind::StreamSubscribe,
        MsgKind::StreamUnsubscribe,
        MsgKind::StreamFlushObserved,
        MsgKind::StreamWatchdogTick,
        MsgKind::StreamSessionStarted,
        MsgKind::ReconcileTurnActive,
        MsgKind::ReconcileContextFromHistory,
        MsgKind::ContextWindowsReported,
        MsgKind::ContextInvalidated,
        MsgKind::ContextModelSwitched,
        MsgKind::TurnStart,
        MsgKind::TurnEnd,
        MsgKind::TurnReset,
        MsgKind::TurnStartFailed,
        MsgKind::TurnCancelled,
        MsgKind::ToolStart,
        MsgKind::ToolEnd,
        MsgKind::TokensIn,
        MsgKind::TokensOut,
        MsgKind::OutputStreamed,
        MsgKind::RequestStarted,
        MsgKind::RequestStop,
        MsgKind::StopFailed,
        MsgKind::InterruptTimeoutElapsed,
        MsgKind::SubmitTimeoutElapsed,
        MsgKind::PendingMessageQueued,
        MsgKind::PendingMessageAccepted,
        MsgKind::PendingMessageRejected,
        MsgKind::PendingMessageExpired,
        MsgKind::PendingMessageFlushStarted,
        MsgKind::ProviderWaiting,
        MsgKind::FailureObserved,
        MsgKind::FailureCleared,
        MsgKind::DetailsToggle,
        MsgKind::DetailsExpand,
        MsgKind::DetailsCollapse,
        MsgKind::StashToggle,
        MsgKind::CompactionStarted,
        MsgKind::CompactionBoundary,
        MsgKind::AttachedTaskObserved,
        MsgKind::AttachedTaskCleared,
        MsgKind::RegistryAttachedTaskObserved,
        MsgKind::RegistryAttachedTaskCleared,
        MsgKind::ResumeRetryStarted,
        MsgKind::ResumeRetryResolved,
        MsgKind::TurnLedgerObserved,
        MsgKind::ApprovalRequested,
        MsgKind::ApprovalAnswered,
        MsgKind::QuestionAsked,
        MsgKind::QuestionAnswered,
        MsgKind::ConfirmRequested,
        MsgKind::ConfirmAnswered,
        MsgKind::HookContextAdded,
        MsgKind::TaskNoticeAdded,
        MsgKind::Quit,
        MsgKind::PlanUpdated,
        MsgKind::ApprovalWithdrawn,
        MsgKind::PromptSubmitted,
        MsgKind::AgentExited,
        MsgKind::AgentShutdownOverdue,
        MsgKind::DeadlinesConfigured,
        MsgKind::ApprovalAsked,
        MsgKind::WindowStoodDown,
        MsgKind::WindowResumed,
        MsgKind::BudgetSet,
        MsgKind::BudgetReached,
        MsgKind::BudgetReleased,
    ];

    /// The serde tag, e.g. `tool_start`.
    pub fn as_str(self) -> &'static str {
        match self {
            MsgKind::InitStart => "init_start",
            MsgKind::InitReady => "init_ready",
            MsgKind::InitFailed => "init_failed",
            MsgKind::StreamSubscribe => "stream_subscribe",
            MsgKind::StreamUnsubscribe => "stream_unsubscribe",
            MsgKind::StreamFlushObserved => "stream_flush_observed",
            MsgKind::StreamWatchdogTick => "stream_watchdog_tick",
            MsgKind::StreamSessionStarted => "stream_session_started",
            MsgKind::ReconcileTurnActive => "reconcile_turn_active",
            MsgKind::ReconcileContextFromHistory => "reconcile_context_from_history",
            MsgKind::ContextWindowsReported => "context_windows_reported",
            MsgKind::ContextInvalidated => "context_invalidated",
            MsgKind::ContextModelSwitched => "context_model_switched",
            MsgKind::TurnStart => "turn_start",
            MsgKind::TurnEnd => "turn_end",
            MsgKind::TurnReset => "turn_reset",
            MsgKind::TurnStartFailed => "turn_start_failed",
            MsgKind::TurnCancelled => "turn_cancelled",
            MsgKind::ToolStart => "tool_start",
            MsgKind::ToolEnd => "tool_end",
            MsgKind::TokensIn => "tokens_in",
            MsgKind::TokensOut => "tokens_out",
            MsgKind::OutputStreamed => "output_streamed",
            MsgKind::RequestStarted => "request_started",
            MsgKind::RequestStop => "request_stop",
            MsgKind::StopFailed => "stop_failed",
            MsgKind::InterruptTimeoutElapsed => "interrupt_timeout_elapsed",
            MsgKind::SubmitTimeoutElapsed => "submit_timeout_elapsed",
            MsgKind::PendingMessageQueued => "pending_message_queued",
            MsgKind::PendingMessageAccepted => "pending_message_accepted",
            MsgKind::PendingMessageRejected => "pending_message_rejected",
            MsgKind::PendingMessageExpired => "pending_message_expired",
            MsgKind::PendingMessageFlushStarted => "pending_message_flush_started",
            MsgKind::ProviderWaiting => "provider_waiting",
            MsgKind::FailureObserved => "failure_observed",
            MsgKind::FailureCleared => "failure_cleared",
            MsgKind::DetailsToggle => "details_toggle",
            MsgKind::DetailsExpand => "details_expand",
            MsgKind::DetailsCollapse => "details_collapse",
            MsgKind::StashToggle => "stash_toggle",
            MsgKind::CompactionStarted => "compaction_started",
            MsgKind::CompactionBoundary => "compaction_boundary",
            MsgKind::AttachedTaskObserved => "attached_task_observed",
            MsgKind::AttachedTaskCleared => "attached_task_cleared",
            MsgKind::RegistryAttachedTaskObserved => "registry_attached_task_observed",
            MsgKind::RegistryAttachedTaskCleared => "registry_attached_task_cleared",
            MsgKind::ResumeRetryStarted => "resume_retry_started",
            MsgKind::ResumeRetryResolved => "resume_retry_resolved",
            MsgKind::TurnLedgerObserved => "turn_ledger_observed",
            MsgKind::ApprovalAsked => "approval_asked",
            MsgKind::WindowStoodDown => "window_stood_down",
            MsgKind::WindowResumed => "window_resumed",
            MsgKind::BudgetSet => "budget_set",
            MsgKind::BudgetReached => "budget_reached",
            MsgKind::BudgetReleased => "budget_released",
            MsgKind::ApprovalRequested => "approval_requested",
            MsgKind::ApprovalAnswered => "approval_answered",
            MsgKind::QuestionAsked => "question_asked",
            MsgKind::QuestionAnswered => "question_answered",
            MsgKind::ConfirmRequested => "confirm_requested",
            MsgKind::ConfirmAnswered => "confirm_answered",
            MsgKind::HookContextAdded => "hook_context_added",
            MsgKind::TaskNoticeAdded => "task_notice_added",
            MsgKind::Quit => "quit",
            MsgKind::PlanUpdated => "plan_updated",
            MsgKind::ApprovalWithdrawn => "approval_withdrawn",
            MsgKind::PromptSubmitted => "prompt_submitted",
            MsgKind::AgentExited => "agent_exited",
            MsgKind::AgentShutdownOverdue => "agent_shutdown_overdue",
            MsgKind::DeadlinesConfigured => "deadlines_configured",
        }
    }
}

impl std::fmt::Display for MsgKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::MsgKind;

    /// No wildcard: a kind added to the enum but not to `ALL` fails to compile here (R79).
    fn position(kind: MsgKind) -> usize {
        match kind {
            MsgKind::InitStart => 0,
            MsgKind::InitReady => 1,
            MsgKind::InitFailed => 2,
            MsgKind::StreamSubscribe => 3,
            MsgKind::StreamUnsubscribe => 4,
            MsgKind::StreamFlushObserved => 5,
            MsgKind::StreamWatchdogTick => 6,
            MsgKind::StreamSessionStarted => 7,
            MsgKind::ReconcileTurnActive => 8,
            MsgKind::ReconcileContextFromHistory => 9,
            MsgKind::ContextWindowsReported => 10,
            MsgKind::ContextInvalidated => 11,
            MsgKind::ContextModelSwitched => 12,
            MsgKind::TurnStart => 13,
            MsgKind::TurnEnd => 14,
            MsgKind::TurnReset => 15,
            MsgKind::TurnStartFailed => 16,
            MsgKind::TurnCancelled => 17,
            MsgKind::ToolStart => 18,
            MsgKind::ToolEnd => 19,
            MsgKind::TokensIn => 20,
            MsgKind::TokensOut => 21,
            MsgKind::OutputStreamed => 22,
            MsgKind::RequestStarted => 23,
            MsgKind::RequestStop => 24,
            MsgKind::StopFailed => 25,
            MsgKind::InterruptTimeoutElapsed => 26,
            MsgKind::SubmitTimeoutElapsed => 27,
            MsgKind::PendingMessageQueued => 28,
            MsgKind::PendingMessageAccepted => 29,
            MsgKind::PendingMessageRejected => 30,
            MsgKind::PendingMessageExpired => 31,
            MsgKind::PendingMessageFlushStarted => 32,
            MsgKind::ProviderWaiting => 33,
            MsgKind::FailureObserved => 34,
            MsgKind::FailureCleared => 35,
            MsgKind::DetailsToggle => 36,
            MsgKind::DetailsExpand => 37,
            MsgKind::DetailsCollapse => 38,
            MsgKind::StashToggle => 39,
            MsgKind::CompactionStarted => 40,
            MsgKind::CompactionBoundary => 41,
            MsgKind::AttachedTaskObserved => 42,
            MsgKind::AttachedTaskCleared => 43,
            MsgKind::RegistryAttachedTaskObserved => 44,
            MsgKind::RegistryAttachedTaskCleared => 45,
            MsgKind::ResumeRetryStarted => 46,
            MsgKind::ResumeRetryResolved => 47,
            MsgKind::TurnLedgerObserved => 48,
            MsgKind::ApprovalRequested => 49,
            MsgKind::ApprovalAnswered => 50,
            MsgKind::QuestionAsked => 51,
            MsgKind::QuestionAnswered => 52,
            MsgKind::ConfirmRequested => 53,
            MsgKind::ConfirmAnswered => 54,
            MsgKind::HookContextAdded => 55,
            MsgKind::TaskNoticeAdded => 56,
            MsgKind::Quit => 57,
            MsgKind::PlanUpdated => 58,
            MsgKind::ApprovalWithdrawn => 59,
            MsgKind::PromptSubmitted => 60,
            MsgKind::AgentExited => 61,
            MsgKind::AgentShutdownOverdue => 62,
            MsgKind::DeadlinesConfigured => 63,
            MsgKind::ApprovalAsked => 64,
            MsgKind::WindowStoodDown => 65,
            MsgKind::WindowResumed => 66,
            MsgKind::BudgetSet => 67,
            MsgKind::BudgetReached => 68,
            MsgKind::BudgetReleased => 69,
        }
    }

    #[test]
    fn r91_all_lists_every_kind_once_in_order_and_as_str_is_the_serde_tag() {
        for (index, kind) in MsgKind::ALL.iter().enumerate() {
            assert_eq!(position(*kind), index, "{kind:?}");
            assert_eq!(
                serde_json::to_value(kind).ok(),
                Some(serde_json::Value::from(kind.as_str()))
            );
        }
        assert_eq!(MsgKind::ALL.len(), position(MsgKind::BudgetReleased) + 1);
    }
}
