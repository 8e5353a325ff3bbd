//! The OpenAI Responses stream: `response.created`, `response.output_item.added` / `.done`,
//! `response.output_text.delta`, `response.reasoning_summary_text.delta`,
//! `response.function_call_arguments.delta`, `response.completed` / `.incomplete` /
//! `.failed`, and `error`.

use std::collections::BTreeMap;

use panewise_protocol::SessionStats;
use panewise_window::AppliedContextEdit;
use serde::Deserialize;

use super::{
    disconnected, failure_event, known_difference, malformed, ApiKind, ErrorDetail, StreamDecoder,
};
use crate::event::ProviderEvent;

/// Decodes one OpenAI Responses stream.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    /// Function calls being streamed, by item id: call id, name, argument text so far.
    calls: BTreeMap<String, (String, String, String)>,
    /// `compaction` output items, in order, to report before the call ends.
    compactions: Vec<AppliedContextEdit>,
    done: bool,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Delta {
    delta: String,
    item_id: Option<String>,
}

#[derive(Deserialize)]
struct ItemEvent {
    item: Item,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    /// A `compaction` item's opaque content, to send back.
    encrypted_content: Option<String>,
}

#[derive(Deserialize)]
struct ResponseEvent {
    response: Response,
}

#[derive(Deserialize)]
struct Response {
    model: Option<String>,
    status: Option<String>,
    usage: Option<Usage>,
    error: Option<ErrorDetail>,
    incomplete_details: Option<Incomplete>,
}

#[derive(Deserialize)]
struct Incomplete {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    input_tokens_details: Option<InputDetails>,
    output_tokens: Option<u64>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

impl StreamDecoder for OpenAiDecoder {
    fn feed(&mut self, event: &str, data: &str, out: &mut Vec<ProviderEvent>) {
        if self.done {
            return;
        }
        let kind = match serde_json::from_str::<Envelope>(data) {
            Ok(envelope) => envelope.kind,
            Err(error) => return out.push(malformed(ApiKind::OpenAi, event, &error)),
        };
        let result =
            match kind.as_str() {
                "response.output_text.delta" => serde_json::from_str::<Delta>(data)
                    .map(|delta| out.push(ProviderEvent::TextDelta { text: delta.delta })),
                "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                    serde_json::from_str::<Delta>(data)
                        .map(|delta| out.push(ProviderEvent::ThinkingDelta { text: delta.delta }))
                }
                "response.function_call_arguments.delta" => serde_json::from_str::<Delta>(data)
                    .map(|delta| {
                        let call = delta.item_id.and_then(|id| self.calls.get_mut(&id));
                        if let Some((_, _, arguments)) = call {
                            arguments.push_str(&delta.delta);
                        }
                    }),
                "response.output_item.added" => {
                    serde_json::from_str::<ItemEvent>(data).map(|added| self.item_added(added.item))
                }
                "response.output_item.done" => serde_json::from_str::<ItemEvent>(data)
                    .map(|done| self.item_done(done.item, out)),
                "response.completed" | "response.incomplete" | "response.failed" => {
                    serde_json::from_str::<ResponseEvent>(data)
                        .map(|ended| self.response_ended(ended.response, data, out))
                }
                "error" => serde_json::from_str::<ErrorDetail>(data).map(|error| {
                    self.done = true;
                    out.push(failure_event(error.classify(None, data)));
                }),
                "response.created"
                | "response.in_progress"
                | "response.content_part.added"
                | "response.content_part.done"
                | "response.output_text.done"
                | "response.reasoning_summary_part.added"
                | "response.reasoning_summary_part.done"
                | "response.reasoning_summary_text.done"
                | "response.function_call_arguments.done" => Ok(()),
                _ => {
                    out.push(ProviderEvent::Unknown {
                        event_type: Some(kind.clone()),
                        raw: data.to_owned(),
                    });
                    Ok(())
                }
            };
        if let Err(error) = result {
            out.push(malformed(ApiKind::OpenAi, &kind, &error));
        }
    }

    fn finish(&mut self, out: &mut Vec<ProviderEvent>) {
        if !std::mem::replace(&mut self.done, true) {
            out.push(failure_event(disconnected(ApiKind::OpenAi)));
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl OpenAiDecoder {
    fn item_added(&mut self, item: Item) {
        if item.kind != "function_call" {
            return;
        }
        if let Some(id) = item.id.clone().or_else(|| item.call_id.clone()) {
            let call_id = item.call_id.unwrap_or_else(|| id.clone());
            let arguments = item.arguments.unwrap_or_default();
            self.calls
                .insert(id, (call_id, item.name.unwrap_or_default(), arguments));
        }
    }

    fn item_done(&mut self, item: Item, out: &mut Vec<ProviderEvent>) {
        if item.kind == "compaction" {
            // OpenAI does not break the compaction's tokens out of the call's usage.
            self.compactions.push(AppliedContextEdit::Compacted {
                api: ApiKind::OpenAi.name().to_owned(),
                content: item.encrypted_content.unwrap_or_default(),
                item_id: item.id,
                input_tokens: None,
                output_tokens: None,
            });
            return;
        }
        if item.kind != "function_call" {
            return;
        }
        let streamed = item
            .id
            .as_ref()
            .or(item.call_id.as_ref())
            .and_then(|id| self.calls.remove(id));
        let (streamed_id, streamed_name, streamed_arguments) = streamed.unwrap_or_default();
        // The finished item is authoritative; the streamed pieces stand in for what it lacks.
        let arguments = item
            .arguments
            .filter(|text| !text.is_empty())
            .unwrap_or(streamed_arguments);
        out.push(ProviderEvent::ToolCallRequested {
            call_id: item.call_id.unwrap_or(streamed_id),
            name: item.name.unwrap_or(streamed_name),
            arguments: if arguments.is_empty() {
                "{}".to_owned()
            } else {
                arguments
            },
        });
    }

    fn response_ended(&mut self, response: Response, data: &str, out: &mut Vec<ProviderEvent>) {
        self.done = true;
        if let Some(error) = response.error {
            return out.push(failure_event(error.classify(None, data)));
        }
        if !self.compactions.is_empty() {
            out.push(ProviderEvent::ContextManaged {
                edits: std::mem::take(&mut self.compactions),
            });
        }
        let stop_reason = match (response.status, response.incomplete_details) {
            (
                _,
                Some(Incomplete {
                    reason: Some(reason),
                }),
            ) => Some(reason),
            (status, _) => status,
        };
        let usage = response.usage;
        let input = usage.as_ref().and_then(|usage| usage.input_tokens);
        let cached = usage
            .as_ref()
            .and_then(|usage| usage.input_tokens_details.as_ref())
            .and_then(|details| details.cached_tokens);
        let stats = SessionStats {
            // OpenAI's input counts the cached tokens in; the vocabulary's does not.
            input_tokens: known_difference(input, cached),
            cached_input_tokens: cached,
            cache_write_input_tokens: None,
            output_tokens: usage.as_ref().and_then(|usage| usage.output_tokens),
            reasoning_tokens: usage
                .as_ref()
                .and_then(|usage| usage.output_tokens_details.as_ref())
                .and_then(|details| details.reasoning_tokens),
            ..SessionStats::default()
        };
        out.push(ProviderEvent::CallEnded {
            model: response.model,
            stop_reason,
            stats,
        });
    }
}
