//! The serde shapes of what the app-server writes, narrow and lenient: every field optional,
//! text borrowed from the line where it can be. Both the session and the decoder read them.

use std::borrow::Cow;

use panewise_protocol::SessionStats;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The parts of an answer or notification that carry ids: `thread` and `turn`.
#[derive(Deserialize)]
pub(super) struct Answer {
    pub(super) thread: Option<Thread>,
    pub(super) turn: Option<Turn>,
    pub(super) model: Option<String>,
    pub(super) cwd: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Thread {
    pub(super) id: Option<String>,
    pub(super) model: Option<String>,
    pub(super) cwd: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Turn {
    pub(super) id: Option<String>,
    pub(super) status: Option<String>,
    pub(super) error: Option<TurnError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TurnError {
    pub(super) message: Option<String>,
    pub(super) codex_error_info: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Resolved<'a> {
    #[serde(borrow)]
    pub(super) request_id: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Delta<'a> {
    pub(super) item_id: Option<Cow<'a, str>>,
    pub(super) delta: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ItemParams<'a> {
    #[serde(borrow)]
    pub(super) item: Option<Item<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Item<'a> {
    #[serde(rename = "type")]
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) summary: Option<Vec<String>>,
    #[serde(borrow)]
    pub(super) content: Option<&'a RawValue>,
    pub(super) command: Option<Cow<'a, str>>,
    pub(super) exit_code: Option<i64>,
    pub(super) aggregated_output: Option<String>,
    pub(super) status: Option<Cow<'a, str>>,
    /// File changes as Codex sends them (path, kind, diff), kept whole for the transcript.
    pub(super) changes: Option<Vec<Value>>,
    pub(super) server: Option<Cow<'a, str>>,
    pub(super) tool: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(super) arguments: Option<&'a RawValue>,
    pub(super) query: Option<Cow<'a, str>>,
    /// An MCP tool call's result, as the server returned it.
    #[serde(borrow)]
    pub(super) result: Option<&'a RawValue>,
    /// An MCP tool call's error.
    pub(super) error: Option<ItemError>,
}

#[derive(Deserialize)]
pub(super) struct ItemError {
    pub(super) message: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct TextPart {
    pub(super) text: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageParams {
    pub(super) token_usage: Option<TokenUsage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TokenUsage {
    pub(super) total: Option<Tokens>,
    pub(super) last: Option<Tokens>,
    pub(super) model_context_window: Option<u64>,
}

/// Codex counts cached reads and cache writes inside `inputTokens`, and reasoning inside
/// `outputTokens`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tokens {
    pub(super) input_tokens: Option<u64>,
    pub(super) cached_input_tokens: Option<u64>,
    pub(super) cache_write_input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) reasoning_output_tokens: Option<u64>,
}

impl Tokens {
    /// The vocabulary keeps uncached input, cache reads and cache writes apart.
    pub(super) fn stats(&self) -> SessionStats {
        let cached = self.cached_input_tokens.unwrap_or(0);
        let written = self.cache_write_input_tokens.unwrap_or(0);
        SessionStats {
            input_tokens: self
                .input_tokens
                .map(|input| input.saturating_sub(cached).saturating_sub(written)),
            cached_input_tokens: self.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_output_tokens,
            ..SessionStats::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ErrorParams {
    pub(super) error: Option<TurnError>,
    pub(super) will_retry: Option<bool>,
}

#[derive(Deserialize)]
pub(super) struct NoticeParams {
    pub(super) summary: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RateLimitParams {
    pub(super) rate_limits: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct PlanParams {
    pub(super) plan: Option<Vec<PlanEntry>>,
}

#[derive(Deserialize)]
pub(super) struct PlanEntry {
    pub(super) step: Option<String>,
    pub(super) status: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ApprovalParams {
    pub(super) item_id: Option<String>,
    pub(super) command: Option<String>,
    pub(super) reason: Option<String>,
    pub(super) questions: Option<Vec<Question>>,
}

#[derive(Deserialize)]
pub(super) struct Question {
    pub(super) question: Option<String>,
}
