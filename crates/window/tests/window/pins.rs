//! W21–W29: the last-tool-result pin, the ledger-fact pin, ceilings and the stand-down.

use panewise_window::{
    Findings, Message, PinSettings, RefusalReason, SlidingWindow, Standing, Visit, WindowRecord,
    WindowStage,
};

use crate::support::*;

fn pinned_turns(plan: &panewise_window::WindowPlan<Message>) -> Vec<(String, usize)> {
    plan.record
        .observations
        .as_ref()
        .map(|o| {
            o.pinned
                .iter()
                .map(|p| (p.tool_name.clone(), p.turn_index))
                .collect()
        })
        .unwrap_or_default()
}

/// request, then grep, ls, grep, read tool turns, then `tail` plain turns.
fn loop_with_tools(tail: usize) -> Vec<Message> {
    let mut messages = vec![Message::user("request")];
    messages.extend(tool_turn("c1", "grep", 300));
    messages.extend(tool_turn("c2", "ls", 300));
    messages.extend(tool_turn("c3", "grep", 300));
    messages.extend(tool_turn("c4", "read_file", 300));
    messages.extend((0..tail).map(|i| Message::assistant(format!("note {i}"))));
    messages
}

#[test]
fn w21_one_pin_per_tool_newest_first_after_the_anchor() {
    let conversation = conversation(loop_with_tools(2));
    let stage = Harness::from(WindowStage::with_pins(
        Box::new(SlidingWindow::new(1).unwrap()),
        PinSettings {
            keep_last_tool_results: 10,
            keep_ledger_facts: 0,
            exclude_tools: Vec::new(),
        },
    ));
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    // Turns: 0 request, 1 grep, 2 ls, 3 grep, 4 read_file, 5-6 notes.
    assert_eq!(
        pinned_turns(&plan),
        vec![
            ("read_file".to_string(), 4),
            ("grep".to_string(), 3),
            ("ls".to_string(), 2)
        ]
    );
    let kept = plan.kept_indices(conversation.len());
    assert!(
        kept.contains(&7) && kept.contains(&8),
        "the latest results stay"
    );
}

