//! The end-to-end cases of restorable eviction (issue 31): a long session of panewise's own
//! loop against the built-in mock's `recall` scenario, under observation-masking that keeps
//! one tool result, so the window masks each earlier result and names it by span id in the
//! placeholder. The mock model reads that id from the placeholder, asks the `recall` tool for
//! it, and says whether the bytes it got back begin with exactly what the early round
//! printed (`RECALL-MATCH`). Checked through the binary: the answer, the archive beside the log
//! (mode 0600, the span whole, its id the one the ledger names), and `panewise replay`, which
//! shows the recall call, the returned bytes and the archived span.
//!
//! `own-loop-recall` runs `panewise run --mock-scenario recall`, then resumes the session and
//! checks the resumed session's archive holds the recorded spans; `daemon-recall` runs the same
//! session under the daemon (`panewise new --provider mock --mock-scenario recall`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::e2e_support::{text, within};

/// The case of `panewise run`.
pub const RUN_NAME: &str = "own-loop-recall";

/// The case of the daemon.
pub const DAEMON_NAME: &str = "daemon-recall";

/// How long any command may take.
const DEADLINE: Duration = Duration::from_secs(90);

/// The window both cases run under: every tool result but the newest is masked.
const WINDOW: &str = r#"{"strategy":"observation-masking","keepRecentObservations":1}"#;

/// What the first round printed (the mock's `recall_printed(1)`): `recall-round-1`, then the
/// numbers 1000 to 1150.
fn round_one_printed() -> String {
    let numbers: Vec<String> = (1000..=1150).map(|n: u32| n.to_string()).collect();
    format!("recall-round-1\n{}\n", numbers.join(" "))
}

/// A `panewise` command in the case's own environment (home, data, runtime, config).
fn command(panewise: &Path, dir: &Path, args: &[&str]) -> Result<Output> {
    let mut command = Command::new(panewise);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("NO_PROXY", "127.0.0.1")
        .current_dir(dir.join("project"))
        .args(args)
        .stdin(Stdio::null());
    within(command, DEADLINE)
}

/// A fresh directory for the case, with its project and the window file; the window file's
/// path.
fn prepare(dir: &Path) -> Result<std::path::PathBuf> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    for sub in ["home", "run", "data", "config", "project/.git"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let window = dir.join("window.json");
    std::fs::write(&window, WINDOW)?;
    Ok(window)
}

/// Runs `own-loop-recall` in `dir`.
pub fn run_case(panewise: &Path, dir: &Path) -> Result<()> {
    let window = prepare(dir)?;
    let log = dir.join("session.jsonl");
    let window_arg = window.display().to_string();
    let log_arg = log.display().to_string();
    let ran = command(
        panewise,
        dir,
        &[
            "run",
            "--mock-scenario",
            "recall",
            "--window",
            &window_arg,
            "--log",
            &log_arg,
            "Run the rounds, then check an early output.",
        ],
    )?;
    ensure!(ran.status.success(), "run: {}", text(&ran));
    ensure!(
        String::from_utf8_lossy(&ran.stdout).contains("RECALL-MATCH"),
        "the mock model did not get round 1's bytes back: {}",
        text(&ran)
    );
    let id = check_session(panewise, dir, &log)?;
    // A resumed session keeps the archive: its own holds the recorded spans.
    let resumed_log = dir.join("resumed.jsonl");
    let resumed_arg = resumed_log.display().to_string();
    let resumed = command(
        panewise,
        dir,
        &["run", "--resume", &log_arg, "--log", &resumed_arg, "Again."],
    )?;
    ensure!(resumed.status.success(), "resume: {}", text(&resumed));
    let archive = archive_of(&resumed_log)?;
    ensure!(
        archive.iter().any(|span| span["id"] == id.as_str()),
        "the resumed session's archive lacks {id}: {archive:?}"
    );
    Ok(())
}

