//! One recorded agent session, whatever format it came from: the history as the window
//! stage's [`Message`]s, and the model calls made along it.

use panewise_window::{Message, Role};
use serde::Serialize;

/// The formats a recording is read from, detected by content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Claude Code's session store, `~/.claude/projects/<dir>/<session>.jsonl`.
    ClaudeCodeSession,
    /// Claude Code's `--output-format stream-json` output, one event per line.
    ClaudeStreamJson,
    /// A Codex rollout, `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.
    CodexRollout,
    /// A Gemini CLI chat, `~/.gemini/tmp/<project>/chats/session-*.json(l)`.
    GeminiChat,
    /// A SpecStory markdown render of a Claude Code, Codex or Gemini CLI session.
    SpecStory,
    /// A SWE-agent trajectory (`.traj`).
    SweAgentTraj,
    /// A mini-swe-agent trajectory (`.traj.json`).
    MiniSweAgentTraj,
    /// A panewise session log (`<id>.jsonl` with its `.window.jsonl` ledger beside it).
    PanewiseLog,
    /// The window stage's own conversation file: chat-completions messages, one per line.
    WindowConversation,
}

impl Format {
    /// The name printed in tables and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCodeSession => "claude-code-session",
            Format::ClaudeStreamJson => "claude-stream-json",
            Format::CodexRollout => "codex-rollout",
            Format::GeminiChat => "gemini-chat",
            Format::SpecStory => "specstory",
            Format::SweAgentTraj => "swe-agent-traj",
            Format::MiniSweAgentTraj => "mini-swe-agent-traj",
            Format::PanewiseLog => "panewise-log",
            Format::WindowConversation => "window-conversation",
        }
    }
}

/// The provider whose API made the recorded calls: it decides the cache rules and the default
/// price when the recording names no model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Anthropic's Messages API (Claude Code, panewise over Anthropic).
    Anthropic,
    /// OpenAI's APIs (Codex, SWE-agent's GPT runs).
    OpenAi,
    /// Google's Gemini API (Gemini CLI).
    Gemini,
}

impl Family {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Anthropic => "anthropic",
            Family::OpenAi => "openai",
            Family::Gemini => "gemini",
        }
    }

    /// The family a model id belongs to, by its well-known prefixes.
    pub fn of_model(model: &str) -> Option<Family> {
        let model = model.to_ascii_lowercase();
        let model = model.rsplit('/').next().unwrap_or(&model).to_string();
        if model.starts_with("claude") {
            Some(Family::Anthropic)
        } else if model.starts_with("gpt")
            || model.starts_with("o1")
            || model.starts_with("o3")
            || model.starts_with("o4")
            || model.starts_with("codex")
        {
            Some(Family::OpenAi)
        } else if model.starts_with("gemini") {
            Some(Family::Gemini)
        } else {
            None
        }
    }
}

/// What the provider reported for one call, where the format recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedUsage {
    /// Input tokens neither read from nor written to the cache.
    pub input: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
}

impl RecordedUsage {
    /// Every input token of the call, cached or not: the prompt's size as the provider counted it.
    pub fn prompt(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }
}

/// One model call of the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCall {
    /// How many leading messages of [`Recording::messages`] the call sent. The model's answer
    /// is the assistant message(s) from this index up to the next call's `sent`.
    pub sent: usize,
    /// What the provider reported, when the format recorded it. For stream-json, the last
    /// event of the call's message id: its output tokens may still be partial (the run's
    /// [`Recording::recorded_total`] has the final count).
    pub usage: Option<RecordedUsage>,
    /// When the call was made, in milliseconds since the Unix epoch, where the format records
    /// times (Claude Code's session store, Codex rollouts, Gemini chats, SpecStory's headers,
    /// panewise logs); `None` otherwise.
    pub at_ms: Option<u64>,
}

/// A run's final usage as the provider billed it (stream-json's `result` event).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedTotal {
    /// The run's usage summed over its calls, with the final output count.
    pub usage: RecordedUsage,
    /// What the run's own model cost, as the provider priced it (other models' costs, those
    /// of sub-agents and helpers, are in the notes).
    pub cost_usd: Option<f64>,
    /// The model that `cost_usd` is for.
    pub model: Option<String>,
}

