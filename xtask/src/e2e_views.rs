//! Issue 42 against the published CLIs: one session of Claude Code, Codex (`app-server`) and
//! Gemini CLI (`--acp`), run by the daemon, is named alike by `replay`, `agents --json`,
//! `sessions --json` ([`check`], from the daemon cases) and the dashboard in tmux
//! ([`check_dashboard`], from the dashboard cases) — the provider as the person named it, the
//! same model, the same cost with the same source. (`crates/cli/tests/cli/views_agree.rs`
//! holds the own loop to the same words.)

use std::process::Output;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::e2e_support::{text, Cli};

/// One view's words for the session.
#[derive(Debug, PartialEq)]
struct Words {
    provider: String,
    model: String,
    cost: String,
}

/// What a view shows for "nothing".
const NONE: &str = "(none)";

/// The cost as `agents` and `sessions` word it: `$X` reported, `~$X` estimated, none shown.
fn json_cost(row: &Value) -> String {
    match (row["cost_usd"].as_f64(), row["cost_source"].as_str()) {
        (Some(cost), Some("estimated")) => format!("~${cost:.4}"),
        (Some(cost), _) => format!("${cost:.4}"),
        (None, _) => NONE.to_owned(),
    }
}

fn json_words(row: &Value) -> Words {
    Words {
        provider: row["provider"].as_str().unwrap_or(NONE).to_owned(),
        model: row["model"].as_str().unwrap_or(NONE).to_owned(),
        cost: json_cost(row),
    }
}

/// `replay`'s words: its `session` line (`PROVIDER[, model MODEL][, channel STREAM]`) and the
/// first dollar figure of its `calls` (or `totals`) line.
fn replay_words(replayed: &str) -> Words {
    let value = |label: &str| {
        replayed
            .lines()
            .find_map(|line| line.strip_prefix(label))
            .map(|rest| rest.trim().to_owned())
    };
    let session = value("session").unwrap_or_default();
    let mut parts = session.split(", ");
    let provider = parts.next().unwrap_or_default().to_owned();
    let model = parts
        .find_map(|part| part.strip_prefix("model "))
        .unwrap_or(NONE)
        .to_owned();
    let cost = value("calls")
        .or_else(|| value("totals"))
        .and_then(|line| {
            line.split_whitespace()
                .find(|word| word.trim_start_matches('~').starts_with('$'))
                .map(|word| word.trim_end_matches([',', ';', ')']).to_owned())
        })
        .unwrap_or_else(|| NONE.to_owned());
    Words {
        provider,
        model,
        cost,
    }
}

/// The row of `id` in a `--json` listing.
fn row_of(output: &Output, id: &str) -> Result<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|row| row["id"] == id)
        .with_context(|| format!("no row for {id}: {}", text(output)))
}

/// Checks that the three views of session `id` (log `log`) say the same, and name `cli`.
pub fn check(run: &dyn Fn(&[&str]) -> Result<Output>, cli: Cli, id: &str, log: &str) -> Result<()> {
    let replayed = run(&["replay", log])?;
    ensure!(replayed.status.success(), "replay: {}", text(&replayed));
    let agents = run(&["agents", "--json"])?;
    ensure!(agents.status.success(), "agents: {}", text(&agents));
    let sessions = run(&["sessions", "--json"])?;
    ensure!(sessions.status.success(), "sessions: {}", text(&sessions));
    let views = [
        (
            "replay",
            replay_words(&String::from_utf8_lossy(&replayed.stdout)),
        ),
        ("agents", json_words(&row_of(&agents, id)?)),
        ("sessions", json_words(&row_of(&sessions, id)?)),
    ];
    let (_, truth) = &views[1];
    ensure!(
        truth.provider == cli.provider(),
        "agents names {} as {:?}",
        cli.provider(),
        truth.provider
    );
    for (view, words) in &views {
        ensure!(
            words == truth,
            "{view} says {words:?} where agents says {truth:?}"
        );
    }
    Ok(())
}

/// Checks that the dashboard's `screen` names session `name` as `agents --json`'s `entry`
/// does: the peek's title `NAME · PROVIDER · STATE · MODEL` and the row's cost column.
pub fn check_dashboard(screen: &str, name: &str, entry: &Value) -> Result<()> {
    let words = json_words(entry);
    let state = entry["state"].as_str().unwrap_or_default();
    let mut title = format!("{name} · {} · {state}", words.provider);
    if words.model != NONE {
        title.push_str(&format!(" · {}", words.model));
    }
    ensure!(
        screen.contains(&format!("{title} ")),
        "the dashboard's title is not {title:?} (agents: {words:?}):\n{screen}"
    );
    let row = crate::e2e_support::list_row(screen, name)
        .with_context(|| format!("no row of {name}:\n{screen}"))?;
    let columns: Vec<&str> = row.split_whitespace().collect();
    let cost = columns
        .len()
        .checked_sub(2)
        .and_then(|at| columns.get(at))
        .copied()
        .unwrap_or_default();
    let shown = if cost == "-" { NONE } else { cost };
    ensure!(
        shown == words.cost,
        "the dashboard's row shows cost {cost:?} where agents says {:?}: {row}",
        words.cost
    );
    Ok(())
}
