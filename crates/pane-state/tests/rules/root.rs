//! Part D as built: stale turn results, the one cancel path, parked approvals and questions,
//! the confirmation modal, quitting, the request-context buffers, the injected clock and the
//! Msg serde parity test (R78–R93).

use std::collections::BTreeMap;

use panewise_pane_state::ledger::TurnLedger;
use panewise_pane_state::log::{LogHeader, Recorder};
use panewise_pane_state::state::{
    Confirmation, ContextInvalidation, PendingApproval, PendingQuestionSet, WaitingReason,
    CONTEXT_BUFFER_CAP_BYTES,
};
use panewise_pane_state::{
    parse_log_bytes, step, update, Cmd, CompactionTrigger, CostSource, FailureKind, Msg, PlanStep,
    PlanStepStatus, SessionStats, State, TurnId, TurnOutcome, TurnPhase,
};

use crate::support::*;

fn approval(id: &str, turn: u64) -> Msg {
    Msg::ApprovalRequested {
        id: id.to_owned(),
        tool: "Bash".to_owned(),
        summary: format!("run {id}"),
        turn: Some(TurnId(turn)),
    }
}

fn question(id: &str, turn: u64) -> Msg {
    Msg::QuestionAsked {
        id: id.to_owned(),
        questions: vec![format!("{id}?")],
        turn: Some(TurnId(turn)),
    }
}

fn hook(text: &str, turn: u64) -> Msg {
    Msg::HookContextAdded {
        text: text.to_owned(),
        turn: TurnId(turn),
    }
}

fn notice(text: &str) -> Msg {
    Msg::TaskNoticeAdded {
        text: text.to_owned(),
    }
}

/// Turn 2 is current; turn 1 was replaced by a message accepted mid-turn.
fn second_turn() -> State {
    settle(
        streaming(T0),
        &[(T0 + 1, turn_start(T0 + 1)), (T0 + 2, flush(1, T0 + 2))],
    )
}

#[test]
fn r78_r90_update_is_a_pure_function_of_state_and_msg() {
    let s = second_turn();
    let msg = tokens_in(40_000, Some("claude-opus-4"));
    assert_eq!(update(s.clone(), msg.clone()), update(s, msg));
}

#[test]
fn r90_step_stamps_the_injected_clock_and_update_reads_only_it() {
    let (s, _) = step(fresh(), 42, Msg::InitStart);
    assert_eq!(s.now_ms, 42);
    // TurnEnd's finish time is the stamped clock, never a wall clock.
    let mut s = streaming(T0);
    s.now_ms = T0 + 777;
    let (s, _) = update(s, turn_end());
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0 + 777));
}

#[test]
fn r81_a_stale_turn_id_is_dropped_unchanged_with_no_command() {
    let s = settle(
        second_turn(),
        &[(
            T0 + 3,
            Msg::ApprovalRequested {
                id: "keep".into(),
                tool: "t".into(),
                summary: "s".into(),
                turn: Some(TurnId(2)),
            },
        )],
    );
    let stale: Vec<Msg> = vec![
        Msg::TurnEnd {
            stats: Some(SessionStats::default()),
            turn: Some(TurnId(1)),
            interrupted: false,
        },
        Msg::ToolStart {
            name: "Bash".into(),
            arg: None,
            turn: Some(TurnId(1)),
        },
        Msg::ToolEnd {
            turn: Some(TurnId(1)),
        },
        Msg::TokensIn {
            input: 5,
            model: None,
            cache_read: None,
            cache_write: None,
            cache_write_1h: None,
            turn: Some(TurnId(1)),
        },
        Msg::TokensOut {
            output: 5,
            turn: Some(TurnId(1)),
        },
        Msg::OutputStreamed {
            chars: 5,
            turn: Some(TurnId(1)),
        },
        Msg::RequestStarted {
            turn: Some(TurnId(1)),
        },
        approval("old", 1),
        question("old", 1),
        hook("old context", 1),
        Msg::TurnCancelled { turn: TurnId(1) },
    ];
    for msg in stale {
        let kind = msg.kind();
        // `update` itself, without the clock stamp, hands the state back as it was, and asks
        // for nothing (not counted in diagnostics either: a stale result is expected traffic).
        assert_eq!(update(s.clone(), msg), (s.clone(), vec![]), "stale {kind}");
    }
}

