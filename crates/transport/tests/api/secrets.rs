//! The API key never shows: not in errors, not in `Debug` output, not in the events, not in
//! the mock's request log (which removes credential headers, so a key sent anywhere else
//! would show there).

use futures_util::StreamExt as _;
use panewise_mock_server::Scenario;
use panewise_providers::{ApiError, ApiKey, ApiKind, RetryPolicy};
use panewise_transport::{ApiConfig, CancellationToken, HttpModelClient, ModelClient};

use crate::{client, first_prompt, request, server, shell_tool, PLANTED_KEY};

fn assert_hidden(what: &str, text: &str) {
    assert!(
        !text.contains(PLANTED_KEY),
        "the key shows in {what}: {text}"
    );
}

#[tokio::test]
async fn a_planted_key_appears_in_no_error_debug_output_or_log() {
    let key = ApiKey::new(PLANTED_KEY);
    assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
    for scenario in [
        Scenario::ToolThenAnswer,
        Scenario::ServerError,
        Scenario::StreamCut,
    ] {
        let server = server(scenario).await;
        for api in ApiKind::ALL {
            let client = client(api, &server, RetryPolicy::none());
            assert_hidden("the client's Debug", &format!("{client:?}"));
            assert_hidden("the config's Debug", &format!("{:?}", client.config()));
            let history = first_prompt();
            let tools = vec![shell_tool()];
            let stream = client
                .stream(&request(api, &history, &tools), CancellationToken::new())
                .unwrap();
            let items: Vec<_> = stream.collect().await;
            for item in &items {
                assert_hidden("an event", &format!("{item:?}"));
                if let Err(error) = item {
                    assert_hidden("an error", &error.to_string());
                }
            }
        }
        let log = serde_json::to_string(&server.log()).unwrap();
        assert!(log.contains("POST"), "the log holds the requests");
        assert_hidden("the mock's request log", &log);
    }
}

#[tokio::test]
async fn a_connection_error_does_not_show_the_key() {
    // A port nothing listens on: bind one, learn it, close it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    for api in ApiKind::ALL {
        let mut config = ApiConfig::new(api, base.clone(), ApiKey::new(PLANTED_KEY));
        config.retry = RetryPolicy::none();
        let client = HttpModelClient::new(config).unwrap();
        let history = first_prompt();
        let items: Vec<_> = client
            .stream(&request(api, &history, &[]), CancellationToken::new())
            .unwrap()
            .collect()
            .await;
        let Some(Err(error @ ApiError::Failed { .. })) = items.last() else {
            panic!("{api}: {items:?}");
        };
        assert_hidden("a connection error", &format!("{error} {error:?}"));
    }
}
