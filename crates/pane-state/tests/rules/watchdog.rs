//! Part B.6: the liveness watchdog and rate-limit waiting (R39–R42).

use panewise_pane_state::state::WaitingReason;
use panewise_pane_state::{step, CompactionTrigger, Event, Msg, TurnPhase};

use crate::support::*;

/// The tick carries no time: the watchdog reads the stamped clock, the one clock (R90).
fn tick() -> Msg {
    Msg::StreamWatchdogTick
}

fn waiting(retry_after_ms: Option<u64>, at: u64) -> Msg {
    Msg::ProviderWaiting {
        reason: WaitingReason::RateLimited,
        retry_after_ms,
        at,
    }
}

#[test]
fn r39_watchdog_does_nothing_while_unsubscribed() {
    assert_eq!(unchanged(fresh(), T0 + 1_000_000, tick()), vec![]);
}

#[test]
fn r39_watchdog_does_nothing_while_compacting() {
    // A compaction can run for minutes without output.
    let s = settle(
        streaming(T0),
        &[(T0 + 1, compaction_started(CompactionTrigger::Auto, T0 + 1))],
    );
    assert_eq!(unchanged(s, T0 + 500_000, tick()), vec![]);
}

#[test]
fn r39_watchdog_does_nothing_while_a_person_is_asked() {
    // An approval answered after ten minutes: the agent's silence is the person's pace, never
    // a stuck stream, and a driving pane does not fail the turn for it (R99).
    let s = settle(
        streaming(T0),
        &[(
            T0 + 1,
            Msg::ApprovalRequested {
                id: "r1".into(),
                tool: "Bash".into(),
                summary: "cargo test".into(),
                turn: None,
            },
        )],
    );
    assert!(!s.pending_approvals.is_empty());
    assert_eq!(unchanged(s, T0 + 600_000, tick()), vec![]);
}

#[test]
fn r39_under_45_seconds_of_silence_nothing_happens() {
    assert_eq!(unchanged(streaming(T0), T0 + 44_999, tick()), vec![]);
}

#[test]
fn r39_between_45_seconds_and_recovery_the_stream_is_reported_stuck() {
    let cmds = unchanged(streaming(T0), T0 + 45_000, tick());
    assert_eq!(
        cmds,
        vec![ev(Event::StreamStuck {
            idle_since_ms: 45_000,
            threshold_ms: 45_000
        })]
    );
    let cmds = unchanged(streaming(T0), T0 + 179_999, tick());
    assert_eq!(
        cmds,
        vec![ev(Event::StreamStuck {
            idle_since_ms: 179_999,
            threshold_ms: 45_000
        })]
    );
}

#[test]
fn r39_r90_the_watchdog_measures_idleness_on_the_stamped_clock() {
    // There is no second clock in the tick: the stamp is the time of the check.
    let cmds = unchanged(streaming(T0), T0 + 50_000, tick());
    assert_eq!(
        cmds,
        vec![ev(Event::StreamStuck {
            idle_since_ms: 50_000,
            threshold_ms: 45_000
        })]
    );
}

#[test]
fn r39_a_silent_streaming_turn_recovers_to_idle_and_keeps_its_tokens() {
    let mut s = settle(streaming(T0), &[(T0 + 1, tokens_in(5_000, None))]);
    // The chip of a tool whose end was lost still shows; recovery clears it.
    s.current_tool = Some("Bash".into());
    s.current_tool_arg = Some("ls".into());
    let tokens = s.turn_tokens.clone();
    let (s, cmds) = step(s, T0 + 1 + 180_000, tick());
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!((&s.current_tool, &s.current_tool_arg), (&None, &None));
    assert_eq!(s.turn_tokens, tokens);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r39_a_rate_limited_turn_waits_out_its_retry_before_recovery() {
    let s = settle(streaming(T0), &[(T0 + 1, waiting(Some(60_000), T0 + 1))]);
    let cmds = unchanged(s.clone(), T0 + 1 + 200_000, tick());
    assert_eq!(
        cmds,
        vec![ev(Event::StreamStuck {
            idle_since_ms: 200_000,
            threshold_ms: 45_000
        })]
    );
    let (s, cmds) = step(s, T0 + 1 + 240_000, tick());
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r39_a_rate_limit_without_retry_time_uses_the_plain_threshold() {
    let s = settle(streaming(T0), &[(T0 + 1, waiting(None, T0 + 1))]);
    let (s, cmds) = step(s, T0 + 1 + 180_000, tick());
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r39_outside_streaming_the_watchdog_only_reports_stuck_as_the_catalog_states() {
    // Only Streaming is recovered; every other subscribed phase just reports the silence.
    for s in [
        submitting(T0),
        interrupting(T0),
        subscribed_ready(T0),
        done_completed(T0),
    ] {
        let cmds = unchanged(s, T0 + 200_000, tick());
        assert_eq!(
            cmds,
            vec![ev(Event::StreamStuck {
                idle_since_ms: 200_000,
                threshold_ms: 45_000
            })]
        );
    }
}

#[test]
fn r40_a_running_tool_keeps_the_turn_alive() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tool_start("Bash", Some("cargo build")))],
    );
    let cmds = unchanged(s.clone(), T0 + 1 + 3_600_000, tick());
    assert_eq!(
        cmds,
        vec![ev(Event::StreamStuck {
            idle_since_ms: 3_600_000,
            threshold_ms: 45_000
        })]
    );
    // The backend's word still ends it.
    let (s, cmds) = step(
        s,
        T0 + 2,
        Msg::ReconcileTurnActive {
            at: T0 + 2,
            active: false,
        },
    );
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(s.current_tool, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r41_live_activity_after_a_late_recovery_resumes_streaming() {
    let s = settle(streaming(T0), &[(T0 + 180_000, tick())]);
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    let (s1, cmds) = step(s.clone(), T0 + 180_500, flush(2, T0 + 180_500));
    assert_eq!(s1.turn_phase, streaming_phase(3, 0, T0 + 180_500));
    assert_eq!(cmds, vec![]);
    let (s2, _) = step(s, T0 + 180_600, tool_start("Read", None));
    assert_eq!(s2.turn_phase, streaming_phase(1, 1, T0 + 180_600));
}

#[test]
fn r42_a_flush_clears_the_rate_limit() {
    let s = settle(streaming(T0), &[(T0 + 1, waiting(Some(30_000), T0 + 1))]);
    let (s, _) = step(s, T0 + 2, flush(1, T0 + 2));
    assert_eq!(s.turn_phase, streaming_phase(2, 0, T0 + 2));
}

#[test]
fn r42_any_bump_clears_the_rate_limit() {
    let s = settle(streaming(T0), &[(T0 + 1, waiting(Some(30_000), T0 + 1))]);
    let (s, cmds) = step(s, T0 + 2, tokens_out(12));
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 2));
    assert_eq!(cmds, vec![]);
}
