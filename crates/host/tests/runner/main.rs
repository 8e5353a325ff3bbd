//! The runner against small fake agents (shell scripts standing in for a CLI): every fault a
//! supervised CLI can have ends in a clear, classified failure and a log that replays, never a
//! hang or a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

mod log_cap;
mod scripted;

use panewise_host::agent::AgentExit;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::cli::{Channel, CliAgent, CliLaunch};
use panewise_host::backend::{Backend, BackendOutcome};
use panewise_host::error::{AgentError, SessionError as RunnerError};
use panewise_host::session::lines::{drive, UserInput, View};
use panewise_host::session::{Session, SessionSpec};
use panewise_host::session_log::SessionLogFile;
use panewise_pane_state::{parse_log_bytes, FailureKind, State, TurnOutcome, TurnPhase};
use panewise_providers::claude_control::ClaudeLaunch;
use panewise_providers::ProviderEvent;

/// A view that records what it was told; it can pause tokio's clock once the agent has begun
/// its answer, so a hang is waited out in virtual time.
#[derive(Default)]
struct Recording {
    notices: Vec<String>,
    events: usize,
    pause_on_text: bool,
    /// Pause once the turn ended instead.
    pause_on_turn_end: bool,
}

impl View for Recording {
    fn agent_event(&mut self, event: &ProviderEvent) {
        self.events += 1;
        // Once the agent's answer began (not earlier: the submit deadline would then race the
        // agent's first line in virtual time), the wait is virtual.
        if self.pause_on_text && matches!(event, ProviderEvent::TextDelta { .. })
            || self.pause_on_turn_end && matches!(event, ProviderEvent::TurnEnded { .. })
        {
            self.pause_on_text = false;
            self.pause_on_turn_end = false;
            tokio::time::pause();
        }
    }
    fn state(&mut self, _state: &State) {}
    fn ask(&mut self, _question: &panewise_host::session::lines::Question) {}
    fn notice(&mut self, text: &str) {
        self.notices.push(text.to_owned());
    }
}

/// What one supervised session needs, as these tests give it.
struct SessionConfig {
    program: String,
    channel: Channel,
    cwd: PathBuf,
    prompts: Vec<String>,
    approval: ApprovalMode,
    log: PathBuf,
}

/// How a session ended, with its CLI's last exit.
#[derive(Debug)]
struct SessionOutcome {
    state: State,
    exit: Option<AgentExit>,
    stderr_tail: String,
}

fn log_header(config: &SessionConfig) -> panewise_pane_state::log::LogHeader {
    panewise_host::session::log_header(
        config.channel.provider().as_str(),
        config.channel.model(),
        &config.cwd,
        None,
    )
}

fn parts(config: SessionConfig, user: &UserInput) -> (SessionSpec, Backend) {
    let spec = SessionSpec {
        prompts: config.prompts.clone(),
        approval: config.approval,
        can_ask: user.ask,
        stay_open: user.prompts,
        ..SessionSpec::new(log_header(&config), config.log.clone(), config.cwd.clone())
    };
    let backend = CliAgent::new(CliLaunch {
        program: config.program,
        channel: config.channel,
        cwd: config.cwd,
        env: Vec::new(),
        env_remove: Vec::new(),
        resume: None,
        capture: None,
        launcher: Default::default(),
        startup_limit: std::time::Duration::from_secs(60),
    })
    .unwrap();
    (spec, Backend::Cli(Box::new(backend)))
}

fn outcome_of(outcome: panewise_host::session::SessionOutcome) -> SessionOutcome {
    let BackendOutcome::Cli(cli) = outcome.backend else {
        panic!("a CLI session ends with the CLI's outcome");
    };
    SessionOutcome {
        state: outcome.state,
        exit: cli.exit,
        stderr_tail: cli.stderr_tail,
    }
}

/// Runs one session to its end through the engine and the line front end.
async fn run_session(
    config: SessionConfig,
    user: UserInput,
    view: &mut dyn View,
) -> Result<SessionOutcome, RunnerError> {
    let (spec, backend) = parts(config, &user);
    let (session, handle) = Session::new(spec, backend)?;
    drive(session, handle, user, None, view)
        .await
        .map(outcome_of)
}

/// [`run_session`] recording into `log`.
async fn run_session_on(
    config: SessionConfig,
    log: SessionLogFile,
    user: UserInput,
    view: &mut dyn View,
) -> Result<SessionOutcome, RunnerError> {
    let (spec, backend) = parts(config, &user);
    let (session, handle) = Session::with_log(spec, backend, log);
    drive(session, handle, user, None, view)
        .await
        .map(outcome_of)
}

struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("panewise-runner-{name}-{}", std::process::id()));
        let _ignored = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok();
        Scratch { dir }
    }

    /// An executable script standing in for `claude`: it ignores its arguments.
    fn agent(&self, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.join("fake-claude");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).ok();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).ok();
        path.display().to_string()
    }

    fn config(&self, program: String) -> SessionConfig {
        SessionConfig {
            program,
            channel: Channel::Claude(ClaudeLaunch::default()),
            cwd: self.dir.clone(),
            prompts: vec!["do the work".to_owned()],
            approval: ApprovalMode::ReadOnly,
            log: self.dir.join("session.jsonl"),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ignored = std::fs::remove_dir_all(&self.dir);
    }
}

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","cwd":"/tmp","tools":["Bash"]}"#;
const TEXT: &str = r#"{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Working on it"}],"usage":{"input_tokens":10,"output_tokens":2}},"session_id":"s1","parent_tool_use_id":null}"#;

/// The recorded log replays to the state the session ended in.
fn assert_replays(log: &Path, outcome: &SessionOutcome) {
    let bytes = std::fs::read(log).unwrap_or_default();
    let parsed = parse_log_bytes(&bytes);
    let folded = parsed.as_ref().ok().map(|log| log.fold_checked());
    match folded {
        Some(Ok(state)) => assert_eq!(state, outcome.state),
        other => panic!("the log does not replay: {other:?}"),
    }
}

fn failure_kind(state: &State) -> Option<FailureKind> {
    state.failure.as_ref().map(|failure| failure.failure.kind)
}

#[tokio::test(flavor = "current_thread")]
async fn r99_a_cli_that_hangs_without_output_is_stopped_killed_and_fails_classified() {
    let scratch = Scratch::new("hang");
    // Reads the control request and the prompt, speaks once, then hangs, deaf to stdin and to
    // the interrupt; only the kill ends it.
    let program = scratch.agent(&format!(
        "trap '' INT\nread init\nread prompt\necho '{INIT}'\necho '{TEXT}'\nexec sleep 100000"
    ));
    let config = scratch.config(program);
    let log = config.log.clone();
    let mut view = Recording {
        pause_on_text: true,
        ..Recording::default()
    };
    let outcome = run_session(config, UserInput::default(), &mut view).await;
    let Ok(outcome) = outcome else {
        panic!("the session ends: {outcome:?}");
    };
    assert_eq!(
        failure_kind(&outcome.state),
        Some(FailureKind::StreamDisconnected)
    );
    assert!(matches!(
        outcome.state.turn_phase,
        TurnPhase::Done {
            outcome: TurnOutcome::Interrupted,
            ..
        }
    ));
    assert_eq!(outcome.exit.and_then(|exit| exit.signal), Some(9));
    assert!(view.notices.iter().any(|notice| notice.contains("killing")));
    assert_replays(&log, &outcome);
}

/// A disk that fills up after `room` bytes.
struct FullDisk {
    room: usize,
}

