//! Provider-side strategies: context management the model API applies on its own servers
//! (Anthropic's `context_management.edits`, OpenAI's `context_management` compaction), chosen
//! by configuration like the local strategies.
//!
//! Locally such a strategy edits nothing: its visits never engage ([`ProviderSide`]). What it
//! contributes is the request settings ([`ProviderContext`]), which the request renderer of
//! `panewise-providers` turns into the API's fields, and, afterwards, the reconciliation of what
//! the provider reported it removed ([`AppliedContextEdit`]) with what the local counter says
//! those items held ([`reconcile`]): the provider's figure and the local estimate side by side
//! in one [`ProviderEditRecord`], so neither is taken on trust.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::Conversation;
use crate::error::WindowError;
use crate::message::{Role, WindowMessage};
use crate::strategy::{Planned, WindowStrategy};
use crate::visit::Visit;

/// Anthropic's default trigger of `clear_tool_uses_20250919`, in input tokens.
pub const DEFAULT_CLEAR_TOOL_USES_TRIGGER: u64 = 100_000;
/// Anthropic's default number of most recent tool uses `clear_tool_uses_20250919` keeps.
pub const DEFAULT_KEEP_TOOL_USES: u64 = 3;
/// Anthropic's default number of most recent thinking turns `clear_thinking_20251015` keeps.
pub const DEFAULT_KEEP_THINKING_TURNS: u64 = 1;
/// Anthropic's default trigger of `compact_20260112`, in input tokens.
pub const DEFAULT_COMPACT_TRIGGER: u64 = 150_000;
/// The smallest trigger `compact_20260112` accepts.
pub const MIN_COMPACT_TRIGGER: u64 = 50_000;

/// What a provider-side strategy asks the provider to do, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "kebab-case")]
pub enum ProviderContext {
    /// Anthropic `clear_tool_uses_20250919`: past a trigger, the oldest tool results are
    /// replaced with a placeholder on the server.
    AnthropicClearToolUses(ClearToolUses),
    /// Anthropic `clear_thinking_20251015`: thinking blocks of earlier turns are cleared.
    AnthropicClearThinking(ClearThinking),
    /// Anthropic `compact_20260112`: past a trigger, the conversation is summarized into a
    /// `compaction` block on the server.
    AnthropicCompact(AnthropicCompact),
    /// OpenAI Responses `context_management: [{type: "compaction"}]`: past a threshold, the
    /// conversation is compacted into an opaque `compaction` item.
    #[serde(rename = "openai-compaction")]
    OpenAiCompaction(OpenAiCompaction),
}

/// The settings of `anthropic-clear-tool-uses`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearToolUses {
    /// `triggerTokens`: clearing starts once the prompt reaches this many input tokens
    /// (default 100,000, as the API's).
    pub trigger_tokens: u64,
    /// `keepToolUses`: the most recent tool uses left as they are (default 3).
    pub keep_tool_uses: u64,
    /// `clearAtLeastTokens`: clear nothing unless at least this many tokens go (the API's
    /// `clear_at_least`; default: no minimum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_at_least_tokens: Option<u64>,
    /// `excludeTools`: tools whose uses are never cleared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_tools: Vec<String>,
    /// `clearToolInputs`: clear the calls' arguments too, not only their results (default
    /// false).
    #[serde(default)]
    pub clear_tool_inputs: bool,
}

/// The settings of `anthropic-clear-thinking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearThinking {
    /// `keepThinkingTurns`: the most recent assistant turns whose thinking stays (default 1),
    /// or `"all"`.
    pub keep_thinking_turns: ThinkingKeep,
}

/// How much thinking `clear_thinking_20251015` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingKeep {
    /// The thinking of this many most recent assistant turns.
    Turns(u64),
    /// Every thinking block (the best for the prompt cache).
    All,
}

impl Serialize for ThinkingKeep {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ThinkingKeep::Turns(turns) => serializer.serialize_u64(*turns),
            ThinkingKeep::All => serializer.serialize_str("all"),
        }
    }
}

