//! Provider-side context management over HTTP: each strategy over its trigger reports its edit
//! and bills the edited prompt, under it reports none, a request carrying a compaction is billed
//! from it on, and the APIs' refusals.

use panewise_mock_server::{
    compaction_summary, Scenario, Usage, BASE_INPUT_TOKENS, CLEARED_TOOL_RESULT, COMPACT_BETA,
    CONTEXT_MANAGEMENT_BETA, HUGE_INPUT_TOKENS,
};
use serde_json::{json, Value};

use crate::{post, server, Answer, Api};

/// The mock's input for a body of these bytes.
fn counted(body: &Value) -> u64 {
    BASE_INPUT_TOKENS + body.to_string().len() as u64 / 4
}

/// A Claude request of `rounds` shell rounds, each with thinking and a result of `bytes` bytes.
fn anthropic_rounds(rounds: usize, bytes: usize) -> Value {
    let mut request = Api::Anthropic.first_request();
    let messages = request["messages"].as_array_mut().unwrap();
    for round in 0..rounds {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("round {round}: I should look."), "signature": "sig"},
            {"type": "tool_use", "id": format!("toolu_{round}"), "name": if round == 0 { "Write" } else { "Bash" }, "input": {"command": format!("cat part{round}")}},
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_{round}"), "content": format!("{round}:{}", "x".repeat(bytes)), "is_error": false},
        ]}));
    }
    request
}

/// `request` with `context_management` holding `edit`.
fn with_edit(request: &Value, edit: Value) -> Value {
    let mut request = request.clone();
    request["context_management"] = json!({"edits": [edit]});
    request
}

async fn send_anthropic(addr: std::net::SocketAddr, beta: Option<&str>, body: &Value) -> Answer {
    let headers: Vec<(&str, &str)> = beta.map(|b| ("anthropic-beta", b)).into_iter().collect();
    post(addr, Api::Anthropic.path(true), &headers, body).await
}

/// The `message_delta` of an Anthropic stream.
fn message_delta(answer: &Answer) -> Value {
    answer
        .frames_of("message_delta")
        .pop()
        .expect("a message_delta")
}

/// `request` with the content of the named tool results replaced, as the API clears them.
fn cleared(request: &Value, ids: &[&str]) -> Value {
    let mut request = request.clone();
    for message in request["messages"].as_array_mut().unwrap() {
        for block in message["content"].as_array_mut().into_iter().flatten() {
            if ids.iter().any(|id| block["tool_use_id"] == *id) {
                block["content"] = json!(CLEARED_TOOL_RESULT);
            }
        }
    }
    request
}

#[tokio::test]
async fn clear_tool_uses_clears_the_oldest_results_over_its_trigger_and_bills_what_is_left() {
    let server = server(Scenario::ToolThenAnswer).await;
    let request = anthropic_rounds(6, 4000);
    let edit = |trigger: u64, keep: u64, extra: Value| {
        let mut edit = json!({"type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": trigger}, "keep": {"type": "tool_uses", "value": keep}});
        for (key, value) in extra.as_object().unwrap() {
            edit[key] = value.clone();
        }
        edit
    };
    // (edit, the tool results cleared; none: no edit applied)
    let table: [(Value, Option<&[&str]>); 6] = [
        (
            edit(3000, 2, json!({})),
            Some(&["toolu_0", "toolu_1", "toolu_2", "toolu_3"]),
        ),
        // The `Write` use is never cleared when excluded.
        (
            edit(3000, 2, json!({"exclude_tools": ["Write"]})),
            Some(&["toolu_1", "toolu_2", "toolu_3"]),
        ),
        (edit(3000, 5, json!({})), Some(&["toolu_0"])),
        // Under the trigger, and when the clearing would free less than asked: no edit.
        (edit(1_000_000, 2, json!({})), None),
        (
            edit(
                3000,
                5,
                json!({"clear_at_least": {"type": "input_tokens", "value": 2000}}),
            ),
            None,
        ),
        // Everything kept: nothing to clear.
        (edit(3000, 6, json!({})), None),
    ];
    for (row, (edit, ids)) in table.into_iter().enumerate() {
        let body = with_edit(&request, edit);
        let answer = send_anthropic(server.addr(), Some(CONTEXT_MANAGEMENT_BETA), &body).await;
        assert_eq!(answer.status, 200, "row {row}: {}", answer.text());
        let usage = Api::Anthropic.reported_usage(&answer);
        let applied = &message_delta(&answer)["context_management"]["applied_edits"];
        match ids {
            Some(ids) => {
                let billed = counted(&cleared(&body, ids));
                assert_eq!(usage.input_tokens, billed, "row {row}");
                let tokens = counted(&body) - billed;
                assert_eq!(
                    applied,
                    &json!([{"type": "clear_tool_uses_20250919", "cleared_tool_uses": ids.len(), "cleared_input_tokens": tokens}]),
                    "row {row}"
                );
            }
            None => {
                assert_eq!(applied, &json!([]), "row {row}");
                assert_eq!(usage.input_tokens, counted(&body), "row {row}");
            }
        }
        // Which answer is sent does not change: the conversation had its tool round.
        assert!(Api::Anthropic.calls(&answer).is_empty(), "row {row}");
    }
}