#[test]
fn r81_the_current_turn_id_is_accepted() {
    let (s, cmds) = step(
        second_turn(),
        T0 + 3,
        Msg::ToolStart {
            name: "Read".into(),
            arg: None,
            turn: Some(TurnId(2)),
        },
    );
    assert_eq!(s.current_tool.as_deref(), Some("Read"));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r81_messages_not_tied_to_a_turn_skip_the_check() {
    let (s, _) = step(second_turn(), T0 + 3, tool_start("Read", None));
    assert_eq!(s.current_tool.as_deref(), Some("Read"));
}

#[test]
fn r81_after_a_reset_no_turn_is_current_so_tagged_results_are_stale() {
    let s = settle(second_turn(), &[(T0 + 3, Msg::TurnReset)]);
    assert_eq!(s.current_turn, None);
    let msg = Msg::ToolStart {
        name: "Read".into(),
        arg: None,
        turn: Some(TurnId(2)),
    };
    assert_eq!(update(s.clone(), msg), (s, vec![]));
}

#[test]
fn r84_request_stop_is_the_one_cancel_path_and_clears_both_queues() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, approval("a", 1)), (T0 + 2, question("q", 1))],
    );
    let (s, cmds) = step(s, T0 + 3, Msg::RequestStop { at: T0 + 3 });
    assert_eq!(s.turn_phase, interrupting_phase(T0 + 3));
    assert!(s.pending_approvals.is_empty() && s.pending_questions.is_empty());
    assert_eq!(
        cmds,
        vec![
            schedule(DeadlineKind::Interrupt, 1, T0 + 5_003),
            Cmd::InterruptAgent {
                turn: Some(TurnId(1))
            },
        ]
    );
}

#[test]
fn r84_a_stop_when_idle_or_already_cancelling_arms_nothing() {
    let cmds = unchanged(
        subscribed_ready(T0),
        T0 + 9,
        Msg::RequestStop { at: T0 + 9 },
    );
    assert_eq!(cmds, vec![]);
    // Already cancelling: no second interrupt or deadline, only the kill escalation (R95).
    let (_, cmds) = step(interrupting(T0), T0 + 9, Msg::RequestStop { at: T0 + 9 });
    assert!(!cmds
        .iter()
        .any(|c| matches!(c, Cmd::InterruptAgent { .. } | Cmd::ScheduleDeadline { .. })));
    assert!(cmds.contains(&Cmd::KillAgent {
        turn: Some(TurnId(1))
    }));
}

#[test]
fn r84_turn_cancelled_is_what_ends_a_cancelling_turn() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tool_start("Bash", Some("sleep 60"))),
            (T0 + 2, tokens_in(2_000, None)),
            (T0 + 3, compaction_started(CompactionTrigger::Auto, T0 + 3)),
            (T0 + 4, Msg::RequestStop { at: T0 + 4 }),
        ],
    );
    let (s, cmds) = step(s, T0 + 2_000, Msg::TurnCancelled { turn: TurnId(1) });
    assert_eq!(s.turn_phase, done(TurnOutcome::Stopped, T0 + 2_000));
    assert_eq!((&s.current_tool, &s.current_tool_arg), (&None, &None));
    assert_eq!(s.turn_tokens, None);
    assert_eq!(s.compacting, None);
    assert_eq!(cmds, vec![cancel(DeadlineKind::Interrupt, 1)]);
}

#[test]
fn r84_turn_cancelled_outside_cancelling_changes_nothing() {
    // The stop failed and the turn streams on; a late drain report must not end it.
    let s = settle(interrupting(T0), &[(T0 + 1, Msg::StopFailed)]);
    assert!(matches!(s.turn_phase, TurnPhase::Streaming { .. }));
    assert_eq!(
        unchanged(s, T0 + 2, Msg::TurnCancelled { turn: TurnId(1) }),
        vec![]
    );
}

