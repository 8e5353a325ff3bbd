//! The launch layer's data: what is asked ([`LaunchRequest`], a [`Recorded`] session to
//! continue), where ([`LaunchContext`]), and what [`super::resolve::resolve`] decided
//! ([`SessionPlan`], one [`AgentSpec`]). Plain types, no effects.

use std::path::PathBuf;

use panewise_api::ClientEnv;
use panewise_pane_state::Deadlines;
use panewise_providers::{ApiKey, ApiKind, Provider};
use panewise_window::StrategyConfig;

use crate::agent::{ChannelName, Drive};
use crate::agent_loop::resume::Rebuilt;
use crate::approval::ApprovalMode;
use crate::config::{Config, ProviderName};

/// What is asked for, as plain data: `run`'s flags, or a `session/create` or
/// `session/resume` request.
#[derive(Debug, Clone, Default)]
pub struct LaunchRequest {
    /// The provider as named (`run --provider`'s names).
    pub provider: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The working directory as given: a relative one is the client's directory's.
    pub cwd: Option<PathBuf>,
    /// The approval mode.
    pub approval: Option<ApprovalMode>,
    /// The own loop's window strategy.
    pub window: Option<StrategyConfig>,
    /// The most model calls one turn of the own loop may make.
    pub max_iterations: Option<u32>,
    /// The built-in mock's scenario, for a `mock` session.
    pub mock_scenario: Option<String>,
    /// How Codex or Gemini CLI is driven (`app-server`, `exec`, `acp`, `stream-json`).
    pub channel: Option<ChannelName>,
    /// The command of an ACP agent (`--agent-cmd`).
    pub agent_cmd: Option<String>,
    /// The agent executables named on the command line.
    pub programs: Programs,
    /// `--submit-timeout`, in seconds.
    pub submit_secs: Option<u64>,
    /// `--stuck-after`, in seconds.
    pub stuck_secs: Option<u64>,
    /// `--max-cost-usd`: the session's cost cap, over `[limits] max_cost_usd`.
    pub max_cost_usd: Option<f64>,
    /// `--max-tokens`: the session's token cap, over `[limits] max_tokens`.
    pub max_tokens: Option<u64>,
    /// The session's name.
    pub name: Option<String>,
    /// The recorded session this one continues.
    pub resume: Option<Recorded>,
}

/// The agent executables named on the command line (`--claude`, `--codex`, `--gemini`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Programs {
    /// The `claude` executable.
    pub claude: Option<String>,
    /// The `codex` executable.
    pub codex: Option<String>,
    /// The `gemini` executable.
    pub gemini: Option<String>,
}

/// A recorded session, as its log's header says it ran.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The log it was recorded in.
    pub log: PathBuf,
    /// Its working directory, as recorded.
    pub cwd: Option<PathBuf>,
    /// That directory still exists (the shell looked).
    pub cwd_exists: bool,
    /// Its model.
    pub model: Option<String>,
    /// Its name.
    pub name: Option<String>,
    /// What kind of session it was.
    pub kind: RecordedKind,
}

/// The kind of a recorded session, with what continuing it needs.
#[derive(Debug, Clone)]
pub enum RecordedKind {
    /// A session of panewise's own loop, continued from its transcript.
    OwnLoop {
        /// Its provider.
        provider: ProviderName,
        /// Its approval mode's name.
        approval: Option<String>,
        /// Its window strategy, as recorded.
        window: Option<serde_json::Value>,
        /// Its iteration limit.
        max_iterations: Option<u32>,
        /// The built-in mock's scenario it ran against.
        mock_scenario: Option<String>,
        /// The conversation so far.
        rebuilt: Rebuilt,
    },
    /// A supervised agent's session, continued by the agent's own resume id.
    Supervised {
        /// The decoder its log was read with (the log's `agent_id`: the channel).
        provider: Provider,
        /// The agent as the person named it (the log's `provider`), when the log says.
        named: Option<ProviderName>,
        /// The agent's own session id.
        agent_session_id: String,
    },
}

/// Where a request is asked from, as data the shell gathered.
#[derive(Debug, Clone, Default)]
pub struct LaunchContext {
    /// The asking client's working directory (`None`: a client that sent no context).
    pub client_cwd: Option<PathBuf>,
    /// The variables the client sent (the host's `launch::CLIENT_VARIABLES` and any `api_key_env`).
    pub client_env: ClientEnv,
    /// The launching process's own directory, the fallback when the client sent none.
    pub own_cwd: PathBuf,
    /// The launching process's own values of the same variables: the fallback.
    pub own_env: ClientEnv,
    /// The configuration: the user file with the project file found from the session's
    /// directory ([`session_dir`](super::resolve::session_dir)) over it.
    pub config: Config,
    /// The built-in mock's scenarios, the default first: the launching process knows the mock,
    /// the engine does not.
    pub mock_scenarios: Vec<String>,
}

