//! `update`: the one function that folds a [`Msg`] into the [`State`].
//!
//! Every handler edits the state in place (the state is moved in and out, never cloned) and
//! pushes the commands it needs. Rule numbers refer to the pane-state behaviour catalog.

use panewise_protocol::{
    CompactionTrigger, CostSource, Failure, FailureKind, SessionStats, TurnId,
};

use crate::cmd::{AnswerRefusal, Cmd, DeadlineKind, Event, IgnoreReason};
use crate::context::{plausible_reading, resolve_window, ContextReading, ReadingSource};
use crate::msg::{Msg, MsgKind};
use crate::state::{
    ArmedDeadline, AttachedTask, ClosedRequest, CompactionInProgress, Confirmation,
    DisconnectReason, InitPhase, InterruptReason, PaneFailure, PaneState, PendingApproval,
    PendingMessage, PendingQuestionSet, QueuedPrompt, RequestClosed, ResumeRetry, State,
    TurnOutcome, TurnPhase, TurnTokens, WaitingReason, CLOSED_REQUESTS_KEPT,
    CONTEXT_BUFFER_CAP_BYTES, MAX_QUEUED_PROMPTS,
};
use crate::vocabulary::Actor;

pub use crate::vocabulary::{STUCK_THRESHOLD_MS, SUBMIT_TIMEOUT_MS};

/// Idle time after which the watchdog ends a silent streaming turn (R24).
pub const LIVENESS_RECOVERY_MS: u64 = 180_000;
/// Deadline for an interrupt to take effect (R24).
pub const INTERRUPT_TIMEOUT_MS: u64 = 5_000;
/// How often a runner sends [`Msg::StreamWatchdogTick`] (R97). The watchdog compares idle time
/// against [`STUCK_THRESHOLD_MS`] and [`LIVENESS_RECOVERY_MS`] only when it ticks, so a report
/// comes at most one interval late: 5 s on 45 s, about a ninth, and one log line per 5 s of a
/// session.
pub const WATCHDOG_TICK_MS: u64 = 5_000;
/// A token drop this soon after a real boundary is not a second compaction (R24, R49).
pub const COMPACTION_HEURISTIC_SUPPRESS_MS: u64 = 120_000;
/// The heuristic needs a baseline above this many tokens (R24, R49).
pub const HEURISTIC_BASELINE_FLOOR: u64 = 10_000;

/// Folds one message into the state at the state's injected time (`state.now_ms`).
///
/// Total and deterministic: it never panics, reads no clock and does no I/O. A message scoped
/// to a turn that is no longer current is dropped before any handler runs (R81): the state
/// comes back unchanged, with no command.
#[inline]
pub fn update(state: State, msg: Msg) -> (State, Vec<Cmd>) {
    let mut out = Vec::new();
    let state = update_into(state, msg, &mut out);
    (state, out)
}

/// [`update`], appending the commands to `out` instead of returning a new vector, so a fold
/// can reuse one buffer for every message.
#[inline]
pub fn update_into(mut state: State, msg: Msg, out: &mut Vec<Cmd>) -> State {
    if let Some(turn) = msg.turn_id() {
        if state.current_turn != Some(turn) {
            return state;
        }
    }
    apply(&mut state, msg, out);
    send_next_queued_prompt(&mut state, out);
    disarm_moot_deadlines(&mut state, out);
    state
}

/// Sets the injected clock to `now_ms`, then folds `msg` (R90).
#[inline]
pub fn step(mut state: State, now_ms: u64, msg: Msg) -> (State, Vec<Cmd>) {
    state.now_ms = now_ms;
    update(state, msg)
}

/// [`step`], appending the commands to `out`.
#[inline]
pub fn step_into(mut state: State, now_ms: u64, msg: Msg, out: &mut Vec<Cmd>) -> State {
    state.now_ms = now_ms;
    update_into(state, msg, out)
}

fn emit(out: &mut Vec<Cmd>, event: Event) {
    out.push(Cmd::Emit(event));
}

