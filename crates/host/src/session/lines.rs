//! A front end that drives a session from lines of text and interrupt signals: the terminal of
//! `panewise run` (stdin, Ctrl-C, SIGTERM) and the tests. It holds a [`SessionHandle`] like any
//! other front end, keeps its own fold of the recorded messages for its view, and turns the
//! person's lines into prompts or answers.
//!
//! Both queues into it are bounded (docs/ARCHITECTURE.md, "Bounds"): the person's lines
//! ([`LINE_BOUND`]; the reader waits, nothing is lost) and the signals ([`SIGNAL_BOUND`]; a
//! Ctrl-C past the bound is coalesced with the ones still unread, a termination waits).

use std::path::Path;
use std::time::Duration;

use panewise_pane_state::{step, Msg, State};
use panewise_providers::ProviderEvent;
use tokio::sync::mpsc;

use panewise_api::Reply;
use panewise_pane_state::log::Actor;

use super::{Control, Session, SessionHandle, SessionOutcome, Update};
use crate::error::SessionError;

/// What the person types while the session runs, line by line ([`line_queue`]).
pub type UserLines = mpsc::Receiver<String>;

/// The person's lines read and not yet taken by the front end. At the bound the reader waits
/// (a thread of its own, reading stdin or the line editor): it stops reading, so a paste waits
/// in the pipe or the terminal and its writer blocks, and no line is lost. The front end takes
/// a line whenever its loop is free, and a line is a whole prompt or answer: 64 is more than
/// a person types ahead of a turn, as many as the scripted process's stdin holds.
pub const LINE_BOUND: usize = 64;

/// A queue for the person's lines, [`LINE_BOUND`] deep: the reader sends with
/// `blocking_send` (from its own thread) or `send().await`, so it waits at the bound.
pub fn line_queue() -> (mpsc::Sender<String>, UserLines) {
    mpsc::channel(LINE_BOUND)
}

/// The signals the front end was sent and has not read yet ([`signal_queue`]).
pub type Signals = mpsc::Receiver<Signal>;

/// The signals sent and not yet read by the front end. A Ctrl-C never waits ([`interrupt`]):
/// it comes from the thread that reads the terminal or the task that reads SIGINT, and past
/// the bound it is dropped, coalesced with the ones still unread, which say all it would:
/// two Ctrl-C already kill the agent, and between turns one only says that nothing runs. A
/// termination (SIGTERM, SIGHUP) must not be lost, so it waits for room ([`raise`], from the
/// task that reads the signals, which nothing waits on); the front end reads its signals in
/// the loop that waits on no sender of them. 16 is more than any burst of keys means.
pub const SIGNAL_BOUND: usize = 16;

/// A queue for the front end's signals, [`SIGNAL_BOUND`] deep.
pub fn signal_queue() -> (mpsc::Sender<Signal>, Signals) {
    mpsc::channel(SIGNAL_BOUND)
}

/// What became of a signal sent with [`interrupt`] or [`raise`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// It is queued for the front end.
    Queued,
    /// A Ctrl-C found [`SIGNAL_BOUND`] signals unread: it was dropped, as the ones ahead of it
    /// already interrupt the turn and kill the agent.
    Coalesced,
    /// The front end is gone (the session ended): nobody reads signals any more.
    Gone,
}

/// Queues a Ctrl-C without waiting: past [`SIGNAL_BOUND`] it is coalesced ([`Raised`]).
pub fn interrupt(signals: &mpsc::Sender<Signal>) -> Raised {
    match signals.try_send(Signal::Interrupt) {
        Ok(()) => Raised::Queued,
        Err(mpsc::error::TrySendError::Full(_)) => Raised::Coalesced,
        Err(mpsc::error::TrySendError::Closed(_)) => Raised::Gone,
    }
}

/// Queues `signal`: a Ctrl-C as [`interrupt`] does, a termination waiting for room, so it is
/// never lost (the front end's loop reads signals and waits on no sender of them).
pub async fn raise(signals: &mpsc::Sender<Signal>, signal: Signal) -> Raised {
    match signal {
        Signal::Interrupt => interrupt(signals),
        Signal::Terminate(_) => match signals.send(signal).await {
            Ok(()) => Raised::Queued,
            Err(_) => Raised::Gone,
        },
    }
}

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
    /// Ctrl-C: interrupt the turn (twice: kill the agent). Between turns it only clears the
    /// line being typed: the end of input (Ctrl-D) ends an interactive session.
    Interrupt,
    /// SIGTERM or SIGHUP (its name): end the session now, as a second Ctrl-C does.
    Terminate(&'static str),
}

