//! The pane's state: one plain, serialisable value per agent session.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use panewise_protocol::{CompactionTrigger, Failure, PlanStep, SessionStats, TurnId};
use serde::{Deserialize, Serialize};

use crate::context::{plausible_reading, ContextReading};
use crate::ledger::TurnLedger;
use crate::vocabulary::Actor;
use crate::vocabulary::ConfirmAction;

/// How many prompts may wait for the working turn to end; the oldest goes first (R88, R94).
pub const MAX_QUEUED_PROMPTS: usize = 32;

/// Byte cap of the buffered hook context (R89) and of the buffered task notices.
pub const CONTEXT_BUFFER_CAP_BYTES: usize = 16 * 1024;

/// The pane's state as one owned value: a box around [`PaneState`], so that moving it into and
/// out of [`crate::update`] copies one pointer, not the whole record.
///
/// It dereferences to [`PaneState`], so fields read as `state.turn_phase`. Change them only
/// through [`crate::update`], which keeps the cross-field invariants (for example: no working
/// phase while the stream is unsubscribed). It serialises exactly as [`PaneState`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct State(Box<PaneState>);

impl State {
    /// A fresh pane for `agent_id`: idle, unsubscribed, history still loading.
    pub fn new(agent_id: impl Into<String>) -> Self {
        State(Box::new(PaneState::new(agent_id)))
    }
}

impl std::ops::Deref for State {
    type Target = PaneState;

    fn deref(&self) -> &PaneState {
        &self.0
    }
}

impl std::ops::DerefMut for State {
    fn deref_mut(&mut self) -> &mut PaneState {
        &mut self.0
    }
}