impl Write for FullDisk {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if bytes.len() > self.room {
            return Err(std::io::Error::from_raw_os_error(28));
        }
        self.room -= bytes.len();
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_full_disk_under_the_log_stops_the_session_with_a_clear_error_and_stops_the_agent() {
    let scratch = Scratch::new("full");
    let pid_file = scratch.dir.join("agent.pid");
    // Writes its pid, then talks without end.
    let program = scratch.agent(&format!(
        "echo $$ > {}\nread init\nread prompt\necho '{INIT}'\nwhile true; do echo '{TEXT}'; sleep 0.01; done",
        pid_file.display()
    ));
    let config = scratch.config(program);
    let header = log_header(&config);
    let log = SessionLogFile::with_writer(Box::new(FullDisk { room: 4_000 }), &header);
    let Ok(log) = log else {
        panic!("the header fits");
    };
    let result = run_session_on(config, log, UserInput::default(), &mut Recording::default()).await;
    let Err(error @ RunnerError::Log { .. }) = result else {
        panic!("a full disk stops the session: {result:?}");
    };
    let message = error.to_string();
    assert!(message.contains("session.jsonl"), "{message}");
    assert!(message.contains("No space left on device"), "{message}");
    assert!(message.contains("agent"), "{message}");
    // The agent's process group is gone (or a zombie) once the session returned.
    // SIGKILL was sent as the session returned; give the kernel a moment to deliver it.
    let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
    let mut stat = String::new();
    for _ in 0..200 {
        stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().chars().next());
        if matches!(state, None | Some(Some('Z' | 'X'))) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the agent still runs: {stat}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_cli_that_prints_garbage_and_exits_fails_as_process_exited_with_a_complete_log() {
    let scratch = Scratch::new("garbage");
    let program = scratch.agent(&format!(
        "read init\nread prompt\necho '{INIT}'\necho 'this is not json'\necho '{{\"type\": 3'\nexit 0"
    ));
    let config = scratch.config(program);
    let log = config.log.clone();
    let outcome = run_session(config, UserInput::default(), &mut Recording::default()).await;
    let Ok(outcome) = outcome else {
        panic!("the session ends: {outcome:?}");
    };
    assert_eq!(
        failure_kind(&outcome.state),
        Some(FailureKind::ProcessExited)
    );
    assert_replays(&log, &outcome);
}

#[tokio::test(flavor = "current_thread")]
async fn a_cli_that_exits_at_once_is_a_process_exit_with_its_code_and_stderr() {
    let scratch = Scratch::new("exit");
    let program = scratch.agent("echo 'no credentials' >&2\nexit 3");
    let config = scratch.config(program);
    let log = config.log.clone();
    let outcome = run_session(config, UserInput::default(), &mut Recording::default()).await;
    let Ok(outcome) = outcome else {
        panic!("the session ends: {outcome:?}");
    };
    assert_eq!(
        failure_kind(&outcome.state),
        Some(FailureKind::ProcessExited)
    );
    let message = outcome
        .state
        .failure
        .as_ref()
        .map(|failure| failure.failure.message.clone())
        .unwrap_or_default();
    assert!(message.contains("code 3"), "{message}");
    assert!(outcome.stderr_tail.contains("no credentials"));
    assert_replays(&log, &outcome);
}

#[tokio::test(flavor = "current_thread")]
async fn a_cli_that_is_not_installed_names_the_npm_package_to_install() {
    let scratch = Scratch::new("missing");
    let config = scratch.config("panewise-no-such-cli".to_owned());
    let result = run_session(config, UserInput::default(), &mut Recording::default()).await;
    let Err(RunnerError::Agent(error @ AgentError::NotInstalled { .. })) = result else {
        panic!("a missing CLI is named: {result:?}");
    };
    assert!(error
        .to_string()
        .contains("npm install -g @anthropic-ai/claude-code"));
}

#[tokio::test(flavor = "current_thread")]
async fn prompts_typed_while_a_turn_runs_wait_and_each_gets_its_own_turn_r94() {
    let scratch = Scratch::new("lines");
    // Answers each prompt with one text message and a result, as Claude Code does.
    let result = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s1","num_turns":1,"usage":{"input_tokens":10,"output_tokens":2}}"#;
    let program = scratch.agent(&format!(
        "read init\nwhile read prompt; do sleep 0.2; echo '{INIT}'; echo '{TEXT}'; echo '{result}'; done"
    ));
    let mut config = scratch.config(program);
    config.prompts.clear();
    let log = config.log.clone();
    let (lines, receiver) = panewise_host::session::lines::line_queue();
    for prompt in ["first", "second", "third"] {
        lines.try_send(prompt.to_owned()).ok();
    }
    drop(lines);
    let user = UserInput {
        lines: Some(receiver),
        prompts: true,
        ask: false,
    };
    let outcome = run_session(config, user, &mut Recording::default()).await;
    let Ok(outcome) = outcome else {
        panic!("the session ends: {outcome:?}");
    };
    assert_eq!(outcome.state.turns_completed, 3);
    assert!(outcome.state.failure.is_none());
    let written = std::fs::read_to_string(&log).unwrap_or_default();
    let queued = written.matches("\"prompt_submitted\"").count();
    assert_eq!(queued, 3);
    // Each turn was answered, none given up on.
    assert!(!written.contains("submit_timeout_elapsed"));
    assert_replays(&log, &outcome);
}

#[tokio::test(flavor = "current_thread")]
async fn r100_an_agent_that_does_not_exit_after_its_last_turn_is_killed_without_a_failure() {
    let scratch = Scratch::new("linger");
    let result = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s1","num_turns":1,"usage":{"input_tokens":10,"output_tokens":2}}"#;
    // Answers the prompt, then ignores the end of its input and lingers.
    let program = scratch.agent(&format!(
        "read init\nread prompt\necho '{INIT}'\necho '{TEXT}'\necho '{result}'\nexec sleep 100000"
    ));
    let config = scratch.config(program);
    let log = config.log.clone();
    let mut view = Recording {
        pause_on_turn_end: true,
        ..Recording::default()
    };
    let outcome = run_session(config, UserInput::default(), &mut view).await;
    let Ok(outcome) = outcome else {
        panic!("the session ends: {outcome:?}");
    };
    assert_eq!(outcome.state.turns_completed, 1);
    assert!(outcome.state.failure.is_none());
    assert_eq!(outcome.exit.and_then(|exit| exit.signal), Some(9));
    assert!(std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("agent_shutdown_overdue"));
    assert_replays(&log, &outcome);
}
