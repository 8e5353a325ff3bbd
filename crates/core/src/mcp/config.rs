//! Which MCP servers a session is configured with: `[mcp.servers.NAME]` tables of
//! `panewise.toml` (the user file and the project file) and a project's `.mcp.json` as Claude
//! Code writes it (`{"mcpServers": {NAME: {command, args, env} | {type: "http", url,
//! headers}}}`).
//!
//! Everything here is pure: parsing takes the text (or the already-parsed table), expansion
//! takes a lookup of the environment, and [`merge`] takes the three layers. Values are read
//! strictly: an unknown key is an error naming it, never ignored.
//!
//! A server the project defines (its `panewise.toml` or its `.mcp.json`) runs a command, or
//! reaches a URL with header values read from the person's environment, that the repository
//! chose: it starts only when the person's user file says `[mcp] project_servers = true`
//! ([`Plan::NotStarted`] otherwise, said in `panewise mcp list` and in the session).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// The keys of the `[mcp]` table.
pub const MCP_KEYS: [&str; 4] = [
    "servers",
    "project_servers",
    "tool_timeout_secs",
    "tool_budget_tokens",
];

/// The keys of one `[mcp.servers.NAME]` table.
pub const SERVER_KEYS: [&str; 7] = [
    "command",
    "args",
    "env",
    "url",
    "env_headers",
    "tool_timeout_secs",
    "enabled",
];

/// The project file Claude Code writes its project-scoped servers to.
pub const MCP_JSON: &str = ".mcp.json";

/// How long a tool call may take unless configured otherwise.
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 60;

/// Where a server's definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The user's `panewise.toml`.
    User,
    /// The project's `panewise.toml`.
    Project,
    /// The project's `.mcp.json`.
    McpJson,
}

impl Source {
    /// How the source is named to the person.
    pub fn label(self) -> &'static str {
        match self {
            Source::User => "user panewise.toml",
            Source::Project => "project panewise.toml",
            Source::McpJson => ".mcp.json",
        }
    }

    /// Whether the repository, not the person, wrote it.
    pub fn is_project(self) -> bool {
        matches!(self, Source::Project | Source::McpJson)
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set on top of the session's environment.
        env: BTreeMap<String, String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request, each value read from the named environment
        /// variable when the server starts (never written in the file).
        env_headers: BTreeMap<String, String>,
        /// Headers as `.mcp.json` gives them, `${VAR}` already expanded.
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its name, the middle of its tools' names (`mcp__NAME__tool`).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// The longest one tool call may take, in seconds.
    pub tool_timeout_secs: Option<u64>,
    /// `enabled = false` keeps a server configured but not started.
    pub enabled: bool,
    /// Where it was defined.
    pub source: Source,
}

/// The `[mcp]` table of one `panewise.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpSettings {
    /// `[mcp.servers.NAME]`, by name.
    pub servers: BTreeMap<String, ServerConfig>,
    /// `project_servers`: start the servers the project defines (user file only).
    pub project_servers: Option<bool>,
    /// `tool_timeout_secs`: the default timeout of a tool call.
    pub tool_timeout_secs: Option<u64>,
    /// `tool_budget_tokens` (`toolBudgetTokens`): the most tokens of MCP tool definitions a
    /// request carries; the rest wait behind the search tool.
    pub tool_budget_tokens: Option<u64>,
}

impl McpSettings {
    /// This layer over `base`: a server this layer names replaces `base`'s whole.
    pub fn over(self, base: McpSettings) -> McpSettings {
        let mut servers = base.servers;
        servers.extend(self.servers);
        McpSettings {
            servers,
            project_servers: self.project_servers.or(base.project_servers),
            tool_timeout_secs: self.tool_timeout_secs.or(base.tool_timeout_secs),
            tool_budget_tokens: self.tool_budget_tokens.or(base.tool_budget_tokens),
        }
    }
}

/// A configuration error: the key (relative to the file) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The key, e.g. `mcp.servers.files.command`.
    pub key: String,
    /// Why it is refused.
    pub reason: String,
}

impl ConfigProblem {
    fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            reason: reason.into(),
        }
    }
}

/// Whether `name` can name a server: letters, digits, `-` and `_`, not starting with `_`,
/// and no `__` (the separator of namespaced tool names).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('_')
        && !name.contains("__")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    env_headers: BTreeMap<String, String>,
    tool_timeout_secs: Option<u64>,
    enabled: Option<bool>,
}

