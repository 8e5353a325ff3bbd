//! Turning "what to run" into a session: one construction shared by `panewise run` (on this
//! terminal) and `panewise daemon` (many at once, driven over the API).
//!
//! [`LaunchRequest`] is the plain form of `run`'s flags; [`OwnPlan::prepare`] resolves it
//! against `panewise.toml` for panewise's own loop (provider, model, approval, window, the
//! client, the log), and [`OwnPlan::start`] makes the [`Session`] and its handle. The daemon
//! keeps one in-process mock server for all of its mock sessions and passes its URL in.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::model::{LoopConfig, ModelAgent};
use panewise_host::backend::Backend;
use panewise_host::config::ProviderName;
use panewise_host::session::{log_header, Session, SessionHandle, SessionSpec};
use panewise_providers::transport::{ApiConfig, HttpModelClient, ModelClient};
use panewise_providers::{ApiKey, ApiKind};
use panewise_window::StrategyConfig;

use crate::run::own_loop::{self, Setup};
use crate::run::{
    codex_thread, default_log_path, family, gemini_acp_args, read_resumed, refuse_existing_log,
    supervised_provider, DeadlineArgs, Resumed,
};
use panewise_host::backend::cli::{Channel, CliAgent, CliLaunch, RpcLaunch};
use panewise_providers::claude_control::ClaudeLaunch;
use panewise_providers::codex_appserver::ThreadOptions;
use panewise_providers::oneshot::{OneShotCli, OneShotLaunch};
use panewise_providers::rpc_client::RpcProtocol;
use panewise_providers::Provider;

/// What to run, as plain data: `run`'s flags, or a `session/create` request.
#[derive(Debug, Clone, Default)]
pub struct LaunchRequest {
    /// The model the agent uses.
    pub model: Option<String>,
    /// The agent's working directory (None: a fresh one for the mock, else the current one).
    pub cwd: Option<PathBuf>,
    /// The approval mode (None: `panewise.toml`'s, else the provider's default).
    pub approval: Option<ApprovalMode>,
    /// The window strategy (None: `panewise.toml`'s `[window]`, else the default).
    pub window: Option<StrategyConfig>,
    /// The most model calls one turn may make.
    pub max_iterations: Option<u32>,
    /// The log (None: a new one under the sessions directory).
    pub log: Option<PathBuf>,
    /// The prompts given at the start.
    pub prompts: Vec<String>,
    /// The deadline flags.
    pub deadlines: DeadlineArgs,
    /// A recorded session of the own loop to continue (`crate::resume`).
    pub resume: Option<crate::resume::ResumeFrom>,
    /// The session's name (`new --name`), kept in the log's header.
    pub name: Option<String>,
}

/// The own loop's session, resolved but not started.
pub struct OwnPlan {
    /// The loop's configuration (provider, model, cwd, window, log).
    pub config: LoopConfig,
    /// The approval mode.
    pub approval: ApprovalMode,
    /// The client of a real provider; `None` for the mock.
    real: Option<HttpModelClient>,
    /// The mock's base URL from `panewise.toml`, if it names one.
    pub mock_url: Option<String>,
    /// The deadlines, when not the defaults.
    deadlines: Option<panewise_pane_state::Deadlines>,
    /// The prompts given at the start.
    prompts: Vec<String>,
    /// The mock runs in a directory panewise made for it.
    pub own_dir: bool,
    /// The scenario of panewise's own mock server, for the header (so a resume runs the same).
    pub mock_scenario: Option<String>,
    /// The recorded session this one continues.
    resume: Option<crate::resume::ResumeFrom>,
    /// The session's name, kept in the log's header.
    pub name: Option<String>,
}

