//! One model call's tokens by kind (fresh input, cache reads, cache writes and their one-hour
//! part, output) and the words `panewise replay` and the window ledger print them and their
//! cost split in, so both say the same thing the same way.

use panewise_protocol::SessionStats;
use serde::{Deserialize, Serialize};

use crate::price_table::{CostSplit, PriceTable};

/// The tokens of one model call (or a sum of calls) by kind. A cache figure the provider did
/// not report is `None`, never a 0 standing in for "unknown".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTokens {
    /// The whole prompt: fresh input, cache reads and cache writes.
    pub prompt: u64,
    /// The part of the prompt read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// The part of the prompt written to the provider's cache (both durations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// The part of `cache_write` kept for an hour (Anthropic's one-hour cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<u64>,
    /// Output tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
}

impl CallTokens {
    /// The tokens of a call's figures (`SessionStats::input_tokens` is the fresh part only);
    /// `None` when they report no prompt figure at all.
    pub fn from_stats(stats: &SessionStats) -> Option<CallTokens> {
        let parts = [
            stats.input_tokens,
            stats.cached_input_tokens,
            stats.cache_write_input_tokens,
        ];
        if parts.iter().all(Option::is_none) {
            return None;
        }
        Some(CallTokens {
            prompt: parts
                .iter()
                .flatten()
                .fold(0u64, |sum, count| sum.saturating_add(*count)),
            cache_read: stats.cached_input_tokens,
            cache_write: stats.cache_write_input_tokens,
            cache_write_1h: stats.cache_write_1h_input_tokens,
            output: stats.output_tokens,
        })
    }

    /// The prompt tokens neither read from nor written to the cache.
    pub fn fresh_input(&self) -> u64 {
        self.prompt
            .saturating_sub(self.cache_read.unwrap_or(0))
            .saturating_sub(self.cache_write.unwrap_or(0))
    }

    /// The figures to price these tokens with ([`PriceTable::split`]).
    pub fn stats(&self) -> SessionStats {
        SessionStats {
            input_tokens: Some(self.fresh_input()),
            cached_input_tokens: self.cache_read,
            cache_write_input_tokens: self.cache_write,
            cache_write_1h_input_tokens: self.cache_write_1h,
            output_tokens: self.output,
            ..SessionStats::default()
        }
    }

    /// Their cost on `model` by kind; `None` when the model is unknown or has no price.
    pub fn cost(&self, prices: &PriceTable, model: Option<&str>) -> Option<CostSplit> {
        model.and_then(|model| prices.split(model, &self.stats()))
    }

    /// The sum of two calls' tokens, kind by kind; a kind is reported when either reports it.
    pub fn plus(&self, other: &CallTokens) -> CallTokens {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        CallTokens {
            prompt: self.prompt.saturating_add(other.prompt),
            cache_read: add(self.cache_read, other.cache_read),
            cache_write: add(self.cache_write, other.cache_write),
            cache_write_1h: add(self.cache_write_1h, other.cache_write_1h),
            output: add(self.output, other.output),
        }
    }

    /// The tokens in words: `prompt 8,149 = 166 new + 7,983 cache read + 0 cache write; 39
    /// out`, the one-hour writes named when there are any, and no split when the provider
    /// reported no cache figure.
    pub fn text(&self) -> String {
        let mut text = format!("prompt {}", grouped(self.prompt));
        if self.cache_read.is_some() || self.cache_write.is_some() {
            text.push_str(&format!(
                " = {} new + {} cache read + {} cache write",
                grouped(self.fresh_input()),
                grouped(self.cache_read.unwrap_or(0)),
                grouped(self.cache_write.unwrap_or(0)),
            ));
            if let Some(hour) = self.cache_write_1h.filter(|hour| *hour > 0) {
                text.push_str(&format!(" ({} of them 1h)", grouped(hour)));
            }
        } else {
            text.push_str(" (no cache figures reported)");
        }
        match self.output {
            Some(output) => text.push_str(&format!("; {} out", grouped(output))),
            None => text.push_str("; output not reported"),
        }
        text
    }
}

