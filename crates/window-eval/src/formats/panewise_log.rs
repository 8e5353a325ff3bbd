//! Reader of panewise's own session logs (`<id>.jsonl`): one JSON object per line, each with
//! its schema version `v` and one of `header`, `msg` (a reducer input), `checkpoint`, `note`
//! or `transcript` (the conversation; see `panewise_pane_state::log`).
//!
//! Only the transcript lines make the history, parsed as plain JSON so this crate needs no
//! dependency on the pane state: `prompt` → a user message; `text` → assistant text, joined
//! with the text before it until a tool call or another message comes; `tool_call` → a call
//! on the current assistant message (so several calls of one answer share it), its whole
//! `input` as arguments (or `{"arg": …}` when the stream carried only the first argument);
//! `tool_output` → the tool result; `history` (a resumed session's replayed messages) →
//! user or assistant messages. Thinking is left out (a model does not get its earlier turns'
//! thinking back) and counted; approvals, questions, failures, retries, interrupts and the
//! session's end are not conversation and are passed over.
//!
//! The log records no message list per model call, so calls are put at the assistant
//! messages, each at the `ts` of the line that opened its message. The model is the header's, else the first `tokens_in` message's. No usage per
//! call: `tokens_in` gives the prompt's size but not its split into cached and uncached
//! tokens, which the replay's cache figures need.

use std::collections::BTreeMap;

use panewise_window::{Message, Role, ToolCall};
use serde_json::Value;

use crate::error::EvalError;
use crate::recording::{Family, Format, Recording};

const FORMAT: &str = "panewise-log";

/// Whether `text` is a panewise session log: its first non-empty line is a JSON object with
/// a numeric `v` and one of the log's line kinds.
pub fn detect(text: &str) -> bool {
    let Some(first) = text
        .trim_start_matches('\u{feff}')
        .lines()
        .find(|line| !line.trim().is_empty())
    else {
        return false;
    };
    let Ok(Value::Object(line)) = serde_json::from_str::<Value>(first) else {
        return false;
    };
    line.get("v").is_some_and(Value::is_u64)
        && ["header", "msg", "transcript", "checkpoint", "note"]
            .iter()
            .any(|key| line.contains_key(*key))
}

/// Reads a session log's transcript into a recording.
pub fn read(text: &str) -> Result<Recording, EvalError> {
    let mut reader = Reader::default();
    for line in text.trim_start_matches('\u{feff}').lines() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(object)) => {
                if let Some(header) = object.get("header") {
                    reader.model_seen(header.get("model"));
                }
                if let Some(msg) = object.get("msg") {
                    if msg.get("type").and_then(Value::as_str) == Some("tokens_in") {
                        reader.model_seen(msg.get("model"));
                    }
                }
                if let Some(entry) = object.get("transcript") {
                    let before = reader.messages.len();
                    reader.entry(entry);
                    // A message's time is that of the line that opened it: the model's
                    // answer starts streaming right after the call.
                    if let Some(ts) = object.get("ts").and_then(Value::as_u64) {
                        for index in before..reader.messages.len() {
                            reader.times.insert(index, ts);
                        }
                    }
                }
            }
            _ => reader.count("line(s) that are not JSON objects skipped"),
        }
    }
    let Reader {
        messages,
        model,
        counts,
        times,
        ..
    } = reader;
    if messages.is_empty() {
        return Err(EvalError::BadRecording {
            format: FORMAT,
            reason: "no transcript line with a prompt, text or tool call".into(),
        });
    }
    let mut recording = Recording::new(Format::PanewiseLog);
    recording.family = model.as_deref().and_then(Family::of_model);
    recording.model = model;
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    for call in &mut recording.calls {
        call.at_ms = times.get(&call.sent).copied();
    }
    recording.messages = messages;
    recording.notes = counts
        .into_iter()
        .map(|(what, count)| format!("{count} {what}"))
        .collect();
    Ok(recording)
}

#[derive(Debug, Default)]
struct Reader {
    messages: Vec<Message>,
    model: Option<String>,
    /// Tool names by call id, for the results.
    names: BTreeMap<String, String>,
    counts: BTreeMap<&'static str, usize>,
    /// The `ts` of the line that opened each message, by index.
    times: BTreeMap<usize, u64>,
}

impl Reader {
    fn model_seen(&mut self, model: Option<&Value>) {
        if self.model.is_none() {
            self.model = model
                .and_then(Value::as_str)
                .filter(|model| !model.is_empty())
                .map(str::to_string);
        }
    }

    fn entry(&mut self, entry: &Value) {
        let text = |key: &str| entry.get(key).and_then(Value::as_str);
        match entry.get("kind").and_then(Value::as_str).unwrap_or("") {
            "prompt" => {
                let prompt = text("text").unwrap_or("");
                self.messages.push(Message::new(Role::User, prompt));
            }
            "text" => self.assistant_text(text("text").unwrap_or("")),
            "thinking" => self.count("thinking line(s) left out (not context for later calls)"),
            "tool_call" => {
                let id = text("call_id").unwrap_or("").to_string();
                let name = text("name").unwrap_or("unknown").to_string();
                let args = match (entry.get("input"), text("arg")) {
                    (Some(input), _) if !input.is_null() => match input {
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    },
                    (_, Some(arg)) => serde_json::json!({ "arg": arg }).to_string(),
                    _ => "{}".into(),
                };
                self.names.insert(id.clone(), name.clone());
                let call = ToolCall { id, name, args };
                match self.messages.last_mut() {
                    Some(last) if last.role == Role::Assistant => last.tool_calls.push(call),
                    _ => {
                        let mut message = Message::new(Role::Assistant, "");
                        message.tool_calls.push(call);
                        self.messages.push(message);
                    }
                }
            }
            "tool_output" => {
                let id = text("call_id").unwrap_or("").to_string();
                let cut = entry.get("cut_bytes").and_then(Value::as_u64).unwrap_or(0);
                if cut > 0 {
                    self.count("tool output(s) the recorder had cut short kept as recorded");
                }
                let mut message = Message::new(Role::Tool, text("output").unwrap_or(""));
                message.tool_name = self.names.get(&id).cloned();
                message.tool_call_id = Some(id);
                self.messages.push(message);
            }
            "history" => match text("role").unwrap_or("") {
                "user" => {
                    let said = text("text").unwrap_or("");
                    self.messages.push(Message::new(Role::User, said));
                }
                "assistant" => self.assistant_text(text("text").unwrap_or("")),
                "thinking" => {
                    self.count("thinking line(s) left out (not context for later calls)");
                }
                _ => self.count("replayed history line(s) of tool calls without ids skipped"),
            },
            "approval_requested" | "approval_answered" | "approval_withdrawn" | "question"
            | "question_answered" | "failure" | "retry" | "interrupt" | "session_ended" => {}
            _ => self.count("transcript line(s) of an unknown kind skipped"),
        }
    }

    /// Appends text to the assistant message being streamed, or starts one: text after a
    /// tool call belongs to the next answer.
    fn assistant_text(&mut self, text: &str) {
        match self.messages.last_mut() {
            Some(last) if last.role == Role::Assistant && last.tool_calls.is_empty() => {
                last.content.push_str(text);
            }
            _ => self.messages.push(Message::new(Role::Assistant, text)),
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_insert(0) += 1;
    }
}