/// Everything a person watching one agent session sees, folded from its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaneState {
    /// The injected clock: the time of the message being folded (R90).
    pub now_ms: u64,
    /// Stream bookkeeping (R1).
    pub streaming: StreamingInfo,
    /// Last live activity; `Some` exactly while the stream is subscribed (R2).
    pub last_event_ms: Option<u64>,
    /// History loading, one way only (R3).
    pub init_phase: InitPhase,
    /// The single source of truth of the turn (R4, R21).
    pub turn_phase: TurnPhase,
    /// The turn in flight, for dropping stale effect results (R81).
    pub current_turn: Option<TurnId>,
    /// The id the next turn gets; ids come from the state, never from outside (R90).
    pub next_turn_id: u64,
    /// The submit deadline armed while Submitting, for the turn it guards (R27). Cleared, with
    /// a `CancelDeadline`, once the turn leaves Submitting or another turn replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_deadline: Option<ArmedDeadline>,
    /// The interrupt deadline armed while Interrupting (R27); cleared like `submit_deadline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt_deadline: Option<ArmedDeadline>,
    /// The last turn's merged stats (R5).
    pub session_stats: Option<SessionStats>,
    /// The running sum over every turn (R6).
    pub session_totals: Option<SessionStats>,
    /// Turns that ended as completed, each counted once.
    pub turns_completed: u64,
    /// The turn last counted in `turns_completed`.
    pub last_counted_turn: Option<TurnId>,
    /// Compactions seen, real and heuristic.
    pub compactions: u64,
    /// The running tool's name (R7).
    pub current_tool: Option<String>,
    /// The running tool's first significant argument (R7).
    pub current_tool_arg: Option<String>,
    /// The current turn's live usage (R8, R67–R70).
    pub turn_tokens: Option<TurnTokens>,
    /// Messages waiting to be sent, FIFO (R9, R63–R66).
    pub pending: Vec<PendingMessage>,
    /// Prompts the user typed while a turn was working, front first (R94). Separate from
    /// `pending`, whose delivery the host reports; these the reducer sends itself.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub queued_prompts: VecDeque<QueuedPrompt>,
    /// Whether a `KillAgent` was sent and its exit is still to come, so that exit is expected
    /// and not a failure (R96).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_kill_sent: bool,
    /// Whether this pane drives its agent (a prompt was submitted through it, R94): then a
    /// silent turn is stopped rather than only shown as recovered (R99).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drives_agent: bool,
    /// The deadlines this session arms: the defaults unless a `DeadlinesConfigured` was folded.
    #[serde(default, skip_serializing_if = "Deadlines::is_default")]
    pub deadlines: Deadlines,
    /// Whether the details (shell) drawer is open (R10).
    pub details_open: bool,
    /// Whether the stash drawer is open; independent of `details_open`.
    pub stash_open: bool,
    /// The active classified failure (R11).
    pub failure: Option<PaneFailure>,
    /// A compaction in progress (R12).
    pub compacting: Option<CompactionInProgress>,
    /// A compaction-start ping held until the turn is known to be working (R13).
    pub pending_compaction_ping: Option<CompactionInProgress>,
    /// True during a turn started to send `/compact` (R14).
    pub pending_compact_turn: bool,
    /// Completion time of the last real compaction boundary (R15).
    pub last_compaction_boundary_at: Option<u64>,
    /// The transcript's attached long-running task (R16).
    pub attached_task: Option<AttachedTask>,
    /// The task registry's earliest running task start; a separate floor signal.
    pub registry_attached_task_since: Option<u64>,
    /// Reconnecting after a stale resume id.
    pub reconnecting: Option<ResumeRetry>,
    /// The own loop's window stage stood down: what must stay is over its threshold, so it
    /// removes nothing until that changes (R110, R111).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_stood_down: Option<WindowStandDown>,
    /// The session's spend caps (`BudgetSet`), when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetCaps>,
    /// The session is held at its budget (`BudgetReached`) until the cap is raised
    /// (`BudgetReleased`): no model call starts and no queued prompt is sent (R112, R113).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_hold: Option<BudgetHold>,
    /// The context meter's reading (R17); display it through [`PaneState::plausible_reading`].
    pub context: Option<ContextReading>,
    /// Whether a history seed may still land (R18).
    pub context_seedable: bool,
    /// Context windows the provider reported, per model (R19).
    pub reported_context_windows: BTreeMap<String, u64>,
    /// The agent's newest plan, empty until it reports one.
    #[serde(default)]
    pub plan: Vec<PlanStep>,
    /// Context windows proven by accepted prompts, per model; only grow (R19, R54).
    pub learned_context_windows: BTreeMap<String, u64>,
    /// Models whose reported window was already refuted once (R54).
    pub refuted_models: BTreeSet<String>,
    /// The model most recently measured (R20).
    pub last_context_model: Option<String>,
    /// The server's turn ledger, verbatim (R71).
    pub turn_ledger: Option<TurnLedger>,
    /// Tool approvals waiting for the user, front first (R86).
    pub pending_approvals: VecDeque<PendingApproval>,
    /// Requests no longer waiting, newest last, capped at [`CLOSED_REQUESTS_KEPT`]: how each
    /// was closed, so a late or second answer is refused with the reason (R101).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub closed_requests: VecDeque<ClosedRequest>,
    /// Tools a person allowed for the rest of the session, with who allowed each (R103).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allowed_for_session: BTreeMap<String, Actor>,
    /// The turn whose prompt panewise sent and the agent has not acknowledged yet: the
    /// agent's own turn start acknowledges it (R104).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_sent_turn: Option<TurnId>,
    /// Question sets waiting for the user, front first (R86).
    pub pending_questions: VecDeque<PendingQuestionSet>,
    /// A confirmation modal to show.
    pub confirm: Option<Confirmation>,
    /// Hook context for the next model request, byte-capped and cleared when it starts (R89).
    pub pending_hook_context: Vec<String>,
    /// Task notices for the next model request, byte-capped and cleared when it starts.
    pub pending_task_notices: Vec<String>,
    /// Set by `Quit`: no prompt starts a turn any more (R85, R94).
    pub should_exit: bool,
    /// Messages the reducer could not apply, counted rather than lost.
    pub diagnostics: Diagnostics,
}

/// A session's spend caps. A cap that is absent does not hold the session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetCaps {
    /// The most the session may cost, in US dollars (reported or estimated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The most tokens (input, cached and output) the session may process: the cap of a
    /// session whose cost is unknown, and a cap of its own when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

