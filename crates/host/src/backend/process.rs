//! The process behind a supervised CLI: a real one ([`AgentProcess`]) or a scripted one in
//! memory ([`ScriptedProcess`]) that a test drives line by line under paused time.

use tokio::sync::{mpsc, oneshot};

use crate::agent::{AgentCommand, AgentExit, AgentProcess};
use crate::error::AgentError;

/// How a CLI backend starts its processes.
#[derive(Debug, Default)]
pub enum Launcher {
    /// Real processes, each in a process group of its own.
    #[default]
    Os,
    /// In-memory processes handed to a test as they start.
    Scripted(mpsc::UnboundedSender<ScriptedSpawn>),
}

impl Launcher {
    /// A scripted launcher and the receiver of what it starts.
    pub fn scripted() -> (Self, mpsc::UnboundedReceiver<ScriptedSpawn>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Launcher::Scripted(sender), receiver)
    }

    pub(crate) fn spawn(&self, command: &AgentCommand) -> Result<Process, AgentError> {
        match self {
            Launcher::Os => {
                AgentProcess::spawn(command).map(|process| Process::Os(Box::new(process)))
            }
            Launcher::Scripted(spawned) => {
                let (stdout, output) = mpsc::unbounded_channel();
                let (stdin_sender, stdin) = mpsc::unbounded_channel();
                let (signals_sender, signals) = mpsc::unbounded_channel();
                let (exit_sender, exit) = oneshot::channel();
                let spawn = ScriptedSpawn {
                    command: command.clone(),
                    stdout,
                    stdin,
                    signals,
                    exit: exit_sender,
                };
                spawned.send(spawn).map_err(|_| AgentError::Spawn {
                    program: command.program.clone(),
                    source: std::io::Error::other("the script has ended"),
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
    /// The process's stdout: send bytes; drop it to close stdout.
    pub stdout: mpsc::UnboundedSender<Vec<u8>>,
    /// The lines the session wrote to its stdin; ends when the session closes stdin.
    pub stdin: mpsc::UnboundedReceiver<String>,
    /// The signals the session sent it.
    pub signals: mpsc::UnboundedReceiver<ScriptedSignal>,
    /// How it exits: send once stdout is closed (dropped unsent: killed by signal 9).
    pub exit: oneshot::Sender<AgentExit>,
}

/// The session's side of a scripted process.
#[derive(Debug)]
pub struct ScriptedProcess {
    output: mpsc::UnboundedReceiver<Vec<u8>>,
    stdin: Option<mpsc::UnboundedSender<String>>,
    signals: mpsc::UnboundedSender<ScriptedSignal>,
    exit: Option<oneshot::Receiver<AgentExit>>,
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
                Some(stdin) if stdin.send(line.to_owned()).is_ok() => Ok(()),
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
            Process::Scripted(process) => {
                let _gone = process.signals.send(ScriptedSignal::Interrupt);
                Ok(())
            }
        }
    }

    pub(crate) fn kill(&self) -> std::io::Result<()> {
        match self {
            Process::Os(process) => process.kill(),
            Process::Scripted(process) => {
                let _gone = process.signals.send(ScriptedSignal::Kill);
                Ok(())
            }
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