/// Reads an `[mcp]` table (as JSON, converted from TOML by the caller) of a file of `source`.
pub fn parse_table(value: &Value, source: Source) -> Result<McpSettings, ConfigProblem> {
    let table = value
        .as_object()
        .ok_or_else(|| ConfigProblem::new("mcp", "must be a table"))?;
    let mut settings = McpSettings::default();
    for (key, value) in table {
        match key.as_str() {
            "project_servers" => {
                settings.project_servers = Some(value.as_bool().ok_or_else(|| {
                    ConfigProblem::new("mcp.project_servers", "must be true or false")
                })?)
            }
            "tool_timeout_secs" => settings.tool_timeout_secs = Some(timeout(value, "mcp")?),
            "tool_budget_tokens" => {
                settings.tool_budget_tokens = Some(value.as_u64().ok_or_else(|| {
                    ConfigProblem::new(
                        "mcp.tool_budget_tokens",
                        "must be a whole number of tokens (0 defers every MCP tool)",
                    )
                })?)
            }
            "servers" => {
                let servers = value
                    .as_object()
                    .ok_or_else(|| ConfigProblem::new("mcp.servers", "must be a table"))?;
                for (name, server) in servers {
                    let parsed = toml_server(name, server, source)?;
                    settings.servers.insert(name.clone(), parsed);
                }
            }
            other => {
                return Err(ConfigProblem::new(
                    format!("mcp.{other}"),
                    format!("unknown key, expected one of {}", MCP_KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(settings)
}

fn timeout(value: &Value, prefix: &str) -> Result<u64, ConfigProblem> {
    value
        .as_u64()
        .filter(|secs| (1..=3_600).contains(secs))
        .ok_or_else(|| {
            ConfigProblem::new(
                format!("{prefix}.tool_timeout_secs"),
                "must be a whole number of seconds from 1 to 3600",
            )
        })
}

fn toml_server(name: &str, value: &Value, source: Source) -> Result<ServerConfig, ConfigProblem> {
    let prefix = format!("mcp.servers.{name}");
    if !valid_server_name(name) {
        return Err(ConfigProblem::new(
            prefix,
            "a server name is letters, digits, `-` and `_`, up to 64, not starting with `_` \
             and without `__`",
        ));
    }
    if let Some(secs) = value.get("tool_timeout_secs") {
        timeout(secs, &prefix)?;
    }
    let server: TomlServer = serde_json::from_value(value.clone()).map_err(|error| {
        ConfigProblem::new(
            prefix.clone(),
            format!("{error} (keys: {})", SERVER_KEYS.join(", ")),
        )
    })?;
    let transport = match (server.command, server.url) {
        (Some(command), None) if !command.trim().is_empty() => {
            if !server.env_headers.is_empty() {
                return Err(ConfigProblem::new(
                    format!("{prefix}.env_headers"),
                    "is for a `url` server",
                ));
            }
            Transport::Stdio {
                command,
                args: server.args,
                env: server.env,
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigProblem::new(
                    format!("{prefix}.url"),
                    "must be an http:// or https:// URL",
                ));
            }
            if !server.args.is_empty() || !server.env.is_empty() {
                return Err(ConfigProblem::new(
                    prefix,
                    "`args` and `env` are for a `command` server",
                ));
            }
            Transport::Http {
                url,
                env_headers: server.env_headers,
                headers: BTreeMap::new(),
            }
        }
        (Some(_), Some(_)) => {
            return Err(ConfigProblem::new(
                prefix,
                "gives both `command` and `url`: one server is one or the other",
            ))
        }
        (Some(_), None) | (None, None) => {
            return Err(ConfigProblem::new(
                prefix,
                "needs a non-empty `command` (stdio) or a `url` (Streamable HTTP)",
            ))
        }
    };
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        tool_timeout_secs: server.tool_timeout_secs,
        enabled: server.enabled.unwrap_or(true),
        source,
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpJsonFile {
    #[serde(default)]
    mcp_servers: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct McpJsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// Reads a `.mcp.json` as Claude Code writes it, `${VAR}` and `${VAR:-default}` expanded
/// through `lookup` in commands, arguments, environment values, URLs and headers (as Claude
/// Code expands them). Keys Claude Code writes that panewise does not use are ignored there,
/// as the file is Claude Code's; a server of a type panewise does not speak (`sse`) is an
/// error naming it.
pub fn parse_mcp_json(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, ConfigProblem> {
    let file: McpJsonFile = serde_json::from_str(text)
        .map_err(|error| ConfigProblem::new("mcpServers", error.to_string()))?;
    let mut servers = Vec::new();
    for (name, value) in file.mcp_servers {
        let key = format!("mcpServers.{name}");
        if !valid_server_name(&name) {
            return Err(ConfigProblem::new(
                key,
                "a server name is letters, digits, `-` and `_`, not starting with `_` and \
                 without `__`",
            ));
        }
        let server: McpJsonServer = serde_json::from_value(value)
            .map_err(|error| ConfigProblem::new(key.clone(), error.to_string()))?;
        let expand = |text: &str| expand_vars(text, lookup);
        let transport = match (server.kind.as_deref(), server.command, server.url) {
            (None | Some("stdio"), Some(command), None) => Transport::Stdio {
                command: expand(&command),
                args: server.args.iter().map(|arg| expand(arg)).collect(),
                env: server
                    .env
                    .iter()
                    .map(|(name, value)| (name.clone(), expand(value)))
                    .collect(),
            },
            (Some("http" | "streamable-http") | None, None, Some(url)) => Transport::Http {
                url: expand(&url),
                env_headers: BTreeMap::new(),
                headers: server
                    .headers
                    .iter()
                    .map(|(name, value)| (name.clone(), expand(value)))
                    .collect(),
            },
            (Some(kind), _, _) if !matches!(kind, "stdio" | "http" | "streamable-http") => {
                return Err(ConfigProblem::new(
                    format!("{key}.type"),
                    format!("`{kind}` is not spoken here: panewise speaks stdio and http"),
                ))
            }
            _ => {
                return Err(ConfigProblem::new(
                    key,
                    "needs a `command` (stdio) or a `url` (type http)",
                ))
            }
        };
        servers.push(ServerConfig {
            name,
            transport,
            tool_timeout_secs: None,
            enabled: true,
            source: Source::McpJson,
        });
    }
    Ok(servers)
}

/// `${VAR}` and `${VAR:-default}` in `text` replaced through `lookup`; an unset variable
/// without a default becomes the empty string. Anything else is left as written.
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match lookup(name) {
            Some(value) => out.push_str(&value),
            None => out.push_str(default.unwrap_or("")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// What becomes of one configured server at a session's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Start it.
    Start(ServerConfig),
    /// Leave it, and say why.
    NotStarted {
        /// The server.
        server: ServerConfig,
        /// Why.
        why: String,
    },
}

impl Plan {
    /// The server planned.
    pub fn server(&self) -> &ServerConfig {
        match self {
            Plan::Start(server) | Plan::NotStarted { server, .. } => server,
        }
    }
}

/// The servers of a session, by name: the project's `panewise.toml` over its `.mcp.json` over
/// the user's `panewise.toml` (a name defined twice is the upper layer's whole). `settings`
/// is the two files already laid one over the other; `project_servers` is the user file's
/// (a project cannot let itself in).
pub fn merge(
    settings: &McpSettings,
    mcp_json: &[ServerConfig],
    project_servers: bool,
) -> Vec<Plan> {
    let mut servers: BTreeMap<String, ServerConfig> = BTreeMap::new();
    for server in settings
        .servers
        .values()
        .filter(|server| server.source == Source::User)
    {
        servers.insert(server.name.clone(), server.clone());
    }
    for server in mcp_json {
        servers.insert(server.name.clone(), server.clone());
    }
    for server in settings
        .servers
        .values()
        .filter(|server| server.source == Source::Project)
    {
        servers.insert(server.name.clone(), server.clone());
    }
    servers
        .into_values()
        .map(|mut server| {
            if server.tool_timeout_secs.is_none() {
                server.tool_timeout_secs = settings.tool_timeout_secs;
            }
            if !server.enabled {
                Plan::NotStarted {
                    why: "enabled = false".to_owned(),
                    server,
                }
            } else if server.source.is_project() && !project_servers {
                Plan::NotStarted {
                    why: format!(
                        "defined by the project ({}), which would choose what panewise runs; \
                         set `[mcp] project_servers = true` in your user panewise.toml to \
                         start the project's servers",
                        server.source.label()
                    ),
                    server,
                }
            } else {
                Plan::Start(server)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
