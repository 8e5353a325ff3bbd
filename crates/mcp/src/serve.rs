//! `panewise mcp serve`: the daemon's verbs as MCP tools over stdio, so that an agent (Claude
//! Code, Codex, panewise's own loop) can hand work to another agent of any provider and wait
//! for it.
//!
//! The server is a client of the daemon's JSON-RPC API ([`Daemon`], which the CLI connects,
//! starting the daemon as every command does): an agent started here is an ordinary daemon
//! session, listed by `panewise agents` and shown in the dashboard.
//!
//! Approvals stay with the person. No tool here answers a delegated agent's approval; a
//! delegated agent starts in an approval mode no freer than the one `mcp serve --approval`
//! was given (its cap, [`ServeOptions::cap`]): a `start` asking for more is refused, and one
//! asking for nothing gets the cap. `answer` answers a delegated agent's *question*
//! (`session/answer`), not an approval.
//!
//! The pure half is table-tested: the tools' definitions ([`tools`]), their arguments
//! ([`ToolArgs::parse`]), the approval cap ([`capped_approval`]) and what ends a wait
//! ([`Until::reached`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use panewise_api::{AgentState, Method, SessionSummary};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// A future the [`Daemon`] returns.
pub type DaemonFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// The daemon, as `mcp serve` reaches it. Errors are the daemon's words, given to the caller.
pub trait Daemon: Send + Sync + 'static {
    /// One call of the daemon's API: `method` with `params`, its result.
    fn call(&self, method: Method, params: Value) -> DaemonFuture<'_, Value>;
    /// Waits until the session `session` names is where [`wait_over`] says a wait for
    /// `until` ends, with at least `min_turns` turns completed, at most `timeout`; its summary
    /// then, `None` when the time ran out.
    fn wait(
        &self,
        session: String,
        until: Until,
        min_turns: u64,
        timeout: Duration,
    ) -> DaemonFuture<'_, Option<SessionSummary>>;
    /// The session's conversation as text, its last `max_chars` characters.
    fn transcript(&self, session: String, max_chars: usize) -> DaemonFuture<'_, String>;
}

/// The approval modes, least free first.
pub const APPROVAL_MODES: [&str; 4] = ["read-only", "ask", "auto", "full-access"];

/// How `mcp serve` was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeOptions {
    /// The freest approval mode a delegated agent may be started with.
    pub cap: String,
}

/// The state a `wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Until {
    /// Nothing runs: the turn finished (or was interrupted).
    Idle,
    /// An approval or a question waits for an answer.
    NeedsInput,
    /// A turn finished.
    Done,
    /// The session ended.
    Ended,
}

impl Until {
    /// Whether `state` ends a wait for `self`: the state waited for, or one from which the
    /// session gets nowhere.
    pub fn reached(self, state: AgentState) -> bool {
        let ended = matches!(
            state,
            AgentState::Failed | AgentState::Stopped | AgentState::Exited
        );
        ended
            || match self {
                Until::Idle => matches!(
                    state,
                    AgentState::Idle | AgentState::Done | AgentState::Interrupted
                ),
                Until::NeedsInput => state == AgentState::NeedsInput,
                Until::Done => state == AgentState::Done,
                Until::Ended => false,
            }
    }
}

/// Whether a wait for `until` ends at `state` with `turns` completed: a session that ended
/// ends any wait; `idle` and `done` also need the turn the caller gave to have completed
/// (`min_turns`), since a session is idle, too, before its first turn starts.
pub fn wait_over(until: Until, state: AgentState, turns: u64, min_turns: u64) -> bool {
    let ended = Until::Ended.reached(state);
    let turn_done = match until {
        Until::Idle | Until::Done => turns >= min_turns,
        Until::NeedsInput | Until::Ended => true,
    };
    ended || (until.reached(state) && turn_done)
}

/// The longest a `wait` waits, whatever it asks.
pub const MAX_WAIT: Duration = Duration::from_secs(3_600);

/// A `wait`'s limit when it gives none.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(600);

/// The most characters of a transcript a `transcript` call returns.
pub const MAX_TRANSCRIPT_CHARS: usize = 100_000;

/// A `transcript` call's size when it gives none.
pub const DEFAULT_TRANSCRIPT_CHARS: usize = 20_000;

