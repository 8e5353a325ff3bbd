//! What to run, decided in one place: [`resolve`] turns a [`LaunchRequest`] (flags, a
//! `session/create`, a recorded session to continue) and the [`LaunchContext`] it is asked
//! in (the asking client's directory and environment, the daemon's as the fallback, and the
//! configuration files already read) into a [`SessionPlan`] naming one [`AgentSpec`].
//!
//! Pure: no file is read, no variable looked up, no clock read. The shell
//! (the host's `launch::context`) reads the files and the environments and passes them in as data, and
//! starts what the plan says.

use std::path::{Path, PathBuf};

use panewise_api::ClientEnv;
use panewise_pane_state::Deadlines;
use panewise_providers::{ApiKey, Provider};
use panewise_window::StrategyConfig;

use super::plan::*;
use crate::agent::{ChannelName, Drive};
use crate::approval::ApprovalMode;
use crate::config::{Config, ProviderName};
use crate::error::LaunchError;
use crate::secrets::EnvPolicy;

/// The window strategy when neither the request nor `[window]` names one: drop the oldest
/// turns once the last call's prompt passed 150,000 tokens, keeping the last six.
pub const DEFAULT_WINDOW: &str =
    r#"{"strategy":"token-budget","thresholdTokens":150000,"keepRecentTurns":6}"#;

/// The directory a session asked for by `request` runs in, when it names one: the given
/// `cwd` (relative to the client's directory), else the recorded one, else the client's
/// (`None` for the mock, which gets a fresh one). The shell finds `panewise.toml` from here
/// (or from the client's directory for the mock's fresh one).
pub fn session_dir(
    request: &LaunchRequest,
    context: &LaunchContext,
) -> Result<Option<PathBuf>, LaunchError> {
    if let Some(given) = &request.cwd {
        return absolute(given, context).map(Some);
    }
    if let Some(recorded) = &request.resume {
        if let (Some(cwd), true) = (&recorded.cwd, recorded.cwd_exists) {
            return Ok(Some(cwd.clone()));
        }
    }
    Ok(None)
}

/// The directory the project file is looked up from: the session's, else the client's.
pub fn config_dir(
    request: &LaunchRequest,
    context: &LaunchContext,
) -> Result<PathBuf, LaunchError> {
    Ok(session_dir(request, context)?.unwrap_or_else(|| caller_dir(context).to_owned()))
}

fn caller_dir(context: &LaunchContext) -> &Path {
    context.client_cwd.as_deref().unwrap_or(&context.own_cwd)
}

fn absolute(given: &Path, context: &LaunchContext) -> Result<PathBuf, LaunchError> {
    if given.is_absolute() {
        return Ok(given.to_owned());
    }
    match &context.client_cwd {
        Some(client) => Ok(client.join(given)),
        None => Err(LaunchError::RelativeCwd(given.to_owned())),
    }
}

/// Decides what to run. See the module doc.
pub fn resolve(
    request: LaunchRequest,
    context: &LaunchContext,
) -> Result<SessionPlan, LaunchError> {
    if let Some(client) = context
        .client_cwd
        .as_deref()
        .filter(|dir| !dir.is_absolute())
    {
        return Err(LaunchError::Invalid(format!(
            "client.cwd {}: give an absolute path (the client's working directory)",
            client.display()
        )));
    }
    let config = &context.config;
    let named = match &request.provider {
        Some(name) => Some(parse_provider(name)?),
        None => None,
    };
    // What the recorded session ran, in the one vocabulary: its provider, and for an agent
    // the decoder its log was read with (which another name of the same agent may continue).
    let recorded = match request.resume.as_ref().map(|recorded| &recorded.kind) {
        None => None,
        Some(RecordedKind::OwnLoop { provider, .. }) => Some((*provider, None)),
        Some(RecordedKind::Supervised {
            provider: decoder,
            named,
            ..
        }) => match Drive::recorded(*decoder, *named) {
            Some(drive) => Some((drive.row().provider, Some(*decoder))),
            None => {
                return Err(LaunchError::Invalid(format!(
                    "{}: no agent panewise runs reads a `{}` stream",
                    recorded_log(&request).display(),
                    decoder.as_str()
                )))
            }
        },
    };
    let provider = match (named, recorded) {
        (Some(named), None) => named,
        (None, None) => config.provider.unwrap_or(ProviderName::Mock),
        (None, Some((recorded, _))) => recorded,
        (Some(named), Some((recorded, None))) if named == recorded => named,
        (Some(named), Some((_, Some(decoder)))) if reads(named, decoder) => named,
        (Some(named), Some((recorded, _))) => {
            return Err(LaunchError::ResumeProvider {
                log: recorded_log(&request),
                recorded: recorded.as_str().to_owned(),
                named: named.as_str().to_owned(),
            })
        }
    };
    if provider.is_supervised() {
        supervised(request, context, provider)
    } else {
        own_loop(request, context, provider)
    }
}

