//! The handle a front end holds on a session: controls in, updates out.

use tokio::sync::mpsc;

use panewise_pane_state::log::Actor;

use super::{Control, Session, SessionOutcome, Update};
use crate::error::SessionError;

/// Sends controls into a session; cheap to clone, one per front end.
#[derive(Debug, Clone)]
pub struct Controls {
    sender: mpsc::UnboundedSender<Control>,
}

impl Controls {
    /// Sends `control`; false when the session has ended.
    pub fn send(&self, control: Control) -> bool {
        self.sender.send(control).is_ok()
    }

    /// Submits a prompt.
    pub fn prompt(&self, text: impl Into<String>) -> bool {
        self.send(Control::Prompt(text.into()))
    }

    /// Answers the approval question asked, as `by`.
    pub fn answer(&self, id: Option<String>, approved: bool, by: Actor) -> bool {
        self.send(if approved {
            Control::allow(id, by)
        } else {
            Control::deny(id, None, by)
        })
    }

    /// Allows the request asked, and every later request for the same tool in this session,
    /// as `by`.
    pub fn allow_for_session(&self, id: Option<String>, by: Actor) -> bool {
        self.send(Control::allow_for_session(id, by))
    }

    /// Denies the request asked, as `by`, telling the agent `message` with the denial.
    pub fn deny(&self, id: Option<String>, message: Option<String>, by: Actor) -> bool {
        self.send(Control::deny(id, message, by))
    }

    /// Stops the running turn (again: kills the agent).
    pub fn interrupt(&self) -> bool {
        self.send(Control::Interrupt)
    }

    /// Ends the session now.
    pub fn stop(&self) -> bool {
        self.send(Control::Stop)
    }

    /// Says no more prompts will come.
    pub fn end_of_input(&self) -> bool {
        self.send(Control::EndOfInput)
    }
}

/// A front end's hold on one session.
#[derive(Debug)]
pub struct SessionHandle {
    controls: Controls,
    updates: mpsc::UnboundedReceiver<Update>,
}

impl SessionHandle {
    pub(crate) fn new(
        sender: mpsc::UnboundedSender<Control>,
        updates: mpsc::UnboundedReceiver<Update>,
    ) -> Self {
        SessionHandle {
            controls: Controls { sender },
            updates,
        }
    }

    /// The session's controls.
    pub fn controls(&self) -> &Controls {
        &self.controls
    }

    /// The next update; `None` once the session has ended and every update was read.
    pub async fn next_update(&mut self) -> Option<Update> {
        self.updates.recv().await
    }

    /// An update already sent, without waiting.
    pub fn try_next_update(&mut self) -> Option<Update> {
        self.updates.try_recv().ok()
    }

    /// The controls' sender and the stream of updates, for a host that holds sessions without
    /// this crate's types (the daemon: `panewise-supervisor` sees only the session protocol).
    pub fn into_channels(
        self,
    ) -> (
        mpsc::UnboundedSender<Control>,
        mpsc::UnboundedReceiver<Update>,
    ) {
        (self.controls.sender, self.updates)
    }

    /// The controls and the stream of updates, apart.
    pub fn split(self) -> (Controls, mpsc::UnboundedReceiver<Update>) {
        (self.controls, self.updates)
    }
}

/// Runs `session` on a task of its own; its outcome is the task's.
pub fn spawn(session: Session) -> tokio::task::JoinHandle<Result<SessionOutcome, SessionError>> {
    tokio::spawn(session.run())
}
