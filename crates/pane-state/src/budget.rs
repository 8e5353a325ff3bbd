//! Spend caps: whether a session, or a daemon's sessions together, or their day, are over
//! their budget, and the reason a person is shown (R112, R113).
//!
//! Pure: the figures come in as data (a session's totals and the running turn's, the daemon's
//! sessions' costs, the day's start as the caller's day number), the verdict goes out as data.
//! The session engine holds a session with [`crate::Msg::BudgetReached`] on a verdict, and
//! releases it with [`crate::Msg::BudgetReleased`] once a raise clears it.

use std::collections::BTreeMap;

use panewise_protocol::SessionStats;
use serde::{Deserialize, Serialize};

use crate::state::BudgetCaps;

/// What a session has spent so far: the cost when every call of it was priced, and the tokens
/// it processed (input uncached, cache reads, cache writes, output).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// In US dollars, reported or estimated; `None` when unknown.
    pub cost_usd: Option<f64>,
    /// Every token processed.
    pub tokens: u64,
}

impl Spend {
    /// What `totals` (the finished turns) and `turn` (the running turn, where its backend knows
    /// it) add up to. A cost is known only when each part that has figures has one.
    pub fn of(totals: Option<&SessionStats>, turn: Option<&SessionStats>) -> Spend {
        let parts: Vec<&SessionStats> = totals.into_iter().chain(turn).collect();
        let tokens = parts
            .iter()
            .map(|stats| tokens_of(stats))
            .fold(0u64, u64::saturating_add);
        let mut cost = Some(0.0);
        for stats in &parts {
            cost = match (cost, stats.cost_usd) {
                (Some(sum), Some(part)) if part.is_finite() && part >= 0.0 => Some(sum + part),
                // A part with tokens but no price makes the whole cost unknown.
                (Some(sum), None) if tokens_of(stats) == 0 => Some(sum),
                _ => None,
            };
        }
        Spend {
            cost_usd: cost.filter(|sum: &f64| sum.is_finite()),
            tokens,
        }
    }
}

/// Every token `stats` counts.
fn tokens_of(stats: &SessionStats) -> u64 {
    [
        stats.input_tokens,
        stats.cached_input_tokens,
        stats.cache_write_input_tokens,
        stats.output_tokens,
    ]
    .into_iter()
    .flatten()
    .fold(0, u64::saturating_add)
}

/// A dollar figure as the reasons word it: cents past a dollar, four places below one (a
/// mock's or a cheap model's calls cost fractions of a cent).
pub fn usd(amount: f64) -> String {
    if amount >= 1.0 {
        format!("${amount:.2}")
    } else {
        format!("${amount:.4}")
    }
}

/// Whether `spend` reached one of `caps`, and the reason shown when it did: `budget reached:
/// $X of $Y` for the cost, `budget reached: N tokens of M` for the tokens (the cap of a session
/// whose cost is unknown, said so). A cost cap with the cost unknown and no token cap holds
/// nothing: there is nothing to compare.
pub fn session_verdict(caps: &BudgetCaps, spend: &Spend) -> Option<String> {
    if let (Some(cap), Some(cost)) = (caps.max_cost_usd, spend.cost_usd) {
        if cost >= cap {
            return Some(format!("budget reached: {} of {}", usd(cost), usd(cap)));
        }
    }
    let cap = caps.max_tokens?;
    (spend.tokens >= cap).then(|| {
        let unknown = if caps.max_cost_usd.is_some() && spend.cost_usd.is_none() {
            " (cost unknown)"
        } else {
            ""
        };
        format!("budget reached: {} tokens of {cap}{unknown}", spend.tokens)
    })
}

/// What a raise says when it clears the hold: the caps now.
pub fn raised(caps: &BudgetCaps) -> String {
    let mut parts = Vec::new();
    if let Some(cap) = caps.max_cost_usd {
        parts.push(usd(cap));
    }
    if let Some(cap) = caps.max_tokens {
        parts.push(format!("{cap} tokens"));
    }
    if parts.is_empty() {
        "budget cleared: no cap".to_owned()
    } else {
        format!("budget raised to {}", parts.join(" and "))
    }
}

/// The daemon's caps over all its sessions together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DaemonCaps {
    /// The most all the daemon's sessions may cost together, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The most they may cost in one day (the day as the daemon's clock counts it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_max_cost_usd: Option<f64>,
}

/// What the daemon's sessions spent on the current day: each session's cost at the day's
/// start is its baseline, and the day's spend is what they added since. The day is a number
/// the caller gives (days since the epoch in its time zone): nothing here reads a clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DayLedger {
    /// The day the baselines are of.
    pub day: u64,
    /// Each session's cost when the day began (absent: it started during the day).
    pub baseline: BTreeMap<String, f64>,
}

impl DayLedger {
    /// Moves to `day` when it is a later one: every session's cost now becomes its baseline.
    pub fn roll<'a>(&mut self, day: u64, costs: impl Iterator<Item = (&'a str, f64)>) {
        if day > self.day {
            self.day = day;
            self.baseline = costs.map(|(id, cost)| (id.to_owned(), cost)).collect();
        }
    }

    /// What `costs` (each session's cost now) added since the day began.
    pub fn spent<'a>(&self, costs: impl Iterator<Item = (&'a str, f64)>) -> f64 {
        costs
            .map(|(id, cost)| (cost - self.baseline.get(id).copied().unwrap_or(0.0)).max(0.0))
            .sum()
    }
}

/// Whether the daemon's sessions together (`total`, every session's known cost) or their day
/// (`today`) reached a cap of `caps`, and the reason each of its sessions is held with.
pub fn daemon_verdict(caps: &DaemonCaps, total: f64, today: f64) -> Option<String> {
    if let Some(cap) = caps.max_cost_usd.filter(|cap| total >= *cap) {
        return Some(format!(
            "daemon budget reached: {} of {}",
            usd(total),
            usd(cap)
        ));
    }
    let cap = caps.daily_max_cost_usd.filter(|cap| today >= *cap)?;
    Some(format!(
        "daily budget reached: {} of {}",
        usd(today),
        usd(cap)
    ))
}

/// The message that brings `state`'s hold in line with its caps, if any: a hold when the
/// session's spend (its totals and `turn`, the running turn's figures where its backend knows
/// them) or `outside` (the daemon's verdict) reaches a cap and the session is not held yet
/// (R112); a release when it is held and neither does any more, as after a raise (R113).
pub fn due(
    state: &crate::state::PaneState,
    turn: Option<&SessionStats>,
    outside: Option<&str>,
) -> Option<crate::Msg> {
    let spend = Spend::of(state.session_totals.as_ref(), turn);
    let caps = state.budget.unwrap_or_default();
    let verdict = session_verdict(&caps, &spend).or_else(|| outside.map(str::to_owned));
    match (verdict, &state.budget_hold) {
        (Some(reason), None) => Some(crate::Msg::BudgetReached { reason }),
        (None, Some(_)) => Some(crate::Msg::BudgetReleased {
            reason: raised(&caps),
        }),
        _ => None,
    }
}
