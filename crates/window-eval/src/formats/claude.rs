//! Reader of Claude Code's two recordings of a session: the `--output-format stream-json`
//! event stream ([`Format::ClaudeStreamJson`]) and the session store
//! `~/.claude/projects/<dir>/<session>.jsonl` ([`Format::ClaudeCodeSession`]).
//!
//! Both write one API response as several `assistant` lines sharing one `message.id`, one
//! content block each; the reader merges them back into one assistant message and one
//! [`ModelCall`], because that is what the next request sent. Thinking text is kept in the
//! content: Claude Code sends thinking blocks back with the history, so they take room.
//! Events of sub-agents (`parent_tool_use_id` set in stream-json, `isSidechain` in the store)
//! ran in another context and are skipped; only the `Task` call and its result stay.

use std::collections::BTreeMap;

use panewise_window::{Message, Role, ToolCall};
use serde_json::Value;

use crate::error::EvalError;
use crate::recording::{Family, Format, ModelCall, RecordedTotal, RecordedUsage, Recording};

/// How many leading non-empty lines detection parses: enough to get past the session
/// store's bookkeeping lines (queue operations, snapshots), few enough to stay cheap.
const DETECT_LINES: usize = 20;

/// The format of `text` when it is one this reader takes.
pub fn detect(text: &str) -> Option<Format> {
    for value in head_objects(text, DETECT_LINES) {
        let kind = str_at(&value, "type").unwrap_or("");
        // Stream-json writes snake_case `session_id` on every event and `parent_tool_use_id`
        // on every message event; the session store writes camelCase `sessionId`.
        if kind == "system"
            && str_at(&value, "subtype") == Some("init")
            && value.get("session_id").is_some()
        {
            return Some(Format::ClaudeStreamJson);
        }
        if matches!(kind, "assistant" | "user")
            && value.get("message").is_some()
            && value.get("parent_tool_use_id").is_some()
            && value.get("session_id").is_some()
        {
            return Some(Format::ClaudeStreamJson);
        }
        if value.get("sessionId").is_some()
            && (value.get("parentUuid").is_some()
                || matches!(kind, "queue-operation" | "file-history-snapshot"))
        {
            return Some(Format::ClaudeCodeSession);
        }
        if kind == "summary" && value.get("leafUuid").is_some() {
            return Some(Format::ClaudeCodeSession);
        }
    }
    None
}

/// The opening of the user message Claude Code sends in place of the history after a
/// compaction (the session store marks it `isCompactSummary` too).
pub(crate) const CONTINUATION: &str =
    "This session is being continued from a previous conversation";

/// Reads the recording's first run, whole (compaction segments not split); `format` is what
/// [`detect`] returned.
pub fn read(text: &str, format: Format) -> Result<Recording, EvalError> {
    let lines = parsed_lines(text);
    let runs = run_ranges(&lines, format);
    let first = runs.first().cloned().unwrap_or(0..0);
    let (rec, _) = read_run(lines.get(first).unwrap_or(&[]), format, lines.len())?;
    Ok(rec)
}

/// Reads every run of the file, each split into its compaction segments. A stream-json file
/// may hold several runs (each from its `system`/`init` to its `result`); the session store
/// is one run. A run that cannot be read becomes an empty part (left out by
/// [`super::read_all`] with a note), unless no run can be read: then its error.
pub fn read_runs(text: &str, format: Format) -> Result<Vec<Vec<Recording>>, EvalError> {
    let lines = parsed_lines(text);
    let ranges = run_ranges(&lines, format);
    let mut runs = Vec::new();
    let mut first_error = None;
    let mut any_read = false;
    for (index, range) in ranges.iter().enumerate() {
        let slice = lines.get(range.clone()).unwrap_or(&[]);
        match read_run(slice, format, slice.len()) {
            Ok((rec, compactions)) => {
                any_read = true;
                let starts: Vec<(usize, bool)> = compactions.iter().map(|&c| (c, true)).collect();
                runs.push(rec.split_at(&starts));
            }
            Err(error) => {
                // A run with nothing to read (an `init` alone) is a part with no call: it
                // keeps its place in the numbering and is left out with the others'.
                let mut empty = Recording::new(format);
                empty.notes.push(format!("run {}: {error}", index + 1));
                runs.push(vec![empty]);
                first_error.get_or_insert(error);
            }
        }
    }
    match first_error {
        Some(error) if !any_read => Err(error),
        _ => Ok(runs),
    }
}

/// One non-empty line of the file: its JSON object, or why not.
type Line = Result<Value, &'static str>;

