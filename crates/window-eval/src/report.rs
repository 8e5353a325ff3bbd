//! The strategies an evaluation compares, the per-session settings (cache rules, prices), and
//! the results: per strategy and session, in total, as a table and as JSON lines; each
//! strategy priced under every provider's cache rules too, with the statistics of
//! [`crate::stats`] and a recommendation per provider (the `by_rules` module's doc says how).

use std::fmt::Write as _;

use panewise_providers::PriceTable;
use panewise_window::cache::{CachePricing, CacheRules};
use panewise_window::{provider, Retain, StrategyConfig};
use serde::Serialize;

use crate::anchor::Calibration;
use crate::error::EvalError;
use crate::recording::{Family, Recording};
use crate::replay::{Figures, Prices, ReplaySettings};

mod by_rules;
mod counting;
mod evaluate;

pub use by_rules::{settings_under, ByRules, Confidences, RuleSet};
pub use counting::Counting;
pub use evaluate::{evaluate_all, evaluate_session};

/// The version of the JSON lines [`Report::json_lines`] writes; it changes when a field
/// changes meaning or goes away (new fields may be added within a version).
/// Version 2 adds `costUsdByRules` and `estimated` to the session lines, the statistics to the
/// total lines, and the `recommendation` lines.
pub const JSON_SCHEMA: &str = "panewise.window-eval/2";

/// The threshold the default set gives the token-triggered strategies, whose own
/// `thresholdTokens` has no default: low enough that they engage on sessions of a few dozen
/// tool calls, as the shared corpus is.
pub const DEFAULT_EVAL_THRESHOLD: u64 = 40_000;

/// The `clearAtLeastTokens` of the default set's batched masking: mask only once the
/// placeholders save this many tokens, so the prompt cache breaks once per batch rather than
/// at every call.
pub const DEFAULT_EVAL_CLEAR_AT_LEAST: u64 = 20_000;

/// The `paybackCalls` of the default set's guarded variants: an edit must pay for the prompt
/// cache it breaks within ten calls.
pub const DEFAULT_EVAL_PAYBACK_CALLS: u64 = 10;

/// The label of the raw history, the baseline every strategy is compared with.
pub const RAW: &str = "raw";

/// One strategy of an evaluation: its label and configuration (`None` is the raw history).
#[derive(Debug, Clone, PartialEq)]
pub struct Strategy {
    /// The label in tables and JSON.
    pub label: String,
    /// The configuration; `None` keeps every message.
    pub config: Option<StrategyConfig>,
    /// The prices of the model its summaries are asked of, when it names one
    /// ([`Strategy::with_summarizer_prices`]); `None` for the offline `extractive` summarizer
    /// and for strategies that do not summarize.
    pub summarizer_prices: Option<Prices>,
}

impl Strategy {
    /// The raw history.
    pub fn raw() -> Self {
        Self {
            label: RAW.into(),
            config: None,
            summarizer_prices: None,
        }
    }

    /// A configured strategy, labelled by its name and the options that differ between
    /// configurations of the same strategy.
    pub fn configured(config: StrategyConfig) -> Self {
        Self {
            label: label_of(&config),
            config: Some(config),
            summarizer_prices: None,
        }
    }

    /// The same strategy with its summarizer model's prices looked up in `table` (a
    /// summarizer not in it stays unpriced, and its summaries leave the cost unknown).
    pub fn with_summarizer_prices(mut self, table: &PriceTable) -> Self {
        let model = match &self.config {
            Some(StrategyConfig::SummarizeOldest { model, .. })
            | Some(StrategyConfig::Hybrid { model, .. }) => Some(model.as_str()),
            _ => None,
        };
        self.summarizer_prices = model.and_then(|model| prices_of(table, model));
        self
    }

    /// The replay settings of this strategy on a session billed with `session`: the same,
    /// with the summaries priced as its summarizer's model.
    pub fn settings(&self, session: &ReplaySettings) -> ReplaySettings {
        ReplaySettings {
            summarizer_prices: self.summarizer_prices.clone(),
            ..session.clone()
        }
    }
}

