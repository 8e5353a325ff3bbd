//! One session evaluated under every strategy and every provider's cache rules, with as few
//! replays as give the same figures.

use panewise_providers::PriceTable;
use panewise_window::{CacheGuard, StrategyConfig};

use super::settings_under;
use super::{
    billing_for, guard_of, Billing, ByRules, CacheChoice, Counting, ReplayHook, Report, RuleSet,
    SessionResult, Strategy,
};
use crate::error::EvalError;
use crate::recording::Recording;
use crate::replay::{replay_under, Figures, Prepared, ReplaySettings};

/// One session evaluated under every strategy, under its own billing and under each
/// provider's cache rules ([`settings_under`]). `replay_one` runs one replay (the closure it
/// is given) and returns its figures: the shell passes a function that times it, so the clock
/// stays out of this crate.
///
/// A strategy is replayed once per set of rule sets it decides the same under, and each
/// replay billed under every rule set of its set ([`replay_under`]): a strategy without a
/// cache guard decides alike under all of them; a guarded one alike under rule sets with the
/// same cache multipliers (OpenAI's and Gemini's), and without a cache as its unguarded twin
/// (the guard has nothing to judge), whose figures are taken when the evaluation has it. A
/// guarded replay that held nothing also serves every rule set whose cache reads cost no less
/// and re-writes no more (an edit that paid back there pays back sooner here): Anthropic's
/// replay serves OpenAI's and Gemini's when its guard held nothing.
pub fn evaluate_session(
    name: &str,
    recording: &Recording,
    strategies: &[Strategy],
    billing: Billing,
    replay_one: &mut ReplayHook<'_>,
) -> Result<SessionResult, EvalError> {
    let prepared = Prepared::calibrated(recording, &billing.calibration);
    let own = RuleSet::of(billing.settings.cache);
    let session_settings = ByRules::from_fn(|rules| {
        if rules == own {
            billing.settings.clone()
        } else {
            settings_under(billing.settings.prices.as_ref(), rules)
        }
    });
    let mut figures = Vec::with_capacity(strategies.len());
    let mut by_rules: ByRules<Vec<Figures>> =
        ByRules::from_fn(|_| Vec::with_capacity(strategies.len()));
    // The unguarded strategies' figures, for their guarded twins under rule sets where the
    // guard has nothing to judge.
    let mut unguarded: Vec<(&StrategyConfig, ByRules<Figures>)> = Vec::new();
    for (index, strategy) in strategies.iter().enumerate() {
        let config = strategy.config.as_ref();
        // The session's billing, with the strategy's summarizer priced as its own model.
        let settings = ByRules::from_fn(|rules| strategy.settings(session_settings.get(rules)));
        let guard = config.map(StrategyConfig::cache_guard).unwrap_or_default();
        let guarded = guard != CacheGuard::default();
        let mut found: ByRules<Option<Figures>> = ByRules::default();
        if let (true, Some(config)) = (guarded, config) {
            let twin = unguarded_twin(config);
            if let Some((_, twin_figures)) = unguarded.iter().find(|(c, _)| **c == twin) {
                for rules in RuleSet::ALL {
                    if settings.get(rules).cache_pricing.is_none() {
                        *found.get_mut(rules) = Some(twin_figures.get(rules).clone());
                    }
                }
            }
        }
        // The own rules first, so the primary figures come from the first replay.
        let order = std::iter::once(own).chain(RuleSet::ALL.into_iter().filter(|r| *r != own));
        let order: Vec<RuleSet> = order.collect();
        for (position, &first) in order.iter().enumerate() {
            if found.get(first).is_some() {
                continue;
            }
            let alike: Vec<RuleSet> = order
                .iter()
                .skip(position + 1)
                .copied()
                .filter(|rules| {
                    found.get(*rules).is_none()
                        && (!guarded
                            || settings.get(*rules).cache_pricing
                                == settings.get(first).cache_pricing)
                })
                .collect();
            // Rule sets whose cache is no dearer to re-write and no cheaper to read: where the
            // guard held nothing under `first`, it holds nothing there either, so the same
            // replay serves them; billed on the chance, kept only then.
            let pricing = settings.get(first).cache_pricing;
            let cheaper: Vec<RuleSet> = order
                .iter()
                .skip(position + 1)
                .copied()
                .filter(|rules| {
                    let other = settings.get(*rules).cache_pricing;
                    guarded
                        && !guard.shadow
                        && found.get(*rules).is_none()
                        && !alike.contains(rules)
                        && match (pricing, other) {
                            (Some(p), Some(q)) => q.write <= p.write && q.read >= p.read,
                            _ => false,
                        }
                })
                .collect();
            let also: Vec<ReplaySettings> = alike
                .iter()
                .chain(&cheaper)
                .map(|rules| settings.get(*rules).clone())
                .collect();
            let mut billed_also = Vec::new();
            let mut run = || {
                let (first_figures, more) =
                    replay_under(&prepared, config, settings.get(first), &also)?;
                billed_also = more;
                Ok(first_figures)
            };
            let first_figures = replay_one(index, &mut run)?;
            let held = first_figures.held;
            *found.get_mut(first) = Some(first_figures);
            for (rules, more) in alike.iter().zip(&mut billed_also) {
                *found.get_mut(*rules) = Some(std::mem::take(more));
            }
            if held == 0 {
                for (rules, more) in cheaper
                    .iter()
                    .zip(billed_also.into_iter().skip(alike.len()))
                {
                    *found.get_mut(*rules) = Some(more);
                }
            }
        }
        let found = ByRules::from_fn(|rules| found.get_mut(rules).take().unwrap_or_default());
        for rules in RuleSet::ALL {
            by_rules.get_mut(rules).push(found.get(rules).clone());
        }
        figures.push((strategy.label.clone(), found.get(own).clone()));
        if let (false, Some(config)) = (guarded, config) {
            unguarded.push((config, found));
        }
    }
    Ok(SessionResult {
        name: name.to_string(),
        format: recording.format.as_str(),
        head_tokens: prepared.head_tokens(),
        billing,
        figures,
        by_rules,
        estimated: prepared.anchoring().estimated,
        counting: counting_of(&prepared),
    })
}

