//! The kernel's own file systems, which panewise's file tools keep out of: `/proc`, `/sys` and
//! `/dev` (`/proc/self/environ` holds the API keys). Whether a path reaches one is found on
//! disk by the host (`panewise_host::tools::system::system_reach`); the approval policy
//! decides over what it found (the approval policy's `PathFact`).

use std::path::{Path, PathBuf};

/// The roots the file tools keep out of outside `full-access`.
pub const SYSTEM_ROOTS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// How a path reaches one of [`SYSTEM_ROOTS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemReach {
    /// The root reached.
    pub root: &'static str,
    /// The first path inside it met on the way (the path as written, a component or a
    /// symlink, or where it leads).
    pub through: PathBuf,
}

impl SystemReach {
    /// The refusal the model reads for `tool` on `path`.
    pub fn refusal(&self, tool: &str, path: &str) -> String {
        let through = if self.through.as_os_str() == path {
            String::new()
        } else {
            format!(" (through {})", self.through.display())
        };
        format!(
            "{tool} refuses {path}: it leads into {root}{through}, which panewise's file tools \
             do not read or write except in approval mode full-access ({roots} hold process \
             environments, memory and devices, API keys among them)",
            root = self.root,
            roots = SYSTEM_ROOTS.join(", "),
        )
    }
}

/// The root of [`SYSTEM_ROOTS`] that `path` is inside, if any.
pub fn root_of(path: &Path) -> Option<&'static str> {
    SYSTEM_ROOTS
        .into_iter()
        .find(|root| path.starts_with(Path::new(root)))
}