// A wildcard arm here would let a new message kind slip through unhandled (R79).
#[deny(clippy::wildcard_enum_match_arm)]
fn apply(s: &mut PaneState, msg: Msg, out: &mut Vec<Cmd>) {
    match msg {
        Msg::InitStart => {}
        Msg::InitReady { at } => {
            if matches!(s.init_phase, InitPhase::InitPending) {
                s.init_phase = InitPhase::InitReady { at };
            }
        }
        Msg::InitFailed { at, reason } => {
            if matches!(s.init_phase, InitPhase::InitPending) {
                s.init_phase = InitPhase::InitFailed { at, reason };
            }
        }
        Msg::StreamSubscribe { at } => stream_subscribe(s, at),
        Msg::StreamUnsubscribe { at } => stream_unsubscribe(s, at),
        Msg::StreamFlushObserved { added_count, at } => flush(s, added_count, at),
        Msg::StreamWatchdogTick => watchdog(s, out),
        Msg::StreamSessionStarted => s.turn_tokens = None,
        Msg::ReconcileTurnActive { at, active } => reconcile_turn_active(s, at, active),
        Msg::ReconcileContextFromHistory {
            tokens,
            model,
            at,
            reported_windows,
        } => {
            for (model, window) in reported_windows {
                s.reported_context_windows.entry(model).or_insert(window);
            }
            re_resolve_reading(s, None);
            seed_from_history(s, tokens, model, at);
        }
        Msg::ContextWindowsReported { windows } => {
            let mut changed_models = Vec::new();
            for (model, window) in windows {
                if s.reported_context_windows.get(&model) != Some(&window) {
                    s.reported_context_windows.insert(model.clone(), window);
                    changed_models.push(model);
                }
            }
            if !changed_models.is_empty() {
                re_resolve_reading(s, Some(&changed_models));
            }
        }
        Msg::PlanUpdated { steps } => s.plan = steps,
        Msg::ContextInvalidated { .. } => {
            s.context = None;
            s.context_seedable = false;
        }
        Msg::ContextModelSwitched { model } => model_switched(s, model),
        Msg::TurnStart { at, content } => turn_start(s, at, content, out),
        Msg::TurnEnd {
            stats, interrupted, ..
        } => turn_end(s, stats, interrupted),
        Msg::TurnReset => turn_reset(s),
        Msg::TurnStartFailed => {
            s.turn_phase = TurnPhase::Idle;
            s.compacting = None;
            s.pending_compaction_ping = None;
        }
        Msg::TurnCancelled { .. } => {
            if matches!(s.turn_phase, TurnPhase::Interrupting { .. }) {
                s.turn_phase = TurnPhase::Done {
                    outcome: TurnOutcome::Stopped,
                    finished_at: s.now_ms,
                };
                clear_turn_activity(s);
            }
        }
        Msg::ToolStart { name, arg, .. } => {
            s.current_tool = Some(name);
            s.current_tool_arg = arg;
            bump(s, 1);
        }
        Msg::ToolEnd { .. } => {
            s.current_tool = None;
            s.current_tool_arg = None;
            bump(s, -1);
        }
        Msg::TokensIn { input, model, .. } => tokens_in(s, input, model),
        Msg::TokensOut { output, .. } => {
            let tokens = s.turn_tokens.get_or_insert_with(TurnTokens::default);
            tokens.output = output;
            tokens.raise_shown();
            bump(s, 0);
        }
        Msg::OutputStreamed { chars, .. } => {
            if let Some(tokens) = s.turn_tokens.as_mut() {
                tokens.streamed_chars = tokens.streamed_chars.saturating_add(chars);
                tokens.requesting = false;
                tokens.raise_shown();
            }
        }
        Msg::RequestStarted { .. } => {
            // Buffered context is for the request now starting only, used once (R89).
            s.pending_hook_context.clear();
            s.pending_task_notices.clear();
            if let Some(tokens) = s.turn_tokens.as_mut() {
                tokens.requesting = true;
            }
        }
        Msg::RequestStop { at } => request_stop(s, at, out),
        Msg::StopFailed => {
            if matches!(s.turn_phase, TurnPhase::Interrupting { .. }) {
                s.turn_phase = match s.last_event_ms {
                    Some(last) => streaming_phase(s.streaming.buffer_size, 0, last),
                    None => TurnPhase::Idle,
                };
            }
        }
        Msg::InterruptTimeoutElapsed { deadline_ms, .. } => {
            deadline_elapsed(s, DeadlineKind::Interrupt, deadline_ms, out);
        }
        Msg::SubmitTimeoutElapsed { deadline_ms, .. } => {
            deadline_elapsed(s, DeadlineKind::Submit, deadline_ms, out);
        }
        Msg::PendingMessageQueued {
            id,
            text,
            at,
            enqueued_while_busy,
        } => {
            s.pending.push(PendingMessage {
                id,
                text,
                created_at: at,
                enqueued_while_busy,
                flushing: false,
            });
        }
        // An id no longer queued has nothing left to remove (R64, R65).
        Msg::PendingMessageAccepted { id }
        | Msg::PendingMessageRejected { id }
        | Msg::PendingMessageExpired { id } => {
            remove_pending(s, &id);
        }
        Msg::PendingMessageFlushStarted { id } => {
            if let Some(message) = s.pending.iter_mut().find(|m| m.id == id && !m.flushing) {
                message.flushing = true;
            }
        }
        Msg::ProviderWaiting {
            reason,
            retry_after_ms,
            at,
        } => provider_waiting(s, reason, retry_after_ms, at),
        Msg::FailureObserved { failure, at } => failure_observed(s, failure, at),
        Msg::FailureCleared => s.failure = None,
        Msg::DetailsToggle => s.details_open = !s.details_open,
        Msg::DetailsExpand => s.details_open = true,
        Msg::DetailsCollapse => s.details_open = false,
        Msg::StashToggle => s.stash_open = !s.stash_open,
        Msg::CompactionStarted { trigger, at } => compaction_started(s, trigger, at),
        // The boundary's token figures and duration are in the log; the fold needs only when
        // and why it happened.
        Msg::CompactionBoundary {
            trigger,
            at,
            frame_timestamp,
            ..
        } => compaction_boundary(
            s,
            Boundary {
                trigger,
                at,
                frame_timestamp,
            },
        ),
        Msg::AttachedTaskObserved { at } => {
            if s.attached_task.is_none() {
                s.attached_task = Some(AttachedTask { since: at });
            }
        }
        Msg::AttachedTaskCleared => s.attached_task = None,
        Msg::RegistryAttachedTaskObserved { since } => {
            s.registry_attached_task_since = Some(since);
        }
        Msg::RegistryAttachedTaskCleared => s.registry_attached_task_since = None,
        Msg::ResumeRetryStarted {
            at,
            stale_session_id,
        } => {
            s.reconnecting = Some(ResumeRetry {
                started_at: at,
                stale_session_id,
            });
        }
        Msg::ResumeRetryResolved => s.reconnecting = None,
        Msg::TurnLedgerObserved { ledger } => {
            let replaces = s
                .turn_ledger
                .as_ref()
                .is_none_or(|current| ledger.supersedes(current));
            if replaces {
                s.turn_ledger = Some(*ledger);
            }
        }
        Msg::ApprovalRequested {
            id, tool, summary, ..
        } => {
            // A request is the agent at work: a turn still submitting has started (R104).
            bump(s, 0);
            s.pending_approvals.push_back(PendingApproval {
                id,
                tool,
                summary,
                asked: false,
            });
        }
        Msg::ApprovalAsked { id } => {
            match s
                .pending_approvals
                .iter_mut()
                .find(|pending| pending.id == id)
            {
                Some(pending) => pending.asked = true,
                None => ignore(s, MsgKind::ApprovalAsked, IgnoreReason::NoApprovalPending),
            }
        }
        Msg::ApprovalAnswered {
            id,
            approved,
            for_session,
            by,
            reason,
        } => approval_answered(s, id, approved, for_session, by, reason, out),
        Msg::ApprovalWithdrawn { id } => {
            match s
                .pending_approvals
                .iter()
                .position(|pending| pending.id == id)
            {
                Some(index) => {
                    s.pending_approvals.remove(index);
                    close_request(s, id, RequestClosed::Withdrawn);
                }
                None => ignore(
                    s,
                    MsgKind::ApprovalWithdrawn,
                    IgnoreReason::NoApprovalPending,
                ),
            }
        }
        Msg::QuestionAsked { id, questions, .. } => {
            bump(s, 0);
            s.pending_questions
                .push_back(PendingQuestionSet { id, questions });
        }
        Msg::QuestionAnswered { id, answers } => {
            let index = match &id {
                None => (!s.pending_questions.is_empty()).then_some(0),
                Some(id) => s.pending_questions.iter().position(|set| set.id == *id),
            };
            match index.and_then(|index| s.pending_questions.remove(index)) {
                Some(set) => out.push(Cmd::ResolveQuestion {
                    id: set.id,
                    answers,
                }),
                None if id.is_none() => ignore(
                    s,
                    MsgKind::QuestionAnswered,
                    IgnoreReason::NoQuestionPending,
                ),
                None => refuse_answer(
                    s,
                    id,
                    AnswerRefusal::Unknown,
                    MsgKind::QuestionAnswered,
                    out,
                ),
            }
        }
        Msg::ConfirmRequested { action, prompt } => {
            s.confirm = Some(Confirmation { action, prompt });
        }
        // No runner asks for a confirmation yet, so none carries one out: the answer closes
        // the modal and stays in the log.
        Msg::ConfirmAnswered { .. } => match s.confirm.take() {
            Some(_) => {}
            None => ignore(
                s,
                MsgKind::ConfirmAnswered,
                IgnoreReason::NoConfirmationPending,
            ),
        },
        Msg::HookContextAdded { text, .. } => {
            push_capped(s, BufferKind::HookContext, text);
        }
        Msg::TaskNoticeAdded { text } => push_capped(s, BufferKind::TaskNotice, text),
        Msg::Quit => quit(s),
        Msg::PromptSubmitted { text } => {
            s.drives_agent = true;
            prompt_submitted(s, text, out)
        }
        Msg::AgentExited { code, signal } => agent_exited(s, code, signal),
        // Its exit is then expected, not a failure (R96, R100).
        Msg::AgentShutdownOverdue => kill_agent(s, out),
        Msg::DeadlinesConfigured {
            submit_ms,
            stuck_ms,
        } => {
            // A zero deadline would fire at once: the smallest is a second.
            s.deadlines = crate::state::Deadlines {
                submit_ms: submit_ms.max(1_000),
                stuck_ms: stuck_ms.max(1_000),
            };
        }
        // The latest stand-down replaces any earlier one (R110).
        Msg::WindowStoodDown {
            floor_tokens,
            threshold_tokens,
            at,
        } => {
            s.window_stood_down = Some(crate::state::WindowStandDown {
                floor_tokens,
                threshold_tokens,
                since: at,
            });
        }
        Msg::WindowResumed { .. } => s.window_stood_down = None,
        Msg::BudgetSet { caps } => s.budget = (!caps.is_empty()).then_some(caps),
        Msg::BudgetReached { reason } => {
            // Held, as an approval holds a working turn, which waits for a person (R112); a
            // settled turn stays settled: the hold keeps the next one from starting.
            if s.turn_phase.is_working() {
                bump(s, 0);
            }
            let since = s.now_ms;
            s.budget_hold = Some(crate::state::BudgetHold { reason, since });
        }
        Msg::BudgetReleased { .. } => {
            if s.budget_hold.take().is_some() {
                // The turn's silence counts from the release, not from the hold (R113).
                if s.turn_phase.is_working() {
                    bump(s, 0);
                }
            }
        }
    }
}

