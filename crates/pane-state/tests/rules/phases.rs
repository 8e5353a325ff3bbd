//! Part B.1–B.5: the turn phase machine (R21–R38).

use panewise_pane_state::state::{
    DisconnectReason, InitPhase, InterruptReason, WaitingReason, WorkingKind,
};
use panewise_pane_state::{
    step, Cmd, CompactionTrigger, FailureKind, Msg, State, TurnId, TurnOutcome, TurnPhase,
};

use crate::support::*;

fn all_phases() -> Vec<TurnPhase> {
    vec![
        TurnPhase::Idle,
        TurnPhase::Submitting {
            submitted_at: T0,
            pending_content: "hi".into(),
        },
        streaming_phase(0, 0, T0),
        interrupting_phase(T0),
        done(TurnOutcome::Completed, T0),
        done(TurnOutcome::Stopped, T0),
        done(TurnOutcome::Interrupted, T0),
        done(TurnOutcome::Errored, T0),
        TurnPhase::Disconnected {
            last_kind: WorkingKind::Streaming,
            last_connected_at: T0,
            reason: DisconnectReason::StreamUnsubscribed,
        },
    ]
}

/// A subscribed, ready pane forced into `phase`, for table rows the messages cannot reach
/// directly (for example Disconnected while subscribed).
fn in_phase(phase: TurnPhase) -> State {
    let mut s = subscribed_ready(T0);
    s.turn_phase = phase;
    s
}

#[test]
fn r21_r22_working_means_submitting_streaming_or_interrupting() {
    let working: Vec<&str> = all_phases()
        .iter()
        .filter(|p| p.is_working())
        .map(TurnPhase::kind_name)
        .collect();
    assert_eq!(working, vec!["submitting", "streaming", "interrupting"]);
}

#[test]
fn r22_init_ready_only_for_init_ready() {
    let mut s = fresh();
    assert!(!s.is_init_ready());
    s.init_phase = InitPhase::InitFailed {
        at: T0,
        reason: "x".into(),
    };
    assert!(!s.is_init_ready());
    s.init_phase = InitPhase::InitReady { at: T0 };
    assert!(s.is_init_ready());
}

#[test]
fn r23_activity_promotable_is_submitting_idle_disconnected_and_done_completed() {
    let promotable: Vec<TurnPhase> = all_phases()
        .into_iter()
        .filter(TurnPhase::is_activity_promotable)
        .collect();
    let expected = vec![
        TurnPhase::Idle,
        TurnPhase::Submitting {
            submitted_at: T0,
            pending_content: "hi".into(),
        },
        done(TurnOutcome::Completed, T0),
        all_phases().pop().unwrap(),
    ];
    assert_eq!(promotable, expected);
}

#[test]
fn r23_reconcile_promotable_is_only_idle_and_done_completed() {
    let promotable: Vec<TurnPhase> = all_phases()
        .into_iter()
        .filter(TurnPhase::is_reconcile_promotable)
        .collect();
    assert_eq!(
        promotable,
        vec![TurnPhase::Idle, done(TurnOutcome::Completed, T0)]
    );
}

#[test]
fn r23_terminal_done_and_interrupting_are_never_promoted_by_activity() {
    for phase in [
        done(TurnOutcome::Stopped, T0),
        done(TurnOutcome::Errored, T0),
        done(TurnOutcome::Interrupted, T0),
        interrupting_phase(T0),
    ] {
        let (s, _) = step(in_phase(phase.clone()), T0 + 1, tool_start("Bash", None));
        assert_eq!(s.turn_phase, phase);
        let (s, _) = step(s, T0 + 2, flush(1, T0 + 2));
        assert_eq!(s.turn_phase, phase);
        let (s, _) = step(
            s,
            T0 + 3,
            Msg::ReconcileTurnActive {
                at: T0 + 3,
                active: true,
            },
        );
        assert_eq!(s.turn_phase, phase);
    }
}

#[test]
fn r24_timing_constants_match_the_catalog() {
    use panewise_pane_state::reducer::*;
    assert_eq!(STUCK_THRESHOLD_MS, 45_000);
    assert_eq!(LIVENESS_RECOVERY_MS, 180_000);
    assert_eq!(INTERRUPT_TIMEOUT_MS, 5_000);
    assert_eq!(SUBMIT_TIMEOUT_MS, 30_000);
    assert_eq!(COMPACTION_HEURISTIC_SUPPRESS_MS, 120_000);
    assert_eq!(HEURISTIC_BASELINE_FLOOR, 10_000);
    assert_eq!(panewise_pane_state::ledger::HELD_FLUSH_JOIN_MS, 10_000);
    assert_eq!(panewise_pane_state::state::CHARS_PER_TOKEN, 4);
    assert_eq!(
        panewise_pane_state::context::WINDOW_TIERS,
        [200_000, 1_000_000]
    );
    assert_eq!(
        panewise_pane_state::context::MAX_KNOWN_CONTEXT_WINDOW,
        1_000_000
    );
    assert_eq!(panewise_pane_state::context::AUTO_COMPACT_BUFFER, 33_000);
}

