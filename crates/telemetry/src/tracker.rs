//! The mapping from a session's updates to span and metric records: pure (the time comes in
//! with each update), so every span and attribute is unit-tested without an SDK or a network.
//!
//! One `Tracker` follows one session. A model call's span opens at the agent's
//! `RequestStarted` (a supervised CLI) or, for panewise's own loop, which reports a call only
//! when it ends (`CallEnded`), at the last boundary before it: the turn's start or the end of
//! the tool whose result the call carries. Tool spans are keyed by the call id, approval waits
//! by the request id, so interleaved tools and questions close the right span.
//!
//! Content (prompts, answers, tool input and output) goes out only when the session's
//! [`Content`] says so, as the conventions' opt-in attributes, with every secret the shell
//! names replaced by `[redacted]` first.

use std::collections::BTreeMap;

use panewise_pane_state::log::Actor;
use panewise_pane_state::Msg;
use panewise_protocol::SessionStats;
use panewise_providers::{ProviderEvent, ToolStatus, UsageScope};
use panewise_session_protocol::Update;

use crate::names as n;
use crate::record::{Attribute, EventRecord, Kind, MetricRecord, Record, SpanRecord, Value};

/// What the exporter knows of a session before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session's id (`gen_ai.conversation.id`).
    pub id: String,
    /// The agent (`gen_ai.agent.name`): `panewise` for the own loop, the CLI's name otherwise.
    pub agent: String,
    /// panewise's provider name (`anthropic`, `claude-code`, `mock`, …).
    pub provider: String,
    /// The model asked for, when configured.
    pub model: Option<String>,
}

/// Whether a session's content is exported.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Content {
    /// Metadata only: the default.
    #[default]
    Off,
    /// Prompts, answers and tool input and output too, each of `secrets` (the values of the
    /// API key variables the shell found) replaced by `[redacted]` wherever it occurs.
    On {
        /// Values never to export.
        secrets: Vec<String>,
    },
}

/// The secrets' values are not shown.
impl std::fmt::Debug for Content {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Content::Off => f.write_str("Off"),
            Content::On { secrets } => write!(f, "On({} secrets)", secrets.len()),
        }
    }
}

impl Content {
    /// `text` with every secret replaced; `None` when content is off.
    fn keep(&self, text: &str) -> Option<String> {
        let Content::On { secrets } = self else {
            return None;
        };
        let mut text = text.to_owned();
        for secret in secrets.iter().filter(|secret| !secret.is_empty()) {
            text = text.replace(secret.as_str(), "[redacted]");
        }
        Some(text)
    }
}

/// The conventions' `gen_ai.provider.name` for one of panewise's provider names: the company
/// whose model answers, whether panewise calls it or a CLI does.
pub fn provider_name(provider: &str) -> String {
    match provider {
        "anthropic" | "claude-code" => "anthropic",
        "openai" | "codex" => "openai",
        "gemini" | "gemini-cli" => "gcp.gemini",
        "mock" => "panewise.mock",
        other => other,
    }
    .to_owned()
}

#[derive(Debug, Default)]
struct Chat {
    start_ms: u64,
    response_model: Option<String>,
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_creation: Option<u64>,
    output: Option<u64>,
    reasoning: Option<u64>,
    /// The call's own cost and where it comes from, when its end reports one (the own loop's
    /// calls, priced by the transport).
    cost_usd: Option<f64>,
    cost_source: Option<String>,
    finish_reasons: Vec<String>,
    error: Option<String>,
    events: Vec<EventRecord>,
    /// The messages the call was sent (content on): the prompt, the tools' results.
    sent: Vec<serde_json::Value>,
    /// The text it answered (content on).
    text: String,
}

#[derive(Debug)]
struct Tool {
    name: String,
    start_ms: u64,
    /// Its input, as JSON text (content on).
    arguments: Option<String>,
}

#[derive(Debug)]
struct Asked {
    tool: String,
    start_ms: u64,
}

