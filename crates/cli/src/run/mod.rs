//! `panewise run [--provider P] [--model M] [--window CONFIG] [--mock-scenario NAME] [--cwd DIR]
//! [--approval MODE] [--json] [--log FILE] [--resume SESSION] [--capture FILE] [PROMPT…]`. The providers `mock`
//! (the default with none configured), `anthropic`, `openai` and `gemini` run panewise's own
//! agent loop (`own_loop.rs`); `claude-code`, `codex`, `gemini-cli` and `acp` (`--agent-cmd`)
//! are supervised here:
//! an agent CLI live through its machine channel, recording the session log as it goes. Without a PROMPT, the prompts are the lines of stdin (an interactive session on a
//! terminal). Claude Code's permission requests are
//! answered by the approval mode; Codex and Gemini CLI cannot ask, so the mode becomes their own
//! sandbox and approval flags.
//!
//! The agent's answer goes to stdout; a status line (phase, tool, context, tokens, cost) goes to
//! stderr on a terminal. With `--json`, stdout is the normalised events as NDJSON and nothing else.

pub(crate) mod editor;
pub(crate) mod live;
pub(crate) mod own_loop;
pub(crate) mod view;

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::BackendOutcome;
use panewise_host::session::lines::{self, Signal, UserInput, UserLines};
use panewise_host::session::{Session, SessionOutcome};
use panewise_pane_state::{FailureKind, State, TurnOutcome, TurnPhase};

use view::TerminalView;

/// Exit codes of `panewise run` beyond the shared table, one per way a session can fail.
pub const RUN_EXIT_CODES: &str = "\
Exit codes of run, beyond the table below:
  10 rate limited   11 overloaded   12 server error   13 authentication
  14 context overflow   15 stream disconnected   16 agent process exited   17 other failure
  20 the turn was interrupted
  129 / 143  the session was ended by SIGHUP / SIGTERM (128 + the signal)

Ctrl-C interrupts the running turn; a second Ctrl-C kills the agent. SIGTERM and SIGHUP end the
session as a second Ctrl-C does: the turn is stopped, the agent and every tool's processes are
killed, and the log is closed. Without a PROMPT, each
line of stdin is a prompt (on a terminal, an interactive session; a prompt typed while a turn
runs waits and is sent when it ends); Ctrl-D, or Ctrl-C between turns, ends the session.
--resume SESSION continues a recorded session (its id from `panewise sessions`, or its log's
path) in a new log: a supervised agent's by the CLI's own resume id, the provider, model and
--cwd defaulting to the recorded ones; a session of panewise's own loop from its transcript, the
conversation so far sent with the next prompt, with the recorded provider, model, --cwd,
--approval, --window and --max-iterations unless given.
--json writes one JSON object per line, each with \"v\": 1 (schema in docs/JSON.md).

panewise's own loop (--provider mock|anthropic|openai|gemini; mock, offline and in-process, is
the default when neither --provider nor panewise.toml names one) runs its own tools under the
same modes: read_file, list_dir and recall always run; write_file and edit_file run under auto
inside --cwd; shell runs under full-access; ask asks y/n on a terminal and denies without one;
read-only denies all but reading. A denial goes back to the model as the call's result. The
mock defaults to full-access in a fresh temporary directory, its scenario --mock-scenario NAME
(default tool-then-answer); the window strategy comes from --window CONFIG or panewise.toml's
[window] (default token-budget, 150000 tokens), and each visit is filed in the ledger beside the
session log (<log>.window.jsonl). What the window removes, masks or folds is kept whole in the
archive beside it (<log>.archive.jsonl), named by id in the notice left in its place, and the
model is offered a recall tool that gives it back.

Approval modes (--approval), for Claude Code's permission requests:
  read-only    deny every request (the agent is told which mode denied it)
  ask          ask y/n on the terminal; without a terminal, deny and say why
  auto         allow file edits (Write, Edit, MultiEdit, NotebookEdit) inside --cwd; ask for the rest
  full-access  allow every request
Commands Claude Code's own rules allow (such as `echo`) run without a request.

Codex (app-server, the default) and Gemini CLI (ACP, the default) ask like Claude Code and are
answered by the same modes; each mode also sets what they ask about (docs/CHANNELS.md):
  mode         codex app-server (approvalPolicy, sandbox)    gemini-cli --acp
  read-only    untrusted, read-only                          every shell command asks (policy file)
  ask          untrusted, workspace-write                    every shell command asks (policy file)
  auto         on-request, workspace-write                   --approval-mode auto_edit, policy file
  full-access  never, danger-full-access                     --yolo