fn streaming_phase(buffer_size: u64, tools_active: u32, last_event_ms: u64) -> TurnPhase {
    TurnPhase::Streaming {
        buffer_size,
        tools_active,
        last_event_ms,
        waiting_reason: None,
        retry_after_ms: None,
    }
}

/// The shared live-activity helper (R25).
fn bump(s: &mut PaneState, tools_delta: i32) {
    if s.last_event_ms.is_none() {
        return;
    }
    let now = s.now_ms;
    s.last_event_ms = Some(now);
    match &mut s.turn_phase {
        TurnPhase::Streaming {
            tools_active,
            last_event_ms,
            waiting_reason,
            retry_after_ms,
            ..
        } => {
            *last_event_ms = now;
            *tools_active = apply_delta(*tools_active, tools_delta);
            *waiting_reason = None;
            *retry_after_ms = None;
        }
        phase if phase.is_activity_promotable() => {
            *phase = streaming_phase(s.streaming.buffer_size, apply_delta(0, tools_delta), now);
        }
        _ => {}
    }
}

/// Adds `delta` to a tool count without going below zero (R37).
fn apply_delta(count: u32, delta: i32) -> u32 {
    if delta >= 0 {
        count.saturating_add(delta.unsigned_abs())
    } else {
        count.saturating_sub(delta.unsigned_abs())
    }
}

/// Clears the tool chip, the live tokens, the compaction and the buffered ping: what every hard
/// end of a working turn clears (R38, R47, R48, R70).
fn clear_turn_activity(s: &mut PaneState) {
    s.current_tool = None;
    s.current_tool_arg = None;
    s.turn_tokens = None;
    s.compacting = None;
    s.pending_compaction_ping = None;
}

fn end_turn_hard(s: &mut PaneState, outcome: TurnOutcome, at: u64) {
    s.turn_phase = TurnPhase::Done {
        outcome,
        finished_at: at,
    };
    clear_turn_activity(s);
}

fn stream_subscribe(s: &mut PaneState, at: u64) {
    s.last_event_ms = Some(at);
    s.streaming.last_event_time = at;
    match &mut s.turn_phase {
        TurnPhase::Submitting { .. } => {
            s.turn_phase = streaming_phase(s.streaming.buffer_size, 0, at);
        }
        TurnPhase::Streaming { last_event_ms, .. } => *last_event_ms = at,
        TurnPhase::Disconnected { .. } => s.turn_phase = TurnPhase::Idle,
        _ => {}
    }
}

/// A working unsubscribe disconnects the turn (R25 table). An idle unsubscribe also closes the
/// subscription gate: the original left `lastEventMs` set there (a quirk, R2), which let a turn
/// start on a stream that no longer exists; a person would expect the start to be suppressed.
fn stream_unsubscribe(s: &mut PaneState, at: u64) {
    match s.turn_phase.working_kind() {
        Some(last_kind) => {
            let last_connected_at = s.last_event_ms.unwrap_or(at);
            s.turn_phase = TurnPhase::Disconnected {
                last_kind,
                last_connected_at,
                reason: DisconnectReason::StreamUnsubscribed,
            };
            clear_turn_activity(s);
            s.last_event_ms = None;
        }
        None => {
            s.pending_compaction_ping = None;
            s.last_event_ms = None;
        }
    }
}

fn flush(s: &mut PaneState, added_count: u64, at: u64) {
    if s.last_event_ms.is_none() {
        return;
    }
    s.streaming.buffer_size = s.streaming.buffer_size.saturating_add(added_count);
    s.streaming.last_event_time = at;
    s.last_event_ms = Some(at);
    let buffer = s.streaming.buffer_size;
    let mut promoted = false;
    match &mut s.turn_phase {
        TurnPhase::Streaming {
            buffer_size,
            last_event_ms,
            waiting_reason,
            retry_after_ms,
            ..
        } => {
            *buffer_size = buffer;
            *last_event_ms = at;
            *waiting_reason = None;
            *retry_after_ms = None;
        }
        phase if phase.is_activity_promotable() => {
            *phase = streaming_phase(buffer, 0, at);
            promoted = true;
        }
        _ => {}
    }
    if promoted {
        promote_ping(s);
    }
}

/// Applies a buffered compaction-start ping once the turn is known to be working (R46).
fn promote_ping(s: &mut PaneState) {
    if let Some(ping) = s.pending_compaction_ping.take() {
        s.compacting = Some(ping);
    }
}

/// The liveness check runs at the one clock, `state.now_ms` (R39, R90).
fn watchdog(s: &mut PaneState, out: &mut Vec<Cmd>) {
    let Some(last) = s.last_event_ms else {
        return;
    };
    // A compaction can run for minutes without output; an agent waiting for a person's
    // answer is silent by design, however long the person takes (R39).
    if s.compacting.is_some() || is_waiting_for_input(s) {
        return;
    }
    let idle = s.now_ms.saturating_sub(last);
    if idle < s.deadlines.stuck_ms {
        return;
    }
    if let TurnPhase::Streaming {
        tools_active: 0,
        waiting_reason,
        retry_after_ms,
        ..
    } = &s.turn_phase
    {
        // A provider that announced a retry gets its delay on top of the recovery threshold
        // (R39); the catalog names rate limits, and every waiting reason is the same wait.
        let threshold = match waiting_reason {
            Some(_) => retry_after_ms
                .unwrap_or(0)
                .saturating_add(LIVENESS_RECOVERY_MS),
            None => LIVENESS_RECOVERY_MS,
        };
        if idle >= threshold {
            s.current_tool = None;
            s.current_tool_arg = None;
            if !s.drives_agent {
                s.turn_phase = TurnPhase::Idle;
            }
            if !s.drives_agent {
                return;
            }
            // A pane that drives its agent does more than show the recovery (R99): a turn
            // nobody can see any more must not go on unseen, so the silence is a failure and
            // the turn is stopped the way a stop stops it (interrupt, then kill at the
            // deadline).
            let failure = Failure {
                kind: FailureKind::StreamDisconnected,
                retryable: FailureKind::StreamDisconnected.default_retryable(),
                message: format!(
                    "the agent wrote nothing for {} s; panewise stopped its turn",
                    idle / 1_000
                ),
                http_status: None,
            };
            s.failure = Some(PaneFailure {
                failure,
                at: s.now_ms,
            });
            begin_stop(s, s.now_ms, InterruptReason::System, out);
            return;
        }
    }
    emit(
        out,
        Event::StreamStuck {
            idle_since_ms: idle,
            threshold_ms: s.deadlines.stuck_ms,
        },
    );
}