#[tokio::test]
async fn clear_tool_inputs_also_empties_the_cleared_uses_inputs() {
    let server = server(Scenario::ToolThenAnswer).await;
    let request = anthropic_rounds(3, 4000);
    let body = with_edit(
        &request,
        json!({"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 1000},
            "keep": {"type": "tool_uses", "value": 1}, "clear_tool_inputs": true}),
    );
    let answer = send_anthropic(server.addr(), Some(CONTEXT_MANAGEMENT_BETA), &body).await;
    let mut expected = cleared(&body, &["toolu_0", "toolu_1"]);
    for message in expected["messages"].as_array_mut().unwrap() {
        for block in message["content"].as_array_mut().into_iter().flatten() {
            if block["id"] == "toolu_0" || block["id"] == "toolu_1" {
                block["input"] = json!({});
            }
        }
    }
    assert_eq!(
        Api::Anthropic.reported_usage(&answer).input_tokens,
        counted(&expected)
    );
    assert_eq!(
        message_delta(&answer)["context_management"]["applied_edits"][0]["cleared_tool_uses"],
        2
    );
}

/// `request` with its system prompt and last block marked as breakpoints.
fn marked(request: &Value) -> Value {
    let mut request = request.clone();
    request["system"][0]["cache_control"] = json!({"type": "ephemeral"});
    let last = request["messages"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
    request
}

#[tokio::test]
async fn a_clearing_breaks_the_cached_prefix_where_the_first_cleared_result_was() {
    let clearing = json!({"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 1000},
        "keep": {"type": "tool_uses", "value": 1}});
    let earlier = marked(&anthropic_rounds(4, 4000));
    let later = marked(&anthropic_rounds(5, 4000));
    // (the later request's context management, expected: it reads all the earlier one cached)
    for (edit, reads_all) in [(None, true), (Some(clearing), false)] {
        let server = server(Scenario::ToolThenAnswer).await;
        let first = send_anthropic(server.addr(), None, &earlier).await;
        let first = Api::Anthropic.reported_usage(&first);
        assert_eq!(first.cached_input_tokens, 0);
        assert!(first.cache_write_tokens > 1024, "{first:?}");
        let body = match &edit {
            Some(edit) => with_edit(&later, edit.clone()),
            None => later.clone(),
        };
        let answer = send_anthropic(server.addr(), Some(CONTEXT_MANAGEMENT_BETA), &body).await;
        let usage = Api::Anthropic.reported_usage(&answer);
        if reads_all {
            assert_eq!(
                usage.cached_input_tokens, first.cache_write_tokens,
                "{usage:?}"
            );
        } else {
            // Only the tools and system prompt precede the first cleared result.
            assert!(usage.cached_input_tokens >= 1024, "{usage:?}");
            assert!(
                usage.cached_input_tokens < counted(&earlier) / 4,
                "{usage:?}"
            );
            // The rest is written again, up to the last breakpoint.
            assert!(usage.cache_write_tokens > 1024, "{usage:?}");
        }
    }
}

#[tokio::test]
async fn clear_thinking_drops_the_thinking_of_all_but_the_last_turns() {
    let server = server(Scenario::ToolThenAnswer).await;
    let request = anthropic_rounds(4, 100);
    // (keep, the turns whose thinking goes)
    let table: [(Value, usize); 4] = [
        (json!({"type": "thinking_turns", "value": 1}), 3),
        (json!({"type": "thinking_turns", "value": 0}), 4),
        (json!({"type": "thinking_turns", "value": 9}), 0),
        (json!("all"), 0),
    ];
    for (row, (keep, turns)) in table.into_iter().enumerate() {
        let body = with_edit(
            &request,
            json!({"type": "clear_thinking_20251015", "keep": keep}),
        );
        let answer = send_anthropic(server.addr(), Some(CONTEXT_MANAGEMENT_BETA), &body).await;
        assert_eq!(answer.status, 200, "row {row}: {}", answer.text());
        let mut expected = body.clone();
        let assistants = expected["messages"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .filter(|m| m["role"] == "assistant");
        for message in assistants.take(turns) {
            message["content"]
                .as_array_mut()
                .unwrap()
                .retain(|b| b["type"] != "thinking");
        }
        let billed = counted(&expected);
        assert_eq!(
            Api::Anthropic.reported_usage(&answer).input_tokens,
            billed,
            "row {row}"
        );
        let applied = &message_delta(&answer)["context_management"]["applied_edits"];
        let want = if turns == 0 {
            json!([])
        } else {
            json!([{"type": "clear_thinking_20251015", "cleared_thinking_turns": turns, "cleared_input_tokens": counted(&body) - billed}])
        };
        assert_eq!(applied, &want, "row {row}");
    }
}

/// `request`'s messages replaced by one assistant message holding a compaction of `summary`.
fn compacted(request: &Value, summary: &str) -> Value {
    let mut request = request.clone();
    request["messages"] =
        json!([{"role": "assistant", "content": [{"type": "compaction", "content": summary}]}]);
    request
}

fn compact_edit(trigger: u64) -> Value {
    json!({"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": trigger}})
}

#[tokio::test]
async fn compact_answers_with_a_compaction_block_first_and_bills_the_answer_from_it() {
    let server = server(Scenario::ToolThenAnswer).await;
    // 60 rounds of 4,000 bytes: about 61,000 tokens.
    let request = anthropic_rounds(60, 4000);
    let plain = send_anthropic(server.addr(), None, &request).await;
    for (row, trigger, compacts) in [(0, 50_000, true), (1, 100_000, false)] {
        let body = with_edit(&request, compact_edit(trigger));
        let answer = send_anthropic(server.addr(), Some(COMPACT_BETA), &body).await;
        assert_eq!(answer.status, 200, "row {row}: {}", answer.text());
        let usage = Api::Anthropic.reported_usage(&answer);
        let delta = message_delta(&answer);
        let starts = answer.frames_of("content_block_start");
        // The same answer either way.
        assert_eq!(
            Api::Anthropic.text(&answer),
            Api::Anthropic.text(&plain),
            "row {row}"
        );
        if !compacts {
            assert_eq!(usage.input_tokens, counted(&body), "row {row}");
            assert!(delta["usage"].get("iterations").is_none(), "row {row}");
            assert!(starts
                .iter()
                .all(|s| s["content_block"]["type"] != "compaction"));
            continue;
        }
        let summary = compaction_summary(121);
        assert_eq!(
            starts[0],
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "compaction", "content": ""}})
        );
        let deltas = answer.frames_of("content_block_delta");
        assert_eq!(
            deltas[0],
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta", "content": summary}})
        );
        let billed = counted(&compacted(&body, &summary));
        assert_eq!(usage.input_tokens, billed, "row {row}");
        let iterations = &delta["usage"]["iterations"];
        assert_eq!(iterations[0]["type"], "compaction");
        assert_eq!(iterations[0]["input_tokens"], counted(&body));
        assert_eq!(
            iterations[0]["output_tokens"],
            10 + summary.len() as u64 / 4
        );
        assert_eq!(iterations[1]["type"], "message");
        assert_eq!(
            iterations[1]["input_tokens"],
            delta["usage"]["input_tokens"]
        );
        assert_eq!(iterations[1]["output_tokens"], usage.output_tokens);
        assert_eq!(
            server.log().pop().and_then(|l| l.usage),
            Some(usage),
            "the log holds the message step"
        );

        // The next request carries the block back: it is billed from it on.
        let mut next = body.clone();
        let messages = next["messages"].as_array_mut().unwrap();
        messages.push(json!({"role": "assistant", "content": [
            {"type": "compaction", "content": summary}, {"type": "text", "text": Api::Anthropic.text(&answer)}]}));
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": "And now?"}]}));
        let tail: Vec<Value> = messages[messages.len() - 2..].to_vec();
        let answer = send_anthropic(server.addr(), Some(COMPACT_BETA), &next).await;
        let usage = Api::Anthropic.reported_usage(&answer);
        let mut read = next.clone();
        read["messages"] = json!(tail);
        assert_eq!(usage.input_tokens, counted(&read));
        assert!(message_delta(&answer)["usage"].get("iterations").is_none());
    }
}