--channel exec (Codex) and --channel stream-json (Gemini CLI) keep the one-way streams, which
cannot ask, so each mode becomes the CLI's own flags:
  mode         codex                                         gemini-cli
  read-only    --sandbox read-only                           --approval-mode default (tools that
                                                             need a confirmation are refused)
  ask          as read-only (a notice says it cannot ask)    as read-only, with the same notice
  auto         --sandbox workspace-write (edits in --cwd)    --approval-mode auto_edit
  full-access  --dangerously-bypass-approvals-and-sandbox    --yolo
Each prompt is one process of the CLI; a follow-up resumes the session (codex exec resume
<thread_id>, gemini --resume <session_id>) by the id the first run reported.";

/// Arguments of `panewise run`.
#[derive(clap::Args)]
pub struct Args {
    /// The provider: a model API panewise's own loop calls (mock, anthropic, openai, gemini),
    /// or an agent it supervises (claude-code, codex, gemini-cli, or acp: any ACP agent,
    /// `--agent-cmd`, by default `gemini --acp`). Default: panewise.toml's
    /// `provider`, the resumed session's, else `mock` (offline, in-process).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(
        panewise_host::config::ProviderName::ALL.map(panewise_host::config::ProviderName::as_str)
    ))]
    provider: Option<String>,
    /// The model the agent uses (`--model` of the CLI).
    #[arg(long)]
    model: Option<String>,
    /// The agent's working directory (default: the current one; with the default mock
    /// provider, a fresh temporary one, removed at the end when nothing was left in it, also
    /// when the run is refused).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// How the agent's permission requests are answered (default: panewise.toml's
    /// `approval`, else `ask`; `full-access` for the mock, in a fresh temporary directory).
    #[arg(long, value_parser = crate::run::approval_arg())]
    approval: Option<ApprovalMode>,
    /// The window strategy of panewise's own loop: a JSON or TOML file as `panewise window
    /// --config` reads it (default: panewise.toml's `[window]`, else token-budget).
    #[arg(long, value_name = "CONFIG")]
    window: Option<PathBuf>,
    /// The scenario of the in-process mock, for `--provider mock` (`panewise mock-server
    /// --scenario`'s names: `multi-round`, `recall`…; default: `tool-then-answer`, or the
    /// resumed session's).
    #[arg(long, value_name = "NAME")]
    mock_scenario: Option<String>,
    /// The most model calls one turn of panewise's own loop may make.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_iterations: Option<u32>,
    /// Print the normalised events as NDJSON on stdout instead of the answer.
    #[arg(long)]
    json: bool,
    /// Where to write the session log (default: under $XDG_DATA_HOME/panewise/sessions).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// The `claude` executable (default: `claude` on PATH, or $PANEWISE_CLAUDE).
    #[arg(long, value_name = "PATH")]
    claude: Option<String>,
    /// The `codex` executable (default: `codex` on PATH, or $PANEWISE_CODEX).
    #[arg(long, value_name = "PATH")]
    codex: Option<String>,
    /// The `gemini` executable (default: `gemini` on PATH, or $PANEWISE_GEMINI).
    #[arg(long, value_name = "PATH")]
    gemini: Option<String>,
    /// How Codex and Gemini CLI are driven: `app-server` (Codex, the default) or `exec`;
    /// `acp` (Gemini CLI, the default) or `stream-json`.
    #[arg(long, value_name = "CHANNEL", value_parser = channel_name)]
    channel: Option<panewise_host::launch::ChannelName>,
    /// The command of an ACP agent for `--provider acp` (default: `gemini --acp`).
    #[arg(long, value_name = "COMMAND")]
    agent_cmd: Option<String>,
    /// Continue a recorded session (an id from `panewise sessions`, or a log's path).
    #[arg(long, value_name = "SESSION")]
    resume: Option<PathBuf>,
    /// Save the agent's raw stdout to FILE (and what panewise wrote to its stdin to
    /// FILE.input.ndjson), as a decoder fixture.
    #[arg(long, value_name = "FILE")]
    capture: Option<PathBuf>,
    #[command(flatten)]
    deadlines: DeadlineArgs,
    #[command(flatten)]
    budget: BudgetArgs,
    /// The prompts, sent in order as turns of one session; without any, the lines of stdin.
    prompts: Vec<String>,
}