impl BudgetCaps {
    /// No cap is set.
    pub fn is_empty(&self) -> bool {
        self.max_cost_usd.is_none() && self.max_tokens.is_none()
    }
}

/// The session is held at its budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetHold {
    /// Why, as shown: "budget reached: $X of $Y (…)".
    pub reason: String,
    /// When the hold began.
    pub since: u64,
}

impl PaneState {
    /// A fresh pane for `agent_id`: idle, unsubscribed, history still loading.
    pub fn new(agent_id: impl Into<String>) -> Self {
        PaneState {
            now_ms: 0,
            streaming: StreamingInfo {
                agent_id: agent_id.into(),
                buffer_size: 0,
                last_event_time: 0,
            },
            last_event_ms: None,
            init_phase: InitPhase::InitPending,
            turn_phase: TurnPhase::Idle,
            current_turn: None,
            next_turn_id: 1,
            submit_deadline: None,
            interrupt_deadline: None,
            session_stats: None,
            session_totals: None,
            turns_completed: 0,
            last_counted_turn: None,
            compactions: 0,
            current_tool: None,
            current_tool_arg: None,
            turn_tokens: None,
            pending: Vec::new(),
            queued_prompts: VecDeque::new(),
            agent_kill_sent: false,
            drives_agent: false,
            deadlines: Deadlines::default(),
            details_open: false,
            stash_open: false,
            failure: None,
            compacting: None,
            pending_compaction_ping: None,
            pending_compact_turn: false,
            last_compaction_boundary_at: None,
            attached_task: None,
            registry_attached_task_since: None,
            reconnecting: None,
            window_stood_down: None,
            budget: None,
            budget_hold: None,
            context: None,
            context_seedable: true,
            reported_context_windows: BTreeMap::new(),
            plan: Vec::new(),
            learned_context_windows: BTreeMap::new(),
            refuted_models: BTreeSet::new(),
            last_context_model: None,
            turn_ledger: None,
            pending_approvals: VecDeque::new(),
            closed_requests: VecDeque::new(),
            allowed_for_session: BTreeMap::new(),
            prompt_sent_turn: None,
            pending_questions: VecDeque::new(),
            confirm: None,
            pending_hook_context: Vec::new(),
            pending_task_notices: Vec::new(),
            should_exit: false,
            diagnostics: Diagnostics::default(),
        }
    }

    /// Whether the stream is subscribed (R2).
    pub fn is_subscribed(&self) -> bool {
        self.last_event_ms.is_some()
    }

    /// Whether a turn is working: Submitting, Streaming or Interrupting (R22).
    pub fn is_working(&self) -> bool {
        self.turn_phase.is_working()
    }

    /// Whether init finished successfully (R22).
    pub fn is_init_ready(&self) -> bool {
        matches!(self.init_phase, InitPhase::InitReady { .. })
    }

    /// The context reading to display, or `None` when it is implausible (R55).
    pub fn plausible_reading(&self) -> Option<&ContextReading> {
        self.context
            .as_ref()
            .filter(|r| plausible_reading(r).is_ok())
    }

    /// The attached-task floor: the earliest of the transcript and registry starts.
    pub fn attached_task_since(&self) -> Option<u64> {
        let transcript = self.attached_task.as_ref().map(|t| t.since);
        match (transcript, self.registry_attached_task_since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The live output counter of the turn: never goes down within a turn (R69, R74).
    pub fn turn_output_tokens(&self) -> u64 {
        let live = self.turn_tokens.as_ref().map(TurnTokens::output_shown);
        match (&self.turn_ledger, &self.turn_tokens) {
            (Some(ledger), tokens) if ledger.is_open(self.now_ms) => {
                // Between passes the live tokens are gone, but the counted output still shows.
                let uncounted = tokens.as_ref().is_some_and(|t| t.is_uncounted_by(ledger));
                let live = live.unwrap_or(0);
                if ledger.counted_passes == 0 {
                    if uncounted {
                        live
                    } else {
                        0
                    }
                } else if uncounted {
                    ledger.output_tokens.saturating_add(live)
                } else {
                    ledger.output_tokens
                }
            }
            _ => live.unwrap_or(0),
        }
    }
}

/// Stream bookkeeping (R1). Nothing ever resets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamingInfo {
    /// The agent this pane shows.
    pub agent_id: String,
    /// Items rendered from the live stream so far.
    pub buffer_size: u64,
    /// The last subscribe or flush.
    pub last_event_time: u64,
}

/// History loading (R3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InitPhase {
    /// History is still loading; turns are held back (R29).
    InitPending,
    /// History loaded.
    InitReady {
        /// When it loaded.
        at: u64,
    },
    /// History failed to load; turns are allowed anyway.
    InitFailed {
        /// When it failed.
        at: u64,
        /// Why.
        reason: String,
    },
}

