//! panewise's own tools, which its agent loop runs for the model: `shell`, `read_file`,
//! `write_file`, `edit_file`, `list_dir`, `ask_user`, which the loop answers itself with the
//! person's answer ([`ask_user`]), and `recall`, which the loop offers once its context window
//! archived something and answers itself from that archive ([`recall`]).
//!
//! The set is closed: [`ToolName`] names every tool, and [`ToolCall`] is one parsed call, one
//! variant per tool, so the dispatcher ([`run`]) is one `match` and adding a tool is a compile
//! error everywhere it must be handled. Each tool module holds its arguments (serde, unknown
//! fields rejected), its description and the JSON schema a model is given, and its `run`
//! (`recall`'s is [`recall::answer`], a pure function of the archive the loop passes it).
//!
//! A tool never panics on the model's input: bad arguments, a missing file, a failed command
//! all come back as a [`ToolOutcome`] with `is_error` set and a message saying why. Paths are
//! resolved against the working directory ([`paths::resolve`]) and the resolved path is named
//! in the result. Long results are cut to [`ToolLimits::output_bytes`] with a note
//! ([`output`]). Whether a call may run at all is the approval policy's business
//! (`panewise_core::approval`), not the tools'; but the write tools hold every write to the one
//! "inside the working directory" check again at the moment they write
//! ([`paths::check_write`], [`paths::open_for_write`]), so a symlink or a hard link put in
//! place after the call was decided is refused, not followed. `read_file` reads regular files
//! only, and at most [`ToolLimits::read_bytes`] of them. No file tool reaches `/proc`, `/sys`
//! or `/dev` outside `full-access` ([`system`]). `shell` runs without the API keys
//! panewise and its agents read ([`ToolContext::env_remove`], [`crate::secrets`]).

pub mod edit_file;
pub mod list_dir;
pub mod paths;
pub mod read_file;
pub mod shell;
pub mod system;
pub mod write_file;

pub use panewise_core::tools::{
    api_definitions, ask_user, definitions, output, recall, McpCall, ToolCall, ToolDefinition,
    ToolLimits, ToolName, ToolOutcome,
};

use std::path::PathBuf;

use serde_json::Value;

/// Where and within what limits tools run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    /// The working directory: relative paths are resolved against it and `shell` runs in it.
    pub cwd: PathBuf,
    /// The limits.
    pub limits: ToolLimits,
    /// The variables of panewise's environment that `shell` commands do not get: the API
    /// keys ([`crate::secrets::EnvPolicy::tool_removals`]).
    pub env_remove: Vec<String>,
    /// The sandbox `shell` commands run in ([`crate::sandbox::plan_shell`]); `None` runs them
    /// unconfined (`full-access`, or no mechanism and the person allowed it).
    pub shell_box: Option<crate::sandbox::ShellBox>,
    /// The file tools may reach `/proc`, `/sys` and `/dev` ([`system`]): true only in
    /// `full-access`. False, a call whose path leads there is refused.
    pub reach_system: bool,
}

impl ToolContext {
    /// A context in `cwd` with the default limits, keeping every known API key variable from
    /// the tools.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            limits: ToolLimits::default(),
            env_remove: crate::secrets::tool_env_removals(&[]),
            shell_box: None,
            reach_system: false,
        }
    }

    /// `path` resolved against the working directory ([`paths::resolve`]).
    pub fn resolve(&self, path: &str) -> PathBuf {
        paths::resolve(&self.cwd, path)
    }
}

/// Runs a parsed call. A file tool's call whose path reaches `/proc`, `/sys` or `/dev` is
/// refused unless the context allows it ([`ToolContext::reach_system`]).
pub async fn run(call: &ToolCall, context: &ToolContext) -> ToolOutcome {
    if let (Some(path), false) = (call.target_path(), context.reach_system) {
        if let Some(reach) = system::system_reach(&context.cwd, path) {
            return ToolOutcome::error(reach.refusal(call.tool().as_str(), path))
                .at(&context.resolve(path));
        }
    }
    match call {
        ToolCall::Shell(args) => shell::run(args, context).await,
        ToolCall::ReadFile(args) => read_file::run(args, context).await,
        ToolCall::WriteFile(args) => write_file::run(args, context).await,
        ToolCall::EditFile(args) => edit_file::run(args, context).await,
        ToolCall::ListDir(args) => list_dir::run(args, context).await,
        // The archive is the own loop's, which answers `recall` itself (`recall::answer`);
        // a context of its own has none to read.
        ToolCall::Recall(_) => ToolOutcome::error(format!(
            "{}: this context has no session archive; panewise's own loop answers it from \
             the archive its context window keeps",
            recall::NAME
        )),
        // The MCP servers are the own loop's, which runs these calls itself.
        ToolCall::Mcp(call) => ToolOutcome::error(format!(
            "{}: this context has no MCP client; panewise's own loop calls the servers it \
             started",
            call.namespaced
        )),
        ToolCall::ToolSearch(_) => ToolOutcome::error(format!(
            "{}: answered by panewise's own loop from its tool catalog",
            panewise_core::mcp::catalog::SEARCH_TOOL
        )),
        // Only a loop with a person to ask answers it (`ask_user::result`).
        ToolCall::AskUser(_) => ToolOutcome::error(format!(
            "{}: this context has nobody to ask; panewise's own loop puts the question to \
             the person",
            ask_user::NAME
        )),
    }
}

/// Parses and runs a model's call; a call that does not parse is an error result saying why.
pub async fn run_json(name: &str, arguments: &Value, context: &ToolContext) -> ToolOutcome {
    match ToolCall::parse(name, arguments) {
        Ok(call) => run(&call, context).await,
        Err(error) => ToolOutcome::error(error.to_string()),
    }
}
