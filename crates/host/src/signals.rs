//! SIGTERM and SIGHUP: the session ends as a second Ctrl-C ends it. The turn is interrupted and
//! the agent killed (its process group and every tool's with it), nothing more is sent, and the
//! loop ends once the agent is gone, so the log gets its last lines and closing checkpoint.
//!
//! [`Terminations::listen`] installs the handlers once, before the loop: a signal that arrives
//! between two polls is kept for the next (a handler created afresh in each `select!` would
//! miss it, and with the default action gone, panewise would ignore it). [`stop_messages`] is
//! what a loop folds when one arrives; [`received`] tells the binary which signal ended the
//! session, for its exit code ([`TerminationSignal::exit_code`]).

use std::sync::atomic::{AtomicI32, Ordering};

use panewise_pane_state::{Msg, State};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// A signal that ends the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminationSignal {
    /// SIGTERM: `kill`, a service manager, a container stop.
    Terminate,
    /// SIGHUP: the terminal went away.
    HangUp,
}

impl TerminationSignal {
    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            TerminationSignal::Terminate => nix::sys::signal::Signal::SIGTERM as i32,
            TerminationSignal::HangUp => nix::sys::signal::Signal::SIGHUP as i32,
        }
    }

    /// Its name, as `kill -l` spells it with the `SIG` prefix.
    pub fn name(self) -> &'static str {
        match self {
            TerminationSignal::Terminate => "SIGTERM",
            TerminationSignal::HangUp => "SIGHUP",
        }
    }

    /// The exit code of a session it ended: 128 plus the signal's number (143, 129), what a
    /// shell reports for a process the signal killed, so a script sees the same either way.
    pub fn exit_code(self) -> u8 {
        u8::try_from(128 + self.number()).unwrap_or(u8::MAX)
    }

    fn from_number(number: i32) -> Option<Self> {
        [TerminationSignal::Terminate, TerminationSignal::HangUp]
            .into_iter()
            .find(|signal| signal.number() == number)
    }
}

/// The first termination signal this process received (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The first SIGTERM or SIGHUP a [`Terminations`] of this process received, if one did.
pub fn received() -> Option<TerminationSignal> {
    TerminationSignal::from_number(RECEIVED.load(Ordering::Relaxed))
}

/// The handlers of SIGTERM and SIGHUP, installed for as long as this lives.
#[derive(Debug)]
pub struct Terminations {
    terminate: Option<Signal>,
    hang_up: Option<Signal>,
}

impl Terminations {
    /// Installs the handlers (on a tokio runtime). One that cannot be installed is reported
    /// in the trace and never fires; that signal then keeps the default action it had.
    pub fn listen() -> Self {
        let install = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(listener) => Some(listener),
            Err(error) => {
                tracing::warn!(%error, signal = name, "cannot listen for the signal");
                None
            }
        };
        Terminations {
            terminate: install(SignalKind::terminate(), "SIGTERM"),
            hang_up: install(SignalKind::hangup(), "SIGHUP"),
        }
    }

    /// Resolves when SIGTERM or SIGHUP arrives (never, when neither could be installed).
    pub async fn recv(&mut self) -> TerminationSignal {
        let signal = tokio::select! {
            Some(()) = recv_or_pending(self.terminate.as_mut()) => TerminationSignal::Terminate,
            Some(()) = recv_or_pending(self.hang_up.as_mut()) => TerminationSignal::HangUp,
        };
        let _first =
            RECEIVED.compare_exchange(0, signal.number(), Ordering::Relaxed, Ordering::Relaxed);
        signal
    }
}

async fn recv_or_pending(listener: Option<&mut Signal>) -> Option<()> {
    match listener {
        Some(listener) => listener.recv().await,
        None => std::future::pending().await,
    }
}

/// What a loop folds when a termination signal arrives: a second Ctrl-C's effect at once (a
/// working turn is stopped, `RequestStop`, and stopped again, which kills the agent: R95),
/// then `Quit` (R85), so no queued prompt starts another turn. The loop also stops taking the
/// person's lines.
pub fn stop_messages(state: &State, now_ms: u64) -> Vec<Msg> {
    let mut msgs = Vec::new();
    if state.turn_phase.is_working() {
        msgs.push(Msg::RequestStop { at: now_ms });
        msgs.push(Msg::RequestStop { at: now_ms });
    }
    msgs.push(Msg::Quit);
    msgs
}

#[cfg(test)]
mod tests {
    use panewise_pane_state::{update, Cmd};

    use super::*;

    #[test]
    fn a_terminated_session_exits_as_the_shell_reports_the_signal() {
        assert_eq!(TerminationSignal::Terminate.exit_code(), 143);
        assert_eq!(TerminationSignal::HangUp.exit_code(), 129);
    }

    fn fold(state: State, msgs: Vec<Msg>) -> (State, Vec<Cmd>) {
        msgs.into_iter()
            .fold((state, Vec::new()), |(state, mut cmds), msg| {
                let (state, more) = update(state, msg);
                cmds.extend(more);
                (state, cmds)
            })
    }

    /// R95, R85: a working turn is interrupted and its agent killed at once, and the session
    /// quits; an idle one only quits.
    #[test]
    fn a_working_turn_is_interrupted_then_killed_and_the_session_quits() {
        let (working, _) = fold(
            State::new("a"),
            vec![
                Msg::InitReady { at: 1 },
                Msg::StreamSubscribe { at: 2 },
                Msg::TurnStart {
                    at: 3,
                    content: Some("hi".into()),
                },
            ],
        );
        assert!(working.turn_phase.is_working());
        let (stopped, cmds) = fold(working.clone(), stop_messages(&working, 10));
        assert!(cmds
            .iter()
            .any(|cmd| matches!(cmd, Cmd::InterruptAgent { .. })));
        assert!(cmds.iter().any(|cmd| matches!(cmd, Cmd::KillAgent { .. })));
        assert!(stopped.should_exit);

        let idle = State::new("a");
        assert_eq!(stop_messages(&idle, 5), vec![Msg::Quit]);
        let (quit, cmds) = fold(idle.clone(), stop_messages(&idle, 5));
        assert!(!cmds.iter().any(|cmd| matches!(cmd, Cmd::KillAgent { .. })));
        assert!(quit.should_exit);
    }
}