/// The backend's authoritative turn flag (R23, R46, R47).
///
/// Deliberate deviation from R30: the original promoted to Streaming even while the stream was
/// unsubscribed. That shows "Working…" on a pane that cannot receive the turn's output and
/// breaks the invariant "no working phase while unsubscribed", so an `active: true` while
/// unsubscribed is ignored here; the first live activity after the next subscribe promotes the
/// phase instead. `active: false` still applies without the gate.
fn reconcile_turn_active(s: &mut PaneState, at: u64, active: bool) {
    if active {
        if s.last_event_ms.is_some() && s.turn_phase.is_reconcile_promotable() {
            s.turn_phase = streaming_phase(0, 0, at);
            promote_ping(s);
        }
        return;
    }
    s.pending_compaction_ping = None;
    if matches!(s.turn_phase, TurnPhase::Streaming { .. }) {
        s.turn_phase = TurnPhase::Idle;
        s.current_tool = None;
        s.current_tool_arg = None;
        s.compacting = None;
    }
}

fn turn_start(s: &mut PaneState, at: u64, content: Option<String>, out: &mut Vec<Cmd>) {
    // A new request is judged afresh by the window stage, which files its stand-down again if
    // the floor is still over (R111).
    s.window_stood_down = None;
    if s.last_event_ms.is_none() {
        return;
    }
    if matches!(s.init_phase, InitPhase::InitPending) {
        return;
    }
    // The agent's own start of the turn whose prompt panewise sent is its first sign of work,
    // on every channel: the submit deadline guarded only the wait for it (R104).
    let acknowledges_prompt = matches!(
        s.turn_phase,
        TurnPhase::Submitting { .. } | TurnPhase::Streaming { .. }
    ) && s.prompt_sent_turn.is_some()
        && s.prompt_sent_turn == s.current_turn;
    s.prompt_sent_turn = None;
    // The submit deadline is armed only when the phase crosses into Submitting (R27, R31); a
    // start accepted while Submitting keeps the armed time but moves it to the new turn, so the
    // old turn's timer cannot end the new turn and the new turn is still guarded.
    let kept_deadline = match s.submit_deadline.take() {
        Some(armed) if matches!(s.turn_phase, TurnPhase::Submitting { .. }) => Some(armed),
        Some(armed) => {
            disarm(DeadlineKind::Submit, armed, out);
            None
        }
        None => None,
    };
    let content = content.unwrap_or_default();
    s.pending_compact_turn = content == "/compact";
    s.turn_phase = TurnPhase::Submitting {
        submitted_at: at,
        pending_content: content,
    };
    s.session_stats = None;
    s.last_event_ms = Some(at);
    s.pending_compaction_ping = None;
    let turn = TurnId(s.next_turn_id);
    s.next_turn_id = s.next_turn_id.saturating_add(1);
    s.current_turn = Some(turn);
    if acknowledges_prompt {
        if let Some(armed) = kept_deadline {
            disarm(DeadlineKind::Submit, armed, out);
        }
        s.turn_phase = streaming_phase(s.streaming.buffer_size, 0, at);
        s.failure = None;
        return;
    }
    let deadline_ms = match kept_deadline {
        Some(armed) => {
            disarm(DeadlineKind::Submit, armed, out);
            armed.deadline_ms
        }
        None => at.saturating_add(s.deadlines.submit_ms),
    };
    arm(s, DeadlineKind::Submit, deadline_ms, out);
    s.failure = None;
}

/// Merges a turn's reported stats with its live tokens; the reported totals win (R60).
pub fn merge_stats(
    stats: Option<SessionStats>,
    tokens: Option<&TurnTokens>,
) -> Option<SessionStats> {
    let missing = |value: Option<u64>| value.is_none_or(|v| v == 0);
    match (stats, tokens) {
        (Some(mut stats), tokens) => {
            if let Some(tokens) = tokens {
                // The live input is the whole prompt, so it stands in only when the stats give
                // no prompt figure at all: a zero uncached input beside cached reads or cache
                // writes is a real figure (a deliberate refinement of R60, whose stats did not
                // separate the cache).
                let no_prompt_figure = missing(stats.input_tokens)
                    && missing(stats.cached_input_tokens)
                    && missing(stats.cache_write_input_tokens);
                if no_prompt_figure && tokens.input > 0 {
                    stats.input_tokens = Some(tokens.input);
                }
                let output = tokens.output_shown();
                if missing(stats.output_tokens) && output > 0 {
                    stats.output_tokens = Some(output);
                }
            }
            Some(stats)
        }
        (None, Some(tokens)) => Some(SessionStats {
            input_tokens: Some(tokens.input),
            output_tokens: Some(tokens.output_shown()),
            ..SessionStats::default()
        }),
        (None, None) => None,
    }
}

/// Adds a turn's merged stats into the running totals (R61).
pub fn accumulate(
    totals: Option<SessionStats>,
    merged: Option<&SessionStats>,
) -> Option<SessionStats> {
    let Some(merged) = merged else {
        return totals;
    };
    let totals = totals.unwrap_or_default();
    fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
        match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        }
    }
    let (cost_usd, cost_source) = add_costs(&totals, merged);
    Some(SessionStats {
        cost_usd,
        cost_source,
        duration_ms: add(totals.duration_ms, merged.duration_ms),
        input_tokens: add(totals.input_tokens, merged.input_tokens),
        output_tokens: add(totals.output_tokens, merged.output_tokens),
        cached_input_tokens: add(totals.cached_input_tokens, merged.cached_input_tokens),
        cache_write_input_tokens: add(
            totals.cache_write_input_tokens,
            merged.cache_write_input_tokens,
        ),
        cache_write_1h_input_tokens: add(
            totals.cache_write_1h_input_tokens,
            merged.cache_write_1h_input_tokens,
        ),
        reasoning_tokens: add(totals.reasoning_tokens, merged.reasoning_tokens),
        num_turns: Some(
            totals
                .num_turns
                .unwrap_or(0)
                .saturating_add(merged.num_turns.unwrap_or(1)),
        ),
    })
}

