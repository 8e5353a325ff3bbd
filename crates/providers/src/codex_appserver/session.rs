//! The client half of an app-server connection: [`AppServerSession`] writes the lines the host
//! sends (numbered requests, approval and user-input answers, interrupts) and reads the
//! server's lines for what they teach (the thread and turn ids, the requests waiting for an
//! answer).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::wire::{Answer, Resolved};
use crate::channel::{take_waiting, Dialect, Numbering};
use crate::error::ChannelError;
use crate::rpc::{id_text, lenient, Envelope, Shape};

/// Who the client says it is in `initialize` (`clientInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// A short machine name (`panewise`).
    pub name: String,
    /// A title for people.
    pub title: String,
    /// The client's version.
    pub version: String,
}

/// How a thread is started or resumed; every field the host leaves `None` is the server's
/// configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadOptions {
    /// The working directory of the agent.
    pub cwd: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// `approvalPolicy`: `untrusted` (ask before anything not known safe), `on-request`,
    /// `on-failure`, `never`.
    pub approval_policy: Option<String>,
    /// `sandbox`: `read-only`, `workspace-write`, `danger-full-access`.
    pub sandbox: Option<String>,
}

/// Which of the session's requests an answer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// `initialize`.
    Initialize,
    /// `thread/start`.
    ThreadStart,
    /// `thread/resume`.
    ThreadResume,
    /// `turn/start`.
    TurnStart,
    /// `turn/interrupt`.
    TurnInterrupt,
}

/// The host's answer to an approval request (`availableDecisions` lists what the server takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run it, this once.
    Accept,
    /// Run it, and anything like it for the rest of the session.
    AcceptForSession,
    /// Do not run it; the item completes `declined` and the turn goes on.
    Decline,
    /// Do not run it, and stop the turn.
    Cancel,
}

impl ApprovalDecision {
    /// The protocol's word for the decision.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::Accept => "accept",
            ApprovalDecision::AcceptForSession => "acceptForSession",
            ApprovalDecision::Decline => "decline",
            ApprovalDecision::Cancel => "cancel",
        }
    }
}

/// What a server request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerRequestKind {
    /// A `…/requestApproval`: answer with [`AppServerSession::answer_approval`].
    Approval,
    /// `item/tool/requestUserInput`: answer with [`AppServerSession::answer_user_input`].
    UserInput,
    /// Anything else: answer with [`AppServerSession::refuse_request`] so the server does not
    /// wait forever.
    Other,
}

/// A server line, as the session reads it (the events come from the decoder).
#[derive(Debug, Clone, PartialEq)]
pub enum AppServerLine {
    /// The server answered one of the session's requests.
    Response {
        /// Which request; `None` for an id the session never sent.
        request: Option<RequestKind>,
        /// `None` on success, else the server's error message.
        error: Option<String>,
    },
    /// The server asks something and waits for the answer.
    ServerRequest {
        /// The id to answer with (its JSON text: `0`, or `"a"` for a string id).
        request_id: String,
        /// The method.
        method: String,
        /// What kind of answer it needs.
        kind: ServerRequestKind,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
    },
}

/// The client side of one app-server connection: the lines to write, and what the answers
/// taught (the thread and the running turn). It writes nothing itself; the host sends each
/// returned line, newline-terminated, to the server's stdin.
///
/// ```
/// use panewise_providers::codex_appserver::{AppServerSession, ClientInfo, ThreadOptions};
///
/// let mut session = AppServerSession::default();
/// let client = ClientInfo { name: "panewise".into(), title: "panewise".into(), version: "1".into() };
/// assert!(session.initialize(&client).contains(r#""method":"initialize""#));
/// session.start_thread(&ThreadOptions::default());
/// session.read(br#"{"id":2,"result":{"thread":{"id":"t1"}}}"#);
/// assert_eq!(session.thread_id(), Some("t1"));
/// assert!(session.start_turn("hello").is_ok());
/// ```
#[derive(Debug, Clone, Default)]
pub struct AppServerSession {
    requests: Numbering<RequestKind>,
    thread_id: Option<String>,
    turn_id: Option<String>,
    /// Server requests read and not answered yet, by id, with what they need.
    waiting: BTreeMap<String, ServerRequestKind>,
}

impl AppServerSession {
    /// The thread the session is in, once the server named it.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The running turn, from the `turn/start` answer or `turn/started` until `turn/completed`.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    /// Server requests waiting for an answer, oldest id first.
    pub fn waiting(&self) -> impl Iterator<Item = (&str, ServerRequestKind)> {
        self.waiting.iter().map(|(id, kind)| (id.as_str(), *kind))
    }

    fn request(&mut self, kind: RequestKind, method: &str, params: Value) -> String {
        let id = self.requests.next(kind);
        Dialect::CodexAppServer.request(id, method, params)
    }

    /// The `initialize` request, the first line of the connection.
    pub fn initialize(&mut self, client: &ClientInfo) -> String {
        let params = json!({
            "clientInfo": {"name": client.name, "title": client.title, "version": client.version},
            "capabilities": {"experimentalApi": false},
        });
        self.request(RequestKind::Initialize, "initialize", params)
    }

    /// The `initialized` notification, sent after the `initialize` answer.
    pub fn initialized(&self) -> String {
        Dialect::CodexAppServer.notification("initialized", None)
    }

    /// `thread/start` with `options`.
    pub fn start_thread(&mut self, options: &ThreadOptions) -> String {
        let params = thread_params(None, options);
        self.request(RequestKind::ThreadStart, "thread/start", params)
    }

    /// `thread/resume` of `thread_id` (from an earlier `thread/start` answer), with `options`.
    pub fn resume_thread(&mut self, thread_id: &str, options: &ThreadOptions) -> String {
        let params = thread_params(Some(thread_id), options);
        self.request(RequestKind::ThreadResume, "thread/resume", params)
    }

