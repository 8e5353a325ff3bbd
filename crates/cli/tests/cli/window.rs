//! Tests of `panewise window`: every built-in strategy on the example conversation.

use serde_json::Value;

use super::*;

const DATA: &str = "crates/window/tests/data";

fn data(name: &str) -> String {
    workspace_path(&format!("{DATA}/{name}"))
        .to_string_lossy()
        .into_owned()
}

/// Runs `panewise window --json` and parses its output, failing with stderr on a bad exit.
fn window(config: &str, extra: &[&str]) -> Value {
    let config = data(config);
    let conversation = data("conversation.jsonl");
    let mut args = vec!["window", "--json", "--config", &config, &conversation];
    args.extend_from_slice(extra);
    let output = panewise(&args);
    assert!(
        output.status.success(),
        "panewise window failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn roles(output: &Value) -> Vec<String> {
    output["window"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

fn keeps_the_current_request(output: &Value) -> bool {
    output["window"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["content"] == "Thanks. Now add a regression test for it.")
}

#[test]
fn window_sliding_window_keeps_the_last_turns_and_prints_the_record() {
    let output = window("sliding-window.json", &[]);
    assert_eq!(output["engaged"], true);
    assert_eq!(output["record"]["strategy"], "sliding-window");
    assert_eq!(output["record"]["removedMessageCount"], 13);
    assert_eq!(output["record"]["keepRecentTurns"], 3);
    assert_eq!(roles(&output)[0], "system");
    assert!(keeps_the_current_request(&output));
    assert!(output.get("budgetPressure").is_none());
}

#[test]
fn window_token_budget_needs_usage_and_drops_until_under() {
    let idle = window("token-budget.json", &[]);
    assert_eq!(idle["engaged"], false);
    assert_eq!(idle["window"].as_array().unwrap().len(), 19);
    let output = window("token-budget.json", &["--usage", "2400"]);
    assert_eq!(output["engaged"], true);
    assert_eq!(output["record"]["measuredTokens"], 2400);
    assert_eq!(output["record"]["thresholdTokens"], 2000);
    assert_eq!(output["budgetPressure"]["planAction"], "evict");
    assert!(keeps_the_current_request(&output));
    let toml = window("token-budget.toml", &["--usage", "2400"]);
    assert_eq!(toml["record"], output["record"]);
}

#[test]
fn window_token_budget_rejects_a_zero_reading_by_name() {
    let config = data("token-budget.json");
    let conversation = data("conversation.jsonl");
    let output = panewise(&[
        "window",
        "--config",
        &config,
        &conversation,
        "--usage",
        "0",
        "--provider",
        "acme",
    ]);
    // A 0/0 reading is wrong data, not a wrong command line: exit 1 in the table.
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("CompactionUnmeasurableError"), "{stderr}");
    assert!(stderr.contains("acme"), "{stderr}");
}

#[test]
fn window_summarize_oldest_folds_into_a_framed_summary() {
    let output = window("summarize-oldest.json", &["--usage", "2400"]);
    assert_eq!(output["record"]["strategy"], "summarize-oldest");
    assert_eq!(output["record"]["overBudget"], true);
    assert!(output["record"]["summaryChars"].as_u64().unwrap() > 0);
    let frame = output["window"][1]["content"].as_str().unwrap();
    assert!(frame.starts_with("[compacted history"), "{frame}");
    assert_eq!(output["foldedSpans"][0]["messageCount"], 13);
    assert_eq!(
        output["foldedSpans"][0]["messages"]
            .as_array()
            .unwrap()
            .len(),
        13
    );
    assert!(keeps_the_current_request(&output));
}

#[test]
fn window_observation_masking_replaces_old_results() {
    let output = window("observation-masking.json", &[]);
    assert_eq!(output["record"]["strategy"], "observation-masking");
    assert_eq!(output["record"]["maskedMessageCount"], 4);
    assert_eq!(output["window"].as_array().unwrap().len(), 19);
    let masked = output["window"]
        .as_array()
        .unwrap()
        .iter()
        // Assistant calls keep their `null` content, so not every content is a string.
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|content| content.starts_with("[masked tool result"))
        })
        .count();
    assert_eq!(masked, 4);
}