/// The prices of `model` in `table` per kind of token (a missing cache price is the input's).
pub fn prices_of(table: &PriceTable, model: &str) -> Option<Prices> {
    table.price_for(model).map(|row| Prices {
        model: model.to_string(),
        input: row.input,
        output: row.output,
        cache_read: row.cached_input.unwrap_or(row.input),
        cache_write: row.cache_write.unwrap_or(row.input),
    })
}

/// A label naming the strategy and its main options, e.g. `token-budget@40000/6`,
/// `observation-masking@100000/3` (a `triggerTokens`), `observation-masking/10,clear20000` (a
/// `clearAtLeastTokens`), then the cache guard's when set (`+payback10`, `+overflow150000`,
/// `+shadow`).
pub fn label_of(config: &StrategyConfig) -> String {
    let guard = config.cache_guard();
    let mut label = strategy_label(config);
    if let Some(calls) = guard.payback_calls {
        label.push_str(&format!("+payback{calls}"));
    }
    if let Some(tokens) = guard.overflow_tokens {
        label.push_str(&format!("+overflow{tokens}"));
    }
    if guard.shadow {
        label.push_str("+shadow");
    }
    label
}

fn strategy_label(config: &StrategyConfig) -> String {
    match config {
        StrategyConfig::SlidingWindow {
            keep_recent_turns, ..
        } => format!("sliding-window/{keep_recent_turns}"),
        StrategyConfig::TokenBudget {
            threshold_tokens,
            keep_recent_turns,
            ..
        } => format!("token-budget@{threshold_tokens}/{keep_recent_turns}"),
        StrategyConfig::SummarizeOldest {
            threshold_tokens,
            keep_recent_turns,
            ..
        } => format!("summarize-oldest@{threshold_tokens}/{keep_recent_turns}"),
        StrategyConfig::ObservationMasking {
            keep_recent_observations,
            clear_at_least_tokens,
            trigger_tokens,
            ..
        } => {
            let trigger = trigger_tokens.map_or(String::new(), |t| format!("@{t}"));
            format!(
                "observation-masking{trigger}/{keep_recent_observations}{}",
                clear_suffix(*clear_at_least_tokens)
            )
        }
        StrategyConfig::Hybrid {
            threshold_tokens,
            keep_recent_observations,
            clear_at_least_tokens,
            ..
        } => format!(
            "hybrid@{threshold_tokens}/{keep_recent_observations}{}",
            clear_suffix(*clear_at_least_tokens)
        ),
        // The provider edits on its servers, which a replay cannot see: it replays as the
        // raw history, under the strategy's own name.
        StrategyConfig::Provider(context) => match context.trigger_tokens() {
            Some(trigger) => format!("{}@{trigger}", context.strategy_name()),
            None => context.strategy_name().to_owned(),
        },
    }
}

/// `,clear20000` for a `clearAtLeastTokens` of 20,000; nothing without one.
fn clear_suffix(clear_at_least_tokens: Option<u64>) -> String {
    clear_at_least_tokens.map_or(String::new(), |tokens| format!(",clear{tokens}"))
}

