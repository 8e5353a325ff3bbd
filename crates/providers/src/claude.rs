//! Claude Code `--output-format stream-json --verbose`, with and without
//! `--include-partial-messages`.
//!
//! Line types: `system` (subtypes `init`, `status`, `compact_boundary`, `api_retry`,
//! `thinking_tokens`), `assistant` (one line per content block, all of one model call sharing
//! `message.id`), `user` (tool results, synthetic summaries), `stream_event` (raw API events,
//! only with partial messages) and `result` (end of a turn). With partial messages the same text
//! arrives twice, as deltas and then as the finished block; it is reported once, from the deltas.

use std::borrow::Cow;
use std::collections::BTreeMap;

use panewise_protocol::{CompactionTrigger, SessionStats};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::args::first_significant_arg;
use crate::classify::classify_failure;
use crate::decoder::LineDecoder;
use crate::event::{ProviderEvent, ToolStatus, UsageScope};

/// The model name Claude Code gives the assistant messages it writes itself (API errors).
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// State carried between lines of one Claude Code stream.
#[derive(Debug, Default)]
pub(crate) struct ClaudeDecoder {
    /// The model call whose usage was last reported, so its repeated lines count once.
    usage_reported_for: Option<String>,
    /// The model call whose text arrived as `stream_event` deltas, so its finished blocks are
    /// not reported a second time.
    streamed_message: Option<String>,
    /// A failure was already reported in this turn (the API-error message precedes the result).
    failure_reported: bool,
    /// The session's running cost at the previous result, to turn running totals into per-turn
    /// figures when the per-turn breakdown is missing.
    previous_total_cost: Option<f64>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tools: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(borrow)]
    event: Option<StreamEvent<'a>>,
    #[serde(borrow)]
    parent_tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    compact_result: Option<Cow<'a, str>>,
    compact_metadata: Option<CompactMetadata>,
    attempt: Option<u64>,
    max_retries: Option<u64>,
    retry_delay_ms: Option<u64>,
    error_status: Option<u16>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    estimated_tokens: Option<u64>,
    is_error: Option<bool>,
    total_cost_usd: Option<f64>,
    usage: Option<Usage>,
    #[serde(rename = "modelUsage")]
    model_usage: Option<BTreeMap<String, ModelUsage>>,
    model_usage_since_last_result: Option<BTreeMap<String, ModelUsage>>,
    duration_ms: Option<u64>,
    num_turns: Option<u64>,
    #[serde(borrow)]
    result: Option<Cow<'a, str>>,
    api_error_status: Option<u16>,
    #[serde(borrow)]
    api_error_type: Option<Cow<'a, str>>,
    is_api_error_message: Option<bool>,
    #[serde(rename = "isSynthetic")]
    is_synthetic: Option<bool>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    is_error: Option<bool>,
}

#[derive(Deserialize, Default)]
struct Usage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct OutputDetails {
    thinking_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    thinking_tokens: Option<u64>,
    #[serde(rename = "costUSD")]
    cost_usd: Option<f64>,
    context_window: Option<u64>,
}

#[derive(Deserialize)]
struct CompactMetadata {
    trigger: Option<String>,
    pre_tokens: Option<u64>,
    post_tokens: Option<u64>,
    duration_ms: Option<u64>,
}

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
}

impl LineDecoder for ClaudeDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let line: Line<'_> = serde_json::from_slice(raw).map_err(|error| error.to_string())?;
        match line.kind.as_deref() {
            Some("stream_event") => self.stream_event(&line, raw, out),
            Some("assistant") => self.assistant(&line, raw, out),
            Some("user") => user(&line, raw, out),
            Some("system") => self.system(&line, raw, out),
            Some("result") => self.result(&line, out),
            _ => push_unknown(&line, raw, out),
        }
        Ok(())
    }
}

