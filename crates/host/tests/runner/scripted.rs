//! The session engine driven through its handle by scripted in-memory backends under paused
//! time, for both kinds of session: a prompt, a tool, an approval asked and answered through
//! the handle, an interrupt, a stop, a deadline. Nothing here starts a process or a server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use panewise_host::agent::AgentExit;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::cli::{Channel, CliAgent, CliLaunch};
use panewise_host::backend::model::{LoopConfig, ModelAgent};
use panewise_host::backend::process::{Launcher, ScriptedSignal, ScriptedSpawn};
use panewise_host::backend::scripted::{ScriptStep, ScriptedModelClient};
use panewise_host::backend::Backend;
use panewise_host::session::handle::spawn;
use panewise_host::session::{
    log_header, Actor, Control, Session, SessionHandle, SessionSpec, Update,
};
use panewise_pane_state::{parse_log_bytes, Msg, State, TurnOutcome, TurnPhase};
use panewise_providers::claude_control::ClaudeLaunch;
use panewise_providers::{ProviderEvent, SessionStats};
use panewise_window::StrategyConfig;

struct Scratch {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    log: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let log = cwd.join("session.jsonl");
    Scratch {
        _dir: dir,
        cwd,
        log,
    }
}

fn spec(scratch: &Scratch, agent: &str, prompts: &[&str], approval: ApprovalMode) -> SessionSpec {
    SessionSpec {
        prompts: prompts.iter().map(|prompt| (*prompt).to_owned()).collect(),
        approval,
        can_ask: true,
        ..SessionSpec::new(
            log_header(agent, None, &scratch.cwd, None),
            scratch.log.clone(),
            scratch.cwd.clone(),
        )
    }
}

