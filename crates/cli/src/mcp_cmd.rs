//! `panewise mcp list`: each MCP server a session here would use (`[mcp.servers.NAME]` of
//! `panewise.toml`, the project's `.mcp.json`), started as a session starts it: its state
//! (running, failed and why, not started and why) and its tools with what each definition
//! costs in tokens, counted as the window counts. The servers are stopped before it returns.
//! `panewise mcp serve` is `mcp_serve_cmd.rs`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_mcp::client::{ServerReport, ServerStatus};
use panewise_tui::text::escape_controls;
use panewise_window::TokenCounter;

/// Arguments of `panewise mcp`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(clap::Subcommand)]
enum McpCommand {
    /// Start each configured server, list its state and its tools with their token cost,
    /// then stop it. Exit 0 when every server that should start did, 1 otherwise.
    List(ListArgs),
    /// Serve the daemon's verbs as MCP tools on stdin and stdout: start an agent of any
    /// provider, list agents, read a transcript, send, wait, answer a question, stop.
    ///
    /// For an MCP client's configuration (Claude Code's `--mcp-config`, Codex's
    /// `[mcp_servers]`): `{"command": "panewise", "args": ["mcp", "serve"]}`. The agents it
    /// starts are the daemon's, shown in the dashboard; their approvals are the person's.
    Serve(crate::mcp_serve_cmd::ServeArgs),
}

#[derive(clap::Args)]
struct ListArgs {
    /// The project directory whose configuration and `.mcp.json` to read; default: the
    /// current one.
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs `panewise mcp`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        McpCommand::List(args) => list(args),
        McpCommand::Serve(args) => crate::mcp_serve_cmd::serve(args),
    }
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir().context("the current directory")?,
    };
    let cwd = cwd
        .canonicalize()
        .with_context(|| format!("{}", cwd.display()))?;
    let config = panewise_host::config::load(&cwd)?;
    let plans = panewise_host::mcp::plans(&config.mcp, &cwd)
        .map_err(|error| anyhow::anyhow!("MCP configuration: {error}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let reports = runtime.block_on(async {
        let clients = panewise_host::mcp::start(plans, &cwd).await;
        let reports = clients.reports().to_vec();
        clients.shutdown().await;
        reports
    });
    let counter = panewise_window::ApproxCounter;
    let failed = reports
        .iter()
        .any(|report| matches!(report.status, ServerStatus::Failed(_)));
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json(&reports, &counter))?
        );
    } else if reports.is_empty() {
        println!(
            "no MCP server configured ([mcp.servers.NAME] in panewise.toml, or .mcp.json in {})",
            cwd.display()
        );
    } else {
        print!(
            "{}",
            table(&reports, &counter, config.mcp.tool_budget_tokens)
        );
    }
    Ok(ExitCode::from(u8::from(failed)))
}

fn cost(tool: &panewise_mcp::catalog::McpTool, counter: &dyn TokenCounter) -> u64 {
    counter.count(&tool.definition_text())
}

fn json(reports: &[ServerReport], counter: &dyn TokenCounter) -> serde_json::Value {
    let servers: Vec<serde_json::Value> = reports
        .iter()
        .map(|report| {
            let (state, why) = match &report.status {
                ServerStatus::Running => ("running", None),
                ServerStatus::Failed(why) => ("failed", Some(why.clone())),
                ServerStatus::NotStarted(why) => ("not-started", Some(why.clone())),
            };
            let tools: Vec<serde_json::Value> = report
                .tools
                .iter()
                .map(|tool| {
                    serde_json::json!({
                        "name": tool.namespaced,
                        "readOnly": tool.read_only,
                        "tokens": cost(tool, counter),
                    })
                })
                .collect();
            serde_json::json!({
                "name": report.name,
                "source": report.source.label(),
                "transport": report.transport,
                "state": state,
                "why": why,
                "tools": tools,
                "tokens": report.tools.iter().map(|tool| cost(tool, counter)).sum::<u64>(),
            })
        })
        .collect();
    serde_json::json!({ "servers": servers })
}

/// The table: one block a server, its tools under it; what a server said is escaped.
fn table(reports: &[ServerReport], counter: &dyn TokenCounter, budget: Option<u64>) -> String {
    let mut out = String::new();
    let mut total = 0u64;
    for report in reports {
        let state = match &report.status {
            ServerStatus::Running => format!("running, {} tools", report.tools.len()),
            ServerStatus::Failed(why) => format!("FAILED: {why}"),
            ServerStatus::NotStarted(why) => format!("not started: {why}"),
        };
        out.push_str(&escape_controls(
            &format!(
                "{} ({}, {}): {state}",
                report.name,
                report.source.label(),
                report.transport
            ),
            "  ",
        ));
        out.push('\n');
        for tool in &report.tools {
            let tokens = cost(tool, counter);
            total = total.saturating_add(tokens);
            let access = if tool.read_only { "read" } else { "command" };
            out.push_str(&escape_controls(
                &format!("  {:>6} tokens  {:<7}  {}", tokens, access, tool.namespaced),
                "  ",
            ));
            out.push('\n');
        }
    }
    out.push_str(&format!("tool definitions: {total} tokens"));
    match budget {
        Some(budget) => out.push_str(&format!(
            " (tool_budget_tokens {budget}: past it, tools wait behind mcp_tool_search)\n"
        )),
        None => out.push('\n'),
    }
    out
}
