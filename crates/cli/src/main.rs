//! The `panewise` binary: record, replay, window and decode agent sessions from the command line.
//!
//! One module per subcommand, each a front end over the libraries:
//! - `run/`: `mod.rs` supervises a CLI, `own_loop.rs` runs the own loop (`mock`, the default
//!   with no provider configured, starts the mock server in-process), `view.rs` is what both
//!   print (plain lines, the failure line, the question, the versioned `--json` lines of
//!   `docs/JSON.md`), `live.rs` the live line (a pure function of the pane state, the last
//!   activity and the clock passed in), `editor.rs` the reedline terminal.
//! - `replay.rs` folds a log line by line against its checkpoints and prints the conversation
//!   (`replay/conversation.rs`), every control character escaped by `terminal_text.rs` (the
//!   sanitiser of `crates/tui/src/text.rs`); `sessions_cmd.rs` lists logs as live, ended or
//!   crashed by their lock and closing line.
//! - The daemon's commands: `daemon_cmd.rs` (`panewise daemon`, its launcher `DaemonLauncher`,
//!   `--stdio`, `stop`), `agents_cmd.rs` (`new`, `agents`, `send`, `answer`, `interrupt`,
//!   `stop`, `rm`, `wait`, `resume`), `approve_cmd.rs` (`approve`, `deny`), `attach_cmd.rs`,
//!   `ui_cmd.rs` (the dashboard's shell: raw mode, one event channel, every effect of
//!   `panewise_tui::update` in one exhaustive match), `web_cmd.rs`, `remote.rs` and
//!   `ui_remote.rs` (`--remote HOST` over ssh), `worktree.rs` (`--worktree`).
//! - `launch.rs` starts what `panewise_host::launch::resolve` decided (`prepare`, then
//!   `Prepared::start`, telemetry attached by `otel.rs`) for `run` and the daemon alike;
//!   `resume.rs` reads a log and the chain it continues for every resume.
//! - `window_cmd.rs`, `window_eval_cmd.rs` (and its plot), `decode_cmd.rs`,
//!   `mock_server_cmd.rs`, `sandbox_cmd.rs`.
//! - `mcp_cmd.rs`: `panewise mcp`; `mcp_serve_cmd.rs` connects `mcp serve` to the daemon.
//! - Shared: `exit.rs` the exit code table, `input.rs` where input comes from (a session named
//!   by id or path), `json.rs` the `--json` schema version.
//!
//! `crates/cli/tests/cli/` runs the built binary, one module per subcommand.

mod agents_cmd;
mod approve_cmd;
mod attach_cmd;
mod budget_cmd;
mod daemon_cmd;
mod decode_cmd;
mod exit;
mod input;
mod json;
mod launch;
mod mcp_cmd;
mod mcp_serve_cmd;
mod mock_server_cmd;
mod otel;
mod remote;
mod replay;
mod resume;
mod run;
mod sandbox_cmd;
mod sessions_cmd;
mod terminal_text;
mod ui_cmd;
mod ui_remote;
mod web_cmd;
mod web_remote;
mod worktree;

