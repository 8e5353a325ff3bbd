//! Reader of SWE-agent trajectories (`.traj`) and mini-swe-agent ones (`.traj.json`).
//!
//! A SWE-agent `.traj` is one JSON object: `history` (the messages the model was sent, each
//! `{role, content, agent, message_type?, thought?, action?, tool_calls?, tool_call_ids?}`),
//! `trajectory` (one `{response, thought, action, observation}` step per model call), `info`
//! (`model_stats`, the exit status) and, in newer ones, `replay_config` (the run's
//! configuration, with the model's name). A mini-swe-agent `.traj.json` is
//! `{"info": {…, "config": {"model": {"model_name": …}}}, "messages": [{role, content}…],
//! "trajectory_format": "mini-swe-agent-1…"}`.
//!
//! The history is read as it was sent; the leading system message becomes
//! [`Recording::system`]. Function-calling runs carry `tool_calls` on the assistant messages
//! and `tool_call_ids` on the `tool` messages, read as they are. Runs without function calls
//! (SWE-agent's default and XML parsers, mini-swe-agent) write the action into the assistant's
//! text (a fenced block or `<command>…</command>`) and send the observation back as the next
//! user message; for those one tool call is synthesised per action (named after the action's
//! first word, `{"command": <action>}` as arguments) and the observation that follows becomes
//! its tool result, so the re-fetch and loss measures see the actions as they see any agent's
//! tool calls. The action then leaves the assistant's text (SWE-agent's own `thought` field is
//! that text), so its tokens are counted once, in the call.
//!
//! A history that is empty falls back on the `trajectory` steps (no system prompt or task
//! then); when both are empty the file is a [`EvalError::BadRecording`]. No usage per call is
//! recorded (`model_stats` holds run totals only).

use std::collections::{BTreeMap, BTreeSet};

use panewise_window::{Message, Role, ToolCall};
use serde_json::{Map, Value};

use crate::error::EvalError;
use crate::recording::{Family, Format, Recording};

/// The format of `text` when it is a SWE-agent or mini-swe-agent trajectory: a JSON object
/// whose first key is one only SWE-agent writes first (`environment`, `trajectory`,
/// `history`, `replay_config`), or a mini-swe-agent one (`info`, `messages`) naming
/// `mini-swe-agent` in its first or last 4 KB (where its `trajectory_format` and
/// `mini_version` are).
pub fn detect(text: &str) -> Option<Format> {
    let key = first_key(text)?;
    match key {
        "environment" | "trajectory" | "history" | "replay_config" => Some(Format::SweAgentTraj),
        "info" | "messages" | "trajectory_format" => {
            let marked = head_of(text, 4096).contains("mini-swe-agent")
                || tail_of(text, 4096).contains("mini-swe-agent");
            marked.then_some(Format::MiniSweAgentTraj)
        }
        _ => None,
    }
}

/// Reads a trajectory of `format` ([`Format::SweAgentTraj`] or [`Format::MiniSweAgentTraj`]).
pub fn read(text: &str, format: Format) -> Result<Recording, EvalError> {
    let bad = |reason: String| EvalError::BadRecording {
        format: format.as_str(),
        reason,
    };
    let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|error| bad(format!("not JSON: {error}")))?;
    let root = value
        .as_object()
        .ok_or_else(|| bad("the trajectory is not a JSON object".into()))?;
    let list_key = if format == Format::MiniSweAgentTraj {
        "messages"
    } else {
        "history"
    };
    let entries: Vec<&Map<String, Value>> = root
        .get(list_key)
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    let mut builder = Builder::default();
    if entries.is_empty() {
        let steps = root
            .get("trajectory")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if steps.is_empty() {
            return Err(bad(format!("the `{list_key}` and `trajectory` are empty")));
        }
        builder.count("history missing or empty: messages rebuilt from the trajectory steps");
        builder.steps(steps);
    } else {
        builder.entries(&entries);
    }
    let Builder {
        mut messages,
        counts,
        ..
    } = builder;
    let system = take_leading_system(&mut messages);
    if messages.is_empty() {
        return Err(bad("no message besides the system prompt".into()));
    }
    let mut recording = Recording::new(format);
    recording.model = model_of(root);
    recording.family = recording.model.as_deref().and_then(Family::of_model);
    recording.system = system;
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    recording.messages = messages;
    recording.notes = counts
        .into_iter()
        .map(|(what, count)| format!("{count} {what}"))
        .collect();
    Ok(recording)
}

