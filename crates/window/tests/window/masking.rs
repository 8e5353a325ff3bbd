//! Observation masking and the hybrid strategy (beyond the original rules; they keep W7 and
//! W20 by never removing a turn).

use panewise_window::record::{PlanAction, RecordDetail};
use panewise_window::{Message, ObservationMasking, RefusalReason};

use crate::support::*;

fn traffic(results: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("sys"), Message::user("request")];
    for i in 0..results {
        let tool = if i % 2 == 0 { "read_file" } else { "grep" };
        messages.extend(tool_turn(&format!("c{i}"), tool, 1_000));
    }
    messages
}

#[test]
fn masking_replaces_old_results_with_a_placeholder_naming_the_tool() {
    let mut conversation = conversation(traffic(5));
    let stage = stage(ObservationMasking::new(2));
    let plan = visit_and_apply(&stage, &mut conversation, context(1)).unwrap();
    let tools: Vec<&Message> = conversation
        .messages()
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .collect();
    assert!(tools[0].content.starts_with("[masked tool result"));
    assert!(tools[0].content.contains("read_file"));
    assert!(tools[1].content.contains("grep"));
    assert!(tools[2].content.starts_with("[masked tool result"));
    assert_eq!(tools[3].content, text(1_000));
    assert_eq!(tools[4].content, text(1_000));
    assert_eq!(plan.record.removed_message_count, 0);
    assert_eq!(plan.record.window_chars_after, conversation.window_chars());
    match plan.record.detail {
        RecordDetail::Masking(detail) => {
            assert_eq!(detail.masked_message_count, 3);
            assert_eq!(detail.masked_tools, vec!["read_file", "grep"]);
        }
        other => panic!("unexpected detail {other:?}"),
    }
    assert!(no_orphaned_results(conversation.messages()));
    assert_eq!(conversation.len(), 12, "masking removes no message");
}

#[test]
fn masking_is_incremental_and_a_second_visit_only_masks_what_is_new() {
    let mut conversation = conversation(traffic(5));
    let stage = stage(ObservationMasking::new(2));
    visit_and_apply(&stage, &mut conversation, context(1));
    assert!(
        visit(&stage, &conversation, context(2)).is_none(),
        "nothing new to mask"
    );
    conversation.extend(tool_turn("c9", "ls", 1_000));
    let plan = visit_and_apply(&stage, &mut conversation, context(3)).unwrap();
    match plan.record.detail {
        RecordDetail::Masking(detail) => assert_eq!(detail.masked_message_count, 1),
        other => panic!("unexpected detail {other:?}"),
    }
}

#[test]
fn masking_never_prints_a_tool_name_that_is_not_a_plain_identifier() {
    let mut messages = vec![Message::user("request")];
    messages.extend(tool_turn("c1", "name with spaces; and more", 1_000));
    messages.extend(tool_turn("c2", "grep", 1_000));
    let mut conversation = conversation(messages);
    visit_and_apply(
        &stage(ObservationMasking::new(1)),
        &mut conversation,
        context(1),
    );
    let masked = &conversation.messages()[2].content;
    assert!(masked.starts_with("[masked tool result"));
    assert!(!masked.contains("spaces"));
}

#[test]
fn masking_leaves_small_results_alone() {
    let mut messages = vec![Message::user("request")];
    messages.extend(tool_turn("c1", "grep", 50));
    messages.extend(tool_turn("c2", "grep", 50));
    let conversation = conversation(messages);
    assert!(visit(
        &stage(ObservationMasking::new(0)),
        &conversation,
        context(1)
    )
    .is_none());
}

#[test]
fn hybrid_masks_first_when_that_is_enough() {
    let mut conversation = conversation(traffic(6));
    let summarizer = FixedSummarizer::new("s");
    let stage = configured(
        r#"{"strategy":"hybrid","thresholdTokens":1000,"keepRecentTurns":2,"keepRecentObservations":2,"model":"m"}"#,
        Some(Box::new(summarizer.clone())),
    );
    let plan = {
        let context = measured_context(&conversation, 2, 1_600);
        visit_and_apply(&stage, &mut conversation, context)
    }
    .unwrap();
    assert_eq!(summarizer.calls(), 0);
    assert_eq!(plan.budget_pressure.unwrap().plan_action, PlanAction::Mask);
    match plan.record.detail {
        RecordDetail::Hybrid(detail) => {
            assert!(detail.compaction.is_none());
            assert_eq!(detail.masking.masked_message_count, 4);
        }
        other => panic!("unexpected detail {other:?}"),
    }
}

#[test]
fn hybrid_folds_only_when_masking_is_not_enough() {
    let mut conversation = conversation(traffic(6));
    let summarizer = FixedSummarizer::new("s");
    let stage = configured(
        r#"{"strategy":"hybrid","thresholdTokens":500,"keepRecentTurns":1,"keepRecentObservations":2,"model":"m","keepLastToolResults":0}"#,
        Some(Box::new(summarizer.clone())),
    );
    let plan = {
        let context = measured_context(&conversation, 2, 1_600);
        visit_and_apply(&stage, &mut conversation, context)
    }
    .unwrap();
    assert_eq!(summarizer.calls(), 1);
    assert_eq!(
        plan.budget_pressure.unwrap().plan_action,
        PlanAction::Summarize
    );
    assert!(plan.record.removed_message_count > 0);
    assert_eq!(plan.record.window_chars_after, conversation.window_chars());
    assert!(contents(&conversation).contains(&"request".to_string()));
    assert!(!plan
        .record
        .refusals
        .iter()
        .any(|r| r.reason == RefusalReason::SummarizerFailed));
    assert!(no_orphaned_results(conversation.messages()));
}
