//! Every strategy priced under every provider's cache rules, side by side, and how far each
//! rule set's results can be trusted ([`crate::stats`]): the second table, the
//! recommendation per provider, and their JSON.
//!
//! ## Prices under another provider's rules
//! A session keeps its model's input and output prices under every rule set; only the cache
//! changes. Under its own rules (its provider family's, or `--cache`'s) the figures are the
//! primary ones, priced at the model's own cache prices. Under another provider's rules the
//! cache is priced with that provider's multipliers of the input price, as
//! [`CachePricing::for_rules`] holds them:
//! - Anthropic: a read at 0.1×, a write at 1.25× (the 5-minute cache; the price table's ratio
//!   on every Claude model but the oldest Haiku);
//! - OpenAI: a read at 0.1× (gpt-5's `cached_input` of 0.125 against 1.25), writes free;
//! - Gemini: a read at 0.1× (gemini-2.5-pro's 0.125 against 1.25), writes free;
//! - none: every input token at the full price.
//!
//! Each strategy is replayed under each rule set, since a guarded strategy's decisions read
//! the cache's prices.

use std::fmt::Write as _;

use panewise_window::cache::{CachePricing, CacheRules};
use serde::Serialize;

use super::{Report, SessionResult, JSON_SCHEMA};
use crate::replay::{Figures, Prices, ReplaySettings};
use crate::stats::{self, Confidence, Outcome, Summary};

/// One provider's cache rules, as the side-by-side figures name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleSet {
    /// Anthropic's explicit breakpoints.
    Anthropic,
    /// OpenAI's automatic prefix cache.
    OpenAi,
    /// Gemini's implicit cache.
    Gemini,
    /// No cache.
    None,
}

impl RuleSet {
    /// Every rule set, in the order of the columns and JSON keys.
    pub const ALL: [RuleSet; 4] = [
        RuleSet::Anthropic,
        RuleSet::OpenAi,
        RuleSet::Gemini,
        RuleSet::None,
    ];

    /// The name, as [`CacheRules::name`] and the JSON keys spell it.
    pub fn name(self) -> &'static str {
        self.rules().name()
    }

    /// The provider's documented cache rules.
    pub fn rules(self) -> CacheRules {
        match self {
            RuleSet::Anthropic => CacheRules::anthropic(),
            RuleSet::OpenAi => CacheRules::openai(),
            RuleSet::Gemini => CacheRules::gemini(),
            RuleSet::None => CacheRules::None,
        }
    }

    /// The rule set `rules` belong to.
    pub fn of(rules: CacheRules) -> Self {
        match rules {
            CacheRules::Anthropic(_) => RuleSet::Anthropic,
            CacheRules::OpenAi(_) => RuleSet::OpenAi,
            CacheRules::Gemini(_) => RuleSet::Gemini,
            CacheRules::None => RuleSet::None,
        }
    }
}

/// One value per rule set; serialized as `{anthropic, openai, gemini, none}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ByRules<T> {
    /// Under Anthropic's rules.
    pub anthropic: T,
    /// Under OpenAI's rules.
    pub openai: T,
    /// Under Gemini's rules.
    pub gemini: T,
    /// Without a cache.
    pub none: T,
}

impl<T> ByRules<T> {
    /// Each rule set's value from `value`.
    pub fn from_fn(mut value: impl FnMut(RuleSet) -> T) -> Self {
        Self {
            anthropic: value(RuleSet::Anthropic),
            openai: value(RuleSet::OpenAi),
            gemini: value(RuleSet::Gemini),
            none: value(RuleSet::None),
        }
    }

    /// The value under `rules`.
    pub fn get(&self, rules: RuleSet) -> &T {
        match rules {
            RuleSet::Anthropic => &self.anthropic,
            RuleSet::OpenAi => &self.openai,
            RuleSet::Gemini => &self.gemini,
            RuleSet::None => &self.none,
        }
    }

    /// The value under `rules`, to change.
    pub fn get_mut(&mut self, rules: RuleSet) -> &mut T {
        match rules {
            RuleSet::Anthropic => &mut self.anthropic,
            RuleSet::OpenAi => &mut self.openai,
            RuleSet::Gemini => &mut self.gemini,
            RuleSet::None => &mut self.none,
        }
    }
}

