//! The Gemini API (`POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`): facts from a request, the routing answer Gemini CLI asks for
//! first, and the JSON or `data:` frames of a reply, in the shapes Gemini CLI accepted.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::frames::{hex_id, pieces, sse_frame, Rendered};
use crate::script::{stated_cwd, Answer, ErrorKind, Reply, RequestFacts, COMPACTION_MARKER};
use crate::usage::CacheSplit;
use crate::usage::Usage;

/// The routing decision Gemini CLI's classifier expects as JSON text.
pub const ROUTING_ANSWER: &str = r#"{"reasoning":"mock","next_speaker":"user","model_choice":"flash","complexity_reasoning":"mock","complexity_score":10}"#;

/// The thought signature sent with function calls (the client only echoes it).
const THOUGHT_SIGNATURE: &str = "CiQBjz1rX2mockThoughtSignatureAAAAAAAAAAAAAAAAAAAAAAAAAA==";

/// The two methods of a model path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `:generateContent`, one JSON answer.
    Generate,
    /// `:streamGenerateContent`, SSE with `alt=sse`.
    Stream,
}

/// The model and method of a path `/v1beta/models/{model}:{method}` (or `/v1/models/...`).
pub fn parse_path(path: &str) -> Option<(&str, Method)> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, method) = rest.rsplit_once(':')?;
    let method = match method {
        "generateContent" => Method::Generate,
        "streamGenerateContent" => Method::Stream,
        _ => return None,
    };
    (!model.is_empty()).then_some((model, method))
}

/// Whether a request is Gemini CLI's routing call: no tools, and a JSON answer asked for.
/// It is answered normally in every scenario, as the real classifier would be.
pub fn is_routing(body: &Value) -> bool {
    let no_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_none_or(|t| t.is_empty());
    let config = body.get("generationConfig");
    let wants_json = config
        .and_then(|c| c.get("responseMimeType"))
        .and_then(Value::as_str)
        == Some("application/json")
        || config.is_some_and(|c| c.get("responseJsonSchema").is_some());
    no_tools && wants_json
}

/// What a Gemini request tells the script.
pub fn facts(body: &Value, raw: &str) -> RequestFacts {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let tool_rounds = body
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| {
            c.get("parts")
                .and_then(Value::as_array)
                .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
        })
        .count();
    let (archived_span, recalled) = crate::script::recall_facts(body);
    RequestFacts {
        tools,
        tool_rounds,
        after_compaction: raw.contains(COMPACTION_MARKER),
        cwd: stated_cwd(raw),
        archived_span,
        recalled,
        mcp: crate::script::mcp_facts(body),
        answered: crate::script::answer_fact(body),
        delegated: crate::script::delegated_fact(body),
    }
}

/// The routing answer.
pub fn routing(model: &str, raw: &[u8]) -> Rendered {
    let usage = Usage::derive(
        raw.len(),
        false,
        ROUTING_ANSWER.len(),
        0,
        CacheSplit::default(),
        true,
    );
    let reported = usage_json(&usage, true);
    let body = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": ROUTING_ANSWER}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": reported, "modelVersion": model, "responseId": hex_id(raw, 500, 24),
    });
    Rendered::json(200, &body, "routing").with_usage(usage, reported)
}

/// The reply rendered for the Gemini API.
pub fn render(reply: &Reply, model: &str, raw: &[u8], method: Method) -> Rendered {
    let stream = method == Method::Stream;
    match reply {
        Reply::Error(kind) => error(*kind),
        Reply::Answer(answer) if stream => stream_answer(answer, model, raw),
        Reply::Answer(answer) => generate(answer, model, raw),
        Reply::MidStreamError(answer) if stream => {
            let (_, body) = error_body(ErrorKind::Overloaded);
            stream_answer(answer, model, raw).fail_midway(sse_frame(None, &body))
        }
        Reply::MidStreamError(_) => error(ErrorKind::Overloaded),
        Reply::StreamCut(answer) if stream => stream_answer(answer, model, raw).cut(),
        Reply::StreamCut(answer) => crate::anthropic::split_json(generate(answer, model, raw)),
    }
}

