//! `panewise sessions`: the recorded sessions under the sessions directory, one line each: id,
//! status, provider, started, turns, tokens, cost, final phase, working directory and first
//! prompt, oldest first. `panewise replay ID` replays one.
//!
//! The status tells a session apart from its folded phase, which stops wherever the log
//! stops: **live** when a running session holds its log's lock, **ended** when the log closes
//! (its final checkpoint or its `session_ended` line), **crashed** when neither (the writer
//! was killed, `kill -9`, or the machine stopped).
//!
//! A file that is not a readable session log is skipped with one warning line on stderr,
//! whatever is wrong with it: a name that is not UTF-8, something that is not a regular file
//! (a named pipe is never opened), an empty file, a header whose start time is past the year
//! 9999, text that does not parse.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Context;
use panewise_host::journal::files::{is_locked_elsewhere, open_regular};
use panewise_pane_state::log::{SessionLog, TranscriptEntry};
use panewise_pane_state::{parse_log_bytes, Msg};
use serde::Serialize;

use crate::terminal_text::escape_controls;

/// 10000-01-01T00:00:00Z in milliseconds since the epoch: RFC 3339 has no later time.
const YEAR_10000_MS: u64 = 253_402_300_800_000;

/// How much of the first prompt the table shows.
const PROMPT_CHARS: usize = 40;

/// Arguments of `panewise sessions`.
#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object per session instead of a table.
    #[arg(long)]
    json: bool,
}

/// Whether a session still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A running session holds the log's lock.
    Live,
    /// The log closes: a final checkpoint or a `session_ended` line.
    Ended,
    /// Neither lock nor closing line: the writer stopped mid-session.
    Crashed,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Live => "live",
            Status::Ended => "ended",
            Status::Crashed => "crashed",
        }
    }
}

/// One listed session.
#[derive(Debug, Serialize)]
struct Listed {
    v: u64,
    id: String,
    path: String,
    status: Status,
    provider: String,
    agent_id: String,
    model: Option<String>,
    cwd: Option<String>,
    first_prompt: Option<String>,
    started: Option<String>,
    started_at_ms: u64,
    turns: u64,
    /// Input neither read from nor written to the prompt cache.
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// TOKENS, as `agents` counts them: every input token (cache reads and writes included)
    /// plus output.
    tokens: Option<u64>,
    cost_usd: Option<f64>,
    cost_source: Option<panewise_pane_state::CostSource>,
    phase: &'static str,
}