/// The running cost after one more turn (R61). A turn whose cost cannot be known (a model
/// without a price) makes the whole total unknown: `None` with [`CostSource::Unknown`], never a
/// partial sum shown as if it were complete. A reported and an estimated part add up to an
/// estimate. A cost without a source (a log written before sources existed) counts as reported.
fn add_costs(totals: &SessionStats, turn: &SessionStats) -> (Option<f64>, Option<CostSource>) {
    let source_of = |stats: &SessionStats| {
        stats
            .cost_source
            .or_else(|| stats.cost_usd.map(|_| CostSource::Reported))
    };
    match (source_of(totals), source_of(turn)) {
        (None, None) => (None, None),
        (Some(CostSource::Unknown), _) | (_, Some(CostSource::Unknown)) => {
            (None, Some(CostSource::Unknown))
        }
        (a, b) => {
            let source = if a == Some(CostSource::Estimated) || b == Some(CostSource::Estimated) {
                CostSource::Estimated
            } else {
                CostSource::Reported
            };
            let sum = totals.cost_usd.unwrap_or(0.0) + turn.cost_usd.unwrap_or(0.0);
            // Costs are checked finite and non-negative where they are read; a sum of two
            // such values can still overflow to infinity, which is no figure to show.
            (sum.is_finite().then_some(sum), Some(source))
        }
    }
}

fn turn_end(s: &mut PaneState, stats: Option<SessionStats>, interrupted: bool) {
    if matches!(s.turn_phase, TurnPhase::Disconnected { .. }) {
        // The disconnect is the authoritative outcome (R32).
        s.pending_compaction_ping = None;
        return;
    }
    let merged = merge_stats(stats, s.turn_tokens.as_ref());
    match s.turn_phase {
        // Already ended: its outcome stands.
        TurnPhase::Done { .. } => {}
        // The agent says the person stopped the turn (R98): a stop, even one panewise did not
        // send (a decoded capture, a stop typed into the agent itself).
        _ if interrupted => {
            s.turn_phase = TurnPhase::Done {
                outcome: TurnOutcome::Stopped,
                finished_at: s.now_ms,
            };
        }
        _ => finish_turn(s, s.now_ms),
    }
    s.session_totals = accumulate(s.session_totals.take(), merged.as_ref());
    s.session_stats = merged;
    // `pending_compact_turn` stays: the result can overtake the /compact boundary, which is
    // what ends that turn (R14, R43); the next TurnStart resets it anyway.
    clear_turn_activity(s);
}

/// Ends the turn in `Done`: `stopped` when a stop was pending, else `completed` (counted once).
/// This is the soft end a result or a manual compaction boundary brings (R32, R45).
fn finish_turn(s: &mut PaneState, finished_at: u64) {
    let outcome = if matches!(s.turn_phase, TurnPhase::Interrupting { .. }) {
        TurnOutcome::Stopped
    } else {
        TurnOutcome::Completed
    };
    s.turn_phase = TurnPhase::Done {
        outcome,
        finished_at,
    };
    if outcome == TurnOutcome::Completed {
        count_completed_turn(s);
    }
}

/// Counts a completed turn once: a `Done.completed` that later rounds of the same turn promote
/// back to Streaming (R23) must not count that turn again when it ends a second time.
fn count_completed_turn(s: &mut PaneState) {
    if s.current_turn.is_none() || s.last_counted_turn != s.current_turn {
        s.turns_completed = s.turns_completed.saturating_add(1);
        s.last_counted_turn = s.current_turn;
    }
}

fn turn_reset(s: &mut PaneState) {
    s.session_stats = None;
    s.session_totals = None;
    s.plan.clear();
    s.turns_completed = 0;
    s.last_counted_turn = None;
    s.compactions = 0;
    clear_turn_activity(s);
    s.context = None;
    s.context_seedable = false;
    s.turn_phase = TurnPhase::Idle;
    s.current_turn = None;
    s.pending_compact_turn = false;
    clear_waiting_queues(s);
    // Prompts typed for the old conversation do not carry into the new one (R94).
    s.queued_prompts.clear();
}

/// A stop interrupts the agent and arms the interrupt deadline (R36, R84, R95). A second stop
/// while Interrupting keeps the phase and its deadline (R36) and cancels nothing again (R84), but
/// escalates at once: the user who presses stop twice wants the agent gone, not another wait.
fn request_stop(s: &mut PaneState, at: u64, out: &mut Vec<Cmd>) {
    match s.turn_phase {
        TurnPhase::Submitting { .. } | TurnPhase::Streaming { .. } => {}
        TurnPhase::Interrupting { .. } => {
            kill_agent(s, out);
            return;
        }
        TurnPhase::Idle | TurnPhase::Done { .. } | TurnPhase::Disconnected { .. } => return,
    }
    begin_stop(s, at, InterruptReason::User, out);
}

/// Stops the working turn: Interrupting, the interrupt deadline armed, the agent interrupted
/// and the waiting queues cleared (R95).
fn begin_stop(s: &mut PaneState, at: u64, reason: InterruptReason, out: &mut Vec<Cmd>) {
    s.turn_phase = TurnPhase::Interrupting {
        reason,
        sigint_sent_at: at,
    };
    arm(
        s,
        DeadlineKind::Interrupt,
        at.saturating_add(INTERRUPT_TIMEOUT_MS),
        out,
    );
    out.push(Cmd::InterruptAgent {
        turn: s.current_turn,
    });
    clear_waiting_queues(s);
}

/// Asks the runner to kill the agent's process group, once per kill: its exit is then expected
/// (R95, R96).
fn kill_agent(s: &mut PaneState, out: &mut Vec<Cmd>) {
    if s.agent_kill_sent {
        return;
    }
    s.agent_kill_sent = true;
    let turn = s.current_turn;
    out.push(Cmd::KillAgent { turn });
}

/// Whether the reducer may start a turn for a prompt now (R94): nothing working, the gates of
/// `TurnStart` open (R28, R29), not quitting, and no killed agent still to exit.
fn can_send_prompt(s: &PaneState) -> bool {
    !s.turn_phase.is_working()
        && s.last_event_ms.is_some()
        && !matches!(s.init_phase, InitPhase::InitPending)
        && !s.should_exit
        && !s.agent_kill_sent
        // A session held at its budget starts no turn until the cap is raised (R112).
        && s.budget_hold.is_none()
}

/// Starts a turn exactly as `TurnStart` does and asks the runner to send the prompt (R94).
fn start_prompt_turn(s: &mut PaneState, text: String, out: &mut Vec<Cmd>) {
    let at = s.now_ms;
    turn_start(s, at, Some(text.clone()), out);
    if let (Some(turn), true) = (s.current_turn, s.turn_phase.is_working()) {
        s.prompt_sent_turn = Some(turn);
        out.push(Cmd::SendPrompt { turn, text });
    }
}

/// A prompt the user typed (R94): sent now when it can be, else queued FIFO behind the others.
fn prompt_submitted(s: &mut PaneState, text: String, out: &mut Vec<Cmd>) {
    if s.should_exit {
        return;
    }
    if s.queued_prompts.is_empty() && can_send_prompt(s) {
        start_prompt_turn(s, text, out);
        return;
    }
    if s.queued_prompts.len() >= MAX_QUEUED_PROMPTS {
        // Over the cap the oldest goes, as with R88's queued messages.
        s.queued_prompts.pop_front();
    }
    s.queued_prompts.push_back(QueuedPrompt {
        text,
        queued_at: s.now_ms,
    });
}

/// Sends the front queued prompt once no turn is working (R94). Run after every handler, so
/// every way a turn ends (result, cancel, failure, deadline, watchdog, exit) sends the next.
fn send_next_queued_prompt(s: &mut PaneState, out: &mut Vec<Cmd>) {
    if s.queued_prompts.is_empty() || !can_send_prompt(s) {
        return;
    }
    if let Some(prompt) = s.queued_prompts.pop_front() {
        start_prompt_turn(s, prompt.text, out);
    }
}

