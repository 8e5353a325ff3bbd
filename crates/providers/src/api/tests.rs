use std::borrow::Cow;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;

fn history() -> Vec<ApiMessage<'static>> {
    vec![
        ApiMessage::User {
            text: Cow::Borrowed("run it"),
        },
        ApiMessage::Assistant {
            text: Cow::Borrowed("I'll run it."),
        },
        ApiMessage::ToolCall {
            call_id: Cow::Borrowed("c1"),
            name: Cow::Borrowed("shell"),
            arguments: Cow::Borrowed(r#"{"command":"echo a"}"#),
        },
        ApiMessage::ToolCall {
            call_id: Cow::Borrowed("c2"),
            name: Cow::Borrowed("shell"),
            arguments: Cow::Borrowed(""),
        },
        ApiMessage::ToolResult {
            call_id: Cow::Borrowed("c1"),
            name: Cow::Borrowed("shell"),
            output: Cow::Borrowed("a"),
            is_error: false,
        },
        ApiMessage::ToolResult {
            call_id: Cow::Borrowed("c2"),
            name: Cow::Borrowed("shell"),
            output: Cow::Borrowed("boom"),
            is_error: true,
        },
    ]
}

fn body(api: ApiKind, messages: &[ApiMessage<'static>]) -> Value {
    let tools = [ToolDefinition {
        name: Cow::Borrowed("shell"),
        description: Cow::Borrowed("Runs a command."),
        parameters: Cow::Owned(json!({"type": "object"})),
    }];
    let request = ModelRequest {
        model: Cow::Borrowed("m"),
        system: Some(Cow::Borrowed("be brief")),
        messages: Cow::Borrowed(messages),
        tools: Cow::Borrowed(&tools),
        max_output_tokens: 99,
        prompt_cache: false,
        cache_key: None,
        context_management: None,
    };
    let bytes = api.body(&request).unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

#[test]
fn anthropic_groups_parts_by_role_and_sends_arguments_as_objects() {
    let body = body(ApiKind::Anthropic, &history());
    assert_eq!(
        body,
        json!({
            "model": "m", "max_tokens": 99, "stream": true, "system": "be brief",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "run it"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "I'll run it."},
                    {"type": "tool_use", "id": "c1", "name": "shell", "input": {"command": "echo a"}},
                    {"type": "tool_use", "id": "c2", "name": "shell", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "a", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "boom", "is_error": true},
                ]},
            ],
            "tools": [{"name": "shell", "description": "Runs a command.", "input_schema": {"type": "object"}}],
        })
    );
}

#[test]
fn openai_sends_items_with_arguments_as_text() {
    let body = body(ApiKind::OpenAi, &history());
    assert_eq!(body["instructions"], "be brief");
    assert_eq!(body["store"], false);
    assert_eq!(body["max_output_tokens"], 99);
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run it"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I'll run it."}]},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":\"echo a\"}"},
            {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a"},
            {"type": "function_call_output", "call_id": "c2", "output": "boom"},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "shell", "description": "Runs a command.", "parameters": {"type": "object"}, "strict": false}])
    );
}

#[test]
fn gemini_sends_contents_with_one_user_turn_per_round_of_results() {
    let body = body(ApiKind::Gemini, &history());
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "be brief"}]})
    );
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 99}));
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "run it"}]},
            {"role": "model", "parts": [
                {"text": "I'll run it."},
                {"functionCall": {"id": "c1", "name": "shell", "args": {"command": "echo a"}}},
                {"functionCall": {"id": "c2", "name": "shell", "args": {}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "c1", "name": "shell", "response": {"output": "a"}}},
                {"functionResponse": {"id": "c2", "name": "shell", "response": {"error": "boom"}}},
            ]},
        ])
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"],
        json!({"type": "object"})
    );
}