/// Runs `daemon-recall` in `dir`.
pub fn run_daemon_case(panewise: &Path, dir: &Path) -> Result<()> {
    let window = prepare(dir)?;
    let window_arg = window.display().to_string();
    let created = command(
        panewise,
        dir,
        &[
            "new",
            "--provider",
            "mock",
            "--mock-scenario",
            "recall",
            "--window",
            &window_arg,
            "--approval",
            "full-access",
            "--name",
            "recaller",
            "Run the rounds, then check an early output.",
        ],
    )?;
    ensure!(created.status.success(), "new: {}", text(&created));
    let done = command(panewise, dir, &["wait", "recaller", "--until", "done"])?;
    let outcome = (|| {
        ensure!(done.status.code() == Some(0), "not done: {}", text(&done));
        let listed = command(panewise, dir, &["agents", "--json"])?;
        ensure!(listed.status.success(), "agents: {}", text(&listed));
        let entry = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|entry| entry["name"] == "recaller")
            .context("agents does not list the session")?;
        let log = entry["log"].as_str().context("the session has no log")?;
        check_session(panewise, dir, Path::new(log))?;
        Ok(())
    })();
    let stopped = command(panewise, dir, &["daemon", "stop"])?;
    outcome?;
    ensure!(stopped.status.success(), "daemon stop: {}", text(&stopped));
    Ok(())
}

/// The spans of the archive beside `log`, checked private.
fn archive_of(log: &Path) -> Result<Vec<Value>> {
    let mut path = log.as_os_str().to_owned();
    path.push(".archive.jsonl");
    let path = std::path::PathBuf::from(path);
    let mode = std::fs::metadata(&path)
        .with_context(|| format!("no archive at {}", path.display()))?
        .permissions()
        .mode();
    ensure!(
        mode & 0o777 == 0o600,
        "the archive's mode is {:o}",
        mode & 0o777
    );
    std::fs::read_to_string(&path)?
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).context("an archive line"))
        .collect()
}

/// What both cases check of a finished session logged at `log`: the archive holds round 1's
/// result whole, the ledger names its id, and replay shows the recall of that id and the
/// bytes it returned. The id.
fn check_session(panewise: &Path, dir: &Path, log: &Path) -> Result<String> {
    let printed = round_one_printed();
    let archive = archive_of(log)?;
    let span = archive
        .iter()
        .find(|span| {
            span["kind"] == "tool-result"
                && span["content"]
                    .as_str()
                    .is_some_and(|content| content.starts_with(&printed))
        })
        .with_context(|| format!("round 1's result is not archived whole: {archive:?}"))?;
    ensure!(span["removal"] == "masked", "{span}");
    let id = span["id"]
        .as_str()
        .context("a span without an id")?
        .to_owned();
    let mut ledger = log.as_os_str().to_owned();
    ledger.push(".window.jsonl");
    let ledger = std::fs::read_to_string(std::path::PathBuf::from(ledger))?;
    ensure!(
        ledger
            .lines()
            .any(|line| line.contains(r#""type":"archived""#) && line.contains(&id)),
        "the ledger names no archived {id}"
    );
    let log_arg = log.display().to_string();
    let replayed = command(panewise, dir, &["replay", &log_arg])?;
    ensure!(replayed.status.success(), "replay: {}", text(&replayed));
    let shown = String::from_utf8_lossy(&replayed.stdout);
    let recall_call = format!(r#"{{"id":"{id}"}}"#);
    let returned = format!("[recalled span {id} (");
    for (what, needle) in [
        ("the recall call", recall_call.as_str()),
        ("the returned header", returned.as_str()),
        ("the returned bytes", "recall-round-1"),
        (
            "the archived span",
            &format!("archived 1 span(s): {id} (masked"),
        ),
        ("the verdict", "RECALL-MATCH"),
    ] {
        ensure!(
            shown.contains(needle),
            "replay does not show {what} ({needle}):\n{shown}"
        );
    }
    // The returned bytes follow the header in the replay, in order.
    let header_at = shown.find(&returned).unwrap_or_default();
    ensure!(
        shown[header_at..].contains("1000 1001 1002"),
        "replay does not show the recalled numbers after the header"
    );
    Ok(id)
}
