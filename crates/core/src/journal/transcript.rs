//! [`TranscriptRecorder`]: turns what a session sees (the provider's events, the prompts it
//! sends, the answers it gives) into the log's transcript lines ([`TranscriptEntry`]).
//!
//! Streamed text and thinking arrive a few characters at a time; the recorder joins
//! consecutive pieces of one kind into one line, and writes the line out when something else
//! that the transcript records happens (a tool starts, a failure, a prompt), when a message,
//! call or turn ends, when the other kind of text begins, or when the joined text passes
//! [`TranscriptLimits::text_flush_bytes`]. Events the transcript does not hold (usage, token
//! counts, context windows) neither cut a line nor appear.
//!
//! The recorder does no I/O of its own: entries queue in it, and [`TranscriptRecorder::write_to`]
//! appends them to the session log. A host calls `write_to` before it records its next
//! message, so the conversation and the reducer's messages stay in order on disk.

use std::collections::VecDeque;

use panewise_pane_state::log::{Actor, ToolCallStatus, TranscriptEntry};
use panewise_providers::{ProviderEvent, ToolStatus};

/// Where transcript lines are appended: the session log's writer (`panewise_host`'s
/// `SessionLogFile`), or anything a test keeps them in.
pub trait TranscriptSink {
    /// Appends one transcript line stamped `at_ms`.
    fn transcript(&mut self, at_ms: u64, entry: &TranscriptEntry) -> std::io::Result<()>;
}

/// How Claude Code's stream says the person interrupted the turn (a user message it writes).
const CLAUDE_INTERRUPT_MARK: &str = "[Request interrupted by user";

/// How much the recorder holds before it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranscriptLimits {
    /// Joined text past this many bytes is written as a line, and a new one begun.
    pub text_flush_bytes: usize,
    /// A tool's output is kept to this many bytes; the rest is counted in `cut_bytes`.
    pub tool_output_bytes: usize,
}

impl Default for TranscriptLimits {
    fn default() -> Self {
        Self {
            text_flush_bytes: 8 * 1024,
            tool_output_bytes: 64 * 1024,
        }
    }
}

/// Where a session's prompts come from, for the recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptSource {
    /// The host sends them and records each as it sends it ([`TranscriptRecorder::record`]);
    /// prompts the agent's stream repeats are not recorded again.
    Sent,
    /// Only the stream knows them (a decoded capture): the prompts it repeats are recorded.
    Stream,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Streamed {
    Text,
    Thinking,
}

/// Text being joined: its kind, the time of its first piece, the text so far.
#[derive(Debug)]
struct Joining {
    kind: Streamed,
    since_ms: u64,
    text: String,
}

/// Builds the transcript of one session. See the module doc.
#[derive(Debug)]
pub struct TranscriptRecorder {
    limits: TranscriptLimits,
    prompts: PromptSource,
    joining: Option<Joining>,
    queue: VecDeque<(u64, TranscriptEntry)>,
    last_prompt: Option<String>,
    /// The calls recorded with their input (the own loop records a call when the model asks
    /// for it): their start is then not recorded a second time.
    recorded_calls: std::collections::BTreeSet<String>,
}

impl TranscriptRecorder {
    /// A recorder with the default limits.
    pub fn new(prompts: PromptSource) -> Self {
        Self::with_limits(prompts, TranscriptLimits::default())
    }

    /// A recorder with `limits`.
    pub fn with_limits(prompts: PromptSource, limits: TranscriptLimits) -> Self {
        Self {
            limits,
            prompts,
            joining: None,
            queue: VecDeque::new(),
            last_prompt: None,
            recorded_calls: std::collections::BTreeSet::new(),
        }
    }

    /// Takes in one provider event seen at `at_ms`: streamed text joins the open line; an
    /// event the transcript holds ends it and queues its own entry; any other event is
    /// passed over.
    pub fn on_event(&mut self, event: &ProviderEvent, at_ms: u64) {
        match event {
            ProviderEvent::TextDelta { text } => self.join(Streamed::Text, text, at_ms),
            ProviderEvent::ThinkingDelta { text } => self.join(Streamed::Thinking, text, at_ms),
            // What the pane counts, not what was said: the open line goes on.
            ProviderEvent::ThinkingProgress { .. }
            | ProviderEvent::Usage { .. }
            | ProviderEvent::OutputTokens { .. }
            | ProviderEvent::ContextWindows { .. }
            | ProviderEvent::RateLimitsUpdated { .. }
            | ProviderEvent::PlanUpdated { .. }
            | ProviderEvent::Warning { .. }
            | ProviderEvent::Unknown { .. }
            | ProviderEvent::SessionStarted { .. } => {}
            ProviderEvent::ToolStarted {
                call_id,
                input: None,
                ..
            } if self.recorded_call(call_id) => {}
            other => {
                self.flush(at_ms);
                if let Some(entry) = self.entry_for(other) {
                    self.record(entry, at_ms);
                }
            }
        }
    }