#[test]
fn a_request_round_trips_through_serde() {
    let messages = history();
    let request = ModelRequest {
        model: Cow::Borrowed("m"),
        system: None,
        messages: Cow::Borrowed(&messages),
        tools: Cow::Borrowed(&[]),
        max_output_tokens: 5,
        prompt_cache: true,
        cache_key: None,
        context_management: None,
    };
    let text = serde_json::to_string(&request).unwrap_or_default();
    let back: ModelRequest<'_> = serde_json::from_str(&text).unwrap_or_else(|_| request.clone());
    assert_eq!(back, request);
    assert!(text.contains(r#""kind":"tool_result""#), "{text}");
}

#[test]
fn endpoints_follow_each_api_and_a_versioned_base_is_not_doubled() {
    let cases = [
        (ApiKind::Anthropic, "http://h:1", "http://h:1/v1/messages"),
        (ApiKind::OpenAi, "http://h:1/v1/", "http://h:1/v1/responses"),
        (
            ApiKind::Gemini,
            "http://h:1",
            "http://h:1/v1beta/models/m:streamGenerateContent?alt=sse",
        ),
    ];
    for (api, base, expected) in cases {
        assert_eq!(api.endpoint(base, "m"), expected);
    }
}

#[test]
fn every_api_error_body_is_classified() {
    let cases: [(u16, &str, FailureKind); 8] = [
        (
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            FailureKind::RateLimited,
        ),
        (
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            FailureKind::Overloaded,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens"}}"#,
            FailureKind::ContextOverflow,
        ),
        (
            429,
            r#"{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
            FailureKind::RateLimited,
        ),
        (
            401,
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
            FailureKind::Auth,
        ),
        (
            503,
            r#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#,
            FailureKind::Overloaded,
        ),
        (502, "<html>Bad Gateway</html>", FailureKind::ServerError),
        (418, "", FailureKind::Unknown),
    ];
    for (status, body, kind) in cases {
        let failure = classify_http_error(status, body);
        assert_eq!(failure.kind, kind, "{status} {body}");
        assert_eq!(failure.http_status, Some(status));
        assert!(!failure.message.is_empty());
    }
    // A spent quota waits in vain.
    assert!(
        !classify_http_error(
            429,
            r#"{"error":{"code":"insufficient_quota","message":"q"}}"#
        )
        .retryable
    );
}

#[test]
fn retry_after_is_read_in_seconds_and_a_date_is_absent() {
    assert_eq!(retry_after_ms("1"), Some(1000));
    assert_eq!(retry_after_ms(" 0.25 "), Some(250));
    assert_eq!(retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    assert_eq!(retry_after_ms("-3"), None);
    assert_eq!(retry_after_ms("1e300"), Some(u64::MAX));
}

#[test]
fn the_retry_schedule_doubles_jitters_and_stops_at_its_bounds() {
    let policy = RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(300),
        max_total_wait: Duration::from_secs(1),
    };
    let ms = Duration::from_millis;
    assert_eq!(policy.delay(1, None, 0.0, ms(0)), Some(ms(50)));
    assert_eq!(policy.delay(1, None, 1.0, ms(0)), Some(ms(100)));
    assert_eq!(policy.delay(2, None, 1.0, ms(0)), Some(ms(200)));
    // Capped by the longest single wait.
    assert_eq!(policy.delay(3, None, 1.0, ms(0)), Some(ms(300)));
    // The server's wish wins over the backoff, jitter or not.
    assert_eq!(policy.delay(1, Some(ms(700)), 0.9, ms(0)), Some(ms(700)));
    // Attempts spent; total wait exceeded.
    assert_eq!(policy.delay(4, None, 0.5, ms(0)), None);
    assert_eq!(policy.delay(1, Some(ms(700)), 0.5, ms(400)), None);
    // A bad draw is no wait of its own.
    assert_eq!(policy.delay(1, None, f64::NAN, ms(0)), Some(ms(50)));
    assert_eq!(RetryPolicy::none().delay(1, None, 0.5, ms(0)), None);
}

#[test]
fn bad_events_never_panic_and_are_reported() {
    let inputs = [
        "",
        "{",
        "null",
        "[]",
        r#"{"type":"content_block_delta"}"#,
        r#"{"type":"response.output_text.delta","delta":5}"#,
        r#"{"candidates":"x"}"#,
    ];
    for api in ApiKind::ALL {
        let mut decoder = api.decoder();
        let mut out = Vec::new();
        for input in inputs {
            decoder.feed("message", input, &mut out);
        }
        assert!(
            out.iter().all(|event| matches!(
                event,
                ProviderEvent::Warning { .. } | ProviderEvent::Unknown { .. }
            )),
            "{api}: {out:?}"
        );
        assert!(!decoder.is_done(), "{api}");
        decoder.finish(&mut out);
        assert!(
            matches!(out.last(), Some(ProviderEvent::Failure { failure }) if failure.kind == FailureKind::StreamDisconnected)
        );
    }
}

#[test]
fn mid_stream_errors_are_classified_and_end_the_call() {
    let cases = [
        (
            ApiKind::Anthropic,
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            FailureKind::Overloaded,
        ),
        (
            ApiKind::OpenAi,
            "response.failed",
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
            FailureKind::ServerError,
        ),
        (
            ApiKind::OpenAi,
            "error",
            r#"{"type":"error","code":"rate_limit_exceeded","message":"slow"}"#,
            FailureKind::RateLimited,
        ),
        (
            ApiKind::Gemini,
            "message",
            r#"{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}"#,
            FailureKind::ServerError,
        ),
    ];
    for (api, event, data, kind) in cases {
        let mut decoder = api.decoder();
        let mut out = Vec::new();
        decoder.feed(event, data, &mut out);
        assert!(decoder.is_done(), "{api}");
        match out.as_slice() {
            [ProviderEvent::Failure { failure }] => assert_eq!(failure.kind, kind, "{api}"),
            other => panic!("{api}: {other:?}"),
        }
        decoder.finish(&mut out);
        assert_eq!(out.len(), 1, "{api}: nothing after the failure");
    }
}

#[test]
fn a_missing_usage_field_is_absent_never_zero() {
    let mut decoder = ApiKind::OpenAi.decoder();
    let mut out = Vec::new();
    decoder.feed(
        "response.completed",
        r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":10}}}"#,
        &mut out,
    );
    let Some(ProviderEvent::CallEnded { stats, .. }) = out.pop() else {
        panic!("no call end");
    };
    assert_eq!(stats.input_tokens, Some(10));
    assert_eq!(stats.cached_input_tokens, None);
    assert_eq!(stats.output_tokens, None);
    assert_eq!(stats.reasoning_tokens, None);
}

#[test]
fn a_call_is_priced_or_marked_unknown() {
    let table = PriceTable::from_json(r#"{"prices":[{"model":"m*","input":1.0,"output":2.0}]}"#)
        .unwrap_or_default();
    let mut stats = SessionStats {
        input_tokens: Some(1_000_000),
        output_tokens: Some(1_000_000),
        ..SessionStats::default()
    };
    price_call(&table, Some("m-1"), &mut stats);
    assert_eq!(
        (stats.cost_usd, stats.cost_source),
        (Some(3.0), Some(CostSource::Estimated))
    );
    price_call(&table, Some("other"), &mut stats);
    assert_eq!(
        (stats.cost_usd, stats.cost_source),
        (None, Some(CostSource::Unknown))
    );
}

#[test]
fn an_api_key_never_prints() {
    let key = ApiKey::new("sk-secret");
    assert_eq!(
        format!("{key} {key:?} {:?}", Some(&key)),
        "[redacted] [redacted] Some([redacted])"
    );
    assert_eq!(key.expose(), "sk-secret");
}

/// `count` tools named `t0`, `t1`, ….
fn tool_list(count: usize) -> Vec<ToolDefinition<'static>> {
    (0..count)
        .map(|index| ToolDefinition {
            name: Cow::Owned(format!("t{index}")),
            description: Cow::Borrowed("A tool."),
            parameters: Cow::Owned(json!({"type": "object"})),
        })
        .collect()
}

/// The body of a request with prompt caching set as given.
fn cached_body(
    api: ApiKind,
    system: Option<&'static str>,
    tools: &[ToolDefinition<'static>],
    messages: &[ApiMessage<'static>],
    (prompt_cache, cache_key): (bool, Option<&'static str>),
) -> Value {
    let request = ModelRequest {
        model: Cow::Borrowed("m"),
        system: system.map(Cow::Borrowed),
        messages: Cow::Borrowed(messages),
        tools: Cow::Borrowed(tools),
        max_output_tokens: 99,
        prompt_cache,
        cache_key: cache_key.map(Cow::Borrowed),
        context_management: None,
    };
    let bytes = api.body(&request).unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// Where a body's `cache_control` breakpoints are: `system`, `tools[i]`,
/// `messages[i].content[j]`, in body order.
fn breakpoints(body: &Value) -> Vec<String> {
    let marked = |value: &Value| value.get("cache_control").is_some();
    let mut found = Vec::new();
    if let Some(blocks) = body["system"].as_array() {
        found.extend(
            blocks
                .iter()
                .enumerate()
                .filter(|(_, block)| marked(block))
                .map(|(index, _)| format!("system[{index}]")),
        );
    }
    for (index, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if marked(tool) {
            found.push(format!("tools[{index}]"));
        }
    }
    for (i, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if marked(block) {
                found.push(format!("messages[{i}].content[{j}]"));
            }
        }
    }
    found
}

/// A request (system prompt, how many tools, messages) and where its breakpoints go.
type Placement<'m> = (
    Option<&'static str>,
    usize,
    &'m [ApiMessage<'static>],
    &'static [&'static str],
);

#[test]
fn anthropic_breakpoints_sit_on_the_system_prompt_the_last_tool_and_the_last_block() {
    let round = history();
    let one = [ApiMessage::User {
        text: Cow::Borrowed("hi"),
    }];
    // (system, tools, messages, expected breakpoints)
    let table: [Placement<'_>; 7] = [
        (
            Some("be brief"),
            3,
            &round,
            &["system[0]", "tools[2]", "messages[2].content[1]"],
        ),
        (
            Some("be brief"),
            1,
            &one,
            &["system[0]", "tools[0]", "messages[0].content[0]"],
        ),
        (None, 2, &round, &["tools[1]", "messages[2].content[1]"]),
        (
            Some("s"),
            0,
            &round,
            &["system[0]", "messages[2].content[1]"],
        ),
        (Some("s"), 4, &[], &["system[0]", "tools[3]"]),
        (None, 0, &round[..2], &["messages[1].content[0]"]),
        (None, 0, &[], &[]),
    ];
    for (row, (system, tools, messages, want)) in table.into_iter().enumerate() {
        let tools = tool_list(tools);
        let body = cached_body(ApiKind::Anthropic, system, &tools, messages, (true, None));
        let got = breakpoints(&body);
        assert_eq!(got, want, "row {row}: {body}");
        assert!(got.len() <= 4, "row {row}: the API allows four");
        if let Some(text) = system {
            assert_eq!(
                body["system"],
                json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]),
                "row {row}"
            );
        }
        // Off, the same request carries no breakpoint and a plain system prompt.
        let off = cached_body(ApiKind::Anthropic, system, &tools, messages, (false, None));
        assert_eq!(breakpoints(&off), Vec::<String>::new(), "row {row}");
        assert!(!off.to_string().contains("cache_control"), "row {row}");
        assert_eq!(off["system"], system.map_or(Value::Null, |s| json!(s)));
    }
}

