//! One supervised agent CLI as a process: started in a process group of its own (so an interrupt
//! or a kill reaches everything it started), its stdout handed on as bytes for a decoder, the
//! tail of its stderr kept for failure detail, its exit read as a code or a signal. The process
//! group is a [`ProcessGroup`]: dropping the [`AgentProcess`] kills the whole group and what left
//! it, and a `kill -9` of panewise takes the CLI and its group along, so the CLI never outlives
//! panewise.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use nix::sys::signal::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::error::AgentError;
use crate::process::ProcessGroup;

/// How much of the agent's stderr is kept for a failure's detail.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// Bytes read from the agent's stdout at a time.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// The reads of the agent's stdout (each at most [`READ_CHUNK_BYTES`]) that wait for the
/// engine. At the bound the reader waits, so it stops reading the pipe; once the pipe's own
/// buffer is full the agent's next write blocks. Nothing is lost: the agent is held back until
/// the engine (itself held back by its front ends) reads on.
pub const STDOUT_CHUNKS: usize = 64;

/// What to start.
#[derive(Debug, Clone, Default)]
pub struct AgentCommand {
    /// The executable, found on `PATH` unless a path is given.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory, when not the current one.
    pub cwd: Option<PathBuf>,
    /// Variables set for the agent on top of panewise's own environment.
    pub env: Vec<(String, String)>,
    /// Variables of panewise's own environment the agent does not get (other providers' API
    /// keys, `crate::secrets`); a variable `env` sets is set all the same.
    pub env_remove: Vec<String>,
    /// The npm package that installs the program, for the error when it is missing.
    pub npm_package: Option<String>,
    /// Start with stdin at end of file (`/dev/null`): a one-shot CLI takes its prompt as an
    /// argument and would otherwise wait for, or append, stdin.
    pub stdin_null: bool,
}

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentExit {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
}

/// A running agent CLI.
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    group: ProcessGroup,
    output: mpsc::Receiver<Vec<u8>>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
}

impl AgentProcess {
    /// Starts `command` in a new process group ([`crate::process::spawn`]), with piped stdin,
    /// stdout and stderr.
    pub fn spawn(command: &AgentCommand) -> Result<Self, AgentError> {
        let mut process = Command::new(&command.program);
        for variable in &command.env_remove {
            process.env_remove(variable);
        }
        process
            .args(&command.args)
            .envs(command.env.iter().map(|(key, value)| (key, value)))
            .stdin(if command.stdin_null {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &command.cwd {
            process.current_dir(cwd);
        }
        let (mut child, group) = crate::process::spawn(&mut process).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                AgentError::NotInstalled {
                    program: command.program.clone(),
                    npm_package: command.npm_package.clone(),
                }
            } else {
                AgentError::Spawn {
                    program: command.program.clone(),
                    source,
                }
            }
        })?;
        let (sender, output) = mpsc::channel(STDOUT_CHUNKS);
        if let Some(mut stdout) = child.stdout.take() {
            tokio::spawn(async move {
                let mut chunk = vec![0u8; READ_CHUNK_BYTES];
                loop {
                    match stdout.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(read) => {
                            if sender.send(chunk[..read].to_vec()).await.is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(mut stderr) = child.stderr.take() {
            let tail = Arc::clone(&stderr_tail);
            tokio::spawn(async move {
                let mut chunk = vec![0u8; 4096];
                while let Ok(read) = stderr.read(&mut chunk).await {
                    if read == 0 {
                        break;
                    }
                    if let Ok(mut tail) = tail.lock() {
                        tail.extend(&chunk[..read]);
                        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                        tail.drain(..excess);
                    }
                }
            });
        }
        Ok(AgentProcess {
            stdin: child.stdin.take(),
            child,
            group,
            output,
            stderr_tail,
        })
    }

    /// The next bytes the agent wrote on stdout, as they arrived; `None` once it closed stdout.
    pub async fn next_output(&mut self) -> Option<Vec<u8>> {
        self.output.recv().await
    }

    /// Writes `line` and a newline to the agent's stdin.
    pub async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the agent's stdin is closed",
            )
        })?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        stdin.write_all(&bytes).await?;
        stdin.flush().await
    }

    /// Closes the agent's stdin (a CLI reading prompts from it then finishes and exits);
    /// `true` when it was open until now.
    pub fn close_stdin(&mut self) -> bool {
        self.stdin.take().is_some()
    }

    /// Sends SIGINT to the agent's process group: a CLI's own "stop this turn".
    pub fn interrupt(&self) -> std::io::Result<()> {
        self.signal(Signal::SIGINT)
    }