/// The settings that bill a session priced at `prices` under another provider's `rules`: the
/// same input and output prices, that provider's cache multipliers (module doc).
pub fn settings_under(prices: Option<&Prices>, rules: RuleSet) -> ReplaySettings {
    let cache = rules.rules();
    let multipliers = CachePricing::for_rules(cache);
    let prices = prices.map(|prices| {
        let (read, write) = multipliers.map_or((1.0, 1.0), |m| (m.read, m.write));
        Prices {
            model: prices.model.clone(),
            input: prices.input,
            output: prices.output,
            cache_read: prices.input * read,
            cache_write: prices.input * write,
        }
    });
    let usable = prices
        .as_ref()
        .is_some_and(|prices| prices.input.is_finite() && prices.input > 0.0);
    ReplaySettings {
        cache,
        prices,
        cache_pricing: multipliers.filter(|_| usable),
        summarizer_prices: None,
    }
}

/// What the statistics need of one strategy's figures on one session.
fn outcome(figures: &Figures) -> Outcome {
    Outcome {
        cost: figures.cost_usd.unwrap_or(0.0),
        evicted_before_use: figures.evicted_before_use,
        action_calls: figures.action_calls,
        refetches: figures.refetches,
        tool_calls: figures.tool_calls,
    }
}

/// Per strategy, then per session, the outcomes that `figures_of` picks from each session.
fn outcomes(
    report: &Report,
    figures_of: impl Fn(&SessionResult, usize) -> Option<&Figures>,
) -> Vec<Vec<Outcome>> {
    (0..report.strategies.len())
        .map(|index| {
            report
                .sessions
                .iter()
                .map(|session| figures_of(session, index).map(outcome).unwrap_or_default())
                .collect()
        })
        .collect()
}

/// The statistics of one evaluation: under each session's own rules, and under each rule set.
#[derive(Debug, Clone, PartialEq)]
pub struct Confidences {
    /// Each session under its own rules (the primary figures).
    pub own: Summary,
    /// Every session under each provider's rules.
    pub by_rules: ByRules<Summary>,
}

/// A strategy's cost under each rule set, summed over the sessions; `None` without prices.
fn cost_by_rules(report: &Report, index: usize) -> ByRules<Option<f64>> {
    ByRules::from_fn(|rules| {
        report
            .sessions
            .iter()
            .filter_map(|session| session.by_rules.get(rules).get(index)?.cost_usd)
            .fold(None, |sum: Option<f64>, cost| {
                Some(sum.unwrap_or(0.0) + cost)
            })
    })
}

impl Report {
    /// The statistics of every strategy, under the sessions' own rules and under each rule
    /// set ([`crate::stats::summarize`]).
    pub fn confidences(&self) -> Confidences {
        Confidences {
            own: stats::summarize(&outcomes(self, |session, index| {
                session.figures.get(index).map(|(_, figures)| figures)
            })),
            by_rules: ByRules::from_fn(|rules| {
                stats::summarize(&outcomes(self, |session, index| {
                    session.by_rules.get(rules).get(index)
                }))
            }),
        }
    }

