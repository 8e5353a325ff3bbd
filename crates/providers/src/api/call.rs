//! One call at the boundary with the transport, as data: the request as it goes out, rendered
//! ([`RenderedRequest`]), and the answer as it is assembled from the call's events
//! ([`Completion`]). Both pure; `panewise-transport` sends the one and fills the other.

use panewise_protocol::SessionStats;

use crate::event::ProviderEvent;

/// A request rendered by its caller, for the transport's `ModelClient::stream_rendered`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedRequest {
    /// The model id, as the API names it (Gemini's endpoint names it).
    pub model: String,
    /// The whole JSON body.
    pub body: Vec<u8>,
    /// How many API messages the body carries (a call and its result count one each), for
    /// the caller's accounting and the tests.
    pub messages: usize,
    /// The headers the body's settings need besides the API's own (`anthropic-beta` for a
    /// provider-side strategy: [`super::context::request_headers`]).
    pub headers: Vec<(String, String)>,
}

/// The assembled answer of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The visible text, all deltas joined.
    pub text: String,
    /// The visible reasoning, all deltas joined.
    pub thinking: String,
    /// The tool calls the model asked for, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The model that answered, when the stream named it.
    pub model: Option<String>,
    /// The provider's stop reason word.
    pub stop_reason: Option<String>,
    /// The call's exact usage and its price.
    pub stats: SessionStats,
    /// How many retries the call took.
    pub retries: u32,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's id of the call.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, JSON text.
    pub arguments: String,
}

impl Completion {
    /// Adds one event of the call.
    pub fn absorb(&mut self, event: ProviderEvent) {
        match event {
            ProviderEvent::TextDelta { text } => self.text.push_str(&text),
            ProviderEvent::ThinkingDelta { text } => self.thinking.push_str(&text),
            ProviderEvent::ToolCallRequested {
                call_id,
                name,
                arguments,
            } => self.tool_calls.push(ToolCall {
                call_id,
                name,
                arguments,
            }),
            ProviderEvent::CallEnded {
                model,
                stop_reason,
                stats,
            } => {
                self.model = model;
                self.stop_reason = stop_reason;
                self.stats = stats;
            }
            ProviderEvent::ProviderRetrying { .. } => self.retries = self.retries.saturating_add(1),
            _ => {}
        }
    }
}
