//! The one approval policy, carried out: the policy itself (its table, [`decide`]) is
//! `panewise_core::approval`'s, re-exported here, and decides over facts about the paths a
//! request names; this module finds those facts on disk ([`resolve_paths`]: the write check
//! of [`crate::tools::paths::check_write`] and the `/proc`, `/sys`, `/dev` reach of
//! [`crate::tools::system::system_reach`]).

use std::path::Path;

pub use panewise_core::approval::*;

use crate::tools::{paths, system};

/// The facts [`decide`] needs about `paths`, found on disk from `cwd`: reads the filesystem
/// (`lstat`, `readlink`) and changes nothing.
pub fn resolve_paths(cwd: &Path, paths_named: &[String]) -> PathFacts {
    paths_named
        .iter()
        .map(|path| {
            let fact = PathFact {
                system: system::system_reach(cwd, path),
                write: paths::check_write(cwd, path).map(|target| target.inside),
            };
            (path.clone(), fact)
        })
        .collect()
}

/// Decides `request` under `mode` in `cwd`: its paths resolved ([`resolve_paths`]), then the
/// policy ([`decide`]).
pub fn decide_in(mode: ApprovalMode, request: &ToolRequest<'_>, cwd: &Path) -> Decision {
    let facts = resolve_paths(cwd, &paths_to_resolve(request));
    decide(mode, request, &facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolCall;

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
                let decision = decide_in(mode, &ToolRequest::Own(&call), cwd);
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
