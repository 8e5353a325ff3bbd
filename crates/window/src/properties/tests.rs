//! The properties under `cargo test`: a few hundred generated histories per strategy.

use proptest::prelude::*;

use super::*;

/// Cases per strategy and `cargo test` run; `cargo xtask fuzz --target window-properties`
/// runs a million in all.
const CASES: u32 = 300;

fn holds(strategy: &str, seed: u64) -> Result<(), TestCaseError> {
    let index = STRATEGIES
        .iter()
        .position(|name| *name == strategy)
        .ok_or_else(|| TestCaseError::fail(format!("unknown strategy {strategy}")))?;
    run_case(index, seed)
        .map(|_| ())
        .map_err(|violation| TestCaseError::fail(violation.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn sliding_window_keeps_every_property(seed in any::<u64>()) {
        holds("sliding-window", seed)?;
    }

    #[test]
    fn token_budget_keeps_every_property(seed in any::<u64>()) {
        holds("token-budget", seed)?;
    }

    #[test]
    fn summarize_oldest_keeps_every_property(seed in any::<u64>()) {
        holds("summarize-oldest", seed)?;
    }

    #[test]
    fn observation_masking_keeps_every_property(seed in any::<u64>()) {
        holds("observation-masking", seed)?;
    }

    #[test]
    fn hybrid_keeps_every_property(seed in any::<u64>()) {
        holds("hybrid", seed)?;
    }

    #[test]
    fn anthropic_clear_tool_uses_keeps_every_property(seed in any::<u64>()) {
        holds("anthropic-clear-tool-uses", seed)?;
    }

    #[test]
    fn anthropic_clear_thinking_keeps_every_property(seed in any::<u64>()) {
        holds("anthropic-clear-thinking", seed)?;
    }

    #[test]
    fn anthropic_compact_keeps_every_property(seed in any::<u64>()) {
        holds("anthropic-compact", seed)?;
    }

    #[test]
    fn openai_compaction_keeps_every_property(seed in any::<u64>()) {
        holds("openai-compaction", seed)?;
    }
}

/// The tally of `cases` fixed seeds of one strategy.
fn fixed_tally(strategy: usize, cases: u64) -> Result<Tally, Violation> {
    let mut seeds = SplitMix64::new(0x31 + strategy as u64);
    let mut tally = Tally::default();
    for _ in 0..cases {
        tally.add(&run_case(strategy, seeds.next_u64())?);
    }
    Ok(tally)
}

/// The generator reaches what the properties are about: for each strategy, windows that fit
/// and windows over budget with a reason, pins held, summaries made, readings missing or 0/0.
/// A generator that stopped producing any of these would make the properties vacuous.
#[test]
fn the_generated_cases_reach_every_outcome_the_properties_judge() {
    for (strategy, name) in STRATEGIES.iter().enumerate() {
        let tally = fixed_tally(strategy, 200).unwrap_or_else(|violation| panic!("{violation}"));
        let local = strategy < 5;
        let removes_turns = matches!(strategy, 0 | 1 | 2 | 4);
        let folds = matches!(strategy, 2 | 4);
        // Masking is token-triggered when its generated options give it `triggerTokens`.
        let token_triggered = matches!(strategy, 1..=4);
        let expectations = [
            ("visits", tally.visits > tally.cases),
            ("engaged", (tally.engaged > 0) == local),
            ("fits", (tally.fits > 0) == local),
            ("explained", (tally.explained > 0) == local),
            ("pinned turns", (tally.pinned_turns > 0) == removes_turns),
            ("excluded results", (tally.excluded_results > 0) == local),
            ("folds", (tally.folds > 0) == folds),
            ("unmeasured", (tally.unmeasured > 0) == token_triggered),
            ("unmeasurable", (tally.unmeasurable > 0) == token_triggered),
            ("delegated", (tally.delegated > 0) != local),
        ];
        for (what, holds) in expectations {
            assert!(holds, "{name}: {what}: {tally}");
        }
    }
}

/// A case is named by one line, and the line reads back.
#[test]
fn a_case_line_reads_back() {
    for strategy in 0..STRATEGIES.len() {
        let line = case_line(strategy, 0xdead_beef);
        assert_eq!(
            parse_case_line(&line),
            Some((strategy, 0xdead_beef)),
            "{line}"
        );
    }
    for bad in [
        "",
        "hybrid",
        "no-such 0x1",
        "hybrid 0xzz",
        "hybrid 0x1 extra",
    ] {
        assert_eq!(parse_case_line(bad), None, "{bad}");
    }
}

/// The checks fail on plans that break each property: a hand-written window and hand-written
/// bad plans, one per row, with the property each must be caught by.
#[test]
fn the_checks_catch_a_plan_that_breaks_each_property() {
    use crate::plan::{WindowEdit, WindowPlan};
    use crate::record::{Refusal, RefusalReason, WindowRecord};
    use crate::visit::{PinSettings, VisitContext};
    use check::{Before, Budget};

    let messages = vec![
        Message::system("you are an agent"),
        Message::user("fix the build"),
        Message::assistant_calls("", &[("c1", "read_file", "{}")]),
        Message::tool_result("c1", "x".repeat(300)),
        Message::assistant("reading done"),
        Message::assistant_calls("", &[("c2", "grep", "{}")]),
        Message::tool_result("c2", "y".repeat(300)),
        Message::assistant("done"),
    ];
    // Turns: [0] [1] [2,3] [4] [5,6] [7]; keep 1, so turns 0–4 may leave; the pins hold the
    // newest result of each tool after the request: turns 4 and 2.
    let refusal = |reason, turn_index, message_index| Refusal {
        reason,
        turn_index,
        message_index,
    };
    let every_refusal = vec![
        refusal(RefusalReason::SystemEnvelope, 0, 0),
        refusal(RefusalReason::CurrentRequest, 1, 1),
        refusal(RefusalReason::LastToolResult, 2, 2),
        refusal(RefusalReason::LastToolResult, 4, 5),
    ];
    type Row = (
        &'static str,
        std::ops::Range<usize>,
        i64,
        Vec<Refusal>,
        Option<Property>,
    );
    let rows: Vec<Row> = vec![
        (
            "a call leaves without its result",
            2..3,
            0,
            every_refusal.clone(),
            Some(Property::Pairing),
        ),
        (
            "the current request leaves",
            1..2,
            0,
            every_refusal.clone(),
            Some(Property::CurrentRequest),
        ),
        (
            "a pinned turn leaves",
            2..4,
            0,
            every_refusal.clone(),
            Some(Property::Pins),
        ),
        (
            "the record's characters are off by one",
            4..5,
            1,
            every_refusal.clone(),
            Some(Property::Record),
        ),
        (
            "turns stay over budget, no refusal named",
            4..5,
            0,
            Vec::new(),
            Some(Property::Budget),
        ),
        (
            "turns stay over budget, each refusal named",
            4..5,
            0,
            every_refusal,
            None,
        ),
    ];
    for (rule, removed, chars_off, refusals, caught_by) in rows {
        let mut conversation: Conversation<Message> = Conversation::from_messages(messages.clone());
        let context = VisitContext::new(2, 1_000);
        let budget = Budget::Turns { keep: 1 };
        let before = Before::take(&conversation, &context, budget, &PinSettings::default());
        let chars_before = conversation.window_chars();
        let mut record = WindowRecord::new("sliding-window", 2, chars_before);
        record.removed_message_count = removed.len();
        let after_chars = chars_before - conversation.chars_in(removed.clone());
        record.window_chars_after = after_chars.saturating_add_signed(chars_off);
        record.refusals = refusals;
        let mut plan = WindowPlan::unchanged(record);
        plan.edit = Some(WindowEdit::remove(removed, 1_000));
        conversation
            .apply(&mut plan)
            .unwrap_or_else(|error| panic!("{rule}: {error}"));
        let caught = check::engaged(&before, &plan, &conversation, budget)
            .err()
            .map(|(property, _)| property);
        assert_eq!(caught, caught_by, "{rule}");
    }
}
