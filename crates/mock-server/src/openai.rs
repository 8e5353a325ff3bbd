//! The OpenAI Responses API (`POST /v1/responses`): facts from a request, and the SSE events or
//! JSON response of a reply, in the shapes Codex accepted (see the fixtures' `mock_response`).

use bytes::Bytes;
use serde_json::{json, Value};

use crate::anthropic::split_json;
use crate::context::{Invalid, Managed};
use crate::frames::{fault_point, hex_id, pieces, sse_frame, unix_seconds, Rendered};
use crate::script::{stated_cwd, Answer, ErrorKind, Reply, RequestFacts, COMPACTION_MARKER};
use crate::usage::Usage;

/// What a Responses request tells the script. A round is a run of consecutive tool outputs.
pub fn facts(body: &Value, raw: &str) -> RequestFacts {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut tool_rounds = 0usize;
    let mut in_outputs = false;
    for item in body
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let is_output = matches!(
            item.get("type").and_then(Value::as_str),
            Some("function_call_output" | "custom_tool_call_output")
        );
        if is_output && !in_outputs {
            tool_rounds = tool_rounds.saturating_add(1);
        }
        in_outputs = is_output;
    }
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

/// Whether the request asked for a stream.
pub fn wants_stream(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

/// The reply rendered for the Responses API, with what context management made of the request.
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
        .unwrap_or("gpt-mock");
    match reply {
        Reply::Error(kind) => error(*kind),
        Reply::Answer(answer) if stream => Events::new(model, raw).answer(answer, managed),
        Reply::Answer(answer) => response_json(answer, model, raw, managed),
        Reply::MidStreamError(answer) if stream => {
            let mut events = Events::new(model, raw);
            let whole = events.answer(answer, managed);
            // The failure event continues the numbering of the events that were kept.
            events.sequence = u64::try_from(fault_point(whole.chunks.len())).unwrap_or(u64::MAX);
            let error = json!({"code": "server_error", "message": "The server had an error while processing your request."});
            let failed_response = events.response("failed", json!([]), Value::Null, error);
            let failed = events.frame("response.failed", json!({"response": failed_response}));
            whole.fail_midway(failed)
        }
        Reply::MidStreamError(_) => error(ErrorKind::Overloaded),
        Reply::StreamCut(answer) if stream => Events::new(model, raw).answer(answer, managed).cut(),
        Reply::StreamCut(answer) => split_json(response_json(answer, model, raw, managed)),
    }
}

fn error(kind: ErrorKind) -> Rendered {
    let (status, body) = match kind {
        ErrorKind::RateLimit => (
            429,
            json!({"error": {"message": "Rate limit reached for requests. Please try again in 1s.", "type": "rate_limit_exceeded", "param": null, "code": "rate_limit_exceeded"}}),
        ),
        ErrorKind::ServerError => (
            500,
            json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": "server_error"}}),
        ),
        ErrorKind::Overloaded => (
            503,
            json!({"error": {"message": "The engine is currently overloaded, please try again later", "type": "server_error", "param": null, "code": null}}),
        ),
    };
    let mut rendered = Rendered::json(status, &body, "error");
    if kind == ErrorKind::RateLimit {
        rendered.headers.push(("retry-after", "1".to_owned()));
    }
    rendered
}

/// The API's 400 for a `context_management` it cannot take.
pub fn invalid_request(invalid: &Invalid) -> Rendered {
    let body = json!({"error": {"message": invalid.to_string(), "type": "invalid_request_error",
        "param": invalid.openai_param(), "code": "invalid_value"}});
    Rendered::json(400, &body, "bad-request")
}

/// The answer's usage: its input is the prompt from the last compaction item it carried on.
/// OpenAI does not break a compaction pass out of the usage, so an answer that compacts
/// reports the prompt as sent.
fn usage_of(answer: &Answer, managed: &Managed) -> Usage {
    Usage::derive(
        managed.prompt_bytes,
        answer.huge_input && managed.scripted_input,
        answer.generated_bytes(),
        answer.thinking_bytes(),
        answer.cache,
        true,
    )
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens(),
    })
}

/// The output items of an answer, complete, with their ids: the compaction first, when the
/// answer compacted.
fn output_items(answer: &Answer, raw: &[u8], managed: &Managed) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(compaction) = &managed.compaction {
        items.push(
            json!({"type": "compaction", "id": format!("cmp_{}", hex_id(raw, 730, 24)),
            "encrypted_content": compaction.content}),
        );
    }
    if let Some(thinking) = &answer.thinking {
        items.push(json!({"type": "reasoning", "id": format!("rs_{}", hex_id(raw, 700, 24)),
            "summary": [{"type": "summary_text", "text": thinking}], "encrypted_content": "gAAAAABmockEncryptedReasoning=="}));
    }
    if !answer.text.is_empty() && answer.calls.is_empty() {
        items.push(json!({"type": "message", "id": format!("msg_{}", hex_id(raw, 701, 24)), "status": "completed",
            "role": "assistant", "content": [{"type": "output_text", "text": answer.text, "annotations": []}]}));
    }
    for (index, call) in answer.calls.iter().enumerate() {
        items.push(
            json!({"type": "function_call", "id": format!("fc_{}", hex_id(raw, 710 + index, 24)),
            "status": "completed", "arguments": call.args.to_string(),
            "call_id": format!("call_{}", hex_id(raw, 720 + index, 24)), "name": call.name}),
        );
    }
    items
}

