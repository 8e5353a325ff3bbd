//! The commands over the daemon's API: `agents`, `new`, `send`, `answer`,
//! `interrupt`, `stop`, `rm`, `wait`, `resume`. Each connects to this user's daemon (starting
//! it when none runs), makes one call or a few, and prints what it got; every text that came
//! from a model, a tool or an agent is escaped before it reaches the terminal. With
//! `--remote HOST` (or `[remote] hosts`) the same calls go to other hosts' daemons over ssh
//! (`remote.rs`): `agents` lists every host's sessions with a HOST column, and a session
//! command finds its session on the host `HOST:ID` names, or on the one host that has it.
//! `approve` and `deny` are in `approve_cmd.rs`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_api::view;
use panewise_api::{
    AgentState, AnswerParams, CreateParams, CreateResult, ListParams, ListResult, Method,
    PromptParams, RemoveResult, ResumeParams, SessionParams, SessionSummary,
};
use panewise_supervisor::Client;

use crate::remote::{Host, RemoteArgs, Remotes, Target, START_DEADLINE};
use crate::terminal_text::{cell, one_line};

/// The exit codes of `panewise wait`, one per state that ended the wait.
pub const WAIT_EXIT_CODES: &str = "\
Exit codes of wait:
  0  the state waited for was reached (with --until), or, without it, a turn finished (done)
  4  needs input (an approval or a question waits)     5  idle (nothing runs)
  6  failed   7  stopped (the session was ended)   8  exited (the session ended on its own)
  9  --timeout passed first   10  interrupted (the last turn was; the session takes prompts)
Without --until, the wait ends at the first of these states and exits with its code; with
--until needs-input, idle or done, it waits for that one and exits 0 there, ending early (with
the state's code) only when the session can no longer get there (failed, stopped, exited);
an interrupted session counts as idle.
The state reached is printed either way.";

/// A runtime and a client of the daemon, named `name` (recorded as who answered an
/// approval: `panewise approve`, `panewise attach`).
pub(crate) fn connect(name: &str) -> anyhow::Result<(tokio::runtime::Runtime, Client)> {
    let runtime = runtime()?;
    let program = std::env::current_exe().context("cannot find the panewise binary")?;
    let client = runtime.block_on(Client::connect_or_start(&program, name, START_DEADLINE))?;
    Ok((runtime, client))
}

/// A runtime for one command's calls.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")
}

/// A runtime, and the session `key` names found on its host (this machine's daemon when no
/// remote host is listed and `key` names none), with a client named `name` of that host.
pub(crate) fn target(
    remote: &RemoteArgs,
    key: &str,
    name: &str,
) -> anyhow::Result<(tokio::runtime::Runtime, Target)> {
    let remotes = Remotes::load(remote)?;
    let runtime = runtime()?;
    let target = runtime.block_on(remotes.target(key, name))?;
    Ok((runtime, target))
}

