//! Part A: the state's fields and their lifetimes (R1–R20).

use std::collections::BTreeMap;

use panewise_pane_state::state::{
    AttachedTask, ContextInvalidation, InitPhase, PaneFailure, StreamingInfo,
};
use panewise_pane_state::{
    step, CompactionTrigger, CostSource, FailureKind, Msg, SessionStats, TurnId, TurnPhase,
};

use crate::support::*;

#[test]
fn r1_initial_streaming_info_is_agent_with_zero_buffer_and_time() {
    let s = fresh();
    assert_eq!(
        s.streaming,
        StreamingInfo {
            agent_id: "agent-1".into(),
            buffer_size: 0,
            last_event_time: 0,
        }
    );
}

#[test]
fn r1_subscribe_stamps_last_event_time() {
    let (s, cmds) = step(fresh(), T0, Msg::StreamSubscribe { at: T0 });
    assert_eq!(s.streaming.last_event_time, T0);
    assert_eq!(s.streaming.buffer_size, 0);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r1_flush_adds_count_and_stamps_time() {
    let s = settle(subscribed_ready(T0), &[(T0 + 5, flush(3, T0 + 5))]);
    let (s, cmds) = step(s, T0 + 9, flush(4, T0 + 9));
    assert_eq!(s.streaming.buffer_size, 7);
    assert_eq!(s.streaming.last_event_time, T0 + 9);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r1_streaming_info_is_never_reset_by_reset_or_unsubscribe() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, flush(5, T0 + 1)),
            (T0 + 2, Msg::TurnReset),
            (T0 + 3, Msg::StreamUnsubscribe { at: T0 + 3 }),
        ],
    );
    assert_eq!(s.streaming.buffer_size, 6);
    assert_eq!(s.streaming.last_event_time, T0 + 1);
}

#[test]
fn r2_gate_starts_closed_and_subscribe_opens_it() {
    let s = fresh();
    assert_eq!(s.last_event_ms, None);
    assert!(!s.is_subscribed());
    let (s, _) = step(s, T0, Msg::StreamSubscribe { at: T0 });
    assert_eq!(s.last_event_ms, Some(T0));
    assert!(s.is_subscribed());
}

#[test]
fn r2_every_kind_of_live_activity_moves_last_event_ms_forward() {
    let cases: Vec<(u64, Msg)> = vec![
        (T0 + 10, flush(1, T0 + 10)),
        (T0 + 20, tool_start("Bash", None)),
        (T0 + 30, tool_end()),
        (T0 + 40, tokens_in(1_000, None)),
        (T0 + 50, tokens_out(10)),
        (
            T0 + 60,
            Msg::ProviderWaiting {
                reason: panewise_pane_state::state::WaitingReason::RateLimited,
                retry_after_ms: None,
                at: T0 + 60,
            },
        ),
        (
            T0 + 70,
            compaction_started(CompactionTrigger::Auto, T0 + 70),
        ),
        (T0 + 80, boundary(CompactionTrigger::Auto, T0 + 80, None)),
        (T0 + 90, turn_start(T0 + 90)),
    ];
    let mut s = streaming(T0);
    for (now, msg) in cases {
        let kind = msg.kind();
        s = step(s, now, msg).0;
        assert_eq!(s.last_event_ms, Some(now), "{kind} must move lastEventMs");
    }
}