/// One recorded session, normalised.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recording {
    /// The format it was read from.
    pub format: Format,
    /// The provider family, when the format or the model tells it.
    pub family: Option<Family>,
    /// The model of the calls, when recorded (the first one named).
    pub model: Option<String>,
    /// The system prompt, when the format recorded it (most do not).
    pub system: Option<String>,
    /// The history in order: user prompts, assistant messages with their tool calls, tool
    /// results. Every tool result answers a call made earlier in the list.
    pub messages: Vec<Message>,
    /// The model calls in order; `sent` never decreases. A format that records no calls gets
    /// one per assistant message ([`Recording::calls_at_assistant_messages`]).
    pub calls: Vec<ModelCall>,
    /// What the reader had to skip or repair, in words, one entry per kind with its count.
    pub notes: Vec<String>,
    /// Which part of its file this is (`run 2`, `segment 2`, `run 2, segment 1`) when the file
    /// holds several runs or segments; `None` when the file is one part.
    pub part: Option<String>,
    /// Indices into [`Recording::messages`] of the tool-result placeholders [`Recording::repair`]
    /// inserted (empty content, the call's `tool_call_id`): one per tool call the recording
    /// holds no result for although a later model call was made, so the result was sent. A
    /// replay sizes them from the provider's readings.
    pub missing_results: Vec<usize>,
    /// The run's final usage and cost as the provider billed it, where the format records it.
    /// A run split into segments carries it on its last segment only, for the whole run.
    pub recorded_total: Option<RecordedTotal>,
    /// Whether this part begins after a compaction: its first message is the continuation
    /// summary the agent sent in place of the earlier history.
    pub segment_starts_with_compaction: bool,
}

