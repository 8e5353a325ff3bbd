//! The one approval policy: given the [`ApprovalMode`], a request (one of panewise's own tool
//! calls, or a supervised agent's permission request) and the working directory, whether it
//! runs, goes to the person (through the reducer's approval queue), or is denied.
//!
//! The modes only ever widen, each allowing all that the one before it allows:
//!
//! | mode          | own `read_file`, `list_dir`, `recall` | file edits inside cwd | file edits elsewhere | own `shell` (sandbox available) | anything else (an agent's command; own `shell` with no sandbox) |
//! |---------------|------|------|------|-------------------------------|------|
//! | `read-only`   | run  | deny | deny | run in the read-only box      | deny |
//! | `ask`         | run  | ask  | ask  | ask, then run in the workspace box | ask |
//! | `auto`        | run  | run  | ask  | run in the workspace box      | ask  |
//! | `full-access` | run  | run  | run  | run, no box                   | run  |
//!
//! A tool of an MCP server (`mcp__server__tool`) its server annotated `readOnlyHint: true` is
//! in the first column; any other MCP tool in the last ([`ToolCall::only_reads`]).
//!
//! The own `shell` column is [`crate::sandbox::plan_shell`]'s: where no sandbox can be had,
//! `shell` falls back to the last column and the session says once why.
//!
//! A file edit is panewise's `write_file` and `edit_file`; Claude Code's `Write`, `Edit`,
//! `MultiEdit` (`file_path`) and `NotebookEdit` (`notebook_path`); Codex app-server's
//! `file_change` (the paths of its `changes`, and a `grantRoot` it asks for); an ACP agent's
//! `edit` kind (its `locations` and the paths of its `diff` contents). "Inside" is
//! [`paths::is_inside`], the one check: every component resolved (symlink chains, `..`,
//! absolute and relative paths), a dangling symlink or a file with more than one hard link
//! never inside. An edit is run by `auto` only when EVERY path it touches is inside; an edit
//! whose paths cannot be read from the request (Codex's own request names none) is asked.
//!
//! One more row for panewise's own writes: a path the check refuses outright (it is written
//! inside the working directory but leads outside it through a symlink, it goes through a
//! dangling symlink or a symlink loop, it names a directory or a FIFO, it has other hard
//! links) is denied in every mode, with the check's reason, because the tool itself would
//! refuse it at the moment of the write ([`paths::open_for_write`]). An agent's request on
//! such a path is asked instead: panewise cannot hold the agent's own write to the check.
//!
//! Reading tools run in every mode, wherever their path points, with one exception: no
//! file tool of panewise's own (reading or writing) reaches `/proc`, `/sys` or `/dev` in any
//! mode but `full-access` ([`system`]): `/proc/self/environ` holds the API key. Such a call
//! is denied, never asked. Otherwise no mode restricts reading, as none does for the CLIs
//! panewise supervises.

use std::path::Path;

use panewise_providers::oneshot::Access;
use serde_json::Value;

use crate::tools::{paths, system, ToolCall};

/// How panewise answers an agent's permission requests and its own tools' calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Every mode, strictest first.
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::ReadOnly,
        ApprovalMode::Ask,
        ApprovalMode::Auto,
        ApprovalMode::FullAccess,
    ];

    /// The mode named `name` exactly as [`ApprovalMode::name`] spells it.
    pub fn from_name(name: &str) -> Option<ApprovalMode> {
        ApprovalMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
    }

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

/// What is asked to run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ToolRequest<'a> {
    /// One of panewise's own tools, parsed.
    Own(&'a ToolCall),
    /// A supervised agent's permission request: its tool name and input as the agent sent them.
    Agent {
        /// The tool's name as the agent sent it (`Write`, `file_change`, `edit`, `Bash`, …).
        tool: &'a str,
        /// Its input as the agent sent it.
        input: &'a Value,
    },
}

/// What the policy decided for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Run,
    /// Ask the person first (through the reducer's approval queue).
    Ask,
    /// Do not run it; for an own tool the reason goes back to the model as the call's error
    /// result.
    Deny {
        /// Why, naming the mode or the check that refused it.
        reason: String,
    },
}

/// Decides `request` under `mode`, in `cwd`. Reads the filesystem only to resolve the paths a
/// file edit touches (the check of [`paths::check_write`]).
pub fn decide(mode: ApprovalMode, request: &ToolRequest<'_>, cwd: &Path) -> Decision {
    match request {
        ToolRequest::Own(call) => decide_own(mode, call, cwd),
        ToolRequest::Agent { tool, input } => decide_agent(mode, tool, input, cwd),
    }
}

fn decide_own(mode: ApprovalMode, call: &ToolCall, cwd: &Path) -> Decision {
    let tool = call.tool();
    // `/proc`, `/sys` and `/dev` hold the process's environment (its API keys), its memory and
    // the devices: no file tool reaches them outside `full-access`, and nobody is asked.
    if let (Some(path), false) = (call.target_path(), mode == ApprovalMode::FullAccess) {
        if let Some(reach) = system::system_reach(cwd, path) {
            return Decision::Deny {
                reason: reach.refusal(tool.as_str(), path),
            };
        }
    }
    // An MCP tool its server annotated read-only is a read; any other is a command.
    if call.only_reads() {
        return Decision::Run;
    }
    let name = call.name();
    let denied = || {
        format!(
            "denied by approval mode {}: {name} may not run (only read_file, list_dir, recall \
             and MCP tools annotated read-only do)",
            mode.name()
        )
    };
    if mode == ApprovalMode::ReadOnly {
        return by_mode(mode, false, denied);
    }
    let edit_inside = match (tool.writes_files(), call.target_path()) {
        (true, Some(path)) => match paths::check_write(cwd, path) {
            Ok(target) => target.inside,
            Err(refusal) => {
                return Decision::Deny {
                    reason: format!("{tool} refuses this path: {refusal}"),
                }
            }
        },
        _ => false,
    };
    by_mode(mode, edit_inside, denied)
}