    /// Queues `entry` at `at_ms`, after the open line of text (which it ends).
    pub fn record(&mut self, entry: TranscriptEntry, at_ms: u64) {
        self.flush(at_ms);
        match &entry {
            TranscriptEntry::Prompt { text } => self.last_prompt = Some(text.clone()),
            TranscriptEntry::ToolCall {
                call_id,
                input: Some(_),
                ..
            } => {
                self.recorded_calls.insert(call_id.clone());
            }
            _ => {}
        }
        self.queue.push_back((at_ms, entry));
    }

    /// Ends the open line of text, if any, queueing it.
    pub fn flush(&mut self, _at_ms: u64) {
        if let Some(joining) = self.joining.take() {
            if !joining.text.is_empty() {
                let entry = match joining.kind {
                    Streamed::Text => TranscriptEntry::Text { text: joining.text },
                    Streamed::Thinking => TranscriptEntry::Thinking { text: joining.text },
                };
                self.queue.push_back((joining.since_ms, entry));
            }
        }
    }

    /// Appends every queued entry to `log`, oldest first. The open line of text stays open.
    pub fn write_to(&mut self, log: &mut impl TranscriptSink) -> std::io::Result<()> {
        while let Some((at_ms, entry)) = self.queue.front() {
            log.transcript(*at_ms, entry)?;
            self.queue.pop_front();
        }
        Ok(())
    }

    /// Ends the transcript: the open line, every queued entry, then
    /// [`TranscriptEntry::SessionEnded`] with the error that ended the session, if one did.
    /// Called after the session's final checkpoint.
    pub fn finish(
        &mut self,
        at_ms: u64,
        error: Option<String>,
        log: &mut impl TranscriptSink,
    ) -> std::io::Result<()> {
        self.record(TranscriptEntry::SessionEnded { error }, at_ms);
        self.write_to(log)
    }

    /// The entries queued and not yet written, for a host that writes them elsewhere (a test,
    /// a view).
    pub fn take_queued(&mut self) -> Vec<(u64, TranscriptEntry)> {
        self.queue.drain(..).collect()
    }

    /// Whether `call_id` was recorded with its input already.
    fn recorded_call(&self, call_id: &str) -> bool {
        self.recorded_calls.contains(call_id)
    }

    fn join(&mut self, kind: Streamed, text: &str, at_ms: u64) {
        if self.joining.as_ref().is_some_and(|open| open.kind != kind) {
            self.flush(at_ms);
        }
        let open = self.joining.get_or_insert_with(|| Joining {
            kind,
            since_ms: at_ms,
            text: String::new(),
        });
        open.text.push_str(text);
        if open.text.len() >= self.limits.text_flush_bytes {
            self.flush(at_ms);
        }
    }

    /// The entry an event the transcript holds becomes.
    fn entry_for(&self, event: &ProviderEvent) -> Option<TranscriptEntry> {
        Some(match event {
            ProviderEvent::TurnStarted { prompt: Some(text) } => self.streamed_prompt(text)?,
            // Claude Code's own words for a turn the person stopped: an interrupt, not a prompt.
            ProviderEvent::UserMessage {
                text,
                synthetic: false,
            } if text.starts_with(CLAUDE_INTERRUPT_MARK) => {
                TranscriptEntry::Interrupt { by: Actor::Person }
            }
            ProviderEvent::UserMessage {
                text,
                synthetic: false,
            } => self.streamed_prompt(text)?,
            ProviderEvent::ToolStarted {
                name,
                call_id,
                arg,
                input,
            } => TranscriptEntry::ToolCall {
                call_id: call_id.clone(),
                name: name.clone(),
                input: input.clone(),
                arg: if input.is_some() { None } else { arg.clone() },
            },
            ProviderEvent::ToolEnded {
                call_id,
                status,
                exit_code,
                output,
            } => {
                let (output, cut_bytes) = match output {
                    Some(output) => {
                        let (kept, cut) = cap(output, self.limits.tool_output_bytes);
                        (Some(kept.to_owned()), cut)
                    }
                    None => (None, 0),
                };
                TranscriptEntry::ToolOutput {
                    call_id: call_id.clone(),
                    status: tool_status(*status),
                    exit_code: *exit_code,
                    output,
                    cut_bytes,
                }
            }
            ProviderEvent::ApprovalRequested {
                request_id,
                tool,
                arg,
                input,
                ..
            } => TranscriptEntry::ApprovalRequested {
                request_id: request_id.clone(),
                tool: tool.clone(),
                summary: arg.clone(),
                input: (!input.is_null()).then(|| input.clone()),
            },
            ProviderEvent::ApprovalWithdrawn { request_id } => TranscriptEntry::ApprovalWithdrawn {
                request_id: request_id.clone(),
            },
            ProviderEvent::Failure { failure } => TranscriptEntry::Failure {
                failure: failure.clone(),
            },
            ProviderEvent::ProviderRetrying {
                attempt,
                max_retries,
                retry_delay_ms,
                http_status,
                reason,
            } => TranscriptEntry::Retry {
                attempt: *attempt,
                max_retries: *max_retries,
                wait_ms: *retry_delay_ms,
                http_status: *http_status,
                reason: reason.clone(),
            },
            ProviderEvent::HistoryReplayed { role, text } => TranscriptEntry::History {
                role: role.clone(),
                text: text.clone(),
            },
            // Boundaries: they end the open line and hold nothing themselves.
            _ => return None,
        })
    }

