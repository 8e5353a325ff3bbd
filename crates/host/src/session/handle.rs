//! The handle a front end holds on a session: controls in, updates out, both through bounded
//! channels ([`CONTROL_BOUND`], [`UPDATE_BOUND`]; docs/ARCHITECTURE.md, "Bounds").

use tokio::sync::mpsc;

use panewise_pane_state::log::Actor;

use super::{Control, Session, SessionOutcome, Update};
use crate::error::SessionError;

/// The controls a session's channel holds unread. At the bound a sender is refused at once
/// ([`ControlRefused::Busy`]) rather than made to wait: senders are front ends that must not
/// block (the daemon's loop waits on nothing but its inputs, the line front end sends from the loop that
/// also reads the session's updates, which a waiting sender would stop, and the engine may be
/// waiting for those very updates to be read). The engine reads a control between any two
/// inputs, so only a session that stopped reading (its agent not reading its stdin) or a
/// sender flooding it meets the bound.
pub const CONTROL_BOUND: usize = 256;

/// The updates a session's channel holds unread. At the bound the engine waits for its front
/// ends to read before it reads its next input: the backpressure reaches the agent's stdout
/// pipe, which then blocks the agent, and nothing is lost. A front end must read its updates
/// (or drop the receiver: a closed channel is no wait, the engine stops sending and the log
/// keeps everything).
pub const UPDATE_BOUND: usize = 1024;

/// Sends controls into a session; cheap to clone, one per front end.
#[derive(Debug, Clone)]
pub struct Controls {
    sender: mpsc::Sender<Control>,
}

impl Controls {
    /// Sends `control` without waiting; refused when the session has ended or has
    /// [`CONTROL_BOUND`] controls unread.
    pub fn send(&self, control: Control) -> Result<(), ControlRefused> {
        self.sender.try_send(control).map_err(|error| match error {
            mpsc::error::TrySendError::Full(_) => ControlRefused::Busy,
            mpsc::error::TrySendError::Closed(_) => ControlRefused::Ended,
        })
    }

    /// Submits a prompt.
    pub fn prompt(&self, text: impl Into<String>) -> Result<(), ControlRefused> {
        self.send(Control::Prompt(text.into()))
    }

    /// Answers the approval question asked, as `by`.
    pub fn answer(&self, id: String, approved: bool, by: Actor) -> Result<(), ControlRefused> {
        self.send(if approved {
            Control::allow(id, by)
        } else {
            Control::deny(id, None, by)
        })
    }

    /// Allows the request asked, and every later request for the same tool in this session,
    /// as `by`.
    pub fn allow_for_session(&self, id: String, by: Actor) -> Result<(), ControlRefused> {
        self.send(Control::allow_for_session(id, by))
    }

    /// Denies the request asked, as `by`, telling the agent `message` with the denial.
    pub fn deny(
        &self,
        id: String,
        message: Option<String>,
        by: Actor,
    ) -> Result<(), ControlRefused> {
        self.send(Control::deny(id, message, by))
    }

    /// Stops the running turn (again: kills the agent).
    pub fn interrupt(&self) -> Result<(), ControlRefused> {
        self.send(Control::Interrupt)
    }

    /// Ends the session now.
    pub fn stop(&self) -> Result<(), ControlRefused> {
        self.send(Control::Stop)
    }

    /// Says no more prompts will come.
    pub fn end_of_input(&self) -> Result<(), ControlRefused> {
        self.send(Control::EndOfInput)
    }
}

/// A front end's hold on one session.
#[derive(Debug)]
pub struct SessionHandle {
    controls: Controls,
    updates: mpsc::Receiver<Update>,
}

impl SessionHandle {
    pub(crate) fn new(sender: mpsc::Sender<Control>, updates: mpsc::Receiver<Update>) -> Self {
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
    pub fn into_channels(self) -> (mpsc::Sender<Control>, mpsc::Receiver<Update>) {
        (self.controls.sender, self.updates)
    }

    /// The controls and the stream of updates, apart.
    pub fn split(self) -> (Controls, mpsc::Receiver<Update>) {
        (self.controls, self.updates)
    }
}

/// Runs `session` on a task of its own; its outcome is the task's.
pub fn spawn(session: Session) -> tokio::task::JoinHandle<Result<SessionOutcome, SessionError>> {
    tokio::spawn(session.run())
}

/// Why a session did not take a control ([`super::Controls::send`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ControlRefused {
    /// The session has ended.
    #[error("the session has ended")]
    Ended,
    /// The session has [`CONTROL_BOUND`] controls unread: it is not
    /// reading them (its agent does not read its input) or they come faster than it reads.
    #[error(
        "the session is not taking controls: {} sent before are still unread",
        CONTROL_BOUND
    )]
    Busy,
}
