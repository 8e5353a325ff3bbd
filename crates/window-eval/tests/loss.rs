//! The loss measures and the cache arithmetic of a replay, pinned on small hand-built
//! sessions whose answers are known.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use panewise_window::cache::CacheRules;
use panewise_window::{CacheGuard, Message, PinConfig, StrategyConfig};
use panewise_window_eval::loss::{LossEvent, LossKind};
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
    // The first call sent the prompt (8,005 bytes: 2,355 tokens at the table's 3.4 bytes a
    // token) plus a 2,647-token head.
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
    assert_eq!(prepared.head_tokens(), 2_647);
    let tokens = &prepared.anchoring().message_tokens;
    assert_eq!(tokens[0], 2_355);
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
    let call_1 = 2_647 + tokens[0];
    let call_2 = call_1 + tokens[1] + tokens[2]; // the assistant's call (args counted), the listing
    let call_3 = call_2 + tokens[3] + tokens[4];
    assert_eq!(tokens[1], 7); // "shell" and `{"command": "ls"}`: 22 bytes
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
            at_ms: None,
        },
        ModelCall {
            sent: 1,
            usage: None,
            at_ms: None,
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

/// The figures' events of one kind.
fn events_of(figures: &Figures, kind: LossKind) -> Vec<&LossEvent> {
    figures
        .events
        .iter()
        .filter(|event| event.kind == kind)
        .collect()
}

fn read(id: &'static str, args: &'static str) -> Message {
    Message::assistant_calls("", &[(id, "Read", args)])
}

#[test]
fn a_true_refetch_after_masking_is_one_event_naming_the_call_the_term_and_where_it_left() {
    // Calls 0..=3 read config, main, other, then config again; at call 2's visit the first
    // output (message 2) is masked, and call 3 fetches it again.
    let session = recording(vec![
        Message::user("look around"),
        read("a", r#"{"file_path": "./src/config.rs"}"#),
        Message::tool_result("a", output("fn load() {}")),
        read("b", r#"{"file_path": "src/main.rs"}"#),
        Message::tool_result("b", output("fn main() {}")),
        read("c", r#"{"file_path": "src/other.rs"}"#),
        Message::tool_result("c", output("fn other() {}")),
        read("d", r#"{"file_path": "src/config.rs"}"#),
        Message::tool_result("d", output("fn load() {}")),
        Message::assistant("same"),
    ]);
    let masked = run(&session, Some(&mask_all_but_last()));
    let refetches = events_of(&masked, LossKind::Refetch);
    assert_eq!(
        refetches,
        vec![&LossEvent {
            call: 3,
            kind: LossKind::Refetch,
            term: "read src/config.rs whole".into(),
            evicted_at: 2,
            message: 2,
        }],
        "{masked:?}"
    );
    assert_eq!(masked.refetches, 1);
    let line = serde_json::to_value(refetches[0]).unwrap();
    assert_eq!(line["kind"], "refetch");
    assert_eq!(line["evictedAt"], 2);
}

/// First read, one read between (so the first output is masked), then a second read: the
/// re-fetches counted under masking, for each (first, between, second).
#[test]
fn refetch_rules_by_line_range_and_change_in_between() {
    type Case = (&'static str, &'static str, &'static str, &'static str, u64);
    let cases: [Case; 7] = [
        (
            "same whole file",
            r#"{"file_path":"a.rs"}"#,
            "",
            r#"{"file_path":"a.rs"}"#,
            1,
        ),
        (
            "same range",
            r#"{"file_path":"a.rs","offset":1,"limit":50}"#,
            "",
            r#"{"limit":50,"file_path":"a.rs","offset":1}"#,
            1,
        ),
        (
            "another range",
            r#"{"file_path":"a.rs","offset":1,"limit":50}"#,
            "",
            r#"{"file_path":"a.rs","offset":51,"limit":50}"#,
            0,
        ),
        (
            "whole file, then a range",
            r#"{"file_path":"a.rs"}"#,
            "",
            r#"{"file_path":"a.rs","offset":10,"limit":5}"#,
            0,
        ),
        (
            "an edit of the file between",
            r#"{"file_path":"a.rs"}"#,
            r#"{"file_path":"/repo/a.rs","old_string":"x","new_string":"y"}"#,
            r#"{"file_path":"a.rs"}"#,
            0,
        ),
        (
            "an edit of another file between",
            r#"{"file_path":"a.rs"}"#,
            r#"{"file_path":"b.rs","old_string":"x","new_string":"y"}"#,
            r#"{"file_path":"a.rs"}"#,
            1,
        ),
        (
            "a shell sed -i of the file between",
            r#"{"file_path":"src/a.rs"}"#,
            r#"{"command":"sed -i 's/x/y/' ./src/a.rs"}"#,
            r#"{"file_path":"src/a.rs"}"#,
            0,
        ),
    ];
    for (name, first, change, second, expected) in cases {
        let mut messages = vec![
            Message::user("go"),
            Message::assistant_calls("", &[("a", "Read", first)]),
            Message::tool_result("a", output("fn a() {}")),
            Message::assistant_calls("", &[("b", "Read", r#"{"file_path":"other.rs"}"#)]),
            Message::tool_result("b", output("fn other() {}")),
        ];
        if !change.is_empty() {
            let tool = if change.contains("command") {
                "Bash"
            } else {
                "Edit"
            };
            messages.push(Message::assistant_calls("", &[("e", tool, change)]));
            messages.push(Message::tool_result("e", "done"));
        }
        messages.push(Message::assistant_calls("", &[("c", "Read", second)]));
        messages.push(Message::tool_result("c", output("fn a() {}")));
        messages.push(Message::assistant("ok"));
        let masked = run(&recording(messages), Some(&mask_all_but_last()));
        assert_eq!(masked.refetches, expected, "{name}: {:?}", masked.events);
    }
}

#[test]
fn a_read_rendered_by_its_path_is_told_apart_by_the_line_numbers_of_its_output() {
    // SpecStory renders a Read by its path only; the output's numbers give the range.
    let numbered = |from: usize| -> String {
        (from..from + 40)
            .map(|line| format!("{line:>6}→let line_{line} = {line};\n"))
            .collect()
    };
    for (second_from, expected) in [(1, 1u64), (200, 0)] {
        let session = recording(vec![
            Message::user("go"),
            read("a", r#"{"input":"`./pkg/x.go`"}"#),
            Message::tool_result("a", numbered(1)),
            read("b", r#"{"input":"`./pkg/y.go`"}"#),
            Message::tool_result("b", numbered(1)),
            read("c", r#"{"input":"`./pkg/x.go`"}"#),
            Message::tool_result("c", numbered(second_from)),
            Message::assistant("ok"),
        ]);
        let masked = run(&session, Some(&mask_all_but_last()));
        assert_eq!(masked.refetches, expected, "{:?}", masked.events);
    }
}

#[test]
fn an_escaped_newline_glued_to_a_word_is_not_a_term() {
    // The output and the later commit both hold `\nFixes_bug` with the backslash escape as
    // characters (a recording that encoded the JSON twice): with the escape read as a separator
    // the term is `Fixes_bug`, which the person's request names; read glued, `nFixes_bug` would
    // be a loss no one could have had.
    let session = recording(vec![
        Message::user("commit it; the message ends with Fixes_bug"),
        Message::assistant_calls("", &[("a", "Bash", r#"{"command":"git log -1"}"#)]),
        Message::tool_result("a", output(r"Title\nFixes_bug")),
        Message::assistant_calls("", &[("b", "Bash", r#"{"command":"git status"}"#)]),
        Message::tool_result("b", output("clean")),
        Message::assistant_calls(
            "",
            &[(
                "c",
                "Bash",
                r#"{"command":"git commit -m \"Title\\nFixes_bug\""}"#,
            )],
        ),
        Message::tool_result("c", "ok"),
        Message::assistant("done"),
    ]);
    let masked = run(&session, Some(&mask_all_but_last()));
    assert_eq!(masked.evicted_before_use, 0, "{:?}", masked.events);
    assert!(panewise_window_eval::loss::terms_of(r"Title\nFixes_bug").contains("Fixes_bug"));
    assert!(!panewise_window_eval::loss::terms_of(r"Title\nFixes_bug").contains("nFixes_bug"));
}

#[test]
fn an_evicted_before_use_event_names_the_term_and_the_message_that_held_it() {
    let masked = run(&quoting_session(), Some(&mask_all_but_last()));
    assert_eq!(
        events_of(&masked, LossKind::EvictedBeforeUse),
        vec![&LossEvent {
            call: 2,
            kind: LossKind::EvictedBeforeUse,
            term: "parse_config_value".into(),
            evicted_at: 2,
            message: 2,
        }]
    );
}

#[test]
fn a_path_relative_to_the_working_directory_matches_it_absolute() {
    // The listing names the file absolute; the later read names it relative.
    let session = recording(vec![
        Message::user("go"),
        Message::assistant_calls("", &[("a", "Glob", r#"{"pattern":"**/*.go"}"#)]),
        Message::tool_result("a", output("/home/me/repo/pkg/session/render_md.go")),
        Message::assistant_calls("", &[("b", "Glob", r#"{"pattern":"**/*.rs"}"#)]),
        Message::tool_result("b", output("none")),
        read("c", r#"{"file_path":"./pkg/session/render_md.go"}"#),
        Message::tool_result("c", "text"),
        Message::assistant("ok"),
    ]);
    let masked = run(&session, Some(&mask_all_but_last()));
    let events = events_of(&masked, LossKind::EvictedBeforeUse);
    assert_eq!(events.len(), 1, "{:?}", masked.events);
    assert_eq!(events[0].term, "pkg/session/render_md.go");
    assert_eq!(events[0].message, 2);
}

/// The strategies the property runs every generated session through.
fn strategies() -> Vec<Option<StrategyConfig>> {
    vec![
        None,
        Some(mask_all_but_last()),
        Some(StrategyConfig::SlidingWindow {
            keep_recent_turns: 2,
            pins: PinConfig {
                keep_last_tool_results: 0,
                keep_ledger_facts: 0,
                exclude_tools: Vec::new(),
                cache: CacheGuard::default(),
            },
        }),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Whatever the session, each count is the number of its events, and every event points
    /// back to a message and a call before the call that needed it.
    #[test]
    fn counts_are_the_events(steps in proptest::collection::vec((0u8..4, 0u8..3, 0u8..2), 1..14)) {
        let files = ["src/a_mod.rs", "src/b_mod.rs", "src/c_mod.rs"];
        let mut messages = vec![Message::user("start")];
        for (index, (tool, file, range)) in steps.iter().enumerate() {
            let id = format!("t{index}");
            let file = files[usize::from(*file)];
            let (name, args) = match tool {
                0 | 1 => ("Read", if *range == 0 {
                    format!(r#"{{"file_path":"{file}"}}"#)
                } else {
                    format!(r#"{{"file_path":"{file}","offset":10,"limit":5}}"#)
                }),
                2 => ("Edit", format!(r#"{{"file_path":"{file}","old_string":"a","new_string":"b"}}"#)),
                _ => ("Grep", format!(r#"{{"pattern":"{}"}}"#, file.replace("src/", ""))),
            };
            messages.push(Message::assistant_calls("", &[(id.as_str(), name, args.as_str())]));
            messages.push(Message::tool_result(&id, output(&format!("{file} holds fn_{index}_x"))));
        }
        messages.push(Message::assistant("done"));
        let session = recording(messages);
        for strategy in strategies() {
            let figures = run(&session, strategy.as_ref());
            proptest::prop_assert_eq!(
                figures.evicted_before_use,
                events_of(&figures, LossKind::EvictedBeforeUse).len() as u64
            );
            proptest::prop_assert_eq!(
                figures.refetches,
                events_of(&figures, LossKind::Refetch).len() as u64
            );
            for event in &figures.events {
                proptest::prop_assert!(event.evicted_at <= event.call, "{:?}", event);
                let sent = session.calls[event.call].sent;
                proptest::prop_assert!(event.message < sent, "{:?}", event);
            }
            if strategy.is_none() {
                proptest::prop_assert!(figures.events.is_empty());
            }
        }
    }
}

#[test]
fn a_directory_named_by_a_file_path_still_in_the_window_is_not_lost() {
    // The old output names `pkg/config`; the newest names a file in it: still in view.
    let session = recording(vec![
        Message::user("go"),
        Message::assistant_calls("", &[("a", "Bash", r#"{"command":"ls"}"#)]),
        Message::tool_result("a", output("ok  example.com/m/pkg/config 0.3s")),
        Message::assistant_calls("", &[("b", "Bash", r#"{"command":"git diff --stat"}"#)]),
        Message::tool_result("b", output("/repo/pkg/config/config.go | 2 +-")),
        Message::assistant_calls(
            "",
            &[("c", "Bash", r#"{"command":"go test ./pkg/config/"}"#)],
        ),
        Message::tool_result("c", "ok"),
        Message::assistant("ok"),
    ]);
    let masked = run(&session, Some(&mask_all_but_last()));
    assert_eq!(masked.evicted_before_use, 0, "{:?}", masked.events);
}

#[test]
fn the_working_directory_stays_in_view_while_a_path_under_it_does() {
    let session = recording(vec![
        Message::user("go"),
        Message::assistant_calls("", &[("a", "Bash", r#"{"command":"pwd"}"#)]),
        Message::tool_result("a", output("/home/me/repo")),
        Message::assistant_calls("", &[("b", "Bash", r#"{"command":"git status"}"#)]),
        Message::tool_result("b", output("modified: /home/me/repo/src/lib.rs")),
        Message::assistant_calls(
            "",
            &[("c", "Bash", r#"{"command":"cd /home/me/repo && make"}"#)],
        ),
        Message::tool_result("c", "ok"),
        Message::assistant("ok"),
    ]);
    let masked = run(&session, Some(&mask_all_but_last()));
    assert_eq!(masked.evicted_before_use, 0, "{:?}", masked.events);
}
