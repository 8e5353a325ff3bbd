//! A session's own git worktree: `.panewise/worktrees/<name>` of the repository, on a branch
//! `panewise/<name>`; removed with the session only when nothing in it is uncommitted.

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
    let path = Path::new(&top).join(".panewise/worktrees").join(name);
    let branch = format!("panewise/{name}");
    git(
        Path::new(&top),
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

/// Removes the worktree at `path` when it is clean; says what was done.
pub fn remove(path: &Path) -> String {
    match git(path, &["status", "--porcelain"]) {
        Ok(status) if status.is_empty() => {
            match git(path, &["worktree", "remove", &path.display().to_string()]) {
                Ok(_) => format!("removed the worktree {}", path.display()),
                Err(error) => format!("kept the worktree {}: {error}", path.display()),
            }
        }
        Ok(_) => format!(
            "kept the worktree {}: it has uncommitted changes",
            path.display()
        ),
        Err(error) => format!("kept the worktree {}: {error}", path.display()),
    }
}
