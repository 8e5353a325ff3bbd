//! The own loop's conversation rebuilt from a recorded session's transcript, so that a session
//! can be resumed: [`rebuild`] is a pure function from transcript entries to the messages the
//! loop keeps ([`Message`]) and the calls whose results were errors.
//!
//! What the loop's history held and what the transcript says of it, entry by entry:
//! - a prompt is a user message;
//! - the answer of one model call is one assistant message: every text entry until a tool's
//!   output (the recorder cuts streamed text into several entries; they are joined back), with
//!   the calls the model asked for, their arguments the recorded input as JSON text;
//! - each tool output is the call's result, an error unless it succeeded; an output the
//!   recorder cut at its 64 KiB cap ends with a marker saying how many bytes are missing
//!   ([`cut_marker`]), so the model is never shown a cut output as whole;
//! - thinking is not resent: the loop never kept it (its requests carry no thinking blocks,
//!   and the Anthropic API asks for signed thinking back only when the request enables
//!   thinking, which the loop does not);
//! - a turn cut off (an interrupt, a failure, the end of the log after a `kill -9`) leaves no
//!   call without a result: a call the model was still streaming when the turn stopped (none
//!   of its answer's calls reached a decision) is dropped, as the loop itself drops it; every
//!   other open call gets an error result saying it was interrupted ([`INTERRUPTED_RESULT`]
//!   for an interrupt or a failure, as the loop writes it; when the log stops, a result saying
//!   how far the call had got), so no request ever carries a dangling tool call.
//!
//! Window edits are not replayed: the rebuilt history is the whole conversation, and the
//! resumed session's window stage compacts it as it would any conversation.

use std::collections::BTreeSet;

use panewise_pane_state::log::{ToolCallStatus, TranscriptEntry};
use panewise_window::{Message, Role, ToolCall};

/// The result the loop gives a call that an interrupt (or the end of its turn) stopped before
/// it finished.
pub const INTERRUPTED_RESULT: &str = "interrupted by the person before it finished";

/// The rebuilt conversation of a recorded session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rebuilt {
    /// The messages, oldest first, as the loop appended them.
    pub messages: Vec<Message>,
    /// The calls whose results are errors.
    pub errored: BTreeSet<String>,
    /// Tool outputs the log had cut, resumed with [`cut_marker`].
    pub cut_outputs: usize,
    /// Calls without a recorded result that were given one saying they were interrupted.
    pub closed_calls: usize,
    /// Calls of a model answer that never finished streaming, left out as the loop leaves
    /// them out.
    pub dropped_calls: usize,
}

/// How far a call got before its turn stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    /// Nothing decided yet.
    Undecided,
    /// Waiting for a person's approval.
    Asked,
    /// Allowed: it ran, or was about to.
    Approved,
    /// Refused; its declined output follows.
    Denied,
}

#[derive(Debug)]
struct OpenCall {
    id: String,
    name: String,
    progress: Progress,
}

/// Why the open calls are closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// An interrupt or a failure ended the turn while the session went on.
    Interrupted,
    /// The log stops (a crash, `kill -9`, the session ended mid-turn).
    Ended,
}

/// The text added to a tool output that the log kept only the first part of.
pub fn cut_marker(cut_bytes: u64) -> String {
    format!(
        "\n[panewise: the last {cut_bytes} bytes of this output were cut when the session was \
         recorded, so they are missing here]"
    )
}

/// The result a call gets when the log stops before it has one (panewise was killed, the
/// session ended mid-turn), by how far the call had got.
fn ended_result(progress: Progress) -> &'static str {
    match progress {
        Progress::Undecided => {
            "not run: the session stopped before this call was decided (it was resumed later)"
        }
        Progress::Asked => {
            "not run: the session stopped while this call waited for approval (it was resumed \
             later)"
        }
        Progress::Approved | Progress::Denied => {
            "interrupted: the session stopped while this call ran, so its result is lost (it \
             was resumed later)"
        }
    }
}

#[derive(Debug, Default)]
struct Builder {
    out: Rebuilt,
    /// The assistant message that text and calls join, while the model's answer is open.
    answer: Option<usize>,
    /// Calls without a result yet, in the order they were made.
    open: Vec<OpenCall>,
    /// Every call id seen, so a repeated call line is not a second call.
    seen: BTreeSet<String>,
}

/// Rebuilds the loop's conversation from the transcripts of a chain of sessions, the first
/// the oldest (a session resumed from another continues its conversation). Each transcript
/// is closed at its end, so what one left open never reaches the next.
pub fn rebuild<'a, I, T>(segments: I) -> Rebuilt
where
    I: IntoIterator<Item = T>,
    T: IntoIterator<Item = &'a TranscriptEntry>,
{
    let mut builder = Builder::default();
    for segment in segments {
        for entry in segment {
            builder.entry(entry);
        }
        builder.stop(Stop::Ended);
    }
    builder.out
}

