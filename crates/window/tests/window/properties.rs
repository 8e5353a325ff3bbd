//! Property tests over generated conversations: what every output window must satisfy,
//! whatever the strategy.

use panewise_window::{
    Message, PinSettings, RefusalReason, Role, StrategyConfig, Visit, WindowPlan,
};
use proptest::prelude::*;

use crate::support::*;

/// A message placed between a call and one of its results (W7).
#[derive(Debug, Clone)]
enum Interlude {
    /// Assistant commentary.
    Commentary(usize),
    /// A user message the harness injected.
    Injected(usize),
    /// Another call with its own result, nested inside the outer call's batch.
    Nested(u8, usize),
}

/// One generated call: tool, result size, whether it is answered, and what (if anything)
/// sits right before its result.
type CallShape = (u8, usize, bool, Option<Interlude>);

/// One generated turn.
#[derive(Debug, Clone)]
enum TurnShape {
    Person(usize),
    Injected(usize),
    Thought(usize),
    Tools(Vec<CallShape>),
    System(usize),
}

fn interlude() -> impl Strategy<Value = Interlude> {
    prop_oneof![
        2 => (1usize..300).prop_map(Interlude::Commentary),
        2 => (1usize..200).prop_map(Interlude::Injected),
        1 => (0u8..5, 0usize..1_500).prop_map(|(tool, chars)| Interlude::Nested(tool, chars)),
    ]
}

fn turn_shape() -> impl Strategy<Value = TurnShape> {
    let call = (
        0u8..5,
        0usize..3_000,
        prop::bool::weighted(0.95),
        prop::option::weighted(0.25, interlude()),
    );
    prop_oneof![
        3 => (1usize..400).prop_map(TurnShape::Person),
        1 => (1usize..200).prop_map(TurnShape::Injected),
        2 => (0usize..300).prop_map(TurnShape::Thought),
        5 => prop::collection::vec(call, 1..4).prop_map(TurnShape::Tools),
        1 => (1usize..100).prop_map(TurnShape::System),
    ]
}

fn build(shapes: &[TurnShape]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut call = 0;
    for shape in shapes {
        match shape {
            TurnShape::Person(chars) => messages.push(Message::user(text(*chars))),
            TurnShape::Injected(chars) => {
                messages.push(Message::user(text(*chars)).injected("harness"))
            }
            TurnShape::Thought(chars) => messages.push(Message::assistant(text(*chars))),
            TurnShape::System(chars) => messages.push(Message::system(text(*chars))),
            TurnShape::Tools(calls) => {
                let ids: Vec<(String, String)> = calls
                    .iter()
                    .map(|(tool, _, _, _)| {
                        call += 1;
                        (format!("call_{call}"), format!("tool_{tool}"))
                    })
                    .collect();
                let refs: Vec<(&str, &str, &str)> = ids
                    .iter()
                    .map(|(id, name)| (id.as_str(), name.as_str(), "{}"))
                    .collect();
                messages.push(Message::assistant_calls("", &refs));
                // An interlude separates a result from its call, and the results of
                // parallel calls from each other.
                for ((id, _), (_, chars, answered, between)) in ids.iter().zip(calls) {
                    match between {
                        Some(Interlude::Commentary(chars)) => {
                            messages.push(Message::assistant(text(*chars)))
                        }
                        Some(Interlude::Injected(chars)) => {
                            messages.push(Message::user(text(*chars)).injected("harness"))
                        }
                        Some(Interlude::Nested(tool, chars)) => {
                            call += 1;
                            let nested = format!("call_{call}");
                            let name = format!("tool_{tool}");
                            messages.push(Message::assistant_calls(
                                "",
                                &[(nested.as_str(), name.as_str(), "{}")],
                            ));
                            messages.push(Message::tool_result(nested, text(*chars)));
                        }
                        None => {}
                    }
                    if *answered {
                        messages.push(Message::tool_result(id.clone(), text(*chars)));
                    }
                }
            }
        }
    }
    messages
}