/// `panewise agents [--json] [--remote HOST]...`.
#[derive(clap::Args)]
pub struct AgentsArgs {
    /// One JSON object per session per line (fields in docs/API.md, `v` their version; with
    /// remote hosts, `host` too).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Lists the daemon's sessions, `needs_input` first; with remote hosts, every host's.
pub fn agents(args: AgentsArgs) -> anyhow::Result<ExitCode> {
    let remotes = Remotes::load(&args.remote)?;
    if remotes.any() {
        return agents_of_hosts(&remotes, args.json);
    }
    let (runtime, client) = connect("panewise agents")?;
    let list: ListResult = runtime.block_on(client.call(Method::List, ListParams {}))?;
    let mut out = String::new();
    if args.json {
        for session in &list.sessions {
            out.push_str(&serde_json::to_string(session)?);
            out.push('\n');
        }
    } else if list.sessions.is_empty() {
        out.push_str("no agents (start one with `panewise new PROMPT`)\n");
    } else {
        let now = panewise_host::clock::now_ms();
        let width = name_width(&list.sessions);
        let costs = cost_width(&list.sessions);
        out.push_str(&format!(
            "{:<width$} {:<11} {:<11} {:>5} {:>8} {:>costs$} {:>6}  {}\n",
            "NAME", "STATE", "PROVIDER", "CTX", "TOKENS", "COST", "AGE", "WAITING FOR / TOOL"
        ));
        for session in &list.sessions {
            out.push_str(&row(session, now, width, costs));
            out.push('\n');
        }
    }
    write_out(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The width of the HOST column.
const HOST_WIDTH: usize = 14;

/// The longest name a table shows whole: a name is what `approve`, `attach` and the other
/// commands take, so the column fits every name up to this, and only a longer one is cut.
const NAME_WIDTH_MAX: usize = 40;

/// The NAME column's width: the longest name shown (escaped as shown), within
/// `4..=NAME_WIDTH_MAX`.
fn name_width<'a>(sessions: impl IntoIterator<Item = &'a SessionSummary>) -> usize {
    sessions
        .into_iter()
        .map(|session| one_line(&session.name, NAME_WIDTH_MAX).chars().count())
        .max()
        .unwrap_or(0)
        .clamp("NAME".len(), NAME_WIDTH_MAX)
}

/// The COST column's width: the widest cost (with its cap, [`cost_cell`]), at least 9.
fn cost_width<'a>(sessions: impl IntoIterator<Item = &'a SessionSummary>) -> usize {
    sessions
        .into_iter()
        .map(|session| cost_cell(session).chars().count())
        .max()
        .unwrap_or(0)
        .max(9)
}

/// A session's COST: what it spent, and its cap when it has one.
fn cost_cell(session: &SessionSummary) -> String {
    view::cost_cap_text(
        session.cost_usd,
        session.cost_source,
        session.tokens,
        session.budget.as_ref(),
    )
}

/// `agents` over this machine and the remote hosts: one list, a HOST column (`host` in
/// JSON); a host that cannot be reached is a row `unreachable` and a line on stderr, and the
/// exit code is 1 (the list is not whole).
fn agents_of_hosts(remotes: &Remotes, json: bool) -> anyhow::Result<ExitCode> {
    let runtime = runtime()?;
    let listed = runtime.block_on(remotes.list_all("panewise agents"));
    let mut rows: Vec<(Host, SessionSummary)> = Vec::new();
    let mut unreachable: Vec<(Host, String)> = Vec::new();
    for (host, listed) in listed {
        match listed {
            Ok(listed) => rows.extend(
                listed
                    .sessions
                    .into_iter()
                    .map(|session| (host.clone(), session)),
            ),
            Err(error) => {
                eprintln!("panewise agents: {error}");
                unreachable.push((host, error.to_string()));
            }
        }
    }
    rows.sort_by(|(host_a, a), (host_b, b)| {
        (a.state.rank(), a.started_at_ms, host_a, &a.id).cmp(&(
            b.state.rank(),
            b.started_at_ms,
            host_b,
            &b.id,
        ))
    });
    let mut out = String::new();
    if json {
        for (host, session) in &rows {
            let mut entry = serde_json::to_value(session)?;
            if let Some(fields) = entry.as_object_mut() {
                fields.insert("host".to_owned(), host.label().into());
            }
            out.push_str(&serde_json::to_string(&entry)?);
            out.push('\n');
        }
    } else {
        let now = panewise_host::clock::now_ms();
        let width = name_width(rows.iter().map(|(_, session)| session));
        let costs = cost_width(rows.iter().map(|(_, session)| session));
        out.push_str(&format!(
            "{:<HOST_WIDTH$} {:<width$} {:<11} {:<11} {:>5} {:>8} {:>costs$} {:>6}  {}\n",
            "HOST",
            "NAME",
            "STATE",
            "PROVIDER",
            "CTX",
            "TOKENS",
            "COST",
            "AGE",
            "WAITING FOR / TOOL"
        ));
        for (host, session) in &rows {
            out.push_str(&format!(
                "{:<HOST_WIDTH$} {}\n",
                cell(host.label(), HOST_WIDTH),
                row(session, now, width, costs)
            ));
        }
        for (host, why) in &unreachable {
            out.push_str(&format!(
                "{:<HOST_WIDTH$} {:<width$} {:<11}  {}\n",
                cell(host.label(), HOST_WIDTH),
                "-",
                "unreachable",
                one_line(why, 100)
            ));
        }
    }
    write_out(out.as_bytes())?;
    Ok(if unreachable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::DATA)
    })
}

