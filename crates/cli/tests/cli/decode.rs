//! Tests of `panewise decode`: every captured stream (copied into the providers crate's test
//! data) decodes to the summary a person watching the pane should see.

use serde_json::{json, Value};

use super::{panewise, workspace_path};

fn data(relative: &str) -> String {
    workspace_path(&format!("crates/providers/tests/data/{relative}"))
        .to_string_lossy()
        .into_owned()
}

/// Runs `panewise decode --json` and returns every stdout line as JSON; the summary is last.
fn decode_json(provider: &str, relative: &str) -> Vec<Value> {
    let out = panewise(&["decode", "--provider", provider, &data(relative), "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{relative}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    // Every line, events and summary alike, carries the schema version.
    assert!(
        lines.iter().all(|line| line["v"] == 1),
        "{relative}: {stdout}"
    );
    lines
}

fn summary(provider: &str, relative: &str) -> Value {
    let lines = decode_json(provider, relative);
    let summary = lines.last().cloned().expect("a summary line");
    let events = summary["events"].as_u64().expect("an event count");
    assert_eq!(
        lines.len() as u64,
        events + 1,
        "{relative}: one line per event"
    );
    summary
}

fn rate_limited(message_start: &str) -> impl Fn(&Value) {
    let start = message_start.to_owned();
    move |failure: &Value| {
        assert_eq!(failure["kind"], "rate_limited");
        assert_eq!(failure["retryable"], true);
        let message = failure["message"].as_str().expect("a message");
        assert!(message.starts_with(&start), "{message}");
    }
}

#[test]
fn decode_json_summaries_of_the_claude_code_captures() {
    let tool_call = json!({
        "provider": "claude-code", "unknown_events": 0, "decode_errors": 0,
        "turn_phase": "done", "turns_completed": 1, "tools": [{"name": "Bash", "calls": 1}], "tools_unlisted": 0,
        "input_tokens": 6240, "output_tokens": 90, "cached_input_tokens": 18000,
        "cache_write_input_tokens": 2400, "reasoning_tokens": 0,
        "cost_usd": 0.042359999999999995, "cost_source": "reported",
        "model": "claude-opus-5-5", "model_assumed": false, "plan": [], "warnings": [],
        "context_tokens": 13360, "context_window": 1000000,
        "compactions": 0, "failure": null, "v": 1,
    });
    for (file, events) in [
        ("claude-code/tool-call.ndjson", 15),
        ("claude-code/tool-call-partial-messages.ndjson", 25),
    ] {
        let mut expected = tool_call.clone();
        expected["events"] = json!(events);
        assert_eq!(summary("claude-code", file), expected, "{file}");
    }

    assert_eq!(
        summary("claude-code", "claude-code/auto-compact.ndjson"),
        json!({
            "provider": "claude-code", "events": 37, "unknown_events": 0, "decode_errors": 0,
            "turn_phase": "done", "turns_completed": 1, "tools": [{"name": "Bash", "calls": 3}], "tools_unlisted": 0,
            "input_tokens": 202680, "output_tokens": 235, "cached_input_tokens": 45000,
            "cache_write_input_tokens": 6000, "reasoning_tokens": 0,
            "cost_usd": 0.8544200000000001, "cost_source": "reported",
            "model": "claude-opus-5-5", "model_assumed": false, "plan": [], "warnings": [],
            "context_tokens": 13400, "context_window": 1000000,
            "compactions": 1, "failure": null, "v": 1,
        })
    );

    assert_eq!(
        summary("claude-code", "claude-code/multi-turn-stdin.ndjson"),
        json!({
            "provider": "claude-code", "events": 30, "unknown_events": 0, "decode_errors": 0,
            "turn_phase": "done", "turns_completed": 2, "tools": [{"name": "Bash", "calls": 2}], "tools_unlisted": 0,
            "input_tokens": 12800, "output_tokens": 180, "cached_input_tokens": 36000,
            "cache_write_input_tokens": 4800, "reasoning_tokens": 0,
            "cost_usd": 0.086, "cost_source": "reported",
            "model": "claude-opus-5-5", "model_assumed": false, "plan": [], "warnings": [],
            "context_tokens": 13520, "context_window": 1000000,
            "compactions": 0, "failure": null, "v": 1,
        })
    );

    let mut error = summary("claude-code", "claude-code/error-429.ndjson");
    rate_limited("API Error: Request rejected (429)")(&error["failure"]);
    error["failure"] = Value::Null;
    assert_eq!(
        error,
        json!({
            "provider": "claude-code", "events": 5, "unknown_events": 0, "decode_errors": 0,
            "turn_phase": "done", "turns_completed": 0, "tools": [], "tools_unlisted": 0,
            "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0,
            "cache_write_input_tokens": 0, "reasoning_tokens": 0,
            "cost_usd": 0.0, "cost_source": "reported",
            "model": "claude-opus-5-5", "model_assumed": false, "plan": [], "warnings": [],
            "context_tokens": null, "context_window": null,
            "compactions": 0, "failure": null, "v": 1,
        })
    );
}

#[test]
fn decode_json_summaries_of_the_codex_captures() {
    assert_eq!(
        summary("codex", "codex/tool-call.jsonl"),
        json!({
            "provider": "codex", "events": 8, "unknown_events": 0, "decode_errors": 0,
            "turn_phase": "done", "turns_completed": 1, "tools": [{"name": "shell", "calls": 1}], "tools_unlisted": 0,
            "input_tokens": 3282, "output_tokens": 60, "cached_input_tokens": 2048,
            "cache_write_input_tokens": 0, "reasoning_tokens": 16,
            "cost_usd": 0.019234, "cost_source": "estimated",
            "model": "gpt-5.5", "model_assumed": true, "plan": [], "warnings": [],
            "context_tokens": null, "context_window": 400000,
            "compactions": 0, "failure": null, "v": 1,
        })
    );
    let mut error = summary("codex", "codex/error-429.jsonl");
    rate_limited("exceeded retry limit, last status: 429")(&error["failure"]);
    error["failure"] = Value::Null;
    assert_eq!(
        error,
        json!({
            "provider": "codex", "events": 4, "unknown_events": 0, "decode_errors": 0,
            "turn_phase": "done", "turns_completed": 0, "tools": [], "tools_unlisted": 0,
            "input_tokens": null, "output_tokens": null, "cached_input_tokens": null,
            "cache_write_input_tokens": null, "reasoning_tokens": null,
            "cost_usd": null, "cost_source": "unknown",
            "model": "gpt-5.5", "model_assumed": true, "plan": [], "warnings": [],
            "context_tokens": null, "context_window": null,
            "compactions": 0, "failure": null, "v": 1,
        })
    );
}

#[test]
fn decode_json_summaries_of_the_gemini_cli_captures() {
    assert_eq!(
        summary("gemini-cli", "gemini-cli/tool-call.jsonl"),
        json!({
            "provider": "gemini-cli", "events": 10, "unknown_events": 0, "decode_errors": 0,
            "turn_phase": "done", "turns_completed": 1, "tools": [{"name": "run_shell_command", "calls": 1}], "tools_unlisted": 0,
            "input_tokens": 4404, "output_tokens": 92, "cached_input_tokens": 4096,
            "cache_write_input_tokens": null, "reasoning_tokens": 32,
            "cost_usd": null, "cost_source": "unknown",
            "model": "gemini-3.8-flash", "model_assumed": false, "plan": [],
            "warnings": ["no price for model `gemini-3.8-flash`: the session's cost is unknown (a price table given with --prices can add it)"],
            "context_tokens": null, "context_window": 1048576,
            "compactions": 0, "failure": null, "v": 1,
        })
    );
    let error = summary("gemini-cli", "gemini-cli/error-429.jsonl");
    rate_limited("[API Error: Resource has been exhausted")(&error["failure"]);
    assert_eq!(error["turn_phase"], "done");
    assert_eq!(error["turns_completed"], 0);
    assert_eq!(error["tools"], json!([]));
    // Only Gemini CLI's routing model was called, and it has a price.
    assert_eq!(error["cost_source"], "estimated");
    assert_eq!(error["cost_usd"], 0.00014);
    assert_eq!(error["input_tokens"], 300);
    assert_eq!(error["context_tokens"], Value::Null);
    assert_eq!(error["unknown_events"], 0);
    assert_eq!(error["decode_errors"], 0);
}

#[test]
fn decode_prices_a_model_from_a_price_file_and_warns_about_an_unpriced_one() {
    let out = panewise(&[
        "decode",
        "--provider",
        "gemini-cli",
        &data("gemini-cli/tool-call.jsonl"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    assert!(
        stderr.contains("warning: no price for model `gemini-3.8-flash`"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("cost              unknown"), "{stdout}");
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let prices = dir.join("prices.json");
    std::fs::write(
        &prices,
        r#"{"prices":[{"model":"gemini-3.8-flash","input":2,"output":12,"cached_input":0.2}]}"#,
    )
    .unwrap();
    let out = panewise(&[
        "decode",
        "--provider",
        "gemini-cli",
        &data("gemini-cli/tool-call.jsonl"),
        "--json",
        "--prices",
        prices.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["cost_source"], "estimated");
    assert_eq!(summary["warnings"], json!([]));
    // gemini-3.8-flash: 4104 in × 2 + 4096 cached × 0.2 + 72 out × 12; the router
    // gemini-3.5-flash-lite: 300 in × 0.3 + 20 out × 2.5 (per million).
    let expected = (4104.0 * 2.0 + 4096.0 * 0.2 + 72.0 * 12.0 + 300.0 * 0.3 + 20.0 * 2.5) / 1e6;
    let cost = summary["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");
    // A bad price file is refused by name.
    std::fs::write(
        &prices,
        r#"{"prices":[{"model":"m","input":-1,"output":1}]}"#,
    )
    .unwrap();
    let out = panewise(&[
        "decode",
        "--provider",
        "codex",
        &data("codex/tool-call.jsonl"),
        "--prices",
        prices.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`input`"));
    // A table written as TOML gets a hint that it is JSON.
    std::fs::write(
        &prices,
        "[[prices]]\nmodel = \"m\"\ninput = 1.0\noutput = 2.0\n",
    )
    .unwrap();
    let out = panewise(&[
        "decode",
        &data("codex/tool-call.jsonl"),
        "--prices",
        prices.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds TOML; the table is JSON"), "{stderr}");
    // The human summary marks an assumed model's window and cost.
    let out = panewise(&[
        "decode",
        "--provider",
        "codex",
        &data("codex/tool-call.jsonl"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("gpt-5.5 (assumed"), "{stdout}");
    assert!(stdout.contains("(estimated, model assumed)"), "{stdout}");
    assert!(
        stdout.contains("window 400000 tokens (assumed)"),
        "{stdout}"
    );
}

#[test]
fn decode_json_lists_each_event_before_the_summary() {
    let lines = decode_json("codex", "codex/tool-call.jsonl");
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "session_started",
            "turn_started",
            "thinking_delta",
            "tool_started",
            "tool_ended",
            "text_delta",
            "usage",
            "turn_ended"
        ]
    );
    assert_eq!(lines[3]["arg"], "echo hello");
    assert_eq!(lines[4]["exit_code"], 0);
}

#[test]
fn decode_reports_malformed_lines_by_number_and_goes_on() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let path = dir.join("broken.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"turn.started\"}\nnot json\n{\"type\":\"brand.new\"}\n",
    )
    .unwrap();
    let out = panewise(&[
        "decode",
        "--provider",
        "codex",
        path.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[1]["type"], "decode_error");
    assert_eq!(lines[1]["line"], 2);
    let summary = lines.last().unwrap();
    assert_eq!(summary["decode_errors"], 1);
    assert_eq!(summary["unknown_events"], 1);
    assert_eq!(summary["events"], 2);
}

#[test]
fn decode_without_json_prints_events_and_the_final_pane_state() {
    let out = panewise(&[
        "decode",
        "--provider",
        "gemini-cli",
        &data("gemini-cli/tool-call.jsonl"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("tool_started        "), "{stdout}");
    assert!(stdout.contains("final pane state"), "{stdout}");
    assert!(
        stdout.contains("context           no reading, window 1048576 tokens"),
        "{stdout}"
    );
}

#[test]
fn decode_takes_the_model_and_a_model_table_from_the_command_line() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let table = dir.join("models.json");
    std::fs::write(&table, r#"{"windows":[{"model":"o3","window":123456}]}"#).unwrap();
    let out = panewise(&[
        "decode",
        "--provider",
        "codex",
        &data("codex/tool-call.jsonl"),
        "--json",
        "--model",
        "o3",
        "--model-table",
        table.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["context_window"], 123456);
}

#[test]
fn decode_refuses_an_unknown_provider_and_a_missing_file() {
    let out = panewise(&[
        "decode",
        "--provider",
        "cursor",
        &data("codex/tool-call.jsonl"),
    ]);
    assert!(!out.status.success());
    // Usage errors are clap's (2); an unreadable input is an I/O error (3).
    assert_eq!(out.status.code(), Some(2));
    let out = panewise(&["decode", "--provider", "codex", "/nonexistent/stream.jsonl"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn decode_detects_the_cli_reads_stdin_as_it_arrives_and_names_a_wrong_provider() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    // No --provider: the first lines tell.
    for (file, provider) in [
        ("claude-code/tool-call.ndjson", "claude-code"),
        ("codex/tool-call.jsonl", "codex"),
        ("gemini-cli/tool-call.jsonl", "gemini-cli"),
    ] {
        let out = panewise(&["decode", &data(file), "--json"]);
        assert!(out.status.success(), "{file}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(summary["provider"], provider, "{file}");
    }
    // A disagreeing --provider is warned about; every line unknown to it is a data error.
    let out = panewise(&[
        "decode",
        "--provider",
        "gemini-cli",
        &data("codex/tool-call.jsonl"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("looks like codex"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // `-` reads a live pipe: the first event is printed before the producer has finished.
    let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(["decode", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, r#"{{"type":"thread.started","thread_id":"t"}}"#).unwrap();
    stdin.flush().unwrap();
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let event: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(event["type"], "session_started");
    // The producer is still open; now it finishes.
    writeln!(stdin, r#"{{"type":"turn.started"}}"#).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
}

#[test]
fn decode_refuses_to_record_over_its_own_input() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let path = dir.join("stream.jsonl");
    std::fs::copy(data("codex/tool-call.jsonl"), &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let out = panewise(&[
        "decode",
        path.to_str().unwrap(),
        "--record",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("would overwrite the input"));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn decode_records_a_session_log_that_replay_folds_to_the_same_state() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    for (provider, file) in [
        ("claude-code", "claude-code/auto-compact.ndjson"),
        ("codex", "codex/tool-call.jsonl"),
        ("gemini-cli", "gemini-cli/error-429.jsonl"),
    ] {
        let log = dir.join(format!("{provider}.jsonl"));
        let log = log.to_string_lossy().into_owned();
        let out = panewise(&[
            "decode",
            "--provider",
            provider,
            &data(file),
            "--json",
            "--record",
            &log,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let decoded: Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap())
                .unwrap();

        let out = panewise(&["replay", "--json", &log]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let replayed = super::replayed_state(&out.stdout);
        assert_eq!(
            replayed["turn_phase"]["kind"], decoded["turn_phase"],
            "{provider}"
        );
        assert_eq!(
            replayed["turns_completed"], decoded["turns_completed"],
            "{provider}"
        );
        assert_eq!(
            replayed["compactions"], decoded["compactions"],
            "{provider}"
        );
        assert_eq!(
            replayed["context"]["tokens"], decoded["context_tokens"],
            "{provider}"
        );
        assert_eq!(
            replayed["failure"]["failure"]["kind"], decoded["failure"]["kind"],
            "{provider}"
        );
        // The log closes with the writer's state, and the replay matched it.
        let out = panewise(&["replay", &log]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("matches the recorded state after"),
            "{stdout}"
        );
        // The same log through standard input.
        let piped = std::process::Command::new(env!("CARGO_BIN_EXE_panewise"))
            .args(["replay", "-"])
            .stdin(std::fs::File::open(&log).unwrap())
            .output()
            .unwrap();
        assert!(piped.status.success());
        assert_eq!(piped.stdout, out.stdout);
        // A checkpoint that disagrees with the fold (another build, a tampered log) fails.
        // The final checkpoint is followed only by the transcript's closing line.
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .rposition(|line| line.contains("\"checkpoint\""))
            .unwrap();
        assert!(
            lines[at + 1..]
                .iter()
                .all(|line| line.contains("\"transcript\"")),
            "{provider}"
        );
        let tampered = lines[at].replacen("\"turns_completed\":", "\"turns_completed\":7", 1);
        assert_ne!(
            tampered, lines[at],
            "{provider}: the checkpoint holds turns_completed"
        );
        let mut tampered_lines = lines.clone();
        tampered_lines[at] = &tampered;
        let tampered_log = dir.join(format!("{provider}-tampered.jsonl"));
        std::fs::write(&tampered_log, tampered_lines.join("\n") + "\n").unwrap();
        let out = panewise(&["replay", tampered_log.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{provider}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("folds a different state"));
    }
}

#[test]
fn decode_warns_and_fails_when_nothing_decoded_and_says_so_for_an_empty_stream() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let garbage = dir.join("garbage.jsonl");
    std::fs::write(&garbage, "not json\nnor this\n").unwrap();
    let out = panewise(&[
        "decode",
        "--provider",
        "codex",
        garbage.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no line of it is a codex event"),
        "{stderr}"
    );
    assert!(stderr.contains("2 decode errors"), "{stderr}");
    // The report is still printed: each error, then the summary.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["events"], 0);
    assert_eq!(summary["decode_errors"], 2);

    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = panewise(&["decode", "--provider", "codex", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("empty input"), "{stderr}");
    let out = panewise(&["decode", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty input"));

    // A last line cut off mid-write is a warning, in the words replay uses, not a decode error.
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, "{\"type\":\"turn.started\"}\n{\"type\":\"turn.compl").unwrap();
    let out = panewise(&["decode", cut.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2: truncated last line (crash mid-write?), skipped"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["decode_errors"], 0);

    // One good line among bad ones is a decode with errors, not a failure.
    let mixed = dir.join("mixed.jsonl");
    std::fs::write(&mixed, "not json\n{\"type\":\"turn.started\"}\n").unwrap();
    let out = panewise(&["decode", "--provider", "codex", mixed.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_session_log_survives_kill_9_of_panewise_but_for_the_line_being_written() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path().to_path_buf();
    let log = dir.join("session.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(["decode", "-", "--json", "--record"])
        .arg(&log)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stream = std::fs::read(data("claude-code/multi-turn-stdin.ndjson")).unwrap();
    let lines: Vec<&[u8]> = stream.split_inclusive(|byte| *byte == b'\n').collect();
    let mut stdin = child.stdin.take().unwrap();
    // The first half of the session, then wait until the log shows it was folded.
    for line in &lines[..lines.len() / 2] {
        stdin.write_all(line).unwrap();
    }
    stdin.flush().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        // The first turn's end folded and written: a count of lines could land mid-turn.
        let written = std::fs::read_to_string(&log).unwrap_or_default();
        if written.contains("\"type\":\"turn_end\"") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the log never grew");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SIGKILL: no chance to flush or finish anything.
    child.kill().unwrap();
    child.wait().unwrap();
    let out = panewise(&["replay", "--json", log.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = super::replayed_state(&out.stdout);
    // The first turn was folded before the kill: the log holds it.
    assert_eq!(state["turns_completed"], 1, "{state}");
}

/// A Claude Code `assistant` line starting tool `name` with a command of `command_bytes`.
fn tool_call_line(index: usize, name: &str, command_bytes: usize) -> String {
    let line = json!({
        "type": "assistant",
        "message": {
            "id": format!("msg_{index}"), "type": "message", "role": "assistant",
            "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": format!("toolu_{index}"), "name": name,
                         "input": {"command": "z".repeat(command_bytes)}}],
        },
        "session_id": "s",
    });
    format!("{line}\n")
}

#[test]
fn the_summary_names_each_tool_once_however_many_huge_calls_the_stream_holds() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("many-tools.ndjson");
    // 300 calls of 16 KiB each: 200 of one tool, then one call each of 100 distinct tools,
    // more names than the summary lists.
    let mut text = String::new();
    for index in 0..200 {
        text.push_str(&tool_call_line(index, "Bash", 16 * 1024));
    }
    for index in 200..300 {
        text.push_str(&tool_call_line(index, &format!("tool_{index}"), 16 * 1024));
    }
    std::fs::write(&stream, text).unwrap();
    let path = stream.to_str().unwrap();

    let human = panewise(&["decode", "--provider", "claude-code", path]);
    assert!(
        human.status.success(),
        "{}",
        String::from_utf8_lossy(&human.stderr)
    );
    let stdout = String::from_utf8_lossy(&human.stdout);
    let tools = stdout
        .lines()
        .find_map(|line| line.trim_start().strip_prefix("tools"))
        .unwrap_or_else(|| panic!("no tools line in {stdout}"));
    assert!(tools.contains("Bash ×200"), "{tools}");
    assert!(tools.contains("37 call(s) of other tools"), "{tools}");
    // 64 names of at most 64 characters and their counts: a line of a few thousand
    // characters, not one name per call (and no argument at all).
    assert!(tools.len() < 64 * 80, "{} characters", tools.len());
    assert!(!tools.contains("zzz"), "{tools}");

    let out = panewise(&["decode", "--provider", "claude-code", path, "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let listed = summary["tools"].as_array().unwrap();
    assert_eq!(listed.len(), 64);
    assert_eq!(listed[0], json!({"name": "Bash", "calls": 200}));
    assert_eq!(listed[63], json!({"name": "tool_262", "calls": 1}));
    assert_eq!(summary["tools_unlisted"], 37);
}

#[test]
fn a_long_first_line_read_in_many_chunks_decodes_whole_with_or_without_the_provider() {
    const COMMAND_BYTES: usize = 3 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("long-line.ndjson");
    let mut text = tool_call_line(0, "Bash", COMMAND_BYTES);
    text.push_str(&tool_call_line(1, "Read", 10));
    std::fs::write(&stream, text).unwrap();
    let path = stream.to_str().unwrap();
    // The binary reads 64 KiB at a time: the first line arrives in some fifty pieces, and
    // without --provider it is also the line the CLI is told from.
    for args in [
        vec!["decode", "--provider", "claude-code", path, "--json"],
        vec!["decode", path, "--json"],
    ] {
        let out = panewise(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<Value> = stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let started: Vec<&Value> = lines
            .iter()
            .filter(|line| line["type"] == "tool_started")
            .collect();
        assert_eq!(started.len(), 2, "{args:?}");
        assert_eq!(started[0]["name"], "Bash");
        let command = started[0]["input"]["command"].as_str().unwrap_or_default();
        assert_eq!(command.len(), COMMAND_BYTES, "{args:?}");
        assert!(command.bytes().all(|byte| byte == b'z'));
        assert_eq!(started[1]["name"], "Read");
        let summary = lines.last().unwrap();
        assert_eq!(summary["provider"], "claude-code");
        assert_eq!(summary["decode_errors"], 0);
        assert_eq!(
            summary["tools"],
            json!([{"name": "Bash", "calls": 1}, {"name": "Read", "calls": 1}])
        );
    }
}
