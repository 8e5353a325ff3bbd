//! The agent behind a session, as a closed set: a supervised CLI ([`cli::CliAgent`]) or
//! panewise's own model loop ([`model::ModelAgent`]). The engine (the `session` module) calls
//! one method per effect and folds what each returns; a backend never records, never steps the
//! reducer and never reads the person's input.

pub mod cli;
pub mod model;
pub mod process;
pub mod scripted;

use panewise_pane_state::log::LogNote;
use panewise_pane_state::{Msg, State};
use panewise_providers::rpc_client::Step;
use panewise_providers::{Provider, ProviderEvent};

use crate::approval::ToolRequest;
use crate::error::SessionError;

/// Where a backend says a line for the person watching (a notice): the engine's outlet, which
/// shows it and hands it to the front ends. The backends name this, never the engine.
pub(crate) trait NoticeSink: Send {
    /// Says `text`.
    fn notice(&mut self, text: String);
}

/// What a backend hands the engine, in order.
#[derive(Debug)]
pub(crate) enum Produced {
    /// An agent event: shown, written to the transcript, mapped onto reducer messages.
    Event(ProviderEvent),
    /// A reducer message the backend makes itself (an exit, a compaction, an approval ask).
    Msg(Msg),
    /// A note line for the log (the CLI's own session id).
    Note(LogNote),
    /// Protocol lines to write once everything before them is folded (so an approval the
    /// agent asked for is in the reducer's queue before anything answers).
    AfterFold(Step),
    /// The process's output ended: reap it once everything before is folded.
    Reap,
}

/// The agent of one session.
#[derive(Debug)]
pub enum Backend {
    /// A supervised agent CLI.
    Cli(Box<cli::CliAgent>),
    /// panewise's own loop over a model API.
    Model(Box<model::ModelAgent>),
}

/// An input from the backend's own work.
#[derive(Debug)]
pub(crate) enum BackendInput {
    Cli(cli::Input),
    Model(model::Input),
}

/// How the backend's side of a session ended.
#[derive(Debug)]
pub enum BackendOutcome {
    /// The CLI's last process.
    Cli(cli::CliOutcome),
    /// What the own loop did.
    Model(Box<model::ModelOutcome>),
}

impl Backend {
    /// The provider whose event vocabulary the backend's events use.
    pub fn provider(&self) -> Provider {
        match self {
            Backend::Cli(agent) => agent.provider(),
            Backend::Model(agent) => agent.provider(),
        }
    }

    pub(crate) fn set_clock(&mut self, clock: crate::clock::SessionClock) {
        match self {
            Backend::Cli(_) => {}
            Backend::Model(agent) => agent.set_clock(clock),
        }
    }

    pub(crate) async fn start(
        &mut self,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        match self {
            Backend::Cli(agent) => agent.start(out).await,
            Backend::Model(_) => Ok(Vec::new()),
        }
    }

    /// The next input; pending forever while nothing is under way.
    pub(crate) async fn next_input(&mut self) -> BackendInput {
        match self {
            Backend::Cli(agent) => BackendInput::Cli(agent.next_input().await),
            Backend::Model(agent) => BackendInput::Model(agent.next_input().await),
        }
    }

    pub(crate) fn on_input(
        &mut self,
        input: BackendInput,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        match (self, input) {
            (Backend::Cli(agent), BackendInput::Cli(input)) => agent.on_input(input),
            (Backend::Model(agent), BackendInput::Model(input)) => agent.on_input(input, out),
            // An input is only ever read from the backend that is asked to take it.
            (Backend::Cli(_), BackendInput::Model(_))
            | (Backend::Model(_), BackendInput::Cli(_)) => Ok(Vec::new()),
        }
    }

    pub(crate) async fn after_fold(
        &mut self,
        produced: Produced,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        match (self, produced) {
            (Backend::Cli(agent), Produced::AfterFold(step)) => {
                agent.write_step(step, out).await?;
                Ok(Vec::new())
            }
            (Backend::Cli(agent), Produced::Reap) => agent.reap().await,
            (_, other) => Ok(vec![other]),
        }
    }

    pub(crate) async fn send_prompt(
        &mut self,
        text: String,
        out: &mut dyn NoticeSink,
    ) -> Result<(), SessionError> {
        match self {
            Backend::Cli(agent) => agent.send_prompt(text, out).await,
            Backend::Model(agent) => agent.send_prompt(text),
        }
    }

    pub(crate) async fn interrupt(&mut self, out: &mut dyn NoticeSink) -> Result<(), SessionError> {
        match self {
            Backend::Cli(agent) => agent.interrupt().await,
            Backend::Model(agent) => agent.interrupt(out),
        }
    }

    pub(crate) fn kill(&mut self, out: &mut dyn NoticeSink) -> Result<(), SessionError> {
        match self {
            Backend::Cli(agent) => agent.kill(),
            // The loop's agent is panewise itself: killing it is stopping the turn, tool
            // groups and call included.
            Backend::Model(agent) => agent.interrupt(out),
        }
    }

    pub(crate) async fn resolve_approval(
        &mut self,
        id: &str,
        approved: bool,
        reason: &str,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        match self {
            Backend::Cli(agent) => {
                agent.resolve_approval(id, approved, reason).await?;
                Ok(Vec::new())
            }
            Backend::Model(agent) => agent.resolve_approval(id, approved, reason, out),
        }
    }

    /// Gives the agent the answers to the question set `id` it asked (empty: nobody could
    /// answer).
    pub(crate) async fn resolve_question(
        &mut self,
        id: &str,
        answers: &[String],
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        match self {
            Backend::Cli(agent) => {
                agent.resolve_question(id, answers).await?;
                Ok(Vec::new())
            }
            Backend::Model(agent) => agent.resolve_question(id, answers, out),
        }
    }

    /// What the pending request `id` asks to do, for the approval policy.
    pub(crate) fn request(&self, id: &str) -> Option<ToolRequest<'_>> {
        match self {
            Backend::Cli(agent) => agent.request(id),
            Backend::Model(agent) => agent.request(id),
        }
    }

    /// One step of what is due now that everything is folded; `None` when nothing is.
    pub(crate) async fn settle(
        &mut self,
        state: &State,
        input_open: bool,
        out: &mut dyn NoticeSink,
    ) -> Result<Option<Vec<Produced>>, SessionError> {
        match self {
            Backend::Cli(agent) => {
                agent.settle(state, input_open);
                Ok(None)
            }
            Backend::Model(agent) => agent.settle(state, out).await,
        }
    }

    /// Transcript lines the backend knows beyond its events, for the engine to record.
    pub(crate) fn take_transcript(
        &mut self,
    ) -> Vec<(u64, panewise_pane_state::log::TranscriptEntry)> {
        match self {
            // Everything a CLI says is in its events.
            Backend::Cli(_) => Vec::new(),
            Backend::Model(agent) => agent.take_transcript(),
        }
    }

    /// Nothing runs and nothing waits to start.
    pub(crate) fn is_idle(&self) -> bool {
        match self {
            Backend::Cli(agent) => agent.is_idle(),
            Backend::Model(agent) => agent.is_idle(),
        }
    }

    /// How the backend's side ended.
    pub fn outcome(self) -> BackendOutcome {
        match self {
            Backend::Cli(agent) => BackendOutcome::Cli(agent.outcome()),
            Backend::Model(agent) => BackendOutcome::Model(Box::new(agent.outcome())),
        }
    }
}