/// The default set: the raw history, then every built-in strategy with its documented
/// defaults, the required options filled in (`thresholdTokens` = `threshold`,
/// `keepRecentTurns` 6 for sliding-window, the offline `extractive` summarizer), with
/// observation masking also batched (`clearAtLeastTokens` [`DEFAULT_EVAL_CLEAR_AT_LEAST`]) and
/// as the local twin of Anthropic's context editing at its API defaults (`triggerTokens`
/// 100,000, 3 tool uses kept, no minimum), then each of them but these two maskings again
/// with the cache guard (`paybackCalls` [`DEFAULT_EVAL_PAYBACK_CALLS`]).
pub fn default_strategies(threshold: u64) -> Vec<Strategy> {
    let pins = panewise_window::PinConfig::default();
    let keep_recent_turns = 6;
    let configs = [
        StrategyConfig::SlidingWindow {
            keep_recent_turns,
            pins: pins.clone(),
        },
        StrategyConfig::TokenBudget {
            threshold_tokens: threshold,
            keep_recent_turns,
            pins: pins.clone(),
        },
        StrategyConfig::SummarizeOldest {
            threshold_tokens: threshold,
            keep_recent_turns,
            model: "extractive".into(),
            retain: Retain::Conversation,
            pins: pins.clone(),
        },
        StrategyConfig::ObservationMasking {
            keep_recent_observations: 10,
            clear_at_least_tokens: None,
            trigger_tokens: None,
            pins: pins.clone(),
        },
        StrategyConfig::ObservationMasking {
            keep_recent_observations: 10,
            clear_at_least_tokens: Some(DEFAULT_EVAL_CLEAR_AT_LEAST),
            trigger_tokens: None,
            pins: pins.clone(),
        },
        StrategyConfig::ObservationMasking {
            keep_recent_observations: usize::try_from(provider::DEFAULT_KEEP_TOOL_USES)
                .unwrap_or(usize::MAX),
            clear_at_least_tokens: None,
            trigger_tokens: Some(provider::DEFAULT_CLEAR_TOOL_USES_TRIGGER),
            pins: pins.clone(),
        },
        StrategyConfig::Hybrid {
            threshold_tokens: threshold,
            keep_recent_turns,
            keep_recent_observations: 10,
            clear_at_least_tokens: None,
            model: "extractive".into(),
            retain: Retain::Conversation,
            pins,
        },
    ];
    let guarded: Vec<StrategyConfig> = configs
        .iter()
        .filter(|config| !batched_or_triggered(config))
        .cloned()
        .map(|mut config| {
            if let Some(guard) = guard_of(&mut config) {
                guard.payback_calls = Some(DEFAULT_EVAL_PAYBACK_CALLS);
            }
            config
        })
        .collect();
    std::iter::once(Strategy::raw())
        .chain(configs.into_iter().map(Strategy::configured))
        .chain(guarded.into_iter().map(Strategy::configured))
        .collect()
}

/// Whether `config` is a masking that already spares the cache (batched, or only past a
/// trigger): the default set does not guard it again, which would double its replay time for
/// little (the evaluation must stay within its time budget).
fn batched_or_triggered(config: &StrategyConfig) -> bool {
    matches!(
        config,
        StrategyConfig::ObservationMasking {
            clear_at_least_tokens: Some(_),
            ..
        } | StrategyConfig::ObservationMasking {
            trigger_tokens: Some(_),
            ..
        }
    )
}

/// The cache guard of a local strategy; a provider-side one has none.
fn guard_of(config: &mut StrategyConfig) -> Option<&mut panewise_window::CacheGuard> {
    match config {
        StrategyConfig::SlidingWindow { pins, .. }
        | StrategyConfig::TokenBudget { pins, .. }
        | StrategyConfig::SummarizeOldest { pins, .. }
        | StrategyConfig::ObservationMasking { pins, .. }
        | StrategyConfig::Hybrid { pins, .. } => Some(&mut pins.cache),
        StrategyConfig::Provider(_) => None,
    }
}

/// Which cache rules to bill under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheChoice {
    /// The rules of the recording's provider family (Anthropic when unknown).
    Provider,
    /// These rules for every recording.
    Fixed(CacheRules),
}

/// The model a family's recordings are priced as when they name none the price table knows.
pub fn default_model(family: Family) -> &'static str {
    match family {
        Family::Anthropic => "claude-sonnet-4-5",
        Family::OpenAi => "gpt-5",
        Family::Gemini => "gemini-2.5-pro",
    }
}

/// How one recording is billed, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Billing {
    /// The replay's settings.
    pub settings: ReplaySettings,
    /// The family assumed (the recording's, or Anthropic when it names none).
    pub family: Family,
    /// The model priced, and whether it is the recording's own (`false`: a stand-in).
    pub priced: Option<(String, bool)>,
    /// What a recording without provider readings is counted with ([`crate::anchor`]): the
    /// table's until the caller calibrates on the sessions that have readings.
    pub calibration: Calibration,
}

