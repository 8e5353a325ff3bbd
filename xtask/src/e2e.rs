//! `cargo xtask e2e`: `panewise run` against the published CLIs, installed from npm at the
//! versions `e2e/versions.json` pins (into `target/e2e/`), talking to `panewise mock-server` on
//! 127.0.0.1 with HTTP(S) proxies pointed at it, so nothing leaves the machine. Each scenario
//! gets a fresh HOME and working directory under `target/e2e/runs/`.
//!
//! Supervised live so far: Claude Code. Each case asserts the exit code, the file the agent was
//! or was not allowed to write, the replay of the session log against its closing checkpoint,
//! and token totals equal to the sum of the usage the mock reported, call by call.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

/// One scenario of the Claude Code run.
struct Case {
    name: &'static str,
    scenario: &'static str,
    approval: &'static str,
    /// The expected exit code of `panewise run`.
    exit: i32,
    /// Whether `hello.txt` must exist afterwards (`None`: not checked).
    file_written: Option<bool>,
    /// The prompts, one turn each, in one Claude Code process.
    prompts: &'static [&'static str],
}

const WRITE: &str = "Create a file hello.txt containing hello, using your tools.";

const CLAUDE_CASES: &[Case] = &[
    Case {
        name: "claude-write-allowed",
        scenario: "file-write",
        approval: "full-access",
        exit: 0,
        file_written: Some(true),
        prompts: &[WRITE],
    },
    Case {
        name: "claude-write-denied",
        scenario: "file-write",
        approval: "read-only",
        exit: 0,
        file_written: Some(false),
        prompts: &[WRITE],
    },
    Case {
        name: "claude-shell-tool",
        scenario: "tool-then-answer",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[WRITE],
    },
    Case {
        name: "claude-follow-up-prompt",
        scenario: "tool-then-answer",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[WRITE, "Now say done."],
    },
    Case {
        name: "claude-server-error",
        scenario: "server-error",
        approval: "ask",
        exit: 12,
        file_written: None,
        prompts: &[WRITE],
    },
    Case {
        name: "claude-rate-limited",
        scenario: "rate-limit",
        approval: "ask",
        exit: 10,
        file_written: None,
        prompts: &[WRITE],
    },
];

/// Runs every case; fails at the first that does not hold.
pub fn run(root: &Path) -> Result<()> {
    let target = root.join("target/e2e");
    let claude = install(root, &target, "@anthropic-ai/claude-code", "claude")?;
    super::cargo(&["build", "-p", "panewise-host"], &[])?;
    let panewise = root.join("target/debug/panewise");
    for case in CLAUDE_CASES {
        run_claude_case(
            &panewise,
            &claude,
            &target.join("runs").join(case.name),
            case,
        )
        .with_context(|| format!("e2e case {}", case.name))?;
        eprintln!("e2e: {}: ok", case.name);
    }
    eprintln!("e2e: {} cases passed", CLAUDE_CASES.len());
    Ok(())
}

/// Installs `package` at its pinned version under `target/e2e/` (once) and returns the path of
/// its `bin`.
fn install(root: &Path, target: &Path, package: &str, bin: &str) -> Result<PathBuf> {
    let versions: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("e2e/versions.json")).context("e2e/versions.json")?,
    )?;
    let version = versions[package]
        .as_str()
        .with_context(|| format!("e2e/versions.json names no version of {package}"))?;
    std::fs::create_dir_all(target)?;
    let installed = target
        .join("node_modules")
        .join(package)
        .join("package.json");
    let current = std::fs::read_to_string(&installed)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if current.as_deref() != Some(version) {
        eprintln!("e2e: npm install {package}@{version}");
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(target)
            .arg(format!("{package}@{version}"))
            .status()
            .context("cannot run npm (Node.js and npm are needed for the end-to-end run)")?;
        ensure!(status.success(), "npm install {package}@{version} failed");
    }
    Ok(target.join("node_modules/.bin").join(bin))
}

