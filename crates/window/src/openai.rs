//! The OpenAI chat-completions message shape (`role`, `content`, `tool_calls`, `tool_call_id`,
//! `name`), the most common interchange format, read from and written to JSON Lines.
//!
//! Nothing is lost on the way through: a message read here keeps its JSON object in
//! [`Message::original`], and [`to_value`] writes that object back with only the fields the
//! stage changed replaced. Image, audio and other non-text content parts count 0 characters
//! and are never dropped on their own; they leave only with their whole message.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::error::WindowError;
use crate::message::{Message, Role, ToolCall};

/// A tool result that answers no earlier assistant tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanResult {
    /// The 1-based line of the conversation file.
    pub line: usize,
    /// The call id the result quotes, if it quotes one.
    pub tool_call_id: Option<String>,
}

/// A conversation read from JSON Lines, with what looked wrong but was still accepted.
#[derive(Debug, Clone, Default)]
pub struct ParsedConversation {
    /// The messages, in file order.
    pub messages: Vec<Message>,
    /// `tool` messages whose `tool_call_id` matches no earlier assistant tool call. They are
    /// kept, so a real log still windows; a caller may warn about them.
    pub orphans: Vec<OrphanResult>,
}

/// Reads a conversation: one chat-completions message per non-blank line.
pub fn parse_jsonl(text: &str) -> Result<Vec<Message>, WindowError> {
    read_jsonl(text).map(|parsed| parsed.messages)
}

/// Reads a conversation like [`parse_jsonl`], and also reports orphan tool results.
pub fn read_jsonl(text: &str) -> Result<ParsedConversation, WindowError> {
    let mut parsed = ParsedConversation::default();
    let mut calls: BTreeSet<String> = BTreeSet::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let invalid = |reason: String| WindowError::InvalidMessage {
            line: index + 1,
            reason,
        };
        let value: Value =
            serde_json::from_str(line).map_err(|error| invalid(json_reason(&error)))?;
        let message = from_value(&value).map_err(|error| match error {
            WindowError::MessageShape(reason) => invalid(reason),
            other => invalid(other.to_string()),
        })?;
        calls.extend(message.tool_calls.iter().map(|call| call.id.clone()));
        // Legacy `function` results pair by name, not by call id, so only `tool` is checked.
        let is_tool = value.get("role").and_then(Value::as_str) == Some("tool");
        let answered = message
            .tool_call_id
            .as_deref()
            .is_some_and(|id| calls.contains(id));
        if is_tool && !answered {
            parsed.orphans.push(OrphanResult {
                line: index + 1,
                tool_call_id: message.tool_call_id.clone(),
            });
        }
        parsed.messages.push(message);
    }
    Ok(parsed)
}

/// Why a line is not JSON, with its column only: the line number is the file's, given once by
/// [`WindowError::InvalidMessage`], not serde's "line 1" of the one-line text it was handed.
fn json_reason(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let reason = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(reason, _)| reason);
    format!("not JSON: {reason} (column {})", error.column())
}

/// Reads one chat-completions message. `content` may be a string, `null`, or a list of parts
/// whose `text` fields are joined with newlines; other parts (images, audio) add no text but
/// are kept in [`Message::original`].
pub fn from_value(value: &Value) -> Result<Message, WindowError> {
    let object = value
        .as_object()
        .ok_or_else(|| shape("a message must be a JSON object"))?;
    let mut message = parse_object(object)?;
    message.original = Some(object.clone());
    Ok(message)
}

fn shape(reason: impl Into<String>) -> WindowError {
    WindowError::MessageShape(reason.into())
}

