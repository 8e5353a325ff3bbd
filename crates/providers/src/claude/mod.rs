//! Claude Code `--output-format stream-json --verbose`, with and without
//! `--include-partial-messages`.
//!
//! Line types: `system` (subtypes `init`, `status`, `compact_boundary`, `api_retry`,
//! `thinking_tokens`), `assistant` (one line per content block, all of one model call sharing
//! `message.id`), `user` (tool results, synthetic summaries), `stream_event` (raw API events,
//! only with partial messages) and `result` (end of a turn). With partial messages the same text
//! arrives twice, as deltas and then as the finished block; it is reported once, from the deltas.
//!
//! Two readers share the emitters: `fast_line` (the [`Scanner`](crate::scan::Scanner), for
//! `stream_event` deltas and `assistant`/`user` lines whose `type` comes first, which are nearly
//! all of a long stream) and `serde_line` (everything, the reference). The fast reader hands any
//! line it is unsure of to the serde one before emitting or changing anything.
//!
//! This file holds the decoder's state, the serde shapes of the lines, the serde reader and the
//! emitters both readers feed; `fast.rs` holds the fast reader and the tests that hold the two
//! readers to the same events.

use std::borrow::Cow;
use std::collections::BTreeMap;

use panewise_protocol::{CompactionTrigger, CostSource, SessionStats};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::args::first_significant_arg;
use crate::channel;
use crate::classify::{classify, ErrorReport};
use crate::claude_control::{control_line, ControlLine};
use crate::error::describe_json_error;
use crate::event::{ProviderEvent, ToolStatus, UsageScope};
use crate::figures::{add_tokens, checked_cost, since, sum_costs};
use crate::line::LineDecoder;
use crate::line::Provider;

mod fast;

/// The model name Claude Code gives the assistant messages it writes itself (API errors).
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// State carried between lines of one Claude Code stream.
#[derive(Debug, Default, Clone)]
pub(crate) struct ClaudeDecoder {
    /// The model call whose usage was last reported, so its repeated lines count once.
    usage_reported_for: Option<String>,
    /// The model call whose text arrived as `stream_event` deltas, so its finished blocks are
    /// not reported a second time.
    streamed_message: Option<String>,
    /// A failure was already reported in this turn (the API-error message precedes the result).
    failure_reported: bool,
    /// Claude Code wrote its `[Request interrupted by user…]` message in this turn: the error
    /// result that follows is the interrupt taking effect, not a failure.
    interrupted: bool,
    /// The session the stream is in: its running totals below belong to it.
    session_id: Option<String>,
    /// The session's running cost at the previous result, to turn running totals into per-turn
    /// figures when the per-turn breakdown is missing.
    previous_total_cost: Option<f64>,
    /// The session's running per-model figures (`modelUsage`) at the previous result, for the
    /// same purpose.
    previous_model_usage: BTreeMap<String, SessionStats>,
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
    /// Claude Code's own word for a failed call (`connection_failed`), finer than `error`.
    #[serde(borrow)]
    api_error: Option<Cow<'a, str>>,
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

#[derive(Deserialize, Default)]
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
    input: Option<RawJson<'a>>,
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    is_error: Option<bool>,
    /// A `tool_result`'s content: a string, or a list of text (and other) blocks.
    #[serde(borrow)]
    content: Option<RawJson<'a>>,
}

/// A JSON value kept as its text, whichever path read it.
#[derive(Debug, Clone, Copy)]
struct RawJson<'a>(&'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| RawJson(raw.get()))
    }
}

/// What the emitters need of an `assistant` line, read by either path.
struct AssistantView<'a> {
    message_id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    usage: Option<Usage>,
    blocks: Vec<ContentBlock<'a>>,
    main_agent: bool,
}

/// What the emitters need of a `user` line whose content is a list of blocks.
struct UserView<'a> {
    blocks: Vec<ContentBlock<'a>>,
    synthetic: bool,
}

/// A `content_block_delta` stream event.
struct DeltaView<'a> {
    kind: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    thinking: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone)]
struct Usage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize, Clone)]
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

/// How Claude Code's own message after an interrupt begins (`[Request interrupted by user]`,
/// `[Request interrupted by user for tool use]`).
const INTERRUPT_MARKER: &str = "[Request interrupted by user";