impl OwnPlan {
    /// Resolves `request` for the own loop `setup` chose.
    pub fn prepare(request: LaunchRequest, setup: &Setup) -> anyhow::Result<OwnPlan> {
        let mock = setup.provider == ProviderName::Mock;
        let mock_url = mock
            .then(|| setup.config.providers.get(&ProviderName::Mock))
            .flatten()
            .and_then(|settings| settings.base_url.clone());
        let own_dir = mock && request.cwd.is_none();
        let cwd = match &request.cwd {
            Some(cwd) => cwd.clone(),
            None if mock => own_loop::mock_work_dir()?,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let cwd = std::fs::canonicalize(&cwd)
            .with_context(|| format!("cannot read {}", cwd.display()))?;
        let approval = request
            .approval
            .or(setup.config.approval)
            .unwrap_or(if mock {
                ApprovalMode::FullAccess
            } else {
                ApprovalMode::Ask
            });
        let strategy = match request.window {
            Some(strategy) => strategy,
            None => match &setup.config.window {
                Some(window) => window.clone(),
                None => StrategyConfig::from_json(own_loop::DEFAULT_WINDOW)?,
            },
        };
        let model = request
            .model
            .clone()
            .or_else(|| setup.config.model.clone())
            .unwrap_or_else(|| own_loop::default_model(setup.provider).to_owned());
        let real = if mock {
            None
        } else {
            Some(own_loop::real_client(setup)?)
        };
        let log = match &request.log {
            Some(log) => {
                crate::run::refuse_existing_log(log)?;
                log.clone()
            }
            None => crate::run::default_log_path()?,
        };
        let mut config = LoopConfig::new(setup.provider.as_str(), model, cwd, strategy, log);
        config.approval = approval;
        // The tools get no API key, unless `pass_env` in the user file names it.
        config.tool_env_remove =
            panewise_host::secrets::EnvPolicy::from_config(&setup.config).tool_removals();
        if let Some(limit) = request.max_iterations {
            config.max_iterations = limit;
        }
        if let Some(on) = setup
            .config
            .providers
            .get(&setup.provider)
            .and_then(|settings| settings.prompt_cache)
        {
            config.prompt_cache = on;
        }
        let deadlines = crate::run::deadlines(&request.deadlines, &config.cwd)?;
        Ok(OwnPlan {
            config,
            approval,
            real,
            mock_url,
            deadlines,
            prompts: request.prompts,
            own_dir,
            mock_scenario: None,
            resume: request.resume,
            name: request.name,
        })
    }

    /// The session is the mock's and needs a mock server's URL.
    pub fn needs_mock_server(&self) -> bool {
        self.real.is_none() && self.mock_url.is_none()
    }

    /// Makes the session: `mock_base_url` is the running mock server's, for a mock session
    /// whose `panewise.toml` names none. `can_ask`: a front end answers approvals;
    /// `stay_open`: more prompts may come through the handle.
    pub fn start(
        self,
        mock_base_url: Option<String>,
        can_ask: bool,
        stay_open: bool,
    ) -> anyhow::Result<(Session, SessionHandle)> {
        let client: Arc<dyn ModelClient> = match self.real {
            Some(client) => Arc::new(client),
            None => {
                let base_url = self
                    .mock_url
                    .or(mock_base_url)
                    .context("the mock model's server is not running")?;
                let api = ApiConfig::new(ApiKind::Anthropic, base_url, ApiKey::new("mock"));
                Arc::new(HttpModelClient::new(api).map_err(|error| anyhow::anyhow!("{error}"))?)
            }
        };
        let config = self.config;
        // What a resume needs to run the session as it ran.
        let own_loop = panewise_pane_state::log::OwnLoopHeader {
            approval: Some(self.approval.name().to_owned()),
            window: serde_json::to_value(&config.strategy).ok(),
            max_iterations: Some(config.max_iterations),
            mock_scenario: self.mock_scenario,
        };
        let header = panewise_pane_state::log::LogHeader {
            name: self.name,
            provider: Some(config.provider.clone()),
            own_loop: Some(own_loop),
            resumed_from: self
                .resume
                .as_ref()
                .map(|resume| resume.log.display().to_string()),
            ..log_header(
                &config.provider,
                Some(config.model.clone()),
                &config.cwd,
                None,
            )
        };
        let spec = SessionSpec {
            prompts: self.prompts,
            approval: self.approval,
            can_ask,
            stay_open,
            deadlines: self.deadlines,
            ..SessionSpec::new(header, config.log.clone(), config.cwd.clone())
        };
        let mut backend = ModelAgent::new(config, client)?;
        if let Some(resume) = &self.resume {
            backend.resume_from(&resume.rebuilt)?;
        }
        Ok(Session::new(spec, Backend::Model(Box::new(backend)))?)
    }
}

/// What to run for a supervised agent CLI: `run`'s flags as plain data.
#[derive(Debug, Clone, Default)]
pub struct SupervisedRequest {
    /// The provider as named (`claude-code`, `codex`, `gemini-cli`, `acp`).
    pub provider: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The agent's working directory.
    pub cwd: Option<PathBuf>,
    /// The approval mode (default `ask`).
    pub approval: Option<ApprovalMode>,
    /// The log (None: a new one under the sessions directory).
    pub log: Option<PathBuf>,
    /// A recorded session to continue (an id or a log's path).
    pub resume: Option<PathBuf>,
    /// The `claude` executable.
    pub claude: Option<String>,
    /// The `codex` executable.
    pub codex: Option<String>,
    /// The `gemini` executable.
    pub gemini: Option<String>,
    /// The channel (`app-server`, `exec`, `acp`, `stream-json`).
    pub channel: Option<String>,
    /// The command of an ACP agent.
    pub agent_cmd: Option<String>,
    /// Where to save the agent's raw stdout.
    pub capture: Option<PathBuf>,
    /// The prompts given at the start.
    pub prompts: Vec<String>,
    /// The deadline flags.
    pub deadlines: DeadlineArgs,
    /// The session's name (`new --name`; a resumed session keeps its recorded one).
    pub name: Option<String>,
}

/// A supervised agent's session, resolved but not started.
pub struct SupervisedPlan {
    /// The provider as the person named it (for the header and the view).
    pub provider_named: String,
    /// The approval mode.
    pub approval: ApprovalMode,
    /// The working directory, canonical.
    pub cwd: PathBuf,
    /// The session log.
    pub log: PathBuf,
    channel: Channel,
    program: String,
    resumed: Option<Resumed>,
    capture: Option<PathBuf>,
    prompts: Vec<String>,
    deadlines: Option<panewise_pane_state::Deadlines>,
    cannot_ask: Option<String>,
    /// Variables set for the agent on top of panewise's environment (`TRACEPARENT`).
    pub env: Vec<(String, String)>,
    /// The session's name, kept in the log's header.
    pub name: Option<String>,
}

impl SupervisedPlan {
    /// Resolves `request`: the provider (or the resumed session's), the channel, the
    /// executable, the working directory and the log.
    pub fn prepare(mut request: SupervisedRequest) -> anyhow::Result<SupervisedPlan> {
        let approval = request.approval.unwrap_or(ApprovalMode::Ask);
        let resumed = request.resume.as_deref().map(read_resumed).transpose()?;
        let resumed_name = resumed.as_ref().and_then(|resumed| resumed.name.clone());
        let provider: Provider = match (&request.provider, &resumed) {
            (Some(name), _) => supervised_provider(name)?,
            (None, Some(resumed)) => resumed.provider,
            (None, None) => Provider::ClaudeCode,
        };
        anyhow::ensure!(
            request.agent_cmd.is_none() || provider == Provider::Acp,
            "--agent-cmd names an ACP agent: it goes with --provider acp, not {}",
            provider.as_str()
        );
        if let Some(resumed) = &resumed {
            anyhow::ensure!(
                family(resumed.provider) == family(provider),
                "--resume: {} is a {} session; it cannot be continued with --provider {}",
                resumed.log.display(),
                resumed.provider.as_str(),
                provider.as_str()
            );
            if request.model.is_none() {
                request.model.clone_from(&resumed.model);
            }
        }
        let cwd = match (request.cwd, resumed.as_ref().and_then(|r| r.cwd.clone())) {
            (Some(cwd), _) | (None, Some(cwd)) => cwd,
            (None, None) => std::env::current_dir().context("cannot read the current directory")?,
        };
        let cwd = std::fs::canonicalize(&cwd)
            .with_context(|| format!("cannot read {}", cwd.display()))?;
        let log = match request.log {
            Some(log) => {
                refuse_existing_log(&log)?;
                log
            }
            None => default_log_path()?,
        };
        let channel_name = request.channel.clone().or_else(|| match provider {
            Provider::CodexAppServer => Some("app-server".to_owned()),
            Provider::Acp => Some("acp".to_owned()),
            _ => resumed.as_ref().and_then(|r| match r.provider {
                Provider::Codex => Some("exec".to_owned()),
                Provider::GeminiCli => Some("stream-json".to_owned()),
                _ => None,
            }),
        });
        let provider = family(provider);
        let rpc = match (provider, channel_name.as_deref()) {
            (Provider::Codex, None | Some("app-server")) => Some(RpcProtocol::CodexAppServer),
            (Provider::GeminiCli, None | Some("acp")) => Some(RpcProtocol::Acp),
            (Provider::Codex, Some("exec")) | (Provider::GeminiCli, Some("stream-json")) => None,
            (Provider::ClaudeCode, None | Some("stream-json")) => None,
            (_, Some(other)) => {
                return Err(crate::exit::usage(format!(
                    "--channel {other}: {} is driven by {}",
                    provider.as_str(),
                    match provider {
                        Provider::Codex => "app-server (default) or exec",
                        Provider::GeminiCli => "acp (default) or stream-json",
                        _ => "stream-json",
                    }
                )))
            }
            _ => None,
        };
        let (program, variable, default, channel) = match provider {
            Provider::Codex | Provider::GeminiCli if rpc.is_some() => {
                let protocol = rpc.unwrap_or(RpcProtocol::Acp);
                let cwd_text = cwd.display().to_string();
                let (program, variable, default, launch) =
                    if protocol == RpcProtocol::CodexAppServer {
                        let launch = RpcLaunch {
                            protocol,
                            args: vec!["app-server".to_owned()],
                            model: request.model.clone(),
                            thread: codex_thread(approval, &cwd_text, request.model.clone()),
                            npm_package: Some("@openai/codex"),
                        };
                        (request.codex, "PANEWISE_CODEX", "codex".to_owned(), launch)
                    } else {
                        let (program, mut agent_args, npm_package) = match &request.agent_cmd {
                            Some(command) => {
                                let mut words = command.split_whitespace().map(str::to_owned);
                                let program = words.next().context("--agent-cmd is empty")?;
                                (Some(program), words.collect(), None)
                            }
                            None => (
                                request.gemini.clone(),
                                gemini_acp_args(approval, &log)?,
                                Some("@google/gemini-cli"),
                            ),
                        };
                        if let (Some(model), true) = (&request.model, request.agent_cmd.is_none()) {
                            agent_args.extend(["--model".to_owned(), model.clone()]);
                        }
                        let launch = RpcLaunch {
                            protocol,
                            args: agent_args,
                            model: request.model.clone(),
                            thread: ThreadOptions {
                                cwd: Some(cwd_text),
                                ..ThreadOptions::default()
                            },
                            npm_package,
                        };
                        (program, "PANEWISE_GEMINI", "gemini".to_owned(), launch)
                    };
                (program, variable, default, Channel::Rpc(launch))
            }
            Provider::Codex | Provider::GeminiCli => {
                let (cli, program, variable, default) = if provider == Provider::Codex {
                    (OneShotCli::Codex, request.codex, "PANEWISE_CODEX", "codex")
                } else {
                    (
                        OneShotCli::GeminiCli,
                        request.gemini,
                        "PANEWISE_GEMINI",
                        "gemini",
                    )
                };
                let launch = OneShotLaunch {
                    cli,
                    model: request.model,
                    access: approval.one_shot_access(),
                };
                (
                    program,
                    variable,
                    default.to_owned(),
                    Channel::OneShot(launch),
                )
            }
            _ => {
                let launch = ClaudeLaunch {
                    model: request.model,
                    ..ClaudeLaunch::default()
                };
                (
                    request.claude,
                    "PANEWISE_CLAUDE",
                    "claude".to_owned(),
                    Channel::Claude(launch),
                )
            }
        };
        let program = program
            .or_else(|| std::env::var(variable).ok())
            .unwrap_or(default);
        let cannot_ask = (approval == ApprovalMode::Ask && matches!(channel, Channel::OneShot(_)))
            .then(|| {
                format!(
                    "--approval ask: {} cannot ask for permission in this mode, so it runs \
                     read-only (see `panewise run --help`)",
                    provider.as_str()
                )
            });
        let provider_named = request
            .provider
            .clone()
            .unwrap_or_else(|| provider.as_str().to_owned());
        let deadlines = crate::run::deadlines(&request.deadlines, &cwd)?;
        Ok(SupervisedPlan {
            provider_named,
            approval,
            cwd,
            log,
            channel,
            program,
            resumed,
            capture: request.capture,
            prompts: request.prompts,
            deadlines,
            cannot_ask,
            env: Vec::new(),
            name: request.name.or(resumed_name),
        })
    }

