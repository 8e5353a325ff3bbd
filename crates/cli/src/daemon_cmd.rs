//! `panewise daemon [--foreground]`: this user's supervisor, hosting sessions made by the
//! same launch layer `panewise run` uses (`panewise_host::launch::resolve`, then
//! `launch.rs`), each from the asking client's context (its directory, its keys and
//! endpoints; the daemon's own environment as the fallback), over the API of `panewise-api`.
//! Started on demand by every command that talks to it; `--foreground` is the same daemon
//! with its traces on this terminal. `--stdio` serves nothing itself: it relays its standard
//! input and output to the daemon's socket (starting the daemon when none runs), which is
//! what `ssh HOST panewise daemon --stdio` runs for `--remote HOST`. `panewise daemon stop`
//! asks this user's daemon to stop and waits until it has.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use panewise_api::{ClientContext, CreateParams};
use panewise_host::launch::{self, LaunchRequest};
use panewise_mock_server::{MockConfig, MockServer, RunningServer, Scenario};
use panewise_supervisor::{LaunchInfo, Launched, Launcher};
use tokio::sync::Mutex;

use crate::launch::StartOptions;

/// How long the sessions may take to close their logs once the daemon is told to stop.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Arguments of `panewise daemon`.
#[derive(clap::Args)]
pub struct Args {
    /// Stay in the foreground (the default too: the commands that start the daemon on demand
    /// detach it themselves); kept for scripts that say so.
    #[arg(long)]
    foreground: bool,
    /// Speak the API on standard input and output instead (one JSON-RPC line each way, as on
    /// the socket), starting this user's daemon when none runs: what `--remote HOST` runs
    /// over ssh.
    #[arg(long, conflicts_with = "foreground")]
    stdio: bool,
    /// Drop a client whose queue stays full (it reads nothing) this long, in seconds; it is
    /// told why and where each subscription resumes.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    client_stall_secs: u64,
    /// What to do instead of serving.
    #[command(subcommand)]
    action: Option<Action>,
}

/// `panewise daemon stop`.
#[derive(clap::Subcommand)]
enum Action {
    /// Stop this user's daemon: every session stops as `panewise stop` stops one (its log
    /// closed), then the daemon exits. Returns once the sessions are stopped and the daemon
    /// has let its lock go; none running is not an error
    Stop,
}

/// How long `stop` waits for the daemon to exit, past its own grace for the sessions.
const STOP_WAIT: Duration = Duration::from_secs(20);

/// How long `--stdio` waits for a daemon it started to answer.
const STDIO_START_DEADLINE: Duration = Duration::from_secs(10);

