//! Part B.7: compaction races, the buffered ping, the /compact turn and the heuristic
//! (R43–R49).

use std::collections::BTreeMap;

use panewise_pane_state::state::{CompactionInProgress, DisconnectReason, WorkingKind};
use panewise_pane_state::{
    step,
    CompactionTrigger::{Auto, Manual},
    FailureKind, Msg, State, TurnOutcome, TurnPhase,
};

use crate::support::*;

fn ping(
    trigger: panewise_pane_state::CompactionTrigger,
    started_at: u64,
) -> Option<CompactionInProgress> {
    Some(CompactionInProgress {
        trigger,
        started_at,
    })
}

/// An idle, subscribed pane holding a buffered auto ping from `T0 + 10`.
fn idle_with_ping() -> State {
    let s = settle(
        subscribed_ready(T0),
        &[(T0 + 10, compaction_started(Auto, T0 + 10))],
    );
    assert_eq!(s.pending_compaction_ping, ping(Auto, T0 + 10));
    s
}

/// A streaming turn that still holds a buffered ping: a tool promoted the phase, which does not
/// use the ping up (only reconcile and flush promotions do, R46).
fn streaming_with_ping() -> State {
    let s = settle(idle_with_ping(), &[(T0 + 11, tool_start("Bash", None))]);
    assert_eq!(s.turn_phase, streaming_phase(0, 1, T0 + 11));
    assert_eq!(s.pending_compaction_ping, ping(Auto, T0 + 10));
    s
}

#[test]
fn r44_start_is_ignored_while_unsubscribed() {
    let mut s = streaming(T0);
    s.last_event_ms = None;
    assert_eq!(
        unchanged(s, T0 + 1, compaction_started(Auto, T0 + 1)),
        vec![]
    );
}