#[test]
fn r2_a_boundary_does_not_open_the_gate_while_unsubscribed() {
    let (s, cmds) = step(fresh(), T0, boundary(CompactionTrigger::Auto, T0, None));
    assert_eq!(s.last_event_ms, None);
    assert_eq!(s.compactions, 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r2_working_unsubscribe_closes_the_gate() {
    let (s, _) = step(streaming(T0), T0 + 1, Msg::StreamUnsubscribe { at: T0 + 1 });
    assert_eq!(s.last_event_ms, None);
}

#[test]
fn r2_deliberate_deviation_idle_unsubscribe_closes_the_gate() {
    // The original kept lastEventMs set here (a quirk); a pane without a stream must not look
    // subscribed, so the gate closes and the unsubscribe is reported.
    let (s, cmds) = step(
        subscribed_ready(T0),
        T0 + 1,
        Msg::StreamUnsubscribe { at: T0 + 1 },
    );
    assert_eq!(s.last_event_ms, None);
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r2_deliberate_deviation_turn_start_after_idle_unsubscribe_is_suppressed() {
    let s = settle(
        subscribed_ready(T0),
        &[(T0 + 1, Msg::StreamUnsubscribe { at: T0 + 1 })],
    );
    let cmds = unchanged(s, T0 + 2, turn_start(T0 + 2));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r2_deliberate_deviation_done_unsubscribe_also_closes_the_gate_without_disconnecting() {
    let (s, cmds) = step(
        done_completed(T0),
        T0 + 1,
        Msg::StreamUnsubscribe { at: T0 + 1 },
    );
    assert_eq!(s.last_event_ms, None);
    assert_eq!(
        s.turn_phase,
        done(panewise_pane_state::TurnOutcome::Completed, T0)
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r2_unsubscribe_while_already_unsubscribed_is_a_silent_noop() {
    let cmds = unchanged(fresh(), T0, Msg::StreamUnsubscribe { at: T0 });
    assert_eq!(cmds, vec![]);
}

#[test]
fn r3_init_start_is_always_a_noop() {
    assert_eq!(unchanged(fresh(), T0, Msg::InitStart), vec![]);
    assert_eq!(unchanged(subscribed_ready(T0), T0, Msg::InitStart), vec![]);
}

#[test]
fn r3_first_init_ready_wins_and_keeps_its_timestamp() {
    let (s, cmds) = step(fresh(), T0, Msg::InitReady { at: T0 });
    assert_eq!(s.init_phase, InitPhase::InitReady { at: T0 });
    assert_eq!(cmds, vec![]);
    assert_eq!(
        unchanged(s.clone(), T0 + 1, Msg::InitReady { at: T0 + 1 }),
        vec![]
    );
    let cmds = unchanged(
        s,
        T0 + 2,
        Msg::InitFailed {
            at: T0 + 2,
            reason: "late".into(),
        },
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r3_first_init_failure_wins_and_keeps_its_reason() {
    let (s, cmds) = step(
        fresh(),
        T0,
        Msg::InitFailed {
            at: T0,
            reason: "history unreadable".into(),
        },
    );
    assert_eq!(
        s.init_phase,
        InitPhase::InitFailed {
            at: T0,
            reason: "history unreadable".into()
        }
    );
    assert_eq!(cmds, vec![]);
    assert_eq!(
        unchanged(s.clone(), T0 + 1, Msg::InitReady { at: T0 + 1 }),
        vec![]
    );
    let cmds = unchanged(
        s,
        T0 + 2,
        Msg::InitFailed {
            at: T0 + 2,
            reason: "second".into(),
        },
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r4_turn_phase_starts_idle() {
    assert_eq!(fresh().turn_phase, TurnPhase::Idle);
}

fn stats(cost: f64, input: u64, output: u64) -> SessionStats {
    SessionStats {
        cost_usd: Some(cost),
        input_tokens: Some(input),
        output_tokens: Some(output),
        num_turns: Some(1),
        ..SessionStats::default()
    }
}

fn turn_end_with(stats: SessionStats) -> Msg {
    Msg::TurnEnd {
        stats: Some(stats),
        turn: None,
        interrupted: false,
    }
}

#[test]
fn r5_turn_end_replaces_stats_and_turn_start_clears_them() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, turn_end_with(stats(0.5, 100, 20)))],
    );
    assert_eq!(s.session_stats, Some(stats(0.5, 100, 20)));
    let (s, _) = step(s, T0 + 2, turn_start(T0 + 2));
    assert_eq!(s.session_stats, None);
}

#[test]
fn r5_r6_turn_start_failed_keeps_stats_and_totals() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, turn_end_with(stats(0.5, 100, 20))),
            (T0 + 2, turn_start(T0 + 2)),
        ],
    );
    let totals = s.session_totals.clone();
    assert!(totals.is_some());
    let (s, cmds) = step(s, T0 + 3, Msg::TurnStartFailed);
    assert_eq!(s.session_stats, None, "the start already cleared the stats");
    assert_eq!(s.session_totals, totals);
    assert_eq!(cmds, vec![cancel(DeadlineKind::Submit, 2)]);
}

#[test]
fn r6_totals_sum_every_turn_end_and_only_reset_clears_them() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, turn_end_with(stats(0.5, 100, 20))),
            (T0 + 2, turn_start(T0 + 2)),
            (T0 + 3, flush(1, T0 + 3)),
            (T0 + 4, turn_end_with(stats(0.25, 50, 10))),
        ],
    );
    assert_eq!(
        s.session_totals,
        Some(SessionStats {
            cost_usd: Some(0.75),
            input_tokens: Some(150),
            output_tokens: Some(30),
            num_turns: Some(2),
            // A cost without a source (a log from before sources) counts as reported.
            cost_source: Some(CostSource::Reported),
            ..SessionStats::default()
        })
    );
    assert_eq!(s.session_stats, Some(stats(0.25, 50, 10)));
    let (s, _) = step(s, T0 + 5, Msg::TurnReset);
    assert_eq!(s.session_totals, None);
    assert_eq!(s.session_stats, None);
}

