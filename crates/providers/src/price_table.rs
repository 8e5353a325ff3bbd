//! Prices per model, as data, to estimate the cost of a session whose CLI reports none (Codex,
//! Gemini CLI).

use panewise_protocol::SessionStats;
use serde::{Deserialize, Serialize};

use crate::error::PriceTableError;
use crate::model_table::best_match;

/// The built-in table: `data/prices.json`, seeded from the public price list LiteLLM and
/// ccusage ship (its `source` says which snapshot).
const BUILT_IN: &str = include_str!("../data/prices.json");

/// Tokens in a million: prices are per million tokens.
const PER_MILLION: f64 = 1_000_000.0;

/// US dollar prices per million tokens, per model.
///
/// Models are matched as in the [`ModelTable`](crate::ModelTable): exact ids or prefixes ending
/// in `*`, ASCII case ignored, the most specific pattern wins. A user file overrides the
/// built-in table row by row ([`PriceTable::overridden_by`]).
///
/// ```
/// use panewise_providers::{PriceTable, SessionStats};
///
/// let table = PriceTable::built_in().overridden_by(PriceTable::from_json(
///     r#"{"prices":[{"model":"my-model*","input":1.0,"output":2.0}]}"#,
/// )?);
/// let turn = SessionStats { input_tokens: Some(1_000_000), output_tokens: Some(500_000), ..Default::default() };
/// assert_eq!(table.estimate("my-model-v2", &turn), Some(2.0));
/// assert_eq!(table.estimate("no-such-model", &turn), None);
/// # Ok::<(), panewise_providers::PriceTableError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    /// Where the prices come from, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// One row per model pattern.
    #[serde(default)]
    pub prices: Vec<ModelPrice>,
}

/// The prices of one model (or model pattern), in US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// An exact model id, or a prefix followed by `*`.
    pub model: String,
    /// Input tokens neither read from nor written to the cache.
    pub input: f64,
    /// Output tokens (reasoning tokens too, unless `reasoning` is set).
    pub output: f64,
    /// Input tokens read from the cache; the input price when absent (no discount).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Input tokens written to the cache; the input price when absent (no surcharge). For
    /// Anthropic, the five-minute cache's writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Input tokens written to the cache to be kept for an hour (Anthropic's one-hour cache,
    /// `SessionStats::cache_write_1h_input_tokens`); twice the input price when absent, which
    /// is Anthropic's price for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
    /// Reasoning tokens, when they are priced apart from other output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<f64>,
}

/// The cost of some usage by kind of token, in US dollars: the parts add up to `total_usd`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CostSplit {
    /// Input tokens neither read from nor written to the cache.
    pub input_usd: f64,
    /// Input tokens read from the cache.
    pub cache_read_usd: f64,
    /// Input tokens written to the five-minute cache (every write, where the provider does not
    /// tell the one-hour ones apart).
    pub cache_write_5m_usd: f64,
    /// Input tokens written to the one-hour cache.
    pub cache_write_1h_usd: f64,
    /// Output tokens, reasoning included.
    pub output_usd: f64,
    /// The sum of the parts.
    pub total_usd: f64,
}

impl CostSplit {
    /// The sum of two splits, part by part (a session's total from its calls').
    pub fn plus(&self, other: &CostSplit) -> CostSplit {
        CostSplit {
            input_usd: self.input_usd + other.input_usd,
            cache_read_usd: self.cache_read_usd + other.cache_read_usd,
            cache_write_5m_usd: self.cache_write_5m_usd + other.cache_write_5m_usd,
            cache_write_1h_usd: self.cache_write_1h_usd + other.cache_write_1h_usd,
            output_usd: self.output_usd + other.output_usd,
            total_usd: self.total_usd + other.total_usd,
        }
    }
}

impl PriceTable {
    /// The table this crate ships with.
    pub fn built_in() -> Self {
        // The constant is tested to parse; an empty table (every cost unknown) is the fallback.
        Self::from_json(BUILT_IN).unwrap_or_default()
    }

