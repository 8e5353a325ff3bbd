//! The frame shapes of each API, in the order the real CLIs accepted them, and the JSON
//! (non-streamed) answers.

use panewise_mock_server::{Scenario, ROUTING_ANSWER};
use serde_json::{json, Value};

use crate::{post, server, Api};

fn event_names(answer: &crate::Answer) -> Vec<String> {
    answer
        .frames()
        .into_iter()
        .map(|(event, _)| event.unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn anthropic_stream_has_thinking_text_and_tool_use_blocks_in_order() {
    let server = server(Scenario::ToolThenAnswer).await;
    let answer = Api::Anthropic
        .send(server.addr(), &Api::Anthropic.first_request(), None, true)
        .await;
    assert_eq!(answer.headers["content-type"], "text/event-stream");
    let names = event_names(&answer);
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
    assert_eq!(names[names.len() - 2], "message_delta");
    let starts: Vec<Value> = answer
        .frames_of("content_block_start")
        .iter()
        .map(|d| d["content_block"]["type"].clone())
        .collect();
    assert_eq!(
        starts,
        vec![json!("thinking"), json!("text"), json!("tool_use")]
    );
    assert_eq!(answer.frames_of("content_block_stop").len(), 3);
    let deltas: Vec<String> = answer
        .frames_of("content_block_delta")
        .iter()
        .map(|d| d["delta"]["type"].as_str().unwrap().to_owned())
        .collect();
    for kind in [
        "thinking_delta",
        "signature_delta",
        "text_delta",
        "input_json_delta",
    ] {
        assert!(deltas.iter().any(|d| d == kind), "a {kind}");
    }
    let start = &answer.frames_of("message_start")[0]["message"];
    assert_eq!(start["model"], "claude-opus-5-5");
    assert_eq!(start["usage"]["output_tokens"], 1);
    let delta = &answer.frames_of("message_delta")[0];
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(
        start["usage"]["input_tokens"],
        delta["usage"]["input_tokens"]
    );
}

#[tokio::test]
async fn anthropic_without_stream_answers_one_json_message() {
    let server = server(Scenario::ToolThenAnswer).await;
    let answer = Api::Anthropic
        .send(server.addr(), &Api::Anthropic.first_request(), None, false)
        .await;
    assert_eq!(answer.status, 200);
    let message = answer.json();
    assert_eq!(message["type"], "message");
    assert_eq!(message["stop_reason"], "tool_use");
    let kinds: Vec<&str> = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["thinking", "text", "tool_use"]);
    assert_eq!(message["content"][2]["input"]["command"], "echo hello");
    let logged = server.log().pop().unwrap();
    assert_eq!(logged.reported_usage.as_ref(), Some(&message["usage"]));
}

#[tokio::test]
async fn anthropic_count_tokens_predicts_the_input_of_the_same_body() {
    let server = server(Scenario::ToolThenAnswer).await;
    let body = Api::Anthropic.first_request();
    let counted = post(server.addr(), "/v1/messages/count_tokens", &[], &body)
        .await
        .json();
    assert_eq!(counted["input_tokens"], 1000 + body.to_string().len() / 4);
}

#[tokio::test]
async fn openai_stream_numbers_its_events_and_completes_with_usage_details() {
    let server = server(Scenario::ToolThenAnswer).await;
    // Sent twice, so the second reads the first's prefix from the cache.
    Api::OpenAi
        .send(server.addr(), &Api::OpenAi.first_request(), None, true)
        .await;
    let answer = Api::OpenAi
        .send(server.addr(), &Api::OpenAi.first_request(), None, true)
        .await;
    let names = event_names(&answer);
    assert_eq!(&names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.last().map(String::as_str), Some("response.completed"));
    for kind in [
        "response.output_item.added",
        "response.reasoning_summary_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ] {
        assert!(names.iter().any(|n| n == kind), "a {kind}");
    }
    let numbers: Vec<u64> = answer
        .frames()
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..numbers.len() as u64).collect::<Vec<_>>());
    let completed = &answer.frames_of("response.completed")[0]["response"];
    assert_eq!(completed["status"], "completed");
    assert!(
        completed["usage"]["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        completed["usage"]["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    let text = Api::OpenAi.with_results(&Api::OpenAi.first_request(), &Api::OpenAi.calls(&answer));
    let answer = Api::OpenAi.send(server.addr(), &text, None, true).await;
    let names = event_names(&answer);
    for kind in [
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
    ] {
        assert!(names.iter().any(|n| n == kind), "a {kind}");
    }
}

#[tokio::test]
async fn openai_without_stream_answers_one_response_object() {
    let server = server(Scenario::ToolThenAnswer).await;
    let response = Api::OpenAi
        .send(server.addr(), &Api::OpenAi.first_request(), None, false)
        .await
        .json();
    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    let kinds: Vec<&str> = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["reasoning", "function_call"]);
}

