//! A session recorded over two runs (the second resuming the first, as panewise records a
//! session it resumes) counts every token and cent once. The truth is what the mock model
//! server reported, call by call, in `<cli>/resume-two-runs.requests.json`.

use panewise_providers::{
    decode_all, fold_events, summarize, CostSource, Mapper, ModelTable, PaneSummary, PriceTable,
    Provider, SessionStats,
};
use serde_json::Value;

use crate::fixture;

/// The JSON payloads of one recorded response: each SSE `data:` frame, or the whole body.
fn payloads(response: &str) -> Vec<Value> {
    let body = response.split_once('\n').map_or("", |(_, body)| body);
    let frames: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect();
    if frames.is_empty() {
        serde_json::from_str(body).into_iter().collect()
    } else {
        frames
    }
}

/// Each recorded call: its path and the last usage object the mock sent in it.
fn calls(cli: &str, usage_key: &str) -> Vec<(String, Value)> {
    let log: Value =
        serde_json::from_slice(&fixture(&format!("{cli}/resume-two-runs.requests.json"))).unwrap();
    log.as_array()
        .unwrap()
        .iter()
        .map(|request| {
            let response = request["mock_response"].as_str().unwrap();
            let usage = payloads(response)
                .iter()
                .rev()
                .find_map(|payload| find(payload, usage_key))
                .unwrap_or_else(|| panic!("no {usage_key} in {response}"));
            (request["path"].as_str().unwrap().to_owned(), usage)
        })
        .collect()
}

/// The first value under `key` anywhere in `value`.
fn find(value: &Value, key: &str) -> Option<Value> {
    match value {
        Value::Object(map) => map
            .get(key)
            .cloned()
            .or_else(|| map.values().find_map(|inner| find(inner, key))),
        Value::Array(items) => items.iter().find_map(|inner| find(inner, key)),
        _ => None,
    }
}

fn count(usage: &Value, path: &[&str]) -> u64 {
    path.iter()
        .try_fold(usage, |value, key| value.get(key))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

fn summary(provider: Provider, prices: PriceTable) -> PaneSummary {
    let path = format!(
        "{}/resume-two-runs.{}",
        provider.as_str(),
        match provider {
            Provider::ClaudeCode => "ndjson",
            _ => "jsonl",
        }
    );
    let (decoded, counts) = decode_all(provider, &fixture(&path));
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(provider, ModelTable::built_in()).with_prices(prices);
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.unknown_events, 0);
    assert_eq!(summary.decode_errors, 0);
    assert_eq!(summary.turns_completed, 2, "both runs complete");
    summary
}

fn tokens_of(summary: &PaneSummary) -> [Option<u64>; 5] {
    [
        summary.input_tokens,
        summary.cached_input_tokens,
        summary.cache_write_input_tokens,
        summary.output_tokens,
        summary.reasoning_tokens,
    ]
}

#[test]
fn codex_resumed_thread_counts_each_call_once_although_it_reports_running_totals() {
    let calls = calls("codex", "usage");
    assert_eq!(calls.len(), 3, "two calls in run one, one in run two");
    let sum = |path: &[&str]| {
        calls
            .iter()
            .map(|(_, usage)| count(usage, path))
            .sum::<u64>()
    };
    let cached = sum(&["input_tokens_details", "cached_tokens"]);
    let expected = SessionStats {
        input_tokens: Some(sum(&["input_tokens"]) - cached),
        cached_input_tokens: Some(cached),
        cache_write_input_tokens: Some(0),
        output_tokens: Some(sum(&["output_tokens"])),
        reasoning_tokens: Some(sum(&["output_tokens_details", "reasoning_tokens"])),
        ..SessionStats::default()
    };
    let summary = summary(Provider::Codex, PriceTable::built_in());
    assert_eq!(
        tokens_of(&summary),
        [
            expected.input_tokens,
            expected.cached_input_tokens,
            expected.cache_write_input_tokens,
            expected.output_tokens,
            expected.reasoning_tokens
        ]
    );
    // The resumed run's own line says 8330 input tokens: the thread's total, not the run's.
    assert_eq!(
        expected
            .input_tokens
            .zip(expected.cached_input_tokens)
            .map(|(a, b)| a + b),
        Some(8_330)
    );
    let price = PriceTable::built_in();
    let expected_cost = price.estimate("gpt-5.5", &expected).unwrap();
    let cost = summary.cost_usd.unwrap();
    assert!(
        (cost - expected_cost).abs() < 1e-12,
        "{cost} != {expected_cost}"
    );
    assert_eq!(summary.cost_source, CostSource::Estimated);
    assert!(summary.model_assumed);
}

