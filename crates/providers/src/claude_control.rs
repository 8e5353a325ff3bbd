//! The pure parts of driving Claude Code as one persistent process: the arguments it is started
//! with, the lines written to its stdin (user prompts and the control protocol's requests and
//! answers), and the control lines it writes on stdout, read into [`ControlLine`]s.
//!
//! The control protocol, over the same stream-json channel as the conversation: the host sends
//! `control_request`s (`initialize` first, `interrupt` to stop a turn) and the CLI answers each
//! with a `control_response` carrying the same `request_id`; the CLI sends `control_request`s of
//! its own (`can_use_tool`: may this tool run?) that the host answers with `allow` or `deny`,
//! and may withdraw one with `control_cancel_request`. The host's requests are numbered by
//! [`ControlRequests`], with the numbering every channel shares (`channel.rs`).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::channel::Numbering;

/// How Claude Code is started for a supervised session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeLaunch {
    /// `--model`, when the user chose one.
    pub model: Option<String>,
    /// `--permission-mode` (`default`, `acceptEdits`, `plan`, `bypassPermissions`), when set.
    pub permission_mode: Option<String>,
    /// `--resume <session_id>` to continue a recorded session.
    pub resume: Option<String>,
}

impl ClaudeLaunch {
    /// The arguments after the `claude` executable: stream-json both ways, verbose (so every
    /// event is written), partial messages, and permission prompts sent over stdio as control
    /// requests.
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            // Partial messages: the answer streams as it is written, and a long model call
            // shows as working (its stream events) rather than as silence.
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        for (flag, value) in [
            ("--model", &self.model),
            ("--permission-mode", &self.permission_mode),
            ("--resume", &self.resume),
        ] {
            if let Some(value) = value {
                args.push(flag.to_owned());
                args.push(value.clone());
            }
        }
        args
    }
}

/// Which of the host's control requests an answer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRequestKind {
    /// `initialize`.
    Initialize,
    /// `interrupt`.
    Interrupt,
}

/// The host's control requests, numbered as the other channels number theirs (`panewise-1`,
/// `panewise-2`, …) and remembered until the CLI answers them.
///
/// ```
/// use panewise_providers::claude_control::{control_line, ControlRequestKind, ControlRequests};
///
/// let mut requests = ControlRequests::default();
/// assert!(requests.initialize().contains(r#""request_id":"panewise-1""#));
/// let answer = control_line(
///     br#"{"type":"control_response","response":{"subtype":"success","request_id":"panewise-1"}}"#,
/// );
/// let Some(panewise_providers::claude_control::ControlLine::Response { request_id, .. }) = answer
/// else {
///     unreachable!()
/// };
/// assert_eq!(requests.answered(&request_id), Some(ControlRequestKind::Initialize));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ControlRequests {
    numbering: Numbering<ControlRequestKind>,
}

/// The prefix of the host's control request ids, before their number.
const REQUEST_ID_PREFIX: &str = "panewise-";

impl ControlRequests {
    fn next_id(&mut self, kind: ControlRequestKind) -> String {
        format!("{REQUEST_ID_PREFIX}{}", self.numbering.next(kind))
    }

    /// The next `initialize` request line ([`initialize_line`]).
    pub fn initialize(&mut self) -> String {
        initialize_line(&self.next_id(ControlRequestKind::Initialize))
    }

    /// The next `interrupt` request line ([`interrupt_line`]).
    pub fn interrupt(&mut self) -> String {
        interrupt_line(&self.next_id(ControlRequestKind::Interrupt))
    }

    /// Which request the CLI's answer to `request_id` belongs to, once; `None` for an id the
    /// host never sent or that was answered already.
    pub fn answered(&mut self, request_id: &str) -> Option<ControlRequestKind> {
        let number = request_id.strip_prefix(REQUEST_ID_PREFIX)?;
        self.numbering.answered_id(number)
    }
}

/// The stdin line that opens the control session (the CLI answers with its capabilities).
pub fn initialize_line(request_id: &str) -> String {
    json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "initialize", "hooks": null},
    })
    .to_string()
}

/// The stdin line that asks the CLI to stop the running turn.
pub fn interrupt_line(request_id: &str) -> String {
    json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "interrupt"},
    })
    .to_string()
}