proptest::proptest! {
    /// Never more than the four breakpoints the API allows, whatever the request.
    #[test]
    fn anthropic_never_sends_more_than_four_breakpoints(
        tools in 0usize..6,
        system in proptest::option::of("[a-z]{0,8}"),
        kinds in proptest::collection::vec(0u8..4, 0..12),
    ) {
        let messages: Vec<ApiMessage<'static>> = kinds
            .iter()
            .enumerate()
            .map(|(index, kind)| match kind {
                0 => ApiMessage::User { text: Cow::Owned(format!("u{index}")) },
                1 => ApiMessage::Assistant { text: Cow::Owned(format!("a{index}")) },
                2 => ApiMessage::ToolCall {
                    call_id: Cow::Owned(format!("c{index}")),
                    name: Cow::Borrowed("t0"),
                    arguments: Cow::Borrowed("{}"),
                },
                _ => ApiMessage::ToolResult {
                    call_id: Cow::Owned(format!("c{index}")),
                    name: Cow::Borrowed("t0"),
                    output: Cow::Borrowed("out"),
                    is_error: false,
                },
            })
            .collect();
        let tools = tool_list(tools);
        let request = ModelRequest {
            model: Cow::Borrowed("m"),
            system: system.map(Cow::Owned),
            messages: Cow::Borrowed(&messages),
            tools: Cow::Borrowed(&tools),
            max_output_tokens: 9,
            prompt_cache: true,
            cache_key: Some(Cow::Borrowed("k")),
            context_management: None,
        };
        let bytes = ApiKind::Anthropic.body(&request).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let count = text.matches("\"cache_control\"").count();
        proptest::prop_assert!(count <= 4, "{}", text);
        let expected = usize::from(request.system.is_some())
            + usize::from(!tools.is_empty())
            + usize::from(!messages.is_empty());
        proptest::prop_assert_eq!(count, expected);
    }
}

