//! Starting what [`panewise_host::launch::resolve()`] decided: one [`prepare`] (the log and the
//! working directory made) and one [`Prepared::start`] (the agent or the own loop made, the
//! session's telemetry attached) for `panewise run`, the daemon's `session/create` and its
//! `session/resume` alike. Nothing here decides what to run: the [`SessionPlan`] says it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::cli::{Channel, CliAgent, CliLaunch, RpcLaunch};
use panewise_host::backend::model::{LoopConfig, ModelAgent};
use panewise_host::backend::Backend;
use panewise_host::launch::{
    AgentSpec, Drive, MockServerSpec, OwnLoopSettings, SessionDir, SessionPlan,
};
use panewise_host::session::{log_header, Session, SessionHandle, SessionSpec};
use panewise_mock_server::Scenario;
use panewise_providers::claude_control::ClaudeLaunch;
use panewise_providers::codex_appserver::ThreadOptions;
use panewise_providers::oneshot::{OneShotCli, OneShotLaunch};
use panewise_providers::rpc_client::RpcProtocol;
use panewise_providers::{ApiKey, ApiKind};
use panewise_supervisor::LaunchInfo;
use panewise_telemetry::export::SessionExport;
use panewise_telemetry::Telemetry;
use panewise_transport::{ApiConfig, HttpModelClient, ModelClient};

/// A plan with its log and working directory made: what the session is, before it starts.
pub struct Prepared {
    plan: SessionPlan,
    /// What the session is, for the list and the view.
    pub info: LaunchInfo,
}

/// What [`Prepared::start`] needs beyond the plan.
#[derive(Default)]
pub struct StartOptions<'a> {
    /// The prompts given at the start.
    pub prompts: Vec<String>,
    /// A front end answers approvals.
    pub can_ask: bool,
    /// More prompts may come through the handle.
    pub stay_open: bool,
    /// The running in-process mock server's URL, for [`MockServerSpec::InProcess`].
    pub mock_url: Option<String>,
    /// Where to save a supervised agent's raw stdout.
    pub capture: Option<PathBuf>,
    /// The exporter that sees the session, when one runs.
    pub telemetry: Option<&'a Telemetry>,
}

/// A session made and not yet run, with its export (which ends when it is finished or
/// dropped).
pub struct Started {
    /// The session.
    pub session: Session,
    /// Its handle.
    pub handle: SessionHandle,
    /// What it is.
    pub info: LaunchInfo,
    /// Its telemetry export.
    pub export: Option<Arc<SessionExport>>,
}

/// The in-process mock server the plan needs started, when it does.
pub fn in_process_scenario(plan: &SessionPlan) -> anyhow::Result<Option<Scenario>> {
    match &plan.agent {
        AgentSpec::Mock {
            server: MockServerSpec::InProcess(scenario),
            ..
        } => Ok(Some(scenario.parse()?)),
        AgentSpec::Mock {
            server: MockServerSpec::Configured(_),
            ..
        }
        | AgentSpec::OwnApi { .. }
        | AgentSpec::Supervised { .. } => Ok(None),
    }
}

/// The context `request` resolves in ([`panewise_host::launch::launch_context`]), with the built-in mock's
/// scenarios, which this binary knows and the engine does not.
pub fn context(
    request: &panewise_host::launch::LaunchRequest,
    client: Option<&panewise_api::ClientContext>,
) -> Result<panewise_host::launch::LaunchContext, panewise_host::error::ConfigError> {
    panewise_host::launch::launch_context(request, client, &Scenario::names())
}

/// Makes the session's log path (`log`, or a new one under the sessions directory) and its
/// working directory (checked, canonical; a fresh one for the mock's own).
pub fn prepare(
    plan: SessionPlan,
    log: Option<PathBuf>,
    worktree: Option<PathBuf>,
) -> anyhow::Result<Prepared> {
    let log = match log {
        Some(log) => {
            refuse_existing_log(&log)?;
            log
        }
        None => default_log_path()?,
    };
    let (cwd, own_dir) = match &plan.cwd {
        SessionDir::Given(dir) => {
            let canonical = std::fs::canonicalize(dir)
                .with_context(|| format!("cwd {}: cannot read it", dir.display()))?;
            anyhow::ensure!(
                canonical.is_dir(),
                "cwd {}: not a directory (the agent's working directory must be one)",
                dir.display()
            );
            (canonical, false)
        }
        SessionDir::FreshForMock => (mock_work_dir()?, true),
    };
    let info = LaunchInfo {
        provider: plan.provider_named.clone(),
        model: plan.model.clone(),
        cwd,
        approval: plan.approval.name().to_owned(),
        log,
        worktree,
        own_dir,
        name: plan.name.clone(),
    };
    Ok(Prepared { plan, info })
}

