//! The effect runner of one supervised agent session: one loop over a closed `Input`
//! enum, each input stamped with the host's clock, recorded in the session log, folded with
//! `step`, and the returned `Cmd`s executed by one `match` that delegates. The runner decides
//! nothing the reducer decides: which prompt to send, when to interrupt or kill, which turn a
//! deadline belongs to all come from the reducer's commands.
//!
//! Two channels ([`Channel`]): Claude Code runs as one persistent process fed prompts and
//! control lines on stdin; Codex and Gemini CLI run one process per turn, the prompt as an
//! argument, each follow-up resuming the session by the id the first run reported. Only the arms
//! that touch the agent differ between them; the loop and the fold are the same.
//!
//! The one thing decided here is the user's own voice: the approval mode answers the agent's
//! permission requests on the user's behalf ([`ApprovalMode`]).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use panewise_pane_state::cmd::DeadlineKind;
use panewise_pane_state::log::{LogHeader, LogNote};
use panewise_pane_state::{Cmd, Msg, State, TurnId, WATCHDOG_TICK_MS};
use panewise_providers::claude_control::{
    initialize_line, interrupt_line, permission_line, user_line, ClaudeLaunch, PermissionAnswer,
};
use panewise_providers::codex_appserver::{ClientInfo, ThreadOptions};
use panewise_providers::oneshot::{Access, OneShotCli, OneShotLaunch};
use panewise_providers::rpc_client::{RpcClient, RpcProtocol, Step};
use panewise_providers::{Decoder, Mapper, ModelTable, Provider, ProviderEvent};
use serde_json::Value;
use tokio::time::{sleep_until, Duration, Instant};
use tracing::Instrument;

use crate::agent::{AgentCommand, AgentExit, AgentProcess};
use crate::clock::{now_ms, SessionClock};
use crate::error::RunnerError;
use crate::journal::transcript::{self, PromptSource, TranscriptRecorder};
use crate::session_log::SessionLogFile;
use panewise_pane_state::log::{Actor, TranscriptEntry};

/// How panewise answers an agent's permission requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ApprovalMode {
    /// Deny every request.
    ReadOnly,
    /// Ask the person on a terminal; without one, deny and say why.
    Ask,
    /// Allow file edits inside the working directory; ask for the rest.
    Auto,
    /// Allow every request.
    FullAccess,
}

impl ApprovalMode {
    /// The mode's name as typed on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ApprovalMode::ReadOnly => "read-only",
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::FullAccess => "full-access",
        }
    }
}

impl ApprovalMode {
    /// What a channel that cannot ask (Codex `exec`, Gemini `-p`) lets the agent do in this
    /// mode: `ask` cannot ask there, so it is as strict as `read-only`.
    pub fn one_shot_access(self) -> Access {
        match self {
            ApprovalMode::ReadOnly | ApprovalMode::Ask => Access::ReadOnly,
            ApprovalMode::Auto => Access::EditWorkspace,
            ApprovalMode::FullAccess => Access::Full,
        }
    }
}

/// The tools that only edit files, which `auto` allows inside the working directory: Claude
/// Code's, Codex app-server's file change, and an ACP agent's `edit` kind.
const FILE_EDIT_TOOLS: &[&str] = &[
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "file_change",
    "edit",
];

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
        match (self, self.provider()) {
            (Channel::Rpc(launch), _) => launch.npm_package.unwrap_or(""),
            (_, Provider::Codex) => "@openai/codex",
            (_, Provider::GeminiCli) => "@google/gemini-cli",
            _ => "@anthropic-ai/claude-code",
        }
    }

    fn model(&self) -> Option<String> {
        match self {
            Channel::Claude(launch) => launch.model.clone(),
            Channel::OneShot(launch) => launch.model.clone(),
            Channel::Rpc(launch) => launch.model.clone(),
        }
    }
}

/// What a session needs to start.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The CLI's executable.
    pub program: String,
    /// How the CLI is started and driven.
    pub channel: Channel,
    /// The agent's working directory.
    pub cwd: PathBuf,
    /// Extra environment for the agent (a base URL, an API key variable).
    pub env: Vec<(String, String)>,
    /// The prompts given at the start, in order.
    pub prompts: Vec<String>,
    /// How permission requests are answered.
    pub approval: ApprovalMode,
    /// Where the session log goes.
    pub log: PathBuf,
    /// The agent CLI's own session id to continue (`run --resume`).
    pub resume: Option<String>,
    /// The recorded session this one continues, for the log header.
    pub resumed_from: Option<String>,
    /// The CLI's version, for the log header.
    pub cli_version: Option<String>,
    /// Where to save the agent's raw stdout (and, beside it, what was written to its stdin),
    /// as a decoder fixture.
    pub capture: Option<PathBuf>,
}