    /// Reads a table of the shape `{"source": "…", "prices": [{"model": "gpt-5*", "input": 1.25,
    /// "output": 10, "cached_input": 0.125}]}`. Unknown keys and prices that are negative or not
    /// finite are refused, naming the model and the field.
    pub fn from_json(text: &str) -> Result<Self, PriceTableError> {
        let table: PriceTable = serde_json::from_str(text)?;
        for row in &table.prices {
            row.validate()?;
        }
        Ok(table)
    }

    /// This table with `overrides` laid over it: a row for the same pattern replaces this
    /// table's.
    pub fn overridden_by(mut self, overrides: PriceTable) -> Self {
        for row in overrides.prices {
            self.prices
                .retain(|existing| !existing.model.eq_ignore_ascii_case(&row.model));
            self.prices.push(row);
        }
        if overrides.source.is_some() {
            self.source = overrides.source;
        }
        self
    }

    /// The prices of `model`, if a row matches it.
    pub fn price_for(&self, model: &str) -> Option<&ModelPrice> {
        best_match(&self.prices, |row| &row.model, model)
    }

    /// The estimated cost in US dollars of `usage` on `model`; `None` when the model has no price.
    pub fn estimate(&self, model: &str, usage: &SessionStats) -> Option<f64> {
        self.price_for(model).map(|price| price.cost_of(usage))
    }

    /// The estimated cost of `usage` on `model` by kind of token (fresh input, cache reads,
    /// five-minute and one-hour cache writes, output), as ccusage splits it; `None` when the
    /// model has no price, never a split of zeros.
    pub fn split(&self, model: &str, usage: &SessionStats) -> Option<CostSplit> {
        self.price_for(model).map(|price| price.split_of(usage))
    }
}

impl ModelPrice {
    /// The cost of `usage` at these prices: [`ModelPrice::split_of`]'s total.
    pub fn cost_of(&self, usage: &SessionStats) -> f64 {
        self.split_of(usage).total_usd
    }

    /// The cost of `usage` at these prices, by kind of token. Reasoning tokens are part of the
    /// output tokens (the vocabulary's convention), so only a separate reasoning price changes
    /// their cost, which stays in the output part. The one-hour part of the cache writes (never
    /// more than the writes) is priced at `cache_write_1h`, the rest of them at `cache_write`.
    /// A count that is not reported costs nothing: the figures say what was billed.
    pub fn split_of(&self, usage: &SessionStats) -> CostSplit {
        let tokens = |count: Option<u64>| count.unwrap_or(0) as f64;
        let output = usage.output_tokens.unwrap_or(0);
        let reasoning = usage.reasoning_tokens.unwrap_or(0).min(output);
        let writes = usage.cache_write_input_tokens.unwrap_or(0);
        let hour_writes = usage.cache_write_1h_input_tokens.unwrap_or(0).min(writes);
        // In micro-dollars (prices are per million tokens), divided once at the end so the
        // total is the figure `cost_of` always gave.
        let input = tokens(usage.input_tokens) * self.input;
        let cache_read =
            tokens(usage.cached_input_tokens) * self.cached_input.unwrap_or(self.input);
        let cache_write_5m = (writes - hour_writes) as f64 * self.cache_write.unwrap_or(self.input);
        let cache_write_1h = hour_writes as f64 * self.cache_write_1h.unwrap_or(2.0 * self.input);
        let other_output = (output - reasoning) as f64 * self.output;
        let reasoning = reasoning as f64 * self.reasoning.unwrap_or(self.output);
        CostSplit {
            input_usd: input / PER_MILLION,
            cache_read_usd: cache_read / PER_MILLION,
            cache_write_5m_usd: cache_write_5m / PER_MILLION,
            cache_write_1h_usd: cache_write_1h / PER_MILLION,
            output_usd: (other_output + reasoning) / PER_MILLION,
            total_usd: (input
                + cache_read
                + cache_write_5m
                + cache_write_1h
                + other_output
                + reasoning)
                / PER_MILLION,
        }
    }