fn model_session(
    scratch: &Scratch,
    prompts: &[&str],
    approval: ApprovalMode,
    scripts: Vec<Vec<ScriptStep>>,
) -> (Session, SessionHandle, ScriptedModelClient) {
    let client = ScriptedModelClient::new(scripts);
    let strategy =
        StrategyConfig::from_json(r#"{"strategy":"token-budget","thresholdTokens":150000}"#)
            .unwrap();
    let mut config = LoopConfig::new(
        "mock",
        "scripted-model",
        scratch.cwd.clone(),
        strategy,
        scratch.log.clone(),
    );
    config.approval = approval;
    let backend = ModelAgent::new(config, Arc::new(client.clone())).unwrap();
    let (session, handle) = Session::new(
        spec(scratch, "mock", prompts, approval),
        Backend::Model(Box::new(backend)),
    )
    .unwrap();
    (session, handle, client)
}

fn call_ended() -> ScriptStep {
    ScriptStep::Event(ProviderEvent::CallEnded {
        model: Some("scripted-model".to_owned()),
        stop_reason: Some("end_turn".to_owned()),
        stats: SessionStats {
            input_tokens: Some(100),
            output_tokens: Some(10),
            ..SessionStats::default()
        },
    })
}

fn text(text: &str) -> ScriptStep {
    ScriptStep::Event(ProviderEvent::TextDelta {
        text: text.to_owned(),
    })
}

fn tool_call(name: &str, arguments: &str) -> ScriptStep {
    ScriptStep::Event(ProviderEvent::ToolCallRequested {
        call_id: "call_1".to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    })
}

/// Reads updates until one matches; the session must not end first.
async fn until(handle: &mut SessionHandle, matches: impl Fn(&Update) -> bool) -> Update {
    loop {
        match handle.next_update().await {
            Some(update) if matches(&update) => return update,
            Some(_) => {}
            None => panic!("the session ended before the update came"),
        }
    }
}

fn assert_replays(log: &Path, state: &State) {
    let bytes = std::fs::read(log).unwrap();
    let folded = parse_log_bytes(&bytes).unwrap().fold_checked().unwrap();
    assert_eq!(&folded, state);
}

fn outcome_of(state: &State) -> Option<TurnOutcome> {
    match state.turn_phase {
        TurnPhase::Done { outcome, .. } => Some(outcome),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn model_a_prompt_is_answered_and_every_recorded_message_reaches_the_handle() {
    let scratch = scratch();
    let (session, mut handle, client) = model_session(
        &scratch,
        &["say hello"],
        ApprovalMode::Ask,
        vec![vec![
            ScriptStep::Event(ProviderEvent::RequestStarted),
            text("hello"),
            call_ended(),
        ]],
    );
    let task = spawn(session);
    let mut recorded = 0usize;
    let mut answer = String::new();
    while let Some(update) = handle.next_update().await {
        match update {
            Update::Recorded { .. } => recorded += 1,
            Update::Agent(ProviderEvent::TextDelta { text }) => answer.push_str(&text),
            _ => {}
        }
    }
    let outcome = task.await.unwrap().unwrap();
    assert_eq!(answer, "hello");
    assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Completed));
    assert_eq!(client.requests(), vec![1]);
    let log = parse_log_bytes(&std::fs::read(&scratch.log).unwrap()).unwrap();
    assert_eq!(
        log.entries.len(),
        recorded,
        "every recorded message was sent as an update"
    );
    assert_replays(&scratch.log, &outcome.state);
}

#[tokio::test(start_paused = true)]
async fn model_an_approval_is_asked_through_the_handle_and_the_answer_runs_the_tool() {
    for approved in [true, false] {
        let scratch = scratch();
        let (session, mut handle, client) = model_session(
            &scratch,
            &["write the file"],
            ApprovalMode::Ask,
            vec![
                vec![
                    tool_call("write_file", r#"{"path":"out.txt","content":"hi\n"}"#),
                    call_ended(),
                ],
                vec![text("done"), call_ended()],
            ],
        );
        let task = spawn(session);
        let Update::Ask {
            id, tool, summary, ..
        } = until(&mut handle, |update| matches!(update, Update::Ask { .. })).await
        else {
            unreachable!()
        };
        assert_eq!(
            (tool.as_str(), summary.contains("out.txt")),
            ("write_file", true)
        );
        // An answer naming another request is refused; the question still waits.
        assert_eq!(
            handle.controls().answer("other".to_owned(), true, person()),
            Ok(())
        );
        until(&mut handle, |update| {
            matches!(update, Update::Notice(text) if text.contains("that answer to request other was refused: no request with that id waits"))
        })
        .await;
        assert_eq!(handle.controls().answer(id, approved, person()), Ok(()));
        let outcome = task.await.unwrap().unwrap();
        assert_eq!(scratch.cwd.join("out.txt").exists(), approved);
        assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Completed));
        // The second call carried the prompt, the call and its result (or refusal).
        assert_eq!(client.requests(), vec![1, 3]);
        assert_replays(&scratch.log, &outcome.state);
    }
}

fn person() -> Actor {
    Actor::Api {
        client: Some("test".to_owned()),
    }
}

#[tokio::test(start_paused = true)]
async fn model_an_interrupt_ends_a_hanging_call_stopped_and_a_stop_ends_the_session() {
    let scratch = scratch();
    let (session, mut handle, _client) = model_session(
        &scratch,
        &["think forever"],
        ApprovalMode::Ask,
        vec![
            vec![
                ScriptStep::Event(ProviderEvent::RequestStarted),
                text("thinking"),
                ScriptStep::Hang,
            ],
            vec![
                ScriptStep::Event(ProviderEvent::RequestStarted),
                ScriptStep::Hang,
            ],
        ],
    );
    // The session stays open for more prompts, so only a stop ends it.
    let task = spawn(session);
    until(&mut handle, |update| {
        matches!(update, Update::Agent(ProviderEvent::TextDelta { .. }))
    })
    .await;
    assert_eq!(handle.controls().interrupt(), Ok(()));
    until(&mut handle, |update| {
        matches!(
            update,
            Update::Recorded {
                msg: panewise_pane_state::Msg::TurnEnd { .. },
                ..
            }
        )
    })
    .await;
    let outcome = task.await.unwrap().unwrap();
    assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Stopped));
    assert_replays(&scratch.log, &outcome.state);
}