impl<'de> Deserialize<'de> for ThinkingKeep {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        thinking_keep(&value).map_err(serde::de::Error::custom)
    }
}

/// The settings of `anthropic-compact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnthropicCompact {
    /// `triggerTokens`: compaction runs once the prompt reaches this many input tokens
    /// (default 150,000; the API takes no less than 50,000).
    pub trigger_tokens: u64,
    /// `instructions`: a summarization prompt that replaces the API's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `pauseAfterCompaction`: the call stops after the summary (`stop_reason: compaction`)
    /// instead of answering on (default false).
    #[serde(default)]
    pub pause_after_compaction: bool,
}

/// The settings of `openai-compaction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenAiCompaction {
    /// `compactThreshold`: compaction runs once the rendered prompt crosses this many tokens.
    /// Required: the API documents no default, so none is guessed.
    pub compact_threshold: u64,
}

impl ProviderContext {
    /// The `strategy` name that configures it.
    pub fn strategy_name(&self) -> &'static str {
        match self {
            ProviderContext::AnthropicClearToolUses(_) => "anthropic-clear-tool-uses",
            ProviderContext::AnthropicClearThinking(_) => "anthropic-clear-thinking",
            ProviderContext::AnthropicCompact(_) => "anthropic-compact",
            ProviderContext::OpenAiCompaction(_) => "openai-compaction",
        }
    }

    /// The input tokens at which the provider acts, when the strategy has a trigger.
    pub fn trigger_tokens(&self) -> Option<u64> {
        match self {
            ProviderContext::AnthropicClearToolUses(settings) => Some(settings.trigger_tokens),
            ProviderContext::AnthropicCompact(settings) => Some(settings.trigger_tokens),
            ProviderContext::OpenAiCompaction(settings) => Some(settings.compact_threshold),
            ProviderContext::AnthropicClearThinking(_) => None,
        }
    }
}

/// One thing the provider reported it did to the context of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppliedContextEdit {
    /// Tool results (and, when asked, their calls) cleared: an Anthropic `applied_edits`
    /// entry of type `clear_tool_uses_…`.
    ClearedToolUses {
        /// The edit's type word as the provider wrote it (`clear_tool_uses_20250919`).
        provider_type: String,
        /// `cleared_tool_uses`, absent when not reported.
        cleared_tool_uses: Option<u64>,
        /// `cleared_input_tokens`, absent when not reported.
        cleared_input_tokens: Option<u64>,
    },
    /// Thinking blocks cleared: an `applied_edits` entry of type `clear_thinking_…`.
    ClearedThinking {
        /// The edit's type word (`clear_thinking_20251015`).
        provider_type: String,
        /// `cleared_thinking_turns`, absent when not reported.
        cleared_thinking_turns: Option<u64>,
        /// `cleared_input_tokens`, absent when not reported.
        cleared_input_tokens: Option<u64>,
    },
    /// The conversation compacted: an Anthropic `compaction` block with its `usage.iterations`
    /// entry, or an OpenAI `compaction` output item.
    Compacted {
        /// `anthropic` or `openai`.
        api: String,
        /// What the next request must send back in the compaction's place, verbatim: the
        /// Anthropic block's `content` (the summary), or the OpenAI item's
        /// `encrypted_content`.
        content: String,
        /// The OpenAI item's `id`, when it had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        item_id: Option<String>,
        /// The compaction step's input tokens (the conversation it summarized), when the
        /// provider reported them apart (Anthropic `usage.iterations`; OpenAI does not).
        input_tokens: Option<u64>,
        /// The compaction step's output tokens (the summary), when reported apart.
        output_tokens: Option<u64>,
    },
    /// An entry of a type this build does not know, kept verbatim and counted, never dropped.
    Unrecognized {
        /// Its type word, when it had one.
        provider_type: Option<String>,
        /// The whole entry's JSON.
        raw: String,
    },
}

/// Who made a ledger record's edit: always the provider, for these records; the field is
/// there so a reader of the ledger tells them from the stage's own without guessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditSource {
    /// The model API applied the edit on its servers.
    Provider,
}