/// The agent process ended (R96). A turn being stopped ends as the stop's outcome, never as a
/// failure; any other working turn fails as `ProcessExited`; a clean or expected exit with no
/// turn working changes nothing, and an unclean one is shown as a failure.
fn agent_exited(s: &mut PaneState, code: Option<i32>, signal: Option<i32>) {
    let killed = std::mem::take(&mut s.agent_kill_sent);
    let at = s.now_ms;
    match s.turn_phase {
        TurnPhase::Interrupting { .. } => {
            // Killed: the escalation ended it (R35). Otherwise the interrupt itself ended a
            // one-shot CLI: the stop took effect.
            let outcome = if killed {
                TurnOutcome::Interrupted
            } else {
                TurnOutcome::Stopped
            };
            end_turn_hard(s, outcome, at);
        }
        TurnPhase::Submitting { .. } | TurnPhase::Streaming { .. } => {
            let failure = process_exit_failure(code, signal, " before its turn ended");
            failure_observed(s, failure, at);
        }
        TurnPhase::Idle | TurnPhase::Done { .. } | TurnPhase::Disconnected { .. } => {
            let clean = code == Some(0) && signal.is_none();
            // A failure already shown explains a CLI that exits non-zero after it (Claude Code
            // exits 1 after an API error), and so does a turn the person stopped (it exits 1
            // after an interrupted turn): the exit does not replace the cause (R96).
            let explained = s.failure.is_some()
                || matches!(
                    s.turn_phase,
                    TurnPhase::Done {
                        outcome: TurnOutcome::Stopped | TurnOutcome::Interrupted,
                        ..
                    }
                );
            if !clean && !killed && !explained {
                failure_observed(s, process_exit_failure(code, signal, ""), at);
            }
        }
    }
}

fn process_exit_failure(code: Option<i32>, signal: Option<i32>, when: &str) -> Failure {
    let how = match (code, signal) {
        (_, Some(signal)) => format!("was ended by signal {signal}"),
        (Some(code), None) => format!("exited with code {code}"),
        (None, None) => "ended without an exit status".to_owned(),
    };
    Failure {
        kind: FailureKind::ProcessExited,
        retryable: false,
        message: format!("the agent process {how}{when}"),
        http_status: None,
    }
}

/// An approval answer (R101): the first answer to a waiting request resolves it; an answer
/// to a request that no longer waits is refused, saying why. `id: None` (older logs, a
/// terminal answering "the one asked") answers the front request.
fn approval_answered(
    s: &mut PaneState,
    id: Option<String>,
    approved: bool,
    for_session: bool,
    by: Option<Actor>,
    reason: Option<String>,
    out: &mut Vec<Cmd>,
) {
    let index = match &id {
        None => (!s.pending_approvals.is_empty()).then_some(0),
        Some(id) => s
            .pending_approvals
            .iter()
            .position(|pending| pending.id == *id),
    };
    let Some(front) = index.and_then(|index| s.pending_approvals.remove(index)) else {
        let refusal = match &id {
            // An id-less answer with nothing waiting: as before ids were carried.
            None if s.closed_requests.is_empty() => {
                return ignore(
                    s,
                    MsgKind::ApprovalAnswered,
                    IgnoreReason::NoApprovalPending,
                );
            }
            None => AnswerRefusal::NothingWaiting,
            Some(id) => match s
                .closed_requests
                .iter()
                .rev()
                .find(|closed| closed.id == *id)
            {
                Some(ClosedRequest {
                    closed: RequestClosed::Answered { approved, by },
                    ..
                }) => AnswerRefusal::AlreadyAnswered {
                    approved: *approved,
                    by: by.clone(),
                },
                Some(ClosedRequest {
                    closed: RequestClosed::Withdrawn,
                    ..
                }) => AnswerRefusal::Withdrawn,
                None => AnswerRefusal::Unknown,
            },
        };
        return refuse_answer(s, id, refusal, MsgKind::ApprovalAnswered, out);
    };
    // Only an allow is for the session; a denial says nothing about later requests (R103).
    let for_session = approved && for_session;
    if for_session {
        s.allowed_for_session
            .insert(front.tool.clone(), by.clone().unwrap_or(Actor::Person));
    }
    close_request(
        s,
        front.id.clone(),
        RequestClosed::Answered {
            approved,
            by: by.clone(),
        },
    );
    out.push(Cmd::ResolveApproval {
        id: front.id,
        tool: front.tool,
        approved,
        for_session,
        by,
        reason: if approved { None } else { reason },
    });
}

/// Remembers how request `id` was closed, the newest [`CLOSED_REQUESTS_KEPT`] (R101).
fn close_request(s: &mut PaneState, id: String, closed: RequestClosed) {
    if s.closed_requests.len() >= CLOSED_REQUESTS_KEPT {
        s.closed_requests.pop_front();
    }
    s.closed_requests.push_back(ClosedRequest { id, closed });
}

/// Refuses an answer, counting it with the other messages not applied, and says why (R101).
fn refuse_answer(
    s: &mut PaneState,
    id: Option<String>,
    refusal: AnswerRefusal,
    kind: MsgKind,
    out: &mut Vec<Cmd>,
) {
    s.diagnostics.ignored = s.diagnostics.ignored.saturating_add(1);
    s.diagnostics.last = Some(format!("{kind}: refused, {}", refusal.describe()));
    emit(out, Event::AnswerRefused { id, refusal });
}

fn is_waiting_for_input(s: &PaneState) -> bool {
    !s.pending_approvals.is_empty()
        || !s.pending_questions.is_empty()
        || s.confirm.is_some()
        || s.budget_hold.is_some()
}

/// Clears both parked queues: a cancelled task can never receive an answer (R86).
fn clear_waiting_queues(s: &mut PaneState) {
    for pending in std::mem::take(&mut s.pending_approvals) {
        close_request(s, pending.id, RequestClosed::Withdrawn);
    }
    s.pending_questions.clear();
}

fn remove_pending(s: &mut PaneState, id: &str) -> Option<PendingMessage> {
    let index = s.pending.iter().position(|m| m.id == id)?;
    Some(s.pending.remove(index))
}

fn provider_waiting(s: &mut PaneState, reason: WaitingReason, retry: Option<u64>, at: u64) {
    if s.last_event_ms.is_none() {
        return;
    }
    s.last_event_ms = Some(at);
    if let TurnPhase::Streaming {
        waiting_reason,
        retry_after_ms,
        last_event_ms,
        ..
    } = &mut s.turn_phase
    {
        *waiting_reason = Some(reason);
        *retry_after_ms = retry;
        *last_event_ms = at;
    }
}

fn failure_observed(s: &mut PaneState, failure: Failure, at: u64) {
    if s.turn_phase.is_working() {
        end_turn_hard(s, TurnOutcome::Errored, at);
    }
    s.failure = Some(PaneFailure { failure, at });
}

