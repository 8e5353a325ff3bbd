//! W80–W85: the floor — what must stay — and the stand-down when it alone is over the
//! threshold, so no strategy loops on a window it cannot bring under.

use panewise_window::{Message, RefusalReason, WindowFloor, WindowPlan};

use crate::support::*;

/// The `multi-round` window of issue 31 after `rounds` rounds: the request, then one call and
/// its result per round.
fn rounds(rounds: usize) -> Vec<Message> {
    let mut messages = vec![Message::user("do it")];
    for round in 1..=rounds {
        messages.push(Message::assistant_calls(
            "I'll run the command.",
            &[(&format!("c{round}"), "shell", r#"{"command":"echo"}"#)],
        ));
        messages.push(Message::tool_result(
            format!("c{round}"),
            format!("round {round}\n[exit code 0]"),
        ));
    }
    messages
}

/// A reading of `outside` tokens beyond the window's own count, as a system prompt and tool
/// definitions add.
fn reading_with_outside(
    conversation: &panewise_window::Conversation,
    iteration: u32,
    outside: u64,
) -> panewise_window::VisitContext<'static> {
    let local = conversation.tokens_in(0..conversation.len());
    let mut context = measured_context(conversation, iteration, local + outside);
    context.current_request = Some("do it");
    context
}

fn floor_of(plan: &WindowPlan<Message>) -> &WindowFloor {
    plan.record
        .floor
        .as_ref()
        .expect("a stand-down names its floor")
}

const OWN_LOOP: &str = r#"{"strategy":"token-budget","thresholdTokens":1,"keepRecentTurns":1}"#;

#[test]
fn w80_w81_the_floor_is_named_by_part_and_nothing_is_removed() {
    let conversation = conversation(rounds(2));
    let stage = configured(OWN_LOOP, None);
    let plan = visit(
        &stage,
        &conversation,
        reading_with_outside(&conversation, 3, 1_800),
    )
    .expect("over budget: engaged");
    assert!(plan.edit.is_none(), "a stand-down changes nothing");
    assert_eq!(plan.record.removed_message_count, 0);
    let floor = floor_of(&plan);
    let parts = &floor.parts;
    assert_eq!(floor.threshold_tokens, 1);
    assert_eq!(parts.outside_window_tokens, 1_800);
    assert_eq!(parts.current_request_tokens, conversation.tokens_in(0..1));
    assert_eq!(parts.kept_tail_tokens, conversation.tokens_in(3..5));
    assert_eq!(parts.keep_recent_turns, 1);
    assert_eq!(
        floor.floor_tokens,
        parts.outside_window_tokens
            + parts.system_tokens
            + parts.current_request_tokens
            + parts.pinned_tokens
            + parts.pending_tokens
            + parts.kept_tail_tokens,
        "the parts add up to the floor"
    );
    // The round that would have left is named: it stayed because of the floor.
    assert_eq!(
        plan.record.refusals[0].reason,
        RefusalReason::FloorAboveThreshold
    );
    assert_eq!(plan.record.refusals[0].message_index, 1);
    let json = serde_json::to_value(&plan.record).unwrap();
    assert_eq!(json["floor"]["floorTokens"], floor.floor_tokens);
    assert_eq!(json["floor"]["parts"]["outsideWindowTokens"], 1_800);
    assert_eq!(json["refusals"][0]["reason"], "floor-above-threshold");
}

/// The own loop of issue 31, visit after visit: one record, then quiet while the request
/// stands, though the kept tail slides every round; a new request files one more.
#[test]
fn w81_w82_w83_one_record_per_stand_down_not_one_per_call() {
    let stage = configured(OWN_LOOP, None);
    let mut filed = Vec::new();
    for round in 1..=6 {
        let conversation = conversation(rounds(round));
        let plan = visit(
            &stage,
            &conversation,
            reading_with_outside(&conversation, round as u32 + 1, 1_800),
        );
        filed.push(plan.map(|plan| plan.record.stood_down()));
    }
    assert_eq!(
        filed,
        vec![Some(true), None, None, None, None, None],
        "W81 files once, W82 then stays quiet"
    );
    assert!(stage.stood_down());
    let mut messages = rounds(6);
    messages.push(Message::assistant("done"));
    messages.push(Message::user("and again"));
    let conversation = conversation(messages);
    let local = conversation.tokens_in(0..conversation.len());
    let mut context = measured_context(&conversation, 8, local + 1_800);
    context.current_request = Some("and again");
    let plan = visit(&stage, &conversation, context).expect("W83: a new request files again");
    assert!(plan.record.stood_down());
}

#[test]
fn w84_a_floor_back_under_the_threshold_ends_the_stand_down() {
    let json = r#"{"strategy":"token-budget","thresholdTokens":60,"keepRecentTurns":1}"#;
    let stage = configured(json, None);
    let conversation = conversation(rounds(3));
    let plan = visit(
        &stage,
        &conversation,
        reading_with_outside(&conversation, 4, 100),
    )
    .expect("engaged");
    assert!(plan.record.stood_down(), "100 outside alone is over 60");
    // The system prompt shrank (a smaller reading): the floor is under, the drop goes ahead.
    let plan = visit(
        &stage,
        &conversation,
        reading_with_outside(&conversation, 5, 30),
    )
    .expect("engaged");
    assert!(!plan.record.stood_down());
    assert!(plan.record.removed_message_count > 0);
    assert!(!stage.stood_down(), "the stand-down ended");
}

/// W85: the summarizing strategies stand down on the same floor without paying for a summary,
/// and hybrid counts what masking could still save inside the kept part.
#[test]
fn w85_no_summary_is_asked_for_when_the_floor_is_over() {
    let rows = [
        (
            "summarize-oldest",
            r#"{"strategy":"summarize-oldest","thresholdTokens":1,"keepRecentTurns":1,"model":"m"}"#,
            None,
        ),
        (
            "hybrid",
            r#"{"strategy":"hybrid","thresholdTokens":1,"keepRecentTurns":1,"keepRecentObservations":1,"model":"m"}"#,
            Some(0),
        ),
    ];
    for (name, json, masking_saves) in rows {
        let summarizer = FixedSummarizer::new("s");
        let stage = configured(json, Some(Box::new(summarizer.clone())));
        for round in 2..=4 {
            let conversation = conversation(rounds(round));
            let plan = visit(
                &stage,
                &conversation,
                reading_with_outside(&conversation, round as u32 + 1, 1_800),
            );
            if round == 2 {
                let plan = plan.expect("filed once");
                assert_eq!(
                    floor_of(&plan).parts.masking_saves_tokens,
                    masking_saves,
                    "{name}"
                );
            } else {
                assert!(plan.is_none(), "{name}: quiet at round {round}");
            }
        }
        assert_eq!(summarizer.calls(), 0, "{name}");
    }
}

/// W80: pins, pending calls and system messages are part of the floor, each in its part.
#[test]
fn w80_pinned_pending_and_system_turns_are_priced_in_their_parts() {
    let mut messages = vec![Message::system("you are terse"), Message::user("do it")];
    messages.extend(tool_turn("old", "read_file", 400));
    messages.extend(tool_turn("pinned", "grep", 200));
    messages.push(Message::assistant_calls("", &[("open", "shell", "{}")]));
    messages.push(Message::assistant("thinking"));
    let conversation = conversation(messages);
    let stage = configured(
        r#"{"strategy":"token-budget","thresholdTokens":1,"keepRecentTurns":1}"#,
        None,
    );
    let plan = visit(
        &stage,
        &conversation,
        reading_with_outside(&conversation, 2, 0),
    )
    .expect("engaged");
    let parts = &floor_of(&plan).parts;
    assert_eq!(parts.system_tokens, conversation.tokens_in(0..1));
    assert_eq!(parts.current_request_tokens, conversation.tokens_in(1..2));
    // The last read_file result is pinned (keepLastToolResults 2 by default); so is grep's.
    assert_eq!(parts.pinned_tokens, conversation.tokens_in(2..6));
    assert_eq!(parts.pending_tokens, conversation.tokens_in(6..7));
    assert_eq!(parts.kept_tail_tokens, conversation.tokens_in(7..8));
    assert_eq!(parts.outside_window_tokens, 0);
}