/// The billing of `recording`: its family's cache rules (unless fixed), and the prices of
/// `price_model`, else of the recording's model, else of the family's default model.
pub fn billing_for(
    recording: &Recording,
    table: &PriceTable,
    price_model: Option<&str>,
    cache: CacheChoice,
) -> Billing {
    let family = recording.family.unwrap_or(Family::Anthropic);
    let rules = match cache {
        CacheChoice::Fixed(rules) => rules,
        CacheChoice::Provider => match family {
            Family::Anthropic => CacheRules::anthropic(),
            Family::OpenAi => CacheRules::openai(),
            Family::Gemini => CacheRules::gemini(),
        },
    };
    let candidates = [
        price_model.map(|model| (model.to_string(), true)),
        recording.model.clone().map(|model| (model, true)),
        Some((default_model(family).to_string(), false)),
    ];
    let mut priced = None;
    let mut prices = None;
    for (model, own) in candidates.into_iter().flatten() {
        if let Some(row) = table.price_for(&model) {
            prices = Some(Prices {
                model: model.clone(),
                input: row.input,
                output: row.output,
                cache_read: row.cached_input.unwrap_or(row.input),
                cache_write: row.cache_write.unwrap_or(row.input),
            });
            priced = Some((model, own));
            break;
        }
        if price_model.is_some() {
            // An explicit model without a price is not replaced silently by another.
            break;
        }
    }
    let implicit = matches!(rules, CacheRules::OpenAi(_) | CacheRules::Gemini(_));
    let cache_pricing = match (&prices, rules) {
        (_, CacheRules::None) | (None, _) => None,
        (Some(prices), _) => CachePricing::from_prices(
            prices.input,
            prices.cache_read,
            prices.cache_write,
            implicit,
        ),
    };
    Billing {
        settings: ReplaySettings {
            cache: rules,
            prices,
            cache_pricing,
            summarizer_prices: None, // per strategy: `Strategy::summarizer_prices`
        },
        family,
        priced,
        calibration: Calibration::table(),
    }
}

/// Runs one strategy's replay: given the strategy's index and the replay to run, returns its
/// figures (typically after timing it).
pub type ReplayHook<'a> = dyn FnMut(usize, &mut dyn FnMut() -> Result<Figures, EvalError>) -> Result<Figures, EvalError>
    + 'a;

/// One session's results.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionResult {
    /// The session's name (its file).
    pub name: String,
    /// The format it was read from.
    pub format: &'static str,
    /// How it was billed.
    pub billing: Billing,
    /// The head the replay added to every request (system prompt and tools).
    pub head_tokens: u64,
    /// The figures per strategy, in the evaluation's order; the raw history first.
    pub figures: Vec<(String, Figures)>,
    /// The figures per strategy (same order) under each provider's cache rules; the session's
    /// own rules hold a copy of `figures`.
    pub by_rules: ByRules<Vec<Figures>>,
    /// Whether the counts are estimated: no provider reading anchors them.
    pub estimated: bool,
    /// How the counts were made.
    pub counting: Counting,
}

/// A whole evaluation's results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The strategies' labels, in order, the raw history first.
    pub strategies: Vec<String>,
    /// The sessions, in the order they were read.
    pub sessions: Vec<SessionResult>,
}

