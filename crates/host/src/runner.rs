//! The effect runner of one supervised Claude Code session: one loop over a closed [`Input`]
//! enum, each input stamped with the host's clock, recorded in the session log, folded with
//! `step`, and the returned `Cmd`s executed by one `match` that delegates. The runner decides
//! nothing the reducer decides: which prompt to send, when to interrupt or kill, which turn a
//! deadline belongs to all come from the reducer's commands.
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

/// Claude Code's tools that only edit files, which `auto` allows inside the working directory.
const FILE_EDIT_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// What a session needs to start.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The `claude` executable.
    pub program: String,
    /// How Claude Code is started.
    pub launch: ClaudeLaunch,
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

/// Runs one Claude Code session to its end: every prompt sent, the agent exited.
pub async fn run_session(
    config: SessionConfig,
    view: &mut dyn View,
) -> Result<SessionOutcome, RunnerError> {
    let command = AgentCommand {
        program: config.program.clone(),
        args: config.launch.args(),
        cwd: Some(config.cwd.clone()),
        env: config.env.clone(),
        npm_package: Some("@anthropic-ai/claude-code".into()),
    };
    let agent = AgentProcess::spawn(&command)?;
    let header = LogHeader {
        agent_id: Provider::ClaudeCode.as_str().to_owned(),
        started_at_ms: now_ms(),
        model: config.launch.model.clone(),
    };
    let mut log = SessionLogFile::create(&config.log, &header)?;
    let mut runner = Runner {
        agent,
        decoder: Decoder::new(Provider::ClaudeCode),
        mapper: Mapper::new(Provider::ClaudeCode, ModelTable::built_in())
            .with_model(config.launch.model.clone()),
        deadlines: BTreeMap::new(),
        approvals: HashMap::new(),
        approval: config.approval,
        cwd: config.cwd.clone(),
        next_request: 0,
    };
    let initialize = initialize_line(&runner.request_id());
    runner.agent.write_line(&initialize).await?;
    let mut batch = runner.mapper.prologue(now_ms());
    for prompt in &config.prompts {
        batch.push(Msg::PromptSubmitted {
            text: prompt.clone(),
        });
    }
    runner.fold(&mut log, batch, view).await?;
    let mut tick = tokio::time::interval(Duration::from_millis(WATCHDOG_TICK_MS));
    tick.tick().await;
    let mut output_open = true;
    loop {
        if !output_open {
            break;
        }
        let next_deadline = runner.next_deadline();
        let input = tokio::select! {
            output = runner.agent.next_output() => match output {
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
        let msgs = runner.messages_for(input, &mut output_open, view);
        runner.fold(&mut log, msgs, view).await?;
        if runner.all_prompts_answered(&log) {
            // Nothing left to send: closing stdin lets the CLI finish and exit.
            runner.agent.close_stdin();
        }
    }
    // The last output is folded; now the exit.
    let exit = runner.agent.wait().await?;
    let stderr_tail = runner.agent.stderr_tail();
    runner
        .fold(
            &mut log,
            vec![Msg::AgentExited {
                code: exit.code,
                signal: exit.signal,
            }],
            view,
        )
        .await?;
    log.checkpoint()?;
    Ok(SessionOutcome {
        state: log.state().clone(),
        exit: Some(exit),
        stderr_tail,
    })
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}

struct Runner {
    agent: AgentProcess,
    decoder: Decoder,
    mapper: Mapper,
    /// Armed deadlines, keyed by kind and turn, with their instant and reducer deadline.
    deadlines: BTreeMap<(u8, Option<TurnId>), (Instant, DeadlineKind, u64)>,
    /// Permission requests seen, by id: the tool and its input, to answer them.
    approvals: HashMap<String, (String, Option<String>, Value)>,
    approval: ApprovalMode,
    cwd: PathBuf,
    next_request: u64,
}

impl Runner {
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
    fn messages_for(
        &mut self,
        input: Input,
        output_open: &mut bool,
        view: &mut dyn View,
    ) -> Vec<Msg> {
        let now = now_ms();
        let mut msgs = Vec::new();
        match input {
            Input::Output(bytes) => {
                let mut decoded = Vec::new();
                self.decoder.feed(&bytes, &mut decoded);
                self.map_decoded(decoded, now, &mut msgs, view);
            }
            Input::OutputClosed => {
                *output_open = false;
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
            Cmd::SendPrompt { text, .. } => self.agent.write_line(&user_line(&text)).await?,
            Cmd::InterruptAgent { .. } => {
                let id = self.request_id();
                self.agent.write_line(&interrupt_line(&id)).await?;
            }
            Cmd::KillAgent { .. } => {
                view.notice("the agent did not stop in time; killing it");
                self.agent.kill()?;
            }
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
                self.agent
                    .write_line(&permission_line(&id, &answer))
                    .await?;
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
