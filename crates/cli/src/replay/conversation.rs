//! The conversation a session log recorded, as `panewise replay` prints it: one labelled
//! block per transcript line, every piece of session text with its control characters
//! escaped (`crate::terminal_text`).

use panewise_pane_state::log::{Actor, LogHeader, ToolCallStatus, TranscriptEntry, TranscriptLine};
use panewise_providers::PriceTable;
use serde_json::Value;

use super::usage::{call_text, totals_text, LoggedCall};
use crate::terminal_text::escape_controls;

/// Width of the label column; continuation lines are indented by as much.
const LABEL: usize = 11;

/// The header's facts, then the transcript, one block per line, each model call's usage under
/// the lines logged up to it, the calls' totals, then what the checkpoints said of the fold
/// (`checked`). Costs are priced with the built-in table.
pub fn conversation(
    header: Option<&LogHeader>,
    transcript: &[TranscriptLine],
    calls: &[LoggedCall],
    checked: &str,
) -> String {
    let mut out = Block::default();
    if let Some(header) = header {
        let agent = match &header.model {
            Some(model) => format!("{}, model {model}", header.agent_id),
            None => header.agent_id.clone(),
        };
        out.line("session", &agent);
        if let Some(cwd) = &header.cwd {
            out.line("cwd", cwd);
        }
        out.line(
            "started",
            &crate::sessions_cmd::started_text(header.started_at_ms)
                .unwrap_or_else(|| "unknown".to_owned()),
        );
    }
    if transcript.is_empty() {
        out.line(
            "transcript",
            "none recorded (a log written before schema v3, or by `decode` without one); \
             --state shows the final state",
        );
    }
    let prices = PriceTable::built_in();
    // A call's usage goes where the log has it: under the transcript lines logged before it
    // (the own loop logs it when the call ends, after what it answered; Claude Code when the
    // answer starts, above it). An approval of the call's tool request may be logged just
    // before or just after the call's end, as the policy answers it, so it never splits the
    // call from its usage: the line stays in the same place whichever came first.
    let mut pending = calls.iter().peekable();
    for (index, line) in transcript.iter().enumerate() {
        if !is_approval(&line.entry) {
            while let Some(call) = pending.next_if(|call| call.after_lines <= index) {
                out.line("usage", &call_text(call, &prices));
            }
        }
        entry(&mut out, &line.entry);
    }
    for call in pending {
        out.line("usage", &call_text(call, &prices));
    }
    if !calls.is_empty() {
        out.line("calls", &totals_text(calls, &prices));
    }
    out.line("checkpoint", checked);
    out.text
}

/// One transcript entry as `replay` prints it (`attach` prints each as it comes).
pub fn entry_text(transcript: &TranscriptEntry) -> String {
    let mut out = Block::default();
    entry(&mut out, transcript);
    out.text
}

fn entry(out: &mut Block, entry: &TranscriptEntry) {
    match entry {
        TranscriptEntry::Prompt { text } => out.line("prompt", text),
        TranscriptEntry::Text { text } => out.line("assistant", text),
        TranscriptEntry::Thinking { text } => out.line("thinking", text),
        TranscriptEntry::ToolCall {
            call_id,
            name,
            input,
            arg,
        } => {
            let what = match (input, arg) {
                (Some(input), _) => compact(input),
                (None, Some(arg)) => arg.clone(),
                (None, None) => String::new(),
            };
            out.line("tool", format!("{name} [{call_id}] {what}").trim_end());
        }
        TranscriptEntry::ToolOutput {
            call_id,
            status,
            exit_code,
            output,
            cut_bytes,
        } => {
            let mut head = format!("[{call_id}] {}", status_word(*status));
            if let Some(code) = exit_code {
                head.push_str(&format!(", exit {code}"));
            }
            if *cut_bytes > 0 {
                head.push_str(&format!(", {cut_bytes} more bytes not kept"));
            }
            match output.as_deref() {
                Some(text) if !text.is_empty() => out.line(
                    "output",
                    &format!("{head}\n{}", text.trim_end_matches('\n')),
                ),
                Some(_) => out.line("output", &format!("{head} (nothing printed)")),
                None => out.line("output", &head),
            }
        }
        TranscriptEntry::ApprovalRequested {
            request_id,
            tool,
            summary,
            input,
        } => {
            let what = match (summary, input) {
                (Some(summary), _) => summary.clone(),
                (None, Some(input)) => compact(input),
                (None, None) => String::new(),
            };
            out.line("asks", format!("{tool} [{request_id}] {what}").trim_end());
        }
        TranscriptEntry::ApprovalAnswered {
            request_id,
            approved,
            for_session,
            by,
            reason,
        } => {
            let id = request_id
                .as_deref()
                .map(|id| format!("[{id}] "))
                .unwrap_or_default();
            let verdict = match (*approved, *for_session) {
                (true, true) => "allowed for the session",
                (true, false) => "allowed",
                (false, _) => "denied",
            };
            out.line(
                "approval",
                &format!("{id}{}", answered(verdict, by, reason.as_deref())),
            );
        }
        TranscriptEntry::ApprovalWithdrawn { request_id } => out.line(
            "approval",
            &format!("[{request_id}] withdrawn by the agent"),
        ),
        TranscriptEntry::Question { id, questions } => {
            out.line("question", &format!("[{id}] {}", questions.join("\n")))
        }
        TranscriptEntry::QuestionAnswered { id, answers, by } => {
            let id = id
                .as_deref()
                .map(|id| format!("[{id}] "))
                .unwrap_or_default();
            out.line(
                "answer",
                &format!("{id}by {}: {}", actor(by), answers.join("\n")),
            );
        }
        TranscriptEntry::Failure { failure } => {
            let mut head = json_word(&failure.kind);
            if let Some(status) = failure.http_status {
                head.push_str(&format!(", HTTP {status}"));
            }
            head.push_str(if failure.retryable {
                ", retryable"
            } else {
                ", not retryable"
            });
            out.line("failure", &format!("{head}: {}", failure.message));
        }
        TranscriptEntry::Retry {
            attempt,
            max_retries,
            wait_ms,
            http_status,
            reason,
        } => {
            let mut text = match (attempt, max_retries) {
                (Some(attempt), Some(max)) => format!("attempt {attempt} of {max}"),
                (Some(attempt), None) => format!("attempt {attempt}"),
                _ => "again".to_owned(),
            };
            if let Some(wait) = wait_ms {
                text.push_str(&format!(" after {wait} ms"));
            }
            let mut why = Vec::new();
            if let Some(status) = http_status {
                why.push(format!("HTTP {status}"));
            }
            if let Some(reason) = reason {
                why.push(reason.clone());
            }
            if !why.is_empty() {
                text.push_str(&format!(" ({})", why.join(", ")));
            }
            out.line("retry", &text);
        }
        TranscriptEntry::History { role, text } => out.line("history", &format!("{role}: {text}")),
        TranscriptEntry::Interrupt { by } => {
            out.line("interrupt", &format!("asked by {}", actor(by)))
        }
        TranscriptEntry::SessionEnded { error: None } => out.line("ended", "the session ended"),
        TranscriptEntry::SessionEnded { error: Some(error) } => out.line(
            "ended",
            &format!("the session ended with an error: {error}"),
        ),
    }
}

