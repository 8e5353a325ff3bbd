//! Provider-side context management: whether an API and model support a strategy (checked
//! when a session starts), the request fields and headers each strategy is rendered as, and
//! nothing else. Pure.
//!
//! - Anthropic Messages: `context_management: {"edits": [..]}` with the edit
//!   `clear_tool_uses_20250919` or `clear_thinking_20251015` (beta header
//!   `context-management-2025-06-27`) or `compact_20260112` (beta header `compact-2026-01-12`).
//! - OpenAI Responses: `context_management: [{"type": "compaction", "compact_threshold": N}]`.
//! - Gemini has no such setting.

use panewise_window::provider::{ProviderContext, ThinkingKeep};
use serde::Serialize;

use super::ApiKind;
use crate::error::{RequestError, Unsupported};
use crate::model_table::ModelTable;

/// The beta header value that enables Anthropic's context editing.
pub const CONTEXT_MANAGEMENT_BETA: &str = "context-management-2025-06-27";
/// The beta header value that enables Anthropic's server-side compaction.
pub const COMPACT_BETA: &str = "compact-2026-01-12";

/// The API a provider-side strategy is rendered for.
pub fn context_api(context: &ProviderContext) -> ApiKind {
    match context {
        ProviderContext::AnthropicClearToolUses(_)
        | ProviderContext::AnthropicClearThinking(_)
        | ProviderContext::AnthropicCompact(_) => ApiKind::Anthropic,
        ProviderContext::OpenAiCompaction(_) => ApiKind::OpenAi,
    }
}

/// Whether `api` and `model` support `context`, by the built-in model table. Called when a
/// session starts: a strategy the provider would refuse, or ignore, is refused here with the
/// reason.
pub fn check_provider_context(
    api: ApiKind,
    model: &str,
    context: &ProviderContext,
) -> Result<(), Unsupported> {
    check_provider_context_in(&ModelTable::built_in(), api, model, context)
}

/// [`check_provider_context`] against `table` (the built-in one with a configuration's
/// overrides, say).
pub fn check_provider_context_in(
    table: &ModelTable,
    api: ApiKind,
    model: &str,
    context: &ProviderContext,
) -> Result<(), Unsupported> {
    let strategy = context.strategy_name();
    let refuse = |reason: String, instead: String| Unsupported {
        strategy: strategy.to_owned(),
        api: api.name().to_owned(),
        model: model.to_owned(),
        reason,
        instead,
    };
    let wanted = context_api(context);
    if api != wanted {
        let instead = match api {
            ApiKind::Anthropic => "on Anthropic, use `anthropic-compact`, `anthropic-clear-tool-uses` or `anthropic-clear-thinking`",
            ApiKind::OpenAi => "on OpenAI, use `openai-compaction`",
            ApiKind::Gemini => "Gemini has no provider-side context management: use a local strategy such as `summarize-oldest` or `observation-masking`",
        };
        return Err(refuse(
            format!("it is a setting of the {wanted} API only"),
            instead.to_owned(),
        ));
    }
    let supported = table.context_strategies(model).unwrap_or_default();
    if supported.iter().any(|name| name == strategy) {
        return Ok(());
    }
    let others: Vec<&str> = supported
        .iter()
        .map(String::as_str)
        .filter(|name| *name != strategy)
        .collect();
    let instead = if others.is_empty() {
        "use a local strategy, or a model the provider documents for it (a model table's `context_management` rule adds one)".to_owned()
    } else {
        format!(
            "this model supports {}, or use a local strategy",
            others.join(", ")
        )
    };
    Err(refuse(
        "the provider does not document this model as supporting it".to_owned(),
        instead,
    ))
}

/// The `anthropic-beta` header a request with `context` needs, when it needs one.
pub fn anthropic_beta(context: Option<&ProviderContext>) -> Option<&'static str> {
    match context? {
        ProviderContext::AnthropicClearToolUses(_) | ProviderContext::AnthropicClearThinking(_) => {
            Some(CONTEXT_MANAGEMENT_BETA)
        }
        ProviderContext::AnthropicCompact(_) => Some(COMPACT_BETA),
        ProviderContext::OpenAiCompaction(_) => None,
    }
}

/// The extra headers of a request to `api` with `context`: `anthropic-beta` for Anthropic's
/// strategies, nothing otherwise.
pub fn request_headers(api: ApiKind, context: Option<&ProviderContext>) -> Vec<(String, String)> {
    match (api, anthropic_beta(context)) {
        (ApiKind::Anthropic, Some(beta)) => vec![("anthropic-beta".to_owned(), beta.to_owned())],
        _ => Vec::new(),
    }
}

