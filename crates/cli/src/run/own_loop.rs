//! `panewise run --provider mock|anthropic|openai|gemini`: panewise's own agent loop
//! ([`panewise_host::agent_loop`]) instead of a supervised CLI.
//!
//! The provider, model, approval mode and window strategy come from `panewise.toml`
//! (`config.rs`), the flags overriding it. With no provider anywhere the default is `mock`:
//! the workspace's mock server is started in-process on 127.0.0.1 and the same HTTP client a
//! real provider gets is pointed at it (the Anthropic format), so a fresh machine runs the
//! whole path offline — window stage, model call, a real `shell` run, session log and ledger.
//! The mock's default approval is `full-access` in a fresh temporary directory: the scripted
//! model only ever runs `echo hello`, and nothing it does can touch the person's files.
//! A real provider's default stays `ask`, in the current directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use panewise_host::agent_loop::ledger::{ledger_path, Ledger};
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::model::ModelOutcome;
use panewise_host::backend::BackendOutcome;
use panewise_host::config::{Config, ProviderName};
use panewise_mock_server::{MockConfig, MockServer, RunningServer, Scenario};
use panewise_providers::transport::{ApiConfig, HttpModelClient};
use panewise_providers::{ApiKey, ApiKind};

use super::Args;
use crate::launch::{LaunchRequest, OwnPlan};
use crate::resume::OwnResumed;

/// The window strategy when neither `--window` nor `[window]` names one: drop the oldest
/// turns once the last call's prompt passed 150,000 tokens, keeping the last six.
pub const DEFAULT_WINDOW: &str =
    r#"{"strategy":"token-budget","thresholdTokens":150000,"keepRecentTurns":6}"#;

/// Where `run` goes.
pub enum Route {
    /// panewise's own loop.
    Own(Box<Setup>),
    /// A supervised CLI, with the provider and approval the configuration gives it.
    Supervised {
        provider: String,
        approval: ApprovalMode,
    },
}

/// What the configuration decided for the own loop.
pub struct Setup {
    pub(crate) config: Config,
    pub(crate) provider: ProviderName,
}

/// Reads `panewise.toml` (from `--cwd` or the current directory) under the flags and picks
/// the route.
pub fn route(args: &Args) -> anyhow::Result<Route> {
    route_for(args.cwd.as_deref(), args.provider.as_deref(), args.approval)
}

