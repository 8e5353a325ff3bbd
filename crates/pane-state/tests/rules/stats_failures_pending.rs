//! Part B.9–B.11: stats merge and totals, failures, the pending queue (R60–R66).

use panewise_pane_state::state::{PaneFailure, PendingMessage};
use panewise_pane_state::{step, FailureKind, Msg, SessionStats, State, TurnOutcome};

use crate::support::*;

fn end_with(stats: Option<SessionStats>) -> Msg {
    Msg::TurnEnd {
        stats,
        turn: None,
        interrupted: false,
    }
}

fn queued(id: &str, at: u64) -> Msg {
    Msg::PendingMessageQueued {
        id: id.to_owned(),
        text: format!("text of {id}"),
        at,
        enqueued_while_busy: true,
    }
}

fn entry(id: &str, at: u64, flushing: bool) -> PendingMessage {
    PendingMessage {
        id: id.to_owned(),
        text: format!("text of {id}"),
        created_at: at,
        enqueued_while_busy: true,
        flushing,
    }
}

/// Three queued messages: a, b, c.
fn with_queue() -> State {
    settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, queued("a", T0 + 1)),
            (T0 + 2, queued("b", T0 + 2)),
            (T0 + 3, queued("c", T0 + 3)),
        ],
    )
}

fn ids(s: &State) -> Vec<&str> {
    s.pending.iter().map(|m| m.id.as_str()).collect()
}

#[test]
fn r60_reported_stats_win_and_missing_or_zero_fields_fall_back_to_live_tokens() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, tokens_out(50))],
    );
    let stats = SessionStats {
        cost_usd: Some(0.1),
        input_tokens: Some(0),
        output_tokens: None,
        num_turns: Some(2),
        ..SessionStats::default()
    };
    let (s, _) = step(s, T0 + 3, end_with(Some(stats)));
    assert_eq!(
        s.session_stats,
        Some(SessionStats {
            cost_usd: Some(0.1),
            input_tokens: Some(1_000),
            output_tokens: Some(50),
            num_turns: Some(2),
            ..SessionStats::default()
        })
    );
}

#[test]
fn r60_reported_totals_are_kept_over_live_tokens() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, tokens_out(50))],
    );
    let stats = SessionStats {
        input_tokens: Some(5_000),
        output_tokens: Some(70),
        ..SessionStats::default()
    };
    let (s, _) = step(s, T0 + 3, end_with(Some(stats.clone())));
    assert_eq!(s.session_stats, Some(stats));
}

