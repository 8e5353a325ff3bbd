//! Choosing and configuring a strategy by configuration: a serde enum read from JSON or TOML.
//! Validation errors name the bad field.
//!
//! Where a local strategy and a provider-side one do the same thing, they take the same key
//! (W86): `observation-masking` and `anthropic-clear-tool-uses` both read `keepToolUses`,
//! `clearAtLeastTokens`, `excludeTools` and `triggerTokens`. A provider key with no local
//! meaning is refused with the reason, never accepted and ignored (W89).
//!
//! ```json
//! {"strategy": "token-budget", "thresholdTokens": 8000, "keepRecentTurns": 6}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::WindowError;
use crate::message::WindowMessage;
use crate::provider::{
    thinking_keep, AnthropicCompact, ClearThinking, ClearToolUses, OpenAiCompaction,
    ProviderContext, ProviderSide, ThinkingKeep, DEFAULT_CLEAR_TOOL_USES_TRIGGER,
    DEFAULT_COMPACT_TRIGGER, DEFAULT_KEEP_THINKING_TURNS, DEFAULT_KEEP_TOOL_USES,
    MIN_COMPACT_TRIGGER,
};
use crate::record::Retain;
use crate::stage::WindowStage;
use crate::strategy::{
    Hybrid, ObservationMasking, SlidingWindow, SummarizeOldest, TokenBudget, WindowStrategy,
    DEFAULT_KEEP_RECENT_OBSERVATIONS, DEFAULT_KEEP_RECENT_TURNS,
};
pub use crate::strategy_docs::{OptionDoc, StrategyDoc, PIN_OPTIONS, STRATEGY_DOCS};
use crate::visit::PinSettings;

pub use crate::cache::CacheGuard;
pub use crate::error::describe_value;

/// The options every local strategy takes, as configured: the pin ceilings (`false` and `0`
/// both turn a pin off, W23), the excluded tools (W87) and the cache guard ([`CacheGuard`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinConfig {
    /// `keepLastToolResults`, default 2.
    pub keep_last_tool_results: usize,
    /// `keepLedgerFacts`, default 4, used only when findings are armed.
    pub keep_ledger_facts: usize,
    /// `excludeTools`: tools whose results no local strategy removes or masks (W87).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_tools: Vec<String>,
    /// `paybackCalls`, `overflowTokens` and `shadow`.
    #[serde(flatten)]
    pub cache: CacheGuard,
}

impl Default for PinConfig {
    fn default() -> Self {
        let defaults = PinSettings::default();
        Self {
            keep_last_tool_results: defaults.keep_last_tool_results,
            keep_ledger_facts: defaults.keep_ledger_facts,
            exclude_tools: defaults.exclude_tools,
            cache: CacheGuard::default(),
        }
    }
}

