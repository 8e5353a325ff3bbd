//! W1–W8: the law, the data model and turn segmentation.

use panewise_window::{openai, Message, Role, SlidingWindow};

use crate::support::*;

#[test]
fn w3_sizes_are_exact_characters_of_content() {
    let conversation = conversation(vec![Message::user("héllo 🦀"), Message::assistant("ok")]);
    assert_eq!(conversation.window_chars(), 7 + 2);
    assert_eq!(conversation.chars_in(0..1), 7);
}

#[test]
fn w4_window_chars_sums_content_and_an_empty_window_has_none() {
    let empty = conversation(vec![]);
    assert_eq!(empty.window_chars(), 0);
    let conversation = conversation(vec![Message::user("abc"), Message::assistant("de")]);
    assert_eq!(conversation.window_chars(), 5);
}

#[test]
fn w6_tool_messages_join_the_open_turn() {
    let mut messages = vec![Message::user("go")];
    messages.push(Message::assistant_calls(
        "",
        &[("a", "grep", "{}"), ("b", "ls", "{}")],
    ));
    messages.push(Message::tool_result("a", "1"));
    messages.push(Message::tool_result("b", "2"));
    messages.push(Message::assistant("done"));
    let conversation = conversation(messages);
    let turns: Vec<(usize, usize)> = conversation.turns().map(|t| (t.start, t.len)).collect();
    assert_eq!(turns, vec![(0, 1), (1, 3), (4, 1)]);
}

#[test]
fn w6_a_leading_tool_message_starts_its_own_turn() {
    let conversation = conversation(vec![
        Message::tool_result("orphan", "left over"),
        Message::tool_result("orphan2", "left over too"),
        Message::user("hi"),
    ]);
    let turns: Vec<(usize, usize)> = conversation.turns().map(|t| (t.start, t.len)).collect();
    assert_eq!(turns, vec![(0, 2), (2, 1)]);
}

#[test]
fn w6_an_empty_history_has_no_turns() {
    assert_eq!(conversation(vec![]).turn_count(), 0);
}

#[test]
fn w7_a_call_and_its_results_leave_together() {
    let mut messages = vec![Message::user("old request")];
    messages.extend(tool_turn("c1", "grep", 500));
    messages.push(Message::user("new request"));
    let mut conversation = conversation(messages);
    let stage = stage_without_pins(SlidingWindow::new(1).unwrap());
    let plan = visit_and_apply(&stage, &mut conversation, context(1)).unwrap();
    assert_eq!(plan.record.removed_message_count, 3);
    assert!(no_orphaned_results(conversation.messages()));
    assert!(!contents(&conversation).iter().any(|c| c == &text(500)));
}

#[test]
fn w8_answered_call_ids_cover_results_anywhere_in_the_window() {
    let mut messages = vec![Message::user("q")];
    messages.extend(tool_turn("c1", "grep", 5));
    messages.push(Message::assistant_calls("", &[("c2", "ls", "{}")]));
    let conversation = conversation(messages);
    assert!(conversation.is_answered("c1"));
    assert!(!conversation.is_answered("c2"));
}

#[test]
fn w1_removed_messages_are_returned_unchanged_not_deleted() {
    let mut messages = vec![Message::user("first")];
    messages.extend(tool_turn("c1", "grep", 300));
    messages.push(Message::user("second"));
    let original = messages.clone();
    let mut conversation = conversation(messages);
    let stage = configured(
        r#"{"strategy":"summarize-oldest","thresholdTokens":499,"keepRecentTurns":1,"model":"m"}"#,
        Some(Box::new(FixedSummarizer::new("short"))),
    );
    let context = measured_context(&conversation, 2, 500);
    let plan = visit_and_apply(&stage, &mut conversation, context).unwrap();
    let folded = plan.folded[0].messages.as_ref().unwrap();
    assert_eq!(folded.as_slice(), &original[..3]);
}

#[test]
fn w3_openai_jsonl_is_read_with_tool_calls_ids_and_names() {
    let text = concat!(
        r#"{"role":"user","content":"hi"}"#,
        "\n",
        r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"grep","arguments":"{\"q\":1}"}}]}"#,
        "\n\n",
        r#"{"role":"tool","tool_call_id":"c1","name":"grep","content":[{"type":"text","text":"found"}]}"#,
        "\n"
    );
    let messages = openai::parse_jsonl(text).unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1].tool_calls[0].name, "grep");
    assert_eq!(messages[1].tool_calls[0].args, "{\"q\":1}");
    assert_eq!(messages[2].role, Role::Tool);
    assert_eq!(messages[2].tool_name.as_deref(), Some("grep"));
    assert_eq!(messages[2].content, "found");
    let back = openai::to_value(&messages[1]);
    assert_eq!(back["tool_calls"][0]["function"]["name"], "grep");
}

#[test]
fn w3_a_bad_conversation_line_is_a_named_error() {
    let error = openai::parse_jsonl("{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"robot\"}")
        .unwrap_err();
    assert!(error.to_string().contains("line 2"), "{error}");
    assert!(error.to_string().contains("robot"), "{error}");
}