impl Prepared {
    /// Makes the session, with `options.telemetry` seeing it. A session refused here (a
    /// strategy its provider does not offer, an agent that cannot start) leaves no empty
    /// directory of its own behind.
    pub async fn start(self, options: StartOptions<'_>) -> anyhow::Result<Started> {
        let own_dir = self.info.own_dir.then(|| self.info.cwd.clone());
        let started = self.start_session(options).await;
        if let (Err(_), Some(dir)) = (&started, own_dir) {
            // Only when still empty: `remove_dir` refuses a directory with anything in it.
            let _ignored = std::fs::remove_dir(dir);
        }
        started
    }

    async fn start_session(self, options: StartOptions<'_>) -> anyhow::Result<Started> {
        let Prepared { plan, info } = self;
        let export = prepare_export(options.telemetry, &info);
        let (mut session, handle) = match plan.agent.clone() {
            AgentSpec::OwnApi {
                api,
                base_url,
                key,
                settings,
                ..
            } => {
                let client = HttpModelClient::new(ApiConfig::new(api, base_url, key))
                    .map_err(|error| anyhow::anyhow!("--provider {}: {error}", info.provider))?;
                own_loop(&plan, &info, settings, Arc::new(client), None, options).await?
            }
            AgentSpec::Mock { server, settings } => {
                let (url, scenario) = match server {
                    MockServerSpec::Configured(url) => (url, None),
                    MockServerSpec::InProcess(scenario) => (
                        options
                            .mock_url
                            .clone()
                            .context("the mock model's server is not running")?,
                        Some(scenario.clone()),
                    ),
                };
                let api = ApiConfig::new(ApiKind::Anthropic, url, ApiKey::new("mock"));
                let client =
                    HttpModelClient::new(api).map_err(|error| anyhow::anyhow!("{error}"))?;
                own_loop(&plan, &info, settings, Arc::new(client), scenario, options).await?
            }
            agent => {
                // The session's span opens before the agent starts: the agent is given its
                // context (`TRACEPARENT`), so a CLI exporting its own spans nests them under it.
                let traceparent = export.as_ref().and_then(|export| export.start());
                supervised(&plan, &info, agent, traceparent, options).await?
            }
        };
        if let Some(export) = &export {
            session.observe(export.observer());
        }
        Ok(Started {
            session,
            handle,
            info,
            export,
        })
    }
}

fn prepare_export(telemetry: Option<&Telemetry>, info: &LaunchInfo) -> Option<Arc<SessionExport>> {
    crate::otel::session_export(telemetry, &info.log, &info.provider, info.model.clone())
}

async fn own_loop(
    plan: &SessionPlan,
    info: &LaunchInfo,
    settings: OwnLoopSettings,
    client: Arc<dyn ModelClient>,
    mock_scenario: Option<String>,
    options: StartOptions<'_>,
) -> anyhow::Result<(Session, SessionHandle)> {
    let model = info.model.clone().unwrap_or_default();
    let mut config = LoopConfig::new(
        settings.provider.as_str(),
        model,
        info.cwd.clone(),
        settings.window,
        info.log.clone(),
    );
    config.approval = plan.approval;
    config.tool_env_remove = plan.env_remove.clone();
    // What this machine offers decides the box `shell` gets, and whether `auto` asks.
    config.sandbox = panewise_host::sandbox::probed(plan.sandbox.clone());
    if let Some(limit) = settings.max_iterations {
        config.max_iterations = limit;
    }
    if let Some(on) = settings.prompt_cache {
        config.prompt_cache = on;
    }
    // The MCP servers start with the session and end with it (the backend holds them).
    let mcp_plans = panewise_host::mcp::plans(&plan.mcp, &info.cwd)
        .map_err(|error| anyhow::anyhow!("MCP configuration: {error}"))?;
    let mcp = panewise_host::mcp::start(mcp_plans, &info.cwd).await;
    config.mcp_tools = mcp.tools();
    config.mcp_notices = panewise_host::mcp::notices(mcp.reports());
    config.tool_budget_tokens = plan.mcp.tool_budget_tokens;
    // What a resume needs to run the session as it ran.
    let own_loop = panewise_pane_state::log::OwnLoopHeader {
        approval: Some(plan.approval.name().to_owned()),
        window: serde_json::to_value(&config.strategy).ok(),
        max_iterations: Some(config.max_iterations),
        mock_scenario,
    };
    let header = panewise_pane_state::log::LogHeader {
        name: plan.name.clone(),
        provider: Some(config.provider.clone()),
        own_loop: Some(own_loop),
        resumed_from: plan
            .resumed_from
            .as_ref()
            .map(|log| log.display().to_string()),
        ..log_header(
            &config.provider,
            Some(config.model.clone()),
            &config.cwd,
            None,
        )
    };
    let spec = SessionSpec {
        prompts: options.prompts,
        approval: plan.approval,
        can_ask: options.can_ask,
        stay_open: options.stay_open,
        deadlines: plan.deadlines,
        log_cap: plan.log_cap,
        budget: plan.budget,
        ..SessionSpec::new(header, config.log.clone(), config.cwd.clone())
    };
    let mut backend = ModelAgent::new(config, client)?.with_mcp(Arc::new(mcp));
    if let Some(rebuilt) = &settings.rebuilt {
        backend.resume_from(rebuilt)?;
        // The spans the recorded session's window let go of stay recallable (W75).
        if let Some(from) = &plan.resumed_from {
            backend.resume_archive(from)?;
        }
    }
    Ok(Session::new(spec, Backend::Model(Box::new(backend)))?)
}

