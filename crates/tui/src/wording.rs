//! A transcript entry in the words `panewise attach` and `panewise replay` print it and the
//! web page shows it: one labelled block per entry, the label padded to a column, the text's
//! controls escaped and its later lines indented under the first. One wording, so the page's
//! lines and attach's are the same lines (the dashboard's peek is terser: `transcript`).

use panewise_pane_state::log::{Actor, ToolCallStatus, TranscriptEntry};
use serde_json::Value;

use crate::text::escape_controls;

/// Width of the label column; continuation lines are indented by as much.
pub const LABEL_WIDTH: usize = 11;

/// `label`, padded to [`LABEL_WIDTH`], then `text` with its controls escaped and its later
/// lines indented under the first; ends with a line break. Escaping is idempotent, so text
/// already escaped (as [`entry_line`]'s page form) prints the same.
pub fn labelled(label: &str, text: &str) -> String {
    let indent = " ".repeat(LABEL_WIDTH);
    format!(
        "{label:<width$}{}\n",
        escape_controls(text, &indent),
        width = LABEL_WIDTH
    )
}

/// One entry as `attach` prints it: [`entry_line`] through [`labelled`].
pub fn entry_text(entry: &TranscriptEntry) -> String {
    let (label, text) = entry_line(entry);
    labelled(label, &text)
}

/// One entry's label and text, unescaped (the text may span lines).
pub fn entry_line(entry: &TranscriptEntry) -> (&'static str, String) {
    match entry {
        TranscriptEntry::Prompt { text } => ("prompt", text.clone()),
        TranscriptEntry::Text { text } => ("assistant", text.clone()),
        TranscriptEntry::Thinking { text } => ("thinking", text.clone()),
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
            (
                "tool",
                format!("{name} [{call_id}] {what}").trim_end().to_owned(),
            )
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
            let text = match output.as_deref() {
                Some(text) if !text.is_empty() => {
                    format!("{head}\n{}", text.trim_end_matches('\n'))
                }
                Some(_) => format!("{head} (nothing printed)"),
                None => head,
            };
            ("output", text)
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
            (
                "asks",
                format!("{tool} [{request_id}] {what}")
                    .trim_end()
                    .to_owned(),
            )
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
            (
                "approval",
                format!("{id}{}", answered(verdict, by, reason.as_deref())),
            )
        }
        TranscriptEntry::ApprovalWithdrawn { request_id } => {
            ("approval", format!("[{request_id}] withdrawn by the agent"))
        }
        TranscriptEntry::Question { id, questions } => {
            ("question", format!("[{id}] {}", questions.join("\n")))
        }
        TranscriptEntry::QuestionAnswered { id, answers, by } => {
            let id = id
                .as_deref()
                .map(|id| format!("[{id}] "))
                .unwrap_or_default();
            (
                "answer",
                format!("{id}by {}: {}", actor(by), answers.join("\n")),
            )
        }
        TranscriptEntry::Failure { failure } => {
            let mut head = json_word(serde_json::to_value(failure.kind).ok());
            if let Some(status) = failure.http_status {
                head.push_str(&format!(", HTTP {status}"));
            }
            head.push_str(if failure.retryable {
                ", retryable"
            } else {
                ", not retryable"
            });
            ("failure", format!("{head}: {}", failure.message))
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
            ("retry", text)
        }
        TranscriptEntry::History { role, text } => ("history", format!("{role}: {text}")),
        TranscriptEntry::Interrupt { by } => ("interrupt", format!("asked by {}", actor(by))),
        TranscriptEntry::SessionEnded { error: None } => ("ended", "the session ended".to_owned()),
        TranscriptEntry::SessionEnded { error: Some(error) } => {
            ("ended", format!("the session ended with an error: {error}"))
        }
    }
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
fn json_word(value: Option<Value>) -> String {
    value
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
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
        let ask = Actor::Policy {
            mode: "ask".to_owned(),
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
                &ask,
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

    #[test]
    fn an_entry_is_one_labelled_block_escaped_and_indented() {
        let cases: &[(TranscriptEntry, &str)] = &[
            (
                TranscriptEntry::Prompt {
                    text: "go".to_owned(),
                },
                "prompt     go\n",
            ),
            (
                TranscriptEntry::ToolOutput {
                    call_id: "c1".to_owned(),
                    status: ToolCallStatus::Success,
                    exit_code: Some(0),
                    output: Some("a\n\u{1b}[2Kb\n".to_owned()),
                    cut_bytes: 0,
                },
                "output     [c1] success, exit 0\n           a\n           \\u{1b}[2Kb\n",
            ),
            (
                TranscriptEntry::ApprovalAnswered {
                    request_id: Some("r1".to_owned()),
                    approved: true,
                    for_session: false,
                    by: Actor::Api {
                        client: Some("panewise web (phone)".to_owned()),
                    },
                    reason: None,
                },
                "approval   [r1] allowed by the API client panewise web (phone)\n",
            ),
        ];
        for (entry, printed) in cases {
            assert_eq!(entry_text(entry), *printed, "{entry:?}");
        }
    }

    #[test]
    fn escaping_twice_prints_as_escaping_once() {
        let texts = [
            "plain",
            "a\nb\tc",
            "\r\u{1b}[2K\u{202e}x\n\u{7f}",
            "\\u{1b} already",
        ];
        for text in texts {
            let once = escape_controls(text, "");
            assert_eq!(
                labelled("output", &once),
                labelled("output", text),
                "{text:?}"
            );
        }
    }
}