/// Whether one of `provider`'s drives reads `decoder`'s stream: a session read so can be
/// continued as `provider` (a Codex `exec` log by `--provider codex`; an ACP log by
/// `gemini-cli` or `acp`).
fn reads(provider: ProviderName, decoder: Provider) -> bool {
    provider
        .drives()
        .iter()
        .any(|drive| drive.row().decoder == decoder)
}

/// `--provider NAME`: one vocabulary for the own loop's APIs and the supervised agents.
pub fn parse_provider(name: &str) -> Result<ProviderName, LaunchError> {
    ProviderName::from_name(name).ok_or_else(|| LaunchError::UnknownProvider {
        name: name.to_owned(),
        expected: ProviderName::names(),
    })
}

/// The model of the own loop when nothing names one.
pub fn default_model(provider: ProviderName) -> &'static str {
    match provider {
        ProviderName::Openai => "gpt-5",
        ProviderName::Gemini => "gemini-2.5-pro",
        ProviderName::Mock => "panewise-mock",
        ProviderName::Anthropic
        | ProviderName::ClaudeCode
        | ProviderName::Codex
        | ProviderName::GeminiCli
        | ProviderName::Acp => "claude-sonnet-4-5",
    }
}

/// A variable's value: the client's, else the launching process's.
fn lookup(context: &LaunchContext, name: &str) -> Option<(String, KeySource)> {
    context
        .client_env
        .get(name)
        .map(|value| (value.to_owned(), KeySource::Client))
        .or_else(|| {
            context
                .own_env
                .get(name)
                .map(|value| (value.to_owned(), KeySource::Own))
        })
}

fn startup_limit(config: &Config) -> std::time::Duration {
    std::time::Duration::from_secs(
        config
            .deadlines
            .startup_secs
            .unwrap_or(crate::config::DEFAULT_STARTUP_SECS),
    )
}

fn deadlines(request: &LaunchRequest, config: &Config) -> Option<Deadlines> {
    let defaults = Deadlines::default();
    let seconds = |flag: Option<u64>, file: Option<u64>, default_ms: u64| {
        flag.or(file)
            .map_or(default_ms, |secs| secs.saturating_mul(1_000))
    };
    let deadlines = Deadlines {
        submit_ms: seconds(
            request.submit_secs,
            config.deadlines.submit_secs,
            defaults.submit_ms,
        ),
        stuck_ms: seconds(
            request.stuck_secs,
            config.deadlines.stuck_secs,
            defaults.stuck_ms,
        ),
    };
    (!deadlines.is_default()).then_some(deadlines)
}