/// A mock server for one case, stopped when dropped.
struct Mock {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

fn start_mock(panewise: &Path, scenario: &str, dir: &Path) -> Result<Mock> {
    use std::io::BufRead;
    let log = dir.join("mock.jsonl");
    let mut child = Command::new(panewise)
        .args([
            "mock-server",
            "--port",
            "0",
            "--scenario",
            scenario,
            "--log",
        ])
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start panewise mock-server")?;
    let mut first = String::new();
    if let Some(stdout) = child.stdout.take() {
        std::io::BufReader::new(stdout).read_line(&mut first)?;
    }
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with("http://127.0.0.1:"))
        .map(str::to_owned)
        .with_context(|| format!("the mock server said {first:?}"))?;
    Ok(Mock { child, url, log })
}

fn run_claude_case(panewise: &Path, claude: &Path, dir: &Path, case: &Case) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let home = dir.join("home");
    let work = dir.join("work");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&work)?;
    let mock = start_mock(panewise, case.scenario, dir)?;
    let session = dir.join("session.jsonl");
    let output = Command::new(panewise)
        .arg("run")
        .args([
            "--provider",
            "claude-code",
            "--approval",
            case.approval,
            "--claude",
        ])
        .arg(claude)
        .arg("--cwd")
        .arg(&work)
        .arg("--log")
        .arg(&session)
        .args(case.prompts)
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", &mock.url)
        .env("ANTHROPIC_API_KEY", "sk-e2e-not-a-real-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1")
        .env("HTTP_PROXY", &mock.url)
        .env("HTTPS_PROXY", &mock.url)
        .env("NO_PROXY", "127.0.0.1")
        .stdin(Stdio::null())
        .output()
        .context("cannot run panewise run")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.code() == Some(case.exit),
        "exit {:?}, expected {}; stderr:\n{stderr}",
        output.status.code(),
        case.exit
    );
    if let Some(expected) = case.file_written {
        let written = work.join("hello.txt").exists();
        ensure!(
            written == expected,
            "hello.txt written: {written}, expected {expected}"
        );
    }
    // The log replays to the state the run recorded (its closing checkpoint).
    let replay = Command::new(panewise)
        .args(["replay", "--json"])
        .arg(&session)
        .output()?;
    ensure!(
        replay.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let state: Value = serde_json::from_slice(&replay.stdout)?;
    if case.exit == 0 {
        ensure!(
            state["turns_completed"].as_u64() == u64::try_from(case.prompts.len()).ok(),
            "turns completed: {}",
            state["turns_completed"]
        );
        check_totals(&state, &mock.log)?;
    } else {
        ensure!(!state["failure"].is_null(), "no failure recorded");
    }
    Ok(())
}

/// The session totals equal the sum of what the mock reported, call by call.
fn check_totals(state: &Value, mock_log: &Path) -> Result<()> {
    let mut sums = [0u64; 4];
    for line in std::fs::read_to_string(mock_log)?.lines() {
        let entry: Value = serde_json::from_str(line)?;
        let usage = &entry["usage"];
        if usage.is_null() {
            continue;
        }
        let count = |key: &str| usage[key].as_u64().unwrap_or(0);
        let cached = count("cached_input_tokens");
        let written = count("cache_write_tokens");
        sums[0] += count("input_tokens").saturating_sub(cached + written);
        sums[1] += cached;
        sums[2] += written;
        sums[3] += count("output_tokens");
    }
    let totals = &state["session_totals"];
    let got = [
        totals["input_tokens"].as_u64(),
        totals["cached_input_tokens"].as_u64(),
        totals["cache_write_input_tokens"].as_u64(),
        totals["output_tokens"].as_u64(),
    ];
    if got != sums.map(Some) {
        bail!("session totals {got:?} differ from the mock's usage {sums:?}");
    }
    Ok(())
}