#[tokio::test(start_paused = true)]
async fn model_a_stop_ends_an_open_session_mid_call_with_its_log_closed() {
    let scratch = scratch();
    let client = ScriptedModelClient::new(vec![vec![
        ScriptStep::Event(ProviderEvent::RequestStarted),
        text("working"),
        ScriptStep::Hang,
    ]]);
    let strategy =
        StrategyConfig::from_json(r#"{"strategy":"token-budget","thresholdTokens":150000}"#)
            .unwrap();
    let config = LoopConfig::new(
        "mock",
        "m",
        scratch.cwd.clone(),
        strategy,
        scratch.log.clone(),
    );
    let backend = ModelAgent::new(config, Arc::new(client)).unwrap();
    let spec = SessionSpec {
        stay_open: true,
        ..spec(&scratch, "mock", &["go"], ApprovalMode::Ask)
    };
    let (session, mut handle) = Session::new(spec, Backend::Model(Box::new(backend))).unwrap();
    let task = spawn(session);
    until(&mut handle, |update| {
        matches!(update, Update::Agent(ProviderEvent::TextDelta { .. }))
    })
    .await;
    assert_eq!(handle.controls().stop(), Ok(()));
    // A prompt after the stop is not sent.
    assert_eq!(handle.controls().prompt("one more"), Ok(()));
    let outcome = task.await.unwrap().unwrap();
    assert!(!outcome.state.turn_phase.is_working());
    assert_eq!(outcome.state.turns_completed, 0);
    assert_replays(&scratch.log, &outcome.state);
    let text = std::fs::read_to_string(&scratch.log).unwrap();
    assert!(
        !text.contains("one more"),
        "the prompt sent after the stop was recorded"
    );
}

#[tokio::test(start_paused = true)]
async fn model_a_call_that_never_answers_is_ended_by_the_submit_deadline() {
    let scratch = scratch();
    let (session, _handle, _client) = model_session(
        &scratch,
        &["hello?"],
        ApprovalMode::Ask,
        vec![vec![ScriptStep::Hang]],
    );
    let outcome = spawn(session).await.unwrap().unwrap();
    assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Errored));
    assert_replays(&scratch.log, &outcome.state);
}

/// A Claude Code session over a scripted process (with a start-up limit past the submit
/// deadline, so that deadline's path is the one tested).
fn claude_session(
    scratch: &Scratch,
    approval: ApprovalMode,
) -> (
    Session,
    SessionHandle,
    tokio::sync::mpsc::Receiver<ScriptedSpawn>,
) {
    claude_session_within(scratch, approval, std::time::Duration::from_secs(600))
}

/// A Claude Code session over a scripted process that must write its first line within
/// `startup_limit`.
fn claude_session_within(
    scratch: &Scratch,
    approval: ApprovalMode,
    startup_limit: std::time::Duration,
) -> (
    Session,
    SessionHandle,
    tokio::sync::mpsc::Receiver<ScriptedSpawn>,
) {
    let (launcher, spawned) = Launcher::scripted();
    let backend = CliAgent::new(CliLaunch {
        program: "claude".to_owned(),
        channel: Channel::Claude(ClaudeLaunch::default()),
        cwd: scratch.cwd.clone(),
        env: Vec::new(),
        env_remove: Vec::new(),
        resume: None,
        capture: None,
        launcher,
        startup_limit,
    })
    .unwrap();
    let (session, handle) = Session::new(
        spec(scratch, "claude-code", &["create the file"], approval),
        Backend::Cli(Box::new(backend)),
    )
    .unwrap();
    (session, handle, spawned)
}

/// The Claude Code process the session started, once it was sent the control session's
/// `initialize` and the prompt.
async fn started(spawned: &mut tokio::sync::mpsc::Receiver<ScriptedSpawn>) -> ScriptedSpawn {
    let mut process = spawned.recv().await.unwrap();
    let initialize = process.stdin.recv().await.unwrap();
    assert!(initialize.contains("\"initialize\""), "{initialize}");
    let prompt = process.stdin.recv().await.unwrap();
    assert!(prompt.contains("create the file"), "{prompt}");
    process
}

