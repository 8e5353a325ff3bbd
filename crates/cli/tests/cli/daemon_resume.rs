//! `session/resume` of panewise's own loop against real daemons: a mock session in `ask` mode
//! waits for an approval, its daemon is SIGKILLed, and `panewise resume ID PROMPT` (which
//! starts a new daemon) continues it from its log to done, the call that waited answered as
//! interrupted, in a new log that names the old one.

use std::path::Path;

use nix::sys::signal::{kill, Signal};
use panewise_api::{Ack, AgentState, Empty, ErrorCode, Method, ResumeParams};

use crate::daemon::{create, mock, until_state, Daemon};

fn header(log: &Path) -> panewise_pane_state::LogHeader {
    let bytes = std::fs::read(log).unwrap();
    panewise_pane_state::parse_log_bytes(&bytes)
        .unwrap()
        .header
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mock_session_waiting_for_approval_resumes_after_its_daemon_was_killed() {
    let mut daemon = Daemon::start().await;
    let client = daemon.connect("resume").await;
    let session = create(&client, mock("asker", "ask", "run the command")).await;
    let waiting = until_state(&client, &session.id, |s| s.state == AgentState::NeedsInput).await;
    assert!(waiting.waiting_for.is_some(), "{waiting:?}");
    kill(daemon.pid(), Signal::SIGKILL).unwrap();
    let (status, _) = daemon.exited().await;
    assert!(!status.success());
    drop(client);

    // A new daemon, started on demand by the command, continues it by its id.
    let resumed = daemon.run(&["resume", &session.id, "go on"]);
    assert!(resumed.status.success(), "{resumed:?}");
    let id = String::from_utf8_lossy(&resumed.stdout).trim().to_owned();
    assert!(!id.is_empty() && id != session.id, "{id}");
    let client = daemon.connect("after").await;
    let done = until_state(&client, &id, |s| s.state == AgentState::Done).await;
    assert_eq!(done.provider, "mock");
    assert_eq!(done.approval, "ask");

    // The new log names the old one and keeps its settings.
    let log = Path::new(&done.log);
    let new_header = header(log);
    let old_log = std::fs::canonicalize(&session.log).unwrap();
    assert_eq!(
        new_header.resumed_from.as_deref(),
        Some(old_log.to_str().unwrap())
    );
    let settings = new_header.own_loop.unwrap();
    assert_eq!(settings.approval.as_deref(), Some("ask"));
    assert_eq!(settings.mock_scenario.as_deref(), Some("tool-then-answer"));
    assert_eq!(new_header.cwd, header(Path::new(&session.log)).cwd);

    // The resumed conversation: the first prompt, the call that waited (answered as
    // interrupted), then the new prompt, and the model's answer to it.
    let ledger = panewise_host::agent_loop::ledger::read(
        &panewise_host::agent_loop::ledger::ledger_path(log),
    )
    .unwrap();
    let messages: Vec<serde_json::Value> = ledger.messages().cloned().collect();
    assert_eq!(messages.len(), 5, "{messages:#?}");
    assert_eq!(messages[0]["content"], "run the command");
    let call_id = messages[1]["tool_calls"][0]["id"].clone();
    assert_eq!(messages[2]["tool_call_id"], call_id);
    let result = messages[2]["content"].as_str().unwrap();
    assert!(result.contains("waited for approval"), "{result}");
    assert_eq!(messages[3]["content"], "go on");
    assert_eq!(messages[4]["role"], "assistant");

    // A log that is not there cannot be resumed, and says so.
    let missing = client
        .call::<_, panewise_api::CreateResult>(
            Method::Resume,
            ResumeParams {
                session: daemon.dir.path().join("nope.jsonl").display().to_string(),
                prompt: None,
                client: None,
            },
        )
        .await;
    assert_eq!(missing.unwrap_err().code(), Some(ErrorCode::CannotResume));

    // The resumed session kept the name its log recorded, though this daemon never saw it.
    assert_eq!(done.name, "asker");
    assert_eq!(new_header.name.as_deref(), Some("asker"));
    // Every form that names a session names it for `replay` too: the name (the newest
    // session of that name), a unique prefix of the id, the id.
    for key in ["asker", &id[..id.len() - 4], &id] {
        let replayed = daemon.run(&["replay", key]);
        assert!(replayed.status.success(), "{key}: {replayed:?}");
        let text = String::from_utf8_lossy(&replayed.stdout);
        assert!(text.contains("go on"), "{key}: {text}");
    }

    // Stopped, and resumed by its name while this daemon still lists it: the new session
    // takes the name, and the one it continues goes back to its default name.
    let stopped = daemon.run(&["stop", "asker"]);
    assert!(stopped.status.success(), "{stopped:?}");
    until_state(&client, &id, |s| s.state == AgentState::Stopped).await;
    let again = daemon.run(&["resume", "asker", "once more"]);
    assert!(again.status.success(), "{again:?}");
    let third = String::from_utf8_lossy(&again.stdout).trim().to_owned();
    let third_done = until_state(&client, &third, |s| s.state == AgentState::Done).await;
    assert_eq!(third_done.name, "asker");
    let second = until_state(&client, &id, |s| s.name != "asker").await;
    assert_eq!(second.name, panewise_api::default_session_name(&id));
    let _: Ack = client.call(Method::Shutdown, Empty {}).await.unwrap();
}