/// What [`resolve`](super::resolve()) decided: one session, ready to be started.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    /// What runs.
    pub agent: AgentSpec,
    /// The provider as named, for the header, the list and the view.
    pub provider_named: String,
    /// The model (the own loop always has one; a supervised agent's own default otherwise).
    pub model: Option<String>,
    /// Where it runs.
    pub cwd: SessionDir,
    /// How its permission requests are answered.
    pub approval: ApprovalMode,
    /// What the person is told when `ask` cannot ask on the chosen channel.
    pub cannot_ask: Option<String>,
    /// The deadlines, when not the defaults.
    pub deadlines: Option<Deadlines>,
    /// How long a supervised CLI's process may run before its first output line
    /// (`[deadlines] startup_secs`); the own loop has no process to wait for.
    pub startup_limit: std::time::Duration,
    /// The session log's cap in bytes (`[limits] log_max_mib`).
    pub log_cap: u64,
    /// The spend caps (`[limits]`, the flags' over the file's), when it has any.
    pub budget: Option<panewise_pane_state::BudgetCaps>,
    /// The session's name.
    pub name: Option<String>,
    /// The recorded log this session continues.
    pub resumed_from: Option<PathBuf>,
    /// The supervised agent's own id of the session it continues.
    pub resume_id: Option<String>,
    /// Variables the client sent that a supervised agent gets on top of the launching
    /// process's environment (its own provider's keys and endpoints).
    pub agent_env: ClientEnv,
    /// Variables removed from the environment of the agent (a supervised one) or of the own
    /// loop's tools.
    pub env_remove: Vec<String>,
    /// `[sandbox]`: the own loop's `shell` sandbox settings.
    pub sandbox: crate::sandbox::SandboxSettings,
    /// `[mcp]`: the own loop's MCP servers (the user and project files laid over each other;
    /// the project's `.mcp.json` is read when the session starts).
    pub mcp: crate::mcp::config::McpSettings,
}

/// Where a session runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionDir {
    /// This directory (absolute, not yet checked: the shell canonicalizes it).
    Given(PathBuf),
    /// A fresh directory made for the mock, removed with the session when left empty.
    FreshForMock,
}

/// What runs: one closed set, every agent panewise can host.
#[derive(Debug, Clone)]
pub enum AgentSpec {
    /// panewise's own loop over a model API.
    OwnApi {
        /// The API.
        api: ApiKind,
        /// Its base URL.
        base_url: String,
        /// The key.
        key: ApiKey,
        /// Where the key came from.
        key_source: KeySource,
        /// The loop's settings.
        settings: OwnLoopSettings,
    },
    /// panewise's own loop over the scripted mock.
    Mock {
        /// The mock server it calls.
        server: MockServerSpec,
        /// The loop's settings.
        settings: OwnLoopSettings,
    },
    /// A supervised agent.
    Supervised {
        /// The executable.
        program: String,
        /// The arguments `--agent-cmd` gave after the executable (an ACP agent's); empty for
        /// the agents panewise knows, whose arguments the channel decides.
        args: Vec<String>,
        /// How it is driven.
        drive: Drive,
    },
}

/// The own loop's settings.
#[derive(Debug, Clone)]
pub struct OwnLoopSettings {
    /// The provider's name (`mock`, `anthropic`, `openai`, `gemini`).
    pub provider: ProviderName,
    /// The window strategy.
    pub window: StrategyConfig,
    /// The most model calls one turn may make (`None`: the loop's default).
    pub max_iterations: Option<u32>,
    /// Whether requests ask for the provider's prompt cache (`None`: the loop's default).
    pub prompt_cache: Option<bool>,
    /// The conversation so far, for a resumed session.
    pub rebuilt: Option<Rebuilt>,
}

/// The mock server a mock session calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MockServerSpec {
    /// The launching process's in-process server of this scenario (one of
    /// [`LaunchContext::mock_scenarios`]).
    InProcess(String),
    /// The server `[providers.mock] base_url` names.
    Configured(String),
}

/// Where an own-loop session's API key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The asking client's environment.
    Client,
    /// The launching process's (the daemon's) own environment: the fallback.
    Own,
}

impl KeySource {
    /// How the session info says it.
    pub fn describe(self) -> &'static str {
        match self {
            KeySource::Client => "key from your environment",
            KeySource::Own => "key from the daemon's environment",
        }
    }
}

impl AgentSpec {
    /// How the supervised agent is driven (`None`: the own loop).
    pub fn drive(&self) -> Option<Drive> {
        match self {
            AgentSpec::OwnApi { .. } | AgentSpec::Mock { .. } => None,
            AgentSpec::Supervised { drive, .. } => Some(*drive),
        }
    }

    /// The key source, for an own loop over an API.
    pub fn key_source(&self) -> Option<KeySource> {
        match self {
            AgentSpec::OwnApi { key_source, .. } => Some(*key_source),
            AgentSpec::Mock { .. } | AgentSpec::Supervised { .. } => None,
        }
    }
}
