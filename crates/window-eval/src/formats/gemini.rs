//! Reader of Gemini CLI chats, `~/.gemini/tmp/<project>/chats/session-*.jsonl` (and the older
//! single-object `session-*.json`, `{"sessionId", "projectHash", "messages": [...]}`).
//!
//! The `.jsonl` form is a log of edits to that object: a metadata line
//! (`sessionId`, `projectHash`, ...), `{"$set": {...}}` lines (a `messages` array there
//! replaces the whole list), and message records, each appended, or replacing the earlier
//! record of the same `id` (Gemini CLI rewrites a message as its tool calls finish). The
//! reader replays those edits, then reads the final list.
//!
//! How the records map:
//! - `user` records: text parts become a user message. Their `functionResponse` parts repeat
//!   results the `gemini` record already holds; they become tool messages only for calls whose
//!   result was not recorded there.
//! - `gemini` records: one assistant message per model call, its `toolCalls` as tool calls,
//!   then a tool message per call with its `functionResponse` output. Consecutive `gemini`
//!   records merge into one call (the CLI writes a response's text and its tool calls as two
//!   records, only one with `tokens`) unless both carry `tokens`. `thoughts` are left out:
//!   they are summaries shown to the user, and Gemini CLI does not send them back.
//! - `info`, `error` and `warning` records are the CLI's own display, never sent: skipped.
//! - `tokens`: Gemini's `input` includes the cached tokens (uncached = `input` − `cached`)
//!   and `tool` (tool-use prompt tokens) is input too; `thoughts` are billed as output.

use std::collections::{BTreeMap, BTreeSet};

use panewise_window::{Message, ToolCall};
use serde_json::Value;

use super::claude::{head_objects, str_at, text_of, u64_at};
use crate::error::EvalError;
use crate::recording::{Family, Format, ModelCall, RecordedUsage, Recording};

/// How many leading lines detection parses.
const DETECT_LINES: usize = 10;

/// How many leading bytes of a pretty-printed single-object chat detection looks at.
const DETECT_PREFIX: usize = 4096;

/// Whether `text` is in this format.
pub fn detect(text: &str) -> bool {
    let by_lines = head_objects(text, DETECT_LINES).any(|value| {
        // `projectHash` is Gemini CLI's own key; a `gemini` record is its model's turn.
        (value.get("sessionId").is_some() && value.get("projectHash").is_some())
            || (str_at(&value, "type") == Some("gemini") && value.get("id").is_some())
    });
    by_lines || {
        // A pretty-printed `session-*.json`: its opening keys sit in the first lines.
        let trimmed = text.trim_start();
        let prefix = prefix(trimmed, DETECT_PREFIX);
        trimmed.starts_with('{')
            && prefix.contains("\"sessionId\"")
            && prefix.contains("\"projectHash\"")
    }
}

/// Reads the recording.
pub fn read(text: &str) -> Result<Recording, EvalError> {
    let mut reader = Reader::new();
    let records = match serde_json::from_str::<Value>(text.trim()) {
        // The single-object form.
        Ok(Value::Object(object)) if object.get("messages").is_some_and(Value::is_array) => {
            match object.get("messages") {
                Some(Value::Array(messages)) => messages.clone(),
                _ => Vec::new(),
            }
        }
        _ => reader.replay_log(text),
    };
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    for record in &records {
        reader.record(record);
    }
    reader.finish(lines)
}

/// The state of one read.
struct Reader {
    rec: Recording,
    /// The assistant message of the model call under way, while `gemini` records continue it.
    current: Option<usize>,
    /// Call id → tool name, to name the results.
    tool_names: BTreeMap<String, String>,
    /// Calls whose result is already in the history.
    answered: BTreeSet<String>,
    /// Skip counts by description, turned into notes at the end.
    skipped: BTreeMap<&'static str, usize>,
}

impl Reader {
    fn new() -> Self {
        let mut rec = Recording::new(Format::GeminiChat);
        rec.family = Some(Family::Gemini);
        Self {
            rec,
            current: None,
            tool_names: BTreeMap::new(),
            answered: BTreeSet::new(),
            skipped: BTreeMap::new(),
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.skipped.entry(what).or_insert(0) += 1;
    }

    /// Replays the `.jsonl` edit log into the final list of message records.
    fn replay_log(&mut self, text: &str) -> Vec<Value> {
        let mut records: Vec<Value> = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let value = match serde_json::from_str::<Value>(line) {
                Ok(value) if value.is_object() => value,
                Ok(_) => {
                    self.count("line(s) not a JSON object skipped");
                    continue;
                }
                Err(_) => {
                    self.count("line(s) not JSON skipped");
                    continue;
                }
            };
            if let Some(set) = value.get("$set") {
                if let Some(messages) = set.get("messages").and_then(Value::as_array) {
                    records = messages.clone();
                }
                continue;
            }
            if value.get("type").is_some() && value.get("id").is_some() {
                let id = value.get("id");
                match records.iter_mut().find(|r| r.get("id") == id) {
                    Some(slot) => *slot = value,
                    None => records.push(value),
                }
            } else if value.get("sessionId").is_none() {
                // Metadata lines (`sessionId`, `startTime`, ...) hold nothing of the history.
                self.count("line(s) of an unknown shape skipped");
            }
        }
        records
    }

    fn push_input(&mut self, message: Message) {
        self.current = None;
        self.rec.messages.push(message);
    }

