//! The loss measures and the cache arithmetic of a replay, pinned on small hand-built
//! sessions whose answers are known.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use panewise_window::cache::CacheRules;
use panewise_window::{CacheGuard, Message, PinConfig, StrategyConfig};
use panewise_window_eval::replay::{replay, Figures, Prepared, ReplaySettings};
use panewise_window_eval::{Format, ModelCall, RecordedUsage, Recording};

fn recording(messages: Vec<Message>) -> Recording {
    let mut recording = Recording::new(Format::WindowConversation);
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    recording.messages = messages;
    recording.repair();
    recording
}

fn no_cache() -> ReplaySettings {
    ReplaySettings {
        cache: CacheRules::None,
        prices: None,
        cache_pricing: None,
        summarizer_prices: None,
    }
}

/// Observation masking that keeps only the newest tool result, with the recency pin off so
/// nothing else holds an older one.
fn mask_all_but_last() -> StrategyConfig {
    StrategyConfig::ObservationMasking {
        keep_recent_observations: 1,
        clear_at_least_tokens: None,
        trigger_tokens: None,
        pins: PinConfig {
            keep_last_tool_results: 0,
            keep_ledger_facts: 0,
            exclude_tools: Vec::new(),
            cache: CacheGuard::default(),
        },
    }
}

/// A tool output long enough that masking it saves something (a placeholder is never longer
/// than what it replaces).
fn output(text: &str) -> String {
    format!("{text}\n{}", "// filler line of the file\n".repeat(40))
}

fn run(recording: &Recording, strategy: Option<&StrategyConfig>) -> Figures {
    replay(&Prepared::new(recording), strategy, &no_cache()).unwrap()
}