#[test]
fn r25_bump_while_unsubscribed_only_edits_fields() {
    let s = fresh();
    let (s, cmds) = step(s, T0, tool_start("Bash", Some("ls")));
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(s.last_event_ms, None);
    assert_eq!(s.current_tool.as_deref(), Some("Bash"));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r25_bump_on_streaming_refreshes_counts_tools_and_clears_waiting() {
    let s = settle(
        streaming(T0),
        &[(
            T0 + 1,
            Msg::ProviderWaiting {
                reason: WaitingReason::RateLimited,
                retry_after_ms: Some(9_000),
                at: T0 + 1,
            },
        )],
    );
    let (s, _) = step(s, T0 + 5, tool_start("Bash", None));
    assert_eq!(s.turn_phase, streaming_phase(1, 1, T0 + 5));
    assert_eq!(s.last_event_ms, Some(T0 + 5));
    let (s, _) = step(s, T0 + 6, tool_start("Read", None));
    let (s, _) = step(s, T0 + 7, tool_end());
    assert_eq!(s.turn_phase, streaming_phase(1, 1, T0 + 7));
}

#[test]
fn r25_bump_promotes_idle_to_streaming_with_buffer_size_and_delta() {
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, flush(4, T0 + 1)),
            (
                T0 + 2,
                Msg::ReconcileTurnActive {
                    at: T0 + 2,
                    active: false,
                },
            ),
        ],
    );
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    let (s, cmds) = step(s, T0 + 3, tool_start("Bash", None));
    assert_eq!(s.turn_phase, streaming_phase(4, 1, T0 + 3));
    assert_eq!(s.current_tool.as_deref(), Some("Bash"));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r25_r37_tool_end_promoting_a_phase_starts_with_zero_tools() {
    let (s, _) = step(subscribed_ready(T0), T0 + 1, tool_end());
    assert_eq!(s.turn_phase, streaming_phase(0, 0, T0 + 1));
}

#[test]
fn r25_tokens_promote_done_completed_and_submitting() {
    let (s, cmds) = step(done_completed(T0), T0 + 1, tokens_out(3));
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 1));
    assert_eq!(s.turn_tokens.as_ref().map(|t| t.output), Some(3));
    assert_eq!(cmds, vec![]);
    let (s, _) = step(submitting(T0), T0 + 1, tokens_in(2_000, None));
    assert_eq!(s.turn_phase, streaming_phase(0, 0, T0 + 1));
}

#[test]
fn r25_bump_while_interrupting_moves_the_gate_but_not_the_phase() {
    let (s, _) = step(interrupting(T0), T0 + 9, tool_start("Bash", None));
    assert_eq!(s.turn_phase, interrupting_phase(T0));
    assert_eq!(s.last_event_ms, Some(T0 + 9));
}

#[test]
fn r25_subscribe_promotes_submitting_to_streaming_with_buffer_size() {
    let mut s = submitting(T0);
    s.streaming.buffer_size = 12;
    let (s, cmds) = step(s, T0 + 3, Msg::StreamSubscribe { at: T0 + 3 });
    assert_eq!(s.turn_phase, streaming_phase(12, 0, T0 + 3));
    assert_eq!(cmds, vec![cancel(DeadlineKind::Submit, 1)]);
}

#[test]
fn r25_subscribe_refreshes_streaming_and_leaves_interrupting_and_done() {
    let (s, _) = step(streaming(T0), T0 + 3, Msg::StreamSubscribe { at: T0 + 3 });
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 3));
    for phase in [
        interrupting_phase(T0),
        done(TurnOutcome::Errored, T0),
        done(TurnOutcome::Completed, T0),
        TurnPhase::Idle,
    ] {
        let (s, _) = step(
            in_phase(phase.clone()),
            T0 + 3,
            Msg::StreamSubscribe { at: T0 + 3 },
        );
        assert_eq!(s.turn_phase, phase);
        assert_eq!(s.last_event_ms, Some(T0 + 3));
    }
}