/// The stdin line of a user prompt.
pub fn user_line(text: &str) -> String {
    json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        "parent_tool_use_id": null,
        "session_id": "",
    })
    .to_string()
}

/// The host's answer to a `can_use_tool` request.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionAnswer {
    /// Let the tool run with the input it asked for.
    Allow {
        /// The tool input to run with (the request's own, unless the host changed it).
        input: Value,
    },
    /// Refuse; the CLI hands the model an error tool result carrying `message`.
    Deny {
        /// Why, in words the model and the person will read.
        message: String,
    },
}

/// The stdin line answering the CLI's permission request `request_id`.
pub fn permission_line(request_id: &str, answer: &PermissionAnswer) -> String {
    let response = match answer {
        PermissionAnswer::Allow { input } => json!({"behavior": "allow", "updatedInput": input}),
        PermissionAnswer::Deny { message } => json!({"behavior": "deny", "message": message}),
    };
    json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    })
    .to_string()
}

/// A control line the CLI wrote on stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlLine {
    /// The CLI asks whether a tool may run; it waits for [`permission_line`].
    CanUseTool {
        /// The CLI's id of this request, to answer with.
        request_id: String,
        /// The tool, as the CLI names it (`Write`, `Bash`, …).
        tool: String,
        /// The tool's input, as JSON.
        input: Value,
        /// The CLI's short description of the call (a file name, a command).
        description: Option<String>,
        /// The model's tool-use id.
        tool_use_id: Option<String>,
    },
    /// The CLI no longer needs an answer to `request_id` (a withdrawn permission request).
    Cancelled {
        /// The withdrawn request.
        request_id: String,
    },
    /// The CLI answered one of the host's requests.
    Response {
        /// The host's request id.
        request_id: String,
        /// `None` on success, else the CLI's error message.
        error: Option<String>,
    },
    /// A control request of a kind this host does not handle; it must still be answered.
    OtherRequest {
        /// The CLI's id of this request.
        request_id: String,
        /// Its `subtype`.
        subtype: String,
    },
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: Option<String>,
    request_id: Option<String>,
    #[serde(borrow)]
    request: Option<&'a RawValue>,
    response: Option<ResponseBody>,
}

#[derive(Deserialize)]
struct RequestBody {
    subtype: Option<String>,
    tool_name: Option<String>,
    input: Option<Value>,
    description: Option<String>,
    tool_use_id: Option<String>,
}

#[derive(Deserialize)]
struct ResponseBody {
    subtype: Option<String>,
    request_id: Option<String>,
    error: Option<String>,
}

