//! Golden session logs (R91): each recorded log under `tests/data/golden/` (schema v1, so the
//! upgrade path is exercised) is parsed and folded message by message through `step`, and its
//! command stream and final state are snapshot-tested.

use std::path::PathBuf;

use panewise_pane_state::{parse_log, step, Cmd, Msg, State};
use serde::Serialize;

#[derive(Serialize)]
struct Golden {
    commands: Vec<Cmd>,
    state: State,
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

fn fold_with_commands(name: &str) -> Golden {
    let text = std::fs::read_to_string(golden_dir().join(name)).unwrap();
    let log = parse_log(&text).unwrap();
    assert!(log.warnings.is_empty(), "{name}: {:?}", log.warnings);
    let mut state = log.initial_state();
    let mut commands = Vec::new();
    for entry in &log.entries {
        let (next, cmds) = step(state, entry.ts, entry.msg.clone());
        state = next;
        commands.extend(cmds);
    }
    // `step` per message and the log's own fold (`step_into` with one reused buffer) are two
    // code paths; they must agree.
    assert_eq!(state, log.fold(), "{name}: step and the log fold disagree");
    Golden { commands, state }
}

fn snapshot(name: &str) -> Golden {
    let golden = fold_with_commands(name);
    insta::with_settings!({ prepend_module_to_snapshot => false, snapshot_suffix => "" }, {
        insta::assert_json_snapshot!(name.trim_end_matches(".jsonl"), golden);
    });
    golden
}

#[test]
fn r91_golden_tool_call_turn() {
    let golden = snapshot("tool-call-turn.jsonl");
    assert_eq!(golden.state.turn_phase.kind_name(), "done");
    assert_eq!(golden.state.turns_completed, 1);
    let reading = golden.state.plausible_reading().unwrap();
    assert_eq!((reading.tokens, reading.window), (15_420, Some(200_000)));
}

#[test]
fn r91_golden_rate_limit_then_retry() {
    let golden = snapshot("rate-limit-then-retry.jsonl");
    // The second turn cleared the failure of the first (R11, R31).
    assert!(golden.state.failure.is_none());
    assert_eq!(golden.state.turns_completed, 1);
}

#[test]
fn r91_golden_compaction_race() {
    let golden = snapshot("compaction-race.jsonl");
    // One real boundary plus one heuristic drop long after it; the drop right after the
    // boundary is not counted twice (R49).
    assert_eq!(golden.state.compactions, 2);
    // The first turn ended, later rounds promoted it back to Streaming (R23), and it ended
    // again: still one completed turn.
    assert_eq!(golden.state.turns_completed, 1);
}

#[test]
fn r91_golden_stop_and_quit() {
    let golden = snapshot("stop-and-quit.jsonl");
    assert!(golden.state.should_exit);
    // The log ends with a second quit, which changes nothing and asks for nothing (R85).
    let text = std::fs::read_to_string(golden_dir().join("stop-and-quit.jsonl")).unwrap();
    let log = parse_log(&text).unwrap();
    let Some((last, before)) = log.entries.split_last() else {
        panic!("the log has entries");
    };
    assert_eq!(last.msg, Msg::Quit);
    let mut state = log.initial_state();
    for entry in before {
        state = step(state, entry.ts, entry.msg.clone()).0;
    }
    assert!(state.should_exit, "the first quit already ended it");
    let (again, cmds) = step(state.clone(), last.ts, last.msg.clone());
    assert_eq!(cmds, vec![]);
    state.now_ms = last.ts;
    assert_eq!(again, state);
}

#[test]
fn r91_golden_transcript_v3_own_loop() {
    // A v3 log the own loop wrote on the mock (`--approval ask`, no terminal): its transcript
    // reads back whole, and its fold matches the checkpoints it recorded.
    let golden = snapshot("transcript-v3-own-loop.jsonl");
    assert_eq!(golden.state.turns_completed, 1);
    let text = std::fs::read_to_string(golden_dir().join("transcript-v3-own-loop.jsonl")).unwrap();
    let log = parse_log(&text).unwrap();
    assert!(log.fold_checked().is_ok());
    let kinds: Vec<&str> = log
        .transcript
        .iter()
        .map(|line| line.entry.kind_name())
        .collect();
    assert_eq!(
        kinds,
        [
            "prompt",
            "thinking",
            "text",
            "tool_call",
            "approval_requested",
            "approval_answered",
            "tool_output",
            "text",
            "session_ended"
        ]
    );
}

#[test]
fn r91_every_golden_log_is_covered_by_a_test() {
    let mut names: Vec<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "compaction-race.jsonl",
            "rate-limit-then-retry.jsonl",
            "stop-and-quit.jsonl",
            "tool-call-turn.jsonl",
            "transcript-v3-own-loop.jsonl"
        ]
    );
}
