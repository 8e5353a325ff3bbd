//! The floor (W80–W85): what must stay on the wire whatever a token-triggered strategy does —
//! the system prompt and tools, system messages, the current request, the pinned and pending
//! turns, and the kept tail. When the floor alone is over the threshold, no removal and no
//! summary can bring the window under it; removing anyway is the compaction loop (every call
//! removes the previous round's result, the model calls its tool again, and again). So the
//! strategy files one record naming the floor instead ([`stood_down_plan`]), and the stage
//! stays quiet while the same request stands ([`floor_step`]).
//!
//! The floor is judged from the reading the strategy was triggered on, minus the local count
//! of what may leave. The reading is the only figure that includes what the window does not
//! hold (the system prompt and tool definitions); the local count is the only one that can
//! price a part of the window. The difference is named `outsideWindowTokens`.

use std::ops::Range;

use crate::message::WindowMessage;
use crate::plan::{ContentReplacement, WindowPlan};
use crate::record::{
    BudgetPressure, FloorParts, PlanAction, Refusal, RefusalReason, WindowFloor, WindowRecord,
};
use crate::visit::{TurnSpan, Visit};

/// The floor of this visit for a strategy keeping `keep_recent_turns` turns, judged on
/// `judged` tokens (the reading plus the tokens appended since). `masks` are replacements the
/// strategy would still make (hybrid): what they save inside kept turns lowers the floor.
pub(crate) fn measure_floor<M: WindowMessage>(
    visit: &Visit<'_, M>,
    keep_recent_turns: usize,
    judged: u64,
    threshold_tokens: u64,
    masks: Option<&[ContentReplacement]>,
) -> WindowFloor {
    let conversation = visit.conversation();
    let turns = conversation.turn_meta();
    let kept = visit.kept_turns(keep_recent_turns);
    let local_total = conversation.tokens_in(0..conversation.len());
    let mut parts = FloorParts {
        outside_window_tokens: judged.saturating_sub(local_total),
        system_tokens: 0,
        current_request_tokens: 0,
        pinned_tokens: 0,
        pending_tokens: 0,
        kept_tail_tokens: 0,
        keep_recent_turns,
        masking_saves_tokens: None,
    };
    let mut kept_ranges: Vec<Range<usize>> = Vec::with_capacity(kept.len());
    for (index, reason) in kept {
        let Some(turn) = turns.get(index) else {
            continue;
        };
        let range = turn.start..turn.end();
        let tokens = conversation.tokens_in(range.clone());
        kept_ranges.push(range);
        let part = match reason {
            RefusalReason::SystemEnvelope => &mut parts.system_tokens,
            RefusalReason::CurrentRequest => &mut parts.current_request_tokens,
            RefusalReason::LastToolResult
            | RefusalReason::LedgerFact
            | RefusalReason::ExcludedTool => &mut parts.pinned_tokens,
            RefusalReason::PausedTool
            | RefusalReason::PendingCheckIn
            | RefusalReason::UnresolvedToolCall => &mut parts.pending_tokens,
            RefusalReason::InsideKeepWindow => &mut parts.kept_tail_tokens,
            // The walk names no span-level reason; were one to come, the turn still stays,
            // so it is priced with what is pending rather than lost from the sum.
            RefusalReason::OnlyExistingSummary
            | RefusalReason::SummarizerFailed
            | RefusalReason::ReplacementNotSmaller
            | RefusalReason::FloorAboveThreshold => &mut parts.pending_tokens,
        };
        *part = part.saturating_add(tokens);
    }
    let relief = masks.map(|masks| {
        masks
            .iter()
            .filter(|mask| kept_ranges.iter().any(|range| range.contains(&mask.index)))
            .map(|mask| {
                conversation
                    .tokens_in(mask.index..mask.index + 1)
                    .saturating_sub(conversation.count_tokens(&mask.content))
            })
            .sum::<u64>()
    });
    parts.masking_saves_tokens = relief;
    let floor_tokens = [
        parts.outside_window_tokens,
        parts.system_tokens,
        parts.current_request_tokens,
        parts.pinned_tokens,
        parts.pending_tokens,
        parts.kept_tail_tokens,
    ]
    .into_iter()
    .fold(0u64, u64::saturating_add)
    .saturating_sub(relief.unwrap_or(0));
    WindowFloor {
        floor_tokens,
        threshold_tokens,
        parts,
    }
}

