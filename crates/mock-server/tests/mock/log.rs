//! The request log (secrets removed, in memory, `GET /_mock/log`, the JSONL file) and the
//! refusal of proxy requests.

use panewise_mock_server::{LoggedRequest, MockConfig, MockServer, Scenario, SECRET_HEADERS};
use serde_json::json;

use crate::{post, raw_exchange, server, Api};

const SECRET: &str = "sk-mock-secret-value-1234";

#[tokio::test]
async fn secrets_never_reach_the_log_in_memory_or_on_disk() {
    let dir = std::env::temp_dir().join(format!("panewise-mock-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("requests.jsonl");
    let _ = std::fs::remove_file(&path);
    let server = MockServer::start(MockConfig {
        port: 0,
        scenario: Scenario::ToolThenAnswer,
        log_file: Some(path.clone()),
    })
    .await
    .unwrap();
    let bearer = format!("Bearer {SECRET}");
    let headers: Vec<(&str, &str)> = vec![
        ("authorization", bearer.as_str()),
        ("X-Api-Key", SECRET),
        ("x-goog-api-key", SECRET),
        ("anthropic-version", "2023-06-01"),
    ];
    post(
        server.addr(),
        "/v1/messages?beta=true",
        &headers,
        &Api::Anthropic.first_request(),
    )
    .await;
    let gemini_path =
        format!("/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse&key={SECRET}");
    post(
        server.addr(),
        &gemini_path,
        &headers,
        &Api::Gemini.first_request(),
    )
    .await;

    let log = server.log();
    assert_eq!(log.len(), 2);
    assert_eq!(
        log[0].headers.get("anthropic-version").map(String::as_str),
        Some("2023-06-01"),
        "other headers are kept"
    );
    assert_eq!(log[0].query, "beta=true");
    assert_eq!(log[1].query, "alt=sse");
    for entry in &log {
        for secret in SECRET_HEADERS {
            assert!(!entry.headers.contains_key(secret), "{secret} is removed");
        }
    }
    let in_memory = serde_json::to_string(&log).unwrap();
    assert!(!in_memory.contains(SECRET));

    let on_disk = std::fs::read_to_string(&path).unwrap();
    assert!(!on_disk.contains(SECRET));
    let lines: Vec<LoggedRequest> = on_disk
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines, log,
        "the JSONL file holds the same entries, one per line"
    );

    let endpoint = crate::raw_get(server.addr(), "/_mock/log").await;
    let served: Vec<LoggedRequest> = serde_json::from_str(&endpoint).unwrap();
    assert_eq!(
        served, log,
        "GET /_mock/log serves the log and is not logged itself"
    );
    assert_eq!(server.log().len(), 2);
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_log_keeps_method_path_body_and_numbers_requests() {
    let server = server(Scenario::ToolThenAnswer).await;
    let body = Api::OpenAi.first_request();
    post(server.addr(), "/v1/responses", &[], &body).await;
    post(server.addr(), "/v1/responses", &[], &body).await;
    let log = server.log();
    assert_eq!(log.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        (log[0].method.as_str(), log[0].path.as_str()),
        ("POST", "/v1/responses")
    );
    assert_eq!(log[0].body, body);
}

#[tokio::test]
async fn proxy_requests_are_refused_with_403() {
    let server = server(Scenario::ToolThenAnswer).await;
    let cases = [
        "CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n",
        "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n",
        "POST https://api.openai.com/v1/responses HTTP/1.1\r\nHost: api.openai.com\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    ];
    for request in cases {
        let answer = raw_exchange(server.addr(), request).await;
        assert!(
            answer.starts_with("HTTP/1.1 403"),
            "{request:?} → {answer:?}"
        );
    }
    let log = server.log();
    assert_eq!(log.len(), cases.len(), "refusals are logged");
    assert!(log.iter().all(|r| r.status == 403 && r.answer == "refused"));
    assert_eq!(log[0].method, "CONNECT");
    assert_eq!(log[0].path, "api.anthropic.com:443");
}

#[tokio::test]
async fn shutdown_stops_the_listener() {
    let server = server(Scenario::ToolThenAnswer).await;
    let addr = server.addr();
    assert!(addr.ip().is_loopback());
    post(addr, "/v1/responses", &[], &json!({"input": []})).await;
    server.shutdown().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing listens after shutdown"
    );
}