/// The turn phase (R21).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnPhase {
    /// Nothing is running.
    Idle,
    /// A message was sent and the agent has not answered yet.
    Submitting {
        /// When it was sent.
        submitted_at: u64,
        /// What was sent.
        pending_content: String,
    },
    /// The agent is producing output or running tools.
    Streaming {
        /// Rendered items at the time of the last transition.
        buffer_size: u64,
        /// Tools running now; never negative (R37).
        tools_active: u32,
        /// The last live activity in this phase.
        last_event_ms: u64,
        /// Why the provider is waiting, if it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waiting_reason: Option<WaitingReason>,
        /// How long the provider said to wait.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// A stop was requested and has not taken effect yet.
    Interrupting {
        /// Who asked.
        reason: InterruptReason,
        /// When the interrupt was sent; the timeout is armed from it.
        sigint_sent_at: u64,
    },
    /// The turn ended.
    Done {
        /// How it ended.
        outcome: TurnOutcome,
        /// When it ended.
        finished_at: u64,
    },
    /// The stream went away while a turn was working.
    Disconnected {
        /// The working phase it was in.
        last_kind: WorkingKind,
        /// The last activity before the disconnect.
        last_connected_at: u64,
        /// Why.
        reason: DisconnectReason,
    },
}

impl TurnPhase {
    /// Submitting, Streaming or Interrupting (R22).
    pub fn is_working(&self) -> bool {
        matches!(
            self,
            TurnPhase::Submitting { .. }
                | TurnPhase::Streaming { .. }
                | TurnPhase::Interrupting { .. }
        )
    }

    /// Phases that live activity promotes to Streaming (R23).
    pub fn is_activity_promotable(&self) -> bool {
        matches!(
            self,
            TurnPhase::Submitting { .. }
                | TurnPhase::Idle
                | TurnPhase::Disconnected { .. }
                | TurnPhase::Done {
                    outcome: TurnOutcome::Completed,
                    ..
                }
        )
    }

    /// Phases that `ReconcileTurnActive(true)` promotes to Streaming (R23).
    pub fn is_reconcile_promotable(&self) -> bool {
        matches!(
            self,
            TurnPhase::Idle
                | TurnPhase::Done {
                    outcome: TurnOutcome::Completed,
                    ..
                }
        )
    }

    /// The variant's name: `idle`, `submitting`, `streaming`, `interrupting`, `done` or
    /// `disconnected`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            TurnPhase::Idle => "idle",
            TurnPhase::Submitting { .. } => "submitting",
            TurnPhase::Streaming { .. } => "streaming",
            TurnPhase::Interrupting { .. } => "interrupting",
            TurnPhase::Done { .. } => "done",
            TurnPhase::Disconnected { .. } => "disconnected",
        }
    }

    /// The working variant this is, for `Disconnected.last_kind`.
    pub fn working_kind(&self) -> Option<WorkingKind> {
        match self {
            TurnPhase::Submitting { .. } => Some(WorkingKind::Submitting),
            TurnPhase::Streaming { .. } => Some(WorkingKind::Streaming),
            TurnPhase::Interrupting { .. } => Some(WorkingKind::Interrupting),
            _ => None,
        }
    }
}

