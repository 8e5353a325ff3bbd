//! The own loop's MCP servers, started the host's way: a stdio server goes through
//! [`crate::process::spawn`] like every other child (its own process group, killed with the
//! session, by the kernel's parent-death signal and by the guard when panewise is killed), and
//! the project's `.mcp.json` is read with a size cap. What to start is
//! [`panewise_mcp::config::merge`]'s decision; what failed is said to the session
//! ([`notices`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use panewise_mcp::client::{McpClients, ServerReport, ServerStatus, Spawner};
use panewise_mcp::config::{self, McpSettings, Plan, MCP_JSON};
use tokio::process::{Child, Command};

/// The most bytes of `.mcp.json` read.
const MCP_JSON_CAP: u64 = 1024 * 1024;

/// Starts a stdio server as the host starts every child.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostSpawner;

impl Spawner for HostSpawner {
    fn spawn(&self, command: &mut Command) -> std::io::Result<(Child, Box<dyn Send + Sync>)> {
        let (child, group) = crate::process::spawn(command)?;
        Ok((child, Box::new(group)))
    }
}

/// The project's `.mcp.json`: in `cwd` or the nearest ancestor, up to the repository root
/// (the directory holding `.git`), as [`crate::config::project_file`] looks.
pub fn mcp_json_file(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let candidate = dir.join(MCP_JSON);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// The servers of a session in `cwd`: the configured ones and the project's `.mcp.json`'s,
/// with what to do about each. A `.mcp.json` that cannot be read or parsed is an error naming
/// the file and the key.
pub fn plans(settings: &McpSettings, cwd: &Path) -> Result<Vec<Plan>, String> {
    let lookup = |name: &str| std::env::var(name).ok();
    let from_json = match mcp_json_file(cwd) {
        Some(path) => {
            let bytes = crate::regular_file::read_capped(&path, MCP_JSON_CAP)
                .map_err(|error| format!("{}: {error}", path.display()))?;
            let text = String::from_utf8_lossy(&bytes);
            config::parse_mcp_json(&text, &lookup).map_err(|problem| {
                format!("{}: {}: {}", path.display(), problem.key, problem.reason)
            })?
        }
        None => Vec::new(),
    };
    Ok(config::merge(
        settings,
        &from_json,
        settings.project_servers.unwrap_or(false),
    ))
}

/// Starts the servers `plans` says to start, in `cwd`.
pub async fn start(plans: Vec<Plan>, cwd: &Path) -> McpClients {
    let lookup = |name: &str| std::env::var(name).ok();
    McpClients::start(
        plans,
        cwd,
        &lookup,
        &HostSpawner,
        panewise_mcp::client::STARTUP_TIMEOUT,
    )
    .await
}

/// One line for each server that is not running, for the pane, the log and the dashboard.
pub fn notices(reports: &[ServerReport]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|report| match &report.status {
            ServerStatus::Running => None,
            ServerStatus::Failed(why) => Some(format!(
                "MCP server {} failed to start, its tools are not offered: {why}",
                report.name
            )),
            ServerStatus::NotStarted(why) => {
                Some(format!("MCP server {} not started: {why}", report.name))
            }
        })
        .collect()
}

/// How long `panewise mcp list` waits for each server.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);
