//! `panewise run --provider claude-code|codex|gemini-cli [--model M] [--cwd DIR]
//! [--approval MODE] [--json] [--log FILE] PROMPT…`: supervise an agent CLI live through its
//! machine channel, recording the session log as it goes. Claude Code's permission requests are
//! answered by the approval mode; Codex and Gemini CLI cannot ask, so the mode becomes their own
//! sandbox and approval flags.
//!
//! The agent's answer goes to stdout; a status line (phase, tool, context, tokens, cost) goes to
//! stderr on a terminal. With `--json`, stdout is the normalised events as NDJSON and nothing else.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_host::runner::{run_session, ApprovalMode, Channel, SessionConfig, View};
use panewise_pane_state::{FailureKind, State, TurnOutcome, TurnPhase};
use panewise_providers::claude_control::ClaudeLaunch;
use panewise_providers::oneshot::{OneShotCli, OneShotLaunch};
use panewise_providers::{Provider, ProviderEvent};

/// Exit codes of `panewise run` beyond the shared table, one per way a session can fail.
pub const RUN_EXIT_CODES: &str = "\
Exit codes of run, beyond the table below:
  10 rate limited   11 overloaded   12 server error   13 authentication
  14 context overflow   15 stream disconnected   16 agent process exited   17 other failure
  20 the turn was interrupted

Approval modes (--approval), for Claude Code's permission requests:
  read-only    deny every request (the agent is told which mode denied it)
  ask          ask y/n on the terminal; without a terminal, deny and say why
  auto         allow file edits (Write, Edit, MultiEdit, NotebookEdit) inside --cwd; ask for the rest
  full-access  allow every request
Commands Claude Code's own rules allow (such as `echo`) run without a request.

Codex (exec) and Gemini CLI (-p) cannot ask, so each mode becomes the CLI's own flags:
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
    /// The agent CLI to supervise: claude-code, codex or gemini-cli.
    #[arg(long, default_value = "claude-code")]
    provider: String,
    /// The model the agent uses (`--model` of the CLI).
    #[arg(long)]
    model: Option<String>,
    /// The agent's working directory (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// How the agent's permission requests are answered.
    #[arg(long, value_enum, default_value = "ask")]
    approval: ApprovalMode,
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
    /// The prompts, sent in order as turns of one session.
    #[arg(required = true)]
    prompts: Vec<String>,
}

/// Runs `panewise run`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let provider: Provider = args.provider.parse().map_err(|_| {
        anyhow::anyhow!(
            "--provider {}: expected claude-code, codex or gemini-cli",
            args.provider
        )
    })?;
    if matches!(provider, Provider::CodexAppServer | Provider::Acp) {
        anyhow::bail!(
            "--provider {provider}: `panewise run` does not drive this channel yet \
             (`panewise decode` reads its streams)"
        );
    }
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd =
        std::fs::canonicalize(&cwd).with_context(|| format!("cannot read {}", cwd.display()))?;
    let log = match args.log {
        Some(log) => log,
        None => default_log_path()?,
    };
    let (program, variable, default, channel) = match provider {
        Provider::Codex | Provider::GeminiCli => {
            let (cli, program, variable, default) = if provider == Provider::Codex {
                (OneShotCli::Codex, args.codex, "PANEWISE_CODEX", "codex")
            } else {
                (
                    OneShotCli::GeminiCli,
                    args.gemini,
                    "PANEWISE_GEMINI",
                    "gemini",
                )
            };
            let launch = OneShotLaunch {
                cli,
                model: args.model,
                access: args.approval.one_shot_access(),
            };
            (program, variable, default, Channel::OneShot(launch))
        }
        _ => {
            let launch = ClaudeLaunch {
                model: args.model,
                ..ClaudeLaunch::default()
            };
            (
                args.claude,
                "PANEWISE_CLAUDE",
                "claude",
                Channel::Claude(launch),
            )
        }
    };
    let program = program
        .or_else(|| std::env::var(variable).ok())
        .unwrap_or_else(|| default.to_owned());
    if args.approval == ApprovalMode::Ask && matches!(channel, Channel::OneShot(_)) {
        eprintln!(
            "panewise run: --approval ask: {} cannot ask for permission in this mode, so it runs \
             read-only (see `panewise run --help`)",
            provider.as_str()
        );
    }
    let config = SessionConfig {
        program,
        channel,
        cwd,
        env: Vec::new(),
        prompts: args.prompts,
        approval: args.approval,
        log: log.clone(),
    };
    let mut view = TerminalView {
        json: args.json,
        status: !args.json && std::io::stderr().is_terminal(),
        can_ask: std::io::stdin().is_terminal(),
        mid_line: false,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let outcome = runtime.block_on(run_session(config, &mut view))?;
    view.end_line();
    view.clear_status();
    eprintln!("panewise run: session log: {}", log.display());
    if !outcome.stderr_tail.trim().is_empty() && outcome.state.failure.is_some() {
        eprintln!(
            "panewise run: the agent's stderr ended with:\n{}",
            outcome.stderr_tail.trim_end()
        );
    }
    Ok(exit_code(&outcome.state))
}

