//! A transcript entry as the peek and the attached view show it: a short label, the text
//! (sanitised by the view), a colour.

use panewise_pane_state::log::{Actor, ToolCallStatus, TranscriptEntry};
use ratatui_core::style::Color;

/// Who answered, in a word.
fn actor(by: &Actor) -> String {
    match by {
        Actor::Policy { mode } => format!("policy {mode}"),
        Actor::Person => "you".to_owned(),
        Actor::Api { client } => client.clone().unwrap_or_else(|| "a client".to_owned()),
        Actor::Session => "the session".to_owned(),
        Actor::Agent => "the agent".to_owned(),
    }
}

/// The lines of one entry: label, text, colour.
pub fn entry_lines(entry: &TranscriptEntry) -> Vec<(&'static str, String, Color)> {
    let line = |label, text: String, color| vec![(label, text, color)];
    match entry {
        TranscriptEntry::Prompt { text } => line("prompt", text.clone(), Color::Cyan),
        TranscriptEntry::Text { text } => line("agent", text.clone(), Color::White),
        TranscriptEntry::Thinking { text } => line("thinking", text.clone(), Color::DarkGray),
        TranscriptEntry::ToolCall { name, arg, .. } => line(
            "tool",
            match arg {
                Some(arg) => format!("{name} {arg}"),
                None => name.clone(),
            },
            Color::Magenta,
        ),
        TranscriptEntry::ToolOutput {
            status,
            exit_code,
            output,
            ..
        } => {
            let status = match status {
                ToolCallStatus::Success => "ok",
                ToolCallStatus::Error => "error",
                ToolCallStatus::Declined => "declined",
            };
            let code = exit_code
                .map(|code| format!(" (exit {code})"))
                .unwrap_or_default();
            let body = output.as_deref().unwrap_or("").trim_end();
            let text = if body.is_empty() {
                format!("{status}{code}")
            } else {
                format!("{status}{code}: {body}")
            };
            line("output", text, Color::DarkGray)
        }
        TranscriptEntry::ApprovalRequested { tool, summary, .. } => line(
            "asks",
            format!("approve {tool} {}", summary.as_deref().unwrap_or("")),
            Color::Yellow,
        ),
        TranscriptEntry::ApprovalAnswered {
            approved,
            for_session,
            by,
            reason,
            ..
        } => {
            let verdict = match (approved, for_session) {
                (true, true) => "allowed for the session",
                (true, false) => "allowed",
                (false, _) => "denied",
            };
            let reason = reason
                .as_ref()
                .map(|why| format!(": {why}"))
                .unwrap_or_default();
            line(
                "answer",
                format!("{verdict} by {}{reason}", actor(by)),
                Color::Yellow,
            )
        }
        TranscriptEntry::ApprovalWithdrawn { .. } => line(
            "answer",
            "the request was withdrawn".to_owned(),
            Color::DarkGray,
        ),
        TranscriptEntry::Question { questions, .. } => {
            line("asks", questions.join("\n"), Color::Yellow)
        }
        TranscriptEntry::QuestionAnswered { answers, by, .. } => line(
            "answer",
            format!("{} (by {})", answers.join("; "), actor(by)),
            Color::Yellow,
        ),
        TranscriptEntry::Failure { failure } => {
            line("failure", failure.message.clone(), Color::Red)
        }
        TranscriptEntry::Retry {
            attempt, reason, ..
        } => line(
            "retry",
            format!(
                "attempt {}{}",
                attempt.map_or_else(|| "?".to_owned(), |n| n.to_string()),
                reason
                    .as_ref()
                    .map(|why| format!(": {why}"))
                    .unwrap_or_default()
            ),
            Color::Red,
        ),
        TranscriptEntry::History { role, text } => {
            line("history", format!("{role}: {text}"), Color::DarkGray)
        }
        TranscriptEntry::Interrupt { by } => {
            line("interrupt", format!("by {}", actor(by)), Color::Red)
        }
        TranscriptEntry::SessionEnded { error } => line(
            "ended",
            error
                .clone()
                .unwrap_or_else(|| "the session ended".to_owned()),
            Color::DarkGray,
        ),
    }
}
