//! Each API against the mock: a tool-call round trip, exact usage, every error scenario
//! classified, a retry that succeeds, and cancellation during a retry wait and a stream.

use std::borrow::Cow;
use std::time::Duration;

use futures_util::StreamExt as _;
use panewise_mock_server::{LoggedRequest, Scenario};
use panewise_providers::{
    ApiError, ApiKind, ApiMessage, CostSource, FailureKind, ProviderEvent, RetryPolicy,
    SessionStats,
};
use panewise_transport::{CancellationToken, ModelClient};
use serde_json::Value;

use crate::{client, first_prompt, request, run, server, shell_tool};

fn api_requests(log: &[LoggedRequest]) -> Vec<&LoggedRequest> {
    log.iter().filter(|entry| entry.method == "POST").collect()
}

/// What each API's own usage object says, read field by field, as the vocabulary's stats.
fn expected_stats(api: ApiKind, reported: &Value) -> SessionStats {
    let field = |pointer: &str| reported.pointer(pointer).and_then(Value::as_u64);
    match api {
        ApiKind::Anthropic => SessionStats {
            input_tokens: field("/input_tokens"),
            cached_input_tokens: field("/cache_read_input_tokens"),
            cache_write_input_tokens: field("/cache_creation_input_tokens"),
            cache_write_1h_input_tokens: field("/cache_creation/ephemeral_1h_input_tokens"),
            output_tokens: field("/output_tokens"),
            reasoning_tokens: None,
            ..SessionStats::default()
        },
        ApiKind::OpenAi => SessionStats {
            input_tokens: field("/input_tokens")
                .map(|all| all - field("/input_tokens_details/cached_tokens").unwrap_or(0)),
            cached_input_tokens: field("/input_tokens_details/cached_tokens"),
            cache_write_input_tokens: None,
            output_tokens: field("/output_tokens"),
            reasoning_tokens: field("/output_tokens_details/reasoning_tokens"),
            ..SessionStats::default()
        },
        ApiKind::Gemini => SessionStats {
            input_tokens: field("/promptTokenCount")
                .map(|all| all - field("/cachedContentTokenCount").unwrap_or(0)),
            cached_input_tokens: field("/cachedContentTokenCount"),
            cache_write_input_tokens: None,
            output_tokens: Some(
                field("/candidatesTokenCount").unwrap_or(0)
                    + field("/thoughtsTokenCount").unwrap_or(0),
            ),
            reasoning_tokens: field("/thoughtsTokenCount"),
            ..SessionStats::default()
        },
    }
}

fn without_cost(stats: &SessionStats) -> SessionStats {
    SessionStats {
        cost_usd: None,
        cost_source: None,
        ..stats.clone()
    }
}

#[tokio::test]
async fn a_tool_call_round_trip_with_usage_read_exactly() {
    for api in ApiKind::ALL {
        let server = server(Scenario::ToolThenAnswer).await;
        let client = client(api, &server, RetryPolicy::none());
        let tools = vec![shell_tool()];
        let mut history = first_prompt();

        let first = client
            .complete(&request(api, &history, &tools), CancellationToken::new())
            .await
            .unwrap_or_else(|error| panic!("{api}: {error}"));
        assert_eq!(first.tool_calls.len(), 1, "{api}: {first:?}");
        let call = first.tool_calls[0].clone();
        assert_eq!(call.name, "shell", "{api}");
        let arguments: Value = serde_json::from_str(&call.arguments).unwrap();
        assert_eq!(arguments["command"], "echo hello", "{api}");
        assert!(!first.thinking.is_empty(), "{api}: the mock thinks first");

        history.push(ApiMessage::Assistant {
            text: Cow::Owned(first.text.clone()),
        });
        history.push(ApiMessage::ToolCall {
            call_id: Cow::Owned(call.call_id.clone()),
            name: Cow::Owned(call.name.clone()),
            arguments: Cow::Owned(call.arguments.clone()),
        });
        history.push(ApiMessage::ToolResult {
            call_id: Cow::Owned(call.call_id.clone()),
            name: Cow::Owned(call.name.clone()),
            output: Cow::Borrowed("hello\n"),
            is_error: false,
        });
        let second = client
            .complete(&request(api, &history, &tools), CancellationToken::new())
            .await
            .unwrap_or_else(|error| panic!("{api}: {error}"));
        assert!(second.tool_calls.is_empty(), "{api}: {second:?}");
        assert_eq!(second.text, "The command printed `hello`. Done.", "{api}");

        // The mock saw the tool result as one round, and logged what it reported.
        let log = server.log();
        let posts = api_requests(&log);
        assert_eq!(posts.len(), 2, "{api}");
        assert_eq!(posts[0].answer, "tool-call", "{api}");
        assert_eq!(posts[1].answer, "text", "{api}");
        for (completion, entry) in [&first, &second].into_iter().zip(&posts) {
            let reported = entry.reported_usage.as_ref().expect("usage reported");
            assert_eq!(
                without_cost(&completion.stats),
                expected_stats(api, reported),
                "{api}"
            );
            // And in the mock's neutral terms: the whole prompt, the cache, the output.
            let neutral = entry.usage.expect("neutral usage");
            let stats = &completion.stats;
            let prompt = stats.input_tokens.unwrap()
                + stats.cached_input_tokens.unwrap()
                + stats.cache_write_input_tokens.unwrap_or(0);
            assert_eq!(prompt, neutral.input_tokens, "{api}");
            assert_eq!(stats.output_tokens, Some(neutral.output_tokens), "{api}");
            // A field the API does not report is absent, never 0.
            match api {
                ApiKind::Anthropic => assert_eq!(stats.reasoning_tokens, None),
                _ => assert_eq!(stats.cache_write_input_tokens, None, "{api}"),
            }
            assert!(
                stats.cost_source.is_some(),
                "{api}: priced or marked unknown"
            );
            assert_eq!(
                stats.cost_usd.is_some(),
                stats.cost_source == Some(CostSource::Estimated),
                "{api}"
            );
        }
    }
}