/// A provider's edit reconciled with the local count: one line of the window ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderEditRecord {
    /// Always [`EditSource::Provider`].
    pub source: EditSource,
    /// The configured provider-side strategy.
    pub strategy: String,
    /// The loop iteration whose call reported the edit.
    pub iteration: u64,
    /// What the provider reported, as it reported it.
    pub edit: AppliedContextEdit,
    /// The tokens the provider says the edit removed (`cleared_input_tokens`, or a
    /// compaction's input less its summary), absent when it did not say.
    pub provider_removed_tokens: Option<u64>,
    /// The tokens the local counter finds in what the edit removed, absent when the local
    /// history does not hold it (thinking is not kept locally) or the report names no items.
    pub local_estimate_tokens: Option<u64>,
    /// How the local estimate was made, or why there is none, in words.
    pub estimate_basis: String,
}

/// Reconciles one reported edit with `conversation`, the history the call was sent (before
/// any of this call's answer was appended). Pure: the same inputs give the same record.
pub fn reconcile<M: WindowMessage>(
    conversation: &Conversation<M>,
    context: &ProviderContext,
    iteration: u64,
    edit: &AppliedContextEdit,
) -> ProviderEditRecord {
    let (provider_removed_tokens, local_estimate_tokens, estimate_basis) = match edit {
        AppliedContextEdit::ClearedToolUses {
            cleared_tool_uses,
            cleared_input_tokens,
            ..
        } => {
            let excluded: &[String] = match context {
                ProviderContext::AnthropicClearToolUses(settings) => &settings.exclude_tools,
                _ => &[],
            };
            match cleared_tool_uses {
                Some(count) => {
                    let (tokens, found) = oldest_tool_results(conversation, *count, excluded);
                    let basis = if found < *count {
                        format!("the {found} oldest tool results held locally (the provider cleared {count})")
                    } else {
                        format!("the {count} oldest tool results, counted locally")
                    };
                    (*cleared_input_tokens, Some(tokens), basis)
                }
                None => (
                    *cleared_input_tokens,
                    None,
                    "the provider named no count of cleared tool uses".to_owned(),
                ),
            }
        }
        AppliedContextEdit::ClearedThinking {
            cleared_input_tokens,
            ..
        } => (
            *cleared_input_tokens,
            None,
            "thinking is not kept in the local history, so it cannot be counted".to_owned(),
        ),
        AppliedContextEdit::Compacted {
            input_tokens,
            output_tokens,
            ..
        } => (
            input_tokens.map(|input| input.saturating_sub(output_tokens.unwrap_or(0))),
            Some(conversation.tokens_in(0..conversation.len())),
            "the whole conversation sent, counted locally (the summary replaces it)".to_owned(),
        ),
        AppliedContextEdit::Unrecognized { .. } => (
            None,
            None,
            "an edit of a type this build does not know".to_owned(),
        ),
    };
    ProviderEditRecord {
        source: EditSource::Provider,
        strategy: context.strategy_name().to_owned(),
        iteration,
        edit: edit.clone(),
        provider_removed_tokens,
        local_estimate_tokens,
        estimate_basis,
    }
}

/// The counted tokens of the `count` oldest tool results not of an excluded tool, and how
/// many there were.
fn oldest_tool_results<M: WindowMessage>(
    conversation: &Conversation<M>,
    count: u64,
    excluded: &[String],
) -> (u64, u64) {
    let indices = oldest_tool_result_indices(conversation, count, excluded);
    let tokens = indices
        .iter()
        .map(|index| conversation.tokens_in(*index..*index + 1))
        .fold(0u64, u64::saturating_add);
    (tokens, indices.len() as u64)
}

/// The message indices of the `count` oldest tool results not of an excluded tool: what
/// [`reconcile`] takes a report of `count` cleared tool uses to mean. A result's tool is the
/// name it carries, else its call's, as everywhere in the stage (W22).
pub fn oldest_tool_result_indices<M: WindowMessage>(
    conversation: &Conversation<M>,
    count: u64,
    excluded: &[String],
) -> Vec<usize> {
    let mut indices = Vec::new();
    for (index, message) in conversation.messages().iter().enumerate() {
        if indices.len() as u64 >= count {
            break;
        }
        if message.role() != Role::Tool {
            continue;
        }
        let tool = conversation
            .meta(index)
            .and_then(|meta| conversation.tool_name(meta.tool));
        if tool.is_some_and(|name| excluded.iter().any(|excluded| excluded == name)) {
            continue;
        }
        indices.push(index);
    }
    indices
}

