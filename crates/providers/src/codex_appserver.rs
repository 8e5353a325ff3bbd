//! Codex `app-server`: one persistent process speaking JSON-RPC 2.0 over stdio, one message per
//! line and **without** the `"jsonrpc"` field. The host opens with `initialize` and the
//! `initialized` notification, starts (`thread/start`) or resumes (`thread/resume`) a thread,
//! then sends `turn/start` per prompt and `turn/interrupt` to stop one. The server streams
//! notifications (`turn/started`, `item/started` / `item/completed`, message and reasoning
//! deltas, `thread/tokenUsage/updated`, `turn/completed`, …) and sends requests of its own
//! (`item/commandExecution/requestApproval`, `item/fileChange/requestApproval`,
//! `item/tool/requestUserInput`) that wait for the host's answer.
//!
//! Two halves, both pure. [`AppServerSession`] is the client side: it writes the lines, numbers
//! its requests and remembers which id was which, so that the `thread/start` answer gives the
//! thread id and the `turn/start` answer (or `turn/started`) the turn id `turn/interrupt` needs.
//! The decoder, behind [`Decoder`](crate::Decoder) with
//! [`Provider::CodexAppServer`], turns what the server writes
//! into [`ProviderEvent`]s; it reads answers by their shape (a `thread` in the result), so a
//! capture decodes without the session that wrote it.
//!
//! Figures: `thread/tokenUsage/updated` carries `last` (the model call just made) and `total`
//! (the thread's running sum). Each update becomes one [`UsageScope::Call`] usage from `last`; a
//! repeated update (the same `total` again) is skipped, and the turn's own figures are the sum of
//! its calls' `last`s, so a resumed thread's running total is never counted again.
//! `modelContextWindow` becomes [`ProviderEvent::ContextWindows`] for the thread's model.
//! A turn `interrupted` ends as a plain [`ProviderEvent::TurnEnded`], as Claude Code's
//! interrupted turn does: stopping is not a failure (R95).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use panewise_protocol::{PlanStep, PlanStepStatus, SessionStats};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::args::{first_significant_arg, unwrap_shell_command, SHELL_TOOL};
use crate::channel::{params_of, push_unknown, take_waiting, Dialect, Numbering};
use crate::classify::{classify, classify_rpc_error, ErrorReport};
use crate::error::ChannelError;
use crate::event::{ProviderEvent, ToolStatus, UsageScope};
use crate::figures::add_tokens;
use crate::line::{LineDecoder, Provider};
use crate::rpc::{answered_id, id_text, lenient, Envelope, Shape};

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

fn server_request_kind(method: &str) -> ServerRequestKind {
    if method.ends_with("/requestApproval") {
        ServerRequestKind::Approval
    } else if method.ends_with("/requestUserInput") {
        ServerRequestKind::UserInput
    } else {
        ServerRequestKind::Other
    }
}

/// The parts of an answer or notification that carry ids: `thread` and `turn`.
#[derive(Deserialize)]
struct Answer {
    thread: Option<Thread>,
    turn: Option<Turn>,
    model: Option<String>,
    cwd: Option<String>,
}

#[derive(Deserialize)]
struct Thread {
    id: Option<String>,
    model: Option<String>,
    cwd: Option<String>,
}