/// (scenario, API, kind, HTTP status).
const ERRORS: &[(Scenario, ApiKind, FailureKind, Option<u16>)] = &[
    (
        Scenario::RateLimit,
        ApiKind::Anthropic,
        FailureKind::RateLimited,
        Some(429),
    ),
    (
        Scenario::RateLimit,
        ApiKind::OpenAi,
        FailureKind::RateLimited,
        Some(429),
    ),
    (
        Scenario::RateLimit,
        ApiKind::Gemini,
        FailureKind::RateLimited,
        Some(429),
    ),
    (
        Scenario::ServerError,
        ApiKind::Anthropic,
        FailureKind::ServerError,
        Some(500),
    ),
    (
        Scenario::ServerError,
        ApiKind::OpenAi,
        FailureKind::ServerError,
        Some(500),
    ),
    (
        Scenario::ServerError,
        ApiKind::Gemini,
        FailureKind::ServerError,
        Some(500),
    ),
    (
        Scenario::Overloaded,
        ApiKind::Anthropic,
        FailureKind::Overloaded,
        Some(529),
    ),
    (
        Scenario::Overloaded,
        ApiKind::OpenAi,
        FailureKind::Overloaded,
        Some(503),
    ),
    (
        Scenario::Overloaded,
        ApiKind::Gemini,
        FailureKind::Overloaded,
        Some(503),
    ),
    (
        Scenario::MidStreamError,
        ApiKind::Anthropic,
        FailureKind::Overloaded,
        None,
    ),
    (
        Scenario::MidStreamError,
        ApiKind::OpenAi,
        FailureKind::ServerError,
        None,
    ),
    (
        Scenario::MidStreamError,
        ApiKind::Gemini,
        FailureKind::Overloaded,
        Some(503),
    ),
    (
        Scenario::StreamCut,
        ApiKind::Anthropic,
        FailureKind::StreamDisconnected,
        None,
    ),
    (
        Scenario::StreamCut,
        ApiKind::OpenAi,
        FailureKind::StreamDisconnected,
        None,
    ),
    (
        Scenario::StreamCut,
        ApiKind::Gemini,
        FailureKind::StreamDisconnected,
        None,
    ),
];