/// Runs `panewise run`: the flags, and the recorded session `--resume` names, resolved by
/// the launch layer in this process's context, then started and driven on this terminal.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use panewise_host::launch;
    if let Some(cwd) = &args.cwd {
        refuse_non_directory(cwd)?;
    }
    let mut resume_notice = None;
    let resume = match &args.resume {
        Some(given) => {
            let (recorded, notice) = crate::resume::recorded(given)
                .with_context(|| format!("--resume {}", given.display()))?;
            resume_notice = notice;
            Some(recorded)
        }
        None => None,
    };
    let request = flags_request(&args, resume)?;
    let client = launch::client_context(request.cwd.as_deref())
        .context("cannot read the current directory")?;
    let context = crate::launch::context(&request, Some(&client))?;
    let plan = launch::resolve(request, &context).map_err(|error| match error {
        panewise_host::error::LaunchError::Channel { .. } => crate::exit::usage(error.to_string()),
        other => anyhow::Error::new(other),
    })?;
    if let Some(notice) = &plan.cannot_ask {
        eprintln!("panewise run: {notice}");
    }
    if let Some(notice) = resume_notice {
        eprintln!(
            "panewise run: {}",
            crate::terminal_text::escape_controls(&notice, "")
        );
    }
    let own_loop_report = match &plan.agent {
        launch::AgentSpec::OwnApi { settings, .. } => {
            Some((settings.window.strategy_name(), false))
        }
        launch::AgentSpec::Mock { settings, .. } => Some((settings.window.strategy_name(), true)),
        launch::AgentSpec::Supervised { .. } => None,
    };
    let scenario = crate::launch::in_process_scenario(&plan)?;
    let prepared = crate::launch::prepare(plan, args.log.clone(), None)?;
    let info = prepared.info.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let interactive = args.prompts.is_empty();
    let mut front = Front::new(
        &runtime,
        args.json,
        interactive,
        view::SessionInfo {
            provider: info.provider.clone(),
            model: info.model.clone(),
            cwd: info.cwd.clone(),
        },
    );
    let terminal = front.terminal;
    let telemetry = crate::otel::start(&info.cwd);
    let mut export = None;
    let outcome = runtime.block_on(async {
        let server = match scenario {
            Some(scenario) => Some(
                panewise_mock_server::MockServer::start(panewise_mock_server::MockConfig {
                    scenario,
                    ..panewise_mock_server::MockConfig::default()
                })
                .await
                .context("cannot start the in-process mock server")?,
            ),
            None => None,
        };
        let outcome = async {
            let started = prepared
                .start(crate::launch::StartOptions {
                    prompts: args.prompts.clone(),
                    can_ask: terminal,
                    stay_open: interactive,
                    mock_url: server
                        .as_ref()
                        .map(panewise_mock_server::RunningServer::base_url),
                    capture: args.capture.clone(),
                    telemetry: telemetry.as_ref(),
                })
                .await?;
            export.clone_from(&started.export);
            anyhow::Ok(front.drive(started.session, started.handle).await?)
        }
        .await;
        if let Some(server) = server {
            server.shutdown().await;
        }
        outcome
    });
    // The stdin thread may still wait for a line; it must not hold the process open.
    runtime.shutdown_background();
    crate::otel::finish(telemetry.as_ref(), export);
    let log = &info.log;
    let code = front.finish(outcome.as_ref().ok().map(|outcome| &outcome.state), log);
    let outcome = outcome?;
    match (&outcome.backend, own_loop_report) {
        (BackendOutcome::Model(model), Some((strategy, mock))) => {
            // The mock's own directory goes when its tools left nothing in it (`remove_dir`
            // removes only an empty one); what they wrote stays, and the report says where.
            let own_dir = info.own_dir.then(|| std::fs::remove_dir(&info.cwd).is_ok());
            own_loop::report(model, strategy, &info.cwd, own_dir, log, mock);
        }
        (BackendOutcome::Model(_), None) => {
            anyhow::bail!("a supervised agent's session ended with the own loop's outcome")
        }
        (BackendOutcome::Cli(cli), _) => {
            eprintln!("panewise run: session log: {}", log.display());
            if !cli.stderr_tail.trim().is_empty() && outcome.state.failure.is_some() {
                eprintln!(
                    "panewise run: the agent's stderr ended with:\n{}",
                    cli.stderr_tail.trim_end()
                );
            }
        }
    }
    Ok(ExitCode::from(code))
}

