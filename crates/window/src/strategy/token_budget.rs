//! `token-budget` (W33): drop the oldest turns until the window is under a threshold, judged
//! from the provider-reported input tokens of the last call plus the counted tokens of what
//! was appended since. A 0/0 reading is the named unmeasurable error, never a guess.
//!
//! When what must stay (the floor, W80) is already over the threshold, it drops nothing and
//! stands down instead (W81): dropping would only take the last round's results away.
//!
//! Unlike the original, which drops the whole removable span once triggered, this drops the
//! fewest oldest turns of that span that bring the window under the threshold: the issue asks
//! for "until under", and it keeps more evidence on the wire.

use super::drop::drop_span;
use super::{fresh_reading, Planned, WindowStrategy, DEFAULT_KEEP_RECENT_TURNS};
use crate::error::WindowError;
use crate::floor::{measure_floor, over_threshold, stood_down_plan};
use crate::message::WindowMessage;
use crate::notice::DropNotice;
use crate::plan::WindowPlan;
use crate::record::{BudgetPressure, PlanAction, RecordDetail, TokenBudgetRecord};
use crate::visit::{TurnSpan, Visit};

/// Drops the oldest turns until the window is judged under `threshold_tokens`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBudget {
    threshold_tokens: u64,
    keep_recent_turns: usize,
}

impl TokenBudget {
    /// The strategy's name in records.
    pub const NAME: &'static str = "token-budget";

    /// A budget of `threshold_tokens` (greater than 0) keeping the default 6 recent turns.
    pub fn new(threshold_tokens: u64) -> Result<Self, WindowError> {
        Self::with_keep_recent_turns(threshold_tokens, DEFAULT_KEEP_RECENT_TURNS)
    }

    /// A budget keeping `keep_recent_turns` (at least 1) recent turns.
    pub fn with_keep_recent_turns(
        threshold_tokens: u64,
        keep_recent_turns: usize,
    ) -> Result<Self, WindowError> {
        if threshold_tokens == 0 {
            return Err(WindowError::InvalidConfig {
                field: "thresholdTokens".to_string(),
                reason: "must be greater than 0".to_string(),
            });
        }
        if keep_recent_turns == 0 {
            return Err(WindowError::InvalidConfig {
                field: "keepRecentTurns".to_string(),
                reason: "must be a whole number of at least 1".to_string(),
            });
        }
        Ok(Self {
            threshold_tokens,
            keep_recent_turns,
        })
    }
}

/// The fewest leading turns of `span` whose removal frees `need` tokens, allowing `slack` for
/// the notice put in their place; the whole span when even that is not enough. Binary search
/// over the running token sums: O(log turns).
pub(crate) fn shortest_sufficient_span<M: WindowMessage>(
    visit: &Visit<'_, M>,
    span: TurnSpan,
    need: u64,
    slack: u64,
) -> TurnSpan {
    let conversation = visit.conversation();
    let turns = conversation.turn_meta();
    let start = span.start;
    let frees = |to_turn: usize| conversation.tokens_in(start..turns[to_turn].end());
    let (mut low, mut high) = (span.from_turn, span.to_turn);
    if frees(high) < need.saturating_add(slack) {
        return span;
    }
    while low < high {
        let middle = low + (high - low) / 2;
        if frees(middle) >= need.saturating_add(slack) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    TurnSpan {
        from_turn: span.from_turn,
        to_turn: low,
        start,
        end: turns[low].end(),
    }
}

/// An upper bound on the tokens of any drop notice for a part of `span` at this visit: the
/// longest notice, with four maximal tool names, the kept-request sentence and the archived
/// spans' sentence listing the most spans with the span's longest description.
pub(crate) fn notice_slack<M: WindowMessage>(
    visit: &Visit<'_, M>,
    strategy: &str,
    span: TurnSpan,
) -> u64 {
    let range = span.messages();
    let spans = crate::archive::longest_spans_sentence(
        range.len(),
        crate::visit::longest_description_chars(visit, range),
    );
    let longest_name = "x".repeat(48);
    let names = [longest_name.as_str(); 5];
    let text = DropNotice {
        dropped: visit.conversation().len(),
        iteration: visit.context().iteration,
        strategy,
        request_kept: true,
    }
    .render(&names, &spans);
    visit.conversation().count_tokens(&text)
}

impl<M: WindowMessage> WindowStrategy<M> for TokenBudget {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn plan(&self, visit: &mut Visit<'_, M>) -> Result<Option<Planned<M>>, WindowError> {
        let Some((measured, since)) = fresh_reading(visit)? else {
            return Ok(None);
        };
        let judged = measured.saturating_add(since);
        if judged <= self.threshold_tokens {
            return Ok(None);
        }
        let turns_before = visit.conversation().turn_count();
        let chars_since = visit.measured().map_or(0, |measured| {
            visit
                .conversation()
                .chars_in(measured.sent_messages..visit.conversation().len())
        });
        let removal = visit.plan_removal(self.keep_recent_turns, false);
        let mut record = visit.empty_record(Self::NAME);
        record.refusals = removal.refusals.clone();
        let detail = |turns_after| {
            RecordDetail::TokenBudget(TokenBudgetRecord {
                measured_tokens: measured,
                chars_since_measured: chars_since,
                tokens_since_measured: since,
                threshold_tokens: self.threshold_tokens,
                over_budget: true,
                keep_recent_turns: self.keep_recent_turns,
                turns_before,
                turns_after,
            })
        };
        let pressure = |action| BudgetPressure {
            cap_tokens: self.threshold_tokens,
            projected_tokens: judged,
            plan_action: action,
        };
        let floor = measure_floor(
            visit,
            self.keep_recent_turns,
            judged,
            self.threshold_tokens,
            None,
        );
        if over_threshold(&floor) {
            // Nothing this strategy may remove brings the window under: stand down (W81).
            record.detail = detail(turns_before);
            return Ok(Some(Planned::Ready(stood_down_plan(
                record,
                removal.refusals,
                removal.span,
                floor,
                judged,
            ))));
        }
        let Some(full_span) = removal.span else {
            record.detail = detail(turns_before);
            let mut plan = WindowPlan::unchanged(record);
            plan.budget_pressure = Some(pressure(PlanAction::None));
            return Ok(Some(Planned::Ready(plan)));
        };
        let need = judged - self.threshold_tokens;
        let slack = notice_slack(visit, Self::NAME, full_span);
        let mut span = shortest_sufficient_span(visit, full_span, need, slack);
        let turns = visit.conversation().turn_meta();
        let mut dropped = drop_span(visit, &removal, span, record.clone());
        // A short span may not fit any notice; a longer one may, so grow it turn by turn.
        while dropped.plan.edit.is_none() && span.to_turn < full_span.to_turn {
            span.to_turn += 1;
            span.end = turns[span.to_turn].end();
            dropped = drop_span(visit, &removal, span, record.clone());
        }
        dropped.plan.record.detail = detail(dropped.turns_after);
        let action = if dropped.plan.edit.is_some() {
            PlanAction::Evict
        } else {
            PlanAction::None
        };
        dropped.plan.budget_pressure = Some(pressure(action));
        Ok(Some(Planned::Ready(dropped.plan)))
    }
}