#[test]
fn claude_resumed_session_counts_each_call_once_and_its_cost_once() {
    let calls = calls("claude-code", "usage");
    assert_eq!(calls.len(), 3);
    let sum = |key: &str| {
        calls
            .iter()
            .map(|(_, usage)| count(usage, &[key]))
            .sum::<u64>()
    };
    let summary = summary(Provider::ClaudeCode, PriceTable::built_in());
    assert_eq!(
        tokens_of(&summary),
        [
            Some(sum("input_tokens")),
            Some(sum("cache_read_input_tokens")),
            Some(sum("cache_creation_input_tokens")),
            Some(sum("output_tokens")),
            Some(0),
        ]
    );
    // Run two's `total_cost_usd` is the session's running total: the sum of both runs'
    // costs, which is what the pane must show, once.
    let stream = String::from_utf8(fixture("claude-code/resume-two-runs.ndjson")).unwrap();
    let last_total = stream
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == "result")
        .filter_map(|line| line["total_cost_usd"].as_f64())
        .next_back()
        .unwrap();
    let cost = summary.cost_usd.unwrap();
    assert!((cost - last_total).abs() < 1e-12, "{cost} != {last_total}");
    assert!((cost - (0.042_36 + 0.004_5)).abs() < 1e-12);
    assert_eq!(summary.cost_source, CostSource::Reported);
}

#[test]
fn gemini_resumed_session_adds_its_per_run_stats_and_prices_each_model() {
    let calls = calls("gemini-cli", "usageMetadata");
    assert_eq!(calls.len(), 5, "routing and work calls of both runs");
    let sum = |key: &str| {
        calls
            .iter()
            .map(|(_, usage)| count(usage, &[key]))
            .sum::<u64>()
    };
    let cached = sum("cachedContentTokenCount");
    let thoughts = sum("thoughtsTokenCount");
    // The built-in list has no price for the working model: the cost is unknown, not partial.
    let unpriced = summary(Provider::GeminiCli, PriceTable::built_in());
    assert_eq!(unpriced.cost_usd, None);
    assert_eq!(unpriced.cost_source, CostSource::Unknown);
    assert_eq!(unpriced.warnings.len(), 1, "{:?}", unpriced.warnings);
    // With a price file for it, every call is priced at its own model's prices.
    let prices = PriceTable::built_in().overridden_by(
        PriceTable::from_json(
            r#"{"prices":[{"model":"gemini-3.8-flash","input":2,"output":12,"cached_input":0.2}]}"#,
        )
        .unwrap(),
    );
    let summary = summary(Provider::GeminiCli, prices.clone());
    assert_eq!(
        tokens_of(&summary),
        [
            Some(sum("promptTokenCount") - cached),
            Some(cached),
            None,
            Some(sum("candidatesTokenCount") + thoughts),
            Some(thoughts),
        ]
    );
    let expected_cost: f64 = calls
        .iter()
        .map(|(path, usage)| {
            let model = path
                .trim_start_matches("/v1beta/models/")
                .split(':')
                .next()
                .unwrap();
            let call_cached = count(usage, &["cachedContentTokenCount"]);
            let call_thoughts = count(usage, &["thoughtsTokenCount"]);
            let call = SessionStats {
                input_tokens: Some(count(usage, &["promptTokenCount"]) - call_cached),
                cached_input_tokens: Some(call_cached),
                output_tokens: Some(count(usage, &["candidatesTokenCount"]) + call_thoughts),
                reasoning_tokens: Some(call_thoughts),
                ..SessionStats::default()
            };
            prices.estimate(model, &call).unwrap()
        })
        .sum();
    let cost = summary.cost_usd.unwrap();
    assert!(
        (cost - expected_cost).abs() < 1e-12,
        "{cost} != {expected_cost}"
    );
    assert_eq!(summary.cost_source, CostSource::Estimated);
    assert!(summary.warnings.is_empty());
}
