//! A supervised agent CLI as a session backend. Three channels ([`Channel`]): Claude Code as
//! one persistent process fed prompts and control lines on stdin; a JSON-RPC agent (Codex
//! `app-server`, an ACP agent such as `gemini --acp`) as one persistent process spoken to
//! through [`RpcClient`]; and the one-shot streams (Codex `exec`, Gemini CLI `-p`), one process
//! per turn, each follow-up resuming the CLI's session by the id its first run reported.
//!
//! The backend reads the process's stdout through the provider's [`Decoder`] and hands the
//! events to the engine; it decides nothing the reducer or the approval policy decides.

use std::collections::HashMap;
use std::path::PathBuf;

use panewise_pane_state::log::LogNote;
use panewise_pane_state::{Msg, State, TurnPhase};
use panewise_providers::claude_control::{
    permission_line, user_line, ClaudeLaunch, ControlRequests, PermissionAnswer,
};
use panewise_providers::claude_question;
use panewise_providers::codex_appserver::{ClientInfo, ThreadOptions};
use panewise_providers::oneshot::{OneShotCli, OneShotLaunch};
use panewise_providers::rpc_client::{RpcClient, RpcProtocol, Step};
use panewise_providers::{Decoder, Provider, ProviderEvent};
use serde_json::Value;
use tokio::time::{sleep_until, Duration, Instant};

use super::process::{Launcher, Process};
use super::NoticeSink;
use super::Produced;
use crate::agent::{AgentCommand, AgentExit};
use crate::approval::ToolRequest;
use crate::error::{AgentError, SessionError};

/// How long an agent may take to exit once its input was closed before it is killed (R100).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long an ACP agent that loaded a recorded session must be quiet before its replay of the
/// history is taken as over and the first prompt goes out. The protocol marks no end of the
/// replay and an agent may answer `session/load` before it (Gemini CLI does), so a prompt sent
/// at the answer would have replayed updates land in its turn.
pub const REPLAY_QUIET: Duration = Duration::from_millis(300);

/// The longest a replay may hold the first prompt back, however chatty the agent.
pub const REPLAY_LONGEST: Duration = Duration::from_secs(5);

/// How the supervised CLI is driven.
#[derive(Debug, Clone)]
pub enum Channel {
    /// Claude Code: one persistent process, prompts and control lines on stdin.
    Claude(ClaudeLaunch),
    /// Codex or Gemini CLI: one process per turn, stdin closed.
    OneShot(OneShotLaunch),
    /// A JSON-RPC agent (Codex `app-server`, an ACP agent such as `gemini --acp`): one
    /// persistent process, prompts, approvals and interrupts as protocol messages.
    Rpc(RpcLaunch),
}

/// How a JSON-RPC agent is started.
#[derive(Debug, Clone)]
pub struct RpcLaunch {
    /// The protocol it speaks.
    pub protocol: RpcProtocol,
    /// The arguments after the executable (`app-server`; `--acp` and its flags).
    pub args: Vec<String>,
    /// The model, for the log (Codex takes it in `thread/start`, an ACP agent as a flag).
    pub model: Option<String>,
    /// What a new (or resumed) Codex thread is started with; an ACP session takes `cwd`.
    pub thread: ThreadOptions,
    /// The npm package that installs the agent, when one does.
    pub npm_package: Option<&'static str>,
}

impl Channel {
    /// The provider whose stream the channel's processes write.
    pub fn provider(&self) -> Provider {
        match self {
            Channel::Claude(_) => Provider::ClaudeCode,
            Channel::OneShot(launch) => match launch.cli {
                OneShotCli::Codex => Provider::Codex,
                OneShotCli::GeminiCli => Provider::GeminiCli,
            },
            Channel::Rpc(launch) => match launch.protocol {
                RpcProtocol::CodexAppServer => Provider::CodexAppServer,
                RpcProtocol::Acp => Provider::Acp,
            },
        }
    }

    /// The npm package that installs the CLI, for the error when it is missing.
    pub fn npm_package(&self) -> &'static str {
        match self {
            // An ACP stream may be any agent's: the launch says which package, if any.
            Channel::Rpc(launch) => launch.npm_package.unwrap_or(""),
            // One drive reads each of these streams: its row names the package.
            Channel::Claude(_) | Channel::OneShot(_) => panewise_core::agent::Drive::ALL
                .into_iter()
                .map(panewise_core::agent::Drive::row)
                .find(|row| row.decoder == self.provider())
                .and_then(|row| row.npm_package)
                .unwrap_or(""),
        }
    }

    /// The model the CLI is started with, when one is named.
    pub fn model(&self) -> Option<String> {
        match self {
            Channel::Claude(launch) => launch.model.clone(),
            Channel::OneShot(launch) => launch.model.clone(),
            Channel::Rpc(launch) => launch.model.clone(),
        }
    }
}