#[tokio::test]
async fn huge_input_compacts_its_scripted_190000_tokens() {
    let server = server(Scenario::HugeInput).await;
    let body = with_edit(&Api::Anthropic.first_request(), compact_edit(150_000));
    let answer = send_anthropic(server.addr(), Some(COMPACT_BETA), &body).await;
    let delta = message_delta(&answer);
    assert_eq!(
        delta["usage"]["iterations"][0]["input_tokens"],
        HUGE_INPUT_TOKENS
    );
    let usage: Usage = Api::Anthropic.reported_usage(&answer);
    assert_eq!(
        usage.input_tokens,
        counted(&compacted(&body, &compaction_summary(1)))
    );
    assert_eq!(Api::Anthropic.calls(&answer).len(), 1, "the scripted call");
}

#[tokio::test]
async fn the_json_message_carries_the_compaction_block_and_the_applied_edits() {
    let server = server(Scenario::ToolThenAnswer).await;
    let mut body = with_edit(&anthropic_rounds(60, 4000), compact_edit(50_000));
    body["context_management"]["edits"] = json!([
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}},
        compact_edit(50_000),
    ]);
    body["stream"] = json!(false);
    let betas = format!("{CONTEXT_MANAGEMENT_BETA},{COMPACT_BETA}");
    let answer = post(
        server.addr(),
        Api::Anthropic.path(false),
        &[("anthropic-beta", &betas)],
        &body,
    )
    .await;
    let message = answer.json();
    assert_eq!(message["content"][0]["type"], "compaction");
    assert_eq!(message["content"][1]["type"], "text");
    assert_eq!(
        message["context_management"]["applied_edits"][0]["cleared_thinking_turns"],
        59
    );
    assert_eq!(message["usage"]["iterations"][0]["type"], "compaction");
}

