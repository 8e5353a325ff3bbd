//! The request fields read and the edits made on message lists, without HTTP.

use serde_json::{json, Value};

use super::*;

fn tool_round(id: &str, name: &str) -> [Value; 2] {
    [
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "tool_use", "id": id, "name": name, "input": {"command": "ls"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "output"}]}),
    ]
}

fn conversation() -> Vec<Value> {
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for (id, name) in [("a", "Bash"), ("b", "Read"), ("c", "Bash"), ("d", "Bash")] {
        messages.extend(tool_round(id, name));
    }
    messages
}

/// The ids whose tool results hold the placeholder, and those whose inputs are empty.
fn cleared_ids(messages: &[Value]) -> (Vec<String>, Vec<String>) {
    let mut results = Vec::new();
    let mut inputs = Vec::new();
    for block in messages.iter().flat_map(blocks) {
        if block["content"] == CLEARED_TOOL_RESULT {
            results.push(block["tool_use_id"].as_str().unwrap_or_default().to_owned());
        }
        if block["input"] == json!({}) {
            inputs.push(block["id"].as_str().unwrap_or_default().to_owned());
        }
    }
    (results, inputs)
}

/// One row: keep, excluded tools, inputs cleared, then the ids whose results and whose inputs
/// are expected cleared.
type ClearRow = (
    u64,
    Vec<String>,
    InputsCleared,
    &'static [&'static str],
    &'static [&'static str],
);

/// One row: the body, its `anthropic-beta`, what is read of it.
type FieldRow<'b> = (Value, &'b str, Result<Vec<Edit>, Invalid>);

#[test]
fn clear_tool_uses_keeps_the_last_uses_and_the_excluded_tools() {
    let read = || vec!["Read".to_owned()];
    let table: [ClearRow; 5] = [
        (1, vec![], InputsCleared::None, &["a", "b", "c"], &[]),
        (1, read(), InputsCleared::None, &["a", "c"], &[]),
        (2, vec![], InputsCleared::All, &["a", "b"], &["a", "b"]),
        (
            0,
            vec![],
            InputsCleared::Of(read()),
            &["a", "b", "c", "d"],
            &["b"],
        ),
        (4, vec![], InputsCleared::All, &[], &[]),
    ];
    for (row, (keep, excluded, inputs, want_results, want_inputs)) in table.into_iter().enumerate()
    {
        let (out, count) = clear_tool_uses(&conversation(), keep, &excluded, &inputs);
        let (results, cleared_inputs) = cleared_ids(&out);
        assert_eq!(results, want_results, "row {row}");
        assert_eq!(cleared_inputs, want_inputs, "row {row}");
        assert_eq!(count, want_results.len() as u64, "row {row}");
    }
}

#[test]
fn clear_thinking_counts_assistant_messages_with_thinking_as_turns() {
    for (keep, want) in [(0, 4), (1, 3), (4, 0), (10, 0)] {
        let (out, turns) = clear_thinking(&conversation(), keep);
        assert_eq!(turns, want, "keep {keep}");
        let left = out
            .iter()
            .flat_map(blocks)
            .filter(|b| b["type"] == "thinking")
            .count();
        assert_eq!(left, 4 - want as usize, "keep {keep}");
    }
}

#[test]
fn a_carried_compaction_drops_what_precedes_its_last_block() {
    let mut messages = conversation();
    assert_eq!(from_last_compaction(&messages), None);
    messages.insert(
        3,
        json!({"role": "assistant", "content": [{"type": "text", "text": "before"}, {"type": "compaction", "content": "s1"}]}),
    );
    let kept = from_last_compaction(&messages).unwrap_or_default();
    assert_eq!(kept.len(), messages.len() - 3);
    assert_eq!(
        kept[0]["content"],
        json!([{"type": "compaction", "content": "s1"}])
    );
    // Already first: nothing to drop.
    assert_eq!(from_last_compaction(&kept), None);
}

#[test]
fn the_fields_are_read_with_the_apis_defaults_and_refusals() {
    let both = format!("{CONTEXT_MANAGEMENT_BETA}, {COMPACT_BETA}");
    let body = |edit: Value| json!({"context_management": {"edits": [edit]}});
    let cases: [FieldRow<'_>; 7] = [
        (json!({}), "", Ok(vec![])),
        (
            body(json!({"type": "clear_tool_uses_20250919"})),
            &both,
            Ok(vec![Edit::ClearToolUses {
                trigger: 100_000,
                keep: 3,
                clear_at_least: 0,
                exclude_tools: vec![],
                clear_inputs: InputsCleared::None,
            }]),
        ),
        (
            body(json!({"type": "clear_thinking_20251015", "keep": "all"})),
            CONTEXT_MANAGEMENT_BETA,
            Ok(vec![Edit::ClearThinking { keep: None }]),
        ),
        (
            body(json!({"type": "compact_20260112"})),
            COMPACT_BETA,
            Ok(vec![Edit::Compact { trigger: 150_000 }]),
        ),
        (
            body(json!({"type": "compact_20260112"})),
            CONTEXT_MANAGEMENT_BETA,
            Err(Invalid::BetaMissing {
                edit: "compact_20260112".to_owned(),
                beta: COMPACT_BETA,
            }),
        ),
        (
            body(
                json!({"type": "clear_tool_uses_20250919", "keep": {"type": "input_tokens", "value": 3}}),
            ),
            &both,
            Err(Invalid::Malformed {
                path: "context_management.edits.0.keep".to_owned(),
                expected: "tool_uses",
            }),
        ),
        (
            json!({"context_management": []}),
            &both,
            Err(Invalid::Malformed {
                path: "context_management.edits".to_owned(),
                expected: "a list of edits",
            }),
        ),
    ];
    for (row, (body, betas, want)) in cases.into_iter().enumerate() {
        assert_eq!(anthropic_edits(&body, betas), want, "row {row}");
    }
    let openai = |field: Value| openai_threshold(&json!({"context_management": field}));
    assert_eq!(openai(Value::Null), Ok(None));
    assert_eq!(
        openai(
            json!([{"type": "compaction", "compact_threshold": 9000}, {"type": "compaction", "compact_threshold": 7000}])
        ),
        Ok(Some(7000))
    );
    assert!(matches!(
        openai(json!([{"type": "compaction"}])),
        Err(Invalid::Malformed { .. })
    ));
}
