//! The own loop's client of configured MCP servers, on `rmcp`: starts each planned server
//! ([`crate::config::Plan`]) when the session starts, lists its tools, calls them with a
//! timeout, and ends them with the session.
//!
//! A stdio server is a child process the caller's [`Spawner`] starts, so it goes through the
//! same process-group machinery as every other child of panewise (its own group, killed with
//! the session, and by the kernel and the guard if panewise is killed); its stderr is kept
//! (the last [`STDERR_TAIL`] bytes) to say why it failed or stopped. A Streamable HTTP server is
//! reached at its URL, header values read from the environment when it starts.
//!
//! Nothing fails silently: every server ends up in [`McpClients::reports`] as running (with its
//! tools) or failed or not started, with why; a call of a server that has stopped says so and
//! why.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use crate::catalog::McpTool;
use crate::config::{Plan, ServerConfig, Source, Transport, DEFAULT_TOOL_TIMEOUT_SECS};

/// The most bytes of a server's stderr kept to say why it failed.
pub const STDERR_TAIL: usize = 2_048;

/// How long a server may take to start and answer `initialize` and `tools/list`.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes of a tool result kept before the loop's own output cap.
const RESULT_BYTES: usize = 1024 * 1024;

/// Starts a stdio server's process the way the host starts its other children.
pub trait Spawner: Send + Sync {
    /// Starts `command` (its pipes already set); returns the child and a guard whose drop
    /// ends the child's whole process group.
    fn spawn(&self, command: &mut Command) -> std::io::Result<(Child, Box<dyn Send + Sync>)>;
}

/// What became of one configured server.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerStatus {
    /// It started and listed its tools.
    Running,
    /// It could not be started or reached, or it stopped: why.
    Failed(String),
    /// It was not started: why.
    NotStarted(String),
}

/// One server as the session (and `panewise mcp list`) sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    /// Its name.
    pub name: String,
    /// Where it was defined.
    pub source: Source,
    /// How it is reached, in a few words (`stdio: npx …`, `http: URL`).
    pub transport: String,
    /// Its state.
    pub status: ServerStatus,
    /// Its tools, when it runs.
    pub tools: Vec<McpTool>,
}

/// What one tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    /// The result's text (its text contents joined; other contents described).
    pub text: String,
    /// The server said the call failed, or it could not be made.
    pub is_error: bool,
    /// The server is gone (the session is told once).
    pub server_gone: Option<String>,
}

struct Connection {
    service: RunningService<RoleClient, ()>,
    timeout: Duration,
    child: Option<Mutex<Child>>,
    stderr: Arc<Mutex<String>>,
    /// Ends the process group when dropped; after the service, so the server sees its stdin
    /// close first.
    _group: Option<Box<dyn Send + Sync>>,
}

/// The session's MCP servers.
pub struct McpClients {
    connections: BTreeMap<String, Connection>,
    reports: Vec<ServerReport>,
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClients")
            .field("reports", &self.reports)
            .finish_non_exhaustive()
    }
}

/// How a server is reached, in a few words; header values are never shown.
pub fn describe(server: &ServerConfig) -> String {
    match &server.transport {
        Transport::Stdio { command, args, .. } => {
            let mut text = format!("stdio: {command}");
            for arg in args {
                text.push(' ');
                text.push_str(arg);
            }
            text
        }
        Transport::Http { url, .. } => format!("http: {url}"),
    }
}

impl McpClients {
    /// No servers.
    pub fn none() -> Self {
        McpClients {
            connections: BTreeMap::new(),
            reports: Vec::new(),
        }
    }

    /// Starts every server `plans` says to start, in `cwd`, one after the other, each within
    /// `startup`; `lookup` reads the environment for `env_headers`. A server that fails is
    /// reported, never an error of the whole.
    pub async fn start(
        plans: Vec<Plan>,
        cwd: &Path,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
        spawner: &dyn Spawner,
        startup: Duration,
    ) -> Self {
        let mut clients = McpClients::none();
        for plan in plans {
            let server = match plan {
                Plan::NotStarted { server, why } => {
                    clients.reports.push(ServerReport {
                        name: server.name.clone(),
                        source: server.source,
                        transport: describe(&server),
                        status: ServerStatus::NotStarted(why),
                        tools: Vec::new(),
                    });
                    continue;
                }
                Plan::Start(server) => server,
            };
            let mut report = ServerReport {
                name: server.name.clone(),
                source: server.source,
                transport: describe(&server),
                status: ServerStatus::Running,
                tools: Vec::new(),
            };
            match connect(&server, cwd, lookup, spawner, startup).await {
                Ok((connection, tools)) => {
                    report.tools = tools;
                    clients.connections.insert(server.name.clone(), connection);
                }
                Err(why) => report.status = ServerStatus::Failed(why),
            }
            clients.reports.push(report);
        }
        clients
    }

