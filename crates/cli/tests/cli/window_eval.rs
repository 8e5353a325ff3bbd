//! `panewise window eval` through the binary, on the shared corpus of recorded sessions
//! (`../shared/trajectories`, read in place) and on small files made here.

use std::path::PathBuf;

use serde_json::Value;

use crate::{panewise, workspace_path};

fn corpus() -> PathBuf {
    workspace_path("../shared/trajectories")
}

fn corpus_arg() -> String {
    corpus().display().to_string()
}

/// Every label of the default set, the raw history first, then each strategy plain (masking
/// also batched and at Anthropic's context-editing defaults) and, but for those two, with the
/// cache guard.
const DEFAULT_LABELS: [&str; 13] = [
    "raw",
    "sliding-window/6",
    "token-budget@40000/6",
    "summarize-oldest@40000/6",
    "observation-masking/10",
    "observation-masking/10,clear20000",
    "observation-masking@100000/3",
    "hybrid@40000/10",
    "sliding-window/6+payback10",
    "token-budget@40000/6+payback10",
    "summarize-oldest@40000/6+payback10",
    "observation-masking/10+payback10",
    "hybrid@40000/10+payback10",
];

#[test]
fn the_shared_corpus_prints_every_default_strategy_twice_byte_identical() {
    let first = panewise(&["window", "eval", &corpus_arg()]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = panewise(&["window", "eval", &corpus_arg()]);
    assert_eq!(
        first.stdout, second.stdout,
        "the table differs between runs"
    );
    let table = String::from_utf8_lossy(&first.stdout);
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|line| !line.starts_with("STRATEGY"))
        .skip(1)
        .take(DEFAULT_LABELS.len())
        .collect();
    for (row, label) in rows.iter().zip(DEFAULT_LABELS) {
        assert!(row.starts_with(label), "{row:?} is not {label}");
    }
    assert_eq!(rows.len(), DEFAULT_LABELS.len(), "{table}");
    assert!(
        rows[0].contains("100.0"),
        "the raw history is the baseline: {}",
        rows[0]
    );
    // 50 files: five are licences and the README; one stream-json log holds two runs.
    assert!(table.contains("47 session(s)"), "{table}");
    assert!(table.contains("token counter check"), "{table}");
    assert!(table.contains("counts: 10 session(s) anchored"), "{table}");
    assert!(table.contains("37 session(s) estimated"), "{table}");
    assert!(table.contains("frontier"), "{table}");
    // Every strategy again, priced under each provider's rules, with its spread; then what
    // to deploy per provider.
    let side_by_side: Vec<&str> = table
        .lines()
        .skip_while(|line| !line.contains("ANTHR"))
        .skip(1)
        .take(DEFAULT_LABELS.len())
        .collect();
    for (row, label) in side_by_side.iter().zip(DEFAULT_LABELS) {
        assert!(row.starts_with(label), "{row:?} is not {label}");
        assert!(
            row.chars().count() <= 120,
            "{row:?} is wider than 120 columns"
        );
    }
    assert_eq!(side_by_side.len(), DEFAULT_LABELS.len(), "{table}");
    for rules in ["anthropic", "openai", "gemini", "none"] {
        assert!(
            table.contains(&format!("\n  {rules}:")),
            "no recommendation for {rules}: {table}"
        );
    }
    // The licences and the README beside the sessions are named with the reason, and the rest
    // go on.
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        stderr.contains("skipped") && stderr.contains("README.md: not a recorded session"),
        "{stderr}"
    );
}

#[test]
fn json_is_one_versioned_line_per_strategy_and_session_then_the_totals() {
    let sessions = corpus().join("claude-stream-json");
    let output = panewise(&["window", "eval", "--json", &sessions.display().to_string()]);
    assert!(output.status.success());
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    // Seven sessions (one log holds two runs) and thirteen strategies, then one total per
    // strategy, then one recommendation per provider's cache rules.
    let strategies = DEFAULT_LABELS.len();
    assert_eq!(lines.len(), 7 * strategies + strategies + 4);
    for line in &lines {
        assert_eq!(line["schema"], "panewise.window-eval/2");
    }
    let totals: Vec<&Value> = lines.iter().filter(|l| l["scope"] == "total").collect();
    assert_eq!(totals.len(), strategies);
    assert_eq!(totals[0]["strategy"], "raw");
    assert_eq!(totals[0]["sentPctOfRaw"], 100.0);
    assert_eq!(totals[0]["costRatioMedian"], 1.0);
    for total in &totals {
        for key in [
            "costUsdByRules",
            "costRatioMedian",
            "costRatioIqr",
            "costRatioInterval90",
            "cheaperThanRawShare",
            "splitHalfAgreement",
            "byRules",
        ] {
            assert!(!total[key].is_null(), "{key}: {total}");
        }
    }
    let recommendations: Vec<&Value> = lines
        .iter()
        .filter(|l| l["scope"] == "recommendation")
        .collect();
    assert_eq!(recommendations.len(), 4);
    assert_eq!(recommendations[0]["rules"], "anthropic");
    assert_eq!(recommendations[0]["sessions"], 7);
    let raw_session = &lines[0];
    assert_eq!(raw_session["scope"], "session");
    assert_eq!(raw_session["format"], "claude-stream-json");
    assert_eq!(raw_session["cacheRules"], "anthropic");
    assert_eq!(raw_session["estimated"], false);
    assert_eq!(
        raw_session["costUsdByRules"]["anthropic"],
        raw_session["costUsd"]
    );
    for rules in ["openai", "gemini", "none"] {
        assert!(raw_session["costUsdByRules"][rules].as_f64().unwrap() > 0.0);
    }
    // Every call of these runs has the provider's reading, and the reads dominate, as they did.
    let read = raw_session["cacheRead"].as_u64().unwrap();
    let sent = raw_session["sentTokens"].as_u64().unwrap();
    assert!(read * 10 > sent * 9, "{raw_session}");
    assert!(raw_session["recordedCacheRead"].as_u64().unwrap() > 0);
}