    fn validate(&self) -> Result<(), PriceTableError> {
        let fields = [
            ("input", Some(self.input)),
            ("output", Some(self.output)),
            ("cached_input", self.cached_input),
            ("cache_write", self.cache_write),
            ("cache_write_1h", self.cache_write_1h),
            ("reasoning", self.reasoning),
        ];
        for (field, value) in fields {
            if let Some(value) = value {
                if !value.is_finite() || value < 0.0 {
                    return Err(PriceTableError::BadPrice {
                        model: self.model.clone(),
                        field,
                        value: value.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_table_parses_and_prices_the_fixture_models() {
        let table = PriceTable::built_in();
        assert!(table.prices.len() > 100, "{}", table.prices.len());
        assert!(table.source.is_some());
        // Codex's default model and Gemini CLI's routing model are priced; the Gemini main
        // model of the captures and Claude Code's model are newer than the list.
        assert!(table.price_for("gpt-5.5").is_some());
        assert!(table.price_for("gemini-3.5-flash-lite").is_some());
        assert!(table.price_for("gemini-3.8-flash").is_none());
        assert!(table.price_for("claude-opus-5-5").is_none());
    }

    #[test]
    fn every_token_kind_has_its_own_price() {
        let price = ModelPrice {
            model: "m".into(),
            input: 1.0,
            output: 10.0,
            cached_input: Some(0.1),
            cache_write: Some(1.25),
            cache_write_1h: None,
            reasoning: Some(20.0),
        };
        let usage = SessionStats {
            input_tokens: Some(1_000_000),
            cached_input_tokens: Some(2_000_000),
            cache_write_input_tokens: Some(4_000_000),
            output_tokens: Some(3_000_000),
            reasoning_tokens: Some(1_000_000),
            ..SessionStats::default()
        };
        // 1 + 0.2 + 5 + 2 × 10 + 1 × 20
        assert!(
            (price.cost_of(&usage) - 46.2).abs() < 1e-9,
            "{}",
            price.cost_of(&usage)
        );
    }

    #[test]
    fn one_hour_cache_writes_cost_twice_the_input_unless_the_row_prices_them() {
        // (the row's 1-hour price, writes, of which 1-hour, dollars): input 3, 5-minute
        // writes 3.75 per million tokens.
        let table = [
            (None, 1_000_000, Some(0), 3.75),
            (None, 1_000_000, None, 3.75),
            (None, 1_000_000, Some(400_000), 0.6 * 3.75 + 0.4 * 6.0),
            (None, 1_000_000, Some(1_000_000), 6.0),
            (Some(5.0), 1_000_000, Some(1_000_000), 5.0),
            // A 1-hour part larger than the writes is held to them.
            (None, 1_000_000, Some(3_000_000), 6.0),
            (None, 0, Some(500_000), 0.0),
        ];
        for (hour_price, writes, hour, want) in table {
            let price = ModelPrice {
                model: "claude*".into(),
                input: 3.0,
                output: 15.0,
                cached_input: Some(0.3),
                cache_write: Some(3.75),
                cache_write_1h: hour_price,
                reasoning: None,
            };
            let usage = SessionStats {
                cache_write_input_tokens: Some(writes),
                cache_write_1h_input_tokens: hour,
                ..SessionStats::default()
            };
            let got = price.cost_of(&usage);
            assert!(
                (got - want).abs() < 1e-9,
                "{hour_price:?} {hour:?}: {got} != {want}"
            );
        }
        let row = r#"{"prices":[{"model":"m","input":1,"output":1,"cache_write_1h":-2}]}"#;
        let error = PriceTable::from_json(row).err().map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains("cache_write_1h")));
    }

    /// The split of one call by kind, against figures worked out by hand from the built-in
    /// table's prices per million tokens (claude-sonnet-4-5: input 3, cache read 0.3, 5-minute
    /// write 3.75, 1-hour write absent so 2 × 3 = 6, output 15; gpt-5: 1.25, 0.125, 10).
    #[test]
    fn a_call_is_priced_by_kind_from_the_table() {
        let table = PriceTable::built_in();
        // (model, fresh, read, writes, of which 1h, output, reasoning,
        //  want [input, read, write 5m, write 1h, output])
        /// (model, fresh, read, writes, of which 1h, output, reasoning, want per part)
        type Case<'a> = (&'a str, u64, u64, u64, u64, u64, u64, [f64; 5]);
        let cases: [Case<'_>; 5] = [
            // 166 × 3 = 498, 7,983 × 0.3 = 2,394.9, 39 × 15 = 585 (µ$ per token-million).
            (
                "claude-sonnet-4-5",
                166,
                7_983,
                0,
                0,
                39,
                0,
                [0.000498, 0.0023949, 0.0, 0.0, 0.000585],
            ),
            // 10,000 writes of which 4,000 for an hour: 6,000 × 3.75 and 4,000 × 6.
            (
                "claude-sonnet-4-5",
                1_000,
                0,
                10_000,
                4_000,
                200,
                0,
                [0.003, 0.0, 0.0225, 0.024, 0.003],
            ),
            // Dated ids match their own row.
            (
                "claude-sonnet-4-5-20250929",
                0,
                1_000_000,
                1_000_000,
                1_000_000,
                0,
                0,
                [0.0, 0.3, 0.0, 6.0, 0.0],
            ),
            // OpenAI reports no writes; reasoning is output at the output price.
            (
                "gpt-5",
                2_000,
                48_000,
                0,
                0,
                1_000,
                600,
                [0.0025, 0.006, 0.0, 0.0, 0.01],
            ),
            ("GPT-5", 0, 0, 0, 0, 0, 0, [0.0, 0.0, 0.0, 0.0, 0.0]),
        ];
        for (model, fresh, read, writes, hour, output, reasoning, want) in cases {
            let usage = SessionStats {
                input_tokens: Some(fresh),
                cached_input_tokens: Some(read),
                cache_write_input_tokens: Some(writes),
                cache_write_1h_input_tokens: Some(hour),
                output_tokens: Some(output),
                reasoning_tokens: Some(reasoning),
                ..SessionStats::default()
            };
            let Some(split) = table.split(model, &usage) else {
                panic!("{model} has no price")
            };
            let got = [
                split.input_usd,
                split.cache_read_usd,
                split.cache_write_5m_usd,
                split.cache_write_1h_usd,
                split.output_usd,
            ];
            for (part, (got, want)) in got.iter().zip(want).enumerate() {
                assert!(
                    (got - want).abs() < 1e-12,
                    "{model} part {part}: {got} != {want}"
                );
            }
            let sum: f64 = want.iter().sum();
            assert!((split.total_usd - sum).abs() < 1e-12, "{model}: {split:?}");
            assert_eq!(table.estimate(model, &usage), Some(split.total_usd));
        }
        // A model without a price has no split at all, not one of zeros.
        let usage = SessionStats {
            input_tokens: Some(1),
            ..SessionStats::default()
        };
        assert_eq!(table.split("claude-opus-5-5", &usage), None);
    }

    #[test]
    fn missing_cache_prices_fall_back_to_the_input_price_and_reasoning_to_output() {
        let price = ModelPrice {
            model: "m".into(),
            input: 2.0,
            output: 8.0,
            cached_input: None,
            cache_write: None,
            cache_write_1h: None,
            reasoning: None,
        };
        let usage = SessionStats {
            cached_input_tokens: Some(500_000),
            cache_write_input_tokens: Some(500_000),
            output_tokens: Some(1_000_000),
            reasoning_tokens: Some(u64::MAX),
            ..SessionStats::default()
        };
        assert!((price.cost_of(&usage) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn bad_prices_and_unknown_keys_are_refused_by_name() {
        let error = PriceTable::from_json(r#"{"prices":[{"model":"m","input":-1,"output":1}]}"#)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("`m`") && error.contains("input"), "{error}");
        let error =
            PriceTable::from_json(r#"{"prices":[{"model":"m","input":1,"output":1,"cache":2}]}"#)
                .err()
                .map(|error| error.to_string())
                .unwrap_or_default();
        assert!(error.contains("cache"), "{error}");
        assert!(PriceTable::from_json(r#"{"prises":[]}"#).is_err());
    }

    #[test]
    fn an_override_replaces_the_row_for_the_same_pattern() {
        let table = PriceTable::built_in().overridden_by(PriceTable {
            source: None,
            prices: vec![ModelPrice {
                model: "GPT-5.5".into(),
                input: 0.0,
                output: 0.0,
                cached_input: None,
                cache_write: None,
                cache_write_1h: None,
                reasoning: None,
            }],
        });
        let usage = SessionStats {
            input_tokens: Some(10),
            ..SessionStats::default()
        };
        assert_eq!(table.estimate("gpt-5.5", &usage), Some(0.0));
        assert!(table.source.is_some());
    }
}
