//! `sliding-window` (W32): keep the last N turns. Needs no usage figures and calls no model.

use super::drop::drop_span;
use super::{Planned, WindowStrategy};
use crate::error::WindowError;
use crate::message::WindowMessage;
use crate::plan::WindowPlan;
use crate::record::{RecordDetail, SlidingWindowRecord};
use crate::visit::Visit;

/// Keeps the last `keep_recent_turns` turns, dropping the oldest removable span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlidingWindow {
    keep_recent_turns: usize,
}

impl SlidingWindow {
    /// The strategy's name in records.
    pub const NAME: &'static str = "sliding-window";

    /// Keeps `keep_recent_turns` turns; it must be at least 1.
    pub fn new(keep_recent_turns: usize) -> Result<Self, WindowError> {
        if keep_recent_turns == 0 {
            return Err(WindowError::InvalidConfig {
                field: "keepRecentTurns".to_string(),
                reason: "must be a whole number of at least 1".to_string(),
            });
        }
        Ok(Self { keep_recent_turns })
    }
}

impl<M: WindowMessage> WindowStrategy<M> for SlidingWindow {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn plan(&self, visit: &mut Visit<'_, M>) -> Result<Option<Planned<M>>, WindowError> {
        let turns_before = visit.conversation().turn_count();
        if turns_before <= self.keep_recent_turns {
            return Ok(None);
        }
        let removal = visit.plan_removal(self.keep_recent_turns, false);
        let mut record = visit.empty_record(Self::NAME);
        record.refusals = removal.refusals.clone();
        let detail = |turns_after| {
            RecordDetail::SlidingWindow(SlidingWindowRecord {
                keep_recent_turns: self.keep_recent_turns,
                turns_before,
                turns_after,
            })
        };
        let Some(span) = removal.span else {
            record.detail = detail(turns_before);
            return Ok(Some(Planned::Ready(WindowPlan::unchanged(record))));
        };
        let mut dropped = drop_span(visit, &removal, span, record);
        dropped.plan.record.detail = detail(dropped.turns_after);
        Ok(Some(Planned::Ready(dropped.plan)))
    }
}
