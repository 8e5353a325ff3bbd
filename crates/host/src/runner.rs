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
use panewise_pane_state::log::LogHeader;
use panewise_pane_state::{Cmd, Msg, State, TurnId, WATCHDOG_TICK_MS};
use panewise_providers::claude_control::{
    initialize_line, interrupt_line, permission_line, user_line, ClaudeLaunch, PermissionAnswer,
};
use panewise_providers::oneshot::{Access, OneShotCli, OneShotLaunch};
use panewise_providers::{Decoder, Mapper, ModelTable, Provider, ProviderEvent};
use serde_json::Value;
use tokio::time::{sleep_until, Duration, Instant};

use crate::agent::{AgentCommand, AgentExit, AgentProcess};
use crate::clock::now_ms;
use crate::error::RunnerError;
use crate::session_log::SessionLogFile;

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

/// Claude Code's tools that only edit files, which `auto` allows inside the working directory.
const FILE_EDIT_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// How the supervised CLI is driven.
#[derive(Debug, Clone)]
pub enum Channel {
    /// Claude Code: one persistent process, prompts and control lines on stdin.
    Claude(ClaudeLaunch),
    /// Codex or Gemini CLI: one process per turn, stdin closed.
    OneShot(OneShotLaunch),
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
        }
    }

    /// The npm package that installs the CLI, for the error when it is missing.
    pub fn npm_package(&self) -> &'static str {
        match self.provider() {
            Provider::Codex => "@openai/codex",
            Provider::GeminiCli => "@google/gemini-cli",
            _ => "@anthropic-ai/claude-code",
        }
    }

    fn model(&self) -> Option<String> {
        match self {
            Channel::Claude(launch) => launch.model.clone(),
            Channel::OneShot(launch) => launch.model.clone(),
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
    /// The prompts, in order.
    pub prompts: Vec<String>,
    /// How permission requests are answered.
    pub approval: ApprovalMode,
    /// Where the session log goes.
    pub log: PathBuf,
}

/// What the view is told as the session runs.
pub trait View {
    /// An event the decoder read from the agent's output.
    fn agent_event(&mut self, event: &ProviderEvent);
    /// The pane state after an input was folded.
    fn state(&mut self, state: &State);
    /// Ask the person to allow `tool` with `arg`; `None` when there is no one to ask.
    fn ask(&mut self, tool: &str, arg: &str) -> Option<bool>;
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
}

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

/// Runs one session to its end: every prompt sent, the (last) agent process exited.
pub async fn run_session(
    config: SessionConfig,
    view: &mut dyn View,
) -> Result<SessionOutcome, RunnerError> {
    let provider = config.channel.provider();
    let model = config.channel.model();
    let header = LogHeader {
        agent_id: provider.as_str().to_owned(),
        started_at_ms: now_ms(),
        model: model.clone(),
    };
    let mut runner = Runner {
        agent: None,
        base: AgentCommand {
            program: config.program.clone(),
            args: Vec::new(),
            cwd: Some(config.cwd.clone()),
            env: config.env.clone(),
            npm_package: Some(config.channel.npm_package().to_owned()),
            stdin_null: false,
        },
        channel: config.channel.clone(),
        decoder: Decoder::new(provider),
        mapper: Mapper::new(provider, ModelTable::built_in()).with_model(model),
        resume_id: None,
        prompt_after_exit: None,
        last_exit: None,
        stderr_tail: String::new(),
        deadlines: BTreeMap::new(),
        approvals: HashMap::new(),
        approval: config.approval,
        cwd: config.cwd.clone(),
        next_request: 0,
    };
    if let Channel::Claude(launch) = &config.channel {
        // The persistent process starts before the first prompt, the control session first.
        let mut command = runner.base.clone();
        command.args = launch.args();
        runner.agent = Some(AgentProcess::spawn(&command)?);
        let initialize = initialize_line(&runner.request_id());
        runner.write_line(&initialize).await?;
    }
    let mut log = SessionLogFile::create(&config.log, &header)?;
    let mut batch = runner.mapper.prologue(now_ms());
    for prompt in &config.prompts {
        batch.push(Msg::PromptSubmitted {
            text: prompt.clone(),
        });
    }
    runner.fold(&mut log, batch, view).await?;
    let mut tick = tokio::time::interval(Duration::from_millis(WATCHDOG_TICK_MS));
    tick.tick().await;
    loop {
        let next_deadline = runner.next_deadline();
        let Some(agent) = runner.agent.as_mut() else {
            // No process runs and none is due: every prompt was sent and answered.
            break;
        };
        let input = tokio::select! {
            output = agent.next_output() => match output {
                Some(bytes) => Input::Output(bytes),
                None => Input::OutputClosed,
            },
            _ = sleep_until(next_deadline.map_or_else(far_future, |(at, ..)| at)), if next_deadline.is_some() => {
                match next_deadline {
                    Some((_, turn, kind, deadline_ms)) => Input::Deadline { turn, kind, deadline_ms },
                    None => continue,
                }
            }
            _ = tick.tick() => Input::Tick,
            _ = tokio::signal::ctrl_c() => Input::Interrupt,
        };
        let closed = matches!(input, Input::OutputClosed);
        let msgs = runner.messages_for(input, view);
        runner.fold(&mut log, msgs, view).await?;
        if closed {
            // The last output is folded; now the exit, then the next turn's process if one
            // waits for this one to end.
            runner.reap(&mut log, view).await?;
            continue;
        }
        if runner.all_prompts_answered(&log) {
            if let Some(agent) = runner.agent.as_mut() {
                // Nothing left to send: closing stdin lets the CLI finish and exit.
                agent.close_stdin();
            }
        }
    }
    log.checkpoint()?;
    Ok(SessionOutcome {
        state: log.state().clone(),
        exit: runner.last_exit,
        stderr_tail: runner.stderr_tail,
    })
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
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
}

impl Runner {
    async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        match self.agent.as_mut() {
            Some(agent) => agent.write_line(line).await,
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
        let exit = agent.wait().await?;
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
            Channel::Claude(_) => self.write_line(&user_line(&text)).await?,
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
        self.agent = Some(AgentProcess::spawn(&command)?);
        Ok(())
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
    fn messages_for(&mut self, input: Input, view: &mut dyn View) -> Vec<Msg> {
        let now = now_ms();
        let mut msgs = Vec::new();
        match input {
            Input::Output(bytes) => {
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
            Input::Interrupt => msgs.push(Msg::RequestStop { at: now }),
        }
        msgs
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
        while let Some(msg) = queue.pop_front() {
            let cmds = log.record(now_ms(), msg)?;
            for cmd in cmds {
                if let Some(follow_up) = self.execute(cmd, view).await? {
                    queue.push_back(follow_up);
                }
            }
            view.state(log.state());
            if let Some(answer) = self.answer_front_approval(log.state(), view) {
                queue.push_back(answer);
            }
        }
        Ok(())
    }

    /// The one `match` over `Cmd`: each arm delegates.
    async fn execute(&mut self, cmd: Cmd, view: &mut dyn View) -> Result<Option<Msg>, RunnerError> {
        match cmd {
            Cmd::SendPrompt { text, .. } => self.send_prompt(text).await?,
            Cmd::InterruptAgent { .. } => match self.channel {
                Channel::Claude(_) => {
                    let id = self.request_id();
                    self.write_line(&interrupt_line(&id)).await?;
                }
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
            // One-shot channels never ask, so only Claude Code's requests are answered.
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
                self.write_line(&permission_line(&id, &answer)).await?;
            }
            Cmd::ScheduleDeadline {
                turn,
                kind,
                deadline_ms,
            } => {
                let wait = deadline_ms.saturating_sub(now_ms());
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

    /// The approval mode answers the front pending approval for the person.
    fn answer_front_approval(&mut self, state: &State, view: &mut dyn View) -> Option<Msg> {
        let front = state.pending_approvals.front()?;
        let (tool, arg, input) = self.approvals.get(&front.id)?.clone();
        let arg = arg.unwrap_or_default();
        let inside_cwd = input
            .get("file_path")
            .and_then(Value::as_str)
            .is_some_and(|path| std::path::Path::new(path).starts_with(&self.cwd));
        let approved = match self.approval {
            ApprovalMode::ReadOnly => false,
            ApprovalMode::FullAccess => true,
            ApprovalMode::Auto if FILE_EDIT_TOOLS.contains(&tool.as_str()) && inside_cwd => true,
            ApprovalMode::Auto | ApprovalMode::Ask => match view.ask(&tool, &arg) {
                Some(answer) => answer,
                None => {
                    view.notice(&format!(
                        "denied {tool} {arg}: --approval {} asks, and there is no terminal to ask on",
                        self.approval.name()
                    ));
                    false
                }
            },
        };
        if !approved {
            view.notice(&format!(
                "denied {tool} {arg} (--approval {})",
                self.approval.name()
            ));
        }
        Some(Msg::ApprovalAnswered { approved })
    }

    /// Every prompt was sent and its turn has ended: nothing is queued or working.
    fn all_prompts_answered(&self, log: &SessionLogFile) -> bool {
        let state = log.state();
        state.queued_prompts.is_empty()
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
