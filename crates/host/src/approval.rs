//! The one approval policy, for panewise's own tools and for a supervised agent's permission
//! requests alike: given the mode, the request and the working directory, whether it runs, is
//! asked about, or is denied.

use std::path::Path;

use panewise_providers::oneshot::Access;
use serde_json::Value;

use crate::tools::approval::Decision as ToolDecision;
use crate::tools::{paths, ToolCall};

/// How panewise answers permission requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ApprovalMode {
    /// Deny every request.
    ReadOnly,
    /// Ask the person on a terminal; without one, deny and say why.
    Ask,
    /// Allow file edits inside the working directory; ask for the rest.
    Auto,
    /// Allow every request.
    FullAccess,
}

impl ApprovalMode {
    /// The mode's name as typed on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ApprovalMode::ReadOnly => "read-only",
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::FullAccess => "full-access",
        }
    }

    /// What a channel that cannot ask (Codex `exec`, Gemini `-p`) lets the agent do in this
    /// mode: `ask` cannot ask there, so it is as strict as `read-only`.
    pub fn one_shot_access(self) -> Access {
        match self {
            ApprovalMode::ReadOnly | ApprovalMode::Ask => Access::ReadOnly,
            ApprovalMode::Auto => Access::EditWorkspace,
            ApprovalMode::FullAccess => Access::Full,
        }
    }
}

/// What one request asks to do.
#[derive(Debug, Clone, Copy)]
pub enum ToolRequest<'a> {
    /// One of panewise's own tools, parsed.
    Own(&'a ToolCall),
    /// A supervised agent's permission request: its tool name and input as the agent sent them.
    Agent {
        /// The agent's tool name.
        tool: &'a str,
        /// Its input.
        input: &'a Value,
    },
}

/// What the policy decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Run,
    /// Ask the person first.
    Ask,
    /// Do not run it.
    Deny {
        /// Why, naming the mode.
        reason: String,
    },
}

/// The tools that only edit files, which `auto` allows inside the working directory: Claude
/// Code's, Codex app-server's file change, and an ACP agent's `edit` kind.
const FILE_EDIT_TOOLS: &[&str] = &[
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "file_change",
    "edit",
];

/// Decides `request` under `mode` in `cwd`.
pub fn decide(mode: ApprovalMode, request: &ToolRequest<'_>, cwd: &Path) -> Decision {
    match request {
        ToolRequest::Own(call) => match crate::tools::approval::decide(mode, call, cwd) {
            ToolDecision::Run => Decision::Run,
            ToolDecision::Ask => Decision::Ask,
            ToolDecision::Deny { reason } => Decision::Deny { reason },
        },
        ToolRequest::Agent { tool, input } => {
            let inside = ["file_path", "notebook_path"]
                .iter()
                .find_map(|key| input.get(key).and_then(Value::as_str))
                .is_some_and(|path| paths::is_inside(cwd, &paths::resolve(cwd, path)));
            match mode {
                ApprovalMode::ReadOnly => Decision::Deny {
                    reason: format!("denied by panewise (--approval {})", mode.name()),
                },
                ApprovalMode::FullAccess => Decision::Run,
                ApprovalMode::Auto if FILE_EDIT_TOOLS.contains(tool) && inside => Decision::Run,
                ApprovalMode::Auto | ApprovalMode::Ask => Decision::Ask,
            }
        }
    }
}