fn parsed_lines(text: &str) -> Vec<Line> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(value) if value.is_object() => Ok(value),
            Ok(_) => Err("line(s) not a JSON object skipped"),
            Err(_) => Err("line(s) not JSON skipped"),
        })
        .collect()
}

/// The line ranges of the file's runs. A stream-json run ends at its `result`; a `system`/
/// `init` of another session starts a new one (a log that holds a second run without the
/// first's `result`). The session store is one run.
fn run_ranges(lines: &[Line], format: Format) -> Vec<std::ops::Range<usize>> {
    if format == Format::ClaudeCodeSession {
        return std::iter::once(0..lines.len()).collect();
    }
    let mut ranges = Vec::new();
    let mut start = 0usize;
    let mut session: Option<String> = None;
    for (index, line) in lines.iter().enumerate() {
        let Ok(value) = line else { continue };
        match str_at(value, "type") {
            Some("result") => {
                ranges.push(start..index + 1);
                start = index + 1;
                session = None;
            }
            Some("system") if str_at(value, "subtype") == Some("init") => {
                let id = str_at(value, "session_id").map(str::to_string);
                if session.is_some() && id != session && index > start {
                    ranges.push(start..index);
                    start = index;
                }
                session = id;
            }
            _ => {}
        }
    }
    if start < lines.len() || ranges.is_empty() {
        ranges.push(start..lines.len());
    }
    ranges
}

/// Reads one run's lines: the recording, and the message indices where a compaction's
/// continuation summary begins a new segment.
fn read_run(
    lines: &[Line],
    format: Format,
    count: usize,
) -> Result<(Recording, Vec<usize>), EvalError> {
    let store = format == Format::ClaudeCodeSession;
    let mut reader = Reader::new(format);
    let mut init_model: Option<String> = None;
    for (index, line) in lines.iter().enumerate() {
        let value = match line {
            Ok(value) => value,
            Err(what) => {
                reader.count(what);
                continue;
            }
        };
        let kind = str_at(value, "type").unwrap_or("").to_string();
        reader.line_ms = str_at(value, "timestamp").and_then(super::parse_rfc3339_ms);
        if !store {
            if kind == "result" {
                reader.result(value, init_model.as_deref());
                continue;
            }
            if kind == "system" && str_at(value, "subtype") == Some("init") {
                if init_model.is_none() {
                    init_model = str_at(value, "model").map(str::to_string);
                }
                if reader.rec.model.is_none() {
                    reader.rec.model = init_model.clone();
                }
                continue;
            }
            if value
                .get("parent_tool_use_id")
                .is_some_and(|p| !p.is_null())
            {
                reader.count("sub-agent event(s) skipped");
                continue;
            }
        } else if value.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            reader.count("sidechain (sub-agent) line(s) skipped");
            continue;
        }
        match kind.as_str() {
            "assistant" => reader.assistant(value, index),
            "user" => reader.user(value),
            "attachment" if store => reader.attachment(value),
            _ => reader.ignore(&kind),
        }
    }
    let compactions = std::mem::take(&mut reader.compactions);
    Ok((reader.finish(count)?, compactions))
}

/// The state of one read.
struct Reader {
    rec: Recording,
    /// Assistant `message.id` → index of its call in `rec.calls`.
    calls_by_id: BTreeMap<String, usize>,
    /// Tool-use id → tool name, to name the results.
    tool_names: BTreeMap<String, String>,
    /// Skip counts by description, turned into notes at the end.
    skipped: BTreeMap<&'static str, usize>,
    /// Line types that are bookkeeping rather than conversation, by count.
    ignored: BTreeMap<String, usize>,
    /// The time of the line being read, when it carries one.
    line_ms: Option<u64>,
    /// Message indices where a continuation summary begins a segment.
    compactions: Vec<usize>,
}

