//! The `panewise` binary: record, replay, window and decode agent sessions from the command line.

mod decode_cmd;
mod exit;
mod input;
mod json;
mod mock_server_cmd;
mod replay;
mod run;
mod sessions_cmd;
mod terminal_text;

mod window_cmd;
use panewise_host::summarize;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "panewise",
    version,
    about = "Host AI coding agents: run them, replay and list their sessions, decode their streams, window their conversations",
    after_help = exit::EXIT_CODES
)]
struct Cli {
    /// Trace what panewise does (sessions, turns, agent processes, effects) on stderr;
    /// `PANEWISE_LOG` (a tracing filter such as `panewise_host=trace`) takes precedence.
    #[arg(long, short, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
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
    /// Print the conversation a session log recorded, checked against its checkpoints.
    ///
    /// The log is folded and compared with the checkpoints it holds; --state prints the final
    /// state instead of the conversation.
    #[command(after_help = exit::EXIT_CODES)]
    Replay(replay::Args),
    /// List the recorded sessions (id, provider, started, turns, tokens, cost, final phase).
    #[command(after_help = exit::EXIT_CODES)]
    Sessions(sessions_cmd::Args),
    /// Decode a provider CLI stream as it arrives, fold it through the reducer, and print the
    /// result.
    #[command(after_help = exit::EXIT_CODES)]
    Decode(decode_cmd::Args),
    /// Run a context-window strategy over a conversation file and print the window and its record.
    #[command(after_help = exit::EXIT_CODES)]
    Window(window_cmd::Args),
    /// Serve scripted Anthropic, OpenAI and Gemini model APIs on 127.0.0.1, for offline tests.
    #[command(name = "mock-server", after_help = exit::EXIT_CODES)]
    MockServer(mock_server_cmd::Args),
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
    let result = match cli.command {
        Command::Replay(args) => replay::run(args),
        Command::Window(args) => window_cmd::run(args),
        Command::Decode(args) => decode_cmd::run(args),
        Command::MockServer(args) => mock_server_cmd::run(args),
        Command::Run(args) => run::run(*args),
        Command::Sessions(args) => sessions_cmd::run(args),
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