/// A built-in strategy and its options, as a deployment configures it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "strategy",
    rename_all = "kebab-case",
    try_from = "serde_json::Value"
)]
pub enum StrategyConfig {
    /// Keep the last `keepRecentTurns` turns (required, at least 1).
    #[serde(rename_all = "camelCase")]
    SlidingWindow {
        /// Turns kept.
        keep_recent_turns: usize,
        /// Pin ceilings.
        #[serde(flatten)]
        pins: PinConfig,
    },
    /// Drop the oldest turns until under `thresholdTokens`.
    #[serde(rename_all = "camelCase")]
    TokenBudget {
        /// The threshold, greater than 0.
        threshold_tokens: u64,
        /// Turns kept, default 6.
        keep_recent_turns: usize,
        /// Pin ceilings.
        #[serde(flatten)]
        pins: PinConfig,
    },
    /// Fold the oldest span into a summary when over `thresholdTokens`.
    #[serde(rename_all = "camelCase")]
    SummarizeOldest {
        /// The threshold, greater than 0.
        threshold_tokens: u64,
        /// Turns kept, default 6.
        keep_recent_turns: usize,
        /// The summarizer's model, required and non-empty.
        model: String,
        /// How folded originals are kept, default `conversation`.
        retain: Retain,
        /// Pin ceilings.
        #[serde(flatten)]
        pins: PinConfig,
    },
    /// Mask tool results older than the last `keepRecentObservations` (or `keepToolUses`):
    /// the local twin of `anthropic-clear-tool-uses` (W86).
    #[serde(rename_all = "camelCase")]
    ObservationMasking {
        /// Tool results left as they are, default 10 (`keepToolUses` is the same key).
        keep_recent_observations: usize,
        /// `clearAtLeastTokens`: mask nothing unless the placeholders save at least this many
        /// tokens, counted locally (W88).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clear_at_least_tokens: Option<u64>,
        /// `triggerTokens`: engage only once a fresh reading reaches this many tokens (W88).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger_tokens: Option<u64>,
        /// Pin ceilings (masking removes nothing, so they only matter to custom wiring).
        #[serde(flatten)]
        pins: PinConfig,
    },
    /// Mask first, fold only when masking is not enough.
    #[serde(rename_all = "camelCase")]
    Hybrid {
        /// The threshold, greater than 0.
        threshold_tokens: u64,
        /// Turns kept by the fold, default 6.
        keep_recent_turns: usize,
        /// Tool results left unmasked, default 10 (`keepToolUses` is the same key).
        keep_recent_observations: usize,
        /// `clearAtLeastTokens` of the masking half (W88).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clear_at_least_tokens: Option<u64>,
        /// The summarizer's model, required and non-empty.
        model: String,
        /// How folded originals are kept, default `conversation`.
        retain: Retain,
        /// Pin ceilings.
        #[serde(flatten)]
        pins: PinConfig,
    },
    /// A provider-side strategy: the model API edits the context on its servers, as the
    /// request asks ([`ProviderContext`]); locally nothing is edited, so it takes no pin or
    /// cache-guard options.
    #[serde(untagged)]
    Provider(ProviderContext),
}

/// The strategy names a configuration may give.
pub const STRATEGY_NAMES: [&str; 9] = [
    "sliding-window",
    "token-budget",
    "summarize-oldest",
    "observation-masking",
    "hybrid",
    "anthropic-clear-tool-uses",
    "anthropic-clear-thinking",
    "anthropic-compact",
    "openai-compaction",
];

/// The keys a configuration of `strategy` accepts, `strategy` itself first; empty for an
/// unknown strategy.
pub fn accepted_keys(strategy: &str) -> Vec<&'static str> {
    STRATEGY_DOCS
        .iter()
        .find(|doc| doc.name == strategy)
        .map(|doc| {
            let pins: &[OptionDoc] = if doc.provider_side { &[] } else { &PIN_OPTIONS };
            std::iter::once("strategy")
                .chain(doc.options.iter().map(|option| option.name))
                .chain(pins.iter().map(|option| option.name))
                .collect()
        })
        .unwrap_or_default()
}

impl StrategyConfig {
    /// Reads a configuration from JSON text.
    pub fn from_json(text: &str) -> Result<Self, WindowError> {
        let value: Value =
            serde_json::from_str(text).map_err(|error| invalid("", &json_syntax(&error)))?;
        Self::try_from(value)
    }

