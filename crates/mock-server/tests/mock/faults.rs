//! The error scenarios: statuses and the provider's error bodies, the error in the middle of a
//! 200 stream, and the stream whose connection is cut.

use panewise_mock_server::Scenario;
use serde_json::{json, Value};

use crate::{server, Api, APIS};

/// (scenario, API, status, a JSON pointer into the body, the value there).
const ERRORS: &[(&str, Api, u16, &str, &str)] = &[
    (
        "rate-limit",
        Api::Anthropic,
        429,
        "/error/type",
        "rate_limit_error",
    ),
    (
        "rate-limit",
        Api::OpenAi,
        429,
        "/error/code",
        "rate_limit_exceeded",
    ),
    (
        "rate-limit",
        Api::Gemini,
        429,
        "/error/status",
        "RESOURCE_EXHAUSTED",
    ),
    (
        "server-error",
        Api::Anthropic,
        500,
        "/error/type",
        "api_error",
    ),
    (
        "server-error",
        Api::OpenAi,
        500,
        "/error/type",
        "server_error",
    ),
    (
        "server-error",
        Api::Gemini,
        500,
        "/error/status",
        "INTERNAL",
    ),
    (
        "overloaded",
        Api::Anthropic,
        529,
        "/error/type",
        "overloaded_error",
    ),
    (
        "overloaded",
        Api::OpenAi,
        503,
        "/error/message",
        "The engine is currently overloaded, please try again later",
    ),
    (
        "overloaded",
        Api::Gemini,
        503,
        "/error/status",
        "UNAVAILABLE",
    ),
];

#[tokio::test]
async fn error_scenarios_answer_the_providers_status_and_body() {
    let server = server(Scenario::ToolThenAnswer).await;
    for &(scenario, api, status, pointer, value) in ERRORS {
        for stream in [true, false] {
            let answer = api
                .send(server.addr(), &api.first_request(), Some(scenario), stream)
                .await;
            let label = format!("{scenario} on {api:?} (stream {stream})");
            assert_eq!(answer.status, status, "{label}");
            assert_eq!(
                answer.headers["content-type"], "application/json",
                "{label}"
            );
            let body = answer.json();
            assert_eq!(
                body.pointer(pointer),
                Some(&json!(value)),
                "{label}: {body}"
            );
            let retry_after = answer
                .headers
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            let expected = (scenario == "rate-limit").then(|| "1".to_owned());
            assert_eq!(retry_after, expected, "{label}");
            let logged = server.log().pop().unwrap();
            assert_eq!(
                (logged.status, logged.answer.as_str(), logged.usage),
                (status, "error", None),
                "{label}"
            );
        }
    }
}

/// Whether a frame is the API's mid-stream error.
fn is_error_frame(api: Api, event: Option<&str>, data: &Value) -> bool {
    match api {
        Api::Anthropic => event == Some("error") && data["error"]["type"] == "overloaded_error",
        Api::OpenAi => {
            event == Some("response.failed")
                && data["response"]["status"] == "failed"
                && data["response"]["error"]["code"] == "server_error"
        }
        Api::Gemini => data["error"]["status"] == "UNAVAILABLE" && data["error"]["code"] == 503,
    }
}

/// Whether a frame is the one that ends a successful stream.
fn is_final_frame(api: Api, event: Option<&str>, data: &Value) -> bool {
    match api {
        Api::Anthropic => event == Some("message_stop"),
        Api::OpenAi => event == Some("response.completed"),
        Api::Gemini => data["candidates"][0]["finishReason"] == "STOP",
    }
}

