//! What one run of panewise's own loop is configured with ([`LoopConfig`]), and what it
//! reports of each tool call ([`ToolRun`]).

use std::path::PathBuf;

use panewise_window::StrategyConfig;

use crate::approval::ApprovalMode;
use crate::tools::ToolLimits;

/// The most model calls one turn may make unless configured otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;

/// The most output tokens one call may produce unless configured otherwise.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8_192;

/// What one run of the loop needs.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// The provider's name as configured (`mock`, `anthropic`, `openai`, `gemini`), for the
    /// log header and the window records.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The working directory: tools run in it and approvals are decided against it.
    pub cwd: PathBuf,
    /// How tool calls are approved.
    pub approval: ApprovalMode,
    /// The window strategy.
    pub strategy: StrategyConfig,
    /// The session log; the window ledger goes beside it ([`crate::agent_loop::ledger::ledger_path`]).
    pub log: PathBuf,
    /// The most model calls per turn.
    pub max_iterations: u32,
    /// The most output tokens per call.
    pub max_output_tokens: u32,
    /// The limits every tool run is held to.
    pub tool_limits: ToolLimits,
    /// The variables the tools' processes do not get (the API keys,
    /// [`crate::secrets::EnvPolicy::tool_removals`]).
    pub tool_env_remove: Vec<String>,
    /// The sandbox `shell` commands run in, and whether they are asked
    /// ([`crate::sandbox::plan_shell`]); unavailable (so `auto` asks) until probed.
    pub sandbox: crate::sandbox::ShellSandbox,
    /// Whether requests ask for the provider's prompt cache (on by default; `prompt_cache =
    /// false` under the provider's table in `panewise.toml` turns it off). See
    /// [`RequestHead::prompt_cache`](panewise_providers::RequestHead::prompt_cache) for what each API is sent.
    pub prompt_cache: bool,
    /// The session's prompt-cache key (OpenAI `prompt_cache_key`): stable over the session,
    /// [`session_cache_key`] of the log by default.
    pub cache_key: Option<String>,
    /// The tools of the session's MCP servers, as they listed them at the start
    /// (`panewise_mcp::client::McpClients::tools`); the calls go to the clients given with
    /// the host's model backend.
    pub mcp_tools: Vec<crate::mcp::catalog::McpTool>,
    /// What the session is told before its first call: each MCP server that failed to start
    /// or was not started, and why.
    pub mcp_notices: Vec<String>,
    /// `toolBudgetTokens`: the most tokens of MCP tool definitions a request carries; the
    /// rest are deferred behind `mcp_tool_search`. `None` sends them all.
    pub tool_budget_tokens: Option<u64>,
}

/// The prompt-cache key of the session logged at `log`: `panewise-` and a fixed-seed hash of
/// the log's path. The log names the session, so the key is stable over its calls and differs
/// between sessions; the path itself, which may name the person, never reaches the provider.
pub fn session_cache_key(log: &std::path::Path) -> String {
    let path = log.to_string_lossy();
    format!(
        "panewise-{:016x}",
        panewise_window::cache::block_hash(&[&path])
    )
}

impl LoopConfig {
    /// A configuration with the defaults: no system prompt beyond the working directory, the
    /// default limits.
    pub fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
        cwd: PathBuf,
        strategy: StrategyConfig,
        log: PathBuf,
    ) -> Self {
        let system = format!(
            "You are a coding agent run by panewise. Working directory: {}\nUse the tools to \
             inspect and change files and to run commands; answer without tools when done.",
            cwd.display()
        );
        let cache_key = Some(session_cache_key(&log));
        Self {
            provider: provider.into(),
            model: model.into(),
            system: Some(system),
            cwd,
            approval: ApprovalMode::Ask,
            strategy,
            log,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            tool_limits: ToolLimits::default(),
            tool_env_remove: crate::secrets::tool_env_removals(&[]),
            sandbox: crate::sandbox::ShellSandbox::unavailable("the machine was not probed"),
            prompt_cache: true,
            cache_key,
            mcp_tools: Vec::new(),
            mcp_notices: Vec::new(),
            tool_budget_tokens: None,
        }
    }
}

/// One tool call the loop ran or refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    /// The tool's name as the model called it.
    pub name: String,
    /// What the call wanted (the command, the path).
    pub summary: String,
    /// Whether it ran (false: denied, bad arguments, interrupted).
    pub ran: bool,
    /// Whether its result is an error.
    pub is_error: bool,
    /// `shell`'s exit code.
    pub exit_code: Option<i32>,
}
