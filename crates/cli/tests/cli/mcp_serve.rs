//! `panewise mcp serve` driven over stdio by an MCP client (the official SDK, rmcp): the
//! tools listed, a mock agent started (an ordinary daemon session, listed by `panewise
//! agents`), waited for, its transcript read; an approval freer than `--approval` refused;
//! and a question of the agent answered through the server.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::ui_terminal::Home;

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &'static str,
    arguments: Value,
) -> (bool, String) {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(name).with_arguments(arguments))
        .await
        .unwrap();
    let text = result
        .content
        .iter()
        .filter_map(|block| match block {
            rmcp::model::ContentBlock::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (result.is_error == Some(true), text)
}

/// `panewise mcp serve --approval CAP` in `home`, connected.
async fn server(home: &Home, cap: &str) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_panewise"));
    command
        .args(["mcp", "serve", "--approval", cap])
        .current_dir(home.path("work"))
        .env("XDG_RUNTIME_DIR", home.path("run"))
        .env("XDG_DATA_HOME", home.path("data"))
        .env("XDG_CONFIG_HOME", home.path("config"))
        .env("HOME", home.path("home"))
        .env_remove("PANEWISE_LOG");
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

#[test]
fn an_mcp_client_starts_waits_for_reads_and_answers_a_mock_agent_through_mcp_serve() {
    let home = Home::new();
    // Its own runtime, ended before `home` stops the daemon (which makes a runtime of its own).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(drive(&home));
    drop(runtime);
    // It is an ordinary daemon session.
    assert!(
        home.agents().iter().any(|(name, _)| name == "delegate"),
        "{:?}",
        home.agents()
    );
}

async fn drive(home: &Home) {
    // Freer than the server's cap: refused, nothing started.
    let strict = server(home, "read-only").await;
    let (refused, why) = call(
        &strict,
        "start",
        json!({"prompt": "print hello", "approval": "ask"}),
    )
    .await;
    assert!(refused, "{why}");
    assert!(why.contains("freer than this server allows"), "{why}");
    strict.cancel().await.unwrap();
    // The agent's shell command runs without asking anyone only under full-access.
    let client = server(home, "full-access").await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "start",
            "list",
            "transcript",
            "send",
            "wait",
            "answer",
            "stop"
        ]
    );
    // A mock agent on a task: started, waited for, read.
    let (failed, started) = call(
        &client,
        "start",
        json!({"prompt": "print hello with the shell", "name": "delegate", "provider": "mock"}),
    )
    .await;
    assert!(!failed, "{started}");
    let started: Value = serde_json::from_str(&started).unwrap();
    assert_eq!(started["name"], "delegate");
    assert_eq!(
        started["approval"], "full-access",
        "no approval asked: the cap"
    );
    let (failed, waited) = call(
        &client,
        "wait",
        json!({"session": "delegate", "until": "idle", "timeout_secs": 60}),
    )
    .await;
    assert!(!failed, "{waited}");
    let waited: Value = serde_json::from_str(&waited).unwrap();
    assert!(
        ["done", "idle"].contains(&waited["state"].as_str().unwrap_or("")),
        "{waited}"
    );
    let (failed, transcript) = call(&client, "transcript", json!({"session": "delegate"})).await;
    assert!(!failed, "{transcript}");
    assert!(
        transcript.contains("The command printed `hello`. Done."),
        "{transcript}"
    );
    // A delegated agent that asks a question: answered through the server.
    let (failed, started) = call(
        &client,
        "start",
        json!({"prompt": "make a button", "name": "asker", "mock_scenario": "ask-user"}),
    )
    .await;
    assert!(!failed, "{started}");
    let (_, waited) = call(
        &client,
        "wait",
        json!({"session": "asker", "until": "needs_input", "timeout_secs": 60}),
    )
    .await;
    assert!(
        waited.contains("Which colour should the button be?"),
        "{waited}"
    );
    let (failed, answered) =
        call(&client, "answer", json!({"session": "asker", "text": "1"})).await;
    assert!(!failed, "{answered}");
    call(
        &client,
        "wait",
        json!({"session": "asker", "until": "idle", "timeout_secs": 60}),
    )
    .await;
    let (_, transcript) = call(&client, "transcript", json!({"session": "asker"})).await;
    assert!(
        transcript.contains("ASK-USER-ANSWER: The person answered: red"),
        "{transcript}"
    );
    let (failed, stopped) = call(&client, "stop", json!({"session": "asker"})).await;
    assert!(!failed, "{stopped}");
    client.cancel().await.unwrap();
}