/// The deadlines a session arms, in milliseconds of the session clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadlines {
    /// A sent prompt's wait for the agent's first sign of life (R27).
    pub submit_ms: u64,
    /// A working stream's silence before it is reported stuck (R39).
    pub stuck_ms: u64,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            submit_ms: crate::vocabulary::SUBMIT_TIMEOUT_MS,
            stuck_ms: crate::vocabulary::STUCK_THRESHOLD_MS,
        }
    }
}

impl Deadlines {
    /// Whether these are the defaults (then a state snapshot leaves them out).
    pub fn is_default(&self) -> bool {
        *self == Deadlines::default()
    }
}

/// Why a provider is waiting (R21).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitingReason {
    /// The provider rate-limited the call and will retry.
    RateLimited,
    /// The provider is overloaded and the agent will retry. Beyond the original, which named
    /// only rate limits: an overload retry is the same wait to the person watching.
    Overloaded,
    /// The provider failed on its side and the agent will retry.
    ServerError,
}

/// Who asked for an interrupt (R62).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptReason {
    /// The user pressed Stop.
    User,
    /// The host stopped the turn.
    System,
}

/// How a turn ended (R62).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The agent finished.
    Completed,
    /// A requested stop took effect.
    Stopped,
    /// The interrupt deadline passed.
    Interrupted,
    /// The submit deadline passed or a failure ended it.
    Errored,
}

/// The working phase a disconnect interrupted (R21).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkingKind {
    /// Submitting.
    Submitting,
    /// Streaming.
    Streaming,
    /// Interrupting.
    Interrupting,
}

/// Why the pane is disconnected (R21).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DisconnectReason {
    /// The stream was unsubscribed mid-turn.
    StreamUnsubscribed,
    /// The transport failed.
    TransportError,
}

/// Why the conversation was replaced (R57).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextInvalidation {
    /// A fresh session started.
    FreshSession,
    /// The transcript was restored from elsewhere.
    TranscriptReplaced,
}

/// The current turn's live usage (R8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnTokens {
    /// Prompt tokens of the current call.
    pub input: u64,
    /// Exact output tokens of the current call so far.
    pub output: u64,
    /// Output of earlier calls in this turn.
    pub output_done: u64,
    /// Characters streamed in the current call, for the estimate.
    pub streamed_chars: u64,
    /// The highest counter value shown so far; the counter never goes down (R69).
    pub shown_output: u64,
    /// Whether a request is in flight.
    pub requesting: bool,
    /// The ledger turn current when this call started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_turn_id: Option<u64>,
    /// The ledger pass current when this call started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_pass: Option<u64>,
}

/// Characters per token for the output estimate (R24).
pub const CHARS_PER_TOKEN: u64 = 4;

impl TurnTokens {
    /// The current call's output: the exact count, or the estimate when it is larger.
    pub fn current_call_output(&self) -> u64 {
        // Rounded to the nearest token; the counter saturates, so the rounding must too.
        let estimate = self.streamed_chars.saturating_add(CHARS_PER_TOKEN / 2) / CHARS_PER_TOKEN;
        self.output.max(estimate)
    }

    /// `outputDone + max(output, round(chars / 4))` (R69).
    pub fn output_so_far(&self) -> u64 {
        self.output_done.saturating_add(self.current_call_output())
    }

    /// The counter as shown: never below what was shown before (R69).
    pub fn output_shown(&self) -> u64 {
        self.shown_output.max(self.output_so_far())
    }

    /// Raise `shown_output` to the current counter.
    pub(crate) fn raise_shown(&mut self) {
        self.shown_output = self.output_shown();
    }

    /// Whether these tokens are not yet counted by the ledger (R74).
    pub fn is_uncounted_by(&self, ledger: &TurnLedger) -> bool {
        match (self.ledger_turn_id, self.ledger_pass) {
            (Some(turn), Some(pass)) => turn == ledger.turn_id && pass > ledger.counted_passes,
            _ => ledger.counted_passes == 0,
        }
    }
}

/// A message waiting in the pending queue (R9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingMessage {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// When it was queued.
    pub created_at: u64,
    /// Whether a turn was running when it was queued.
    pub enqueued_while_busy: bool,
    /// Whether its delivery began.
    pub flushing: bool,
}

