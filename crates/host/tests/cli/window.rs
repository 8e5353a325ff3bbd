//! Tests of `panewise window`: every built-in strategy on the example conversation.

use serde_json::Value;

use super::*;

const DATA: &str = "crates/window/tests/data";

fn data(name: &str) -> String {
    workspace_path(&format!("{DATA}/{name}"))
        .to_string_lossy()
        .into_owned()
}

/// Runs `panewise window` and parses its JSON output, failing with stderr on a bad exit.
fn window(config: &str, extra: &[&str]) -> Value {
    let config = data(config);
    let conversation = data("conversation.jsonl");
    let mut args = vec!["window", "--config", &config, &conversation];
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
    assert!(!output.status.success());
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
        .filter(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .starts_with("[masked tool result")
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
    let dir = std::env::temp_dir().join(format!("panewise-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("keepRecentTurns"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
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