/// What a supervised CLI session needs to start.
#[derive(Debug)]
pub struct CliLaunch {
    /// The CLI's executable.
    pub program: String,
    /// How the CLI is started and driven.
    pub channel: Channel,
    /// The agent's working directory.
    pub cwd: PathBuf,
    /// Extra environment for the agent (a base URL, an API key variable).
    pub env: Vec<(String, String)>,
    /// Variables the agent does not get from panewise's environment (other providers' API
    /// keys, [`crate::secrets::EnvPolicy::agent_removals`]).
    pub env_remove: Vec<String>,
    /// The agent CLI's own session id to continue (`run --resume`).
    pub resume: Option<String>,
    /// Where to save the agent's raw stdout (and, beside it, what was written to its stdin),
    /// as a decoder fixture.
    pub capture: Option<PathBuf>,
    /// Real processes, or scripted ones for a test.
    pub launcher: Launcher,
    /// How long a process may run without a line on its output before the session ends
    /// failed ([`crate::error::AgentError::Silent`]).
    pub startup_limit: Duration,
}

/// An input from the CLI.
#[derive(Debug)]
pub enum Input {
    /// Bytes the agent wrote on stdout.
    Output(Vec<u8>),
    /// The agent closed stdout.
    OutputClosed,
    /// The agent's stdin was closed a grace period ago and it still runs.
    ShutdownOverdue,
    /// An agent that loaded a recorded session has been quiet [`REPLAY_QUIET`] (or replayed
    /// for [`REPLAY_LONGEST`]): its history is over.
    ReplayOver,
    /// The process has run its start-up limit without writing anything on its output.
    StartupOverdue,
}

/// How the CLI's last process ended.
#[derive(Debug, Default)]
pub struct CliOutcome {
    /// How the last agent process ended.
    pub exit: Option<AgentExit>,
    /// The tail of its stderr.
    pub stderr_tail: String,
}

/// A supervised CLI session's backend.
#[derive(Debug)]
pub struct CliAgent {
    /// The running process, if any (a one-shot channel has none between turns).
    process: Option<Process>,
    /// What every process of the session is started with, but its arguments.
    base: AgentCommand,
    channel: Channel,
    launcher: Launcher,
    decoder: Decoder,
    /// The CLI's id of the session, from its first `SessionStarted`: one-shot follow-ups
    /// resume it.
    resume_id: Option<String>,
    /// Whether the agent's session id is in the log yet (a note line, for `run --resume`).
    resume_id_noted: bool,
    /// A prompt the reducer sent while the previous turn's process was still exiting.
    prompt_after_exit: Option<String>,
    outcome: CliOutcome,
    /// Permission requests seen, by id: the tool and its input, to answer them.
    approvals: HashMap<String, (String, Value)>,
    /// Questions asked (Claude Code's `AskUserQuestion`), by request id: the tool's input.
    questions: HashMap<String, Value>,
    /// The control requests written to Claude Code, numbered.
    control: ControlRequests,
    capture: Option<Capture>,
    /// When the agent, its stdin closed, is overdue to exit.
    shutdown_at: Option<Instant>,
    /// The host's side of a JSON-RPC channel.
    rpc: Option<RpcClient>,
    /// While a loaded session's history is replayed: when it counts as over (quiet until
    /// then), and the latest it can be.
    replay_over_at: Option<Instant>,
    replay_longest_at: Option<Instant>,
    /// How long a new process may stay silent.
    startup_limit: Duration,
    /// While the running process has written nothing yet: when it counts as not coming up.
    startup_by: Option<Instant>,
    /// Whether the log has the note that the agent answered (written once).
    up_noted: bool,
}