#[test]
fn openai_sends_the_session_cache_key_only_while_caching_is_on() {
    // (caching, key, expected prompt_cache_key)
    let table = [
        (true, Some("panewise-1a2b"), json!("panewise-1a2b")),
        (true, None, Value::Null),
        (false, Some("panewise-1a2b"), Value::Null),
    ];
    for (on, key, want) in table {
        let body = cached_body(
            ApiKind::OpenAi,
            Some("s"),
            &tool_list(2),
            &history(),
            (on, key),
        );
        assert_eq!(body["prompt_cache_key"], want, "{on} {key:?}");
        assert_eq!(body.get("prompt_cache_key").is_some(), !want.is_null());
        assert!(!body.to_string().contains("cache_control"), "{body}");
        // The rest of the body is the same either way.
        let mut rest = body.clone();
        if let Some(object) = rest.as_object_mut() {
            object.remove("prompt_cache_key");
        }
        let plain = cached_body(
            ApiKind::OpenAi,
            Some("s"),
            &tool_list(2),
            &history(),
            (false, None),
        );
        assert_eq!(rest, plain);
    }
}

#[test]
fn gemini_bodies_are_the_same_with_caching_on_or_off() {
    // Gemini's implicit cache needs nothing in the request.
    let on = cached_body(
        ApiKind::Gemini,
        Some("s"),
        &tool_list(2),
        &history(),
        (true, Some("k")),
    );
    let off = cached_body(
        ApiKind::Gemini,
        Some("s"),
        &tool_list(2),
        &history(),
        (false, None),
    );
    assert_eq!(on, off);
    assert!(!on.to_string().contains("cache"), "{on}");
}