#[test]
fn a_configured_strategy_is_compared_with_the_raw_history() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mask.json");
    std::fs::write(
        &config,
        r#"{"strategy": "observation-masking", "keepRecentObservations": 3}"#,
    )
    .unwrap();
    let sessions = corpus().join("swe-agent");
    let output = panewise(&[
        "window",
        "eval",
        "--config",
        &config.display().to_string(),
        &sessions.display().to_string(),
    ]);
    assert!(output.status.success());
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("\nraw "), "{table}");
    assert!(table.contains("\nobservation-masking/3 "), "{table}");
    assert!(!table.contains("sliding-window"), "{table}");
}

#[test]
fn a_file_it_cannot_read_is_named_and_the_rest_go_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-notes.txt"), "just some notes\n").unwrap();
    std::fs::write(
        dir.path().join("b-broken.jsonl"),
        "{\"type\": \"assistant\", \"message\": 3\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c-conversation.jsonl"),
        concat!(
            r#"{"role": "user", "content": "list the files"}"#,
            "\n",
            r#"{"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\": \"ls\"}"}}]}"#,
            "\n",
            r#"{"role": "tool", "tool_call_id": "1", "content": "a b c"}"#,
            "\n",
            r#"{"role": "assistant", "content": "three files"}"#,
            "\n"
        ),
    )
    .unwrap();
    let output = panewise(&["window", "eval", &dir.path().display().to_string()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("a-notes.txt: not a recorded session"),
        "{stderr}"
    );
    assert!(stderr.contains("b-broken.jsonl"), "{stderr}");
    assert!(stderr.contains("1 session(s) read, 2 skipped"), "{stderr}");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.starts_with("1 session(s), 2 model calls, 1 tool calls"),
        "{table}"
    );
}