/// [`route`] for a working directory, a provider name and an approval mode given as data
/// (the daemon's `session/create`).
pub fn route_for(
    cwd: Option<&Path>,
    provider: Option<&str>,
    approval: Option<ApprovalMode>,
) -> anyhow::Result<Route> {
    let start = match cwd {
        Some(cwd) => cwd.to_owned(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let start = std::fs::canonicalize(&start).unwrap_or(start);
    let config = Config::load(&start)?;
    let flag = match provider {
        Some(name) => Some(parse_provider(name)?),
        None => None,
    };
    let provider = flag.or(config.provider).unwrap_or(ProviderName::Mock);
    Ok(if provider.is_supervised() {
        Route::Supervised {
            provider: provider.as_str().to_owned(),
            approval: approval.unwrap_or(config.approval_or_default()),
        }
    } else {
        Route::Own(Box::new(Setup { config, provider }))
    })
}

/// `--provider NAME`: one vocabulary for both kinds of session, the own loop's model APIs
/// and the supervised agents; an unknown name lists every valid one.
pub fn parse_provider(name: &str) -> anyhow::Result<ProviderName> {
    ProviderName::from_name(name).ok_or_else(|| {
        anyhow::anyhow!(
            "--provider {name}: expected one of {}",
            ProviderName::names()
        )
    })
}

pub(crate) fn default_model(provider: ProviderName) -> &'static str {
    match provider {
        ProviderName::Openai => "gpt-5",
        ProviderName::Gemini => "gemini-2.5-pro",
        ProviderName::Mock => "panewise-mock",
        _ => "claude-sonnet-4-5",
    }
}

fn api_of(provider: ProviderName) -> ApiKind {
    match provider {
        ProviderName::Openai => ApiKind::OpenAi,
        ProviderName::Gemini => ApiKind::Gemini,
        _ => ApiKind::Anthropic,
    }
}

/// The client of a real provider: the key from `api_key_env` or the conventional variable
/// (a missing key is an error now, before anything runs), the base URL from the file, the
/// conventional variable, or the public endpoint.
pub(crate) fn real_client(setup: &Setup) -> anyhow::Result<HttpModelClient> {
    let api = api_of(setup.provider);
    let settings = setup.config.providers.get(&setup.provider);
    let (key_variable, url_variable) = api.env_variables();
    let key_variable = settings
        .and_then(|settings| settings.api_key_env.as_deref())
        .unwrap_or(key_variable);
    let key = std::env::var(key_variable)
        .ok()
        .filter(|key| !key.trim().is_empty())
        .with_context(|| {
            format!(
                "--provider {}: no API key: set {key_variable} (or name the variable holding \
                 it with `api_key_env` under [providers.{}] in panewise.toml); `--provider \
                 mock` runs offline",
                setup.provider.as_str(),
                setup.provider.as_str()
            )
        })?;
    let base_url = settings
        .and_then(|settings| settings.base_url.clone())
        .or_else(|| {
            std::env::var(url_variable)
                .ok()
                .filter(|url| !url.trim().is_empty())
        })
        .unwrap_or_else(|| api.default_base_url().to_owned());
    HttpModelClient::new(ApiConfig::new(api, base_url, ApiKey::new(key)))
        .map_err(|error| anyhow::anyhow!("--provider {}: {error}", setup.provider.as_str()))
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

/// The launch request `run`'s flags make.
fn flags_request(args: &Args) -> anyhow::Result<LaunchRequest> {
    let window = match &args.window {
        Some(path) => Some(
            crate::window_cmd::read_config(path)
                .with_context(|| format!("--window {}", path.display()))?,
        ),
        None => None,
    };
    Ok(LaunchRequest {
        model: args.model.clone(),
        cwd: args.cwd.clone(),
        approval: args.approval,
        window,
        max_iterations: args.max_iterations,
        log: args.log.clone(),
        prompts: args.prompts.clone(),
        deadlines: args.deadlines.clone(),
        resume: None,
        name: None,
    })
}

/// Runs the own loop.
pub fn run(args: Args, setup: Setup) -> anyhow::Result<ExitCode> {
    let request = flags_request(&args)?;
    run_request(args, setup, request, None)
}

/// `run --resume` of a session of the own loop: its recorded settings under the flags given,
/// its conversation rebuilt, in a new log that names the one it continues.
pub fn run_resumed(args: Args, resumed: OwnResumed) -> anyhow::Result<ExitCode> {
    let given = flags_request(&args)?;
    let scenario = resumed.mock_scenario()?;
    let notice = resumed.notice();
    let (setup, request) = resumed.request(given, args.provider.as_deref())?;
    eprintln!(
        "panewise run: {}",
        crate::terminal_text::escape_controls(&notice, "")
    );
    run_request(args, *setup, request, scenario)
}

fn run_request(
    args: Args,
    setup: Setup,
    request: LaunchRequest,
    scenario: Option<Scenario>,
) -> anyhow::Result<ExitCode> {
    let mock = setup.provider == ProviderName::Mock;
    let scenario = scenario.unwrap_or_default();
    let mut plan = OwnPlan::prepare(request, &setup)?;
    if plan.needs_mock_server() {
        plan.mock_scenario = Some(scenario.name().to_owned());
    }
    let log = plan.config.log.clone();
    let own_dir = plan.own_dir;
    let interactive = args.prompts.is_empty();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let mut front = super::Front::new(
        &runtime,
        args.json,
        interactive,
        super::view::SessionInfo {
            provider: setup.provider.as_str().to_owned(),
            model: Some(plan.config.model.clone()),
            cwd: plan.config.cwd.clone(),
        },
    );
    let terminal = front.terminal;
    let strategy_name = plan.config.strategy.strategy_name();
    let cwd = plan.config.cwd.clone();
    let telemetry = crate::otel::start(&cwd);
    let model = plan.config.model.clone();
    let mut export = None;
    let outcome = runtime.block_on(async {
        let mut server: Option<RunningServer> = None;
        if plan.needs_mock_server() {
            server = Some(
                MockServer::start(MockConfig {
                    scenario,
                    ..MockConfig::default()
                })
                .await
                .context("cannot start the in-process mock server")?,
            );
        }
        let outcome = async {
            let (mut session, handle) = plan.start(
                server.as_ref().map(RunningServer::base_url),
                terminal,
                interactive,
            )?;
            export = crate::otel::attach(
                telemetry.as_ref(),
                &mut session,
                &log,
                setup.provider.as_str(),
                Some(model),
            );
            anyhow::Ok(front.drive(session, handle).await?)
        }
        .await;
        if let Some(server) = server {
            server.shutdown().await;
        }
        outcome
    });
    // The stdin thread may still wait for a line; it must not hold the process open.
    runtime.shutdown_background();
    crate::otel::finish(telemetry.as_ref(), export);
    let code = front.finish(outcome.as_ref().ok().map(|outcome| &outcome.state), &log);
    let outcome = outcome?;
    let BackendOutcome::Model(model) = &outcome.backend else {
        anyhow::bail!("the own loop's session ended without the loop's outcome");
    };
    // The mock's own directory goes when its tools left nothing in it (`remove_dir` removes
    // only an empty one); what they wrote stays, and the report says where.
    let own_dir = own_dir.then(|| std::fs::remove_dir(&cwd).is_ok());
    report(model, strategy_name, &cwd, own_dir, &log, mock);
    Ok(ExitCode::from(code))
}

/// What the person is told at the end: the tools, the window's decisions, the files;
/// `own_dir` whether the mock's own directory was removed (`None`: the person named it).
fn report(
    outcome: &ModelOutcome,
    strategy: &str,
    cwd: &Path,
    own_dir: Option<bool>,
    log: &Path,
    mock: bool,
) {
    let ran = outcome.tool_runs.iter().filter(|run| run.ran).count();
    eprintln!(
        "panewise run: tools: {ran} ran, {} refused, in {}{}",
        outcome.tool_runs.len().saturating_sub(ran),
        cwd.display(),
        match own_dir {
            Some(true) => " (removed: nothing was left in it)",
            Some(false) => " (kept: the tools left files in it)",
            None => "",
        }
    );
    eprintln!(
        "panewise run: window: {strategy}, {} visit(s), {} engaged{}",
        outcome.visits,
        outcome.records.len(),
        if outcome.records.is_empty() {
            " (nothing was removed)"
        } else {
            ":"
        }
    );
    let lines = Ledger::read(&ledger_path(log))
        .map(|ledger| ledger.printed_lines())
        .unwrap_or_default();
    for line in lines {
        // A call's line names the provider's model, and a provider's edit may name a type it
        // reported: their text is escaped as every agent text is.
        eprintln!("  {}", crate::terminal_text::escape_controls(&line, "  "));
    }
    eprintln!("panewise run: session log: {}", log.display());
    eprintln!(
        "panewise run: window ledger: {}",
        ledger_path(log).display()
    );
    if mock {
        eprintln!(
            "panewise run: that was the offline mock model; for a real one pass --provider \
             anthropic with ANTHROPIC_API_KEY set (or openai / OPENAI_API_KEY, gemini / \
             GEMINI_API_KEY), or set provider = \"anthropic\" in panewise.toml"
        );
    }
}
