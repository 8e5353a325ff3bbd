//! The OpenAI chat-completions message shape (`role`, `content`, `tool_calls`, `tool_call_id`,
//! `name`), the most common interchange format, read from and written to JSON Lines.

use serde_json::{json, Map, Value};

use crate::error::WindowError;
use crate::message::{Message, Role, ToolCall};

/// Reads a conversation: one chat-completions message per non-blank line.
pub fn parse_jsonl(text: &str) -> Result<Vec<Message>, WindowError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            let value: Value =
                serde_json::from_str(line).map_err(|error| WindowError::InvalidMessage {
                    line: index + 1,
                    reason: error.to_string(),
                })?;
            from_value(&value).map_err(|reason| WindowError::InvalidMessage {
                line: index + 1,
                reason,
            })
        })
        .collect()
}

/// Reads one chat-completions message. `content` may be a string, `null`, or a list of parts
/// whose `text` fields are joined.
pub fn from_value(value: &Value) -> Result<Message, String> {
    let object = value
        .as_object()
        .ok_or_else(|| "a message must be a JSON object".to_string())?;
    let role = match object.get("role").and_then(Value::as_str) {
        Some("system") | Some("developer") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("tool") | Some("function") => Role::Tool,
        Some(other) => return Err(format!("unknown role `{other}`")),
        None => return Err("`role` is missing or not a string".to_string()),
    };
    let content = match object.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(_) => return Err("`content` must be a string, null or a list of parts".to_string()),
    };
    let mut message = Message::new(role, content);
    if let Some(calls) = object.get("tool_calls") {
        let calls = calls
            .as_array()
            .ok_or_else(|| "`tool_calls` must be a list".to_string())?;
        for call in calls {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| "a tool call needs a string `id`".to_string())?;
            let function = call.get("function").unwrap_or(call);
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("tool call `{id}` needs a function `name`"))?;
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

/// Writes one message in the chat-completions shape.
pub fn to_value(message: &Message) -> Value {
    let mut object = Map::new();
    object.insert("role".to_string(), json!(message.role.as_str()));
    object.insert("content".to_string(), json!(message.content));
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.args},
                })
            })
            .collect();
        object.insert("tool_calls".to_string(), Value::Array(calls));
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
    Value::Object(object)
}