#[test]
fn r7_tool_start_sets_name_and_argument() {
    let (s, cmds) = step(
        streaming(T0),
        T0 + 1,
        tool_start("Read", Some("src/lib.rs")),
    );
    assert_eq!(s.current_tool.as_deref(), Some("Read"));
    assert_eq!(s.current_tool_arg.as_deref(), Some("src/lib.rs"));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r7_tool_start_without_argument_leaves_argument_empty() {
    let s = settle(streaming(T0), &[(T0 + 1, tool_start("Read", Some("a.rs")))]);
    let (s, _) = step(s, T0 + 2, tool_start("Bash", None));
    assert_eq!(s.current_tool.as_deref(), Some("Bash"));
    assert_eq!(s.current_tool_arg, None);
}

#[test]
fn r7_tool_end_and_turn_end_clear_the_tool_chip() {
    let s = settle(streaming(T0), &[(T0 + 1, tool_start("Bash", Some("ls")))]);
    let (after_end, cmds) = step(s.clone(), T0 + 2, tool_end());
    assert_eq!(
        (&after_end.current_tool, &after_end.current_tool_arg),
        (&None, &None)
    );
    assert_eq!(cmds, vec![]);
    let (after_turn, _) = step(s, T0 + 2, turn_end());
    assert_eq!(
        (&after_turn.current_tool, &after_turn.current_tool_arg),
        (&None, &None)
    );
}

#[test]
fn r7_the_boundary_ending_a_manual_compact_turn_clears_the_tool_chip() {
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0 + 1, turn_start_with(T0 + 1, "/compact")),
            (T0 + 2, tool_start("Compact", Some("conversation"))),
        ],
    );
    let (s, _) = step(s, T0 + 3, boundary(CompactionTrigger::Manual, T0 + 3, None));
    assert_eq!((&s.current_tool, &s.current_tool_arg), (&None, &None));
}

#[test]
fn r9_pending_queue_survives_turn_reset() {
    let s = settle(
        streaming(T0),
        &[(
            T0 + 1,
            Msg::PendingMessageQueued {
                id: "m1".into(),
                text: "next".into(),
                at: T0 + 1,
                enqueued_while_busy: true,
            },
        )],
    );
    let before = s.pending.clone();
    let (s, _) = step(s, T0 + 2, Msg::TurnReset);
    assert_eq!(s.pending, before);
}

