//! The report on small hand-built sessions: every strategy priced under every provider's cache
//! rules (and the shortcut that bills one replay under several rule sets giving what a replay
//! per rule set gives), the statistics and recommendations in the JSON lines and the table,
//! and the default set's labels.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use panewise_providers::PriceTable;
use panewise_window::{CacheGuard, Message, PinConfig, StrategyConfig};
use panewise_window_eval::replay::{replay, Figures, Prepared};
use panewise_window_eval::report::{
    billing_for, default_strategies, evaluate_session, settings_under, CacheChoice, Report,
    RuleSet, SessionResult, Strategy, JSON_SCHEMA,
};
use panewise_window_eval::{EvalError, Family, Format, Recording};
use serde_json::Value;

/// A session of `rounds` reads, each output `size` lines long, after a system prompt long
/// enough for the prompt cache.
fn session(rounds: usize, size: usize) -> Recording {
    session_of(&vec![size; rounds])
}

/// A session of one read per entry of `sizes`, its output that many lines long.
fn session_of(sizes: &[usize]) -> Recording {
    let mut messages = vec![Message::user("fix the failing test in the parser")];
    for (round, &size) in sizes.iter().enumerate() {
        let id = format!("t{round}");
        let args = format!(r#"{{"path": "src/file_{round}.rs"}}"#);
        messages.push(Message::assistant_calls("", &[(&id, "read_file", &args)]));
        let body = format!("fn item_{round}() {{ body_{round} }}\n").repeat(size);
        messages.push(Message::tool_result(&id, body));
    }
    messages.push(Message::assistant("fixed"));
    let mut recording = Recording::new(Format::WindowConversation);
    recording.family = Some(Family::Anthropic);
    recording.model = Some("claude-sonnet-4-5".into());
    recording.system = Some("You are a careful coding agent. ".repeat(400));
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    recording.messages = messages;
    recording.repair();
    recording
}

fn masking(keep: usize, guard: CacheGuard) -> StrategyConfig {
    StrategyConfig::ObservationMasking {
        keep_recent_observations: keep,
        clear_at_least_tokens: None,
        trigger_tokens: None,
        pins: PinConfig {
            keep_last_tool_results: 0,
            keep_ledger_facts: 0,
            exclude_tools: Vec::new(),
            cache: guard,
        },
    }
}

fn strategies() -> Vec<Strategy> {
    let guarded = CacheGuard {
        payback_calls: Some(10),
        ..CacheGuard::default()
    };
    vec![
        Strategy::raw(),
        Strategy::configured(masking(2, CacheGuard::default())),
        Strategy::configured(masking(2, guarded)),
        Strategy::configured(masking(1, CacheGuard::default())),
    ]
}

fn sessions() -> Vec<(String, Recording)> {
    vec![
        ("small".into(), session(4, 20)),
        ("medium".into(), session(10, 60)),
        ("large".into(), session(16, 120)),
    ]
}

fn evaluate(
    name: &str,
    recording: &Recording,
    strategies: &[Strategy],
    cache: CacheChoice,
) -> SessionResult {
    let billing = billing_for(recording, &PriceTable::built_in(), None, cache);
    let mut plain = |_: usize, run: &mut dyn FnMut() -> Result<Figures, EvalError>| run();
    evaluate_session(name, recording, strategies, billing, &mut plain).unwrap()
}

fn report(cache: CacheChoice) -> Report {
    let strategies = strategies();
    Report {
        strategies: strategies.iter().map(|s| s.label.clone()).collect(),
        sessions: sessions()
            .iter()
            .map(|(name, recording)| evaluate(name, recording, &strategies, cache))
            .collect(),
    }
}

#[test]
fn every_rule_set_gives_what_its_own_replay_gives() {
    let strategies = strategies();
    // What the guarded strategy held under Anthropic's rules, per session: both a replay that
    // held nothing (which also serves OpenAI's and Gemini's) and one that held something.
    let mut held = Vec::new();
    let mut cases = sessions();
    // A huge first output and small ones after: masking it pays back at once, so the guard
    // lets it through under every rule set.
    cases.push(("front-heavy".into(), session_of(&[3000, 1, 1, 1, 1])));
    for cache in [
        CacheChoice::Provider,
        CacheChoice::Fixed(RuleSet::OpenAi.rules()),
        CacheChoice::Fixed(RuleSet::None.rules()),
    ] {
        for (name, recording) in cases.clone() {
            let result = evaluate(&name, &recording, &strategies, cache);
            let prepared = Prepared::new(&recording);
            let own = RuleSet::of(result.billing.settings.cache);
            for rules in RuleSet::ALL {
                let settings = if rules == own {
                    result.billing.settings.clone()
                } else {
                    settings_under(result.billing.settings.prices.as_ref(), rules)
                };
                for (index, strategy) in strategies.iter().enumerate() {
                    let alone = replay(&prepared, strategy.config.as_ref(), &settings).unwrap();
                    assert_eq!(
                        result.by_rules.get(rules)[index],
                        alone,
                        "{name}, {}, {}",
                        strategy.label,
                        rules.name()
                    );
                }
            }
            let guarded = &result.by_rules.get(RuleSet::Anthropic)[2];
            held.push((guarded.held, guarded.edits));
            for (index, (_, figures)) in result.figures.iter().enumerate() {
                assert_eq!(&result.by_rules.get(own)[index], figures, "{name}");
            }
        }
    }
    assert!(
        held.iter().any(|(held, edits)| *held == 0 && *edits > 0)
            && held.iter().any(|(held, _)| *held > 0),
        "{held:?}"
    );
}

#[test]
fn the_rule_sets_price_the_same_tokens_differently() {
    let result = evaluate(
        "large",
        &session(16, 120),
        &strategies(),
        CacheChoice::Provider,
    );
    let raw = |rules| result.by_rules.get(rules)[0].clone();
    let none = raw(RuleSet::None);
    let anthropic = raw(RuleSet::Anthropic);
    let openai = raw(RuleSet::OpenAi);
    // The same requests under every rule set; only the cache's split and the cost differ.
    assert_eq!(none.sent_tokens, anthropic.sent_tokens);
    assert_eq!(none.cache_read + none.cache_write, 0);
    assert!(anthropic.cache_write > 0 && openai.cache_write == 0);
    assert!(openai.cache_read > 0);
    let (none_cost, anthropic_cost) = (none.cost_usd.unwrap(), anthropic.cost_usd.unwrap());
    assert!(anthropic_cost < none_cost, "{anthropic_cost} {none_cost}");
}

#[test]
fn the_json_lines_carry_costs_by_rules_statistics_and_recommendations() {
    let report = report(CacheChoice::Provider);
    let lines: Vec<Value> = report
        .json_lines()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let strategies = report.strategies.len();
    assert_eq!(lines.len(), 3 * strategies + strategies + 4);
    for line in &lines {
        assert_eq!(line["schema"], JSON_SCHEMA);
        assert_eq!(JSON_SCHEMA, "panewise.window-eval/2");
    }
    let rules = ["anthropic", "openai", "gemini", "none"];
    for line in lines.iter().filter(|l| l["scope"] == "session") {
        // These hand-built sessions record no usage: their counts are estimated, with the
        // table's calibration, whose error is unknown.
        assert_eq!(line["estimated"], true);
        assert!(line["estimateError"].is_null(), "{line}");
        for key in rules {
            let cost = line["costUsdByRules"][key].as_f64();
            assert!(cost.is_some_and(|c| c > 0.0), "{key}: {line}");
        }
        assert_eq!(
            line["costUsdByRules"]["anthropic"], line["costUsd"],
            "the session's own rules are the primary figures"
        );
    }
    let totals: Vec<&Value> = lines.iter().filter(|l| l["scope"] == "total").collect();
    assert_eq!(totals.len(), strategies);
    let raw = totals[0];
    assert_eq!(raw["strategy"], "raw");
    assert_eq!(raw["costRatioMedian"], 1.0);
    assert_eq!(raw["costRatioIqr"], serde_json::json!([1.0, 1.0]));
    assert_eq!(raw["costRatioInterval90"], serde_json::json!([1.0, 1.0]));
    assert_eq!(raw["cheaperThanRawShare"], 0.0);
    assert_eq!(raw["sessionsCompared"], 3);
    for total in &totals {
        let median = total["costRatioMedian"].as_f64().unwrap();
        let [q1, q3] = pair(&total["costRatioIqr"]);
        let [lo, hi] = pair(&total["costRatioInterval90"]);
        assert!(q1 <= median && median <= q3, "{total}");
        assert!(0.0 < lo && lo <= hi, "{total}");
        let share = total["cheaperThanRawShare"].as_f64().unwrap();
        let agreement = total["splitHalfAgreement"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share) && (0.0..=1.0).contains(&agreement));
        for key in rules {
            assert!(total["costUsdByRules"][key].as_f64().unwrap() > 0.0);
            let by_rules = &total["byRules"][key];
            for field in [
                "costRatioTotal",
                "costRatioMedian",
                "costRatioIqr",
                "costRatioInterval90",
                "cheaperThanRawShare",
                "splitHalfAgreement",
            ] {
                assert!(!by_rules[field].is_null(), "{key} {field}: {total}");
            }
        }
    }
    // Masking the large outputs is cheaper than raw on every session without a cache.
    let masked = totals[3];
    assert_eq!(masked["byRules"]["none"]["cheaperThanRawShare"], 1.0);
    let recommendations: Vec<&Value> = lines
        .iter()
        .filter(|l| l["scope"] == "recommendation")
        .collect();
    let named: Vec<&str> = recommendations
        .iter()
        .map(|l| l["rules"].as_str().unwrap())
        .collect();
    assert_eq!(named, rules);
    for line in recommendations {
        assert_eq!(line["sessions"], 3);
        // A recommendation names a strategy only when it is reliable.
        assert_eq!(
            line["strategy"].is_null(),
            line["reliable"] == false,
            "{line}"
        );
        assert!(line["pick"].is_string());
    }
}

