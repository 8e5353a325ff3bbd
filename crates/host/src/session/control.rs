//! What goes into a running session ([`Control`]) and what comes out of it ([`Update`]).
//!
//! Every front end — the terminal of `panewise run`, a test, the coming supervisor and
//! dashboard — talks to a session through these two types only, over a
//! [`SessionHandle`](super::SessionHandle).

use std::path::PathBuf;

use panewise_pane_state::cmd::Event;
use panewise_pane_state::log::Actor;
use panewise_pane_state::{Msg, State};
use panewise_providers::ProviderEvent;

/// A control sent into a running session.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// A prompt: sent at once when the agent is idle, queued while a turn runs.
    Prompt(String),
    /// The answer to the approval question the session asked ([`Update::Ask`]). An answer
    /// naming another request than the one asked, or sent when none is asked, is refused with
    /// a notice.
    Answer {
        /// The request answered (the id of [`Update::Ask`]); `None` answers the one asked now.
        id: Option<String>,
        /// Allowed or denied.
        approved: bool,
        /// Allowed for the rest of the session: later requests for the same tool are allowed
        /// without asking (only with `approved`).
        for_session: bool,
        /// Who answered: the person at a terminal, or an API client by name.
        by: Actor,
        /// What the agent is told with a denial, besides who denied it.
        message: Option<String>,
    },
    /// Stop the running turn (the first Ctrl-C); sent again while the turn is stopping, it
    /// kills the agent (the second).
    Interrupt,
    /// End the session now: the running turn is interrupted and the agent killed as a second
    /// Ctrl-C does, nothing queued is sent, and the log is closed (SIGTERM, SIGHUP).
    Stop,
    /// No more prompts will come: the session ends once its turns are done.
    EndOfInput,
}

/// What a running session tells its front ends, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The session started: its log is open.
    Started {
        /// The session log.
        log: PathBuf,
        /// The state the fold starts from.
        state: Box<State>,
    },
    /// A reducer message the session recorded and folded, with its stamp. Folding these in
    /// order with `panewise_pane_state::update` gives the session's state.
    Recorded {
        /// The session clock's stamp.
        at: u64,
        /// The message.
        msg: Msg,
    },
    /// An event read from the agent (or produced by panewise's own loop), before it was
    /// mapped onto reducer messages.
    Agent(ProviderEvent),
    /// An event the reducer emitted for views and telemetry (`Cmd::Emit`).
    Emitted(Event),
    /// An approval question waits for a [`Control::Answer`].
    Ask {
        /// The request's id.
        id: String,
        /// The tool.
        tool: String,
        /// What it wants to do (the command, the path).
        summary: String,
        /// The question may be answered "allow for this session" ([`Control::Answer`]'s
        /// `for_session`).
        offers_session: bool,
    },
    /// The question asked is no longer waiting (withdrawn by the agent, or cleared by an
    /// interrupt); an answer to it would be refused.
    AskWithdrawn {
        /// The request's id.
        id: String,
    },
    /// An approval request was answered: by the approval mode, by a person (or API client)
    /// through [`Control::Answer`], or by the session when nobody could answer.
    Answered {
        /// The request's id.
        id: String,
        /// The tool.
        tool: String,
        /// Allowed or denied.
        approved: bool,
        /// Allowed for the rest of the session.
        for_session: bool,
        /// Who answered.
        by: Actor,
        /// Why, when denied.
        reason: Option<String>,
    },
    /// A notice for the person: a denial, a kill, what panewise did on its own.
    Notice(String),
}