/// What the person types while the session runs, line by line ([`UserLines`]).
pub type UserLines = tokio::sync::mpsc::UnboundedReceiver<String>;

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

/// What the view is told as the session runs.
pub trait View {
    /// An event the decoder read from the agent's output.
    fn agent_event(&mut self, event: &ProviderEvent);
    /// The pane state after an input was folded.
    fn state(&mut self, state: &State);
    /// Ask the person to allow `tool` with `arg`; the answer is their next line.
    fn ask(&mut self, tool: &str, arg: &str);
    /// A notice for the person (a denial, a kill).
    fn notice(&mut self, text: &str);
}

/// Every input the loop folds.
#[derive(Debug)]
enum Input {
    /// Bytes the agent wrote on stdout.
    Output(Vec<u8>),
    /// The agent closed stdout.
    OutputClosed,
    /// A deadline the reducer armed fired.
    Deadline {
        turn: Option<TurnId>,
        kind: DeadlineKind,
        deadline_ms: u64,
    },
    /// The watchdog's tick.
    Tick,
    /// The person pressed Ctrl-C.
    Interrupt,
    /// The person typed a line: an answer to the question asked, or a prompt.
    UserLine(String),
    /// The person's input ended.
    UserClosed,
    /// The agent's stdin was closed a grace period ago and it still runs.
    ShutdownOverdue,
}

/// How long an agent may take to exit once its input was closed before it is killed (R100).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How the session ended.
#[derive(Debug)]
pub struct SessionOutcome {
    /// The final pane state.
    pub state: State,
    /// How the agent process ended.
    pub exit: Option<AgentExit>,
    /// The tail of its stderr.
    pub stderr_tail: String,
}

/// The header of a session's log: what ran, where, with which versions.
pub fn log_header(config: &SessionConfig) -> LogHeader {
    LogHeader {
        agent_id: config.channel.provider().as_str().to_owned(),
        started_at_ms: now_ms(),
        model: config.channel.model(),
        cwd: Some(config.cwd.display().to_string()),
        cli_version: config.cli_version.clone(),
        panewise_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        resumed_from: config.resumed_from.clone(),
        // transcript: the name the person typed is not known here; `sessions` derives it.
        provider: None,
    }
}

/// Runs one session to its end, its log at `config.log`. See [`run_session_on`].
pub async fn run_session(
    config: SessionConfig,
    user: UserInput,
    view: &mut dyn View,
) -> Result<SessionOutcome, RunnerError> {
    let log = SessionLogFile::create(&config.log, &log_header(&config)).map_err(|source| {
        RunnerError::Log {
            path: config.log.clone(),
            source,
        }
    })?;
    run_session_on(config, log, user, view).await
}