/// One session's row; `name_width` is the NAME column's (see [`name_width`]). Its words are
/// the client model's ([`panewise_api::view`]), as the dashboard's row says them.
fn row(session: &SessionSummary, now: u64, name_width: usize, cost_width: usize) -> String {
    format!(
        "{:<name_width$} {:<11} {:<11} {:>5} {:>8} {:>cost_width$} {:>6}  {}",
        cell(&session.name, name_width),
        session.state.as_str(),
        cell(&session.provider, 11),
        session
            .context_pct
            .map_or("-".to_owned(), |pct| format!("{pct:.0}%")),
        view::tokens_text(session.tokens),
        cost_cell(session),
        view::age_text(now, session.started_at_ms),
        one_line(&view::what_text(session), 80)
    )
}

/// `panewise new [--provider P] [--model M] [--name N] [--cwd DIR] [--worktree]
/// [--approval MODE] PROMPT`.
#[derive(clap::Args)]
pub struct NewArgs {
    /// The provider, as `panewise run --provider` names it (default: panewise.toml's, else
    /// the offline mock).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(
        panewise_host::config::ProviderName::ALL.map(|name| name.as_str())
    ))]
    provider: Option<String>,
    /// The model.
    #[arg(long)]
    model: Option<String>,
    /// A name for the session, unique among the daemon's (default: the id's last 8
    /// characters).
    #[arg(long)]
    name: Option<String>,
    /// The agent's working directory (default: the current one; the mock's: a fresh temporary
    /// one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Run in a git worktree of its own: `.panewise/worktrees/<name>` of the repository
    /// holding --cwd (or the current directory), on a branch `panewise/<name>`.
    #[arg(long)]
    worktree: bool,
    /// How its permission requests are answered (as `panewise run --approval`).
    #[arg(long, value_parser = ["read-only", "ask", "auto", "full-access"])]
    approval: Option<String>,
    /// The window strategy: a JSON file as `panewise window --config` reads it.
    #[arg(long, value_name = "CONFIG")]
    window: Option<PathBuf>,
    /// The built-in mock's scenario for a `mock` session (`panewise mock-server --scenario`'s
    /// names: `sleeping-tool`, `rate-limit`…).
    #[arg(long, value_name = "SCENARIO")]
    mock_scenario: Option<String>,
    #[command(flatten)]
    budget: crate::run::BudgetArgs,
    /// Continue a recorded session instead (as `panewise resume SESSION PROMPT`): its
    /// provider, model, working directory and settings are the recorded ones.
    #[arg(long, value_name = "SESSION", conflicts_with_all = [
        "provider", "model", "name", "cwd", "worktree", "approval", "window", "mock_scenario",
        "remote",
    ])]
    resume: Option<String>,
    /// The first prompt (not empty: an agent given nothing to do would only wait).
    #[arg(value_parser = non_empty_prompt)]
    prompt: String,
    /// Start it on HOST's daemon, over ssh (once; the id is then printed HOST:ID). --cwd is
    /// a directory there, given as an absolute path.
    #[arg(long = "remote", value_name = "HOST", value_parser = parse_remote_host)]
    remote: Option<String>,
}

fn parse_remote_host(text: &str) -> Result<String, String> {
    panewise_host::config::check_host(text).map(|()| text.to_owned())
}

