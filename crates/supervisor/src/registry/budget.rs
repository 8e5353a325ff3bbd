//! The daemon's spend caps over all its sessions (R112): `[limits] daemon_max_cost_usd` and
//! `daily_max_cost_usd`, weighed after every fold of a session's message. The day is the
//! UTC day of the message's stamp (data, never a clock read); each session's cost at the
//! day's start is its baseline ([`DayLedger`]). A verdict holds every running session, a new
//! one included, as its own cap would ([`Control::DaemonBudget`]); a raise
//! (`daemon/set_budget`) that clears it releases them.

use panewise_pane_state::budget::{daemon_verdict, DaemonCaps, DayLedger};
use panewise_session_protocol::Control;

use super::{Effect, Registry};

/// A day, in ms.
const DAY_MS: u64 = 86_400_000;

/// The daemon's caps, its day's baselines and the verdict its sessions were last told.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DaemonBudget {
    pub(crate) caps: DaemonCaps,
    pub(crate) day: DayLedger,
    pub(crate) verdict: Option<String>,
    /// The latest stamp folded, ms since the epoch: the time a raise is weighed at.
    pub(crate) last_at_ms: u64,
}

impl Registry {
    /// Every session's known cost now.
    fn costs(&self) -> Vec<(String, f64)> {
        self.sessions
            .iter()
            .filter_map(|(id, session)| {
                let cost = session.state.session_totals.as_ref()?.cost_usd?;
                Some((id.clone(), cost))
            })
            .collect()
    }

    /// Starts the day of `at_ms` when it is a new one, before the message stamped so is
    /// folded: what that message adds counts on its day.
    pub(super) fn roll_day(&mut self, at_ms: u64) {
        if at_ms / DAY_MS > self.budget.day.day {
            let costs = self.costs();
            self.budget.day.roll(
                at_ms / DAY_MS,
                costs.iter().map(|(id, cost)| (id.as_str(), *cost)),
            );
        }
    }

    /// Weighs every session's known cost against the daemon's caps at `at_ms` (ms since the
    /// epoch), and tells each running session when the verdict changes.
    pub(super) fn weigh_daemon_budget(&mut self, at_ms: u64, effects: &mut Vec<Effect>) {
        self.budget.last_at_ms = self.budget.last_at_ms.max(at_ms);
        let caps = self.budget.caps;
        if caps.max_cost_usd.is_none()
            && caps.daily_max_cost_usd.is_none()
            && self.budget.verdict.is_none()
        {
            return;
        }
        self.roll_day(at_ms);
        let costs = self.costs();
        let each = || costs.iter().map(|(id, cost)| (id.as_str(), *cost));
        let total: f64 = each().map(|(_, cost)| cost).sum();
        let today = self.budget.day.spent(each());
        let verdict = daemon_verdict(&self.budget.caps, total, today);
        // Told when the hold begins or ends, not at every cent past the cap: the reason
        // first told stands while the hold does (a new session hears the same words).
        if verdict.is_some() == self.budget.verdict.is_some() {
            return;
        }
        self.budget.verdict.clone_from(&verdict);
        for (id, session) in &self.sessions {
            if !session.is_ended() {
                effects.push(Effect::Control {
                    id: id.clone(),
                    control: Control::DaemonBudget(verdict.clone()),
                });
            }
        }
    }

    /// A session hosted while the daemon's verdict holds is held from its start.
    pub(super) fn tell_new_session(&self, id: &str, effects: &mut Vec<Effect>) {
        if let Some(verdict) = &self.budget.verdict {
            effects.push(Effect::Control {
                id: id.to_owned(),
                control: Control::DaemonBudget(Some(verdict.clone())),
            });
        }
    }

    /// New daemon caps: each given replaces the one held; weighed again at once (at the
    /// latest stamp folded). The caps now.
    pub(super) fn set_daemon_caps(
        &mut self,
        caps: DaemonCaps,
        effects: &mut Vec<Effect>,
    ) -> DaemonCaps {
        self.budget.caps = DaemonCaps {
            max_cost_usd: caps.max_cost_usd.or(self.budget.caps.max_cost_usd),
            daily_max_cost_usd: caps
                .daily_max_cost_usd
                .or(self.budget.caps.daily_max_cost_usd),
        };
        self.weigh_daemon_budget(self.budget.last_at_ms, effects);
        self.budget.caps
    }
}
