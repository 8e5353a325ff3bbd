//! W9–W18: the strategy interface and the refusal engine.

use panewise_window::{
    Message, Paused, PinSettings, RefusalReason, SlidingWindow, Visit, VisitContext,
};

use crate::support::*;

fn reasons(plan: &panewise_window::WindowPlan<Message>) -> Vec<(RefusalReason, usize)> {
    plan.record
        .refusals
        .iter()
        .map(|r| (r.reason, r.turn_index))
        .collect()
}

#[test]
fn w14_reasons_are_a_closed_kebab_case_set_without_the_old_spelling() {
    let all = [
        RefusalReason::SystemEnvelope,
        RefusalReason::CurrentRequest,
        RefusalReason::UnresolvedToolCall,
        RefusalReason::PausedTool,
        RefusalReason::PendingCheckIn,
        RefusalReason::InsideKeepWindow,
        RefusalReason::LastToolResult,
        RefusalReason::LedgerFact,
        RefusalReason::OnlyExistingSummary,
        RefusalReason::SummarizerFailed,
        RefusalReason::ReplacementNotSmaller,
    ];
    let spelled: Vec<String> = all
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    assert!(spelled.contains(&"\"replacement-not-smaller\"".to_string()));
    assert!(spelled.contains(&"\"system-envelope\"".to_string()));
    assert!(!spelled.iter().any(|s| s.contains("summary-not-smaller")));
    assert!(serde_json::from_str::<RefusalReason>("\"summary-not-smaller\"").is_err());
}

