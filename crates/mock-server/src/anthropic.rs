//! The Anthropic Messages API (`POST /v1/messages`): facts from a request, and the SSE frames or
//! JSON message of a reply, in the shapes Claude Code accepted (see the fixtures' `mock_response`).

use bytes::Bytes;
use serde_json::{json, Value};

use crate::context::Managed;
use crate::frames::{hex_id, pieces, sse_frame, Rendered};
use crate::script::{stated_cwd, Answer, ErrorKind, Reply, RequestFacts, COMPACTION_MARKER};
use crate::usage::CacheSplit;
use crate::usage::Usage;

/// The signature sent with thinking blocks (the client only stores and echoes it).
const SIGNATURE: &str =
    "EqoBCkgIBRABGAIiQMockSignatureAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==";

/// What a Messages request tells the script.
pub fn facts(body: &Value, raw: &str) -> RequestFacts {
    let tools = tool_names(body.get("tools"));
    let tool_rounds = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, |messages| {
            messages
                .iter()
                .filter(|m| {
                    m.get("content")
                        .and_then(Value::as_array)
                        .is_some_and(|blocks| {
                            blocks.iter().any(|b| {
                                b.get("type").and_then(Value::as_str) == Some("tool_result")
                            })
                        })
                })
                .count()
        });
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

