//! Small builders shared by the rule groups.

use panewise_pane_state::state::{InterruptReason, TurnTokens};
use panewise_pane_state::{
    step, Cmd, CompactionTrigger, Event, Failure, FailureKind, Msg, State, TurnOutcome, TurnPhase,
};

pub use panewise_pane_state::{ConfirmAction, DeadlineKind, MsgKind, TurnId};

/// A fixed epoch so times read like real milliseconds.
pub const T0: u64 = 1_700_000_000_000;

pub fn fresh() -> State {
    State::new("agent-1")
}

/// Folds `msgs` in order, stamping each one's `now`; returns the final state and every command.
pub fn run(mut state: State, msgs: &[(u64, Msg)]) -> (State, Vec<Cmd>) {
    let mut all = Vec::new();
    for (now, msg) in msgs {
        let (next, cmds) = step(state, *now, msg.clone());
        state = next;
        all.extend(cmds);
    }
    (state, all)
}

/// Like [`run`], for building a starting point whose commands do not matter.
pub fn settle(state: State, msgs: &[(u64, Msg)]) -> State {
    run(state, msgs).0
}

/// Subscribed and init-ready at `at`: the pane a user sees right after opening it.
pub fn subscribed_ready(at: u64) -> State {
    settle(
        fresh(),
        &[
            (at, Msg::StreamSubscribe { at }),
            (at, Msg::InitReady { at }),
        ],
    )
}

/// A turn (TurnId 1) submitted at `at`.
pub fn submitting(at: u64) -> State {
    settle(subscribed_ready(at), &[(at, turn_start(at))])
}

/// A turn streaming after one flushed item at `at`.
pub fn streaming(at: u64) -> State {
    settle(submitting(at), &[(at, flush(1, at))])
}

/// A streaming turn the user asked to stop at `at`.
pub fn interrupting(at: u64) -> State {
    settle(streaming(at), &[(at, Msg::RequestStop { at })])
}

/// A turn that completed at `at`.
pub fn done_completed(at: u64) -> State {
    settle(streaming(at), &[(at, turn_end())])
}

/// A turn that errored (submit deadline) at `at`.
pub fn done_errored(at: u64) -> State {
    settle(submitting(at), &[(at, submit_elapsed())])
}

/// A submit deadline firing without naming its turn or deadline (as v1 logs recorded it): only
/// the phase check applies (R35).
pub fn submit_elapsed() -> Msg {
    Msg::SubmitTimeoutElapsed {
        turn: None,
        deadline_ms: None,
    }
}

/// An interrupt deadline firing without naming its turn or deadline (R35).
pub fn interrupt_elapsed() -> Msg {
    Msg::InterruptTimeoutElapsed {
        turn: None,
        deadline_ms: None,
    }
}

/// Folds one message and checks the state did not change (apart from the stamped clock).
pub fn unchanged(state: State, now: u64, msg: Msg) -> Vec<Cmd> {
    let mut expected = state.clone();
    expected.now_ms = now;
    let (after, cmds) = step(state, now, msg);
    assert_eq!(after, expected, "the state must come back unchanged");
    cmds
}

/// The command arming `kind` for turn `turn` at `deadline_ms` (R27).
pub fn schedule(kind: DeadlineKind, turn: u64, deadline_ms: u64) -> Cmd {
    Cmd::ScheduleDeadline {
        turn: Some(TurnId(turn)),
        kind,
        deadline_ms,
    }
}

/// The command disarming `kind` for turn `turn`.
pub fn cancel(kind: DeadlineKind, turn: u64) -> Cmd {
    Cmd::CancelDeadline {
        turn: Some(TurnId(turn)),
        kind,
    }
}

/// The command killing the agent to end turn `turn` (R95).
pub fn kill(turn: u64) -> Cmd {
    Cmd::KillAgent {
        turn: Some(TurnId(turn)),
    }
}

pub fn ev(event: Event) -> Cmd {
    Cmd::Emit(event)
}

pub fn turn_start(at: u64) -> Msg {
    Msg::TurnStart { at, content: None }
}

pub fn turn_start_with(at: u64, content: &str) -> Msg {
    Msg::TurnStart {
        at,
        content: Some(content.to_owned()),
    }
}

pub fn turn_end() -> Msg {
    Msg::TurnEnd {
        stats: None,
        turn: None,
        interrupted: false,
    }
}

pub fn flush(added_count: u64, at: u64) -> Msg {
    Msg::StreamFlushObserved { added_count, at }
}

pub fn tool_start(name: &str, arg: Option<&str>) -> Msg {
    Msg::ToolStart {
        name: name.to_owned(),
        arg: arg.map(str::to_owned),
        turn: None,
    }
}

pub fn tool_end() -> Msg {
    Msg::ToolEnd { turn: None }
}

pub fn tokens_in(input: u64, model: Option<&str>) -> Msg {
    Msg::TokensIn {
        input,
        model: model.map(str::to_owned),
        cache_read: None,
        cache_write: None,
        cache_write_1h: None,
        turn: None,
    }
}

pub fn tokens_out(output: u64) -> Msg {
    Msg::TokensOut { output, turn: None }
}

pub fn streamed(chars: u64) -> Msg {
    Msg::OutputStreamed { chars, turn: None }
}

pub fn compaction_started(trigger: CompactionTrigger, at: u64) -> Msg {
    Msg::CompactionStarted { trigger, at }
}

pub fn boundary(trigger: CompactionTrigger, at: u64, frame_timestamp: Option<u64>) -> Msg {
    Msg::CompactionBoundary {
        trigger,
        pre_tokens: 150_000,
        post_tokens: 9_000,
        duration_ms: Some(40_000),
        at,
        frame_timestamp,
    }
}

pub fn failure(kind: FailureKind) -> Failure {
    Failure {
        kind,
        retryable: kind.default_retryable(),
        message: "429 Too Many Requests".to_owned(),
        http_status: Some(429),
    }
}

pub fn streaming_phase(buffer_size: u64, tools_active: u32, last_event_ms: u64) -> TurnPhase {
    TurnPhase::Streaming {
        buffer_size,
        tools_active,
        last_event_ms,
        waiting_reason: None,
        retry_after_ms: None,
    }
}

pub fn done(outcome: TurnOutcome, finished_at: u64) -> TurnPhase {
    TurnPhase::Done {
        outcome,
        finished_at,
    }
}

pub fn interrupting_phase(sigint_sent_at: u64) -> TurnPhase {
    TurnPhase::Interrupting {
        reason: InterruptReason::User,
        sigint_sent_at,
    }
}

pub fn tokens(input: u64, output: u64) -> TurnTokens {
    TurnTokens {
        input,
        output,
        ..TurnTokens::default()
    }
}
