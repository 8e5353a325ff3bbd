//! Reader of Codex rollouts, `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`: one
//! `{"timestamp", "type", "payload"}` object a line. The history is in the `response_item`
//! lines (the Responses API's input and output items, in order); the usage of each model call
//! is in the `event_msg` `token_count` lines; the model in `turn_context`.
//!
//! How the items map:
//! - `session_meta`'s base instructions are the request's `instructions`: [`Recording::system`].
//! - `developer` (and `system`) messages are input items Codex sends with every request
//!   (sandbox rules, skills, tool lists). They become messages of role
//!   [`panewise_window::Role::System`], not text appended to `system`, so their size is
//!   counted where they stand in the history and the window stage keeps them as it keeps any
//!   system turn.
//! - A run of consecutive model-side items (`reasoning`, assistant `message`, `function_call`,
//!   `custom_tool_call`, `local_shell_call`, `web_search_call`) is one model call and becomes
//!   one assistant message: the texts (reasoning summaries included, as the reasoning is sent
//!   back with the history) in its content, the calls in its tool calls.
//! - `function_call_output` and `custom_tool_call_output` become tool messages.
//! - `compacted` (Codex's compaction) starts a segment: its `replacement_history` (else its
//!   summary as a user message) is what the later calls sent in place of the history.
//! - `token_count` ends the call it reports on: its `last_token_usage` is that call's usage.
//!   OpenAI's `input_tokens` includes the cached tokens, so the uncached input is the
//!   difference.

use std::collections::BTreeMap;

use panewise_window::{Message, ToolCall};
use serde_json::Value;

use super::claude::{head_objects, str_at, text_of, u64_at};
use crate::error::EvalError;
use crate::recording::{Family, Format, ModelCall, RecordedUsage, Recording};

/// How many leading lines detection parses.
const DETECT_LINES: usize = 10;

/// The rollout line types; a line of one of them with an object `payload` is Codex's.
const LINE_TYPES: [&str; 5] = [
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// Whether `text` is in this format.
pub fn detect(text: &str) -> bool {
    head_objects(text, DETECT_LINES).any(|value| {
        str_at(&value, "type").is_some_and(|kind| LINE_TYPES.contains(&kind))
            && value.get("payload").is_some_and(Value::is_object)
    })
}

/// Reads the recording whole, its compaction segments not split.
pub fn read(text: &str) -> Result<Recording, EvalError> {
    let (rec, _) = read_marked(text)?;
    Ok(rec)
}

/// Reads the recording split at its compactions: each `compacted` item starts a segment whose
/// history is the item's `replacement_history` (else its summary as a user message), what
/// the later calls really sent.
pub fn read_segments(text: &str) -> Result<Vec<Recording>, EvalError> {
    let (rec, starts) = read_marked(text)?;
    let starts: Vec<(usize, bool)> = starts.into_iter().map(|s| (s, true)).collect();
    Ok(rec.split_at(&starts))
}

/// The recording, and the message indices where a compaction begins a segment.
fn read_marked(text: &str) -> Result<(Recording, Vec<usize>), EvalError> {
    let mut values = Vec::new();
    let mut reader = Reader::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(value) if value.is_object() => values.push(value),
            Ok(_) => reader.count("line(s) not a JSON object skipped"),
            Err(_) => reader.count("line(s) not JSON skipped"),
        }
    }
    // Newer Codex writes each response's usage twice, as `token_usage_record` and as the
    // `token_count` event; older ones only the event. Read one kind so no call counts twice.
    let has_token_count = values.iter().any(|value| {
        str_at(value, "type") == Some("event_msg")
            && value
                .get("payload")
                .is_some_and(|p| str_at(p, "type") == Some("token_count"))
    });
    let mut compactions = Vec::new();
    for value in &values {
        let payload = value.get("payload").unwrap_or(&Value::Null);
        reader.line_ms = str_at(value, "timestamp").and_then(super::parse_rfc3339_ms);
        match str_at(value, "type").unwrap_or("") {
            "session_meta" => reader.session_meta(payload),
            "turn_context" if reader.rec.model.is_none() => {
                reader.rec.model = str_at(payload, "model").map(str::to_string);
            }
            "response_item" => reader.item(payload),
            "event_msg" if str_at(payload, "type") == Some("token_count") => {
                let usage = payload
                    .get("info")
                    .and_then(|info| info.get("last_token_usage"));
                // A `token_count` with `info: null` reports rate limits only.
                if let Some(usage) = usage.filter(|u| u.is_object()) {
                    reader.usage(usage);
                }
            }
            "token_usage_record" if !has_token_count => {
                if let Some(usage) = payload.get("usage").filter(|u| u.is_object()) {
                    reader.usage(usage);
                }
            }
            // Compaction replaces the history the later calls sent: a new segment starts
            // with the replacement, as the next call sent it.
            "compacted" => {
                compactions.push(reader.rec.messages.len());
                reader.compacted(payload);
            }
            _ => {}
        }
    }
    Ok((reader.finish(values.len())?, compactions))
}