/// The view is told the time this often, so a live line's clock moves while nothing happens.
pub const VIEW_TICK: Duration = Duration::from_secs(1);

/// An approval question put to the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The request's id.
    pub id: String,
    /// The tool, as the agent names it.
    pub tool: String,
    /// What it wants to do (the command, the path), as the agent sent it: unsanitised.
    pub summary: String,
    /// "Allow for this session" is a possible answer.
    pub offers_session: bool,
}

/// How an approval request was answered, for a view that reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The request's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// Allowed or denied.
    pub approved: bool,
    /// Allowed for the rest of the session.
    pub for_session: bool,
    /// Who answered.
    pub by: Actor,
    /// Why, when denied.
    pub reason: Option<String>,
}

/// What the view is told as the session runs.
pub trait View {
    /// The session started, recording to `log`.
    fn started(&mut self, log: &Path, state: &State) {
        let _ = (log, state);
    }
    /// An event read from the agent (or made by panewise's own loop).
    fn agent_event(&mut self, event: &ProviderEvent);
    /// The pane state after a message was folded.
    fn state(&mut self, state: &State);
    /// A second passed ([`VIEW_TICK`]) with `state` unchanged.
    fn tick(&mut self, state: &State) {
        let _ = state;
    }
    /// Ask the person to allow a tool; the answer is their next line.
    fn ask(&mut self, question: &Question);
    /// An event the reducer emitted (a stuck stream, a deadline that passed).
    fn emitted(&mut self, event: &panewise_pane_state::cmd::Event) {
        let _ = event;
    }
    /// The question asked is no longer waiting (answered, withdrawn, or cleared).
    fn question_closed(&mut self) {}
    /// An approval request was answered, by whoever answered it.
    fn answered(&mut self, answer: &Answer) {
        let _ = answer;
    }
    /// A prompt the person typed while a turn runs: it waits and is sent when the turn ends.
    fn queued(&mut self, text: &str) {
        let _ = text;
    }
    /// A notice for the person (a denial, a kill).
    fn notice(&mut self, text: &str);
}

/// What a line typed while a question waits answers: the one set of answers every front end
/// accepts ([`panewise_api::view::REPLIES`]: `y`, `a`, `n`, their words).
fn reply(line: &str) -> Option<Reply> {
    panewise_api::parse_reply(line)
}

