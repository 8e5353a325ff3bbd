//! The Anthropic Messages stream: `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`, `ping` and `error`.

use std::collections::BTreeMap;

use panewise_protocol::SessionStats;
use panewise_window::AppliedContextEdit;
use serde::Deserialize;

use super::{disconnected, failure_event, malformed, ApiKind, ErrorDetail, StreamDecoder};
use crate::event::ProviderEvent;

/// Decodes one Anthropic Messages stream.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    model: Option<String>,
    usage: Usage,
    stop_reason: Option<String>,
    /// Tool-use blocks being streamed, by block index: id, name, argument text so far.
    tool_blocks: BTreeMap<u64, (String, String, String)>,
    /// Compaction blocks being streamed, by block index: the summary so far.
    compaction_blocks: BTreeMap<u64, String>,
    /// Compaction blocks finished, in order: their summaries.
    compactions: Vec<String>,
    /// `context_management.applied_edits`, as reported.
    applied_edits: Vec<AppliedContextEdit>,
    /// `usage.iterations` entries of type `compaction`: input and output tokens.
    compaction_iterations: Vec<(Option<u64>, Option<u64>)>,
    done: bool,
}

/// One entry of `usage.iterations`: a sampling step of the call (`compaction` or `message`).
#[derive(Debug, Clone, Deserialize)]
struct Iteration {
    #[serde(rename = "type")]
    kind: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

/// `context_management` of a `message_delta`.
#[derive(Deserialize)]
struct ContextManagement {
    // Values, not raw slices: the event is an internally tagged enum, whose fields serde
    // buffers, and a raw slice cannot be read from a buffer.
    #[serde(default)]
    applied_edits: Vec<serde_json::Value>,
}

/// The fields of an `applied_edits` entry this decoder reads; the entry is kept whole when its
/// type is unknown.
#[derive(Deserialize)]
struct AppliedEdit {
    #[serde(rename = "type")]
    kind: Option<String>,
    cleared_tool_uses: Option<u64>,
    cleared_thinking_turns: Option<u64>,
    cleared_input_tokens: Option<u64>,
}

/// An `applied_edits` entry as the vocabulary's edit; an unknown type is kept verbatim.
fn applied_edit(raw: &serde_json::Value) -> AppliedContextEdit {
    let unrecognized = |provider_type: Option<String>| AppliedContextEdit::Unrecognized {
        provider_type,
        raw: raw.to_string(),
    };
    let Ok(edit) = AppliedEdit::deserialize(raw) else {
        return unrecognized(None);
    };
    match edit.kind {
        Some(kind) if kind.starts_with("clear_tool_uses_") => AppliedContextEdit::ClearedToolUses {
            provider_type: kind,
            cleared_tool_uses: edit.cleared_tool_uses,
            cleared_input_tokens: edit.cleared_input_tokens,
        },
        Some(kind) if kind.starts_with("clear_thinking_") => AppliedContextEdit::ClearedThinking {
            provider_type: kind,
            cleared_thinking_turns: edit.cleared_thinking_turns,
            cleared_input_tokens: edit.cleared_input_tokens,
        },
        kind => unrecognized(kind),
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// The cache writes split by how long they are kept.
    cache_creation: Option<CacheCreation>,
    /// The call's sampling steps, when it had more than the answer (a compaction).
    iterations: Option<Vec<Iteration>>,
}

/// `usage.cache_creation`: `cache_creation_input_tokens` split by time to live. Only the
/// one-hour part is kept: the five-minute part is the rest of the writes.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct CacheCreation {
    ephemeral_1h_input_tokens: Option<u64>,
}

impl Usage {
    /// Each field the later report carries replaces this one's (`message_delta` repeats the
    /// figures cumulatively).
    fn update(&mut self, later: &Usage) {
        let pick = |now: &mut Option<u64>, later: Option<u64>| {
            if later.is_some() {
                *now = later;
            }
        };
        pick(&mut self.input_tokens, later.input_tokens);
        pick(
            &mut self.cache_creation_input_tokens,
            later.cache_creation_input_tokens,
        );
        pick(
            &mut self.cache_read_input_tokens,
            later.cache_read_input_tokens,
        );
        pick(&mut self.output_tokens, later.output_tokens);
        if later.cache_creation.is_some() {
            self.cache_creation = later.cache_creation;
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u64,
        delta: Piece,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        usage: Option<Usage>,
        context_management: Option<ContextManagement>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorDetail,
    },
}

#[derive(Deserialize)]
struct StartMessage {
    model: Option<String>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    ToolUse {
        id: String,
        name: String,
    },
    Compaction {
        content: Option<String>,
    },
    #[serde(other)]
    Other,
}

/// A content block's `delta`: a piece of text, thinking or tool arguments.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Piece {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    CompactionDelta {
        content: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct MessageDelta {
    stop_reason: Option<String>,
}

impl StreamDecoder for AnthropicDecoder {
    fn feed(&mut self, event: &str, data: &str, out: &mut Vec<ProviderEvent>) {
        if self.done {
            return;
        }
        let parsed = match serde_json::from_str::<Event>(data) {
            Ok(parsed) => parsed,
            Err(error) => {
                let known = serde_json::from_str::<serde_json::Value>(data).is_ok();
                out.push(if known {
                    ProviderEvent::Unknown {
                        event_type: Some(event.to_owned()).filter(|name| !name.is_empty()),
                        raw: data.to_owned(),
                    }
                } else {
                    malformed(ApiKind::Anthropic, event, &error)
                });
                return;
            }
        };
        match parsed {
            Event::MessageStart { message } => {
                self.model = message.model;
                if let Some(usage) = message.usage {
                    self.usage.update(&usage);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block: Block::ToolUse { id, name },
            } => {
                self.tool_blocks.insert(index, (id, name, String::new()));
            }
            Event::ContentBlockStart {
                index,
                content_block: Block::Compaction { content },
            } => {
                self.compaction_blocks
                    .insert(index, content.unwrap_or_default());
            }
            Event::ContentBlockStart { .. } | Event::Ping => {}
            Event::ContentBlockDelta { index, delta } => match delta {
                Piece::TextDelta { text } => out.push(ProviderEvent::TextDelta { text }),
                Piece::ThinkingDelta { thinking } => {
                    out.push(ProviderEvent::ThinkingDelta { text: thinking })
                }
                Piece::InputJsonDelta { partial_json } => {
                    if let Some((_, _, arguments)) = self.tool_blocks.get_mut(&index) {
                        arguments.push_str(&partial_json);
                    }
                }
                Piece::CompactionDelta { content } => {
                    if let Some(summary) = self.compaction_blocks.get_mut(&index) {
                        summary.push_str(content.as_deref().unwrap_or_default());
                    }
                }
                Piece::Other => {}
            },
            Event::ContentBlockStop { index } => {
                if let Some(summary) = self.compaction_blocks.remove(&index) {
                    self.compactions.push(summary);
                }
                if let Some((call_id, name, arguments)) = self.tool_blocks.remove(&index) {
                    let arguments = if arguments.is_empty() {
                        "{}".to_owned()
                    } else {
                        arguments
                    };
                    out.push(ProviderEvent::ToolCallRequested {
                        call_id,
                        name,
                        arguments,
                    });
                }
            }
            Event::MessageDelta {
                delta,
                usage,
                context_management,
            } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(mut usage) = usage {
                    if let Some(iterations) = usage.iterations.take() {
                        self.compaction_iterations = iterations
                            .into_iter()
                            .filter(|step| step.kind.as_deref() == Some("compaction"))
                            .map(|step| (step.input_tokens, step.output_tokens))
                            .collect();
                    }
                    self.usage.update(&usage);
                }
                if let Some(managed) = context_management {
                    self.applied_edits = managed.applied_edits.iter().map(applied_edit).collect();
                }
            }
            Event::MessageStop => {
                self.done = true;
                if let Some(event) = self.context_managed() {
                    out.push(event);
                }
                out.push(ProviderEvent::CallEnded {
                    model: self.model.clone(),
                    stop_reason: self.stop_reason.take(),
                    stats: self.stats(),
                });
            }
            Event::Error { error } => {
                self.done = true;
                out.push(failure_event(error.classify(None, data)));
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<ProviderEvent>) {
        if !std::mem::replace(&mut self.done, true) {
            out.push(failure_event(disconnected(ApiKind::Anthropic)));
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl AnthropicDecoder {
    /// What the provider reported of its context management in this call: the applied edits,
    /// then each compaction block with its `usage.iterations` step (the n-th block with the
    /// n-th compaction step).
    fn context_managed(&mut self) -> Option<ProviderEvent> {
        let mut edits = std::mem::take(&mut self.applied_edits);
        let mut steps = std::mem::take(&mut self.compaction_iterations).into_iter();
        for content in std::mem::take(&mut self.compactions) {
            let (input_tokens, output_tokens) = steps.next().unwrap_or((None, None));
            edits.push(AppliedContextEdit::Compacted {
                api: ApiKind::Anthropic.name().to_owned(),
                content,
                item_id: None,
                input_tokens,
                output_tokens,
            });
        }
        (!edits.is_empty()).then_some(ProviderEvent::ContextManaged { edits })
    }

    /// Anthropic's `input_tokens` already leaves out cache reads and writes; reasoning is not
    /// reported apart from the output.
    fn stats(&self) -> SessionStats {
        SessionStats {
            input_tokens: self.usage.input_tokens,
            cached_input_tokens: self.usage.cache_read_input_tokens,
            cache_write_input_tokens: self.usage.cache_creation_input_tokens,
            cache_write_1h_input_tokens: self
                .usage
                .cache_creation
                .and_then(|split| split.ephemeral_1h_input_tokens),
            output_tokens: self.usage.output_tokens,
            reasoning_tokens: None,
            ..SessionStats::default()
        }
    }
}