impl Reader {
    fn new(format: Format) -> Self {
        let mut rec = Recording::new(format);
        rec.family = Some(Family::Anthropic);
        Self {
            rec,
            calls_by_id: BTreeMap::new(),
            tool_names: BTreeMap::new(),
            skipped: BTreeMap::new(),
            ignored: BTreeMap::new(),
            line_ms: None,
            compactions: Vec::new(),
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.skipped.entry(what).or_insert(0) += 1;
    }

    fn ignore(&mut self, kind: &str) {
        let kind = if kind.is_empty() { "untyped" } else { kind };
        *self.ignored.entry(kind.to_string()).or_insert(0) += 1;
    }

    /// One `assistant` line: a content block (or several) of one API response.
    fn assistant(&mut self, value: &Value, line: usize) {
        let Some(message) = value.get("message").filter(|m| m.is_object()) else {
            self.count("assistant line(s) without a message skipped");
            return;
        };
        // Claude Code writes API errors and interruptions as assistant lines of the model
        // `<synthetic>`: no call was made for them.
        if str_at(message, "model") == Some("<synthetic>")
            || value.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
        {
            self.count("synthetic assistant line(s) (errors, interruptions) skipped");
            return;
        }
        if self.rec.model.is_none() {
            self.rec.model = str_at(message, "model").map(str::to_string);
        }
        let id = str_at(message, "id")
            .map(str::to_string)
            .unwrap_or_else(|| format!("line-{line}"));
        let usage = message.get("usage").and_then(anthropic_usage);
        let index = match self.calls_by_id.get(&id) {
            Some(&call) => {
                // Output tokens grow over the events of one response: the last one is whole.
                if let Some(slot) = self.rec.calls.get_mut(call) {
                    if usage.is_some() {
                        slot.usage = usage;
                    }
                    slot.sent
                } else {
                    return;
                }
            }
            None => {
                if self.rec.messages.is_empty() {
                    // Stream-json never records the prompt (it was the command's argument);
                    // an empty user message stands for it, so the first call sends something
                    // and is kept.
                    self.rec.messages.push(Message::user(""));
                    self.count("prompt(s) not recorded, stood for by an empty user message");
                }
                let sent = self.rec.messages.len();
                self.rec.messages.push(Message::assistant(""));
                self.calls_by_id.insert(id, self.rec.calls.len());
                self.rec.calls.push(ModelCall {
                    sent,
                    usage,
                    at_ms: self.line_ms,
                });
                sent
            }
        };
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        match message.get("content") {
            Some(Value::String(text)) => texts.push(text.clone()),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    match str_at(block, "type") {
                        Some("text") => texts.extend(str_at(block, "text").map(str::to_string)),
                        Some("thinking") => {
                            texts.extend(str_at(block, "thinking").map(str::to_string))
                        }
                        Some("tool_use") => {
                            let id = str_at(block, "id").unwrap_or("").to_string();
                            let name = str_at(block, "name").unwrap_or("").to_string();
                            let args = block
                                .get("input")
                                .map(Value::to_string)
                                .unwrap_or_else(|| "{}".into());
                            self.tool_names.insert(id.clone(), name.clone());
                            calls.push(ToolCall { id, name, args });
                        }
                        // Redacted thinking and server-side tool blocks carry no text we can size.
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if let Some(target) = self.rec.messages.get_mut(index) {
            for text in texts.iter().filter(|t| !t.is_empty()) {
                if !target.content.is_empty() {
                    target.content.push('\n');
                }
                target.content.push_str(text);
            }
            target.tool_calls.extend(calls);
        }
    }

    /// One `user` line: a prompt, or tool results (one tool message each).
    fn user(&mut self, value: &Value) {
        let Some(message) = value.get("message") else {
            self.count("user line(s) without a message skipped");
            return;
        };
        if value.get("isCompactSummary").and_then(Value::as_bool) == Some(true)
            || first_text(message.get("content")).is_some_and(|t| t.starts_with(CONTINUATION))
        {
            self.compactions.push(self.rec.messages.len());
        }
        match message.get("content") {
            Some(Value::String(text)) => {
                if !text.is_empty() {
                    self.rec.messages.push(Message::user(text.clone()));
                }
            }
            Some(Value::Array(blocks)) => {
                let mut texts = Vec::new();
                for block in blocks {
                    match str_at(block, "type") {
                        Some("tool_result") => {
                            let id = str_at(block, "tool_use_id").unwrap_or("").to_string();
                            let content = block.get("content").map(text_of).unwrap_or_default();
                            let mut result = Message::tool_result(id.clone(), content);
                            result.tool_name = self.tool_names.get(&id).cloned();
                            self.rec.messages.push(result);
                        }
                        Some("text") => texts.extend(str_at(block, "text").map(str::to_string)),
                        // Images and documents count no characters in the window stage.
                        _ => {}
                    }
                }
                // The API puts tool results first in a user turn and any text after them.
                let text = texts.join("\n");
                if !text.is_empty() {
                    self.rec.messages.push(Message::user(text));
                }
            }
            _ => self.count("user line(s) without content skipped"),
        }
    }

    /// A stream-json `result`: the run's final usage, and the cost of its own model (the
    /// other models' costs, sub-agents' and helpers', go to the notes).
    fn result(&mut self, value: &Value, init_model: Option<&str>) {
        let Some(usage) = value.get("usage").and_then(anthropic_usage) else {
            self.count("result event(s) without usage");
            return;
        };
        let model = init_model
            .map(str::to_string)
            .or_else(|| self.rec.model.clone());
        let mut cost_usd = None;
        let mut others = Vec::new();
        if let Some(Value::Object(models)) = value.get("modelUsage") {
            for (name, entry) in models {
                let cost = entry.get("costUSD").and_then(Value::as_f64);
                if model.as_deref() == Some(name.as_str()) {
                    cost_usd = cost;
                } else if let Some(cost) = cost {
                    others.push(format!("{name} ${cost:.4}"));
                }
            }
        }
        if !others.is_empty() {
            self.rec.notes.push(format!(
                "the run's bill also names other models (sub-agents, helpers), not replayed: {}",
                others.join(", ")
            ));
        }
        self.rec.recorded_total = Some(RecordedTotal {
            usage,
            cost_usd,
            model,
        });
    }

    /// One store `attachment` line. Those with `rendered` text were sent to the model
    /// (environment, date, reminders): they become messages of the role they were rendered
    /// in. The `prompt_snapshot` one holds the system prompt.
    fn attachment(&mut self, value: &Value) {
        let attachment = value.get("attachment");
        if let Some(parts) = attachment
            .and_then(|a| a.get("systemPrompt"))
            .and_then(Value::as_array)
        {
            if self.rec.system.is_none() {
                let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                self.rec.system = Some(parts.join("\n\n"));
            }
            return;
        }
        let Some(rendered) = value.get("rendered").and_then(Value::as_array) else {
            self.ignore("attachment (not rendered)");
            return;
        };
        let text: Vec<&str> = rendered
            .iter()
            .filter_map(|part| str_at(part, "content"))
            .collect();
        let text = text.join("\n");
        if text.is_empty() {
            return;
        }
        let role = if str_at(value, "renderedRole") == Some("system") {
            Role::System
        } else {
            Role::User
        };
        self.rec.messages.push(Message::new(role, text));
    }

    fn finish(self, lines: usize) -> Result<Recording, EvalError> {
        let mut rec = super::finish_lines(
            self.rec,
            &self.skipped,
            lines,
            "user or assistant message",
            "line(s)",
        )?;
        if !self.ignored.is_empty() {
            let total: usize = self.ignored.values().sum();
            let kinds: Vec<&str> = self.ignored.keys().map(String::as_str).collect();
            rec.notes.push(format!(
                "{total} line(s) that are not conversation ignored ({})",
                kinds.join(", ")
            ));
        }
        Ok(rec)
    }
}

/// Anthropic's usage object: `input_tokens` already excludes the cache's reads and writes.
fn anthropic_usage(usage: &Value) -> Option<RecordedUsage> {
    if !usage.is_object() {
        return None;
    }
    Some(RecordedUsage {
        input: u64_at(usage, "input_tokens"),
        cache_read: u64_at(usage, "cache_read_input_tokens"),
        cache_write: u64_at(usage, "cache_creation_input_tokens"),
        output: u64_at(usage, "output_tokens"),
    })
}

/// The text of a tool result's content: a string, or the text parts of a list of blocks.
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Array(parts) => {
            let texts: Vec<String> = parts
                .iter()
                .filter_map(|part| match part {
                    Value::String(text) => Some(text.clone()),
                    _ => str_at(part, "text").map(str::to_string),
                })
                .collect();
            texts.join("\n")
        }
        other => other.to_string(),
    }
}

/// The first text of a message's content: the string, or the first `text` block.
fn first_text(content: Option<&Value>) -> Option<&str> {
    match content? {
        Value::String(text) => Some(text),
        Value::Array(blocks) => blocks
            .iter()
            .find(|b| str_at(b, "type") == Some("text"))
            .and_then(|b| str_at(b, "text")),
        _ => None,
    }
}

/// The first `limit` non-empty lines of `text` that parse as JSON objects (lines that do not
/// are passed over but still count towards the limit, so detection stays cheap).
pub(crate) fn head_objects(text: &str, limit: usize) -> impl Iterator<Item = Value> + '_ {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .take(limit)
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(Value::is_object)
}

/// The string at `key` of an object.
pub(crate) fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The unsigned number at `key` of an object, 0 when absent or not one.
pub(crate) fn u64_at(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}