    /// Every configured server, in name order.
    pub fn reports(&self) -> &[ServerReport] {
        &self.reports
    }

    /// Every tool of the running servers, server by server in name order.
    pub fn tools(&self) -> Vec<McpTool> {
        self.reports
            .iter()
            .filter(|report| report.status == ServerStatus::Running)
            .flat_map(|report| report.tools.iter().cloned())
            .collect()
    }

    /// Calls `tool` of `server` with `arguments` (a JSON object), within the server's
    /// timeout. The future holds nothing of `self` past the call's start, so the loop can
    /// hold it while it waits for other inputs.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> impl std::future::Future<Output = CallOutcome> + Send + 'static {
        let connection = self.connections.get(server).map(|connection| {
            let gone = connection.exited();
            (
                connection.service.peer().clone(),
                connection.timeout,
                gone,
                connection.stderr.clone(),
            )
        });
        let server = server.to_owned();
        let tool = tool.to_owned();
        async move {
            let Some((peer, timeout, gone, stderr)) = connection else {
                return CallOutcome {
                    text: format!("MCP server {server} is not running"),
                    is_error: true,
                    server_gone: None,
                };
            };
            if let Some(status) = gone {
                let why = format!("MCP server {server} stopped ({status}){}", tail(&stderr));
                return CallOutcome {
                    text: why.clone(),
                    is_error: true,
                    server_gone: Some(why),
                };
            }
            let Value::Object(arguments) = arguments else {
                return CallOutcome {
                    text: format!("{tool}: the arguments must be a JSON object"),
                    is_error: true,
                    server_gone: None,
                };
            };
            let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
            match tokio::time::timeout(timeout, peer.call_tool(params)).await {
                Err(_elapsed) => CallOutcome {
                    text: format!(
                        "MCP tool {tool} of {server} timed out after {}s",
                        timeout.as_secs()
                    ),
                    is_error: true,
                    server_gone: None,
                },
                Ok(Err(error)) => {
                    let closed = peer.is_transport_closed();
                    let text = format!("MCP server {server}: {error}{}", tail(&stderr));
                    CallOutcome {
                        server_gone: closed.then(|| text.clone()),
                        text,
                        is_error: true,
                    }
                }
                Ok(Ok(result)) => {
                    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                    let (text, is_error) = result_text(&value);
                    CallOutcome {
                        text,
                        is_error,
                        server_gone: None,
                    }
                }
            }
        }
    }

    /// Ends every server: the connections close, then each stdio server's process group is
    /// killed (dropping does the same, without waiting for the close).
    pub async fn shutdown(mut self) {
        for (_name, connection) in std::mem::take(&mut self.connections) {
            let Connection {
                service, _group, ..
            } = connection;
            let _closed = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
            drop(_group);
        }
    }
}

impl Connection {
    /// How the child exited, if it did.
    fn exited(&self) -> Option<String> {
        let child = self.child.as_ref()?;
        let mut child = child.lock().ok()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) | Err(_) => None,
        }
    }
}

fn tail(stderr: &Mutex<String>) -> String {
    match stderr.lock() {
        Ok(text) if !text.trim().is_empty() => format!("; its stderr ends: {}", text.trim()),
        Ok(_) | Err(_) => String::new(),
    }
}