#[test]
fn window_hybrid_masks_before_it_summarizes() {
    let output = window("hybrid.json", &["--usage", "2400"]);
    assert_eq!(output["record"]["strategy"], "hybrid");
    assert_eq!(output["record"]["masking"]["maskedMessageCount"], 4);
    assert!(output["record"].get("compaction").is_none());
    assert_eq!(output["budgetPressure"]["planAction"], "mask");
}

#[test]
fn window_a_bad_configuration_names_the_field() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let config = dir.join("bad.json");
    std::fs::write(
        &config,
        r#"{"strategy":"sliding-window","keepRecentTurns":0}"#,
    )
    .unwrap();
    let conversation = data("conversation.jsonl");
    let output = panewise(&[
        "window",
        "--config",
        config.to_str().unwrap(),
        &conversation,
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("keepRecentTurns"), "{stderr}");
}

#[test]
fn window_token_budget_adds_what_was_appended_since_the_call() {
    let output = window(
        "token-budget.json",
        &["--usage", "1800", "--sent-messages", "15"],
    );
    // The last four messages (reading and editing the test file) came after the call:
    // 1,800 reported plus 408 counted is over the 2,000 threshold.
    assert_eq!(output["engaged"], true);
    assert_eq!(output["record"]["measuredTokens"], 1800);
    assert_eq!(output["record"]["charsSinceMeasured"], 1627);
    assert_eq!(output["record"]["tokensSinceMeasured"], 408);
    assert_eq!(output["budgetPressure"]["projectedTokens"], 2208);
    let quiet = window(
        "token-budget.json",
        &["--usage", "1500", "--sent-messages", "15"],
    );
    assert_eq!(quiet["engaged"], false);
}

/// The reported case (W7): a tool result separated from its call by another message.
fn separated_conversation(between: &str) -> String {
    let long = "x".repeat(2_000);
    [
        format!(r#"{{"role":"user","content":"first {long}"}}"#),
        format!(
            r#"{{"role":"assistant","content":"calling {long}","tool_calls":[{{"id":"c1","type":"function","function":{{"name":"read","arguments":"{{}}"}}}}]}}"#
        ),
        between.to_string(),
        r#"{"role":"tool","tool_call_id":"c1","content":"result one"}"#.to_string(),
        r#"{"role":"assistant","content":"done"}"#.to_string(),
        r#"{"role":"user","content":"second request"}"#.to_string(),
        r#"{"role":"assistant","content":"ok"}"#.to_string(),
    ]
    .join("\n")
}

/// True when every tool result in the printed window follows a call with its id.
fn every_result_follows_its_call(output: &Value) -> bool {
    let mut calls: Vec<String> = Vec::new();
    for message in output["window"].as_array().unwrap() {
        if let Some(batch) = message["tool_calls"].as_array() {
            calls.extend(batch.iter().map(|c| c["id"].as_str().unwrap().to_string()));
        }
        if message["role"] == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or_default();
            if !calls.iter().any(|call| call == id) {
                return false;
            }
        }
    }
    true
}