#[test]
fn r25_resubscribe_after_a_disconnect_returns_to_idle() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, Msg::StreamUnsubscribe { at: T0 + 1 })],
    );
    let (s, cmds) = step(s, T0 + 2, Msg::StreamSubscribe { at: T0 + 2 });
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(s.last_event_ms, Some(T0 + 2));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r25_working_unsubscribe_disconnects_and_clears_the_turn_activity() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tool_start("Bash", Some("make"))),
            (T0 + 2, tokens_in(5_000, None)),
            (T0 + 3, compaction_started(CompactionTrigger::Auto, T0 + 3)),
        ],
    );
    let (s, cmds) = step(s, T0 + 4, Msg::StreamUnsubscribe { at: T0 + 4 });
    assert_eq!(
        s.turn_phase,
        TurnPhase::Disconnected {
            last_kind: WorkingKind::Streaming,
            last_connected_at: T0 + 3,
            reason: DisconnectReason::StreamUnsubscribed,
        }
    );
    assert_eq!((&s.current_tool, &s.current_tool_arg), (&None, &None));
    assert_eq!(s.turn_tokens, None);
    assert_eq!(s.compacting, None);
    assert_eq!(s.last_event_ms, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r25_unsubscribe_records_submitting_and_interrupting_as_last_kind() {
    let (s, _) = step(
        submitting(T0),
        T0 + 1,
        Msg::StreamUnsubscribe { at: T0 + 1 },
    );
    assert!(matches!(
        s.turn_phase,
        TurnPhase::Disconnected {
            last_kind: WorkingKind::Submitting,
            ..
        }
    ));
    let (s, _) = step(
        interrupting(T0),
        T0 + 1,
        Msg::StreamUnsubscribe { at: T0 + 1 },
    );
    assert!(matches!(
        s.turn_phase,
        TurnPhase::Disconnected {
            last_kind: WorkingKind::Interrupting,
            ..
        }
    ));
}

#[test]
fn r25_flush_promotes_idle_submitting_done_completed_and_disconnected() {
    let disconnected = TurnPhase::Disconnected {
        last_kind: WorkingKind::Streaming,
        last_connected_at: T0,
        reason: DisconnectReason::StreamUnsubscribed,
    };
    for phase in [
        TurnPhase::Idle,
        TurnPhase::Submitting {
            submitted_at: T0,
            pending_content: String::new(),
        },
        done(TurnOutcome::Completed, T0),
        disconnected,
    ] {
        let (s, cmds) = step(in_phase(phase), T0 + 2, flush(2, T0 + 2));
        assert_eq!(s.turn_phase, streaming_phase(2, 0, T0 + 2));
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r25_flush_on_streaming_updates_buffer_and_time_and_clears_waiting() {
    let mut s = streaming(T0);
    if let TurnPhase::Streaming {
        waiting_reason,
        retry_after_ms,
        ..
    } = &mut s.turn_phase
    {
        *waiting_reason = Some(WaitingReason::RateLimited);
        *retry_after_ms = Some(1_000);
    }
    let (s, _) = step(s, T0 + 4, flush(3, T0 + 4));
    assert_eq!(s.turn_phase, streaming_phase(4, 0, T0 + 4));
}

#[test]
fn r25_flush_leaves_interrupting_and_terminal_done() {
    for phase in [interrupting_phase(T0), done(TurnOutcome::Stopped, T0)] {
        let (s, cmds) = step(in_phase(phase.clone()), T0 + 2, flush(2, T0 + 2));
        assert_eq!(s.turn_phase, phase);
        assert_eq!(s.streaming.buffer_size, 2);
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r25_reconcile_active_promotes_idle_and_done_completed_with_zero_buffer() {
    for phase in [TurnPhase::Idle, done(TurnOutcome::Completed, T0)] {
        let mut s = in_phase(phase);
        s.streaming.buffer_size = 9;
        let (s, cmds) = step(
            s,
            T0 + 5,
            Msg::ReconcileTurnActive {
                at: T0 + 5,
                active: true,
            },
        );
        assert_eq!(s.turn_phase, streaming_phase(0, 0, T0 + 5));
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r25_r26_reconcile_active_leaves_submitting_streaming_and_disconnected_unchanged() {
    let disconnected = TurnPhase::Disconnected {
        last_kind: WorkingKind::Submitting,
        last_connected_at: T0,
        reason: DisconnectReason::StreamUnsubscribed,
    };
    for s in [submitting(T0), streaming(T0), in_phase(disconnected)] {
        let cmds = unchanged(
            s,
            T0 + 5,
            Msg::ReconcileTurnActive {
                at: T0 + 5,
                active: true,
            },
        );
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r25_reconcile_inactive_demotes_streaming_and_keeps_turn_tokens() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tool_start("Bash", Some("ls"))),
            (T0 + 2, tokens_in(4_000, None)),
            (T0 + 3, compaction_started(CompactionTrigger::Auto, T0 + 3)),
        ],
    );
    let tokens = s.turn_tokens.clone();
    let (s, cmds) = step(
        s,
        T0 + 4,
        Msg::ReconcileTurnActive {
            at: T0 + 4,
            active: false,
        },
    );
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!((&s.current_tool, &s.current_tool_arg), (&None, &None));
    assert_eq!(s.compacting, None);
    assert_eq!(s.turn_tokens, tokens);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r26_reconcile_inactive_on_a_quiet_pane_returns_the_same_state_without_events() {
    for s in [
        subscribed_ready(T0),
        submitting(T0),
        interrupting(T0),
        done_completed(T0),
    ] {
        let cmds = unchanged(
            s,
            T0 + 1,
            Msg::ReconcileTurnActive {
                at: T0 + 1,
                active: false,
            },
        );
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r27_submit_deadline_is_armed_when_entering_submitting_and_kept_when_a_turn_replaces_it() {
    let (s, cmds) = step(subscribed_ready(T0), T0 + 1, turn_start(T0 + 1));
    assert_eq!(s.current_turn, Some(TurnId(1)));
    assert_eq!(cmds, vec![schedule(DeadlineKind::Submit, 1, T0 + 30_001),]);
    let (s, cmds) = step(s, T0 + 2, turn_start(T0 + 2));
    assert_eq!(s.current_turn, Some(TurnId(2)));
    // No new time: the deadline armed on entering Submitting stands (R27). It moves to the new
    // turn, so turn 1's timer cannot end turn 2 and turn 2 is still guarded.
    assert_eq!(
        cmds,
        vec![
            cancel(DeadlineKind::Submit, 1),
            schedule(DeadlineKind::Submit, 2, T0 + 30_001),
        ]
    );
    assert_eq!(
        s.turn_phase,
        TurnPhase::Submitting {
            submitted_at: T0 + 2,
            pending_content: String::new()
        }
    );
}

#[test]
fn r27_interrupt_deadline_is_scheduled_only_when_entering_interrupting() {
    let (s, cmds) = step(streaming(T0), T0 + 1, Msg::RequestStop { at: T0 + 1 });
    assert_eq!(s.turn_phase, interrupting_phase(T0 + 1));
    assert_eq!(
        cmds,
        vec![
            schedule(DeadlineKind::Interrupt, 1, T0 + 5_001),
            Cmd::InterruptAgent {
                turn: Some(TurnId(1))
            },
        ]
    );
    // A second stop arms nothing new; it escalates to a kill instead (R95).
    let (_, cmds) = step(s, T0 + 2, Msg::RequestStop { at: T0 + 2 });
    assert!(!cmds
        .iter()
        .any(|c| matches!(c, Cmd::ScheduleDeadline { .. })));
    assert!(cmds.contains(&kill(1)));
}

#[test]
fn r28_turn_start_suppressed_while_unsubscribed() {
    let s = settle(fresh(), &[(T0, Msg::InitReady { at: T0 })]);
    let cmds = unchanged(s, T0 + 1, turn_start(T0 + 1));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r29_turn_start_suppressed_while_init_pending() {
    let s = settle(fresh(), &[(T0, Msg::StreamSubscribe { at: T0 })]);
    let cmds = unchanged(s, T0 + 1, turn_start(T0 + 1));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r29_init_failure_fails_open_and_turns_start() {
    let s = settle(
        fresh(),
        &[
            (T0, Msg::StreamSubscribe { at: T0 }),
            (
                T0,
                Msg::InitFailed {
                    at: T0,
                    reason: "history 500".into(),
                },
            ),
        ],
    );
    let (s, _) = step(s, T0 + 1, turn_start(T0 + 1));
    assert!(matches!(s.turn_phase, TurnPhase::Submitting { .. }));
}

#[test]
fn r30_flush_provider_waiting_and_compaction_start_are_noops_while_unsubscribed() {
    let s = settle(fresh(), &[(T0, Msg::InitReady { at: T0 })]);
    assert_eq!(unchanged(s.clone(), T0 + 1, flush(3, T0 + 1)), vec![]);
    let waiting = Msg::ProviderWaiting {
        reason: WaitingReason::RateLimited,
        retry_after_ms: Some(1_000),
        at: T0 + 1,
    };
    assert_eq!(unchanged(s.clone(), T0 + 1, waiting), vec![]);
    assert_eq!(
        unchanged(
            s,
            T0 + 1,
            compaction_started(CompactionTrigger::Auto, T0 + 1)
        ),
        vec![]
    );
}

#[test]
fn r30_deliberate_deviation_reconcile_active_does_not_promote_while_unsubscribed() {
    // The catalog lets ReconcileTurnActive ignore the gate; the crate keeps "no working phase
    // while unsubscribed" instead, so a pane without a stream never shows "Working…".
    let cmds = unchanged(
        fresh(),
        T0,
        Msg::ReconcileTurnActive {
            at: T0,
            active: true,
        },
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r30_reconcile_inactive_still_ignores_the_subscription_gate() {
    let mut s = streaming(T0);
    s.last_event_ms = None;
    let (s, cmds) = step(
        s,
        T0 + 1,
        Msg::ReconcileTurnActive {
            at: T0 + 1,
            active: false,
        },
    );
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r31_turn_start_effects() {
    let mut s = settle(
        streaming(T0),
        &[
            (T0 + 1, tokens_in(5_000, Some("claude-opus-4"))),
            (
                T0 + 2,
                Msg::TurnEnd {
                    stats: None,
                    turn: None,
                    interrupted: false,
                },
            ),
            (T0 + 3, Msg::DetailsExpand),
        ],
    );
    s.turn_tokens = Some(tokens(5_000, 42)); // a previous turn's tokens still waiting for its end
    let context = s.context.clone();
    let (s, cmds) = step(s, T0 + 10, turn_start_with(T0 + 10, "fix the bug"));
    assert_eq!(
        s.turn_phase,
        TurnPhase::Submitting {
            submitted_at: T0 + 10,
            pending_content: "fix the bug".into()
        }
    );
    assert_eq!(s.session_stats, None);
    assert_eq!(s.last_event_ms, Some(T0 + 10));
    assert_eq!(s.turn_tokens, Some(tokens(5_000, 42)));
    assert_eq!(s.context, context);
    assert!(s.details_open);
    assert_eq!(s.current_turn, Some(TurnId(2)));
    assert_eq!(
        cmds,
        vec![schedule(DeadlineKind::Submit, 2, T0 + 10 + 30_000),]
    );
}

#[test]
fn r31_turn_start_mid_turn_moves_a_streaming_turn_back_to_submitting() {
    let (s, cmds) = step(streaming(T0), T0 + 1, turn_start_with(T0 + 1, "also this"));
    assert_eq!(
        s.turn_phase,
        TurnPhase::Submitting {
            submitted_at: T0 + 1,
            pending_content: "also this".into()
        }
    );
    assert_eq!(cmds, vec![schedule(DeadlineKind::Submit, 2, T0 + 30_001),]);
}

#[test]
fn r32_turn_end_from_streaming_completes_at_the_injected_now() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tool_start("Bash", None)),
            (T0 + 2, tokens_in(3_000, None)),
        ],
    );
    let (s, cmds) = step(s, T0 + 7, turn_end());
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 7));
    // The live tokens became the turn's stats (R60).
    assert_eq!(
        s.session_stats
            .as_ref()
            .and_then(|stats| stats.input_tokens),
        Some(3_000)
    );
    assert_eq!(s.current_tool, None);
    assert_eq!(s.turn_tokens, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r32_turn_end_from_interrupting_is_stopped() {
    let (s, cmds) = step(interrupting(T0), T0 + 2, turn_end());
    assert_eq!(s.turn_phase, done(TurnOutcome::Stopped, T0 + 2));
    assert_eq!(cmds, vec![cancel(DeadlineKind::Interrupt, 1),]);
}

#[test]
fn r32_turn_end_from_idle_is_done_completed() {
    let (s, _) = step(subscribed_ready(T0), T0 + 2, turn_end());
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 2));
}

#[test]
fn r32_first_done_wins_and_only_stats_refresh() {
    let stats = panewise_pane_state::SessionStats {
        cost_usd: Some(0.1),
        ..Default::default()
    };
    let (s, cmds) = step(
        done_errored(T0),
        T0 + 9,
        Msg::TurnEnd {
            stats: Some(stats.clone()),
            turn: None,
            interrupted: false,
        },
    );
    assert_eq!(s.turn_phase, done(TurnOutcome::Errored, T0));
    assert_eq!(s.session_stats, Some(stats));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r32_turn_end_after_a_disconnect_changes_nothing() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, Msg::StreamUnsubscribe { at: T0 + 1 })],
    );
    let stats = panewise_pane_state::SessionStats {
        cost_usd: Some(0.1),
        ..Default::default()
    };
    let cmds = unchanged(
        s,
        T0 + 2,
        Msg::TurnEnd {
            stats: Some(stats),
            turn: None,
            interrupted: false,
        },
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r33_turn_reset_wipes_turn_and_session_state_and_keeps_the_rest() {
    let s = settle(
        streaming(T0),
        &[
            (T0, Msg::DetailsExpand),
            (T0, Msg::AttachedTaskObserved { at: T0 }),
            (
                T0,
                Msg::PendingMessageQueued {
                    id: "m".into(),
                    text: "t".into(),
                    at: T0,
                    enqueued_while_busy: true,
                },
            ),
            (T0 + 1, tool_start("Bash", Some("ls"))),
            (T0 + 2, tokens_in(5_000, Some("claude-opus-4"))),
            (
                T0 + 3,
                Msg::TurnEnd {
                    stats: Some(panewise_pane_state::SessionStats {
                        cost_usd: Some(1.0),
                        ..Default::default()
                    }),
                    turn: None,
                    interrupted: false,
                },
            ),
            (
                T0 + 4,
                Msg::FailureObserved {
                    failure: failure(FailureKind::Auth),
                    at: T0 + 4,
                },
            ),
            (
                T0 + 5,
                Msg::ReconcileTurnActive {
                    at: T0 + 5,
                    active: true,
                },
            ),
            (T0 + 6, compaction_started(CompactionTrigger::Auto, T0 + 6)),
        ],
    );
    let (after, cmds) = step(s.clone(), T0 + 7, Msg::TurnReset);
    assert_eq!(cmds, vec![]);
    assert_eq!(after.turn_phase, TurnPhase::Idle);
    assert_eq!(after.session_stats, None);
    assert_eq!(after.session_totals, None);
    assert_eq!(
        (after.current_tool.clone(), after.current_tool_arg.clone()),
        (None, None)
    );
    assert_eq!(after.turn_tokens, None);
    assert_eq!(after.compacting, None);
    assert_eq!(after.pending_compaction_ping, None);
    assert_eq!(after.context, None);
    assert!(!after.context_seedable);
    // Kept.
    assert_eq!(after.pending, s.pending);
    assert_eq!(after.streaming, s.streaming);
    assert_eq!(after.failure, s.failure);
    assert_eq!(after.attached_task, s.attached_task);
    assert_eq!(after.init_phase, s.init_phase);
    assert!(after.details_open);
    assert_eq!(after.last_event_ms, s.last_event_ms);
}

#[test]
fn r34_turn_start_failed_touches_only_phase_compaction_and_ping() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tokens_in(5_000, Some("claude-opus-4"))),
            (T0 + 2, compaction_started(CompactionTrigger::Auto, T0 + 2)),
            (T0 + 3, turn_start(T0 + 3)),
        ],
    );
    let (after, cmds) = step(s.clone(), T0 + 4, Msg::TurnStartFailed);
    let mut expected = s;
    expected.now_ms = T0 + 4;
    expected.turn_phase = TurnPhase::Idle;
    expected.compacting = None;
    expected.pending_compaction_ping = None;
    // Leaving Submitting also disarms its deadline, which is bookkeeping of the timer, not of
    // the turn's figures.
    expected.submit_deadline = None;
    assert_eq!(after, expected);
    assert_eq!(cmds, vec![cancel(DeadlineKind::Submit, 2)]);
}

#[test]
fn r35_submit_timeout_ends_a_submitting_turn_as_errored() {
    // A submitting turn holding leftovers: a tool chip, tokens, a compaction and a ping.
    let mut s = submitting(T0);
    s.current_tool = Some("Bash".into());
    s.turn_tokens = Some(tokens(10, 1));
    s.compacting = Some(panewise_pane_state::state::CompactionInProgress {
        trigger: CompactionTrigger::Auto,
        started_at: T0,
    });
    s.pending_compaction_ping = s.compacting;
    let (s, cmds) = step(s, T0 + 30_000, submit_elapsed());
    assert_eq!(s.turn_phase, done(TurnOutcome::Errored, T0 + 30_000));
    assert_eq!(s.current_tool, None);
    assert_eq!(s.turn_tokens, None);
    assert_eq!(s.compacting, None);
    assert_eq!(s.pending_compaction_ping, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r35_submit_timeout_outside_submitting_is_ignored() {
    for s in [
        streaming(T0),
        subscribed_ready(T0),
        interrupting(T0),
        done_completed(T0),
    ] {
        let cmds = unchanged(s, T0 + 30_000, submit_elapsed());
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r35_interrupt_timeout_ends_an_interrupting_turn_as_interrupted() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tool_start("Bash", None)),
            (T0 + 2, Msg::RequestStop { at: T0 + 2 }),
        ],
    );
    let (s, cmds) = step(s, T0 + 5_002, interrupt_elapsed());
    assert_eq!(s.turn_phase, done(TurnOutcome::Interrupted, T0 + 5_002));
    assert_eq!(s.current_tool, None);
    // The interrupt did not take, so the agent is killed (R95).
    assert_eq!(cmds, vec![kill(1),]);
}

#[test]
fn r35_interrupt_timeout_outside_interrupting_is_ignored() {
    // The stop took effect before the timer fired.
    let s = settle(interrupting(T0), &[(T0 + 1, turn_end())]);
    for s in [s, streaming(T0), submitting(T0)] {
        let cmds = unchanged(s, T0 + 5_000, interrupt_elapsed());
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r36_r95_repeated_stop_keeps_the_original_sigint_time_and_kills_the_agent() {
    let s = interrupting(T0);
    assert_eq!(s.turn_phase, interrupting_phase(T0));
    let armed = s.interrupt_deadline;
    let (s, cmds) = step(s, T0 + 3, Msg::RequestStop { at: T0 + 3 });
    // The phase and its deadline stay (R36); the second stop escalates at once (R95).
    assert_eq!(s.turn_phase, interrupting_phase(T0));
    assert_eq!(s.interrupt_deadline, armed);
    assert_eq!(cmds, vec![kill(1),]);
    // A third stop has nothing left to escalate.
    let cmds = unchanged(s, T0 + 4, Msg::RequestStop { at: T0 + 4 });
    assert_eq!(cmds, vec![]);
}

#[test]
fn r36_stop_while_not_working_changes_nothing() {
    for s in [subscribed_ready(T0), done_completed(T0), done_errored(T0)] {
        let cmds = unchanged(s, T0 + 3, Msg::RequestStop { at: T0 + 3 });
        assert_eq!(cmds, vec![]);
    }
}

#[test]
fn r36_stop_from_submitting_interrupts_for_the_user() {
    let (s, _) = step(submitting(T0), T0 + 1, Msg::RequestStop { at: T0 + 1 });
    assert_eq!(
        s.turn_phase,
        TurnPhase::Interrupting {
            reason: InterruptReason::User,
            sigint_sent_at: T0 + 1
        }
    );
}

#[test]
fn r37_tools_active_never_goes_below_zero() {
    let (s, cmds) = step(streaming(T0), T0 + 1, tool_end());
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 1));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r38_every_forced_exit_clears_the_tool_chip_and_only_some_clear_tokens() {
    let base = settle(
        streaming(T0),
        &[
            (T0 + 1, tool_start("Bash", Some("sleep 999"))),
            (T0 + 2, tokens_in(8_000, None)),
            (T0 + 3, tool_end()),
            (T0 + 4, tool_start("Bash", Some("sleep 999"))),
        ],
    );
    // Force tools_active to 0 so the watchdog can recover; the chip still shows.
    let mut quiet = base.clone();
    quiet.turn_phase = streaming_phase(1, 0, T0 + 4);
    let exits: Vec<(&str, State, u64, Msg, bool)> = vec![
        (
            "unsubscribe",
            base.clone(),
            T0 + 5,
            Msg::StreamUnsubscribe { at: T0 + 5 },
            false,
        ),
        (
            "failure",
            base.clone(),
            T0 + 5,
            Msg::FailureObserved {
                failure: failure(FailureKind::ServerError),
                at: T0 + 5,
            },
            false,
        ),
        (
            "reconcile",
            base.clone(),
            T0 + 5,
            Msg::ReconcileTurnActive {
                at: T0 + 5,
                active: false,
            },
            true,
        ),
        (
            "recovery",
            quiet,
            T0 + 4 + 180_000,
            Msg::StreamWatchdogTick,
            true,
        ),
    ];
    for (name, s, now, msg, keeps_tokens) in exits {
        let (s, _) = step(s, now, msg);
        assert!(!s.is_working(), "{name} must end the turn");
        assert_eq!(
            (s.current_tool.clone(), s.current_tool_arg.clone()),
            (None, None),
            "{name}"
        );
        assert_eq!(s.turn_tokens.is_some(), keeps_tokens, "{name}");
    }
}

#[test]
fn r25_stop_failed_returns_to_streaming_with_the_compaction_still_running() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, compaction_started(CompactionTrigger::Auto, T0 + 1)),
            (T0 + 2, Msg::RequestStop { at: T0 + 2 }),
        ],
    );
    assert!(
        s.compacting.is_some(),
        "a stop does not clear the compaction (R48)"
    );
    let (s, cmds) = step(s, T0 + 3, Msg::StopFailed);
    assert_eq!(s.turn_phase, streaming_phase(1, 0, T0 + 1));
    assert!(s.compacting.is_some());
    assert_eq!(cmds, vec![cancel(DeadlineKind::Interrupt, 1)]);
}