impl ClaudeDecoder {
    fn system(&mut self, line: &Line<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        match line.subtype.as_deref() {
            Some("init") => {
                self.failure_reported = false;
                self.usage_reported_for = None;
                self.streamed_message = None;
                out.push(ProviderEvent::SessionStarted {
                    session_id: owned(&line.session_id),
                    model: owned(&line.model),
                    cwd: owned(&line.cwd),
                    tools: line
                        .tools
                        .iter()
                        .flatten()
                        .map(|tool| tool.to_string())
                        .collect(),
                });
                out.push(ProviderEvent::TurnStarted { prompt: None });
            }
            Some("thinking_tokens") => out.push(ProviderEvent::ThinkingProgress {
                estimated_tokens: line.estimated_tokens.unwrap_or(0),
            }),
            Some("status") => match (line.status.as_deref(), &line.compact_result) {
                (Some("requesting"), _) => out.push(ProviderEvent::RequestStarted),
                (Some("compacting"), _) => {
                    out.push(ProviderEvent::CompactionStarted { trigger: None })
                }
                (None, Some(result)) => out.push(ProviderEvent::CompactionEnded {
                    result: result.to_string(),
                }),
                _ => push_unknown(line, raw, out),
            },
            Some("compact_boundary") => match &line.compact_metadata {
                Some(metadata) => out.push(ProviderEvent::CompactionBoundary {
                    trigger: match metadata.trigger.as_deref() {
                        Some("manual") => CompactionTrigger::Manual,
                        _ => CompactionTrigger::Auto,
                    },
                    pre_tokens: metadata.pre_tokens.unwrap_or(0),
                    post_tokens: metadata.post_tokens.unwrap_or(0),
                    duration_ms: metadata.duration_ms,
                }),
                None => push_unknown(line, raw, out),
            },
            Some("api_retry") => out.push(ProviderEvent::ProviderRetrying {
                attempt: line.attempt,
                max_retries: line.max_retries,
                retry_delay_ms: line.retry_delay_ms,
                http_status: line.error_status,
                reason: line.error.and_then(raw_str),
            }),
            _ => push_unknown(line, raw, out),
        }
    }

