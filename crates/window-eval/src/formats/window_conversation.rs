//! Reader of the window stage's own conversation file: one chat-completions message per line
//! (`{"role":"user","content":…}`, assistants with `tool_calls`, `{"role":"tool",
//! "tool_call_id":…}`), parsed by the window crate's own [`panewise_window::openai::from_value`]
//! so a conversation reads here exactly as the stage reads it.
//!
//! The leading system message(s) become [`Recording::system`] (the replay sends them as the
//! request's head). A line that is not a message is skipped and counted. The file records no
//! model calls, no model and no usage: calls are put at the assistant messages.

use panewise_window::{Message, Role};
use serde_json::Value;

use crate::error::EvalError;
use crate::recording::{Format, Recording};

const FORMAT: &str = "window-conversation";

/// How many leading non-empty lines detection looks at.
const DETECT_LINES: usize = 3;

/// Whether `text` is a conversation file: each of its first non-empty lines (up to three) is
/// a JSON object with a string `role` and neither `type` nor `v` (the keys the agents' own
/// session files and panewise's session logs put on every line).
pub fn detect(text: &str) -> bool {
    let mut seen = 0;
    for line in text
        .trim_start_matches('\u{feff}')
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(DETECT_LINES)
    {
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(line) else {
            return false;
        };
        let message_like = object.get("role").is_some_and(Value::is_string)
            && !object.contains_key("type")
            && !object.contains_key("v");
        if !message_like {
            return false;
        }
        seen += 1;
    }
    seen > 0
}

/// Reads a conversation file.
pub fn read(text: &str) -> Result<Recording, EvalError> {
    let mut messages = Vec::new();
    let mut skipped = 0usize;
    for line in text.trim_start_matches('\u{feff}').lines() {
        if line.trim().is_empty() {
            continue;
        }
        let message = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|value| panewise_window::openai::from_value(&value).ok());
        match message {
            Some(message) => messages.push(message),
            None => skipped += 1,
        }
    }
    let leading = messages
        .iter()
        .take_while(|message: &&Message| message.role == Role::System)
        .count();
    let system: Vec<String> = messages.drain(..leading).map(|m| m.content).collect();
    if messages.is_empty() {
        return Err(EvalError::BadRecording {
            format: FORMAT,
            reason: if skipped > 0 {
                format!("none of its {skipped} line(s) is a chat-completions message")
            } else {
                "no message besides the system prompt".into()
            },
        });
    }
    let mut recording = Recording::new(Format::WindowConversation);
    recording.system = (!system.is_empty()).then(|| system.join("\n\n"));
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    recording.messages = messages;
    if skipped > 0 {
        recording.notes.push(format!(
            "{skipped} line(s) that are not chat-completions messages skipped"
        ));
    }
    Ok(recording)
}