/// The state of one read.
struct Reader {
    rec: Recording,
    /// The assistant message of the model call under way, while its items keep coming.
    current: Option<usize>,
    /// Call id → tool name, to name the results.
    tool_names: BTreeMap<String, String>,
    /// Skip counts by description, turned into notes at the end.
    skipped: BTreeMap<&'static str, usize>,
    /// The time of the line being read, when it carries one.
    line_ms: Option<u64>,
}

impl Reader {
    fn new() -> Self {
        let mut rec = Recording::new(Format::CodexRollout);
        rec.family = Some(Family::OpenAi);
        Self {
            rec,
            current: None,
            tool_names: BTreeMap::new(),
            skipped: BTreeMap::new(),
            line_ms: None,
        }
    }

    /// A `compacted` item: the history the next calls send in place of everything before.
    /// Its items are history, not model calls, so the calls they would open are dropped.
    fn compacted(&mut self, payload: &Value) {
        self.current = None;
        let calls = self.rec.calls.len();
        match payload.get("replacement_history").and_then(Value::as_array) {
            Some(items) if !items.is_empty() => {
                for item in items {
                    self.item(item);
                }
            }
            _ => {
                let summary = str_at(payload, "message").unwrap_or("");
                self.push_input(Message::user(summary));
            }
        }
        self.rec.calls.truncate(calls);
        self.current = None;
    }

    fn count(&mut self, what: &'static str) {
        *self.skipped.entry(what).or_insert(0) += 1;
    }

    fn session_meta(&mut self, payload: &Value) {
        if self.rec.system.is_some() {
            return;
        }
        // Current rollouts nest the text in `base_instructions`; older ones wrote
        // `instructions` as a string.
        let text = payload
            .get("base_instructions")
            .and_then(|b| str_at(b, "text"))
            .or_else(|| str_at(payload, "instructions"));
        self.rec.system = text.filter(|t| !t.is_empty()).map(str::to_string);
    }

    /// Pushes a message that is not the model's, which ends the model call under way.
    fn push_input(&mut self, message: Message) {
        self.current = None;
        self.rec.messages.push(message);
    }

    /// The assistant message of the call under way, opening a call when none is.
    fn assistant(&mut self) -> Option<&mut Message> {
        let index = match self.current {
            Some(index) => index,
            None => {
                let index = self.rec.messages.len();
                self.rec.messages.push(Message::assistant(""));
                self.rec.calls.push(ModelCall {
                    sent: index,
                    usage: None,
                    at_ms: self.line_ms,
                });
                self.current = Some(index);
                index
            }
        };
        self.rec.messages.get_mut(index)
    }