#[test]
fn window_w7_a_result_separated_from_its_call_leaves_with_its_call_under_every_strategy() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let betweens = [
        r#"{"role":"assistant","content":"commentary"}"#,
        r#"{"role":"user","content":"a reminder","injected_by":"harness"}"#,
    ];
    let configs = [
        r#"{"strategy":"sliding-window","keepRecentTurns":4}"#,
        r#"{"strategy":"sliding-window","keepRecentTurns":2}"#,
        r#"{"strategy":"token-budget","thresholdTokens":10,"keepRecentTurns":4}"#,
        r#"{"strategy":"summarize-oldest","thresholdTokens":10,"keepRecentTurns":4,"model":"m"}"#,
        r#"{"strategy":"hybrid","thresholdTokens":10,"keepRecentTurns":4,"model":"m"}"#,
        r#"{"strategy":"observation-masking","keepRecentObservations":0}"#,
    ];
    for (b, between) in betweens.iter().enumerate() {
        let conversation = dir.join(format!("split{b}.jsonl"));
        std::fs::write(&conversation, separated_conversation(between)).unwrap();
        for (c, config_json) in configs.iter().enumerate() {
            let config = dir.join(format!("config{c}.json"));
            std::fs::write(&config, config_json).unwrap();
            let output = panewise(&[
                "window",
                "--json",
                "--config",
                config.to_str().unwrap(),
                "--usage",
                "5000",
                conversation.to_str().unwrap(),
            ]);
            assert!(
                output.status.success(),
                "{config_json}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
            assert!(
                every_result_follows_its_call(&printed),
                "{config_json} orphaned c1: {printed:#}"
            );
        }
    }
    // Four kept turns: only the first message leaves; the call, the message between and the
    // result are one turn and all stay.
    let config = dir.join("config0.json");
    std::fs::write(&config, configs[0]).unwrap();
    let conversation = dir.join("split0.jsonl");
    let output = panewise(&[
        "window",
        "--json",
        "--config",
        config.to_str().unwrap(),
        conversation.to_str().unwrap(),
    ]);
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["record"]["removedMessageCount"], 1);
    assert_eq!(printed["record"]["turnsBefore"], 5);
    assert_eq!(
        roles(&printed),
        [
            "user",
            "assistant",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

/// Runs `panewise window` with sliding-window over `lines` written to a temporary file.
fn window_over(keep: usize, lines: &[Value]) -> std::process::Output {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        format!(r#"{{"strategy":"sliding-window","keepRecentTurns":{keep}}}"#),
    )
    .unwrap();
    let conversation = dir.join("conversation.jsonl");
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&conversation, text).unwrap();
    let output = panewise(&[
        "window",
        "--json",
        "--config",
        config.to_str().unwrap(),
        conversation.to_str().unwrap(),
    ]);
    output
}

#[test]
fn window_round_trips_every_field_it_does_not_change() {
    let long = "x".repeat(800);
    let input = vec![
        serde_json::json!({"role": "developer", "content": "Be brief.", "x_trace": "t-1"}),
        serde_json::json!({"role": "user", "name": "ana", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        ]}),
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
        ]}),
        serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": long}),
        serde_json::json!({"role": "assistant", "content": "A cat.", "x_extra": {"n": 1}}),
        serde_json::json!({"role": "user", "name": "ana", "content": [
            {"type": "text", "text": "And this one?"},
            {"type": "image_url", "image_url": {"url": "https://example.test/b.png"}}
        ]}),
    ];
    // Nothing removed: the window is the input, exactly.
    let output = window_over(10, &input);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["window"].as_array().unwrap(), &input);
    // The oldest turn dropped: the survivors are their input lines, exactly.
    let output = window_over(1, &input);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["engaged"], true);
    assert!(printed["record"]["removedMessageCount"].as_u64().unwrap() > 0);
    let window = printed["window"].as_array().unwrap();
    assert_eq!(window.first(), input.first());
    assert_eq!(window.last(), input.last());
    for message in window {
        assert!(
            input.contains(message) || message["injected_by"] == "window",
            "changed on the way through: {message}"
        );
    }
}

