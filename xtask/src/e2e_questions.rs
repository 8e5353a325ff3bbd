//! The end-to-end cases of issue 43's question and `mcp serve` halves, on the pinned Claude
//! Code against the mock:
//! - `claude-ask-user-question`: the mock's `ask-user` makes Claude Code call
//!   `AskUserQuestion`; the daemon's session shows it as a question (not an approval), the
//!   dashboard in tmux answers it with `2`, and Claude Code's next request carries the answer
//!   (the mock quotes it: `ASK-USER-ANSWER: Your questions have been answered…blue`).
//! - `claude-drives-mcp-serve`: Claude Code, configured with `panewise mcp serve` as an MCP
//!   server (`--mcp-config`), follows the mock's `delegate`: starts a mock panewise agent
//!   (`mcp__panewise__start`), waits for it, reads its transcript, and says what it answered
//!   (`DELEGATE-READ`); the agent is an ordinary session of the daemon.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use crate::e2e_dashboard::{transcript_entries, StopDaemons};
use crate::e2e_support::{start_mock, text, Cli, Place};
use crate::e2e_terminal::Terminal;

/// The question case's name.
pub const ASK_NAME: &str = "claude-ask-user-question";

/// The delegation case's name.
pub const DELEGATE_NAME: &str = "claude-drives-mcp-serve";

/// `agents --json`'s entry of `name` in `place`.
fn agent(place: &Place, panewise: &Path, name: &str) -> Result<Value> {
    let listed = place.run(panewise, &["agents", "--json"])?;
    ensure!(listed.status.success(), "agents: {}", text(&listed));
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|entry| entry["name"] == name)
        .with_context(|| format!("no session {name}: {}", text(&listed)))
}

