//! The client half of an ACP connection: [`AcpSession`] writes the lines the host sends
//! (numbered requests, permission answers, cancels) and reads the agent's lines for what they
//! teach (the session id, the agent's capabilities, the requests waiting for an answer).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::wire::{AgentCapabilities, Answer, PermissionOption, PermissionParams};
use super::{ClientInfo, PROTOCOL_VERSION};
use crate::channel::{take_waiting, Dialect, Numbering};
use crate::error::ChannelError;
use crate::rpc::{lenient, Envelope, Shape};

/// Which of the session's requests an answer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcpRequestKind {
    /// `initialize`.
    Initialize,
    /// `session/new`.
    NewSession,
    /// `session/load`.
    LoadSession,
    /// `session/resume`.
    ResumeSession,
    /// `session/prompt`.
    Prompt,
}

/// The host's answer to a permission request, mapped to an option by its `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Allow this call: the `allow_once` option, and no other.
    Allow,
    /// Allow this and similar calls for the session: the `allow_always` option.
    AllowAlways,
    /// Refuse this call: the `reject_once` option, or `reject_always` when the agent offers no
    /// one-off refusal (refusing more than asked is the safe side).
    Deny,
}

impl PermissionDecision {
    fn kinds(self) -> &'static [&'static str] {
        match self {
            PermissionDecision::Allow => &["allow_once"],
            PermissionDecision::AllowAlways => &["allow_always"],
            PermissionDecision::Deny => &["reject_once", "reject_always"],
        }
    }
}

/// An agent line, as the session reads it (the events come from the decoder).
#[derive(Debug, Clone, PartialEq)]
pub enum AcpLine {
    /// The agent answered one of the session's requests.
    Response {
        /// Which request; `None` for an id the session never sent.
        request: Option<AcpRequestKind>,
        /// `None` on success, else the agent's error message.
        error: Option<String>,
        /// A prompt answer's `stopReason`.
        stop_reason: Option<String>,
    },
    /// The agent asks something and waits for the answer.
    Request {
        /// The id to answer with (its JSON text).
        request_id: String,
        /// The method: `session/request_permission`, or one the client did not offer (answer
        /// it with [`AcpSession::refuse_request`]).
        method: String,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
    },
}

/// The client side of one ACP connection: the lines to write and what the agent's answers
/// taught. It writes nothing itself; the host sends each line, newline-terminated.
///
/// ```
/// use panewise_providers::acp::{AcpSession, ClientInfo, PermissionDecision};
///
/// let mut session = AcpSession::default();
/// let client = ClientInfo { name: "panewise".into(), title: "panewise".into(), version: "1".into() };
/// session.initialize(&client);
/// session.new_session("/work");
/// session.read(br#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
/// assert!(session.prompt("hello").is_ok());
/// session.read(br#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"options":[{"optionId":"no","kind":"reject_once"},{"optionId":"yes","kind":"allow_once"}]}}"#);
/// let answer = session.answer_permission("0", PermissionDecision::Allow).unwrap_or_default();
/// assert!(answer.contains(r#""optionId":"yes""#));
/// ```
#[derive(Debug, Clone, Default)]
pub struct AcpSession {
    requests: Numbering<AcpRequestKind>,
    session_id: Option<String>,
    capabilities: Option<AgentCapabilities>,
    /// Agent requests read and not answered yet, with a permission request's options.
    waiting: BTreeMap<String, Vec<PermissionOption>>,
}

impl AcpSession {
    /// The session, once created, loaded or resumed.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// What the agent's `initialize` answer advertised, once it came.
    pub fn agent_capabilities(&self) -> Option<&AgentCapabilities> {
        self.capabilities.as_ref()
    }

    /// Agent requests waiting for an answer, by id.
    pub fn waiting(&self) -> impl Iterator<Item = &str> {
        self.waiting.keys().map(String::as_str)
    }

    fn request(&mut self, kind: AcpRequestKind, method: &str, params: Value) -> String {
        let id = self.requests.next(kind);
        Dialect::JsonRpc2.request(id, method, params)
    }

