//! What a replay bills for summaries: nothing for a fold the cache guard holds (the guard
//! decides before a summary is asked for), and a summary priced as the summarizer's model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use panewise_window::cache::{CachePricing, CacheRules};
use panewise_window::{CacheGuard, Message, PinConfig, Retain, StrategyConfig};
use panewise_window_eval::replay::{replay, Figures, Prepared, Prices, ReplaySettings};
use panewise_window_eval::{Format, Recording};

/// A request, then `turns` reads of large files: long enough that a fold at a small
/// threshold engages on most calls.
fn long_session(turns: usize) -> Recording {
    let mut messages = vec![Message::user("go through the modules")];
    for i in 0..turns {
        let id = format!("c{i}");
        let path = format!(r#"{{"path": "src/module_{i}.rs"}}"#);
        messages.push(Message::assistant_calls("", &[(&id, "read_file", &path)]));
        let body = format!("fn item_{i}() {{}}\n").repeat(120);
        messages.push(Message::tool_result(&id, &body));
    }
    messages.push(Message::assistant("done"));
    let mut recording = Recording::new(Format::WindowConversation);
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    recording.messages = messages;
    recording.repair();
    recording
}

/// Four small reads, then eight larger ones: a fold of the oldest turns (all but the last
/// two) re-writes the two last large ones and saves at most ten turns, never the 11.5 times as
/// much that pays back on the next call under Anthropic's multipliers, so under
/// `paybackCalls` 1 the guard holds every fold, even with an empty summary.
fn tail_heavy_session() -> Recording {
    let mut messages = vec![Message::user("go through the modules")];
    for i in 0..12 {
        let id = format!("c{i}");
        let path = format!(r#"{{"path": "src/module_{i}.rs"}}"#);
        messages.push(Message::assistant_calls("", &[(&id, "read_file", &path)]));
        let lines = if i < 4 { 20 } else { 200 };
        messages.push(Message::tool_result(
            &id,
            format!("fn item_{i}() {{}}\n").repeat(lines),
        ));
    }
    messages.push(Message::assistant("done"));
    let mut recording = Recording::new(Format::WindowConversation);
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    recording.messages = messages;
    recording.repair();
    recording
}

fn prices(model: &str, per_million: f64) -> Prices {
    Prices {
        model: model.into(),
        input: per_million,
        output: per_million,
        cache_read: per_million / 10.0,
        cache_write: per_million * 1.25,
    }
}

/// Anthropic's cache rules, the session priced as `session-model` at $3 a million.
fn settings(summarizer_prices: Option<Prices>) -> ReplaySettings {
    let session = prices("session-model", 3.0);
    ReplaySettings {
        cache: CacheRules::anthropic(),
        cache_pricing: CachePricing::from_prices(
            session.input,
            session.cache_read,
            session.cache_write,
            false,
        ),
        prices: Some(session),
        summarizer_prices,
    }
}

fn fold(model: &str, payback_calls: Option<u64>) -> StrategyConfig {
    StrategyConfig::SummarizeOldest {
        threshold_tokens: 2_000,
        keep_recent_turns: 2,
        model: model.into(),
        retain: Retain::Conversation,
        pins: PinConfig {
            keep_last_tool_results: 0,
            keep_ledger_facts: 0,
            exclude_tools: Vec::new(),
            cache: CacheGuard {
                payback_calls,
                ..CacheGuard::default()
            },
        },
    }
}

fn hybrid(model: &str, payback_calls: Option<u64>) -> StrategyConfig {
    let StrategyConfig::SummarizeOldest { pins, .. } = fold(model, payback_calls) else {
        unreachable!("fold builds summarize-oldest")
    };
    StrategyConfig::Hybrid {
        threshold_tokens: 2_000,
        keep_recent_turns: 2,
        keep_recent_observations: 2,
        clear_at_least_tokens: None,
        model: model.into(),
        retain: Retain::Conversation,
        pins,
    }
}

fn run(config: &StrategyConfig, settings: &ReplaySettings) -> Figures {
    replay(&Prepared::new(&long_session(30)), Some(config), settings).unwrap()
}

fn run_tail_heavy(config: &StrategyConfig, settings: &ReplaySettings) -> Figures {
    replay(
        &Prepared::new(&tail_heavy_session()),
        Some(config),
        settings,
    )
    .unwrap()
}

/// What a case's summaries must cost, given the tokens they took.
#[derive(Debug)]
enum Billed {
    /// No summary at all: no tokens, no dollars.
    Nothing,
    /// Some summaries asked for and some folds held: every summary paid for was used.
    Used,
    /// Tokens counted, 0 dollars (the offline extractive summarizer).
    Free,
    /// Tokens counted, priced at this many dollars a million (input and output alike).
    PerMillion(f64),
    /// Tokens counted, no price known: the whole cost is unknown.
    Unknown,
}

#[test]
fn summaries_are_billed_as_the_summarizer_model_and_never_for_a_held_fold() {
    let haiku = prices("haiku-like", 1.0);
    let cases: Vec<(&str, StrategyConfig, Option<Prices>, Billed)> = vec![
        // paybackCalls 1 on the tail-heavy session: every fold is held, and held before any
        // summary is asked for.
        (
            "held summarize-oldest",
            fold("haiku-like", Some(1)),
            Some(haiku.clone()),
            Billed::Nothing,
        ),
        (
            "held hybrid",
            hybrid("haiku-like", Some(1)),
            Some(haiku.clone()),
            Billed::Nothing,
        ),
        // paybackCalls 3 on the long session: the first fold pays with an empty summary and is
        // asked for; its summary makes it pay only later, yet it is applied (the guard
        // decided before asking), and the later folds, judged with that summary's size, are
        // held without asking.
        (
            "guarded, asked once",
            fold("haiku-like", Some(3)),
            Some(haiku.clone()),
            Billed::Used,
        ),
        ("extractive", fold("extractive", None), None, Billed::Free),
        (
            "named summarizer",
            fold("haiku-like", None),
            Some(haiku.clone()),
            Billed::PerMillion(1.0),
        ),
        (
            "named summarizer, hybrid",
            hybrid("haiku-like", None),
            Some(haiku.clone()),
            Billed::PerMillion(1.0),
        ),
        (
            "the session's own model",
            fold("session-model", None),
            None,
            Billed::PerMillion(3.0),
        ),
        (
            "a model without a price",
            fold("unpriced-model", None),
            None,
            Billed::Unknown,
        ),
    ];
    for (case, config, summarizer, billed) in cases {
        let figures = match billed {
            Billed::Nothing => run_tail_heavy(&config, &settings(summarizer)),
            _ => run(&config, &settings(summarizer)),
        };
        match billed {
            Billed::Nothing => {
                assert!(figures.held > 0, "{case}: nothing was held: {figures:?}");
                assert_eq!(figures.edits, 0, "{case}");
                assert_eq!(
                    figures.summary_tokens, 0,
                    "{case}: a held fold was summarized"
                );
                assert_eq!(figures.summary_cost_usd, None, "{case}");
            }
            Billed::Used => {
                assert!(
                    figures.summary_tokens > 0,
                    "{case}: no summary: {figures:?}"
                );
                assert!(figures.held > 0, "{case}: nothing was held: {figures:?}");
                assert!(
                    figures.edits > 0,
                    "{case}: summaries paid, none used: {figures:?}"
                );
            }
            Billed::Free => {
                assert!(
                    figures.summary_tokens > 0,
                    "{case}: no summary: {figures:?}"
                );
                assert_eq!(figures.summary_cost_usd, Some(0.0), "{case}");
                assert!(figures.cost_usd.is_some(), "{case}");
            }
            Billed::PerMillion(price) => {
                assert!(
                    figures.summary_tokens > 0,
                    "{case}: no summary: {figures:?}"
                );
                let expected = figures.summary_tokens as f64 * price / 1_000_000.0;
                let billed = figures.summary_cost_usd.expect("priced");
                assert!(
                    (billed - expected).abs() < 1e-12,
                    "{case}: {billed} != {expected}"
                );
            }
            Billed::Unknown => {
                assert!(
                    figures.summary_tokens > 0,
                    "{case}: no summary: {figures:?}"
                );
                assert_eq!(figures.summary_cost_usd, None, "{case}");
                assert_eq!(figures.cost_usd, None, "{case}: billed as if free");
            }
        }
    }
}

#[test]
fn a_summary_costs_the_same_tokens_whatever_model_prices_it() {
    // The tokens are the extractive summarizer's whatever the model named; only dollars move.
    let free = run(&fold("extractive", None), &settings(None));
    let priced = run(
        &fold("haiku-like", None),
        &settings(Some(prices("haiku-like", 1.0))),
    );
    assert_eq!(free.summary_tokens, priced.summary_tokens);
    assert_eq!(free.edits, priced.edits);
    let difference = priced.cost_usd.unwrap() - free.cost_usd.unwrap();
    assert!((difference - priced.summary_cost_usd.unwrap()).abs() < 1e-12);
}
