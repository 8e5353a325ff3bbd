//! The Agent Client Protocol (ACP) over stdio: JSON-RPC 2.0 with `"jsonrpc":"2.0"`, one message
//! per line, spoken by any ACP agent (Gemini CLI `--acp` first). The client opens with
//! `initialize` (its capabilities: here no file system and no terminal, so the agent does the
//! work itself), creates a session (`session/new`) or, when the agent's `initialize` answer
//! advertises it, loads (`session/load`) or resumes (`session/resume`) one, then sends
//! `session/prompt` per prompt and the `session/cancel` notification to stop one. The agent
//! streams `session/update` notifications, asks `session/request_permission` before a tool
//! runs, and answers the prompt with its `stopReason`.
//!
//! Two halves, both pure. [`AcpSession`] is the client side: the lines to write, request ids
//! and what the answers taught (the session id, the agent's capabilities, each permission
//! request's options, answered by their `kind`, never by a hard-coded id). The decoder, behind
//! [`Decoder`](crate::Decoder) with [`Provider::Acp`], turns what the agent
//! writes into [`ProviderEvent`]s. The stream has no turn-start message: a turn opens at its
//! first update (or permission request) and ends with the `session/prompt` answer, read by its
//! shape (a `stopReason`), so a capture decodes without the session that wrote it. A
//! `cancelled` stop ends the turn as a plain [`ProviderEvent::TurnEnded`], not a failure (R95).
//!
//! Wire types are this module's own, narrow and lenient, rather than the published
//! `agent-client-protocol` crate's: that crate is the async SDK (futures, an async runtime
//! interface, `anyhow`, `tracing`), and its schema crate brings `anyhow`, `derive_more`,
//! `serde_with`, `strum` and `schemars`, none on this crate's allowlist of pure dependencies;
//! its strict enums would also reject an update kind newer than the schema instead of letting it
//! become a counted [`ProviderEvent::Unknown`].

use std::collections::BTreeMap;

use panewise_protocol::{PlanStep, PlanStepStatus, SessionStats};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::args::SHELL_TOOL;
use crate::channel::{params_of, push_unknown, take_waiting, Dialect, Numbering};
use crate::classify::classify_rpc_error;
use crate::error::ChannelError;
use crate::event::{ProviderEvent, ToolStatus, UsageScope};
use crate::line::{LineDecoder, Provider};
use crate::rpc::{answered_id, lenient, Envelope, Shape};

pub use crate::codex_appserver::ClientInfo;

/// The protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The model name Gemini CLI gives its router; its tokens are real, but it says nothing about
/// which model holds the conversation.
const ROUTED_MODEL: &str = "auto";

/// What the agent's `initialize` answer advertised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCapabilities {
    /// The protocol version the agent chose.
    pub protocol_version: Option<u64>,
    /// `agentCapabilities.loadSession`: `session/load` replays a recorded session.
    pub load_session: bool,
    /// `agentCapabilities.sessionCapabilities.resume`: `session/resume` continues one without
    /// replaying it.
    pub resume_session: bool,
    /// `agentInfo.name`.
    pub agent_name: Option<String>,
    /// `agentInfo.version`.
    pub agent_version: Option<String>,
    /// The ids of `authMethods` the agent offers.
    pub auth_methods: Vec<String>,
}

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

/// One option of a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// The id to answer with.
    pub option_id: String,
    /// Its label for people.
    #[serde(default)]
    pub name: Option<String>,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
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

/// The fields of the answers this channel reads: `initialize`, `session/new`, `session/prompt`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    protocol_version: Option<u64>,
    agent_capabilities: Option<WireCapabilities>,
    agent_info: Option<AgentInfo>,
    auth_methods: Option<Vec<AuthMethod>>,
    session_id: Option<String>,
    models: Option<Models>,
    stop_reason: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<Meta>,
}