/// Runs `panewise daemon`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Action::Stop) = args.action {
        return stop();
    }
    if args.stdio {
        return stdio();
    }
    let _ = args.foreground;
    let dir = panewise_supervisor::paths::runtime_dir()?;
    // The daemon serves every directory: its own settings come from the user file alone.
    let user = panewise_host::config::user_file();
    // `[notify]` is read when the daemon may notify, so an edit applies without a restart; a
    // file that no longer reads keeps the last settings that did, and says why once per edge.
    // A file that does not read at start: the defaults until it does (said in daemon.log).
    let first = notify_settings(user.as_deref()).unwrap_or_else(|error| {
        eprintln!("panewise daemon: {error}; [notify] uses its defaults until the file reads");
        default_notify()
    });
    let last_good = Arc::new(std::sync::Mutex::new(first));
    let notify_file = user.clone();
    let notify: panewise_supervisor::NotifySource = Arc::new(move || {
        let mut last = last_good
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match notify_settings(notify_file.as_deref()) {
            Ok(now) => *last = now,
            Err(error) => tracing::warn!(%error, "[notify]: keeping the last settings that read"),
        }
        last.clone()
    });
    // One exporter for every session the daemon hosts, configured as `run`'s is, from the
    // user file (the daemon serves every directory) and the environment.
    // A user file that does not read does not keep the daemon (and so every running agent's
    // `agents` and `approve`) from starting: said in daemon.log, the export left to the
    // environment; a session started from it reads the file again and refuses there.
    let (settings, caps) = match panewise_host::config::load_files(user.as_deref(), None) {
        Ok(config) => (config.telemetry, config.limits.daemon_caps()),
        Err(error) => {
            eprintln!(
                "panewise daemon: {error}; [telemetry] is left to the environment, and the \
                 daemon's [limits] caps are unset (`panewise budget --daemon-max-cost-usd` sets them)"
            );
            (
                panewise_host::config::TelemetrySettings::default(),
                panewise_pane_state::budget::DaemonCaps::default(),
            )
        }
    };
    let telemetry = crate::otel::start_with(settings).map(Arc::new);
    // One worker: the daemon's work is many small wake-ups (a line from an agent, its log
    // write, the tail's read, the subscriber's write), and a second worker turned each into
    // cross-thread unparking. Measured (docs/BENCHMARKS.md, "one worker"): 50 agents × 100
    // lines/s spread evenly cost 34 % of a core with two workers, 26 % with one; a
    // current-thread runtime cost less still but let bursts of 200 lines queue for 59 ms at p99.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async {
        // Bound inside the runtime: the listener registers with its reactor.
        let bound = panewise_supervisor::bind(&dir)?;
        eprintln!("panewise daemon: listening on {}", bound.socket().display());
        let mut terminations = panewise_host::signals::Terminations::listen();
        let launcher: Arc<dyn Launcher> = Arc::new(DaemonLauncher {
            mocks: Mutex::default(),
            telemetry: telemetry.clone(),
        });
        let limits = panewise_supervisor::Limits {
            stop_grace_ms: u64::try_from(STOP_GRACE.as_millis()).unwrap_or(u64::MAX),
            stall_ms: args.client_stall_secs.saturating_mul(1000),
            ..panewise_supervisor::Limits::default()
        };
        // The registry's loop runs on the worker, beside the session tasks and connection
        // writers it trades with, not on this thread: awaited here by `block_on`, every line
        // crossed threads twice (5.8 context switches a line; 2.2 on the worker,
        // docs/BENCHMARKS.md "The daemon as a pure registry").
        let serving = tokio::spawn(panewise_supervisor::serve(
            bound,
            launcher,
            notify,
            limits,
            caps,
            async move {
                let signal = terminations.recv().await;
                eprintln!("panewise daemon: {}: stopping every session", signal.name());
            },
        ));
        serving.await.context("the daemon's loop panicked")??;
        anyhow::Ok(())
    })?;
    // Every log is closed by now; what is left (idle connections) need not be waited for.
    runtime.shutdown_timeout(Duration::from_millis(100));
    // The sessions are gone, and their spans ended with them: flush, within the deadline.
    crate::otel::finish(telemetry.as_deref(), None);
    Ok(ExitCode::SUCCESS)
}