/// Runs one session to its end, recording into `log`: every prompt sent and answered, the
/// person's input ended (when their lines are prompts), the (last) agent process exited.
///
/// A log that cannot be written stops the session: the agent is interrupted and then, as the
/// process is dropped, its process group killed, and the error names the log.
pub async fn run_session_on(
    config: SessionConfig,
    mut log: SessionLogFile,
    user: UserInput,
    view: &mut dyn View,
) -> Result<SessionOutcome, RunnerError> {
    let provider = config.channel.provider();
    let model = config.channel.model();
    let session =
        tracing::info_span!("session", provider = provider.as_str(), log = %config.log.display());
    let capture = match &config.capture {
        Some(path) => Some(Capture::create(path).map_err(RunnerError::Io)?),
        None => None,
    };
    let mut runner = Runner {
        agent: None,
        base: AgentCommand {
            program: config.program.clone(),
            args: Vec::new(),
            cwd: Some(config.cwd.clone()),
            env: config.env.clone(),
            npm_package: Some(config.channel.npm_package().to_owned())
                .filter(|package| !package.is_empty()),
            stdin_null: false,
        },
        channel: config.channel.clone(),
        decoder: Decoder::new(provider),
        mapper: Mapper::new(provider, ModelTable::built_in()).with_model(model),
        resume_id: config.resume.clone(),
        resume_id_noted: false,
        prompt_after_exit: None,
        last_exit: None,
        stderr_tail: String::new(),
        deadlines: BTreeMap::new(),
        approvals: HashMap::new(),
        approval: config.approval,
        cwd: config.cwd.clone(),
        next_request: 0,
        user_lines: user.lines,
        lines_are_prompts: user.prompts,
        can_ask: user.ask,
        asking: None,
        capture,
        log_path: config.log.clone(),
        session: session.clone(),
        turn_span: tracing::Span::none(),
        turn_seen: None,
        clock: SessionClock::start(),
        shutdown_at: None,
        rpc: None,
        transcript: TranscriptRecorder::new(PromptSource::Sent),
    };
    let result = runner
        .run(&mut log, config.prompts, view)
        .instrument(session)
        .await;
    if let Err(error) = &result {
        if matches!(error, RunnerError::Log { .. }) {
            // Nothing more can be recorded: stop the agent rather than let it work unseen.
            if let Some(agent) = &runner.agent {
                let _ignored = agent.interrupt();
            }
        }
    }
    if let Err(error) = &result {
        // transcript: the closing line says why the session ended (nothing if the log is gone).
        let _ignored =
            runner
                .transcript
                .finish(runner.clock.now_ms(), Some(error.to_string()), &mut log);
    }
    result?;
    log.checkpoint()
        .map_err(|source| runner.log_error(source))?;
    // transcript: the closing line, after the final checkpoint.
    runner
        .transcript
        .finish(runner.clock.now_ms(), None, &mut log)
        .map_err(|source| runner.log_error(source))?;
    Ok(SessionOutcome {
        state: log.state().clone(),
        exit: runner.last_exit,
        stderr_tail: runner.stderr_tail,
    })
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}

async fn next_output(agent: Option<&mut AgentProcess>) -> Option<Vec<u8>> {
    match agent {
        Some(agent) => agent.next_output().await,
        None => std::future::pending().await,
    }
}

async fn next_line(lines: Option<&mut UserLines>) -> Option<String> {
    match lines {
        Some(lines) => lines.recv().await,
        None => std::future::pending().await,
    }
}

/// A command's name, for its tracing span.
fn cmd_name(cmd: &Cmd) -> &'static str {
    match cmd {
        Cmd::SendPrompt { .. } => "send_prompt",
        Cmd::InterruptAgent { .. } => "interrupt_agent",
        Cmd::KillAgent { .. } => "kill_agent",
        Cmd::ResolveApproval { .. } => "resolve_approval",
        Cmd::ScheduleDeadline { .. } => "schedule_deadline",
        Cmd::CancelDeadline { .. } => "cancel_deadline",
        Cmd::CancelScope { .. } => "cancel_scope",
        Cmd::Emit(_) => "emit",
        _ => "other",
    }
}

/// The agent's raw stdout, and what was written to its stdin, saved as a decoder fixture:
/// `FILE` and `FILE.input.ndjson`. A capture that cannot be written is reported once and given
/// up; it never stops the session.
struct Capture {
    output: Option<std::fs::File>,
    input: Option<std::fs::File>,
}