#[test]
fn r44_stale_start_echoing_a_finished_compaction_is_ignored() {
    let s = settle(
        streaming(T0),
        &[(T0 + 100, boundary(Auto, T0 + 100, Some(T0 + 90)))],
    );
    // At the boundary's own time and before it: an echo of the compaction that just ended.
    assert_eq!(
        unchanged(s.clone(), T0 + 101, compaction_started(Auto, T0 + 90)),
        vec![]
    );
    assert_eq!(
        unchanged(s.clone(), T0 + 101, compaction_started(Auto, T0 + 50)),
        vec![]
    );
    let (s, cmds) = step(s, T0 + 102, compaction_started(Auto, T0 + 91));
    assert_eq!(s.compacting, ping(Auto, T0 + 91));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r44_start_while_streaming_sets_compacting_and_moves_activity() {
    let (s, cmds) = step(streaming(T0), T0 + 5, compaction_started(Auto, T0 + 5));
    assert_eq!(s.compacting, ping(Auto, T0 + 5));
    assert_eq!(s.pending_compaction_ping, None);
    assert_eq!(s.last_event_ms, Some(T0 + 5));
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 5));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r44_start_while_submitting_or_interrupting_sets_compacting_without_changing_phase() {
    for s in [submitting(T0), interrupting(T0)] {
        let phase = s.turn_phase.clone();
        let (s, cmds) = step(s, T0 + 5, compaction_started(Manual, T0 + 5));
        assert_eq!(s.compacting, ping(Manual, T0 + 5));
        assert_eq!(s.turn_phase, phase);
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r44_start_while_idle_or_done_completed_is_buffered() {
    for s in [subscribed_ready(T0), done_completed(T0)] {
        let phase = s.turn_phase.clone();
        let (s, cmds) = step(s, T0 + 5, compaction_started(Auto, T0 + 5));
        assert_eq!(s.pending_compaction_ping, ping(Auto, T0 + 5));
        assert_eq!(s.compacting, None);
        assert_eq!(s.turn_phase, phase);
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r44_start_while_disconnected_is_buffered() {
    let mut s = subscribed_ready(T0);
    s.turn_phase = TurnPhase::Disconnected {
        last_kind: WorkingKind::Streaming,
        last_connected_at: T0,
        reason: DisconnectReason::StreamUnsubscribed,
    };
    let (s, cmds) = step(s, T0 + 5, compaction_started(Auto, T0 + 5));
    assert_eq!(s.pending_compaction_ping, ping(Auto, T0 + 5));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r44_start_on_a_terminal_done_is_a_noop() {
    let stopped = settle(interrupting(T0), &[(T0 + 1, turn_end())]);
    for s in [done_errored(T0), stopped] {
        assert_eq!(
            unchanged(s, T0 + 5, compaction_started(Auto, T0 + 5)),
            vec![]
        );
    }
}

#[test]
fn r45_boundary_ends_the_compaction_and_records_its_own_time() {
    let s = settle(
        streaming(T0),
        &[(T0 + 10, compaction_started(Auto, T0 + 10))],
    );
    let (s, cmds) = step(s, T0 + 50, boundary(Auto, T0 + 50, Some(T0 + 45)));
    assert_eq!(s.compacting, None);
    assert_eq!(s.last_compaction_boundary_at, Some(T0 + 45));
    assert_eq!(s.last_event_ms, Some(T0 + 50));
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 50));
    assert_eq!(s.compactions, 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r45_boundary_older_than_a_running_compaction_preserves_the_newer_one() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 20, tokens_in(120_000, Some("claude-opus-4"))),
            (T0 + 60, compaction_started(Auto, T0 + 60)),
        ],
    );
    let reading = s.context.clone();
    let (s, cmds) = step(s, T0 + 70, boundary(Auto, T0 + 70, Some(T0 + 45)));
    assert_eq!(s.compacting, ping(Auto, T0 + 60));
    assert_eq!(
        s.context, reading,
        "preservesNewer also keeps the reading (R52)"
    );
    assert_eq!(s.last_compaction_boundary_at, Some(T0 + 45));
    assert_eq!(s.compactions, 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r45_boundary_without_a_frame_timestamp_uses_at_and_clears_compacting() {
    let s = settle(
        streaming(T0),
        &[(T0 + 60, compaction_started(Auto, T0 + 60))],
    );
    let (s, _) = step(s, T0 + 70, boundary(Auto, T0 + 70, None));
    assert_eq!(s.compacting, None);
    assert_eq!(s.last_compaction_boundary_at, Some(T0 + 70));
}

#[test]
fn r45_boundary_clears_a_ping_it_covers_and_keeps_a_newer_one() {
    let (s, _) = step(
        idle_with_ping(),
        T0 + 30,
        boundary(Auto, T0 + 30, Some(T0 + 10)),
    );
    assert_eq!(
        s.pending_compaction_ping, None,
        "boundary time equal to the ping's start"
    );
    let (s, _) = step(
        idle_with_ping(),
        T0 + 30,
        boundary(Auto, T0 + 30, Some(T0 + 5)),
    );
    assert_eq!(
        s.pending_compaction_ping,
        ping(Auto, T0 + 10),
        "the ping is newer"
    );
    let (s, _) = step(idle_with_ping(), T0 + 30, boundary(Auto, T0 + 30, None));
    assert_eq!(
        s.pending_compaction_ping, None,
        "without a frame time, `at` decides"
    );
}

#[test]
fn r45_boundary_without_any_start_still_counts_the_compaction() {
    let (s, cmds) = step(subscribed_ready(T0), T0 + 3, boundary(Manual, T0 + 3, None));
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(s.compactions, 1);
    assert_eq!(s.last_compaction_boundary_at, Some(T0 + 3));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r14_r45_manual_compact_turn_ends_at_its_boundary() {
    // The catalog could not confirm a turn end here; a user sees the turn end, so it ends like
    // any other: done, completed and counted.
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, turn_start_with(T0 + 1, "/compact")),
            (T0 + 2, flush(1, T0 + 2)),
            (T0 + 3, compaction_started(Manual, T0 + 3)),
            (T0 + 4, tool_start("Compact", None)),
            (T0 + 5, tokens_in(150_000, Some("claude-opus-4"))),
        ],
    );
    assert!(s.pending_compact_turn);
    let (s, cmds) = step(s, T0 + 40, boundary(Manual, T0 + 40, None));
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 40));
    assert!(!s.pending_compact_turn);
    assert_eq!(s.compacting, None);
    assert_eq!((s.turns_completed, s.compactions), (1, 1));
    assert_eq!(s.turn_tokens, None);
    assert_eq!((&s.current_tool, &s.current_tool_arg), (&None, &None));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r45_manual_boundary_of_a_compact_turn_being_stopped_ends_it_stopped() {
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, turn_start_with(T0 + 1, "/compact")),
            (T0 + 2, Msg::RequestStop { at: T0 + 2 }),
        ],
    );
    let (s, cmds) = step(s, T0 + 3, boundary(Manual, T0 + 3, None));
    assert_eq!(s.turn_phase, done(TurnOutcome::Stopped, T0 + 3));
    // A stopped turn is not a completed one; the compaction still counts.
    assert_eq!((s.turns_completed, s.compactions), (0, 1));
    assert_eq!(
        cmds,
        vec![
            // The turn left Interrupting: its interrupt timer no longer matters.
            cancel(DeadlineKind::Interrupt, 1),
        ]
    );
}