#[test]
fn r86_approvals_queue_first_in_first_out() {
    let (s, cmds) = step(streaming(T0), T0 + 1, approval("a", 1));
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 2, approval("b", 1));
    assert_eq!(cmds, vec![]);
    assert_eq!(
        s.pending_approvals.front(),
        Some(&PendingApproval {
            id: "a".into(),
            tool: "Bash".into(),
            summary: "run a".into(),
            asked: false,
        })
    );
    let (s, cmds) = step(s, T0 + 3, Msg::approval_answer(None, true, None));
    assert_eq!(
        cmds,
        vec![Cmd::ResolveApproval {
            id: "a".into(),
            tool: "Bash".into(),
            approved: true,
            for_session: false,
            by: None,
            reason: None,
        }]
    );
    let (s, cmds) = step(s, T0 + 4, Msg::approval_answer(None, false, None));
    assert_eq!(
        cmds,
        vec![Cmd::ResolveApproval {
            id: "b".into(),
            tool: "Bash".into(),
            approved: false,
            for_session: false,
            by: None,
            reason: None,
        }]
    );
    assert!(s.pending_approvals.is_empty());
}

#[test]
fn r86_questions_queue_first_in_first_out() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, question("q1", 1)), (T0 + 2, question("q2", 1))],
    );
    assert_eq!(
        s.pending_questions.front(),
        Some(&PendingQuestionSet {
            id: "q1".into(),
            questions: vec!["q1?".into()]
        })
    );
    let (s, cmds) = step(
        s,
        T0 + 3,
        Msg::QuestionAnswered {
            id: None,
            answers: vec!["yes".into()],
        },
    );
    assert_eq!(
        cmds,
        vec![Cmd::ResolveQuestion {
            id: "q1".into(),
            answers: vec!["yes".into()]
        }]
    );
    let (s, cmds) = step(
        s,
        T0 + 4,
        Msg::QuestionAnswered {
            id: None,
            answers: vec!["no".into()],
        },
    );
    assert_eq!(
        cmds,
        vec![Cmd::ResolveQuestion {
            id: "q2".into(),
            answers: vec!["no".into()]
        }]
    );
    assert!(s.pending_questions.is_empty());
}

#[test]
fn r86_each_answer_closes_only_its_own_modal() {
    let s = settle(streaming(T0), &[(T0 + 1, approval("a", 1))]);
    let (s, cmds) = step(s, T0 + 2, question("q", 1));
    assert_eq!(
        (s.pending_approvals.len(), s.pending_questions.len()),
        (1, 1)
    );
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 3, Msg::approval_answer(None, true, None));
    assert_eq!(
        (s.pending_approvals.len(), s.pending_questions.len()),
        (0, 1),
        "the question still waits"
    );
    assert_eq!(
        cmds,
        vec![Cmd::ResolveApproval {
            id: "a".into(),
            tool: "Bash".into(),
            approved: true,
            for_session: false,
            by: None,
            reason: None,
        }]
    );
    let (s, cmds) = step(
        s,
        T0 + 4,
        Msg::QuestionAnswered {
            id: None,
            answers: vec![],
        },
    );
    assert!(s.pending_questions.is_empty());
    assert_eq!(
        cmds,
        vec![Cmd::ResolveQuestion {
            id: "q".into(),
            answers: vec![]
        }]
    );
}

#[test]
fn r86_an_answer_with_nothing_pending_is_counted_not_lost() {
    let (s, cmds) = step(
        streaming(T0),
        T0 + 1,
        Msg::approval_answer(None, true, None),
    );
    assert_eq!(s.diagnostics.ignored, 1);
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(
        s,
        T0 + 2,
        Msg::QuestionAnswered {
            id: None,
            answers: vec![],
        },
    );
    assert_eq!(s.diagnostics.ignored, 2);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r86_turn_reset_clears_both_queues() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, approval("a", 1)), (T0 + 2, question("q", 1))],
    );
    let (s, cmds) = step(s, T0 + 3, Msg::TurnReset);
    assert!(s.pending_approvals.is_empty() && s.pending_questions.is_empty());
    assert_eq!(cmds, vec![]);
}

