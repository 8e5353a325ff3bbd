//! The readers: one module per format, each `detect(text) -> bool` and
//! `read(text) -> Result<Recording, EvalError>`, pure over the file's text. [`read`] detects
//! the format by content (never by file name) and dispatches.

use crate::error::EvalError;
use crate::recording::{Format, Recording};

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod panewise_log;
pub mod specstory;
pub mod swe_agent;
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

/// Every part of a file (stand-in until the readers split runs and segments).
pub fn read_all(text: &str) -> Result<Vec<Recording>, EvalError> {
    read(text).map(|recording| vec![recording])
}

/// Reads a recording of any supported format, then [`Recording::repair`]s it.
pub fn read(text: &str) -> Result<Recording, EvalError> {
    let format = detect(text).ok_or_else(|| EvalError::UnknownFormat(describe_unknown(text)))?;
    let mut recording = match format {
        Format::ClaudeCodeSession | Format::ClaudeStreamJson => claude::read(text, format)?,
        Format::CodexRollout => codex::read(text)?,
        Format::GeminiChat => gemini::read(text)?,
        Format::SpecStory => specstory::read(text)?,
        Format::SweAgentTraj | Format::MiniSweAgentTraj => swe_agent::read(text, format)?,
        Format::PanewiseLog => panewise_log::read(text)?,
        Format::WindowConversation => window_conversation::read(text)?,
    };
    recording.repair();
    if recording.calls.is_empty() {
        return Err(EvalError::Empty(format.as_str()));
    }
    Ok(recording)
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