    fn assistant(&mut self, line: &Line<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        let Some(message) = &line.message else {
            return push_unknown(line, raw, out);
        };
        let synthetic = line.is_api_error_message == Some(true)
            || message.model.as_deref() == Some(SYNTHETIC_MODEL);
        if synthetic {
            // Claude Code writes API errors as an assistant message; it is a failure, not text.
            if !self.failure_reported {
                self.failure_reported = true;
                let text = content_text(message.content);
                let error_word = line.error.and_then(raw_str);
                let error_type = line.api_error_type.as_deref().or(error_word.as_deref());
                out.push(ProviderEvent::Failure {
                    failure: classify_failure(line.api_error_status, error_type, &text),
                });
            }
            return;
        }
        let message_id = message.id.as_deref();
        if line.parent_tool_use_id.is_none() && message_id != self.usage_reported_for.as_deref() {
            self.usage_reported_for = message_id.map(str::to_owned);
            if let Some(usage) = &message.usage {
                out.push(call_usage(usage, &message.model));
            }
        }
        let streamed = message_id.is_some() && message_id == self.streamed_message.as_deref();
        let blocks = message
            .content
            .map(|content| serde_json::from_str::<Vec<ContentBlock<'_>>>(content.get()))
            .transpose();
        let Ok(blocks) = blocks else {
            return push_unknown(line, raw, out);
        };
        for block in blocks.iter().flatten() {
            match block.kind.as_ref() {
                "text" if !streamed => out.push(ProviderEvent::TextDelta {
                    text: owned(&block.text).unwrap_or_default(),
                }),
                "thinking" if !streamed => out.push(ProviderEvent::ThinkingDelta {
                    text: owned(&block.thinking).unwrap_or_default(),
                }),
                "text" | "thinking" | "redacted_thinking" => {}
                "tool_use" | "server_tool_use" => out.push(ProviderEvent::ToolStarted {
                    name: owned(&block.name).unwrap_or_default(),
                    call_id: owned(&block.id).unwrap_or_default(),
                    arg: block.input.and_then(first_significant_arg),
                }),
                other => out.push(ProviderEvent::Unknown {
                    event_type: Some(format!("assistant/{other}")),
                    raw: String::from_utf8_lossy(raw).into_owned(),
                }),
            }
        }
    }

    fn stream_event(&mut self, line: &Line<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        let Some(event) = &line.event else {
            return push_unknown(line, raw, out);
        };
        let main_agent = line.parent_tool_use_id.is_none();
        match event.kind.as_ref() {
            "message_start" => {
                let Some(message) = &event.message else {
                    return;
                };
                let message_id = owned(&message.id);
                self.streamed_message.clone_from(&message_id);
                if main_agent {
                    self.usage_reported_for = message_id;
                    if let Some(usage) = &message.usage {
                        out.push(call_usage(usage, &message.model));
                    }
                }
            }
            "content_block_delta" => {
                let Some(delta) = &event.delta else { return };
                match delta.kind.as_deref() {
                    Some("text_delta") => out.push(ProviderEvent::TextDelta {
                        text: owned(&delta.text).unwrap_or_default(),
                    }),
                    Some("thinking_delta") => out.push(ProviderEvent::ThinkingDelta {
                        text: owned(&delta.thinking).unwrap_or_default(),
                    }),
                    // Tool input and signatures are reported whole by the assistant line.
                    Some("input_json_delta" | "signature_delta" | "citations_delta") => {}
                    _ => push_unknown(line, raw, out),
                }
            }
            "message_delta" => {
                if let (true, Some(output)) = (
                    main_agent,
                    event.usage.as_ref().and_then(|usage| usage.output_tokens),
                ) {
                    out.push(ProviderEvent::OutputTokens {
                        output_tokens: output,
                    });
                }
            }
            // Block boundaries carry nothing the vocabulary needs: blocks are reported whole
            // by the assistant line that follows each of them.
            "content_block_start" | "content_block_stop" | "message_stop" | "ping" => {}
            _ => push_unknown(line, raw, out),
        }
    }

    fn result(&mut self, line: &Line<'_>, out: &mut Vec<ProviderEvent>) {
        let windows: BTreeMap<String, u64> = line
            .model_usage
            .iter()
            .flatten()
            .filter_map(|(model, usage)| usage.context_window.map(|window| (model.clone(), window)))
            .collect();
        if !windows.is_empty() {
            out.push(ProviderEvent::ContextWindows { windows });
        }
        if line.is_error == Some(true) && !self.failure_reported {
            let message = line
                .result
                .as_deref()
                .or(line.subtype.as_deref())
                .unwrap_or("the turn ended with an error");
            out.push(ProviderEvent::Failure {
                failure: classify_failure(
                    line.api_error_status,
                    line.api_error_type.as_deref(),
                    message,
                ),
            });
        }
        let stats = self.turn_stats(line);
        self.previous_total_cost = line.total_cost_usd.or(self.previous_total_cost);
        self.failure_reported = false;
        self.usage_reported_for = None;
        self.streamed_message = None;
        out.push(ProviderEvent::TurnEnded { stats });
    }

    /// The turn's own figures. `model_usage_since_last_result` is per turn and covers every
    /// call, compaction included, so it is preferred; `usage` (per turn, but without the
    /// compaction call) and the running `total_cost_usd` are the fallback.
    fn turn_stats(&self, line: &Line<'_>) -> SessionStats {
        let mut stats = SessionStats {
            duration_ms: line.duration_ms,
            num_turns: line.num_turns,
            ..SessionStats::default()
        };
        match line
            .model_usage_since_last_result
            .as_ref()
            .filter(|models| !models.is_empty())
        {
            Some(models) => {
                let sum = |field: fn(&ModelUsage) -> Option<u64>| {
                    models.values().filter_map(field).sum::<u64>()
                };
                stats.input_tokens = Some(
                    sum(|usage| usage.input_tokens)
                        + sum(|usage| usage.cache_creation_input_tokens),
                );
                stats.cached_input_tokens = Some(sum(|usage| usage.cache_read_input_tokens));
                stats.output_tokens = Some(sum(|usage| usage.output_tokens));
                stats.reasoning_tokens = Some(sum(|usage| usage.thinking_tokens));
                stats.cost_usd = Some(models.values().filter_map(|usage| usage.cost_usd).sum());
            }
            None => {
                let usage = line.usage.as_ref();
                let field = |pick: fn(&Usage) -> Option<u64>| usage.and_then(pick);
                stats.input_tokens = match (
                    field(|usage| usage.input_tokens),
                    field(|usage| usage.cache_creation_input_tokens),
                ) {
                    (None, None) => None,
                    (input, written) => Some(input.unwrap_or(0) + written.unwrap_or(0)),
                };
                stats.cached_input_tokens = field(|usage| usage.cache_read_input_tokens);
                stats.output_tokens = field(|usage| usage.output_tokens);
                stats.reasoning_tokens = usage
                    .and_then(|usage| usage.output_tokens_details.as_ref())
                    .and_then(|details| details.thinking_tokens);
                stats.cost_usd = line
                    .total_cost_usd
                    .map(|total| match self.previous_total_cost {
                        Some(previous) if previous <= total => total - previous,
                        _ => total,
                    });
            }
        }
        stats
    }
}

fn user(line: &Line<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
    let Some(content) = line.message.as_ref().and_then(|message| message.content) else {
        return push_unknown(line, raw, out);
    };
    let synthetic = line.is_synthetic == Some(true);
    if let Ok(text) = serde_json::from_str::<Cow<'_, str>>(content.get()) {
        out.push(ProviderEvent::UserMessage {
            text: text.into_owned(),
            synthetic,
        });
        return;
    }
    let Ok(blocks) = serde_json::from_str::<Vec<ContentBlock<'_>>>(content.get()) else {
        return push_unknown(line, raw, out);
    };
    for block in &blocks {
        match block.kind.as_ref() {
            "tool_result" => out.push(ProviderEvent::ToolEnded {
                call_id: owned(&block.tool_use_id).unwrap_or_default(),
                status: if block.is_error == Some(true) {
                    ToolStatus::Error
                } else {
                    ToolStatus::Success
                },
                exit_code: None,
            }),
            "text" => out.push(ProviderEvent::UserMessage {
                text: owned(&block.text).unwrap_or_default(),
                synthetic,
            }),
            other => out.push(ProviderEvent::Unknown {
                event_type: Some(format!("user/{other}")),
                raw: String::from_utf8_lossy(raw).into_owned(),
            }),
        }
    }
}

