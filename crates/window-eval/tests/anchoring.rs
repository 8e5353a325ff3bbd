//! The raw replay of every Claude Code stream-json session of the shared corpus reproduces
//! what the provider recorded: its prompt tokens and the cost priced from its usage, each
//! within ±5 %, per session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use panewise_providers::PriceTable;
use panewise_window_eval::formats;
use panewise_window_eval::replay::{replay, Prepared};
use panewise_window_eval::report::{billing_for, CacheChoice};

fn corpus(dir: &str, extension: &str) -> Vec<(String, String)> {
    let root = format!(
        "{}/../../../shared/trajectories/{dir}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == extension))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn raw_replay_of_each_claude_session_is_within_five_percent_of_its_readings() {
    let table = PriceTable::built_in();
    let mut checked = 0;
    let mut failures = Vec::new();
    // The native Claude Code session store in the corpus was recorded against panewise's mock
    // model, whose cache keeps everything and re-bills a fixed split each call: its readings
    // check the counts (held in formats_native.rs), not Anthropic's cache.
    for (name, text) in corpus("claude-stream-json", "ndjson") {
        for recording in formats::read_all(&text).unwrap() {
            let billing = billing_for(&recording, &table, None, CacheChoice::Provider);
            let prepared = Prepared::new(&recording);
            let raw = replay(&prepared, None, &billing.settings).unwrap();
            let label = format!("{name} {:?}", recording.part);
            assert!(raw.recorded_prompt_tokens > 0, "{label}: no reading");
            let tokens_off = (raw.counted_prompt_tokens as f64 - raw.recorded_prompt_tokens as f64)
                / raw.recorded_prompt_tokens as f64;
            let cost = raw.cost_on_recorded_usd.unwrap();
            let recorded_cost = raw.recorded_cost_usd.unwrap();
            let cost_off = (cost - recorded_cost) / recorded_cost;
            eprintln!(
                "{label}: tokens {} vs {} ({:+.1} %), cost {cost:.4} vs {recorded_cost:.4} ({:+.1} %), missing {} spans {} tokens; cache read {} vs {}, write {} vs {}, uncached {}",
                raw.counted_prompt_tokens,
                raw.recorded_prompt_tokens,
                100.0 * tokens_off,
                100.0 * cost_off,
                prepared.anchoring().missing.len(),
                prepared.anchoring().missing_tokens(),
                raw.cache_read_on_recorded,
                raw.recorded_cache_read,
                raw.cache_write_on_recorded,
                raw.recorded_cache_write,
                raw.uncached
            );
            // Where the agent reported its own cost for the run, the replay's matches it too.
            if let Some(reported) = recording.recorded_total.as_ref().and_then(|t| t.cost_usd) {
                let off = (cost - reported) / reported;
                if off.abs() > 0.05 {
                    failures.push(format!(
                        "{label}: cost {:+.1} % of the reported",
                        100.0 * off
                    ));
                }
            }
            if tokens_off.abs() > 0.05 || cost_off.abs() > 0.05 {
                failures.push(format!(
                    "{label}: tokens {:+.1} %, cost {:+.1} %",
                    100.0 * tokens_off,
                    100.0 * cost_off
                ));
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 7, "the 7 stream-json runs");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Two calls eleven minutes apart: the prefix the first wrote has lapsed by the second, which
/// writes it again; two minutes apart, the second reads it.
#[test]
fn the_cache_lapses_between_calls_further_apart_than_its_lifetime() {
    use panewise_window::cache::CacheRules;
    use panewise_window::Message;
    use panewise_window_eval::replay::ReplaySettings;
    use panewise_window_eval::{Format, ModelCall, Recording};

    let session = |gap_ms: u64| {
        let mut recording = Recording::new(Format::WindowConversation);
        recording.messages = vec![
            Message::user("x".repeat(20_000)),
            Message::assistant_calls("", &[("a", "shell", "{}")]),
            Message::tool_result("a", "y".repeat(20_000)),
        ];
        recording.calls = vec![
            ModelCall {
                sent: 1,
                usage: None,
                at_ms: Some(1_000_000),
            },
            ModelCall {
                sent: 3,
                usage: None,
                at_ms: Some(1_000_000 + gap_ms),
            },
        ];
        recording
    };
    let settings = ReplaySettings {
        cache: CacheRules::anthropic(),
        prices: None,
        cache_pricing: None,
        summarizer_prices: None,
    };
    let figures = |gap_ms| {
        let recording = session(gap_ms);
        replay(&Prepared::new(&recording), None, &settings).unwrap()
    };
    let lapsed = figures(11 * 60_000);
    let kept = figures(2 * 60_000);
    assert_eq!(lapsed.cache_expiries, 1);
    assert_eq!(lapsed.cache_read, 0);
    assert_eq!(kept.cache_expiries, 0);
    assert!(kept.cache_read > 5_000, "{kept:?}");

    // Eleven minutes apart, but the second call's reading says it read its prefix from the
    // cache: what the provider recorded wins over the modelled lifetime.
    let mut recorded = session(11 * 60_000);
    let usage = |cache_read| {
        Some(panewise_window_eval::RecordedUsage {
            input: 100,
            cache_read,
            cache_write: 0,
            output: 10,
        })
    };
    recorded.calls[0].usage = usage(0);
    recorded.calls[1].usage = usage(5_000);
    let read = replay(&Prepared::new(&recorded), None, &settings).unwrap();
    assert_eq!(read.cache_expiries, 0);
}
