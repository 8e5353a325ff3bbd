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
//! the host's one check (`panewise_host::tools::paths::check_write`), whose answer reaches
//! the policy as a [`PathFact`]: every component resolved (symlink chains, `..`,
//! absolute and relative paths), a dangling symlink or a file with more than one hard link
//! never inside. An edit is run by `auto` only when EVERY path it touches is inside; an edit
//! whose paths cannot be read from the request (Codex's own request names none) is asked.
//!
//! One more row for panewise's own writes: a path the check refuses outright (it is written
//! inside the working directory but leads outside it through a symlink, it goes through a
//! dangling symlink or a symlink loop, it names a directory or a FIFO, it has other hard
//! links) is denied in every mode, with the check's reason, because the tool itself would
//! refuse it at the moment of the write. An agent's request on
//! such a path is asked instead: panewise cannot hold the agent's own write to the check.
//!
//! Reading tools run in every mode, wherever their path points, with one exception: no
//! file tool of panewise's own (reading or writing) reaches `/proc`, `/sys` or `/dev` in any
//! mode but `full-access` ([`crate::tools::system`]): `/proc/self/environ` holds the API key. Such a call
//! is denied, never asked. Otherwise no mode restricts reading, as none does for the CLIs
//! panewise supervises.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::WriteRefusal;
use crate::tools::system::SystemReach;
use crate::tools::ToolCall;

pub use crate::approval_mode::ApprovalMode;

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

/// What the shell found on disk for one path a request names, resolved against the working
/// directory before the policy decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFact {
    /// Whether the path reaches `/proc`, `/sys` or `/dev`, and through what.
    pub system: Option<SystemReach>,
    /// The write check's verdict: whether a write there stays inside the working directory,
    /// or why panewise's own write tools would refuse it outright.
    pub write: Result<bool, WriteRefusal>,
}

/// The facts for every path of [`paths_to_resolve`], keyed by the path as the request names
/// it.
pub type PathFacts = BTreeMap<String, PathFact>;

/// The paths the policy needs facts about to decide `request`: an own tool's target, a
/// supervised agent's file edit's paths.
pub fn paths_to_resolve(request: &ToolRequest<'_>) -> Vec<String> {
    match request {
        ToolRequest::Own(call) => call.target_path().map(str::to_owned).into_iter().collect(),
        ToolRequest::Agent { tool, input } => agent_edit_paths(tool, input).unwrap_or_default(),
    }
}

/// Decides `request` under `mode`, over the `facts` the shell resolved for
/// [`paths_to_resolve`]. A path without a fact is never inside and, for an own tool, refused:
/// the policy does not guess what is on disk.
pub fn decide(mode: ApprovalMode, request: &ToolRequest<'_>, facts: &PathFacts) -> Decision {
    match request {
        ToolRequest::Own(call) => decide_own(mode, call, facts),
        ToolRequest::Agent { tool, input } => decide_agent(mode, tool, input, facts),
    }
}

/// The fact for `path`, or the refusal of a path the shell did not resolve.
fn fact_of<'a>(facts: &'a PathFacts, path: &str) -> Result<&'a PathFact, String> {
    facts.get(path).ok_or_else(|| {
        format!("{path} was not resolved before the call was decided; panewise refuses it")
    })
}

