//! Transcript lines of the session log (R91, schema v3): written by the recorder, read back
//! as written, skipped by every fold, never counted by a checkpoint; one this build cannot
//! read is a warning, never an error.

use panewise_pane_state::log::{
    encode_transcript, Actor, LogHeader, LogWarning, Recorder, ToolCallStatus, TranscriptEntry,
    TranscriptLine, LOG_SCHEMA_VERSION,
};
use panewise_pane_state::{parse_log, Failure, FailureKind, LogError, Msg};
use serde_json::json;

use crate::support::*;

fn header() -> LogHeader {
    LogHeader {
        agent_id: "agent-1".into(),
        started_at_ms: T0,
        ..LogHeader::default()
    }
}

/// One entry of every kind, as a session would write them.
fn every_kind() -> Vec<TranscriptEntry> {
    vec![
        TranscriptEntry::Prompt {
            text: "print hello".into(),
        },
        TranscriptEntry::Thinking {
            text: "The shell can do it.".into(),
        },
        TranscriptEntry::Text {
            text: "I'll run the command.".into(),
        },
        TranscriptEntry::ToolCall {
            call_id: "c1".into(),
            name: "shell".into(),
            input: Some(json!({"command": "echo hello"})),
            arg: None,
        },
        TranscriptEntry::ApprovalRequested {
            request_id: "c1".into(),
            tool: "shell".into(),
            summary: Some("echo hello".into()),
            input: Some(json!({"command": "echo hello"})),
        },
        TranscriptEntry::ApprovalAnswered {
            for_session: false,
            request_id: Some("c1".into()),
            approved: true,
            by: Actor::Policy {
                mode: "full-access".into(),
            },
            reason: None,
        },
        TranscriptEntry::ApprovalAnswered {
            for_session: false,
            request_id: None,
            approved: false,
            by: Actor::Api {
                client: Some("supervisor".into()),
            },
            reason: Some("not now".into()),
        },
        TranscriptEntry::ApprovalWithdrawn {
            request_id: "c9".into(),
        },
        TranscriptEntry::ToolOutput {
            call_id: "c1".into(),
            status: ToolCallStatus::Success,
            exit_code: Some(0),
            output: Some("hello\n".into()),
            cut_bytes: 12,
        },
        TranscriptEntry::Question {
            id: "q1".into(),
            questions: vec!["Which branch?".into()],
        },
        TranscriptEntry::QuestionAnswered {
            id: Some("q1".into()),
            answers: vec!["main".into()],
            by: Actor::Person,
        },
        TranscriptEntry::Retry {
            attempt: Some(1),
            max_retries: Some(3),
            wait_ms: Some(2000),
            http_status: Some(429),
            reason: Some("rate_limit".into()),
        },
        TranscriptEntry::Failure {
            failure: Failure {
                kind: FailureKind::RateLimited,
                retryable: true,
                message: "429 Too Many Requests".into(),
                http_status: Some(429),
            },
        },
        TranscriptEntry::Interrupt { by: Actor::Person },
        TranscriptEntry::Interrupt { by: Actor::Agent },
        TranscriptEntry::SessionEnded { error: None },
    ]
}

/// A session with a transcript line between every two messages, and checkpoints.
fn recorded() -> (Recorder, Vec<TranscriptEntry>) {
    let mut recorder = Recorder::new(&header()).unwrap();
    let entries = every_kind();
    let msgs = [
        Msg::StreamSubscribe { at: T0 },
        Msg::InitReady { at: T0 + 1 },
        turn_start(T0 + 2),
        tool_start("shell", Some("echo hello")),
        tool_end(),
        turn_end(),
    ];
    for (index, entry) in entries.iter().enumerate() {
        let ts = T0 + index as u64;
        recorder.transcript(ts, entry).unwrap();
        if let Some(msg) = msgs.get(index) {
            recorder.record(ts, msg.clone()).unwrap();
        }
        if index == 3 {
            recorder.checkpoint().unwrap();
        }
    }
    recorder.checkpoint().unwrap();
    (recorder, entries)
}

#[test]
fn r91_every_transcript_entry_reads_back_as_it_was_written() {
    let (recorder, entries) = recorded();
    let (_, bytes) = recorder.finish();
    let log = parse_log(std::str::from_utf8(&bytes).unwrap()).unwrap();
    assert_eq!(log.warnings, vec![]);
    let read: Vec<TranscriptEntry> = log.transcript.into_iter().map(|line| line.entry).collect();
    assert_eq!(read, entries);
}