/// Follows one session's updates and says what to export.
#[derive(Debug)]
pub struct Tracker {
    info: SessionInfo,
    provider: String,
    opened: bool,
    closed: bool,
    boundary_ms: u64,
    chat: Option<Chat>,
    tools: BTreeMap<String, Tool>,
    asks: BTreeMap<String, Asked>,
    turns: u64,
    cost_usd: Option<f64>,
    cost_source: Option<String>,
    last_failure: Option<String>,
    content: Content,
    /// Messages for the next model call (content on): the turn's prompt, tools' results.
    unsent: Vec<serde_json::Value>,
}

impl Tracker {
    /// A tracker for the session `info` describes.
    pub fn new(info: SessionInfo) -> Self {
        let provider = provider_name(&info.provider);
        Tracker {
            info,
            provider,
            opened: false,
            closed: false,
            boundary_ms: 0,
            chat: None,
            tools: BTreeMap::new(),
            asks: BTreeMap::new(),
            turns: 0,
            cost_usd: None,
            cost_source: None,
            last_failure: None,
            content: Content::Off,
            unsent: Vec::new(),
        }
    }

    /// The tracker with `content` exported or not (off by default).
    #[must_use]
    pub fn with_content(mut self, content: Content) -> Self {
        self.content = content;
        self
    }

    /// Opens the session's span at `now_ms`, before any update (so that its ids are known
    /// before the agent starts); a later first update opens nothing more.
    pub fn start(&mut self, now_ms: u64, out: &mut Vec<Record>) {
        if !self.closed {
            self.open(now_ms, out);
        }
    }

    /// What `update`, seen at `now_ms` (milliseconds since the Unix epoch), adds to `out`.
    pub fn observe(&mut self, now_ms: u64, update: &Update, out: &mut Vec<Record>) {
        if self.closed {
            return;
        }
        self.open(now_ms, out);
        match update {
            Update::Started { .. } => {}
            Update::Recorded { msg, .. } => self.recorded(now_ms, msg, out),
            Update::Agent(event) => self.agent(now_ms, event, out),
            Update::Ask { id, tool, .. } => {
                self.asks.insert(
                    id.clone(),
                    Asked {
                        tool: tool.clone(),
                        start_ms: now_ms,
                    },
                );
            }
            Update::AskWithdrawn { id } => self.settled(now_ms, id, "withdrawn", None, out),
            Update::Answered {
                id, approved, by, ..
            } => {
                let decision = if *approved { "approved" } else { "denied" };
                self.settled(now_ms, id, decision, Some(by), out);
            }
            Update::Emitted(_) | Update::Notice(_) => {}
        }
    }

    /// Closes what is still open and the session's span; later updates add nothing.
    pub fn finish(&mut self, now_ms: u64, out: &mut Vec<Record>) {
        if self.closed {
            return;
        }
        self.open(now_ms, out);
        self.close_chat(now_ms, out);
        for (id, tool) in std::mem::take(&mut self.tools) {
            out.push(Record::Span(self.tool_span(&id, tool, now_ms, None)));
        }
        let waiting: Vec<String> = self.asks.keys().cloned().collect();
        for id in waiting {
            self.settled(now_ms, &id, "unanswered", None, out);
        }
        let mut attributes = vec![(n::TURNS, int(self.turns))];
        if let Some(cost) = self.cost_usd {
            attributes.push((n::COST_USD, Value::Float(cost)));
        }
        if let Some(source) = &self.cost_source {
            attributes.push((n::COST_SOURCE, Value::Str(source.clone())));
        }
        out.push(Record::SessionClosed {
            end_ms: now_ms,
            attributes,
            error: self.last_failure.clone(),
        });
        out.push(metric(
            n::METRIC_SESSIONS,
            1.0,
            vec![(n::SESSION_STATE, s("ended"))],
        ));
        self.closed = true;
    }

