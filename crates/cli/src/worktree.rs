//! A session's own git worktree: `.panewise/worktrees/<name>` of the repository, on a branch
//! `panewise/<name>`; removed with the session only when nothing in it is uncommitted, and its
//! branch with it only when the branch holds no commit the repository's HEAD lacks.
//! `.panewise/` goes into the repository's `info/exclude`, so `git add -A` in the repository
//! never stages a worktree as an embedded repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .context("cannot run git")?;
    anyhow::ensure!(
        output.status.success(),
        "git {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Makes the worktree of session `name` in the repository holding `dir`; its path.
pub fn create(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !name.starts_with('.'),
        "--worktree: the name {name:?} must be letters, digits, '-', '_' or '.' (it names a \
         directory and a branch)"
    );
    let top = git(dir, &["rev-parse", "--show-toplevel"])
        .with_context(|| format!("--worktree: {} is not in a git repository", dir.display()))?;
    let top = Path::new(&top);
    let path = top.join(".panewise/worktrees").join(name);
    let branch = format!("panewise/{name}");
    let branch_exists = git(
        top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok();
    if let Some(refusal) = create_refusal(&branch, &path, branch_exists, path.exists()) {
        anyhow::bail!(refusal);
    }
    exclude_panewise_dir(top)?;
    git(
        top,
        &[
            "worktree",
            "add",
            "-b",
            &branch,
            &path.display().to_string(),
        ],
    )?;
    Ok(path)
}

/// Why a worktree for `branch` at `path` cannot be made, in words a person can act on.
fn create_refusal(
    branch: &str,
    path: &Path,
    branch_exists: bool,
    path_exists: bool,
) -> Option<String> {
    match (path_exists, branch_exists) {
        (true, _) => Some(format!(
            "--worktree: {} exists (an earlier session's worktree?): remove it \
             (`git worktree remove {}`) or choose another --name",
            path.display(),
            path.display()
        )),
        (false, true) => Some(format!(
            "--worktree: the branch {branch} is left from an earlier session: merge or delete \
             it (`git branch -D {branch}`), or choose another --name"
        )),
        (false, false) => None,
    }
}

/// Adds `.panewise/` to the repository's `info/exclude` unless a line already says so.
fn exclude_panewise_dir(top: &Path) -> anyhow::Result<()> {
    let exclude = git(
        top,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "info/exclude",
        ],
    )?;
    let exclude = PathBuf::from(exclude);
    let existing = match std::fs::read_to_string(&exclude) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", exclude.display()))
        }
    };
    if let Some(addition) = exclusion_to_add(&existing) {
        if let Some(parent) = exclude.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot make {}", parent.display()))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&exclude)
            .with_context(|| format!("cannot open {}", exclude.display()))?;
        std::io::Write::write_all(&mut file, addition.as_bytes())
            .with_context(|| format!("cannot write {}", exclude.display()))?;
    }
    Ok(())
}

/// What to append to an `info/exclude` holding `existing` so that `.panewise/` is excluded;
/// `None` when a line already excludes it.
fn exclusion_to_add(existing: &str) -> Option<String> {
    let excluded = existing.lines().map(str::trim).any(|line| {
        matches!(
            line,
            ".panewise" | ".panewise/" | "/.panewise" | "/.panewise/"
        )
    });
    if excluded {
        return None;
    }
    let separator = if existing.is_empty() || existing.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    Some(format!(
        "{separator}# panewise: session worktrees (`panewise new --worktree`)\n/.panewise/\n"
    ))
}

/// Removes the worktree at `path` when it is clean, then its branch when the repository's
/// HEAD holds every commit of it; says what was done.
pub fn remove(path: &Path) -> String {
    let shown = path.display();
    match git(path, &["status", "--porcelain"]) {
        Ok(status) if status.is_empty() => {}
        Ok(_) => return format!("kept the worktree {shown}: it has uncommitted changes"),
        Err(error) => return format!("kept the worktree {shown}: {error}"),
    }
    let common = git(
        path,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    let branch = git(path, &["symbolic-ref", "--quiet", "--short", "HEAD"]);
    if let Err(error) = git(path, &["worktree", "remove", &shown.to_string()]) {
        return format!("kept the worktree {shown}: {error}");
    }
    let (Ok(common), Ok(branch)) = (common, branch) else {
        return format!("removed the worktree {shown}");
    };
    // `-d`, not `-D`: a branch with commits HEAD lacks is the session's work, and stays.
    let dropped = Command::new("git")
        .arg("--git-dir")
        .arg(&common)
        .args(["branch", "-d", &branch])
        .output()
        .is_ok_and(|output| output.status.success());
    if dropped {
        format!("removed the worktree {shown} and its branch {branch}")
    } else {
        format!(
            "removed the worktree {shown}; kept its branch {branch}: it has commits HEAD does \
             not (`git branch -D {branch}` drops them)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panewise_is_excluded_once() {
        // (rule, info/exclude before, what is appended)
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "an empty file gains the line",
                "",
                Some("# panewise: session worktrees (`panewise new --worktree`)\n/.panewise/\n"),
            ),
            (
                "a file without a final newline gets one first",
                "*.log",
                Some("\n# panewise: session worktrees (`panewise new --worktree`)\n/.panewise/\n"),
            ),
            (
                "a line already excluding it is enough",
                "# x\n/.panewise/\n",
                None,
            ),
            ("any spelling of the directory counts", ".panewise\n", None),
            (
                "a deeper path is not the directory",
                ".panewise/worktrees/a\n",
                Some("# panewise: session worktrees (`panewise new --worktree`)\n/.panewise/\n"),
            ),
        ];
        for (rule, existing, expected) in cases {
            assert_eq!(exclusion_to_add(existing).as_deref(), *expected, "{rule}");
        }
    }

    #[test]
    fn a_worktree_is_refused_only_where_one_was_left() {
        let path = Path::new("/r/.panewise/worktrees/a");
        // (rule, branch exists, path exists, refusal names)
        let cases: &[(&str, bool, bool, Option<&str>)] = &[
            ("a new name is made", false, false, None),
            (
                "a branch left by a removed session is named with its remedy",
                true,
                false,
                Some("git branch -D panewise/a"),
            ),
            (
                "a worktree still there is named with its remedy",
                true,
                true,
                Some("git worktree remove /r/.panewise/worktrees/a"),
            ),
            (
                "a directory in the way is named too",
                false,
                true,
                Some("git worktree remove"),
            ),
        ];
        for (rule, branch_exists, path_exists, names) in cases {
            let refusal = create_refusal("panewise/a", path, *branch_exists, *path_exists);
            match (names, refusal) {
                (None, None) => {}
                (Some(names), Some(refusal)) => {
                    assert!(refusal.contains(names), "{rule}: {refusal}");
                }
                (names, refusal) => panic!("{rule}: expected {names:?}, got {refusal:?}"),
            }
        }
    }
}