/// A Codex request of `outputs` shell outputs of `bytes` bytes each.
fn openai_outputs(outputs: usize, bytes: usize) -> Value {
    let mut request = Api::OpenAi.first_request();
    let input = request["input"].as_array_mut().unwrap();
    for i in 0..outputs {
        input.push(json!({"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": format!("call_{i}")}));
        input.push(json!({"type": "function_call_output", "call_id": format!("call_{i}"), "output": "y".repeat(bytes)}));
    }
    request
}

#[tokio::test]
async fn openai_compaction_sends_an_item_before_the_answer_and_a_later_request_is_billed_from_it() {
    let server = server(Scenario::ToolThenAnswer).await;
    let request = openai_outputs(4, 4000);
    let sent = counted(&request);
    for (row, threshold, compacts) in [(0, 2000, true), (1, 100_000, false)] {
        let mut body = request.clone();
        body["context_management"] =
            json!([{"type": "compaction", "compact_threshold": threshold}]);
        let answer = post(server.addr(), Api::OpenAi.path(true), &[], &body).await;
        assert_eq!(answer.status, 200, "row {row}: {}", answer.text());
        let usage = Api::OpenAi.reported_usage(&answer);
        assert_eq!(usage.input_tokens, counted(&body), "row {row}");
        let items: Vec<Value> = answer
            .frames_of("response.output_item.done")
            .into_iter()
            .map(|d| d["item"].clone())
            .collect();
        let completed = &answer.frames_of("response.completed")[0]["response"]["output"];
        if !compacts {
            assert!(items.iter().all(|i| i["type"] != "compaction"), "row {row}");
            continue;
        }
        let item = &items[0];
        assert_eq!(item["type"], "compaction");
        assert!(item["id"].as_str().unwrap().starts_with("cmp_"));
        assert!(item["encrypted_content"].as_str().unwrap().len() > 20);
        assert_eq!(&completed[0], item);
        assert_eq!(items[1]["type"], "message");

        let mut next = body.clone();
        let input = next["input"].as_array_mut().unwrap();
        input.push(item.clone());
        input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And now?"}]}));
        let tail: Vec<Value> = input[input.len() - 2..].to_vec();
        let answer = post(server.addr(), Api::OpenAi.path(true), &[], &next).await;
        let mut read = next.clone();
        read["input"] = json!(tail);
        let usage = Api::OpenAi.reported_usage(&answer);
        assert_eq!(usage.input_tokens, counted(&read));
        assert!(usage.input_tokens < sent);
        // The carried compaction is small, under the threshold: no new one.
        let kinds: Vec<Value> = answer
            .frames_of("response.output_item.done")
            .into_iter()
            .map(|d| d["item"]["type"].clone())
            .collect();
        assert_eq!(kinds, [json!("message")]);
    }
}