impl CliAgent {
    /// A backend for `launch`; nothing starts until the session does.
    pub fn new(launch: CliLaunch) -> Result<Self, SessionError> {
        let provider = launch.channel.provider();
        let capture = match &launch.capture {
            Some(path) => Some(Capture::create(path).map_err(SessionError::Io)?),
            None => None,
        };
        Ok(CliAgent {
            process: None,
            base: AgentCommand {
                program: launch.program,
                args: Vec::new(),
                cwd: Some(launch.cwd),
                env: launch.env,
                env_remove: launch.env_remove,
                npm_package: Some(launch.channel.npm_package().to_owned())
                    .filter(|package| !package.is_empty()),
                stdin_null: false,
            },
            channel: launch.channel,
            launcher: launch.launcher,
            decoder: Decoder::new(provider),
            resume_id: launch.resume,
            resume_id_noted: false,
            prompt_after_exit: None,
            outcome: CliOutcome::default(),
            approvals: HashMap::new(),
            questions: HashMap::new(),
            control: ControlRequests::default(),
            capture,
            shutdown_at: None,
            rpc: None,
            replay_over_at: None,
            replay_longest_at: None,
            startup_limit: launch.startup_limit,
            startup_by: None,
            up_noted: false,
        })
    }

    /// The provider whose stream this backend reads.
    pub fn provider(&self) -> Provider {
        self.channel.provider()
    }

    /// The model the CLI was started with, when named.
    pub fn model(&self) -> Option<String> {
        self.channel.model()
    }

    /// How the last process ended.
    pub fn outcome(self) -> CliOutcome {
        self.outcome
    }

    /// Starts the persistent process of the channels that have one.
    pub(crate) async fn start(
        &mut self,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        let produced = self.resume_note();
        match self.channel.clone() {
            Channel::Rpc(launch) => {
                let mut command = self.base.clone();
                command.args.clone_from(&launch.args);
                let mut client = RpcClient::new(
                    launch.protocol,
                    ClientInfo {
                        name: "panewise".to_owned(),
                        title: "panewise".to_owned(),
                        version: env!("CARGO_PKG_VERSION").to_owned(),
                    },
                    launch.thread.clone(),
                    self.resume_id.clone(),
                );
                self.spawn(&command)?;
                let opening = client.open();
                self.rpc = Some(client);
                self.write_step(opening, out).await?;
            }
            Channel::Claude(mut launch) => {
                // The persistent process starts before the first prompt, the control session
                // first.
                if launch.resume.is_none() {
                    launch.resume.clone_from(&self.resume_id);
                }
                let mut command = self.base.clone();
                command.args = launch.args();
                self.spawn(&command)?;
                let initialize = self.control.initialize();
                self.write_line(&initialize).await?;
            }
            Channel::OneShot(_) => {}
        }
        Ok(produced)
    }

