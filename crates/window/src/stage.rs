//! The stage (W49): one visit per iteration boundary. It prepares the visit, asks the strategy,
//! and completes the record with what only the stage knows (dropped tool names, pin
//! observations, standings), so a custom strategy's records carry them too.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::WindowError;
use crate::message::{Role, WindowMessage};
use crate::plan::WindowPlan;
use crate::record::DroppedStanding;
use crate::strategy::WindowStrategy;
use crate::visit::{PinSettings, Visit, VisitContext};
use crate::Conversation;

/// The window stage: one strategy and its pin ceilings.
pub struct WindowStage<M: WindowMessage> {
    strategy: Box<dyn WindowStrategy<M>>,
    pins: PinSettings,
    warned: AtomicBool,
}

impl<M: WindowMessage> std::fmt::Debug for WindowStage<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowStage")
            .field("strategy", &self.strategy.name())
            .field("pins", &self.pins)
            .finish()
    }
}

impl<M: WindowMessage> WindowStage<M> {
    /// A stage running `strategy` with the default pin ceilings.
    pub fn new(strategy: Box<dyn WindowStrategy<M>>) -> Self {
        Self::with_pins(strategy, PinSettings::default())
    }

    /// A stage running `strategy` with the given pin ceilings.
    pub fn with_pins(strategy: Box<dyn WindowStrategy<M>>, pins: PinSettings) -> Self {
        Self {
            strategy,
            pins,
            warned: AtomicBool::new(false),
        }
    }

    /// The strategy's name.
    pub fn strategy_name(&self) -> &str {
        self.strategy.name()
    }

    /// The pin ceilings.
    pub fn pins(&self) -> PinSettings {
        self.pins
    }

    /// Visits the window once. `Ok(None)`: the strategy did not engage, so nothing is to be
    /// applied or recorded. Otherwise apply the plan with [`Conversation::apply`] and append
    /// `plan.record` to the caller's ledger.
    ///
    /// A strategy warning is returned on the first plan that carries one and dropped after,
    /// so it reaches the developer once per stage.
    pub async fn visit(
        &self,
        conversation: &Conversation<M>,
        context: VisitContext<'_>,
    ) -> Result<Option<WindowPlan<M>>, WindowError> {
        let visit = Visit::new(conversation, context, self.pins);
        let Some(mut plan) = self.strategy.plan(&visit).await? else {
            return Ok(None);
        };
        let (observations, ledger_facts) = visit.observations();
        if plan.record.observations.is_none() {
            plan.record.observations = observations;
        }
        if plan.record.ledger_facts.is_none() {
            plan.record.ledger_facts = ledger_facts;
        }
        if let Some(edit) = &plan.edit {
            let removed = edit.removed.clone();
            if plan.record.dropped_observations.is_none() {
                let names = visit.tool_names_in(removed.clone());
                if !names.is_empty() {
                    plan.record.dropped_observations =
                        Some(names.into_iter().map(str::to_string).collect());
                }
            }
            if let Some(findings) = context.findings {
                let standings: Vec<DroppedStanding> = conversation.messages()[removed]
                    .iter()
                    .filter(|message| message.role() == Role::Tool)
                    .filter_map(|message| message.tool_call_id())
                    .map(|id| DroppedStanding {
                        id: id.to_string(),
                        standing: findings.standing(id),
                    })
                    .collect();
                if !standings.is_empty() && plan.record.dropped_standings.is_none() {
                    plan.record.dropped_standings = Some(standings);
                }
            }
        }
        if plan.warning.is_some() && self.warned.swap(true, Ordering::Relaxed) {
            plan.warning = None;
        }
        Ok(Some(plan))
    }
}

/// Drives a future that needs no I/O to completion without an executor: a summarizer that
/// answers immediately, or any strategy of this crate with no summarizer. A future that would
/// wait is reported as [`WindowError::NotReady`] instead of blocking.
pub fn complete_now<F: std::future::Future>(future: F) -> Result<F::Output, WindowError> {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct NoopWake;
    impl Wake for NoopWake {
        fn wake(self: Arc<Self>) {}
    }

    let waker = Waker::from(Arc::new(NoopWake));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(WindowError::NotReady),
    }
}