fn fresh(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// Claude Code's `AskUserQuestion`, answered from the dashboard.
pub fn ask_case(panewise: &Path, program: &Path, dir: &Path) -> Result<()> {
    fresh(dir)?;
    let mock = start_mock(panewise, "ask-user", dir)?;
    let place = Place::new(dir)?.with_cli(Cli::Claude, program, &mock.url)?;
    let _daemons = StopDaemons(vec![dir.join("run")]);
    let work = place.work.display().to_string();
    let started = place.run(
        panewise,
        &[
            "new",
            "--provider",
            "claude-code",
            "--cwd",
            &work,
            "--approval",
            "ask",
            "--name",
            "asker",
            "Make the button; ask me its colour.",
        ],
    )?;
    ensure!(started.status.success(), "new: {}", text(&started));
    let waited = place.run(
        panewise,
        &[
            "wait",
            "asker",
            "--until",
            "needs-input",
            "--timeout",
            "90s",
        ],
    )?;
    ensure!(waited.status.success(), "wait: {}", text(&waited));
    let entry = agent(&place, panewise, "asker")?;
    ensure!(
        entry["waiting_for"]["kind"] == "question"
            && entry["waiting_for"]["questions"][0]
                == "Which colour should the button be? [1] red [2] blue",
        "AskUserQuestion is not waiting as a question: {entry}"
    );
    let terminal = Terminal::start(&place.command(panewise, &["ui"]), &place.dir, ASK_NAME)?;
    terminal.wait_for("1-9 picks a choice · r replies")?;
    terminal.type_keys("2")?;
    let waited = place.run(
        panewise,
        &["wait", "asker", "--until", "idle", "--timeout", "90s"],
    )?;
    ensure!(waited.status.success(), "wait: {}", text(&waited));
    terminal.type_keys("q")?;
    let (code, screen) = terminal.wait_exit()?;
    ensure!(code == 0, "ui exited {code}:\n{screen}");
    let log = PathBuf::from(entry["log"].as_str().context("no log")?);
    let entries = transcript_entries(&log)?;
    ensure!(
        entries
            .iter()
            .any(|entry| entry["kind"] == "question_answered"
                && entry["answers"] == json!(["2"])
                && entry["client"] == "panewise ui"),
        "no answer by the dashboard in the log: {entries:?}"
    );
    let said = std::fs::read_to_string(&log)?;
    ensure!(
        said.lines().any(|line| line
            .contains("ASK-USER-ANSWER: Your questions have been answered")
            && line.contains("blue")),
        "Claude Code's next request did not carry the answer blue: see {}",
        log.display()
    );
    let stopped = place.run(panewise, &["stop", "asker"])?;
    ensure!(stopped.status.success(), "stop: {}", text(&stopped));
    drop(mock);
    Ok(())
}

/// Claude Code delegating to a mock panewise agent through `panewise mcp serve`.
pub fn delegate_case(panewise: &Path, program: &Path, dir: &Path) -> Result<()> {
    fresh(dir)?;
    let mock = start_mock(panewise, "delegate", dir)?;
    let mut place = Place::new(dir)?.with_cli(Cli::Claude, program, &mock.url)?;
    let _daemons = StopDaemons(vec![dir.join("run")]);
    // The server runs with the case's daemon directories, whatever Claude Code passes on.
    let server_env: serde_json::Map<String, Value> = place
        .env
        .iter()
        .filter(|(key, _)| key.starts_with("XDG_") || key == "HOME")
        .map(|(key, value)| (key.clone(), Value::String(value.clone())))
        .collect();
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"panewise": {
            "command": panewise.display().to_string(),
            "args": ["mcp", "serve", "--approval", "full-access"],
            "env": server_env,
        }}})
        .to_string(),
    )?;
    // Claude Code with the MCP configuration: a wrapper panewise starts as the CLI.
    let wrapper = dir.join("claude-with-mcp");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' --mcp-config '{}' \"$@\"\n",
            program.display(),
            config.display()
        ),
    )?;
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()?;
    for (key, value) in &mut place.env {
        if key == Cli::Claude.daemon_variable() {
            *value = wrapper.display().to_string();
        }
    }
    // Every MCP tool in the first request, not deferred behind Claude Code's tool search.
    place
        .env
        .push(("ENABLE_TOOL_SEARCH".to_owned(), "false".to_owned()));
    let work = place.work.display().to_string();
    let ran = place.run(
        panewise,
        &[
            "run",
            "--provider",
            "claude-code",
            "--cwd",
            &work,
            "--approval",
            "full-access",
            "Hand the hello task to another agent and tell me what it said.",
        ],
    )?;
    let said = text(&ran);
    ensure!(ran.status.success(), "run: {said}");
    ensure!(
        said.contains("DELEGATE-READ: the delegated agent said"),
        "Claude Code did not read the delegated agent's answer: {said}"
    );
    // The delegated agent was a daemon session: its log, beside the run's, holds its answer.
    // (The daemon `mcp serve` started ends with Claude Code's process group, so the log is
    // what is left to read.)
    let sessions = dir.join("data/panewise/sessions");
    let delegated = std::fs::read_dir(&sessions)?
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .any(|log| log.contains("The command printed `hello`. Done.") && log.contains("\"mock\""));
    ensure!(
        delegated,
        "no daemon session log of the delegated mock agent under {}",
        sessions.display()
    );
    drop(mock);
    Ok(())
}

/// Which of the two cases `filter` selects: the question case, the delegation case.
pub fn wanted(filter: Option<&str>) -> [bool; 2] {
    [ASK_NAME, DELEGATE_NAME].map(|name| filter.is_none_or(|filter| name.contains(filter)))
}

/// A case: run with the `panewise` binary, Claude Code's program, the case's directory.
type Case = fn(&Path, &Path, &Path) -> Result<()>;

/// Runs the cases `wanted` selects, with the Claude Code `programs` holds, under `target`.
pub fn run(
    panewise: &Path,
    target: &Path,
    programs: &[(Cli, PathBuf, String)],
    wanted: [bool; 2],
) -> Result<()> {
    let cases: [(&str, Case); 2] = [(ASK_NAME, ask_case), (DELEGATE_NAME, delegate_case)];
    for ((name, case), wanted) in cases.into_iter().zip(wanted) {
        if !wanted {
            continue;
        }
        let program = programs
            .iter()
            .find(|(cli, ..)| *cli == Cli::Claude)
            .map(|(_, program, _)| program.as_path())
            .context("Claude Code was not installed")?;
        case(panewise, program, &target.join("runs").join(name))
            .with_context(|| format!("e2e case {name}"))?;
        eprintln!("e2e: {name}: ok");
    }
    Ok(())
}