/// Reads a stdout line as a control line; `None` for any other line (conversation events go to
/// the [`Decoder`](crate::Decoder)). A control line missing its ids is `None` too: there is
/// nothing to answer.
pub fn control_line(raw: &[u8]) -> Option<ControlLine> {
    let line: Line<'_> = serde_json::from_slice(raw).ok()?;
    match line.kind.as_deref()? {
        "control_request" => {
            let request_id = line.request_id?;
            let body: RequestBody = serde_json::from_str(line.request?.get()).ok()?;
            match body.subtype.as_deref() {
                Some("can_use_tool") => Some(ControlLine::CanUseTool {
                    request_id,
                    tool: body.tool_name.unwrap_or_default(),
                    input: body.input.unwrap_or(Value::Null),
                    description: body.description,
                    tool_use_id: body.tool_use_id,
                }),
                other => Some(ControlLine::OtherRequest {
                    request_id,
                    subtype: other.unwrap_or_default().to_owned(),
                }),
            }
        }
        "control_cancel_request" => Some(ControlLine::Cancelled {
            request_id: line.request_id?,
        }),
        "control_response" => {
            let response = line.response?;
            Some(ControlLine::Response {
                request_id: response.request_id?,
                error: match response.subtype.as_deref() {
                    Some("success") => None,
                    _ => Some(
                        response
                            .error
                            .unwrap_or_else(|| "the request failed".to_owned()),
                    ),
                },
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = include_str!("../tests/data/claude-code/control-allow.ndjson");
    const SENT: &str = include_str!("../tests/data/claude-code/control-allow.input.ndjson");

    #[test]
    fn the_captured_permission_request_and_initialize_answer_are_read() {
        let lines: Vec<ControlLine> = CAPTURE
            .lines()
            .filter_map(|line| control_line(line.as_bytes()))
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            ControlLine::Response {
                request_id: "req_1_panewise".into(),
                error: None
            }
        );
        match &lines[1] {
            ControlLine::CanUseTool {
                request_id,
                tool,
                input,
                description,
                tool_use_id,
            } => {
                assert_eq!(request_id, "136c22ce-06e2-4554-84d9-5b927b96604e");
                assert_eq!(tool, "Write");
                assert_eq!(input["file_path"], "/home/dev/work/claude-hello.txt");
                assert_eq!(description.as_deref(), Some("claude-hello.txt"));
                assert_eq!(
                    tool_use_id.as_deref(),
                    Some("toolu_01de3568ebe70d4281b3f9e6ab")
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_lines_written_match_what_the_cli_accepted() {
        let sent: Vec<Value> = SENT
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or(Value::Null))
            .collect();
        let ours = [
            initialize_line("req_1_panewise"),
            user_line("Create a file claude-hello.txt containing the line \"Hello from Claude\"."),
            permission_line(
                "136c22ce-06e2-4554-84d9-5b927b96604e",
                &PermissionAnswer::Allow {
                    input: json!({
                        "file_path": "/home/dev/work/claude-hello.txt",
                        "content": "Hello from Claude\n",
                    }),
                },
            ),
        ];
        for (ours, theirs) in ours.iter().zip(&sent) {
            let ours: Value = serde_json::from_str(ours).unwrap_or(Value::Null);
            assert_eq!(&ours, theirs);
        }
        assert_eq!(sent.len(), 3);
    }

    #[test]
    fn a_deny_an_interrupt_and_a_withdrawal_have_the_protocols_shapes() {
        let deny: Value = serde_json::from_str(&permission_line(
            "r",
            &PermissionAnswer::Deny {
                message: "denied by --approval read-only".into(),
            },
        ))
        .unwrap_or(Value::Null);
        assert_eq!(deny["response"]["response"]["behavior"], "deny");
        assert_eq!(
            deny["response"]["response"]["message"],
            "denied by --approval read-only"
        );
        let interrupt: Value = serde_json::from_str(&interrupt_line("i")).unwrap_or(Value::Null);
        assert_eq!(interrupt["request"]["subtype"], "interrupt");
        assert_eq!(
            control_line(br#"{"type":"control_cancel_request","request_id":"r"}"#),
            Some(ControlLine::Cancelled {
                request_id: "r".into()
            })
        );
        assert_eq!(
            control_line(
                br#"{"type":"control_response","response":{"subtype":"error","request_id":"i","error":"no turn"}}"#
            ),
            Some(ControlLine::Response {
                request_id: "i".into(),
                error: Some("no turn".into())
            })
        );
        assert_eq!(control_line(br#"{"type":"assistant"}"#), None);
        assert_eq!(control_line(b"not json"), None);
    }

    #[test]
    fn control_requests_are_numbered_across_kinds_and_each_answer_matches_once() {
        let mut requests = ControlRequests::default();
        let ids: Vec<Value> = [requests.initialize(), requests.interrupt()]
            .iter()
            .map(|line| serde_json::from_str::<Value>(line).unwrap_or(Value::Null))
            .map(|line| line["request_id"].clone())
            .collect();
        assert_eq!(ids, [json!("panewise-1"), json!("panewise-2")]);
        assert_eq!(
            requests.answered("panewise-2"),
            Some(ControlRequestKind::Interrupt)
        );
        assert_eq!(requests.answered("panewise-2"), None);
        assert_eq!(requests.answered("req_1_panewise"), None);
        assert_eq!(
            requests.answered("panewise-1"),
            Some(ControlRequestKind::Initialize)
        );
    }

    #[test]
    fn the_launch_arguments_carry_the_control_channel_and_the_choices() {
        let launch = ClaudeLaunch {
            model: Some("claude-opus-5-5".into()),
            permission_mode: None,
            resume: Some("4a1d".into()),
        };
        let args = launch.args().join(" ");
        assert!(args.starts_with(
            "--input-format stream-json --output-format stream-json --verbose --include-partial-messages --permission-prompt-tool stdio"
        ));
        assert!(args.ends_with("--model claude-opus-5-5 --resume 4a1d"));
    }
}