/// The approval mode a delegated agent starts in: the one asked for when it is no freer than
/// `cap`, the cap when none is asked for; a refusal saying why otherwise.
pub fn capped_approval(asked: Option<&str>, cap: &str) -> Result<String, String> {
    let rank = |mode: &str| APPROVAL_MODES.iter().position(|known| *known == mode);
    let cap_rank = rank(cap).ok_or_else(|| format!("unknown approval mode {cap:?}"))?;
    let Some(asked) = asked else {
        return Ok(cap.to_owned());
    };
    match rank(asked) {
        None => Err(format!(
            "unknown approval mode {asked:?}; the modes are {}",
            APPROVAL_MODES.join(", ")
        )),
        Some(asked_rank) if asked_rank > cap_rank => Err(format!(
            "approval {asked} is freer than this server allows (panewise mcp serve --approval \
             {cap}); the delegated agent's approvals stay with the person"
        )),
        Some(_) => Ok(asked.to_owned()),
    }
}

/// `start`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// The first prompt.
    pub prompt: String,
    /// The provider (`panewise run --provider`'s names).
    #[serde(default)]
    pub provider: Option<String>,
    /// The model.
    #[serde(default)]
    pub model: Option<String>,
    /// The working directory, absolute.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Run in a git worktree of its own.
    #[serde(default)]
    pub worktree: bool,
    /// A name for the session.
    #[serde(default)]
    pub name: Option<String>,
    /// The approval mode, no freer than the server's cap.
    #[serde(default)]
    pub approval: Option<String>,
    /// The built-in mock's scenario, for a `mock` session.
    #[serde(default)]
    pub mock_scenario: Option<String>,
}

/// The arguments naming one session, and what else a tool takes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// The session: its id, a unique prefix of it, or its name.
    pub session: String,
    /// `send`'s prompt, `answer`'s answer.
    #[serde(default)]
    pub text: Option<String>,
    /// `wait`'s state.
    #[serde(default)]
    pub until: Option<Until>,
    /// `wait`'s limit in seconds.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// `transcript`'s size.
    #[serde(default)]
    pub max_chars: Option<usize>,
}

/// One parsed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolArgs {
    /// `start`.
    Start(StartArgs),
    /// `list`.
    List,
    /// `transcript`.
    Transcript {
        /// The session.
        session: String,
        /// The most characters returned.
        max_chars: usize,
    },
    /// `send`.
    Send {
        /// The session.
        session: String,
        /// The prompt.
        text: String,
    },
    /// `wait`.
    Wait {
        /// The session.
        session: String,
        /// The state waited for.
        until: Until,
        /// The limit.
        timeout: Duration,
    },
    /// `answer`.
    Answer {
        /// The session.
        session: String,
        /// The answer.
        text: String,
    },
    /// `stop`.
    Stop {
        /// The session.
        session: String,
    },
}

impl ToolArgs {
    /// Parses a call of `name` with `arguments`; an error says what is wrong.
    pub fn parse(name: &str, arguments: Value) -> Result<ToolArgs, String> {
        let bad = |error: serde_json::Error| format!("bad arguments for {name}: {error}");
        let text_of = |args: &SessionArgs| {
            args.text
                .clone()
                .filter(|text| !text.trim().is_empty())
                .ok_or_else(|| format!("{name} needs a non-empty `text`"))
        };
        match name {
            "start" => {
                let args: StartArgs = serde_json::from_value(arguments).map_err(bad)?;
                if args.prompt.trim().is_empty() {
                    return Err("start needs a non-empty `prompt`".to_owned());
                }
                Ok(ToolArgs::Start(args))
            }
            "list" => Ok(ToolArgs::List),
            _ => {
                let args: SessionArgs = serde_json::from_value(arguments).map_err(bad)?;
                let session = args.session.clone();
                Ok(match name {
                    "transcript" => ToolArgs::Transcript {
                        session,
                        max_chars: args
                            .max_chars
                            .unwrap_or(DEFAULT_TRANSCRIPT_CHARS)
                            .clamp(1, MAX_TRANSCRIPT_CHARS),
                    },
                    "send" => ToolArgs::Send {
                        text: text_of(&args)?,
                        session,
                    },
                    "wait" => ToolArgs::Wait {
                        session,
                        until: args.until.unwrap_or(Until::Idle),
                        timeout: args
                            .timeout_secs
                            .map_or(DEFAULT_WAIT, Duration::from_secs)
                            .min(MAX_WAIT),
                    },
                    "answer" => ToolArgs::Answer {
                        text: text_of(&args)?,
                        session,
                    },
                    "stop" => ToolArgs::Stop { session },
                    other => {
                        return Err(format!(
                            "no tool {other:?}; the tools are {}",
                            TOOL_NAMES.join(", ")
                        ))
                    }
                })
            }
        }
    }
}