fn tool_names(tools: Option<&Value>) -> Vec<String> {
    tools
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the request asked for a stream.
pub fn wants_stream(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

/// The reply rendered for the Messages API, with what context management made of the request.
pub fn render(
    reply: &Reply,
    body: &Value,
    raw: &[u8],
    stream: bool,
    managed: &Managed,
) -> Rendered {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-mock");
    match reply {
        Reply::Error(kind) => error(*kind, raw),
        Reply::Answer(answer) if stream => stream_answer(answer, model, raw, managed),
        Reply::Answer(answer) => message(answer, model, raw, managed),
        Reply::MidStreamError(answer) if stream => {
            let frame = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
            stream_answer(answer, model, raw, managed).fail_midway(sse_frame(Some("error"), &frame))
        }
        Reply::MidStreamError(_) => error(ErrorKind::Overloaded, raw),
        Reply::StreamCut(answer) if stream => stream_answer(answer, model, raw, managed).cut(),
        Reply::StreamCut(answer) => {
            let whole = message(answer, model, raw, managed);
            split_json(whole)
        }
    }
}

/// A JSON body cut in half: the first half is sent, then the connection closes.
pub fn split_json(mut whole: Rendered) -> Rendered {
    let bytes = whole.chunks.concat();
    let half = bytes.len() / 2;
    whole.chunks = vec![Bytes::copy_from_slice(&bytes[..half])];
    whole.cut_after = Some(1);
    whole.answer = "stream-cut";
    whole
}

fn error(kind: ErrorKind, raw: &[u8]) -> Rendered {
    let request_id = format!("req_{}", hex_id(raw, 900, 24));
    let (status, kind_name, message) = match kind {
        ErrorKind::RateLimit => (
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        ErrorKind::ServerError => (500, "api_error", "Internal server error"),
        ErrorKind::Overloaded => (529, "overloaded_error", "Overloaded"),
    };
    let body = json!({"type": "error", "error": {"type": kind_name, "message": message}, "request_id": request_id});
    let mut rendered = Rendered::json(status, &body, "error");
    rendered.headers.push(("request-id", request_id));
    if kind == ErrorKind::RateLimit {
        rendered.headers.push(("retry-after", "1".to_owned()));
    }
    rendered
}

/// The answer's usage: its input is the prompt as context management left it (from the
/// compaction on, when the answer compacted).
fn usage_of(answer: &Answer, managed: &Managed) -> Usage {
    Usage::derive(
        managed.prompt_bytes,
        answer.huge_input && managed.scripted_input,
        answer.generated_bytes(),
        answer.thinking_bytes(),
        answer.cache,
        false,
    )
}

/// The API's usage object: `input_tokens` is the input neither read from nor written to the
/// cache; every write is a five-minute one (the mock does not model `ttl`).
fn usage_json(usage: &Usage, output_tokens: u64) -> Value {
    json!({
        "input_tokens": usage.uncached_input_tokens(),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_tokens,
            "ephemeral_1h_input_tokens": 0,
        },
        "output_tokens": output_tokens,
    })
}

/// The final usage object: with a compaction, `usage.iterations` holds the compaction step
/// (the prompt it read, the summary it wrote) beside the message step, which the top-level
/// figures repeat.
fn final_usage_json(usage: &Usage, managed: &Managed) -> Value {
    let mut reported = usage_json(usage, usage.output_tokens);
    if let Some(compaction) = &managed.compaction {
        reported["iterations"] = json!([
            {"type": "compaction", "input_tokens": compaction.input_tokens, "output_tokens": compaction.output_tokens,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            {"type": "message", "input_tokens": usage.uncached_input_tokens(), "output_tokens": usage.output_tokens,
             "cache_creation_input_tokens": usage.cache_write_tokens, "cache_read_input_tokens": usage.cached_input_tokens},
        ]);
    }
    reported
}

/// `{"applied_edits": [..]}` when the request asked for context management.
fn context_management_json(managed: &Managed) -> Option<Value> {
    managed
        .requested
        .then(|| json!({"applied_edits": managed.applied_edits}))
}

fn stop_reason(answer: &Answer) -> &'static str {
    if answer.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn tool_id(raw: &[u8], index: usize) -> String {
    format!("toolu_01{}", hex_id(raw, index, 28))
}

fn stream_answer(answer: &Answer, model: &str, raw: &[u8], managed: &Managed) -> Rendered {
    let usage = usage_of(answer, managed);
    let mut start_usage = usage_json(&usage, 1);
    start_usage["service_tier"] = json!("standard");
    let mut frames = vec![sse_frame(
        Some("message_start"),
        &json!({"type": "message_start", "message": {
            "id": format!("msg_01{}", hex_id(raw, 800, 24)), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage,
        }}),
    )];
    let mut index = 0usize;
    let thinks = answer.thinking.is_some();
    let mut block = |frames: &mut Vec<Bytes>, start: Value, deltas: Vec<Value>| {
        frames.push(sse_frame(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        // The API sends a keep-alive ping early in a stream; plain answers got one in the fixtures.
        if index == 0 && !thinks {
            frames.push(sse_frame(Some("ping"), &json!({"type": "ping"})));
        }
        for delta in deltas {
            frames.push(sse_frame(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        frames.push(sse_frame(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if let Some(compaction) = &managed.compaction {
        // The API streams a compaction block's summary as one delta.
        let delta = json!({"type": "compaction_delta", "content": compaction.content});
        block(
            &mut frames,
            json!({"type": "compaction", "content": ""}),
            vec![delta],
        );
    }
    if let Some(thinking) = &answer.thinking {
        let mut deltas: Vec<Value> = pieces(thinking, 20)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": SIGNATURE}));
        block(
            &mut frames,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    if !answer.text.is_empty() {
        let deltas = pieces(&answer.text, 12)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        block(&mut frames, json!({"type": "text", "text": ""}), deltas);
    }
    for (call_index, call) in answer.calls.iter().enumerate() {
        let args = call.args.to_string();
        let mut deltas = vec![json!({"type": "input_json_delta", "partial_json": ""})];
        deltas.extend(
            pieces(&args, 20)
                .into_iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p})),
        );
        block(
            &mut frames,
            json!({"type": "tool_use", "id": tool_id(raw, call_index), "name": call.name, "input": {}}),
            deltas,
        );
    }
    let final_usage = final_usage_json(&usage, managed);
    let mut delta = json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(answer), "stop_sequence": null}, "usage": final_usage});
    if let Some(context_management) = context_management_json(managed) {
        delta["context_management"] = context_management;
    }
    frames.push(sse_frame(Some("message_delta"), &delta));
    frames.push(sse_frame(
        Some("message_stop"),
        &json!({"type": "message_stop"}),
    ));
    let answered = if answer.calls.is_empty() {
        "text"
    } else {
        "tool-call"
    };
    Rendered::sse(frames, answered).with_usage(usage, final_usage)
}

fn message(answer: &Answer, model: &str, raw: &[u8], managed: &Managed) -> Rendered {
    let usage = usage_of(answer, managed);
    let mut content = Vec::new();
    if let Some(compaction) = &managed.compaction {
        content.push(json!({"type": "compaction", "content": compaction.content}));
    }
    if let Some(thinking) = &answer.thinking {
        content.push(json!({"type": "thinking", "thinking": thinking, "signature": SIGNATURE}));
    }
    if !answer.text.is_empty() {
        content.push(json!({"type": "text", "text": answer.text}));
    }
    for (call_index, call) in answer.calls.iter().enumerate() {
        content.push(json!({"type": "tool_use", "id": tool_id(raw, call_index), "name": call.name, "input": call.args}));
    }
    let mut reported = final_usage_json(&usage, managed);
    reported["service_tier"] = json!("standard");
    let mut body = json!({
        "id": format!("msg_01{}", hex_id(raw, 800, 24)), "type": "message", "role": "assistant",
        "model": model, "content": content, "stop_reason": stop_reason(answer), "stop_sequence": null,
        "usage": reported,
    });
    if let Some(context_management) = context_management_json(managed) {
        body["context_management"] = context_management;
    }
    let answered = if answer.calls.is_empty() {
        "text"
    } else {
        "tool-call"
    };
    Rendered::json(200, &body, answered).with_usage(usage, reported)
}

/// The API's 400 for a request with more `cache_control` breakpoints than it allows.
pub fn too_many_breakpoints(found: usize) -> Rendered {
    let message = format!(
        "A maximum of {} blocks with cache_control may be provided. Found {found}.",
        crate::cache::MAX_BREAKPOINTS
    );
    invalid_request(&message)
}

/// The API's 400 `invalid_request_error` with `message`.
pub fn invalid_request(message: &str) -> Rendered {
    let body =
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
    Rendered::json(400, &body, "bad-request")
}

/// The answer to `POST /v1/messages/count_tokens`: the input the next answer would report.
pub fn count_tokens(raw: &[u8]) -> Rendered {
    let usage = Usage::derive(raw.len(), false, 0, 0, CacheSplit::default(), false);
    Rendered::json(
        200,
        &json!({"input_tokens": usage.input_tokens}),
        "count-tokens",
    )
}
