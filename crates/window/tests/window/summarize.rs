//! W34 and W40–W48: summarize-oldest, the summary frame, the summarizer request and folded
//! spans.

use panewise_window::record::{folded_messages, folded_span_for, PlanAction, RecordDetail};
use panewise_window::{
    message::fnv1a_hex, Message, RefusalReason, Retain, StageMemory, StrategyConfig,
    SummarizeOldest, SummaryResponse, VisitOutcome,
};

use crate::support::*;

fn folding_conversation() -> Vec<Message> {
    let mut messages = vec![Message::system("sys"), Message::user("old request")];
    messages.extend(tool_turn("c1", "grep", 1_500));
    messages.extend(tool_turn("c2", "read_file", 1_500));
    messages.push(Message::user("current request"));
    messages.push(Message::assistant("working"));
    messages
}

fn summarize_stage(summarizer: FixedSummarizer, retain: &str) -> Harness {
    configured(
        &format!(
            r#"{{"strategy":"summarize-oldest","thresholdTokens":4500,"keepRecentTurns":2,"model":"small-model","retain":"{retain}","keepLastToolResults":false}}"#
        ),
        Some(Box::new(summarizer)),
    )
}

#[test]
fn w34_summarize_oldest_waits_for_the_first_call_and_for_the_budget() {
    let conversation = conversation(folding_conversation());
    let summarizer = FixedSummarizer::new("summary");
    let stage = summarize_stage(summarizer.clone(), "conversation");
    assert!(visit(&stage, &conversation, context(1)).is_none());
    assert!(visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 4_500)
    )
    .is_none());
    assert_eq!(summarizer.calls(), 0);
}

#[test]
fn w34_the_oldest_span_is_folded_into_a_framed_summary() {
    let mut conversation = conversation(folding_conversation());
    let summarizer = FixedSummarizer::new("the user asked X; grep found Y");
    let stage = summarize_stage(summarizer.clone(), "conversation");
    let mut context = measured_context(&conversation, 2, 5_000);
    context.run_id = Some("run-7");
    let plan = visit_and_apply(&stage, &mut conversation, context).unwrap();
    assert_eq!(summarizer.calls(), 1);
    let window = contents(&conversation);
    assert_eq!(window[0], "sys");
    assert!(window[1].starts_with("[compacted history"));
    assert!(window[1].ends_with("\n\nthe user asked X; grep found Y"));
    assert_eq!(window[2], "current request");
    assert_eq!(plan.record.removed_message_count, 5);
    assert_eq!(
        plan.budget_pressure.unwrap().plan_action,
        PlanAction::Summarize
    );
    assert_eq!(plan.spend.as_ref().unwrap().model, "small-model");
    match &plan.record.detail {
        RecordDetail::Compaction(detail) => {
            assert_eq!(detail.summary_chars, window[1].chars().count() as u64);
            assert_eq!(detail.summarizer_tokens, Some(120));
            assert_eq!(detail.summarizer_skipped, None);
            assert!(detail.over_budget);
        }
        other => panic!("unexpected detail {other:?}"),
    }
    let span = &plan.folded[0];
    assert_eq!(span.run_id, "run-7");
    assert_eq!(span.message_count, 5);
    assert_eq!(span.summary_fingerprint, fnv1a_hex(&window[1]));
}

#[test]
fn w34_a_failing_summarizer_changes_nothing_and_says_why() {
    let conversation = conversation(folding_conversation());
    let stage = configured(
        r#"{"strategy":"summarize-oldest","thresholdTokens":4500,"keepRecentTurns":2,"model":"m"}"#,
        Some(Box::new(FailingSummarizer)),
    );
    let plan = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 5_000),
    )
    .unwrap();
    assert!(plan.edit.is_none());
    assert_eq!(
        plan.record.refusals[0].reason,
        RefusalReason::SummarizerFailed
    );
    assert!(plan.spend.is_none());
    let warning = plan.warning.unwrap();
    assert!(warning.contains("provider unavailable") && warning.contains("5000"));
    // The warning is printed once per stage.
    let again = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 3, 5_000),
    )
    .unwrap();
    assert!(again.warning.is_none());
}

#[test]
fn w34_a_summary_not_smaller_latches_and_the_same_span_is_not_sent_again() {
    let conversation = conversation(folding_conversation());
    let summarizer = FixedSummarizer::new(&text(5_000));
    let stage = summarize_stage(summarizer.clone(), "conversation");
    let first = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 5_000),
    )
    .unwrap();
    assert_eq!(
        first.record.refusals[0].reason,
        RefusalReason::ReplacementNotSmaller
    );
    assert!(first.spend.is_some(), "the call really happened");
    let second = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 3, 5_000),
    )
    .unwrap();
    assert_eq!(summarizer.calls(), 1);
    assert_eq!(
        second.record.refusals[0].reason,
        RefusalReason::ReplacementNotSmaller
    );
    assert!(second.spend.is_none());
    match &second.record.detail {
        RecordDetail::Compaction(detail) => {
            assert_eq!(detail.summarizer_skipped, Some(true));
            assert_eq!(detail.summarizer_tokens, None);
        }
        other => panic!("unexpected detail {other:?}"),
    }
    let json = serde_json::to_value(&second.record).unwrap();
    assert_eq!(json["summarizerSkipped"], true);
}