/// The tools' names, in the order they are listed.
pub const TOOL_NAMES: [&str; 7] = [
    "start",
    "list",
    "transcript",
    "send",
    "wait",
    "answer",
    "stop",
];

fn schema(value: Value) -> Arc<Map<String, Value>> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => Map::new(),
    })
}

fn session_schema(extra: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let mut properties = json!({
        "session": {"type": "string",
                    "description": "The session: its id, a unique prefix of it, or its name."}
    });
    if let (Some(properties), Value::Object(extra)) = (properties.as_object_mut(), extra) {
        properties.extend(extra);
    }
    let mut required: Vec<&str> = required.to_vec();
    required.insert(0, "session");
    schema(json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    }))
}

/// Every tool's definition, in [`TOOL_NAMES`] order; `cap` is the server's approval cap.
pub fn tools(cap: &str) -> Vec<Tool> {
    let start = Tool::new(
        "start",
        format!(
            "Start an agent (any provider panewise supervises: claude-code, codex, gemini-cli, \
             opencode, panewise's own loop on an API, or the offline mock) on a task, in a \
             directory or a git worktree of its own. It runs in the panewise daemon and shows \
             in the person's dashboard. Its approvals are asked of the person; `approval` may \
             be at most {cap}. Returns the session's id and name."
        ),
        schema(json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The task."},
                "provider": {"type": "string", "description": "The provider (default: the configured one, else the mock)."},
                "model": {"type": "string"},
                "cwd": {"type": "string", "description": "The working directory, absolute."},
                "worktree": {"type": "boolean", "description": "Run in a git worktree of its own."},
                "name": {"type": "string", "description": "A name, unique among the daemon's sessions."},
                "approval": {"type": "string", "enum": APPROVAL_MODES,
                             "description": format!("The approval mode, at most {cap} (default {cap}).")},
                "mock_scenario": {"type": "string", "description": "The mock's scenario, for a mock session."}
            },
            "required": ["prompt"],
            "additionalProperties": false
        })),
    );
    let list = Tool::new(
        "list",
        "List the daemon's agents: id, name, provider, state, what each waits for.",
        schema(json!({"type": "object", "properties": {}, "additionalProperties": false})),
    );
    let transcript = Tool::new(
        "transcript",
        "Read an agent's conversation: prompts, its answers, the tools it ran; the last \
         `max_chars` characters (default 20000).",
        session_schema(json!({"max_chars": {"type": "integer", "minimum": 1}}), &[]),
    );
    let send = Tool::new(
        "send",
        "Send an agent a prompt (queued while it works).",
        session_schema(json!({"text": {"type": "string"}}), &["text"]),
    );
    let wait = Tool::new(
        "wait",
        "Wait until an agent is idle (its turn ended), needs input (an approval or a question \
         waits), done, or ended, at most `timeout_secs` (default 600, at most 3600). Returns \
         its state; a failed, stopped or exited agent ends any wait.",
        session_schema(
            json!({
                "until": {"type": "string", "enum": ["idle", "needs_input", "done", "ended"]},
                "timeout_secs": {"type": "integer", "minimum": 0}
            }),
            &[],
        ),
    );
    let answer = Tool::new(
        "answer",
        "Answer the question an agent asks (not an approval: those are the person's).",
        session_schema(json!({"text": {"type": "string"}}), &["text"]),
    );
    let stop = Tool::new(
        "stop",
        "Stop an agent: its turn is interrupted and its session ends.",
        session_schema(json!({}), &[]),
    );
    vec![start, list, transcript, send, wait, answer, stop]
}

/// What a caller is told of a session.
pub fn session_brief(session: &SessionSummary) -> Value {
    json!({
        "id": session.id,
        "name": session.name,
        "provider": session.provider,
        "state": session.state.as_str(),
        "waiting_for": session.waiting_for,
        "cwd": session.cwd,
        "approval": session.approval,
        "failure": session.failure,
    })
}