    fn open(&mut self, now_ms: u64, out: &mut Vec<Record>) {
        if self.opened {
            return;
        }
        self.opened = true;
        self.boundary_ms = now_ms;
        let mut attributes = vec![
            (n::OPERATION_NAME, s("invoke_agent")),
            (n::AGENT_NAME, s(&self.info.agent)),
            (n::CONVERSATION_ID, s(&self.info.id)),
            (n::PROVIDER_NAME, s(&self.provider)),
        ];
        if let Some(model) = &self.info.model {
            attributes.push((n::REQUEST_MODEL, s(model)));
        }
        out.push(Record::SessionOpened {
            start_ms: now_ms,
            attributes,
        });
        out.push(metric(
            n::METRIC_SESSIONS,
            1.0,
            vec![(n::SESSION_STATE, s("started"))],
        ));
    }

    fn recorded(&mut self, now_ms: u64, msg: &Msg, out: &mut Vec<Record>) {
        match msg {
            Msg::TurnStart { content, .. } => {
                self.turns = self.turns.saturating_add(1);
                self.boundary_ms = now_ms;
                if let Some(prompt) = content {
                    self.prompted(prompt);
                }
            }
            // A prompt typed into panewise (the own loop's and the CLIs' alike).
            Msg::PromptSubmitted { text } => self.prompted(text),
            Msg::CompactionBoundary {
                trigger,
                pre_tokens,
                post_tokens,
                ..
            } => out.push(Record::SessionEvent(EventRecord {
                name: n::EVENT_COMPACTED,
                at_ms: now_ms,
                attributes: vec![
                    (n::COMPACTION_TRIGGER, s(&word(trigger))),
                    (n::COMPACTION_PRE_TOKENS, int(*pre_tokens)),
                    (n::COMPACTION_POST_TOKENS, int(*post_tokens)),
                ],
            })),
            _ => {}
        }
    }

