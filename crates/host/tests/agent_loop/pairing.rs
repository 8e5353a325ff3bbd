//! The request-pairing property: whatever the history and whatever the window plan, the
//! request built from the kept messages carries every tool result with its call and every
//! call with its result (W6, W7: a call and its results leave together); and a history that
//! lost one of them is refused where the request is built.

use std::collections::BTreeSet;

use panewise_host::agent_loop::request::api_messages;
use panewise_host::error::PairingError;
use panewise_window::{
    Conversation, ExtractiveSummarizer, Measured, Message, Role, StageMemory, StrategyConfig,
    Usage, VisitContext,
};
use proptest::prelude::*;

/// One turn: a prompt, rounds of calls (each round's size), each result long or short, the
/// results answered in reverse order or not, and whether a closing text follows.
#[derive(Debug, Clone)]
struct TurnSpec {
    rounds: Vec<(u8, bool, bool)>,
    closing: bool,
}

fn turn() -> impl Strategy<Value = TurnSpec> {
    (
        prop::collection::vec((1u8..4, any::<bool>(), any::<bool>()), 0..5),
        any::<bool>(),
    )
        .prop_map(|(rounds, closing)| TurnSpec { rounds, closing })
}

fn history(turns: &[TurnSpec]) -> Vec<Message> {
    let mut messages = Vec::new();
    for (t, spec) in turns.iter().enumerate() {
        messages.push(Message::user(format!("prompt {t}")));
        for (r, (calls, long, reversed)) in spec.rounds.iter().enumerate() {
            let ids: Vec<String> = (0..*calls).map(|k| format!("c{t}_{r}_{k}")).collect();
            let calls: Vec<(&str, &str, &str)> = ids
                .iter()
                .map(|id| (id.as_str(), "shell", r#"{"command":"echo hi"}"#))
                .collect();
            messages.push(Message::assistant_calls("calling", &calls));
            let mut order: Vec<&String> = ids.iter().collect();
            if *reversed {
                order.reverse();
            }
            for id in order {
                let content = if *long {
                    "x".repeat(400)
                } else {
                    "ok".to_owned()
                };
                messages.push(Message::tool_result(id.as_str(), content));
            }
        }
        if spec.closing {
            messages.push(Message::assistant(format!("done {t}")));
        }
    }
    messages
}

fn strategy(index: u8, keep: usize, threshold: u64) -> StrategyConfig {
    let json = match index % 5 {
        0 => format!(r#"{{"strategy":"sliding-window","keepRecentTurns":{keep}}}"#),
        1 => format!(
            r#"{{"strategy":"token-budget","thresholdTokens":{threshold},"keepRecentTurns":{keep}}}"#
        ),
        2 => format!(
            r#"{{"strategy":"summarize-oldest","thresholdTokens":{threshold},"keepRecentTurns":{keep},"model":"extractive"}}"#
        ),
        3 => format!(r#"{{"strategy":"observation-masking","keepRecentObservations":{keep}}}"#),
        _ => format!(
            r#"{{"strategy":"hybrid","thresholdTokens":{threshold},"keepRecentTurns":{keep},"keepRecentObservations":{keep},"model":"extractive"}}"#
        ),
    };
    StrategyConfig::from_json(&json).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_window_plan_leaves_an_orphan_in_the_request(
        turns in prop::collection::vec(turn(), 1..8),
        index in 0u8..5,
        keep in 1usize..4,
        threshold in 1u64..2_000,
        reported in 0u64..50_000,
        visits in 1u32..4,
    ) {
        let mut conversation: Conversation = Conversation::from_messages(history(&turns));
        let stage = strategy(index, keep, threshold).build_stage::<Message>().unwrap();
        let mut memory = StageMemory::new();
        let errored = BTreeSet::new();
        let mut records = Vec::new();
        for iteration in 1..=visits {
            let mut context = VisitContext::new(iteration, u64::from(iteration) * 1_000);
            context.measured = Some(Measured {
                usage: Usage { input: reported, output: 10 },
                sent_messages: conversation.len(),
                iteration: iteration.saturating_sub(1),
            });
            context.previous_records = &records;
            let outcome = stage.visit(&conversation, context, &mut memory).unwrap();
            let plan = outcome.resolve(|request| {
                Ok(ExtractiveSummarizer::default().summarize(request))
            });
            if let Some(mut plan) = plan {
                conversation.apply(&mut plan).unwrap();
                records.push(plan.record);
            }
            let built = api_messages(conversation.messages(), &errored);
            prop_assert!(built.is_ok(), "{:?}", built.err());
        }
    }

    #[test]
    fn a_history_missing_a_call_or_a_result_is_refused_where_the_request_is_built(
        turns in prop::collection::vec(turn(), 1..6),
        pick in any::<prop::sample::Index>(),
    ) {
        let mut messages = history(&turns);
        let paired: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Tool || !m.tool_calls.is_empty())
            .map(|(i, _)| i)
            .collect();
        prop_assume!(!paired.is_empty());
        let removed = messages.remove(paired[pick.index(paired.len())]);
        let built = api_messages(&messages, &BTreeSet::new());
        match removed.role {
            Role::Tool => prop_assert!(
                matches!(built, Err(PairingError::CallWithoutResult { .. })),
                "{built:?}"
            ),
            _ => prop_assert!(
                matches!(built, Err(PairingError::ResultWithoutCall { .. })),
                "{built:?}"
            ),
        }
    }
}

#[test]
fn a_result_before_its_call_and_a_repeated_call_id_are_refused() {
    let result_first = [
        Message::user("go"),
        Message::tool_result("a", "early"),
        Message::assistant_calls("", &[("a", "shell", "{}")]),
    ];
    assert!(matches!(
        api_messages(&result_first, &BTreeSet::new()),
        Err(PairingError::ResultWithoutCall { index: 1, .. })
    ));
    let twice = [
        Message::user("go"),
        Message::assistant_calls("", &[("a", "shell", "{}")]),
        Message::tool_result("a", "one"),
        Message::assistant_calls("", &[("a", "shell", "{}")]),
        Message::tool_result("a", "two"),
    ];
    assert!(matches!(
        api_messages(&twice, &BTreeSet::new()),
        Err(PairingError::DuplicateCall { .. })
    ));
}
