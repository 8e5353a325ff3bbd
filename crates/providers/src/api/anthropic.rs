//! The Anthropic Messages stream: `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`, `ping` and `error`.

use std::collections::BTreeMap;

use panewise_protocol::SessionStats;
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
    done: bool,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// The cache writes split by how long they are kept.
    cache_creation: Option<CacheCreation>,
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
    fn update(&mut self, later: Usage) {
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
                    self.usage.update(usage);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block: Block::ToolUse { id, name },
            } => {
                self.tool_blocks.insert(index, (id, name, String::new()));
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
                Piece::Other => {}
            },
            Event::ContentBlockStop { index } => {
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
            Event::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.usage.update(usage);
                }
            }
            Event::MessageStop => {
                self.done = true;
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