#[test]
fn w21_names_are_recovered_from_the_call_and_an_unnamed_result_is_never_pinned() {
    let mut messages = vec![Message::user("request")];
    messages.push(Message::tool_result("unknown-call", text(300)));
    messages.extend(tool_turn("c1", "grep", 300));
    messages.extend((0..3).map(|i| Message::assistant(format!("n{i}"))));
    let conversation = conversation(messages);
    let plan = visit(
        &stage(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    assert_eq!(pinned_turns(&plan), vec![("grep".to_string(), 1)]);
}

#[test]
fn w21_a_parallel_batch_is_one_pin() {
    let mut messages = vec![Message::user("request")];
    messages.push(Message::assistant_calls(
        "",
        &[("a", "grep", "{}"), ("b", "ls", "{}")],
    ));
    messages.push(Message::tool_result("a", text(100)));
    messages.push(Message::tool_result("b", text(100)));
    messages.extend((0..3).map(|i| Message::assistant(format!("n{i}"))));
    let conversation = conversation(messages);
    let plan = visit(
        &stage(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    let observations = plan.record.observations.unwrap();
    assert_eq!(observations.pinned.len(), 1);
    assert_eq!(observations.pinned[0].tool_name, "ls");
    assert_eq!(observations.pinned[0].chars, 200);
}

#[test]
fn w22_a_new_user_request_releases_the_pins_of_the_previous_loop() {
    let mut messages = loop_with_tools(0);
    messages.push(Message::user("new request"));
    messages.extend((0..3).map(|i| Message::assistant(format!("n{i}"))));
    let conversation = conversation(messages);
    let plan = visit(
        &stage(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    assert!(plan.record.observations.is_none());
    assert!(plan.record.removed_message_count >= 9);
}

#[test]
fn w23_limit_zero_behaves_exactly_as_no_pin() {
    let conversation = conversation(loop_with_tools(3));
    let off = visit(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    assert!(off.record.observations.is_none());
    assert!(!off
        .record
        .refusals
        .iter()
        .any(|r| r.reason == RefusalReason::LastToolResult));
    // Everything between the request and the keep window leaves: 4 tool turns and 2 notes.
    assert_eq!(off.record.removed_message_count, 10);
}

#[test]
fn w24_only_turns_declared_fact_are_pinned_and_refiling_releases_them() {
    let conversation = conversation(loop_with_tools(3));
    let pins = PinSettings {
        keep_last_tool_results: 0,
        keep_ledger_facts: 4,
        exclude_tools: Vec::new(),
    };
    let stage = Harness::from(WindowStage::with_pins(
        Box::new(SlidingWindow::new(1).unwrap()),
        pins,
    ));
    let mut findings = Findings::new();
    findings.declare("c1", Standing::Fact);
    findings.declare("c2", Standing::Open);
    let mut context = context(1);
    context.findings = Some(&findings);
    let plan = visit(&stage, &conversation, context).unwrap();
    let facts = plan.record.ledger_facts.clone().unwrap();
    assert_eq!(facts.pinned.len(), 1);
    assert_eq!(
        (
            facts.pinned[0].tool_name.as_str(),
            facts.pinned[0].turn_index
        ),
        ("grep", 1)
    );
    assert!(plan
        .record
        .refusals
        .iter()
        .any(|r| r.reason == RefusalReason::LedgerFact && r.turn_index == 1));

    findings.declare("c1", Standing::RuledOut);
    let mut context = crate::support::context(1);
    context.findings = Some(&findings);
    let plan = visit(&stage, &conversation, context).unwrap();
    assert!(plan.record.ledger_facts.is_none());
}

#[test]
fn w25_a_turn_held_by_both_pins_reports_last_tool_result() {
    let conversation = conversation(loop_with_tools(3));
    let mut findings = Findings::new();
    findings.declare("c3", Standing::Fact);
    let mut context = context(1);
    context.findings = Some(&findings);
    let plan = visit(
        &stage(SlidingWindow::new(1).unwrap()),
        &conversation,
        context,
    )
    .unwrap();
    // Turn 3 (grep, c3) is both the latest grep result and a declared fact.
    let at_3: Vec<RefusalReason> = plan
        .record
        .refusals
        .iter()
        .filter(|r| r.turn_index == 3)
        .map(|r| r.reason)
        .collect();
    assert_eq!(at_3, vec![RefusalReason::LastToolResult]);
}

#[test]
fn w26_an_armed_agent_records_the_standings_of_dropped_results() {
    let mut messages = vec![Message::user("old")];
    messages.extend(tool_turn("c1", "grep", 300));
    messages.extend(tool_turn("c2", "grep", 300));
    messages.push(Message::user("new"));
    messages.push(Message::assistant("ok"));
    let conversation = conversation(messages);
    let mut findings = Findings::new();
    findings.declare("c1", Standing::Noise);
    let mut context = context(1);
    context.findings = Some(&findings);
    let plan = visit(
        &stage(SlidingWindow::new(1).unwrap()),
        &conversation,
        context,
    )
    .unwrap();
    let standings = plan.record.dropped_standings.unwrap();
    assert_eq!(standings.len(), 2);
    assert_eq!(standings[0].standing, Some(Standing::Noise));
    assert_eq!(standings[1].standing, None, "absent means undeclared");
    let json = serde_json::to_value(&standings[1]).unwrap();
    assert!(json.get("standing").is_none());
}

#[test]
fn w27_the_ceiling_is_spent_newest_first_and_the_rest_yielded() {
    let conversation = conversation(loop_with_tools(3));
    let plan = visit(
        &stage(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    let observations = plan.record.observations.unwrap();
    let turns: Vec<usize> = observations.pinned.iter().map(|p| p.turn_index).collect();
    assert_eq!(turns, vec![4, 3]);
    assert_eq!(observations.yielded, 1, "ls at turn 2 was turned away");
    assert_eq!(observations.limit, 2);
}

#[test]
fn w27_a_pin_inside_the_keep_window_is_free() {
    let conversation = conversation(loop_with_tools(0));
    // Keep 2 turns: grep (turn 3) and read_file (turn 4) are already safe.
    let plan = visit(
        &stage(SlidingWindow::new(2).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    let observations = plan.record.observations.unwrap();
    assert_eq!(observations.pinned.len(), 1);
    assert_eq!(observations.pinned[0].tool_name, "ls");
    assert_eq!(observations.yielded, 0);
}

#[test]
fn w28_the_third_blocked_boundary_stands_down_and_says_so() {
    // Old request, then pinned tool turns at the front: nothing removable but pins.
    let mut messages = vec![Message::user("request")];
    messages.extend(tool_turn("c1", "grep", 300));
    messages.extend(tool_turn("c2", "ls", 300));
    messages.push(Message::assistant("recent"));
    let mut conversation = conversation(messages);
    let stage = stage(SlidingWindow::new(1).unwrap());
    let mut ledger: Vec<WindowRecord> = Vec::new();
    for iteration in 1..=2 {
        let mut context = context(iteration);
        context.previous_records = &ledger;
        let plan = visit(&stage, &conversation, context).unwrap();
        assert_eq!(plan.record.removed_message_count, 0);
        assert!(plan.record.blocked_by_pins());
        ledger.push(plan.record);
    }
    let mut context = context(3);
    context.previous_records = &ledger;
    let plan = visit_and_apply(&stage, &mut conversation, context).unwrap();
    let observations = plan.record.observations.clone().unwrap();
    assert_eq!(observations.stand_down, Some(true));
    assert!(observations.pinned.is_empty());
    assert_eq!(observations.yielded, 0);
    assert_eq!(observations.limit, 2);
    assert_eq!(plan.record.removed_message_count, 4);
    let json = serde_json::to_value(&plan.record).unwrap();
    assert_eq!(json["observations"]["standDown"], true);
}

#[test]
fn w29_the_floor_is_the_request_plus_admitted_pins_plus_the_keep_window() {
    let mut messages = vec![Message::user("request")];
    for i in 0..40 {
        let tool = format!("tool_{}", i % 8);
        messages.extend(tool_turn(&format!("c{i}"), &tool, 500));
    }
    let mut conversation = conversation(messages);
    let stage = stage(SlidingWindow::new(3).unwrap());
    for iteration in 1..6 {
        visit_and_apply(&stage, &mut conversation, context(iteration));
    }
    // 1 request turn + 2 pins + 3 kept turns, whatever the number of tools.
    assert!(
        conversation.turn_count() <= 1 + 2 + 3 + 1,
        "{}",
        conversation.turn_count()
    );
    assert!(no_orphaned_results(conversation.messages()));
}

#[test]
fn w59_pins_survive_thirty_iterations_of_tool_traffic_and_move_when_the_tool_answers_again() {
    let mut conversation = conversation(vec![Message::user("request")]);
    conversation.extend(tool_turn("whats_here", "whats_here", 400));
    let stage = stage(SlidingWindow::new(2).unwrap());
    let mut ledger = Vec::new();
    for i in 0..30 {
        conversation.extend(tool_turn(&format!("r{i}"), "read_file", 400));
        let mut context = context(i + 1);
        context.previous_records = &ledger;
        if let Some(plan) = visit_and_apply(&stage, &mut conversation, context) {
            ledger.push(plan.record);
        }
        assert!(contents(&conversation).contains(&text(400)));
        assert!(conversation
            .messages()
            .iter()
            .any(|m| m.tool_call_id.as_deref() == Some("whats_here")));
    }
    conversation.extend(tool_turn("whats_here_2", "whats_here", 400));
    for i in 30..34 {
        conversation.extend(tool_turn(&format!("r{i}"), "read_file", 400));
        visit_and_apply(&stage, &mut conversation, context(i + 1));
    }
    assert!(!conversation
        .messages()
        .iter()
        .any(|m| m.tool_call_id.as_deref() == Some("whats_here")));
    assert!(conversation
        .messages()
        .iter()
        .any(|m| m.tool_call_id.as_deref() == Some("whats_here_2")));
    // The same traffic with the pin off loses the evidence.
    let mut without = crate::support::conversation(vec![Message::user("request")]);
    without.extend(tool_turn("whats_here", "whats_here", 400));
    let off = stage_without_pins(SlidingWindow::new(2).unwrap());
    for i in 0..5 {
        without.extend(tool_turn(&format!("r{i}"), "read_file", 400));
        visit_and_apply(&off, &mut without, context(i + 1));
    }
    assert!(!without
        .messages()
        .iter()
        .any(|m| m.tool_call_id.as_deref() == Some("whats_here")));
}

#[test]
fn w21_pins_are_never_at_or_before_the_anchor() {
    let mut messages = vec![];
    messages.extend(tool_turn("c0", "grep", 300));
    messages.push(Message::user("request"));
    messages.extend((0..3).map(|i| Message::assistant(format!("n{i}"))));
    let conversation = conversation(messages);
    let mut visit = Visit::new(&conversation, context(1), PinSettings::default());
    let plan = visit.plan_removal(1, false);
    assert!(!plan
        .refusals
        .iter()
        .any(|r| r.reason == RefusalReason::LastToolResult));
}