#[tokio::test]
async fn mid_stream_error_is_a_200_stream_that_ends_with_the_error_event() {
    let server = server(Scenario::MidStreamError).await;
    for api in APIS {
        let answer = api
            .send(server.addr(), &api.first_request(), None, true)
            .await;
        assert_eq!(answer.status, 200, "{api:?}");
        assert!(answer.complete, "{api:?}: the stream itself ends cleanly");
        let frames = answer.frames();
        assert!(frames.len() >= 2, "{api:?}: some content before the error");
        let (event, data) = frames.last().unwrap();
        assert!(
            is_error_frame(api, event.as_deref(), data),
            "{api:?}: {data}"
        );
        assert!(
            !frames
                .iter()
                .any(|(e, d)| is_final_frame(api, e.as_deref(), d)),
            "{api:?}"
        );
        if api == Api::OpenAi {
            let numbers: Vec<u64> = frames
                .iter()
                .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
                .collect();
            assert_eq!(
                numbers,
                (0..frames.len() as u64).collect::<Vec<_>>(),
                "events stay numbered in order"
            );
        }
        assert_eq!(server.log().pop().unwrap().answer, "mid-stream-error");
    }
}

#[tokio::test]
async fn stream_cut_closes_the_connection_after_the_first_frames() {
    let server = server(Scenario::StreamCut).await;
    for api in APIS {
        let answer = api
            .send(server.addr(), &api.first_request(), None, true)
            .await;
        assert_eq!(answer.status, 200, "{api:?}");
        assert!(
            !answer.complete,
            "{api:?}: the body ends without its final chunk"
        );
        let frames = answer.frames();
        assert!(
            !frames.is_empty() && frames.len() <= 5,
            "{api:?}: {} frames",
            frames.len()
        );
        assert!(
            !frames
                .iter()
                .any(|(e, d)| is_final_frame(api, e.as_deref(), d)),
            "{api:?}"
        );
        assert_eq!(server.log().pop().unwrap().answer, "stream-cut");
    }
}

#[tokio::test]
async fn stream_cut_of_a_json_answer_sends_half_a_body() {
    let server = server(Scenario::StreamCut).await;
    for api in APIS {
        let answer = api
            .send(server.addr(), &api.first_request(), None, false)
            .await;
        assert_eq!(answer.status, 200, "{api:?}");
        assert!(!answer.complete, "{api:?}");
        assert!(!answer.body.is_empty(), "{api:?}");
        assert!(
            serde_json::from_slice::<Value>(&answer.body).is_err(),
            "{api:?}: half a JSON body"
        );
    }
}

#[tokio::test]
async fn the_scenario_header_overrides_the_servers_scenario_per_request() {
    let server = server(Scenario::RateLimit).await;
    let api = Api::OpenAi;
    assert_eq!(
        api.send(server.addr(), &api.first_request(), None, true)
            .await
            .status,
        429
    );
    let answer = api
        .send(
            server.addr(),
            &api.first_request(),
            Some("tool-then-answer"),
            true,
        )
        .await;
    assert_eq!(answer.status, 200);
    let log = server.log();
    assert_eq!(
        log.iter().map(|r| r.scenario).collect::<Vec<_>>(),
        [Scenario::RateLimit, Scenario::ToolThenAnswer]
    );
}

#[tokio::test]
async fn rate_limit_once_refuses_a_body_the_first_time_and_answers_its_retry() {
    let server = server(Scenario::RateLimitOnce).await;
    for api in APIS {
        let request = api.first_request();
        let first = api.send(server.addr(), &request, None, true).await;
        assert_eq!(first.status, 429, "{api:?}");
        assert_eq!(
            first
                .headers
                .get("retry-after")
                .and_then(|v| v.to_str().ok()),
            Some("1"),
            "{api:?}"
        );
        let retry = api.send(server.addr(), &request, None, true).await;
        assert_eq!(retry.status, 200, "{api:?}");
        assert!(
            !api.calls(&retry).is_empty(),
            "{api:?}: the tool-then-answer reply"
        );
        // Another body is refused once in its turn.
        let other = api.with_results(&request, &api.calls(&retry));
        assert_eq!(
            api.send(server.addr(), &other, None, true).await.status,
            429,
            "{api:?}"
        );
        assert_eq!(
            api.send(server.addr(), &other, None, true).await.status,
            200,
            "{api:?}"
        );
    }
    let names: Vec<&str> = panewise_mock_server::Scenario::names();
    assert!(names.contains(&"rate-limit-once"));
    assert_eq!(
        "rate-limit-once".parse::<Scenario>().ok(),
        Some(Scenario::RateLimitOnce)
    );
}