fn own_loop(
    request: LaunchRequest,
    context: &LaunchContext,
    provider: ProviderName,
) -> Result<SessionPlan, LaunchError> {
    let config = &context.config;
    let mock = provider == ProviderName::Mock;
    let (recorded, rebuilt) = match request.resume.clone() {
        Some(Recorded {
            kind:
                RecordedKind::OwnLoop {
                    approval,
                    window,
                    max_iterations,
                    mock_scenario,
                    rebuilt,
                    ..
                },
            log,
            cwd,
            cwd_exists,
            model,
            name,
        }) => (
            Some((
                log,
                cwd,
                cwd_exists,
                model,
                name,
                approval,
                window,
                max_iterations,
                mock_scenario,
            )),
            Some(rebuilt),
        ),
        _ => (None, None),
    };
    let cwd = match (&request.cwd, &recorded) {
        (Some(given), _) => SessionDir::Given(absolute(given, context)?),
        (None, Some((_, Some(cwd), true, ..))) => SessionDir::Given(cwd.clone()),
        (None, Some((log, Some(cwd), false, ..))) if !mock => {
            return Err(LaunchError::RecordedCwdGone {
                log: log.clone(),
                cwd: cwd.clone(),
            })
        }
        // The mock's own directory goes when its tools left nothing in it: a fresh one.
        (None, _) if mock => SessionDir::FreshForMock,
        (None, _) => SessionDir::Given(caller_dir(context).to_owned()),
    };
    let recorded_approval = match recorded.as_ref().and_then(|r| r.5.as_deref()) {
        Some(name) => Some(parse_approval(name).map_err(|_| LaunchError::Recorded {
            log: recorded_log(&request),
            what: format!("approval mode {name:?} is not one this build knows"),
        })?),
        None => None,
    };
    let approval = request
        .approval
        .or(recorded_approval)
        .or(config.approval)
        .unwrap_or(if mock {
            ApprovalMode::FullAccess
        } else {
            ApprovalMode::Ask
        });
    let recorded_window =
        match recorded.as_ref().and_then(|r| r.6.as_ref()) {
            Some(value) => Some(StrategyConfig::from_json(&value.to_string()).map_err(
                |error| LaunchError::Recorded {
                    log: recorded_log(&request),
                    what: format!("window strategy: {error}"),
                },
            )?),
            None => None,
        };
    let window = match request
        .window
        .clone()
        .or(recorded_window)
        .or_else(|| config.window.clone())
    {
        Some(window) => window,
        None => StrategyConfig::from_json(DEFAULT_WINDOW)
            .map_err(|error| LaunchError::Invalid(format!("the default window: {error}")))?,
    };
    let model = request
        .model
        .clone()
        .or_else(|| recorded.as_ref().and_then(|r| r.3.clone()))
        .or_else(|| config.model.clone())
        .unwrap_or_else(|| default_model(provider).to_owned());
    let settings = config.providers.get(&provider);
    let scenario_name = request
        .mock_scenario
        .clone()
        .or_else(|| recorded.as_ref().and_then(|r| r.8.clone()));
    let own_settings = OwnLoopSettings {
        provider,
        window,
        max_iterations: request
            .max_iterations
            .or_else(|| recorded.as_ref().and_then(|r| r.7)),
        prompt_cache: settings.and_then(|settings| settings.prompt_cache),
        rebuilt,
    };
    let agent = if mock {
        let server = match (settings.and_then(|s| s.base_url.clone()), scenario_name) {
            (Some(_), Some(_)) if request.mock_scenario.is_some() => {
                return Err(LaunchError::ScenarioWithBaseUrl)
            }
            (Some(url), _) => MockServerSpec::Configured(url),
            (None, Some(name)) => {
                let known = context
                    .mock_scenarios
                    .iter()
                    .find(|known| known.eq_ignore_ascii_case(name.trim()))
                    .ok_or_else(|| LaunchError::UnknownScenario {
                        name: name.clone(),
                        expected: context.mock_scenarios.join(", "),
                    })?;
                MockServerSpec::InProcess(known.clone())
            }
            (None, None) => MockServerSpec::InProcess(
                context
                    .mock_scenarios
                    .first()
                    .cloned()
                    .ok_or(LaunchError::NoMockScenario)?,
            ),
        };
        AgentSpec::Mock {
            server,
            settings: own_settings,
        }
    } else {
        if request.mock_scenario.is_some() {
            return Err(LaunchError::ScenarioNotMock(provider.as_str().to_owned()));
        }
        let Some(api) = provider.api() else {
            return Err(LaunchError::Invalid(format!(
                "{} is a supervised agent, not a provider of panewise's own loop",
                provider.as_str()
            )));
        };
        let (conventional_key, url_variable) = api.env_variables();
        let key_variable = settings
            .and_then(|settings| settings.api_key_env.as_deref())
            .unwrap_or(conventional_key);
        let (key, key_source) =
            lookup(context, key_variable).ok_or_else(|| LaunchError::NoKey {
                provider: provider.as_str().to_owned(),
                variable: key_variable.to_owned(),
            })?;
        let base_url = settings
            .and_then(|settings| settings.base_url.clone())
            .or_else(|| lookup(context, url_variable).map(|(url, _)| url))
            .unwrap_or_else(|| api.default_base_url().to_owned());
        AgentSpec::OwnApi {
            api,
            base_url,
            key: ApiKey::new(key),
            key_source,
            settings: own_settings,
        }
    };
    Ok(SessionPlan {
        agent,
        provider_named: provider.as_str().to_owned(),
        model: Some(model),
        cwd,
        approval,
        cannot_ask: None,
        deadlines: deadlines(&request, config),
        startup_limit: startup_limit(config),
        log_cap: config.limits.log_cap_bytes(),
        budget: config
            .limits
            .budget(request.max_cost_usd, request.max_tokens),
        name: request
            .name
            .clone()
            .or_else(|| recorded.as_ref().and_then(|r| r.4.clone())),
        resumed_from: recorded.map(|r| r.0),
        resume_id: None,
        agent_env: ClientEnv::default(),
        // The tools get no API key, unless `pass_env` in the user file names it.
        env_remove: EnvPolicy::from_config(config).tool_removals(),
        sandbox: config.sandbox.clone(),
        mcp: config.mcp.clone(),
    })
}

