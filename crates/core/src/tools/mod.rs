//! panewise's own tools as data: `shell`, `read_file`, `write_file`, `edit_file`, `list_dir`,
//! `ask_user`, which the loop answers itself with the person's answer ([`ask_user`]), and
//! `recall`, which the loop offers once its context window archived something and answers
//! itself from that archive ([`recall::answer`], pure).
//!
//! The set is closed: [`ToolName`] names every tool, and [`ToolCall`] is one parsed call, one
//! variant per tool, so the host's dispatcher is one `match` and adding a tool is a compile
//! error everywhere it must be handled. Each tool module holds its name, arguments (serde,
//! unknown fields rejected), description and the JSON schema a model is given; the host's
//! `panewise_host::tools` runs them. A call that does not parse is a [`ToolError`] the loop
//! hands back to the model; long results are cut to [`ToolLimits::output_bytes`] with a note
//! ([`output`]). Whether a call may run at all is the approval policy's business
//! (`approval`, which reads these types), not the tools'.

pub mod ask_user;
pub mod edit_file;
pub mod list_dir;
pub mod output;
pub mod read_file;
pub mod recall;
pub mod shell;
pub mod system;
pub mod write_file;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;

/// Every tool panewise's own loop offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ToolName {
    /// Runs a shell command.
    Shell,
    /// Reads a text file.
    ReadFile,
    /// Writes a whole file.
    WriteFile,
    /// Replaces an exact string in a file.
    EditFile,
    /// Lists a directory.
    ListDir,
    /// Asks the person a question and waits for the answer.
    AskUser,
    /// Gives back a span the context window removed, from the session's archive.
    Recall,
    /// A tool of a configured MCP server (`mcp__server__tool`): not in [`ToolName::ALL`], as
    /// the servers' tools are the session's, not panewise's; the own loop parses its calls
    /// against the tools the servers listed ([`McpCall`]).
    Mcp,
    /// `mcp_tool_search`, offered while a tool budget defers MCP tools; the own loop answers
    /// it itself from its catalog.
    ToolSearch,
}

impl ToolName {
    /// Every tool, in the order a model is told about them.
    pub const ALL: [ToolName; 7] = [
        ToolName::Shell,
        ToolName::ReadFile,
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::ListDir,
        ToolName::AskUser,
        ToolName::Recall,
    ];

    /// The name the model calls it by.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Shell => shell::NAME,
            ToolName::ReadFile => read_file::NAME,
            ToolName::WriteFile => write_file::NAME,
            ToolName::EditFile => edit_file::NAME,
            ToolName::ListDir => list_dir::NAME,
            ToolName::AskUser => ask_user::NAME,
            ToolName::Recall => recall::NAME,
            ToolName::Mcp => "mcp",
            ToolName::ToolSearch => crate::mcp::catalog::SEARCH_TOOL,
        }
    }

    /// The tool called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.as_str() == name)
    }

    /// What the tool does, for the model.
    pub fn description(self) -> &'static str {
        match self {
            ToolName::Shell => shell::DESCRIPTION,
            ToolName::ReadFile => read_file::DESCRIPTION,
            ToolName::WriteFile => write_file::DESCRIPTION,
            ToolName::EditFile => edit_file::DESCRIPTION,
            ToolName::ListDir => list_dir::DESCRIPTION,
            ToolName::AskUser => ask_user::DESCRIPTION,
            ToolName::Recall => recall::DESCRIPTION,
            ToolName::Mcp => "A tool of a configured MCP server.",
            ToolName::ToolSearch => "Find deferred MCP tools and load them.",
        }
    }

    /// The JSON schema of the tool's arguments.
    pub fn schema(self) -> Value {
        match self {
            ToolName::Shell => shell::schema(),
            ToolName::ReadFile => read_file::schema(),
            ToolName::WriteFile => write_file::schema(),
            ToolName::EditFile => edit_file::schema(),
            ToolName::ListDir => list_dir::schema(),
            ToolName::AskUser => ask_user::schema(),
            ToolName::Recall => recall::schema(),
            ToolName::Mcp => serde_json::json!({"type": "object"}),
            ToolName::ToolSearch => crate::mcp::catalog::search_schema(),
        }
    }

    /// True for the tools that only read (they change no file and run no command); asking
    /// the person changes nothing either.
    pub fn only_reads(self) -> bool {
        matches!(
            self,
            ToolName::ReadFile
                | ToolName::ListDir
                | ToolName::Recall
                | ToolName::ToolSearch
                | ToolName::AskUser
        )
    }

    /// True for the tools offered only while the session's archive holds a span.
    pub fn needs_archive(self) -> bool {
        matches!(self, ToolName::Recall)
    }

    /// True for the tools that change files and nothing else.
    pub fn writes_files(self) -> bool {
        matches!(self, ToolName::WriteFile | ToolName::EditFile)
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A tool as a model is told about it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolDefinition {
    /// The name to call it by.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

/// Every tool's definition as a request carries it (the providers' `ToolDefinition`), in
/// [`ToolName::ALL`] order, without the tools that need an archive (`recall`) unless
/// `with_archive`: what the own loop sends, and what its tests and benches render.
pub fn api_definitions(with_archive: bool) -> Vec<panewise_providers::ToolDefinition<'static>> {
    definitions()
        .into_iter()
        .filter(|tool| {
            with_archive || ToolName::from_name(tool.name).is_some_and(|name| !name.needs_archive())
        })
        .map(|tool| panewise_providers::ToolDefinition {
            name: std::borrow::Cow::Borrowed(tool.name),
            description: std::borrow::Cow::Borrowed(tool.description),
            parameters: std::borrow::Cow::Owned(tool.parameters),
        })
        .collect()
}

/// Every tool's definition, in [`ToolName::ALL`] order.
pub fn definitions() -> Vec<ToolDefinition> {
    ToolName::ALL
        .into_iter()
        .map(|tool| ToolDefinition {
            name: tool.as_str(),
            description: tool.description(),
            parameters: tool.schema(),
        })
        .collect()
}

/// One call of a tool, its arguments parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// `shell`.
    Shell(shell::Args),
    /// `read_file`.
    ReadFile(read_file::Args),
    /// `write_file`.
    WriteFile(write_file::Args),
    /// `edit_file`.
    EditFile(edit_file::Args),
    /// `list_dir`.
    ListDir(list_dir::Args),
    /// `ask_user`.
    AskUser(ask_user::Args),
    /// `recall`.
    Recall(recall::Args),
    /// A tool of a configured MCP server.
    Mcp(McpCall),
    /// `mcp_tool_search`, with its query.
    ToolSearch(String),
}