/// The real Claude Code capture of a write that asked for permission, line by line.
fn control_allow_lines() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../providers/tests/data/claude-code/control-allow.ndjson");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| format!("{line}\n"))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn cli_a_permission_request_is_asked_through_the_handle_and_answered_on_stdin() {
    for approved in [true, false] {
        let scratch = scratch();
        let (session, mut handle, mut spawned) = claude_session(&scratch, ApprovalMode::Ask);
        let task = spawn(session);
        let mut process = started(&mut spawned).await;
        let lines = control_allow_lines();
        // The initialize response, the turn, and the permission request.
        for line in &lines[..10] {
            process
                .stdout
                .send(line.clone().into_bytes())
                .await
                .unwrap();
        }
        let Update::Ask { id, tool, .. } =
            until(&mut handle, |update| matches!(update, Update::Ask { .. })).await
        else {
            unreachable!()
        };
        assert_eq!(tool, "Write");
        assert_eq!(
            handle.controls().answer(id.clone(), approved, person()),
            Ok(())
        );
        let answer = process.stdin.recv().await.unwrap();
        assert!(answer.contains(&id));
        assert_eq!(answer.contains("\"allow\""), approved, "{answer}");
        if !approved {
            assert!(answer.contains("\"denied by test\""), "{answer}");
        }
        for line in &lines[10..] {
            process
                .stdout
                .send(line.clone().into_bytes())
                .await
                .unwrap();
        }
        // The turn ended and nothing more can come: the session closes the CLI's stdin.
        assert_eq!(process.stdin.recv().await, None);
        drop(process.stdout);
        process
            .exit
            .send(AgentExit {
                code: Some(0),
                signal: None,
            })
            .unwrap();
        let outcome = task.await.unwrap().unwrap();
        assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Completed));
        assert_replays(&scratch.log, &outcome.state);
    }
}

#[tokio::test(start_paused = true)]
async fn cli_a_silent_agent_is_ended_by_the_submit_deadline_and_killed_after_the_grace() {
    let scratch = scratch();
    let (session, _handle, mut spawned) = claude_session(&scratch, ApprovalMode::ReadOnly);
    let task = spawn(session);
    let mut process = started(&mut spawned).await;
    // Not a word from the agent: the submit deadline ends the turn, nothing is left to send
    // so its stdin is closed, and when it still has not exited after the grace, it is killed.
    assert_eq!(process.stdin.recv().await, None);
    assert_eq!(process.signals.recv().await, Some(ScriptedSignal::Kill));
    drop(process.stdout);
    drop(process.exit);
    let outcome = task.await.unwrap().unwrap();
    assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Errored));
    assert_replays(&scratch.log, &outcome.state);
}

#[tokio::test(start_paused = true)]
async fn cli_an_agent_that_never_writes_a_line_ends_the_session_failed_with_the_reason() {
    let scratch = scratch();
    let limit = std::time::Duration::from_secs(5);
    let (session, _handle, mut spawned) =
        claude_session_within(&scratch, ApprovalMode::ReadOnly, limit);
    let started_at = tokio::time::Instant::now();
    let task = spawn(session);
    let mut process = started(&mut spawned).await;
    assert_eq!(process.signals.recv().await, Some(ScriptedSignal::Kill));
    assert_eq!(started_at.elapsed(), limit, "killed at its start-up limit");
    drop(process.stdout);
    drop(process.exit);
    let error = task.await.unwrap().err().map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some("`claude` started but wrote nothing in 5 s, so the session was stopped")
    );
}

