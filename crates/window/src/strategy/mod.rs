//! The strategy interface (W9) and the built-in strategies.
//!
//! A strategy is a plain function of the visit: it reads the window, asks the refusal engine
//! for a span, and returns a [`Planned`] value. A strategy that needs a summary does not call
//! anything; it returns [`Planned::Summarize`], and the caller of the stage answers it.

mod drop;
mod extractive;
mod hybrid;
mod masking;
mod sliding;
pub(crate) mod summarize;
mod token_budget;

pub use extractive::ExtractiveSummarizer;
pub use hybrid::Hybrid;
pub use masking::ObservationMasking;
pub use sliding::SlidingWindow;
pub use summarize::{
    LineLabel, SummarizeOldest, SummaryAsk, SummaryRequest, SummaryResponse, TranscriptLine,
    TranscriptLines,
};
pub use token_budget::TokenBudget;

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

/// What an engaged strategy decided for a visit.
#[derive(Debug)]
pub enum Planned<M> {
    /// The plan is complete.
    Ready(WindowPlan<M>),
    /// The plan folds a span into a summary the caller must obtain; the stage turns this into
    /// [`crate::VisitOutcome::NeedsSummary`]. Only summarizing strategies build one; a custom
    /// strategy gets one by delegating to a [`SummarizeOldest`] it holds.
    Summarize(SummaryAsk),
}

impl<M> From<WindowPlan<M>> for Planned<M> {
    fn from(plan: WindowPlan<M>) -> Self {
        Planned::Ready(plan)
    }
}

/// A window strategy: decides, at every iteration boundary, what of the window still goes on
/// the wire. A custom strategy is one impl of this trait.
///
/// Planning is synchronous and deterministic: the same conversation and context give the same
/// answer. A strategy keeps no state between visits; what the stage must remember lives in
/// the caller's [`crate::StageMemory`].
pub trait WindowStrategy<M: WindowMessage>: Send + Sync {
    /// A non-empty name, written into every record the strategy files.
    fn name(&self) -> &str;

    /// The paid model the strategy calls, if it calls one.
    fn billing(&self) -> Option<Billing> {
        None
    }

    /// Plans this visit. `Ok(None)` means the strategy did not engage: nothing is applied or
    /// recorded. An engaged visit returns a plan whose record explains it, even when nothing
    /// could be removed, or a request for the summary that completes it.
    fn plan(&self, visit: &mut Visit<'_, M>) -> Result<Option<Planned<M>>, WindowError>;
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