/// A prompt waiting for the working turn to end (R94).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedPrompt {
    /// The prompt, verbatim.
    pub text: String,
    /// When the user typed it.
    pub queued_at: u64,
}

/// A failure with the time it arrived (R11).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaneFailure {
    /// The classified failure.
    pub failure: Failure,
    /// When it arrived.
    pub at: u64,
}

/// A compaction in progress, or a buffered start ping (R12, R13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionInProgress {
    /// Who asked for it.
    pub trigger: CompactionTrigger,
    /// When it started.
    pub started_at: u64,
}

/// The transcript's attached task (R16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachedTask {
    /// When the first running task was seen.
    pub since: u64,
}

/// The window stage stood down on its floor (R110): what must stay (the system prompt and
/// tools, the request, pins, the kept tail) is `floor_tokens`, over `threshold_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowStandDown {
    /// What must stay, in tokens.
    pub floor_tokens: u64,
    /// The strategy's threshold.
    pub threshold_tokens: u64,
    /// When the stage stood down.
    pub since: u64,
}

/// Reconnecting after a stale resume id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeRetry {
    /// When the retry began.
    pub started_at: u64,
    /// The refused resume id.
    pub stale_session_id: String,
}

/// A tool approval waiting for the user (R86).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The request's id.
    pub id: String,
    /// The tool asking.
    pub tool: String,
    /// What it wants to do.
    pub summary: String,
    /// The session put it to a person (`Msg::ApprovalAsked`): it waits for their answer
    /// rather than for the approval mode's (R102).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asked: bool,
}

/// How many closed requests the state remembers, for refusing late answers (R101).
pub const CLOSED_REQUESTS_KEPT: usize = 32;

/// A request that no longer waits, and how it was closed (R101).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedRequest {
    /// The request's id.
    pub id: String,
    /// How it was closed.
    pub closed: RequestClosed,
}

/// How a request stopped waiting (R101).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "closed", rename_all = "snake_case")]
pub enum RequestClosed {
    /// Answered: the first answer, the one that counted.
    Answered {
        /// Allowed or denied.
        approved: bool,
        /// Who answered, when the log says (older logs do not).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Actor>,
    },
    /// The agent withdrew it, or a stop cleared it: nobody's answer reaches the agent.
    Withdrawn,
}

/// A question set waiting for the user (R86).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingQuestionSet {
    /// The set's id.
    pub id: String,
    /// The questions.
    pub questions: Vec<String>,
}

/// A confirmation modal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The action to confirm.
    pub action: ConfirmAction,
    /// The modal's text.
    pub prompt: String,
}

/// A deadline the reducer armed: the `Cmd::ScheduleDeadline` it emitted, remembered so the
/// elapsed message can be matched against it and the timer cancelled when it stops mattering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmedDeadline {
    /// The turn it guards.
    pub turn: Option<TurnId>,
    /// When it fires.
    pub deadline_ms: u64,
}

/// Messages that could not be applied, counted so nothing is lost silently.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// How many messages were ignored as nonsensical in the state they arrived in.
    pub ignored: u64,
    /// The last ignored message's kind and why it was ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R24/R69: a streamed-character counter saturated at `u64::MAX` (found by
    /// `cargo xtask fuzz --target session-log`) gives the largest estimate, not an overflow.
    #[test]
    fn r69_output_estimate_of_a_saturated_char_counter_does_not_overflow() {
        for (chars, output, expected) in [
            (u64::MAX, 0, u64::MAX / CHARS_PER_TOKEN),
            (u64::MAX - 1, 0, u64::MAX / CHARS_PER_TOKEN),
            (u64::MAX, u64::MAX, u64::MAX),
            (6, 0, 2),
        ] {
            let tokens = TurnTokens {
                streamed_chars: chars,
                output,
                output_done: u64::MAX,
                ..TurnTokens::default()
            };
            assert_eq!(tokens.current_call_output(), expected, "chars {chars}");
            assert_eq!(tokens.output_so_far(), u64::MAX);
            assert_eq!(tokens.output_shown(), u64::MAX);
        }
    }
}
