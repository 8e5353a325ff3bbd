//! The readers: one module per format, each `detect(text) -> bool` and
//! `read(text) -> Result<Recording, EvalError>` (those whose files can hold several runs or
//! compaction segments also a reading into parts), pure over the file's text. [`read_all`]
//! detects the format by content (never by file name), dispatches, and gives every part.

use crate::error::EvalError;
use crate::recording::{Format, Recording};

pub use time::parse_rfc3339_ms;

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod panewise_log;
pub mod specstory;
pub mod swe_agent;
mod time;
pub mod window_conversation;

/// The format of `text`, by content; `None` when it is none of them.
pub fn detect(text: &str) -> Option<Format> {
    // Order matters only where two readers could both claim a text; each detector looks for
    // fields only its format writes.
    if specstory::detect(text) {
        Some(Format::SpecStory)
    } else if let Some(format) = swe_agent::detect(text) {
        Some(format)
    } else if let Some(format) = claude::detect(text) {
        Some(format)
    } else if codex::detect(text) {
        Some(Format::CodexRollout)
    } else if gemini::detect(text) {
        Some(Format::GeminiChat)
    } else if panewise_log::detect(text) {
        Some(Format::PanewiseLog)
    } else if window_conversation::detect(text) {
        Some(Format::WindowConversation)
    } else {
        None
    }
}

/// Reads the first part of a recording of any supported format (see [`read_all`]).
pub fn read(text: &str) -> Result<Recording, EvalError> {
    let mut parts = read_all(text)?.into_iter();
    let format = detect(text).map_or("unknown", Format::as_str);
    parts.next().ok_or(EvalError::Empty(format))
}

/// Reads every part of a recording of any supported format: each run of a file that holds
/// several (a stream-json log of two `claude -p` runs), and each segment a compaction starts,
/// as its own [`Recording`], [`Recording::repair`]ed and labelled in [`Recording::part`] when
/// the file has more than one part. A part with no model call is left out, said in the notes
/// of the others; the file is an error only when no part has a call.
pub fn read_all(text: &str) -> Result<Vec<Recording>, EvalError> {
    let format = detect(text).ok_or_else(|| EvalError::UnknownFormat(describe_unknown(text)))?;
    let runs: Vec<Vec<Recording>> = match format {
        Format::ClaudeCodeSession | Format::ClaudeStreamJson => claude::read_runs(text, format)?,
        Format::CodexRollout => vec![codex::read_segments(text)?],
        Format::GeminiChat => vec![vec![gemini::read(text)?]],
        Format::SpecStory => specstory::read_runs(text)?,
        Format::SweAgentTraj | Format::MiniSweAgentTraj => {
            vec![vec![swe_agent::read(text, format)?]]
        }
        Format::PanewiseLog => vec![vec![panewise_log::read(text)?]],
        Format::WindowConversation => vec![vec![window_conversation::read(text)?]],
    };
    finish_parts(runs, format)
}

/// The label of segment `segment` (from 1) of run `run` (from 1), given how many of each
/// the file holds; `None` for a file of one part.
pub(crate) fn part_label(
    run: usize,
    runs: usize,
    segment: usize,
    segments: usize,
) -> Option<String> {
    match (runs > 1, segments > 1) {
        (true, true) => Some(format!("run {run}, segment {segment}")),
        (true, false) => Some(format!("run {run}")),
        (false, true) => Some(format!("segment {segment}")),
        (false, false) => None,
    }
}

/// Labels, repairs and filters the parts of a file, runs of segments in order.
fn finish_parts(runs: Vec<Vec<Recording>>, format: Format) -> Result<Vec<Recording>, EvalError> {
    let run_count = runs.len();
    let mut kept: Vec<Recording> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    let mut orphan_notes: Vec<String> = Vec::new();
    for (run_index, segments) in runs.into_iter().enumerate() {
        let segment_count = segments.len();
        for (segment_index, mut part) in segments.into_iter().enumerate() {
            part.part = part_label(run_index + 1, run_count, segment_index + 1, segment_count);
            part.repair();
            if part.calls.is_empty() {
                dropped.push(part.part.clone().unwrap_or_else(|| "a part".into()));
                orphan_notes.append(&mut part.notes);
            } else {
                kept.push(part);
            }
        }
    }
    if kept.is_empty() {
        return Err(EvalError::Empty(format.as_str()));
    }
    if let Some(first) = kept.first_mut() {
        // What the reader said about a part left out still describes the file.
        first.notes.append(&mut orphan_notes);
    }
    if !dropped.is_empty() {
        let note = format!(
            "{} part(s) of the file left out: no model call ({})",
            dropped.len(),
            dropped.join(", ")
        );
        for part in &mut kept {
            part.notes.push(note.clone());
        }
    }
    Ok(kept)
}

/// Ends a line-by-line reading: with no message read, a `BadRecording` naming what was looked
/// for in how many lines (`unit` says which lines) and how many were not JSON; otherwise the recording, each count of
/// skipped lines added to its notes.
pub(crate) fn finish_lines(
    mut rec: Recording,
    skipped: &std::collections::BTreeMap<&'static str, usize>,
    lines: usize,
    looked_for: &str,
    unit: &str,
) -> Result<Recording, EvalError> {
    if rec.messages.is_empty() {
        let not_json = skipped
            .get("line(s) not JSON skipped")
            .copied()
            .unwrap_or(0);
        return Err(EvalError::BadRecording {
            format: rec.format.as_str(),
            reason: format!("no {looked_for} in {lines} {unit} ({not_json} not JSON)"),
        });
    }
    for (what, count) in skipped {
        rec.notes.push(format!("{count} {what}"));
    }
    Ok(rec)
}

/// A short description of text no reader claimed, for the error.
fn describe_unknown(text: &str) -> String {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        "the file is empty".into()
    } else if trimmed.starts_with('{') || trimmed.starts_with('[') {
        "JSON of a shape no reader knows".into()
    } else {
        "neither JSON nor a SpecStory markdown export".into()
    }
}