    /// The configured strategy's name.
    pub fn strategy_name(&self) -> &'static str {
        match self {
            StrategyConfig::SlidingWindow { .. } => SlidingWindow::NAME,
            StrategyConfig::TokenBudget { .. } => TokenBudget::NAME,
            StrategyConfig::SummarizeOldest { .. } => SummarizeOldest::NAME,
            StrategyConfig::ObservationMasking { .. } => ObservationMasking::NAME,
            StrategyConfig::Hybrid { .. } => Hybrid::NAME,
            StrategyConfig::Provider(context) => context.strategy_name(),
        }
    }

    /// What a provider-side strategy asks of the provider, to render into the request;
    /// `None` for a local strategy.
    pub fn provider_context(&self) -> Option<&ProviderContext> {
        match self {
            StrategyConfig::Provider(context) => Some(context),
            _ => None,
        }
    }

    /// The token threshold of a token-triggered strategy, which engages only on a usage
    /// reading over it; `None` for a strategy that needs no reading.
    pub fn threshold_tokens(&self) -> Option<u64> {
        match self {
            StrategyConfig::TokenBudget {
                threshold_tokens, ..
            }
            | StrategyConfig::SummarizeOldest {
                threshold_tokens, ..
            }
            | StrategyConfig::Hybrid {
                threshold_tokens, ..
            } => Some(*threshold_tokens),
            // A provider-side strategy's trigger is the provider's to check, not the stage's.
            StrategyConfig::SlidingWindow { .. }
            | StrategyConfig::ObservationMasking { .. }
            | StrategyConfig::Provider(_) => None,
        }
    }

    /// True when the strategy's visits can ask the caller for a summary
    /// ([`crate::VisitOutcome::NeedsSummary`]), so the caller must have a summarizer.
    pub fn needs_summarizer(&self) -> bool {
        matches!(
            self,
            StrategyConfig::SummarizeOldest { .. } | StrategyConfig::Hybrid { .. }
        )
    }

    /// The pin ceilings (the defaults for a provider-side strategy, which edits nothing).
    pub fn pins(&self) -> PinSettings {
        let pins = match self {
            StrategyConfig::SlidingWindow { pins, .. }
            | StrategyConfig::TokenBudget { pins, .. }
            | StrategyConfig::SummarizeOldest { pins, .. }
            | StrategyConfig::ObservationMasking { pins, .. }
            | StrategyConfig::Hybrid { pins, .. } => pins.clone(),
            StrategyConfig::Provider(_) => PinConfig::default(),
        };
        PinSettings {
            keep_last_tool_results: pins.keep_last_tool_results,
            keep_ledger_facts: pins.keep_ledger_facts,
            exclude_tools: pins.exclude_tools,
        }
    }

    /// The cache guard every local strategy takes (none for a provider-side one).
    pub fn cache_guard(&self) -> CacheGuard {
        match self {
            StrategyConfig::SlidingWindow { pins, .. }
            | StrategyConfig::TokenBudget { pins, .. }
            | StrategyConfig::SummarizeOldest { pins, .. }
            | StrategyConfig::ObservationMasking { pins, .. }
            | StrategyConfig::Hybrid { pins, .. } => pins.cache,
            StrategyConfig::Provider(_) => CacheGuard::default(),
        }
    }

    /// Builds the strategy. A summarizing strategy writes no summary itself: its visits ask
    /// the caller for one (see [`StrategyConfig::needs_summarizer`]).
    pub fn build<M: WindowMessage + 'static>(
        &self,
    ) -> Result<Box<dyn WindowStrategy<M>>, WindowError> {
        Ok(match self {
            StrategyConfig::SlidingWindow {
                keep_recent_turns, ..
            } => Box::new(SlidingWindow::new(*keep_recent_turns)?),
            StrategyConfig::TokenBudget {
                threshold_tokens,
                keep_recent_turns,
                ..
            } => Box::new(TokenBudget::with_keep_recent_turns(
                *threshold_tokens,
                *keep_recent_turns,
            )?),
            StrategyConfig::SummarizeOldest {
                threshold_tokens,
                keep_recent_turns,
                model,
                retain,
                ..
            } => Box::new(
                SummarizeOldest::new(*threshold_tokens, model.clone())?
                    .keep_recent_turns(*keep_recent_turns)?
                    .retain(*retain),
            ),
            StrategyConfig::ObservationMasking {
                keep_recent_observations,
                clear_at_least_tokens,
                trigger_tokens,
                ..
            } => Box::new(
                ObservationMasking::new(*keep_recent_observations)
                    .with_clear_at_least_tokens(*clear_at_least_tokens)
                    .with_trigger_tokens(*trigger_tokens),
            ),
            StrategyConfig::Hybrid {
                threshold_tokens,
                keep_recent_turns,
                keep_recent_observations,
                clear_at_least_tokens,
                model,
                retain,
                ..
            } => {
                let summarize = SummarizeOldest::new(*threshold_tokens, model.clone())?
                    .keep_recent_turns(*keep_recent_turns)?
                    .retain(*retain);
                Box::new(
                    Hybrid::new(*keep_recent_observations, summarize)
                        .with_clear_at_least_tokens(*clear_at_least_tokens),
                )
            }
            StrategyConfig::Provider(context) => Box::new(ProviderSide::new(context)),
        })
    }

    /// Builds the whole stage: the strategy and the configured pin ceilings.
    pub fn build_stage<M: WindowMessage + 'static>(&self) -> Result<WindowStage<M>, WindowError> {
        Ok(WindowStage::with_pins(self.build()?, self.pins()).with_cache_guard(self.cache_guard()))
    }
}

