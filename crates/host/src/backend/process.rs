//! The process behind a supervised CLI: a real one ([`AgentProcess`]) or a scripted one in
//! memory ([`ScriptedProcess`]) that a test drives line by line under paused time.
//!
//! A scripted process's channels are bounded as a real one's pipes are: its stdout by
//! [`STDOUT_CHUNKS`] (the test's send waits, as the agent's write would), its stdin by
//! [`SCRIPTED_STDIN_LINES`] (the session's write waits, as on a pipe the agent does not read).
//! Its signals and the spawns handed to the test are sent without waiting, and refused past
//! [`SCRIPTED_PENDING`] unread: a test that reads none of them has stopped driving the script.

use tokio::sync::{mpsc, oneshot};

use crate::agent::{AgentCommand, AgentExit, AgentProcess, STDOUT_CHUNKS};
use crate::error::AgentError;

/// The lines the session may have written to a scripted process's stdin that the test has not
/// read; past it the session's write waits.
pub const SCRIPTED_STDIN_LINES: usize = 64;

/// The spawns, or the signals, a test may leave unread before the next is refused.
pub const SCRIPTED_PENDING: usize = 16;

/// How a CLI backend starts its processes.
#[derive(Debug, Default)]
pub enum Launcher {
    /// Real processes, each in a process group of its own.
    #[default]
    Os,
    /// In-memory processes handed to a test as they start.
    Scripted(mpsc::Sender<ScriptedSpawn>),
}

impl Launcher {
    /// A scripted launcher and the receiver of what it starts.
    pub fn scripted() -> (Self, mpsc::Receiver<ScriptedSpawn>) {
        let (sender, receiver) = mpsc::channel(SCRIPTED_PENDING);
        (Launcher::Scripted(sender), receiver)
    }

    pub(crate) fn spawn(&self, command: &AgentCommand) -> Result<Process, AgentError> {
        match self {
            Launcher::Os => {
                AgentProcess::spawn(command).map(|process| Process::Os(Box::new(process)))
            }
            Launcher::Scripted(spawned) => {
                let (stdout, output) = mpsc::channel(STDOUT_CHUNKS);
                let (stdin_sender, stdin) = mpsc::channel(SCRIPTED_STDIN_LINES);
                let (signals_sender, signals) = mpsc::channel(SCRIPTED_PENDING);
                let (exit_sender, exit) = oneshot::channel();
                let spawn = ScriptedSpawn {
                    command: command.clone(),
                    stdout,
                    stdin,
                    signals,
                    exit: exit_sender,
                };
                spawned.try_send(spawn).map_err(|error| AgentError::Spawn {
                    program: command.program.clone(),
                    source: std::io::Error::other(match error {
                        mpsc::error::TrySendError::Full(_) => {
                            "the script has not taken the processes started before"
                        }
                        mpsc::error::TrySendError::Closed(_) => "the script has ended",
                    }),
                })?;
                Ok(Process::Scripted(ScriptedProcess {
                    output,
                    stdin: Some(stdin_sender),
                    signals: signals_sender,
                    exit: Some(exit),
                }))
            }
        }
    }
}

/// A signal the session sent a scripted process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptedSignal {
    /// SIGINT to its group.
    Interrupt,
    /// SIGKILL to its group.
    Kill,
}

/// What a test gets when the session starts a scripted process.
#[derive(Debug)]
pub struct ScriptedSpawn {
    /// What the session asked to start.
    pub command: AgentCommand,
    /// The process's stdout: send bytes (waiting while [`STDOUT_CHUNKS`] are unread, as a
    /// write to a full pipe does); drop it to close stdout.
    pub stdout: mpsc::Sender<Vec<u8>>,
    /// The lines the session wrote to its stdin; ends when the session closes stdin.
    pub stdin: mpsc::Receiver<String>,
    /// The signals the session sent it.
    pub signals: mpsc::Receiver<ScriptedSignal>,
    /// How it exits: send once stdout is closed (dropped unsent: killed by signal 9).
    pub exit: oneshot::Sender<AgentExit>,
}

/// The session's side of a scripted process.
#[derive(Debug)]
pub struct ScriptedProcess {
    output: mpsc::Receiver<Vec<u8>>,
    stdin: Option<mpsc::Sender<String>>,
    signals: mpsc::Sender<ScriptedSignal>,
    exit: Option<oneshot::Receiver<AgentExit>>,
}

impl ScriptedProcess {
    /// Sends `signal` without waiting: one to a script that has ended is lost, as one to a
    /// process that exited is; one past [`SCRIPTED_PENDING`] unread is an error.
    fn signal(&self, signal: ScriptedSignal) -> std::io::Result<()> {
        match self.signals.try_send(signal) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => Err(std::io::Error::other(
                "the script has not read the signals sent before",
            )),
        }
    }
}

/// A running agent process.
#[derive(Debug)]
pub(crate) enum Process {
    Os(Box<AgentProcess>),
    Scripted(ScriptedProcess),
}

impl Process {
    pub(crate) async fn next_output(&mut self) -> Option<Vec<u8>> {
        match self {
            Process::Os(process) => process.next_output().await,
            Process::Scripted(process) => process.output.recv().await,
        }
    }

    pub(crate) async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        match self {
            Process::Os(process) => process.write_line(line).await,
            Process::Scripted(process) => match &process.stdin {
                Some(stdin) if stdin.send(line.to_owned()).await.is_ok() => Ok(()),
                _ => Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
            },
        }
    }

    /// Closes stdin; true when it was open.
    pub(crate) fn close_stdin(&mut self) -> bool {
        match self {
            Process::Os(process) => process.close_stdin(),
            Process::Scripted(process) => process.stdin.take().is_some(),
        }
    }

    pub(crate) fn interrupt(&self) -> std::io::Result<()> {
        match self {
            Process::Os(process) => process.interrupt(),
            Process::Scripted(process) => process.signal(ScriptedSignal::Interrupt),
        }
    }

    pub(crate) fn kill(&self) -> std::io::Result<()> {
        match self {
            Process::Os(process) => process.kill(),
            Process::Scripted(process) => process.signal(ScriptedSignal::Kill),
        }
    }

    pub(crate) async fn wait(&mut self) -> std::io::Result<AgentExit> {
        match self {
            Process::Os(process) => process.wait().await,
            Process::Scripted(process) => Ok(match process.exit.take() {
                Some(exit) => exit.await.unwrap_or(AgentExit {
                    code: None,
                    signal: Some(9),
                }),
                None => AgentExit {
                    code: None,
                    signal: Some(9),
                },
            }),
        }
    }

    pub(crate) fn stderr_tail(&self) -> String {
        match self {
            Process::Os(process) => process.stderr_tail(),
            Process::Scripted(_) => String::new(),
        }
    }
}