#[test]
fn r45_auto_boundary_during_a_compact_turn_leaves_the_phase() {
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, turn_start_with(T0 + 1, "/compact")),
            (T0 + 2, flush(1, T0 + 2)),
        ],
    );
    let (s, cmds) = step(s, T0 + 3, boundary(Auto, T0 + 3, None));
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 3));
    assert!(s.pending_compact_turn);
    assert_eq!(s.compactions, 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r45_manual_boundary_during_an_unrelated_turn_leaves_the_phase() {
    let (s, cmds) = step(streaming(T0), T0 + 3, boundary(Manual, T0 + 3, None));
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 3));
    assert_eq!(s.compactions, 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r43_order_start_boundary_turn_end() {
    let (s, cmds) = run(
        streaming(T0),
        &[
            (T0 + 10, compaction_started(Auto, T0 + 10)),
            (T0 + 50, boundary(Auto, T0 + 50, Some(T0 + 48))),
            (T0 + 60, turn_end()),
        ],
    );
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 60));
    assert_eq!((s.compacting, s.pending_compaction_ping), (None, None));
    assert_eq!((s.turns_completed, s.compactions), (1, 1));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r43_order_boundary_before_its_own_start_then_turn_end() {
    let (s, cmds) = run(
        streaming(T0),
        &[
            (T0 + 50, boundary(Auto, T0 + 50, Some(T0 + 48))),
            (T0 + 51, compaction_started(Auto, T0 + 10)),
            (T0 + 60, turn_end()),
        ],
    );
    assert_eq!(
        s.compacting, None,
        "the late start must not show a compaction that ended"
    );
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 60));
    assert_eq!((s.turns_completed, s.compactions), (1, 1));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r43_order_start_turn_end_boundary() {
    let (s, cmds) = run(
        streaming(T0),
        &[
            (T0 + 10, compaction_started(Auto, T0 + 10)),
            (T0 + 20, turn_end()),
            (T0 + 50, boundary(Auto, T0 + 50, Some(T0 + 48))),
        ],
    );
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 20));
    assert_eq!((s.compacting, s.pending_compaction_ping), (None, None));
    assert_eq!(s.last_compaction_boundary_at, Some(T0 + 48));
    assert_eq!((s.turns_completed, s.compactions), (1, 1));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r43_order_turn_end_start_reconcile_promotes_the_buffered_ping() {
    let (s, cmds) = run(
        streaming(T0),
        &[
            (T0 + 20, turn_end()),
            (T0 + 30, compaction_started(Auto, T0 + 30)),
            (
                T0 + 31,
                Msg::ReconcileTurnActive {
                    at: T0 + 31,
                    active: true,
                },
            ),
        ],
    );
    assert_eq!(s.turn_phase, streaming_phase(0, 0, T0 + 31));
    assert_eq!(s.compacting, ping(Auto, T0 + 30));
    assert_eq!(s.pending_compaction_ping, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r43_order_turn_end_start_boundary_discards_the_ping() {
    let (s, _) = run(
        streaming(T0),
        &[
            (T0 + 20, turn_end()),
            (T0 + 30, compaction_started(Auto, T0 + 30)),
            (T0 + 60, boundary(Auto, T0 + 60, Some(T0 + 58))),
            (
                T0 + 61,
                Msg::ReconcileTurnActive {
                    at: T0 + 61,
                    active: true,
                },
            ),
        ],
    );
    assert_eq!(s.pending_compaction_ping, None);
    assert_eq!(
        s.compacting, None,
        "a finished compaction is not shown again"
    );
}

#[test]
fn r46_flush_promotion_applies_the_buffered_ping() {
    let (s, cmds) = step(idle_with_ping(), T0 + 20, flush(2, T0 + 20));
    assert_eq!(s.turn_phase, streaming_phase(2, 0, T0 + 20));
    assert_eq!(s.compacting, ping(Auto, T0 + 10));
    assert_eq!(s.pending_compaction_ping, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r46_flush_while_already_streaming_does_not_use_up_the_ping() {
    let (s, cmds) = step(streaming_with_ping(), T0 + 20, flush(2, T0 + 20));
    assert_eq!(s.pending_compaction_ping, ping(Auto, T0 + 10));
    assert_eq!(s.compacting, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r47_reconcile_inactive_always_discards_the_ping() {
    let (s, cmds) = step(
        idle_with_ping(),
        T0 + 20,
        Msg::ReconcileTurnActive {
            at: T0 + 20,
            active: false,
        },
    );
    assert_eq!(s.pending_compaction_ping, None);
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r47_turn_start_end_reset_start_failed_and_idle_unsubscribe_discard_the_ping() {
    let discards: Vec<Msg> = vec![
        turn_start(T0 + 20),
        turn_end(),
        Msg::TurnReset,
        Msg::TurnStartFailed,
        Msg::StreamUnsubscribe { at: T0 + 20 },
    ];
    for msg in discards {
        let kind = msg.kind();
        let (s, _) = step(idle_with_ping(), T0 + 20, msg);
        assert_eq!(
            s.pending_compaction_ping, None,
            "{kind} must discard the ping"
        );
        assert_eq!(s.compacting, None, "{kind} must not promote the ping");
    }
}

#[test]
fn r47_turn_end_while_disconnected_only_discards_the_ping() {
    let mut s = settle(
        streaming(T0),
        &[(T0 + 1, Msg::StreamUnsubscribe { at: T0 + 1 })],
    );
    s.pending_compaction_ping = ping(Auto, T0 + 2);
    let (after, cmds) = step(s.clone(), T0 + 3, turn_end());
    let mut expected = s;
    expected.now_ms = T0 + 3;
    expected.pending_compaction_ping = None;
    assert_eq!(after, expected);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r47_failure_timeouts_and_unsubscribe_ending_a_turn_discard_the_ping() {
    let (s, _) = step(
        streaming_with_ping(),
        T0 + 20,
        Msg::FailureObserved {
            failure: failure(FailureKind::Overloaded),
            at: T0 + 20,
        },
    );
    assert_eq!(s.pending_compaction_ping, None);
    let s = settle(
        streaming_with_ping(),
        &[(T0 + 20, Msg::RequestStop { at: T0 + 20 })],
    );
    let (s, _) = step(s, T0 + 5_020, interrupt_elapsed());
    assert_eq!(s.pending_compaction_ping, None);
    let mut s = submitting(T0);
    s.pending_compaction_ping = ping(Auto, T0);
    let (s, _) = step(s, T0 + 30_000, submit_elapsed());
    assert_eq!(s.pending_compaction_ping, None);
    let (s, _) = step(
        streaming_with_ping(),
        T0 + 20,
        Msg::StreamUnsubscribe { at: T0 + 20 },
    );
    assert_eq!(s.pending_compaction_ping, None);
}

#[test]
fn r47_failure_after_the_turn_ended_keeps_the_ping() {
    let (s, cmds) = step(
        idle_with_ping(),
        T0 + 20,
        Msg::FailureObserved {
            failure: failure(FailureKind::Overloaded),
            at: T0 + 20,
        },
    );
    assert_eq!(s.pending_compaction_ping, ping(Auto, T0 + 10));
    assert_eq!(
        s.failure.as_ref().map(|f| f.failure.kind),
        Some(FailureKind::Overloaded)
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r48_compacting_is_cleared_by_every_turn_ending_message() {
    let compacting = settle(
        streaming(T0),
        &[(T0 + 10, compaction_started(Auto, T0 + 10))],
    );
    let clears: Vec<(u64, Msg)> = vec![
        (T0 + 20, turn_end()),
        (T0 + 20, Msg::TurnReset),
        (T0 + 20, Msg::TurnStartFailed),
        (T0 + 20, Msg::StreamUnsubscribe { at: T0 + 20 }),
        (
            T0 + 20,
            Msg::FailureObserved {
                failure: failure(FailureKind::ServerError),
                at: T0 + 20,
            },
        ),
        (
            T0 + 20,
            Msg::ReconcileTurnActive {
                at: T0 + 20,
                active: false,
            },
        ),
    ];
    for (now, msg) in clears {
        let kind = msg.kind();
        let (s, _) = step(compacting.clone(), now, msg);
        assert_eq!(s.compacting, None, "{kind} must clear compacting");
    }
    let stopping = settle(
        compacting.clone(),
        &[(T0 + 20, Msg::RequestStop { at: T0 + 20 })],
    );
    assert_eq!(
        stopping.compacting,
        ping(Auto, T0 + 10),
        "a stop might fail"
    );
    let (s, _) = step(stopping, T0 + 5_020, interrupt_elapsed());
    assert_eq!(s.compacting, None);
    let mut s = submitting(T0);
    s.compacting = ping(Auto, T0);
    let (s, _) = step(s, T0 + 30_000, submit_elapsed());
    assert_eq!(s.compacting, None);
}

#[test]
fn r48_a_failure_that_ends_no_turn_leaves_compacting_alone() {
    let mut s = done_completed(T0);
    s.compacting = ping(Auto, T0);
    let (s, _) = step(
        s,
        T0 + 1,
        Msg::FailureObserved {
            failure: failure(FailureKind::Auth),
            at: T0 + 1,
        },
    );
    assert_eq!(s.compacting, ping(Auto, T0));
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0));
}

#[test]
fn r49_heuristic_reports_a_drop_below_half_of_a_live_reading() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(100_000, Some("claude-opus-4")))],
    );
    let (s, cmds) = step(s, T0 + 2, tokens_in(40_000, None));
    assert_eq!(s.compactions, 1);
    assert_eq!(s.context.as_ref().map(|r| r.tokens), Some(40_000));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r49_heuristic_needs_a_drop_strictly_below_half() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(100_000, Some("claude-opus-4")))],
    );
    let (s, cmds) = step(s, T0 + 2, tokens_in(50_000, None));
    assert_eq!(s.compactions, 0);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r49_heuristic_needs_a_baseline_above_ten_thousand() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(10_000, Some("claude-opus-4")))],
    );
    let (s, cmds) = step(s, T0 + 2, tokens_in(1_000, None));
    assert_eq!(s.compactions, 0);
    assert_eq!(cmds, vec![]);
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(10_001, Some("claude-opus-4")))],
    );
    let (s, cmds) = step(s, T0 + 2, tokens_in(5_000, None));
    assert_eq!(s.compactions, 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r49_a_history_seed_is_never_a_heuristic_baseline() {
    let s = settle(
        streaming(T0),
        &[(
            T0,
            Msg::ReconcileContextFromHistory {
                tokens: Some(100_000),
                model: Some("claude-opus-4".into()),
                at: Some(T0 - 1_000),
                reported_windows: BTreeMap::new(),
            },
        )],
    );
    let (s, cmds) = step(s, T0 + 2, tokens_in(20_000, None));
    assert_eq!(s.compactions, 0);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r49_an_implausible_reading_is_never_a_heuristic_baseline() {
    // No model and more tokens than any window: implausible, so not a baseline.
    let s = settle(streaming(T0), &[(T0 + 1, tokens_in(2_000_000, None))]);
    let (s, cmds) = step(s, T0 + 2, tokens_in(20_000, None));
    assert_eq!(s.compactions, 0);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r49_heuristic_is_suppressed_for_two_minutes_after_a_real_boundary() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 10, boundary(Auto, T0 + 10, Some(T0 + 10))),
            (T0 + 20, tokens_in(100_000, Some("claude-opus-4"))),
        ],
    );
    // The boundary counted once; a drop inside the window does not count again.
    let (within, cmds) = step(s.clone(), T0 + 10 + 119_999, tokens_in(30_000, None));
    assert_eq!(within.compactions, 1);
    assert_eq!(cmds, vec![]);
    let (after, cmds) = step(s, T0 + 10 + 120_000, tokens_in(30_000, None));
    assert_eq!(after.compactions, 2);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r49_r52_first_tokens_after_a_boundary_have_no_baseline() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tokens_in(100_000, Some("claude-opus-4"))),
            (T0 + 200_000, boundary(Auto, T0 + 200_000, None)),
        ],
    );
    assert_eq!(s.context, None);
    // Far past the suppression window, yet nothing to compare with.
    let (s, cmds) = step(s, T0 + 900_000, tokens_in(20_000, None));
    assert_eq!(s.compactions, 1, "the boundary only");
    assert_eq!(cmds, vec![]);
    assert_eq!(s.context.as_ref().map(|r| r.tokens), Some(20_000));
}