fn call_usage(usage: &Usage, model: &Option<Cow<'_, str>>) -> ProviderEvent {
    ProviderEvent::Usage {
        scope: UsageScope::Call,
        model: owned(model),
        input_tokens: usage.input_tokens.unwrap_or(0)
            + usage.cache_creation_input_tokens.unwrap_or(0),
        cached_input_tokens: usage.cache_read_input_tokens.unwrap_or(0),
        output_tokens: usage.output_tokens,
        reasoning_tokens: None,
    }
}

/// The text of a message's content, whether it is a string or a list of text blocks.
fn content_text(content: Option<&RawValue>) -> String {
    let Some(content) = content else {
        return String::new();
    };
    if let Ok(text) = serde_json::from_str::<Cow<'_, str>>(content.get()) {
        return text.into_owned();
    }
    serde_json::from_str::<Vec<ContentBlock<'_>>>(content.get())
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn raw_str(value: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(value.get()).ok()
}

fn owned(text: &Option<Cow<'_, str>>) -> Option<String> {
    text.as_deref().map(str::to_owned)
}

fn push_unknown(line: &Line<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
    let event_type = match (line.kind.as_deref(), line.subtype.as_deref()) {
        (Some(kind), Some(subtype)) => Some(format!("{kind}/{subtype}")),
        (Some(kind), None) => match &line.event {
            Some(event) => Some(format!("{kind}/{}", event.kind)),
            None => Some(kind.to_owned()),
        },
        (None, _) => None,
    };
    out.push(ProviderEvent::Unknown {
        event_type,
        raw: String::from_utf8_lossy(raw).into_owned(),
    });
}