    /// What the person is told when `ask` cannot ask on the chosen channel.
    pub fn cannot_ask_notice(&self) -> Option<&str> {
        self.cannot_ask.as_deref()
    }

    /// The model the agent was told to use.
    pub fn model(&self) -> Option<String> {
        self.channel.model()
    }

    /// What `run`'s view names.
    pub fn info(&self) -> crate::run::view::SessionInfo {
        crate::run::view::SessionInfo {
            provider: self.provider_named.clone(),
            model: self.channel.model(),
            cwd: self.cwd.clone(),
        }
    }

    /// Makes the session (the CLI's version read first, for the header). `can_ask`: a
    /// front end answers approvals; `stay_open`: more prompts may come through the handle.
    pub async fn start(
        self,
        can_ask: bool,
        stay_open: bool,
    ) -> anyhow::Result<(Session, SessionHandle)> {
        let cli_version =
            panewise_host::cli_version::cli_version(&self.program, self.channel.npm_package())
                .await;
        let header = panewise_pane_state::log::LogHeader {
            resumed_from: self.resumed.as_ref().map(|r| r.log.display().to_string()),
            name: self.name.clone(),
            // The provider as the person named it, for `sessions`.
            provider: Some(self.provider_named.clone()),
            ..log_header(
                self.channel.provider().as_str(),
                self.channel.model(),
                &self.cwd,
                cli_version,
            )
        };
        let spec = SessionSpec {
            prompts: self.prompts,
            approval: self.approval,
            can_ask,
            stay_open,
            deadlines: self.deadlines,
            ..SessionSpec::new(header, self.log.clone(), self.cwd.clone())
        };
        // Other providers' API keys are kept from the agent, unless `pass_env` names them.
        let env_remove = panewise_host::secrets::EnvPolicy::from_config(
            &panewise_host::config::Config::load(&self.cwd)?,
        )
        .agent_removals(self.channel.provider());
        let backend = CliAgent::new(CliLaunch {
            program: self.program,
            channel: self.channel,
            cwd: self.cwd,
            env: self.env,
            env_remove,
            resume: self.resumed.as_ref().map(|r| r.agent_session_id.clone()),
            capture: self.capture,
            launcher: Default::default(),
        })?;
        Ok(Session::new(spec, Backend::Cli(Box::new(backend)))?)
    }
}
