//! Where a tool's path argument points: resolved against the working directory, `.` and `..`
//! taken out lexically (the tools open exactly this path), and, for the approval policy,
//! whether it stays inside the working directory once symlinks are followed.

use std::path::{Component, Path, PathBuf};

/// `path` joined to `cwd` when relative, with `.` and `..` resolved lexically (`..` at the
/// root stays at the root). Symlinks are not followed: this is the path the tools open.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let joined = cwd.join(path);
    let mut resolved = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            other => resolved.push(other.as_os_str()),
        }
    }
    resolved
}

/// The path with every existing ancestor's symlinks followed: the longest prefix that exists
/// is canonicalized and the rest (which does not exist yet) appended as written.
fn canonical_through_existing(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            return missing
                .iter()
                .rev()
                .fold(canonical, |base, part| base.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            // Nothing of it exists (not even the root): only the lexical form is left.
            _ => return path.to_path_buf(),
        }
    }
}

/// True when `target` (already [`resolve`]d) is `cwd` or below it, both lexically and with
/// symlinks of existing ancestors followed: `../x` and a symlink out of `cwd` are outside.
/// Reads the filesystem (to follow symlinks) and nothing else.
pub fn is_inside(cwd: &Path, target: &Path) -> bool {
    let lexical_cwd = resolve(cwd, ".");
    if !target.starts_with(&lexical_cwd) {
        return false;
    }
    let canonical_cwd = canonical_through_existing(&lexical_cwd);
    canonical_through_existing(target).starts_with(canonical_cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_is_lexical_and_relative_to_cwd() {
        let cases = [
            ("a/b.txt", "/w/a/b.txt"),
            ("./a/../b", "/w/b"),
            ("../x", "/x"),
            ("../../../..", "/"),
            ("/etc/passwd", "/etc/passwd"),
            (".", "/w"),
        ];
        for (path, expected) in cases {
            assert_eq!(
                resolve(Path::new("/w"), path),
                PathBuf::from(expected),
                "{path}"
            );
        }
    }
}