#[test]
fn w15_current_request_and_system_envelope_each_refuse() {
    // A turn holding the request and nothing else; a system message in its own turn.
    let conversation = conversation(vec![
        Message::system("sys"),
        Message::user("the request"),
        Message::assistant("a"),
        Message::assistant("b"),
    ]);
    let stage = stage_without_pins(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    let found = reasons(&plan);
    assert_eq!(found[0], (RefusalReason::SystemEnvelope, 0));
    assert_eq!(found[1], (RefusalReason::CurrentRequest, 1));
}

#[test]
fn w15_an_unanswered_call_is_reported_before_a_pin() {
    let mut messages = vec![Message::user("q")];
    messages.push(Message::assistant_calls(
        "",
        &[("c1", "grep", "{}"), ("c2", "ls", "{}")],
    ));
    messages.push(Message::tool_result("c1", text(400)));
    messages.extend((0..3).map(|i| Message::assistant(format!("thinking {i}"))));
    let conversation = conversation(messages);
    let stage = stage(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    assert!(reasons(&plan).contains(&(RefusalReason::UnresolvedToolCall, 1)));
    assert!(!reasons(&plan)
        .iter()
        .any(|(r, _)| *r == RefusalReason::LastToolResult));
}

#[test]
fn w15_the_paused_call_refuses_as_paused_or_pending_check_in() {
    let mut messages = vec![Message::user("q")];
    messages.extend(tool_turn("ask", "ask_human", 300));
    messages.extend((0..3).map(|i| Message::assistant(format!("step {i}"))));
    let conversation = conversation(messages);
    let stage = stage_without_pins(SlidingWindow::new(1).unwrap());
    for (check_in, expected) in [
        (false, RefusalReason::PausedTool),
        (true, RefusalReason::PendingCheckIn),
    ] {
        let mut context = context(1);
        context.paused = Some(Paused {
            call_id: "ask",
            check_in,
        });
        let plan = visit(&stage, &conversation, context).unwrap();
        assert!(
            reasons(&plan).contains(&(expected, 1)),
            "{:?}",
            reasons(&plan)
        );
        let kept = plan.kept_indices(conversation.len());
        assert!(kept.contains(&1) && kept.contains(&2));
    }
}

#[test]
fn w16_no_candidate_means_only_keep_window_refusals() {
    let conversation = conversation(vec![Message::user("a"), Message::assistant("b")]);
    let mut visit = Visit::new(&conversation, context(1), PinSettings::default());
    let plan = visit.plan_removal(5, false);
    assert!(plan.span.is_none());
    assert!(plan
        .refusals
        .iter()
        .all(|r| r.reason == RefusalReason::InsideKeepWindow));
    assert_eq!(plan.refusals.len(), 2);
}

#[test]
fn w16_a_refusing_oldest_turn_is_stepped_over() {
    let conversation = conversation(vec![
        Message::system("sys"),
        Message::assistant("old 1"),
        Message::assistant("old 2"),
        Message::user("now"),
    ]);
    let mut visit = Visit::new(&conversation, context(1), PinSettings::default());
    let plan = visit.plan_removal(1, false);
    let span = plan.span.unwrap();
    assert_eq!((span.from_turn, span.to_turn), (1, 2));
    assert_eq!(plan.refusals[0].reason, RefusalReason::SystemEnvelope);
}

#[test]
fn w16_a_refusing_turn_in_the_middle_ends_the_span_and_later_turns_are_not_examined() {
    let mut messages = vec![Message::assistant("removable")];
    messages.push(Message::assistant_calls("", &[("open", "grep", "{}")]));
    messages.push(Message::assistant("after"));
    messages.push(Message::system("late system"));
    messages.push(Message::user("now"));
    let conversation = conversation(messages);
    let mut visit = Visit::new(&conversation, context(1), PinSettings::default());
    let plan = visit.plan_removal(1, false);
    let span = plan.span.unwrap();
    assert_eq!((span.from_turn, span.to_turn), (0, 0));
    let named: Vec<RefusalReason> = plan.refusals.iter().map(|r| r.reason).collect();
    assert_eq!(
        named,
        vec![
            RefusalReason::UnresolvedToolCall,
            RefusalReason::InsideKeepWindow
        ]
    );
}

#[test]
fn w12_when_every_candidate_refuses_nothing_is_removed_and_the_record_says_why() {
    let conversation = conversation(vec![
        Message::system("s1"),
        Message::system("s2"),
        Message::user("now"),
        Message::assistant("reply"),
    ]);
    let stage = stage(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    assert!(plan.edit.is_none());
    assert_eq!(plan.record.removed_message_count, 0);
    assert_eq!(
        plan.record.window_chars_before,
        plan.record.window_chars_after
    );
    assert_eq!(
        reasons(&plan),
        vec![
            (RefusalReason::SystemEnvelope, 0),
            (RefusalReason::SystemEnvelope, 1),
            (RefusalReason::CurrentRequest, 2),
            (RefusalReason::InsideKeepWindow, 3)
        ]
    );
}

#[test]
fn w16_a_lone_earlier_summary_refuses_as_only_existing_summary() {
    let conversation = conversation(vec![
        Message::user("[compacted history: 4 messages folded]\n\nsummary").injected("window"),
        Message::user("now"),
        Message::assistant("reply"),
    ]);
    let mut visit = Visit::new(&conversation, context(1), PinSettings::default());
    let plan = visit.plan_removal(1, true);
    assert!(plan.span.is_none());
    let named: Vec<RefusalReason> = plan.refusals.iter().map(|r| r.reason).collect();
    // The walk's refusals first, then the summary, then the keep window (W16 step 4).
    assert_eq!(
        named,
        vec![
            RefusalReason::CurrentRequest,
            RefusalReason::OnlyExistingSummary,
            RefusalReason::InsideKeepWindow
        ]
    );
    // Without the predicate (a drop strategy) the old summary may go like any turn.
    assert!(visit.plan_removal(1, false).span.is_some());
}

#[test]
fn w17_the_span_never_reaches_into_the_keep_window() {
    let messages: Vec<Message> = (0..10)
        .map(|i| Message::assistant(format!("m{i}")))
        .collect();
    let conversation = conversation(messages);
    for keep in 1..10 {
        let mut visit = Visit::new(
            &conversation,
            VisitContext::new(1, 0),
            PinSettings::default(),
        );
        let span = visit.plan_removal(keep, false).span.unwrap();
        assert!(span.to_turn < 10 - keep);
    }
}

#[test]
fn w18_strategy_refusals_come_before_the_planner_refusals() {
    let conversation = conversation(vec![
        Message::system("s"),
        Message::user("old"),
        Message::assistant("a"),
        Message::user("now"),
    ]);
    let stage = configured(
        r#"{"strategy":"summarize-oldest","thresholdTokens":49,"keepRecentTurns":1,"model":"m"}"#,
        Some(Box::new(FailingSummarizer)),
    );
    let plan = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 50),
    )
    .unwrap();
    assert_eq!(reasons(&plan)[0], (RefusalReason::SummarizerFailed, 1));
    assert_eq!(plan.record.refusals[0].message_index, 1);
    assert_eq!(reasons(&plan)[1], (RefusalReason::SystemEnvelope, 0));
}