#[tokio::test(start_paused = true)]
async fn cli_the_first_output_is_noted_once_and_lifts_the_start_up_limit() {
    let scratch = scratch();
    let limit = std::time::Duration::from_secs(5);
    let (session, mut handle, mut spawned) =
        claude_session_within(&scratch, ApprovalMode::ReadOnly, limit);
    let task = spawn(session);
    let mut process = started(&mut spawned).await;
    let lines = control_allow_lines();
    for line in &lines[..8] {
        process
            .stdout
            .send(line.clone().into_bytes())
            .await
            .unwrap();
    }
    until(&mut handle, |update| {
        matches!(update, Update::Agent(ProviderEvent::TextDelta { .. }))
    })
    .await;
    // Well past the limit with the turn still open: nothing kills it.
    tokio::time::sleep(limit * 3).await;
    assert!(process.signals.try_recv().is_err(), "killed after it spoke");
    assert_eq!(handle.controls().stop(), Ok(()));
    assert_eq!(process.signals.recv().await, Some(ScriptedSignal::Kill));
    drop(process.stdout);
    drop(process.exit);
    task.await.unwrap().unwrap();
    let log = std::fs::read_to_string(&scratch.log).unwrap();
    let notes = log
        .lines()
        .filter(|line| line.contains("\"agent_up\":true"))
        .count();
    assert_eq!(notes, 1, "{log}");
}

#[tokio::test(start_paused = true)]
async fn cli_a_stop_interrupts_then_kills_a_working_agent() {
    let scratch = scratch();
    let (session, mut handle, mut spawned) = claude_session(&scratch, ApprovalMode::ReadOnly);
    let task = spawn(session);
    let mut process = started(&mut spawned).await;
    let lines = control_allow_lines();
    for line in &lines[..8] {
        process
            .stdout
            .send(line.clone().into_bytes())
            .await
            .unwrap();
    }
    until(&mut handle, |update| {
        matches!(update, Update::Agent(ProviderEvent::TextDelta { .. }))
    })
    .await;
    assert_eq!(handle.controls().stop(), Ok(()));
    let interrupt = process.stdin.recv().await.unwrap();
    assert!(interrupt.contains("\"interrupt\""), "{interrupt}");
    assert_eq!(process.signals.recv().await, Some(ScriptedSignal::Kill));
    drop(process.stdout);
    drop(process.exit);
    let outcome = task.await.unwrap().unwrap();
    assert!(!outcome.state.turn_phase.is_working());
    assert_replays(&scratch.log, &outcome.state);
}