fn response_json(answer: &Answer, model: &str, raw: &[u8], managed: &Managed) -> Rendered {
    let usage = usage_of(answer, managed);
    let events = Events::new(model, raw);
    let reported = usage_json(&usage);
    let body = events.response(
        "completed",
        json!(output_items(answer, raw, managed)),
        reported.clone(),
        Value::Null,
    );
    let answered = if answer.calls.is_empty() {
        "text"
    } else {
        "tool-call"
    };
    Rendered::json(200, &body, answered).with_usage(usage, reported)
}

/// Builds the numbered events of one streamed response.
struct Events<'a> {
    model: &'a str,
    raw: &'a [u8],
    id: String,
    created_at: u64,
    sequence: u64,
}

impl<'a> Events<'a> {
    fn new(model: &'a str, raw: &'a [u8]) -> Events<'a> {
        Events {
            model,
            raw,
            id: format!("resp_{}", hex_id(raw, 600, 24)),
            created_at: unix_seconds(),
            sequence: 0,
        }
    }

    fn response(&self, status: &str, output: Value, usage: Value, error: Value) -> Value {
        json!({"id": self.id, "object": "response", "created_at": self.created_at, "status": status,
            "model": self.model, "output": output, "usage": usage, "error": error, "incomplete_details": null,
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": []})
    }

    fn frame(&mut self, kind: &str, mut fields: Value) -> Bytes {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.sequence);
        self.sequence = self.sequence.saturating_add(1);
        sse_frame(Some(kind), &fields)
    }

    fn answer(&mut self, answer: &Answer, managed: &Managed) -> Rendered {
        let usage = usage_of(answer, managed);
        let items = output_items(answer, self.raw, managed);
        let mut frames = Vec::new();
        let in_progress = self.response("in_progress", json!([]), Value::Null, Value::Null);
        frames.push(self.frame("response.created", json!({"response": in_progress})));
        frames.push(self.frame("response.in_progress", json!({"response": in_progress})));
        for (output_index, item) in items.iter().enumerate() {
            let item_id = item["id"].clone();
            match item["type"].as_str() {
                // A compaction item arrives whole: added, then done.
                Some("compaction") => {
                    frames.push(self.frame(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": item}),
                    ));
                }
                Some("reasoning") => {
                    let text = item["summary"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    let added = json!({"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": null});
                    frames.push(self.frame(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": added}),
                    ));
                    let part = json!({"type": "summary_text", "text": ""});
                    frames.push(self.frame("response.reasoning_summary_part.added", json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "part": part})));
                    for piece in pieces(&text, 27) {
                        frames.push(self.frame("response.reasoning_summary_text.delta", json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "delta": piece})));
                    }
                    frames.push(self.frame("response.reasoning_summary_text.done", json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "text": text})));
                    let part = json!({"type": "summary_text", "text": text});
                    frames.push(self.frame("response.reasoning_summary_part.done", json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "part": part})));
                }
                Some("message") => {
                    let text = item["content"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    let added = json!({"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []});
                    frames.push(self.frame(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": added}),
                    ));
                    let part = json!({"type": "output_text", "text": "", "annotations": []});
                    frames.push(self.frame("response.content_part.added", json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": part})));
                    for piece in pieces(&text, 12) {
                        frames.push(self.frame("response.output_text.delta", json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "delta": piece, "logprobs": []})));
                    }
                    frames.push(self.frame("response.output_text.done", json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": text, "logprobs": []})));
                    let part = json!({"type": "output_text", "text": text, "annotations": []});
                    frames.push(self.frame("response.content_part.done", json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": part})));
                }
                _ => {
                    let arguments = item["arguments"].as_str().unwrap_or_default().to_owned();
                    let mut added = item.clone();
                    added["status"] = json!("in_progress");
                    added["arguments"] = json!("");
                    frames.push(self.frame(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": added}),
                    ));
                    for piece in pieces(&arguments, 8) {
                        frames.push(self.frame("response.function_call_arguments.delta", json!({"item_id": item_id, "output_index": output_index, "delta": piece})));
                    }
                    frames.push(self.frame("response.function_call_arguments.done", json!({"item_id": item_id, "output_index": output_index, "arguments": arguments})));
                }
            }
            frames.push(self.frame(
                "response.output_item.done",
                json!({"output_index": output_index, "item": item}),
            ));
        }
        let reported = usage_json(&usage);
        let completed = self.response("completed", json!(items), reported.clone(), Value::Null);
        frames.push(self.frame("response.completed", json!({"response": completed})));
        let answered = if answer.calls.is_empty() {
            "text"
        } else {
            "tool-call"
        };
        Rendered::sse(frames, answered).with_usage(usage, reported)
    }
}