    /// A prompt the stream repeats: recorded when only the stream knows the prompts, and
    /// once (Gemini CLI's turn start and its user message say it twice).
    fn streamed_prompt(&self, text: &str) -> Option<TranscriptEntry> {
        (self.prompts == PromptSource::Stream && self.last_prompt.as_deref() != Some(text)).then(
            || TranscriptEntry::Prompt {
                text: text.to_owned(),
            },
        )
    }
}

impl Default for TranscriptRecorder {
    fn default() -> Self {
        Self::new(PromptSource::Sent)
    }
}

fn tool_status(status: ToolStatus) -> ToolCallStatus {
    match status {
        ToolStatus::Success => ToolCallStatus::Success,
        ToolStatus::Error => ToolCallStatus::Error,
        ToolStatus::Declined => ToolCallStatus::Declined,
    }
}

/// `text` cut to at most `limit` bytes at a character boundary, and the bytes cut.
fn cap(text: &str, limit: usize) -> (&str, u64) {
    if text.len() <= limit {
        return (text, 0);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = u64::try_from(text.len() - end).unwrap_or(u64::MAX);
    (&text[..end], cut)
}

/// A model's tool-call arguments as JSON: the object it wrote, or, when the text is not JSON
/// (a model's mistake, which the loop reports back to it), the text itself.
pub fn arguments_value(arguments: &str) -> serde_json::Value {
    if arguments.trim().is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| serde_json::Value::String(arguments.into()))
}

/// What panewise's own policy table decided about a call, as the transcript says it: `Run`
/// and `Deny` are the approval mode's answers; `Ask` is a request for the person.
pub fn policy_entry(
    call_id: &str,
    tool: &str,
    summary: &str,
    decision: &crate::approval::Decision,
    mode: crate::approval::ApprovalMode,
) -> TranscriptEntry {
    use crate::approval::Decision;
    match decision {
        Decision::Run => TranscriptEntry::ApprovalAnswered {
            request_id: Some(call_id.to_owned()),
            approved: true,
            for_session: false,
            by: by_policy(mode),
            reason: None,
        },
        Decision::Deny { reason } => TranscriptEntry::ApprovalAnswered {
            request_id: Some(call_id.to_owned()),
            approved: false,
            for_session: false,
            by: by_policy(mode),
            reason: Some(reason.clone()),
        },
        Decision::Ask => TranscriptEntry::ApprovalRequested {
            request_id: call_id.to_owned(),
            tool: tool.to_owned(),
            summary: Some(summary.to_owned()),
            input: None,
        },
    }
}

