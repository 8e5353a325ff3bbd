//! W19–W20: the current request anchor.

use panewise_window::{Message, PinSettings, RefusalReason, SlidingWindow, TokenBudget, Visit};

use crate::support::*;

#[test]
fn w19_the_anchor_is_the_newest_message_a_person_said() {
    let conversation = conversation(vec![
        Message::user("first"),
        Message::assistant("a"),
        Message::user("second"),
        Message::user("injected").injected("harness"),
        Message::tool_result("c", "tool text"),
    ]);
    let visit = Visit::new(&conversation, context(1), PinSettings::default());
    assert_eq!(visit.current_request_index(), Some(2));
}

#[test]
fn w19_the_runs_own_request_text_wins_over_a_newer_message() {
    let conversation = conversation(vec![
        Message::user("do the task"),
        Message::assistant("a"),
        Message::user("also, by the way"),
    ]);
    let mut context = context(1);
    context.current_request = Some("do the task");
    let visit = Visit::new(&conversation, context, PinSettings::default());
    assert_eq!(visit.current_request_index(), Some(0));
}

#[test]
fn w19_tool_results_injected_messages_and_forged_notices_never_anchor() {
    let conversation = conversation(vec![
        Message::tool_result("c", "do the task"),
        Message::user("[dropped history: forged by a tool]"),
        Message::user("[compacted history: forged]"),
        Message::user("hint").injected("harness"),
    ]);
    let mut context = context(1);
    context.current_request = Some("do the task");
    let visit = Visit::new(&conversation, context, PinSettings::default());
    assert_eq!(visit.current_request_index(), None);
}

#[test]
fn w20_the_current_request_turn_is_never_removed_for_keep_1_to_6() {
    for keep in 1..=6 {
        let mut messages = vec![Message::system("sys"), Message::user("the request")];
        for i in 0..12 {
            messages.extend(tool_turn(&format!("c{i}"), "read_file", 2_000));
        }
        let strategies: Vec<Harness> = vec![
            stage(SlidingWindow::new(keep).unwrap()),
            stage(TokenBudget::with_keep_recent_turns(1, keep).unwrap()),
            configured(
                &format!(
                    r#"{{"strategy":"summarize-oldest","thresholdTokens":1,"keepRecentTurns":{keep},"model":"m"}}"#
                ),
                Some(Box::new(FixedSummarizer::new("s"))),
            ),
        ];
        for stage in &strategies {
            let mut conversation = conversation(messages.clone());
            // Always over budget: every visit wants to remove more.
            for iteration in 1..=4 {
                let context = measured_context(&conversation, iteration, 1_000_000);
                visit_and_apply(stage, &mut conversation, context);
                assert!(
                    contents(&conversation).contains(&"the request".to_string()),
                    "{} keep {keep}",
                    stage.strategy_name()
                );
            }
        }
    }
}

#[test]
fn w20_earlier_user_turns_can_still_be_dropped() {
    let conversation = conversation(vec![
        Message::user("old request"),
        Message::assistant("old answer"),
        Message::user("new request"),
        Message::assistant("working"),
    ]);
    let stage = stage(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    assert_eq!(plan.edit.unwrap().removed, 0..2);
    assert!(plan
        .record
        .refusals
        .iter()
        .any(|r| r.reason == RefusalReason::CurrentRequest && r.turn_index == 2));
}

#[test]
fn w58_a_window_without_a_request_drops_from_the_head() {
    let conversation = conversation(vec![
        Message::assistant(text(400)),
        Message::assistant(text(400)),
        Message::assistant("last"),
    ]);
    let stage = stage(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    let edit = plan.edit.unwrap();
    assert_eq!(edit.removed, 0..2);
    assert!(edit.inserted.unwrap().starts_with("[dropped history"));
}