fn pair(value: &Value) -> [f64; 2] {
    [value[0].as_f64().unwrap(), value[1].as_f64().unwrap()]
}

#[test]
fn the_table_ends_with_the_costs_by_rules_and_a_recommendation_per_provider() {
    let report = report(CacheChoice::Provider);
    let table = report.table();
    let longest = report.strategies.iter().map(String::len).max().unwrap();
    let header = table
        .lines()
        .find(|line| line.contains("ANTHR"))
        .expect("the side-by-side header");
    for column in [
        "OPENAI", "GEMINI", "NONE", "MEDIAN", "IQR", "90% INT", "CHEAPER", "SPLIT",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let tail: Vec<&str> = table
        .lines()
        .skip_while(|line| !line.starts_with("what to deploy"))
        .collect();
    assert_eq!(tail.len(), 5, "{table}");
    for (line, rules) in tail[1..]
        .iter()
        .zip(["anthropic", "openai", "gemini", "none"])
    {
        assert!(
            line.trim_start().starts_with(&format!("{rules}:")),
            "{line}"
        );
        assert!(
            line.contains("deploy ") || line.contains("no strategy is reliably better than raw"),
            "{line}"
        );
        assert!(line.contains("3 sessions"), "{line}");
    }
    // The side-by-side rows fit 120 columns beside the default set's longest label (43).
    let rows = table.lines().skip_while(|line| !line.contains("ANTHR"));
    for row in rows.take_while(|line| !line.is_empty()) {
        assert!(row.chars().count() - longest + 43 <= 120, "{row}");
    }
}

#[test]
fn the_default_set_labels_every_strategy_apart() {
    let labels: Vec<String> = default_strategies(40_000)
        .into_iter()
        .map(|s| s.label)
        .collect();
    let unique: std::collections::BTreeSet<&String> = labels.iter().collect();
    assert_eq!(unique.len(), labels.len(), "{labels:?}");
    for expected in [
        "observation-masking/10",
        "observation-masking/10,clear20000",
        "observation-masking@100000/3",
    ] {
        assert!(
            labels.iter().any(|l| l == expected),
            "{expected} in {labels:?}"
        );
    }
}