/// Who answered for the approval mode `mode`.
pub fn by_policy(mode: crate::approval::ApprovalMode) -> Actor {
    Actor::Policy {
        mode: mode.name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_providers::{Failure, FailureKind};

    fn text(text: &str) -> ProviderEvent {
        ProviderEvent::TextDelta { text: text.into() }
    }

    #[test]
    fn streamed_pieces_join_into_one_line_cut_where_something_else_happens() {
        let mut recorder = TranscriptRecorder::default();
        let events = [
            ProviderEvent::ThinkingDelta {
                text: "Let me ".into(),
            },
            ProviderEvent::ThinkingProgress {
                estimated_tokens: 3,
            },
            ProviderEvent::ThinkingDelta {
                text: "think.".into(),
            },
            text("I'll "),
            ProviderEvent::OutputTokens { output_tokens: 2 },
            text("run it."),
            ProviderEvent::ToolStarted {
                name: "shell".into(),
                call_id: "c1".into(),
                arg: Some("echo hi".into()),
                input: Some(serde_json::json!({"command": "echo hi"})),
            },
            ProviderEvent::ToolEnded {
                call_id: "c1".into(),
                status: ToolStatus::Success,
                exit_code: Some(0),
                output: Some("hi\n".into()),
            },
            text("Done."),
            ProviderEvent::TurnEnded {
                stats: Default::default(),
                models: Default::default(),
                interrupted: false,
            },
        ];
        for (at, event) in events.iter().enumerate() {
            recorder.on_event(event, at as u64);
        }
        let kinds: Vec<(u64, &str)> = recorder
            .take_queued()
            .iter()
            .map(|(at, entry)| (*at, entry.kind_name()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (0, "thinking"),
                (3, "text"),
                (6, "tool_call"),
                (7, "tool_output"),
                (8, "text")
            ]
        );
    }

    #[test]
    fn a_long_answer_is_cut_into_lines_at_the_limit_and_loses_nothing() {
        let limits = TranscriptLimits {
            text_flush_bytes: 10,
            tool_output_bytes: 4,
        };
        let mut recorder = TranscriptRecorder::with_limits(PromptSource::Sent, limits);
        let whole = "abcdefghijklmnopqrstuvwxyz";
        for piece in whole.as_bytes().chunks(3) {
            recorder.on_event(&text(std::str::from_utf8(piece).unwrap_or("")), 1);
        }
        recorder.flush(2);
        let texts: Vec<String> = recorder
            .take_queued()
            .into_iter()
            .filter_map(|(_, entry)| match entry {
                TranscriptEntry::Text { text } => Some(text),
                _ => None,
            })
            .collect();
        assert!(texts.iter().all(|text| text.len() <= 12), "{texts:?}");
        assert_eq!(texts.len(), 3);
        assert_eq!(texts.concat(), whole);
    }

    #[test]
    fn tool_output_is_capped_at_a_character_boundary_and_the_cut_counted() {
        let limits = TranscriptLimits {
            text_flush_bytes: 100,
            tool_output_bytes: 5,
        };
        let mut recorder = TranscriptRecorder::with_limits(PromptSource::Sent, limits);
        // The limit (5 bytes) falls inside the three bytes of `€`, which goes whole.
        let output = "hé€llo";
        recorder.on_event(
            &ProviderEvent::ToolEnded {
                call_id: "c".into(),
                status: ToolStatus::Error,
                exit_code: None,
                output: Some(output.into()),
            },
            1,
        );
        let queued = recorder.take_queued();
        assert_eq!(
            queued,
            vec![(
                1,
                TranscriptEntry::ToolOutput {
                    call_id: "c".into(),
                    status: ToolCallStatus::Error,
                    exit_code: None,
                    output: Some("hé".into()),
                    cut_bytes: (output.len() - "hé".len()) as u64,
                }
            )]
        );
    }

    #[test]
    fn prompts_the_stream_repeats_are_recorded_once_and_only_for_a_decoded_stream() {
        let events = [
            ProviderEvent::TurnStarted {
                prompt: Some("hi".into()),
            },
            ProviderEvent::UserMessage {
                text: "hi".into(),
                synthetic: false,
            },
            ProviderEvent::UserMessage {
                text: "summary".into(),
                synthetic: true,
            },
        ];
        for (source, expected) in [(PromptSource::Stream, 1), (PromptSource::Sent, 0)] {
            let mut recorder = TranscriptRecorder::new(source);
            for event in &events {
                recorder.on_event(event, 0);
            }
            assert_eq!(recorder.take_queued().len(), expected, "{source:?}");
        }
    }

    #[test]
    fn failures_and_retries_are_recorded_with_their_figures() {
        let mut recorder = TranscriptRecorder::default();
        recorder.on_event(
            &ProviderEvent::ProviderRetrying {
                attempt: Some(1),
                max_retries: Some(3),
                retry_delay_ms: Some(500),
                http_status: Some(429),
                reason: None,
            },
            1,
        );
        let failure = Failure {
            kind: FailureKind::RateLimited,
            retryable: true,
            message: "slow down".into(),
            http_status: Some(429),
        };
        recorder.on_event(
            &ProviderEvent::Failure {
                failure: failure.clone(),
            },
            2,
        );
        assert_eq!(
            recorder.take_queued(),
            vec![
                (
                    1,
                    TranscriptEntry::Retry {
                        attempt: Some(1),
                        max_retries: Some(3),
                        wait_ms: Some(500),
                        http_status: Some(429),
                        reason: None
                    }
                ),
                (2, TranscriptEntry::Failure { failure })
            ]
        );
    }
}