#[test]
fn confirmation_modal_closes_on_either_answer_and_counts_a_stray_one() {
    let ask = Msg::ConfirmRequested {
        action: ConfirmAction::Clear,
        prompt: "Clear the conversation?".into(),
    };
    let (s, cmds) = step(subscribed_ready(T0), T0 + 1, ask);
    assert_eq!(
        s.confirm,
        Some(Confirmation {
            action: ConfirmAction::Clear,
            prompt: "Clear the conversation?".into()
        })
    );
    assert_eq!(cmds, vec![]);
    let (yes, cmds) = step(s.clone(), T0 + 2, Msg::ConfirmAnswered { accepted: true });
    assert_eq!(yes.confirm, None);
    assert_eq!(cmds, vec![]);
    let (no, cmds) = step(s, T0 + 2, Msg::ConfirmAnswered { accepted: false });
    assert_eq!(no.confirm, None);
    assert_eq!(cmds, vec![]);
    let (stray, cmds) = step(no, T0 + 3, Msg::ConfirmAnswered { accepted: true });
    assert_eq!(stray.diagnostics.ignored, 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r85_quit_clears_everything_parked_and_exits() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, approval("a", 1)),
            (T0 + 2, question("q", 1)),
            (T0 + 3, hook("ctx", 1)),
            (T0 + 4, notice("todo")),
        ],
    );
    let (s, cmds) = step(s, T0 + 5, Msg::Quit);
    assert!(s.should_exit);
    assert!(s.pending_approvals.is_empty() && s.pending_questions.is_empty());
    assert!(s.pending_hook_context.is_empty() && s.pending_task_notices.is_empty());
    assert_eq!(cmds, vec![]);
    // Idempotent: a second quit changes nothing and asks for nothing.
    assert_eq!(unchanged(s, T0 + 6, Msg::Quit), vec![]);
}

#[test]
fn r85_quit_while_idle_only_exits() {
    let (s, cmds) = step(subscribed_ready(T0), T0 + 1, Msg::Quit);
    assert!(s.should_exit);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r89_buffered_context_is_consumed_once_by_the_next_request() {
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, hook("first", 1)),
            (T0 + 2, notice("todos changed")),
            (T0 + 3, hook("second", 1)),
        ],
    );
    let (s, cmds) = step(
        s,
        T0 + 4,
        Msg::RequestStarted {
            turn: Some(TurnId(1)),
        },
    );
    assert_eq!(cmds, vec![]);
    assert!(s.pending_hook_context.is_empty() && s.pending_task_notices.is_empty());
    let (_, cmds) = step(
        s,
        T0 + 5,
        Msg::RequestStarted {
            turn: Some(TurnId(1)),
        },
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r89_hook_context_from_another_turn_is_not_accepted() {
    assert_eq!(
        update(second_turn(), hook("late", 1)),
        (second_turn(), vec![])
    );
    let (s, _) = step(second_turn(), T0 + 3, hook("now", 2));
    assert_eq!(s.pending_hook_context, vec!["now".to_string()]);
}

#[test]
fn r89_hook_context_is_capped_at_16_kib_and_the_cut_is_counted() {
    let big = "a".repeat(CONTEXT_BUFFER_CAP_BYTES - 10);
    let s = settle(streaming(T0), &[(T0 + 1, hook(&big, 1))]);
    let (s, cmds) = step(s, T0 + 2, hook(&"b".repeat(20), 1));
    assert_eq!(s.pending_hook_context, vec![big.clone(), "b".repeat(10)]);
    assert_eq!(s.diagnostics.ignored, 1);
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 3, hook("c", 1));
    assert_eq!(
        s.pending_hook_context.len(),
        2,
        "a full buffer takes nothing more"
    );
    assert_eq!(s.diagnostics.ignored, 2, "and counts what it refused");
    assert_eq!(cmds, vec![]);
}

