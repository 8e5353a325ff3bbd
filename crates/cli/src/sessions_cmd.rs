//! `panewise sessions`: the recorded sessions under the sessions directory, one line each: id,
//! provider, started, turns, tokens, cost, final phase. `panewise replay ID` replays one.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Context;
use panewise_pane_state::parse_log_bytes;

/// Arguments of `panewise sessions`.
#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object per session instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `panewise sessions`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = panewise_host::session_log::sessions_dir()
        .context("neither XDG_DATA_HOME nor HOME is set")?;
    let mut paths: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            // A window ledger lives beside its session's log; it is not a session.
            .filter(|path| !panewise_host::agent_loop::ledger::is_ledger(path))
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", dir.display())),
    };
    paths.sort();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if !args.json {
        writeln!(
            out,
            "{:<15} {:<12} {:<20} {:>5} {:>10} {:>8} {:>10} phase",
            "id", "provider", "started", "turns", "in", "out", "cost"
        )?;
    }
    for path in paths {
        let id = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(log) = parse_log_bytes(&bytes) else {
            eprintln!(
                "panewise sessions: warning: {}: not a readable session log",
                path.display()
            );
            continue;
        };
        let state = log.fold();
        let provider = log
            .header
            .as_ref()
            .map(|h| h.agent_id.clone())
            .unwrap_or_default();
        let started = log.header.as_ref().map_or(0, |h| h.started_at_ms);
        let started =
            humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(started));
        let totals = state.session_totals.clone().unwrap_or_default();
        let cost = match (totals.cost_usd, totals.cost_source) {
            (Some(cost), _) => format!("${cost:.4}"),
            (None, _) => "unknown".to_owned(),
        };
        let phase = state.turn_phase.kind_name();
        if args.json {
            let line = serde_json::json!({
                "id": id, "path": path, "provider": provider, "started": started.to_string(),
                "turns": state.turns_completed, "input_tokens": totals.input_tokens,
                "output_tokens": totals.output_tokens, "cost_usd": totals.cost_usd,
                "cost_source": totals.cost_source, "phase": phase,
            });
            writeln!(out, "{line}")?;
        } else {
            writeln!(
                out,
                "{id:<15} {provider:<12} {started:<20} {:>5} {:>10} {:>8} {cost:>10} {phase}",
                state.turns_completed,
                totals.input_tokens.unwrap_or(0),
                totals.output_tokens.unwrap_or(0),
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
