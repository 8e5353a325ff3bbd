//! `panewise replay LOG.jsonl`: fold a recorded session log, compare the fold with every
//! checkpoint the log recorded (the writer's own folded state, R91), and print the final state.
//!
//! `-` reads the log from standard input. Exit codes are the table in [`crate::exit`]: 1 when
//! a checkpoint differs from this build's fold, when a line is malformed (named by its number),
//! or when the file holds no log line at all. A cut-off last line and message kinds from a newer
//! version are skipped with a warning on stderr.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_pane_state::log::LogWarning;
use panewise_pane_state::{parse_log_bytes, State, TurnPhase};

/// Arguments of `panewise replay`.
#[derive(clap::Args)]
pub struct Args {
    /// The session log, one JSON object per line (`{"v":2,"ts":…,"msg":{…}}`); `-` for stdin.
    log: PathBuf,
    /// Print the full final state as JSON instead of a summary.
    #[arg(long)]
    json: bool,
}

/// Runs `panewise replay`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let name = args.log.display().to_string();
    let bytes = read_input(&args.log).with_context(|| format!("cannot read {name}"))?;
    let log = parse_log_bytes(&bytes).with_context(|| name.clone())?;
    for warning in &log.warnings {
        eprintln!("panewise replay: warning: {name}: {warning}");
    }
    let skipped_newer = log
        .warnings
        .iter()
        .any(|warning| matches!(warning, LogWarning::UnknownMessage { .. }));
    if log.entries.is_empty()
        && log.header.is_none()
        && log.checkpoints.is_empty()
        && !skipped_newer
    {
        anyhow::bail!("{name}: no session log line in it (is it a session log?)");
    }
    if log.entries.is_empty() {
        eprintln!("panewise replay: warning: {name}: the log holds no messages");
    }
    let state = match log.fold_checked() {
        Ok(state) => state,
        Err(mismatch) => {
            eprintln!(
                "panewise replay: {name}: line {}: this build folds a different state than the \
                 one recorded after {} messages",
                mismatch.line, mismatch.after
            );
            return Ok(ExitCode::from(crate::exit::DATA));
        }
    };
    let checked = match log.final_checkpoint() {
        Some(checkpoint) => format!(
            "matches the recorded state after {} messages",
            checkpoint.after
        ),
        None if log.checkpoints.is_empty() => "no checkpoint recorded".to_owned(),
        None => format!("{} checkpoint(s) matched", log.checkpoints.len()),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&state)?)?;
    } else {
        write!(out, "{}", summary(&state, log.entries.len(), &checked))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The bytes of `path`, or of standard input for `-`.
pub fn read_input(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().lock().read_to_end(&mut bytes)?;
        Ok(bytes)
    } else {
        std::fs::read(path)
    }
}

/// A human summary of the final state.
fn summary(state: &State, messages: usize, checked: &str) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("{label:<16}{value}\n"));
    line("agent", state.streaming.agent_id.clone());
    line("messages", messages.to_string());
    line("checkpoint", checked.to_owned());
    let phase = match &state.turn_phase {
        TurnPhase::Done { outcome, .. } => format!("done ({})", json_word(outcome)),
        TurnPhase::Disconnected { last_kind, .. } => {
            format!("disconnected (was {})", json_word(last_kind))
        }
        other => other.kind_name().to_owned(),
    };
    line("turn phase", phase);
    line(
        "stream",
        if state.is_subscribed() {
            "subscribed".into()
        } else {
            "unsubscribed".into()
        },
    );
    line("turns completed", state.turns_completed.to_string());
    if let Some(tool) = &state.current_tool {
        let arg = state.current_tool_arg.as_deref().unwrap_or("");
        line(
            "current tool",
            format!("{tool} {arg}").trim_end().to_owned(),
        );
    }
    let context = match state.plausible_reading() {
        Some(reading) => match reading.window {
            Some(window) => format!(
                "{} / {} tokens ({:.1}%)",
                reading.tokens,
                window,
                reading.tokens as f64 * 100.0 / window as f64
            ),
            None => format!("{} tokens (window unknown)", reading.tokens),
        },
        None => "no reading".into(),
    };
    line("context", context);
    line("compactions", state.compactions.to_string());
    if let Some(totals) = &state.session_totals {
        line(
            "totals",
            format!(
                "in {} / out {} tokens, cost {}",
                totals.input_tokens.unwrap_or(0),
                totals.output_tokens.unwrap_or(0),
                totals
                    .cost_usd
                    .map_or_else(|| "n/a".to_owned(), |c| format!("${c:.4}")),
            ),
        );
    }
    if let Some(failure) = &state.failure {
        line(
            "failure",
            format!(
                "{} (retryable: {}): {}",
                json_word(&failure.failure.kind),
                failure.failure.retryable,
                failure.failure.message
            ),
        );
    }
    line("pending", state.pending.len().to_string());
    line(
        "waiting on user",
        format!(
            "{} approvals, {} question sets",
            state.pending_approvals.len(),
            state.pending_questions.len()
        ),
    );
    if state.diagnostics.ignored > 0 {
        line("ignored msgs", state.diagnostics.ignored.to_string());
    }
    if state.should_exit {
        line("exit", "requested".into());
    }
    out
}

/// The serde name of a unit enum value, e.g. `completed` or `rate_limited`.
fn json_word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