impl Figures {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Figures) {
        let counts = [
            (&mut self.calls, other.calls),
            (&mut self.tool_calls, other.tool_calls),
            (&mut self.sent_tokens, other.sent_tokens),
            (&mut self.cache_read, other.cache_read),
            (&mut self.cache_write, other.cache_write),
            (&mut self.uncached, other.uncached),
            (&mut self.output_tokens, other.output_tokens),
            (&mut self.summary_tokens, other.summary_tokens),
            (&mut self.visits, other.visits),
            (&mut self.engaged, other.engaged),
            (&mut self.edits, other.edits),
            (&mut self.held, other.held),
            (&mut self.evicted_before_use, other.evicted_before_use),
            (&mut self.action_calls, other.action_calls),
            (&mut self.refetches, other.refetches),
            (&mut self.cache_expiries, other.cache_expiries),
            (
                &mut self.recorded_prompt_tokens,
                other.recorded_prompt_tokens,
            ),
            (&mut self.counted_prompt_tokens, other.counted_prompt_tokens),
            (&mut self.recorded_cache_read, other.recorded_cache_read),
            (&mut self.recorded_cache_write, other.recorded_cache_write),
            (
                &mut self.cache_read_on_recorded,
                other.cache_read_on_recorded,
            ),
            (
                &mut self.cache_write_on_recorded,
                other.cache_write_on_recorded,
            ),
        ];
        for (total, more) in counts {
            *total = total.saturating_add(more);
        }
        self.cost_usd = sum_option(self.cost_usd, other.cost_usd);
        self.summary_cost_usd = sum_option(self.summary_cost_usd, other.summary_cost_usd);
        self.recorded_cost_usd = sum_option(self.recorded_cost_usd, other.recorded_cost_usd);
        self.cost_on_recorded_usd =
            sum_option(self.cost_on_recorded_usd, other.cost_on_recorded_usd);
    }

    /// The evicted-before-use share, 0 when no call made a tool call.
    pub fn evicted_share(&self) -> f64 {
        share(self.evicted_before_use, self.action_calls)
    }

    /// The re-fetch share, 0 when there was no tool call.
    pub fn refetch_share(&self) -> f64 {
        share(self.refetches, self.tool_calls)
    }
}

fn sum_option(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn percent_of(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| 100.0 * part / whole)
}

/// One strategy's totals over every session.
#[derive(Debug, Clone, PartialEq)]
pub struct Total {
    /// The strategy's label.
    pub label: String,
    /// The summed figures.
    pub figures: Figures,
}

impl Report {
    /// Each strategy's figures summed over the sessions, in the strategies' order. A
    /// session's figures are in the same order, so two strategies that share a label are
    /// still summed apart.
    pub fn totals(&self) -> Vec<Total> {
        self.strategies
            .iter()
            .enumerate()
            .map(|(index, label)| {
                let mut figures = Figures::default();
                for session in &self.sessions {
                    if let Some((_, session_figures)) = session.figures.get(index) {
                        figures.add(session_figures);
                    }
                }
                Total {
                    label: label.clone(),
                    figures,
                }
            })
            .collect()
    }

    /// The labels on the cost-against-loss frontier: no other strategy is at most as costly
    /// and at most as lossy (evicted-before-use plus re-fetch) and better in one of the two.
    pub fn frontier(&self) -> Vec<String> {
        let points: Vec<(String, f64, f64)> = self
            .totals()
            .into_iter()
            .map(|total| {
                let loss = total.figures.evicted_share() + total.figures.refetch_share();
                let cost = total.figures.cost_usd.unwrap_or(f64::INFINITY);
                (total.label, cost, loss)
            })
            .collect();
        points
            .iter()
            .filter(|(_, cost, loss)| {
                !points.iter().any(|(_, other_cost, other_loss)| {
                    other_cost <= cost
                        && other_loss <= loss
                        && (other_cost < cost || other_loss < loss)
                })
            })
            .map(|(label, _, _)| label.clone())
            .collect()
    }