    /// Sends SIGKILL to the agent's process group and to every process that left it (found by
    /// the spawn's mark or through its parent). What escaped, and what could not be killed,
    /// goes to the trace: the session goes on to read the agent's exit either way.
    pub fn kill(&self) -> std::io::Result<()> {
        let report = self.group.kill();
        if !report.failed.is_empty() {
            tracing::warn!(report = %report.lines().join(" "), "the agent's process group was killed, but not everything it started");
        } else if !report.escaped.is_empty() {
            tracing::info!(report = %report.lines().join(" "), "killed the agent's processes that had left its group");
        }
        Ok(())
    }

    /// Waits for the agent to exit.
    pub async fn wait(&mut self) -> std::io::Result<AgentExit> {
        let status = self.child.wait().await?;
        use std::os::unix::process::ExitStatusExt;
        Ok(AgentExit {
            code: status.code(),
            signal: status.signal(),
        })
    }

    /// The last [`STDERR_TAIL_BYTES`] the agent wrote on stderr, as text.
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|tail| {
                String::from_utf8_lossy(&tail.iter().copied().collect::<Vec<u8>>()).into_owned()
            })
            .unwrap_or_default()
    }

    fn signal(&self, signal: Signal) -> std::io::Result<()> {
        self.group.signal(signal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> AgentCommand {
        AgentCommand {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..AgentCommand::default()
        }
    }

    /// Whether a process not yet dead (not a zombie) is in `group`, from `/proc/*/stat`.
    fn group_has_running_member(group: i32) -> bool {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        entries.flatten().any(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // After the `(comm)` field: state, ppid, pgrp, …
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            matches!(fields.as_slice(), [state, _ppid, pgrp, ..]
                if *state != "Z" && *state != "X" && pgrp.parse::<i32>().ok() == Some(group))
        })
    }

    async fn all_output(agent: &mut AgentProcess) -> Vec<u8> {
        let mut bytes = Vec::new();
        while let Some(chunk) = agent.next_output().await {
            bytes.extend(chunk);
        }
        bytes
    }

    #[tokio::test]
    async fn stdout_arrives_stderr_is_kept_and_the_exit_code_is_read() {
        let agent = AgentProcess::spawn(&shell(
            "read line; echo \"got $line\"; echo oops >&2; exit 3",
        ));
        let Ok(mut agent) = agent else {
            panic!("sh starts");
        };
        assert!(agent.write_line("hello").await.is_ok());
        assert_eq!(all_output(&mut agent).await, b"got hello\n");
        let exit = agent.wait().await.ok();
        assert_eq!(
            exit,
            Some(AgentExit {
                code: Some(3),
                signal: None
            })
        );
        // The stderr reader may still be finishing after the exit.
        for _ in 0..50 {
            if !agent.stderr_tail().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(agent.stderr_tail(), "oops\n");
    }

    #[tokio::test]
    async fn a_missing_cli_names_the_npm_package_that_installs_it() {
        let command = AgentCommand {
            program: "panewise-no-such-agent-cli".into(),
            npm_package: Some("@example/agent".into()),
            ..AgentCommand::default()
        };
        let error = AgentProcess::spawn(&command).err().map(|e| e.to_string());
        let error = error.unwrap_or_default();
        assert!(error.contains("panewise-no-such-agent-cli"), "{error}");
        assert!(error.contains("npm install -g @example/agent"), "{error}");
    }

    #[tokio::test]
    async fn kill_ends_the_whole_process_group_and_is_read_as_a_signal() {
        // The shell starts a grandchild; both must go.
        let agent = AgentProcess::spawn(&shell("sleep 30 & echo started; wait"));
        let Ok(mut agent) = agent else {
            panic!("sh starts");
        };
        assert_eq!(
            agent.next_output().await.as_deref(),
            Some(&b"started\n"[..])
        );
        let group = agent.group.id();
        assert!(agent.kill().is_ok());
        let exit = agent.wait().await.ok();
        assert_eq!(exit.and_then(|exit| exit.signal), Some(9));
        // Nothing of the group is left running (a killed grandchild may linger as a zombie
        // until its new parent reaps it; that is not running). Give the kernel a moment.
        let mut gone = false;
        for _ in 0..100 {
            if group.is_some_and(|group| !group_has_running_member(group.as_raw())) {
                gone = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(gone, "the grandchild outlived the kill");
    }

    #[tokio::test]
    async fn interrupt_reaches_the_agent_as_sigint() {
        let agent = AgentProcess::spawn(&shell(
            "trap 'echo interrupted; exit 130' INT; echo ready; while true; do sleep 0.05; done",
        ));
        let Ok(mut agent) = agent else {
            panic!("sh starts");
        };
        assert_eq!(agent.next_output().await.as_deref(), Some(&b"ready\n"[..]));
        assert!(agent.interrupt().is_ok());
        assert_eq!(all_output(&mut agent).await, b"interrupted\n");
        assert_eq!(
            agent.wait().await.ok().and_then(|exit| exit.code),
            Some(130)
        );
    }
}
