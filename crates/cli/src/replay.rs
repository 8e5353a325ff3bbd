//! `panewise replay LOG.jsonl`: print the conversation a session log recorded (its transcript
//! lines: prompts, answers, thinking, tool calls with their input and output, approvals and who
//! answered them, failures, retries, interrupts), after folding the log and comparing the fold
//! with every checkpoint the log recorded (the writer's own folded state, R91). `--state`
//! prints the final pane state instead; `--json` gives both, one versioned object per line.
//! Text from the session is shown with its control characters escaped, never interpreted.
//!
//! `-` reads the log from standard input. Exit codes are the table in [`crate::exit`]: 1 when
//! a checkpoint differs from this build's fold, when a line is malformed (named by its number),
//! or when the file holds no log line at all. A cut-off last line and message kinds from a newer
//! version are skipped with a warning on stderr.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_pane_state::log::{LogHeader, LogWarning, TranscriptLine};
use panewise_pane_state::{step_into, CheckpointMismatch, LogLine, LogReader, State, TurnPhase};

pub(crate) mod conversation;
pub(crate) mod usage;

use conversation::conversation;
use usage::{CallCollector, LoggedCall};

use crate::json::JSON_SCHEMA_VERSION;
use crate::terminal_text::escape_controls;

/// Arguments of `panewise replay`.
#[derive(clap::Args)]
pub struct Args {
    /// The session log, one JSON object per line (`{"v":2,"ts":…,"msg":{…}}`), a recorded
    /// session's id (see `panewise sessions`), or `-` for stdin.
    log: PathBuf,
    /// Print the final pane state (phase, tools, context, totals, failure) instead of the
    /// conversation.
    #[arg(long)]
    state: bool,
    /// Print one JSON object per line, each with `"v"`: the transcript lines, then the final
    /// state with the checkpoint check (docs/JSON.md).
    #[arg(long)]
    json: bool,
}