#[test]
fn r52_a_reading_taken_after_the_boundary_completed_survives_it() {
    // The boundary frame completed at T0 + 50 but arrived late, after a newer call's reading.
    let s = settle(
        streaming(T0),
        &[(T0 + 100, tokens_in(30_000, Some("claude-opus-4")))],
    );
    let reading = s.context.clone();
    let (s, _) = step(s, T0 + 120, boundary(Auto, T0 + 120, Some(T0 + 50)));
    assert_eq!(s.context, reading);
    assert!(!s.context_seedable);
}

#[test]
fn r52_a_boundary_never_invents_a_reading() {
    let (s, _) = step(streaming(T0), T0 + 1, boundary(Auto, T0 + 1, None));
    assert_eq!(s.context, None);
}

#[test]
fn r14_r43_a_compact_turn_promoted_again_after_its_turn_end_still_ends_at_its_boundary() {
    // The result (TurnEnd) can overtake the boundary, and a late "turn active" can promote the
    // same turn again; only the boundary or the next TurnStart resets the compact-turn flag
    // (R14), so the boundary still ends the turn instead of leaving "Working…" up.
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, turn_start_with(T0 + 1, "/compact")),
            (T0 + 20, turn_end()),
            (
                T0 + 21,
                Msg::ReconcileTurnActive {
                    at: T0 + 21,
                    active: true,
                },
            ),
        ],
    );
    assert!(s.pending_compact_turn);
    assert_eq!(s.turn_phase, streaming_phase(0, 0, T0 + 21));
    let (s, cmds) = step(s, T0 + 30, boundary(Manual, T0 + 30, None));
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 30));
    assert!(!s.pending_compact_turn);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r14_a_late_compact_boundary_does_not_end_the_next_turn() {
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, turn_start_with(T0 + 1, "/compact")),
            (T0 + 20, turn_end()),
            (T0 + 25, turn_start_with(T0 + 25, "thanks, now continue")),
            (T0 + 26, flush(1, T0 + 26)),
        ],
    );
    let (s, _) = step(s, T0 + 30, boundary(Manual, T0 + 30, None));
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 30));
}