#[derive(Debug, Default)]
struct Builder {
    messages: Vec<Message>,
    /// The synthesised call the next user message answers, with its tool's name.
    awaiting: Option<(String, String)>,
    next_id: usize,
    /// Every call id used so far.
    used: BTreeSet<String>,
    /// A reused call id → the unique id its latest call was given.
    renamed: BTreeMap<String, String>,
    counts: BTreeMap<&'static str, usize>,
}

impl Builder {
    /// `call` with an id no earlier call has: some recorded runs (SWE-agent's replayed
    /// demonstrations) reuse ids, and a history must pair each result with one call.
    fn unique(&mut self, mut call: ToolCall) -> ToolCall {
        if self.used.contains(&call.id) {
            let mut n = 2usize;
            let mut id = format!("{}~{n}", call.id);
            while self.used.contains(&id) {
                n += 1;
                id = format!("{}~{n}", call.id);
            }
            self.count("reused tool call id(s) made unique");
            self.renamed.insert(call.id.clone(), id.clone());
            call.id = id;
        } else {
            self.renamed.remove(&call.id);
        }
        self.used.insert(call.id.clone());
        call
    }

    fn entries(&mut self, entries: &[&Map<String, Value>]) {
        for entry in entries {
            let role = entry.get("role").and_then(Value::as_str).unwrap_or("");
            let content = content_text(entry.get("content"));
            match role {
                "system" => self.push(Message::new(Role::System, content)),
                "user" => self.user(content),
                "assistant" => {
                    let calls = tool_calls(entry.get("tool_calls"));
                    if calls.is_empty() {
                        let action = entry
                            .get("action")
                            .and_then(Value::as_str)
                            .filter(|action| !action.trim().is_empty())
                            .map(str::to_string);
                        let thought = entry.get("thought").and_then(Value::as_str);
                        self.action(content, thought, action);
                    } else {
                        let mut message = Message::new(Role::Assistant, content);
                        message.tool_calls = calls.into_iter().map(|c| self.unique(c)).collect();
                        self.push(message);
                    }
                }
                "tool" => {
                    let ids = entry
                        .get("tool_call_ids")
                        .and_then(Value::as_array)
                        .map(|ids| ids.iter().filter_map(Value::as_str).collect::<Vec<_>>())
                        .unwrap_or_default();
                    let id = entry
                        .get("tool_call_id")
                        .and_then(Value::as_str)
                        .or_else(|| ids.first().copied());
                    if ids.len() > 1 {
                        self.count("tool message(s) answering several calls kept for the first");
                    }
                    // The result answers the latest call that used this id.
                    let id = id.map(|id| self.renamed.get(id).map_or(id, String::as_str));
                    let mut message = Message::new(Role::Tool, content);
                    message.tool_call_id = id.map(str::to_string);
                    message.tool_name = id.and_then(|id| self.name_of(id));
                    self.push(message);
                }
                _ => self.count("message(s) of an unknown role skipped"),
            }
        }
    }

    /// Messages from `trajectory` steps: each the model's response with its action, then the
    /// observation.
    fn steps(&mut self, steps: &[Value]) {
        for step in steps.iter().filter_map(Value::as_object) {
            let text = |key: &str| step.get(key).and_then(Value::as_str);
            let response = text("response")
                .or(text("thought"))
                .unwrap_or("")
                .to_string();
            let action = text("action").map(str::to_string);
            self.action(response, text("thought"), action);
            if let Some(observation) = text("observation") {
                self.user(observation.to_string());
            }
        }
    }

    /// An assistant message without function calls: its action, found in the `action` field
    /// or in its text, becomes a synthesised call.
    fn action(&mut self, content: String, thought: Option<&str>, action: Option<String>) {
        let found = action.or_else(|| action_in(&content).map(|(action, _)| action));
        let Some(action) = found else {
            self.push(Message::new(Role::Assistant, content));
            return;
        };
        let text = match thought {
            Some(thought) => thought.trim().to_string(),
            None => action_in(&content).map_or(content.clone(), |(_, rest)| rest),
        };
        self.next_id += 1;
        let id = format!("swe-{}", self.next_id);
        self.used.insert(id.clone());
        let name = action
            .split_whitespace()
            .next()
            .unwrap_or("bash")
            .to_string();
        let mut message = Message::new(Role::Assistant, text);
        message.tool_calls.push(ToolCall {
            id: id.clone(),
            name: name.clone(),
            args: serde_json::json!({ "command": action.trim_end() }).to_string(),
        });
        self.push(message);
        self.awaiting = Some((id, name));
    }