    /// The next input: output, its end, or the shutdown grace running out. Pending forever
    /// while no process runs.
    pub(crate) async fn next_input(&mut self) -> Input {
        let shutdown_at = self.shutdown_at;
        let replay_over_at = self.replay_over_at;
        let startup_by = self.startup_by;
        let Some(process) = self.process.as_mut() else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = sleep_until(replay_over_at.unwrap_or_else(far_future)), if replay_over_at.is_some() => {
                self.replay_over_at = None;
                self.replay_longest_at = None;
                Input::ReplayOver
            }
            output = process.next_output() => match output {
                Some(bytes) => Input::Output(bytes),
                None => Input::OutputClosed,
            },
            _ = sleep_until(shutdown_at.unwrap_or_else(far_future)), if shutdown_at.is_some() => {
                self.shutdown_at = None;
                Input::ShutdownOverdue
            }
            _ = sleep_until(startup_by.unwrap_or_else(far_future)), if startup_by.is_some() => {
                self.startup_by = None;
                Input::StartupOverdue
            }
        }
    }

    /// What one input produced. The output's end reaps the process and starts the next
    /// turn's, when a prompt waits for it; a process that never wrote a line in its start-up
    /// limit is killed and ends the session with [`AgentError::Silent`].
    pub(crate) fn on_input(&mut self, input: Input) -> Result<Vec<Produced>, SessionError> {
        let mut produced = Vec::new();
        match input {
            Input::Output(bytes) => {
                self.startup_by = None;
                if !self.up_noted {
                    // The first sign of life, once per session: `panewise new` waits for this
                    // note (or the session's end) before it says the session started.
                    self.up_noted = true;
                    produced.push(Produced::Note(LogNote {
                        agent_up: true,
                        ..LogNote::default()
                    }));
                }
                if let Some(capture) = self.capture.as_mut() {
                    capture.output(&bytes);
                }
                let mut decoded = Vec::new();
                self.decoder.feed(&bytes, &mut decoded);
                self.absorb(decoded, &mut produced);
                // The protocol's own answers (the handshake, refusals) go after the engine has
                // folded what was read; the engine calls `settle` for them.
                if let Some(rpc) = self.rpc.as_mut() {
                    let step = rpc.read(&bytes);
                    produced.push(Produced::AfterFold(step));
                    if rpc.replaying() {
                        let now = Instant::now();
                        let longest = *self.replay_longest_at.get_or_insert(now + REPLAY_LONGEST);
                        self.replay_over_at = Some((now + REPLAY_QUIET).min(longest));
                    }
                }
            }
            Input::OutputClosed => {
                let mut decoded = Vec::new();
                self.decoder.finish(&mut decoded);
                self.absorb(decoded, &mut produced);
                produced.push(Produced::Reap);
            }
            Input::ShutdownOverdue => produced.push(Produced::Msg(Msg::AgentShutdownOverdue)),
            Input::ReplayOver => {
                if let Some(rpc) = self.rpc.as_mut() {
                    produced.push(Produced::AfterFold(rpc.end_replay()));
                }
            }
            Input::StartupOverdue => {
                let stderr = self
                    .process
                    .as_ref()
                    .map(Process::stderr_tail)
                    .unwrap_or_default();
                self.kill()?;
                return Err(SessionError::Agent(AgentError::Silent {
                    program: self.base.program.clone(),
                    seconds: self.startup_limit.as_secs(),
                    stderr: last_line(&stderr),
                }));
            }
        }
        Ok(produced)
    }

    /// Waits for the process whose stdout closed and reports its exit; then starts the next
    /// turn's process when a prompt waits for it.
    pub(crate) async fn reap(&mut self) -> Result<Vec<Produced>, SessionError> {
        let Some(mut process) = self.process.take() else {
            return Ok(Vec::new());
        };
        self.shutdown_at = None;
        self.startup_by = None;
        let exit = process.wait().await?;
        tracing::info!(code = ?exit.code, signal = ?exit.signal, "agent process exited");
        self.outcome.stderr_tail = process.stderr_tail();
        self.outcome.exit = Some(exit);
        drop(process);
        let produced = vec![Produced::Msg(Msg::AgentExited {
            code: exit.code,
            signal: exit.signal,
        })];
        if let Some(prompt) = self.prompt_after_exit.take() {
            self.start_turn_process(&prompt)?;
        }
        Ok(produced)
    }

    /// Writes a JSON-RPC step's lines and shows its notices.
    pub(crate) async fn write_step(
        &mut self,
        step: Step,
        out: &mut dyn NoticeSink,
    ) -> Result<(), SessionError> {
        for notice in &step.notices {
            out.notice(notice.clone());
        }
        for line in step.lines {
            self.write_line(&line).await?;
        }
        if step.prompted {
            self.decoder.prompt_sent();
        }
        Ok(())
    }

    /// Sends the reducer's prompt: a user line to the persistent process, a protocol message,
    /// or a new one-shot process (after the previous one exited).
    pub(crate) async fn send_prompt(
        &mut self,
        text: String,
        out: &mut dyn NoticeSink,
    ) -> Result<(), SessionError> {
        match &self.channel {
            Channel::Claude(_) => {
                let line = user_line(&text);
                self.write_line(&line).await?;
            }
            Channel::Rpc(_) => {
                if let Some(rpc) = self.rpc.as_mut() {
                    let step = rpc.prompt(&text);
                    self.write_step(step, out).await?;
                }
            }
            Channel::OneShot(_) if self.process.is_some() => self.prompt_after_exit = Some(text),
            Channel::OneShot(_) => self.start_turn_process(&text)?,
        }
        Ok(())
    }

    /// Stops the running turn the channel's own way.
    pub(crate) async fn interrupt(&mut self) -> Result<(), SessionError> {
        match self.channel {
            Channel::Claude(_) => {
                let interrupt = self.control.interrupt();
                self.write_line(&interrupt).await?;
            }
            // The protocol's stop; SIGINT when no turn is known to run yet.
            Channel::Rpc(_) => match self.rpc.as_mut().map(RpcClient::interrupt) {
                Some(Ok(lines)) => {
                    for line in lines {
                        self.write_line(&line).await?;
                    }
                }
                _ => {
                    if let Some(process) = &self.process {
                        process.interrupt()?;
                    }
                }
            },
            // A one-shot CLI's own "stop this turn" is SIGINT.
            Channel::OneShot(_) => {
                if let Some(process) = &self.process {
                    process.interrupt()?;
                }
            }
        }
        Ok(())
    }

    /// Kills the agent's process group.
    pub(crate) fn kill(&mut self) -> Result<(), SessionError> {
        self.prompt_after_exit = None;
        if let Some(process) = &self.process {
            process.kill()?;
        }
        Ok(())
    }

    /// Answers a permission request the agent sent.
    pub(crate) async fn resolve_approval(
        &mut self,
        id: &str,
        approved: bool,
        reason: &str,
    ) -> Result<(), SessionError> {
        let request = self.approvals.remove(id);
        if matches!(self.channel, Channel::Rpc(_)) {
            match self.rpc.as_mut().map(|rpc| rpc.answer(id, approved)) {
                Some(Ok(line)) => self.write_line(&line).await?,
                // Withdrawn or already answered: the answer is dropped.
                other => tracing::debug!(?other, "approval answer dropped"),
            }
            return Ok(());
        }
        // One-shot channels never ask; Claude Code's requests are answered here.
        let answer = match request {
            Some((_, input)) if approved => PermissionAnswer::Allow { input },
            None if approved => PermissionAnswer::Allow { input: Value::Null },
            _ => PermissionAnswer::Deny {
                message: reason.to_owned(),
            },
        };
        let line = permission_line(id, &answer);
        self.write_line(&line).await?;
        Ok(())
    }

    /// Answers a question the agent asked: Claude Code's `AskUserQuestion` is allowed with
    /// the answers in its input; no answer (nobody could give one) denies it, saying so.
    pub(crate) async fn resolve_question(
        &mut self,
        id: &str,
        answers: &[String],
    ) -> Result<(), SessionError> {
        let Some(input) = self.questions.remove(id) else {
            tracing::debug!(%id, "answer to a question nobody holds dropped");
            return Ok(());
        };
        let answer = if answers.is_empty() {
            PermissionAnswer::Deny {
                message: "nobody could answer the question; decide by yourself and say what \
                          you assumed"
                    .to_owned(),
            }
        } else {
            PermissionAnswer::Allow {
                input: claude_question::answered_input(&input, answers),
            }
        };
        let line = permission_line(id, &answer);
        self.write_line(&line).await?;
        Ok(())
    }

    /// What the agent's pending request `id` asks to do.
    pub(crate) fn request(&self, id: &str) -> Option<ToolRequest<'_>> {
        self.approvals
            .get(id)
            .map(|(tool, input)| ToolRequest::Agent { tool, input })
    }

    /// Closes the agent's stdin once nothing is left to send, so the CLI finishes and exits.
    pub(crate) fn settle(&mut self, state: &State, input_open: bool) {
        let nothing_left = !input_open
            && state.queued_prompts.is_empty()
            && self.prompt_after_exit.is_none()
            && matches!(state.turn_phase, TurnPhase::Done { .. });
        if !nothing_left {
            return;
        }
        if let Some(process) = self.process.as_mut() {
            if process.close_stdin() && self.shutdown_at.is_none() {
                self.shutdown_at = Some(Instant::now() + SHUTDOWN_GRACE);
            }
        }
    }

    /// No process runs and none waits to start.
    pub(crate) fn is_idle(&self) -> bool {
        self.process.is_none() && self.prompt_after_exit.is_none()
    }

    /// A note with the CLI's session id, the first time it is known.
    fn resume_note(&mut self) -> Vec<Produced> {
        match (&self.resume_id, self.resume_id_noted) {
            (Some(id), false) => {
                self.resume_id_noted = true;
                vec![Produced::Note(LogNote {
                    agent_session_id: Some(id.clone()),
                    ..LogNote::default()
                })]
            }
            _ => Vec::new(),
        }
    }

    fn absorb(&mut self, decoded: Vec<panewise_providers::Decoded>, produced: &mut Vec<Produced>) {
        for item in decoded {
            // A line the decoder could not read is counted by it; the reducer never sees it.
            let Ok(event) = item else { continue };
            if let ProviderEvent::SessionStarted {
                session_id: Some(id),
                ..
            } = &event
            {
                // The agent's newest session is the one to continue: a resume the agent
                // refused went on in a new session, whose id the log must name.
                if self.resume_id.as_deref() != Some(id.as_str()) {
                    self.resume_id = Some(id.clone());
                    self.resume_id_noted = false;
                }
                produced.extend(self.resume_note());
            }
            if let ProviderEvent::ApprovalRequested {
                request_id,
                tool,
                input,
                ..
            } = &event
            {
                // Claude Code's `AskUserQuestion` asks the person, not for an approval: it
                // goes into the reducer's question queue, and its answer allows the tool with
                // the answers (`resolve_question`).
                let questions = claude_question::question_lines(input);
                let asks = tool == claude_question::TOOL
                    && !matches!(self.channel, Channel::Rpc(_))
                    && !questions.is_empty();
                if asks {
                    self.questions.insert(request_id.clone(), input.clone());
                    produced.push(Produced::Msg(Msg::QuestionAsked {
                        id: request_id.clone(),
                        questions,
                        turn: None,
                    }));
                    continue;
                }
                self.approvals
                    .insert(request_id.clone(), (tool.clone(), input.clone()));
            }
            produced.push(Produced::Event(event));
        }
    }

    fn spawn(&mut self, command: &AgentCommand) -> Result<(), SessionError> {
        let process = self.launcher.spawn(command)?;
        tracing::info!(program = %command.program, args = ?command.args, "agent process started");
        self.process = Some(process);
        self.startup_by = Some(Instant::now() + self.startup_limit);
        Ok(())
    }

    async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if let Some(capture) = self.capture.as_mut() {
            capture.input(line);
        }
        // The decoder reads both directions: an answer written here closes its request.
        self.decoder.host_line(line.as_bytes());
        match self.process.as_mut() {
            // An agent that exited cannot read: its exit, folded when its output closes, is
            // what the person is shown, not a broken pipe.
            Some(process) => match process.write_line(line).await {
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                    tracing::debug!("the agent's stdin is closed; line dropped");
                    Ok(())
                }
                written => written,
            },
            None => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "no agent process is running",
            )),
        }
    }

    fn start_turn_process(&mut self, prompt: &str) -> Result<(), SessionError> {
        let Channel::OneShot(launch) = &self.channel else {
            return Ok(());
        };
        let mut command = self.base.clone();
        command.args = launch.args(prompt, self.resume_id.as_deref());
        command.stdin_null = true;
        // One decoder reads every process's output as one stream (`finish` at each end): a
        // resumed Codex run reports the thread's running total, which the decoder turns back
        // into the run's own figures only if it saw the previous run's total.
        self.spawn(&command)
    }
}