    /// The totals as a table: one row per strategy, the raw history first.
    pub fn table(&self) -> String {
        let totals = self.totals();
        let mut out = String::new();
        let calls: u64 = totals.first().map_or(0, |t| t.figures.calls);
        let tools: u64 = totals.first().map_or(0, |t| t.figures.tool_calls);
        let _ = writeln!(
            out,
            "{} session(s), {calls} model calls, {tools} tool calls",
            self.sessions.len()
        );
        if let Some(raw) = totals.first() {
            let recorded = raw.figures.recorded_prompt_tokens;
            if recorded > 0 {
                let counted = raw.figures.counted_prompt_tokens;
                let difference = (counted as f64 - recorded as f64) / recorded as f64 * 100.0;
                let _ = writeln!(
                    out,
                    "token counter check (raw history, calls with a provider reading): counted {} against {} recorded ({difference:+.1} %)",
                    thousands(counted),
                    thousands(recorded)
                );
            }
            if let (Some(cost), Some(recorded_cost)) = (
                raw.figures.cost_on_recorded_usd,
                raw.figures.recorded_cost_usd,
            ) {
                if recorded_cost > 0.0 {
                    let _ = writeln!(
                        out,
                        "cost check (raw history, same calls): replayed ${cost:.4} against ${recorded_cost:.4} from the recorded usage ({:+.1} %)",
                        (cost - recorded_cost) / recorded_cost * 100.0
                    );
                }
            }
            if raw.figures.recorded_cache_read + raw.figures.recorded_cache_write > 0 {
                let _ = writeln!(
                    out,
                    "cache check (raw history, same calls): simulated {} read, {} written; the provider recorded {} read, {} written",
                    thousands(raw.figures.cache_read_on_recorded),
                    thousands(raw.figures.cache_write_on_recorded),
                    thousands(raw.figures.recorded_cache_read),
                    thousands(raw.figures.recorded_cache_write)
                );
            }
        }
        out.push_str(&self.counting_line());
        out.push_str(&self.rows(&totals));
        let frontier = self.frontier();
        let _ = writeln!(
            out,
            "frontier (no strategy both cheaper and less lossy): {}",
            frontier.join(", ")
        );
        out.push_str(&self.confidence_table(&self.confidences()));
        out
    }

    /// One table per session.
    pub fn session_tables(&self) -> String {
        let mut out = String::new();
        for session in &self.sessions {
            let priced = match &session.billing.priced {
                Some((model, true)) => model.clone(),
                Some((model, false)) => format!("{model} (stand-in)"),
                None => "no price".into(),
            };
            let _ = writeln!(
                out,
                "\n{} ({}, {} cache, priced as {priced}, head {} tokens)",
                session.name,
                session.format,
                session.billing.settings.cache.name(),
                thousands(session.head_tokens)
            );
            let totals: Vec<Total> = session
                .figures
                .iter()
                .map(|(label, figures)| Total {
                    label: label.clone(),
                    figures: figures.clone(),
                })
                .collect();
            out.push_str(&counting::session_counting(session));
            out.push_str(&self.rows(&totals));
        }
        out
    }