async fn connect(
    server: &ServerConfig,
    cwd: &Path,
    lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    spawner: &dyn Spawner,
    startup: Duration,
) -> Result<(Connection, Vec<McpTool>), String> {
    let timeout = Duration::from_secs(
        server
            .tool_timeout_secs
            .unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS),
    );
    let stderr = Arc::new(Mutex::new(String::new()));
    let (service, child, group) = match &server.transport {
        Transport::Stdio { command, args, env } => {
            let mut cmd = Command::new(command);
            cmd.args(args)
                .envs(env)
                .current_dir(cwd)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let (mut child, group) = spawner
                .spawn(&mut cmd)
                .map_err(|error| format!("cannot start `{command}`: {error}"))?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err("its pipes could not be opened".to_owned());
            };
            if let Some(mut err) = child.stderr.take() {
                let kept = stderr.clone();
                tokio::spawn(async move {
                    let mut buffer = [0u8; 1024];
                    while let Ok(read) = err.read(&mut buffer).await {
                        if read == 0 {
                            break;
                        }
                        if let (Ok(mut text), Some(bytes)) = (kept.lock(), buffer.get(..read)) {
                            text.push_str(&String::from_utf8_lossy(bytes));
                            if text.len() > STDERR_TAIL {
                                let mut cut = text.len() - STDERR_TAIL;
                                while !text.is_char_boundary(cut) {
                                    cut += 1;
                                }
                                text.drain(..cut);
                            }
                        }
                    }
                });
            }
            let started = tokio::time::timeout(startup, ().serve((stdout, stdin))).await;
            let service = match started {
                Err(_elapsed) => {
                    return Err(format!(
                        "no answer to initialize within {}s{}",
                        startup.as_secs(),
                        tail(&stderr)
                    ))
                }
                Ok(Err(error)) => {
                    // Give the process a moment to say why on stderr before it is read.
                    let _exited =
                        tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
                    return Err(format!("initialize failed: {error}{}", tail(&stderr)));
                }
                Ok(Ok(service)) => service,
            };
            (service, Some(Mutex::new(child)), Some(group))
        }
        Transport::Http {
            url,
            env_headers,
            headers,
        } => {
            let mut custom = HashMap::new();
            let mut add = |name: &str, value: &str| -> Result<(), String> {
                let name = http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("`{name}` is not a header name"))?;
                let value = http::HeaderValue::from_str(value)
                    .map_err(|_| format!("the value of header {name} is not a header value"))?;
                custom.insert(name, value);
                Ok(())
            };
            for (name, value) in headers {
                add(name, value)?;
            }
            for (name, variable) in env_headers {
                let value = lookup(variable)
                    .ok_or_else(|| format!("header {name} reads ${variable}, which is not set"))?;
                add(name, &value)?;
            }
            // The workspace's reqwest has no bundled TLS provider: ring, as the model clients.
            let _already_installed = rustls::crypto::ring::default_provider().install_default();
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            let transport = StreamableHttpClientTransport::from_config(config);
            let service = match tokio::time::timeout(startup, ().serve(transport)).await {
                Err(_elapsed) => {
                    return Err(format!(
                        "no answer to initialize within {}s",
                        startup.as_secs()
                    ))
                }
                Ok(Err(error)) => return Err(format!("cannot reach {url}: {error}")),
                Ok(Ok(service)) => service,
            };
            (service, None, None)
        }
    };
    let listed = match tokio::time::timeout(startup, service.list_all_tools()).await {
        Err(_elapsed) => {
            return Err(format!(
                "no answer to tools/list within {}s",
                startup.as_secs()
            ))
        }
        Ok(Err(error)) => return Err(format!("tools/list failed: {error}{}", tail(&stderr))),
        Ok(Ok(listed)) => listed,
    };
    let tools = listed
        .iter()
        .filter_map(|tool| serde_json::to_value(tool).ok())
        .filter_map(|tool| McpTool::from_listed(&server.name, &tool))
        .collect();
    Ok((
        Connection {
            service,
            timeout,
            child,
            stderr,
            _group: group,
        },
        tools,
    ))
}

/// A `tools/call` result (as JSON) as text for the model: text contents as they are, other
/// contents described in a line, structured content when there is nothing else; and whether
/// the server flagged it an error. Cut to 1 MiB.
pub fn result_text(result: &Value) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts = Vec::new();
    for content in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = content.get("type").and_then(Value::as_str).unwrap_or("?");
        match kind {
            "text" => parts.push(
                content
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            "resource" => {
                let resource = content.get("resource");
                let text = resource.and_then(|r| r.get("text")).and_then(Value::as_str);
                let uri = resource
                    .and_then(|r| r.get("uri"))
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                parts.push(match text {
                    Some(text) => format!("[resource {uri}]\n{text}"),
                    None => format!("[resource {uri}: binary, not shown]"),
                });
            }
            "resource_link" => parts.push(format!(
                "[resource link {}]",
                content.get("uri").and_then(Value::as_str).unwrap_or("?")
            )),
            other => {
                let mime = content
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                parts.push(format!("[{other} content ({mime}), not shown]"));
            }
        }
    }
    if parts.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            parts.push(structured.to_string());
        }
    }
    let mut text = parts.join("\n");
    if text.len() > RESULT_BYTES {
        let mut cut = RESULT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    (text, is_error)
}