/// Whether the entry is a tool request's approval or its answer.
fn is_approval(entry: &TranscriptEntry) -> bool {
    matches!(
        entry,
        TranscriptEntry::ApprovalRequested { .. }
            | TranscriptEntry::ApprovalAnswered { .. }
            | TranscriptEntry::ApprovalWithdrawn { .. }
    )
}

/// An answer in words: "denied by WHO: WHY". A reason the session wrote already says who
/// ("denied by approval mode read-only: …", as the agent was told it): shown as it is, not
/// after a second "denied by".
fn answered(verdict: &str, by: &Actor, reason: Option<&str>) -> String {
    match reason {
        Some(reason) if reason.starts_with("denied by ") => reason.to_owned(),
        Some(reason) => format!("{verdict} by {}: {reason}", actor(by)),
        None => format!("{verdict} by {}", actor(by)),
    }
}

/// Who, in words.
fn actor(by: &Actor) -> String {
    match by {
        Actor::Policy { mode } => format!("the policy (--approval {mode})"),
        Actor::Person => "the person".to_owned(),
        Actor::Api {
            client: Some(client),
        } => format!("the API client {client}"),
        Actor::Api { client: None } => "an API client".to_owned(),
        Actor::Session => "panewise, as the session ended".to_owned(),
        Actor::Agent => "the agent".to_owned(),
    }
}

fn status_word(status: ToolCallStatus) -> &'static str {
    match status {
        ToolCallStatus::Success => "success",
        ToolCallStatus::Error => "error",
        ToolCallStatus::Declined => "declined",
    }
}

/// A tool's input in a line: the JSON, compact.
fn compact(input: &Value) -> String {
    input.to_string()
}

/// The serde name of a unit enum value, e.g. `rate_limited`.
fn json_word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// Text being built, one labelled block at a time.
#[derive(Default)]
struct Block {
    text: String,
}

impl Block {
    /// `label`, padded, then `text` with its controls escaped and its later lines indented
    /// under the first.
    fn line(&mut self, label: &str, text: &str) {
        let indent = " ".repeat(LABEL);
        self.text.push_str(&format!(
            "{label:<LABEL$}{}\n",
            escape_controls(text, &indent)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_names_who_answered_once() {
        let api = Actor::Api {
            client: Some("panewise approve".to_owned()),
        };
        let policy = Actor::Policy {
            mode: "read-only".to_owned(),
        };
        let cases = [
            (
                "allowed",
                &api,
                None,
                "allowed by the API client panewise approve",
            ),
            (
                "denied",
                &api,
                Some("denied by panewise approve: not now"),
                "denied by panewise approve: not now",
            ),
            (
                "denied",
                &policy,
                Some("denied by approval mode read-only: shell may not run"),
                "denied by approval mode read-only: shell may not run",
            ),
            (
                "denied",
                &Actor::Policy {
                    mode: "ask".to_owned(),
                },
                Some("approval mode ask asks, and there is no terminal to ask on"),
                "denied by the policy (--approval ask): approval mode ask asks, and there is no \
                 terminal to ask on",
            ),
            (
                "denied",
                &Actor::Session,
                None,
                "denied by panewise, as the session ended",
            ),
        ];
        for (verdict, by, reason, expected) in cases {
            assert_eq!(answered(verdict, by, reason), expected);
        }
    }
}