#[test]
fn r89_task_notices_are_capped_on_a_character_boundary() {
    let s = settle(
        fresh(),
        &[(T0, notice(&"n".repeat(CONTEXT_BUFFER_CAP_BYTES - 3)))],
    );
    let (s, cmds) = step(s, T0 + 1, notice("ééé"));
    assert_eq!(s.pending_task_notices.last().map(String::as_str), Some("é"));
    assert_eq!(s.diagnostics.ignored, 1, "the cut is counted");
    assert_eq!(cmds, vec![]);
}

/// One sample of every variant, with every optional field filled so nothing is skipped.
fn every_msg() -> Vec<Msg> {
    let turn = Some(TurnId(3));
    let ledger: TurnLedger = serde_json::from_value(serde_json::json!({
        "turn_id": 4, "seq": 2, "origin": "user", "started_at_ms": T0, "passes": 2,
        "active": false, "inputs": 1, "counted_passes": 1, "output_tokens": 300,
        "cost_usd": 0.25, "steps": 3, "duration_api_ms": 900,
        "last_pass_ended_at_ms": T0 + 5, "settle_until_ms": T0 + 9, "ended_at_ms": T0 + 10,
        "end": "completed"
    }))
    .unwrap();
    vec![
        Msg::InitStart,
        Msg::InitReady { at: T0 },
        Msg::InitFailed {
            at: T0,
            reason: "boom".into(),
        },
        Msg::StreamSubscribe { at: T0 },
        Msg::StreamUnsubscribe { at: T0 },
        Msg::StreamFlushObserved {
            added_count: 3,
            at: T0,
        },
        Msg::StreamWatchdogTick,
        Msg::StreamSessionStarted,
        Msg::ReconcileTurnActive {
            at: T0,
            active: true,
        },
        Msg::ReconcileContextFromHistory {
            tokens: Some(9),
            model: Some("m".into()),
            at: Some(T0),
            reported_windows: BTreeMap::from([("m".to_string(), 200_000)]),
        },
        Msg::ContextWindowsReported {
            windows: BTreeMap::from([("m".to_string(), 200_000)]),
        },
        Msg::ContextInvalidated {
            reason: ContextInvalidation::TranscriptReplaced,
        },
        Msg::ContextModelSwitched { model: "m2".into() },
        Msg::TurnStart {
            at: T0,
            content: Some("/compact".into()),
        },
        Msg::TurnEnd {
            stats: Some(SessionStats {
                cost_usd: Some(0.125),
                duration_ms: Some(1),
                input_tokens: Some(2),
                output_tokens: Some(3),
                cached_input_tokens: Some(4),
                cache_write_input_tokens: Some(7),
                cache_write_1h_input_tokens: Some(1),
                reasoning_tokens: Some(5),
                num_turns: Some(6),
                cost_source: Some(CostSource::Reported),
            }),
            turn,
            interrupted: false,
        },
        Msg::TurnReset,
        Msg::TurnStartFailed,
        Msg::TurnCancelled { turn: TurnId(3) },
        Msg::ToolStart {
            name: "Bash".into(),
            arg: Some("ls".into()),
            turn,
        },
        Msg::ToolEnd { turn },
        Msg::TokensIn {
            input: 10,
            model: Some("m".into()),
            cache_read: Some(6),
            cache_write: Some(3),
            cache_write_1h: Some(1),
            turn,
        },
        Msg::TokensOut { output: 11, turn },
        Msg::OutputStreamed { chars: 12, turn },
        Msg::RequestStarted { turn },
        Msg::RequestStop { at: T0 },
        Msg::StopFailed,
        Msg::InterruptTimeoutElapsed {
            turn,
            deadline_ms: Some(T0),
        },
        Msg::SubmitTimeoutElapsed {
            turn,
            deadline_ms: Some(T0),
        },
        Msg::PendingMessageQueued {
            id: "p".into(),
            text: "t".into(),
            at: T0,
            enqueued_while_busy: true,
        },
        Msg::PendingMessageAccepted { id: "p".into() },
        Msg::PendingMessageRejected { id: "p".into() },
        Msg::PendingMessageExpired { id: "p".into() },
        Msg::PendingMessageFlushStarted { id: "p".into() },
        Msg::ProviderWaiting {
            reason: WaitingReason::RateLimited,
            retry_after_ms: Some(5),
            at: T0,
        },
        Msg::FailureObserved {
            failure: failure(FailureKind::ContextOverflow),
            at: T0,
        },
        Msg::FailureCleared,
        Msg::DetailsToggle,
        Msg::DetailsExpand,
        Msg::DetailsCollapse,
        Msg::StashToggle,
        Msg::CompactionStarted {
            trigger: CompactionTrigger::Manual,
            at: T0,
        },
        Msg::CompactionBoundary {
            trigger: CompactionTrigger::Auto,
            pre_tokens: 1,
            post_tokens: 2,
            duration_ms: Some(3),
            at: T0,
            frame_timestamp: Some(T0 - 1),
        },
        Msg::AttachedTaskObserved { at: T0 },
        Msg::AttachedTaskCleared,
        Msg::RegistryAttachedTaskObserved { since: T0 },
        Msg::RegistryAttachedTaskCleared,
        Msg::ResumeRetryStarted {
            at: T0,
            stale_session_id: "s".into(),
        },
        Msg::ResumeRetryResolved,
        Msg::TurnLedgerObserved {
            ledger: Box::new(ledger),
        },
        Msg::ApprovalRequested {
            id: "a".into(),
            tool: "t".into(),
            summary: "s".into(),
            turn,
        },
        Msg::approval_answer(None, false, None),
        Msg::QuestionAsked {
            id: "q".into(),
            questions: vec!["?".into()],
            turn,
        },
        Msg::QuestionAnswered {
            id: None,
            answers: vec!["!".into()],
        },
        Msg::ConfirmRequested {
            action: ConfirmAction::Clear,
            prompt: "sure?".into(),
        },
        Msg::ConfirmAnswered { accepted: true },
        Msg::HookContextAdded {
            text: "h".into(),
            turn: TurnId(3),
        },
        Msg::TaskNoticeAdded { text: "n".into() },
        Msg::Quit,
        Msg::PlanUpdated {
            steps: vec![PlanStep {
                text: "write the test".into(),
                status: PlanStepStatus::InProgress,
            }],
        },
        Msg::ApprovalWithdrawn { id: "a1".into() },
        Msg::PromptSubmitted {
            text: "and now the tests".into(),
        },
        Msg::AgentExited {
            code: Some(1),
            signal: None,
        },
        Msg::AgentShutdownOverdue,
        Msg::DeadlinesConfigured {
            submit_ms: 90_000,
            stuck_ms: 60_000,
        },
        Msg::ApprovalAsked { id: "a1".into() },
        Msg::WindowStoodDown {
            floor_tokens: 1_869,
            threshold_tokens: 1,
            at: 21,
        },
        Msg::WindowResumed { at: 22 },
        Msg::BudgetSet {
            caps: panewise_pane_state::BudgetCaps {
                max_cost_usd: Some(0.5),
                max_tokens: None,
            },
        },
        Msg::BudgetReached {
            reason: "budget reached: $0.51 of $0.50".into(),
        },
        Msg::BudgetReleased {
            reason: "budget raised to $2.00".into(),
        },
    ]
}