#[tokio::test]
async fn context_management_the_apis_refuse_is_answered_400() {
    let server = server(Scenario::ToolThenAnswer).await;
    let request = Api::Anthropic.first_request();
    let clear = json!({"type": "clear_tool_uses_20250919"});
    // (anthropic-beta, edit, what the message names)
    let table: [(Option<&str>, Value, &str); 5] = [
        (None, clear.clone(), CONTEXT_MANAGEMENT_BETA),
        (Some(COMPACT_BETA), clear, CONTEXT_MANAGEMENT_BETA),
        (
            Some(CONTEXT_MANAGEMENT_BETA),
            compact_edit(150_000),
            COMPACT_BETA,
        ),
        (
            Some(CONTEXT_MANAGEMENT_BETA),
            json!({"type": "clear_everything_20990101"}),
            "clear_everything_20990101",
        ),
        (Some(COMPACT_BETA), compact_edit(49_999), "50000"),
    ];
    for (row, (beta, edit, named)) in table.into_iter().enumerate() {
        let answer = send_anthropic(server.addr(), beta, &with_edit(&request, edit)).await;
        assert_eq!(answer.status, 400, "row {row}");
        let body = answer.json();
        assert_eq!(body["type"], "error", "row {row}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "row {row}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "row {row}: {message}");
    }
    let mut body = Api::OpenAi.first_request();
    body["context_management"] = json!([{"type": "truncation", "compact_threshold": 1000}]);
    let answer = post(server.addr(), Api::OpenAi.path(true), &[], &body).await;
    assert_eq!(answer.status, 400);
    let error = &answer.json()["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["param"], "context_management[0].type");
    // Every refusal is logged with its status, and none reached an answer.
    let statuses: Vec<u16> = server.log().iter().map(|l| l.status).collect();
    assert_eq!(statuses, [400; 6]);
}

/// The raw lines of a stream: each frame an `event:` line naming its data's `type`, then one
/// `data:` line, then a blank line. Returns the event names.
fn raw_events(answer: &Answer) -> Vec<String> {
    let text = answer.text();
    let mut names = Vec::new();
    for frame in text.split_terminator("\n\n") {
        let lines: Vec<&str> = frame.lines().collect();
        let [event, data] = lines.as_slice() else {
            panic!("a frame of two lines: {frame:?}");
        };
        let name = event.strip_prefix("event: ").expect("an event line");
        let data: Value = serde_json::from_str(data.strip_prefix("data: ").expect("a data line"))
            .expect("JSON data");
        assert_eq!(data["type"], name, "{frame}");
        names.push(name.to_owned());
    }
    names
}

#[tokio::test]
async fn the_compaction_frames_come_first_as_the_decoders_read_them() {
    let server = server(Scenario::ToolThenAnswer).await;
    let body = with_edit(&anthropic_rounds(60, 4000), compact_edit(50_000));
    let answer = send_anthropic(server.addr(), Some(COMPACT_BETA), &body).await;
    assert!(answer.text().ends_with("\n\n"));
    let names = raw_events(&answer);
    assert_eq!(
        names[..5],
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_stop"
        ]
    );
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);

    let mut body = openai_outputs(4, 4000);
    body["context_management"] = json!([{"type": "compaction", "compact_threshold": 2000}]);
    let answer = post(server.addr(), Api::OpenAi.path(true), &[], &body).await;
    let names = raw_events(&answer);
    assert_eq!(
        names[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.output_item.done"
        ]
    );
    assert_eq!(
        answer.frames_of("response.output_item.added")[0]["item"]["type"],
        "compaction"
    );
}