/// R110, R111: the window stage's stand-down is a fact of the session until the stage engages
/// again or a new turn starts. Each row: the messages after a working turn, and the fact after.
#[test]
fn r110_r111_the_window_stand_down_holds_until_the_stage_engages_or_a_turn_starts() {
    use panewise_pane_state::WindowStandDown;
    let stood = |floor_tokens, at| Msg::WindowStoodDown {
        floor_tokens,
        threshold_tokens: 1,
        at,
    };
    let fact = |floor_tokens, since| {
        Some(WindowStandDown {
            floor_tokens,
            threshold_tokens: 1,
            since,
        })
    };
    type Row = (&'static str, Vec<(u64, Msg)>, Option<WindowStandDown>);
    let rows: Vec<Row> = vec![
        (
            "R110 a stand-down is a fact",
            vec![(T0 + 1, stood(1_869, T0 + 1))],
            fact(1_869, T0 + 1),
        ),
        (
            "R110 the latest stand-down replaces the earlier",
            vec![
                (T0 + 1, stood(1_869, T0 + 1)),
                (T0 + 2, stood(2_000, T0 + 2)),
            ],
            fact(2_000, T0 + 2),
        ),
        (
            "R111 the stage engaged again",
            vec![
                (T0 + 1, stood(1_869, T0 + 1)),
                (T0 + 2, Msg::WindowResumed { at: T0 + 2 }),
            ],
            None,
        ),
        (
            "R111 the turn ending keeps it",
            vec![(T0 + 1, stood(1_869, T0 + 1)), (T0 + 2, turn_end())],
            fact(1_869, T0 + 1),
        ),
        (
            "R111 a new turn starts",
            vec![
                (T0 + 1, stood(1_869, T0 + 1)),
                (T0 + 2, turn_end()),
                (T0 + 3, turn_start(T0 + 3)),
            ],
            None,
        ),
    ];
    for (rule, msgs, expected) in rows {
        let state = settle(streaming(T0), &msgs);
        assert_eq!(state.window_stood_down, expected, "{rule}");
    }
}