#[test]
fn anthropic_reports_the_one_hour_part_of_its_cache_writes() {
    // (message_delta usage, expected writes, expected 1-hour part)
    let table = [
        (
            r#"{"input_tokens":3,"cache_creation_input_tokens":1500,"cache_read_input_tokens":9000,"output_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":500,"ephemeral_1h_input_tokens":1000}}"#,
            Some(1500),
            Some(1000),
        ),
        (
            r#"{"input_tokens":3,"cache_creation_input_tokens":1500,"output_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":1500,"ephemeral_1h_input_tokens":0}}"#,
            Some(1500),
            Some(0),
        ),
        (
            r#"{"input_tokens":3,"cache_creation_input_tokens":20,"output_tokens":7}"#,
            Some(20),
            None,
        ),
    ];
    for (usage, writes, hour) in table {
        let mut decoder = ApiKind::Anthropic.decoder();
        let mut out = Vec::new();
        let delta = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"end_turn"}},"usage":{usage}}}"#
        );
        decoder.feed("message_delta", &delta, &mut out);
        decoder.feed("message_stop", r#"{"type":"message_stop"}"#, &mut out);
        let Some(ProviderEvent::CallEnded { stats, .. }) = out
            .into_iter()
            .find(|event| matches!(event, ProviderEvent::CallEnded { .. }))
        else {
            panic!("no call end for {usage}");
        };
        assert_eq!(stats.cache_write_input_tokens, writes, "{usage}");
        assert_eq!(stats.cache_write_1h_input_tokens, hour, "{usage}");
    }
}
