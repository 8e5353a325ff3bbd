//! W3: a chat-completions conversation read and written back loses nothing the stage did not
//! change: non-text parts, `developer`, `name`, `null` content and unknown fields survive.

use panewise_window::{openai, Message, Role, SlidingWindow, WindowError, WindowMessage};
use serde_json::{json, Value};

use crate::support::*;

/// Two old turns with an image, audio, a named user, a developer envelope and unknown fields,
/// then the current request.
fn input() -> Vec<Value> {
    let long = text(600);
    vec![
        json!({"role": "developer", "content": "Be brief.", "x_trace": "t-1"}),
        json!({"role": "user", "name": "ana", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}}
        ]}),
        json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{\"zoom\":2}"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": long, "x_cost_ms": 12}),
        json!({"role": "assistant", "name": "helper", "content": "A cat."}),
        json!({"role": "user", "content": [
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "text", "text": text(400)}
        ]}),
        json!({"role": "assistant", "content": text(400), "audio": {"id": "a1"}}),
        json!({"role": "user", "content": "Now the current request.", "metadata": {"k": [1, 2]}}),
    ]
}

fn jsonl(values: &[Value]) -> String {
    values.iter().map(|value| format!("{value}\n")).collect()
}

#[test]
fn w3_a_visit_that_removes_nothing_writes_every_message_back_unchanged() {
    let input = input();
    let messages = openai::parse_jsonl(&jsonl(&input)).unwrap();
    assert_eq!(messages[0].role, Role::System);
    // Image and audio parts count 0 characters: only the text parts are content.
    assert_eq!(messages[1].content, "What is in this picture?");
    let mut conversation = conversation(messages);
    let stage = stage_without_pins(SlidingWindow::new(10).unwrap());
    if let Some(plan) = visit_and_apply(&stage, &mut conversation, context(3)) {
        assert_eq!(plan.record.removed_message_count, 0);
    }
    let output: Vec<Value> = conversation
        .messages()
        .iter()
        .map(openai::to_value)
        .collect();
    assert_eq!(output, input);
}

#[test]
fn w3_a_drop_of_the_oldest_turns_keeps_the_survivors_exactly() {
    let input = input();
    let mut conversation = conversation(openai::parse_jsonl(&jsonl(&input)).unwrap());
    let stage = stage_without_pins(SlidingWindow::new(1).unwrap());
    let plan = visit_and_apply(&stage, &mut conversation, context(3)).unwrap();
    assert!(plan.record.removed_message_count > 0);
    let output: Vec<Value> = conversation
        .messages()
        .iter()
        .map(openai::to_value)
        .collect();
    // The developer envelope stays first, the current request last, both as they came in.
    assert_eq!(output[0], input[0]);
    assert_eq!(output.last(), input.last());
    // Every other message is either an input message, exactly, or the stage's new notice.
    for value in &output[1..output.len() - 1] {
        let is_input = input.contains(value);
        let is_notice = value["injected_by"] == "window";
        assert!(is_input || is_notice, "changed on the way through: {value}");
    }
    assert!(output.iter().any(|value| value["injected_by"] == "window"));
}

#[test]
fn w3_replaced_text_keeps_the_non_text_parts_and_every_other_field() {
    let original = json!({"role": "tool", "tool_call_id": "c1", "x": true, "content": [
        {"type": "text", "text": "first"},
        {"type": "image_url", "image_url": {"url": "https://example.test/a.png"}},
        {"type": "text", "text": "second"}
    ]});
    let message = openai::from_value(&original).unwrap();
    assert_eq!(message.content, "first\nsecond");
    let masked = message.with_content("[masked]".to_string());
    assert_eq!(
        openai::to_value(&masked),
        json!({"role": "tool", "tool_call_id": "c1", "x": true, "content": [
            {"type": "text", "text": "[masked]"},
            {"type": "image_url", "image_url": {"url": "https://example.test/a.png"}}
        ]})
    );
}

#[test]
fn w3_function_results_keep_their_role_and_notes_are_written_fresh() {
    let original = json!({"role": "function", "name": "lookup", "content": "42"});
    let message = openai::from_value(&original).unwrap();
    assert_eq!(message.role, Role::Tool);
    assert_eq!(openai::to_value(&message), original);
    let note = Message::stage_note("[dropped history]".to_string(), 5);
    assert_eq!(openai::to_value(&note)["role"], "user");
}

#[test]
fn w3_from_value_returns_the_crate_error_type() {
    let error = openai::from_value(&json!("not an object")).unwrap_err();
    assert!(matches!(error, WindowError::MessageShape(_)), "{error:?}");
    let error = openai::from_value(&json!({"role": "robot"})).unwrap_err();
    assert!(error.to_string().contains("robot"), "{error}");
}

#[test]
fn w3_orphan_tool_results_are_reported_with_their_line() {
    let text = concat!(
        r#"{"role":"user","content":"hi"}"#,
        "\n",
        r#"{"role":"tool","tool_call_id":"early","content":"too soon"}"#,
        "\n",
        r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
        "\n\n",
        r#"{"role":"tool","tool_call_id":"c1","content":"ok"}"#,
        "\n",
        r#"{"role":"tool","content":"no id"}"#,
        "\n"
    );
    let parsed = openai::read_jsonl(text).unwrap();
    assert_eq!(parsed.messages.len(), 5);
    let orphans: Vec<(usize, Option<&str>)> = parsed
        .orphans
        .iter()
        .map(|orphan| (orphan.line, orphan.tool_call_id.as_deref()))
        .collect();
    assert_eq!(orphans, vec![(2, Some("early")), (6, None)]);
}
