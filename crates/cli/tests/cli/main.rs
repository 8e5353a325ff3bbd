//! End-to-end tests of the `panewise` binary: one integration-test binary, one module per subcommand.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_doc;
mod budget;
mod cache_guard;
mod daemon;
mod daemon_context;
mod daemon_files;
mod daemon_flood;
mod daemon_notify;
mod daemon_peer;
mod daemon_resume;
mod daemon_ssh;
mod decode;
mod journal;
mod json_contract;
mod keys;
mod mcp_serve;
mod mock_server;
mod provider_context;
mod questions;
mod replay;
mod run_own_loop;
mod run_signals;
mod run_terminal;
mod sandbox;
mod sessions;
mod telemetry;
mod transcripts;
mod ui_terminal;
mod usage;
mod views_agree;
mod web;
mod web_push;
mod window;
mod window_eval;

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built `panewise` binary with `args`, from the host crate's directory.
pub fn panewise(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the panewise binary runs")
}

/// The path of a file under the workspace root, for test data owned by other crates.
pub fn workspace_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// Starts the workspace mock server with `scenario` on 127.0.0.1.
pub(crate) async fn start(
    scenario: panewise_mock_server::Scenario,
) -> panewise_mock_server::RunningServer {
    panewise_mock_server::MockServer::start(panewise_mock_server::MockConfig {
        scenario,
        ..panewise_mock_server::MockConfig::default()
    })
    .await
    .unwrap()
}

/// The final state `panewise replay --json` printed: its last line's `state`, after checking
/// that every line carries the schema version.
pub(crate) fn replayed_state(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(lines.iter().all(|line| line["v"] == 1), "{text}");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "replayed", "{text}");
    last["state"].clone()
}

/// Asserts that a session log folds and matches its checkpoints.
pub(crate) fn assert_replays(log: &std::path::Path) {
    let bytes = std::fs::read(log).unwrap();
    let parsed = panewise_pane_state::parse_log_bytes(&bytes).unwrap();
    assert!(
        parsed.fold_checked().is_ok(),
        "{} does not replay",
        log.display()
    );
}