impl Recording {
    /// An empty recording of `format`.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            family: None,
            model: None,
            system: None,
            messages: Vec::new(),
            calls: Vec::new(),
            notes: Vec::new(),
            part: None,
            missing_results: Vec::new(),
            recorded_total: None,
            segment_starts_with_compaction: false,
        }
    }

    /// One call before each assistant message that follows a non-assistant one: the call
    /// sent everything before it. For formats that record messages but not calls.
    pub fn calls_at_assistant_messages(messages: &[Message]) -> Vec<ModelCall> {
        let mut calls = Vec::new();
        let mut previous = None;
        for (index, message) in messages.iter().enumerate() {
            if message.role == Role::Assistant && previous != Some(Role::Assistant) {
                calls.push(ModelCall {
                    sent: index,
                    usage: None,
                    at_ms: None,
                });
            }
            previous = Some(message.role);
        }
        calls
    }

    /// Makes the recording one the window stage can take, and says what it changed in
    /// [`Recording::notes`]: a tool result whose call is not earlier in the history becomes a
    /// user message; a second result for the same call likewise; calls whose `sent` goes
    /// backwards or past the end are dropped; a call that would send nothing is dropped.
    pub fn repair(&mut self) {
        let mut seen_calls = std::collections::BTreeSet::new();
        let mut answered = std::collections::BTreeSet::new();
        let mut orphans = 0usize;
        for message in &mut self.messages {
            for call in &message.tool_calls {
                seen_calls.insert(call.id.clone());
            }
            if message.role == Role::Tool {
                let id = message.tool_call_id.clone().unwrap_or_default();
                if !seen_calls.contains(&id) || !answered.insert(id) {
                    orphans += 1;
                    message.role = Role::User;
                    message.tool_call_id = None;
                    message.tool_name = None;
                }
            }
        }
        if orphans > 0 {
            self.notes.push(format!(
                "{orphans} tool result(s) without an earlier call kept as user messages"
            ));
        }
        let len = self.messages.len();
        let before = self.calls.len();
        let mut last = 0usize;
        self.calls.retain(|call| {
            let keep = call.sent >= last && call.sent > 0 && call.sent <= len;
            if keep {
                last = call.sent;
            }
            keep
        });
        let dropped = before - self.calls.len();
        if dropped > 0 {
            self.notes.push(format!(
                "{dropped} model call(s) out of order or sending nothing dropped"
            ));
        }
        self.insert_missing_results();
        if self.family.is_none() {
            self.family = self.model.as_deref().and_then(Family::of_model);
        }
    }

    /// Puts an empty tool result, right after its call's message and the results already
    /// there, for every tool call that has no result anywhere but was followed by another
    /// model call: the agent sent a result then, which the recording lacks. Calls' `sent` are
    /// shifted past each insertion; the indices land in [`Recording::missing_results`].
    fn insert_missing_results(&mut self) {
        let answered: std::collections::BTreeSet<String> = self
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        let last_sent = self.calls.last().map_or(0, |c| c.sent);
        // (insertion index in the original list, call id), in order.
        let mut inserts: Vec<(usize, String)> = Vec::new();
        for (index, message) in self.messages.iter().enumerate() {
            if message.role != Role::Assistant || index >= last_sent {
                continue;
            }
            let missing: Vec<&str> = message
                .tool_calls
                .iter()
                .map(|c| c.id.as_str())
                .filter(|id| !answered.contains(*id))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let mut at = index + 1;
            while self.messages.get(at).is_some_and(|m| m.role == Role::Tool) {
                at += 1;
            }
            // A later call must have sent the results: it sends past this call's message.
            if at > last_sent {
                continue;
            }
            inserts.extend(missing.into_iter().map(|id| (at, id.to_string())));
        }
        if inserts.is_empty() {
            return;
        }
        let count = inserts.len();
        let mut messages = Vec::with_capacity(self.messages.len() + count);
        let mut placed = Vec::with_capacity(count);
        let mut pending = inserts.into_iter().peekable();
        let old = std::mem::take(&mut self.messages);
        let old_len = old.len();
        for (index, message) in old.into_iter().enumerate() {
            while let Some((_, id)) = pending.next_if(|(at, _)| *at == index) {
                placed.push(messages.len());
                messages.push(Message::tool_result(id, ""));
            }
            messages.push(message);
        }
        for (_, id) in pending.by_ref().filter(|(at, _)| *at >= old_len) {
            placed.push(messages.len());
            messages.push(Message::tool_result(id, ""));
        }
        // A placeholder put before original index `p` is in every prefix that reaches `p`.
        let before: Vec<usize> = placed
            .iter()
            .enumerate()
            .map(|(order, new)| new - order)
            .collect();
        let shift = |original: usize| before.iter().filter(|&&p| p <= original).count();
        for call in &mut self.calls {
            call.sent += shift(call.sent);
        }
        let mut earlier: Vec<usize> = self.missing_results.iter().map(|&i| i + shift(i)).collect();
        earlier.extend(placed);
        earlier.sort_unstable();
        self.missing_results = earlier;
        self.messages = messages;
        self.notes.push(format!(
            "{count} tool result(s) the recording lacks (the conversation went on past their call) stood for by empty placeholders"
        ));
    }

    /// Splits the recording before each of `starts` (message indices; `true` where the part
    /// begins after a compaction). A call goes with the part whose messages it sends the last
    /// of; its `sent` is counted from that part's start. Every part keeps the format, model,
    /// family and system prompt; the notes go with the first part, the recorded total with
    /// the last. Starts out of order, at 0 or past the end make no part (one at 0 marks the
    /// whole recording as beginning after a compaction).
    pub(crate) fn split_at(mut self, starts: &[(usize, bool)]) -> Vec<Recording> {
        let len = self.messages.len();
        let mut bounds: Vec<(usize, bool)> = Vec::new();
        for &(start, compaction) in starts {
            if start == 0 {
                self.segment_starts_with_compaction |= compaction;
            } else if start < len && bounds.last().is_none_or(|&(last, _)| start > last) {
                bounds.push((start, compaction));
            }
        }
        if bounds.is_empty() {
            return vec![self];
        }
        let mut template = Recording::new(self.format);
        template.family = self.family;
        template.model = self.model.clone();
        template.system = self.system.clone();
        let mut parts = Vec::with_capacity(bounds.len() + 1);
        let mut messages = std::mem::take(&mut self.messages).into_iter();
        let mut calls = std::mem::take(&mut self.calls).into_iter().peekable();
        let mut from = 0usize;
        let ends = bounds
            .iter()
            .map(|&(start, _)| start)
            .chain(std::iter::once(len));
        let flags = std::iter::once(self.segment_starts_with_compaction)
            .chain(bounds.iter().map(|&(_, compaction)| compaction));
        for (end, compaction) in ends.zip(flags) {
            let mut part = template.clone();
            part.segment_starts_with_compaction = compaction;
            part.messages = messages.by_ref().take(end - from).collect();
            while let Some(call) = calls.next_if(|call| call.sent <= end) {
                part.calls.push(ModelCall {
                    sent: call.sent.saturating_sub(from),
                    ..call
                });
            }
            parts.push(part);
            from = end;
        }
        if let Some(first) = parts.first_mut() {
            first.notes = std::mem::take(&mut self.notes);
        }
        if let Some(last) = parts.last_mut() {
            last.recorded_total = self.recorded_total.take();
        }
        parts
    }

    /// How many tool calls the history holds.
    pub fn tool_call_count(&self) -> usize {
        self.messages.iter().map(|m| m.tool_calls.len()).sum()
    }
}