#[test]
fn r91_transcript_lines_change_neither_the_fold_nor_the_checkpoints() {
    let (recorder, _) = recorded();
    let live = recorder.state().clone();
    let (_, bytes) = recorder.finish();
    let text = String::from_utf8(bytes).unwrap();
    let with = parse_log(&text).unwrap();
    assert_eq!(with.fold_checked().unwrap(), live);
    let without: String = text
        .lines()
        .filter(|line| !line.contains("\"transcript\""))
        .map(|line| format!("{line}\n"))
        .collect();
    let without = parse_log(&without).unwrap();
    assert!(without.transcript.is_empty());
    assert_eq!(without.fold_checked().unwrap(), live);
    // The same checkpoints, at other line numbers: transcript lines are not counted.
    let counted = |log: &panewise_pane_state::SessionLog| {
        log.checkpoints
            .iter()
            .map(|c| (c.after, c.entries_before, c.state.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(counted(&without), counted(&with));
    assert_eq!(with.checkpoints.len(), 2);
}

#[test]
fn r91_who_answered_is_written_beside_the_answer() {
    let cases = [
        (
            Actor::Policy {
                mode: "auto".into(),
            },
            json!({"kind":"approval_answered","approved":true,"by":"policy","mode":"auto"}),
        ),
        (
            Actor::Person,
            json!({"kind":"approval_answered","approved":true,"by":"person"}),
        ),
        (
            Actor::Api { client: None },
            json!({"kind":"approval_answered","approved":true,"by":"api"}),
        ),
    ];
    for (by, expected) in cases {
        let entry = TranscriptEntry::ApprovalAnswered {
            for_session: false,
            request_id: None,
            approved: true,
            by,
            reason: None,
        };
        let line: serde_json::Value =
            serde_json::from_str(&encode_transcript(7, &entry).unwrap()).unwrap();
        assert_eq!(line["v"], LOG_SCHEMA_VERSION);
        assert_eq!(line["ts"], 7);
        assert_eq!(line["transcript"], expected);
    }
}

#[test]
fn r91_a_transcript_line_this_build_cannot_read_is_skipped_with_a_warning() {
    let cases = [
        r#"{"v":3,"ts":5,"transcript":{"kind":"hologram","text":"x"}}"#,
        r#"{"v":3,"ts":5,"transcript":{"kind":"prompt"}}"#,
        r#"{"v":3,"ts":5,"transcript":{"kind":"interrupt","by":"martian"}}"#,
        r#"{"v":3,"ts":5,"transcript":"prompt"}"#,
    ];
    for case in cases {
        let text = format!(
            "{case}\n{{\"v\":3,\"ts\":6,\"msg\":{{\"type\":\"stream_subscribe\",\"at\":6}}}}\n"
        );
        let log = parse_log(&text).unwrap();
        assert!(
            matches!(
                log.warnings.as_slice(),
                [LogWarning::UnreadableTranscript { line: 1, .. }]
            ),
            "{case}: {:?}",
            log.warnings
        );
        assert_eq!(log.entries.len(), 1, "{case}");
        assert!(log.transcript.is_empty(), "{case}");
    }
}

#[test]
fn r91_a_transcript_line_holds_its_entry_and_its_time_and_nothing_else() {
    let cases = [
        r#"{"v":3,"transcript":{"kind":"prompt","text":"x"}}"#,
        r#"{"v":3,"ts":-1,"transcript":{"kind":"prompt","text":"x"}}"#,
        r#"{"v":3,"ts":1,"transcript":{"kind":"prompt","text":"x"},"msg":{"type":"stream_subscribe","at":1}}"#,
    ];
    for case in cases {
        let error = parse_log(&format!("{case}\n")).unwrap_err();
        assert!(
            matches!(error, LogError::Malformed { line: 1, .. }),
            "{case}: {error}"
        );
    }
}

#[test]
fn r91_v2_logs_read_unchanged_and_v4_is_refused() {
    let v2 = "{\"v\":2,\"header\":{\"agent_id\":\"a\",\"started_at_ms\":1}}\n\
              {\"v\":2,\"ts\":2,\"msg\":{\"type\":\"stream_subscribe\",\"at\":2}}\n";
    let log = parse_log(v2).unwrap();
    assert_eq!(log.entries.len(), 1);
    assert!(log.transcript.is_empty());
    let v4 = "{\"v\":4,\"ts\":2,\"transcript\":{\"kind\":\"prompt\",\"text\":\"x\"}}\n";
    assert!(matches!(
        parse_log(v4),
        Err(LogError::NewerVersion { found: 4, .. })
    ));
}

#[test]
fn r91_transcript_lines_carry_their_time() {
    let mut recorder = Recorder::new(&header()).unwrap();
    recorder
        .transcript(T0 + 9, &TranscriptEntry::Prompt { text: "hi".into() })
        .unwrap();
    let (_, bytes) = recorder.finish();
    let log = parse_log(std::str::from_utf8(&bytes).unwrap()).unwrap();
    assert_eq!(
        log.transcript,
        vec![TranscriptLine {
            ts: T0 + 9,
            entry: TranscriptEntry::Prompt { text: "hi".into() }
        }]
    );
}