/// The latch is the caller's memory, not the stage's: the same stage with a fresh memory asks
/// again, and the memory that saw the refusal skips without asking.
#[test]
fn w34_the_not_smaller_latch_lives_in_the_callers_memory() {
    let conversation = conversation(folding_conversation());
    let stage = StrategyConfig::from_json(
        r#"{"strategy":"summarize-oldest","thresholdTokens":4500,"keepRecentTurns":2,"model":"m","keepLastToolResults":false}"#,
    )
    .unwrap()
    .build_stage::<Message>()
    .unwrap();
    let too_long = || {
        Ok(SummaryResponse {
            text: text(5_000),
            usage: None,
        })
    };
    let mut seen = StageMemory::new();
    let context = measured_context(&conversation, 2, 5_000);
    let first = stage.visit(&conversation, context, &mut seen).unwrap();
    assert!(matches!(first, VisitOutcome::NeedsSummary(_)));
    first.resolve(|_| too_long()).unwrap();
    assert_eq!(seen.refused_span_count(), 1);
    let again = stage.visit(&conversation, context, &mut seen).unwrap();
    let VisitOutcome::Ready(skipped) = again else {
        panic!("a refused span is answered without a request: {again:?}");
    };
    assert_eq!(
        skipped.record.refusals[0].reason,
        RefusalReason::ReplacementNotSmaller
    );
    let mut fresh = StageMemory::new();
    let asked = stage.visit(&conversation, context, &mut fresh).unwrap();
    assert!(matches!(asked, VisitOutcome::NeedsSummary(_)));
    asked.resolve(|_| too_long());
}

#[test]
fn w34_a_span_that_grew_is_asked_about_again() {
    let mut messages = folding_conversation();
    let mut conversation = conversation(messages.clone());
    let summarizer = FixedSummarizer::new(&text(4_000));
    let stage = summarize_stage(summarizer.clone(), "conversation");
    visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 5_000),
    );
    // A newer request releases the old one, so the removable span grows by two turns.
    messages.push(Message::user("a newer request"));
    messages.push(Message::assistant("more"));
    messages.push(Message::assistant("more again"));
    conversation = crate::support::conversation(messages);
    visit(
        &stage,
        &conversation,
        measured_context(&conversation, 3, 5_000),
    );
    assert_eq!(summarizer.calls(), 2);
}

#[test]
fn w41_the_request_is_one_delimited_transcript_with_labels() {
    let conversation = conversation(folding_conversation());
    let summarizer = CapturingSummarizer::default();
    let stage = configured(
        r#"{"strategy":"summarize-oldest","thresholdTokens":4500,"keepRecentTurns":2,"model":"m","keepLastToolResults":0}"#,
        Some(Box::new(summarizer.clone())),
    );
    visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 5_000),
    );
    let seen = summarizer.seen.lock().unwrap()[0].clone();
    assert!(
        seen.contains("data"),
        "the system prompt says the transcript is data"
    );
    assert!(seen.contains("<<<TRANSCRIPT>>>\nuser: old request\n"));
    assert!(seen.contains("assistant (calls: grep({})): \n"));
    assert!(seen.contains(&format!("tool_result[grep]: {}\n", text(1_500))));
    assert!(seen.ends_with("<<<END TRANSCRIPT>>>"));
}

#[test]
fn w44_w47_discard_retention_keeps_no_originals() {
    let mut conversation = conversation(folding_conversation());
    let stage = summarize_stage(FixedSummarizer::new("s"), "discard");
    let mut plan = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 5_000),
    )
    .unwrap();
    conversation.apply(&mut plan).unwrap();
    assert_eq!(plan.folded[0].retained, Retain::Discard);
    assert!(plan.folded[0].messages.is_none());
    assert!(contents(&conversation)[1].contains("only this summary carries them forward"));
    let json = serde_json::to_value(&plan.folded[0]).unwrap();
    assert!(json.get("messages").is_none());
}

#[test]
fn w48_a_folded_span_is_found_by_fingerprint_and_its_messages_recovered() {
    let original = folding_conversation();
    let mut conversation = conversation(original.clone());
    let stage = summarize_stage(FixedSummarizer::new("s"), "conversation");
    let plan = {
        let context = measured_context(&conversation, 2, 5_000);
        visit_and_apply(&stage, &mut conversation, context)
    }
    .unwrap();
    let spans = plan.folded;
    let frame = &conversation.messages()[1].content;
    let span = folded_span_for(&spans, frame).unwrap();
    assert_eq!(span.messages.as_deref().unwrap(), &original[1..6]);
    assert!(folded_span_for(&spans, "current request").is_none());
    assert_eq!(folded_messages(&spans), original[1..6].to_vec());
}

#[test]
fn w56_a_lone_summary_is_not_resummarized_until_a_real_turn_joins_it() {
    let mut conversation = conversation(folding_conversation());
    let summarizer = FixedSummarizer::new("s");
    let stage = summarize_stage(summarizer.clone(), "conversation");
    {
        let context = measured_context(&conversation, 2, 5_000);
        visit_and_apply(&stage, &mut conversation, context)
    };
    let plan = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 3, 5_000),
    )
    .unwrap();
    assert!(plan.edit.is_none());
    assert!(plan
        .record
        .refusals
        .iter()
        .any(|r| r.reason == RefusalReason::OnlyExistingSummary));
    assert_eq!(summarizer.calls(), 1);
}

#[test]
fn w52_the_builder_rejects_a_missing_model_and_a_zero_threshold() {
    assert!(SummarizeOldest::new(0, "m").is_err());
    assert!(SummarizeOldest::new(10, " ").is_err());
    assert!(SummarizeOldest::new(10, "m")
        .unwrap()
        .keep_recent_turns(0)
        .is_err());
}