/// One call of an MCP server's tool, as the own loop parsed it against the tools the servers
/// listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCall {
    /// The name the model called (`mcp__server__tool`).
    pub namespaced: String,
    /// The server's configured name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
    /// The server annotated the tool `readOnlyHint: true`: the call is treated as reading.
    pub read_only: bool,
}

/// The most characters of an MCP call's arguments an approval prompt shows.
const MCP_SUMMARY_CHARS: usize = 300;

impl ToolCall {
    /// Parses a model's call of `name` with `arguments` (a JSON object, or a string holding
    /// one, as some APIs send it).
    pub fn parse(name: &str, arguments: &Value) -> Result<Self, ToolError> {
        let tool = ToolName::from_name(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_owned(),
            known: ToolName::ALL.map(ToolName::as_str).join(", "),
        })?;
        let parsed;
        let arguments = match arguments {
            Value::String(text) => {
                parsed = serde_json::from_str::<Value>(text).map_err(|error| {
                    ToolError::BadArguments {
                        tool: tool.as_str(),
                        reason: format!("the arguments are not JSON: {error}"),
                    }
                })?;
                &parsed
            }
            other => other,
        };
        Ok(match tool {
            ToolName::Shell => ToolCall::Shell(arguments_of(tool, arguments)?),
            ToolName::ReadFile => ToolCall::ReadFile(arguments_of(tool, arguments)?),
            ToolName::WriteFile => ToolCall::WriteFile(arguments_of(tool, arguments)?),
            ToolName::EditFile => ToolCall::EditFile(arguments_of(tool, arguments)?),
            ToolName::ListDir => ToolCall::ListDir(arguments_of(tool, arguments)?),
            ToolName::AskUser => ToolCall::AskUser(arguments_of(tool, arguments)?),
            ToolName::Recall => ToolCall::Recall(arguments_of(tool, arguments)?),
            // Not in `ToolName::ALL`, so `from_name` never names them: the own loop parses
            // these against its catalog.
            ToolName::Mcp | ToolName::ToolSearch => {
                return Err(ToolError::BadArguments {
                    tool: tool.as_str(),
                    reason: "parsed by the own loop's tool catalog".to_owned(),
                })
            }
        })
    }

    /// Which tool is called.
    pub fn tool(&self) -> ToolName {
        match self {
            ToolCall::Shell(_) => ToolName::Shell,
            ToolCall::ReadFile(_) => ToolName::ReadFile,
            ToolCall::WriteFile(_) => ToolName::WriteFile,
            ToolCall::EditFile(_) => ToolName::EditFile,
            ToolCall::ListDir(_) => ToolName::ListDir,
            ToolCall::AskUser(_) => ToolName::AskUser,
            ToolCall::Recall(_) => ToolName::Recall,
            ToolCall::Mcp(_) => ToolName::Mcp,
            ToolCall::ToolSearch(_) => ToolName::ToolSearch,
        }
    }

    /// The name the model called.
    pub fn name(&self) -> &str {
        match self {
            ToolCall::Mcp(call) => &call.namespaced,
            other => other.tool().as_str(),
        }
    }

    /// True when the call only reads: a reading tool, or an MCP tool its server annotated
    /// `readOnlyHint: true` ([`crate::mcp::catalog::only_reads`]). Every other MCP call
    /// is treated as running a command.
    pub fn only_reads(&self) -> bool {
        match self {
            ToolCall::Mcp(call) => call.read_only,
            other => other.tool().only_reads(),
        }
    }

    /// The path the call reads or writes, as the model gave it; `None` for `shell`, whose
    /// command may touch anything, for `recall`, which reads the session's archive, and for
    /// `ask_user`, which reads the person.
    pub fn target_path(&self) -> Option<&str> {
        match self {
            ToolCall::Shell(_)
            | ToolCall::Recall(_)
            | ToolCall::Mcp(_)
            | ToolCall::ToolSearch(_)
            | ToolCall::AskUser(_) => None,
            ToolCall::ReadFile(args) => Some(&args.path),
            ToolCall::WriteFile(args) => Some(&args.path),
            ToolCall::EditFile(args) => Some(&args.path),
            ToolCall::ListDir(args) => Some(args.path()),
        }
    }

    /// What the call wants to do, in one line, for an approval prompt (the command, or the
    /// path).
    pub fn summary(&self) -> String {
        match self {
            ToolCall::Shell(args) => args.command.clone(),
            ToolCall::Recall(args) => args.summary(),
            ToolCall::ToolSearch(query) => query.clone(),
            ToolCall::Mcp(call) => {
                let arguments = call.arguments.to_string();
                let mut shown: String = arguments.chars().take(MCP_SUMMARY_CHARS).collect();
                if shown.len() < arguments.len() {
                    shown.push('…');
                }
                format!("{} {shown}", call.namespaced)
            }
            ToolCall::AskUser(args) => args.shown(),
            other => other.target_path().unwrap_or_default().to_owned(),
        }
    }
}