    /// `turn/start` of a prompt in the session's thread.
    pub fn start_turn(&mut self, text: &str) -> Result<String, ChannelError> {
        let thread = self
            .thread_id
            .clone()
            .ok_or(ChannelError::NoSession("thread"))?;
        let params = json!({
            "threadId": thread,
            "input": [{"type": "text", "text": text, "text_elements": []}],
        });
        Ok(self.request(RequestKind::TurnStart, "turn/start", params))
    }

    /// `turn/interrupt` of the running turn; the server ends it with `turn/completed`
    /// `interrupted`.
    pub fn interrupt(&mut self) -> Result<String, ChannelError> {
        let thread = self
            .thread_id
            .clone()
            .ok_or(ChannelError::NoSession("thread"))?;
        let turn = self.turn_id.clone().ok_or(ChannelError::NoTurn)?;
        let params = json!({"threadId": thread, "turnId": turn});
        Ok(self.request(RequestKind::TurnInterrupt, "turn/interrupt", params))
    }

    /// Closes the waiting request `request_id`, which must need `needs`.
    fn answer(&mut self, request_id: &str, needs: ServerRequestKind) -> Result<(), ChannelError> {
        match self.waiting.get(request_id) {
            Some(kind) if *kind == needs => take_waiting(&mut self.waiting, request_id).map(drop),
            _ => Err(ChannelError::UnknownRequest(request_id.to_owned())),
        }
    }

    /// The answer to the approval request `request_id`.
    pub fn answer_approval(
        &mut self,
        request_id: &str,
        decision: ApprovalDecision,
    ) -> Result<String, ChannelError> {
        self.answer(request_id, ServerRequestKind::Approval)?;
        Ok(Dialect::CodexAppServer.result(request_id, json!({"decision": decision.as_str()})))
    }

    /// The answer to the `requestUserInput` request `request_id`: `answers` maps each
    /// question's id to `{"answers": [text, …]}`, the protocol schema's shape (not captured).
    pub fn answer_user_input(
        &mut self,
        request_id: &str,
        answers: Value,
    ) -> Result<String, ChannelError> {
        self.answer(request_id, ServerRequestKind::UserInput)?;
        Ok(Dialect::CodexAppServer.result(request_id, json!({"answers": answers})))
    }

    /// A JSON-RPC error answering any waiting request the host will not handle, so the server
    /// stops waiting (`-32601`, method not found, for a kind the host does not know).
    pub fn refuse_request(
        &mut self,
        request_id: &str,
        message: &str,
    ) -> Result<String, ChannelError> {
        take_waiting(&mut self.waiting, request_id)?;
        Ok(Dialect::CodexAppServer.refusal(request_id, message))
    }

    /// Reads one server line, learning the thread and turn ids and the requests to answer.
    /// `None` for a line that is not a JSON-RPC message.
    pub fn read(&mut self, raw: &[u8]) -> Option<AppServerLine> {
        let envelope = Envelope::parse(raw).ok()?;
        match envelope.shape()? {
            Shape::Response { id, result, error } => {
                let request = self.requests.answered_id(&id);
                let answer: Option<Answer> = lenient(result);
                if let Some(answer) = answer.filter(|_| error.is_none()) {
                    if let Some(thread) = answer.thread.and_then(|thread| thread.id) {
                        self.thread_id = Some(thread);
                    }
                    if let Some(turn) = answer.turn.and_then(|turn| turn.id) {
                        self.turn_id = Some(turn);
                    }
                }
                Some(AppServerLine::Response {
                    request,
                    error: error.map(|error| error.message_or_default().to_owned()),
                })
            }
            Shape::Request { id, method, .. } => {
                let kind = server_request_kind(method);
                self.waiting.insert(id.clone(), kind);
                Some(AppServerLine::ServerRequest {
                    request_id: id,
                    method: method.to_owned(),
                    kind,
                })
            }
            Shape::Notification { method, params } => {
                let answer: Option<Answer> = lenient(params);
                match (method, answer) {
                    ("thread/started", Some(answer)) => {
                        if let Some(thread) = answer.thread.and_then(|thread| thread.id) {
                            self.thread_id = Some(thread);
                        }
                    }
                    ("turn/started", Some(answer)) => {
                        self.turn_id = answer.turn.and_then(|turn| turn.id);
                    }
                    ("turn/completed", _) => self.turn_id = None,
                    ("serverRequest/resolved", _) => {
                        let resolved: Option<Resolved<'_>> = lenient(params);
                        if let Some(id) = resolved.and_then(|resolved| resolved.request_id) {
                            self.waiting.remove(&id_text(id));
                        }
                    }
                    _ => {}
                }
                Some(AppServerLine::Notification {
                    method: method.to_owned(),
                })
            }
        }
    }
}

fn thread_params(thread_id: Option<&str>, options: &ThreadOptions) -> Value {
    let mut params = serde_json::Map::new();
    if let Some(thread) = thread_id {
        params.insert("threadId".into(), thread.into());
    }
    for (key, value) in [
        ("cwd", &options.cwd),
        ("model", &options.model),
        ("approvalPolicy", &options.approval_policy),
        ("sandbox", &options.sandbox),
    ] {
        if let Some(value) = value {
            params.insert(key.into(), value.clone().into());
        }
    }
    Value::Object(params)
}

pub(super) fn server_request_kind(method: &str) -> ServerRequestKind {
    if method.ends_with("/requestApproval") {
        ServerRequestKind::Approval
    } else if method.ends_with("/requestUserInput") {
        ServerRequestKind::UserInput
    } else {
        ServerRequestKind::Other
    }
}