#[tokio::test(start_paused = true)]
async fn model_a_tool_allowed_for_the_session_is_not_asked_about_again() {
    let scratch = scratch();
    let write = |path: &str| {
        tool_call(
            "write_file",
            &format!(r#"{{"path":"{path}","content":"hi\n"}}"#),
        )
    };
    let (session, mut handle, _client) = model_session(
        &scratch,
        &["write two files"],
        ApprovalMode::Ask,
        vec![
            vec![write("one.txt"), call_ended()],
            vec![write("two.txt"), call_ended()],
            vec![text("done"), call_ended()],
        ],
    );
    let task = spawn(session);
    let Update::Ask { id, .. } =
        until(&mut handle, |update| matches!(update, Update::Ask { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(handle.controls().allow_for_session(id, person()), Ok(()));
    // The second request is answered by the allowance, as the one who gave it, and says so.
    let answered = until(&mut handle, |update| {
        matches!(update, Update::Answered { for_session: true, by, .. } if *by == person())
    })
    .await;
    assert!(
        matches!(&answered, Update::Answered { tool, approved: true, .. } if tool == "write_file"),
        "{answered:?}"
    );
    let outcome = task.await.unwrap().unwrap();
    assert!(scratch.cwd.join("one.txt").exists() && scratch.cwd.join("two.txt").exists());
    assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Completed));
    let log = std::fs::read_to_string(&scratch.log).unwrap();
    for kind in [
        "\"transcript\":{\"kind\":\"approval_answered\"",
        "\"type\":\"approval_answered\"",
    ] {
        assert_eq!(
            log.lines()
                .filter(|line| line.contains(kind) && line.contains("\"for_session\":true"))
                .count(),
            2,
            "both answers are recorded as for the session ({kind})"
        );
    }
    assert_replays(&scratch.log, &outcome.state);
}

/// A model session over `scripts` whose caps are `budget`, staying open for controls when
/// `stay_open`.
fn capped_session(
    scratch: &Scratch,
    budget: panewise_pane_state::BudgetCaps,
    stay_open: bool,
    scripts: Vec<Vec<ScriptStep>>,
) -> (Session, SessionHandle, ScriptedModelClient) {
    let client = ScriptedModelClient::new(scripts);
    let strategy =
        StrategyConfig::from_json(r#"{"strategy":"token-budget","thresholdTokens":150000}"#)
            .unwrap();
    let mut config = LoopConfig::new(
        "mock",
        "scripted-model",
        scratch.cwd.clone(),
        strategy,
        scratch.log.clone(),
    );
    config.approval = ApprovalMode::FullAccess;
    let backend = ModelAgent::new(config, Arc::new(client.clone())).unwrap();
    let spec = SessionSpec {
        budget: Some(budget),
        stay_open,
        ..spec(scratch, "mock", &["look around"], ApprovalMode::FullAccess)
    };
    let (session, handle) = Session::new(spec, Backend::Model(Box::new(backend))).unwrap();
    (session, handle, client)
}

fn tool_then_answer() -> Vec<Vec<ScriptStep>> {
    vec![
        vec![tool_call("list_dir", r#"{"path":"."}"#), call_ended()],
        vec![text("done"), call_ended()],
    ]
}

/// Rule R112, R113: past its token cap after the first call (110 tokens of 50; the scripted
/// model has no price, so its tokens are what counts), the session runs the tool that call
/// asked for and starts no second call, however long it waits; a raise through the handle
/// releases it, and only then is the second call made.
#[tokio::test(start_paused = true)]
async fn model_a_session_held_at_its_cap_makes_no_call_until_the_cap_is_raised() {
    let scratch = scratch();
    let caps = |max_tokens| panewise_pane_state::BudgetCaps {
        max_cost_usd: None,
        max_tokens: Some(max_tokens),
    };
    let (session, mut handle, client) =
        capped_session(&scratch, caps(50), true, tool_then_answer());
    let task = spawn(session);
    let held = until(&mut handle, |update| {
        matches!(
            update,
            Update::Recorded {
                msg: Msg::BudgetReached { .. },
                ..
            }
        )
    })
    .await;
    assert!(
        matches!(&held, Update::Recorded { msg: Msg::BudgetReached { reason }, .. } if reason == "budget reached: 110 tokens of 50"),
        "{held:?}"
    );
    until(&mut handle, |update| {
        matches!(
            update,
            Update::Recorded {
                msg: Msg::ToolEnd { .. },
                ..
            }
        )
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(600)).await;
    assert_eq!(client.requests(), vec![1], "no call while held");
    assert_eq!(
        handle.controls().send(Control::SetBudget(caps(1_000))),
        Ok(())
    );
    until(&mut handle, |update| {
        matches!(
            update,
            Update::Recorded {
                msg: Msg::BudgetReleased { .. },
                ..
            }
        )
    })
    .await;
    until(&mut handle, |update| {
        matches!(update, Update::Agent(ProviderEvent::TextDelta { text }) if text == "done")
    })
    .await;
    assert_eq!(handle.controls().end_of_input(), Ok(()));
    let outcome = task.await.unwrap().unwrap();
    assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Completed));
    assert_eq!(client.requests(), vec![1, 3]);
    assert_eq!(outcome.state.budget_hold, None);
    assert_replays(&scratch.log, &outcome.state);
}

/// Rule R112: a session nothing can raise (its prompts given, no more input) stops at the cap
/// rather than wait forever: its turn stopped, no second call made, its log closed.
#[tokio::test(start_paused = true)]
async fn model_a_session_nobody_can_raise_stops_at_its_cap() {
    let scratch = scratch();
    let caps = panewise_pane_state::BudgetCaps {
        max_cost_usd: None,
        max_tokens: Some(50),
    };
    let (session, _handle, client) = capped_session(&scratch, caps, false, tool_then_answer());
    let outcome = spawn(session).await.unwrap().unwrap();
    assert_eq!(client.requests(), vec![1]);
    assert_eq!(outcome_of(&outcome.state), Some(TurnOutcome::Stopped));
    assert!(outcome.state.budget_hold.is_some());
    assert_replays(&scratch.log, &outcome.state);
}