impl Builder {
    fn entry(&mut self, entry: &TranscriptEntry) {
        match entry {
            TranscriptEntry::Prompt { text } => {
                // A prompt only follows a finished turn; a log that says otherwise still gives
                // a history with every call answered.
                self.stop(Stop::Ended);
                self.out.messages.push(Message::user(text.clone()));
            }
            TranscriptEntry::Text { text } => {
                let index = self.answer_index();
                if let Some(message) = self.out.messages.get_mut(index) {
                    message.content.push_str(text);
                }
            }
            TranscriptEntry::ToolCall {
                call_id,
                name,
                input,
                ..
            } => {
                if !self.seen.insert(call_id.clone()) {
                    return;
                }
                let args = match input {
                    // Arguments that were not JSON are recorded as the string they were.
                    Some(serde_json::Value::String(raw)) => raw.clone(),
                    Some(value) => value.to_string(),
                    None => "{}".to_owned(),
                };
                let index = self.answer_index();
                if let Some(message) = self.out.messages.get_mut(index) {
                    message.tool_calls.push(ToolCall {
                        id: call_id.clone(),
                        name: name.clone(),
                        args,
                    });
                }
                self.open.push(OpenCall {
                    id: call_id.clone(),
                    name: name.clone(),
                    progress: Progress::Undecided,
                });
            }
            TranscriptEntry::ApprovalRequested { request_id, .. } => {
                self.progress(request_id, Progress::Asked);
            }
            TranscriptEntry::ApprovalAnswered {
                request_id: Some(request_id),
                approved,
                ..
            } => {
                let progress = if *approved {
                    Progress::Approved
                } else {
                    Progress::Denied
                };
                self.progress(request_id, progress);
            }
            TranscriptEntry::ToolOutput {
                call_id,
                status,
                output,
                cut_bytes,
                ..
            } => {
                let Some(position) = self.open.iter().position(|call| call.id == *call_id) else {
                    // A result for no open call (repeated, or its call unknown) would be an
                    // orphan on the wire.
                    return;
                };
                let call = self.open.remove(position);
                let mut content = output.clone().unwrap_or_default();
                if *cut_bytes > 0 {
                    content.push_str(&cut_marker(*cut_bytes));
                    self.out.cut_outputs = self.out.cut_outputs.saturating_add(1);
                }
                self.result(call, content, *status != ToolCallStatus::Success);
                // The model's next text belongs to its next answer.
                self.answer = None;
            }
            TranscriptEntry::Interrupt { .. } | TranscriptEntry::Failure { .. } => {
                self.stop(Stop::Interrupted);
            }
            TranscriptEntry::SessionEnded { .. } => self.stop(Stop::Ended),
            // Not part of what the loop sends: thinking (see the module doc), retries, the
            // approvals without an id, questions, history replayed by another agent.
            TranscriptEntry::Thinking { .. }
            | TranscriptEntry::ApprovalAnswered {
                request_id: None, ..
            }
            | TranscriptEntry::ApprovalWithdrawn { .. }
            | TranscriptEntry::Question { .. }
            | TranscriptEntry::QuestionAnswered { .. }
            | TranscriptEntry::Retry { .. }
            | TranscriptEntry::History { .. } => {}
        }
    }

    /// The open answer's message, opened when there is none.
    fn answer_index(&mut self) -> usize {
        match self.answer {
            Some(index) => index,
            None => {
                self.out.messages.push(Message::assistant(String::new()));
                let index = self.out.messages.len().saturating_sub(1);
                self.answer = Some(index);
                index
            }
        }
    }

    fn progress(&mut self, id: &str, progress: Progress) {
        if let Some(call) = self.open.iter_mut().find(|call| call.id == id) {
            call.progress = progress;
        }
    }

    fn result(&mut self, call: OpenCall, content: String, is_error: bool) {
        let mut message = Message::tool_result(call.id.clone(), content);
        message.tool_name = Some(call.name);
        if is_error {
            self.out.errored.insert(call.id);
        }
        self.out.messages.push(message);
    }