#[test]
fn window_warns_about_an_orphan_tool_result_and_still_windows() {
    let input = vec![
        serde_json::json!({"role": "user", "content": "hi"}),
        serde_json::json!({"role": "tool", "tool_call_id": "ghost", "content": "lost"}),
        serde_json::json!({"role": "user", "content": "now"}),
    ];
    let output = window_over(10, &input);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    assert!(stderr.contains("ghost"), "{stderr}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["window"].as_array().unwrap().len(), 3);
}

/// Writes `files` (name, text) into a fresh directory for one test, removed when dropped.
fn scratch(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// Runs `panewise window` over a config and a conversation, either a scratch file or test data.
fn run_window(config: &std::path::Path, conversation: &std::path::Path) -> std::process::Output {
    panewise(&[
        "window",
        "--config",
        config.to_str().unwrap(),
        conversation.to_str().unwrap(),
    ])
}

/// The stderr of a run that must fail with `code`, checked for serde and TOML internals.
fn failure(output: &std::process::Output, code: i32) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    for internal in ["$__toml", "field ``", " at line ", "e+", "e19", "panicked"] {
        assert!(!stderr.contains(internal), "{internal:?} in {stderr}");
    }
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

/// Every bad configuration shape: the message names the file's line once, the field by name,
/// integers as integers, and the other format when the text is in it; each is a data error.
#[test]
fn window_bad_configurations_name_the_line_and_field_without_serde_internals() {
    let cases: [(&str, &str, &[&str]); 7] = [
        (
            "datetime.toml",
            "strategy = \"token-budget\"\nthresholdTokens = 1979-05-27T07:32:00Z\n",
            &["line 2", "`thresholdTokens`", "date-time 1979-05-27T07:32:00Z"],
        ),
        (
            "json-inside.toml",
            "{\"strategy\": \"sliding-window\",\n \"keepRecentTurns\": 2}\n",
            &["line 1", "reads as JSON", ".json"],
        ),
        (
            "toml-inside.json",
            "strategy = \"sliding-window\"\nkeepRecentTurns = 2\n",
            &["line 1", "reads as TOML", ".toml"],
        ),
        (
            "unknown-key.json",
            "{\"strategy\": \"sliding-window\",\n \"keepRecentTurns\": 2,\n \"keepRecentTurnz\": 3}\n",
            &[
                "line 3",
                "`keepRecentTurnz`",
                "strategy, keepRecentTurns, keepLastToolResults, keepLedgerFacts",
            ],
        ),
        (
            "huge.json",
            "{\"strategy\": \"sliding-window\",\n \"keepRecentTurns\": 18446744073709551616}\n",
            &["line 2", "`keepRecentTurns`", "larger than 18446744073709551615"],
        ),
        (
            "huge.toml",
            "strategy = \"sliding-window\"\nkeepRecentTurns = 18446744073709551616\n",
            &["line 2", "`keepRecentTurns`", "too large"],
        ),
        (
            "wrong-type.json",
            "{\"strategy\": \"sliding-window\",\n \"keepRecentTurns\": \"six\"}\n",
            &["line 2", "`keepRecentTurns`", "whole number", "\"six\""],
        ),
    ];
    let files: Vec<(&str, &str)> = cases.iter().map(|(name, text, _)| (*name, *text)).collect();
    let scratch_dir = scratch(&files);
    let dir = scratch_dir.path();
    let conversation = workspace_path(&format!("{DATA}/conversation.jsonl"));
    for (name, _, expected) in cases {
        let stderr = failure(&run_window(&dir.join(name), &conversation), 1);
        assert_eq!(stderr.matches("line ").count(), 1, "{name}: {stderr}");
        for part in expected {
            assert!(stderr.contains(part), "{name}: {part:?} not in {stderr}");
        }
    }
}

/// Bad conversations: a line that is not JSON is named once by the file's line (exit 1); an
/// empty conversation is a data error; a cut-off last line is the warning `replay` gives.
#[test]
fn window_bad_conversations_are_named_once_and_a_cut_off_line_is_a_warning() {
    let scratch_dir = scratch(&[
        (
            "not-json.jsonl",
            "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\": user}\n",
        ),
        ("empty.jsonl", "\n\n"),
        (
            "cut-off.jsonl",
            "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"user\",\"con",
        ),
    ]);
    let dir = scratch_dir.path();
    let config = workspace_path(&format!("{DATA}/sliding-window.json"));

    let stderr = failure(&run_window(&config, &dir.join("not-json.jsonl")), 1);
    assert!(stderr.contains("line 2: not JSON"), "{stderr}");
    assert_eq!(stderr.matches("line ").count(), 1, "{stderr}");

    let stderr = failure(&run_window(&config, &dir.join("empty.jsonl")), 1);
    assert!(stderr.contains("empty input"), "{stderr}");

    let output = run_window(&config, &dir.join("cut-off.jsonl"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // The sentence `replay` prints for the same fault (pane-state's `LogWarning`).
    assert!(
        stderr.contains("warning: ")
            && stderr.contains("line 2: truncated last line (crash mid-write?), skipped"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("messages    1 -> 1"), "{stdout}");
}

/// The exit code table: unreadable input is an I/O error (3), for the config and the
/// conversation alike.
#[test]
fn window_an_unreadable_input_is_an_io_error() {
    let missing = std::env::temp_dir().join("panewise-window-no-such-file.jsonl");
    let config = workspace_path(&format!("{DATA}/sliding-window.json"));
    let conversation = workspace_path(&format!("{DATA}/conversation.jsonl"));
    let stderr = failure(&run_window(&config, &missing), 3);
    assert!(stderr.contains("cannot read"), "{stderr}");
    let stderr = failure(&run_window(&missing, &conversation), 3);
    assert!(stderr.contains("cannot read"), "{stderr}");
}

#[test]
fn window_reads_the_conversation_from_standard_input() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let config = data("sliding-window.json");
    let text = std::fs::read(workspace_path(&format!("{DATA}/conversation.jsonl"))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(["window", "--json", "--config", &config, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed, window("sliding-window.json", &[]));
}

/// The human summary: strategy, engaged and why, sizes, refusals with reasons, the record and
/// one line per kept message.
#[test]
fn window_prints_a_human_summary_by_default() {
    let config = data("sliding-window.json");
    let conversation = data("conversation.jsonl");
    let output = panewise(&["window", "--config", &config, &conversation]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let expected = [
        "strategy    sliding-window (keepRecentTurns 3,",
        "engaged     yes: 12 turns, more than keepRecentTurns 3",
        "messages    19 -> 7 (13 removed, 1 inserted)",
        "characters  9419 -> 2595",
        "refusals    4 turns stayed",
        "  system-envelope: turn 0",
        "  inside-keep-window: turns 9, 10, 11",
        "record      {\"strategy\":\"sliding-window\"",
        "window:",
        "    1  system    You are a coding agent working in a Rust repository.",
        "    3  user      Thanks. Now add a regression test for it.",
    ];
    for line in expected {
        assert!(stdout.contains(line), "{line:?} not in\n{stdout}");
    }
    // One line per kept message after the `window:` heading.
    let kept = stdout.lines().skip_while(|line| *line != "window:").count();
    assert_eq!(kept, 1 + 7, "{stdout}");
}

/// No `--usage`: a token-triggered strategy cannot engage, and the command says so on stderr.
#[test]
fn window_says_a_token_triggered_strategy_never_engages_without_usage() {
    let config = data("token-budget.json");
    let conversation = data("conversation.jsonl");
    let output = panewise(&["window", "--config", &config, &conversation]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: no --usage reading") && stderr.contains("never engages"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("engaged     no: no --usage reading"),
        "{stdout}"
    );
    assert!(
        stdout.contains("messages    19 -> 19 (0 removed)"),
        "{stdout}"
    );
    let output = panewise(&[
        "window",
        "--config",
        &config,
        &conversation,
        "--usage",
        "1500",
    ]);
    assert!(String::from_utf8_lossy(&output.stderr).is_empty());
}

#[test]
fn window_help_lists_every_strategy_and_its_options() {
    let output = panewise(&["window", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for part in [
        "sliding-window:",
        "token-budget:",
        "summarize-oldest:",
        "observation-masking:",
        "hybrid:",
        "thresholdTokens:",
        "keepRecentTurns:",
        "keepRecentObservations:",
        "model:",
        "retain:",
        "keepLastToolResults:",
        "keepLedgerFacts:",
        "Exit codes:",
    ] {
        assert!(help.contains(part), "{part:?} not in\n{help}");
    }
}

#[test]
fn window_ends_quietly_when_its_reader_closes_stdout() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    // More output than a pipe buffers, so the command is still writing when the pipe closes.
    let line = format!(r#"{{"role":"user","content":"{}"}}"#, "y".repeat(400));
    let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
    let scratch_dir = scratch(&[
        ("conversation.jsonl", &text),
        (
            "config.json",
            r#"{"strategy":"sliding-window","keepRecentTurns":5000}"#,
        ),
    ]);
    let dir = scratch_dir.path();
    let config = dir.join("config.json");
    let conversation = dir.join("conversation.jsonl");
    for mode in [None, Some("--json")] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
            .args(["window", "--config"])
            .args([&config, &conversation])
            .args(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then close the pipe as `head -c1` would.
        let mut first = [0u8; 1];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {stderr}");
        assert!(stderr.is_empty(), "{mode:?}: {stderr}");
    }
}