#[test]
fn r10_details_commands_open_close_and_toggle() {
    let s = fresh();
    assert!(!s.details_open);
    let (s, cmds) = step(s, T0, Msg::DetailsToggle);
    assert!(s.details_open);
    assert_eq!(cmds, vec![]);
    let (s, _) = step(s, T0, Msg::DetailsToggle);
    assert!(!s.details_open);
    let (s, _) = step(s, T0, Msg::DetailsExpand);
    assert!(s.details_open);
    let (s, _) = step(s, T0, Msg::DetailsExpand);
    assert!(s.details_open);
    let (s, _) = step(s, T0, Msg::DetailsCollapse);
    assert!(!s.details_open);
}

#[test]
fn r10_turn_start_and_turn_reset_keep_the_details_drawer_open() {
    let s = settle(subscribed_ready(T0), &[(T0, Msg::DetailsExpand)]);
    let s = settle(s, &[(T0 + 1, turn_start(T0 + 1)), (T0 + 2, Msg::TurnReset)]);
    assert!(s.details_open);
}

#[test]
fn r11_failure_observed_sets_and_failure_cleared_clears() {
    let f = failure(FailureKind::RateLimited);
    let (s, _) = step(
        fresh(),
        T0,
        Msg::FailureObserved {
            failure: f.clone(),
            at: T0,
        },
    );
    assert_eq!(s.failure, Some(PaneFailure { failure: f, at: T0 }));
    let (s, cmds) = step(s, T0 + 1, Msg::FailureCleared);
    assert_eq!(s.failure, None);
    assert_eq!(cmds, vec![]);
    assert_eq!(unchanged(s, T0 + 2, Msg::FailureCleared), vec![]);
}

#[test]
fn r11_r31_turn_start_clears_a_failure() {
    let s = settle(
        subscribed_ready(T0),
        &[(
            T0,
            Msg::FailureObserved {
                failure: failure(FailureKind::Overloaded),
                at: T0,
            },
        )],
    );
    let (s, cmds) = step(s, T0 + 1, turn_start(T0 + 1));
    assert_eq!(s.failure, None);
    assert_eq!(s.current_turn, Some(TurnId(1)));
    assert_eq!(
        cmds,
        vec![schedule(DeadlineKind::Submit, 1, T0 + 1 + 30_000),]
    );
}

#[test]
fn r14_turn_start_with_slash_compact_marks_the_compact_turn() {
    let (s, _) = step(
        subscribed_ready(T0),
        T0 + 1,
        turn_start_with(T0 + 1, "/compact"),
    );
    assert!(s.pending_compact_turn);
}

#[test]
fn r14_turn_start_with_other_content_leaves_compact_turn_false() {
    let s = settle(
        subscribed_ready(T0),
        &[(T0 + 1, turn_start_with(T0 + 1, "/compact"))],
    );
    let (s, _) = step(s, T0 + 2, turn_start_with(T0 + 2, "/compact now please"));
    assert!(!s.pending_compact_turn);
    let (s, _) = step(s, T0 + 3, turn_start(T0 + 3));
    assert!(!s.pending_compact_turn);
}

#[test]
fn r15_boundary_time_is_the_frame_timestamp_when_present() {
    let (s, _) = step(
        streaming(T0),
        T0 + 500,
        boundary(CompactionTrigger::Auto, T0 + 500, Some(T0 + 300)),
    );
    assert_eq!(s.last_compaction_boundary_at, Some(T0 + 300));
}

#[test]
fn r15_boundary_time_falls_back_to_at_and_survives_turn_reset() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 500, boundary(CompactionTrigger::Auto, T0 + 500, None)),
            (T0 + 600, Msg::TurnReset),
        ],
    );
    assert_eq!(s.last_compaction_boundary_at, Some(T0 + 500));
}

#[test]
fn r16_attached_task_since_is_set_once_and_not_reset_by_a_second_task() {
    let (s, cmds) = step(fresh(), T0, Msg::AttachedTaskObserved { at: T0 });
    assert_eq!(s.attached_task, Some(AttachedTask { since: T0 }));
    assert_eq!(cmds, vec![]);
    let cmds = unchanged(s, T0 + 10, Msg::AttachedTaskObserved { at: T0 + 10 });
    assert_eq!(cmds, vec![]);
}