/// Parses the fields the stage reads, without keeping the object.
fn parse_object(object: &Map<String, Value>) -> Result<Message, WindowError> {
    let role = match object.get("role").and_then(Value::as_str) {
        Some("system") | Some("developer") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("tool") | Some("function") => Role::Tool,
        Some(other) => return Err(shape(format!("unknown role `{other}`"))),
        None => return Err(shape("`role` is missing or not a string")),
    };
    let content = match object.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(part_text)
            .collect::<Vec<_>>()
            .join("\n"),
        Some(_) => return Err(shape("`content` must be a string, null or a list of parts")),
    };
    let mut message = Message::new(role, content);
    if let Some(calls) = object.get("tool_calls") {
        let calls = calls
            .as_array()
            .ok_or_else(|| shape("`tool_calls` must be a list"))?;
        for call in calls {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| shape("a tool call needs a string `id`"))?;
            let function = call.get("function").unwrap_or(call);
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| shape(format!("tool call `{id}` needs a function `name`")))?;
            let args = match function.get("arguments") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            message.tool_calls.push(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                args,
            });
        }
    }
    let text_field = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    message.tool_call_id = text_field("tool_call_id");
    if role == Role::Tool {
        message.tool_name = text_field("name");
    }
    message.injected_by = text_field("injected_by");
    message.stage_id = text_field("stage_id");
    Ok(message)
}

/// The text a content part contributes; non-text parts contribute none.
fn part_text(part: &Value) -> Option<&str> {
    part.get("text").and_then(Value::as_str)
}

/// Writes one message in the chat-completions shape.
///
/// A message read by [`from_value`] is written as its original object, with only the fields
/// that now differ from what that object reads as replaced: a masked or summarized `content`,
/// for instance. Messages the stage authors are written fresh.
pub fn to_value(message: &Message) -> Value {
    let object = match &message.original {
        Some(original) => match parse_object(original) {
            Ok(base) => rewrite(original, &base, message),
            // An original that no longer parses cannot say what changed; write fresh.
            Err(_) => fresh(message),
        },
        None => fresh(message),
    };
    Value::Object(object)
}

/// The original object with every field the message changed since it was read replaced.
fn rewrite(original: &Map<String, Value>, base: &Message, message: &Message) -> Map<String, Value> {
    let mut object = original.clone();
    if message.role != base.role {
        object.insert("role".to_string(), json!(message.role.as_str()));
    }
    if message.content != base.content {
        let content = replaced_content(original.get("content"), &message.content);
        object.insert("content".to_string(), content);
    }
    if message.tool_calls != base.tool_calls {
        if message.tool_calls.is_empty() {
            object.remove("tool_calls");
        } else {
            object.insert("tool_calls".to_string(), calls_value(&message.tool_calls));
        }
    }
    let fields = [
        ("tool_call_id", &message.tool_call_id, &base.tool_call_id),
        ("name", &message.tool_name, &base.tool_name),
        ("injected_by", &message.injected_by, &base.injected_by),
        ("stage_id", &message.stage_id, &base.stage_id),
    ];
    for (key, now, before) in fields {
        if now != before {
            match now {
                Some(value) => object.insert(key.to_string(), json!(value)),
                None => object.remove(key),
            };
        }
    }
    object
}

/// New content for a message whose text changed. In a list of parts the text parts give way to
/// one part holding the new text, in the place of the first; image and audio parts stay.
fn replaced_content(original: Option<&Value>, text: &str) -> Value {
    let Some(Value::Array(parts)) = original else {
        return json!(text);
    };
    let mut out = Vec::with_capacity(parts.len() + 1);
    let mut placed = false;
    for part in parts {
        if part_text(part).is_none() {
            out.push(part.clone());
        } else if !placed {
            // Keep the first text part's other keys (e.g. `cache_control`); only its text changes.
            let mut replaced = part.clone();
            if let Some(fields) = replaced.as_object_mut() {
                fields.insert("text".to_string(), json!(text));
            }
            out.push(replaced);
            placed = true;
        }
    }
    if !placed {
        out.insert(0, json!({"type": "text", "text": text}));
    }
    Value::Array(out)
}

fn calls_value(calls: &[ToolCall]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.args},
            })
        })
        .collect();
    Value::Array(calls)
}

/// A message with no original object, written from its fields.
fn fresh(message: &Message) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("role".to_string(), json!(message.role.as_str()));
    object.insert("content".to_string(), json!(message.content));
    if !message.tool_calls.is_empty() {
        object.insert("tool_calls".to_string(), calls_value(&message.tool_calls));
    }
    if let Some(id) = &message.tool_call_id {
        object.insert("tool_call_id".to_string(), json!(id));
    }
    if let Some(name) = &message.tool_name {
        object.insert("name".to_string(), json!(name));
    }
    if let Some(by) = &message.injected_by {
        object.insert("injected_by".to_string(), json!(by));
    }
    object
}