    fn agent(&mut self, now_ms: u64, event: &ProviderEvent, out: &mut Vec<Record>) {
        match event {
            ProviderEvent::SessionStarted { model, .. } if self.info.model.is_none() => {
                self.info.model.clone_from(model);
            }
            ProviderEvent::RequestStarted => {
                self.close_chat(now_ms, out);
                self.chat_at(now_ms);
            }
            ProviderEvent::Usage {
                scope,
                model,
                input_tokens,
                cached_input_tokens,
                cache_write_input_tokens,
                output_tokens,
                reasoning_tokens,
                ..
            } => {
                let start = match scope {
                    UsageScope::Call => now_ms,
                    UsageScope::Turn => self.boundary_ms,
                };
                let chat = self.chat_at(start);
                // The conventions count the whole prompt, cache reads included.
                chat.input = Some(input_tokens.saturating_add(*cached_input_tokens));
                chat.cache_read = Some(*cached_input_tokens);
                // Already inside `input_tokens`, as the conventions count cache creation too.
                if cache_write_input_tokens.is_some() {
                    chat.cache_creation = *cache_write_input_tokens;
                }
                if output_tokens.is_some() {
                    chat.output = *output_tokens;
                }
                if reasoning_tokens.is_some() {
                    chat.reasoning = *reasoning_tokens;
                }
                if model.is_some() {
                    chat.response_model.clone_from(model);
                }
            }
            ProviderEvent::OutputTokens { output_tokens } => {
                self.chat_at(now_ms).output = Some(*output_tokens);
            }
            ProviderEvent::TurnStarted {
                prompt: Some(prompt),
                ..
            } => self.prompted(prompt),
            ProviderEvent::TextDelta { text } if self.content != Content::Off => {
                let start = self.boundary_ms;
                self.chat_at(start).text.push_str(text);
            }
            ProviderEvent::CallEnded {
                model,
                stop_reason,
                stats,
            } => {
                let start = self.boundary_ms;
                let chat = self.chat_at(start);
                fill(chat, stats);
                if model.is_some() {
                    chat.response_model.clone_from(model);
                }
                if let Some(reason) = stop_reason {
                    chat.finish_reasons.push(reason.clone());
                }
                self.close_chat(now_ms, out);
                self.boundary_ms = now_ms;
            }
            ProviderEvent::ToolStarted {
                name,
                call_id,
                arg,
                input,
            } => {
                // A CLI runs its tools after the call that asked for them ended.
                self.close_chat(now_ms, out);
                let arguments = input
                    .as_ref()
                    .map(serde_json::Value::to_string)
                    .or_else(|| arg.clone())
                    .and_then(|text| self.content.keep(&text));
                self.tools.insert(
                    call_id.clone(),
                    Tool {
                        name: name.clone(),
                        start_ms: now_ms,
                        arguments,
                    },
                );
            }
            ProviderEvent::ToolEnded {
                call_id,
                status,
                output,
                ..
            } => {
                let result = output.as_deref().and_then(|text| self.content.keep(text));
                if let Some(result) = &result {
                    self.unsent.push(serde_json::json!({
                        "role": "tool",
                        "parts": [{
                            "type": "tool_call_response",
                            "id": call_id,
                            "response": result,
                        }],
                    }));
                }
                if let Some(tool) = self.tools.remove(call_id) {
                    let error = match status {
                        ToolStatus::Success => None,
                        ToolStatus::Error => Some("tool_error".to_owned()),
                        ToolStatus::Declined => Some("tool_declined".to_owned()),
                    };
                    let mut span = self.tool_span(call_id, tool, now_ms, error);
                    if let Some(result) = result {
                        span.attributes
                            .push((n::TOOL_CALL_RESULT, Value::Str(result)));
                    }
                    out.push(Record::Span(span));
                }
                self.boundary_ms = now_ms;
            }
            ProviderEvent::TurnEnded { stats, .. } => {
                if let Some(chat) = self.chat.as_mut() {
                    if chat.input.is_none() && chat.output.is_none() {
                        fill(chat, stats);
                    }
                }
                self.close_chat(now_ms, out);
                self.boundary_ms = now_ms;
                if let Some(cost) = stats.cost_usd.filter(|cost| cost.is_finite()) {
                    let source = stats
                        .cost_source
                        .as_ref()
                        .map_or_else(|| "unknown".to_owned(), word);
                    self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
                    self.cost_source = Some(source.clone());
                    out.push(metric(
                        n::METRIC_COST,
                        cost,
                        vec![
                            (n::COST_SOURCE, Value::Str(source)),
                            (n::PROVIDER_NAME, s(&self.provider)),
                        ],
                    ));
                }
            }
            ProviderEvent::Failure { failure } => {
                let kind = word(&failure.kind);
                let event = EventRecord {
                    name: n::EVENT_FAILURE,
                    at_ms: now_ms,
                    attributes: vec![(n::ERROR_TYPE, s(&kind))],
                };
                if let Some(chat) = self.chat.as_mut() {
                    chat.error = Some(kind.clone());
                    chat.events.push(event.clone());
                }
                out.push(Record::SessionEvent(event));
                self.last_failure = Some(kind);
            }
            _ => {}
        }
    }

    /// A prompt for the next call (content on); the log's record and the agent's report of
    /// one prompt make one message.
    fn prompted(&mut self, prompt: &str) {
        let Some(prompt) = self.content.keep(prompt) else {
            return;
        };
        let message = serde_json::json!({
            "role": "user",
            "parts": [{"type": "text", "content": prompt}],
        });
        if self.unsent.last() != Some(&message) {
            self.unsent.push(message);
        }
    }

    fn chat_at(&mut self, start_ms: u64) -> &mut Chat {
        if self.chat.is_none() {
            // The call carries what was said since the last one.
            let sent = std::mem::take(&mut self.unsent);
            self.chat = Some(Chat {
                start_ms,
                sent,
                ..Chat::default()
            });
        }
        self.chat.get_or_insert_with(Chat::default)
    }