mod strategy_config;
mod window_cmd;
mod window_eval_cmd;
mod window_eval_plot;
use panewise_host::summarize;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "panewise",
    version,
    about = "Host AI coding agents: run them, or many at once under a daemon; replay and list their sessions, decode their streams, window their conversations",
    after_help = exit::EXIT_CODES
)]
struct Cli {
    /// Trace what panewise does (sessions, turns, agent processes, effects) on stderr;
    /// `PANEWISE_LOG` (a tracing filter such as `panewise_host=trace`) takes precedence.
    #[arg(long, short, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

// Declared in the order `--help` lists them: the main job first, then what reads its records,
// then the tools that work on a stream or a conversation alone.
#[derive(Subcommand)]
enum Command {
    /// Run an agent (panewise's own loop, or a supervised agent CLI) and record the session.
    ///
    /// panewise's own loop calls a model API (the offline mock by default; anthropic, openai,
    /// gemini); a supervised agent CLI (claude-code, codex, gemini-cli) has its requests
    /// answered by the approval mode.
    #[command(after_help = const_format_run_help())]
    Run(Box<run::Args>),
    /// The dashboard: every agent under the daemon on one screen, the ones that need you
    /// first, answered in place (`panewise` alone on a terminal opens it too).
    #[command(after_help = exit::EXIT_CODES)]
    Ui(ui_cmd::Args),
    /// The inbox in a browser: every approval and question waiting, answered from a phone
    /// (127.0.0.1 by default, paired devices only; `web devices`, `web revoke ID`).
    #[command(after_help = exit::EXIT_CODES)]
    Web(web_cmd::Args),
    /// Start an agent under this user's daemon and print its id (on the last line).
    ///
    /// With no provider configured, the offline mock model. The daemon is started when none
    /// runs; the session outlives this command and any terminal.
    #[command(after_help = exit::EXIT_CODES)]
    New(agents_cmd::NewArgs),
    /// List the daemon's agents: state (needs_input first), what each waits for, tool,
    /// context, tokens, cost, age.
    ///
    /// TOKENS counts every token the agent's calls processed: input, whether read from the
    /// prompt cache, written to it or neither, plus output (as `panewise sessions` counts
    /// them).
    #[command(after_help = exit::EXIT_CODES)]
    Agents(agents_cmd::AgentsArgs),
    /// One agent on this terminal: its conversation, then live; approvals answered inline.
    /// Ctrl-D detaches and leaves it running.
    #[command(after_help = exit::EXIT_CODES)]
    Attach(attach_cmd::Args),
    /// Send a prompt to an agent (queued while a turn runs).
    #[command(after_help = exit::EXIT_CODES)]
    Send(agents_cmd::SendArgs),
    /// Allow the request an agent waits on (--always: for the rest of its session), and print
    /// it; with none waiting say so, with several list them and exit 1 (pick one: --request).
    #[command(after_help = exit::EXIT_CODES)]
    Approve(approve_cmd::ApproveArgs),
    /// Deny the request an agent waits on, telling it --message, and print it (several
    /// waiting: as approve, pick one with --request).
    #[command(after_help = exit::EXIT_CODES)]
    Deny(approve_cmd::DenyArgs),
    /// Answer the question an agent waits on.
    #[command(after_help = exit::EXIT_CODES)]
    Answer(agents_cmd::AnswerArgs),
    /// Stop an agent's running turn.
    #[command(after_help = exit::EXIT_CODES)]
    Interrupt(agents_cmd::IdArgs),
    /// Raise (or cut) an agent's spend caps: a session held at its budget goes on once its
    /// spend is within them.
    #[command(after_help = exit::EXIT_CODES)]
    Budget(budget_cmd::Args),
    /// End an agent's session (its log is closed; `rm` then forgets it).
    #[command(after_help = exit::EXIT_CODES)]
    Stop(agents_cmd::IdArgs),
    /// Forget an agent (its log stays), stopping it first when it is settled (a working or asking one
    /// is refused); its worktree goes when clean, its branch when merged.
    #[command(after_help = exit::EXIT_CODES)]
    Rm(agents_cmd::IdArgs),
    /// Wait until an agent needs input, is idle or is done; the exit status says which.
    #[command(after_help = const_format_wait_help())]
    Wait(agents_cmd::WaitArgs),
    /// Continue a recorded session under the daemon.
    #[command(after_help = exit::EXIT_CODES)]
    Resume(agents_cmd::ResumeArgs),
    /// This user's supervisor: hosts the agents `new` starts, on a Unix socket in the runtime
    /// directory (started on demand by every command above).
    #[command(after_help = exit::EXIT_CODES)]
    Daemon(daemon_cmd::Args),
    /// Print the conversation a session log recorded, checked against its checkpoints.
    ///
    /// The log is folded and compared with the checkpoints it holds; --state prints the final
    /// state instead of the conversation.
    #[command(after_help = exit::EXIT_CODES)]
    Replay(replay::Args),
    /// List the recorded sessions (id, provider, started, turns, tokens, cost, final phase).
    ///
    /// TOKENS counts every token the session's calls processed: input, whether read from the
    /// prompt cache, written to it or neither, plus output (as `panewise agents` counts them);
    /// the JSON's `input_tokens` is the part neither read from nor written to the cache.
    #[command(after_help = exit::EXIT_CODES)]
    Sessions(sessions_cmd::Args),
    /// Decode a provider CLI stream as it arrives, fold it through the reducer, and print the
    /// result.
    #[command(after_help = exit::EXIT_CODES)]
    Decode(decode_cmd::Args),
    /// Run a context-window strategy over a conversation file and print the window and its record.
    #[command(
        after_help = exit::EXIT_CODES,
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true
    )]
    Window(window_cmd::Args),
    /// Serve scripted Anthropic, OpenAI and Gemini model APIs on 127.0.0.1, for offline tests.
    #[command(name = "mock-server", after_help = exit::EXIT_CODES)]
    MockServer(mock_server_cmd::Args),
    /// The sandbox of the own loop's `shell` commands: `check` what this machine offers,
    /// `run -- CMD` in the box an approval mode uses.
    #[command(after_help = exit::EXIT_CODES)]
    Sandbox(sandbox_cmd::Args),
    /// MCP: `list` the own loop's configured servers, their state and their tools with their
    /// token cost; `serve` the daemon's verbs as MCP tools over stdio, so other agents can
    /// start, wait for and read agents of any provider.
    #[command(after_help = exit::EXIT_CODES)]
    Mcp(mcp_cmd::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Traces go to stderr only, so they never mix into `--json` on stdout.
    let default_filter = if cli.verbose {
        "warn,panewise_host=debug,panewise_providers=debug"
    } else {
        "warn"
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PANEWISE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .init();
    let command = match cli.command {
        Some(command) => command,
        None if std::io::IsTerminal::is_terminal(&std::io::stdin())
            && std::io::IsTerminal::is_terminal(&std::io::stdout()) =>
        {
            Command::Ui(ui_cmd::Args::default())
        }
        None => {
            let _ = <Cli as clap::CommandFactory>::command().print_help();
            return ExitCode::from(exit::USAGE);
        }
    };
    let result = match command {
        Command::Ui(args) => ui_cmd::run(args),
        Command::Web(args) => web_cmd::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Window(args) => window_cmd::run(args),
        Command::Decode(args) => decode_cmd::run(args),
        Command::MockServer(args) => mock_server_cmd::run(args),
        Command::Sandbox(args) => sandbox_cmd::run(args),
        Command::Mcp(args) => mcp_cmd::run(args),
        Command::Run(args) => run::run(*args),
        Command::Sessions(args) => sessions_cmd::run(args),
        Command::New(args) => agents_cmd::new(args),
        Command::Agents(args) => agents_cmd::agents(args),
        Command::Attach(args) => attach_cmd::run(args),
        Command::Send(args) => agents_cmd::send(args),
        Command::Approve(args) => approve_cmd::approve(args),
        Command::Deny(args) => approve_cmd::deny(args),
        Command::Answer(args) => agents_cmd::answer(args),
        Command::Interrupt(args) => agents_cmd::interrupt(args),
        Command::Budget(args) => budget_cmd::run(args),
        Command::Stop(args) => agents_cmd::stop(args),
        Command::Rm(args) => agents_cmd::rm(args),
        Command::Wait(args) => agents_cmd::wait(args),
        Command::Resume(args) => agents_cmd::resume(args),
        Command::Daemon(args) => daemon_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => match exit::code_for(&error) {
            Some(code) => {
                eprintln!("panewise: {error:#}");
                code
            }
            None => ExitCode::SUCCESS,
        },
    }
}

/// `run`'s own exit codes and approval modes, then the shared table.
fn const_format_run_help() -> String {
    format!("{}\n\n{}", run::RUN_EXIT_CODES, exit::EXIT_CODES)
}

/// `wait`'s exit codes, then the shared table.
fn const_format_wait_help() -> String {
    format!("{}\n\n{}", agents_cmd::WAIT_EXIT_CODES, exit::EXIT_CODES)
}