/// A read whose output names `parse_config_value`, a second read, then a search for that
/// name: the search quotes what only the first output held.
fn quoting_session() -> Recording {
    recording(vec![
        Message::user("fix the failing test"),
        Message::assistant_calls("", &[("a", "read_file", r#"{"path": "src/config.rs"}"#)]),
        Message::tool_result(
            "a",
            output("pub fn parse_config_value(text: &str) -> Value { todo }"),
        ),
        Message::assistant_calls("", &[("b", "read_file", r#"{"path": "src/other.rs"}"#)]),
        Message::tool_result("b", output("pub fn unrelated() {}")),
        Message::assistant_calls("", &[("c", "grep", r#"{"pattern": "parse_config_value"}"#)]),
        Message::tool_result("c", "src/config.rs:1"),
        Message::assistant("done"),
    ])
}

#[test]
fn masking_the_output_a_later_call_quotes_counts_one_evicted_before_use() {
    let session = quoting_session();
    let masked = run(&session, Some(&mask_all_but_last()));
    assert_eq!(masked.action_calls, 3);
    assert_eq!(masked.evicted_before_use, 1, "{masked:?}");
    assert!(masked.edits >= 1);
    // The raw history keeps every output: nothing is lost.
    let raw = run(&session, None);
    assert_eq!(raw.evicted_before_use, 0);
    assert_eq!(raw.action_calls, 3);
}

#[test]
fn a_quoted_name_still_said_elsewhere_in_the_window_is_not_lost() {
    let mut session = quoting_session();
    // The person's prompt names it too, and the prompt stays.
    session.messages[0] = Message::user("parse_config_value fails: fix it");
    let masked = run(&session, Some(&mask_all_but_last()));
    assert_eq!(masked.evicted_before_use, 0, "{masked:?}");
}

#[test]
fn a_name_never_seen_before_is_not_a_loss() {
    let session = recording(vec![
        Message::user("start"),
        Message::assistant_calls("", &[("a", "read_file", r#"{"path": "src/a.rs"}"#)]),
        Message::tool_result("a", output("nothing of note here")),
        Message::assistant_calls("", &[("b", "read_file", r#"{"path": "src/b.rs"}"#)]),
        Message::tool_result("b", output("still nothing")),
        Message::assistant_calls(
            "",
            &[("c", "read_file", r#"{"path": "src/new_module.rs"}"#)],
        ),
        Message::tool_result("c", "fresh"),
    ]);
    let masked = run(&session, Some(&mask_all_but_last()));
    assert_eq!(masked.evicted_before_use, 0);
}

/// The same read twice with another read between: under masking, the first output is gone
/// when the repeat is made.
fn repeated_read_session() -> Recording {
    recording(vec![
        Message::user("look at the config"),
        Message::assistant_calls("", &[("a", "read_file", r#"{"path": "src/config.rs"}"#)]),
        Message::tool_result("a", output("fn load() {}")),
        Message::assistant_calls("", &[("b", "read_file", r#"{"path": "src/main.rs"}"#)]),
        Message::tool_result("b", output("fn main() {}")),
        Message::assistant_calls("", &[("c", "read_file", r#"{ "path":"src/config.rs" }"#)]),
        Message::tool_result("c", "fn load() {}"),
        Message::assistant("the same"),
    ])
}

#[test]
fn a_repeated_identical_read_after_its_output_was_removed_counts_one_refetch() {
    let session = repeated_read_session();
    let masked = run(&session, Some(&mask_all_but_last()));
    assert_eq!(masked.tool_calls, 3);
    assert_eq!(masked.refetches, 1, "{masked:?}");
    assert!((masked.refetch_share() - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn a_repeat_whose_earlier_output_is_still_in_the_window_is_not_a_refetch() {
    let session = repeated_read_session();
    let raw = run(&session, None);
    assert_eq!(raw.tool_calls, 3);
    assert_eq!(raw.refetches, 0);
    // Masking that keeps every result in view removes nothing either.
    let keep_all = StrategyConfig::ObservationMasking {
        keep_recent_observations: 10,
        clear_at_least_tokens: None,
        trigger_tokens: None,
        pins: PinConfig::default(),
    };
    assert_eq!(run(&session, Some(&keep_all)).refetches, 0);
}

#[test]
fn dropping_the_turn_that_held_an_output_counts_like_masking_it() {
    let session = quoting_session();
    let sliding = StrategyConfig::SlidingWindow {
        keep_recent_turns: 1,
        pins: PinConfig {
            keep_last_tool_results: 0,
            keep_ledger_facts: 0,
            exclude_tools: Vec::new(),
            cache: CacheGuard::default(),
        },
    };
    let dropped = run(&session, Some(&sliding));
    assert!(dropped.edits >= 1, "{dropped:?}");
    assert_eq!(dropped.evicted_before_use, 1, "{dropped:?}");
}

/// A session of large messages, with recorded usage: the first call's reading sizes the head.
fn cached_session() -> Recording {
    let big = |tag: &str| format!("{tag} {}", "x".repeat(8_000));
    let mut recording = recording(vec![
        Message::user(big("task")),
        Message::assistant_calls("", &[("a", "shell", r#"{"command": "ls"}"#)]),
        Message::tool_result("a", big("listing")),
        Message::assistant_calls("", &[("b", "shell", r#"{"command": "cat a"}"#)]),
        Message::tool_result("b", big("file")),
        Message::assistant("done"),
    ]);
    // The first call sent the prompt (2,002 tokens counted) plus a 3,000-token head.
    recording.calls[0].usage = Some(RecordedUsage {
        input: 5_002,
        cache_read: 0,
        cache_write: 0,
        output: 10,
    });
    recording
}

#[test]
fn the_raw_history_reads_each_earlier_request_from_the_anthropic_cache() {
    let session = cached_session();
    let prepared = Prepared::new(&session);
    assert_eq!(prepared.head_tokens(), 3_000);
    let settings = ReplaySettings {
        cache: CacheRules::anthropic(),
        prices: None,
        cache_pricing: None,
        summarizer_prices: None,
    };
    let figures = replay(&prepared, None, &settings).unwrap();
    assert_eq!(figures.calls, 3);
    assert_eq!(
        figures.sent_tokens,
        figures.cache_read + figures.cache_write + figures.uncached
    );
    // Call 1 writes head and prompt; call 2 reads them and writes what it added; call 3 the
    // same. Nothing is billed uncached, since the last message carries a breakpoint.
    assert_eq!(figures.uncached, 0);
    let call_1 = 3_000 + 2_002;
    let call_2 = call_1 + 4 + 2_003; // the assistant's call (args counted) and the listing
    let call_3 = call_2 + 5 + 2_002;
    assert_eq!(figures.sent_tokens, call_1 + call_2 + call_3);
    assert_eq!(figures.cache_read, call_1 + call_2);
    assert_eq!(figures.cache_write, call_3);
}

#[test]
fn a_replay_is_deterministic() {
    let session = cached_session();
    let prepared = Prepared::new(&session);
    let settings = ReplaySettings {
        cache: CacheRules::openai(),
        prices: None,
        cache_pricing: None,
        summarizer_prices: None,
    };
    let strategy = StrategyConfig::TokenBudget {
        threshold_tokens: 6_000,
        keep_recent_turns: 1,
        pins: PinConfig::default(),
    };
    let first = replay(&prepared, Some(&strategy), &settings).unwrap();
    let second = replay(&prepared, Some(&strategy), &settings).unwrap();
    assert_eq!(first, second);
}

#[test]
fn calls_out_of_order_are_dropped_and_said() {
    let mut session = recording(vec![
        Message::user("a"),
        Message::assistant("b"),
        Message::user("c"),
        Message::assistant("d"),
    ]);
    session.calls = vec![
        ModelCall {
            sent: 3,
            usage: None,
        },
        ModelCall {
            sent: 1,
            usage: None,
        },
    ];
    session.repair();
    assert_eq!(session.calls.len(), 1);
    assert!(session
        .notes
        .iter()
        .any(|note| note.contains("out of order")));
}

#[test]
fn a_repeat_while_a_later_identical_output_is_still_in_view_is_not_a_refetch() {
    // The same read three times: when the third is made, the first output is masked but the
    // second is the newest result and still in view.
    let session = recording(vec![
        Message::user("look at the config"),
        Message::assistant_calls("", &[("a", "read_file", r#"{"path": "src/config.rs"}"#)]),
        Message::tool_result("a", output("fn load() {}")),
        Message::assistant_calls("", &[("b", "read_file", r#"{"path": "src/config.rs"}"#)]),
        Message::tool_result("b", output("fn load() {}")),
        Message::assistant_calls("", &[("c", "read_file", r#"{"path": "src/config.rs"}"#)]),
        Message::tool_result("c", output("fn load() {}")),
        Message::assistant("same"),
    ]);
    let masked = run(&session, Some(&mask_all_but_last()));
    // The second read repeats the first while the first's output is the newest, in view; the
    // third repeats them while the first's is masked but the second's is in view: none.
    assert!(masked.edits >= 1, "the first output was masked: {masked:?}");
    assert_eq!(masked.refetches, 0, "{masked:?}");
}