/// True when the floor alone is over the threshold: nothing the strategy may do brings the
/// window under it (W81).
pub(crate) fn over_threshold(floor: &WindowFloor) -> bool {
    floor.floor_tokens > floor.threshold_tokens
}

/// The plan of a visit that stands down (W81): nothing changes; the record keeps the refusal
/// engine's refusals, names the span that would have left with `floor-above-threshold`, and
/// carries the floor. `record` already holds the strategy's detail.
pub(crate) fn stood_down_plan<M>(
    mut record: WindowRecord,
    refusals: Vec<Refusal>,
    span: Option<TurnSpan>,
    floor: WindowFloor,
    judged: u64,
) -> WindowPlan<M> {
    record.refusals = refusals;
    if let Some(span) = span {
        record.refusals.insert(
            0,
            Refusal {
                reason: RefusalReason::FloorAboveThreshold,
                turn_index: span.from_turn,
                message_index: span.start,
            },
        );
    }
    let threshold = floor.threshold_tokens;
    record.floor = Some(floor);
    let mut plan = WindowPlan::unchanged(record);
    plan.budget_pressure = Some(BudgetPressure {
        cap_tokens: threshold,
        projected_tokens: judged,
        plan_action: PlanAction::None,
    });
    plan
}

/// What stays the same while a stand-down holds: the current request, by its index and size.
/// The kept tail and the recency pins slide every round by design, so they are not part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FloorKey {
    request_index: Option<usize>,
    request_chars: u64,
}

impl FloorKey {
    pub(crate) fn of<M: WindowMessage>(visit: &Visit<'_, M>) -> Self {
        let request_index = visit.current_request_index();
        let request_chars = request_index.map_or(0, |index| {
            visit
                .conversation()
                .chars_in(index..index.saturating_add(1))
        });
        Self {
            request_index,
            request_chars,
        }
    }
}

/// What the stage does with an engaged visit, given the stand-down it remembers (W82–W84).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloorStep {
    /// The floor is under the threshold: the plan goes ahead, and any stand-down ends (W84).
    Proceed,
    /// A new stand-down: its record is filed once and remembered (W81, W83).
    File,
    /// The stand-down already filed for this request still holds: nothing is filed (W82).
    Quiet,
}

/// Decides a visit's [`FloorStep`] and what the memory holds after it. `stood_down` says
/// whether the strategy's plan stands down on its floor; `remembered` is the stand-down on
/// file, if any, and `now` this visit's key.
pub(crate) fn floor_step(
    remembered: Option<FloorKey>,
    now: FloorKey,
    stood_down: bool,
) -> (FloorStep, Option<FloorKey>) {
    match (stood_down, remembered) {
        (false, _) => (FloorStep::Proceed, None),
        (true, Some(key)) if key == now => (FloorStep::Quiet, Some(key)),
        (true, _) => (FloorStep::File, Some(now)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(request_index: Option<usize>, request_chars: u64) -> FloorKey {
        FloorKey {
            request_index,
            request_chars,
        }
    }

    /// One row per rule: the remembered stand-down, this visit's key, whether the plan stands
    /// down, and what the stage does and remembers.
    #[test]
    fn floor_step_follows_w81_to_w84() {
        let request = key(Some(0), 5);
        let next_request = key(Some(9), 12);
        let rows = [
            (
                "W84 under the floor, nothing on file",
                None,
                request,
                false,
                FloorStep::Proceed,
                None,
            ),
            (
                "W84 the floor fell back under: the stand-down ends",
                Some(request),
                request,
                false,
                FloorStep::Proceed,
                None,
            ),
            (
                "W81 first visit over the floor: filed once",
                None,
                request,
                true,
                FloorStep::File,
                Some(request),
            ),
            (
                "W82 same request, still over: quiet",
                Some(request),
                request,
                true,
                FloorStep::Quiet,
                Some(request),
            ),
            (
                "W83 a new request, still over: filed again",
                Some(request),
                next_request,
                true,
                FloorStep::File,
                Some(next_request),
            ),
            (
                "W83 same index, another request text",
                Some(request),
                key(Some(0), 6),
                true,
                FloorStep::File,
                Some(key(Some(0), 6)),
            ),
            (
                "W82 no request known, still over: quiet",
                Some(key(None, 0)),
                key(None, 0),
                true,
                FloorStep::Quiet,
                Some(key(None, 0)),
            ),
        ];
        for (rule, remembered, now, stood_down, step, after) in rows {
            assert_eq!(
                floor_step(remembered, now, stood_down),
                (step, after),
                "{rule}"
            );
        }
    }
}
