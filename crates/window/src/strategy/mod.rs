//! The strategy interface (W9) and the built-in strategies.

mod drop;
mod extractive;
mod hybrid;
mod masking;
mod sliding;
mod summarize;
mod token_budget;

pub use extractive::ExtractiveSummarizer;
pub use hybrid::Hybrid;
pub use masking::ObservationMasking;
pub use sliding::SlidingWindow;
pub use summarize::{
    LineLabel, SummarizeOldest, Summarizer, SummaryRequest, SummaryResponse, TranscriptLine,
    TranscriptLines,
};
pub use token_budget::TokenBudget;

use async_trait::async_trait;

use crate::error::WindowError;
use crate::message::WindowMessage;
use crate::plan::WindowPlan;
use crate::visit::Visit;

/// The paid model a strategy calls, when it calls one (W9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Billing {
    /// The model billed.
    pub model: String,
}

/// A window strategy: decides, at every iteration boundary, what of the window still goes on
/// the wire. A custom strategy is one impl of this trait.
#[async_trait]
pub trait WindowStrategy<M: WindowMessage>: Send + Sync {
    /// A non-empty name, written into every record the strategy files.
    fn name(&self) -> &str;

    /// The paid model the strategy calls, if it calls one.
    fn billing(&self) -> Option<Billing> {
        None
    }

    /// Plans this visit. `Ok(None)` means the strategy did not engage: nothing is applied or
    /// recorded. An engaged visit returns a plan whose record explains it, even when nothing
    /// could be removed.
    async fn plan(&self, visit: &Visit<'_, M>) -> Result<Option<WindowPlan<M>>, WindowError>;
}

/// `keepRecentTurns` when a token-triggered strategy is not told otherwise (W51).
pub const DEFAULT_KEEP_RECENT_TURNS: usize = 6;

/// `keepRecentObservations` when a masking strategy is not told otherwise.
pub const DEFAULT_KEEP_RECENT_OBSERVATIONS: usize = 10;

/// Checks a reading the way both token-triggered strategies do (W33): `Ok(None)` when there
/// is no fresh reading, the unmeasurable error for 0/0, else `(measured input, counted tokens
/// since the call)`.
pub(crate) fn fresh_reading<M: WindowMessage>(
    visit: &Visit<'_, M>,
) -> Result<Option<(u64, u64)>, WindowError> {
    let Some(measured) = visit.measured() else {
        return Ok(None);
    };
    if measured.usage.input == 0 && measured.usage.output == 0 {
        return Err(WindowError::Unmeasurable {
            provider: visit.context().provider.to_string(),
        });
    }
    Ok(Some(visit.tokens_now(measured)))
}