/// `panewise daemon stop`: `daemon/shutdown`, then waits until the daemon lets its lock go,
/// which it does once its sessions have stopped and their logs are closed (what is left, the
/// telemetry flush, is bounded by its own deadline).
fn stop() -> anyhow::Result<ExitCode> {
    use panewise_api::{Ack, AgentState, Empty, ListParams, ListResult, Method};
    use panewise_supervisor::paths;
    let dir = paths::runtime_dir()?;
    let lock = dir.join(paths::LOCK_NAME);
    if !daemon_holds(&lock)? {
        eprintln!(
            "panewise daemon: none is running ({} is free)",
            lock.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let socket = dir.join(paths::SOCKET_NAME);
    let runtime = crate::agents_cmd::runtime()?;
    let running = runtime.block_on(async {
        let client = panewise_supervisor::Client::connect(&socket, "panewise daemon stop").await?;
        let listed: ListResult = client.call(Method::List, ListParams {}).await?;
        let _: Ack = client.call(Method::Shutdown, Empty {}).await?;
        let ended = [AgentState::Failed, AgentState::Stopped, AgentState::Exited];
        let running = listed
            .sessions
            .iter()
            .filter(|s| !ended.contains(&s.state))
            .count();
        let worktrees: Vec<String> = listed
            .sessions
            .iter()
            .filter_map(|s| Some(format!("{} ({})", s.worktree.as_deref()?, s.name)))
            .collect();
        anyhow::Ok((running, worktrees))
    })?;
    let (running, worktrees) = running;
    eprintln!("panewise daemon: stopping ({running} running sessions)");
    if !worktrees.is_empty() {
        // A worktree outlives the daemon on purpose (`panewise resume` continues in it); the
        // person is told where each is, so none is forgotten.
        eprintln!(
            "panewise daemon: these worktrees stay (`panewise resume NAME` continues in one, \
             `git worktree remove PATH` removes it): {}",
            crate::terminal_text::escape_controls(&worktrees.join(", "), "")
        );
    }
    let until = std::time::Instant::now() + STOP_GRACE + STOP_WAIT;
    while daemon_holds(&lock)? {
        if std::time::Instant::now() > until {
            anyhow::bail!(
                "the daemon did not exit within {:?} ({} is still locked)",
                STOP_GRACE + STOP_WAIT,
                lock.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("panewise daemon: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Whether a daemon holds the lock at `lock` (a missing file: none ever ran here).
fn daemon_holds(lock: &Path) -> anyhow::Result<bool> {
    match std::fs::File::open(lock) {
        Ok(file) => panewise_host::journal::files::is_locked_elsewhere(&file)
            .with_context(|| format!("cannot probe the daemon's lock {}", lock.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => {
            Err(error).with_context(|| format!("cannot open the daemon's lock {}", lock.display()))
        }
    }
}

/// `panewise daemon --stdio`: standard input and output relayed to the daemon's socket.
fn stdio() -> anyhow::Result<ExitCode> {
    let program = std::env::current_exe().context("cannot find the panewise binary")?;
    // One worker: the daemon's work is many small wake-ups (a line from an agent, its log
    // write, the tail's read, the subscriber's write), and a second worker turned each into
    // cross-thread unparking. Measured (docs/BENCHMARKS.md, "one worker"): 50 agents × 100
    // lines/s spread evenly cost 34 % of a core with two workers, 26 % with one; a
    // current-thread runtime cost less still but let bursts of 200 lines queue for 59 ms at p99.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let relayed = runtime.block_on(async {
        let socket =
            panewise_supervisor::connect_stream_or_start(&program, STDIO_START_DEADLINE).await?;
        let (input, output) = standard_streams()?;
        panewise_supervisor::stdio::relay(socket, input, output).await?;
        anyhow::Ok(())
    });
    // A read of standard input may still be blocked on its thread: not waited for.
    runtime.shutdown_background();
    relayed?;
    Ok(ExitCode::SUCCESS)
}

/// Standard input and output as tokio files (their reads and writes on tokio's blocking
/// pool, as `tokio::io::stdin` does), from duplicates of the descriptors: a pipe, a socket
/// or a terminal alike.
fn standard_streams() -> anyhow::Result<(tokio::fs::File, tokio::fs::File)> {
    use std::os::fd::AsFd;
    let input = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot read standard input")?;
    let output = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot write standard output")?;
    Ok((
        tokio::fs::File::from_std(std::fs::File::from(input)),
        tokio::fs::File::from_std(std::fs::File::from(output)),
    ))
}

/// Makes the daemon's sessions: panewise's own loop as `run` makes it, with one in-process
/// mock server per scenario, shared by every mock session of that scenario (each started
/// when a session first asks for it); each session seen by the exporter, when one runs.
#[derive(Default)]
struct DaemonLauncher {
    mocks: Mutex<HashMap<&'static str, RunningServer>>,
    telemetry: Option<Arc<panewise_telemetry::Telemetry>>,
}

impl DaemonLauncher {
    async fn mock_url(&self, scenario: Scenario) -> anyhow::Result<String> {
        let mut mocks = self.mocks.lock().await;
        if let Some(server) = mocks.get(scenario.name()) {
            return Ok(server.base_url());
        }
        let server = MockServer::start(MockConfig {
            scenario,
            ..MockConfig::default()
        })
        .await
        .map_err(|error| anyhow::anyhow!("cannot start the in-process mock server: {error}"))?;
        let url = server.base_url();
        mocks.insert(scenario.name(), server);
        Ok(url)
    }

    /// `session/create`: the request resolved in the asking client's context (its
    /// directory, its keys and endpoints, `panewise.toml` read now from the session's
    /// directory), then started.
    async fn create(&self, params: &CreateParams) -> anyhow::Result<Launched> {
        let approval = match &params.approval {
            Some(name) => Some(launch::resolve::parse_approval(name)?),
            None => None,
        };
        let window = match &params.window {
            Some(window) => Some(
                panewise_window::StrategyConfig::from_json(&window.to_string())
                    .map_err(|error| anyhow::anyhow!("window: {error}"))?,
            ),
            None => None,
        };
        let mut request = LaunchRequest {
            provider: params.provider.clone(),
            model: params.model.clone(),
            cwd: params.cwd.as_ref().map(PathBuf::from),
            approval,
            window,
            mock_scenario: params.mock_scenario.clone(),
            name: params.name.clone(),
            max_cost_usd: params.max_cost_usd,
            max_tokens: params.max_tokens,
            ..LaunchRequest::default()
        };
        let client = params.client.as_ref();
        let mut worktree = None;
        let mut log = None;
        if params.worktree {
            let probe = crate::launch::context(&request, client)?;
            let base = launch::resolve::session_dir(&request, &probe)?
                .or_else(|| client.map(|client| PathBuf::from(&client.cwd)))
                .context("--worktree needs --cwd: the repository to make the worktree in")?;
            // Unnamed, the worktree takes the name the session will be listed by: its log's
            // id is chosen now, so the two agree.
            let name = match &params.name {
                Some(name) => name.clone(),
                None => {
                    let path = crate::launch::default_log_path()?;
                    let id = path
                        .file_stem()
                        .map(|stem| stem.to_string_lossy().into_owned())
                        .context("a session log path without a name")?;
                    log = Some(path);
                    panewise_api::default_session_name(&id)
                }
            };
            let made = crate::worktree::create(&base, &name)?;
            request.cwd = Some(made.clone());
            worktree = Some(made);
        }
        let context = crate::launch::context(&request, client)?;
        let plan = launch::resolve(request, &context)?;
        self.start(plan, params.prompt.iter().cloned().collect(), log, worktree)
            .await
    }

    /// `session/resume`: the recorded session continued as it ran (its provider, directory,
    /// settings), with the asking client's keys and endpoints.
    async fn resume(
        &self,
        log: &Path,
        prompt: Option<String>,
        client: Option<&ClientContext>,
    ) -> anyhow::Result<Launched> {
        // Read off the runtime's workers: the log is checked to be a regular file without
        // blocking and read up to a cap, but even a capped read of a large file must not keep
        // the daemon from answering its other clients meanwhile.
        let given = log.to_path_buf();
        let (recorded, _notice) =
            tokio::task::spawn_blocking(move || crate::resume::recorded(&given))
                .await
                .map_err(|error| anyhow::anyhow!("reading the log to resume failed: {error}"))??;
        let request = LaunchRequest {
            resume: Some(recorded),
            ..LaunchRequest::default()
        };
        let context = crate::launch::context(&request, client)?;
        let plan = launch::resolve(request, &context)?;
        self.start(plan, prompt.into_iter().collect(), None, None)
            .await
    }

    /// Starts a session: against the daemon's mock server of its scenario when it is a mock
    /// session without a server of its own in `panewise.toml`. Every daemon session can be
    /// asked (a client answers) and stays open for prompts.
    async fn start(
        &self,
        plan: launch::SessionPlan,
        prompts: Vec<String>,
        log: Option<PathBuf>,
        worktree: Option<PathBuf>,
    ) -> anyhow::Result<Launched> {
        let mock_url = match crate::launch::in_process_scenario(&plan)? {
            Some(scenario) => Some(self.mock_url(scenario).await?),
            None => None,
        };
        let prepared = crate::launch::prepare(plan, log, worktree)?;
        let started = prepared
            .start(StartOptions {
                prompts,
                can_ask: true,
                stay_open: true,
                mock_url,
                capture: None,
                telemetry: self.telemetry.as_deref(),
            })
            .await?;
        // The export lives on in the session's observer, and ends when the session is dropped.
        Ok(launched(started.session, started.handle, started.info))
    }
}

#[async_trait::async_trait]
impl Launcher for DaemonLauncher {
    async fn create(&self, params: &CreateParams) -> Result<Launched, String> {
        DaemonLauncher::create(self, params)
            .await
            .map_err(|error| format!("{error:#}"))
    }

    async fn resume(
        &self,
        log: &Path,
        prompt: Option<String>,
        client: Option<&ClientContext>,
    ) -> Result<Launched, String> {
        DaemonLauncher::resume(self, log, prompt, client)
            .await
            .map_err(|error| format!("{error:#}"))
    }

    fn remove(&self, info: &LaunchInfo) -> Option<String> {
        remove_own_dir(info);
        info.worktree.as_deref().map(crate::worktree::remove)
    }

    fn at_shutdown(&self, info: &LaunchInfo) {
        remove_own_dir(info);
    }
}

/// The `[notify]` settings of a user file without the table.
fn default_notify() -> panewise_supervisor::NotifyConfig {
    notify_config(panewise_host::config::NotifySettings::default())
}

/// The daemon's `[notify]` settings, from the user file as it is now.
pub(crate) fn notify_settings(
    user: Option<&Path>,
) -> anyhow::Result<panewise_supervisor::NotifyConfig> {
    let settings = panewise_host::config::load_files(user, None)?.notify;
    Ok(notify_config(settings))
}

fn notify_config(
    settings: panewise_host::config::NotifySettings,
) -> panewise_supervisor::NotifyConfig {
    panewise_supervisor::NotifyConfig {
        delay: Duration::from_secs(settings.delay_secs.unwrap_or(0)),
        command: settings.command,
        desktop: settings.desktop.unwrap_or(true),
    }
}

/// Removes the directory made for a session (the mock's fresh one) when nothing is left in
/// it: `remove_dir` removes only an empty directory, so what the tools wrote stays.
fn remove_own_dir(info: &LaunchInfo) {
    if info.own_dir {
        let _kept = std::fs::remove_dir(&info.cwd);
    }
}

/// A session made for the daemon, as the daemon sees it: its run, its channels and its info.
fn launched(
    mut session: panewise_host::session::Session,
    handle: panewise_host::session::SessionHandle,
    info: LaunchInfo,
) -> Launched {
    let (controls, updates) = handle.into_channels();
    // The engine copies each log write for the daemon, which then hands the new lines to
    // subscribers from memory instead of reading them back from the file.
    let mirror = std::sync::Arc::new(std::sync::Mutex::new(
        panewise_supervisor::LogMirror::default(),
    ));
    let copy = mirror.clone();
    let start = session.mirror_log(Box::new(move |written: &[u8]| {
        // A poisoned lock is a daemon task that panicked; the file still has every byte.
        if let Ok(mut mirror) = copy.lock() {
            mirror.append(written);
        }
    }));
    if let Ok(mut mirror) = mirror.lock() {
        mirror.start = start;
    }
    Launched {
        run: Box::pin(async move {
            session
                .run()
                .await
                .map(|_outcome| ())
                .map_err(|error| error.to_string())
        }),
        controls,
        updates,
        info,
        log_mirror: Some(mirror),
    }
}
