//! Driving a JSON-RPC channel (Codex `app-server`, an ACP agent such as `gemini --acp`) from
//! the host's side, as pure steps: what to write first, what to write in answer to each line
//! the agent wrote, how to send a prompt, interrupt a turn or answer an approval. The host
//! writes the returned lines, newline-terminated, to the agent's stdin, and feeds the agent's
//! stdout both here (whole lines) and to the channel's [`Decoder`](crate::Decoder) (events).
//!
//! The handshake is this module's: `initialize`, then (Codex) `initialized` and `thread/start`
//! or `thread/resume`, (ACP) `session/new`, or `session/load`/`session/resume` when the agent
//! advertised it and a session is being continued. A prompt sent before the session is ready
//! waits here and goes out when it is.

use std::collections::VecDeque;

use crate::acp::{AcpLine, AcpRequestKind, AcpSession, PermissionDecision};
use crate::codex_appserver::{
    AppServerLine, AppServerSession, ApprovalDecision, ClientInfo, RequestKind, ServerRequestKind,
    ThreadOptions,
};
use crate::error::ChannelError;

/// Which JSON-RPC protocol the agent speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcProtocol {
    /// Codex `app-server` (JSON-RPC 2.0 without the `jsonrpc` field).
    CodexAppServer,
    /// The Agent Client Protocol.
    Acp,
}

/// What the host writes, and what it should tell the person, after a step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    /// Lines for the agent's stdin, in order.
    pub lines: Vec<String>,
    /// Things the person should know (an answer the agent refused, a resume that failed).
    pub notices: Vec<String>,
    /// `lines` hold a prompt: once they are written, what the agent writes is the turn's
    /// (tell the channel's decoder, [`crate::Decoder::prompt_sent`]).
    pub prompted: bool,
}

#[derive(Debug, Clone)]
enum Session {
    Codex(AppServerSession),
    Acp(AcpSession),
}

/// The host's side of one JSON-RPC connection.
#[derive(Debug, Clone)]
pub struct RpcClient {
    session: Session,
    client: ClientInfo,
    thread: ThreadOptions,
    /// The agent's session (Codex thread, ACP session) to continue, if any.
    resume: Option<String>,
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    ready: bool,
    /// The agent answered `session/load` and may still be replaying the session's history:
    /// prompts wait until the host says the replay is over ([`RpcClient::end_replay`]).
    replaying: bool,
    waiting_prompts: VecDeque<String>,
}

impl RpcClient {
    /// A client for `protocol`, starting a session in `thread.cwd` (or continuing `resume`).
    pub fn new(
        protocol: RpcProtocol,
        client: ClientInfo,
        thread: ThreadOptions,
        resume: Option<String>,
    ) -> Self {
        let session = match protocol {
            RpcProtocol::CodexAppServer => Session::Codex(AppServerSession::default()),
            RpcProtocol::Acp => Session::Acp(AcpSession::default()),
        };
        RpcClient {
            session,
            client,
            thread,
            resume,
            partial: Vec::new(),
            ready: false,
            replaying: false,
            waiting_prompts: VecDeque::new(),
        }
    }

    /// The agent loaded a recorded session and may still be streaming its history. An ACP
    /// agent may answer `session/load` before its replay is over (Gemini CLI streams it
    /// without waiting for it), and nothing in the protocol marks the replay's end: the host
    /// decides it is over once the agent has been quiet a moment, then calls
    /// [`RpcClient::end_replay`]. Until then prompts wait, so no replayed update can fall
    /// inside the first turn.
    pub fn replaying(&self) -> bool {
        self.replaying
    }

    /// The replay is over: the session is ready and the prompts that waited go out.
    pub fn end_replay(&mut self) -> Step {
        let mut step = Step::default();
        if self.replaying {
            self.replaying = false;
            self.become_ready(&mut step);
        }
        step
    }

    /// The agent's own id of the session, once it named it (it resumes the session).
    pub fn session_id(&self) -> Option<&str> {
        match &self.session {
            Session::Codex(session) => session.thread_id(),
            Session::Acp(session) => session.session_id(),
        }
    }

    /// The first line of the connection.
    pub fn open(&mut self) -> Step {
        let line = match &mut self.session {
            Session::Codex(session) => session.initialize(&self.client),
            Session::Acp(session) => session.initialize(&self.client),
        };
        Step {
            lines: vec![line],
            ..Step::default()
        }
    }

    /// Sends `text` as the next turn's prompt, now or once the session is ready.
    pub fn prompt(&mut self, text: &str) -> Step {
        if !self.ready {
            self.waiting_prompts.push_back(text.to_owned());
            return Step::default();
        }
        let line = match &mut self.session {
            Session::Codex(session) => session.start_turn(text),
            Session::Acp(session) => session.prompt(text),
        };
        let mut step = step_of(line.map(|line| vec![line]));
        step.prompted = !step.lines.is_empty();
        step
    }