    /// The side-by-side table: each strategy's cost under each rule set as a share of raw's
    /// under the same rules, then, under each session's own rules, the per-session ratio's
    /// median and interquartile range, the 90 % interval, the sessions cheaper than raw and the
    /// split-half agreement; then the recommendation per provider.
    pub(super) fn confidence_table(&self, confidences: &Confidences) -> String {
        let mut out = String::new();
        let width = self
            .strategies
            .iter()
            .map(|label| label.chars().count())
            .max()
            .unwrap_or(8)
            .max(8);
        let own = &confidences.own;
        let _ = writeln!(
            out,
            "\ncost under each provider's cache rules (% of raw under the same rules); per session, under its own rules: the cost ratio's median, quartiles and 90 % interval (% of raw), sessions cheaper than raw, split-half agreement"
        );
        let _ = writeln!(
            out,
            "{:<width$}  {:>6} {:>6} {:>6} {:>6}  {:>6} {:>9} {:>9} {:>7} {:>5}",
            "STRATEGY",
            "ANTHR",
            "OPENAI",
            "GEMINI",
            "NONE",
            "MEDIAN",
            "IQR",
            "90% INT",
            "CHEAPER",
            "SPLIT"
        );
        let raw_costs = cost_by_rules(self, 0);
        for (index, label) in self.strategies.iter().enumerate() {
            let costs = cost_by_rules(self, index);
            let column = |rules: RuleSet| match (costs.get(rules), raw_costs.get(rules)) {
                (Some(cost), Some(raw)) if *raw > 0.0 => format!("{:.1}", 100.0 * cost / raw),
                _ => "-".into(),
            };
            let confidence = own.strategies.get(index);
            let field =
                |value: Option<f64>| value.map_or("-".into(), |v| format!("{:.1}", 100.0 * v));
            let range = |value: Option<[f64; 2]>| {
                value.map_or("-".into(), |[lo, hi]| {
                    format!("{:.0}-{:.0}", 100.0 * lo, 100.0 * hi)
                })
            };
            let cheaper = confidence.and_then(|c| {
                let share = c.cheaper_than_raw_share?;
                Some(format!(
                    "{}/{}",
                    (share * c.sessions as f64).round(),
                    c.sessions
                ))
            });
            let _ = writeln!(
                out,
                "{:<width$}  {:>6} {:>6} {:>6} {:>6}  {:>6} {:>9} {:>9} {:>7} {:>5}",
                label,
                column(RuleSet::Anthropic),
                column(RuleSet::OpenAi),
                column(RuleSet::Gemini),
                column(RuleSet::None),
                field(confidence.and_then(|c| c.cost_ratio_median)),
                range(confidence.and_then(|c| c.cost_ratio_iqr)),
                range(confidence.and_then(|c| c.cost_ratio_interval90)),
                cheaper.unwrap_or_else(|| "-".into()),
                confidence
                    .and_then(|c| c.split_half_agreement)
                    .map_or("-".into(), |a| format!("{a:.2}")),
            );
        }
        let _ = writeln!(
            out,
            "\nwhat to deploy, per provider's cache rules: the cheapest strategy whose loss (evicted-before-use + re-fetch share) is within {:.0} points of raw's, when its 90 % interval is below 100 % of raw and, picked on half the sessions, it held on the other half (cheaper than raw, within {:.0} % of the best there) on at least {:.0} % of {} random halvings",
            100.0 * stats::LOSS_TOLERANCE,
            100.0 * (stats::BEST_MARGIN - 1.0),
            100.0 * stats::MIN_AGREEMENT,
            stats::SPLITS
        );
        for rules in RuleSet::ALL {
            let _ = writeln!(
                out,
                "  {:<9} {}",
                format!("{}:", rules.name()),
                self.recommendation_words(confidences.by_rules.get(rules))
            );
        }
        out
    }

    fn recommendation_words(&self, summary: &Summary) -> String {
        let recommendation = &summary.recommendation;
        let sessions = recommendation.sessions;
        let pick = recommendation.pick;
        let label = self.strategies.get(pick).map_or("?", String::as_str);
        let agreement = recommendation
            .split_half_agreement
            .map_or("-".into(), |a| format!("{:.0} %", 100.0 * a));
        let about = |confidence: &Confidence| {
            format!(
                "{} % of raw in total, median {}, 90 % interval {}, cheaper on {} of {sessions} sessions, split-half agreement {agreement}",
                confidence
                    .cost_ratio_total
                    .map_or("-".into(), |r| format!("{:.1}", 100.0 * r)),
                confidence
                    .cost_ratio_median
                    .map_or("-".into(), |r| format!("{:.1} %", 100.0 * r)),
                confidence
                    .cost_ratio_interval90
                    .map_or("-".into(), |[lo, hi]| format!("{:.1}-{:.1} %", 100.0 * lo, 100.0 * hi)),
                confidence
                    .cheaper_than_raw_share
                    .map_or(0.0, |share| (share * confidence.sessions as f64).round()),
            )
        };
        match summary.strategies.get(pick) {
            Some(confidence) if recommendation.reliable => {
                format!("deploy {label}: {}", about(confidence))
            }
            Some(confidence) if pick != 0 => format!(
                "no strategy is reliably better than raw on this data ({sessions} sessions); the best, {label}: {}",
                about(confidence)
            ),
            _ => format!(
                "no strategy is reliably better than raw on this data ({sessions} sessions)"
            ),
        }
    }