fn decide_agent(mode: ApprovalMode, tool: &str, input: &Value, cwd: &Path) -> Decision {
    let denied = || {
        format!(
            "denied by approval mode {}: {tool} may not run",
            mode.name()
        )
    };
    if mode == ApprovalMode::ReadOnly {
        return by_mode(mode, false, denied);
    }
    let edit_inside = agent_edit_paths(tool, input).is_some_and(|paths| {
        !paths.is_empty() && paths.iter().all(|path| paths::is_inside(cwd, path))
    });
    by_mode(mode, edit_inside, denied)
}

/// The table's columns for one request: `edit_inside` when it is a file edit whose every
/// path is inside the working directory.
fn by_mode(mode: ApprovalMode, edit_inside: bool, denied: impl FnOnce() -> String) -> Decision {
    match mode {
        ApprovalMode::ReadOnly => Decision::Deny { reason: denied() },
        ApprovalMode::FullAccess => Decision::Run,
        ApprovalMode::Auto if edit_inside => Decision::Run,
        ApprovalMode::Auto | ApprovalMode::Ask => Decision::Ask,
    }
}

/// The paths a supervised agent's file edit touches, as the request gives them; `None` when
/// `tool` is not a file edit. An edit whose input names no path gives an empty list (which
/// `auto` asks about, as it cannot check it).
pub fn agent_edit_paths(tool: &str, input: &Value) -> Option<Vec<String>> {
    let mut paths = Vec::new();
    let mut push = |value: &Value| {
        if let Some(path) = value.as_str() {
            paths.push(path.to_owned());
        }
    };
    match tool {
        // Claude Code.
        "Write" | "Edit" | "MultiEdit" => push(&input["file_path"]),
        "NotebookEdit" => push(&input["notebook_path"]),
        // Codex app-server: its `item/fileChange/requestApproval` names the item, not the files;
        // the paths are read where a request carries them (`changes`, the older `fileChanges`
        // map, a `grantRoot` asked for the rest of the session).
        "file_change" => {
            for change in input["changes"].as_array().into_iter().flatten() {
                push(&change["path"]);
            }
            for path in input["fileChanges"].as_object().into_iter().flatten() {
                push(&Value::String(path.0.clone()));
            }
            push(&input["grantRoot"]);
        }
        // An ACP agent's `edit` kind: its locations and the files its diffs change.
        "edit" => {
            let call = &input["toolCall"];
            for location in call["locations"].as_array().into_iter().flatten() {
                push(&location["path"]);
            }
            for content in call["content"].as_array().into_iter().flatten() {
                if content["type"] == "diff" {
                    push(&content["path"]);
                }
            }
        }
        _ => return None,
    }
    Some(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_that_cannot_ask_runs_ask_as_read_only() {
        let cases = [
            (ApprovalMode::ReadOnly, Access::ReadOnly),
            (ApprovalMode::Ask, Access::ReadOnly),
            (ApprovalMode::Auto, Access::EditWorkspace),
            (ApprovalMode::FullAccess, Access::Full),
        ];
        for (mode, access) in cases {
            assert_eq!(mode.one_shot_access(), access, "{}", mode.name());
        }
    }

    /// Every file tool × every mode on a path into `/proc`, `/sys` or `/dev`: denied (never
    /// asked) but in `full-access`, which runs it.
    #[test]
    fn no_file_tool_reaches_the_kernels_file_systems_but_in_full_access() {
        let cwd = Path::new("/");
        let calls = [
            (
                "read_file",
                serde_json::json!({"path": "/proc/self/environ"}),
            ),
            ("read_file", serde_json::json!({"path": "/dev/fd/0"})),
            ("list_dir", serde_json::json!({"path": "/sys"})),
            (
                "write_file",
                serde_json::json!({"path": "/dev/shm/x", "content": "x"}),
            ),
            (
                "edit_file",
                serde_json::json!({"path": "proc/self/mem", "old_string": "a", "new_string": "b"}),
            ),
        ];
        for (tool, arguments) in calls {
            let Ok(call) = ToolCall::parse(tool, &arguments) else {
                panic!("{tool} {arguments} parses");
            };
            for mode in ApprovalMode::ALL {
                let decision = decide(mode, &ToolRequest::Own(&call), cwd);
                match (mode, &decision) {
                    (ApprovalMode::FullAccess, Decision::Run) => {}
                    (ApprovalMode::FullAccess, other) => {
                        panic!("{tool} {arguments} in full-access: {other:?}")
                    }
                    (_, Decision::Deny { reason }) => assert!(
                        reason.contains("except in approval mode full-access"),
                        "{tool} {arguments} in {}: {reason}",
                        mode.name()
                    ),
                    (_, other) => panic!("{tool} {arguments} in {}: {other:?}", mode.name()),
                }
            }
        }
    }
}