async fn supervised(
    plan: &SessionPlan,
    info: &LaunchInfo,
    agent: AgentSpec,
    traceparent: Option<String>,
    options: StartOptions<'_>,
) -> anyhow::Result<(Session, SessionHandle)> {
    let model = plan.model.clone();
    let cwd_text = info.cwd.display().to_string();
    let acp_thread = || ThreadOptions {
        cwd: Some(cwd_text.clone()),
        ..ThreadOptions::default()
    };
    let AgentSpec::Supervised {
        program,
        args: command_args,
        drive,
    } = agent
    else {
        anyhow::bail!("the own loop is not a supervised agent")
    };
    let npm_package = drive.row().npm_package;
    let channel = match drive {
        Drive::ClaudeStreamJson => Channel::Claude(ClaudeLaunch {
            model: model.clone(),
            ..ClaudeLaunch::default()
        }),
        Drive::CodexAppServer => Channel::Rpc(RpcLaunch {
            protocol: RpcProtocol::CodexAppServer,
            args: vec!["app-server".to_owned()],
            model: model.clone(),
            thread: codex_thread(plan.approval, &cwd_text, model.clone()),
            npm_package,
        }),
        Drive::CodexExec => one_shot(OneShotCli::Codex, plan, model.clone()),
        Drive::GeminiAcp => {
            let mut args = gemini_acp_args(plan.approval, &info.log)?;
            if let Some(model) = &model {
                args.extend(["--model".to_owned(), model.clone()]);
            }
            Channel::Rpc(RpcLaunch {
                protocol: RpcProtocol::Acp,
                args,
                model: model.clone(),
                thread: acp_thread(),
                npm_package,
            })
        }
        Drive::GeminiStreamJson => one_shot(OneShotCli::GeminiCli, plan, model.clone()),
        Drive::AcpAgent => Channel::Rpc(RpcLaunch {
            protocol: RpcProtocol::Acp,
            args: command_args,
            model: model.clone(),
            thread: acp_thread(),
            npm_package,
        }),
    };
    // The executable as the asking client's PATH finds it: the daemon's own PATH is another
    // shell's.
    let program = on_client_path(program, plan.agent_env.get("PATH"));
    // A bare name the client's PATH did not find is not looked up on the daemon's: the spawn
    // will say it is missing, and another program of that name must not be asked its version.
    let cli_version = if program.contains('/') || plan.agent_env.get("PATH").is_none() {
        panewise_host::cli_version::cli_version(&program, channel.npm_package()).await
    } else {
        None
    };
    let header = panewise_pane_state::log::LogHeader {
        resumed_from: plan
            .resumed_from
            .as_ref()
            .map(|log| log.display().to_string()),
        name: plan.name.clone(),
        // The provider as the person named it, for `sessions`.
        provider: Some(plan.provider_named.clone()),
        ..log_header(
            channel.provider().as_str(),
            channel.model(),
            &info.cwd,
            cli_version,
        )
    };
    let spec = SessionSpec {
        prompts: options.prompts,
        approval: plan.approval,
        can_ask: options.can_ask,
        stay_open: options.stay_open,
        deadlines: plan.deadlines,
        log_cap: plan.log_cap,
        budget: plan.budget,
        ..SessionSpec::new(header, info.log.clone(), info.cwd.clone())
    };
    // The client's keys of the agent's own provider, then the trace context.
    let mut env: Vec<(String, String)> = plan
        .agent_env
        .variables()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    if let Some(traceparent) = traceparent {
        env.push(("TRACEPARENT".to_owned(), traceparent));
    }
    let backend = CliAgent::new(CliLaunch {
        program,
        channel,
        cwd: info.cwd.clone(),
        env,
        env_remove: plan.env_remove.clone(),
        resume: plan.resume_id.clone(),
        capture: options.capture,
        launcher: Default::default(),
        startup_limit: plan.startup_limit,
    })?;
    Ok(Session::new(spec, Backend::Cli(Box::new(backend)))?)
}