impl Answer {
    fn capabilities(self) -> AgentCapabilities {
        let caps = self.agent_capabilities;
        AgentCapabilities {
            protocol_version: self.protocol_version,
            load_session: caps.as_ref().and_then(|caps| caps.load_session) == Some(true),
            resume_session: caps
                .as_ref()
                .and_then(|caps| caps.session_capabilities.as_ref())
                .is_some_and(|session| session.resume.as_ref().is_some_and(|v| !v.is_null())),
            agent_name: self.agent_info.as_ref().and_then(|info| info.name.clone()),
            agent_version: self.agent_info.and_then(|info| info.version),
            auth_methods: self
                .auth_methods
                .into_iter()
                .flatten()
                .filter_map(|method| method.id)
                .collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCapabilities {
    load_session: Option<bool>,
    session_capabilities: Option<SessionCapabilities>,
}

#[derive(Deserialize)]
struct SessionCapabilities {
    resume: Option<Value>,
}

#[derive(Deserialize)]
struct AgentInfo {
    name: Option<String>,
    version: Option<String>,
}

#[derive(Deserialize)]
struct AuthMethod {
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Models {
    current_model_id: Option<String>,
}

#[derive(Deserialize)]
struct Meta {
    quota: Option<Quota>,
}

/// Gemini CLI's token counts of a prompt, in the answer's `_meta`.
#[derive(Deserialize)]
struct Quota {
    token_count: Option<TokenCount>,
    model_usage: Option<Vec<ModelUsage>>,
}

#[derive(Deserialize, Clone, Copy)]
struct TokenCount {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl TokenCount {
    fn stats(self) -> SessionStats {
        SessionStats {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            ..SessionStats::default()
        }
    }
}

#[derive(Deserialize)]
struct ModelUsage {
    model: Option<String>,
    token_count: Option<TokenCount>,
}

#[derive(Deserialize)]
struct PermissionParams {
    options: Option<Vec<PermissionOption>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionRequest {
    tool_call: Option<ToolCall>,
}

#[derive(Deserialize)]
struct UpdateParams {
    update: Option<Update>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Update {
    session_update: Option<String>,
    content: Option<Value>,
    #[serde(flatten)]
    tool: ToolCall,
    entries: Option<Vec<PlanEntry>>,
    used: Option<u64>,
    size: Option<u64>,
}

/// A tool call as `tool_call`, `tool_call_update` and a permission request's `toolCall` carry
/// it; an update repeats only what changed.
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
struct ToolCall {
    tool_call_id: Option<String>,
    title: Option<String>,
    kind: Option<String>,
    status: Option<String>,
    locations: Option<Vec<Location>>,
    /// The tool's input as the agent passed it, when the agent shares it.
    raw_input: Option<Value>,
    /// The tool's output as the agent got it, when the agent shares it.
    raw_output: Option<Value>,
    /// What the client is shown of the call: text blocks, diffs, terminals.
    content: Option<Vec<Value>>,
}

impl ToolCall {
    /// The call's output: its raw output (a string as it is, anything else as JSON), else
    /// the text of its content blocks, one per line (a diff as its JSON).
    fn output(&self) -> Option<String> {
        if let Some(raw) = &self.raw_output {
            return Some(match raw {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            });
        }
        let parts: Vec<String> = self
            .content
            .iter()
            .flatten()
            .map(|block| match block.get("type").and_then(Value::as_str) {
                Some("content") => {
                    text_of(block.get("content")).unwrap_or_else(|| block.to_string())
                }
                _ => block.to_string(),
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    fn arg(&self) -> Option<String> {
        self.title.clone().or_else(|| {
            self.locations
                .iter()
                .flatten()
                .find_map(|location| location.path.clone())
        })
    }
}

#[derive(Deserialize, Clone)]
struct Location {
    path: Option<String>,
}

#[derive(Deserialize)]
struct PlanEntry {
    content: Option<String>,
    status: Option<String>,
}

/// What is known of a tool call of the turn, and whether its start was reported.
#[derive(Debug, Default)]
struct SeenTool {
    kind: Option<String>,
    arg: Option<String>,
    input: Option<Value>,
    started: bool,
}

/// State carried between lines of one ACP stream.
#[derive(Debug, Default)]
pub(crate) struct AcpDecoder {
    turn_open: bool,
    model: Option<String>,
    /// Tool calls seen in the turn, by id.
    tools: BTreeMap<String, SeenTool>,
    /// Permission requests waiting, with the tool call each is about.
    waiting: BTreeMap<String, Option<String>>,
    /// From the agent's `initialize` answer until the client's first prompt: what arrives then
    /// is a loaded session's history, never a turn's output. `session/load` replays it as
    /// updates, and an agent may go on replaying after its answer (Gemini CLI streams the
    /// history without waiting for it), so the answer to a load does not end it: the client's
    /// prompt does ([`AcpDecoder::prompt_sent`]), or, in a stream decoded without the client's
    /// side, the first sign of a live turn (a permission request, a tool call starting, a
    /// prompt's answer). A new session's answer (it names the session) has no history to
    /// follow and ends it at once.
    loading: bool,
    /// The session is established (its `session/new`, `load` or `resume` answered): from then
    /// on the client's requests are prompts, so an error answer is a prompt's failure.
    session_ready: bool,
}

impl AcpDecoder {
    /// The client sent a prompt: what the agent writes from now on is the turn's.
    pub(crate) fn prompt_sent(&mut self) {
        self.loading = false;
    }
}

impl LineDecoder for AcpDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let envelope = Envelope::parse(raw)?;
        match envelope.shape() {
            None => push_unknown(None, raw, out),
            Some(Shape::Response { result, error, .. }) => match error {
                // While a turn runs, or once the session is established, the one request of
                // the client in flight is its prompt: a failed prompt is the turn's failure and
                // its end, even when the agent wrote nothing before it (Gemini CLI answers a
                // prompt whose model calls all failed with the API's status as the code).
                Some(error) if self.turn_open || self.session_ready => {
                    self.open_turn(out);
                    out.push(ProviderEvent::Failure {
                        failure: classify_rpc_error(
                            Provider::Acp,
                            error.code,
                            error.message_or_default(),
                        ),
                    });
                    self.end_turn(SessionStats::default(), BTreeMap::new(), false, out);
                }
                // Outside a turn (a session that could not be loaded, say) the client decides
                // what follows; the refusal is shown, not a turn's failure.
                Some(error) => {
                    self.loading = false;
                    out.push(ProviderEvent::Warning {
                        message: format!(
                            "the agent refused a request: {}",
                            error.message_or_default()
                        ),
                    });
                }
                None => {
                    if let Some(answer) = params_of::<Answer>(result, raw)? {
                        // The `initialize` answer (its protocol version) opens the handshake;
                        // the next answer is the session's, and ends any replay.
                        let initialize = answer.protocol_version.is_some();
                        if initialize {
                            self.loading = true;
                        } else {
                            if self.loading {
                                self.session_ready = true;
                            }
                            if answer.session_id.is_some() || answer.stop_reason.is_some() {
                                self.loading = false;
                            }
                        }
                        self.answer(answer, out);
                    }
                }
            },
            Some(Shape::Request { id, method, params }) => {
                if method == "session/request_permission" {
                    self.loading = false;
                    let call = params_of::<PermissionRequest>(params, raw)?
                        .and_then(|request| request.tool_call)
                        .unwrap_or_default();
                    let input: Value = params_of(params, raw)?.unwrap_or(Value::Null);
                    self.open_turn(out);
                    if let Some(call_id) = &call.tool_call_id {
                        self.tools
                            .entry(call_id.clone())
                            .or_insert_with(|| SeenTool {
                                kind: call.kind.clone(),
                                arg: call.arg(),
                                input: call.raw_input.clone(),
                                started: false,
                            });
                    }
                    self.waiting.insert(id.clone(), call.tool_call_id.clone());
                    out.push(ProviderEvent::ApprovalRequested {
                        request_id: id,
                        tool: tool_name(call.kind.as_deref()),
                        arg: call.arg(),
                        call_id: call.tool_call_id,
                        input,
                    });
                } else {
                    push_unknown(Some(method), raw, out);
                }
            }
            Some(Shape::Notification { method, params }) => {
                if method == "session/update" {
                    if let Some(update) =
                        params_of::<UpdateParams>(params, raw)?.and_then(|p| p.update)
                    {
                        self.update(update, raw, out);
                    }
                } else {
                    push_unknown(Some(method), raw, out);
                }
            }
        }
        Ok(())
    }
}

/// The name a tool call of ACP `kind` goes by, in its question and its tool line alike: ACP's
/// `execute` is the shell every other agent's command runs in.
fn tool_name(kind: Option<&str>) -> String {
    match kind {
        Some("execute") => SHELL_TOOL.to_owned(),
        Some(kind) => kind.to_owned(),
        None => "tool".to_owned(),
    }
}

impl AcpDecoder {
    /// A line the host wrote to the agent: an answer to a permission request means the host
    /// closed it, so the tool call going on afterwards is no withdrawal.
    pub(crate) fn host_line(&mut self, raw: &[u8]) {
        if let Some(id) = answered_id(raw) {
            self.waiting.remove(&id);
        }
    }

    fn open_turn(&mut self, out: &mut Vec<ProviderEvent>) {
        if !std::mem::replace(&mut self.turn_open, true) {
            self.tools.clear();
            out.push(ProviderEvent::TurnStarted { prompt: None });
        }
    }

    fn answer(&mut self, answer: Answer, out: &mut Vec<ProviderEvent>) {
        if let Some(stop_reason) = answer.stop_reason.as_deref() {
            self.open_turn(out);
            let quota = answer.meta.and_then(|meta| meta.quota);
            let (stats, models) = match quota {
                Some(quota) => {
                    let models: BTreeMap<String, SessionStats> = quota
                        .model_usage
                        .into_iter()
                        .flatten()
                        .filter_map(|usage| Some((usage.model?, usage.token_count?.stats())))
                        .collect();
                    let stats = quota.token_count.map(TokenCount::stats).unwrap_or_default();
                    (stats, models)
                }
                None => (SessionStats::default(), BTreeMap::new()),
            };
            // The meter follows the model that did the work, not the router.
            let main = models
                .iter()
                .filter(|(model, _)| model.as_str() != ROUTED_MODEL)
                .max_by_key(|(_, usage)| usage.input_tokens.unwrap_or(0));
            let (model, usage) = match main {
                Some((model, usage)) => (Some(model.clone()), usage),
                None => (None, &stats),
            };
            if usage.input_tokens.unwrap_or(0) > 0 {
                out.push(ProviderEvent::Usage {
                    scope: UsageScope::Turn,
                    model,
                    input_tokens: usage.input_tokens.unwrap_or(0),
                    cached_input_tokens: 0,
                    cache_write_input_tokens: None,
                    cache_write_1h_input_tokens: None,
                    output_tokens: usage.output_tokens,
                    reasoning_tokens: None,
                });
            }
            match stop_reason {
                // A finished turn, and a stopped one: stopping is not a failure.
                "end_turn" | "cancelled" => {}
                "max_tokens" => out.push(ProviderEvent::Warning {
                    message: "the turn stopped at the model's output token limit (max_tokens)"
                        .to_owned(),
                }),
                "max_turn_requests" => out.push(ProviderEvent::Warning {
                    message: "the turn stopped at the agent's limit of model requests per turn \
                              (max_turn_requests)"
                        .to_owned(),
                }),
                "refusal" => out.push(ProviderEvent::Warning {
                    message: "the agent refused to go on (refusal)".to_owned(),
                }),
                other => out.push(ProviderEvent::Warning {
                    message: format!("the turn stopped: {other}"),
                }),
            }
            self.end_turn(stats, models, stop_reason == "cancelled", out);
        } else if let Some(session_id) = answer.session_id {
            self.session_ready = true;
            let model = answer.models.and_then(|models| models.current_model_id);
            self.model = model.clone().filter(|model| model != ROUTED_MODEL);
            out.push(ProviderEvent::SessionStarted {
                session_id: Some(session_id),
                model,
                cwd: None,
                tools: Vec::new(),
            });
        }
    }

    /// Ends the turn; `interrupted` when the agent says it was cancelled (R98).
    fn end_turn(
        &mut self,
        stats: SessionStats,
        models: BTreeMap<String, SessionStats>,
        interrupted: bool,
        out: &mut Vec<ProviderEvent>,
    ) {
        // The prompt is answered: no permission request of it waits any more.
        for request_id in std::mem::take(&mut self.waiting).into_keys() {
            out.push(ProviderEvent::ApprovalWithdrawn { request_id });
        }
        self.turn_open = false;
        self.tools.clear();
        out.push(ProviderEvent::TurnEnded {
            stats,
            models,
            interrupted,
        });
    }

    fn update(&mut self, update: Update, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        let kind = update.session_update.as_deref().unwrap_or_default();
        if self.loading {
            // A replayed tool call is listed done; one created running is this turn's.
            let starts = kind == "tool_call"
                && matches!(
                    update.tool.status.as_deref(),
                    Some("pending" | "in_progress")
                );
            if !starts {
                return history(kind, &update, out);
            }
            self.loading = false;
        }
        match kind {
            "agent_message_chunk" | "agent_thought_chunk" => {
                self.open_turn(out);
                if let Some(text) = text_of(update.content.as_ref()) {
                    out.push(if kind == "agent_message_chunk" {
                        ProviderEvent::TextDelta { text }
                    } else {
                        ProviderEvent::ThinkingDelta { text }
                    });
                }
            }
            "user_message_chunk" => {
                if let Some(text) = text_of(update.content.as_ref()) {
                    out.push(ProviderEvent::UserMessage {
                        text,
                        synthetic: false,
                    });
                }
            }
            "tool_call" | "tool_call_update" => {
                self.open_turn(out);
                self.tool_call(&update.tool, out);
            }
            "plan" => {
                self.open_turn(out);
                out.push(ProviderEvent::PlanUpdated {
                    steps: update
                        .entries
                        .into_iter()
                        .flatten()
                        .map(|entry| PlanStep {
                            text: entry.content.unwrap_or_default(),
                            status: match entry.status.as_deref() {
                                Some("completed") => PlanStepStatus::Completed,
                                Some("in_progress") => PlanStepStatus::InProgress,
                                _ => PlanStepStatus::Pending,
                            },
                        })
                        .collect(),
                });
            }
            "usage_update" => {
                if let (Some(size), Some(model)) = (update.size, &self.model) {
                    out.push(ProviderEvent::ContextWindows {
                        windows: BTreeMap::from([(model.clone(), size)]),
                    });
                }
                if let Some(used) = update.used {
                    out.push(ProviderEvent::Usage {
                        scope: UsageScope::Call,
                        model: self.model.clone(),
                        input_tokens: used,
                        cached_input_tokens: 0,
                        cache_write_input_tokens: None,
                        cache_write_1h_input_tokens: None,
                        output_tokens: None,
                        reasoning_tokens: None,
                    });
                }
            }
            // Known, and nothing for the pane: the slash commands, the mode and the options
            // on offer, and the session's title.
            "available_commands_update"
            | "current_mode_update"
            | "config_option_update"
            | "session_info_update" => {}
            other => push_unknown(Some(&format!("session/update/{other}")), raw, out),
        }
    }

    fn tool_call(&mut self, call: &ToolCall, out: &mut Vec<ProviderEvent>) {
        let Some(call_id) = call.tool_call_id.clone() else {
            return;
        };
        let status = call.status.as_deref();
        if matches!(
            status,
            Some("in_progress" | "completed" | "failed" | "cancelled")
        ) {
            // The agent went on: whatever it asked about this call has its answer.
            let answered: Vec<String> = self
                .waiting
                .iter()
                .filter(|(_, about)| about.as_deref() == Some(call_id.as_str()))
                .map(|(request, _)| request.clone())
                .collect();
            for request_id in answered {
                self.waiting.remove(&request_id);
                out.push(ProviderEvent::ApprovalWithdrawn { request_id });
            }
        }
        let entry = self.tools.entry(call_id.clone()).or_default();
        if call.kind.is_some() {
            entry.kind.clone_from(&call.kind);
        }
        if let Some(arg) = call.arg() {
            entry.arg = Some(arg);
        }
        if call.raw_input.is_some() {
            entry.input.clone_from(&call.raw_input);
        }
        if !entry.started {
            entry.started = true;
            out.push(ProviderEvent::ToolStarted {
                name: tool_name(entry.kind.as_deref()),
                call_id: call_id.clone(),
                arg: entry.arg.clone(),
                input: entry.input.clone(),
            });
        }
        let ended = match status {
            Some("completed") => Some(ToolStatus::Success),
            Some("failed") => Some(ToolStatus::Error),
            Some("cancelled") => Some(ToolStatus::Declined),
            _ => None,
        };
        if let Some(status) = ended {
            out.push(ProviderEvent::ToolEnded {
                call_id,
                status,
                exit_code: None,
                output: call.output(),
            });
        }
    }
}

/// A loaded session's replayed update, as history: its messages and tool calls, nothing that
/// opens a turn or starts a tool. The rest (a tool call's later status, the commands on offer)
/// says nothing the history needs.
fn history(kind: &str, update: &Update, out: &mut Vec<ProviderEvent>) {
    let role = match kind {
        "user_message_chunk" => "user",
        "agent_message_chunk" => "assistant",
        "agent_thought_chunk" => "thinking",
        "tool_call" => "tool",
        _ => return,
    };
    let text = if role == "tool" {
        update
            .tool
            .arg()
            .or_else(|| update.tool.kind.clone())
            .unwrap_or_else(|| "tool".to_owned())
    } else {
        match text_of(update.content.as_ref()) {
            Some(text) => text,
            None => return,
        }
    };
    out.push(ProviderEvent::HistoryReplayed {
        role: role.to_owned(),
        text,
    });
}

/// The text of a content block (`{"type":"text","text":…}`); other blocks carry none.
fn text_of(content: Option<&Value>) -> Option<String> {
    let content = content?;
    (content.get("type")?.as_str()? == "text")
        .then(|| content.get("text")?.as_str().map(str::to_owned))
        .flatten()
}
