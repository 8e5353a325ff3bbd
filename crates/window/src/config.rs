//! Choosing and configuring a strategy by configuration: a serde enum read from JSON or TOML.
//! Validation errors name the bad field.
//!
//! ```json
//! {"strategy": "token-budget", "thresholdTokens": 8000, "keepRecentTurns": 6}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::WindowError;
use crate::message::WindowMessage;
use crate::record::Retain;
use crate::stage::WindowStage;
use crate::strategy::{
    Hybrid, ObservationMasking, SlidingWindow, SummarizeOldest, TokenBudget, WindowStrategy,
    DEFAULT_KEEP_RECENT_OBSERVATIONS, DEFAULT_KEEP_RECENT_TURNS,
};
use crate::visit::PinSettings;

/// The pin ceilings as configured. `false` and `0` both turn a pin off (W23).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinConfig {
    /// `keepLastToolResults`, default 2.
    pub keep_last_tool_results: usize,
    /// `keepLedgerFacts`, default 4, used only when findings are armed.
    pub keep_ledger_facts: usize,
}

impl Default for PinConfig {
    fn default() -> Self {
        let defaults = PinSettings::default();
        Self {
            keep_last_tool_results: defaults.keep_last_tool_results,
            keep_ledger_facts: defaults.keep_ledger_facts,
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
    /// Mask tool results older than the last `keepRecentObservations`.
    #[serde(rename_all = "camelCase")]
    ObservationMasking {
        /// Tool results left as they are, default 10.
        keep_recent_observations: usize,
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
        /// Tool results left unmasked, default 10.
        keep_recent_observations: usize,
        /// The summarizer's model, required and non-empty.
        model: String,
        /// How folded originals are kept, default `conversation`.
        retain: Retain,
        /// Pin ceilings.
        #[serde(flatten)]
        pins: PinConfig,
    },
}

/// The strategy names a configuration may give.
pub const STRATEGY_NAMES: [&str; 5] = [
    "sliding-window",
    "token-budget",
    "summarize-oldest",
    "observation-masking",
    "hybrid",
];

impl StrategyConfig {
    /// Reads a configuration from JSON text.
    pub fn from_json(text: &str) -> Result<Self, WindowError> {
        let value: Value = serde_json::from_str(text).map_err(|error| invalid("", &error))?;
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

    /// The pin ceilings.
    pub fn pins(&self) -> PinSettings {
        let pins = match self {
            StrategyConfig::SlidingWindow { pins, .. }
            | StrategyConfig::TokenBudget { pins, .. }
            | StrategyConfig::SummarizeOldest { pins, .. }
            | StrategyConfig::ObservationMasking { pins, .. }
            | StrategyConfig::Hybrid { pins, .. } => *pins,
        };
        PinSettings {
            keep_last_tool_results: pins.keep_last_tool_results,
            keep_ledger_facts: pins.keep_ledger_facts,
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
                ..
            } => Box::new(ObservationMasking::new(*keep_recent_observations)),
            StrategyConfig::Hybrid {
                threshold_tokens,
                keep_recent_turns,
                keep_recent_observations,
                model,
                retain,
                ..
            } => {
                let summarize = SummarizeOldest::new(*threshold_tokens, model.clone())?
                    .keep_recent_turns(*keep_recent_turns)?
                    .retain(*retain);
                Box::new(Hybrid::new(*keep_recent_observations, summarize))
            }
        })
    }

    /// Builds the whole stage: the strategy and the configured pin ceilings.
    pub fn build_stage<M: WindowMessage + 'static>(&self) -> Result<WindowStage<M>, WindowError> {
        Ok(WindowStage::with_pins(self.build()?, self.pins()))
    }
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
                    &format!("must be a whole number of at least {min}, got {value}"),
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
                        &format!("must be false or a whole number of at least 0, got {value}"),
                    )
                }),
        }
    }

    fn model(&mut self) -> Result<String, WindowError> {
        match self.take("model") {
            Some(Value::String(model)) if !model.trim().is_empty() => Ok(model),
            Some(value) => Err(invalid(
                "model",
                &format!("must be a non-empty string, got {value}"),
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
                &format!("must be \"conversation\" or \"discard\", got {value}"),
            )),
        }
    }

    fn pins(&mut self) -> Result<PinConfig, WindowError> {
        let defaults = PinConfig::default();
        Ok(PinConfig {
            keep_last_tool_results: self
                .pin_limit("keepLastToolResults", defaults.keep_last_tool_results)?,
            keep_ledger_facts: self.pin_limit("keepLedgerFacts", defaults.keep_ledger_facts)?,
        })
    }

    fn finish(self, strategy: &str) -> Result<(), WindowError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(field) => Err(invalid(
                field,
                &format!("is not an option of the `{strategy}` strategy"),
            )),
        }
    }
}

impl TryFrom<Value> for StrategyConfig {
    type Error = WindowError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        let Value::Object(map) = value else {
            return Err(invalid("", &"the configuration must be an object"));
        };
        let mut fields = Fields { map };
        let strategy = match fields.take("strategy") {
            Some(Value::String(name)) => name,
            Some(other) => {
                return Err(invalid(
                    "strategy",
                    &format!("must be a string, got {other}"),
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
        let default_observations = Some(DEFAULT_KEEP_RECENT_OBSERVATIONS as u64);
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
            "observation-masking" => StrategyConfig::ObservationMasking {
                keep_recent_observations: fields.count(
                    "keepRecentObservations",
                    0,
                    default_observations,
                )?,
                pins: fields.pins()?,
            },
            "hybrid" => StrategyConfig::Hybrid {
                threshold_tokens: fields.whole("thresholdTokens", 1, None)?,
                keep_recent_turns: fields.count("keepRecentTurns", 1, default_turns)?,
                keep_recent_observations: fields.count(
                    "keepRecentObservations",
                    0,
                    default_observations,
                )?,
                model: fields.model()?,
                retain: fields.retain()?,
                pins: fields.pins()?,
            },
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