    fn rows(&self, totals: &[Total]) -> String {
        let raw = totals
            .first()
            .map(|t| t.figures.clone())
            .unwrap_or_default();
        let width = totals
            .iter()
            .map(|t| t.label.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<width$}  {:>13} {:>6}  {:>13} {:>12}  {:>10} {:>6}  {:>7} {:>8}  {:>9} {:>5}",
            "STRATEGY",
            "INPUT SENT",
            "%RAW",
            "CACHE READ",
            "CACHE WRITE",
            "COST $",
            "%RAW",
            "EVICTED",
            "RE-FETCH",
            "ENGAGED",
            "HELD"
        );
        for total in totals {
            let f = &total.figures;
            let sent_pct = percent_of(f.sent_tokens as f64, raw.sent_tokens as f64);
            let cost_pct = match (f.cost_usd, raw.cost_usd) {
                (Some(cost), Some(raw_cost)) => percent_of(cost, raw_cost),
                _ => None,
            };
            let _ = writeln!(
                out,
                "{:<width$}  {:>13} {:>6}  {:>13} {:>12}  {:>10} {:>6}  {:>6.1}% {:>7.1}%  {:>9} {:>5}",
                total.label,
                thousands(f.sent_tokens),
                pct(sent_pct),
                thousands(f.cache_read),
                thousands(f.cache_write),
                f.cost_usd.map_or("-".into(), |c| format!("{c:.4}")),
                pct(cost_pct),
                100.0 * f.evicted_share(),
                100.0 * f.refetch_share(),
                if f.visits == 0 {
                    "-".to_string()
                } else {
                    format!("{}/{}", f.engaged, f.visits)
                },
                if f.visits == 0 {
                    "-".to_string()
                } else {
                    f.held.to_string()
                },
            );
        }
        out
    }

    /// One JSON object per line: each strategy on each session, then each strategy's total
    /// with its statistics, then one recommendation per provider's cache rules.
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for session in &self.sessions {
            let raw = session.figures.first().map(|(_, f)| f);
            let about = SessionFields {
                session: &session.name,
                format: session.format,
                cache_rules: session.billing.settings.cache.name(),
                priced_as: session.billing.priced.as_ref().map(|(m, _)| m.as_str()),
                head_tokens: session.head_tokens,
                estimated: session.estimated,
                counting: &session.counting,
            };
            for (index, (label, figures)) in session.figures.iter().enumerate() {
                let by_rules = by_rules::session_cost_by_rules(session, index);
                let scope = Scope::Session(&about, by_rules);
                push_json_line(&mut out, scope, label, figures, raw);
            }
        }
        let totals = self.totals();
        let raw = totals.first().map(|t| &t.figures);
        let confidences = self.confidences();
        for (index, total) in totals.iter().enumerate() {
            let scope = Scope::Total(by_rules::TotalFields::of(self, &confidences, index));
            push_json_line(&mut out, scope, &total.label, &total.figures, raw);
        }
        self.recommendation_lines(&confidences, &mut out);
        out
    }
}

/// What a session line says of its session.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionFields<'a> {
    session: &'a str,
    format: &'static str,
    cache_rules: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    priced_as: Option<&'a str>,
    head_tokens: u64,
    estimated: bool,
    #[serde(flatten)]
    counting: &'a Counting,
}

/// Which line: a session's (what it says of its session, the strategy's cost under each rule
/// set) or a total's (the statistics, when there are any).
enum Scope<'a> {
    Session(&'a SessionFields<'a>, ByRules<Option<f64>>),
    Total(Option<by_rules::TotalFields<'a>>),
}

fn push_json_line(
    out: &mut String,
    scope: Scope<'_>,
    strategy: &str,
    figures: &Figures,
    raw: Option<&Figures>,
) {
    let raw_sent = raw.map_or(0, |raw| raw.sent_tokens);
    let (scope, about, cost_usd_by_rules, total) = match scope {
        Scope::Session(about, costs) => ("session", Some(about), Some(costs), None),
        Scope::Total(total) => ("total", None, None, total),
    };
    let line = JsonLine {
        schema: JSON_SCHEMA,
        scope,
        about,
        cost_usd_by_rules,
        total,
        strategy,
        sent_pct_of_raw: percent_of(figures.sent_tokens as f64, raw_sent as f64),
        cost_pct_of_raw: match (figures.cost_usd, raw.and_then(|raw| raw.cost_usd)) {
            (Some(cost), Some(raw_cost)) => percent_of(cost, raw_cost),
            _ => None,
        },
        evicted_before_use_share: figures.evicted_share(),
        refetch_share: figures.refetch_share(),
        figures,
    };
    if let Ok(text) = serde_json::to_string(&line) {
        out.push_str(&text);
        out.push('\n');
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonLine<'a> {
    schema: &'static str,
    scope: &'static str,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    about: Option<&'a SessionFields<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd_by_rules: Option<ByRules<Option<f64>>>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    total: Option<by_rules::TotalFields<'a>>,
    strategy: &'a str,
    #[serde(flatten)]
    figures: &'a Figures,
    sent_pct_of_raw: Option<f64>,
    cost_pct_of_raw: Option<f64>,
    evicted_before_use_share: f64,
    refetch_share: f64,
}

fn pct(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.1}"))
}

/// `1234567` as `1,234,567`.
pub fn thousands(value: u64) -> String {
    panewise_providers::call_usage::grouped(value)
}
