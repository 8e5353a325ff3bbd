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
use crate::run::DeadlineArgs;

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
        let deadlines = crate::run::deadlines(&request.deadlines, &config.cwd)?;
        Ok(OwnPlan {
            config,
            approval,
            real,
            mock_url,
            deadlines,
            prompts: request.prompts,
            own_dir,
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
        let header = panewise_pane_state::log::LogHeader {
            provider: Some(config.provider.clone()),
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
        let backend = ModelAgent::new(config, client)?;
        Ok(Session::new(spec, Backend::Model(Box::new(backend)))?)
    }
}