#[test]
fn r16_attached_task_cleared_and_clearing_twice_is_a_noop() {
    let s = settle(fresh(), &[(T0, Msg::AttachedTaskObserved { at: T0 })]);
    let (s, cmds) = step(s, T0 + 1, Msg::AttachedTaskCleared);
    assert_eq!(s.attached_task, None);
    assert_eq!(cmds, vec![]);
    assert_eq!(unchanged(s, T0 + 2, Msg::AttachedTaskCleared), vec![]);
}

#[test]
fn r16_no_turn_transition_touches_the_attached_task() {
    let s = settle(
        subscribed_ready(T0),
        &[
            (T0, Msg::AttachedTaskObserved { at: T0 }),
            (T0 + 1, turn_start(T0 + 1)),
            (T0 + 2, flush(1, T0 + 2)),
            (T0 + 3, turn_end()),
            (T0 + 4, Msg::TurnReset),
            (T0 + 5, Msg::StreamUnsubscribe { at: T0 + 5 }),
        ],
    );
    assert_eq!(s.attached_task, Some(AttachedTask { since: T0 }));
}

#[test]
fn r18_seedable_starts_true_and_a_windows_only_restore_keeps_it() {
    assert!(fresh().context_seedable);
    let (s, cmds) = step(
        fresh(),
        T0,
        Msg::ReconcileContextFromHistory {
            tokens: None,
            model: None,
            at: None,
            reported_windows: BTreeMap::from([("claude-opus-4".to_string(), 500_000)]),
        },
    );
    assert!(s.context_seedable);
    assert_eq!(s.context, None);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r18_seedable_becomes_false_after_live_tokens_invalidation_reset_and_boundary() {
    let base = streaming(T0);
    let after: Vec<Msg> = vec![
        tokens_in(5_000, Some("claude-haiku-4-5")),
        Msg::ContextInvalidated {
            reason: ContextInvalidation::FreshSession,
        },
        Msg::TurnReset,
        boundary(CompactionTrigger::Auto, T0 + 1, None),
    ];
    for msg in after {
        let kind = msg.kind();
        let (s, _) = step(base.clone(), T0 + 1, msg);
        assert!(
            !s.context_seedable,
            "{kind} must make the pane non-seedable"
        );
    }
}

#[test]
fn r19_reported_and_learned_windows_survive_reset_and_invalidation() {
    let s = settle(
        streaming(T0),
        &[
            (
                T0,
                Msg::ContextWindowsReported {
                    windows: BTreeMap::from([("gpt-5".to_string(), 400_000)]),
                },
            ),
            // A haiku prompt above 200k proves the 1M tier.
            (T0 + 1, tokens_in(300_000, Some("claude-haiku-4-5"))),
        ],
    );
    let reported = s.reported_context_windows.clone();
    let learned = s.learned_context_windows.clone();
    assert_eq!(learned.get("claude-haiku-4-5"), Some(&1_000_000));
    let s = settle(
        s,
        &[
            (T0 + 2, Msg::TurnReset),
            (
                T0 + 3,
                Msg::ContextInvalidated {
                    reason: ContextInvalidation::TranscriptReplaced,
                },
            ),
        ],
    );
    assert_eq!(s.reported_context_windows, reported);
    assert_eq!(s.learned_context_windows, learned);
}

#[test]
fn r20_last_context_model_follows_tokens_in_and_keeps_it_when_absent() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(5_000, Some("claude-opus-4")))],
    );
    assert_eq!(s.last_context_model.as_deref(), Some("claude-opus-4"));
    let (s, _) = step(s, T0 + 2, tokens_in(6_000, None));
    assert_eq!(s.last_context_model.as_deref(), Some("claude-opus-4"));
    assert_eq!(
        s.context.as_ref().and_then(|r| r.model.as_deref()),
        Some("claude-opus-4")
    );
}

