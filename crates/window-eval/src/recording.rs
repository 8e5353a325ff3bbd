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

/// The run's final usage as the provider billed it, where the recording has it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedTotal {
    /// The usage summed over the run's calls, with the final output count.
    pub usage: RecordedUsage,
    /// The cost the agent reported for the run's main model, in US dollars.
    pub cost_usd: Option<f64>,
    /// The model that cost is for.
    pub model: Option<String>,
}

/// One model call of the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCall {
    /// How many leading messages of [`Recording::messages`] the call sent. The model's answer
    /// is the assistant message(s) from this index up to the next call's `sent`.
    pub sent: usize,
    /// What the provider reported, when the format recorded it.
    pub usage: Option<RecordedUsage>,
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
    /// Which part of its file this is ("run 2", "segment 2"), when the file holds several.
    pub part: Option<String>,
    /// Tool-result placeholders the reader inserted (message indices, ascending) for results
    /// the agent received but the recording did not keep.
    pub missing_results: Vec<usize>,
    /// The run's final usage, when recorded.
    pub recorded_total: Option<RecordedTotal>,
    /// Whether the part begins with a compaction's summary.
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
        if self.family.is_none() {
            self.family = self.model.as_deref().and_then(Family::of_model);
        }
    }

    /// How many tool calls the history holds.
    pub fn tool_call_count(&self) -> usize {
        self.messages.iter().map(|m| m.tool_calls.len()).sum()
    }
}