fn compaction_started(s: &mut PaneState, trigger: CompactionTrigger, at: u64) {
    if s.last_event_ms.is_none() {
        return;
    }
    if s.last_compaction_boundary_at.is_some_and(|b| at <= b) {
        // A stale start echoing a compaction that already finished (R44).
        return;
    }
    let ping = CompactionInProgress {
        trigger,
        started_at: at,
    };
    if s.turn_phase.is_working() {
        s.compacting = Some(ping);
        s.last_event_ms = Some(at);
        if let TurnPhase::Streaming { last_event_ms, .. } = &mut s.turn_phase {
            *last_event_ms = at;
        }
    } else if s.turn_phase.is_activity_promotable() {
        s.pending_compaction_ping = Some(ping);
    }
}

struct Boundary {
    trigger: CompactionTrigger,
    at: u64,
    frame_timestamp: Option<u64>,
}

fn compaction_boundary(s: &mut PaneState, b: Boundary) {
    let preserves_newer = matches!(
        (s.compacting, b.frame_timestamp),
        (Some(c), Some(frame)) if frame < c.started_at
    );
    if !preserves_newer {
        s.compacting = None;
    }
    let boundary_time = b.frame_timestamp.unwrap_or(b.at);
    s.last_compaction_boundary_at = Some(boundary_time);
    if s.pending_compaction_ping
        .is_some_and(|ping| boundary_time >= ping.started_at)
    {
        s.pending_compaction_ping = None;
    }
    // The summary's size is not a context size, so the reading goes unless it is newer (R52).
    let reading_is_newer = s
        .context
        .as_ref()
        .and_then(|r| r.at)
        .is_some_and(|taken| taken > boundary_time);
    if !preserves_newer && !reading_is_newer {
        s.context = None;
    }
    s.context_seedable = false;
    if s.last_event_ms.is_some() {
        s.last_event_ms = Some(b.at);
        if let TurnPhase::Streaming { last_event_ms, .. } = &mut s.turn_phase {
            *last_event_ms = b.at;
        }
    }
    if b.trigger == CompactionTrigger::Manual && s.pending_compact_turn && s.turn_phase.is_working()
    {
        finish_turn(s, b.at);
        s.current_tool = None;
        s.current_tool_arg = None;
        s.turn_tokens = None;
        s.pending_compact_turn = false;
    }
    s.compactions = s.compactions.saturating_add(1);
}

fn tokens_in(s: &mut PaneState, input: u64, model: Option<String>) {
    let previous = s.context.take();

    // The token-drop heuristic compares only against a plausible live reading (R49).
    let baseline = previous
        .as_ref()
        .filter(|r| r.source == ReadingSource::Live && plausible_reading(r).is_ok())
        .map(|r| r.tokens);
    let boundary_is_recent = s
        .last_compaction_boundary_at
        .is_some_and(|b| s.now_ms.saturating_sub(b) < COMPACTION_HEURISTIC_SUPPRESS_MS);
    let heuristic_drop = baseline.filter(|&before| {
        before > HEURISTIC_BASELINE_FLOOR && input.saturating_mul(2) < before && !boundary_is_recent
    });

    if model.is_some() {
        s.last_context_model.clone_from(&model);
    }
    let model = model.or_else(|| s.last_context_model.clone());
    let reading = build_reading(s, input, model, ReadingSource::Live, Some(s.now_ms));
    s.context = Some(reading);
    s.context_seedable = false;

    // A new call: the previous call's output is folded into the turn's done output (R67).
    let (ledger_turn_id, ledger_pass) = match &s.turn_ledger {
        Some(ledger) if ledger.is_open(s.now_ms) => (Some(ledger.turn_id), Some(ledger.passes)),
        _ => (None, None),
    };
    let previous_tokens = s.turn_tokens.take();
    let (output_done, shown_output) = previous_tokens
        .as_ref()
        .map_or((0, 0), |t| (t.output_so_far(), t.output_shown()));
    s.turn_tokens = Some(TurnTokens {
        input,
        output: 0,
        output_done,
        streamed_chars: 0,
        shown_output,
        requesting: false,
        ledger_turn_id,
        ledger_pass,
    });

    bump(s, 0);
    if heuristic_drop.is_some() {
        s.compactions = s.compactions.saturating_add(1);
    }
}

/// Builds a reading with its window resolved (R51), learning windows and recording a refuted
/// report once per model (R54).
fn build_reading(
    s: &mut PaneState,
    tokens: u64,
    model: Option<String>,
    source: ReadingSource,
    at: Option<u64>,
) -> ContextReading {
    let resolved = resolve_window(
        model.as_deref(),
        tokens,
        &s.reported_context_windows,
        &s.learned_context_windows,
    );
    if let Some(model_id) = model.as_deref() {
        learn_window(s, model_id, &resolved);
    }
    ContextReading {
        tokens,
        model,
        window: resolved.window,
        window_source: resolved.source,
        source,
        at,
        switched_to: None,
    }
}

fn learn_window(s: &mut PaneState, model: &str, resolved: &crate::context::Resolved) {
    let (Some(window), Some(crate::context::WindowSource::Learned)) =
        (resolved.window, resolved.source)
    else {
        return;
    };
    let known = crate::context::lookup_window(&s.learned_context_windows, model);
    if known.is_none_or(|k| k < window) {
        s.learned_context_windows.insert(model.to_owned(), window);
    }
    // The models whose reported window a prompt refuted stay on record (R54).
    if resolved.refuted_report.is_some() {
        s.refuted_models.insert(model.to_owned());
    }
}

/// Re-resolves the current reading's window after the reported map changed (R53, R56). A
/// switched reading and a reading about another model are left alone.
fn re_resolve_reading(s: &mut PaneState, changed_models: Option<&[String]>) {
    let Some(reading) = s.context.as_ref() else {
        return;
    };
    if reading.switched_to.is_some() {
        return;
    }
    let Some(model) = reading.model.clone() else {
        return;
    };
    if let Some(changed) = changed_models {
        let concerns_reading = changed.iter().any(|m| {
            m.eq_ignore_ascii_case(&model)
                || model
                    .to_ascii_lowercase()
                    .strip_suffix("[1m]")
                    .is_some_and(|stripped| m.eq_ignore_ascii_case(stripped))
        });
        if !concerns_reading {
            return;
        }
    }
    let tokens = reading.tokens;
    let resolved = resolve_window(
        Some(&model),
        tokens,
        &s.reported_context_windows,
        &s.learned_context_windows,
    );
    learn_window(s, &model, &resolved);
    if let Some(reading) = s.context.as_mut() {
        reading.window = resolved.window;
        reading.window_source = resolved.source;
    }
}

fn seed_from_history(
    s: &mut PaneState,
    tokens: Option<u64>,
    model: Option<String>,
    at: Option<u64>,
) {
    let Some(tokens) = tokens else {
        return;
    };
    if !s.context_seedable {
        return;
    }
    let reading = build_reading(s, tokens, model.clone(), ReadingSource::History, at);
    // An implausible seed is not shown: the pane keeps what it had (R55, R56).
    if plausible_reading(&reading).is_ok() {
        s.context = Some(reading);
        s.context_seedable = false;
        if model.is_some() {
            s.last_context_model = model;
        }
    }
}