/// A cost split in words: `$0.0035 = $0.0005 input + $0.0024 cache read + $0.0000 cache
/// write + $0.0006 output`, the writes split into 5m and 1h when there are one-hour ones;
/// `cost unknown (no price for the model)` without a split.
pub fn cost_text(split: Option<&CostSplit>) -> String {
    let Some(split) = split else {
        return "cost unknown (no price for the model)".to_owned();
    };
    let writes = if split.cache_write_1h_usd > 0.0 {
        format!(
            "{} cache write 5m + {} cache write 1h",
            dollars(split.cache_write_5m_usd),
            dollars(split.cache_write_1h_usd)
        )
    } else {
        format!("{} cache write", dollars(split.cache_write_5m_usd))
    };
    format!(
        "{} = {} input + {} cache read + {writes} + {} output",
        dollars(split.total_usd),
        dollars(split.input_usd),
        dollars(split.cache_read_usd),
        dollars(split.output_usd),
    )
}

/// Dollars to four places, the precision `panewise replay --state` shows costs with.
fn dollars(amount: f64) -> String {
    format!("${amount:.4}")
}

/// A count with its thousands grouped by commas: `8,149`.
pub fn grouped(count: u64) -> String {
    let digits = count.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        let table = [
            (0, "0"),
            (999, "999"),
            (1_000, "1,000"),
            (8_149, "8,149"),
            (1_234_567, "1,234,567"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ];
        for (count, want) in table {
            assert_eq!(grouped(count), want);
        }
    }

    /// The words for a call's tokens and its cost, against the built-in table (claude-sonnet-4-5:
    /// input 3, read 0.3, 5-minute write 3.75, 1-hour write 6, output 15 per million).
    #[test]
    fn a_call_reads_as_its_tokens_and_its_cost_by_kind() {
        let prices = PriceTable::built_in();
        let cases = [
            (
                SessionStats {
                    input_tokens: Some(166),
                    cached_input_tokens: Some(7_983),
                    cache_write_input_tokens: Some(0),
                    output_tokens: Some(39),
                    ..SessionStats::default()
                },
                Some("claude-sonnet-4-5"),
                "prompt 8,149 = 166 new + 7,983 cache read + 0 cache write; 39 out",
                "$0.0035 = $0.0005 input + $0.0024 cache read + $0.0000 cache write + $0.0006 output",
            ),
            (
                SessionStats {
                    input_tokens: Some(1_000),
                    cached_input_tokens: Some(0),
                    cache_write_input_tokens: Some(10_000),
                    cache_write_1h_input_tokens: Some(4_000),
                    output_tokens: Some(200),
                    ..SessionStats::default()
                },
                Some("claude-sonnet-4-5"),
                "prompt 11,000 = 1,000 new + 0 cache read + 10,000 cache write (4,000 of them 1h); \
                 200 out",
                "$0.0525 = $0.0030 input + $0.0000 cache read + $0.0225 cache write 5m + $0.0240 \
                 cache write 1h + $0.0030 output",
            ),
            (
                SessionStats {
                    input_tokens: Some(500),
                    ..SessionStats::default()
                },
                Some("claude-opus-5-5"),
                "prompt 500 (no cache figures reported); output not reported",
                "cost unknown (no price for the model)",
            ),
            (
                SessionStats {
                    input_tokens: Some(500),
                    output_tokens: Some(1),
                    ..SessionStats::default()
                },
                None,
                "prompt 500 (no cache figures reported); 1 out",
                "cost unknown (no price for the model)",
            ),
        ];
        for (stats, model, want_tokens, want_cost) in cases {
            let Some(tokens) = CallTokens::from_stats(&stats) else {
                panic!("{stats:?} has a prompt")
            };
            assert_eq!(tokens.text(), want_tokens);
            assert_eq!(
                cost_text(tokens.cost(&prices, model).as_ref()),
                want_cost,
                "{model:?}"
            );
        }
        assert_eq!(CallTokens::from_stats(&SessionStats::default()), None);
    }

    #[test]
    fn sums_keep_a_kind_reported_when_either_call_reports_it() {
        let with_cache = CallTokens {
            prompt: 100,
            cache_read: Some(60),
            cache_write: Some(30),
            cache_write_1h: None,
            output: Some(5),
        };
        let without = CallTokens {
            prompt: 40,
            output: None,
            ..CallTokens::default()
        };
        let sum = with_cache.plus(&without);
        assert_eq!(sum.prompt, 140);
        assert_eq!(sum.cache_read, Some(60));
        assert_eq!(sum.cache_write_1h, None);
        assert_eq!(sum.output, Some(5));
        assert_eq!(sum.fresh_input(), 50);
    }
}