/// The MCP server over a [`Daemon`].
pub struct Server<D> {
    daemon: Arc<D>,
    options: ServeOptions,
    /// Per session id, the turns it must have completed before a wait for `idle` or `done`
    /// ends: the turn this server gave it (by `start` or `send`) included.
    given: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl<D: Daemon> Server<D> {
    /// A server of `daemon`'s verbs.
    pub fn new(daemon: D, options: ServeOptions) -> Self {
        Server {
            daemon: Arc::new(daemon),
            options,
            given: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    fn give(&self, id: &str, min_turns: u64) {
        self.given
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id.to_owned(), min_turns);
    }

    fn given(&self, id: &str) -> u64 {
        self.given
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .copied()
            .unwrap_or(0)
    }

    /// The summary of the session `key` names, now.
    async fn summary(&self, key: &str) -> Result<SessionSummary, String> {
        let list: panewise_api::ListResult =
            decode(self.daemon.call(Method::List, json!({})).await?)?;
        let id = panewise_api::resolve_session(
            list.sessions
                .iter()
                .map(|s| (s.id.as_str(), s.name.as_str())),
            key,
        )
        .map_err(|error| error.message)?;
        list.sessions
            .into_iter()
            .find(|session| session.id == id)
            .ok_or_else(|| "the session is gone from the list".to_owned())
    }

    /// Runs one call; `Err` is a tool error the caller sees.
    async fn run(&self, args: ToolArgs) -> Result<Value, String> {
        let daemon = &self.daemon;
        match args {
            ToolArgs::Start(args) => {
                let approval = capped_approval(args.approval.as_deref(), &self.options.cap)?;
                let params = json!({
                    "provider": args.provider,
                    "model": args.model,
                    "prompt": args.prompt,
                    "cwd": args.cwd,
                    "name": args.name,
                    "approval": approval,
                    "worktree": args.worktree,
                    "mock_scenario": args.mock_scenario,
                });
                let params = without_nulls(params);
                let created: panewise_api::CreateResult =
                    decode(daemon.call(Method::Create, params).await?)?;
                self.give(&created.session.id, created.session.turns.saturating_add(1));
                Ok(session_brief(&created.session))
            }
            ToolArgs::List => {
                let list: panewise_api::ListResult =
                    decode(daemon.call(Method::List, json!({})).await?)?;
                Ok(Value::Array(
                    list.sessions.iter().map(session_brief).collect(),
                ))
            }
            ToolArgs::Transcript { session, max_chars } => {
                Ok(Value::String(daemon.transcript(session, max_chars).await?))
            }
            ToolArgs::Send { session, text } => {
                let before = self.summary(&session).await?;
                daemon
                    .call(Method::Prompt, json!({"session": session, "text": text}))
                    .await?;
                self.give(&before.id, before.turns.saturating_add(1));
                Ok(json!({"ok": true}))
            }
            ToolArgs::Wait {
                session,
                until,
                timeout,
            } => {
                let id = self.summary(&session).await?.id;
                let min_turns = self.given(&id);
                match daemon.wait(id, until, min_turns, timeout).await? {
                    Some(summary) => Ok(session_brief(&summary)),
                    None => Err(format!(
                        "{} s passed before the agent got there; wait again, or read its \
                         transcript",
                        timeout.as_secs()
                    )),
                }
            }
            ToolArgs::Answer { session, text } => {
                daemon
                    .call(Method::Answer, json!({"session": session, "text": text}))
                    .await?;
                Ok(json!({"ok": true}))
            }
            ToolArgs::Stop { session } => {
                daemon
                    .call(Method::Stop, json!({"session": session}))
                    .await?;
                Ok(json!({"ok": true}))
            }
        }
    }
}

fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|error| format!("the daemon's answer: {error}"))
}

/// `value` without its `null` fields: the daemon's params take a missing field, not a null.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

/// A result's text: a string as it is, anything else as pretty JSON.
fn result_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

impl<D: Daemon> ServerHandler for Server<D> {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("panewise", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "panewise's daemon: start agents of any provider, wait for them, read what they \
                 said. Their approvals are the person's.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools(&self.options.cap)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let outcome = match ToolArgs::parse(&request.name, arguments) {
            Ok(args) => self.run(args).await,
            Err(why) => Err(why),
        };
        Ok(match outcome {
            Ok(value) => CallToolResult::success(vec![ContentBlock::text(result_text(&value))]),
            Err(why) => CallToolResult::error(vec![ContentBlock::text(why)]),
        }
        .into())
    }
}

/// Serves `daemon`'s verbs on stdin and stdout until the client closes them.
pub async fn serve_stdio<D: Daemon>(daemon: D, options: ServeOptions) -> Result<(), String> {
    let server = Server::new(daemon, options);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| format!("cannot start the MCP server: {error}"))?;
    running
        .waiting()
        .await
        .map_err(|error| format!("the MCP server stopped: {error}"))?;
    Ok(())
}

#[cfg(test)]
mod tests;
