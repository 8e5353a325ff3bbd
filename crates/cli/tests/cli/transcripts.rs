//! Golden replayed transcripts: what `panewise replay` prints of a session's conversation.
//!
//! Every real capture under `crates/providers/tests/data/` (Claude Code, Codex exec and
//! app-server, Gemini CLI stream-json and ACP), found from the directory, is recorded with
//! `panewise decode --record` and replayed; and panewise's own loop runs on the built-in mock
//! under two approval modes and is replayed. Each printout is an insta snapshot; the own
//! loop's working directory and start time are replaced by placeholders.

use std::path::{Path, PathBuf};

use super::run_own_loop::{stderr, Machine};
use super::{panewise, workspace_path};

/// The captured streams: every `.ndjson`/`.jsonl` under the providers' data directories but
/// what a host wrote to the CLI (`*.input.ndjson`).
fn captures() -> Vec<PathBuf> {
    let root = workspace_path("crates/providers/tests/data");
    let mut found = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap().flatten() {
        if !dir.path().is_dir() || dir.file_name() == "api" {
            continue;
        }
        for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let path = file.path();
            let name = path.to_string_lossy().into_owned();
            let stream = name.ends_with(".ndjson") || name.ends_with(".jsonl");
            if stream && !name.ends_with(".input.ndjson") {
                found.push(path);
            }
        }
    }
    found.sort();
    assert!(found.len() >= 20, "too few captures found: {found:?}");
    found
}

/// `<cli>__<capture>`, the snapshot's name.
fn snapshot_name(capture: &Path) -> String {
    let cli = capture
        .parent()
        .and_then(Path::file_name)
        .unwrap()
        .to_string_lossy();
    let stem = capture.file_stem().unwrap().to_string_lossy();
    format!("{cli}__{stem}")
}

#[test]
fn every_capture_recorded_by_decode_replays_as_its_golden_conversation() {
    let dir = tempfile::tempdir().unwrap();
    for capture in captures() {
        let name = snapshot_name(&capture);
        let log = dir.path().join(format!("{name}.jsonl"));
        let recorded = panewise(&[
            "decode",
            capture.to_str().unwrap(),
            "--record",
            log.to_str().unwrap(),
        ]);
        assert!(
            recorded.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&recorded.stderr)
        );
        let replayed = panewise(&["replay", log.to_str().unwrap()]);
        assert!(
            replayed.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&replayed.stderr)
        );
        let shown = String::from_utf8_lossy(&replayed.stdout).into_owned();
        // Each conversation closes, and its fold matched the writer's.
        assert!(
            shown.contains("ended      the session ended"),
            "{name}:\n{shown}"
        );
        assert!(shown.contains("checkpoint matches"), "{name}:\n{shown}");
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(name, shown);
        });
    }
}

/// `text` with each `[toolu_…]` call id (the mock makes new ones every run) replaced by
/// `[call-N]`, numbered in order of first appearance.
fn numbered_call_ids(text: &str) -> String {
    let mut ids: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("[toolu_") {
        let after = &rest[start + 1..];
        let Some(end) = after.find(']') else { break };
        let id = after[..end].to_owned();
        if !ids.contains(&id) {
            ids.push(id);
        }
        rest = &after[end..];
    }
    ids.iter()
        .enumerate()
        .fold(text.to_owned(), |text, (n, id)| {
            text.replace(&format!("[{id}]"), &format!("[call-{}]", n + 1))
        })
}

/// The own loop on the mock, `args` after `run`; the replayed conversation with the run's
/// own directory, start time and call ids replaced.
fn own_loop_conversation(args: &[&str]) -> String {
    let machine = Machine::new();
    let log = machine.path("session.jsonl");
    // A working directory whose path has the same length on every run: the system prompt
    // names it, and the mock counts the prompt's tokens from its length.
    let work = machine.path("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut all = vec![
        "run",
        "--log",
        log.to_str().unwrap(),
        "--cwd",
        work.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let ran = machine.run(&all);
    assert!(ran.status.code().is_some(), "{}", stderr(&ran));
    let replayed = machine.run(&["replay", log.to_str().unwrap()]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    numbered_call_ids(&String::from_utf8_lossy(&replayed.stdout))
        .lines()
        .map(|line| {
            if line.starts_with("cwd ") {
                "cwd        [the run's directory]".to_owned()
            } else if line.starts_with("started ") {
                "started    [when it ran]".to_owned()
            } else if line.starts_with("window ") {
                "window     [the ledger beside the log]".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_own_loop_replays_its_conversation_with_the_tool_its_input_output_and_who_allowed_it() {
    let shown = own_loop_conversation(&["print hello with the shell"]);
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("own-loop__mock-full-access", shown);
    });
}

#[test]
fn the_own_loop_replays_a_denial_with_who_denied_it_and_why() {
    // `ask` with no terminal to ask on: the mode's answer stands, and the model is told.
    let shown = own_loop_conversation(&["--approval", "ask", "print hello with the shell"]);
    assert!(
        shown.contains("denied by the policy (--approval ask)"),
        "{shown}"
    );
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("own-loop__mock-ask-without-a-terminal", shown);
    });
}