/// The launch request `run`'s flags make.
fn flags_request(
    args: &Args,
    resume: Option<panewise_host::launch::Recorded>,
) -> anyhow::Result<panewise_host::launch::LaunchRequest> {
    let window = match &args.window {
        Some(path) => Some(
            crate::strategy_config::read_config(path)
                .with_context(|| format!("--window {}", path.display()))?,
        ),
        None => None,
    };
    Ok(panewise_host::launch::LaunchRequest {
        provider: args.provider.clone(),
        model: args.model.clone(),
        cwd: args.cwd.clone(),
        approval: args.approval,
        window,
        max_iterations: args.max_iterations,
        mock_scenario: args.mock_scenario.clone(),
        channel: args.channel,
        agent_cmd: args.agent_cmd.clone(),
        programs: panewise_host::launch::Programs {
            claude: args.claude.clone(),
            codex: args.codex.clone(),
            gemini: args.gemini.clone(),
        },
        submit_secs: args.deadlines.submit_timeout,
        stuck_secs: args.deadlines.stuck_after,
        max_cost_usd: args.budget.max_cost_usd,
        max_tokens: args.budget.max_tokens,
        name: None,
        resume,
    })
}

/// The spend caps of `run` and `new` (R112): reached, the session is held until the cap is
/// raised (`panewise budget`) or it is stopped.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BudgetArgs {
    /// The most the session may cost, in US dollars, reported or estimated (default:
    /// panewise.toml's `[limits] max_cost_usd`, else none).
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// The most tokens the session may process: the cap of a session whose cost is unknown
    /// (default: `[limits] max_tokens`, else none).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
}

/// A dollar figure above 0.
pub fn parse_usd(text: &str) -> Result<f64, String> {
    text.trim()
        .trim_start_matches('$')
        .parse::<f64>()
        .ok()
        .filter(|dollars| dollars.is_finite() && *dollars > 0.0)
        .ok_or_else(|| format!("`{text}` is not a number of US dollars above 0"))
}

/// The deadline flags of `run`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DeadlineArgs {
    /// How long a prompt may wait for the agent's first sign of work before the turn fails
    /// (default: panewise.toml's `[deadlines] submit_secs`, else 30).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    submit_timeout: Option<u64>,
    /// How long a working agent may stay silent before it is reported stuck (default:
    /// `[deadlines] stuck_secs`, else 45).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    stuck_after: Option<u64>,
}

/// The terminal side of one session: the view, the person's lines and the signals.
pub(crate) struct Front {
    view: TerminalView,
    user: Option<UserInput>,
    signals: Option<lines::Signals>,
    /// Someone can be asked: stdin is a terminal.
    pub(crate) terminal: bool,
}

impl Front {
    /// The front of a session on this process's terminal. With stdin, stdout and stderr all
    /// terminals (and no `--json`), the line editor owns the terminal; otherwise lines are
    /// read plainly from stdin, and the live line goes to stderr when it is a terminal.
    pub(crate) fn new(
        runtime: &tokio::runtime::Runtime,
        json: bool,
        interactive: bool,
        info: view::SessionInfo,
    ) -> Front {
        let terminal = std::io::stdin().is_terminal();
        let editor_mode =
            !json && terminal && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        if interactive && terminal && !json {
            eprintln!(
                "panewise run: {} in {}; type a prompt and press Enter (Ctrl-D ends the \
                 session; Ctrl-C stops a turn)",
                info.provider,
                info.cwd.display()
            );
        }
        let cwd = info.cwd.clone();
        // The signal handlers are installed on the runtime, before the session starts.
        let (interrupts, signals) = runtime.block_on(async { terminal_signals() });
        let (view, lines) = if editor_mode {
            let (editor, lines) = editor::EditorHandle::start(&cwd, interrupts);
            (TerminalView::with_editor(editor, interactive), Some(lines))
        } else {
            let view = TerminalView::new(
                json,
                !json && std::io::stderr().is_terminal(),
                interactive && terminal,
            );
            (view, (interactive || terminal).then(stdin_lines))
        };
        // The person's lines: prompts when none were given, answers to approval questions on
        // a terminal. Without either, nobody is asked, and `ask` denies.
        let user = UserInput {
            lines,
            prompts: interactive,
            ask: terminal,
        };
        Front {
            view: view.describe(info),
            user: Some(user),
            signals: Some(signals),
            terminal,
        }
    }