/// The tool results a provider's `clear_tool_uses` edit cleared, archived whole from the
/// history the call was sent (W77): the same results [`reconcile`] counts. Nothing for any
/// other edit, or for one that names no count.
pub fn cleared_spans<M: WindowMessage>(
    conversation: &Conversation<M>,
    context: &ProviderContext,
    iteration: u32,
    edit: &AppliedContextEdit,
) -> Vec<crate::archive::ArchivedSpan> {
    let AppliedContextEdit::ClearedToolUses {
        cleared_tool_uses: Some(count),
        ..
    } = edit
    else {
        return Vec::new();
    };
    let excluded: &[String] = match context {
        ProviderContext::AnthropicClearToolUses(settings) => &settings.exclude_tools,
        _ => &[],
    };
    crate::archive::spans_of(
        conversation,
        oldest_tool_result_indices(conversation, *count, excluded),
        crate::archive::Removal::ProviderCleared,
        iteration,
    )
}

impl ClearToolUses {
    /// The tool results the provider is asked to clear from `conversation`, as the local
    /// counter sees them: every result older than the newest `keepToolUses`, but for the
    /// results of `excludeTools`, and none when they hold fewer than `clearAtLeastTokens`.
    /// The trigger is the provider's to judge on its own count and is not applied here. It is
    /// the provider side's half of the twin comparison with `observation-masking` (W86).
    pub fn would_clear<M: WindowMessage>(&self, conversation: &Conversation<M>) -> Vec<usize> {
        let results: Vec<usize> = (0..conversation.len())
            .filter(|index| conversation.messages()[*index].role() == Role::Tool)
            .collect();
        let keep = usize::try_from(self.keep_tool_uses).unwrap_or(usize::MAX);
        let older = results.len().saturating_sub(keep);
        let cleared: Vec<usize> = results[..older]
            .iter()
            .copied()
            .filter(|index| {
                let tool = conversation
                    .meta(*index)
                    .and_then(|meta| conversation.tool_name(meta.tool));
                !tool.is_some_and(|name| self.exclude_tools.iter().any(|excluded| excluded == name))
            })
            .collect();
        let tokens = cleared
            .iter()
            .map(|index| conversation.tokens_in(*index..*index + 1))
            .fold(0u64, u64::saturating_add);
        match self.clear_at_least_tokens {
            Some(minimum) if tokens < minimum => Vec::new(),
            _ => cleared,
        }
    }
}

/// The local half of a provider-side strategy: it never engages, since the provider does the
/// editing; its name goes into the ledger's idle records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderSide {
    name: &'static str,
}

impl ProviderSide {
    /// The local half of `context`.
    pub fn new(context: &ProviderContext) -> Self {
        Self {
            name: context.strategy_name(),
        }
    }
}

impl<M: WindowMessage> WindowStrategy<M> for ProviderSide {
    fn name(&self) -> &str {
        self.name
    }

    fn plan(&self, _visit: &mut Visit<'_, M>) -> Result<Option<Planned<M>>, WindowError> {
        Ok(None)
    }
}

/// Reads `keepThinkingTurns`: a whole number of at least 1, or `"all"`.
pub(crate) fn thinking_keep(value: &Value) -> Result<ThinkingKeep, String> {
    match value {
        Value::String(word) if word == "all" => Ok(ThinkingKeep::All),
        other => match other.as_u64() {
            Some(turns) if turns >= 1 => Ok(ThinkingKeep::Turns(turns)),
            _ => Err(format!(
                "must be a whole number of at least 1 or \"all\", got {}",
                crate::error::describe_value(other)
            )),
        },
    }
}

#[cfg(test)]
mod tests;
