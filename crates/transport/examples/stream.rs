//! Streams one completion from a model API and prints it as it arrives.
//!
//! `cargo run -p panewise-transport --example stream -- [anthropic|openai|gemini] [PROMPT]`
//!
//! With the API's key and base URL in the environment (`ANTHROPIC_API_KEY`,
//! `ANTHROPIC_BASE_URL`, …) it calls that API; without a key it starts the workspace's mock
//! server on 127.0.0.1 and calls that. `PANEWISE_MODEL` picks the model.

use std::io::Write as _;

use futures_util::StreamExt as _;
use panewise_providers::{ApiKey, ApiKind, ApiMessage, ModelRequest, ProviderEvent};
use panewise_transport::{ApiConfig, CancellationToken, HttpModelClient, ModelClient};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let api = match args.next().as_deref() {
        None | Some("anthropic") => ApiKind::Anthropic,
        Some("openai") => ApiKind::OpenAi,
        Some("gemini") => ApiKind::Gemini,
        Some(other) => return Err(format!("unknown API `{other}`").into()),
    };
    let prompt = args.next().unwrap_or_else(|| "Say hello.".to_owned());
    let mut _mock = None;
    let config = match ApiConfig::from_env(api) {
        Ok(config) => config,
        Err(_) => {
            let server = panewise_mock_server::MockServer::start(Default::default()).await?;
            let config = ApiConfig::new(api, server.base_url(), ApiKey::new("mock-key"));
            eprintln!(
                "no key in the environment: calling the mock at {}",
                server.base_url()
            );
            _mock = Some(server);
            config
        }
    };
    let model = std::env::var("PANEWISE_MODEL").unwrap_or_else(|_| {
        match api {
            ApiKind::Anthropic => "claude-sonnet-4-5",
            ApiKind::OpenAi => "gpt-5",
            ApiKind::Gemini => "gemini-2.5-flash",
        }
        .to_owned()
    });
    let client = HttpModelClient::new(config)?;
    let history = [ApiMessage::User {
        text: prompt.into(),
    }];
    let request = ModelRequest {
        model: model.into(),
        system: None,
        messages: history.as_slice().into(),
        tools: Default::default(),
        max_output_tokens: 1024,
        prompt_cache: true,
        cache_key: None,
        context_management: None,
    };
    let mut events = client.stream(&request, CancellationToken::new())?;
    while let Some(event) = events.next().await {
        match event? {
            ProviderEvent::TextDelta { text } => {
                print!("{text}");
                std::io::stdout().flush()?;
            }
            ProviderEvent::ProviderRetrying { retry_delay_ms, .. } => {
                eprintln!("retrying in {} ms", retry_delay_ms.unwrap_or(0));
            }
            ProviderEvent::CallEnded {
                stop_reason, stats, ..
            } => {
                println!();
                eprintln!(
                    "stop: {stop_reason:?}; usage: {}",
                    serde_json::to_string(&stats)?
                );
            }
            _ => {}
        }
    }
    Ok(())
}