    /// The turn stops: the answer closes, and no call is left without a result.
    fn stop(&mut self, stop: Stop) {
        let answer = self.answer.take();
        if self.open.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.open);
        // The model was still streaming the answer: none of its calls reached a decision,
        // and the loop never added them to its history.
        let streaming = answer.is_some_and(|index| {
            self.out.messages.get(index).is_some_and(|message| {
                message.tool_calls.len() == calls.len()
                    && calls
                        .iter()
                        .all(|call| call.progress == Progress::Undecided)
            })
        });
        if let (true, Some(index)) = (streaming, answer) {
            self.out.dropped_calls = self.out.dropped_calls.saturating_add(calls.len());
            let empty = self.out.messages.get_mut(index).is_some_and(|message| {
                message.tool_calls.clear();
                message.content.is_empty()
            });
            if empty {
                self.out.messages.remove(index);
            }
            return;
        }
        for call in calls {
            self.out.closed_calls = self.out.closed_calls.saturating_add(1);
            let text = match stop {
                Stop::Interrupted => INTERRUPTED_RESULT,
                Stop::Ended => ended_result(call.progress),
            };
            self.result(call, text.to_owned(), true);
        }
    }
}

/// How many user messages (prompts) the rebuilt conversation holds.
pub fn prompts(rebuilt: &Rebuilt) -> usize {
    rebuilt
        .messages
        .iter()
        .filter(|message| message.role == Role::User)
        .count()
}

#[cfg(test)]
mod tests {
    use panewise_pane_state::log::Actor;
    use panewise_protocol::{Failure, FailureKind};
    use serde_json::json;

    use super::*;
    use crate::agent_loop::request::api_messages;

    fn prompt(text: &str) -> TranscriptEntry {
        TranscriptEntry::Prompt { text: text.into() }
    }
    fn text(text: &str) -> TranscriptEntry {
        TranscriptEntry::Text { text: text.into() }
    }
    fn call(id: &str, command: &str) -> TranscriptEntry {
        TranscriptEntry::ToolCall {
            call_id: id.into(),
            name: "shell".into(),
            input: Some(json!({ "command": command })),
            arg: None,
        }
    }
    fn allowed(id: &str) -> TranscriptEntry {
        TranscriptEntry::ApprovalAnswered {
            request_id: Some(id.into()),
            approved: true,
            for_session: false,
            by: Actor::Policy {
                mode: "full-access".into(),
            },
            reason: None,
        }
    }
    fn asked(id: &str) -> TranscriptEntry {
        TranscriptEntry::ApprovalRequested {
            request_id: id.into(),
            tool: "shell".into(),
            summary: None,
            input: None,
        }
    }
    fn output(id: &str, status: ToolCallStatus, out: &str, cut_bytes: u64) -> TranscriptEntry {
        TranscriptEntry::ToolOutput {
            call_id: id.into(),
            status,
            exit_code: None,
            output: Some(out.into()),
            cut_bytes,
        }
    }

    /// The messages' wire form must pair every call with its result.
    fn assert_pairs(rebuilt: &Rebuilt) {
        let errored = &rebuilt.errored;
        if let Err(error) = api_messages(&rebuilt.messages, errored) {
            panic!("{error}: {:?}", rebuilt.messages);
        }
    }