/// The last non-empty line of `text`, for an error sentence (a CLI's stderr tail ends with
/// the line that says what went wrong).
fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| line.chars().take(300).collect())
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}

/// The agent's raw stdout, and what was written to its stdin, saved as a decoder fixture:
/// `FILE` and `FILE.input.ndjson`. A capture that cannot be written is reported once and given
/// up; it never stops the session.
#[derive(Debug)]
struct Capture {
    output: Option<std::fs::File>,
    input: Option<std::fs::File>,
}

impl Capture {
    fn create(path: &std::path::Path) -> std::io::Result<Self> {
        let mut input_path = path.as_os_str().to_owned();
        input_path.push(".input.ndjson");
        Ok(Capture {
            output: Some(std::fs::File::create(path)?),
            input: Some(std::fs::File::create(PathBuf::from(input_path))?),
        })
    }

    fn output(&mut self, bytes: &[u8]) {
        Self::append(&mut self.output, bytes);
    }

    fn input(&mut self, line: &str) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        Self::append(&mut self.input, &bytes);
    }

    fn append(file: &mut Option<std::fs::File>, bytes: &[u8]) {
        use std::io::Write;
        if let Some(handle) = file.as_mut() {
            if let Err(error) = handle.write_all(bytes) {
                tracing::warn!(%error, "the capture cannot be written; capturing stops");
                *file = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_providers::oneshot::Access;

    #[test]
    fn each_channel_names_its_provider_and_npm_package() {
        let one_shot = |cli| {
            Channel::OneShot(OneShotLaunch {
                cli,
                model: None,
                access: Access::ReadOnly,
            })
        };
        let cases = [
            (
                Channel::Claude(ClaudeLaunch::default()),
                Provider::ClaudeCode,
                "@anthropic-ai/claude-code",
            ),
            (
                one_shot(OneShotCli::Codex),
                Provider::Codex,
                "@openai/codex",
            ),
            (
                one_shot(OneShotCli::GeminiCli),
                Provider::GeminiCli,
                "@google/gemini-cli",
            ),
        ];
        for (channel, provider, package) in cases {
            assert_eq!(channel.provider(), provider);
            assert_eq!(channel.npm_package(), package);
        }
    }
}
