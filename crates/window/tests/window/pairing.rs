//! W6–W7: a tool result separated from its call by other messages (assistant commentary, an
//! injected user message, another call's turn) still stays or leaves with its call, under
//! every strategy.

use panewise_window::record::RecordDetail;
use panewise_window::{Message, ObservationMasking, SlidingWindow, Turn};

use crate::support::*;

/// The report's shape: a call, then `between`, then its result, then two more turns.
fn separated_by(between: Message) -> Vec<Message> {
    vec![
        Message::user(format!("first {}", text(2_000))),
        Message::assistant_calls(format!("calling {}", text(2_000)), &[("c1", "read", "{}")]),
        between,
        Message::tool_result("c1", "result one"),
        Message::assistant("done"),
        Message::user("second request"),
        Message::assistant("ok"),
    ]
}

fn commentary() -> Message {
    Message::assistant("commentary")
}

fn injected() -> Message {
    Message::user("a reminder from the harness").injected("harness")
}

/// Runs `config` over `messages` with a reading of 5,000 tokens and applies the plan.
fn run_configured(messages: &[Message], config: &str) -> Vec<Message> {
    let stage = configured(config, Some(Box::new(FixedSummarizer::new("summary"))));
    let mut conversation = conversation(messages.to_vec());
    let context = measured_context(&conversation, 2, 5_000);
    visit_and_apply(&stage, &mut conversation, context);
    conversation.into_messages()
}

fn assert_paired(input: &[Message], output: &[Message]) {
    assert!(
        no_orphaned_results(output),
        "orphaned result in {output:#?}"
    );
    assert!(
        pairs_stay_or_leave_together(input, output),
        "a call and its result were split: {output:#?}"
    );
}

fn spans(conversation: &panewise_window::Conversation) -> Vec<(usize, usize)> {
    conversation
        .turns()
        .map(|Turn { start, len, .. }| (start, len))
        .collect()
}

#[test]
fn w6_a_result_separated_from_its_call_joins_the_calls_turn() {
    let conversation = conversation(separated_by(commentary()));
    // user | call, commentary, result | done | second request | ok
    assert_eq!(
        spans(&conversation),
        vec![(0, 1), (1, 3), (4, 1), (5, 1), (6, 1)]
    );
}

#[test]
fn w6_a_result_pushed_later_merges_the_turns_and_unblocks_the_call() {
    let mut conversation = conversation(vec![
        Message::user("q"),
        Message::assistant_calls("", &[("c1", "read", "{}")]),
        Message::assistant("thinking"),
    ]);
    assert_eq!(spans(&conversation), vec![(0, 1), (1, 1), (2, 1)]);
    conversation.push(Message::tool_result("c1", "r"));
    assert_eq!(spans(&conversation), vec![(0, 1), (1, 3)]);
    let rebuilt = crate::support::conversation(conversation.messages().to_vec());
    assert_eq!(spans(&conversation), spans(&rebuilt));
}