    #[test]
    fn a_finished_session_is_its_prompts_answers_calls_and_results() {
        let entries = [
            prompt("list it"),
            TranscriptEntry::Thinking {
                text: "I'll use the shell".into(),
            },
            text("I'll run "),
            text("the command."),
            call("c1", "ls"),
            allowed("c1"),
            output("c1", ToolCallStatus::Success, "a.txt\n[exit code 0]", 0),
            call("c2", "false"),
            allowed("c2"),
            output("c2", ToolCallStatus::Error, "[exit code 1]", 0),
            text("Done."),
            TranscriptEntry::SessionEnded { error: None },
        ];
        let rebuilt = rebuild([&entries]);
        let first = Message::assistant_calls(
            "I'll run the command.",
            &[("c1", "shell", r#"{"command":"ls"}"#)],
        );
        let mut result1 = Message::tool_result("c1", "a.txt\n[exit code 0]");
        result1.tool_name = Some("shell".into());
        let second = Message::assistant_calls("", &[("c2", "shell", r#"{"command":"false"}"#)]);
        let mut result2 = Message::tool_result("c2", "[exit code 1]");
        result2.tool_name = Some("shell".into());
        assert_eq!(
            rebuilt.messages,
            vec![
                Message::user("list it"),
                first,
                result1,
                second,
                result2,
                Message::assistant("Done."),
            ]
        );
        assert_eq!(rebuilt.errored, BTreeSet::from(["c2".to_owned()]));
        assert_eq!(
            (
                rebuilt.cut_outputs,
                rebuilt.closed_calls,
                rebuilt.dropped_calls
            ),
            (0, 0, 0)
        );
        assert_eq!(prompts(&rebuilt), 1);
        assert_pairs(&rebuilt);
    }

    #[test]
    fn a_cut_output_is_resumed_with_a_marker_of_the_missing_bytes() {
        let entries = [
            prompt("cat it"),
            call("c1", "cat big"),
            allowed("c1"),
            output("c1", ToolCallStatus::Success, "xxxx", 70_000),
            text("It is big."),
        ];
        let rebuilt = rebuild([&entries]);
        let result = &rebuilt.messages[2];
        assert_eq!(result.role, Role::Tool);
        assert!(result
            .content
            .starts_with("xxxx\n[panewise: the last 70000 bytes"));
        assert!(result.content.contains("cut"), "{}", result.content);
        assert_eq!(rebuilt.cut_outputs, 1);
        assert!(!rebuilt.errored.contains("c1"));
    }

    #[test]
    fn a_session_killed_while_a_call_waited_for_approval_resumes_with_that_call_answered() {
        let entries = [
            prompt("run it"),
            text("I'll run the command."),
            call("c1", "echo hello"),
            asked("c1"),
        ];
        let rebuilt = rebuild([&entries]);
        assert_eq!(rebuilt.messages.len(), 3);
        let result = &rebuilt.messages[2];
        assert_eq!(result.tool_call_id.as_deref(), Some("c1"));
        assert!(
            result.content.contains("waited for approval"),
            "{}",
            result.content
        );
        assert!(rebuilt.errored.contains("c1"));
        assert_eq!(rebuilt.closed_calls, 1);
        assert_pairs(&rebuilt);
    }

    #[test]
    fn an_interrupted_tool_gets_the_loops_own_interrupted_result_and_the_next_turn_goes_on() {
        let entries = [
            prompt("wait"),
            call("c1", "sleep 30"),
            allowed("c1"),
            TranscriptEntry::Interrupt { by: Actor::Person },
            prompt("and now?"),
            text("Stopped."),
        ];
        let rebuilt = rebuild([&entries]);
        let contents: Vec<&str> = rebuilt
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(
            contents,
            ["wait", "", INTERRUPTED_RESULT, "and now?", "Stopped."]
        );
        assert_pairs(&rebuilt);
    }

    #[test]
    fn calls_of_an_answer_still_streaming_when_it_stopped_are_dropped_with_an_empty_answer() {
        let failure = TranscriptEntry::Failure {
            failure: Failure {
                kind: FailureKind::StreamDisconnected,
                retryable: false,
                message: "cut".into(),
                http_status: None,
            },
        };
        // Text then a call, then the stream failed: the text stays, the call goes.
        let entries = [
            prompt("run it"),
            text("I'll run"),
            call("c1", "echo"),
            failure.clone(),
        ];
        let rebuilt = rebuild([&entries]);
        assert_eq!(
            rebuilt.messages,
            vec![Message::user("run it"), Message::assistant("I'll run")]
        );
        assert_eq!(rebuilt.dropped_calls, 1);
        // A call alone, then the log stops: nothing of the answer is left.
        let entries = [prompt("run it"), call("c1", "echo")];
        let rebuilt = rebuild([&entries]);
        assert_eq!(rebuilt.messages, vec![Message::user("run it")]);
        assert_pairs(&rebuilt);
    }

    #[test]
    fn a_chain_of_sessions_continues_one_conversation_and_a_dangling_call_is_closed_between() {
        let first = [prompt("one"), call("c1", "ls"), allowed("c1")];
        let second = [prompt("two"), text("Two.")];
        let rebuilt = rebuild([&first[..], &second[..]]);
        let roles: Vec<Role> = rebuilt.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::User,
                Role::Assistant
            ]
        );
        assert!(rebuilt.messages[2].content.contains("while this call ran"));
        assert_pairs(&rebuilt);
    }

    #[test]
    fn stray_repeated_and_unparsed_entries_never_make_an_orphan() {
        let entries = [
            output("nobody", ToolCallStatus::Success, "stray", 0),
            prompt("go"),
            TranscriptEntry::ToolCall {
                call_id: "c1".into(),
                name: "shell".into(),
                input: Some(json!("not json {")),
                arg: None,
            },
            TranscriptEntry::ToolCall {
                call_id: "c1".into(),
                name: "shell".into(),
                input: None,
                arg: Some("again".into()),
            },
            allowed("c1"),
            output("c1", ToolCallStatus::Declined, "bad arguments", 0),
            output("c1", ToolCallStatus::Success, "twice", 0),
        ];
        let rebuilt = rebuild([&entries]);
        assert_eq!(rebuilt.messages.len(), 3);
        assert_eq!(rebuilt.messages[1].tool_calls[0].args, "not json {");
        assert!(rebuilt.errored.contains("c1"));
        assert_pairs(&rebuilt);
    }
}