#[test]
fn r91_every_msg_variant_survives_a_serde_round_trip() {
    let msgs = every_msg();
    // `MsgKind` is closed and `Msg::kind` lists every variant without a wildcard (R79), so
    // covering every kind covers every variant.
    let covered: Vec<MsgKind> = msgs.iter().map(Msg::kind).collect();
    assert_eq!(
        covered,
        MsgKind::ALL,
        "every variant is sampled once, in order"
    );
    for msg in msgs {
        let json = serde_json::to_string(&msg).unwrap();
        let back: Msg = serde_json::from_str(&json).unwrap();
        assert_eq!(back, msg, "{json}");
        // The serde tag is the kind the logs and diagnostics name.
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["type"], msg.kind().as_str(), "{json}");
    }
}

#[test]
fn r91_a_message_kind_from_a_newer_version_does_not_parse() {
    assert!(serde_json::from_str::<Msg>(r#"{"type":"teleport","at":1}"#).is_err());
}

#[test]
fn r91_optional_fields_may_be_absent_in_a_recorded_message() {
    let msg: Msg = serde_json::from_str(r#"{"type":"turn_end"}"#).unwrap();
    assert_eq!(msg, turn_end());
    let msg: Msg =
        serde_json::from_str(r#"{"type":"reconcile_context_from_history","tokens":null}"#).unwrap();
    assert_eq!(
        msg,
        Msg::ReconcileContextFromHistory {
            tokens: None,
            model: None,
            at: None,
            reported_windows: BTreeMap::new()
        }
    );
}

#[test]
fn r91_r93_every_msg_kind_folds_the_same_live_and_from_its_recorded_log() {
    let header = LogHeader {
        agent_id: "agent-1".into(),
        started_at_ms: T0,
        model: None,
        ..LogHeader::default()
    };
    let mut recorder = Recorder::new(&header).unwrap();
    let mut live = fresh();
    live.now_ms = T0;
    for (i, msg) in every_msg().into_iter().enumerate() {
        let ts = T0 + i as u64 * 1_000;
        live = step(live, ts, msg.clone()).0;
        recorder.record(ts, msg).unwrap();
    }
    recorder.checkpoint().unwrap();
    let (recorded, bytes) = recorder.finish();
    assert_eq!(recorded, live);
    let log = parse_log_bytes(&bytes).unwrap();
    assert_eq!(log.warnings, vec![]);
    assert_eq!(log.fold(), live);
    assert_eq!(log.fold_checked(), Ok(live));
}

/// R86 with withdrawal: an approval the agent withdrew leaves the queue unanswered (no
/// `ResolveApproval`), the wait ends when it was the last, and a later answer resolves the next
/// one or is ignored; withdrawing an unknown id changes nothing.
#[test]
fn r86_a_withdrawn_approval_leaves_the_queue_without_an_answer() {
    let ask = |id: &str| Msg::ApprovalRequested {
        id: id.into(),
        tool: "Write".into(),
        summary: "claude-hello.txt".into(),
        turn: None,
    };
    let (s, _) = step(streaming(T0), T0 + 1, ask("a"));
    let (s, _) = step(s, T0 + 2, ask("b"));
    let (s, cmds) = step(s, T0 + 3, Msg::ApprovalWithdrawn { id: "a".into() });
    assert!(cmds.is_empty(), "{cmds:?}");
    assert_eq!(s.pending_approvals.len(), 1);
    let (s, cmds) = step(s, T0 + 4, Msg::approval_answer(None, true, None));
    assert_eq!(
        cmds,
        vec![Cmd::ResolveApproval {
            id: "b".into(),
            tool: "Write".into(),
            approved: true,
            for_session: false,
            by: None,
            reason: None,
        }]
    );
    let (s, _) = step(s, T0 + 5, ask("c"));
    let (s, cmds) = step(s, T0 + 6, Msg::ApprovalWithdrawn { id: "c".into() });
    assert_eq!(cmds, vec![]);
    assert!(s.pending_approvals.is_empty());
    let ignored = s.diagnostics.ignored;
    let (s, cmds) = step(s, T0 + 7, Msg::ApprovalWithdrawn { id: "zz".into() });
    assert_eq!(cmds, vec![]);
    assert_eq!(
        s.diagnostics.ignored,
        ignored + 1,
        "an unknown id is counted"
    );
}