impl LineDecoder for ClaudeDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let before = out.len();
        let decoded = match std::str::from_utf8(raw) {
            Ok(text) if self.fast_line(text, raw, out).is_ok() => Ok(()),
            _ => self.serde_line(raw, out),
        };
        let interrupt_marker = out.get(before..).is_some_and(|new| {
            new.iter().any(|event| {
                matches!(event, ProviderEvent::UserMessage { text, .. } if text.starts_with(INTERRUPT_MARKER))
            })
        });
        self.interrupted |= interrupt_marker;
        decoded
    }
}

impl ClaudeDecoder {
    /// The reference path: every line type, through serde.
    fn serde_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let line: Line<'_> =
            serde_json::from_slice(raw).map_err(|error| describe_json_error(raw, &error))?;
        match line.kind.as_deref() {
            Some("stream_event") => self.stream_event(&line, raw, out),
            Some("assistant") => self.assistant(&line, raw, out),
            Some("user") => user(&line, raw, out),
            Some("system") => self.system(&line, raw, out),
            Some("result") => return self.result(&line, out),
            Some("control_request" | "control_cancel_request" | "control_response") => {
                control(raw, &line, out)
            }
            _ => push_unknown(&line, raw, out),
        }
        Ok(())
    }
}

impl ClaudeDecoder {
    fn system(&mut self, line: &Line<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        match line.subtype.as_deref() {
            Some("init") => {
                let session_id = owned(&line.session_id);
                // A different session starts its running totals afresh; the same one (a
                // resumed run, or the next turn of a persistent process) carries them on.
                if session_id.is_some() && session_id != self.session_id {
                    self.session_id.clone_from(&session_id);
                    self.previous_total_cost = None;
                    self.previous_model_usage.clear();
                }
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
                let error_type = line
                    .api_error_type
                    .as_deref()
                    .or(line.api_error.as_deref())
                    .or(error_word.as_deref());
                out.push(ProviderEvent::Failure {
                    failure: classify(
                        Some(Provider::ClaudeCode),
                        &ErrorReport {
                            http_status: line.api_error_status,
                            error_type,
                            message: &text,
                            ..ErrorReport::default()
                        },
                    ),
                });
            }
            return;
        }
        let blocks = message
            .content
            .map(|content| serde_json::from_str::<Vec<ContentBlock<'_>>>(content.get()))
            .transpose();
        let Ok(blocks) = blocks else {
            return push_unknown(line, raw, out);
        };
        let view = AssistantView {
            message_id: message.id.clone(),
            model: message.model.clone(),
            usage: message.usage.clone(),
            blocks: blocks.unwrap_or_default(),
            main_agent: line.parent_tool_use_id.is_none(),
        };
        self.emit_assistant(view, raw, out);
    }

    /// Emits an assistant line's usage (once per model call), text and tool starts.
    fn emit_assistant(
        &mut self,
        view: AssistantView<'_>,
        raw: &[u8],
        out: &mut Vec<ProviderEvent>,
    ) {
        let message_id = view.message_id.as_deref();
        if view.main_agent && message_id != self.usage_reported_for.as_deref() {
            self.usage_reported_for = message_id.map(str::to_owned);
            if let Some(usage) = &view.usage {
                out.push(call_usage(usage, &view.model));
            }
        }
        let streamed = message_id.is_some() && message_id == self.streamed_message.as_deref();
        for block in view.blocks {
            match block.kind.as_ref() {
                "text" if !streamed => out.push(ProviderEvent::TextDelta {
                    text: block.text.map(Cow::into_owned).unwrap_or_default(),
                }),
                "thinking" if !streamed => out.push(ProviderEvent::ThinkingDelta {
                    text: block.thinking.map(Cow::into_owned).unwrap_or_default(),
                }),
                "text" | "thinking" | "redacted_thinking" => {}
                "tool_use" | "server_tool_use" => out.push(ProviderEvent::ToolStarted {
                    name: owned(&block.name).unwrap_or_default(),
                    call_id: owned(&block.id).unwrap_or_default(),
                    arg: block.input.and_then(|input| first_significant_arg(input.0)),
                    input: block
                        .input
                        .and_then(|input| serde_json::from_str(input.0).ok()),
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
                let view = DeltaView {
                    kind: delta.kind.clone(),
                    text: delta.text.clone(),
                    thinking: delta.thinking.clone(),
                };
                if !emit_delta(view, out) {
                    push_unknown(line, raw, out);
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

    fn result(&mut self, line: &Line<'_>, out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let (stats, models) = self.turn_stats(line)?;
        let windows: BTreeMap<String, u64> = line
            .model_usage
            .iter()
            .flatten()
            .filter_map(|(model, usage)| usage.context_window.map(|window| (model.clone(), window)))
            .collect();
        if !windows.is_empty() {
            out.push(ProviderEvent::ContextWindows { windows });
        }
        let interrupted = std::mem::take(&mut self.interrupted)
            && line.subtype.as_deref() == Some("error_during_execution");
        if line.is_error == Some(true) && !self.failure_reported && !interrupted {
            let message = line
                .result
                .as_deref()
                .or(line.subtype.as_deref())
                .unwrap_or("the turn ended with an error");
            out.push(ProviderEvent::Failure {
                failure: classify(
                    Some(Provider::ClaudeCode),
                    &ErrorReport {
                        http_status: line.api_error_status,
                        error_type: line.api_error_type.as_deref().or(line.api_error.as_deref()),
                        message,
                        ..ErrorReport::default()
                    },
                ),
            });
        }
        self.failure_reported = false;
        self.usage_reported_for = None;
        self.streamed_message = None;
        out.push(ProviderEvent::TurnEnded {
            stats,
            models,
            interrupted,
        });
        Ok(())
    }

    /// The turn's own figures, in total and per model, and the running totals kept for the
    /// next turn. `model_usage_since_last_result` is per turn and covers every call,
    /// compaction included, so it is preferred; then the running `modelUsage` less its value
    /// at the previous result of the same session (a resumed run carries the session's totals
    /// on); then `usage` (per turn, without the compaction call) with the running
    /// `total_cost_usd` less its previous value.
    fn turn_stats(
        &mut self,
        line: &Line<'_>,
    ) -> Result<(SessionStats, BTreeMap<String, SessionStats>), String> {
        let total_cost = checked_cost("total_cost_usd", line.total_cost_usd)?;
        let running = per_model(line.model_usage.as_ref(), "modelUsage")?;
        let since_last = per_model(
            line.model_usage_since_last_result.as_ref(),
            "model_usage_since_last_result",
        )?;
        let models = if !since_last.is_empty() {
            since_last
        } else if !running.is_empty() {
            running
                .iter()
                .map(|(model, total)| {
                    let turn = match self.previous_model_usage.get(model) {
                        Some(before) => since(total, before).unwrap_or_else(|| total.clone()),
                        None => total.clone(),
                    };
                    (model.clone(), turn)
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        let mut stats = SessionStats {
            duration_ms: line.duration_ms,
            num_turns: line.num_turns,
            ..SessionStats::default()
        };
        if models.is_empty() {
            let usage = line.usage.clone().unwrap_or_default();
            add_tokens(&mut stats, &usage.stats());
            stats.cost_usd = total_cost.map(|total| match self.previous_total_cost {
                Some(previous) if previous <= total => total - previous,
                _ => total,
            });
        } else {
            for turn in models.values() {
                add_tokens(&mut stats, turn);
            }
            stats.cost_usd = sum_costs(models.values().map(|turn| turn.cost_usd));
        }
        if stats.cost_usd.is_some() {
            stats.cost_source = Some(CostSource::Reported);
        }
        self.previous_total_cost = total_cost.or(self.previous_total_cost);
        if !running.is_empty() {
            self.previous_model_usage = running;
        }
        Ok((stats, models))
    }
}

/// Per-model figures of a `modelUsage`-shaped map, each cost checked.
fn per_model(
    models: Option<&BTreeMap<String, ModelUsage>>,
    field: &str,
) -> Result<BTreeMap<String, SessionStats>, String> {
    models
        .into_iter()
        .flatten()
        .map(|(model, usage)| {
            let cost = checked_cost(&format!("{field}.{model}.costUSD"), usage.cost_usd)?;
            let stats = SessionStats {
                input_tokens: usage.input_tokens,
                cached_input_tokens: usage.cache_read_input_tokens,
                cache_write_input_tokens: usage.cache_creation_input_tokens,
                output_tokens: usage.output_tokens,
                reasoning_tokens: usage.thinking_tokens,
                cost_usd: cost,
                cost_source: cost.map(|_| CostSource::Reported),
                ..SessionStats::default()
            };
            Ok((model.clone(), stats))
        })
        .collect()
}

impl Usage {
    /// The vocabulary's figures of a per-call or per-turn `usage` object.
    fn stats(&self) -> SessionStats {
        SessionStats {
            input_tokens: self.input_tokens,
            cached_input_tokens: self.cache_read_input_tokens,
            cache_write_input_tokens: self.cache_creation_input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .and_then(|details| details.thinking_tokens),
            ..SessionStats::default()
        }
    }
}

/// A control-protocol line: a permission request or its withdrawal becomes an event; an answer
/// to one of the host's own requests carries nothing for the pane.
fn control(raw: &[u8], line: &Line<'_>, out: &mut Vec<ProviderEvent>) {
    match control_line(raw) {
        Some(ControlLine::CanUseTool {
            request_id,
            tool,
            input,
            description,
            tool_use_id,
        }) => out.push(ProviderEvent::ApprovalRequested {
            request_id,
            tool,
            arg: first_significant_arg(&input.to_string()).or(description),
            call_id: tool_use_id,
            input,
        }),
        Some(ControlLine::Cancelled { request_id }) => {
            out.push(ProviderEvent::ApprovalWithdrawn { request_id })
        }
        Some(ControlLine::Response { .. }) => {}
        Some(ControlLine::OtherRequest { .. }) | None => push_unknown(line, raw, out),
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
    emit_user(UserView { blocks, synthetic }, raw, out);
}

/// Emits a user line's tool results and text.
fn emit_user(view: UserView<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
    for block in view.blocks {
        match block.kind.as_ref() {
            "tool_result" => out.push(ProviderEvent::ToolEnded {
                call_id: owned(&block.tool_use_id).unwrap_or_default(),
                status: if block.is_error == Some(true) {
                    ToolStatus::Error
                } else {
                    ToolStatus::Success
                },
                exit_code: None,
                output: block.content.map(|content| tool_result_text(content.0)),
            }),
            "text" => out.push(ProviderEvent::UserMessage {
                text: block.text.map(Cow::into_owned).unwrap_or_default(),
                synthetic: view.synthetic,
            }),
            other => out.push(ProviderEvent::Unknown {
                event_type: Some(format!("user/{other}")),
                raw: String::from_utf8_lossy(raw).into_owned(),
            }),
        }
    }
}

/// A `tool_result`'s content as text: a string as it is, a list of blocks as their texts one
/// per line (a block without text, an image say, as its JSON), anything else as its JSON.
fn tool_result_text(content: &str) -> String {
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow)]
        text: Option<Cow<'a, str>>,
    }
    if let Ok(text) = serde_json::from_str::<Cow<'_, str>>(content) {
        return text.into_owned();
    }
    match serde_json::from_str::<Vec<&RawValue>>(content) {
        Ok(blocks) => blocks
            .iter()
            .map(|raw| match serde_json::from_str::<Block<'_>>(raw.get()) {
                Ok(Block { text: Some(text) }) => text.into_owned(),
                _ => raw.get().to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Err(_) => content.to_owned(),
    }
}

/// Emits a content-block delta; `false` when its type is unknown.
fn emit_delta(view: DeltaView<'_>, out: &mut Vec<ProviderEvent>) -> bool {
    match view.kind.as_deref() {
        Some("text_delta") => out.push(ProviderEvent::TextDelta {
            text: view.text.map(Cow::into_owned).unwrap_or_default(),
        }),
        Some("thinking_delta") => out.push(ProviderEvent::ThinkingDelta {
            text: view.thinking.map(Cow::into_owned).unwrap_or_default(),
        }),
        // Tool input and signatures are reported whole by the assistant line.
        Some("input_json_delta" | "signature_delta" | "citations_delta") => {}
        _ => return false,
    }
    true
}

fn call_usage(usage: &Usage, model: &Option<Cow<'_, str>>) -> ProviderEvent {
    ProviderEvent::Usage {
        scope: UsageScope::Call,
        model: owned(model),
        input_tokens: usage
            .input_tokens
            .unwrap_or(0)
            .saturating_add(usage.cache_creation_input_tokens.unwrap_or(0)),
        cached_input_tokens: usage.cache_read_input_tokens.unwrap_or(0),
        cache_write_input_tokens: usage.cache_creation_input_tokens,
        // The stream's usage has no 1-hour split this decoder reads.
        cache_write_1h_input_tokens: None,
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

/// An unknown line, named `type/subtype` (or `type/event type`) as far as it says.
fn push_unknown(line: &Line<'_>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
    let event_type = match (line.kind.as_deref(), line.subtype.as_deref()) {
        (Some(kind), Some(subtype)) => Some(format!("{kind}/{subtype}")),
        (Some(kind), None) => match &line.event {
            Some(event) => Some(format!("{kind}/{}", event.kind)),
            None => Some(kind.to_owned()),
        },
        (None, _) => None,
    };
    channel::push_unknown(event_type.as_deref(), raw, out);
}
