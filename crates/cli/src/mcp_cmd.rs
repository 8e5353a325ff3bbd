//! `panewise mcp …`: MCP from the command line. Each subcommand is its own variant and
//! module (`serve`: `mcp_serve_cmd.rs`).

use std::process::ExitCode;

/// `panewise mcp SUBCOMMAND`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(clap::Subcommand)]
enum McpCommand {
    /// Serve the daemon's verbs as MCP tools on stdin and stdout: start an agent of any
    /// provider, list agents, read a transcript, send, wait, answer a question, stop.
    ///
    /// For an MCP client's configuration (Claude Code's `--mcp-config`, Codex's
    /// `[mcp_servers]`): `{"command": "panewise", "args": ["mcp", "serve"]}`. The agents it
    /// starts are the daemon's, shown in the dashboard; their approvals are the person's.
    Serve(crate::mcp_serve_cmd::ServeArgs),
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        McpCommand::Serve(args) => crate::mcp_serve_cmd::serve(args),
    }
}