    /// A user message: the observation of a synthesised call when one awaits it.
    fn user(&mut self, content: String) {
        match self.awaiting.take() {
            Some((id, name)) => {
                let mut message = Message::new(Role::Tool, content);
                message.tool_call_id = Some(id);
                message.tool_name = Some(name);
                self.messages.push(message);
            }
            None => self.messages.push(Message::new(Role::User, content)),
        }
    }

    fn push(&mut self, message: Message) {
        if self.awaiting.take().is_some() {
            self.count("synthesised call(s) with no observation after them");
        }
        self.messages.push(message);
    }

    fn name_of(&self, id: &str) -> Option<String> {
        self.messages.iter().rev().find_map(|message| {
            message
                .tool_calls
                .iter()
                .find(|call| call.id == id)
                .map(|call| call.name.clone())
        })
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_insert(0) += 1;
    }
}

/// The action written in an assistant's text, and the text without it: the last fenced block
/// (SWE-agent's default parser, mini-swe-agent's ```bash block) or the last
/// `<command>…</command>` (SWE-agent's XML parser).
fn action_in(content: &str) -> Option<(String, String)> {
    if let Some(start) = content.rfind("<command>") {
        let after = content.get(start + "<command>".len()..)?;
        let end = after.find("</command>")?;
        let action = after.get(..end)?.trim().to_string();
        let rest = format!(
            "{}{}",
            content.get(..start)?,
            after.get(end + "</command>".len()..)?
        );
        return (!action.is_empty()).then(|| (action, rest.trim().to_string()));
    }
    let lines: Vec<&str> = content.lines().collect();
    let close = lines.iter().rposition(|line| line.trim() == "```")?;
    let open = lines
        .get(..close)?
        .iter()
        .rposition(|line| line.trim_start().starts_with("```"))?;
    let action = lines.get(open + 1..close)?.join("\n");
    if action.trim().is_empty() {
        return None;
    }
    let mut rest: Vec<&str> = lines.get(..open)?.to_vec();
    rest.extend_from_slice(lines.get(close + 1..)?);
    Some((action, rest.join("\n").trim().to_string()))
}

/// Tool calls in the chat-completions shape (`{id, function: {name, arguments}}`) or flat
/// (`{id, name, arguments}`); arguments that are not a string are written as JSON text.
fn tool_calls(value: Option<&Value>) -> Vec<ToolCall> {
    let Some(list) = value.and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(Value::as_object)
        .enumerate()
        .map(|(index, call)| {
            let function = call
                .get("function")
                .and_then(Value::as_object)
                .unwrap_or(call);
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call-{index}"), str::to_string);
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string();
            let args = match function.get("arguments") {
                Some(Value::String(args)) => args.clone(),
                Some(other) => other.to_string(),
                None => "{}".into(),
            };
            ToolCall { id, name, args }
        })
        .collect()
}

/// A message's text: a string, or the `text` of a list of parts joined by newlines.
fn content_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Removes the leading system messages and returns their text.
fn take_leading_system(messages: &mut Vec<Message>) -> Option<String> {
    let leading = messages
        .iter()
        .take_while(|message| message.role == Role::System)
        .count();
    if leading == 0 {
        return None;
    }
    let system: Vec<String> = messages.drain(..leading).map(|m| m.content).collect();
    Some(system.join("\n\n"))
}

/// The model's name: SWE-agent's `replay_config.agent.model.name` (the config is an object
/// or a JSON string), mini-swe-agent's `info.config.model.model_name`, or `info.model`.
fn model_of(root: &Map<String, Value>) -> Option<String> {
    let replay = match root.get("replay_config") {
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
        Some(other) => Some(other.clone()),
        None => None,
    };
    let from_replay = replay.as_ref().and_then(|config| {
        config
            .pointer("/agent/model/name")
            .or_else(|| config.pointer("/agent/model/model_name"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let info = root.get("info");
    from_replay
        .or_else(|| {
            info.and_then(|info| info.pointer("/config/model/model_name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| {
            info.and_then(|info| info.get("model"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .filter(|model| !model.is_empty())
}

/// The first key of the JSON object `text` opens, read by hand so detection parses nothing.
fn first_key(text: &str) -> Option<&str> {
    let rest = text.trim_start_matches('\u{feff}').trim_start();
    let rest = rest.strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    rest.get(..end)
}

/// At most the first `max` bytes of `text`, cut at a character boundary.
fn head_of(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or("")
}

/// At most the last `max` bytes of `text`, cut at a character boundary.
fn tail_of(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.get(start..).unwrap_or("")
}