    /// The `initialize` request: protocol version 1, no file system and no terminal offered.
    pub fn initialize(&mut self, client: &ClientInfo) -> String {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {
                "fs": {"readTextFile": false, "writeTextFile": false},
                "terminal": false,
            },
            "clientInfo": {"name": client.name, "title": client.title, "version": client.version},
        });
        self.request(AcpRequestKind::Initialize, "initialize", params)
    }

    /// `session/new` in `cwd`, with no MCP servers.
    pub fn new_session(&mut self, cwd: &str) -> String {
        let params = json!({"cwd": cwd, "mcpServers": []});
        self.request(AcpRequestKind::NewSession, "session/new", params)
    }

    /// `session/load` of `session_id` in `cwd`, when the agent advertised `loadSession` (it
    /// replays the conversation as updates before answering).
    pub fn load_session(&mut self, session_id: &str, cwd: &str) -> Result<String, ChannelError> {
        if !self
            .capabilities
            .as_ref()
            .is_some_and(|caps| caps.load_session)
        {
            return Err(ChannelError::NotAdvertised("session/load"));
        }
        self.session_id = Some(session_id.to_owned());
        let params = json!({"sessionId": session_id, "cwd": cwd, "mcpServers": []});
        Ok(self.request(AcpRequestKind::LoadSession, "session/load", params))
    }

    /// `session/resume` of `session_id` in `cwd`, when the agent advertised
    /// `sessionCapabilities.resume`.
    pub fn resume_session(&mut self, session_id: &str, cwd: &str) -> Result<String, ChannelError> {
        if !self
            .capabilities
            .as_ref()
            .is_some_and(|caps| caps.resume_session)
        {
            return Err(ChannelError::NotAdvertised("session/resume"));
        }
        self.session_id = Some(session_id.to_owned());
        let params = json!({"sessionId": session_id, "cwd": cwd, "mcpServers": []});
        Ok(self.request(AcpRequestKind::ResumeSession, "session/resume", params))
    }

    /// `session/prompt` of a text prompt.
    pub fn prompt(&mut self, text: &str) -> Result<String, ChannelError> {
        let session = self
            .session_id
            .clone()
            .ok_or(ChannelError::NoSession("session"))?;
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        Ok(self.request(AcpRequestKind::Prompt, "session/prompt", params))
    }

    /// Stops the running prompt: the `session/cancel` notification, then a `cancelled` answer
    /// to every permission request still waiting, as the protocol requires of a client that
    /// cancels. The agent then answers the prompt with `stopReason: cancelled`.
    pub fn cancel(&mut self) -> Result<Vec<String>, ChannelError> {
        let session = self
            .session_id
            .clone()
            .ok_or(ChannelError::NoSession("session"))?;
        let mut lines =
            vec![Dialect::JsonRpc2
                .notification("session/cancel", Some(json!({"sessionId": session})))];
        for request_id in std::mem::take(&mut self.waiting).into_keys() {
            lines.push(outcome_line(&request_id, json!({"outcome": "cancelled"})));
        }
        Ok(lines)
    }

    /// The answer to permission request `request_id`: the option whose `kind` fits `decision`.
    pub fn answer_permission(
        &mut self,
        request_id: &str,
        decision: PermissionDecision,
    ) -> Result<String, ChannelError> {
        let options = self
            .waiting
            .get(request_id)
            .ok_or_else(|| ChannelError::UnknownRequest(request_id.to_owned()))?;
        let kinds = decision.kinds();
        let chosen = kinds
            .iter()
            .find_map(|kind| options.iter().find(|option| option.kind == *kind))
            .ok_or_else(|| ChannelError::NoMatchingOption {
                request_id: request_id.to_owned(),
                kind: kinds.first().copied().unwrap_or_default(),
            })?;
        let line = outcome_line(
            request_id,
            json!({"outcome": "selected", "optionId": chosen.option_id}),
        );
        self.waiting.remove(request_id);
        Ok(line)
    }

    /// The `cancelled` answer to permission request `request_id`, for a turn being stopped.
    pub fn cancel_permission(&mut self, request_id: &str) -> Result<String, ChannelError> {
        take_waiting(&mut self.waiting, request_id)?;
        Ok(outcome_line(request_id, json!({"outcome": "cancelled"})))
    }

    /// A JSON-RPC error answering an agent request the client did not offer (a file or
    /// terminal method), so the agent does not wait forever.
    pub fn refuse_request(
        &mut self,
        request_id: &str,
        message: &str,
    ) -> Result<String, ChannelError> {
        take_waiting(&mut self.waiting, request_id)?;
        Ok(Dialect::JsonRpc2.refusal(request_id, message))
    }

    /// Reads one agent line, learning the session, the agent's capabilities and the requests
    /// to answer. `None` for a line that is not a JSON-RPC message.
    pub fn read(&mut self, raw: &[u8]) -> Option<AcpLine> {
        let envelope = Envelope::parse(raw).ok()?;
        match envelope.shape()? {
            Shape::Response { id, result, error } => {
                let request = self.requests.answered_id(&id);
                let answer: Option<Answer> = lenient(result);
                let mut stop_reason = None;
                if let (Some(answer), None) = (answer, error) {
                    stop_reason = answer.stop_reason.clone();
                    if request == Some(AcpRequestKind::Initialize) {
                        self.capabilities = Some(answer.capabilities());
                    } else if let Some(session) = answer.session_id {
                        self.session_id = Some(session);
                    }
                }
                Some(AcpLine::Response {
                    request,
                    error: error.map(|error| error.message_or_default().to_owned()),
                    stop_reason,
                })
            }
            Shape::Request { id, method, params } => {
                let options = if method == "session/request_permission" {
                    lenient::<PermissionParams>(params)
                        .and_then(|params| params.options)
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                self.waiting.insert(id.clone(), options);
                Some(AcpLine::Request {
                    request_id: id,
                    method: method.to_owned(),
                })
            }
            Shape::Notification { method, .. } => Some(AcpLine::Notification {
                method: method.to_owned(),
            }),
        }
    }
}

fn outcome_line(request_id: &str, outcome: Value) -> String {
    Dialect::JsonRpc2.result(request_id, json!({"outcome": outcome}))
}