/// Starts a session; prints its id alone on the last line.
pub fn new(args: NewArgs) -> anyhow::Result<ExitCode> {
    if let Some(id) = args.resume {
        return resume(ResumeArgs {
            id,
            prompt: Some(args.prompt),
        });
    }
    let host = args.remote.clone().map_or(Host::Local, Host::Remote);
    let cwd = match args.cwd {
        // A directory of the remote host: it is the daemon there that reads it.
        Some(cwd) if host != Host::Local => {
            anyhow::ensure!(
                cwd.is_absolute(),
                "--cwd {}: give an absolute path on {}",
                cwd.display(),
                host.label()
            );
            Some(cwd)
        }
        None if host != Host::Local
            && (args.worktree || args.provider.as_deref().is_some_and(|p| p != "mock")) =>
        {
            anyhow::bail!(
                "--cwd DIR (an absolute path on {}) is needed with --worktree or a provider \
                 other than the mock there",
                host.label()
            );
        }
        None if host != Host::Local => None,
        Some(cwd) => Some(
            std::fs::canonicalize(&cwd)
                .with_context(|| format!("--cwd {}: cannot read it", cwd.display()))?,
        ),
        // Without --cwd the session runs here (the daemon takes it from the context sent
        // below; the mock makes its own).
        None => None,
    };
    // The session is made from where this command runs, with its keys and endpoints: sent to
    // this machine's daemon only (a remote host's daemon uses its own environment).
    let client = match host {
        Host::Local => Some(
            panewise_host::launch::client_context(cwd.as_deref())
                .context("cannot read the current directory")?,
        ),
        Host::Remote(_) => None,
    };
    let window = match &args.window {
        Some(path) => {
            let config = crate::strategy_config::read_config(path)
                .with_context(|| format!("--window {}", path.display()))?;
            Some(serde_json::to_value(config)?)
        }
        None => None,
    };
    let sent = client.clone();
    let params = CreateParams {
        provider: args.provider,
        model: args.model,
        prompt: Some(args.prompt),
        cwd: cwd.map(|cwd| cwd.display().to_string()),
        name: args.name,
        approval: args.approval,
        window,
        worktree: args.worktree,
        mock_scenario: args.mock_scenario,
        max_cost_usd: args.budget.max_cost_usd,
        max_tokens: args.budget.max_tokens,
        client,
    };
    let remotes = Remotes::load(&RemoteArgs {
        remote: args.remote.into_iter().collect(),
    })?;
    let runtime = runtime()?;
    let (created, start) = runtime.block_on(async {
        let client = remotes.connect(&host, "panewise new").await?;
        let created: CreateResult = client.call(Method::Create, params).await?;
        let start = wait_for_start(&client, &created.session).await?;
        anyhow::Ok((created, start))
    })?;
    let session = created.session;
    let key = sent
        .as_ref()
        .and_then(|sent| key_source(&session, sent))
        .map(|source| format!(", {}", source.describe()))
        .unwrap_or_default();
    eprintln!(
        "panewise new: {} ({}, approval {}{key}) in {}; log {}",
        one_line(&session.name, 40),
        one_line(&session.provider, 20),
        session.approval,
        session.cwd,
        session.log
    );
    match start {
        Start::Up => {}
        Start::Ended(Some(failure)) => anyhow::bail!(
            "session {} failed: {}",
            one_line(&session.name, 40),
            one_line(&failure, 400)
        ),
        Start::Ended(None) => eprintln!(
            "panewise new: session {} ended before it printed anything",
            one_line(&session.name, 40)
        ),
        Start::Silent => anyhow::bail!(
            "panewise new: session {} started {}, which has written nothing in {} s; \
             `panewise agents` shows it, `panewise stop {}` ends it",
            one_line(&session.name, 40),
            one_line(&session.provider, 20),
            NEW_START_WAIT.as_secs(),
            host.key(&session.id),
        ),
    }
    write_out(format!("{}\n", host.key(&session.id)).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// How long `new` waits for a supervised agent to come up: past the daemon's default
/// start-up limit (`[deadlines] startup_secs`), after which the daemon ends it failed.
const NEW_START_WAIT: std::time::Duration =
    std::time::Duration::from_secs(panewise_host::config::DEFAULT_STARTUP_SECS + 10);

/// How a new session's start went.
enum Start {
    /// The own loop (nothing to wait for), or the agent wrote its first output.
    Up,
    /// The session ended first, with its failure.
    Ended(Option<String>),
    /// Neither within [`NEW_START_WAIT`] (a daemon configured with a longer limit).
    Silent,
}

/// Waits until a supervised agent's session shows it came up (the log's `agent_up` note) or
/// ends: a CLI that is missing or never answers makes `new` fail rather than print an id of a
/// session that is already dead.
async fn wait_for_start(client: &Client, session: &SessionSummary) -> anyhow::Result<Start> {
    let supervised = panewise_host::config::ProviderName::from_name(&session.provider)
        .is_some_and(panewise_host::config::ProviderName::is_supervised);
    if !supervised {
        return Ok(Start::Up);
    }
    let _: panewise_api::SubscribeResult = client
        .call(
            Method::Subscribe,
            panewise_api::SubscribeParams {
                session: session.id.clone(),
                from_line: 0,
                attach: false,
            },
        )
        .await?;
    let watch = async {
        loop {
            let Some(notice) = client.next_notification().await else {
                anyhow::bail!("the daemon closed the connection");
            };
            if notice.method == panewise_api::EndNotice::METHOD {
                return anyhow::Ok(false);
            }
            if notice.method == panewise_api::LineNotice::METHOD {
                let line: panewise_api::LineNotice = serde_json::from_value(notice.params)?;
                if line.session == session.id && panewise_api::is_agent_up_note(&line.line) {
                    return Ok(true);
                }
            }
        }
    };
    match tokio::time::timeout(NEW_START_WAIT, watch).await {
        Err(_elapsed) => Ok(Start::Silent),
        Ok(Err(error)) => Err(error),
        Ok(Ok(true)) => Ok(Start::Up),
        Ok(Ok(false)) => {
            let list: ListResult = client.call(Method::List, ListParams {}).await?;
            let failure = list
                .sessions
                .into_iter()
                .find(|listed| listed.id == session.id)
                .and_then(|listed| listed.failure);
            Ok(Start::Ended(failure))
        }
    }
}

/// Where the daemon took an own-loop session's API key from: the same `resolve` over what
/// this command sent alone (no fallback) finds a key there, or the daemon used its own.
fn key_source(
    session: &SessionSummary,
    sent: &panewise_api::ClientContext,
) -> Option<panewise_host::launch::KeySource> {
    use panewise_host::launch;
    let request = launch::LaunchRequest {
        provider: Some(session.provider.clone()),
        cwd: Some(std::path::PathBuf::from(&session.cwd)),
        ..launch::LaunchRequest::default()
    };
    let mut context = crate::launch::context(&request, Some(sent)).ok()?;
    context.own_env = panewise_api::ClientEnv::default();
    match launch::resolve(request, &context) {
        Ok(plan) => plan.agent.key_source(),
        Err(panewise_host::error::LaunchError::NoKey { .. }) => Some(launch::KeySource::Own),
        Err(_) => None,
    }
}

/// `panewise send ID PROMPT`.
#[derive(clap::Args)]
pub struct SendArgs {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    id: String,
    /// The prompt: sent at once when the agent is idle, queued while a turn runs.
    #[arg(value_parser = non_empty_prompt)]
    prompt: String,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Sends a prompt.
pub fn send(args: SendArgs) -> anyhow::Result<ExitCode> {
    ack(Method::Prompt, &args.remote, &args.id, |session| {
        PromptParams {
            session,
            text: args.prompt,
        }
    })
}

/// `panewise answer ID TEXT`.
#[derive(clap::Args)]
pub struct AnswerArgs {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    id: String,
    /// The answer.
    text: String,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Answers the question a session waits on.
pub fn answer(args: AnswerArgs) -> anyhow::Result<ExitCode> {
    ack(Method::Answer, &args.remote, &args.id, |session| {
        AnswerParams {
            session,
            text: args.text,
        }
    })
}

/// `panewise interrupt ID`, `stop ID`, `rm ID`.
#[derive(clap::Args)]
pub struct IdArgs {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    id: String,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Stops the running turn.
pub fn interrupt(args: IdArgs) -> anyhow::Result<ExitCode> {
    ack(Method::Interrupt, &args.remote, &args.id, |session| {
        SessionParams { session }
    })
}

/// Ends the session (its log closed as SIGTERM closes `run`'s).
pub fn stop(args: IdArgs) -> anyhow::Result<ExitCode> {
    ack(Method::Stop, &args.remote, &args.id, |session| {
        SessionParams { session }
    })
}

/// Forgets an ended session (its log stays); removes its worktree when clean.
pub fn rm(args: IdArgs) -> anyhow::Result<ExitCode> {
    let (runtime, target) = target(&args.remote, &args.id, "panewise rm")?;
    let removed: RemoveResult = runtime.block_on(target.client.call(
        Method::Remove,
        SessionParams {
            session: target.session.clone(),
        },
    ))?;
    if let Some(worktree) = removed.worktree {
        eprintln!("panewise rm: {worktree}");
    }
    write_out(format!("{}\n", target.host.key(&removed.id)).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `panewise resume SESSION [PROMPT]`.
#[derive(clap::Args)]
pub struct ResumeArgs {
    /// A session the daemon lists, or a recorded log (`panewise sessions`).
    id: String,
    /// A prompt to send once it runs.
    prompt: Option<String>,
}

/// Continues a recorded session under the daemon.
pub fn resume(args: ResumeArgs) -> anyhow::Result<ExitCode> {
    // A path is the daemon's to open: make it absolute here, where it was typed.
    let session = match std::fs::canonicalize(&args.id) {
        // Anything there but a directory (a FIFO too, which the daemon then refuses, saying
        // why, rather than taking the name for a session's).
        Ok(path) if !path.is_dir() => path.display().to_string(),
        _ => args.id,
    };
    let (runtime, client) = connect("panewise resume")?;
    let created: CreateResult = runtime.block_on(
        client.call(
            Method::Resume,
            ResumeParams {
                session,
                prompt: args.prompt,
                // The resumed session gets this command's keys and endpoints.
                client: Some(
                    panewise_host::launch::client_context(None)
                        .context("cannot read the current directory")?,
                ),
            },
        ),
    )?;
    write_out(format!("{}\n", created.session.id).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// A prompt with something in it; a blank one is a usage error, as a missing one is.
pub(crate) fn non_empty_prompt(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("the prompt is empty: say what the agent should do".to_owned());
    }
    Ok(text.to_owned())
}

/// What `wait --until` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Until {
    /// An approval or question waits.
    NeedsInput,
    /// Nothing runs (a finished turn counts).
    Idle,
    /// A turn finished.
    Done,
}

/// `panewise wait ID [--until needs-input|idle|done]`.
#[derive(clap::Args)]
pub struct WaitArgs {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    id: String,
    /// The state to wait for.
    #[arg(long, value_enum)]
    until: Option<Until>,
    /// Give up after this long (`30s`, `5m`, `1h 30m`), exiting 9.
    #[arg(long, value_parser = humantime::parse_duration)]
    timeout: Option<std::time::Duration>,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// The exit code of a wait that passed its `--timeout`.
const WAIT_TIMED_OUT: u8 = 9;

/// The exit code of `state` when it ends a wait for `until`: 0 when it is the state waited
/// for (so `wait --until S && next` runs `next` once S is reached), else the state's own.
fn wait_code(state: AgentState, until: Option<Until>) -> u8 {
    if until.is_some_and(|until| reaches(state, until)) {
        return 0;
    }
    match state {
        AgentState::Done => 0,
        AgentState::NeedsInput => 4,
        AgentState::Idle => 5,
        AgentState::Failed => 6,
        AgentState::Stopped => 7,
        AgentState::Interrupted => 10,
        AgentState::Exited => 8,
        AgentState::Working => 1,
    }
}

/// Whether `state` is what `until` waits for (a finished turn is idle too).
fn reaches(state: AgentState, until: Until) -> bool {
    match until {
        Until::NeedsInput => state == AgentState::NeedsInput,
        Until::Idle => matches!(
            state,
            AgentState::Idle | AgentState::Done | AgentState::Interrupted
        ),
        Until::Done => state == AgentState::Done,
    }
}

/// Whether `state` ends a wait for `until`: the state waited for, the first settled state
/// without `--until`, or one from which the session can no longer get anywhere.
fn ends_wait(state: AgentState, until: Option<Until>) -> bool {
    let terminal = matches!(
        state,
        AgentState::Failed | AgentState::Stopped | AgentState::Exited
    );
    terminal
        || match until {
            None => state != AgentState::Working,
            Some(until) => reaches(state, until),
        }
}

/// Waits until the session reaches a state; the exit code says which.
pub fn wait(args: WaitArgs) -> anyhow::Result<ExitCode> {
    let (runtime, target) = target(&args.remote, &args.id, "panewise wait")?;
    let client = &target.client;
    let waited = runtime.block_on(async {
        let wait = wait_for(client, &target.session, args.until);
        match args.timeout {
            Some(limit) => tokio::time::timeout(limit, wait).await.ok(),
            None => Some(wait.await),
        }
        .transpose()
    })?;
    let Some(state) = waited else {
        let limit = args.timeout.map(humantime::format_duration);
        eprintln!(
            "panewise wait: {} passed before the session got there",
            limit.map(|limit| limit.to_string()).unwrap_or_default()
        );
        // The state it is in instead, as the help promises (printed either way).
        let now = runtime.block_on(current_state(client, &target.session))?;
        println!("{}", now.as_str());
        return Ok(ExitCode::from(WAIT_TIMED_OUT));
    };
    println!("{}", state.as_str());
    Ok(ExitCode::from(wait_code(state, args.until)))
}

/// The state of the session `key` names, now.
async fn current_state(client: &Client, key: &str) -> anyhow::Result<AgentState> {
    let list: ListResult = client.call(Method::List, ListParams {}).await?;
    let id = panewise_api::resolve_session(
        list.sessions
            .iter()
            .map(|session| (session.id.as_str(), session.name.as_str())),
        key,
    )
    .map_err(|error| anyhow::anyhow!(error.message))?;
    list.sessions
        .into_iter()
        .find(|session| session.id == id)
        .map(|session| session.state)
        .context("the session is gone from the list")
}

/// Follows the session `key` names until a state ends the wait.
async fn wait_for(client: &Client, key: &str, until: Option<Until>) -> anyhow::Result<AgentState> {
    let list: ListResult = client.call(Method::SubscribeList, ListParams {}).await?;
    let id = panewise_api::resolve_session(
        list.sessions
            .iter()
            .map(|s| (s.id.as_str(), s.name.as_str())),
        key,
    )
    .map_err(|error| anyhow::anyhow!("{}", error.message))?;
    let mut current = list.sessions.iter().find(|s| s.id == id).cloned();
    loop {
        if let Some(summary) = &current {
            if ends_wait(summary.state, until) {
                return Ok(summary.state);
            }
        }
        let Some(notice) = client.next_notification().await else {
            anyhow::bail!("the daemon closed the connection");
        };
        if notice.method == panewise_api::ChangedNotice::METHOD {
            let changed: panewise_api::ChangedNotice = serde_json::from_value(notice.params)?;
            if changed.session.id == id {
                current = Some(changed.session);
            }
        } else if notice.method == panewise_api::RemovedNotice::METHOD {
            let removed: panewise_api::RemovedNotice = serde_json::from_value(notice.params)?;
            anyhow::ensure!(removed.id != id, "the session was removed");
        }
    }
}

fn ack<P: serde::Serialize>(
    method: Method,
    remote: &RemoteArgs,
    key: &str,
    params: impl FnOnce(String) -> P,
) -> anyhow::Result<ExitCode> {
    let name = match method {
        Method::Prompt => "panewise send",
        Method::Answer => "panewise answer",
        Method::Interrupt => "panewise interrupt",
        _ => "panewise stop",
    };
    let (runtime, target) = target(remote, key, name)?;
    let _: panewise_api::Ack =
        runtime.block_on(target.client.call(method, params(target.session)))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to stdout.
pub(crate) fn write_out(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use AgentState::*;

    /// Every state × every `--until`: whether the wait ends there, and its exit code. Rule:
    /// the state waited for exits 0; a state the session cannot leave ends any wait with its
    /// own code; without `--until` the first settled state ends it with its own code.
    #[test]
    fn each_state_ends_a_wait_with_the_code_the_help_gives() {
        let table: [(AgentState, Option<Until>, Option<u8>); 32] = [
            (Interrupted, None, Some(10)),
            (Interrupted, Some(Until::Idle), Some(0)),
            (Interrupted, Some(Until::NeedsInput), None),
            (Interrupted, Some(Until::Done), None),
            (Working, None, None),
            (NeedsInput, None, Some(4)),
            (Idle, None, Some(5)),
            (Done, None, Some(0)),
            (Failed, None, Some(6)),
            (Stopped, None, Some(7)),
            (Exited, None, Some(8)),
            (Working, Some(Until::Idle), None),
            (NeedsInput, Some(Until::Idle), None),
            (Idle, Some(Until::Idle), Some(0)),
            (Done, Some(Until::Idle), Some(0)),
            (Failed, Some(Until::Idle), Some(6)),
            (Stopped, Some(Until::Idle), Some(7)),
            (Exited, Some(Until::Idle), Some(8)),
            (Working, Some(Until::NeedsInput), None),
            (NeedsInput, Some(Until::NeedsInput), Some(0)),
            (Idle, Some(Until::NeedsInput), None),
            (Done, Some(Until::NeedsInput), None),
            (Failed, Some(Until::NeedsInput), Some(6)),
            (Stopped, Some(Until::NeedsInput), Some(7)),
            (Exited, Some(Until::NeedsInput), Some(8)),
            (Working, Some(Until::Done), None),
            (NeedsInput, Some(Until::Done), None),
            (Idle, Some(Until::Done), None),
            (Done, Some(Until::Done), Some(0)),
            (Failed, Some(Until::Done), Some(6)),
            (Stopped, Some(Until::Done), Some(7)),
            (Exited, Some(Until::Done), Some(8)),
        ];
        for (state, until, expected) in table {
            let got = ends_wait(state, until).then(|| wait_code(state, until));
            assert_eq!(got, expected, "{state:?} --until {until:?}");
        }
        assert_eq!(AgentState::ALL.len(), 8, "a new state needs rows above");
    }

    /// Rule: without `--until`, each settled state has a code of its own, distinct from the
    /// timeout's.
    #[test]
    fn without_until_each_state_has_its_own_exit_code() {
        let mut codes: Vec<u8> = AgentState::ALL
            .into_iter()
            .filter(|state| *state != Working)
            .map(|state| wait_code(state, None))
            .chain([WAIT_TIMED_OUT])
            .collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), AgentState::ALL.len());
    }
}