fn decide_own(mode: ApprovalMode, call: &ToolCall, facts: &PathFacts) -> Decision {
    let tool = call.tool();
    let fact = match call.target_path().map(|path| (path, fact_of(facts, path))) {
        Some((_, Err(reason))) => return Decision::Deny { reason },
        Some((path, Ok(fact))) => Some((path, fact)),
        None => None,
    };
    // `/proc`, `/sys` and `/dev` hold the process's environment (its API keys), its memory and
    // the devices: no file tool reaches them outside `full-access`, and nobody is asked.
    if let (Some((path, fact)), false) = (fact, mode == ApprovalMode::FullAccess) {
        if let Some(reach) = &fact.system {
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
    let edit_inside = match (tool.writes_files(), fact) {
        (true, Some((_, fact))) => match &fact.write {
            Ok(inside) => *inside,
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

fn decide_agent(mode: ApprovalMode, tool: &str, input: &Value, facts: &PathFacts) -> Decision {
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
        !paths.is_empty()
            && paths.iter().all(|path| {
                facts
                    .get(path)
                    .is_some_and(|fact| matches!(fact.write, Ok(true)))
            })
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
    use panewise_providers::oneshot::Access;

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

    fn inside() -> PathFact {
        PathFact {
            system: None,
            write: Ok(true),
        }
    }

    fn outside() -> PathFact {
        PathFact {
            system: None,
            write: Ok(false),
        }
    }

    fn in_proc(path: &str) -> PathFact {
        PathFact {
            system: Some(SystemReach {
                root: "/proc",
                through: std::path::PathBuf::from(path),
            }),
            write: Ok(false),
        }
    }

    fn refused(path: &str) -> PathFact {
        PathFact {
            system: None,
            write: Err(WriteRefusal::NotAFile {
                path: std::path::PathBuf::from(path),
                kind: "a named pipe (FIFO)",
            }),
        }
    }

    /// The policy's table over the facts the shell resolved: each own file tool and agent edit
    /// × each mode × inside, outside, into `/proc`, refused by the write check, unresolved.
    #[test]
    fn the_policy_decides_over_the_facts_it_is_given() {
        use Decision::{Ask, Run};
        let deny = |reason: &str| Decision::Deny {
            reason: reason.to_owned(),
        };
        let write = |path: &str| {
            ToolCall::parse(
                "write_file",
                &serde_json::json!({"path": path, "content": "x"}),
            )
        };
        let read = |path: &str| ToolCall::parse("read_file", &serde_json::json!({"path": path}));
        #[derive(Debug)]
        enum Want {
            Is(Decision),
            DenyContaining(&'static str),
        }
        let cases: Vec<(&str, ToolCall, Option<PathFact>, [Want; 4])> = vec![
            (
                "write inside",
                write("a.txt").unwrap_or_else(|error| panic!("{error}")),
                Some(inside()),
                [
                    Want::DenyContaining("denied by approval mode read-only"),
                    Want::Is(Ask),
                    Want::Is(Run),
                    Want::Is(Run),
                ],
            ),
            (
                "write outside",
                write("a.txt").unwrap_or_else(|error| panic!("{error}")),
                Some(outside()),
                [
                    Want::DenyContaining("denied by approval mode read-only"),
                    Want::Is(Ask),
                    Want::Is(Ask),
                    Want::Is(Run),
                ],
            ),
            (
                "write refused by the check",
                write("a.txt").unwrap_or_else(|error| panic!("{error}")),
                Some(refused("a.txt")),
                [
                    Want::DenyContaining("denied by approval mode read-only"),
                    Want::DenyContaining("write_file refuses this path"),
                    Want::DenyContaining("write_file refuses this path"),
                    Want::DenyContaining("write_file refuses this path"),
                ],
            ),
            (
                "read into /proc",
                read("/proc/self/environ").unwrap_or_else(|error| panic!("{error}")),
                Some(in_proc("/proc/self/environ")),
                [
                    Want::DenyContaining("except in approval mode full-access"),
                    Want::DenyContaining("except in approval mode full-access"),
                    Want::DenyContaining("except in approval mode full-access"),
                    Want::Is(Run),
                ],
            ),
            (
                "read, path unresolved",
                read("x").unwrap_or_else(|error| panic!("{error}")),
                None,
                [
                    Want::DenyContaining("was not resolved"),
                    Want::DenyContaining("was not resolved"),
                    Want::DenyContaining("was not resolved"),
                    Want::DenyContaining("was not resolved"),
                ],
            ),
        ];
        for (what, call, fact, wants) in cases {
            let mut facts = PathFacts::new();
            if let (Some(fact), Some(path)) = (fact, call.target_path()) {
                facts.insert(path.to_owned(), fact);
            }
            for (mode, want) in ApprovalMode::ALL.into_iter().zip(wants) {
                let got = decide(mode, &ToolRequest::Own(&call), &facts);
                match (&want, &got) {
                    (Want::Is(want), got) => assert_eq!(want, got, "{what} in {}", mode.name()),
                    (Want::DenyContaining(part), Decision::Deny { reason }) => {
                        assert!(reason.contains(part), "{what} in {}: {reason}", mode.name())
                    }
                    (want, got) => panic!("{what} in {}: want {want:?}, got {got:?}", mode.name()),
                }
            }
        }
        let edit = serde_json::json!({"file_path": "/w/a.txt"});
        let agent = ToolRequest::Agent {
            tool: "Write",
            input: &edit,
        };
        assert_eq!(paths_to_resolve(&agent), vec!["/w/a.txt".to_owned()]);
        let mut facts = PathFacts::new();
        assert_eq!(decide(ApprovalMode::Auto, &agent, &facts), Ask);
        facts.insert("/w/a.txt".to_owned(), inside());
        assert_eq!(decide(ApprovalMode::Auto, &agent, &facts), Run);
        assert_eq!(
            decide(ApprovalMode::ReadOnly, &agent, &facts),
            deny("denied by approval mode read-only: Write may not run")
        );
    }
}