#[test]
fn nothing_readable_is_a_data_error_and_a_bad_plot_name_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "nothing here\n").unwrap();
    let output = panewise(&["window", "eval", &dir.path().display().to_string()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no recorded session could be read"));
    let output = panewise(&["window", "eval", "--plot", "out.jpg", &corpus_arg()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains(".svg or .png"));
    let output = panewise(&["window", "eval", "/no/such/dir"]);
    assert_eq!(output.status.code(), Some(3));
    // A provider-side strategy cannot be replayed: refused, never shown as the raw history.
    let config = dir.path().join("clear.json");
    std::fs::write(&config, r#"{"strategy": "anthropic-clear-tool-uses"}"#).unwrap();
    let output = panewise(&[
        "window",
        "eval",
        "--config",
        &config.display().to_string(),
        &corpus_arg(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("applied by the provider"), "{err}");
}

#[test]
fn the_plot_is_drawn_to_svg_and_png_with_every_strategy_named() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = corpus().join("claude-stream-json").display().to_string();
    let svg = dir.path().join("frontier.svg");
    let output = panewise(&[
        "window",
        "eval",
        "--plot",
        &svg.display().to_string(),
        &sessions,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100.min(text.len())]);
    for label in DEFAULT_LABELS {
        assert!(text.contains(label), "{label} is not in the plot");
    }
    assert!(text.contains("frontier"));
    let png = dir.path().join("frontier.png");
    let output = panewise(&[
        "window",
        "eval",
        "--plot",
        &png.display().to_string(),
        &sessions,
    ]);
    assert!(output.status.success());
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // The same input draws the same picture.
    let again = dir.path().join("again.svg");
    panewise(&[
        "window",
        "eval",
        "--plot",
        &again.display().to_string(),
        &sessions,
    ]);
    assert_eq!(std::fs::read(&again).unwrap(), text.as_bytes());
}

#[test]
fn window_without_eval_still_needs_its_config_and_conversation() {
    let output = panewise(&["window"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--config"), "{stderr}");
}

#[test]
fn docs_window_md_holds_the_corpus_results_and_their_plot() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("window-eval.svg");
    let output = panewise(&[
        "window",
        "eval",
        "--plot",
        &svg.display().to_string(),
        &corpus_arg(),
    ]);
    assert!(output.status.success());
    let doc = std::fs::read_to_string(workspace_path("docs/WINDOW.md")).unwrap();
    let block = doc
        .split("<!-- window-eval-results: begin")
        .nth(1)
        .and_then(|rest| rest.split("<!-- window-eval-results: end -->").next())
        .expect("docs/WINDOW.md marks its results block");
    let table = block
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the block holds a text fence");
    let regenerate = "regenerate with `panewise window eval --plot docs/window-eval.svg \
                      ../shared/trajectories` from the workspace root and paste the table";
    assert_eq!(
        table,
        String::from_utf8_lossy(&output.stdout),
        "docs/WINDOW.md's results are stale: {regenerate}"
    );
    assert!(
        std::fs::read(workspace_path("docs/window-eval.svg")).unwrap()
            == std::fs::read(&svg).unwrap(),
        "docs/window-eval.svg is stale: {regenerate}"
    );
}

#[test]
fn events_are_one_line_per_counted_loss_with_where_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let sessions = corpus().join("claude-stream-json").display().to_string();
    let output = panewise(&[
        "window",
        "eval",
        "--json",
        "--events",
        &events.display().to_string(),
        &sessions,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&events).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        !lines.is_empty(),
        "no loss event on the stream-json sessions"
    );
    let mut per_row: std::collections::BTreeMap<(String, String, String), u64> =
        std::collections::BTreeMap::new();
    for line in &lines {
        for key in [
            "session",
            "strategy",
            "call",
            "kind",
            "term",
            "evictedAt",
            "message",
        ] {
            assert!(line.get(key).is_some(), "{key} missing in {line}");
        }
        let kind = line["kind"].as_str().unwrap();
        assert!(matches!(kind, "evicted_before_use" | "refetch"), "{line}");
        assert_ne!(
            line["strategy"], "raw",
            "the raw history loses nothing: {line}"
        );
        assert!(
            line["evictedAt"].as_u64() <= line["call"].as_u64(),
            "{line}"
        );
        *per_row
            .entry((
                line["session"].as_str().unwrap().to_string(),
                line["strategy"].as_str().unwrap().to_string(),
                kind.to_string(),
            ))
            .or_default() += 1;
    }
    // Each count in the report is its number of events.
    for row in String::from_utf8_lossy(&output.stdout).lines() {
        let row: Value = serde_json::from_str(row).unwrap();
        let (Some(session), Some(strategy)) = (row["session"].as_str(), row["strategy"].as_str())
        else {
            continue;
        };
        for (kind, key) in [
            ("evicted_before_use", "evictedBeforeUse"),
            ("refetch", "refetches"),
        ] {
            if let Some(count) = row[key].as_u64() {
                let key = (session.to_string(), strategy.to_string(), kind.to_string());
                assert_eq!(per_row.get(&key).copied().unwrap_or(0), count, "{key:?}");
            }
        }
    }
}

#[test]
fn the_events_file_is_left_untouched_when_nothing_is_read_and_a_bad_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "nothing here\n").unwrap();
    let events = dir.path().join("events.jsonl");
    std::fs::write(&events, "kept\n").unwrap();
    let output = panewise(&[
        "window",
        "eval",
        "--events",
        &events.display().to_string(),
        &dir.path().join("notes.txt").display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&events).unwrap(), "kept\n");
    let missing = dir.path().join("no-such-dir").join("events.jsonl");
    let sessions = corpus().join("claude-stream-json").display().to_string();
    let output = panewise(&[
        "window",
        "eval",
        "--events",
        &missing.display().to_string(),
        &sessions,
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--events: cannot write"), "{stderr}");
}

#[test]
fn a_plot_file_is_left_untouched_when_nothing_could_be_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "nothing here\n").unwrap();
    let sessions = dir.path().join("notes.txt").display().to_string();
    // (an existing picture, a missing one) for each kind: the first keeps its bytes, the
    // second is not created.
    for name in ["old.svg", "old.png"] {
        let existing = dir.path().join(name);
        std::fs::write(&existing, b"the previous picture").unwrap();
        let output = panewise(&[
            "window",
            "eval",
            "--plot",
            &existing.display().to_string(),
            &sessions,
        ]);
        assert_eq!(output.status.code(), Some(1), "{name}");
        assert_eq!(
            std::fs::read(&existing).unwrap(),
            b"the previous picture",
            "{name} was touched"
        );
        let missing = dir.path().join(format!("new-{name}"));
        let output = panewise(&[
            "window",
            "eval",
            "--plot",
            &missing.display().to_string(),
            &sessions,
        ]);
        assert_eq!(output.status.code(), Some(1), "{name}");
        assert!(!missing.exists(), "new-{name} was created");
    }
    // An unwritable place still fails before the run.
    let output = panewise(&[
        "window",
        "eval",
        "--plot",
        &dir.path().join("no/such/dir/p.svg").display().to_string(),
        &sessions,
    ]);
    assert_ne!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--plot: cannot write"));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}
