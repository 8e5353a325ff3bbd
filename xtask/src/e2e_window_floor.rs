//! The end-to-end case of the window stage's floor (`own-loop-window-floor`, issue 31): the own
//! loop with `token-budget` at a threshold below what must stay (`thresholdTokens = 1`,
//! `keepRecentTurns = 1`) over the mock's `multi-round` scenario and the Anthropic format.
//! Before the floor, 49 of 50 visits each removed the previous round's call and result, the
//! model called its tool again, and the turn failed at the 50-call limit with 49 records.
//!
//! Now, through `panewise run`: the turn is done in four calls (three rounds and the answer),
//! the ledger holds exactly one visit record, which names the floor, its size, its parts and
//! the threshold, and the report says the stage stood down. Through the daemon (`panewise new`
//! in a project whose `panewise.toml` has the same `[window]`): `agents --json` carries the
//! stand-down (`window_stood_down`) and `agents` says it on the row.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::e2e_support::{start_mock, text, within};

/// The case's name (`cargo xtask e2e window-floor`).
pub const NAME: &str = "own-loop-window-floor";

/// How long any command may take.
const DEADLINE: Duration = Duration::from_secs(90);

/// The configuration of issue 31: a threshold below the system prompt and tools alone.
const WINDOW: &str = r#"{"strategy":"token-budget","thresholdTokens":1,"keepRecentTurns":1}"#;

/// Runs the case in `dir`.
pub fn run_case(panewise: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let project = dir.join("project");
    for sub in ["home", "run", "data", "config", "logs"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    std::fs::create_dir_all(project.join(".git"))?;
    let project = project.canonicalize()?;
    let mock = start_mock(panewise, "multi-round", dir)?;
    let command = |cwd: &Path, args: &[&str]| -> Result<Output> {
        let mut command = Command::new(panewise);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.join("home"))
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("NO_PROXY", "127.0.0.1")
            .env("ANTHROPIC_API_KEY", "sk-e2e-window-floor")
            .env("ANTHROPIC_BASE_URL", &mock.url)
            .current_dir(cwd)
            .args(args)
            .stdin(Stdio::null());
        within(command, DEADLINE)
    };

    // `panewise run`: the turn ends done, after four calls, with one record.
    let window = dir.join("tb.json");
    std::fs::write(&window, WINDOW)?;
    let log = dir.join("logs").join("s.jsonl");
    let ran = command(
        &project,
        &[
            "run",
            "--provider",
            "anthropic",
            "--approval",
            "full-access",
            "--window",
            &window.display().to_string(),
            "--log",
            &log.display().to_string(),
            "do it",
        ],
    )?;
    ensure!(ran.status.success(), "run: {}", text(&ran));
    let said = text(&ran);
    ensure!(
        said.contains("All three rounds printed their number"),
        "the model never saw its rounds' results: {said}"
    );
    ensure!(
        said.contains("token-budget stood down: floor ") && said.contains("> threshold 1 ("),
        "the report does not say the stage stood down on its floor: {said}"
    );
    let ledger = std::fs::read_to_string(dir.join("logs").join("s.jsonl.window.jsonl"))
        .context("the window ledger")?;
    let lines: Vec<Value> = ledger
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("a ledger line is not JSON")?;
    let of_type = |kind: &'static str| lines.iter().filter(move |line| line["type"] == kind);
    let calls = of_type("call").count();
    ensure!(calls == 4, "{calls} model calls, not 4: the loop is back");
    let visits: Vec<&Value> = of_type("visit").collect();
    ensure!(
        visits.len() == 1,
        "{} visit records, not one: {ledger}",
        visits.len()
    );
    let record = &visits[0]["record"];
    let floor = &record["floor"];
    let floor_tokens = floor["floorTokens"].as_u64().context("no floorTokens")?;
    ensure!(
        floor["thresholdTokens"] == 1 && floor_tokens > 1,
        "the record does not name the floor over the threshold: {record}"
    );
    ensure!(
        record["removedMessageCount"] == 0,
        "the stand-down removed something: {record}"
    );
    let parts = &floor["parts"];
    let summed: u64 = [
        "outsideWindowTokens",
        "systemTokens",
        "currentRequestTokens",
        "pinnedTokens",
        "pendingTokens",
        "keptTailTokens",
    ]
    .iter()
    .map(|part| parts[part].as_u64().unwrap_or(0))
    .sum();
    ensure!(
        summed == floor_tokens && parts["outsideWindowTokens"].as_u64() > Some(1_000),
        "the floor's parts do not add up, or the system prompt and tools are missing: {floor}"
    );
    let session_log = std::fs::read_to_string(&log)?;
    ensure!(
        session_log
            .matches("\"type\":\"window_stood_down\"")
            .count()
            == 1,
        "the session was not told of the stand-down exactly once"
    );

    // The daemon: the same window from the project's panewise.toml; agents shows the fact.
    std::fs::write(
        project.join("panewise.toml"),
        "provider = \"anthropic\"\napproval = \"full-access\"\n\n[window]\nstrategy = \"token-budget\"\nthresholdTokens = 1\nkeepRecentTurns = 1\n",
    )?;
    let created = command(&project, &["new", "--name", "floor", "do it"])?;
    ensure!(created.status.success(), "new: {}", text(&created));
    let done = command(&project, &["wait", "floor", "--until", "done"])?;
    ensure!(done.status.code() == Some(0), "not done: {}", text(&done));
    let listed = command(&project, &["agents", "--json"])?;
    ensure!(listed.status.success(), "agents --json: {}", text(&listed));
    let entry = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|entry| entry["name"] == "floor")
        .context("agents does not list the session")?;
    let stood_down = &entry["window_stood_down"];
    ensure!(
        stood_down["threshold_tokens"] == 1 && stood_down["floor_tokens"].as_u64() > Some(1),
        "agents --json does not carry the stand-down: {entry}"
    );
    let table = command(&project, &["agents"])?;
    ensure!(
        String::from_utf8_lossy(&table.stdout).contains("window stood down: floor "),
        "agents does not say the stand-down on the row: {}",
        text(&table)
    );
    let stopped = command(&project, &["daemon", "stop"])?;
    ensure!(stopped.status.success(), "daemon stop: {}", text(&stopped));
    drop(mock);
    Ok(())
}