    fn close_chat(&mut self, now_ms: u64, out: &mut Vec<Record>) {
        let Some(chat) = self.chat.take() else {
            return;
        };
        let model = self
            .info
            .model
            .clone()
            .or_else(|| chat.response_model.clone());
        let mut attributes = vec![
            (n::OPERATION_NAME, s("chat")),
            (n::PROVIDER_NAME, s(&self.provider)),
            (n::CONVERSATION_ID, s(&self.info.id)),
        ];
        if let Some(model) = &self.info.model {
            attributes.push((n::REQUEST_MODEL, s(model)));
        }
        if let Some(model) = &chat.response_model {
            attributes.push((n::RESPONSE_MODEL, s(model)));
        }
        let counts = [
            (n::INPUT_TOKENS, chat.input),
            (n::OUTPUT_TOKENS, chat.output),
            (n::CACHE_READ_TOKENS, chat.cache_read),
            (n::CACHE_CREATION_TOKENS, chat.cache_creation),
            (n::REASONING_TOKENS, chat.reasoning),
        ];
        for (key, count) in counts {
            if let Some(count) = count {
                attributes.push((key, int(count)));
            }
        }
        if let Some(cost) = chat.cost_usd {
            attributes.push((n::COST_USD, Value::Float(cost)));
        }
        if let Some(source) = &chat.cost_source {
            attributes.push((n::COST_SOURCE, Value::Str(source.clone())));
        }
        if !chat.finish_reasons.is_empty() {
            attributes.push((
                n::FINISH_REASONS,
                Value::StrList(chat.finish_reasons.clone()),
            ));
        }
        if let Some(error) = &chat.error {
            attributes.push((n::ERROR_TYPE, s(error)));
        }
        if self.content != Content::Off {
            if !chat.sent.is_empty() {
                let sent = serde_json::Value::Array(chat.sent);
                attributes.push((n::INPUT_MESSAGES, Value::Str(sent.to_string())));
            }
            if let Some(text) = self
                .content
                .keep(&chat.text)
                .filter(|text| !text.is_empty())
            {
                let mut message = serde_json::json!({
                    "role": "assistant",
                    "parts": [{"type": "text", "content": text}],
                });
                if let Some(reason) = chat.finish_reasons.first() {
                    message["finish_reason"] = serde_json::Value::String(reason.clone());
                }
                let answered = serde_json::Value::Array(vec![message]);
                attributes.push((n::OUTPUT_MESSAGES, Value::Str(answered.to_string())));
            }
        }
        // The metrics carry the low-cardinality attributes only: no conversation id.
        let mut dims = vec![
            (n::OPERATION_NAME, s("chat")),
            (n::PROVIDER_NAME, s(&self.provider)),
        ];
        if let Some(model) = &model {
            dims.push((n::REQUEST_MODEL, s(model)));
        }
        for (kind, count) in [("input", chat.input), ("output", chat.output)] {
            if let Some(count) = count {
                let mut attributes = dims.clone();
                attributes.push((n::TOKEN_TYPE, s(kind)));
                out.push(metric(n::METRIC_TOKEN_USAGE, count as f64, attributes));
            }
        }
        let seconds = now_ms.saturating_sub(chat.start_ms) as f64 / 1000.0;
        out.push(metric(n::METRIC_OPERATION_DURATION, seconds, dims));
        out.push(Record::Span(SpanRecord {
            name: model.map_or_else(
                || n::SPAN_CHAT.to_owned(),
                |m| format!("{} {m}", n::SPAN_CHAT),
            ),
            kind: Kind::Client,
            start_ms: chat.start_ms,
            end_ms: now_ms.max(chat.start_ms),
            attributes,
            events: chat.events,
            error: chat.error,
        }));
    }