    /// The recommendation lines of `--json`, one per rule set.
    pub(super) fn recommendation_lines(&self, confidences: &Confidences, out: &mut String) {
        for rules in RuleSet::ALL {
            let summary = confidences.by_rules.get(rules);
            let recommendation = &summary.recommendation;
            let pick = self.strategies.get(recommendation.pick).map(String::as_str);
            let confidence = summary.strategies.get(recommendation.pick);
            let line = RecommendationLine {
                schema: JSON_SCHEMA,
                scope: "recommendation",
                rules: rules.name(),
                strategy: pick.filter(|_| recommendation.reliable),
                pick,
                reliable: recommendation.reliable,
                cost_ratio_total: confidence.and_then(|c| c.cost_ratio_total),
                cost_ratio_median: confidence.and_then(|c| c.cost_ratio_median),
                cost_ratio_interval90: confidence.and_then(|c| c.cost_ratio_interval90),
                cheaper_than_raw_share: confidence.and_then(|c| c.cheaper_than_raw_share),
                split_half_agreement: recommendation.split_half_agreement,
                splits: recommendation.splits,
                sessions: recommendation.sessions,
                loss_tolerance: stats::LOSS_TOLERANCE,
                min_agreement: stats::MIN_AGREEMENT,
            };
            if let Ok(text) = serde_json::to_string(&line) {
                out.push_str(&text);
                out.push('\n');
            }
        }
    }
}

/// The confidence fields of a total line, flattened into it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TotalFields<'a> {
    cost_usd_by_rules: ByRules<Option<f64>>,
    cost_ratio_median: Option<f64>,
    cost_ratio_iqr: Option<[f64; 2]>,
    cost_ratio_interval90: Option<[f64; 2]>,
    cheaper_than_raw_share: Option<f64>,
    split_half_agreement: Option<f64>,
    sessions_compared: usize,
    by_rules: ByRules<&'a Confidence>,
}

impl<'a> TotalFields<'a> {
    /// The fields of strategy `index`'s total line; `None` when a summary lacks it.
    pub(super) fn of(report: &Report, confidences: &'a Confidences, index: usize) -> Option<Self> {
        let own = confidences.own.strategies.get(index)?;
        let by_rules = ByRules {
            anthropic: confidences.by_rules.anthropic.strategies.get(index)?,
            openai: confidences.by_rules.openai.strategies.get(index)?,
            gemini: confidences.by_rules.gemini.strategies.get(index)?,
            none: confidences.by_rules.none.strategies.get(index)?,
        };
        Some(Self {
            cost_usd_by_rules: cost_by_rules(report, index),
            cost_ratio_median: own.cost_ratio_median,
            cost_ratio_iqr: own.cost_ratio_iqr,
            cost_ratio_interval90: own.cost_ratio_interval90,
            cheaper_than_raw_share: own.cheaper_than_raw_share,
            split_half_agreement: own.split_half_agreement,
            sessions_compared: own.sessions,
            by_rules,
        })
    }
}

/// A session line's cost under each rule set.
pub(super) fn session_cost_by_rules(session: &SessionResult, index: usize) -> ByRules<Option<f64>> {
    ByRules::from_fn(|rules| session.by_rules.get(rules).get(index)?.cost_usd)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecommendationLine<'a> {
    schema: &'static str,
    scope: &'static str,
    rules: &'static str,
    /// The strategy to deploy; `null` when none is reliably better than raw.
    strategy: Option<&'a str>,
    /// The best candidate, recommended or not.
    pick: Option<&'a str>,
    reliable: bool,
    cost_ratio_total: Option<f64>,
    cost_ratio_median: Option<f64>,
    cost_ratio_interval90: Option<[f64; 2]>,
    cheaper_than_raw_share: Option<f64>,
    split_half_agreement: Option<f64>,
    splits: usize,
    sessions: usize,
    loss_tolerance: f64,
    min_agreement: f64,
}