#[test]
fn seed_stash_drawer_is_independent_of_the_details_drawer() {
    let (s, cmds) = step(fresh(), T0, Msg::StashToggle);
    assert!(s.stash_open && !s.details_open);
    assert_eq!(cmds, vec![]);
    let s = settle(s, &[(T0, Msg::DetailsExpand), (T0, Msg::StashToggle)]);
    assert!(!s.stash_open && s.details_open);
    // Like the details drawer, sending a message does not close it.
    let s = settle(
        subscribed_ready(T0),
        &[(T0, Msg::StashToggle), (T0 + 1, turn_start(T0 + 1))],
    );
    assert!(s.stash_open);
}

#[test]
fn seed_attached_task_floor_is_the_earliest_of_transcript_and_registry() {
    let s = fresh();
    assert_eq!(s.attached_task_since(), None);
    let (s, cmds) = step(s, T0, Msg::RegistryAttachedTaskObserved { since: T0 - 500 });
    assert_eq!(cmds, vec![]);
    assert_eq!(s.attached_task_since(), Some(T0 - 500));
    let (s, _) = step(s, T0, Msg::AttachedTaskObserved { at: T0 });
    assert_eq!(s.attached_task_since(), Some(T0 - 500));
    // Each axis is owned by its own messages only.
    let (s, _) = step(s, T0 + 1, Msg::AttachedTaskCleared);
    assert_eq!(s.registry_attached_task_since, Some(T0 - 500));
    let (s, _) = step(s, T0 + 2, Msg::RegistryAttachedTaskCleared);
    assert_eq!(s.attached_task_since(), None);
}

#[test]
fn seed_resume_retry_state_is_owned_by_its_two_messages() {
    let (s, _) = step(
        subscribed_ready(T0),
        T0 + 1,
        Msg::ResumeRetryStarted {
            at: T0 + 1,
            stale_session_id: "abc".into(),
        },
    );
    assert_eq!(
        s.reconnecting,
        Some(panewise_pane_state::state::ResumeRetry {
            started_at: T0 + 1,
            stale_session_id: "abc".into()
        })
    );
    let s = settle(s, &[(T0 + 2, Msg::TurnReset)]);
    assert!(s.reconnecting.is_some(), "a reset does not touch it");
    let (s, _) = step(s, T0 + 3, Msg::ResumeRetryResolved);
    assert_eq!(s.reconnecting, None);
}

/// R61 with cost sources: reported and estimated parts add up to an estimate; one turn whose
/// cost cannot be known makes the whole total unknown, never a partial sum.
#[test]
fn r61_cost_sources_combine_and_an_unknown_cost_is_never_a_partial_sum() {
    let priced = |cost: Option<f64>, source: CostSource| SessionStats {
        cost_usd: cost,
        cost_source: Some(source),
        input_tokens: Some(10),
        ..SessionStats::default()
    };
    let fold = |turns: &[SessionStats]| {
        let mut msgs = Vec::new();
        for (index, turn) in turns.iter().enumerate() {
            let at = T0 + 10 * index as u64;
            msgs.push((at + 1, turn_start(at + 1)));
            msgs.push((at + 2, flush(1, at + 2)));
            msgs.push((at + 3, turn_end_with(turn.clone())));
        }
        let totals = settle(streaming(T0), &msgs).session_totals.clone().unwrap();
        (totals.cost_usd, totals.cost_source)
    };
    assert_eq!(
        fold(&[
            priced(Some(0.5), CostSource::Reported),
            priced(Some(0.25), CostSource::Estimated)
        ]),
        (Some(0.75), Some(CostSource::Estimated))
    );
    assert_eq!(
        fold(&[
            priced(Some(0.5), CostSource::Estimated),
            priced(None, CostSource::Unknown),
            priced(Some(0.25), CostSource::Reported),
        ]),
        (None, Some(CostSource::Unknown))
    );
    assert_eq!(
        fold(&[
            priced(Some(0.5), CostSource::Reported),
            priced(Some(0.5), CostSource::Reported)
        ]),
        (Some(1.0), Some(CostSource::Reported))
    );
}
