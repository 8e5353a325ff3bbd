//! The model API clients against the workspace's mock server on 127.0.0.1, and the pure
//! stream decoders over the SSE bodies the mock sent to the real CLIs (`tests/data/api/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod decode;
mod mock;
mod secrets;

use std::borrow::Cow;
use std::sync::Arc;

use panewise_mock_server::{MockConfig, MockServer, RunningServer, Scenario};
use panewise_providers::{
    ApiError, ApiKey, ApiKind, ApiMessage, ModelRequest, ProviderEvent, RetryPolicy, ToolDefinition,
};
use panewise_transport::{ApiConfig, CancellationToken, FixedJitter, HttpModelClient, ModelClient};

/// A key that must never show anywhere.
pub const PLANTED_KEY: &str = "sk-planted-0123456789-DO-NOT-LEAK";

/// The model asked for, per API (the mock answers any).
pub fn model(api: ApiKind) -> &'static str {
    match api {
        ApiKind::Anthropic => "claude-sonnet-4-5",
        ApiKind::OpenAi => "gpt-5",
        ApiKind::Gemini => "gemini-2.5-flash",
    }
}

/// A mock on an ephemeral port answering with `scenario`.
pub async fn server(scenario: Scenario) -> RunningServer {
    MockServer::start(MockConfig {
        port: 0,
        scenario,
        log_file: None,
    })
    .await
    .expect("the mock starts")
}

/// A client of `api` at the mock, with the planted key, `retry` and a fixed jitter of 0.5.
pub fn client(api: ApiKind, server: &RunningServer, retry: RetryPolicy) -> HttpModelClient {
    let mut config = ApiConfig::new(api, server.base_url(), ApiKey::new(PLANTED_KEY));
    config.retry = retry;
    HttpModelClient::with_jitter(config, Arc::new(FixedJitter(0.5))).expect("client builds")
}

/// The shell tool the mock knows how to call.
pub fn shell_tool() -> ToolDefinition<'static> {
    ToolDefinition {
        name: Cow::Borrowed("shell"),
        description: Cow::Borrowed("Runs a shell command and returns what it printed."),
        parameters: Cow::Owned(serde_json::json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        })),
    }
}

/// A request over a history the caller keeps: nothing of it is copied.
pub fn request<'a>(
    api: ApiKind,
    history: &'a [ApiMessage<'static>],
    tools: &'a [ToolDefinition<'static>],
) -> ModelRequest<'a> {
    ModelRequest {
        model: Cow::Borrowed(model(api)),
        system: Some(Cow::Borrowed("You are a test agent.")),
        messages: Cow::Borrowed(history),
        tools: Cow::Borrowed(tools),
        max_output_tokens: 1024,
        prompt_cache: true,
        cache_key: Some(Cow::Borrowed("panewise-test-session")),
        context_management: None,
    }
}

/// The user's first message.
pub fn first_prompt() -> Vec<ApiMessage<'static>> {
    vec![ApiMessage::User {
        text: Cow::Borrowed("Run `echo hello` in the shell and tell me what it printed."),
    }]
}

/// Every item of one call's stream.
pub async fn run(
    client: &dyn ModelClient,
    request: &ModelRequest<'_>,
) -> Vec<Result<ProviderEvent, ApiError>> {
    use futures_util::StreamExt as _;
    let stream = client
        .stream(request, CancellationToken::new())
        .expect("renders");
    stream.collect().await
}
