//! The conversation model the stage works on, and the narrow trait that lets a team window its
//! own message type.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system envelope. A turn holding one never leaves the window.
    System,
    /// A person, or a message the harness or the stage injected in the user role.
    User,
    /// The model, possibly calling tools.
    Assistant,
    /// A tool result answering an assistant tool call.
    Tool,
}

impl Role {
    /// The lowercase wire spelling (`system`, `user`, `assistant`, `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool call made by an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id a tool result quotes in its `tool_call_id`.
    pub id: String,
    /// The tool's declared name.
    pub name: String,
    /// The arguments, as the JSON text the model produced.
    pub args: String,
}

/// A borrowed view of one tool call, as [`WindowMessage`] exposes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCallRef<'a> {
    /// The call id.
    pub id: &'a str,
    /// The tool's declared name.
    pub name: &'a str,
    /// The arguments as JSON text.
    pub args: &'a str,
}

/// The crate's own message type: the shape of W3, plus the origin facts the records need.
///
/// A message read from chat-completions JSON keeps the JSON object it came from in
/// [`Message::original`], so writing it back loses nothing the stage did not change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The text. Every size in this crate is counted over this field: for a list of content
    /// parts it holds only the text parts, so image and audio parts count 0 characters. Such a
    /// part is never dropped on its own; it leaves only with its whole message.
    pub content: String,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On a tool result, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On a tool result, the tool's name when the message carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Who injected the message, when a person did not say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected_by: Option<String>,
    /// The runtime stage that appended the message, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_id: Option<String>,
    /// When the message was appended, in milliseconds of the caller's clock, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub born_at_ms: Option<u64>,
    /// The chat-completions JSON object the message was read from, when it was read from one
    /// ([`crate::openai::from_value`]). [`crate::openai::to_value`] starts from it and rewrites
    /// only the fields that differ from what it parses to, so non-text content parts, unknown
    /// fields, `name`, `null` content and the `developer`/`function` roles survive a round trip.
    #[serde(skip)]
    pub original: Option<Map<String, Value>>,
}

impl Message {
    /// A message with a role and content and nothing else.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            injected_by: None,
            stage_id: None,
            born_at_ms: None,
            original: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message a person said.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message without tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant message that calls tools, given as `(id, name, args)`.
    pub fn assistant_calls(content: impl Into<String>, calls: &[(&str, &str, &str)]) -> Self {
        let mut message = Self::new(Role::Assistant, content);
        message.tool_calls = calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: (*id).to_string(),
                name: (*name).to_string(),
                args: (*args).to_string(),
            })
            .collect();
        message
    }

    /// A tool result answering `call_id`; the tool's name is left for the stage to recover
    /// from the call.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        let mut message = Self::new(Role::Tool, content);
        message.tool_call_id = Some(call_id.into());
        message
    }

    /// The same message marked as injected by `by` (so it can never be the current request).
    pub fn injected(mut self, by: impl Into<String>) -> Self {
        self.injected_by = Some(by.into());
        self
    }
}

/// What the stage needs to read from a message, so a team can window its own message type.
///
/// Everything is borrowed; the stage reads each message once when it is pushed into a
/// [`crate::Conversation`] and caches what it learned.
pub trait WindowMessage: Clone + Send + Sync {
    /// Who speaks.
    fn role(&self) -> Role;
    /// The text; sizes are counted over it.
    fn content(&self) -> &str;
    /// How many tool calls the message makes.
    fn tool_call_count(&self) -> usize;
    /// The `index`-th tool call, if there is one.
    fn tool_call(&self, index: usize) -> Option<ToolCallRef<'_>>;
    /// On a tool result, the id of the call it answers.
    fn tool_call_id(&self) -> Option<&str>;
    /// On a tool result, the tool name the message itself carries.
    fn tool_name(&self) -> Option<&str>;
    /// Who injected the message, if a person did not say it.
    fn injected_by(&self) -> Option<&str>;
    /// The stage that appended the message, for `removedStageIds`.
    fn stage_id(&self) -> Option<&str> {
        None
    }
    /// When the message was appended, for eviction survival times.
    fn born_at_ms(&self) -> Option<u64> {
        None
    }
    /// Builds a user-role message the stage authors (a drop notice or a summary frame).
    fn stage_note(content: String, at_ms: u64) -> Self;
    /// The same message with its content replaced (observation masking keeps the call id).
    fn with_content(&self, content: String) -> Self;
}

impl WindowMessage for Message {
    fn role(&self) -> Role {
        self.role
    }
    fn content(&self) -> &str {
        &self.content
    }
    fn tool_call_count(&self) -> usize {
        self.tool_calls.len()
    }
    fn tool_call(&self, index: usize) -> Option<ToolCallRef<'_>> {
        self.tool_calls.get(index).map(|call| ToolCallRef {
            id: &call.id,
            name: &call.name,
            args: &call.args,
        })
    }
    fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }
    fn tool_name(&self) -> Option<&str> {
        self.tool_name.as_deref()
    }
    fn injected_by(&self) -> Option<&str> {
        self.injected_by.as_deref()
    }
    fn stage_id(&self) -> Option<&str> {
        self.stage_id.as_deref()
    }
    fn born_at_ms(&self) -> Option<u64> {
        self.born_at_ms
    }
    fn stage_note(content: String, at_ms: u64) -> Self {
        let mut message = Message::user(content).injected(crate::STAGE_ID);
        message.stage_id = Some(crate::STAGE_ID.to_string());
        message.born_at_ms = Some(at_ms);
        message
    }
    fn with_content(&self, content: String) -> Self {
        let mut message = self.clone();
        message.content = content;
        message
    }
}

/// 32-bit FNV-1a over the UTF-16 code units of `text`, as unsigned lowercase hex (W5).
pub fn fnv1a_hex(text: &str) -> String {
    format!("{:x}", fnv1a(text))
}

/// 32-bit FNV-1a over the UTF-16 code units of `text` (W5).
pub fn fnv1a(text: &str) -> u32 {
    fnv1a_continue(FNV_OFFSET, text)
}

const FNV_OFFSET: u32 = 2_166_136_261;
const FNV_PRIME: u32 = 16_777_619;

/// Continues an FNV-1a hash over more text, so a hash of several pieces needs no joined copy.
fn fnv1a_continue(mut hash: u32, text: &str) -> u32 {
    for unit in text.encode_utf16() {
        // The original hashes a UTF-16 code unit as one value, not byte by byte.
        hash ^= u32::from(unit);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w5_fnv1a_matches_known_vectors() {
        assert_eq!(fnv1a(""), 2_166_136_261);
        assert_eq!(fnv1a_hex(""), "811c9dc5");
        // For ASCII text, hashing UTF-16 units equals hashing bytes: the standard vector holds.
        assert_eq!(fnv1a_hex("a"), "e40c292c");
    }
}