/// Runs `panewise sessions`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = panewise_host::session_log::sessions_dir()
        .context("neither XDG_DATA_HOME nor HOME is set")?;
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            // A window ledger and an archive live beside their session's log; neither is a session.
            .filter(|path| !panewise_host::agent_loop::is_beside_log(path))
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", dir.display())),
    };
    paths.sort();
    let mut listed = Vec::new();
    for path in paths {
        match read_session(&path) {
            Ok(session) => listed.push(session),
            Err(reason) => eprintln!(
                "panewise sessions: warning: {}: {reason}; skipped",
                escape_controls(&path.display().to_string(), "")
            ),
        }
    }
    listed.sort_by(|a, b| (a.started_at_ms, &a.id).cmp(&(b.started_at_ms, &b.id)));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if !args.json {
        writeln!(
            out,
            "{:<36} {:<7} {:<12} {:<20} {:>5} {:>8} {:>9} {:<11} {:<24} first prompt",
            "id", "status", "provider", "started", "turns", "tokens", "cost", "phase", "cwd"
        )?;
    }
    for session in &listed {
        if args.json {
            writeln!(out, "{}", serde_json::to_string(session)?)?;
        } else {
            let cost = panewise_api::view::cost_text(session.cost_usd, session.cost_source);
            let prompt = session
                .first_prompt
                .as_deref()
                .map(|prompt| shorten(&prompt.replace('\n', " "), PROMPT_CHARS))
                .unwrap_or_default();
            let row = format!(
                "{:<36} {:<7} {:<12} {:<20} {:>5} {:>8} {cost:>9} {:<11} {:<24} {prompt}",
                session.id,
                session.status.word(),
                session.provider,
                session.started.as_deref().unwrap_or("unknown"),
                session.turns,
                panewise_api::view::tokens_text(session.tokens),
                session.phase,
                session.cwd.as_deref().unwrap_or(""),
            );
            writeln!(out, "{}", escape_controls(&row, ""))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Reads one session log, or says why it is not one.
fn read_session(path: &Path) -> Result<Listed, String> {
    let name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or("the file name is not UTF-8")?;
    let path_text = path.to_str().ok_or("the path is not UTF-8")?;
    let file = open_regular(path).map_err(|error| error.to_string())?;
    let live =
        is_locked_elsewhere(&file).map_err(|error| format!("cannot probe its lock: {error}"))?;
    let bytes = panewise_host::regular_file::read_opened(
        file,
        path,
        panewise_host::regular_file::MAX_READ_BYTES,
    )
    .map_err(|error| match error {
        panewise_host::regular_file::FileError::Io { source, .. } => {
            format!("cannot read it: {source}")
        }
        other => other.to_string(),
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("empty: no session was recorded in it".to_owned());
    }
    let log =
        parse_log_bytes(&bytes).map_err(|error| format!("not a readable session log ({error})"))?;
    let header = log
        .header
        .clone()
        .ok_or("no header line: not a session panewise recorded")?;
    let started =
        match header.started_at_ms {
            0 => None,
            ms => Some(started_text(ms).ok_or_else(|| {
                format!("its header's start time ({ms} ms) is past the year 9999")
            })?),
        };
    let status = if live {
        Status::Live
    } else if closes(&log) {
        Status::Ended
    } else {
        Status::Crashed
    };
    let state = log.fold();
    let totals = state.session_totals.clone().unwrap_or_default();
    Ok(Listed {
        v: crate::json::JSON_SCHEMA_VERSION,
        id: name.to_owned(),
        path: path_text.to_owned(),
        status,
        provider: panewise_host::launch::provider_of(&header),
        agent_id: header.agent_id.clone(),
        model: panewise_api::view::model_of(&state, header.model.as_deref()),
        cwd: header.cwd.clone(),
        first_prompt: first_prompt(&log),
        started,
        started_at_ms: header.started_at_ms,
        turns: state.turns_completed,
        input_tokens: totals.input_tokens,
        output_tokens: totals.output_tokens,
        tokens: panewise_api::view::total_tokens(&totals),
        cost_usd: totals.cost_usd,
        cost_source: totals.cost_source,
        phase: state.turn_phase.kind_name(),
    })
}

/// Whether the log's writer closed it: a checkpoint covering every message, or the
/// transcript's `session_ended` line.
fn closes(log: &SessionLog) -> bool {
    log.final_checkpoint().is_some()
        || log
            .transcript
            .iter()
            .any(|line| matches!(line.entry, TranscriptEntry::SessionEnded { .. }))
}

/// The first prompt: the transcript's, else (a log written before schema v3) the first one
/// the reducer was given.
fn first_prompt(log: &SessionLog) -> Option<String> {
    log.transcript
        .iter()
        .find_map(|line| match &line.entry {
            TranscriptEntry::Prompt { text } => Some(text.clone()),
            _ => None,
        })
        .or_else(|| {
            log.entries.iter().find_map(|entry| match &entry.msg {
                Msg::PromptSubmitted { text } => Some(text.clone()),
                Msg::TurnStart {
                    content: Some(text),
                    ..
                } => Some(text.clone()),
                _ => None,
            })
        })
}

/// An RFC 3339 time (to the second) for `ms` since the epoch; `None` past the year 9999,
/// which RFC 3339 cannot write.
pub fn started_text(ms: u64) -> Option<String> {
    if ms >= YEAR_10000_MS {
        return None;
    }
    let at = UNIX_EPOCH.checked_add(Duration::from_millis(ms))?;
    Some(humantime::format_rfc3339_seconds(at).to_string())
}

/// At most `chars` characters of `text`, with `…` when cut.
fn shorten(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_past_9999_have_no_text_and_never_panic() {
        assert_eq!(
            started_text(1_700_000_000_000).as_deref(),
            Some("2023-11-14T22:13:20Z")
        );
        assert!(started_text(YEAR_10000_MS - 1).is_some());
        for ms in [YEAR_10000_MS, YEAR_10000_MS + 1, u64::MAX] {
            assert_eq!(started_text(ms), None, "{ms}");
        }
    }

    #[test]
    fn a_long_prompt_is_shortened_at_a_character() {
        assert_eq!(shorten("héllo", 3), "hél…");
        assert_eq!(shorten("hi", 3), "hi");
    }
}