fn error_body(kind: ErrorKind) -> (u16, Value) {
    let (code, message, status) = match kind {
        ErrorKind::RateLimit => (
            429,
            "Resource has been exhausted (e.g. check quota).",
            "RESOURCE_EXHAUSTED",
        ),
        ErrorKind::ServerError => (500, "Internal error encountered.", "INTERNAL"),
        ErrorKind::Overloaded => (
            503,
            "The model is overloaded. Please try again later.",
            "UNAVAILABLE",
        ),
    };
    (
        code,
        json!({"error": {"code": code, "message": message, "status": status}}),
    )
}

fn error(kind: ErrorKind) -> Rendered {
    let (status, body) = error_body(kind);
    let mut rendered = Rendered::json(status, &body, "error");
    if kind == ErrorKind::RateLimit {
        rendered.headers.push(("retry-after", "1".to_owned()));
    }
    rendered
}

fn usage_of(answer: &Answer, raw: &[u8]) -> Usage {
    Usage::derive(
        raw.len(),
        answer.huge_input,
        answer.generated_bytes(),
        answer.thinking_bytes(),
        answer.cache,
        true,
    )
}

/// `usageMetadata`: the prompt only while streaming, everything in the final frame.
fn usage_json(usage: &Usage, complete: bool) -> Value {
    let details = json!([{"modality": "TEXT", "tokenCount": usage.input_tokens}]);
    if !complete {
        return json!({"promptTokenCount": usage.input_tokens, "totalTokenCount": usage.input_tokens, "promptTokensDetails": details});
    }
    json!({
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens.saturating_sub(usage.reasoning_tokens),
        "thoughtsTokenCount": usage.reasoning_tokens,
        "cachedContentTokenCount": usage.cached_input_tokens,
        "totalTokenCount": usage.total_tokens(),
        "promptTokensDetails": details,
    })
}

fn call_parts(answer: &Answer) -> Vec<Value> {
    answer
        .calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let mut part = json!({"functionCall": {"name": call.name, "args": call.args}});
            if index == 0 {
                part["thoughtSignature"] = json!(THOUGHT_SIGNATURE);
            }
            part
        })
        .collect()
}

fn stream_answer(answer: &Answer, model: &str, raw: &[u8]) -> Rendered {
    let usage = usage_of(answer, raw);
    let response_id = hex_id(raw, 500, 24);
    let mut part_groups: Vec<Vec<Value>> = Vec::new();
    if let Some(thinking) = &answer.thinking {
        part_groups.push(vec![json!({"text": thinking, "thought": true})]);
    }
    let text_size = if answer.calls.is_empty() {
        12
    } else {
        usize::MAX
    };
    for piece in pieces(&answer.text, text_size) {
        part_groups.push(vec![json!({"text": piece})]);
    }
    if !answer.calls.is_empty() {
        part_groups.push(call_parts(answer));
    }
    let last = part_groups.len().saturating_sub(1);
    let reported = usage_json(&usage, true);
    let frames: Vec<Bytes> = part_groups
        .into_iter()
        .enumerate()
        .map(|(index, parts)| {
            let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
            let usage_metadata = if index == last {
                candidate["finishReason"] = json!("STOP");
                reported.clone()
            } else {
                usage_json(&usage, false)
            };
            sse_frame(
                None,
                &json!({"candidates": [candidate], "modelVersion": model, "responseId": response_id, "usageMetadata": usage_metadata}),
            )
        })
        .collect();
    let answered = if answer.calls.is_empty() {
        "text"
    } else {
        "tool-call"
    };
    Rendered::sse(frames, answered).with_usage(usage, reported)
}

fn generate(answer: &Answer, model: &str, raw: &[u8]) -> Rendered {
    let usage = usage_of(answer, raw);
    let mut parts = Vec::new();
    if let Some(thinking) = &answer.thinking {
        parts.push(json!({"text": thinking, "thought": true}));
    }
    if !answer.text.is_empty() {
        parts.push(json!({"text": answer.text}));
    }
    parts.extend(call_parts(answer));
    let reported = usage_json(&usage, true);
    let body = json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": reported, "modelVersion": model, "responseId": hex_id(raw, 500, 24),
    });
    let answered = if answer.calls.is_empty() {
        "text"
    } else {
        "tool-call"
    };
    Rendered::json(200, &body, answered).with_usage(usage, reported)
}