fn model_switched(s: &mut PaneState, model: String) {
    let Some(reading) = s.context.as_mut() else {
        return;
    };
    let back_to_own = reading
        .model
        .as_deref()
        .is_some_and(|own| own.eq_ignore_ascii_case(&model));
    if back_to_own {
        if reading.switched_to.take().is_some() {
            re_resolve_reading(s, None);
        }
    } else {
        reading.window = None;
        reading.window_source = None;
        reading.switched_to = Some(model);
    }
}

/// Which byte-capped buffer a text goes to (R89).
#[derive(Clone, Copy)]
enum BufferKind {
    HookContext,
    TaskNotice,
}

fn push_capped(s: &mut PaneState, kind: BufferKind, text: String) {
    let (buffer, label) = match kind {
        BufferKind::HookContext => (&mut s.pending_hook_context, MsgKind::HookContextAdded),
        BufferKind::TaskNotice => (&mut s.pending_task_notices, MsgKind::TaskNoticeAdded),
    };
    let used: usize = buffer.iter().map(String::len).sum();
    let room = CONTEXT_BUFFER_CAP_BYTES.saturating_sub(used);
    if text.len() <= room {
        buffer.push(text);
        return;
    }
    // Keep what fits, cut on a character boundary, and count the cut so it is not silent.
    let mut cut = room;
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    if cut > 0 {
        buffer.push(text[..cut].to_owned());
    }
    ignore(s, label, IgnoreReason::BufferFull);
}

fn quit(s: &mut PaneState) {
    if s.should_exit {
        return;
    }
    clear_waiting_queues(s);
    s.confirm = None;
    s.pending_hook_context.clear();
    s.pending_task_notices.clear();
    s.queued_prompts.clear();
    s.should_exit = true;
}

/// Counts a message that makes no sense in the current state, so it is never lost silently.
fn ignore(s: &mut PaneState, kind: MsgKind, reason: IgnoreReason) {
    s.diagnostics.ignored = s.diagnostics.ignored.saturating_add(1);
    s.diagnostics.last = Some(format!("{kind}: {}", reason.describe()));
}

fn armed_slot(s: &mut PaneState, kind: DeadlineKind) -> &mut Option<ArmedDeadline> {
    match kind {
        DeadlineKind::Submit => &mut s.submit_deadline,
        DeadlineKind::Interrupt => &mut s.interrupt_deadline,
    }
}

/// Arms `kind` for the current turn and asks the runner for the timer (R27).
fn arm(s: &mut PaneState, kind: DeadlineKind, deadline_ms: u64, out: &mut Vec<Cmd>) {
    let turn = s.current_turn;
    *armed_slot(s, kind) = Some(ArmedDeadline { turn, deadline_ms });
    out.push(Cmd::ScheduleDeadline {
        turn,
        kind,
        deadline_ms,
    });
}

fn disarm(kind: DeadlineKind, armed: ArmedDeadline, out: &mut Vec<Cmd>) {
    out.push(Cmd::CancelDeadline {
        turn: armed.turn,
        kind,
    });
}

/// Disarms every deadline that stopped mattering in this message: its turn left the phase it
/// guards, or another turn became current. Run after every handler, so no exit path from
/// Submitting or Interrupting can forget its timer.
fn disarm_moot_deadlines(s: &mut PaneState, out: &mut Vec<Cmd>) {
    // A prompt whose turn ended, however it ended, waits for no acknowledgement (R104).
    if !s.turn_phase.is_working() || s.prompt_sent_turn != s.current_turn {
        s.prompt_sent_turn = None;
    }
    let submitting = matches!(s.turn_phase, TurnPhase::Submitting { .. });
    let interrupting = matches!(s.turn_phase, TurnPhase::Interrupting { .. });
    for (kind, guarded_phase) in [
        (DeadlineKind::Submit, submitting),
        (DeadlineKind::Interrupt, interrupting),
    ] {
        let current_turn = s.current_turn;
        let slot = armed_slot(s, kind);
        if let Some(armed) = *slot {
            if !guarded_phase || armed.turn != current_turn {
                *slot = None;
                disarm(kind, armed, out);
            }
        }
    }
}

/// A deadline fired for the current turn (the stale-turn drop already ran, R81). It acts only
/// in the phase it guards (R35), and only if it is the deadline armed last: an earlier timer of
/// the same turn (stop, stop failed, stop again) that raced its cancel is dropped as stale.
fn deadline_elapsed(
    s: &mut PaneState,
    kind: DeadlineKind,
    fired_deadline_ms: Option<u64>,
    out: &mut Vec<Cmd>,
) {
    let in_guarded_phase = match kind {
        DeadlineKind::Submit => matches!(s.turn_phase, TurnPhase::Submitting { .. }),
        DeadlineKind::Interrupt => matches!(s.turn_phase, TurnPhase::Interrupting { .. }),
    };
    if !in_guarded_phase {
        return;
    }
    let slot = armed_slot(s, kind);
    let superseded = matches!(
        (*slot, fired_deadline_ms),
        (Some(armed), Some(fired)) if armed.deadline_ms != fired
    );
    // A stale timer is expected traffic in a live runner, not a fault: it changes nothing.
    if superseded {
        return;
    }
    // It fired: nothing is left to cancel.
    *slot = None;
    let at = s.now_ms;
    match kind {
        DeadlineKind::Submit => {
            // The person is told which deadline passed and after how long; silence would read
            // as an interrupt.
            s.failure = Some(PaneFailure {
                failure: Failure {
                    kind: FailureKind::Unknown,
                    retryable: true,
                    message: format!(
                        "the agent showed no sign of work within {} s of the prompt (the submit \
                         deadline)",
                        s.deadlines.submit_ms / 1_000
                    ),
                    http_status: None,
                },
                at,
            });
            end_turn_hard(s, TurnOutcome::Errored, at);
        }
        DeadlineKind::Interrupt => {
            // The interrupt did not take: kill the agent, then end the turn (R35, R95).
            kill_agent(s, out);
            end_turn_hard(s, TurnOutcome::Interrupted, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r37_tool_delta_never_goes_below_zero() {
        assert_eq!(apply_delta(0, -1), 0);
        assert_eq!(apply_delta(2, -1), 1);
        assert_eq!(apply_delta(u32::MAX, 1), u32::MAX);
    }

    #[test]
    fn r60_reported_stats_win_and_live_tokens_fill_gaps() {
        let tokens = TurnTokens {
            input: 100,
            output: 40,
            ..TurnTokens::default()
        };
        let stats = SessionStats {
            input_tokens: Some(500),
            output_tokens: Some(0),
            ..SessionStats::default()
        };
        let merged = merge_stats(Some(stats), Some(&tokens));
        assert_eq!(merged.as_ref().and_then(|m| m.input_tokens), Some(500));
        assert_eq!(merged.as_ref().and_then(|m| m.output_tokens), Some(40));
        assert_eq!(merge_stats(None, None), None);
    }

    #[test]
    fn r61_accumulate_counts_a_turn_without_num_turns_as_one() {
        let merged = SessionStats {
            cost_usd: Some(0.5),
            ..SessionStats::default()
        };
        let totals = accumulate(None, Some(&merged));
        let totals = accumulate(totals, Some(&merged));
        assert_eq!(totals.as_ref().and_then(|t| t.num_turns), Some(2));
        assert_eq!(totals.as_ref().and_then(|t| t.cost_usd), Some(1.0));
        assert_eq!(accumulate(None, None), None);
    }
}