#[derive(Deserialize)]
struct Turn {
    id: Option<String>,
    status: Option<String>,
    error: Option<TurnError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TurnError {
    message: Option<String>,
    codex_error_info: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resolved<'a> {
    #[serde(borrow)]
    request_id: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delta<'a> {
    item_id: Option<Cow<'a, str>>,
    delta: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ItemParams<'a> {
    #[serde(borrow)]
    item: Option<Item<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Item<'a> {
    #[serde(rename = "type")]
    kind: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    summary: Option<Vec<String>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    command: Option<Cow<'a, str>>,
    exit_code: Option<i64>,
    aggregated_output: Option<String>,
    status: Option<Cow<'a, str>>,
    /// File changes as Codex sends them (path, kind, diff), kept whole for the transcript.
    changes: Option<Vec<Value>>,
    server: Option<Cow<'a, str>>,
    tool: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    query: Option<Cow<'a, str>>,
    /// An MCP tool call's result, as the server returned it.
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    /// An MCP tool call's error.
    error: Option<ItemError>,
}

#[derive(Deserialize)]
struct ItemError {
    message: Option<String>,
}

#[derive(Deserialize)]
struct TextPart {
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageParams {
    token_usage: Option<TokenUsage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenUsage {
    total: Option<Tokens>,
    last: Option<Tokens>,
    model_context_window: Option<u64>,
}

/// Codex counts cached reads and cache writes inside `inputTokens`, and reasoning inside
/// `outputTokens`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct Tokens {
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    reasoning_output_tokens: Option<u64>,
}

impl Tokens {
    /// The vocabulary keeps uncached input, cache reads and cache writes apart.
    fn stats(&self) -> SessionStats {
        let cached = self.cached_input_tokens.unwrap_or(0);
        let written = self.cache_write_input_tokens.unwrap_or(0);
        SessionStats {
            input_tokens: self
                .input_tokens
                .map(|input| input.saturating_sub(cached).saturating_sub(written)),
            cached_input_tokens: self.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_output_tokens,
            ..SessionStats::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorParams {
    error: Option<TurnError>,
    will_retry: Option<bool>,
}

#[derive(Deserialize)]
struct NoticeParams {
    summary: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RateLimitParams {
    rate_limits: Option<Value>,
}

#[derive(Deserialize)]
struct PlanParams {
    plan: Option<Vec<PlanEntry>>,
}

#[derive(Deserialize)]
struct PlanEntry {
    step: Option<String>,
    status: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApprovalParams {
    item_id: Option<String>,
    command: Option<String>,
    reason: Option<String>,
    questions: Option<Vec<Question>>,
}

#[derive(Deserialize)]
struct Question {
    question: Option<String>,
}

/// State carried between lines of one app-server stream.
#[derive(Debug, Default)]
pub(crate) struct AppServerDecoder {
    thread_id: Option<String>,
    model: Option<String>,
    /// The window last reported, so that each update does not report it again.
    window: Option<u64>,
    /// The last `total` seen: an update repeating it is the same call reported again.
    last_total: Option<Tokens>,
    /// The running turn's own figures: the sum of its calls.
    turn_usage: SessionStats,
    /// Tool items started in the turn, with their first argument (a file change's approval
    /// request names no file; its item does).
    tool_items: BTreeMap<String, Option<String>>,
    /// Message and reasoning items whose text arrived as deltas, not to be counted again when
    /// the item completes.
    streamed: BTreeSet<String>,
    /// Server requests waiting for an answer.
    waiting: BTreeSet<String>,
    /// The failure last reported in the turn: `turn/completed` `failed` repeats `error`.
    reported_failure: Option<String>,
}

impl LineDecoder for AppServerDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let envelope = Envelope::parse(raw)?;
        match envelope.shape() {
            None => push_unknown(None, raw, out),
            Some(Shape::Response { result, error, .. }) => match error {
                // Before a thread is known, a refusal answers the handshake (a `thread/resume`
                // of a thread the server cannot find, say): the client decides what follows
                // (it starts a new thread), so it is shown, not a turn's failure.
                Some(error) if self.thread_id.is_none() => out.push(ProviderEvent::Warning {
                    message: format!(
                        "the agent refused a request: {}",
                        error.message_or_default()
                    ),
                }),
                Some(error) => out.push(ProviderEvent::Failure {
                    failure: classify_rpc_error(
                        Provider::CodexAppServer,
                        error.code,
                        error.message_or_default(),
                    ),
                }),
                None => {
                    let answer: Option<Answer> = lenient(result);
                    if let Some(answer) = answer {
                        if let Some(thread) = answer.thread {
                            self.session_started(thread, answer.model, answer.cwd, out);
                        }
                    }
                }
            },
            Some(Shape::Request { id, method, params }) => {
                self.server_request(id, method, params, raw, out)?;
            }
            Some(Shape::Notification { method, params }) => {
                self.notification(method, params, raw, out)?;
            }
        }
        Ok(())
    }
}

impl AppServerDecoder {
    /// A line the host wrote to the server: an answer to a server request means the host,
    /// not the server, closed it, so the server's `serverRequest/resolved` that follows is
    /// no withdrawal.
    pub(crate) fn host_line(&mut self, raw: &[u8]) {
        if let Some(id) = answered_id(raw) {
            self.waiting.remove(&id);
        }
    }

    fn session_started(
        &mut self,
        thread: Thread,
        model: Option<String>,
        cwd: Option<String>,
        out: &mut Vec<ProviderEvent>,
    ) {
        let model = model.or(thread.model);
        // The `thread/start` answer and `thread/started` name the same thread: said once.
        if thread.id.is_some() && thread.id == self.thread_id && model == self.model {
            return;
        }
        if thread.id != self.thread_id {
            self.last_total = None;
        }
        self.thread_id.clone_from(&thread.id);
        self.model.clone_from(&model);
        out.push(ProviderEvent::SessionStarted {
            session_id: thread.id,
            model,
            cwd: cwd.or(thread.cwd),
            tools: Vec::new(),
        });
    }

    fn notification(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        raw: &[u8],
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), String> {
        match method {
            "thread/started" => {
                if let Some(thread) = params_of::<Answer>(params, raw)?.and_then(|a| a.thread) {
                    self.session_started(thread, None, None, out);
                }
            }
            "turn/started" => {
                self.turn_usage = SessionStats::default();
                self.tool_items.clear();
                self.streamed.clear();
                self.reported_failure = None;
                out.push(ProviderEvent::TurnStarted { prompt: None });
            }
            "turn/completed" => {
                let turn = params_of::<Answer>(params, raw)?.and_then(|answer| answer.turn);
                if let Some(turn) = &turn {
                    if turn.status.as_deref() == Some("failed") {
                        let error = turn.error.as_ref();
                        let message = error
                            .and_then(|error| error.message.as_deref())
                            .unwrap_or("the turn failed");
                        let info = error.and_then(|error| error.codex_error_info.as_ref());
                        self.report_failure(message, info, out);
                    }
                }
                // A turn that ends leaves nothing to answer.
                for request_id in std::mem::take(&mut self.waiting) {
                    out.push(ProviderEvent::ApprovalWithdrawn { request_id });
                }
                let interrupted = turn
                    .as_ref()
                    .is_some_and(|turn| turn.status.as_deref() == Some("interrupted"));
                out.push(ProviderEvent::TurnEnded {
                    stats: std::mem::take(&mut self.turn_usage),
                    models: BTreeMap::new(),
                    interrupted,
                });
            }
            "item/started" | "item/completed" => {
                let completed = method == "item/completed";
                if let Some(item) = params_of::<ItemParams<'_>>(params, raw)?.and_then(|p| p.item) {
                    self.item(&item, completed, raw, out);
                }
            }
            "item/agentMessage/delta"
            | "item/reasoning/summaryTextDelta"
            | "item/reasoning/textDelta" => {
                let delta = params_of::<Delta<'_>>(params, raw)?;
                let Some(delta) = delta else { return Ok(()) };
                if let Some(item) = delta.item_id {
                    self.streamed.insert(item.into_owned());
                }
                let text = delta.delta.unwrap_or_default().into_owned();
                out.push(if method == "item/agentMessage/delta" {
                    ProviderEvent::TextDelta { text }
                } else {
                    ProviderEvent::ThinkingDelta { text }
                });
            }
            "thread/tokenUsage/updated" => {
                if let Some(usage) =
                    params_of::<UsageParams>(params, raw)?.and_then(|p| p.token_usage)
                {
                    self.token_usage(&usage, out);
                }
            }
            "account/rateLimits/updated" => {
                let limits = params_of::<RateLimitParams>(params, raw)?
                    .and_then(|p| p.rate_limits)
                    .unwrap_or(Value::Null);
                out.push(ProviderEvent::RateLimitsUpdated { limits });
            }
            "error" => {
                let params = params_of::<ErrorParams>(params, raw)?;
                let (message, info, will_retry) = match &params {
                    Some(params) => (
                        params
                            .error
                            .as_ref()
                            .and_then(|error| error.message.as_deref()),
                        params
                            .error
                            .as_ref()
                            .and_then(|error| error.codex_error_info.as_ref()),
                        params.will_retry == Some(true),
                    ),
                    None => (None, None, false),
                };
                let message = message.unwrap_or("the server reported an error");
                if will_retry {
                    out.push(ProviderEvent::ProviderRetrying {
                        attempt: None,
                        max_retries: None,
                        retry_delay_ms: None,
                        http_status: None,
                        reason: Some(message.to_owned()),
                    });
                } else {
                    self.report_failure(message, info, out);
                }
            }
            "configWarning" | "deprecationNotice" => {
                let summary = params_of::<NoticeParams>(params, raw)?.and_then(|p| p.summary);
                out.push(ProviderEvent::Warning {
                    message: summary.unwrap_or_else(|| method.to_owned()),
                });
            }
            "serverRequest/resolved" => {
                let resolved = params_of::<Resolved<'_>>(params, raw)?;
                if let Some(id) = resolved.and_then(|resolved| resolved.request_id) {
                    let request_id = id_text(id);
                    if self.waiting.remove(&request_id) {
                        out.push(ProviderEvent::ApprovalWithdrawn { request_id });
                    }
                }
            }
            "turn/plan/updated" => {
                let plan = params_of::<PlanParams>(params, raw)?.and_then(|p| p.plan);
                out.push(ProviderEvent::PlanUpdated {
                    steps: plan
                        .into_iter()
                        .flatten()
                        .map(|entry| PlanStep {
                            text: entry.step.unwrap_or_default(),
                            status: plan_status(entry.status.as_deref()),
                        })
                        .collect(),
                });
            }
            // Known, and nothing for the pane: the approval request itself says the thread
            // waits (`waitingOnApproval`), command output arrives whole with its item, a
            // summary part's text arrives as deltas, and remote control is not used.
            "thread/status/changed"
            | "item/reasoning/summaryPartAdded"
            | "item/commandExecution/outputDelta"
            | "remoteControl/status/changed" => {}
            _ => push_unknown(Some(method), raw, out),
        }
        Ok(())
    }

    fn server_request(
        &mut self,
        id: String,
        method: &str,
        params: Option<&RawValue>,
        raw: &[u8],
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), String> {
        let kind = server_request_kind(method);
        if kind == ServerRequestKind::Other {
            push_unknown(Some(method), raw, out);
            return Ok(());
        }
        let fields = params_of::<ApprovalParams>(params, raw)?;
        let input: Value = params_of(params, raw)?.unwrap_or(Value::Null);
        let tool = match method {
            "item/commandExecution/requestApproval" => SHELL_TOOL.to_owned(),
            "item/fileChange/requestApproval" => "file_change".to_owned(),
            "item/tool/requestUserInput" => "request_user_input".to_owned(),
            other => other
                .trim_start_matches("item/")
                .rsplit_once('/')
                .map_or(other, |(head, _)| head)
                .to_owned(),
        };
        let (call_id, arg) = match fields {
            Some(fields) => {
                let from_item = fields
                    .item_id
                    .as_ref()
                    .and_then(|item| self.tool_items.get(item).cloned().flatten());
                let question = fields
                    .questions
                    .iter()
                    .flatten()
                    .find_map(|question| question.question.clone());
                let arg = fields
                    .command
                    .as_deref()
                    .map(unwrap_shell_command)
                    .or(from_item)
                    .or(question)
                    .or(fields.reason);
                (fields.item_id, arg)
            }
            None => (None, None),
        };
        self.waiting.insert(id.clone());
        out.push(ProviderEvent::ApprovalRequested {
            request_id: id,
            tool,
            arg,
            call_id,
            input,
        });
        Ok(())
    }

    fn token_usage(&mut self, usage: &TokenUsage, out: &mut Vec<ProviderEvent>) {
        if let (Some(window), Some(model)) = (usage.model_context_window, &self.model) {
            if self.window != Some(window) {
                self.window = Some(window);
                out.push(ProviderEvent::ContextWindows {
                    windows: BTreeMap::from([(model.clone(), window)]),
                });
            }
        }
        let total = usage.total;
        if total.is_some() && total == self.last_total {
            // The same running total again: no new call was made.
            return;
        }
        self.last_total = total;
        let Some(last) = usage.last else { return };
        let call = last.stats();
        add_tokens(&mut self.turn_usage, &call);
        out.push(ProviderEvent::Usage {
            scope: UsageScope::Call,
            model: self.model.clone(),
            input_tokens: call
                .input_tokens
                .unwrap_or(0)
                .saturating_add(call.cache_write_input_tokens.unwrap_or(0)),
            cached_input_tokens: call.cached_input_tokens.unwrap_or(0),
            cache_write_input_tokens: call.cache_write_input_tokens,
            cache_write_1h_input_tokens: None,
            output_tokens: call.output_tokens,
            reasoning_tokens: call.reasoning_tokens,
        });
    }

    /// A failure with Codex's `codexErrorInfo`: a word (`internalServerError`) or an object
    /// named by its word holding the call's `httpStatusCode`
    /// (`{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`).
    fn report_failure(
        &mut self,
        message: &str,
        info: Option<&Value>,
        out: &mut Vec<ProviderEvent>,
    ) {
        if self.reported_failure.as_deref() == Some(message) {
            return;
        }
        self.reported_failure = Some(message.to_owned());
        let (error_type, http_status) = match info {
            Some(Value::String(word)) => (Some(word.as_str()), None),
            Some(Value::Object(map)) => (
                map.keys().next().map(String::as_str),
                map.values()
                    .find_map(|inner| inner.get("httpStatusCode"))
                    .and_then(Value::as_u64)
                    .and_then(|status| u16::try_from(status).ok()),
            ),
            _ => (None, None),
        };
        out.push(ProviderEvent::Failure {
            failure: classify(
                Some(Provider::CodexAppServer),
                &ErrorReport {
                    message,
                    error_type,
                    http_status,
                    ..ErrorReport::default()
                },
            ),
        });
    }

    fn item(&mut self, item: &Item<'_>, completed: bool, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        let id = item.id.as_deref().unwrap_or_default();
        let kind = item.kind.as_deref().unwrap_or_default();
        let (name, arg, input) = match kind {
            "userMessage" => {
                if completed {
                    let parts: Vec<TextPart> = lenient(item.content).unwrap_or_default();
                    let text: Vec<String> =
                        parts.into_iter().filter_map(|part| part.text).collect();
                    out.push(ProviderEvent::UserMessage {
                        text: text.join("\n"),
                        synthetic: false,
                    });
                }
                return;
            }
            "agentMessage" => {
                if completed && !self.streamed.contains(id) {
                    out.push(ProviderEvent::TextDelta {
                        text: item.text.as_deref().unwrap_or_default().to_owned(),
                    });
                }
                return;
            }
            "reasoning" => {
                if completed && !self.streamed.contains(id) {
                    let mut parts = item.summary.clone().unwrap_or_default();
                    if parts.is_empty() {
                        parts = lenient(item.content).unwrap_or_default();
                    }
                    if !parts.is_empty() {
                        out.push(ProviderEvent::ThinkingDelta {
                            text: parts.join("\n"),
                        });
                    }
                }
                return;
            }
            "commandExecution" => (
                SHELL_TOOL.to_owned(),
                item.command.as_deref().map(unwrap_shell_command),
                item.command
                    .as_deref()
                    .map(|command| serde_json::json!({ "command": command })),
            ),
            "fileChange" => (
                "file_change".to_owned(),
                item.changes.iter().flatten().find_map(|change| {
                    change
                        .get("path")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                }),
                item.changes
                    .as_ref()
                    .map(|changes| serde_json::json!({ "changes": changes })),
            ),
            "mcpToolCall" => (
                match (item.server.as_deref(), item.tool.as_deref()) {
                    (Some(server), Some(tool)) => format!("{server}.{tool}"),
                    (None, Some(tool)) => tool.to_owned(),
                    _ => "mcp_tool_call".to_owned(),
                },
                item.arguments
                    .map(RawValue::get)
                    .and_then(first_significant_arg),
                item.arguments
                    .and_then(|arguments| serde_json::from_str(arguments.get()).ok()),
            ),
            "webSearch" => (
                "web_search".to_owned(),
                item.query.as_deref().map(str::to_owned),
                item.query
                    .as_deref()
                    .map(|query| serde_json::json!({ "query": query })),
            ),
            _ => return push_unknown(Some(&format!("item/{kind}")), raw, out),
        };
        if !self.tool_items.contains_key(id) {
            self.tool_items.insert(id.to_owned(), arg.clone());
            out.push(ProviderEvent::ToolStarted {
                name,
                call_id: id.to_owned(),
                arg,
                input,
            });
        }
        if completed {
            let status = match item.status.as_deref() {
                Some("failed") => ToolStatus::Error,
                Some("declined") => ToolStatus::Declined,
                _ if item.exit_code.is_some_and(|code| code != 0) => ToolStatus::Error,
                _ => ToolStatus::Success,
            };
            out.push(ProviderEvent::ToolEnded {
                call_id: id.to_owned(),
                status,
                exit_code: item.exit_code,
                output: item
                    .aggregated_output
                    .clone()
                    .or_else(|| item.result.map(|result| result.get().to_owned()))
                    .or_else(|| item.error.as_ref().and_then(|error| error.message.clone())),
            });
        }
    }
}

fn plan_status(status: Option<&str>) -> PlanStepStatus {
    match status {
        Some("completed") => PlanStepStatus::Completed,
        Some("inProgress" | "in_progress") => PlanStepStatus::InProgress,
        _ => PlanStepStatus::Pending,
    }
}
