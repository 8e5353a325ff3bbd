//! Tests of the mock server over real loopback HTTP: one integration-test binary, one module
//! per API, plus the faults, the proxy refusal and the log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cache;
mod context;
mod faults;
mod log;
mod scenarios;
mod shapes;

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::header::HeaderMap;
use hyper::Request;
use hyper_util::rt::TokioIo;
use panewise_mock_server::{MockConfig, MockServer, RunningServer, Scenario};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// A server on an ephemeral port with the given default scenario.
pub(crate) async fn server(scenario: Scenario) -> RunningServer {
    let config = MockConfig {
        port: 0,
        scenario,
        log_file: None,
    };
    MockServer::start(config)
        .await
        .expect("the mock server starts")
}

/// What came back for one request.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
    /// False when the connection closed before the body ended.
    pub(crate) complete: bool,
}

impl Answer {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The SSE frames: `(event name, data)`.
    pub(crate) fn frames(&self) -> Vec<(Option<String>, Value)> {
        self.text()
            .split("\n\n")
            .filter(|frame| !frame.trim().is_empty())
            .map(|frame| {
                let mut event = None;
                let mut data = Value::Null;
                for line in frame.lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event = Some(name.to_owned());
                    } else if let Some(json) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(json).expect("JSON data in an SSE frame");
                    }
                }
                (event, data)
            })
            .collect()
    }

    /// The data of the frames whose event (or `type`) is `kind`.
    pub(crate) fn frames_of(&self, kind: &str) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|(event, data)| {
                event.as_deref() == Some(kind) || data["type"].as_str() == Some(kind)
            })
            .map(|(_, data)| data)
            .collect()
    }
}

/// POSTs `body` as JSON to `path_and_query` with the extra headers.
pub(crate) async fn post(
    addr: SocketAddr,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> Answer {
    let stream = TcpStream::connect(addr)
        .await
        .expect("connects to the mock");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("an HTTP/1.1 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = Request::post(path_and_query)
        .header("host", addr.to_string())
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a request");
    let response = sender.send_request(request).await.expect("a response head");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut incoming = response.into_body();
    let mut bytes = Vec::new();
    let mut complete = true;
    while let Some(frame) = incoming.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    bytes.extend_from_slice(data);
                }
            }
            Err(_) => {
                complete = false;
                break;
            }
        }
    }
    Answer {
        status,
        headers,
        body: bytes,
        complete,
    }
}

/// Sends raw bytes and reads until the server closes or answers a status line.
pub(crate) async fn raw_exchange(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr)
        .await
        .expect("connects to the mock");
    stream.write_all(request.as_bytes()).await.expect("writes");
    let mut buffer = vec![0u8; 4096];
    let mut read = 0;
    while read < buffer.len() {
        let n = stream.read(&mut buffer[read..]).await.expect("reads");
        if n == 0 {
            break;
        }
        read += n;
        if String::from_utf8_lossy(&buffer[..read]).contains("\r\n\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&buffer[..read]).into_owned()
}

/// One scripted tool call as a client decodes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) args: Value,
}

/// The three APIs, driven the way their CLIs drive them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Anthropic,
    OpenAi,
    Gemini,
}

pub(crate) const APIS: [Api; 3] = [Api::Anthropic, Api::OpenAi, Api::Gemini];