#[test]
fn w7_result_separated_from_its_call_by_commentary_leaves_with_its_call() {
    let input = separated_by(commentary());
    for keep in 1..=7 {
        let config = format!(r#"{{"strategy":"sliding-window","keepRecentTurns":{keep}}}"#);
        let output = run_configured(&input, &config);
        assert_paired(&input, &output);
    }
    // The reported case: four kept turns drop only the first message and keep the pair.
    let output = run_configured(
        &input,
        r#"{"strategy":"sliding-window","keepRecentTurns":4}"#,
    );
    assert_eq!(output.len(), 7);
    assert!(output[0].content.starts_with("[dropped history"));
    assert_eq!(output[1].tool_calls[0].id, "c1");
    assert_eq!(output[3].tool_call_id.as_deref(), Some("c1"));
}

#[test]
fn w7_result_separated_from_its_call_leaves_with_it_when_the_whole_unit_is_dropped() {
    let input = separated_by(commentary());
    let mut conversation = conversation(input.clone());
    let stage = stage_without_pins(SlidingWindow::new(2).unwrap());
    let plan = visit_and_apply(&stage, &mut conversation, context(1)).unwrap();
    assert_eq!(plan.record.removed_message_count, 5);
    assert_eq!(
        contents(&conversation)[1..],
        ["second request".to_string(), "ok".to_string()]
    );
    assert_paired(&input, conversation.messages());
}

#[test]
fn w7_result_separated_from_its_call_by_an_injected_user_message_leaves_with_its_call() {
    let input = separated_by(injected());
    for keep in 1..=7 {
        let config = format!(r#"{{"strategy":"sliding-window","keepRecentTurns":{keep}}}"#);
        assert_paired(&input, &run_configured(&input, &config));
        let config = format!(
            r#"{{"strategy":"token-budget","thresholdTokens":10,"keepRecentTurns":{keep}}}"#
        );
        assert_paired(&input, &run_configured(&input, &config));
    }
}

#[test]
fn w7_token_budget_keeps_a_separated_result_with_its_call() {
    for between in [commentary(), injected()] {
        let input = separated_by(between);
        let output = run_configured(
            &input,
            r#"{"strategy":"token-budget","thresholdTokens":10,"keepRecentTurns":4}"#,
        );
        assert_paired(&input, &output);
        assert!(output
            .iter()
            .any(|m| m.tool_call_id.as_deref() == Some("c1")));
    }
}

#[test]
fn w7_summarize_oldest_keeps_a_separated_result_with_its_call() {
    for between in [commentary(), injected()] {
        let input = separated_by(between);
        for keep in 1..=7 {
            let config = format!(
                r#"{{"strategy":"summarize-oldest","thresholdTokens":10,"keepRecentTurns":{keep},"model":"m"}}"#
            );
            assert_paired(&input, &run_configured(&input, &config));
        }
    }
}

#[test]
fn w7_hybrid_keeps_a_separated_result_with_its_call() {
    for between in [commentary(), injected()] {
        let input = separated_by(between);
        for keep in 1..=7 {
            let config = format!(
                r#"{{"strategy":"hybrid","thresholdTokens":10,"keepRecentTurns":{keep},"keepRecentObservations":0,"model":"m"}}"#
            );
            assert_paired(&input, &run_configured(&input, &config));
        }
    }
}

#[test]
fn w7_observation_masking_keeps_a_separated_result_paired_with_its_call() {
    let input = vec![
        Message::user("request"),
        Message::assistant_calls("", &[("c1", "read_file", "{}")]),
        commentary(),
        injected(),
        Message::tool_result("c1", text(1_000)),
        Message::assistant_calls("", &[("c2", "grep", "{}")]),
        Message::tool_result("c2", text(1_000)),
    ];
    let mut conversation = conversation(input.clone());
    let stage = stage(ObservationMasking::new(1));
    let plan = visit_and_apply(&stage, &mut conversation, context(1)).unwrap();
    match plan.record.detail {
        RecordDetail::Masking(detail) => assert_eq!(detail.masked_message_count, 1),
        other => panic!("unexpected detail {other:?}"),
    }
    let output = conversation.messages();
    assert_eq!(output.len(), input.len(), "masking removes no message");
    assert!(output[4].content.starts_with("[masked tool result"));
    assert_eq!(output[4].tool_call_id.as_deref(), Some("c1"));
    assert_paired(&input, output);
}

#[test]
fn w7_results_of_parallel_calls_kept_apart_stay_with_their_call() {
    let input = vec![
        Message::user(format!("first {}", text(500))),
        Message::assistant_calls("", &[("a", "read", "{}"), ("b", "grep", "{}")]),
        Message::tool_result("a", text(500)),
        commentary(),
        Message::assistant_calls("", &[("c", "ls", "{}")]),
        Message::tool_result("c", text(500)),
        Message::tool_result("b", text(500)),
        Message::assistant("done"),
        Message::user("second request"),
        Message::assistant("ok"),
    ];
    let conversation = conversation(input.clone());
    // The call of a and b through b's result is one unit, c's turn inside it.
    assert_eq!(
        spans(&conversation),
        vec![(0, 1), (1, 6), (7, 1), (8, 1), (9, 1)]
    );
    for keep in 1..=6 {
        let config = format!(
            r#"{{"strategy":"sliding-window","keepRecentTurns":{keep},"keepLastToolResults":0}}"#
        );
        assert_paired(&input, &run_configured(&input, &config));
    }
}

#[test]
fn w7_a_result_answering_a_kept_call_survives_an_edit_and_later_pushes() {
    // Drop the oldest turns, then separate a new call from its result: the cached turns
    // after the edit must merge exactly as a fresh segmentation does.
    let mut messages = vec![Message::user("old"), Message::assistant(text(3_000))];
    messages.extend(separated_by(commentary()));
    let mut conversation = conversation(messages);
    let stage = stage_without_pins(SlidingWindow::new(4).unwrap());
    visit_and_apply(&stage, &mut conversation, context(1)).unwrap();
    conversation.push(Message::assistant_calls("", &[("c2", "read", "{}")]));
    conversation.push(injected());
    conversation.push(commentary());
    conversation.push(Message::tool_result("c2", "r2"));
    let rebuilt = crate::support::conversation(conversation.messages().to_vec());
    assert_eq!(spans(&conversation), spans(&rebuilt));
    let before = conversation.messages().to_vec();
    visit_and_apply(&stage, &mut conversation, context(2));
    assert_paired(&before, conversation.messages());
}