    /// Runs `session` on this terminal to its end.
    pub(crate) async fn drive(
        &mut self,
        session: Session,
        handle: panewise_host::session::SessionHandle,
    ) -> Result<SessionOutcome, panewise_host::error::SessionError> {
        let user = self.user.take().unwrap_or_default();
        lines::drive(session, handle, user, self.signals.take(), &mut self.view).await
    }

    /// Gives the terminal back and says how the session ended: the exit code (with a
    /// sentence when it is not 0) and, under `--json`, the `session_ended` line.
    pub(crate) fn finish(&mut self, state: Option<&State>, log: &Path) -> u8 {
        self.view.finish();
        // signals: a session SIGTERM or SIGHUP ended exits 128 + the signal (143, 129).
        let signal = panewise_host::signals::received();
        let mut code = match (signal, state) {
            (Some(signal), _) => signal.exit_code(),
            (None, Some(state)) => exit_code(state),
            (None, None) => 1,
        };
        // A reader that closed stdout (`| head -1`) took what it wanted: quiet, as every
        // subcommand is.
        if let Some(error) = self
            .view
            .lost_output()
            .filter(|error| error.kind() != std::io::ErrorKind::BrokenPipe)
        {
            eprintln!("panewise run: the answer could not be written to standard output: {error}");
            code = crate::exit::OUTPUT_LOST;
        }
        if let Some(state) = state {
            self.view.session_ended(state, code, log);
            if let Some(sentence) = exit_sentence(
                code,
                state,
                signal.map(|signal| signal.name()),
                self.view.retries(),
            ) {
                eprintln!("panewise run: exit {code}: {sentence}");
            }
        }
        code
    }
}

/// Why `run` exits with `code`, in a sentence; `None` for 0.
fn exit_sentence(code: u8, state: &State, signal: Option<&str>, retries: u64) -> Option<String> {
    if code == 0 {
        return None;
    }
    if let Some(signal) = signal {
        return Some(format!("the session was ended by {signal}"));
    }
    if code == crate::exit::OUTPUT_LOST {
        return Some("the answer was lost: stdout could not be written".to_owned());
    }
    if let Some(failure) = &state.failure {
        return Some(view::failure_line(&failure.failure, retries).replacen(
            "panewise run: failed: ",
            "the last turn failed: ",
            1,
        ));
    }
    Some(match state.turn_phase {
        TurnPhase::Done {
            outcome: TurnOutcome::Stopped | TurnOutcome::Interrupted,
            ..
        } => "the last turn was stopped before it finished".to_owned(),
        TurnPhase::Done {
            outcome: TurnOutcome::Errored,
            ..
        } => "the last turn failed".to_owned(),
        _ => format!(
            "the session ended while the turn was {}",
            state.turn_phase.kind_name()
        ),
    })
}

/// The lines of stdin, read on a thread of their own (a blocking read must not stall the loop).
pub(crate) fn stdin_lines() -> UserLines {
    let (sender, lines) = lines::line_queue();
    std::thread::spawn(move || read_lines(std::io::stdin().lock(), &sender));
    lines
}

/// Sends the lines of `input` to `lines` until it ends or nobody takes them. At the queue's
/// bound ([`lines::LINE_BOUND`]) it waits, reading no further: the rest stays in the pipe or
/// the terminal, and no line is lost. Runs on a thread of its own (`blocking_send`).
fn read_lines(mut input: impl BufRead, lines: &tokio::sync::mpsc::Sender<String>) {
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match input.read_until(b'\n', &mut bytes) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // A line that is not UTF-8 (a paste in another encoding) is taken with U+FFFD for
        // its bad bytes: ending the session on it would drop every prompt after it.
        if lines
            .blocking_send(String::from_utf8_lossy(line).into_owned())
            .is_err()
        {
            break;
        }
    }
}