    fn tool_span(&self, id: &str, tool: Tool, now_ms: u64, error: Option<String>) -> SpanRecord {
        let mut attributes = vec![
            (n::OPERATION_NAME, s("execute_tool")),
            (n::TOOL_NAME, s(&tool.name)),
            (n::TOOL_CALL_ID, s(id)),
            (n::TOOL_TYPE, s("function")),
        ];
        if let Some(error) = &error {
            attributes.push((n::ERROR_TYPE, s(error)));
        }
        if let Some(arguments) = tool.arguments {
            attributes.push((n::TOOL_CALL_ARGUMENTS, Value::Str(arguments)));
        }
        SpanRecord {
            name: format!("{} {}", n::SPAN_EXECUTE_TOOL, tool.name),
            kind: Kind::Internal,
            start_ms: tool.start_ms,
            end_ms: now_ms.max(tool.start_ms),
            attributes,
            events: Vec::new(),
            error,
        }
    }

    fn settled(
        &mut self,
        now_ms: u64,
        id: &str,
        decision: &str,
        by: Option<&Actor>,
        out: &mut Vec<Record>,
    ) {
        let by = by.map(actor);
        let mut dims = vec![(n::APPROVAL_DECISION, s(decision))];
        if let Some(by) = &by {
            dims.push((n::APPROVAL_BY, s(by)));
        }
        if decision == "approved" || decision == "denied" {
            out.push(metric(n::METRIC_APPROVALS, 1.0, dims.clone()));
        }
        // An answer nobody waited for (the approval mode's) opens no wait.
        let Some(asked) = self.asks.remove(id) else {
            return;
        };
        let seconds = now_ms.saturating_sub(asked.start_ms) as f64 / 1000.0;
        out.push(metric(n::METRIC_APPROVAL_WAIT, seconds, dims.clone()));
        let mut attributes = vec![(n::TOOL_NAME, s(&asked.tool))];
        attributes.extend(dims);
        out.push(Record::Span(SpanRecord {
            name: n::SPAN_APPROVAL_WAIT.to_owned(),
            kind: Kind::Internal,
            start_ms: asked.start_ms,
            end_ms: now_ms.max(asked.start_ms),
            attributes,
            events: Vec::new(),
            error: None,
        }));
    }
}

fn fill(chat: &mut Chat, stats: &SessionStats) {
    let read = stats.cached_input_tokens;
    let write = stats.cache_write_input_tokens;
    if let Some(input) = stats.input_tokens {
        // `SessionStats::input_tokens` excludes the cache; the conventions' figure is the
        // whole prompt.
        let whole = input
            .saturating_add(read.unwrap_or(0))
            .saturating_add(write.unwrap_or(0));
        chat.input = Some(whole);
    }
    chat.cache_read = read.or(chat.cache_read);
    chat.cache_creation = write.or(chat.cache_creation);
    chat.output = stats.output_tokens.or(chat.output);
    chat.reasoning = stats.reasoning_tokens.or(chat.reasoning);
    if let Some(cost) = stats.cost_usd.filter(|cost| cost.is_finite()) {
        chat.cost_usd = Some(cost);
    }
    if let Some(source) = &stats.cost_source {
        chat.cost_source = Some(word(source));
    }
}

fn actor(by: &Actor) -> String {
    match by {
        Actor::Policy { .. } => "policy",
        Actor::Person => "person",
        Actor::Api { .. } => "client",
        Actor::Session => "session",
        Actor::Agent => "agent",
    }
    .to_owned()
}

/// The serde word of a unit enum (a failure kind, a cost source, a trigger).
fn word<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => word,
        _ => "unknown".to_owned(),
    }
}

fn s(text: &str) -> Value {
    Value::Str(text.to_owned())
}

fn int(count: u64) -> Value {
    Value::Int(i64::try_from(count).unwrap_or(i64::MAX))
}

fn metric(name: &'static str, value: f64, attributes: Vec<Attribute>) -> Record {
    Record::Metric(MetricRecord {
        name,
        value,
        attributes,
    })
}

#[cfg(test)]
mod tests;