/// `program` found on `path` (the client's `PATH`) when it is a bare name and an executable
/// file of that name is there; otherwise `program` unchanged (a path, or no `PATH` sent: the
/// spawn then searches the `PATH` the agent is given, and says when it finds nothing).
fn on_client_path(program: String, path: Option<&str>) -> String {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return program;
    }
    let Some(path) = path else {
        return program;
    };
    std::env::split_paths(path)
        .map(|dir| dir.join(&program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
        .map_or(program, |found| found.display().to_string())
}

fn one_shot(cli: OneShotCli, plan: &SessionPlan, model: Option<String>) -> Channel {
    Channel::OneShot(OneShotLaunch {
        cli,
        model,
        access: plan.approval.one_shot_access(),
    })
}

/// A Codex thread per approval mode: Codex asks (`untrusted`, `on-request`) wherever panewise
/// should decide, and the sandbox bounds what an approved command may touch.
pub(crate) fn codex_thread(
    approval: ApprovalMode,
    cwd: &str,
    model: Option<String>,
) -> ThreadOptions {
    let (policy, sandbox) = match approval {
        ApprovalMode::ReadOnly => ("untrusted", "read-only"),
        ApprovalMode::Ask => ("untrusted", "workspace-write"),
        ApprovalMode::Auto => ("on-request", "workspace-write"),
        ApprovalMode::FullAccess => ("never", "danger-full-access"),
    };
    ThreadOptions {
        cwd: Some(cwd.to_owned()),
        model,
        approval_policy: Some(policy.to_owned()),
        sandbox: Some(sandbox.to_owned()),
    }
}

/// `gemini --acp` with the approval mode's flags. Gemini CLI runs commands it deems safe
/// without asking; unless every request is allowed anyway, a policy file beside the log makes
/// every shell command ask, so the approval mode decides.
pub(crate) fn gemini_acp_args(approval: ApprovalMode, log: &Path) -> anyhow::Result<Vec<String>> {
    let mut args = vec!["--acp".to_owned()];
    match approval {
        ApprovalMode::FullAccess => args.push("--yolo".to_owned()),
        mode => {
            if mode == ApprovalMode::Auto {
                args.extend(["--approval-mode".to_owned(), "auto_edit".to_owned()]);
            }
            let mut policy = log.as_os_str().to_owned();
            policy.push(".gemini-policy.toml");
            let policy = PathBuf::from(policy);
            // transcript: session files are the owner's alone (mode 0600).
            panewise_host::journal::files::write_private(
                &policy,
                b"# Written by panewise run: every shell command asks, so --approval decides.\n\
                 [[rule]]\ntoolName = \"run_shell_command\"\ncommandRegex = \".*\"\ndecision = \"ask_user\"\npriority = 100\n",
            )
            .with_context(|| format!("cannot write {}", policy.display()))?;
            args.extend(["--policy".to_owned(), policy.display().to_string()]);
        }
    }
    Ok(args)
}

/// `<sessions dir>/<id>.jsonl`: the id a UUIDv7, so sessions started at once never share a
/// log, and ids sort by start time.
pub(crate) fn default_log_path() -> anyhow::Result<PathBuf> {
    let dir = panewise_host::session_log::sessions_dir()
        .context("neither XDG_DATA_HOME nor HOME is set; pass --log FILE")?;
    // transcript: the sessions directory is the owner's alone, like the files in it.
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(panewise_host::journal::files::new_log_path(&dir))
}

/// `--log FILE` names a file that must not exist: panewise never writes over one. (The log
/// is created exclusively anyway; this says so before anything starts.)
pub(crate) fn refuse_existing_log(log: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(log).is_ok() {
        let error = std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} already exists, and panewise never writes over a file; name a new one",
                log.display()
            ),
        );
        return Err(anyhow::Error::new(error).context("--log"));
    }
    Ok(())
}

/// A fresh directory for the mock's tools to run in.
pub(crate) fn mock_work_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "panewise-mock-{}-{}",
        std::process::id(),
        panewise_host::clock::now_ms()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::on_client_path;

    /// A bare name is found on the client's `PATH` (an executable file only); a path, a name
    /// not there, and no `PATH` sent leave the program as it was.
    #[test]
    fn a_bare_program_is_found_on_the_client_s_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let claude = bin.join("claude");
        std::fs::write(&claude, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(bin.join("plain"), "").unwrap();
        let path = format!("/nonexistent:{}", bin.display());
        let cases = [
            ("claude", Some(path.as_str()), claude.display().to_string()),
            ("plain", Some(path.as_str()), "plain".to_owned()),
            ("codex", Some(path.as_str()), "codex".to_owned()),
            ("claude", None, "claude".to_owned()),
            ("/opt/claude", Some(path.as_str()), "/opt/claude".to_owned()),
        ];
        for (program, path, expected) in cases {
            assert_eq!(
                on_client_path(program.to_owned(), path),
                expected,
                "{program}"
            );
        }
    }
}