/// Runs `panewise replay`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let log_path = crate::input::session(&args.log)?;
    let name = log_path.display().to_string();
    let input = crate::input::open_log(&log_path).with_context(|| format!("cannot read {name}"))?;
    let folded = match fold_stream(BufReader::new(input), &name)? {
        Ok(folded) => folded,
        Err(mismatch) => {
            eprintln!(
                "panewise replay: {name}: line {}: this build folds a different state than the \
                 one recorded after {} messages",
                mismatch.line, mismatch.after
            );
            return Ok(ExitCode::from(crate::exit::DATA));
        }
    };
    for warning in &folded.warnings {
        eprintln!("panewise replay: warning: {name}: {warning}");
    }
    let skipped_newer = folded
        .warnings
        .iter()
        .any(|warning| matches!(warning, LogWarning::UnknownMessage { .. }));
    if !folded.any_line && !skipped_newer {
        if folded.warnings.is_empty() && !folded.any_content {
            return Err(crate::exit::empty_input(&name));
        }
        anyhow::bail!("{name}: no session log line in it (is it a session log?)");
    }
    if folded.messages == 0 {
        eprintln!("panewise replay: warning: {name}: the log holds no messages");
    }
    let checked = match (folded.last_checkpoint, folded.checkpoints) {
        (Some(after), _) if after == folded.messages => {
            format!("matches the recorded state after {after} messages")
        }
        (_, 0) => "no checkpoint recorded".to_owned(),
        (_, count) => format!("{count} checkpoint(s) matched"),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        for line in &folded.transcript {
            let json = serde_json::json!({
                "v": JSON_SCHEMA_VERSION, "type": "transcript", "ts": line.ts, "entry": &line.entry,
            });
            writeln!(out, "{json}")?;
        }
        let json = serde_json::json!({
            "v": JSON_SCHEMA_VERSION, "type": "replayed", "header": &folded.header,
            "messages": folded.messages, "checkpoints": folded.checkpoints,
            "checked_after": folded.last_checkpoint, "state": &folded.state,
        });
        writeln!(out, "{json}")?;
    } else if args.state {
        write!(out, "{}", summary(&folded.state, folded.messages, &checked))?;
        write!(out, "{}", window_summary(&log_path))?;
    } else {
        write!(
            out,
            "{}",
            conversation(
                folded.header.as_ref(),
                &folded.state,
                &folded.transcript,
                &folded.calls,
                &checked
            )
        )?;
        write!(out, "{}", window_summary(&log_path))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The session's window ledger, when one lies beside the log: a line per visit of the window
/// stage (strategy, what left, refusals, pins, the summarizer's calls).
fn window_summary(log_path: &std::path::Path) -> String {
    use panewise_host::agent_loop::ledger::ledger_path;
    if log_path.as_os_str() == "-" {
        return String::new();
    }
    let path = ledger_path(log_path);
    let Ok(ledger) = panewise_host::agent_loop::ledger::read(&path) else {
        return String::new();
    };
    let lines = ledger.printed_lines();
    let visits = ledger.visit_lines().len();
    let calls = ledger.call_count();
    let mut out = format!(
        "{:<16}{} visit(s), {} engaged{} ({})\n",
        "window",
        visits,
        ledger.records().count(),
        match calls {
            0 => String::new(),
            calls => format!(", {calls} call(s)"),
        },
        path.display()
    );
    for line in lines {
        // A call's line names the provider's model: its text is escaped like the session's.
        out.push_str(&format!("  {}\n", escape_controls(&line, "  ")));
    }
    if ledger.skipped > 0 {
        out.push_str(&format!(
            "  ({} line(s) of the ledger did not parse)\n",
            ledger.skipped
        ));
    }
    out
}

/// What folding a log as it was read gave.
struct Folded {
    state: State,
    messages: usize,
    checkpoints: usize,
    /// `after` of the last checkpoint compared.
    last_checkpoint: Option<usize>,
    warnings: Vec<LogWarning>,
    /// Whether any line was a log line (header, message, checkpoint or skipped message).
    any_line: bool,
    /// Whether any line was not blank.
    any_content: bool,
    /// The header, when the log has one.
    header: Option<LogHeader>,
    /// The conversation, in order.
    transcript: Vec<TranscriptLine>,
    /// The model calls, in order.
    calls: Vec<LoggedCall>,
}

/// Folds a log line by line as it is read: memory holds one line and the state. Each
/// comparable checkpoint is compared with the fold when it is reached.
fn fold_stream(
    mut input: impl BufRead,
    name: &str,
) -> anyhow::Result<Result<Folded, CheckpointMismatch>> {
    let mut reader = LogReader::default();
    // A log without a header shows an anonymous pane, as `SessionLog::initial_state` does.
    let mut state = State::new("replay");
    let mut started = false;
    let mut folded = Folded {
        state: State::new(""),
        messages: 0,
        checkpoints: 0,
        last_checkpoint: None,
        warnings: Vec::new(),
        any_line: false,
        any_content: false,
        header: None,
        transcript: Vec::new(),
        calls: Vec::new(),
    };
    let mut calls = CallCollector::default();
    let mut commands = Vec::new();
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        number += 1;
        // Capped: a log of one endless line (a file of zeros) is an error, not the memory.
        let read = panewise_host::regular_file::read_line_capped(
            &mut input,
            &mut line,
            panewise_host::regular_file::MAX_LINE_BYTES,
            number,
        )
        .with_context(|| format!("cannot read {name}"))?;
        if read == 0 {
            break;
        }
        let cut_off = !line.ends_with(b"\n");
        let raw = line.strip_suffix(b"\n").unwrap_or(&line);
        let item = reader
            .read_line(raw, cut_off)
            .with_context(|| name.to_owned())?;
        if !matches!(
            item,
            LogLine::Blank | LogLine::Warning(LogWarning::TruncatedLastLine { .. })
        ) {
            folded.any_line = true;
        }
        if !started && !matches!(item, LogLine::Blank) {
            started = true;
            if let LogLine::Header(header) = item {
                state = State::new(&header.agent_id);
                state.now_ms = header.started_at_ms;
                folded.header = Some(header);
                continue;
            }
        }
        match item {
            LogLine::Blank | LogLine::Header(_) => {}
            LogLine::Entry(entry) => {
                commands.clear();
                calls.push(folded.transcript.len(), &entry.msg);
                state = step_into(state, entry.ts, entry.msg, &mut commands);
                folded.messages += 1;
            }
            LogLine::Checkpoint(checkpoint) => {
                folded.checkpoints += 1;
                if checkpoint.is_comparable() {
                    if state != checkpoint.state {
                        return Ok(Err(CheckpointMismatch {
                            line: checkpoint.line,
                            after: checkpoint.after,
                            recorded: Box::new(checkpoint.state),
                            folded: Box::new(state),
                        }));
                    }
                    folded.last_checkpoint = Some(checkpoint.after);
                }
            }
            LogLine::Warning(warning) => folded.warnings.push(warning),
            // Notes say how to continue the session (`run --resume`); they fold nothing.
            LogLine::Note(_) => {}
            // The conversation folds nothing either; it is what the default view prints.
            LogLine::Transcript(line) => folded.transcript.push(line),
        }
    }
    folded.state = state;
    folded.calls = calls.finish();
    Ok(Ok(folded))
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