    /// Stops the running turn (`turn/interrupt`; ACP `session/cancel` and a `cancelled`
    /// answer to every waiting permission request). An error when no turn is known to run.
    pub fn interrupt(&mut self) -> Result<Vec<String>, ChannelError> {
        match &mut self.session {
            Session::Codex(session) => session.interrupt().map(|line| vec![line]),
            Session::Acp(session) => session.cancel(),
        }
    }

    /// The answer to approval request `request_id`.
    pub fn answer(&mut self, request_id: &str, approved: bool) -> Result<String, ChannelError> {
        match &mut self.session {
            Session::Codex(session) => {
                let decision = if approved {
                    ApprovalDecision::Accept
                } else {
                    ApprovalDecision::Decline
                };
                let is_input = session
                    .waiting()
                    .any(|(id, kind)| id == request_id && kind == ServerRequestKind::UserInput);
                match (is_input, approved) {
                    // A question panewise cannot put into words: an empty answer, or none.
                    (true, true) => session.answer_user_input(request_id, serde_json::json!({})),
                    (true, false) => {
                        session.refuse_request(request_id, "the person declined to answer")
                    }
                    (false, _) => session.answer_approval(request_id, decision),
                }
            }
            Session::Acp(session) => {
                let decision = if approved {
                    PermissionDecision::Allow
                } else {
                    PermissionDecision::Deny
                };
                session.answer_permission(request_id, decision)
            }
        }
    }

    /// Reads what the agent wrote (any split of its stdout): learns from each whole line and
    /// returns what the host must write in answer.
    pub fn read(&mut self, bytes: &[u8]) -> Step {
        let mut step = Step::default();
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|byte| *byte == b'\n') {
            let (head, tail) = rest.split_at(end);
            rest = tail.get(1..).unwrap_or_default();
            let line = if self.partial.is_empty() {
                head.to_vec()
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(head);
                line
            };
            self.read_line(&line, &mut step);
        }
        self.partial.extend_from_slice(rest);
        step
    }

    fn read_line(&mut self, line: &[u8], step: &mut Step) {
        match &mut self.session {
            Session::Codex(session) => match session.read(line) {
                Some(AppServerLine::Response { request, error }) => {
                    self.codex_answered(request, error, step)
                }
                Some(AppServerLine::ServerRequest {
                    request_id,
                    method,
                    kind: ServerRequestKind::Other,
                }) => push(
                    step,
                    session
                        .refuse_request(&request_id, &format!("panewise does not answer {method}")),
                ),
                _ => {}
            },
            Session::Acp(session) => match session.read(line) {
                Some(AcpLine::Response { request, error, .. }) => {
                    self.acp_answered(request, error, step)
                }
                Some(AcpLine::Request { request_id, method })
                    if method != "session/request_permission" =>
                {
                    push(
                        step,
                        session.refuse_request(
                            &request_id,
                            &format!("panewise does not offer {method}"),
                        ),
                    )
                }
                _ => {}
            },
        }
    }

    fn codex_answered(
        &mut self,
        request: Option<RequestKind>,
        error: Option<String>,
        step: &mut Step,
    ) {
        let Session::Codex(session) = &mut self.session else {
            return;
        };
        match (request, error) {
            (Some(RequestKind::Initialize), None) => {
                step.lines.push(session.initialized());
                let line = match &self.resume {
                    Some(thread) => session.resume_thread(thread, &self.thread),
                    None => session.start_thread(&self.thread),
                };
                step.lines.push(line);
            }
            (Some(RequestKind::ThreadStart | RequestKind::ThreadResume), None) => {
                self.become_ready(step);
            }
            (Some(RequestKind::ThreadResume), Some(error)) => {
                step.notices.push(format!(
                    "the agent could not resume its session ({error}); starting a new one"
                ));
                step.lines.push(session.start_thread(&self.thread));
            }
            (Some(kind), Some(error)) => {
                step.notices
                    .push(format!("the agent refused {kind:?}: {error}"));
            }
            _ => {}
        }
    }

    fn acp_answered(
        &mut self,
        request: Option<AcpRequestKind>,
        error: Option<String>,
        step: &mut Step,
    ) {
        let Session::Acp(session) = &mut self.session else {
            return;
        };
        let cwd = self.thread.cwd.clone().unwrap_or_default();
        match (request, error) {
            (Some(AcpRequestKind::Initialize), None) => {
                let capabilities = session.agent_capabilities().cloned().unwrap_or_default();
                let line = match &self.resume {
                    Some(id) if capabilities.resume_session => session.resume_session(id, &cwd),
                    Some(id) if capabilities.load_session => session.load_session(id, &cwd),
                    Some(_) => {
                        step.notices.push(
                            "the agent cannot continue a session (it advertises neither \
                             session/resume nor session/load); starting a new one"
                                .to_owned(),
                        );
                        Ok(session.new_session(&cwd))
                    }
                    None => Ok(session.new_session(&cwd)),
                };
                push(step, line);
            }
            (Some(AcpRequestKind::NewSession | AcpRequestKind::ResumeSession), None) => {
                self.become_ready(step)
            }
            (Some(AcpRequestKind::LoadSession), None) => self.replaying = true,
            (Some(AcpRequestKind::LoadSession | AcpRequestKind::ResumeSession), Some(error)) => {
                step.notices.push(format!(
                    "the agent could not continue its session ({error}); starting a new one"
                ));
                step.lines.push(session.new_session(&cwd));
            }
            (Some(AcpRequestKind::Prompt), _) => {}
            (Some(kind), Some(error)) => {
                step.notices
                    .push(format!("the agent refused {kind:?}: {error}"));
            }
            _ => {}
        }
    }

    fn become_ready(&mut self, step: &mut Step) {
        self.ready = true;
        while let Some(prompt) = self.waiting_prompts.pop_front() {
            let sent = self.prompt(&prompt);
            step.lines.extend(sent.lines);
            step.notices.extend(sent.notices);
            step.prompted |= sent.prompted;
        }
    }
}

