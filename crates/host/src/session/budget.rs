//! The session's spend caps, weighed after every fold (R112, R113): the decision is
//! [`panewise_pane_state::budget::due`]'s; this records what it says and tells the front ends.

use panewise_pane_state::Msg;
use panewise_session_protocol::Control;

use super::Session;
use crate::backend::{Backend, Produced};
use crate::error::SessionError;

impl Session {
    /// Holds the session when its spend (the finished turns', and the running turn's where the
    /// backend knows it: the own loop counts each call) or the daemon's verdict reaches a
    /// cap; releases it when neither does any more. A supervised agent's running turn is left
    /// to end (its cost is known when it ends); no prompt is sent to it while it is held.
    pub(super) async fn weigh_budget(&mut self) -> Result<(), SessionError> {
        let turn = match &self.backend {
            Backend::Model(agent) => Some(agent.turn_stats().clone()),
            Backend::Cli(_) => None,
        };
        let due = panewise_pane_state::budget::due(
            self.log.state(),
            turn.as_ref(),
            self.daemon_budget.as_deref(),
        );
        let Some(msg) = due else {
            return Ok(());
        };
        let reached = matches!(msg, Msg::BudgetReached { .. });
        match &msg {
            Msg::BudgetReached { reason } if self.input_open => self.out.notice(format!(
                "{reason}: the session is held; raise the cap (`panewise budget`) or stop it"
            )),
            Msg::BudgetReached { reason } => self.out.notice(format!(
                "{reason}: nothing can raise the cap of this session, so it stops"
            )),
            Msg::BudgetReleased { reason } => self.out.notice(format!("{reason}: going on")),
            _ => {}
        }
        self.fold(vec![Produced::Msg(msg)]).await?;
        if reached && self.input_open {
            return Ok(());
        }
        if reached && !self.stopping {
            // No control can come (a `run` given its prompts): held, it would wait forever.
            let now = self.clock.now_ms();
            let stop = self.control(Control::Stop, now).await?;
            self.fold(stop).await?;
        }
        Ok(())
    }
}