fn arguments_of<T: DeserializeOwned>(tool: ToolName, arguments: &Value) -> Result<T, ToolError> {
    if !arguments.is_object() {
        return Err(ToolError::BadArguments {
            tool: tool.as_str(),
            reason: "the arguments must be a JSON object".to_owned(),
        });
    }
    T::deserialize(arguments).map_err(|error| ToolError::BadArguments {
        tool: tool.as_str(),
        reason: error.to_string(),
    })
}

/// Limits every tool run is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// The most bytes of output a result carries before it is cut.
    pub output_bytes: usize,
    /// How long a `shell` command may run when the call does not say.
    pub shell_timeout: Duration,
    /// The longest a `shell` call may ask for (`timeout_ms` is clamped to it).
    pub max_shell_timeout: Duration,
    /// The most bytes `read_file` reads from one file, the lines it skips included.
    pub read_bytes: u64,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            output_bytes: 30_000,
            shell_timeout: Duration::from_secs(120),
            max_shell_timeout: Duration::from_secs(600),
            read_bytes: 8 * 1024 * 1024,
        }
    }
}

/// What a tool run produced, for the model and for the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The result text the model sees (already cut to the output cap).
    pub content: String,
    /// True when the call failed (bad arguments, an I/O error, a non-zero exit, a timeout).
    pub is_error: bool,
    /// `shell`'s exit code; `None` for the file tools and for a command that did not exit by
    /// itself (killed by a signal or by the timeout).
    pub exit_code: Option<i32>,
    /// True when `shell` hit its timeout and its process group was killed.
    pub timed_out: bool,
    /// The resolved path a file tool read or wrote.
    pub path: Option<PathBuf>,
}

impl ToolOutcome {
    /// A successful result.
    pub fn ok(content: String) -> Self {
        Self {
            content,
            is_error: false,
            exit_code: None,
            timed_out: false,
            path: None,
        }
    }

    /// A failed result saying why.
    pub fn error(content: String) -> Self {
        Self {
            is_error: true,
            ..Self::ok(content)
        }
    }

    /// The same outcome, naming the resolved path it concerns.
    pub fn at(mut self, path: &Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }
}