fn push(step: &mut Step, line: Result<String, ChannelError>) {
    match line {
        Ok(line) => step.lines.push(line),
        Err(error) => step.notices.push(error.to_string()),
    }
}

fn step_of(lines: Result<Vec<String>, ChannelError>) -> Step {
    match lines {
        Ok(lines) => Step {
            lines,
            ..Step::default()
        },
        Err(error) => Step {
            notices: vec![error.to_string()],
            ..Step::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(protocol: RpcProtocol, resume: Option<&str>) -> RpcClient {
        RpcClient::new(
            protocol,
            ClientInfo {
                name: "panewise".into(),
                title: "panewise".into(),
                version: "0".into(),
            },
            ThreadOptions {
                cwd: Some("/work".into()),
                ..ThreadOptions::default()
            },
            resume.map(str::to_owned),
        )
    }

    fn methods(lines: &[String]) -> Vec<String> {
        lines
            .iter()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|value| value["method"].as_str().unwrap_or("(answer)").to_owned())
            .collect()
    }

    #[test]
    fn codex_handshake_then_the_prompt_that_waited_for_it() {
        let mut rpc = client(RpcProtocol::CodexAppServer, None);
        assert_eq!(methods(&rpc.open().lines), ["initialize"]);
        assert!(rpc.prompt("hello").lines.is_empty(), "waits for the thread");
        // Split anywhere, the answers are read whole.
        let answer = br#"{"id":1,"result":{"userAgent":"codex"}}
{"id":2,"result":{"thread":{"id":"t1"}}}
"#;
        let (first, second) = answer.split_at(17);
        let mut lines = rpc.read(first).lines;
        lines.extend(rpc.read(second).lines);
        assert_eq!(
            methods(&lines),
            ["initialized", "thread/start", "turn/start"]
        );
        assert_eq!(rpc.session_id(), Some("t1"));
    }

    #[test]
    fn codex_resumes_the_recorded_thread_and_starts_anew_when_it_cannot() {
        let mut rpc = client(RpcProtocol::CodexAppServer, Some("t9"));
        rpc.open();
        let lines = rpc.read(b"{\"id\":1,\"result\":{}}\n").lines;
        assert_eq!(methods(&lines), ["initialized", "thread/resume"]);
        assert!(lines[1].contains("t9"));
        let step =
            rpc.read(b"{\"id\":2,\"error\":{\"code\":-32600,\"message\":\"no such thread\"}}\n");
        assert_eq!(methods(&step.lines), ["thread/start"]);
        assert!(step.notices[0].contains("no such thread"));
    }

    #[test]
    fn acp_handshake_answers_permissions_by_kind_and_refuses_what_it_does_not_offer() {
        let mut rpc = client(RpcProtocol::Acp, None);
        rpc.open();
        let lines = rpc
            .read(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1}}\n")
            .lines;
        assert_eq!(methods(&lines), ["session/new"]);
        let lines = rpc
            .read(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"sessionId\":\"s1\"}}\n")
            .lines;
        assert!(lines.is_empty());
        assert_eq!(methods(&rpc.prompt("hi").lines), ["session/prompt"]);
        rpc.read(br#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"options":[{"optionId":"proceed_once","kind":"allow_once"},{"optionId":"cancel","kind":"reject_once"}]}}
"#);
        let answer = rpc.answer("0", false).unwrap_or_default();
        assert!(answer.contains(r#""optionId":"cancel""#), "{answer}");
        let refused = rpc.read(
            br#"{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}
"#,
        );
        assert!(refused.lines[0].contains("-32601"));
        // Nothing to stop before a prompt runs? ACP's cancel is a notification either way.
        assert!(rpc.interrupt().is_ok());
    }
}
