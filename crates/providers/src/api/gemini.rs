//! The Gemini stream (`streamGenerateContent?alt=sse`): every event is a whole
//! `GenerateContentResponse` chunk, or an `{"error":{…}}` object. The call has no final event
//! of its own: it ended well when a chunk carried a `finishReason` before the stream closed.

use panewise_protocol::SessionStats;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{
    disconnected, failure_event, known_difference, malformed, ApiKind, ErrorDetail, StreamDecoder,
};
use crate::event::ProviderEvent;

/// Decodes one Gemini stream.
#[derive(Debug, Default)]
pub struct GeminiDecoder {
    model: Option<String>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    calls: u64,
    done: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(borrow, default)]
    candidates: Vec<Candidate<'a>>,
    usage_metadata: Option<Usage>,
    model_version: Option<String>,
    error: Option<ErrorDetail>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow)]
    content: Option<Content<'a>>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    #[serde(borrow)]
    function_call: Option<FunctionCall<'a>>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    id: Option<String>,
    name: String,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    prompt_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

impl StreamDecoder for GeminiDecoder {
    fn feed(&mut self, event: &str, data: &str, out: &mut Vec<ProviderEvent>) {
        if self.done {
            return;
        }
        let chunk = match serde_json::from_str::<Chunk<'_>>(data) {
            Ok(chunk) => chunk,
            Err(error) => return out.push(malformed(ApiKind::Gemini, event, &error)),
        };
        if let Some(error) = chunk.error {
            self.done = true;
            return out.push(failure_event(error.classify(None, data)));
        }
        if chunk.model_version.is_some() {
            self.model = chunk.model_version;
        }
        // Each chunk's usage is the call's so far; the last one is the call's.
        if chunk.usage_metadata.is_some() {
            self.usage = chunk.usage_metadata;
        }
        for candidate in chunk.candidates.into_iter().take(1) {
            let parts = candidate.content.map(|content| content.parts);
            for part in parts.into_iter().flatten() {
                if let Some(call) = part.function_call {
                    let call_id = call.id.unwrap_or_else(|| format!("call_{}", self.calls));
                    self.calls = self.calls.saturating_add(1);
                    out.push(ProviderEvent::ToolCallRequested {
                        call_id,
                        name: call.name,
                        arguments: call.args.map_or("{}", RawValue::get).to_owned(),
                    });
                } else if let Some(text) = part.text {
                    out.push(if part.thought {
                        ProviderEvent::ThinkingDelta { text }
                    } else {
                        ProviderEvent::TextDelta { text }
                    });
                }
            }
            if candidate.finish_reason.is_some() {
                self.finish_reason = candidate.finish_reason;
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<ProviderEvent>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        if self.finish_reason.is_none() {
            return out.push(failure_event(disconnected(ApiKind::Gemini)));
        }
        let usage = self.usage;
        let prompt = usage.and_then(|usage| usage.prompt_token_count);
        let cached = usage.and_then(|usage| usage.cached_content_token_count);
        let candidates = usage.and_then(|usage| usage.candidates_token_count);
        let thoughts = usage.and_then(|usage| usage.thoughts_token_count);
        // Gemini counts thoughts apart from the candidates; the vocabulary's output has both.
        let output = match (candidates, thoughts) {
            (None, None) => None,
            (candidates, thoughts) => Some(
                candidates
                    .unwrap_or(0)
                    .saturating_add(thoughts.unwrap_or(0)),
            ),
        };
        out.push(ProviderEvent::CallEnded {
            model: self.model.clone(),
            stop_reason: self.finish_reason.take(),
            stats: SessionStats {
                input_tokens: known_difference(prompt, cached),
                cached_input_tokens: cached,
                cache_write_input_tokens: None,
                output_tokens: output,
                reasoning_tokens: thoughts,
                ..SessionStats::default()
            },
        });
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