/// How `prepared` counted its tokens.
pub fn counting_of(prepared: &Prepared<'_>) -> Counting {
    let anchoring = prepared.anchoring();
    let calls = &prepared.recording().calls;
    Counting {
        estimate_error: anchoring.error,
        missing_spans: anchoring.missing.len(),
        missing_tokens: anchoring.missing_tokens(),
        bytes_per_token: anchoring.bytes_per_token,
        timed: !calls.is_empty() && calls.iter().all(|call| call.at_ms.is_some()),
        lesson: anchoring.lesson,
    }
}

/// `config` with its cache guard cleared.
fn unguarded_twin(config: &StrategyConfig) -> StrategyConfig {
    let mut twin = config.clone();
    if let Some(guard) = guard_of(&mut twin) {
        *guard = CacheGuard::default();
    }
    twin
}

/// Every session evaluated, as `panewise window eval` evaluates them: each billed by
/// [`billing_for`], the sessions with provider readings calibrating the counts of those without
/// ([`crate::anchor::calibrate`], per provider family), then [`evaluate_session`]. Returns
/// the report and, by name, each session whose replay the window stage refused (the rest go
/// on).
pub fn evaluate_all(
    sessions: &[(String, Recording)],
    strategies: &[Strategy],
    table: &PriceTable,
    price_model: Option<&str>,
    cache: CacheChoice,
    replay_one: &mut ReplayHook<'_>,
) -> (Report, Vec<(String, EvalError)>) {
    let lessons = crate::anchor::lessons(sessions.iter().map(|(_, recording)| recording));
    let mut report = Report {
        strategies: strategies.iter().map(|s| s.label.clone()).collect(),
        sessions: Vec::with_capacity(sessions.len()),
    };
    let mut refused = Vec::new();
    for (name, recording) in sessions {
        let mut billing = billing_for(recording, table, price_model, cache);
        billing.calibration = crate::anchor::calibrate(&lessons, recording.family);
        match evaluate_session(name, recording, strategies, billing, replay_one) {
            Ok(session) => report.sessions.push(session),
            Err(error) => refused.push((name.clone(), error)),
        }
    }
    (report, refused)
}
