//! `panewise replay LOG.jsonl`: fold a recorded session log twice, check that both folds agree,
//! and print the final state (R91).
//!
//! Exit codes: 0 when the folds agree, 1 when they differ (a determinism failure), 2 when the
//! log cannot be read (a malformed line is named by its number). A cut-off last line and
//! message kinds from a newer version are skipped with a warning on stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_pane_state::{parse_log_bytes, State, TurnPhase};

/// Arguments of `panewise replay`.
#[derive(clap::Args)]
pub struct Args {
    /// The session log: one JSON object per line (`{"v":1,"ts":…,"msg":{…}}`).
    log: PathBuf,
    /// Print the full final state as JSON instead of a summary.
    #[arg(long)]
    json: bool,
}

/// Runs `panewise replay`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let bytes =
        std::fs::read(&args.log).with_context(|| format!("cannot read {}", args.log.display()))?;
    let log = parse_log_bytes(&bytes).with_context(|| format!("{}", args.log.display()))?;
    for warning in &log.warnings {
        eprintln!("panewise: warning: {}: {warning}", args.log.display());
    }
    if log.entries.is_empty() {
        eprintln!(
            "panewise: warning: {}: the log holds no messages; the state is a fresh pane",
            args.log.display()
        );
    }
    let first = log.fold();
    let second = log.fold();
    if first != second {
        eprintln!(
            "panewise: determinism: FAIL: folding {} twice gave different states",
            args.log.display()
        );
        return Ok(ExitCode::from(1));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&first)?);
    } else {
        print!("{}", summary(&first, log.entries.len()));
    }
    Ok(ExitCode::SUCCESS)
}

/// A human summary of the final state.
fn summary(state: &State, messages: usize) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("{label:<16}{value}\n"));
    line("agent", state.streaming.agent_id.clone());
    line("messages", messages.to_string());
    line("determinism", "ok (folded twice, states equal)".into());
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