#[test]
fn r25_stop_failed_while_unsubscribed_goes_idle() {
    let mut s = interrupting(T0);
    s.last_event_ms = None;
    let (s, cmds) = step(s, T0 + 3, Msg::StopFailed);
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(cmds, vec![cancel(DeadlineKind::Interrupt, 1)]);
}

#[test]
fn r25_stop_failed_outside_interrupting_is_a_silent_noop() {
    // Interpretation: the table's "=" columns; a stop that was never pending cannot fail.
    for s in [streaming(T0), subscribed_ready(T0)] {
        assert_eq!(unchanged(s, T0 + 1, Msg::StopFailed), vec![]);
    }
}

#[test]
fn r25_failure_ends_a_working_turn_as_errored_at_its_time() {
    let armed = [
        vec![cancel(DeadlineKind::Submit, 1)],
        vec![],
        vec![cancel(DeadlineKind::Interrupt, 1)],
    ];
    for (s, disarmed) in [submitting(T0), streaming(T0), interrupting(T0)]
        .into_iter()
        .zip(armed)
    {
        let (s, cmds) = step(
            s,
            T0 + 9,
            Msg::FailureObserved {
                failure: failure(FailureKind::RateLimited),
                at: T0 + 8,
            },
        );
        assert_eq!(s.turn_phase, done(TurnOutcome::Errored, T0 + 8));
        let mut expected = vec![];
        expected.extend(disarmed);
        assert_eq!(cmds, expected);
    }
}