/// Runs `session`, driven by `user`'s lines and `signals`, showing it on `view`, to its end.
pub async fn drive(
    session: Session,
    handle: SessionHandle,
    user: UserInput,
    signals: Option<Signals>,
    view: &mut dyn View,
) -> Result<SessionOutcome, SessionError> {
    let (controls, mut updates) = handle.split();
    let mut client = LineClient {
        controls,
        state: None,
        asking: None,
        answering: None,
        lines_open: user.lines.is_some(),
        lines_are_prompts: user.prompts,
        can_answer: user.ask,
    };
    let mut lines = user.lines;
    let mut signals = signals;
    let run = session.run();
    tokio::pin!(run);
    let mut tick = tokio::time::interval(VIEW_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let outcome = loop {
        tokio::select! {
            outcome = &mut run => break outcome,
            Some(update) = updates.recv() => client.update(update, view),
            _ = tick.tick() => {
                if let Some(state) = &client.state {
                    view.tick(state);
                }
            }
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

async fn recv<T>(receiver: Option<&mut mpsc::Receiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

struct LineClient {
    controls: super::handle::Controls,
    /// The client's own fold of the recorded messages.
    state: Option<State>,
    /// The question this terminal put to the person, which their next line answers: the
    /// front end's own prompt, not a record of what waits (that is the fold's). It differs from
    /// the fold's asked request exactly when it must: once the line is typed the prompt is
    /// gone, while the fold shows the request pending until the engine records the answer, and
    /// a line typed in between is a prompt, not a second answer.
    asking: Option<Question>,
    /// The question set (`Msg::QuestionAsked`) the person's next line answers.
    answering: Option<String>,
    lines_open: bool,
    lines_are_prompts: bool,
    can_answer: bool,
}

impl LineClient {
    /// Sends `control`; a refusal ([`crate::session::handle::ControlRefused`]) is told to the person.
    fn send(&self, control: Control, view: &mut dyn View) {
        if let Err(refused) = self.controls.send(control) {
            view.notice(&format!("{refused}; that was not sent"));
        }
    }

    fn update(&mut self, update: Update, view: &mut dyn View) {
        match update {
            Update::Started { log, state } => {
                view.started(&log, &state);
                self.state = Some(*state);
            }
            Update::Recorded { at, msg } => {
                if let Msg::QuestionAsked { id, questions, .. } = &msg {
                    self.question(id, questions, view);
                }
                if let Some(state) = self.state.take() {
                    let (state, _commands) = step(state, at, msg);
                    view.state(&state);
                    self.state = Some(state);
                }
            }
            Update::Agent(event) => view.agent_event(&event),
            Update::Emitted(event) => view.emitted(&event),
            Update::Ask {
                id,
                tool,
                summary,
                offers_session,
            } => {
                if self.can_answer && self.lines_open {
                    let question = Question {
                        id,
                        tool,
                        summary,
                        offers_session,
                    };
                    view.ask(&question);
                    self.asking = Some(question);
                } else {
                    view.notice(&format!(
                        "denied {tool} {summary}: nobody is at a terminal to answer"
                    ));
                    self.send(Control::deny(id, None, Actor::Session), view);
                }
            }
            Update::AskWithdrawn { id } => {
                if self.asking.as_ref().is_some_and(|asked| asked.id == id) {
                    self.asking = None;
                    view.question_closed();
                }
            }
            Update::Answered {
                id,
                tool,
                approved,
                for_session,
                by,
                reason,
            } => view.answered(&Answer {
                id,
                tool,
                approved,
                for_session,
                by,
                reason,
            }),
            Update::Notice(text) => view.notice(&text),
        }
    }

    /// The agent asks the person: their next line is the answer, or, with nobody to type
    /// one, the agent is told at once that nobody can answer.
    fn question(&mut self, id: &str, questions: &[String], view: &mut dyn View) {
        if !self.can_answer {
            // A session that cannot ask says so to the agent itself.
            return;
        }
        if self.lines_open {
            view.notice(&format!(
                "question: {}; type your answer",
                questions.join(" / ")
            ));
            self.answering = Some(id.to_owned());
        } else {
            self.send(
                Control::AnswerQuestion {
                    id: id.to_owned(),
                    answers: Vec::new(),
                    by: Actor::Session,
                },
                view,
            );
        }
    }

    fn line(&mut self, line: String, view: &mut dyn View) {
        if let Some(id) = self.answering.take() {
            self.send(
                Control::AnswerQuestion {
                    id,
                    answers: vec![line],
                    by: Actor::Person,
                },
                view,
            );
        } else if let Some(question) = self.asking.take() {
            match reply(&line) {
                Some(Reply::AllowOnce) => {
                    self.send(Control::allow(question.id, Actor::Person), view);
                }
                Some(Reply::AllowForSession) if question.offers_session => {
                    self.send(Control::allow_for_session(question.id, Actor::Person), view);
                }
                Some(Reply::Deny) => {
                    self.send(Control::deny(question.id, None, Actor::Person), view);
                }
                Some(Reply::AllowForSession) | None => {
                    // Anything but an answer asks again: a stray line must not deny, nor
                    // allow, what the person has not read.
                    view.notice(&format!(
                        "answer y (allow), n (deny){}; that line was not sent",
                        if question.offers_session {
                            " or a (allow for this session)"
                        } else {
                            ""
                        }
                    ));
                    view.ask(&question);
                    self.asking = Some(question);
                    return;
                }
            }
            view.question_closed();
        } else if reply(&line).is_some() && !line.trim().contains(' ') {
            // A lone y/n with no question waiting is a late or stray answer, not a prompt.
            view.notice(&format!(
                "no question is waiting for an answer; {:?} was not sent",
                line.trim()
            ));
        } else if self.lines_are_prompts {
            if line.trim().is_empty() {
                return;
            }
            let working = self
                .state
                .as_ref()
                .is_some_and(|state| state.turn_phase.is_working());
            if working {
                view.queued(&line);
            }
            self.send(Control::Prompt(line), view);
        } else {
            view.notice("no question is waiting for an answer; that line was not sent");
        }
    }

    fn lines_closed(&mut self, view: &mut dyn View) {
        self.lines_open = false;
        if let Some(question) = self.asking.take() {
            view.notice("your input ended before you answered: denied");
            view.question_closed();
            self.send(Control::deny(question.id, None, Actor::Session), view);
        }
        if self.lines_are_prompts {
            self.send(Control::EndOfInput, view);
        }
    }

    fn signal(&mut self, signal: Signal, view: &mut dyn View) {
        match signal {
            Signal::Terminate(name) => {
                view.notice(&format!("{name}: ending the session"));
                self.send(Control::Stop, view);
            }
            Signal::Interrupt => {
                let working = self
                    .state
                    .as_ref()
                    .is_some_and(|state| state.turn_phase.is_working());
                if !working && self.lines_are_prompts {
                    // Between turns there is nothing to stop: the terminal (or the line
                    // editor) dropped the line being typed, and the session goes on.
                    view.notice("nothing is running; Ctrl-D ends the session");
                } else {
                    let stopping = self.state.as_ref().is_some_and(|state| {
                        matches!(
                            state.turn_phase,
                            panewise_pane_state::TurnPhase::Interrupting { .. }
                        )
                    });
                    view.notice(if stopping {
                        "Ctrl-C again: killing the agent"
                    } else {
                        "stopping the turn (Ctrl-C again kills the agent)"
                    });
                    self.send(Control::Interrupt, view);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ctrl_c_never_waits_and_past_the_bound_is_coalesced_with_the_unread_ones() {
        struct Row {
            rule: &'static str,
            unread: Vec<Signal>,
            reader_gone: bool,
            raised: Raised,
            unread_after: usize,
        }
        let full_of = |signal: Signal| vec![signal; SIGNAL_BOUND];
        let rows = [
            Row {
                rule: "room: the Ctrl-C is queued behind the unread ones",
                unread: vec![Signal::Interrupt],
                reader_gone: false,
                raised: Raised::Queued,
                unread_after: 2,
            },
            Row {
                rule: "one short of the bound: still queued",
                unread: vec![Signal::Interrupt; SIGNAL_BOUND - 1],
                reader_gone: false,
                raised: Raised::Queued,
                unread_after: SIGNAL_BOUND,
            },
            Row {
                rule: "full of Ctrl-C: dropped at once, the queue as it was",
                unread: full_of(Signal::Interrupt),
                reader_gone: false,
                raised: Raised::Coalesced,
                unread_after: SIGNAL_BOUND,
            },
            Row {
                rule: "full of terminations: the session ends anyway; dropped at once",
                unread: full_of(Signal::Terminate("SIGTERM")),
                reader_gone: false,
                raised: Raised::Coalesced,
                unread_after: SIGNAL_BOUND,
            },
            Row {
                rule: "the front end is gone: said so, nothing waits",
                unread: Vec::new(),
                reader_gone: true,
                raised: Raised::Gone,
                unread_after: 0,
            },
        ];
        for row in rows {
            let (sender, mut signals) = signal_queue();
            for signal in &row.unread {
                sender.try_send(*signal).unwrap();
            }
            if row.reader_gone {
                signals.close();
            }
            assert_eq!(interrupt(&sender), row.raised, "{}", row.rule);
            let mut unread = Vec::new();
            while let Ok(signal) = signals.try_recv() {
                unread.push(signal);
            }
            assert_eq!(unread.len(), row.unread_after, "{}", row.rule);
            // What was unread before comes first, in its order.
            assert_eq!(unread[..row.unread.len()], row.unread[..], "{}", row.rule);
        }
    }

    #[tokio::test]
    async fn a_termination_past_the_bound_waits_for_room_and_is_not_lost() {
        let (sender, mut signals) = signal_queue();
        for _ in 0..SIGNAL_BOUND {
            assert_eq!(interrupt(&sender), Raised::Queued);
        }
        let terminate = raise(&sender, Signal::Terminate("SIGTERM"));
        tokio::pin!(terminate);
        let waited = tokio::select! {
            biased;
            _ = &mut terminate => false,
            () = std::future::ready(()) => true,
        };
        assert!(waited, "a full queue makes the termination wait, not drop");
        assert_eq!(signals.recv().await, Some(Signal::Interrupt));
        assert_eq!(terminate.await, Raised::Queued);
        let mut unread = Vec::new();
        while let Ok(signal) = signals.try_recv() {
            unread.push(signal);
        }
        assert_eq!(unread.len(), SIGNAL_BOUND);
        assert_eq!(unread.last(), Some(&Signal::Terminate("SIGTERM")));
        signals.close();
        assert_eq!(
            raise(&sender, Signal::Terminate("SIGHUP")).await,
            Raised::Gone
        );
    }
}
