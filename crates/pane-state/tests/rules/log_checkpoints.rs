//! Checkpoint lines of the session log (R91): written by the recorder, read back, and compared
//! by a replay against the state it folds; and the upgrade of v1 lines.

use panewise_pane_state::log::{
    encode_checkpoint, encode_entry, LogEntry, LogHeader, LogWarning, Recorder, LOG_SCHEMA_VERSION,
};
use panewise_pane_state::{parse_log, parse_log_bytes, LogError, Msg, State};

use crate::support::*;

fn header() -> LogHeader {
    LogHeader {
        agent_id: "agent-1".into(),
        started_at_ms: T0,
        model: None,
        ..LogHeader::default()
    }
}

/// A short session: subscribe, a turn with a tool, its end.
fn session() -> Vec<(u64, Msg)> {
    vec![
        (T0, Msg::StreamSubscribe { at: T0 }),
        (T0 + 1, Msg::InitReady { at: T0 + 1 }),
        (T0 + 2, turn_start(T0 + 2)),
        (T0 + 3, tool_start("Bash", Some("ls"))),
        (T0 + 4, tool_end()),
        (T0 + 5, turn_end()),
    ]
}

/// The recorded log as text, with a checkpoint after the third message and one at the end.
fn recorded() -> (State, String) {
    let mut recorder = Recorder::new(&header()).unwrap();
    for (index, (ts, msg)) in session().into_iter().enumerate() {
        recorder.record(ts, msg).unwrap();
        if index == 2 {
            recorder.checkpoint().unwrap();
        }
    }
    recorder.checkpoint().unwrap();
    let (state, bytes) = recorder.finish();
    (state, String::from_utf8(bytes).unwrap())
}

#[test]
fn r91_a_checkpoint_line_holds_the_state_after_the_messages_above_it() {
    let (live, text) = recorded();
    let lines: Vec<&str> = text.lines().collect();
    // Header, three messages, a checkpoint, three messages, the final checkpoint.
    assert_eq!(lines.len(), 9);
    let checkpoint: serde_json::Value = serde_json::from_str(lines[8]).unwrap();
    assert_eq!(checkpoint["v"], LOG_SCHEMA_VERSION);
    assert_eq!(checkpoint["checkpoint"]["after"], 6);
    assert_eq!(checkpoint["checkpoint"]["state"]["turns_completed"], 1);

    let log = parse_log(&text).unwrap();
    assert_eq!(log.warnings, vec![]);
    assert_eq!(log.entries.len(), 6);
    let found: Vec<(usize, usize)> = log.checkpoints.iter().map(|c| (c.line, c.after)).collect();
    assert_eq!(found, vec![(5, 3), (9, 6)]);
    assert_eq!(log.final_checkpoint().map(|c| &c.state), Some(&live));
    assert_eq!(log.fold_checked(), Ok(live));
}

#[test]
fn r91_a_replay_that_folds_differently_from_the_writer_fails_at_the_checkpoint() {
    let (_, text) = recorded();
    // A checkpoint recorded by a writer whose fold differs: a different turn count.
    let mut wrong = parse_log(&text).unwrap().fold();
    wrong.turns_completed = 7;
    let tampered = text.lines().take(8).collect::<Vec<_>>().join("\n")
        + "\n"
        + &encode_checkpoint(6, &wrong).unwrap()
        + "\n";
    let log = parse_log(&tampered).unwrap();
    let mismatch = log.fold_checked().unwrap_err();
    assert_eq!((mismatch.line, mismatch.after), (9, 6));
    assert_eq!(mismatch.recorded.turns_completed, 7);
    assert_eq!(mismatch.folded.turns_completed, 1);
    assert!(mismatch.to_string().contains("line 9"), "{mismatch}");
}

#[test]
fn r91_a_checkpoint_must_count_the_messages_above_it() {
    let (_, text) = recorded();
    let state = parse_log(&text).unwrap().fold();
    let first_two: Vec<&str> = text.lines().take(3).collect();
    let text = first_two.join("\n") + "\n" + &encode_checkpoint(5, &state).unwrap() + "\n";
    let error = parse_log(&text).unwrap_err();
    assert!(
        matches!(&error, LogError::Malformed { line: 4, reason } if reason.contains("after 5 messages, but 2")),
        "{error}"
    );
}

#[test]
fn r91_an_undecodable_checkpoint_state_is_skipped_with_a_warning_and_the_fold_still_runs() {
    let entry = encode_entry(&LogEntry {
        ts: T0,
        msg: Msg::StreamSubscribe { at: T0 },
    })
    .unwrap();
    let text = format!(
        "{entry}\n{{\"v\":{LOG_SCHEMA_VERSION},\"checkpoint\":{{\"after\":1,\"state\":{{\"shape\":\"other\"}}}}}}\n"
    );
    let log = parse_log(&text).unwrap();
    assert!(log.checkpoints.is_empty());
    assert!(matches!(
        log.warnings.as_slice(),
        [LogWarning::UnreadableCheckpoint { line: 2, .. }]
    ));
    assert_eq!(log.fold_checked(), Ok(log.fold()));
}

#[test]
fn r91_a_checkpoint_after_a_skipped_unknown_message_is_not_compared() {
    let state = State::new("replay");
    let text = format!(
        "{{\"v\":2,\"ts\":1,\"msg\":{{\"type\":\"teleport\"}}}}\n{}\n",
        encode_checkpoint(1, &state).unwrap()
    );
    let log = parse_log(&text).unwrap();
    assert_eq!(log.checkpoints.len(), 1);
    assert!(!log.checkpoints[0].is_comparable());
    assert!(log.final_checkpoint().is_none());
    assert!(log.fold_checked().is_ok());
}

#[test]
fn r91_v1_lines_upgrade_the_tick_and_timeouts_decode_without_turn_or_deadline() {
    let text = "{\"v\":1,\"ts\":5,\"msg\":{\"type\":\"stream_watchdog_tick\",\"now_ms\":5}}\n\
                {\"v\":1,\"ts\":6,\"msg\":{\"type\":\"submit_timeout_elapsed\",\"at\":6}}\n";
    let log = parse_log_bytes(text.as_bytes()).unwrap();
    assert_eq!(
        log.entries,
        vec![
            LogEntry {
                ts: 5,
                msg: Msg::StreamWatchdogTick
            },
            LogEntry {
                ts: 6,
                msg: submit_elapsed()
            },
        ]
    );
}

#[test]
fn r91_the_recorder_hands_out_bytes_as_it_goes() {
    let mut recorder = Recorder::new(&header()).unwrap();
    let opening = recorder.take_bytes();
    assert!(String::from_utf8_lossy(&opening).contains("\"header\""));
    let cmds = recorder
        .record(T0, Msg::StreamSubscribe { at: T0 })
        .unwrap();
    assert_eq!(cmds, vec![]);
    assert!(recorder.state().is_subscribed());
    let line = recorder.take_bytes();
    assert!(line.ends_with(b"\n") && !line.starts_with(b"{\"v\":2,\"header\""));
    let (_, rest) = recorder.finish();
    assert!(rest.is_empty());
    let mut whole = opening;
    whole.extend(line);
    assert_eq!(parse_log_bytes(&whole).unwrap().entries.len(), 1);
}