/// Ctrl-C, SIGTERM and SIGHUP as the line front end's signals (the sender is the line
/// editor's, for the Ctrl-C it reads as a key). The handlers are installed here, before the
/// session starts, so no signal is missed; they are read on a task of their own, which a
/// Ctrl-C never makes wait and a termination does until the queue has room
/// ([`lines::SIGNAL_BOUND`]).
fn terminal_signals() -> (tokio::sync::mpsc::Sender<Signal>, lines::Signals) {
    let (sender, signals) = lines::signal_queue();
    let editor_sender = sender.clone();
    let mut terminations = panewise_host::signals::Terminations::listen();
    // One SIGINT listener for the whole session; none installed: Ctrl-C keeps its default.
    let mut interrupts =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                Some(()) = async {
                    match interrupts.as_mut() {
                        Some(listener) => listener.recv().await,
                        None => std::future::pending().await,
                    }
                } => Signal::Interrupt,
                signal = terminations.recv() => Signal::Terminate(signal.name()),
            };
            if lines::raise(&sender, next).await == lines::Raised::Gone {
                return;
            }
        }
    });
    (editor_sender, signals)
}

/// `--cwd` must name a directory: a file would be found out only when the agent or a tool
/// starts in it, after the session had begun. (One that does not exist is reported, as an
/// input that cannot be read, where it is opened.)
pub(crate) fn refuse_non_directory(cwd: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(cwd) {
        Ok(metadata) if !metadata.is_dir() => Err(crate::exit::usage(format!(
            "--cwd {}: not a directory (the agent's working directory must be one)",
            cwd.display()
        ))),
        _ => Ok(()),
    }
}

/// 0 when the last turn completed; else the code of how it failed or ended.
fn exit_code(state: &State) -> u8 {
    if let Some(failure) = &state.failure {
        return match failure.failure.kind {
            FailureKind::RateLimited => 10,
            FailureKind::Overloaded => 11,
            FailureKind::ServerError => 12,
            FailureKind::Auth => 13,
            FailureKind::ContextOverflow => 14,
            FailureKind::StreamDisconnected => 15,
            FailureKind::ProcessExited => 16,
            _ => 17,
        };
    }
    match state.turn_phase {
        TurnPhase::Done {
            outcome: TurnOutcome::Completed,
            ..
        } => 0,
        TurnPhase::Done { .. } => 20,
        // An interactive session that ended before any prompt.
        TurnPhase::Idle => 0,
        _ => 17,
    }
}

/// `--approval`: one of the modes' names (listed in `--help` and in clap's errors).
pub(crate) fn approval_arg() -> impl clap::builder::TypedValueParser<Value = ApprovalMode> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(ApprovalMode::ALL.map(ApprovalMode::name))
        .try_map(|name| ApprovalMode::from_name(&name).ok_or("not an approval mode"))
}

/// `--channel NAME`: one of [`panewise_host::launch::ChannelName`]'s names.
fn channel_name(name: &str) -> Result<panewise_host::launch::ChannelName, String> {
    use panewise_host::launch::ChannelName;
    ChannelName::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = ChannelName::ALL.map(ChannelName::as_str).to_vec();
        format!("expected one of {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reader_waits_at_the_bound_and_loses_no_line() {
        let bound = lines::LINE_BOUND;
        for count in [0, 1, bound, bound + 1, 3 * bound] {
            let input: String = (0..count).map(|n| format!("line {n}\n")).collect();
            let (sender, mut queue) = lines::line_queue();
            let reader =
                std::thread::spawn(move || read_lines(std::io::Cursor::new(input), &sender));
            let queued = count.min(bound);
            while queue.len() < queued {
                std::thread::yield_now();
            }
            assert_eq!(
                queue.len(),
                queued,
                "{count} lines: never more than the bound"
            );
            if count > bound {
                assert!(
                    !reader.is_finished(),
                    "{count} lines: the reader waits for room, it does not drop and go on"
                );
            }
            let mut taken = Vec::new();
            while let Some(line) = queue.blocking_recv() {
                taken.push(line);
            }
            let sent: Vec<String> = (0..count).map(|n| format!("line {n}")).collect();
            assert_eq!(taken, sent, "{count} lines: every one, in order");
            reader.join().unwrap();
        }
    }

    #[test]
    fn the_line_reader_stops_once_nobody_takes_its_lines() {
        let input: String = (0..3 * lines::LINE_BOUND)
            .map(|n| format!("line {n}\n"))
            .collect();
        let (sender, queue) = lines::line_queue();
        drop(queue);
        let mut input = std::io::Cursor::new(input);
        read_lines(&mut input, &sender);
        assert_eq!(
            input.position(),
            "line 0\n".len() as u64,
            "it stops at the first line nobody took, reading no further"
        );
    }
}
