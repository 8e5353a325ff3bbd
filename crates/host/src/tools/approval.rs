//! The approval policy for panewise's own tools: given the approval mode, a parsed call and
//! the working directory, whether the call runs, goes to the reducer's approval queue, or is
//! denied.
//!
//! The modes only ever widen, each allowing all that the one before it allows:
//!
//! | mode          | `read_file`, `list_dir` | `write_file`, `edit_file` inside cwd | outside cwd | `shell` |
//! |---------------|-------------------------|--------------------------------------|-------------|---------|
//! | `read-only`   | run                     | deny                                 | deny        | deny    |
//! | `ask`         | run                     | ask                                  | ask         | ask     |
//! | `auto`        | run                     | run                                  | ask         | ask     |
//! | `full-access` | run                     | run                                  | run         | run     |
//!
//! Reading tools run in every mode, wherever their path points: no mode restricts reading,
//! as none does for the CLIs panewise supervises. "Inside" is decided by
//! [`paths::is_inside`]: lexically, and with the symlinks of existing ancestors followed, so
//! `../x` and a symlink out of the working directory are outside. The check is made when the
//! call is decided; a symlink swapped in between the decision and the write is not caught.

use std::path::Path;

use super::{paths, ToolCall, ToolName};
use crate::approval::ApprovalMode;

/// What the policy decided for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Run,
    /// Ask the user first (through the reducer's approval queue).
    Ask,
    /// Do not run it; the reason goes back to the model as the call's error result.
    Deny {
        /// Why, naming the mode.
        reason: String,
    },
}

/// Where a call's target lies, relative to the working directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A path inside the working directory.
    Inside,
    /// A path outside it.
    Outside,
    /// No single path: `shell` may touch anything.
    Anything,
}

/// Decides `call` under `mode`, in `cwd`. Reads the filesystem only to follow the symlinks of
/// the target's existing ancestors.
pub fn decide(mode: ApprovalMode, call: &ToolCall, cwd: &Path) -> Decision {
    let target = match call.target_path() {
        None => Target::Anything,
        Some(path) if paths::is_inside(cwd, &paths::resolve(cwd, path)) => Target::Inside,
        Some(_) => Target::Outside,
    };
    decide_for(mode, call.tool(), target)
}

/// The policy table itself: pure.
pub fn decide_for(mode: ApprovalMode, tool: ToolName, target: Target) -> Decision {
    if tool.only_reads() {
        return Decision::Run;
    }
    match mode {
        ApprovalMode::FullAccess => Decision::Run,
        ApprovalMode::Auto if tool.writes_files() && target == Target::Inside => Decision::Run,
        ApprovalMode::Auto | ApprovalMode::Ask => Decision::Ask,
        ApprovalMode::ReadOnly => Decision::Deny {
            reason: format!(
                "denied by approval mode {}: {tool} may not run (only read_file and list_dir do)",
                mode.name()
            ),
        },
    }
}