#[tokio::test]
async fn every_error_scenario_is_classified() {
    for &(scenario, api, kind, status) in ERRORS {
        let server = server(scenario).await;
        let client = client(api, &server, RetryPolicy::none());
        let history = first_prompt();
        let tools = vec![shell_tool()];
        let items = run(&client, &request(api, &history, &tools)).await;
        let last = items.last().expect("the stream ends with an outcome");
        let failure = match last {
            Err(ApiError::Failed { failure, .. }) => failure,
            other => panic!("{scenario} {api}: ended with {other:?}"),
        };
        assert_eq!(failure.kind, kind, "{scenario} {api}: {failure:?}");
        assert_eq!(failure.http_status, status, "{scenario} {api}: {failure:?}");
        assert!(failure.retryable, "{scenario} {api}");
        assert!(
            items[..items.len() - 1].iter().all(Result::is_ok),
            "{scenario} {api}: one error, last"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_is_retried_after_its_retry_after_and_then_succeeds() {
    for api in ApiKind::ALL {
        let server = server(Scenario::RateLimitOnce).await;
        let client = client(api, &server, RetryPolicy::default());
        let history = first_prompt();
        let tools = vec![shell_tool()];
        let started = tokio::time::Instant::now();
        let items = run(&client, &request(api, &history, &tools)).await;
        let events: Vec<ProviderEvent> = items
            .into_iter()
            .map(|item| item.unwrap_or_else(|error| panic!("{api}: {error}")))
            .collect();
        let retries: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                ProviderEvent::ProviderRetrying {
                    attempt,
                    retry_delay_ms,
                    http_status,
                    ..
                } => Some((*attempt, *retry_delay_ms, *http_status)),
                _ => None,
            })
            .collect();
        // `retry-after: 1` is honoured over the backoff (500 ms scaled by the jitter).
        assert_eq!(retries, vec![(Some(1), Some(1000), Some(429))], "{api}");
        assert!(started.elapsed() >= Duration::from_secs(1), "{api}");
        assert!(
            matches!(events.last(), Some(ProviderEvent::CallEnded { .. })),
            "{api}: {events:?}"
        );
        let statuses: Vec<u16> = api_requests(&server.log())
            .iter()
            .map(|e| e.status)
            .collect();
        assert_eq!(statuses, vec![429, 200], "{api}");
    }
}

#[tokio::test(start_paused = true)]
async fn retries_are_bounded_by_attempts_with_exponential_backoff() {
    let server = server(Scenario::ServerError).await;
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(400),
        ..RetryPolicy::default()
    };
    let client = client(ApiKind::OpenAi, &server, policy);
    let history = first_prompt();
    let items = run(&client, &request(ApiKind::OpenAi, &history, &[])).await;
    let delays: Vec<u64> = items
        .iter()
        .filter_map(|item| match item {
            Ok(ProviderEvent::ProviderRetrying { retry_delay_ms, .. }) => *retry_delay_ms,
            _ => None,
        })
        .collect();
    // Jitter 0.5 gives three quarters of 400 ms, then of 800 ms.
    assert_eq!(delays, vec![300, 600]);
    assert!(matches!(items.last(), Some(Err(ApiError::Failed { .. }))));
    assert_eq!(api_requests(&server.log()).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn cancelling_during_a_retry_wait_ends_the_call_at_once() {
    for api in ApiKind::ALL {
        let server = server(Scenario::RateLimit).await;
        let client = client(api, &server, RetryPolicy::default());
        let history = first_prompt();
        let cancel = CancellationToken::new();
        let mut stream = client
            .stream(&request(api, &history, &[]), cancel.clone())
            .unwrap();
        let started = tokio::time::Instant::now();
        loop {
            match stream.next().await {
                Some(Ok(ProviderEvent::ProviderRetrying { .. })) => break,
                Some(Ok(_)) => {}
                other => panic!("{api}: {other:?} before the retry"),
            }
        }
        cancel.cancel();
        assert!(matches!(
            stream.next().await,
            Some(Err(ApiError::Cancelled { .. }))
        ));
        assert!(stream.next().await.is_none(), "{api}");
        assert!(started.elapsed() < Duration::from_secs(1), "{api}: no wait");
        assert_eq!(api_requests(&server.log()).len(), 1, "{api}: no retry sent");
    }
}

#[tokio::test]
async fn cancelling_during_a_stream_ends_the_call_at_once() {
    for api in ApiKind::ALL {
        let server = server(Scenario::ToolThenAnswer).await;
        let client = client(api, &server, RetryPolicy::default());
        let history = first_prompt();
        let tools = vec![shell_tool()];
        let cancel = CancellationToken::new();
        let mut stream = client
            .stream(&request(api, &history, &tools), cancel.clone())
            .unwrap();
        loop {
            match stream.next().await {
                Some(Ok(ProviderEvent::ThinkingDelta { .. } | ProviderEvent::TextDelta { .. })) => {
                    break
                }
                Some(Ok(_)) => {}
                other => panic!("{api}: {other:?} before any output"),
            }
        }
        cancel.cancel();
        let rest: Vec<_> = stream.collect().await;
        assert!(
            matches!(rest.as_slice(), [Err(ApiError::Cancelled { .. })]),
            "{api}: {rest:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_tool_call_argument_fails_before_anything_is_sent() {
    let server = server(Scenario::ToolThenAnswer).await;
    for api in ApiKind::ALL {
        let client = client(api, &server, RetryPolicy::none());
        let history = vec![ApiMessage::ToolCall {
            call_id: Cow::Borrowed("call_1"),
            name: Cow::Borrowed("shell"),
            arguments: Cow::Borrowed("{not json"),
        }];
        let result = client.stream(&request(api, &history, &[]), CancellationToken::new());
        assert!(matches!(result, Err(ApiError::Request(_))), "{api}");
    }
    assert!(api_requests(&server.log()).is_empty());
}
