//! The messages the reducer folds: everything that can happen to one agent pane.
//!
//! `Msg` is closed and serde-tagged (`{"type": "tool_start", ...}`), so a recorded log is plain
//! JSON lines and every variant survives a round trip. Times are milliseconds since the Unix
//! epoch, always carried as data: the reducer never reads a clock.

use std::collections::BTreeMap;

use panewise_protocol::{CompactionTrigger, Failure, PlanStep, SessionStats, TurnId};
use serde::{Deserialize, Serialize};

use crate::ledger::TurnLedger;
use crate::state::{ContextInvalidation, WaitingReason};

/// One thing that happened to the pane. See each variant for the rules (R-numbers refer to the
/// pane-state behaviour catalog) it follows.
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
    /// Periodic liveness check (R39).
    StreamWatchdogTick {
        /// The time of the check.
        now_ms: u64,
    },
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
        /// Tokens of the prompt: the context the model sees.
        input: u64,
        /// The model answering, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
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
    /// A model request is in flight, e.g. after a tool result (R68). It also consumes the
    /// buffered hook context and task notices (R89).
    RequestStarted {
        /// The turn the request belongs to; a stale one is dropped (R81).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<TurnId>,
    },
    /// The user pressed Stop or Esc: the one cancel path (R36, R84).
    RequestStop {
        /// When it was pressed.
        at: u64,
    },
    /// The stop request failed (R25 table).
    StopFailed,
    /// The interrupt deadline fired (R35).
    InterruptTimeoutElapsed {
        /// When it fired.
        at: u64,
    },
    /// The submit deadline fired (R35).
    SubmitTimeoutElapsed {
        /// When it fired.
        at: u64,
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
    /// The user answered the front approval (R86).
    ApprovalAnswered {
        /// Whether the action is allowed.
        approved: bool,
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
    /// The user answered the front question set (R86).
    QuestionAnswered {
        /// One answer per question.
        answers: Vec<String>,
    },
    /// Ask the user to confirm a destructive action in a modal.
    ConfirmRequested {
        /// The action to confirm, e.g. `clear`.
        action: String,
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
}

impl Msg {
    /// The turn this message is scoped to, when it is an effect result tied to one turn (R81).
    pub fn turn_id(&self) -> Option<TurnId> {
        match self {
            Msg::TurnEnd { turn, .. }
            | Msg::ToolStart { turn, .. }
            | Msg::ToolEnd { turn }
            | Msg::TokensIn { turn, .. }
            | Msg::TokensOut { turn, .. }
            | Msg::OutputStreamed { turn, .. }
            | Msg::RequestStarted { turn }
            | Msg::ApprovalRequested { turn, .. }
            | Msg::QuestionAsked { turn, .. } => *turn,
            Msg::TurnCancelled { turn } | Msg::HookContextAdded { turn, .. } => Some(*turn),
            _ => None,
        }
    }

    /// The serde tag of this message, for diagnostics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::InitStart => "init_start",
            Msg::InitReady { .. } => "init_ready",
            Msg::InitFailed { .. } => "init_failed",
            Msg::StreamSubscribe { .. } => "stream_subscribe",
            Msg::StreamUnsubscribe { .. } => "stream_unsubscribe",
            Msg::StreamFlushObserved { .. } => "stream_flush_observed",
            Msg::StreamWatchdogTick { .. } => "stream_watchdog_tick",
            Msg::StreamSessionStarted => "stream_session_started",
            Msg::ReconcileTurnActive { .. } => "reconcile_turn_active",
            Msg::ReconcileContextFromHistory { .. } => "reconcile_context_from_history",
            Msg::ContextWindowsReported { .. } => "context_windows_reported",
            Msg::PlanUpdated { .. } => "plan_updated",
            Msg::ContextInvalidated { .. } => "context_invalidated",
            Msg::ContextModelSwitched { .. } => "context_model_switched",
            Msg::TurnStart { .. } => "turn_start",
            Msg::TurnEnd { .. } => "turn_end",
            Msg::TurnReset => "turn_reset",
            Msg::TurnStartFailed => "turn_start_failed",
            Msg::TurnCancelled { .. } => "turn_cancelled",
            Msg::ToolStart { .. } => "tool_start",
            Msg::ToolEnd { .. } => "tool_end",
            Msg::TokensIn { .. } => "tokens_in",
            Msg::TokensOut { .. } => "tokens_out",
            Msg::OutputStreamed { .. } => "output_streamed",
            Msg::RequestStarted { .. } => "request_started",
            Msg::RequestStop { .. } => "request_stop",
            Msg::StopFailed => "stop_failed",
            Msg::InterruptTimeoutElapsed { .. } => "interrupt_timeout_elapsed",
            Msg::SubmitTimeoutElapsed { .. } => "submit_timeout_elapsed",
            Msg::PendingMessageQueued { .. } => "pending_message_queued",
            Msg::PendingMessageAccepted { .. } => "pending_message_accepted",
            Msg::PendingMessageRejected { .. } => "pending_message_rejected",
            Msg::PendingMessageExpired { .. } => "pending_message_expired",
            Msg::PendingMessageFlushStarted { .. } => "pending_message_flush_started",
            Msg::ProviderWaiting { .. } => "provider_waiting",
            Msg::FailureObserved { .. } => "failure_observed",
            Msg::FailureCleared => "failure_cleared",
            Msg::DetailsToggle => "details_toggle",
            Msg::DetailsExpand => "details_expand",
            Msg::DetailsCollapse => "details_collapse",
            Msg::StashToggle => "stash_toggle",
            Msg::CompactionStarted { .. } => "compaction_started",
            Msg::CompactionBoundary { .. } => "compaction_boundary",
            Msg::AttachedTaskObserved { .. } => "attached_task_observed",
            Msg::AttachedTaskCleared => "attached_task_cleared",
            Msg::RegistryAttachedTaskObserved { .. } => "registry_attached_task_observed",
            Msg::RegistryAttachedTaskCleared => "registry_attached_task_cleared",
            Msg::ResumeRetryStarted { .. } => "resume_retry_started",
            Msg::ResumeRetryResolved => "resume_retry_resolved",
            Msg::TurnLedgerObserved { .. } => "turn_ledger_observed",
            Msg::ApprovalRequested { .. } => "approval_requested",
            Msg::ApprovalAnswered { .. } => "approval_answered",
            Msg::QuestionAsked { .. } => "question_asked",
            Msg::QuestionAnswered { .. } => "question_answered",
            Msg::ConfirmRequested { .. } => "confirm_requested",
            Msg::ConfirmAnswered { .. } => "confirm_answered",
            Msg::HookContextAdded { .. } => "hook_context_added",
            Msg::TaskNoticeAdded { .. } => "task_notice_added",
            Msg::Quit => "quit",
        }
    }
}
