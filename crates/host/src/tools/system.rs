//! The kernel's own file systems, which panewise's file tools keep out of: `/proc`, `/sys` and
//! `/dev`.
//!
//! `/proc/self/environ` holds panewise's environment, API keys included, and
//! `/proc/PID/environ` every other process's of the same user; `/proc/self/mem` is the
//! process's memory; `/dev/fd/N` and `/dev/stdin` lead into `/proc/self/fd`. No approval mode
//! but `full-access` lets `read_file`, `list_dir`, `write_file` or `edit_file` reach them
//! (`recall` reads the session's archive and takes no path): the approval policy denies such a
//! call before it runs or is asked (`panewise_core::approval::decide`), and the tools refuse it
//! again when they run ([`super::ToolContext::reach_system`]), `read_file` once more on the
//! file it opened ([`opened_in_system`]), so a symlink swapped in after the check is refused
//! too.
//!
//! A path reaches a root when it is written inside it, when any component or symlink met
//! while resolving it the way the kernel does lies inside it ([`super::paths`]'s walk, `..`
//! and relative links included), or when it leads into it in the end.

use std::path::{Path, PathBuf};

use super::paths;

pub use panewise_core::tools::system::*;

/// Whether `path`, given to a file tool in `cwd`, reaches `/proc`, `/sys` or `/dev`: as
/// written (lexically resolved), through any component or symlink met while resolving it,
/// or where it leads. Reads the filesystem (`lstat`, `readlink`) and changes nothing; a path
/// that cannot be resolved is judged on what was met before the failure.
pub fn system_reach(cwd: &Path, path: &str) -> Option<SystemReach> {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let written = paths::resolve(&cwd, path);
    let mut visited = Vec::new();
    let real = paths::walk(&written, &mut visited)
        .ok()
        .map(|walked| walked.real);
    std::iter::once(written)
        .chain(visited)
        .chain(real)
        .find_map(|met| root_of(&met).map(|root| SystemReach { root, through: met }))
}

/// Where an opened file really is when that is inside one of [`SYSTEM_ROOTS`] (read from
/// `/proc/self/fd`, the kernel's own name of what the descriptor holds); `None` when it is
/// elsewhere or cannot be told.
pub fn opened_in_system(file: &std::fs::File) -> Option<SystemReach> {
    use std::os::fd::AsRawFd;
    let link = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let real = std::fs::read_link(link).ok()?;
    root_of(&real).map(|root| SystemReach {
        root,
        through: real,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each way into a root, in a temporary directory holding links to them: (path, the root
    /// reached, or none).
    #[test]
    fn every_way_into_a_root_is_found_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(cwd.join("plain.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", cwd.join("environ")).unwrap();
        std::os::unix::fs::symlink("/dev/fd", cwd.join("fds")).unwrap();
        std::os::unix::fs::symlink("../../../../../../../../sys", cwd.join("up")).unwrap();
        std::os::unix::fs::symlink("plain.txt", cwd.join("inner")).unwrap();
        std::os::unix::fs::symlink("/proc/nonexistent/x", cwd.join("dangling")).unwrap();
        let cases: [(&str, Option<&str>); 14] = [
            ("/proc/self/environ", Some("/proc")),
            ("/proc", Some("/proc")),
            ("/sys/kernel", Some("/sys")),
            ("/dev/null", Some("/dev")),
            // `/dev/fd` leads into `/proc/self/fd`: `/dev` is met first.
            ("/dev/fd/0", Some("/dev")),
            ("/etc/../proc/1/environ", Some("/proc")),
            ("environ", Some("/proc")),
            ("fds/2", Some("/dev")),
            ("up/kernel", Some("/sys")),
            ("dangling", Some("/proc")),
            ("plain.txt", None),
            ("inner", None),
            ("/etc/hostname", None),
            // Names that only start like a root are not in it.
            ("/processes/x", None),
        ];
        for (path, expected) in cases {
            let reach = system_reach(cwd, path);
            assert_eq!(reach.map(|reach| reach.root), expected, "{path}");
        }
    }

    #[test]
    fn the_refusal_names_the_path_the_root_and_the_way() {
        let reach = SystemReach {
            root: "/proc",
            through: PathBuf::from("/dev/fd"),
        };
        let text = reach.refusal("read_file", "/dev/fd/3");
        assert!(
            text.starts_with("read_file refuses /dev/fd/3: it leads into /proc (through /dev/fd)"),
            "{text}"
        );
        assert!(text.contains("full-access"), "{text}");
    }

    #[test]
    fn an_opened_file_in_proc_is_told_and_one_elsewhere_is_not() {
        let environ = std::fs::File::open("/proc/self/environ").unwrap();
        assert_eq!(
            opened_in_system(&environ).map(|reach| reach.root),
            Some("/proc")
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        let plain = std::fs::File::open(dir.path().join("a")).unwrap();
        assert_eq!(opened_in_system(&plain), None);
    }
}