/// A token count, as the Anthropic edits spell triggers and amounts: `{"type", "value"}`.
#[derive(Debug, Serialize)]
pub(crate) struct Amount {
    #[serde(rename = "type")]
    kind: &'static str,
    value: u64,
}

/// Anthropic's `context_management`.
#[derive(Debug, Serialize)]
pub(crate) struct AnthropicContextManagement<'r> {
    edits: [Edit<'r>; 1],
}

#[derive(Debug, Serialize)]
#[serde(tag = "type")]
enum Edit<'r> {
    #[serde(rename = "clear_tool_uses_20250919")]
    ClearToolUses {
        trigger: Amount,
        keep: Amount,
        #[serde(skip_serializing_if = "Option::is_none")]
        clear_at_least: Option<Amount>,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        exclude_tools: &'r [String],
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        clear_tool_inputs: bool,
    },
    #[serde(rename = "clear_thinking_20251015")]
    ClearThinking { keep: ThinkingKept },
    #[serde(rename = "compact_20260112")]
    Compact {
        trigger: Amount,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pause_after_compaction: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        instructions: Option<&'r str>,
    },
}

/// `keep` of `clear_thinking_20251015`: an amount of thinking turns, or the word `all`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ThinkingKept {
    Turns(Amount),
    All(&'static str),
}

/// One entry of OpenAI's `context_management`.
#[derive(Debug, Serialize)]
pub(crate) struct OpenAiContextEntry {
    #[serde(rename = "type")]
    kind: &'static str,
    compact_threshold: u64,
}

fn amount(kind: &'static str, value: u64) -> Amount {
    Amount { kind, value }
}

fn wrong_api(context: &ProviderContext, api: ApiKind) -> RequestError {
    RequestError::Render(format!(
        "the `{}` strategy cannot be sent to the {api} API (it is the {} API's)",
        context.strategy_name(),
        context_api(context)
    ))
}

/// The Anthropic body's `context_management`, or the error of a strategy of another API.
pub(crate) fn anthropic_field(
    context: Option<&ProviderContext>,
) -> Result<Option<AnthropicContextManagement<'_>>, RequestError> {
    let Some(context) = context else {
        return Ok(None);
    };
    let edit = match context {
        ProviderContext::AnthropicClearToolUses(settings) => Edit::ClearToolUses {
            trigger: amount("input_tokens", settings.trigger_tokens),
            keep: amount("tool_uses", settings.keep_tool_uses),
            clear_at_least: settings
                .clear_at_least_tokens
                .map(|tokens| amount("input_tokens", tokens)),
            exclude_tools: &settings.exclude_tools,
            clear_tool_inputs: settings.clear_tool_inputs,
        },
        ProviderContext::AnthropicClearThinking(settings) => Edit::ClearThinking {
            keep: match settings.keep_thinking_turns {
                ThinkingKeep::Turns(turns) => ThinkingKept::Turns(amount("thinking_turns", turns)),
                ThinkingKeep::All => ThinkingKept::All("all"),
            },
        },
        ProviderContext::AnthropicCompact(settings) => Edit::Compact {
            trigger: amount("input_tokens", settings.trigger_tokens),
            pause_after_compaction: settings.pause_after_compaction,
            instructions: settings.instructions.as_deref(),
        },
        ProviderContext::OpenAiCompaction(_) => return Err(wrong_api(context, ApiKind::Anthropic)),
    };
    Ok(Some(AnthropicContextManagement { edits: [edit] }))
}

/// The OpenAI body's `context_management`, or the error of a strategy of another API.
pub(crate) fn openai_field(
    context: Option<&ProviderContext>,
) -> Result<Option<[OpenAiContextEntry; 1]>, RequestError> {
    match context {
        None => Ok(None),
        Some(ProviderContext::OpenAiCompaction(settings)) => Ok(Some([OpenAiContextEntry {
            kind: "compaction",
            compact_threshold: settings.compact_threshold,
        }])),
        Some(other) => Err(wrong_api(other, ApiKind::OpenAi)),
    }
}

/// Gemini takes no provider-side strategy: one in its request is an error, never dropped.
pub(crate) fn gemini_field(context: Option<&ProviderContext>) -> Result<(), RequestError> {
    match context {
        None => Ok(()),
        Some(context) => Err(wrong_api(context, ApiKind::Gemini)),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod decode_tests;
