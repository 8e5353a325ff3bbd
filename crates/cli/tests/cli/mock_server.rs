//! `panewise mock-server`: serves on loopback, answers a model call, refuses a proxy CONNECT.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

/// Sends `request` and returns the whole response as text.
fn exchange(addr: &str, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn mock_server_answers_on_loopback_and_refuses_connect() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(["mock-server", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{first}");
    let body = r#"{"model":"claude-opus-5-5","max_tokens":64,"stream":false,"messages":[{"role":"user","content":"hi"}]}"#;
    let response = exchange(
        &addr,
        &format!(
            "POST /v1/messages HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\nx-api-key: sk-planted-secret\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"usage\""), "{response}");
    let refused = exchange(
        &addr,
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nconnection: close\r\n\r\n",
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    let log = exchange(
        &addr,
        &format!("GET /_mock/log HTTP/1.1\r\nHost: {addr}\r\nconnection: close\r\n\r\n"),
    );
    assert!(log.contains("/v1/messages"), "{log}");
    assert!(
        !log.contains("sk-planted-secret"),
        "the key never reaches the log"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}
