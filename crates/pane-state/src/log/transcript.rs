//! The conversation as a session log records it: transcript lines
//! (`{"v":3,"ts":…,"transcript":{"kind":…}}`), beside the reducer's messages.
//!
//! The reducer's messages say what the pane showed (a tool ran, so many characters streamed);
//! transcript lines say what was said and done: the prompt, the answer's text, the tool's
//! input and output, who answered an approval. Folds skip them, so adding or dropping a
//! transcript line never changes a replayed state, and a transcript line this build cannot
//! read is skipped with a warning, never an error.

use panewise_protocol::Failure;
use serde::{Deserialize, Serialize};

pub use crate::vocabulary::Actor;
use serde_json::Value;

/// One thing said or done in a session, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TranscriptEntry {
    /// A prompt sent to the agent (typed by the person, given on the command line, or, for a
    /// decoded stream, repeated by the CLI).
    Prompt {
        /// The prompt, verbatim.
        text: String,
    },
    /// The assistant's text, as it streamed: consecutive pieces joined into one line, cut
    /// where another kind of event came, where a message or turn ended, or where the
    /// recorder's buffer filled.
    Text {
        /// The text, verbatim.
        text: String,
    },
    /// The model's visible reasoning, joined like [`TranscriptEntry::Text`].
    Thinking {
        /// The text, verbatim.
        text: String,
    },
    /// A tool call as the agent started (or asked for) it.
    ToolCall {
        /// The provider's id of the call; its [`TranscriptEntry::ToolOutput`] names it too.
        call_id: String,
        /// The tool's name as the provider spells it.
        name: String,
        /// The tool's whole input, when the stream carries it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Value>,
        /// The first significant argument (the command, the path), when the stream carries
        /// no whole input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arg: Option<String>,
    },
    /// A tool call's end and what it printed.
    ToolOutput {
        /// The call's id.
        call_id: String,
        /// How it ended.
        status: ToolCallStatus,
        /// The process exit code, for shell tools that report one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// What the tool printed, as far as the recorder keeps it; absent when the stream
        /// does not report it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// Bytes of the output cut off the end of `output` (0 when it is whole).
        #[serde(default, skip_serializing_if = "is_zero")]
        cut_bytes: u64,
    },
    /// The agent (or panewise's own policy table) asks whether a tool may run.
    ApprovalRequested {
        /// The request's id; its [`TranscriptEntry::ApprovalAnswered`] names it too.
        request_id: String,
        /// The tool asking.
        tool: String,
        /// What it wants to do, in a line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// The tool's whole input, when the request carries it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Value>,
    },
    /// An approval request answered, and who answered it.
    ApprovalAnswered {
        /// The request answered, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// Whether the tool may run.
        approved: bool,
        /// The answer holds for the rest of the session: later requests for the same tool
        /// are allowed without asking.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_session: bool,
        /// Who answered.
        #[serde(flatten)]
        by: Actor,
        /// Why, when the answer was not the person's own word (no terminal to ask on, the
        /// input ended).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The agent withdrew an approval request before it was answered.
    ApprovalWithdrawn {
        /// The withdrawn request.
        request_id: String,
    },
    /// A tool asks the person questions.
    Question {
        /// The question set's id.
        id: String,
        /// The questions, in order.
        questions: Vec<String>,
    },
    /// A question set answered, and who answered it.
    QuestionAnswered {
        /// The question set answered, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// One answer per question.
        answers: Vec<String>,
        /// Who answered.
        #[serde(flatten)]
        by: Actor,
    },
    /// A classified failure, with the provider's own message.
    Failure {
        /// What failed.
        failure: Failure,
    },
    /// A model call failed and is retried after a wait.
    Retry {
        /// Which attempt this is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u64>,
        /// How many retries are allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_retries: Option<u64>,
        /// How long the wait before the retry is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait_ms: Option<u64>,
        /// The HTTP status of the failed call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        http_status: Option<u16>,
        /// The provider's short reason (`rate_limit`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A message of an earlier session that the agent replayed as it loaded the session (a
    /// resumed ACP session): history the session continues from, not said in this one.
    History {
        /// Whose message it was: `user`, `assistant`, `thinking`, or `tool` (a tool call, its
        /// title as the text).
        role: String,
        /// The text, verbatim.
        text: String,
    },
    /// Someone asked the running turn to stop.
    Interrupt {
        /// Who asked.
        #[serde(flatten)]
        by: Actor,
    },
    /// The session ended: the last line a session writes, after its final checkpoint. A log
    /// without it whose writer holds no lock was cut off (a crash, `kill -9`).
    SessionEnded {
        /// The error that ended it, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl TranscriptEntry {
    /// The snake_case name of the entry's kind, as written in its `kind` field.
    pub fn kind_name(&self) -> &'static str {
        match self {
            TranscriptEntry::Prompt { .. } => "prompt",
            TranscriptEntry::Text { .. } => "text",
            TranscriptEntry::Thinking { .. } => "thinking",
            TranscriptEntry::ToolCall { .. } => "tool_call",
            TranscriptEntry::ToolOutput { .. } => "tool_output",
            TranscriptEntry::ApprovalRequested { .. } => "approval_requested",
            TranscriptEntry::ApprovalAnswered { .. } => "approval_answered",
            TranscriptEntry::ApprovalWithdrawn { .. } => "approval_withdrawn",
            TranscriptEntry::Question { .. } => "question",
            TranscriptEntry::QuestionAnswered { .. } => "question_answered",
            TranscriptEntry::Failure { .. } => "failure",
            TranscriptEntry::Retry { .. } => "retry",
            TranscriptEntry::History { .. } => "history",
            TranscriptEntry::Interrupt { .. } => "interrupt",
            TranscriptEntry::SessionEnded { .. } => "session_ended",
        }
    }
}

/// How a recorded tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// The tool did what it was asked.
    Success,
    /// The tool reported an error (or a non-zero exit).
    Error,
    /// The call was refused or cancelled before it ran to the end.
    Declined,
}

/// One transcript line as read back: the entry and the time it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptLine {
    /// The session clock when it was recorded.
    pub ts: u64,
    /// What was said or done.
    pub entry: TranscriptEntry,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}