/// A JSON syntax error with one position, the file's line, and no serde wording around it.
pub fn json_syntax(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let reason = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(reason, _)| reason);
    format!(
        "line {}: {reason} (column {})",
        error.line(),
        error.column()
    )
}

fn invalid(field: &str, reason: &dyn std::fmt::Display) -> WindowError {
    WindowError::InvalidConfig {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// Reads fields out of the configuration object, remembering which were used so an unknown
/// field can be named.
struct Fields {
    map: Map<String, Value>,
}

impl Fields {
    fn take(&mut self, field: &str) -> Option<Value> {
        self.map.remove(field)
    }

    fn whole(&mut self, field: &str, min: u64, default: Option<u64>) -> Result<u64, WindowError> {
        match self.take(field) {
            None => default.ok_or_else(|| invalid(field, &"is required and has no default")),
            Some(value) => match value.as_u64() {
                Some(number) if number >= min => Ok(number),
                _ => Err(invalid(
                    field,
                    &format!(
                        "must be a whole number of at least {min}, got {}",
                        describe_value(&value)
                    ),
                )),
            },
        }
    }

    fn count(&mut self, field: &str, min: u64, default: Option<u64>) -> Result<usize, WindowError> {
        let number = self.whole(field, min, default)?;
        usize::try_from(number).map_err(|_| invalid(field, &"is too large"))
    }

    fn pin_limit(&mut self, field: &str, default: usize) -> Result<usize, WindowError> {
        match self.take(field) {
            None => Ok(default),
            Some(Value::Bool(false)) => Ok(0),
            Some(value) => value
                .as_u64()
                .and_then(|number| usize::try_from(number).ok())
                .ok_or_else(|| {
                    invalid(
                        field,
                        &format!(
                            "must be false or a whole number of at least 0, got {}",
                            describe_value(&value)
                        ),
                    )
                }),
        }
    }

    fn model(&mut self) -> Result<String, WindowError> {
        match self.take("model") {
            Some(Value::String(model)) if !model.trim().is_empty() => Ok(model),
            Some(value) => Err(invalid(
                "model",
                &format!("must be a non-empty string, got {}", describe_value(&value)),
            )),
            None => Err(invalid(
                "model",
                &"is required for a summarizing strategy; it never falls back to the agent's model",
            )),
        }
    }

    fn retain(&mut self) -> Result<Retain, WindowError> {
        match self.take("retain") {
            None => Ok(Retain::Conversation),
            Some(Value::String(text)) if text == "conversation" => Ok(Retain::Conversation),
            Some(Value::String(text)) if text == "discard" => Ok(Retain::Discard),
            Some(value) => Err(invalid(
                "retain",
                &format!(
                    "must be \"conversation\" or \"discard\", got {}",
                    describe_value(&value)
                ),
            )),
        }
    }

    fn pins(&mut self) -> Result<PinConfig, WindowError> {
        let defaults = PinConfig::default();
        // A provider key with no local meaning is refused with its reason before the keys a
        // local strategy takes are read, so it never reads as merely unknown (W89).
        if self.map.contains_key("keepThinkingTurns") {
            return Err(invalid(
                "keepThinkingTurns",
                &"has nothing to clear under a local strategy: the local history keeps no \
                  thinking (the own loop does not store the model's thinking blocks), so only \
                  the provider can clear it; use the `anthropic-clear-thinking` strategy",
            ));
        }
        Ok(PinConfig {
            keep_last_tool_results: self
                .pin_limit("keepLastToolResults", defaults.keep_last_tool_results)?,
            keep_ledger_facts: self.pin_limit("keepLedgerFacts", defaults.keep_ledger_facts)?,
            exclude_tools: self.names("excludeTools")?,
            cache: CacheGuard {
                payback_calls: self.optional_whole("paybackCalls", 1)?,
                overflow_tokens: self.optional_whole("overflowTokens", 1)?,
                shadow: self.flag("shadow")?,
            },
        })
    }

    /// The number of recent tool results kept, under either of its names (W86):
    /// `keepRecentObservations` or Anthropic's `keepToolUses`. Both may be given only with
    /// the same value.
    fn keep_tool_uses(&mut self) -> Result<usize, WindowError> {
        let local = self.optional_whole("keepRecentObservations", 0)?;
        let anthropic = self.optional_whole("keepToolUses", 0)?;
        let kept = match (local, anthropic) {
            (Some(local), Some(anthropic)) if local != anthropic => {
                return Err(invalid(
                    "keepToolUses",
                    &format!(
                        "means the same as keepRecentObservations (the most recent tool results \
                         left as they are), which is {local}; give one of the two, or both \
                         with the same value, not {anthropic}"
                    ),
                ));
            }
            (Some(kept), _) | (None, Some(kept)) => kept,
            (None, None) => DEFAULT_KEEP_RECENT_OBSERVATIONS as u64,
        };
        usize::try_from(kept).map_err(|_| invalid("keepToolUses", &"is too large"))
    }

    /// `clearToolInputs` under a local strategy (W89): `false` is what masking does; `true`
    /// cannot be done locally and is refused rather than ignored.
    fn local_clear_tool_inputs(&mut self) -> Result<(), WindowError> {
        if self.flag("clearToolInputs")? {
            return Err(invalid(
                "clearToolInputs",
                &"cannot be true under a local strategy: the local window edits only a \
                  message's content (a tool result's text), and a call's arguments are neither \
                  counted nor rewritten by any window edit, so the calls would stay whole; use \
                  the `anthropic-clear-tool-uses` strategy to clear them, or give false",
            ));
        }
        Ok(())
    }

    fn optional_whole(&mut self, field: &str, min: u64) -> Result<Option<u64>, WindowError> {
        if self.map.contains_key(field) {
            self.whole(field, min, None).map(Some)
        } else {
            Ok(None)
        }
    }

    fn flag(&mut self, field: &str) -> Result<bool, WindowError> {
        match self.take(field) {
            None => Ok(false),
            Some(Value::Bool(flag)) => Ok(flag),
            Some(value) => Err(invalid(
                field,
                &format!("must be true or false, got {}", describe_value(&value)),
            )),
        }
    }

    /// An optional non-empty string.
    fn text(&mut self, field: &str) -> Result<Option<String>, WindowError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::String(text)) if !text.trim().is_empty() => Ok(Some(text)),
            Some(value) => Err(invalid(
                field,
                &format!("must be a non-empty string, got {}", describe_value(&value)),
            )),
        }
    }

    /// An optional list of non-empty names, empty when absent.
    fn names(&mut self, field: &str) -> Result<Vec<String>, WindowError> {
        let bad = |value: &Value| {
            invalid(
                field,
                &format!(
                    "must be a list of non-empty strings, got {}",
                    describe_value(value)
                ),
            )
        };
        match self.take(field) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(name) if !name.trim().is_empty() => Ok(name.clone()),
                    other => Err(bad(other)),
                })
                .collect(),
            Some(value) => Err(bad(&value)),
        }
    }

    fn finish(self, strategy: &str) -> Result<(), WindowError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(field) => Err(invalid(
                field,
                &format!(
                    "is not an option of the `{strategy}` strategy; it takes {}",
                    accepted_keys(strategy).join(", ")
                ),
            )),
        }
    }
}

