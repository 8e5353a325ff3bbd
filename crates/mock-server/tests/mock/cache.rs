//! The prompt cache over HTTP: a conversation that grows reads the last call's prefix, an
//! edit early in it breaks the prefix, Anthropic's breakpoint limit, OpenAI's cache keys.

use panewise_mock_server::{Scenario, LONG_SESSION_ROUNDS};
use serde_json::{json, Value};

use crate::{server, Api};

/// `request` with breakpoints where panewise puts them: the system prompt, the last tool, the
/// last content block of the last message (and nowhere else).
fn marked(request: &Value) -> Value {
    let mut request = request.clone();
    let mark = json!({"type": "ephemeral"});
    request["system"][0]["cache_control"] = mark.clone();
    if let Some(tool) = request["tools"].as_array_mut().and_then(|t| t.last_mut()) {
        tool["cache_control"] = mark.clone();
    }
    let messages = request["messages"].as_array_mut().expect("messages");
    for message in messages.iter_mut() {
        for block in message["content"].as_array_mut().into_iter().flatten() {
            block.as_object_mut().map(|b| b.remove("cache_control"));
        }
    }
    if let Some(block) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|c| c.last_mut())
    {
        block["cache_control"] = mark;
    }
    request
}

#[tokio::test]
async fn a_growing_anthropic_session_reads_the_last_calls_prefix_and_an_early_edit_breaks_it() {
    let server = server(Scenario::LongSession).await;
    let api = Api::Anthropic;
    let mut request = api.first_request();
    let mut before: Option<panewise_mock_server::Usage> = None;
    let mut first_total = 0;
    for round in 0..=LONG_SESSION_ROUNDS {
        let answer = api.send(server.addr(), &marked(&request), None, true).await;
        assert_eq!(answer.status, 200, "round {round}");
        let usage = api.reported_usage(&answer);
        let logged = server.log().pop().expect("logged");
        assert_eq!(logged.usage, Some(usage), "round {round}");
        // The API's split: a five-minute write, nothing for an hour.
        let reported = logged.reported_usage.expect("reported");
        assert_eq!(
            reported["cache_creation"],
            json!({"ephemeral_5m_input_tokens": usage.cache_write_tokens, "ephemeral_1h_input_tokens": 0}),
            "round {round}"
        );
        match before {
            // The first call reads nothing and writes its whole prompt.
            None => {
                assert_eq!(usage.cached_input_tokens, 0);
                assert!(usage.cache_write_tokens > 1024, "{usage:?}");
                first_total = usage.cache_write_tokens;
            }
            // Each later call reads what the one before read and wrote, and writes its new
            // blocks.
            Some(before) => {
                assert_eq!(
                    usage.cached_input_tokens,
                    before.cached_input_tokens + before.cache_write_tokens,
                    "round {round}"
                );
                assert!(usage.cache_write_tokens > 0, "round {round}");
            }
        }
        before = Some(usage);
        let calls = api.calls(&answer);
        if round < LONG_SESSION_ROUNDS {
            assert_eq!(calls.len(), 1, "round {round}");
            let command = calls[0].args["command"].as_str().unwrap_or_default();
            assert!(
                command.starts_with(&format!("echo round {}; ", round + 1)),
                "{command}"
            );
            request = api.with_results(&request, &calls);
        } else {
            assert!(calls.is_empty(), "the last answer calls nothing");
            assert!(api.text(&answer).contains("All forty rounds"));
        }
    }
    let last = before.expect("a last call");
    let share = last.cached_input_tokens as f64 / last.input_tokens as f64;
    assert!(share >= 0.9, "{last:?}: {share}");

    // The first prompt edited: only the tools and the system prompt are read again.
    request["messages"][0]["content"][0]["text"] = json!("Run `echo bye`.");
    let answer = api.send(server.addr(), &marked(&request), None, true).await;
    let usage = api.reported_usage(&answer);
    assert!(usage.cached_input_tokens > 0, "{usage:?}");
    assert!(usage.cached_input_tokens < first_total, "{usage:?}");
    assert_eq!(
        usage.cached_input_tokens + usage.cache_write_tokens,
        last.cached_input_tokens + last.cache_write_tokens,
        "{usage:?}: the rest is written again"
    );
}

#[tokio::test]
async fn more_than_four_breakpoints_are_refused_with_the_apis_400() {
    let server = server(Scenario::ToolThenAnswer).await;
    let api = Api::Anthropic;
    let mut request = marked(&api.first_request());
    // System, last tool and last block are three; two more tools make five.
    for tool in request["tools"].as_array_mut().into_iter().flatten() {
        tool["cache_control"] = json!({"type": "ephemeral"});
    }
    let answer = api.send(server.addr(), &request, None, true).await;
    assert_eq!(answer.status, 400, "{}", answer.text());
    assert_eq!(answer.json()["error"]["type"], "invalid_request_error");
    assert!(answer.text().contains("Found 5"), "{}", answer.text());
    // Four are taken.
    request["tools"][0]
        .as_object_mut()
        .map(|t| t.remove("cache_control"));
    let answer = api.send(server.addr(), &request, None, true).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
}

#[tokio::test]
async fn openai_keeps_a_cache_per_prompt_cache_key_and_gemini_one_per_model() {
    let server = server(Scenario::ToolThenAnswer).await;
    // (API, the request's key, expected: read something)
    let table = [
        (Api::OpenAi, Some("session-a"), false),
        (Api::OpenAi, Some("session-a"), true),
        (Api::OpenAi, Some("session-b"), false),
        (Api::OpenAi, None, false),
        (Api::OpenAi, None, true),
        (Api::Gemini, None, false),
        (Api::Gemini, None, true),
    ];
    for (row, (api, key, reads)) in table.into_iter().enumerate() {
        let mut request = api.first_request();
        if let Some(key) = key {
            request["prompt_cache_key"] = json!(key);
        }
        let usage = api.reported_usage(&api.send(server.addr(), &request, None, true).await);
        assert_eq!(
            usage.cached_input_tokens >= 1024,
            reads,
            "row {row}: {usage:?}"
        );
        assert_eq!(
            usage.cached_input_tokens == 0,
            !reads,
            "row {row}: {usage:?}"
        );
        assert_eq!(usage.cache_write_tokens, 0, "row {row}");
    }
}