/// `<sessions dir>/<started ms>.jsonl`: the session's id is its start time.
fn default_log_path() -> anyhow::Result<PathBuf> {
    let dir = panewise_host::session_log::sessions_dir()
        .context("neither XDG_DATA_HOME nor HOME is set; pass --log FILE")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir.join(format!("{}.jsonl", panewise_host::clock::now_ms())))
}

/// 0 when the last turn completed; else the code of how it failed or ended.
fn exit_code(state: &State) -> ExitCode {
    if let Some(failure) = &state.failure {
        return ExitCode::from(match failure.failure.kind {
            FailureKind::RateLimited => 10,
            FailureKind::Overloaded => 11,
            FailureKind::ServerError => 12,
            FailureKind::Auth => 13,
            FailureKind::ContextOverflow => 14,
            FailureKind::StreamDisconnected => 15,
            FailureKind::ProcessExited => 16,
            _ => 17,
        });
    }
    match state.turn_phase {
        TurnPhase::Done {
            outcome: TurnOutcome::Completed,
            ..
        } => ExitCode::SUCCESS,
        TurnPhase::Done { .. } => ExitCode::from(20),
        _ => ExitCode::from(17),
    }
}

struct TerminalView {
    json: bool,
    status: bool,
    can_ask: bool,
    /// The answer's last line is not finished: the status line waits, so that it never draws
    /// over the text.
    mid_line: bool,
}

impl TerminalView {
    /// Ends the answer's unfinished line.
    fn end_line(&mut self) {
        if std::mem::take(&mut self.mid_line) {
            let mut out = std::io::stdout().lock();
            let _ignored = writeln!(out);
        }
    }

    fn clear_status(&self) {
        if self.status {
            eprint!("\r\x1b[2K");
        }
    }
}

impl View for TerminalView {
    fn agent_event(&mut self, event: &ProviderEvent) {
        let mut out = std::io::stdout().lock();
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let _ignored = writeln!(out, "{line}");
            }
        } else if let ProviderEvent::TextDelta { text } = event {
            if !self.mid_line {
                self.clear_status();
            }
            let _ignored = write!(out, "{text}");
            let _ignored = out.flush();
            self.mid_line = !text.ends_with('\n');
        }
    }

    fn state(&mut self, state: &State) {
        if matches!(state.turn_phase, TurnPhase::Done { .. }) || !state.pending_approvals.is_empty()
        {
            // A turn's answer ends with its turn, and a question needs a line of its own.
            self.end_line();
        }
        if !self.status || self.mid_line {
            return;
        }
        let phase = if !state.pending_approvals.is_empty() {
            "waiting for your approval".to_owned()
        } else {
            state.turn_phase.kind_name().to_owned()
        };
        let tool = state
            .current_tool
            .as_ref()
            .map(|tool| {
                format!(
                    " · {tool} {}",
                    state.current_tool_arg.as_deref().unwrap_or("")
                )
            })
            .unwrap_or_default();
        let context = state
            .plausible_reading()
            .and_then(|reading| {
                reading.window.filter(|window| *window > 0).map(|window| {
                    format!(
                        " · context {:.0}%",
                        reading.tokens as f64 * 100.0 / window as f64
                    )
                })
            })
            .unwrap_or_default();
        let cost = state
            .session_totals
            .as_ref()
            .and_then(|totals| totals.cost_usd)
            .map(|cost| format!(" · ${cost:.4}"))
            .unwrap_or_default();
        eprint!("\r\x1b[2K⠿ {phase}{tool}{context}{cost}");
    }

    fn ask(&mut self, tool: &str, arg: &str) -> Option<bool> {
        if !self.can_ask {
            return None;
        }
        self.end_line();
        self.clear_status();
        eprint!("allow {tool} {arg}? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer).ok()?;
        Some(matches!(answer.trim(), "y" | "Y" | "yes"))
    }

    fn notice(&mut self, text: &str) {
        self.end_line();
        self.clear_status();
        eprintln!("panewise run: {text}");
    }
}
