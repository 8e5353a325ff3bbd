//! A front end that drives a session from lines of text and interrupt signals: the terminal of
//! `panewise run` (stdin, Ctrl-C, SIGTERM) and the tests. It holds a [`SessionHandle`] like any
//! other front end, keeps its own fold of the recorded messages for its view, and turns the
//! person's lines into prompts or answers.

use panewise_pane_state::{step, State};
use panewise_providers::ProviderEvent;
use tokio::sync::mpsc;

use panewise_pane_state::log::Actor;

use super::{Control, Session, SessionHandle, SessionOutcome, Update};
use crate::error::SessionError;

/// What the person types while the session runs, line by line.
pub type UserLines = mpsc::UnboundedReceiver<String>;

/// How the person takes part: whether their lines are prompts, and where the lines come from.
#[derive(Debug, Default)]
pub struct UserInput {
    /// The person's lines (a terminal, a pipe); `None` when there is no one to ask.
    pub lines: Option<UserLines>,
    /// Lines are prompts too (the interactive session): the session lasts until the input
    /// ends. Otherwise lines only answer questions, and the session ends with its prompts.
    pub prompts: bool,
    /// The person can be asked (a terminal): `ask` waits for their answer. Otherwise it denies.
    pub ask: bool,
}

/// A signal the front end was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Ctrl-C: interrupt the turn (twice: kill the agent); between turns of an interactive
    /// session, end it.
    Interrupt,
    /// SIGTERM or SIGHUP (its name): end the session now, as a second Ctrl-C does.
    Terminate(&'static str),
}

/// What the view is told as the session runs.
pub trait View {
    /// An event read from the agent (or made by panewise's own loop).
    fn agent_event(&mut self, event: &ProviderEvent);
    /// The pane state after a message was folded.
    fn state(&mut self, state: &State);
    /// Ask the person to allow `tool` with `arg`; the answer is their next line.
    fn ask(&mut self, tool: &str, arg: &str);
    /// A notice for the person (a denial, a kill).
    fn notice(&mut self, text: &str);
}

/// Runs `session`, driven by `user`'s lines and `signals`, showing it on `view`, to its end.
pub async fn drive(
    session: Session,
    handle: SessionHandle,
    user: UserInput,
    signals: Option<mpsc::UnboundedReceiver<Signal>>,
    view: &mut dyn View,
) -> Result<SessionOutcome, SessionError> {
    let (controls, mut updates) = handle.split();
    let mut client = LineClient {
        controls,
        state: None,
        asking: None,
        lines_open: user.lines.is_some(),
        lines_are_prompts: user.prompts,
        can_answer: user.ask,
    };
    let mut lines = user.lines;
    let mut signals = signals;
    let run = session.run();
    tokio::pin!(run);
    let outcome = loop {
        tokio::select! {
            outcome = &mut run => break outcome,
            Some(update) = updates.recv() => client.update(update, view),
            line = recv(lines.as_mut()), if lines.is_some() => match line {
                Some(line) => client.line(line, view),
                None => {
                    lines = None;
                    client.lines_closed(view);
                }
            },
            signal = recv(signals.as_mut()), if signals.is_some() => match signal {
                Some(signal) => client.signal(signal, view),
                None => signals = None,
            },
        }
    };
    while let Ok(update) = updates.try_recv() {
        client.update(update, view);
    }
    outcome
}

async fn recv<T>(receiver: Option<&mut mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

struct LineClient {
    controls: super::handle::Controls,
    /// The client's own fold of the recorded messages.
    state: Option<State>,
    /// The request the person was asked about; their next line answers it.
    asking: Option<String>,
    lines_open: bool,
    lines_are_prompts: bool,
    can_answer: bool,
}

impl LineClient {
    fn update(&mut self, update: Update, view: &mut dyn View) {
        match update {
            Update::Started { state, .. } => self.state = Some(*state),
            Update::Recorded { at, msg } => {
                if let Some(state) = self.state.take() {
                    let (state, _commands) = step(state, at, msg);
                    view.state(&state);
                    self.state = Some(state);
                }
            }
            Update::Agent(event) => view.agent_event(&event),
            Update::Emitted(_) => {}
            Update::Ask { id, tool, summary } => {
                if self.can_answer && self.lines_open {
                    view.ask(&tool, &summary);
                    self.asking = Some(id);
                } else {
                    view.notice(&format!(
                        "denied {tool} {summary}: nobody is at a terminal to answer"
                    ));
                    self.controls.answer(Some(id), false, Actor::Session);
                }
            }
            Update::AskWithdrawn { id } => {
                if self.asking.as_ref() == Some(&id) {
                    self.asking = None;
                }
            }
            Update::Notice(text) => view.notice(&text),
        }
    }

    fn line(&mut self, line: String, view: &mut dyn View) {
        if let Some(id) = self.asking.take() {
            let approved = matches!(line.trim(), "y" | "Y" | "yes" | "Yes");
            if !approved {
                view.notice(&format!("denied (you answered {:?})", line.trim()));
            }
            self.controls.answer(Some(id), approved, Actor::Person);
        } else if self.lines_are_prompts {
            self.controls.prompt(line);
        } else {
            view.notice("no question is waiting for an answer; that line was not sent");
        }
    }

    fn lines_closed(&mut self, view: &mut dyn View) {
        self.lines_open = false;
        if let Some(id) = self.asking.take() {
            view.notice("your input ended before you answered: denied");
            self.controls.answer(Some(id), false, Actor::Session);
        }
        if self.lines_are_prompts {
            self.controls.send(Control::EndOfInput);
        }
    }

    fn signal(&mut self, signal: Signal, view: &mut dyn View) {
        match signal {
            Signal::Terminate(name) => {
                view.notice(&format!("{name}: ending the session"));
                self.controls.stop();
            }
            Signal::Interrupt => {
                let working = self
                    .state
                    .as_ref()
                    .is_some_and(|state| state.turn_phase.is_working());
                if !working && self.lines_are_prompts {
                    // Between turns there is nothing to stop: Ctrl-C ends the session, as the
                    // end of input does.
                    view.notice("Ctrl-C between turns: ending the session");
                    self.lines_are_prompts = false;
                    if let Some(id) = self.asking.take() {
                        self.controls.answer(Some(id), false, Actor::Session);
                    }
                    self.controls.send(Control::EndOfInput);
                } else {
                    self.controls.interrupt();
                }
            }
        }
    }
}