fn config_for(choice: u8, keep: usize, threshold: u64) -> String {
    match choice % 5 {
        0 => format!(r#"{{"strategy":"sliding-window","keepRecentTurns":{keep}}}"#),
        1 => format!(
            r#"{{"strategy":"token-budget","thresholdTokens":{threshold},"keepRecentTurns":{keep}}}"#
        ),
        2 => format!(
            r#"{{"strategy":"summarize-oldest","thresholdTokens":{threshold},"keepRecentTurns":{keep},"model":"m"}}"#
        ),
        3 => r#"{"strategy":"observation-masking","keepRecentObservations":3}"#.to_string(),
        _ => format!(
            r#"{{"strategy":"hybrid","thresholdTokens":{threshold},"keepRecentTurns":{keep},"keepRecentObservations":3,"model":"m"}}"#
        ),
    }
}

fn run(
    messages: &[Message],
    config: &str,
    measured_input: u64,
) -> (Option<WindowPlan<Message>>, Vec<Message>) {
    let stage = configured(config, Some(Box::new(FixedSummarizer::new("summary"))));
    let mut conversation = conversation(messages.to_vec());
    let context = measured_context(&conversation, 2, measured_input);
    let plan = visit(&stage, &conversation, context);
    if let Some(mut applied) = plan.clone() {
        conversation.apply(&mut applied).unwrap();
    }
    (plan, conversation.into_messages())
}

fn is_stage_note(message: &Message) -> bool {
    message.role == Role::User
        && (message.content.starts_with("[dropped history")
            || message.content.starts_with("[compacted history"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn kept_and_removed_partition_the_input_in_order(
        shapes in prop::collection::vec(turn_shape(), 0..30),
        choice in 0u8..5,
        keep in 1usize..6,
        threshold in 1u64..3_000,
    ) {
        let messages = build(&shapes);
        let (plan, window) = run(&messages, &config_for(choice, keep, threshold), 5_000);
        let Some(plan) = plan else {
            prop_assert_eq!(window, messages);
            return Ok(());
        };
        let kept = plan.kept_indices(messages.len());
        let removed = plan.edit.as_ref().map_or(0..0, |edit| edit.removed.clone());
        let mut union: Vec<usize> = kept.clone();
        union.extend(removed.clone());
        union.sort_unstable();
        prop_assert_eq!(union, (0..messages.len()).collect::<Vec<_>>());
        prop_assert!(kept.windows(2).all(|pair| pair[0] < pair[1]));
        // The window after the edit is the kept messages, in order, plus at most one note,
        // with masked tool results keeping their role and call id.
        let survivors: Vec<&Message> = window.iter().filter(|m| !is_stage_note(m) || messages.contains(m)).collect();
        prop_assert_eq!(survivors.len(), kept.len());
        for (message, index) in survivors.iter().zip(&kept) {
            let original = &messages[*index];
            prop_assert_eq!(message.role, original.role);
            prop_assert_eq!(&message.tool_call_id, &original.tool_call_id);
            if !message.content.starts_with("[masked tool result") {
                prop_assert_eq!(&message.content, &original.content);
            }
        }
        prop_assert_eq!(plan.record.removed_message_count, removed.len());
    }

    #[test]
    fn no_tool_result_is_left_without_its_call(
        shapes in prop::collection::vec(turn_shape(), 0..30),
        choice in 0u8..5,
        keep in 1usize..6,
        threshold in 1u64..3_000,
    ) {
        let messages = build(&shapes);
        let (_, window) = run(&messages, &config_for(choice, keep, threshold), 5_000);
        prop_assert!(no_orphaned_results(&window));
        prop_assert!(pairs_stay_or_leave_together(&messages, &window));
    }

    #[test]
    fn w6_w7_turns_match_the_plain_segmentation_with_calls_joined_to_their_results(
        shapes in prop::collection::vec(turn_shape(), 0..40),
    ) {
        let messages = build(&shapes);
        let conversation = conversation(messages.clone());
        let found: Vec<(usize, usize)> =
            conversation.turns().map(|turn| (turn.start, turn.len)).collect();
        prop_assert_eq!(found, plain_turns(&messages));
    }

    #[test]
    fn the_current_request_is_always_kept(
        shapes in prop::collection::vec(turn_shape(), 0..30),
        choice in 0u8..5,
        keep in 1usize..6,
        threshold in 1u64..3_000,
    ) {
        let messages = build(&shapes);
        let conversation = conversation(messages.clone());
        let anchor = Visit::new(&conversation, context(1), PinSettings::default())
            .current_request_index();
        let (_, window) = run(&messages, &config_for(choice, keep, threshold), 50_000);
        if let Some(anchor) = anchor {
            prop_assert!(window.iter().any(|m| m == &messages[anchor]));
        }
    }

    #[test]
    fn token_budget_is_within_budget_whenever_the_planned_span_allows_it(
        shapes in prop::collection::vec(turn_shape(), 1..30),
        keep in 1usize..6,
        fraction in 1u64..100,
    ) {
        let messages = build(&shapes);
        let conversation = conversation(messages.clone());
        let total = conversation.tokens_in(0..conversation.len());
        prop_assume!(total > 0);
        let threshold = (total * fraction / 100).max(1);
        let config = format!(
            r#"{{"strategy":"token-budget","thresholdTokens":{threshold},"keepRecentTurns":{keep},"keepLastToolResults":0}}"#
        );
        let mut visit_view = Visit::new(&conversation, context(2), PinSettings { keep_last_tool_results: 0, keep_ledger_facts: 0, exclude_tools: Vec::new() });
        let full_span = visit_view.plan_removal(keep, false).span;
        let (_, window) = run(&messages, &config, total);
        let after = crate::support::conversation(window);
        let after_tokens = after.tokens_in(0..after.len());
        if let Some(span) = full_span {
            // Freed by the whole span, less the largest notice that could take its place: with
            // these shapes' names and sizes, the counts, the kept request, four tool names and
            // six described spans (W73) stay under 400 tokens.
            let freed = conversation.tokens_in(span.messages());
            if total > threshold && total.saturating_sub(freed) + 400 <= threshold {
                prop_assert!(after_tokens <= threshold, "{} > {}", after_tokens, threshold);
            }
        }
    }

    #[test]
    fn identical_inputs_give_identical_plans_and_records(
        shapes in prop::collection::vec(turn_shape(), 0..30),
        choice in 0u8..5,
        keep in 1usize..6,
        threshold in 1u64..3_000,
    ) {
        let messages = build(&shapes);
        let config = config_for(choice, keep, threshold);
        let (first, first_window) = run(&messages, &config, 5_000);
        let (second, second_window) = run(&messages, &config, 5_000);
        prop_assert_eq!(first_window, second_window);
        prop_assert_eq!(first, second);
    }

    #[test]
    fn configurations_round_trip(choice in 0u8..5, keep in 1usize..10, threshold in 1u64..100_000) {
        let config = StrategyConfig::from_json(&config_for(choice, keep, threshold)).unwrap();
        let json = serde_json::to_string(&config).unwrap();
        prop_assert_eq!(StrategyConfig::from_json(&json).unwrap(), config);
    }
}

/// W6 then W7 the slow, obvious way, as `(start, len)`: segment by role, then join every
/// turn from a call's through its result's.
fn plain_turns(messages: &[Message]) -> Vec<(usize, usize)> {
    let mut turn_of = Vec::with_capacity(messages.len());
    let mut count = 0usize;
    for message in messages {
        if message.role != Role::Tool || count == 0 {
            count += 1;
        }
        turn_of.push(count - 1);
    }
    // `joined[t]` is true when turn t belongs with the turn before it.
    let mut joined = vec![false; count];
    for (index, message) in messages.iter().enumerate() {
        let Some(id) = &message.tool_call_id else {
            continue;
        };
        let call = messages[..index]
            .iter()
            .rposition(|m| m.tool_calls.iter().any(|call| &call.id == id));
        if let Some(call) = call {
            joined[turn_of[call] + 1..=turn_of[index]].fill(true);
        }
    }
    let mut turns: Vec<(usize, usize)> = Vec::new();
    for (index, turn) in turn_of.iter().enumerate() {
        match turns.last_mut() {
            Some((_, len)) if index > 0 && (turn_of[index - 1] == *turn || joined[*turn]) => {
                *len += 1
            }
            _ => turns.push((index, 1)),
        }
    }
    turns
}

/// A span as `(first turn, last turn)` and the refusals as `(reason, turn)`.
type PlainPlan = (Option<(usize, usize)>, Vec<(RefusalReason, usize)>);

/// The refusal engine of W15–W16 written the slow, obvious way: walk every candidate turn.
/// Pins are off here, so the reasons come from the messages alone.
fn naive_plan(
    conversation: &panewise_window::Conversation,
    anchor: Option<usize>,
    keep: usize,
) -> PlainPlan {
    let turns: Vec<panewise_window::Turn> = conversation.turns().collect();
    let messages = conversation.messages();
    let candidates = turns.len().saturating_sub(keep);
    let reason_of = |turn: &panewise_window::Turn| {
        let range = turn.start..turn.start + turn.len;
        if anchor.is_some_and(|anchor| range.contains(&anchor)) {
            return Some(RefusalReason::CurrentRequest);
        }
        if messages[range.clone()]
            .iter()
            .any(|m| m.role == Role::System)
        {
            return Some(RefusalReason::SystemEnvelope);
        }
        let unresolved = messages[range]
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .any(|call| !conversation.is_answered(&call.id));
        unresolved.then_some(RefusalReason::UnresolvedToolCall)
    };
    let mut refusals = Vec::new();
    let mut span: Option<(usize, usize)> = None;
    for turn in &turns[..candidates] {
        match reason_of(turn) {
            None => {
                span = Some(span.map_or((turn.index, turn.index), |(from, _)| (from, turn.index)))
            }
            Some(reason) => {
                refusals.push((reason, turn.index));
                if span.is_some() {
                    break;
                }
            }
        }
    }
    refusals.extend((candidates..turns.len()).map(|turn| (RefusalReason::InsideKeepWindow, turn)));
    (span, refusals)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn w16_the_indexed_refusal_engine_matches_the_plain_walk(
        shapes in prop::collection::vec(turn_shape(), 0..40),
        keep in 1usize..8,
    ) {
        let messages = build(&shapes);
        let conversation = conversation(messages);
        let pins = PinSettings { keep_last_tool_results: 0, keep_ledger_facts: 0, exclude_tools: Vec::new() };
        let mut visit = Visit::new(&conversation, context(1), pins);
        let plan = visit.plan_removal(keep, false);
        let (span, refusals) = naive_plan(&conversation, visit.current_request_index(), keep);
        prop_assert_eq!(plan.span.map(|span| (span.from_turn, span.to_turn)), span);
        let found: Vec<(RefusalReason, usize)> =
            plan.refusals.iter().map(|r| (r.reason, r.turn_index)).collect();
        prop_assert_eq!(found, refusals);
    }

    #[test]
    fn w16_the_engine_still_matches_after_edits_are_applied(
        shapes in prop::collection::vec(turn_shape(), 1..40),
        keep in 1usize..5,
        more in prop::collection::vec(turn_shape(), 0..10),
    ) {
        // Apply a sliding-window drop, append more turns, and compare again: the cached turn
        // table and blocked-turn index must follow every edit.
        let mut conversation = conversation(build(&shapes));
        let stage = stage_without_pins(panewise_window::SlidingWindow::new(keep).unwrap());
        visit_and_apply(&stage, &mut conversation, context(1));
        for message in build(&more) {
            // Call ids restart in `build`; rename them so they stay unique in the window.
            let mut message = message;
            for call in &mut message.tool_calls {
                call.id = format!("more_{}", call.id);
            }
            if let Some(id) = message.tool_call_id.as_mut() {
                *id = format!("more_{id}");
            }
            conversation.push(message);
        }
        let rebuilt = crate::support::conversation(conversation.messages().to_vec());
        let pins = PinSettings { keep_last_tool_results: 0, keep_ledger_facts: 0, exclude_tools: Vec::new() };
        let mut visit = Visit::new(&conversation, context(2), pins.clone());
        let plan = visit.plan_removal(keep, false);
        let mut fresh = Visit::new(&rebuilt, context(2), pins);
        let expected = fresh.plan_removal(keep, false);
        prop_assert_eq!(plan.span, expected.span);
        prop_assert_eq!(plan.refusals, expected.refusals.clone());
        let (span, refusals) = naive_plan(&rebuilt, fresh.current_request_index(), keep);
        prop_assert_eq!(expected.span.map(|span| (span.from_turn, span.to_turn)), span);
        let found: Vec<(RefusalReason, usize)> =
            expected.refusals.iter().map(|r| (r.reason, r.turn_index)).collect();
        prop_assert_eq!(found, refusals);
        prop_assert_eq!(conversation.window_chars(), rebuilt.window_chars());
        prop_assert_eq!(
            conversation.tokens_in(0..conversation.len()),
            rebuilt.tokens_in(0..rebuilt.len())
        );
    }
}
