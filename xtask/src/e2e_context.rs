//! The end-to-end case of sessions made from the asking client's context
//! (`daemon-client-context`, issue 28): the daemon is started on demand from project A, whose
//! `panewise.toml` says `approval = "ask"` and a model of its own, with no provider key in
//! its environment. `panewise new` is then run from project B, whose `panewise.toml` says
//! `provider = "anthropic"`, `approval = "read-only"` and another model, with
//! `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (the mock server) in that command's
//! environment alone. The session must run in B, with B's settings and the key B's command
//! sent, and its turn reach done against the mock (the mock's shell call denied by
//! read-only, never asked about as A's `ask` would). B's file is then edited and the next
//! `new` takes the edit without a daemon restart. The key must be in none of the daemon's
//! files (its data, runtime and config directories, the session logs).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::e2e_support::{start_mock, text, within};

/// The case's name (`cargo xtask e2e client-context`).
pub const NAME: &str = "daemon-client-context";

/// How long any command may take.
const DEADLINE: Duration = Duration::from_secs(90);

/// The key only B's commands carry: it must show up nowhere the daemon writes.
const KEY: &str = "sk-e2e-client-context-key-7f3a";

/// Runs the case in `dir`.
pub fn run_case(panewise: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let project_a = dir.join("project-a");
    let project_b = dir.join("project-b");
    for sub in ["home", "run", "data", "config"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    for project in [&project_a, &project_b] {
        // Each its own repository, so the project file is looked up no higher.
        std::fs::create_dir_all(project.join(".git"))?;
    }
    std::fs::write(
        project_a.join("panewise.toml"),
        "provider = \"anthropic\"\napproval = \"ask\"\nmodel = \"model-of-a\"\n",
    )?;
    std::fs::write(
        project_b.join("panewise.toml"),
        "provider = \"anthropic\"\napproval = \"read-only\"\nmodel = \"model-of-b\"\n",
    )?;
    let project_a = project_a.canonicalize()?;
    let project_b = project_b.canonicalize()?;
    let mock = start_mock(panewise, "tool-then-answer", dir)?;
    // Only what the case sets: no key, no endpoint, no proxy from the caller's environment.
    let command = |cwd: &Path, with_key: bool, args: &[&str]| -> Result<Output> {
        let mut command = Command::new(panewise);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.join("home"))
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("NO_PROXY", "127.0.0.1")
            .current_dir(cwd)
            .args(args)
            .stdin(Stdio::null());
        if with_key {
            command
                .env("ANTHROPIC_API_KEY", KEY)
                .env("ANTHROPIC_BASE_URL", &mock.url);
        }
        within(command, DEADLINE)
    };
    // The daemon starts on demand from A, without a key.
    let listed = command(&project_a, false, &["agents", "--json"])?;
    ensure!(listed.status.success(), "agents in A: {}", text(&listed));
    let daemon = daemon_environment(dir)?;
    ensure!(
        !daemon.contains("ANTHROPIC_API_KEY"),
        "the daemon's environment has a key: the case would prove nothing"
    );
    // B asks, with the key and the endpoint in its own environment only.
    let created = command(&project_b, true, &["new", "--name", "rp1", "say hello"])?;
    ensure!(created.status.success(), "new in B: {}", text(&created));
    let said = String::from_utf8_lossy(&created.stderr);
    ensure!(
        said.contains("approval read-only, key from your environment")
            && said.contains(&project_b.display().to_string()),
        "new in B did not say B's settings and directory: {said}"
    );
    let done = command(&project_b, false, &["wait", "rp1", "--until", "done"])?;
    ensure!(
        done.status.code() == Some(0),
        "rp1 not done: {}",
        text(&done)
    );
    let entry = agent(&command(&project_b, false, &["agents", "--json"])?, "rp1")?;
    ensure!(entry["state"] == "done", "rp1: {entry}");
    ensure!(entry["approval"] == "read-only", "rp1's approval: {entry}");
    ensure!(entry["provider"] == "anthropic", "rp1's provider: {entry}");
    ensure!(entry["model"] == "model-of-b", "rp1's model: {entry}");
    ensure!(
        entry["cwd"] == project_b.display().to_string(),
        "rp1 ran outside B: {entry}"
    );
    let log = entry["log"].as_str().context("rp1 has no log")?.to_owned();
    let recorded = std::fs::read_to_string(&log)?;
    ensure!(
        recorded.contains("read-only"),
        "rp1's log does not record read-only denying the mock's shell call"
    );
    // B's file edited: the next `new` takes it, the daemon still the same process.
    std::fs::write(
        project_b.join("panewise.toml"),
        "provider = \"anthropic\"\napproval = \"full-access\"\nmodel = \"model-of-b-2\"\n",
    )?;
    let created = command(&project_b, true, &["new", "--name", "rp2", "say hello"])?;
    ensure!(
        created.status.success(),
        "second new in B: {}",
        text(&created)
    );
    let done = command(&project_b, false, &["wait", "rp2", "--until", "done"])?;
    ensure!(
        done.status.code() == Some(0),
        "rp2 not done: {}",
        text(&done)
    );
    let entry = agent(&command(&project_b, false, &["agents", "--json"])?, "rp2")?;
    ensure!(
        entry["approval"] == "full-access" && entry["model"] == "model-of-b-2",
        "the edited panewise.toml did not apply to the next session: {entry}"
    );
    ensure!(
        daemon_environment(dir)? == daemon,
        "the daemon was restarted"
    );
    // Without the key in the asking command, the daemon's environment (none) is no help.
    let refused = command(&project_b, false, &["new", "--name", "rp3", "say hello"])?;
    ensure!(
        !refused.status.success()
            && String::from_utf8_lossy(&refused.stderr).contains("no API key"),
        "new without a key: {}",
        text(&refused)
    );
    // The key is nowhere the daemon writes.
    for sub in ["run", "data", "config", "home", "project-a", "project-b"] {
        let found = files_containing(&dir.join(sub), KEY.as_bytes())?;
        ensure!(found.is_empty(), "the key was written to {found:?}");
    }
    let stopped = command(&project_a, false, &["daemon", "stop"])?;
    ensure!(stopped.status.success(), "daemon stop: {}", text(&stopped));
    drop(mock);
    Ok(())
}

/// The `agents --json` line of session `name`.
fn agent(listed: &Output, name: &str) -> Result<Value> {
    ensure!(listed.status.success(), "agents: {}", text(listed));
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|entry| entry["name"] == name)
        .with_context(|| format!("agents does not list {name}"))
}

/// The environment of the case's daemon (`/proc/PID/environ`), which also tells it apart
/// from a restarted one by its pid.
fn daemon_environment(dir: &Path) -> Result<String> {
    let entry = format!("XDG_RUNTIME_DIR={}", dir.join("run").display());
    let (pid, _) = crate::e2e_support::processes_with_env(&entry)
        .into_iter()
        .find(|(_, name)| name == "panewise")
        .context("no daemon of the case runs")?;
    let environ = std::fs::read(format!("/proc/{pid}/environ"))?;
    Ok(format!("pid {pid}: {}", String::from_utf8_lossy(&environ)))
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Result<Vec<std::path::PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                let bytes = std::fs::read(entry.path()).unwrap_or_default();
                if bytes.windows(needle.len()).any(|window| window == needle) {
                    found.push(entry.path());
                }
            }
        }
    }
    Ok(found)
}