impl Api {
    /// A first request, shaped like the CLI's: its tool list and one user prompt.
    pub(crate) fn first_request(self) -> Value {
        match self {
            Api::Anthropic => serde_json::json!({
                "model": "claude-opus-5-5", "max_tokens": 32000, "stream": true,
                "system": [{"type": "text", "text": "You are a Claude agent.\nPrimary working directory: /tmp/mock-work\n"}],
                "tools": [{"name": "Agent", "input_schema": {}}, {"name": "Bash", "input_schema": {}}, {"name": "Write", "input_schema": {}}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "Run `echo hello`."}]}],
            }),
            Api::OpenAi => serde_json::json!({
                "model": "gpt-5.5", "stream": true, "instructions": "You are Codex.",
                "tools": [{"type": "function", "name": "exec_command", "parameters": {}}, {"type": "custom", "name": "apply_patch"}],
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context><cwd>/tmp/mock-work</cwd></environment_context>"}]},
                          {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Run `echo hello`."}]}],
            }),
            Api::Gemini => serde_json::json!({
                "contents": [{"role": "user", "parts": [{"text": "Run `echo hello` in the shell."}]}],
                "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]},
                "tools": [{"functionDeclarations": [{"name": "write_file"}, {"name": "run_shell_command"}]}],
                "generationConfig": {"temperature": 1},
            }),
        }
    }

    /// The path (and query) of a model call.
    pub(crate) fn path(self, stream: bool) -> &'static str {
        match (self, stream) {
            (Api::Anthropic, _) => "/v1/messages?beta=true",
            (Api::OpenAi, _) => "/v1/responses",
            (Api::Gemini, true) => "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse",
            (Api::Gemini, false) => "/v1beta/models/gemini-3.8-flash:generateContent",
        }
    }

    /// `request` with its `stream` flag set (Gemini streams by path instead).
    pub(crate) fn streaming(self, request: &Value, stream: bool) -> Value {
        let mut request = request.clone();
        if self != Api::Gemini {
            request["stream"] = Value::Bool(stream);
        }
        request
    }

    /// Sends `request`, with the scenario header when given.
    pub(crate) async fn send(
        self,
        addr: SocketAddr,
        request: &Value,
        scenario: Option<&str>,
        stream: bool,
    ) -> Answer {
        let body = self.streaming(request, stream);
        let headers: Vec<(&str, &str)> = scenario
            .map(|s| ("x-mock-scenario", s))
            .into_iter()
            .collect();
        post(addr, self.path(stream), &headers, &body).await
    }

    /// `request` followed by the model's `calls` and their results, as the CLI sends it next.
    pub(crate) fn with_results(self, request: &Value, calls: &[Call]) -> Value {
        let mut next = request.clone();
        match self {
            Api::Anthropic => {
                let uses: Vec<Value> = calls.iter().map(|c| serde_json::json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args})).collect();
                let results: Vec<Value> = calls.iter().map(|c| serde_json::json!({"type": "tool_result", "tool_use_id": c.id, "content": "hello", "is_error": false})).collect();
                let messages = next["messages"].as_array_mut().expect("messages");
                messages.push(serde_json::json!({"role": "assistant", "content": uses}));
                messages.push(serde_json::json!({"role": "user", "content": results}));
            }
            Api::OpenAi => {
                let input = next["input"].as_array_mut().expect("input");
                for c in calls {
                    input.push(serde_json::json!({"type": "function_call", "name": c.name, "arguments": c.args.to_string(), "call_id": c.id}));
                }
                for c in calls {
                    input.push(serde_json::json!({"type": "function_call_output", "call_id": c.id, "output": "Process exited with code 0\nOutput:\nhello\n"}));
                }
            }
            Api::Gemini => {
                let parts: Vec<Value> = calls
                    .iter()
                    .map(|c| serde_json::json!({"functionCall": {"name": c.name, "args": c.args}}))
                    .collect();
                let responses: Vec<Value> = calls.iter().map(|c| serde_json::json!({"functionResponse": {"name": c.name, "response": {"output": "hello"}}})).collect();
                let contents = next["contents"].as_array_mut().expect("contents");
                contents.push(serde_json::json!({"role": "model", "parts": parts}));
                contents.push(serde_json::json!({"role": "user", "parts": responses}));
            }
        }
        next
    }

    /// The tool calls of a streamed answer, decoded the way each client decodes them.
    pub(crate) fn calls(self, answer: &Answer) -> Vec<Call> {
        match self {
            Api::Anthropic => {
                let mut calls: Vec<(u64, Call, String)> = Vec::new();
                for (_, data) in answer.frames() {
                    match data["type"].as_str() {
                        Some("content_block_start")
                            if data["content_block"]["type"] == "tool_use" =>
                        {
                            let block = &data["content_block"];
                            let call = Call {
                                id: block["id"].as_str().unwrap().to_owned(),
                                name: block["name"].as_str().unwrap().to_owned(),
                                args: Value::Null,
                            };
                            calls.push((data["index"].as_u64().unwrap(), call, String::new()));
                        }
                        Some("content_block_delta")
                            if data["delta"]["type"] == "input_json_delta" =>
                        {
                            let index = data["index"].as_u64().unwrap();
                            let entry = calls
                                .iter_mut()
                                .find(|(i, _, _)| *i == index)
                                .expect("a started tool_use block");
                            entry
                                .2
                                .push_str(data["delta"]["partial_json"].as_str().unwrap());
                        }
                        _ => {}
                    }
                }
                calls
                    .into_iter()
                    .map(|(_, mut call, json)| {
                        call.args = serde_json::from_str(&json).expect("complete tool input JSON");
                        call
                    })
                    .collect()
            }
            Api::OpenAi => answer
                .frames_of("response.output_item.done")
                .into_iter()
                .filter(|d| d["item"]["type"] == "function_call")
                .map(|d| Call {
                    id: d["item"]["call_id"].as_str().unwrap().to_owned(),
                    name: d["item"]["name"].as_str().unwrap().to_owned(),
                    args: serde_json::from_str(d["item"]["arguments"].as_str().unwrap())
                        .expect("arguments JSON"),
                })
                .collect(),
            Api::Gemini => answer
                .frames()
                .into_iter()
                .flat_map(|(_, d)| {
                    d["candidates"][0]["content"]["parts"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .filter(|p| p.get("functionCall").is_some())
                .enumerate()
                .map(|(i, p)| Call {
                    id: format!("gemini-{i}"),
                    name: p["functionCall"]["name"].as_str().unwrap().to_owned(),
                    args: p["functionCall"]["args"].clone(),
                })
                .collect(),
        }
    }

    /// The visible text of a streamed answer.
    pub(crate) fn text(self, answer: &Answer) -> String {
        match self {
            Api::Anthropic => answer
                .frames_of("content_block_delta")
                .iter()
                .filter_map(|d| d["delta"]["text"].as_str().map(str::to_owned))
                .collect(),
            Api::OpenAi => answer
                .frames_of("response.output_text.delta")
                .iter()
                .filter_map(|d| d["delta"].as_str().map(str::to_owned))
                .collect(),
            Api::Gemini => answer
                .frames()
                .iter()
                .flat_map(|(_, d)| {
                    d["candidates"][0]["content"]["parts"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .filter(|p| p.get("thought").is_none())
                .filter_map(|p| p["text"].as_str().map(str::to_owned))
                .collect(),
        }
    }

    /// The usage a streamed answer reported, read from its own fields into neutral terms.
    pub(crate) fn reported_usage(self, answer: &Answer) -> panewise_mock_server::Usage {
        let n = |v: &Value| v.as_u64().expect("a token count");
        match self {
            Api::Anthropic => {
                let delta = answer
                    .frames_of("message_delta")
                    .pop()
                    .expect("a message_delta");
                let u = &delta["usage"];
                let cached = n(&u["cache_read_input_tokens"]);
                let written = n(&u["cache_creation_input_tokens"]);
                panewise_mock_server::Usage {
                    input_tokens: n(&u["input_tokens"]) + cached + written,
                    cached_input_tokens: cached,
                    cache_write_tokens: written,
                    output_tokens: n(&u["output_tokens"]),
                    reasoning_tokens: 0,
                }
            }
            Api::OpenAi => {
                let done = answer
                    .frames_of("response.completed")
                    .pop()
                    .expect("a response.completed");
                let u = &done["response"]["usage"];
                assert_eq!(
                    n(&u["total_tokens"]),
                    n(&u["input_tokens"]) + n(&u["output_tokens"])
                );
                panewise_mock_server::Usage {
                    input_tokens: n(&u["input_tokens"]),
                    cached_input_tokens: n(&u["input_tokens_details"]["cached_tokens"]),
                    cache_write_tokens: 0,
                    output_tokens: n(&u["output_tokens"]),
                    reasoning_tokens: n(&u["output_tokens_details"]["reasoning_tokens"]),
                }
            }
            Api::Gemini => {
                let (_, last) = answer.frames().pop().expect("a frame");
                let u = &last["usageMetadata"];
                assert_eq!(
                    n(&u["totalTokenCount"]),
                    n(&u["promptTokenCount"])
                        + n(&u["candidatesTokenCount"])
                        + n(&u["thoughtsTokenCount"])
                );
                panewise_mock_server::Usage {
                    input_tokens: n(&u["promptTokenCount"]),
                    cached_input_tokens: n(&u["cachedContentTokenCount"]),
                    cache_write_tokens: 0,
                    output_tokens: n(&u["candidatesTokenCount"]) + n(&u["thoughtsTokenCount"]),
                    reasoning_tokens: n(&u["thoughtsTokenCount"]),
                }
            }
        }
    }
}

/// GETs `path` with a raw HTTP/1.1 request and returns the body.
pub(crate) async fn raw_get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr)
        .await
        .expect("connects to the mock");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("writes");
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .expect("reads to the end");
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}
