//! Tests of `panewise replay` (R91): fold twice, print, and report bad lines by number.

use super::{panewise, workspace_path};

fn golden(name: &str) -> String {
    workspace_path(&format!("crates/pane-state/tests/data/golden/{name}"))
        .to_string_lossy()
        .into_owned()
}

fn write_temp(name: &str, text: &str) -> String {
    // Kept: the caller runs panewise on the file after this returns.
    let dir = tempfile::tempdir().unwrap().keep();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn replay_prints_the_final_state_of_a_golden_log() {
    let out = panewise(&["replay", "--state", &golden("tool-call-turn.jsonl")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Golden logs predate checkpoints: the fold is checked against nothing and says so.
    assert!(
        stdout.contains("checkpoint      no checkpoint recorded"),
        "{stdout}"
    );
    assert!(
        stdout.contains("turn phase      done (completed)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("context         15420 / 200000 tokens (7.7%)"),
        "{stdout}"
    );
}

#[test]
fn replay_json_prints_the_full_state() {
    let out = panewise(&["replay", "--json", &golden("stop-and-quit.jsonl")]);
    assert!(out.status.success());
    let state = super::replayed_state(&out.stdout);
    assert_eq!(state["should_exit"], true);
    assert_eq!(state["turn_phase"]["outcome"], "interrupted");
}

#[test]
fn replay_reports_a_malformed_line_by_number() {
    let log = "{\"v\":1,\"ts\":1,\"msg\":{\"type\":\"init_start\"}}\nnot json\n{\"v\":1,\"ts\":2,\"msg\":{\"type\":\"turn_reset\"}}\n";
    let out = panewise(&["replay", &write_temp("malformed.jsonl", log)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("line 2: malformed log entry"), "{stderr}");
}

#[test]
fn replay_skips_a_truncated_last_line_with_a_warning() {
    let log = "{\"v\":1,\"ts\":1,\"msg\":{\"type\":\"stream_subscribe\",\"at\":1}}\n{\"v\":1,\"ts\":2,\"msg\":{\"type\":\"tur";
    let out = panewise(&["replay", "--state", &write_temp("truncated.jsonl", log)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("line 2: truncated last line"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("messages        1"));
}

#[test]
fn replay_skips_unknown_message_kinds_from_newer_versions() {
    let log = "{\"v\":1,\"ts\":1,\"msg\":{\"type\":\"teleport\"}}\n";
    let out = panewise(&["replay", &write_temp("newer.jsonl", log)]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown message type `teleport`"));
}

#[test]
fn replay_refuses_a_log_from_a_newer_schema() {
    let log = "{\"v\":99,\"ts\":1,\"msg\":{\"type\":\"init_start\"}}\n";
    let out = panewise(&["replay", &write_temp("future.jsonl", log)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("schema version 99 is newer"));
}

fn write_temp_bytes(name: &str, bytes: &[u8]) -> String {
    // Kept: the caller runs panewise on the file after this returns.
    let dir = tempfile::tempdir().unwrap().keep();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_string_lossy().into_owned()
}

const SUBSCRIBE: &[u8] = b"{\"v\":1,\"ts\":1,\"msg\":{\"type\":\"stream_subscribe\",\"at\":1}}\n";

#[test]
fn replay_skips_a_last_line_cut_inside_a_multibyte_character() {
    let mut log = SUBSCRIBE.to_vec();
    log.extend_from_slice(
        b"{\"v\":1,\"ts\":2,\"msg\":{\"type\":\"task_notice_added\",\"text\":\"caf\xc3",
    );
    let out = panewise(&["replay", &write_temp_bytes("cut-utf8.jsonl", &log)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("line 2: truncated last line"), "{stderr}");
}

#[test]
fn replay_names_a_middle_line_that_is_not_utf8() {
    let mut log = b"\xff\xfe garbage\n".to_vec();
    log.extend_from_slice(SUBSCRIBE);
    let out = panewise(&["replay", &write_temp_bytes("binary.jsonl", &log)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 1: malformed log entry: not valid UTF-8"),
        "{stderr}"
    );
}

#[test]
fn replay_refuses_a_known_message_with_a_bad_field_instead_of_skipping_it() {
    let mut log = SUBSCRIBE.to_vec();
    log.extend_from_slice(b"{\"v\":1,\"ts\":2,\"msg\":{\"type\":\"failure_observed\",\"at\":2,\"failure\":{\"kind\":\"brand_new_kind\",\"retryable\":false,\"message\":\"m\"}}}\n");
    let out = panewise(&["replay", &write_temp_bytes("bad-field.jsonl", &log)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 2: malformed log entry: `failure_observed`"),
        "{stderr}"
    );
}

#[test]
fn replay_refuses_a_second_header_and_a_line_with_header_and_message() {
    let header = b"{\"v\":1,\"header\":{\"agent_id\":\"a\"}}\n";
    let mut twice = header.to_vec();
    twice.extend_from_slice(b"{\"v\":1,\"header\":{\"agent_id\":\"b\"}}\n");
    let out = panewise(&["replay", &write_temp_bytes("two-headers.jsonl", &twice)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("line 2: malformed log entry: a header may only open the log"));

    let both =
        b"{\"v\":1,\"header\":{\"agent_id\":\"a\"},\"ts\":1,\"msg\":{\"type\":\"init_start\"}}\n";
    let out = panewise(&["replay", &write_temp_bytes("header-and-msg.jsonl", both)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("either a header or a message"));
}

#[test]
fn replay_refuses_a_file_with_no_log_line_and_warns_about_a_log_without_messages() {
    let out = panewise(&["replay", &write_temp_bytes("empty.jsonl", b"\n\n")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty input"));
    let out = panewise(&[
        "replay",
        &write_temp_bytes("cut.jsonl", b"{\"not\": \"a log"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session log line"));
    let header_only = b"{\"v\":1,\"header\":{\"agent_id\":\"a\"}}\n";
    let out = panewise(&["replay", &write_temp_bytes("header.jsonl", header_only)]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the log holds no messages"));
}

#[test]
fn replay_ends_quietly_when_its_reader_closes_stdout() {
    use std::process::{Command, Stdio};
    let golden = super::workspace_path("crates/pane-state/tests/data/golden/tool-call-turn.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(["replay", "--json"])
        .arg(&golden)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the pipe before the first write, as a `head` that already has its line would.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_full_disk_under_stdout_is_an_io_error_with_a_message() {
    let golden = super::workspace_path("crates/pane-state/tests/data/golden/tool-call-turn.jsonl");
    let data = super::workspace_path("crates/providers/tests/data/codex/tool-call.jsonl");
    for args in [
        vec!["replay".to_owned(), golden.to_string_lossy().into_owned()],
        vec!["decode".to_owned(), data.to_string_lossy().into_owned()],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_panewise"))
            .args(&args)
            .stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("No space left"), "{args:?}: {stderr}");
    }
}

#[test]
fn every_subcommand_prints_the_same_exit_code_table_in_its_help() {
    let table = [
        "0  success",
        "1  data problem",
        "2  usage error",
        "3  I/O error",
    ];
    for command in [
        vec!["--help"],
        vec!["replay", "--help"],
        vec!["window", "--help"],
        vec!["decode", "--help"],
    ] {
        let out = panewise(&command);
        assert!(out.status.success(), "{command:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        for row in table {
            assert!(help.contains(row), "{command:?} lacks `{row}`:\n{help}");
        }
    }
    // A usage error is clap's, with its code.
    let out = panewise(&["replay", "--no-such-flag", "x"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn decode_ends_quietly_when_its_reader_closes_stdout() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    // Far more output than a pipe buffers, so writes go on after the reader has gone.
    let capture = std::fs::read(super::workspace_path(
        "crates/providers/tests/data/claude-code/tool-call-partial-messages.ndjson",
    ))
    .unwrap();
    let data = write_temp_bytes("long-stream.ndjson", &capture.repeat(200));
    let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(["decode", "--json"])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read the first event, then close the pipe while output is still coming.
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sessions_lists_recorded_sessions_and_replay_takes_an_id() {
    let data_tmp = tempfile::tempdir().unwrap();
    let data = data_tmp.path().to_path_buf();
    let dir = data.join("panewise/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    // A session recorded by decode --record, under its id.
    let stream = super::workspace_path("crates/providers/tests/data/codex/tool-call.jsonl");
    let log = dir.join("1796112843139.jsonl");
    let out = panewise(&[
        "decode",
        stream.to_str().unwrap(),
        "--record",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_panewise"))
            .args(args)
            .env("XDG_DATA_HOME", &data)
            .output()
            .unwrap()
    };
    let out = run(&["sessions"]);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(row.starts_with("1796112843139 "), "{table}");
    assert!(row.contains("codex") && row.contains("done"), "{row}");
    let out = run(&["sessions", "--json"]);
    let session: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(session["turns"], 1);
    assert_eq!(session["cost_source"], "estimated");
    let out = run(&["replay", "1796112843139"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("matches the recorded state"));
}

#[test]
fn replay_shows_escape_sequences_in_the_conversation_escaped_never_interpreted() {
    let log = concat!(
        "{\"v\":3,\"header\":{\"agent_id\":\"mock\",\"started_at_ms\":1}}\n",
        "{\"v\":3,\"ts\":2,\"transcript\":{\"kind\":\"prompt\",\"text\":\"clear \\u001b[2J\\rnow\"}}\n",
        "{\"v\":3,\"ts\":3,\"transcript\":{\"kind\":\"tool_output\",\"call_id\":\"c\\u0007\",\"status\":\"success\",\"output\":\"a\\nb\\u001b]0;title\\u0007\"}}\n",
    );
    let out = panewise(&["replay", &write_temp("escapes.jsonl", log)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains('\u{1b}') && !stdout.contains('\u{7}') && !stdout.contains('\r'));
    assert!(
        stdout.contains("prompt     clear \\u{1b}[2J\\u{d}now"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "output     [c\\u{7}] success\n           a\n           b\\u{1b}]0;title\\u{7}"
        ),
        "{stdout}"
    );
    // A log without its closing lines and without a checkpoint still replays.
    assert!(
        stdout.contains("checkpoint no checkpoint recorded"),
        "{stdout}"
    );
}

#[test]
fn replay_json_gives_every_transcript_line_then_the_state_each_with_its_version() {
    let log = concat!(
        "{\"v\":3,\"header\":{\"agent_id\":\"mock\",\"started_at_ms\":1}}\n",
        "{\"v\":3,\"ts\":2,\"transcript\":{\"kind\":\"prompt\",\"text\":\"hi\"}}\n",
        "{\"v\":3,\"ts\":3,\"msg\":{\"type\":\"prompt_submitted\",\"text\":\"hi\"}}\n",
        "{\"v\":3,\"ts\":4,\"transcript\":{\"kind\":\"interrupt\",\"by\":\"api\",\"client\":\"ops\"}}\n",
    );
    let out = panewise(&["replay", "--json", &write_temp("json.jsonl", log)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["type"], "transcript");
    assert_eq!(lines[0]["entry"]["text"], "hi");
    assert_eq!(lines[1]["entry"]["by"], "api");
    assert_eq!(lines[1]["entry"]["client"], "ops");
    assert_eq!(lines[2]["messages"], 1);
    let state = super::replayed_state(&out.stdout);
    assert_eq!(state["turn_phase"]["kind"], "idle", "{state}");
}

/// Issue 29: each call's usage goes under what the log recorded before it, with its cache
/// split and its cost split by kind, then the calls' totals; the ledger's call lines follow
/// the visits, the provider's model name escaped. Golden text, priced with the built-in
/// table (claude-sonnet-4-5: input 3, cache read 0.3, 5-minute write 3.75, 1-hour write 6,
/// output 15 US dollars per million tokens), so a wrong split fails it.
#[test]
fn replay_shows_each_calls_cache_split_and_cost_by_kind_then_the_totals() {
    let log = concat!(
        "{\"v\":3,\"header\":{\"agent_id\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"started_at_ms\":0}}\n",
        "{\"v\":3,\"ts\":2,\"transcript\":{\"kind\":\"prompt\",\"text\":\"go\"}}\n",
        "{\"v\":3,\"ts\":3,\"transcript\":{\"kind\":\"text\",\"text\":\"Reading.\"}}\n",
        "{\"v\":3,\"ts\":4,\"msg\":{\"type\":\"tokens_in\",\"input\":11000,\"model\":\"claude-sonnet-4-5\",\"cache_read\":0,\"cache_write\":10000,\"cache_write_1h\":4000}}\n",
        "{\"v\":3,\"ts\":4,\"msg\":{\"type\":\"tokens_out\",\"output\":100}}\n",
        "{\"v\":3,\"ts\":4,\"msg\":{\"type\":\"tokens_out\",\"output\":200}}\n",
        "{\"v\":3,\"ts\":5,\"transcript\":{\"kind\":\"text\",\"text\":\"Done.\"}}\n",
        // No model named: the last one logged.
        "{\"v\":3,\"ts\":6,\"msg\":{\"type\":\"tokens_in\",\"input\":8149,\"cache_read\":7983,\"cache_write\":0}}\n",
        "{\"v\":3,\"ts\":6,\"msg\":{\"type\":\"tokens_out\",\"output\":39}}\n",
    );
    let path = write_temp("split.jsonl", log);
    let ledger = concat!(
        "{\"type\":\"idle\",\"iteration\":1,\"strategy\":\"token-budget\"}\n",
        "{\"type\":\"call\",\"iteration\":1,\"model\":\"m\\u001b[31m\",\"tokens\":{\"prompt\":30,\"cache_read\":20,\"cache_write\":4,\"output\":2}}\n",
    );
    std::fs::write(format!("{path}.window.jsonl"), ledger).unwrap();
    let out = panewise(&["replay", &path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let shown: Vec<&str> = stdout
        .lines()
        .filter(|line| !line.starts_with("started") && !line.starts_with("window"))
        .collect();
    assert_eq!(
        shown,
        [
            "session    anthropic, model claude-sonnet-4-5",
            "prompt     go",
            "assistant  Reading.",
            "usage      prompt 11,000 = 1,000 new + 0 cache read + 10,000 cache write (4,000 of \
             them 1h); 200 out; $0.0525 = $0.0030 input + $0.0000 cache read + $0.0225 cache \
             write 5m + $0.0240 cache write 1h + $0.0030 output",
            "assistant  Done.",
            "usage      prompt 8,149 = 166 new + 7,983 cache read + 0 cache write; 39 out; \
             $0.0035 = $0.0005 input + $0.0024 cache read + $0.0000 cache write + $0.0006 output",
            "calls      2 model calls: prompt 19,149 = 1,166 new + 7,983 cache read + 10,000 \
             cache write (4,000 of them 1h); 239 out; $0.0560 = $0.0035 input + $0.0024 cache \
             read + $0.0225 cache write 5m + $0.0240 cache write 1h + $0.0036 output",
            "checkpoint no checkpoint recorded",
            "  iteration 1: token-budget did not engage",
            "  call 1 (m\\u{1b}[31m): prompt 30 = 6 new + 20 cache read + 4 cache write; 2 out; \
             cost unknown (no price for the model)",
        ]
    );
    assert!(
        stdout.contains("window          1 visit(s), 0 engaged, 1 call(s)"),
        "{stdout}"
    );
}