    fn record(&mut self, record: &Value) {
        match str_at(record, "type").unwrap_or("") {
            "user" => self.user(record),
            "gemini" | "model" => self.gemini(record),
            "info" | "error" | "warning" => {
                self.count("display record(s) (info, error, warning) skipped")
            }
            _ => self.count("record(s) of an unknown type skipped"),
        }
    }

    fn user(&mut self, record: &Value) {
        let mut texts = Vec::new();
        match record.get("content") {
            Some(Value::String(text)) => texts.push(text.clone()),
            Some(Value::Array(parts)) => {
                for part in parts {
                    if let Some(response) = part.get("functionResponse") {
                        let id = str_at(response, "id").unwrap_or("").to_string();
                        if self.answered.contains(&id) {
                            continue;
                        }
                        let name = str_at(response, "name").map(str::to_string);
                        let mut result = Message::tool_result(id.clone(), response_text(response));
                        result.tool_name = name.or_else(|| self.tool_names.get(&id).cloned());
                        self.answered.insert(id);
                        self.push_input(result);
                    } else {
                        texts.extend(str_at(part, "text").map(str::to_string));
                    }
                }
            }
            _ => {}
        }
        let text = texts.join("\n");
        if !text.is_empty() {
            self.push_input(Message::user(text));
        }
    }

    fn gemini(&mut self, record: &Value) {
        if self.rec.model.is_none() {
            self.rec.model = str_at(record, "model").map(str::to_string);
        }
        let usage = record
            .get("tokens")
            .filter(|t| t.is_object())
            .map(gemini_usage);
        let continues = match (self.current, self.rec.calls.last()) {
            (Some(_), Some(call)) => !(usage.is_some() && call.usage.is_some()),
            _ => false,
        };
        let index = match self.current.filter(|_| continues) {
            Some(index) => {
                if let Some(call) = self.rec.calls.last_mut() {
                    if call.usage.is_none() {
                        call.usage = usage;
                    }
                }
                index
            }
            None => {
                let index = self.rec.messages.len();
                self.rec.messages.push(Message::assistant(""));
                self.rec.calls.push(ModelCall {
                    sent: index,
                    usage,
                    at_ms: str_at(record, "timestamp").and_then(super::parse_rfc3339_ms),
                });
                index
            }
        };
        let text = match record.get("content") {
            Some(content @ (Value::String(_) | Value::Array(_))) => text_of(content),
            _ => String::new(),
        };
        let mut results = Vec::new();
        let mut calls = Vec::new();
        for call in record
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = str_at(call, "id").unwrap_or("").to_string();
            let name = str_at(call, "name").unwrap_or("").to_string();
            let args = call
                .get("args")
                .map(Value::to_string)
                .unwrap_or_else(|| "{}".into());
            self.tool_names.insert(id.clone(), name.clone());
            calls.push(ToolCall {
                id: id.clone(),
                name: name.clone(),
                args,
            });
            match call.get("result").and_then(result_text) {
                Some(output) => results.push((id, name, output)),
                None => self.count("tool call(s) without a recorded result"),
            }
        }
        if let Some(message) = self.rec.messages.get_mut(index) {
            if !text.is_empty() {
                if !message.content.is_empty() {
                    message.content.push('\n');
                }
                message.content.push_str(&text);
            }
            message.tool_calls.extend(calls);
        }
        self.current = Some(index);
        for (id, name, output) in results {
            let mut result = Message::tool_result(id.clone(), output);
            result.tool_name = Some(name);
            self.answered.insert(id);
            self.push_input(result);
        }
    }

    fn finish(self, lines: usize) -> Result<Recording, EvalError> {
        super::finish_lines(
            self.rec,
            &self.skipped,
            lines,
            "user or gemini message",
            "line(s)",
        )
    }
}

/// Gemini's `tokens`: `input` counts the cached tokens too; `tool` is prompt input from tool
/// use; `thoughts` are output the user pays for.
fn gemini_usage(tokens: &Value) -> RecordedUsage {
    let cached = u64_at(tokens, "cached");
    RecordedUsage {
        input: u64_at(tokens, "input")
            .saturating_sub(cached)
            .saturating_add(u64_at(tokens, "tool")),
        cache_read: cached,
        cache_write: 0,
        output: u64_at(tokens, "output").saturating_add(u64_at(tokens, "thoughts")),
    }
}

/// The text of a tool call's recorded `result`: its `functionResponse` parts' outputs, or
/// `None` when no result was recorded.
fn result_text(result: &Value) -> Option<String> {
    match result {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) if parts.is_empty() => None,
        Value::Array(parts) => {
            let texts: Vec<String> = parts
                .iter()
                .map(|part| match part.get("functionResponse") {
                    Some(response) => response_text(response),
                    None => text_of(&Value::Array(vec![part.clone()])),
                })
                .collect();
            Some(texts.join("\n"))
        }
        other => Some(response_text(other)),
    }
}

/// The text of one `functionResponse`: its `response.output` (or `error`), else the response
/// as JSON text.
fn response_text(response: &Value) -> String {
    let Some(body) = response.get("response") else {
        return String::new();
    };
    str_at(body, "output")
        .or_else(|| str_at(body, "error"))
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string())
}

/// The longest prefix of `text` of at most `limit` bytes that ends on a character boundary.
fn prefix(text: &str, limit: usize) -> &str {
    let mut end = limit.min(text.len());
    while !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    text.get(..end).unwrap_or("")
}
