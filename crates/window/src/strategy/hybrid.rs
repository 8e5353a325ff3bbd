//! `hybrid`: observation masking first; a summary fold only when masking alone does not bring
//! the window under the threshold.

use super::masking::plan_masks;
use super::summarize::{FoldDetail, Reading};
use super::{fresh_reading, Billing, Planned, SummarizeOldest, WindowStrategy};
use crate::error::WindowError;
use crate::message::WindowMessage;
use crate::plan::{WindowEdit, WindowPlan};
use crate::record::{BudgetPressure, HybridRecord, PlanAction, RecordDetail};
use crate::visit::Visit;

/// Masks old tool results, then folds the oldest span if the window is still over budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hybrid {
    keep_recent_observations: usize,
    clear_at_least_tokens: Option<u64>,
    summarize: SummarizeOldest,
}

impl Hybrid {
    /// The strategy's name in records.
    pub const NAME: &'static str = "hybrid";

    /// Masking that keeps `keep_recent_observations` results, backed by `summarize`, whose
    /// threshold is the hybrid's threshold.
    pub fn new(keep_recent_observations: usize, summarize: SummarizeOldest) -> Self {
        Self {
            keep_recent_observations,
            clear_at_least_tokens: None,
            summarize,
        }
    }

    /// The same strategy whose masking half masks nothing when its placeholders would save
    /// fewer than `tokens` tokens (`clearAtLeastTokens`, W88); the fold is not affected.
    pub fn with_clear_at_least_tokens(mut self, tokens: Option<u64>) -> Self {
        self.clear_at_least_tokens = tokens;
        self
    }
}

impl<M: WindowMessage> WindowStrategy<M> for Hybrid {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn billing(&self) -> Option<Billing> {
        WindowStrategy::<M>::billing(&self.summarize)
    }

    fn plan(&self, visit: &mut Visit<'_, M>) -> Result<Option<Planned<M>>, WindowError> {
        let Some((measured, since)) = fresh_reading(visit)? else {
            return Ok(None);
        };
        let threshold = self.summarize.threshold_tokens();
        let judged = measured.saturating_add(since);
        if judged <= threshold {
            return Ok(None);
        }
        let masks = plan_masks(
            visit,
            self.keep_recent_observations,
            self.clear_at_least_tokens,
        );
        let tokens_after_masking = judged.saturating_sub(masks.saved_tokens);
        let mut record = visit.empty_record(Self::NAME);
        if tokens_after_masking <= threshold {
            record.window_chars_after = record.window_chars_before - masks.saved_chars;
            record.detail = RecordDetail::Hybrid(HybridRecord {
                measured_tokens: measured,
                threshold_tokens: threshold,
                masking: masks.record,
                compaction: None,
            });
            let mut plan = WindowPlan::unchanged(record);
            plan.edit = Some(WindowEdit::replacements_only(
                masks.replacements,
                visit.context().now_ms,
            ));
            plan.budget_pressure = Some(BudgetPressure {
                cap_tokens: threshold,
                projected_tokens: judged,
                plan_action: PlanAction::Mask,
            });
            return Ok(Some(Planned::Ready(plan)));
        }
        let detail = FoldDetail::Hybrid {
            masking: masks.record,
            saved_chars: masks.saved_chars,
        };
        Ok(Some(self.summarize.begin_fold(
            visit,
            Reading { measured, judged },
            record,
            masks.replacements,
            detail,
        )))
    }
}
