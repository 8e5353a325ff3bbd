//! # panewise-session-protocol
//!
//! What goes into a running session ([`Control`]) and what comes out of it ([`Update`]), and the
//! [`Observer`] that sees every update first.
//!
//! ## Invariants
//! - Plain data: no I/O, no clock, no channel, no `async`, no lock (the purity check scans this
//!   crate). The channels that carry these values belong to the engine (`panewise-host`'s
//!   `SessionHandle`) and to whoever hosts a session (`panewise-supervisor`).
//! - Every front end — the terminal of `panewise run`, `attach`, the dashboard, the daemon,
//!   telemetry, a test — talks to a session through these types only, so none of them needs
//!   the engine's crate.
//!
//! ## API boundary
//! [`Control`] in, [`Update`] out; [`Actor`] names who answered. The engine folds
//! [`Update::Recorded`] messages with `panewise_pane_state::update`.
//!
//! ## Where to start reading
//! [`Update`].

use std::path::PathBuf;

use panewise_pane_state::cmd::Event;
pub use panewise_pane_state::log::Actor;
use panewise_pane_state::{BudgetCaps, Msg, State};
use panewise_providers::ProviderEvent;

/// A control sent into a running session.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// A prompt: sent at once when the agent is idle, queued while a turn runs.
    Prompt(String),
    /// The answer to the approval question the session asked ([`Update::Ask`]). An answer
    /// naming a request that no longer waits, or one never asked, is refused with a notice.
    Answer {
        /// The request answered: the id of its [`Update::Ask`]. Every front end names the
        /// request it answers, so an answer never lands on a request asked after it was typed.
        id: String,
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
    /// The answers to the question set the agent asked (`Msg::QuestionAsked`): one per
    /// question; none says nobody can answer, and the agent is told so.
    AnswerQuestion {
        /// The question set answered (every sender names it: an answer is never matched to
        /// whichever question happens to wait).
        id: String,
        /// One answer per question.
        answers: Vec<String>,
        /// Who answered.
        by: Actor,
    },
    /// Stop the running turn (the first Ctrl-C); sent again while the turn is stopping, it
    /// kills the agent (the second).
    Interrupt,
    /// End the session now: the running turn is interrupted and the agent killed as a second
    /// Ctrl-C does, nothing queued is sent, and the log is closed (SIGTERM, SIGHUP).
    Stop,
    /// No more prompts will come: the session ends once its turns are done.
    EndOfInput,
    /// The session's spend caps from now on (a raise, a cut, or none): recorded, and the
    /// session held or released as its spend against them says (R112, R113).
    SetBudget(BudgetCaps),
    /// The daemon's verdict over all its sessions, or their day: `Some(reason)` holds the
    /// session as its own cap would, `None` lifts that hold (the session's own caps still
    /// count).
    DaemonBudget(Option<String>),
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
    /// An event the reducer emitted for the front ends (`Cmd::Emit`).
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

impl Control {
    /// Allows the request `id` once, as `by`.
    pub fn allow(id: String, by: Actor) -> Control {
        Control::Answer {
            id,
            approved: true,
            for_session: false,
            by,
            message: None,
        }
    }

    /// Allows the request `id` and later requests for the same tool, as `by`.
    pub fn allow_for_session(id: String, by: Actor) -> Control {
        Control::Answer {
            id,
            approved: true,
            for_session: true,
            by,
            message: None,
        }
    }

    /// Denies the request `id`, telling the agent `message` besides who denied it.
    pub fn deny(id: String, message: Option<String>, by: Actor) -> Control {
        Control::Answer {
            id,
            approved: false,
            for_session: false,
            by,
            message,
        }
    }
}

/// A consumer that sees every update as it is sent, before any front end does (telemetry):
/// called on the session's task, so it must be quick and must not block.
#[derive(Clone)]
pub struct Observer(std::sync::Arc<dyn Fn(&Update) + Send + Sync>);

impl Observer {
    /// An observer calling `see` with each update.
    pub fn new(see: impl Fn(&Update) + Send + Sync + 'static) -> Self {
        Observer(std::sync::Arc::new(see))
    }

    /// Shows `update` to the observer.
    pub fn see(&self, update: &Update) {
        (self.0)(update);
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}