impl Capture {
    fn create(path: &std::path::Path) -> std::io::Result<Self> {
        let mut input_path = path.as_os_str().to_owned();
        input_path.push(".input.ndjson");
        // transcript: session files are the owner's alone (mode 0600).
        use crate::journal::files::create_private;
        Ok(Capture {
            output: Some(create_private(path)?),
            input: Some(create_private(&PathBuf::from(input_path))?),
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

struct Runner {
    /// The running process, if any (a one-shot channel has none between turns).
    agent: Option<AgentProcess>,
    /// What every process of the session is started with, but its arguments.
    base: AgentCommand,
    channel: Channel,
    decoder: Decoder,
    mapper: Mapper,
    /// The CLI's id of the session, from its first `SessionStarted`: one-shot follow-ups
    /// resume it.
    resume_id: Option<String>,
    /// A prompt the reducer sent while the previous turn's process was still exiting.
    prompt_after_exit: Option<String>,
    last_exit: Option<AgentExit>,
    stderr_tail: String,
    /// Armed deadlines, keyed by kind and turn, with their instant and reducer deadline.
    deadlines: BTreeMap<(u8, Option<TurnId>), (Instant, DeadlineKind, u64)>,
    /// Permission requests seen, by id: the tool and its input, to answer them.
    approvals: HashMap<String, (String, Option<String>, Value)>,
    approval: ApprovalMode,
    cwd: PathBuf,
    next_request: u64,
    /// Whether the agent's session id is in the log yet (a note line, for `run --resume`).
    resume_id_noted: bool,
    /// The person's lines, while their input is open.
    user_lines: Option<UserLines>,
    /// The person's lines are prompts (the interactive session).
    lines_are_prompts: bool,
    /// The person can be asked to approve.
    can_ask: bool,
    /// The approval request the person was asked about, whose answer is their next line.
    asking: Option<String>,
    capture: Option<Capture>,
    log_path: PathBuf,
    session: tracing::Span,
    /// The span of the turn running now, and which turn it is.
    turn_span: tracing::Span,
    turn_seen: Option<TurnId>,
    /// The clock every input is stamped with.
    clock: SessionClock,
    /// When the agent, its stdin closed, is overdue to exit.
    shutdown_at: Option<Instant>,
    /// The host's side of a JSON-RPC channel.
    rpc: Option<RpcClient>,
    /// transcript: the conversation's lines, queued until the next write to the log.
    transcript: TranscriptRecorder,
}

impl Runner {
    /// The loop: start the agent, submit the first prompts, then fold inputs until the session
    /// is over.
    async fn run(
        &mut self,
        log: &mut SessionLogFile,
        prompts: Vec<String>,
        view: &mut dyn View,
    ) -> Result<(), RunnerError> {
        if let Channel::Rpc(launch) = &self.channel {
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
            self.write_step(opening, view).await?;
        }
        if let Channel::Claude(launch) = &self.channel {
            // The persistent process starts before the first prompt, the control session first.
            let mut launch = launch.clone();
            if launch.resume.is_none() {
                launch.resume.clone_from(&self.resume_id);
            }
            let mut command = self.base.clone();
            command.args = launch.args();
            self.spawn(&command)?;
            let initialize = initialize_line(&self.request_id());
            self.write_line(&initialize).await?;
        }
        let mut batch = self.mapper.prologue(self.clock.now_ms());
        batch.extend(
            prompts
                .into_iter()
                .map(|text| Msg::PromptSubmitted { text }),
        );
        self.fold(log, batch, view).await?;
        let mut tick = tokio::time::interval(Duration::from_millis(WATCHDOG_TICK_MS));
        tick.tick().await;
        loop {
            if self.session_is_over(log) {
                break;
            }
            let next_deadline = self.next_deadline();
            let input = tokio::select! {
                output = next_output(self.agent.as_mut()), if self.agent.is_some() => match output {
                    Some(bytes) => Input::Output(bytes),
                    None => Input::OutputClosed,
                },
                line = next_line(self.user_lines.as_mut()), if self.user_lines.is_some() => match line {
                    Some(line) => Input::UserLine(line),
                    None => Input::UserClosed,
                },
                _ = sleep_until(next_deadline.map_or_else(far_future, |(at, ..)| at)), if next_deadline.is_some() => {
                    match next_deadline {
                        Some((_, turn, kind, deadline_ms)) => Input::Deadline { turn, kind, deadline_ms },
                        None => continue,
                    }
                }
                _ = sleep_until(self.shutdown_at.unwrap_or_else(far_future)), if self.shutdown_at.is_some() => {
                    self.shutdown_at = None;
                    Input::ShutdownOverdue
                }
                _ = tick.tick() => Input::Tick,
                _ = tokio::signal::ctrl_c() => Input::Interrupt,
            };
            let closed = matches!(input, Input::OutputClosed);
            let answers = match (&input, self.rpc.as_mut()) {
                (Input::Output(bytes), Some(rpc)) => rpc.read(bytes),
                _ => Step::default(),
            };
            let msgs = self.messages_for(input, log.state(), view);
            self.fold(log, msgs, view).await?;
            // The protocol's own answers (the handshake, refusals) after the fold, so an
            // approval the agent asked for is in the reducer's queue before anything answers.
            self.write_step(answers, view).await?;
            if closed {
                // The last output is folded; now the exit, then the next turn's process if one
                // waits for this one to end.
                self.reap(log, view).await?;
                continue;
            }
            if self.nothing_left_to_send(log) {
                if let Some(agent) = self.agent.as_mut() {
                    // Nothing left to send: closing stdin lets the CLI finish and exit.
                    if agent.close_stdin() && self.shutdown_at.is_none() {
                        self.shutdown_at = Some(Instant::now() + SHUTDOWN_GRACE);
                    }
                }
            }
        }
        Ok(())
    }

    /// Over when no process runs, no prompt waits to be sent, and the person can send none.
    fn session_is_over(&self, log: &SessionLogFile) -> bool {
        self.agent.is_none()
            && self.prompt_after_exit.is_none()
            && !(self.lines_are_prompts && self.user_lines.is_some())
            && !log.state().turn_phase.is_working()
            && log.state().queued_prompts.is_empty()
    }

    /// Writes a JSON-RPC step's lines and shows its notices.
    async fn write_step(&mut self, step: Step, view: &mut dyn View) -> Result<(), RunnerError> {
        for notice in &step.notices {
            view.notice(notice);
        }
        for line in step.lines {
            self.write_line(&line).await?;
        }
        Ok(())
    }

    fn spawn(&mut self, command: &AgentCommand) -> Result<(), RunnerError> {
        let agent = AgentProcess::spawn(command)?;
        tracing::info!(parent: &self.session, program = %command.program, args = ?command.args, "agent process started");
        self.agent = Some(agent);
        Ok(())
    }

    fn log_error(&self, source: std::io::Error) -> RunnerError {
        RunnerError::Log {
            path: self.log_path.clone(),
            source,
        }
    }

    async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if let Some(capture) = self.capture.as_mut() {
            capture.input(line);
        }
        match self.agent.as_mut() {
            // An agent that exited cannot read: its exit, folded when its output closes, is
            // what the person is shown, not a broken pipe.
            Some(agent) => match agent.write_line(line).await {
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                    tracing::debug!(parent: &self.session, "the agent's stdin is closed; line dropped");
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

    /// Waits for the process whose stdout closed, folds its exit, and starts the next turn's
    /// process when a prompt waits for it.
    async fn reap(
        &mut self,
        log: &mut SessionLogFile,
        view: &mut dyn View,
    ) -> Result<(), RunnerError> {
        let Some(mut agent) = self.agent.take() else {
            return Ok(());
        };
        self.shutdown_at = None;
        let exit = agent.wait().await?;
        tracing::info!(parent: &self.session, code = ?exit.code, signal = ?exit.signal, "agent process exited");
        self.stderr_tail = agent.stderr_tail();
        self.last_exit = Some(exit);
        drop(agent);
        let exited = Msg::AgentExited {
            code: exit.code,
            signal: exit.signal,
        };
        self.fold(log, vec![exited], view).await?;
        if let Some(prompt) = self.prompt_after_exit.take() {
            self.start_turn_process(&prompt)?;
        }
        Ok(())
    }

    /// Sends the reducer's prompt: a user line to the persistent process, or a new one-shot
    /// process (after the previous one exited).
    async fn send_prompt(&mut self, text: String) -> Result<(), RunnerError> {
        match &self.channel {
            Channel::Claude(_) => {
                let line = user_line(&text);
                self.write_line(&line).await?;
            }
            Channel::Rpc(_) => {
                if let Some(rpc) = self.rpc.as_mut() {
                    let step = rpc.prompt(&text);
                    // `view` is not at hand here: notices of a prompt go to the trace.
                    for notice in &step.notices {
                        tracing::warn!(parent: &self.session, %notice, "prompt");
                    }
                    for line in step.lines {
                        self.write_line(&line).await?;
                    }
                }
            }
            Channel::OneShot(_) if self.agent.is_some() => self.prompt_after_exit = Some(text),
            Channel::OneShot(_) => self.start_turn_process(&text)?,
        }
        Ok(())
    }

    fn start_turn_process(&mut self, prompt: &str) -> Result<(), RunnerError> {
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

    fn request_id(&mut self) -> String {
        self.next_request = self.next_request.saturating_add(1);
        format!("panewise-{}", self.next_request)
    }

    fn next_deadline(&self) -> Option<(Instant, Option<TurnId>, DeadlineKind, u64)> {
        self.deadlines
            .iter()
            .map(|((_, turn), (at, kind, deadline_ms))| (*at, *turn, *kind, *deadline_ms))
            .min_by_key(|(at, ..)| *at)
    }

    /// The reducer messages for one input.
    fn messages_for(&mut self, input: Input, state: &State, view: &mut dyn View) -> Vec<Msg> {
        let now = self.clock.now_ms();
        let mut msgs = Vec::new();
        match input {
            Input::Output(bytes) => {
                if let Some(capture) = self.capture.as_mut() {
                    capture.output(&bytes);
                }
                let mut decoded = Vec::new();
                self.decoder.feed(&bytes, &mut decoded);
                self.map_decoded(decoded, now, &mut msgs, view);
            }
            Input::OutputClosed => {
                let mut decoded = Vec::new();
                self.decoder.finish(&mut decoded);
                self.map_decoded(decoded, now, &mut msgs, view);
            }
            Input::Deadline {
                turn,
                kind,
                deadline_ms,
            } => {
                self.deadlines.remove(&(deadline_key(kind), turn));
                msgs.push(kind.elapsed(turn, deadline_ms));
            }
            Input::Tick => msgs.push(Msg::StreamWatchdogTick),
            Input::ShutdownOverdue => msgs.push(Msg::AgentShutdownOverdue),
            Input::Interrupt if !state.turn_phase.is_working() && self.lines_are_prompts => {
                // Between turns there is nothing to stop: Ctrl-C ends the session, as the end
                // of input does.
                view.notice("Ctrl-C between turns: ending the session");
                self.user_lines = None;
                msgs.extend(self.answer_asked(false));
            }
            Input::Interrupt => {
                // transcript: who asked for the interrupt.
                self.transcript
                    .record(TranscriptEntry::Interrupt { by: Actor::Person }, now);
                msgs.push(Msg::RequestStop { at: now });
            }
            Input::UserLine(line) => match self.asking.is_some() {
                true => {
                    let approved = matches!(line.trim(), "y" | "Y" | "yes" | "Yes");
                    if !approved {
                        view.notice(&format!("denied (you answered {:?})", line.trim()));
                    }
                    msgs.extend(self.answer_asked(approved));
                }
                false if self.lines_are_prompts => {
                    if !line.trim().is_empty() {
                        msgs.push(Msg::PromptSubmitted { text: line });
                    }
                }
                false => {
                    view.notice("no question is waiting for an answer; that line was not sent")
                }
            },
            Input::UserClosed => {
                self.user_lines = None;
                if self.asking.is_some() {
                    view.notice("your input ended before you answered: denied");
                }
                msgs.extend(self.answer_asked(false));
            }
        }
        msgs
    }

    /// The answer to the question the person was asked, if one was.
    fn answer_asked(&mut self, approved: bool) -> Option<Msg> {
        let request_id = self.asking.take()?;
        // transcript: the person's answer, or the session's when their input ended first.
        let (by, reason) = match self.user_lines {
            Some(_) => (Actor::Person, None),
            None => (
                Actor::Session,
                Some("the person's input ended before they answered".to_owned()),
            ),
        };
        self.transcript.record(
            TranscriptEntry::ApprovalAnswered {
                request_id: Some(request_id),
                approved,
                by,
                reason,
            },
            self.clock.now_ms(),
        );
        Some(Msg::ApprovalAnswered { approved })
    }

    fn map_decoded(
        &mut self,
        decoded: Vec<panewise_providers::Decoded>,
        now: u64,
        msgs: &mut Vec<Msg>,
        view: &mut dyn View,
    ) {
        for item in decoded {
            let Ok(event) = item else { continue };
            if let ProviderEvent::SessionStarted {
                session_id: Some(id),
                ..
            } = &event
            {
                self.resume_id.get_or_insert_with(|| id.clone());
            }
            tracing::debug!(parent: &self.turn_span, event = event.kind_name(), "agent event");
            if let ProviderEvent::ApprovalRequested {
                request_id,
                tool,
                arg,
                input,
                ..
            } = &event
            {
                self.approvals.insert(
                    request_id.clone(),
                    (tool.clone(), arg.clone(), input.clone()),
                );
            }
            view.agent_event(&event);
            // transcript: every agent event (text, thinking, tools, approvals, failures).
            self.transcript.on_event(&event, now);
            self.mapper.map(&event, now, msgs);
        }
    }

    /// Records and folds `msgs` one by one, executing each message's commands before the next.
    async fn fold(
        &mut self,
        log: &mut SessionLogFile,
        msgs: Vec<Msg>,
        view: &mut dyn View,
    ) -> Result<(), RunnerError> {
        let mut queue: std::collections::VecDeque<Msg> = msgs.into();
        if !self.resume_id_noted {
            if let Some(id) = self.resume_id.clone() {
                // Before anything else is recorded: `run --resume` continues by this id.
                let note = LogNote {
                    agent_session_id: Some(id),
                };
                log.note(&note).map_err(|source| self.log_error(source))?;
                self.resume_id_noted = true;
            }
        }
        while let Some(msg) = queue.pop_front() {
            // transcript: the conversation so far goes to disk before the next message.
            self.transcript
                .write_to(log)
                .map_err(|source| self.log_error(source))?;
            let cmds = log
                .record(self.clock.now_ms(), msg)
                .map_err(|source| self.log_error(source))?;
            self.follow_turn(log.state());
            for cmd in cmds {
                let span =
                    tracing::debug_span!(parent: &self.turn_span, "effect", cmd = cmd_name(&cmd));
                if let Some(follow_up) = self.execute(cmd, view).instrument(span).await? {
                    queue.push_back(follow_up);
                }
            }
            view.state(log.state());
            if let Some(asked) = &self.asking {
                if log.state().pending_approvals.front().map(|front| &front.id) != Some(asked) {
                    // Withdrawn or cleared by an interrupt: the person's next line is no answer.
                    self.asking = None;
                    view.notice("the agent no longer waits for that answer");
                }
            }
            if let Some(answer) = self.answer_front_approval(log.state(), view) {
                queue.push_back(answer);
            }
        }
        // transcript: what the commands recorded (a prompt sent, an answer) goes to disk now.
        self.transcript
            .write_to(log)
            .map_err(|source| self.log_error(source))
    }

    /// Opens a turn's span when the reducer starts a turn.
    fn follow_turn(&mut self, state: &State) {
        if state.current_turn != self.turn_seen {
            self.turn_seen = state.current_turn;
            self.turn_span = match state.current_turn {
                Some(turn) => {
                    tracing::info_span!(parent: &self.session, "turn", turn = turn.0)
                }
                None => tracing::Span::none(),
            };
            tracing::info!(parent: &self.turn_span, "turn started");
        }
    }

    /// The one `match` over `Cmd`: each arm delegates.
    async fn execute(&mut self, cmd: Cmd, view: &mut dyn View) -> Result<Option<Msg>, RunnerError> {
        match cmd {
            Cmd::SendPrompt { text, .. } => {
                // transcript: the prompt, as sent.
                self.transcript.record(
                    TranscriptEntry::Prompt { text: text.clone() },
                    self.clock.now_ms(),
                );
                self.send_prompt(text).await?
            }
            Cmd::InterruptAgent { .. } => match self.channel {
                Channel::Claude(_) => {
                    let id = self.request_id();
                    self.write_line(&interrupt_line(&id)).await?;
                }
                // The protocol's stop; SIGINT when no turn is known to run yet.
                Channel::Rpc(_) => match self.rpc.as_mut().map(RpcClient::interrupt) {
                    Some(Ok(lines)) => {
                        for line in lines {
                            self.write_line(&line).await?;
                        }
                    }
                    _ => {
                        if let Some(agent) = &self.agent {
                            agent.interrupt()?;
                        }
                    }
                },
                // A one-shot CLI's own "stop this turn" is SIGINT.
                Channel::OneShot(_) => {
                    if let Some(agent) = &self.agent {
                        agent.interrupt()?;
                    }
                }
            },
            Cmd::KillAgent { .. } => {
                view.notice("the agent did not stop in time; killing it");
                if let Some(agent) = &self.agent {
                    agent.kill()?;
                }
            }
            Cmd::ResolveApproval { id, approved } if matches!(self.channel, Channel::Rpc(_)) => {
                self.approvals.remove(&id);
                match self.rpc.as_mut().map(|rpc| rpc.answer(&id, approved)) {
                    Some(Ok(line)) => self.write_line(&line).await?,
                    // Withdrawn or already answered: the answer is dropped.
                    other => {
                        tracing::debug!(parent: &self.session, ?other, "approval answer dropped")
                    }
                }
            }
            // One-shot channels never ask; Claude Code's requests are answered here.
            Cmd::ResolveApproval { id, approved } => {
                let answer = match self.approvals.remove(&id) {
                    Some((_, _, input)) if approved => PermissionAnswer::Allow { input },
                    Some(_) | None if approved => PermissionAnswer::Allow { input: Value::Null },
                    _ => PermissionAnswer::Deny {
                        message: format!(
                            "denied by panewise (--approval {})",
                            self.approval.name()
                        ),
                    },
                };
                let line = permission_line(&id, &answer);
                self.write_line(&line).await?;
            }
            Cmd::ScheduleDeadline {
                turn,
                kind,
                deadline_ms,
            } => {
                let wait = deadline_ms.saturating_sub(self.clock.now_ms());
                let at = Instant::now() + Duration::from_millis(wait);
                self.deadlines
                    .insert((deadline_key(kind), turn), (at, kind, deadline_ms));
            }
            Cmd::CancelDeadline { turn, kind } => {
                self.deadlines.remove(&(deadline_key(kind), turn));
            }
            // Scopes, questions, confirmations and request context have no effect on a CLI
            // that runs its own loop; the view shows what they change in the state.
            Cmd::CancelScope { .. }
            | Cmd::ResolveQuestion { .. }
            | Cmd::RunConfirmed { .. }
            | Cmd::AttachRequestContext { .. }
            | Cmd::Exit
            | Cmd::Emit(_) => {}
            // `Cmd` is non-exhaustive: a command added later does nothing here until it is
            // given an arm.
            _ => {}
        }
        Ok(None)
    }

    /// The approval mode answers the front pending approval for the person, or asks them and
    /// waits for their next line.
    fn answer_front_approval(&mut self, state: &State, view: &mut dyn View) -> Option<Msg> {
        let front = state.pending_approvals.front()?;
        if self.asking.is_some() {
            return None;
        }
        let (tool, arg, input) = self.approvals.get(&front.id)?.clone();
        let arg = arg.unwrap_or_default();
        let inside_cwd = input
            .get("file_path")
            .and_then(Value::as_str)
            .is_some_and(|path| std::path::Path::new(path).starts_with(&self.cwd));
        let mut reason = None;
        let approved = match self.approval {
            ApprovalMode::ReadOnly => false,
            ApprovalMode::FullAccess => true,
            ApprovalMode::Auto if FILE_EDIT_TOOLS.contains(&tool.as_str()) && inside_cwd => true,
            ApprovalMode::Auto | ApprovalMode::Ask if self.can_ask && self.user_lines.is_some() => {
                view.ask(&tool, &arg);
                self.asking = Some(front.id.clone());
                return None;
            }
            ApprovalMode::Auto | ApprovalMode::Ask => {
                view.notice(&format!(
                    "denied {tool} {arg}: --approval {} asks, and there is no terminal to ask on",
                    self.approval.name()
                ));
                reason = Some("there is no terminal to ask on".to_owned());
                false
            }
        };
        // transcript: the approval mode answered.
        self.transcript.record(
            TranscriptEntry::ApprovalAnswered {
                request_id: Some(front.id.clone()),
                approved,
                by: transcript::by_policy(self.approval),
                reason,
            },
            self.clock.now_ms(),
        );
        if !approved {
            view.notice(&format!(
                "denied {tool} {arg} (--approval {})",
                self.approval.name()
            ));
        }
        Some(Msg::ApprovalAnswered { approved })
    }

    /// Every prompt was sent and its turn has ended, nothing is queued or working, and the
    /// person can send no more.
    fn nothing_left_to_send(&self, log: &SessionLogFile) -> bool {
        let state = log.state();
        !(self.lines_are_prompts && self.user_lines.is_some())
            && state.queued_prompts.is_empty()
            && matches!(
                state.turn_phase,
                panewise_pane_state::TurnPhase::Done { .. }
            )
    }
}

/// A deadline's kind as a map key (`DeadlineKind` has no order of its own).
fn deadline_key(kind: DeadlineKind) -> u8 {
    match kind {
        DeadlineKind::Submit => 0,
        DeadlineKind::Interrupt => 1,
        // Non-exhaustive: a new kind gets its own key.
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_that_cannot_ask_runs_ask_as_read_only() {
        let cases = [
            (ApprovalMode::ReadOnly, Access::ReadOnly),
            (ApprovalMode::Ask, Access::ReadOnly),
            (ApprovalMode::Auto, Access::EditWorkspace),
            (ApprovalMode::FullAccess, Access::Full),
        ];
        for (mode, access) in cases {
            assert_eq!(mode.one_shot_access(), access, "{}", mode.name());
        }
    }

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