#[tokio::test]
async fn gemini_routing_call_gets_the_classifier_json_in_every_scenario() {
    let server = server(Scenario::RateLimit).await;
    let routing = json!({
        "contents": [{"role": "user", "parts": [{"text": "Run `echo hello`."}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {"type": "OBJECT"}},
    });
    let answer = post(
        server.addr(),
        "/v1beta/models/gemini-3.5-flash-lite:generateContent",
        &[],
        &routing,
    )
    .await;
    assert_eq!(answer.status, 200);
    let body = answer.json();
    let text = body["candidates"][0]["content"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(text, ROUTING_ANSWER);
    let decision: Value = serde_json::from_str(text).unwrap();
    assert_eq!(decision["next_speaker"], "user");
    assert_eq!(decision["model_choice"], "flash");
    assert_eq!(server.log().pop().unwrap().answer, "routing");
}

#[tokio::test]
async fn gemini_stream_sends_thought_text_and_function_call_frames_with_final_usage() {
    let server = server(Scenario::ToolThenAnswer).await;
    let answer = Api::Gemini
        .send(server.addr(), &Api::Gemini.first_request(), None, true)
        .await;
    let frames = answer.frames();
    assert!(
        frames.iter().all(|(event, _)| event.is_none()),
        "Gemini frames are data-only"
    );
    assert_eq!(
        frames[0].1["candidates"][0]["content"]["parts"][0]["thought"],
        true
    );
    let (_, last) = frames.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert!(last["candidates"][0]["content"]["parts"][0]["functionCall"].is_object());
    for field in [
        "promptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "totalTokenCount",
    ] {
        assert!(last["usageMetadata"][field].is_u64(), "{field}");
    }
    for (_, frame) in &frames[..frames.len() - 1] {
        assert!(frame["usageMetadata"].get("candidatesTokenCount").is_none());
    }
}

#[tokio::test]
async fn gemini_generate_content_answers_the_same_parts_as_json() {
    let server = server(Scenario::ToolThenAnswer).await;
    let body = Api::Gemini
        .send(server.addr(), &Api::Gemini.first_request(), None, false)
        .await
        .json();
    let parts = body["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap();
    assert_eq!(
        parts.last().unwrap()["functionCall"]["name"],
        "run_shell_command"
    );
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");
    assert!(body["usageMetadata"]["totalTokenCount"].is_u64());
}

/// (path, extra headers, expected status).
type BadRequest = (&'static str, &'static [(&'static str, &'static str)], u16);

#[tokio::test]
async fn unknown_paths_and_bad_bodies_are_answered_not_dropped() {
    let server = server(Scenario::ToolThenAnswer).await;
    let cases: &[BadRequest] = &[
        ("/v1/chat/completions", &[], 404),
        ("/v1beta/models/x:countTokens", &[], 404),
        (
            "/v1/messages",
            &[("x-mock-scenario", "no-such-scenario")],
            400,
        ),
    ];
    for (path, headers, status) in cases {
        let answer = post(server.addr(), path, headers, &json!({})).await;
        assert_eq!(answer.status, *status, "{path}");
    }
    let answer = post(
        server.addr(),
        "/v1/messages",
        &[("x-mock-scenario", "nope")],
        &json!({}),
    )
    .await;
    assert!(
        answer.text().contains("tool-then-answer"),
        "the error names the known scenarios"
    );
}

#[tokio::test]
async fn anthropic_text_answer_has_the_recorded_event_order() {
    let server = server(Scenario::ToolThenAnswer).await;
    let first = Api::Anthropic.first_request();
    let calls = Api::Anthropic.calls(&Api::Anthropic.send(server.addr(), &first, None, true).await);
    let answer = Api::Anthropic
        .send(
            server.addr(),
            &Api::Anthropic.with_results(&first, &calls),
            None,
            true,
        )
        .await;
    let mut names = event_names(&answer);
    names.dedup();
    let expected = [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ];
    assert_eq!(names, expected);
    assert_eq!(
        answer.frames_of("message_delta")[0]["delta"]["stop_reason"],
        "end_turn"
    );
}
