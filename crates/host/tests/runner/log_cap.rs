//! A supervised agent that floods its log past the session's cap: the session is stopped, the
//! log ends saying why within the closing room, and it still replays.

use panewise_host::agent::AgentExit;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::cli::{Channel, CliAgent, CliLaunch};
use panewise_host::backend::process::{Launcher, ScriptedSignal};
use panewise_host::backend::Backend;
use panewise_host::journal::session_log::CLOSING_ROOM_BYTES;
use panewise_host::session::handle::spawn;
use panewise_host::session::{log_header, Session, SessionSpec};
use panewise_pane_state::parse_log_bytes;
use panewise_providers::claude_control::ClaudeLaunch;

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","cwd":"/tmp","tools":["Bash"]}"#;

/// One of Claude Code's text deltas, as it writes them.
const DELTA: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Working "}},"session_id":"s1","parent_tool_use_id":null,"uuid":"7fb75f32-0225-4ed7-b67d-6cf9d46d722e"}"#;

#[tokio::test(start_paused = true)]
async fn a_log_that_reaches_its_cap_stops_the_session_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let log = cwd.join("session.jsonl");
    let cap = 2 * 1024 * 1024;
    let (launcher, mut spawned) = Launcher::scripted();
    let backend = CliAgent::new(CliLaunch {
        program: "claude".to_owned(),
        channel: Channel::Claude(ClaudeLaunch::default()),
        cwd: cwd.clone(),
        env: Vec::new(),
        env_remove: Vec::new(),
        resume: None,
        capture: None,
        launcher,
        startup_limit: std::time::Duration::from_secs(600),
    })
    .unwrap();
    let spec = SessionSpec {
        prompts: vec!["go".to_owned()],
        approval: ApprovalMode::ReadOnly,
        log_cap: cap,
        ..SessionSpec::new(
            log_header("claude-code", None, &cwd, None),
            log.clone(),
            cwd.clone(),
        )
    };
    let (session, mut handle) = Session::new(spec, Backend::Cli(Box::new(backend))).unwrap();
    let task = spawn(session);
    let mut process = spawned.recv().await.unwrap();
    process
        .stdout
        .send(format!("{INIT}\n").into_bytes())
        .await
        .unwrap();
    let chunk = format!("{DELTA}\n").repeat(64).into_bytes();
    // Floods until the session kills it; a session that never stopped would flood forever.
    let mut sent = 0_u64;
    // The session may drop the agent's stdout before its kill is seen here: the flood stops
    // then, and the kill is still awaited.
    let mut reading = true;
    loop {
        tokio::select! {
            // What the session writes (the handshake, the prompt, its interrupt) is read, as
            // the agent would.
            Some(_line) = process.stdin.recv() => {}
            Some(_update) = handle.next_update() => {}
            signal = process.signals.recv() => {
                assert_eq!(signal, Some(ScriptedSignal::Kill));
                break;
            }
            written = process.stdout.send(chunk.clone()), if reading => {
                if written.is_err() {
                    reading = false;
                    continue;
                }
                sent += chunk.len() as u64;
                assert!(sent < 64 * cap, "the session was not stopped at its cap");
            }
        }
    }
    drop(process.stdout);
    drop(handle);
    let _ = process.exit.send(AgentExit {
        code: None,
        signal: Some(9),
    });
    let error = task.await.unwrap().err().map(|error| error.to_string());
    let error = error.unwrap_or_default();
    assert!(
        error.contains("it reached its cap of 2 MiB (`[limits] log_max_mib` in panewise.toml)"),
        "{error}"
    );
    let bytes = std::fs::read(&log).unwrap();
    let size = bytes.len() as u64;
    assert!(
        size > cap && size <= cap + CLOSING_ROOM_BYTES,
        "{size} bytes"
    );
    let last = bytes
        .split(|byte| *byte == b'\n')
        .rfind(|line| !line.is_empty())
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .unwrap_or_default();
    assert!(
        last.contains("session_ended") && last.contains("reached its cap"),
        "{last}"
    );
    let read = parse_log_bytes(&bytes);
    assert!(read.is_ok(), "the capped log does not replay");
}