    fn add_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(message) = self.assistant() {
            if !message.content.is_empty() {
                message.content.push('\n');
            }
            message.content.push_str(text);
        }
    }

    fn add_call(&mut self, id: &str, name: &str, args: String) {
        self.tool_names.insert(id.to_string(), name.to_string());
        if let Some(message) = self.assistant() {
            message.tool_calls.push(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                args,
            });
        }
    }

    fn item(&mut self, payload: &Value) {
        match str_at(payload, "type").unwrap_or("") {
            "message" => {
                let text = content_text(payload.get("content"));
                match str_at(payload, "role").unwrap_or("") {
                    "assistant" => {
                        // Open the call even for an empty message: the model answered.
                        let _ = self.assistant();
                        self.add_text(&text);
                    }
                    "developer" | "system" => self.push_input(Message::system(text)),
                    "user" => self.push_input(Message::user(text)),
                    _ => self.count("message item(s) of an unknown role skipped"),
                }
            }
            "reasoning" => {
                let _ = self.assistant();
                let mut texts = Vec::new();
                for key in ["summary", "content"] {
                    if let Some(parts) = payload.get(key).and_then(Value::as_array) {
                        texts.extend(parts.iter().filter_map(|p| str_at(p, "text")));
                    }
                }
                self.add_text(&texts.join("\n"));
            }
            "function_call" => {
                let id = str_at(payload, "call_id").unwrap_or("");
                let name = str_at(payload, "name").unwrap_or("");
                let args = str_at(payload, "arguments").unwrap_or("{}").to_string();
                self.add_call(id, name, args);
            }
            "custom_tool_call" => {
                // A freeform tool (apply_patch): its input is raw text; kept as a JSON string
                // so the arguments stay JSON text.
                let id = str_at(payload, "call_id").unwrap_or("");
                let name = str_at(payload, "name").unwrap_or("");
                let input = payload.get("input").cloned().unwrap_or(Value::Null);
                self.add_call(id, name, input.to_string());
            }
            "local_shell_call" => {
                let id = str_at(payload, "call_id")
                    .or_else(|| str_at(payload, "id"))
                    .unwrap_or("");
                let action = payload.get("action").cloned().unwrap_or(Value::Null);
                self.add_call(id, "local_shell", action.to_string());
            }
            // A hosted search: part of the model's turn, with nothing of it sent back but
            // the call itself.
            "web_search_call" => {
                let _ = self.assistant();
            }
            "function_call_output" | "custom_tool_call_output" => {
                let id = str_at(payload, "call_id").unwrap_or("").to_string();
                let output = output_text(payload.get("output"));
                let mut result = Message::tool_result(id.clone(), output);
                result.tool_name = self.tool_names.get(&id).cloned();
                self.push_input(result);
            }
            _ => self.count("response item(s) of an unknown type skipped"),
        }
    }

    /// A usage report: it belongs to the latest call and ends it.
    fn usage(&mut self, usage: &Value) {
        self.current = None;
        let Some(call) = self.rec.calls.last_mut() else {
            self.count("token count(s) before any model call skipped");
            return;
        };
        if call.usage.is_some() {
            // Codex repeats the last count when a turn ends; the call already has it.
            return;
        }
        let input = u64_at(usage, "input_tokens");
        let cache_read = u64_at(usage, "cached_input_tokens");
        let cache_write = u64_at(usage, "cache_write_input_tokens");
        call.usage = Some(RecordedUsage {
            input: input.saturating_sub(cache_read).saturating_sub(cache_write),
            cache_read,
            cache_write,
            output: u64_at(usage, "output_tokens"),
        });
    }

    fn finish(mut self, lines: usize) -> Result<Recording, EvalError> {
        let unpriced = self.rec.calls.iter().filter(|c| c.usage.is_none()).count();
        if unpriced > 0 && !self.rec.messages.is_empty() {
            self.rec
                .notes
                .push(format!("{unpriced} model call(s) without a token count"));
        }
        super::finish_lines(
            self.rec,
            &self.skipped,
            lines,
            "response_item message",
            "JSON line(s)",
        )
    }
}

/// The text parts of a message's content (`input_text`, `output_text`, plain `text`).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| str_at(p, "text")).collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}

/// A tool output: a string, a list of content items, or (older rollouts) an object whose
/// `content` is the text.
fn output_text(output: Option<&Value>) -> String {
    match output {
        Some(Value::Object(map)) => match map.get("content") {
            Some(content) => text_of(content),
            None => Value::Object(map.clone()).to_string(),
        },
        Some(other) => text_of(other),
        None => String::new(),
    }
}