impl TryFrom<Value> for StrategyConfig {
    type Error = WindowError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        let map = match value {
            Value::Object(map) => map,
            other => {
                return Err(invalid(
                    "",
                    &format!(
                        "the configuration must be an object (a table), got {}",
                        describe_value(&other)
                    ),
                ));
            }
        };
        let mut fields = Fields { map };
        let strategy = match fields.take("strategy") {
            Some(Value::String(name)) => name,
            Some(other) => {
                return Err(invalid(
                    "strategy",
                    &format!("must be a string, got {}", describe_value(&other)),
                ));
            }
            None => {
                return Err(invalid(
                    "strategy",
                    &format!("is required; one of {}", STRATEGY_NAMES.join(", ")),
                ));
            }
        };
        let default_turns = Some(DEFAULT_KEEP_RECENT_TURNS as u64);
        let config = match strategy.as_str() {
            "sliding-window" => StrategyConfig::SlidingWindow {
                keep_recent_turns: fields.count("keepRecentTurns", 1, None)?,
                pins: fields.pins()?,
            },
            "token-budget" => StrategyConfig::TokenBudget {
                threshold_tokens: fields.whole("thresholdTokens", 1, None)?,
                keep_recent_turns: fields.count("keepRecentTurns", 1, default_turns)?,
                pins: fields.pins()?,
            },
            "summarize-oldest" => StrategyConfig::SummarizeOldest {
                threshold_tokens: fields.whole("thresholdTokens", 1, None)?,
                keep_recent_turns: fields.count("keepRecentTurns", 1, default_turns)?,
                model: fields.model()?,
                retain: fields.retain()?,
                pins: fields.pins()?,
            },
            "observation-masking" => {
                let pins = fields.pins()?;
                fields.local_clear_tool_inputs()?;
                StrategyConfig::ObservationMasking {
                    keep_recent_observations: fields.keep_tool_uses()?,
                    clear_at_least_tokens: fields.optional_whole("clearAtLeastTokens", 1)?,
                    trigger_tokens: fields.optional_whole("triggerTokens", 1)?,
                    pins,
                }
            }
            "hybrid" => {
                let pins = fields.pins()?;
                fields.local_clear_tool_inputs()?;
                StrategyConfig::Hybrid {
                    threshold_tokens: fields.whole("thresholdTokens", 1, None)?,
                    keep_recent_turns: fields.count("keepRecentTurns", 1, default_turns)?,
                    keep_recent_observations: fields.keep_tool_uses()?,
                    clear_at_least_tokens: fields.optional_whole("clearAtLeastTokens", 1)?,
                    model: fields.model()?,
                    retain: fields.retain()?,
                    pins,
                }
            }
            "anthropic-clear-tool-uses" => {
                StrategyConfig::Provider(ProviderContext::AnthropicClearToolUses(ClearToolUses {
                    trigger_tokens: fields.whole(
                        "triggerTokens",
                        1,
                        Some(DEFAULT_CLEAR_TOOL_USES_TRIGGER),
                    )?,
                    keep_tool_uses: fields.whole(
                        "keepToolUses",
                        0,
                        Some(DEFAULT_KEEP_TOOL_USES),
                    )?,
                    clear_at_least_tokens: fields.optional_whole("clearAtLeastTokens", 1)?,
                    exclude_tools: fields.names("excludeTools")?,
                    clear_tool_inputs: fields.flag("clearToolInputs")?,
                }))
            }
            "anthropic-clear-thinking" => {
                StrategyConfig::Provider(ProviderContext::AnthropicClearThinking(ClearThinking {
                    keep_thinking_turns: match fields.take("keepThinkingTurns") {
                        None => ThinkingKeep::Turns(DEFAULT_KEEP_THINKING_TURNS),
                        Some(value) => thinking_keep(&value)
                            .map_err(|reason| invalid("keepThinkingTurns", &reason))?,
                    },
                }))
            }
            "anthropic-compact" => {
                StrategyConfig::Provider(ProviderContext::AnthropicCompact(AnthropicCompact {
                    trigger_tokens: fields.whole(
                        "triggerTokens",
                        MIN_COMPACT_TRIGGER,
                        Some(DEFAULT_COMPACT_TRIGGER),
                    )?,
                    instructions: fields.text("instructions")?,
                    pause_after_compaction: fields.flag("pauseAfterCompaction")?,
                }))
            }
            "openai-compaction" => {
                StrategyConfig::Provider(ProviderContext::OpenAiCompaction(OpenAiCompaction {
                    compact_threshold: fields.whole("compactThreshold", 1, None)?,
                }))
            }
            other => {
                return Err(invalid(
                    "strategy",
                    &format!(
                        "unknown strategy `{other}`; one of {}",
                        STRATEGY_NAMES.join(", ")
                    ),
                ));
            }
        };
        fields.finish(&strategy)?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_options(doc: &StrategyDoc) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("strategy".into(), Value::String(doc.name.into()));
        let pins: &[OptionDoc] = if doc.provider_side { &[] } else { &PIN_OPTIONS };
        for option in doc.options.iter().chain(pins.iter()) {
            let value = serde_json::from_str(option.example).unwrap_or(Value::Null);
            map.insert(option.name.into(), value);
        }
        map
    }

    #[test]
    fn the_documented_strategies_are_the_parsed_ones() {
        let documented: Vec<&str> = STRATEGY_DOCS.iter().map(|doc| doc.name).collect();
        assert_eq!(documented, STRATEGY_NAMES);
    }

    /// The help text and the unknown-key error list what the parser takes, no more, no less.
    #[test]
    fn every_documented_option_parses_and_no_other_does() {
        let every_name: Vec<&str> = STRATEGY_DOCS
            .iter()
            .flat_map(|doc| doc.options.iter().map(|option| option.name))
            .chain(PIN_OPTIONS.iter().map(|option| option.name))
            .collect();
        for doc in &STRATEGY_DOCS {
            let parsed = StrategyConfig::try_from(Value::Object(all_options(doc)));
            let parsed = parsed.map_err(|error| format!("{}: {error}", doc.name));
            assert_eq!(
                parsed.map(|config| config.threshold_tokens().is_some()),
                Ok(doc.token_triggered),
                "{}",
                doc.name
            );
            for name in &every_name {
                if accepted_keys(doc.name).contains(name) {
                    continue;
                }
                let mut map = all_options(doc);
                map.insert((*name).into(), Value::from(1));
                let error = StrategyConfig::try_from(Value::Object(map));
                assert!(
                    matches!(&error, Err(WindowError::InvalidConfig { field, .. }) if field == name),
                    "{}: {name}: {error:?}",
                    doc.name
                );
            }
        }
    }

    /// A row's expectation: parsed, or refused naming a field with a fragment of the reason.
    type Expected = Result<(), (&'static str, &'static str)>;

    /// W86–W89: the Anthropic-named keys of the local strategies, accepted where they mean
    /// the same thing and refused, naming the field and the reason, where they do not.
    #[test]
    fn anthropic_keys_parse_or_are_refused_naming_the_field() {
        // (rule, configuration, Ok, or the field and a fragment of the reason)
        let rows: [(&str, &str, Expected); 16] = [
            (
                "W86",
                r#"{"strategy":"observation-masking","keepToolUses":3}"#,
                Ok(()),
            ),
            (
                "W86",
                r#"{"strategy":"observation-masking","keepToolUses":3,"keepRecentObservations":3}"#,
                Ok(()),
            ),
            (
                "W86",
                r#"{"strategy":"observation-masking","keepToolUses":3,"keepRecentObservations":4}"#,
                Err(("keepToolUses", "means the same as keepRecentObservations")),
            ),
            (
                "W86",
                r#"{"strategy":"hybrid","thresholdTokens":9,"model":"m","keepToolUses":-1}"#,
                Err(("keepToolUses", "whole number")),
            ),
            (
                "W87",
                r#"{"strategy":"token-budget","thresholdTokens":9,"excludeTools":["read_file"]}"#,
                Ok(()),
            ),
            (
                "W87",
                r#"{"strategy":"sliding-window","keepRecentTurns":2,"excludeTools":"read_file"}"#,
                Err(("excludeTools", "list of non-empty strings")),
            ),
            (
                "W87",
                r#"{"strategy":"summarize-oldest","thresholdTokens":9,"model":"m","excludeTools":[""]}"#,
                Err(("excludeTools", "list of non-empty strings")),
            ),
            (
                "W88",
                r#"{"strategy":"observation-masking","clearAtLeastTokens":0}"#,
                Err(("clearAtLeastTokens", "at least 1")),
            ),
            (
                "W88",
                r#"{"strategy":"observation-masking","triggerTokens":"soon"}"#,
                Err(("triggerTokens", "at least 1")),
            ),
            (
                "W88",
                r#"{"strategy":"hybrid","thresholdTokens":9,"model":"m","triggerTokens":5}"#,
                Err(("triggerTokens", "not an option of the `hybrid` strategy")),
            ),
            (
                "W88",
                r#"{"strategy":"token-budget","thresholdTokens":9,"clearAtLeastTokens":5}"#,
                Err(("clearAtLeastTokens", "not an option")),
            ),
            (
                "W89",
                r#"{"strategy":"observation-masking","clearToolInputs":false}"#,
                Ok(()),
            ),
            (
                "W89",
                r#"{"strategy":"observation-masking","clearToolInputs":true}"#,
                Err(("clearToolInputs", "cannot be true under a local strategy")),
            ),
            (
                "W89",
                r#"{"strategy":"hybrid","thresholdTokens":9,"model":"m","clearToolInputs":"yes"}"#,
                Err(("clearToolInputs", "true or false")),
            ),
            (
                "W89",
                r#"{"strategy":"observation-masking","keepThinkingTurns":1}"#,
                Err(("keepThinkingTurns", "the local history keeps no thinking")),
            ),
            (
                "W89",
                r#"{"strategy":"sliding-window","keepRecentTurns":2,"keepThinkingTurns":"all"}"#,
                Err(("keepThinkingTurns", "anthropic-clear-thinking")),
            ),
        ];
        for (rule, json, expected) in rows {
            let parsed = StrategyConfig::from_json(json);
            match (expected, parsed) {
                (Ok(()), Ok(_)) => {}
                (
                    Err((field, fragment)),
                    Err(WindowError::InvalidConfig { field: got, reason }),
                ) => {
                    assert_eq!(got, field, "{rule}: {json}: {reason}");
                    assert!(reason.contains(fragment), "{rule}: {json}: {reason}");
                }
                (expected, parsed) => {
                    panic!("{rule}: {json}: expected {expected:?}, got {parsed:?}")
                }
            }
        }
    }

    /// Every new key survives writing the configuration out and reading it back.
    #[test]
    fn configurations_with_the_anthropic_keys_round_trip() {
        let configurations = [
            r#"{"strategy":"observation-masking","keepToolUses":3,"clearAtLeastTokens":2000,"triggerTokens":30000,"excludeTools":["read_file","grep"],"clearToolInputs":false}"#,
            r#"{"strategy":"hybrid","thresholdTokens":9,"model":"m","keepToolUses":0,"clearAtLeastTokens":1,"excludeTools":["ls"]}"#,
            r#"{"strategy":"sliding-window","keepRecentTurns":2,"excludeTools":["read_file"]}"#,
            r#"{"strategy":"anthropic-clear-tool-uses","keepToolUses":3,"clearAtLeastTokens":2000,"excludeTools":["read_file"],"clearToolInputs":true}"#,
        ];
        for json in configurations {
            let parsed =
                StrategyConfig::from_json(json).map_err(|error| format!("{json}: {error}"));
            let read_back = parsed.clone().and_then(|config| {
                let written = serde_json::to_value(&config).map_err(|error| error.to_string())?;
                StrategyConfig::try_from(written.clone())
                    .map_err(|error| format!("{json} wrote {written}: {error}"))
            });
            assert!(parsed.is_ok(), "{parsed:?}");
            assert_eq!(read_back, parsed, "{json}");
        }
        let excluded =
            StrategyConfig::from_json(configurations[2]).map(|config| config.pins().exclude_tools);
        assert_eq!(excluded, Ok(vec!["read_file".to_string()]));
    }

    #[test]
    fn values_are_described_as_written() {
        let cases = [
            ("18446744073709551615", "18446744073709551615"),
            ("-3", "-3"),
            ("2.5", "2.5"),
            (
                "18446744073709551616",
                "a number larger than 18446744073709551615 (the largest accepted)",
            ),
            ("\"six\"", "the string \"six\""),
            ("[1]", "a list"),
        ];
        for (json, described) in cases {
            let value: Value = serde_json::from_str(json).unwrap_or(Value::Null);
            assert_eq!(describe_value(&value), described, "{json}");
        }
    }
}
