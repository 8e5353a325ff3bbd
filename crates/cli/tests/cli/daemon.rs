//! The supervisor's API against a real daemon: the `panewise daemon` binary in a temporary
//! runtime directory and data directory, driven by `panewise_supervisor::Client` and by the
//! `panewise` commands (`new`, `agents`, `approve`, `wait`) as a person would use them.
//!
//! Every wait is for a condition (a notification, a state, a process exit) under a deadline;
//! none is a fixed sleep.
//!
//! The daemon's rules (who of two answers wins, what a client that goes leaves pending, that an
//! answer comes before what its subscription sends) are the registry's, tested as sequences of
//! events in `panewise-supervisor` (`src/registry/tests.rs`); what stays here is what only the
//! whole daemon shows: the socket, the processes, the log on disk, the commands.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::run_terminal::{shows_in_order, Terminal};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use panewise_api::{
    Ack, AgentState, ApproveParams, CreateParams, CreateResult, Decision, Empty, ErrorCode,
    ListParams, ListResult, Method, PromptParams, RemoveResult, RenameParams, ResumeParams,
    SessionParams, SessionSummary, SubscribeParams, SubscribeResult,
};
use panewise_supervisor::{Client, SupervisorError};

/// The longest any condition is waited for.
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// A daemon of its own: a fresh runtime directory, data directory and home.
pub(crate) struct Daemon {
    pub(crate) dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Daemon {
    pub(crate) async fn start() -> Daemon {
        Daemon::start_with(None).await
    }

    /// A daemon whose user file is `config`.
    pub(crate) async fn start_with(config: Option<&str>) -> Daemon {
        Daemon::start_custom(config, &[], &[]).await
    }

    /// A daemon whose user file is `config`, with `args` after `daemon` and `env` set.
    pub(crate) async fn start_custom(
        config: Option<&str>,
        args: &[&str],
        env: &[(&str, &Path)],
    ) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["run", "data", "home", "config/panewise", "work"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        if let Some(config) = config {
            let config = config.replace("{dir}", &dir.path().display().to_string());
            std::fs::write(dir.path().join("config/panewise/panewise.toml"), config).unwrap();
        }
        let mut daemon = Daemon { dir, child: None };
        daemon.spawn_with(args, env);
        daemon.connect("setup").await;
        daemon
    }

    fn spawn(&mut self) {
        self.spawn_with(&[], &[]);
    }

    fn spawn_with(&mut self, args: &[&str], env: &[(&str, &Path)]) {
        let mut command = self.command();
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command
            .arg("daemon")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// `panewise` with this daemon's environment.
    pub(crate) fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_panewise"));
        command
            .current_dir(self.dir.path().join("work"))
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("HOME", self.dir.path().join("home"))
            .env_remove("PANEWISE_LOG");
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join("run/panewise/daemon.sock")
    }

    /// A client, once the socket answers (polled under the deadline).
    pub(crate) async fn connect(&self, name: &str) -> Client {
        let until = Instant::now() + DEADLINE;
        loop {
            match Client::connect(&self.socket(), name).await {
                Ok(client) => return client,
                Err(error) => assert!(Instant::now() < until, "no daemon: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub(crate) fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.as_ref().unwrap().id()).unwrap())
    }

    /// Waits (bounded) for the daemon to exit; its stderr.
    pub(crate) async fn exited(&mut self) -> (std::process::ExitStatus, String) {
        let mut child = self.child.take().unwrap();
        let until = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let mut stderr = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
                return (status, stderr);
            }
            assert!(Instant::now() < until, "the daemon did not exit");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) async fn create(client: &Client, params: CreateParams) -> SessionSummary {
    let created: CreateResult = client.call(Method::Create, params).await.unwrap();
    created.session
}

pub(crate) fn mock(name: &str, approval: &str, prompt: &str) -> CreateParams {
    CreateParams {
        name: Some(name.to_owned()),
        approval: Some(approval.to_owned()),
        prompt: Some(prompt.to_owned()),
        ..CreateParams::default()
    }
}

/// Waits on `client`'s list subscription until session `id` satisfies `done`.
pub(crate) async fn until_state(
    client: &Client,
    id: &str,
    done: impl Fn(&SessionSummary) -> bool,
) -> SessionSummary {
    let list: ListResult = client
        .call(Method::SubscribeList, ListParams {})
        .await
        .unwrap();
    if let Some(found) = list.sessions.into_iter().find(|s| s.id == id && done(s)) {
        return found;
    }
    tokio::time::timeout(DEADLINE, async {
        loop {
            let notice = client.next_notification().await.expect("connected");
            if notice.method != panewise_api::ChangedNotice::METHOD {
                continue;
            }
            let changed: panewise_api::ChangedNotice =
                serde_json::from_value(notice.params).unwrap();
            if changed.session.id == id && done(&changed.session) {
                return changed.session;
            }
        }
    })
    .await
    .expect("the state came in time")
}

fn code_of<T: std::fmt::Debug>(result: Result<T, SupervisorError>) -> ErrorCode {
    result.unwrap_err().code().expect("an API error")
}

/// Reads `client`'s `session/line` notifications of `id` until `stop` says so; the lines.
async fn lines_until(
    client: &Client,
    id: &str,
    stop: impl Fn(&[(u64, String)], bool) -> bool,
) -> Vec<(u64, String)> {
    let mut lines = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        loop {
            let notice = client.next_notification().await.expect("connected");
            let ended = notice.method == panewise_api::EndNotice::METHOD;
            if notice.method == panewise_api::LineNotice::METHOD {
                let line: panewise_api::LineNotice = serde_json::from_value(notice.params).unwrap();
                assert_eq!(line.session, id);
                lines.push((line.index, line.line));
            }
            if stop(&lines, ended) {
                return;
            }
        }
    })
    .await
    .expect("the lines came in time");
    lines
}

fn file_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_answers_against_a_real_daemon() {
    let mut daemon = Daemon::start().await;
    let client = daemon.connect("every-method").await;
    let list: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
    assert!(list.sessions.is_empty());

    let session = create(&client, mock("first", "full-access", "say hello")).await;
    assert_eq!(session.provider, "mock");
    let done = until_state(&client, &session.id, |s| s.state == AgentState::Done).await;
    assert_eq!(done.turns, 1);
    assert!(done.tokens.is_some_and(|tokens| tokens > 0), "{done:?}");

    // A name already taken, a provider the daemon cannot host, a relative cwd.
    assert_eq!(
        code_of(
            client
                .call::<_, CreateResult>(Method::Create, mock("first", "ask", "x"))
                .await
        ),
        ErrorCode::NameTaken
    );
    let relative = CreateParams {
        cwd: Some("relative/dir".into()),
        ..CreateParams::default()
    };
    assert_eq!(
        code_of(
            client
                .call::<_, CreateResult>(Method::Create, relative)
                .await
        ),
        ErrorCode::LaunchFailed
    );

    let _: Ack = client
        .call(
            Method::Rename,
            RenameParams {
                session: "first".into(),
                name: "renamed".into(),
            },
        )
        .await
        .unwrap();
    let subscribed: SubscribeResult = client
        .call(
            Method::Subscribe,
            SubscribeParams {
                session: "renamed".into(),
                from_line: 0,
                attach: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(subscribed.id, session.id);
    let _: Ack = client
        .call(
            Method::Unsubscribe,
            SessionParams {
                session: "renamed".into(),
            },
        )
        .await
        .unwrap();
    let _: Ack = client
        .call(
            Method::Prompt,
            PromptParams {
                session: session.id[..20].to_owned(),
                text: "again".into(),
            },
        )
        .await
        .unwrap();
    let twice = until_state(&client, &session.id, |s| s.turns == 2).await;
    assert_eq!(twice.name, "renamed");
    let _: Ack = client
        .call(
            Method::Interrupt,
            SessionParams {
                session: "renamed".into(),
            },
        )
        .await
        .unwrap();
    // Nothing waits: an approval and an answer are refused, saying so.
    let approve = ApproveParams {
        session: "renamed".into(),
        request: None,
        decision: Decision::AllowOnce,
    };
    assert_eq!(
        code_of(client.call::<_, Ack>(Method::Approve, approve).await),
        ErrorCode::NotWaiting
    );
    let answer = panewise_api::AnswerParams {
        session: "renamed".into(),
        text: "yes".into(),
    };
    assert_eq!(
        code_of(client.call::<_, Ack>(Method::Answer, answer).await),
        ErrorCode::NotWaiting
    );
    let remove = || SessionParams {
        session: "renamed".into(),
    };
    let _: Ack = client.call(Method::Stop, remove()).await.unwrap();
    until_state(&client, &session.id, |s| s.state == AgentState::Stopped).await;
    // A stopped session of the own loop resumes from its transcript, in a new session and
    // log; a log written before transcripts were kept cannot be.
    let resume = ResumeParams {
        session: "renamed".into(),
        prompt: None,
        client: None,
    };
    let resumed: CreateResult = client.call(Method::Resume, resume).await.unwrap();
    assert_ne!(resumed.session.id, session.id);
    assert_ne!(resumed.session.log, session.log);
    // The session continuing it takes its name; the one continued goes back to its default.
    assert_eq!(resumed.session.name, "renamed");
    let remove = || SessionParams {
        session: session.id.clone(),
    };
    let old = daemon.dir.path().join("old.jsonl");
    std::fs::write(&old, "{\"v\":2,\"header\":{\"agent_id\":\"mock\"}}\n").unwrap();
    let resume = ResumeParams {
        session: old.display().to_string(),
        prompt: None,
        client: None,
    };
    let refused = client.call::<_, CreateResult>(Method::Resume, resume).await;
    let message = format!("{refused:?}");
    assert_eq!(code_of(refused), ErrorCode::CannotResume);
    assert!(message.contains("schema v2"), "{message}");
    let removed: RemoveResult = client.call(Method::Remove, remove()).await.unwrap();
    assert_eq!(removed.id, session.id);
    assert!(Path::new(&session.log).exists());
    assert_eq!(
        code_of(client.call::<_, Ack>(Method::Stop, remove()).await),
        ErrorCode::UnknownSession
    );
    assert_eq!(
        code_of(client.call_raw("session/nope", serde_json::json!({})).await),
        ErrorCode::MethodNotFound
    );
    assert_eq!(
        code_of(
            client
                .call_raw("session/stop", serde_json::json!({"id": 1}))
                .await
        ),
        ErrorCode::InvalidParams
    );
    let _: Ack = client.call(Method::Shutdown, Empty {}).await.unwrap();
    let (status, stderr) = daemon.exited().await;
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(!daemon.socket().exists(), "the socket is removed on exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_reconnects_at_an_offset_gets_exactly_the_missing_lines() {
    let daemon = Daemon::start().await;
    let watcher = daemon.connect("watcher").await;
    let session = create(&watcher, mock("tail", "full-access", "say hello")).await;
    let first = daemon.connect("first").await;
    let _: SubscribeResult = first
        .call(
            Method::Subscribe,
            SubscribeParams {
                session: session.id.clone(),
                from_line: 0,
                attach: false,
            },
        )
        .await
        .unwrap();
    let head = lines_until(&first, &session.id, |lines, _| lines.len() >= 3).await;
    let kept: Vec<(u64, String)> = head.into_iter().take(3).collect();
    drop(first);
    until_state(&watcher, &session.id, |s| s.state == AgentState::Done).await;
    let _: Ack = watcher
        .call(
            Method::Stop,
            SessionParams {
                session: session.id.clone(),
            },
        )
        .await
        .unwrap();
    let second = daemon.connect("second").await;
    let _: SubscribeResult = second
        .call(
            Method::Subscribe,
            SubscribeParams {
                session: session.id.clone(),
                from_line: 3,
                attach: false,
            },
        )
        .await
        .unwrap();
    let rest = lines_until(&second, &session.id, |_, ended| ended).await;
    let indexes: Vec<u64> = kept.iter().chain(&rest).map(|(index, _)| *index).collect();
    assert_eq!(indexes, (0..indexes.len() as u64).collect::<Vec<_>>());
    let got: Vec<String> = kept.into_iter().chain(rest).map(|(_, line)| line).collect();
    assert_eq!(got, file_lines(Path::new(&session.log)));
    // The lines fold as `replay` folds the log.
    let replay = daemon.run(&["replay", &session.log]);
    assert!(replay.status.success(), "{replay:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_get_errors_and_the_daemon_goes_on() {
    let daemon = Daemon::start().await;
    let socket = daemon.socket();
    let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(read));
    macro_rules! exchange {
        ($bytes:expr) => {{
            tokio::io::AsyncWriteExt::write_all(&mut write, AsRef::<[u8]>::as_ref(&$bytes))
                .await
                .unwrap();
            let line = tokio::time::timeout(DEADLINE, lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            serde_json::from_str::<serde_json::Value>(&line).unwrap()
        }};
    }
    let not_json = exchange!(b"{not json\n");
    assert_eq!(not_json["error"]["code"], ErrorCode::ParseError.code());
    let not_request = exchange!(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":7}\n");
    assert_eq!(
        not_request["error"]["code"],
        ErrorCode::InvalidRequest.code()
    );
    assert_eq!(not_request["id"], 4);
    let mut huge = vec![b'x'; panewise_api::MAX_LINE_BYTES + 10];
    huge.push(b'\n');
    let too_long = exchange!(huge);
    assert_eq!(too_long["error"]["code"], ErrorCode::LineTooLong.code());
    let fine =
        exchange!(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"session/list\",\"params\":{}}\n");
    assert_eq!(fine["id"], 9);
    assert!(fine["result"]["sessions"].is_array(), "{fine}");
    // Every id comes back as its exact text: past 2^64, negative, fractional, a string; for
    // an answer and for a refusal alike.
    for id in ["18446744073709551616", "-3", "0.5", "\"tab-2\""] {
        for params in ["{}", "7"] {
            let line = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"session/list\",\"params\":{params}}}\n"
            );
            tokio::io::AsyncWriteExt::write_all(&mut write, line.as_bytes())
                .await
                .unwrap();
            let answer = tokio::time::timeout(DEADLINE, lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            assert!(
                answer.contains(&format!("\"id\":{id},")),
                "{id} with params {params} answered as {answer}"
            );
        }
    }
    // Another client is served as before.
    let other = daemon.connect("other").await;
    let _: ListResult = other.call(Method::List, ListParams {}).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_mock_agents_one_waiting_for_approval_through_the_commands() {
    let daemon = Daemon::start_with(Some(
        "[notify]\ncommand = \"cat >> '{dir}/events.jsonl'\"\ndesktop = false\n",
    ))
    .await;
    let mut ids = Vec::new();
    for (name, approval) in [
        ("one", "full-access"),
        ("two", "ask"),
        ("three", "full-access"),
    ] {
        let out = daemon.run(&[
            "new",
            "--name",
            name,
            "--approval",
            approval,
            "run the tool",
        ]);
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        ids.push(stdout.lines().last().unwrap().to_owned());
    }
    let watcher = daemon.connect("watcher").await;
    until_state(&watcher, &ids[1], |s| s.state == AgentState::NeedsInput).await;
    let listed = daemon.run(&["agents", "--json"]);
    assert!(listed.status.success(), "{listed:?}");
    let entries: Vec<serde_json::Value> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0]["name"], "two", "needs_input first");
    assert_eq!(entries[0]["state"], "needs_input");
    assert_eq!(entries[0]["waiting_for"]["tool"], "shell");
    assert_eq!(entries[0]["waiting_for"]["argument"], "echo hello");
    for entry in &entries {
        assert_eq!(entry["v"], 1);
        for field in [
            "id",
            "name",
            "provider",
            "cwd",
            "state",
            "waiting_for",
            "tool",
            "context_pct",
            "tokens",
            "cost_usd",
            "cost_source",
            "log",
            "started_at_ms",
        ] {
            assert!(entry.get(field).is_some(), "{field} in {entry}");
        }
    }
    // Waiting for a state the session is not in, under a timeout: the timeout's own code.
    let timed_out = daemon.run(&["wait", "two", "--until", "done", "--timeout", "300ms"]);
    assert_eq!(timed_out.status.code(), Some(9), "{timed_out:?}");
    // The state waited for, already reached: 0, so `wait --until S && next` runs next.
    let asking = daemon.run(&["wait", "two", "--until", "needs-input"]);
    assert_eq!(asking.status.code(), Some(0), "{asking:?}");
    assert_eq!(
        String::from_utf8_lossy(&asking.stdout).trim(),
        "needs_input"
    );
    // A request that is not the one waiting is refused, and nothing is answered.
    let other = daemon.run(&["approve", "two", "--request", "no-such-request"]);
    assert_eq!(other.status.code(), Some(1), "{other:?}");
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("has no approval request no-such-request"),
        "{other:?}"
    );
    // The one waiting is answered, and the command says which.
    let approved = daemon.run(&["approve", "two"]);
    assert!(approved.status.success(), "{approved:?}");
    let said = String::from_utf8_lossy(&approved.stdout);
    assert!(
        said.starts_with("allowed in two: shell echo hello (request "),
        "{said}"
    );
    let again = daemon.run(&["approve", "two"]);
    assert_eq!(again.status.code(), Some(1));
    let refused = String::from_utf8_lossy(&again.stderr);
    assert!(
        refused.contains("already answered (allowed) by panewise approve"),
        "{refused}"
    );
    let waited = daemon.run(&["wait", "two", "--until", "done"]);
    assert_eq!(waited.status.code(), Some(0), "{waited:?}");
    let idle = daemon.run(&["wait", "two", "--until", "idle"]);
    assert_eq!(idle.status.code(), Some(0), "{idle:?}");
    let plain = daemon.run(&["agents"]);
    let text = String::from_utf8(plain.stdout).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(!text.contains("needs_input"), "{text}");
    let usage = daemon.run(&["wait", "two", "--until", "never"]);
    assert_eq!(usage.status.code(), Some(2));
    // The notification command got one *needs input* and one *done* of the session that
    // asked, and one *done* of each other: edges only, never every update.
    let events_path = daemon.dir.path().join("events.jsonl");
    let until = Instant::now() + DEADLINE;
    let events = loop {
        let text = std::fs::read_to_string(&events_path).unwrap_or_default();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        if events.len() >= 4 {
            break events;
        }
        assert!(Instant::now() < until, "notifications so far: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let of = |name: &str| -> Vec<String> {
        events
            .iter()
            .filter(|event| event["session"]["name"] == name)
            .map(|event| event["event"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(of("two"), ["needs_input", "done"]);
    assert_eq!(of("one"), ["done"]);
    assert_eq!(of("three"), ["done"]);
    assert!(events.iter().all(|event| event["v"] == 1));
    // An edited `[notify]` applies to the next edge, with the same daemon.
    let dir = daemon.dir.path().display().to_string();
    std::fs::write(
        daemon.dir.path().join("config/panewise/panewise.toml"),
        format!("[notify]\ncommand = \"cat >> '{dir}/edited.jsonl'\"\ndesktop = false\n"),
    )
    .unwrap();
    let four = daemon.run(&["new", "--name", "four", "say hello"]);
    assert!(four.status.success(), "{four:?}");
    let edited_path = daemon.dir.path().join("edited.jsonl");
    let until = Instant::now() + DEADLINE;
    loop {
        let text = std::fs::read_to_string(&edited_path).unwrap_or_default();
        if text.contains("\"four\"") {
            break;
        }
        assert!(Instant::now() < until, "the edited command got: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let old = std::fs::read_to_string(&events_path).unwrap();
    assert!(
        !old.contains("\"four\""),
        "the old command still ran: {old}"
    );
}

/// SIGTERM and `panewise daemon stop` end the daemon alike: every session stopped, its log
/// closed; `daemon stop` returns only once the daemon has exited, and says when none runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_or_daemon_stop_stops_every_session_and_their_logs_replay() {
    for by_command in [false, true] {
        stop_every_session(by_command).await;
    }
}

async fn stop_every_session(by_command: bool) {
    let mut daemon = Daemon::start().await;
    let client = daemon.connect("term").await;
    let asking = create(&client, mock("asking", "ask", "run the tool")).await;
    let idle = create(&client, mock("idle", "full-access", "say hello")).await;
    until_state(&client, &asking.id, |s| s.state == AgentState::NeedsInput).await;
    until_state(&client, &idle.id, |s| s.state == AgentState::Done).await;
    if by_command {
        let stop = tokio::task::block_in_place(|| daemon.run(&["daemon", "stop"]));
        let said = String::from_utf8_lossy(&stop.stderr).into_owned();
        assert!(stop.status.success(), "{stop:?}");
        assert!(said.contains("stopping (2 running sessions)"), "{said}");
        assert!(said.contains("panewise daemon: stopped"), "{said}");
        // It returned once the daemon let its lock go: every log is closed by then.
        assert_closed(&daemon, &[&asking, &idle]);
        let again = tokio::task::block_in_place(|| daemon.run(&["daemon", "stop"]));
        assert!(again.status.success(), "{again:?}");
        assert!(
            String::from_utf8_lossy(&again.stderr).contains("none is running"),
            "{again:?}"
        );
    } else {
        kill(daemon.pid(), Signal::SIGTERM).unwrap();
    }
    let (status, stderr) = daemon.exited().await;
    assert!(status.success(), "{status:?}: {stderr}");
    assert_closed(&daemon, &[&asking, &idle]);
    // The mock's fresh directories held nothing: the stop leaves none behind.
    for session in [&asking, &idle] {
        assert!(
            !Path::new(&session.cwd).exists(),
            "{} was left by the daemon's stop",
            session.cwd
        );
    }
}

/// Each session's log replays and was closed as `stop` closes it.
fn assert_closed(daemon: &Daemon, sessions: &[&SessionSummary]) {
    for session in sessions {
        let replay = daemon.run(&["replay", &session.log]);
        assert!(replay.status.success(), "{replay:?}");
        // Closed as `stop` closes it: the last line but the transcript's is the checkpoint.
        let lines = file_lines(Path::new(&session.log));
        let last = lines
            .iter()
            .rfind(|line| !line.contains("\"transcript\""))
            .unwrap();
        assert!(
            last.contains("\"checkpoint\""),
            "closed by its checkpoint: {last}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_socket_is_replaced_and_a_second_daemon_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run/panewise");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    // A socket nobody listens on, as a daemon killed with SIGKILL leaves it.
    drop(std::os::unix::net::UnixListener::bind(run.join("daemon.sock")).unwrap());
    let mut daemon = Daemon { dir, child: None };
    for sub in ["data", "home", "config", "work"] {
        std::fs::create_dir_all(daemon.dir.path().join(sub)).unwrap();
    }
    daemon.spawn();
    let client = daemon.connect("after-stale").await;
    let _: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
    let mode = std::fs::metadata(daemon.socket()).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    let second = daemon.run(&["daemon"]);
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    assert!(String::from_utf8_lossy(&second.stderr).contains("already running"));
    // The first is unharmed.
    let _: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_mid_tool_leaves_no_process_and_its_logs_replay() {
    use crate::run_signals::{eventually, processes_in};
    let server = crate::start(panewise_mock_server::Scenario::SleepingTool).await;
    let mut daemon = Daemon::start().await;
    let work = std::fs::canonicalize(daemon.dir.path().join("work")).unwrap();
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::fs::write(
        work.join("panewise.toml"),
        format!("[providers.mock]\nbase_url = \"{}\"\n", server.base_url()),
    )
    .unwrap();
    let client = daemon.connect("kill").await;
    let session = create(
        &client,
        CreateParams {
            cwd: Some(work.display().to_string()),
            ..mock("sleeper", "full-access", "run the tool")
        },
    )
    .await;
    assert!(
        eventually(|| processes_in(&work).iter().any(|(_, name)| name == "sleep")).await,
        "the tool's sleep never started"
    );
    kill(daemon.pid(), Signal::SIGKILL).unwrap();
    let (status, _) = daemon.exited().await;
    assert!(!status.success());
    assert!(
        eventually(|| processes_in(&work).is_empty()).await,
        "still running after the daemon: {:?}",
        processes_in(&work)
    );
    let replay = daemon.run(&["replay", &session.log]);
    assert!(replay.status.success(), "{replay:?}");
    // The next command finds the stale socket, starts a new daemon, and it answers.
    let listed = daemon.run(&["agents", "--json"]);
    assert!(listed.status.success(), "{listed:?}");
    // That daemon was started on demand, detached: stop it.
    let client = daemon.connect("stop").await;
    let _: Ack = client.call(Method::Shutdown, Empty {}).await.unwrap();
}

/// `interrupt` ends the turn and leaves the session open (`interrupted`); `stop` ends the
/// session (`stopped`). `rm` refuses a working session, and stops and removes a settled one in
/// one call; the log stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_and_stopped_differ_and_rm_takes_a_settled_session() {
    let daemon = Daemon::start().await;
    let client = daemon.connect("lifecycle").await;
    let sleeper = create(
        &client,
        CreateParams {
            mock_scenario: Some("sleeping-tool".into()),
            ..mock("sleeper", "full-access", "run the slow tool")
        },
    )
    .await;
    until_state(&client, &sleeper.id, |s| s.state == AgentState::Working).await;
    let remove = |name: &str| SessionParams {
        session: name.into(),
    };
    let refused = client
        .call::<_, RemoveResult>(Method::Remove, remove("sleeper"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::SessionRunning));
    assert!(refused.to_string().contains("is working"), "{refused}");
    let _: Ack = client
        .call(Method::Interrupt, remove("sleeper"))
        .await
        .unwrap();
    let interrupted =
        until_state(&client, &sleeper.id, |s| s.state == AgentState::Interrupted).await;
    assert_eq!(
        serde_json::to_value(&interrupted).unwrap()["state"],
        "interrupted"
    );
    let removed: RemoveResult = client
        .call(Method::Remove, remove("sleeper"))
        .await
        .unwrap();
    assert_eq!(removed.id, sleeper.id);
    let listed: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
    assert!(listed.sessions.iter().all(|s| s.id != sleeper.id));
    assert!(Path::new(&sleeper.log).exists(), "the log stays");

    // `HOST:ID` of a host panewise was not told of: the hint names `--remote`.
    let elsewhere = tokio::task::block_in_place(|| daemon.run(&["approve", "devbox:sleeper"]));
    let said = String::from_utf8_lossy(&elsewhere.stderr).into_owned();
    assert!(!elsewhere.status.success(), "{elsewhere:?}");
    assert!(said.contains("give `--remote devbox`"), "{said}");

    let closer = create(&client, mock("closer", "full-access", "say hello")).await;
    until_state(&client, &closer.id, |s| s.state == AgentState::Done).await;
    let _: Ack = client.call(Method::Stop, remove("closer")).await.unwrap();
    let stopped = until_state(&client, &closer.id, |s| s.state == AgentState::Stopped).await;
    assert_eq!(serde_json::to_value(&stopped).unwrap()["state"], "stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_session_is_removed_clean_and_kept_dirty() {
    let daemon = Daemon::start().await;
    let repo = std::fs::canonicalize(daemon.dir.path().join("work")).unwrap();
    let git_in = |dir: &Path, args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let git = |args: &[&str]| git_in(&repo, args);
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "start"]);
    let client = daemon.connect("worktrees").await;
    let mut summaries = Vec::new();
    let make = |name: &'static str| {
        create(
            &client,
            CreateParams {
                cwd: Some(repo.display().to_string()),
                worktree: true,
                ..mock(name, "full-access", "say hello")
            },
        )
    };
    for name in ["clean", "dirty", "committed"] {
        let session = make(name).await;
        let worktree = repo.join(".panewise/worktrees").join(name);
        assert_eq!(session.cwd, worktree.display().to_string());
        assert_eq!(session.worktree.as_deref(), Some(session.cwd.as_str()));
        until_state(&client, &session.id, |s| s.state == AgentState::Done).await;
        let _: Ack = client
            .call(
                Method::Stop,
                SessionParams {
                    session: name.into(),
                },
            )
            .await
            .unwrap();
        until_state(&client, &session.id, |s| s.state == AgentState::Stopped).await;
        summaries.push(session);
    }
    // The worktrees are excluded: `git add -A` in the repository stages none of them.
    assert_eq!(
        git(&["status", "--porcelain"]),
        "",
        "the repository sees .panewise/"
    );
    std::fs::write(repo.join(".panewise/worktrees/dirty/notes.txt"), "wip").unwrap();
    let committed = repo.join(".panewise/worktrees/committed");
    std::fs::write(committed.join("work.txt"), "done").unwrap();
    git_in(&committed, &["add", "work.txt"]);
    git_in(&committed, &["commit", "-q", "-m", "the session's work"]);
    // (name, worktree kept, branch kept, what the removal says)
    let cases = [
        ("clean", false, false, "and its branch panewise/clean"),
        ("dirty", true, true, "uncommitted changes"),
        (
            "committed",
            false,
            true,
            "kept its branch panewise/committed",
        ),
    ];
    for (name, worktree_kept, branch_kept, says) in cases {
        let removed: RemoveResult = client
            .call(
                Method::Remove,
                SessionParams {
                    session: name.into(),
                },
            )
            .await
            .unwrap();
        let said = removed.worktree.unwrap();
        assert!(said.contains(says), "{name}: {said}");
        assert_eq!(
            repo.join(".panewise/worktrees").join(name).exists(),
            worktree_kept,
            "{said}"
        );
        let branches = git(&["branch", "--list", &format!("panewise/{name}")]);
        assert_eq!(
            !branches.trim().is_empty(),
            branch_kept,
            "{name}: {branches}"
        );
    }
    assert!(summaries.iter().all(|s| Path::new(&s.log).exists()));
    // A removed session's name makes a new worktree; one whose branch holds work is refused
    // with the remedy, never with raw git output.
    let again = make("clean").await;
    assert_eq!(
        again.worktree.as_deref(),
        Some(
            repo.join(".panewise/worktrees/clean")
                .display()
                .to_string()
                .as_str()
        )
    );
    let refused = client
        .call::<_, CreateResult>(
            Method::Create,
            CreateParams {
                cwd: Some(repo.display().to_string()),
                worktree: true,
                ..mock("committed", "full-access", "say hello")
            },
        )
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("git branch -D panewise/committed"),
        "{refused}"
    );
    // Unnamed, the worktree follows the name the session is listed by.
    let unnamed = create(
        &client,
        CreateParams {
            cwd: Some(repo.display().to_string()),
            worktree: true,
            name: None,
            ..mock("ignored", "full-access", "say hello")
        },
    )
    .await;
    assert_eq!(
        unnamed.worktree.as_deref(),
        Some(
            repo.join(".panewise/worktrees")
                .join(&unnamed.name)
                .display()
                .to_string()
                .as_str()
        ),
        "{unnamed:?}"
    );
    // The daemon's stop leaves the worktree for `resume`, and says where it is.
    let stop = tokio::task::block_in_place(|| daemon.run(&["daemon", "stop"]));
    let said = String::from_utf8_lossy(&stop.stderr).into_owned();
    assert!(stop.status.success(), "{stop:?}");
    let left = repo.join(".panewise/worktrees/clean");
    assert!(
        said.contains("these worktrees stay")
            && said.contains(&format!("{} (clean)", left.display())),
        "{said}"
    );
    assert!(left.exists());
}

/// `panewise attach` on a terminal (tmux) is `run`'s screen over the API: the transcript so
/// far, the waiting question as the prompt, `y` answering it, a follow-up prompt, and Ctrl-D
/// detaching with the session left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_on_a_terminal_asks_answers_and_detaches() {
    let daemon = Daemon::start().await;
    let out = daemon.run(&[
        "new",
        "--name",
        "asker",
        "--approval",
        "ask",
        "run the tool",
    ]);
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    let watcher = daemon.connect("watcher").await;
    until_state(&watcher, &id, |s| s.state == AgentState::NeedsInput).await;
    let exit_file = daemon.dir.path().join("attach-exit");
    let script = daemon.dir.path().join("attach.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{work}'\nexport XDG_RUNTIME_DIR='{dir}/run' XDG_DATA_HOME='{dir}/data' \
             XDG_CONFIG_HOME='{dir}/config' HOME='{dir}/home'\nunset PANEWISE_LOG\n\
             '{panewise}' attach asker\necho $? > '{exit}'\n",
            work = daemon.dir.path().join("work").display(),
            dir = daemon.dir.path().display(),
            panewise = env!("CARGO_BIN_EXE_panewise"),
            exit = exit_file.display(),
        ),
    )
    .unwrap();
    let terminal = Terminal::start(&script, "attach");
    // The conversation so far fills the screen above the question — on it, not pushed into the
    // scrollback. It is printed at the editor's next poll, which can come after the question's
    // repaint, so it is waited for.
    let conversation = [
        "prompt     run the tool",
        "thinking   The user wants this done; I'll use the shell tool.",
        "assistant  I'll run the command.",
        "tool       shell [",
        "asks       shell [",
        "allow shell echo hello? [y]es / [n]o / [a]lways this session >",
    ];
    terminal.wait_until(
        "the conversation, then the question as the last line",
        Terminal::visible,
        |screen| shows_in_order(screen, &conversation),
    );
    terminal.wait_until(
        "a title saying asker needs input",
        Terminal::title,
        |title| title.contains("asker") && title.contains("needs input"),
    );
    terminal.line("y");
    terminal.wait_for("The command printed `hello`. Done.");
    terminal.wait_until(
        "a title for asker no longer saying needs input",
        Terminal::title,
        |title| title.contains("asker") && !title.contains("needs input"),
    );
    until_state(&watcher, &id, |s| s.turns == 1).await;
    terminal.line("and again");
    terminal.wait_for("prompt     and again");
    terminal.keys(&["C-d"]);
    let exit_code = tokio::task::block_in_place(|| terminal.wait_for_line(&exit_file));
    assert_eq!(exit_code, "0\n", "{}", terminal.screen());
    let listed: ListResult = watcher.call(Method::List, ListParams {}).await.unwrap();
    assert!(
        listed
            .sessions
            .iter()
            .any(|s| s.id == id && s.state != AgentState::Stopped && s.state != AgentState::Exited),
        "detaching left the session running: {:?}",
        listed.sessions
    );
}