#[test]
fn r25_provider_waiting_marks_a_streaming_turn_rate_limited() {
    let (s, cmds) = step(
        streaming(T0),
        T0 + 2,
        Msg::ProviderWaiting {
            reason: WaitingReason::RateLimited,
            retry_after_ms: Some(20_000),
            at: T0 + 2,
        },
    );
    assert_eq!(
        s.turn_phase,
        TurnPhase::Streaming {
            buffer_size: 1,
            tools_active: 0,
            last_event_ms: T0 + 2,
            waiting_reason: Some(WaitingReason::RateLimited),
            retry_after_ms: Some(20_000),
        }
    );
    assert_eq!(s.last_event_ms, Some(T0 + 2));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r25_provider_waiting_outside_streaming_only_moves_the_gate() {
    let (s, cmds) = step(
        submitting(T0),
        T0 + 2,
        Msg::ProviderWaiting {
            reason: WaitingReason::RateLimited,
            retry_after_ms: None,
            at: T0 + 2,
        },
    );
    assert_eq!(
        s.turn_phase,
        TurnPhase::Submitting {
            submitted_at: T0,
            pending_content: String::new()
        }
    );
    assert_eq!(s.last_event_ms, Some(T0 + 2));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r25_stream_session_started_clears_held_tokens_and_is_a_noop_without_them() {
    let s = settle(done_completed(T0), &[]);
    assert_eq!(
        unchanged(s.clone(), T0 + 1, Msg::StreamSessionStarted),
        vec![]
    );
    let mut held = s;
    held.turn_tokens = Some(tokens(100, 5));
    let (after, cmds) = step(held, T0 + 1, Msg::StreamSessionStarted);
    assert_eq!(after.turn_tokens, None);
    assert_eq!(cmds, vec![]);
}

/// Turn 1 submitted at T0 and produced output; turn 2 was sent at T0 + 20 s and is still
/// Submitting. Turn 1's submit timer (armed for T0 + 30 s) is still out there.
fn turn_two_submitting() -> State {
    settle(
        streaming(T0),
        &[
            (T0 + 10_000, turn_end()),
            (T0 + 20_000, turn_start(T0 + 20_000)),
        ],
    )
}

#[test]
fn r27_r81_every_deadline_names_the_turn_it_guards() {
    let (_, cmds) = step(subscribed_ready(T0), T0 + 1, turn_start(T0 + 1));
    assert!(cmds.contains(&schedule(DeadlineKind::Submit, 1, T0 + 30_001)));
    let (_, cmds) = step(
        turn_two_submitting(),
        T0 + 20_001,
        Msg::RequestStop { at: T0 + 20_001 },
    );
    assert!(cmds.contains(&schedule(DeadlineKind::Interrupt, 2, T0 + 25_001)));
}

#[test]
fn r35_r81_an_earlier_turns_submit_deadline_does_not_end_the_current_turn() {
    let s = turn_two_submitting();
    assert_eq!(s.current_turn, Some(TurnId(2)));
    // The runner echoes turn 1's timer back, as `DeadlineKind::elapsed` builds it.
    let late = DeadlineKind::Submit.elapsed(Some(TurnId(1)), T0 + 30_000);
    let cmds = unchanged(s, T0 + 30_000, late);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r35_the_current_turns_submit_deadline_still_ends_it_as_errored() {
    let s = turn_two_submitting();
    let deadline = T0 + 20_000 + 30_000;
    let (s, cmds) = step(
        s,
        deadline,
        DeadlineKind::Submit.elapsed(Some(TurnId(2)), deadline),
    );
    assert_eq!(s.turn_phase, done(TurnOutcome::Errored, deadline));
    assert_eq!(s.submit_deadline, None);
    // It fired, so there is nothing left to cancel.
    assert_eq!(cmds, vec![]);
}

#[test]
fn r35_r81_an_earlier_turns_interrupt_deadline_does_not_end_the_current_turn() {
    let s = settle(
        interrupting(T0),
        &[
            (T0 + 1, turn_end()),
            (T0 + 2, turn_start(T0 + 2)),
            (T0 + 3, flush(1, T0 + 3)),
            (T0 + 4, Msg::RequestStop { at: T0 + 4 }),
        ],
    );
    assert!(matches!(s.turn_phase, TurnPhase::Interrupting { .. }));
    let late = DeadlineKind::Interrupt.elapsed(Some(TurnId(1)), T0 + 5_000);
    let cmds = unchanged(s.clone(), T0 + 5_000, late);
    assert_eq!(cmds, vec![]);
    let own = DeadlineKind::Interrupt.elapsed(Some(TurnId(2)), T0 + 5_004);
    let (s, cmds) = step(s, T0 + 5_004, own);
    assert_eq!(s.turn_phase, done(TurnOutcome::Interrupted, T0 + 5_004));
    assert_eq!(cmds, vec![kill(2)]);
    assert!(s.agent_kill_sent);
}

#[test]
fn r36_a_superseded_interrupt_deadline_of_the_same_turn_is_dropped() {
    // Stop, the stop fails, stop again: the first timer raced its cancel and fires while the
    // turn is Interrupting for the second time. Only the newest deadline counts.
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, Msg::RequestStop { at: T0 + 1 }),
            (T0 + 2, Msg::StopFailed),
            (T0 + 3_000, Msg::RequestStop { at: T0 + 3_000 }),
        ],
    );
    let first = DeadlineKind::Interrupt.elapsed(Some(TurnId(1)), T0 + 5_001);
    let cmds = unchanged(s.clone(), T0 + 5_001, first);
    assert_eq!(cmds, vec![]);
    let second = DeadlineKind::Interrupt.elapsed(Some(TurnId(1)), T0 + 8_000);
    let (s, _) = step(s, T0 + 8_000, second);
    assert_eq!(s.turn_phase, done(TurnOutcome::Interrupted, T0 + 8_000));
}

#[test]
fn r27_a_deadline_is_cancelled_once_its_turn_leaves_the_phase_it_guards() {
    let (s, cmds) = step(submitting(T0), T0 + 1, flush(1, T0 + 1));
    assert!(matches!(s.turn_phase, TurnPhase::Streaming { .. }));
    assert_eq!(s.submit_deadline, None);
    assert_eq!(cmds.last(), Some(&cancel(DeadlineKind::Submit, 1)));
    // Every command names a turn the runner can key its timers by.
    let (_, cmds) = step(interrupting(T0), T0 + 1, Msg::TurnReset);
    assert!(cmds.contains(&cancel(DeadlineKind::Interrupt, 1)));
}

#[test]
fn r90_the_submit_timeout_ends_the_turn_at_the_stamped_clock() {
    // The elapsed message carries no time of its own: one clock.
    let (s, cmds) = step(submitting(T0), T0 + 31_234, submit_elapsed());
    assert_eq!(s.turn_phase, done(TurnOutcome::Errored, T0 + 31_234));
    assert_eq!(cmds, vec![]);
}