fn recorded_log(request: &LaunchRequest) -> PathBuf {
    request
        .resume
        .as_ref()
        .map(|recorded| recorded.log.clone())
        .unwrap_or_default()
}

/// An approval mode by its name.
pub fn parse_approval(name: &str) -> Result<ApprovalMode, LaunchError> {
    ApprovalMode::from_name(name).ok_or_else(|| {
        LaunchError::Invalid(format!(
            "approval {name:?}: expected read-only, ask, auto or full-access"
        ))
    })
}

fn supervised(
    request: LaunchRequest,
    context: &LaunchContext,
    provider: ProviderName,
) -> Result<SessionPlan, LaunchError> {
    let config = &context.config;
    if request.window.is_some() {
        return Err(LaunchError::Invalid(
            "window: a supervised agent keeps its own context window".to_owned(),
        ));
    }
    if request.mock_scenario.is_some() {
        return Err(LaunchError::ScenarioNotMock(provider.as_str().to_owned()));
    }
    if request.agent_cmd.is_some() && provider != ProviderName::Acp {
        return Err(LaunchError::Invalid(format!(
            "--agent-cmd names an ACP agent: it goes with --provider acp, not {}",
            provider.as_str()
        )));
    }
    // The drive the recorded session ran on, when it was this provider's.
    let recorded = match &request.resume {
        Some(Recorded {
            kind:
                RecordedKind::Supervised {
                    provider: decoder,
                    named,
                    ..
                },
            ..
        }) => Drive::recorded(*decoder, *named).filter(|drive| drive.row().provider == provider),
        _ => None,
    };
    let cwd = match (&request.cwd, &request.resume) {
        (Some(given), _) => absolute(given, context)?,
        (None, Some(recorded)) => match (&recorded.cwd, recorded.cwd_exists) {
            (Some(cwd), true) => cwd.clone(),
            (Some(cwd), false) => {
                return Err(LaunchError::RecordedCwdGone {
                    log: recorded.log.clone(),
                    cwd: cwd.clone(),
                })
            }
            (None, _) => caller_dir(context).to_owned(),
        },
        (None, None) => caller_dir(context).to_owned(),
    };
    let approval = request
        .approval
        .or(config.approval)
        .unwrap_or(crate::config::DEFAULT_APPROVAL);
    let model = request
        .model
        .clone()
        .or_else(|| request.resume.as_ref().and_then(|r| r.model.clone()));
    // The channel: as asked; else the one the recorded session ran on; else the default.
    let channel = request
        .channel
        .or_else(|| recorded.map(|drive| drive.row().channel));
    let drive = match Drive::of(provider, channel) {
        Some(Ok(drive)) => drive,
        Some(Err(driven_by)) => {
            return Err(LaunchError::Channel {
                channel: channel.map_or("", ChannelName::as_str).to_owned(),
                provider: provider.as_str().to_owned(),
                driven_by,
            })
        }
        None => return Err(unreachable_own(provider)),
    };
    let program = |flag: &Option<String>, variable: &str, default: &str| {
        flag.clone()
            .or_else(|| lookup(context, variable).map(|(value, _)| value))
            .unwrap_or_else(|| default.to_owned())
    };
    let gemini = || program(&request.programs.gemini, "PANEWISE_GEMINI", "gemini");
    let (drive, program, args) = match (drive, &request.agent_cmd) {
        // `--agent-cmd` goes with `acp` alone (checked above).
        (drive, Some(command)) => {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = words
                .next()
                .ok_or_else(|| LaunchError::Invalid("--agent-cmd is empty".to_owned()))?;
            (drive, program, words.collect())
        }
        // `--provider acp` alone runs the ACP agent panewise knows: `gemini --acp`.
        (Drive::AcpAgent, None) => (Drive::GeminiAcp, gemini(), Vec::new()),
        (Drive::ClaudeStreamJson, None) => (
            drive,
            program(&request.programs.claude, "PANEWISE_CLAUDE", "claude"),
            Vec::new(),
        ),
        (Drive::CodexAppServer | Drive::CodexExec, None) => (
            drive,
            program(&request.programs.codex, "PANEWISE_CODEX", "codex"),
            Vec::new(),
        ),
        (Drive::GeminiAcp | Drive::GeminiStreamJson, None) => (drive, gemini(), Vec::new()),
    };
    let cannot_ask = (approval == ApprovalMode::Ask && !drive.row().asks).then(|| {
        format!(
            "--approval ask: {} cannot ask for permission in this mode, so it runs read-only \
             (see `panewise run --help`)",
            drive.row().provider.as_str()
        )
    });
    // Other providers' keys are kept from the agent, unless `pass_env` names them; the
    // client's own variables of the agent's provider are the agent's.
    let env_remove = EnvPolicy::from_config(config).agent_removals(provider);
    let agent_env = ClientEnv::new(
        context
            .client_env
            .variables()
            .filter(|(name, _)| !env_remove.iter().any(|removed| removed == name))
            .filter(|(name, _)| !name.starts_with("PANEWISE_"))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect(),
    );
    Ok(SessionPlan {
        provider_named: request
            .provider
            .clone()
            .unwrap_or_else(|| provider.as_str().to_owned()),
        agent: AgentSpec::Supervised {
            program,
            args,
            drive,
        },
        model,
        cwd: SessionDir::Given(cwd),
        approval,
        cannot_ask,
        deadlines: deadlines(&request, config),
        startup_limit: startup_limit(config),
        log_cap: config.limits.log_cap_bytes(),
        budget: config
            .limits
            .budget(request.max_cost_usd, request.max_tokens),
        name: request
            .name
            .clone()
            .or_else(|| request.resume.as_ref().and_then(|r| r.name.clone())),
        resumed_from: request.resume.as_ref().map(|r| r.log.clone()),
        resume_id: match &request.resume {
            Some(Recorded {
                kind:
                    RecordedKind::Supervised {
                        agent_session_id, ..
                    },
                ..
            }) => Some(agent_session_id.clone()),
            _ => None,
        },
        agent_env,
        env_remove,
        sandbox: config.sandbox.clone(),
        mcp: config.mcp.clone(),
    })
}

/// The own loop's names never reach [`supervised`]: [`resolve`] sends them to [`own_loop`].
fn unreachable_own(provider: ProviderName) -> LaunchError {
    LaunchError::Invalid(format!(
        "{} is a provider of panewise's own loop, not a supervised agent",
        provider.as_str()
    ))
}

#[cfg(test)]
mod tests;