#[test]
fn r60_without_stats_the_live_tokens_give_input_and_the_turn_output_counter() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tokens_in(1_000, None)),
            (T0 + 2, tokens_out(40)),
            (T0 + 3, tokens_in(2_000, None)),
            (T0 + 4, tokens_out(30)),
        ],
    );
    let (s, cmds) = step(s, T0 + 5, end_with(None));
    assert_eq!(
        s.session_stats,
        Some(SessionStats {
            input_tokens: Some(2_000),
            output_tokens: Some(70),
            ..SessionStats::default()
        })
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r60_without_stats_or_tokens_nothing_is_merged() {
    let (s, cmds) = step(streaming(T0), T0 + 5, end_with(None));
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 5));
    assert_eq!(s.session_stats, None);
    assert_eq!(s.session_totals, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r61_totals_add_field_by_field_and_count_a_turn_without_num_turns_as_one() {
    let s = settle(
        streaming(T0),
        &[
            (
                T0 + 1,
                end_with(Some(SessionStats {
                    cost_usd: Some(0.5),
                    duration_ms: Some(1_000),
                    ..SessionStats::default()
                })),
            ),
            (T0 + 2, turn_start(T0 + 2)),
            (
                T0 + 3,
                end_with(Some(SessionStats {
                    input_tokens: Some(100),
                    num_turns: Some(3),
                    ..SessionStats::default()
                })),
            ),
        ],
    );
    assert_eq!(
        s.session_totals,
        Some(SessionStats {
            cost_usd: Some(0.5),
            duration_ms: Some(1_000),
            input_tokens: Some(100),
            num_turns: Some(4),
            cost_source: Some(panewise_pane_state::CostSource::Reported),
            ..SessionStats::default()
        })
    );
}

#[test]
fn r61_a_turn_end_with_nothing_to_merge_leaves_the_totals() {
    let s = settle(
        streaming(T0),
        &[(
            T0 + 1,
            end_with(Some(SessionStats {
                cost_usd: Some(0.5),
                ..SessionStats::default()
            })),
        )],
    );
    let totals = s.session_totals.clone();
    let s = settle(s, &[(T0 + 2, turn_start(T0 + 2)), (T0 + 3, end_with(None))]);
    assert_eq!(s.session_totals, totals);
    assert_eq!(s.session_stats, None);
}

#[test]
fn r62_any_failure_kind_ends_a_working_turn_as_errored() {
    let kinds = [
        (FailureKind::RateLimited, "rate_limited"),
        (FailureKind::Overloaded, "overloaded"),
        (FailureKind::ServerError, "server_error"),
        (FailureKind::Auth, "auth"),
        (FailureKind::ContextOverflow, "context_overflow"),
        (FailureKind::StreamDisconnected, "stream_disconnected"),
        (FailureKind::ProcessExited, "process_exited"),
        (FailureKind::Unknown, "unknown"),
    ];
    for (kind, code) in kinds {
        let s = settle(
            streaming(T0),
            &[
                (T0 + 1, tokens_in(3_000, None)),
                (T0 + 2, tool_start("Bash", None)),
            ],
        );
        let (s, cmds) = step(
            s,
            T0 + 5,
            Msg::FailureObserved {
                failure: failure(kind),
                at: T0 + 5,
            },
        );
        assert_eq!(s.turn_phase, done(TurnOutcome::Errored, T0 + 5), "{code}");
        assert_eq!(
            s.failure,
            Some(PaneFailure {
                failure: failure(kind),
                at: T0 + 5
            })
        );
        assert_eq!(
            (s.turn_tokens.clone(), s.current_tool.clone()),
            (None, None),
            "{code}"
        );
        assert_eq!(cmds, vec![]);
        // The wire form (in the log's failure) is the kind's snake_case name, as when it was a
        // string.
        let wire = serde_json::to_value(&s.failure).unwrap();
        assert_eq!(wire["failure"]["kind"], code);
    }
}

#[test]
fn r62_a_failure_after_the_turn_ended_is_only_recorded() {
    let s = done_completed(T0);
    let phase = s.turn_phase.clone();
    let (s, cmds) = step(
        s,
        T0 + 5,
        Msg::FailureObserved {
            failure: failure(FailureKind::RateLimited),
            at: T0 + 5,
        },
    );
    assert_eq!(s.turn_phase, phase);
    assert_eq!(s.failure.as_ref().map(|f| f.at), Some(T0 + 5));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r62_a_newer_failure_replaces_the_older_one() {
    let s = settle(
        done_completed(T0),
        &[(
            T0 + 1,
            Msg::FailureObserved {
                failure: failure(FailureKind::Overloaded),
                at: T0 + 1,
            },
        )],
    );
    let (s, _) = step(
        s,
        T0 + 2,
        Msg::FailureObserved {
            failure: failure(FailureKind::Auth),
            at: T0 + 2,
        },
    );
    assert_eq!(
        s.failure,
        Some(PaneFailure {
            failure: failure(FailureKind::Auth),
            at: T0 + 2
        })
    );
}

#[test]
fn r63_queued_messages_append_in_order_without_deduplicating_ids() {
    let (s, cmds) = step(with_queue(), T0 + 4, queued("a", T0 + 4));
    assert_eq!(ids(&s), vec!["a", "b", "c", "a"]);
    assert_eq!(s.pending[3], entry("a", T0 + 4, false));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r64_accepted_and_rejected_remove_the_entry_and_keep_the_order() {
    let (s, cmds) = step(
        with_queue(),
        T0 + 5,
        Msg::PendingMessageAccepted { id: "b".into() },
    );
    assert_eq!(ids(&s), vec!["a", "c"]);
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 6, Msg::PendingMessageRejected { id: "a".into() });
    assert_eq!(ids(&s), vec!["c"]);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r64_an_unknown_id_leaves_the_queue_as_it_was() {
    let cmds = unchanged(
        with_queue(),
        T0 + 5,
        Msg::PendingMessageAccepted { id: "zz".into() },
    );
    assert_eq!(cmds, vec![]);
    let cmds = unchanged(
        with_queue(),
        T0 + 5,
        Msg::PendingMessageRejected { id: "zz".into() },
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r65_an_expired_message_leaves_the_queue_and_the_order_of_the_rest() {
    let (s, cmds) = step(
        with_queue(),
        T0 + 60_002,
        Msg::PendingMessageExpired { id: "b".into() },
    );
    assert_eq!(ids(&s), vec!["a", "c"]);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r65_an_unknown_expired_id_leaves_the_queue_as_it_was() {
    let cmds = unchanged(
        with_queue(),
        T0 + 9,
        Msg::PendingMessageExpired { id: "zz".into() },
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r66_flush_started_marks_the_entry_once() {
    let (s, cmds) = step(
        with_queue(),
        T0 + 5,
        Msg::PendingMessageFlushStarted { id: "b".into() },
    );
    assert_eq!(
        s.pending,
        vec![
            entry("a", T0 + 1, false),
            entry("b", T0 + 2, true),
            entry("c", T0 + 3, false)
        ]
    );
    assert_eq!(cmds, vec![]);
    assert_eq!(
        unchanged(
            s.clone(),
            T0 + 6,
            Msg::PendingMessageFlushStarted { id: "b".into() }
        ),
        vec![]
    );
    assert_eq!(
        unchanged(
            s,
            T0 + 6,
            Msg::PendingMessageFlushStarted { id: "zz".into() }
        ),
        vec![]
    );
}

#[test]
fn r66_turn_end_never_marks_a_message_flushing() {
    let s = settle(
        with_queue(),
        &[
            (T0 + 5, turn_start(T0 + 5)),
            (T0 + 6, flush(1, T0 + 6)),
            (T0 + 7, turn_end()),
        ],
    );
    assert!(s.pending.iter().all(|m| !m.flushing));
    assert_eq!(ids(&s), vec!["a", "b", "c"]);
}
