//! The own loop's body assembled from fragments (`LoopHistory` over `RenderedHistory`) is byte
//! for byte the body the loop renders from the whole conversation (`api_messages`, then
//! `ApiKind::body`), or fails with the same error, over random histories and every window
//! strategy's edits (removals, drop notices, summaries, masking), in all three APIs.
// Test setup that cannot fail on valid generated input; a failure is the finding.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::borrow::Cow;
use std::collections::BTreeSet;

use panewise_host::agent_loop::history::LoopHistory;
use panewise_host::agent_loop::request::api_messages;
use panewise_providers::{ApiKind, ModelRequest, RequestHead, ToolDefinition};
use panewise_window::{
    Measured, Message, StageMemory, StrategyConfig, SummaryResponse, Usage, VisitContext,
};
use proptest::prelude::*;

/// Texts with what JSON must escape: quotes, backslashes, control characters, non-ASCII.
fn text(seed: usize, len: usize) -> String {
    const PIECES: [&str; 8] = [
        "word ",
        "\"quoted\" ",
        "back\\slash ",
        "line\n",
        "tab\t",
        "é ",
        "🚀",
        "\u{1}",
    ];
    (0..len)
        .map(|i| PIECES[(seed + i * 7) % PIECES.len()])
        .collect()
}

/// One generated round of the loop.
#[derive(Debug, Clone)]
enum Round {
    /// A person's prompt.
    Person(usize),
    /// The model's text.
    Thought(usize),
    /// Calls and their results: (result length, answered, failed, bad arguments, the result
    /// names its tool).
    Tools(Vec<(usize, bool, bool, bool, bool)>),
    /// A message the harness injected.
    Injected(usize),
}

fn round() -> impl Strategy<Value = Round> {
    let call = (
        0usize..120,
        prop::bool::weighted(0.97),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.02),
        any::<bool>(),
    );
    prop_oneof![
        3 => (1usize..40).prop_map(Round::Person),
        2 => (0usize..30).prop_map(Round::Thought),
        5 => prop::collection::vec(call, 1..4).prop_map(Round::Tools),
        1 => (1usize..20).prop_map(Round::Injected),
    ]
}

/// Appends one round's messages; failed calls join `errored` before their result is pushed,
/// as the loop records an outcome before it appends the result.
fn push_round(
    history: &mut LoopHistory,
    round: &Round,
    next_call: &mut usize,
    errored: &mut BTreeSet<String>,
) {
    match round {
        Round::Person(len) => history.push(Message::user(text(*len, *len)), errored),
        Round::Thought(len) => history.push(Message::assistant(text(*len, *len)), errored),
        Round::Injected(len) => {
            history.push(Message::user(text(*len, *len)).injected("harness"), errored)
        }
        Round::Tools(calls) => {
            let ids: Vec<(String, &str, &str)> = calls
                .iter()
                .map(|(_, _, _, bad, _)| {
                    *next_call += 1;
                    let arguments = if *bad {
                        "{not json"
                    } else {
                        r#"{"command":"ls \"a b\""}"#
                    };
                    (format!("call_{next_call}"), "shell", arguments)
                })
                .collect();
            let refs: Vec<(&str, &str, &str)> = ids
                .iter()
                .map(|(id, name, arguments)| (id.as_str(), *name, *arguments))
                .collect();
            let commentary = if calls.len() > 1 {
                text(3, 3)
            } else {
                String::new()
            };
            history.push(Message::assistant_calls(commentary, &refs), errored);
            for ((id, _, _), (len, answered, failed, _, named)) in ids.iter().zip(calls) {
                if !answered {
                    continue;
                }
                if *failed {
                    errored.insert(id.clone());
                }
                let mut result = Message::tool_result(id.clone(), text(*len, *len * 3));
                if *named {
                    result.tool_name = Some("shell".to_owned());
                }
                history.push(result, errored);
            }
        }
    }
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
        3 => r#"{"strategy":"observation-masking","keepRecentObservations":2}"#.to_string(),
        _ => format!(
            r#"{{"strategy":"hybrid","thresholdTokens":{threshold},"keepRecentTurns":{keep},"keepRecentObservations":2,"model":"m"}}"#
        ),
    }
}

fn tools() -> Vec<ToolDefinition<'static>> {
    panewise_host::tools::api_definitions(false)
}

/// The body as the loop renders it today, or its error in words.
fn reference(
    api: ApiKind,
    history: &LoopHistory,
    errored: &BTreeSet<String>,
    tools: &[ToolDefinition<'static>],
) -> Result<Vec<u8>, String> {
    let messages =
        api_messages(history.conversation().messages(), errored).map_err(|e| e.to_string())?;
    api.body(&ModelRequest {
        model: Cow::Borrowed("model-\"1\""),
        system: Some(Cow::Borrowed("Be \"brief\".\n")),
        messages: Cow::Owned(messages),
        tools: Cow::Borrowed(tools),
        max_output_tokens: 4_096,
        // Caching on and a key, as the own loop sends them: the assembled body must match.
        prompt_cache: true,
        cache_key: Some(Cow::Borrowed("panewise-test")),
        context_management: None,
    })
    .map_err(|e| e.to_string())
}

fn assembled(history: &LoopHistory, tools: &[ToolDefinition<'static>]) -> Result<Vec<u8>, String> {
    let head = RequestHead {
        model: "model-\"1\"",
        system: Some("Be \"brief\".\n"),
        tools,
        max_output_tokens: 4_096,
        prompt_cache: true,
        cache_key: Some("panewise-test"),
        context_management: None,
    };
    let mut out = Vec::new();
    history
        .write_body(&head, &mut out)
        .map(|()| out)
        .map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn the_assembled_body_is_the_serde_body_through_every_strategys_edits(
        batches in prop::collection::vec(prop::collection::vec(round(), 1..8), 1..6),
        api in prop::sample::select(ApiKind::ALL.to_vec()),
        choice in 0u8..5,
        keep in 1usize..4,
        threshold_fraction in 2u64..9,
    ) {
        let tools = tools();
        let mut history = LoopHistory::new(api);
        let mut errored = BTreeSet::new();
        let mut memory = StageMemory::new();
        let mut next_call = 0;
        for (iteration, batch) in batches.iter().enumerate() {
            for round in batch {
                push_round(&mut history, round, &mut next_call, &mut errored);
            }
            let conversation = history.conversation();
            let total = conversation.tokens_in(0..conversation.len());
            let stage = StrategyConfig::from_json(&config_for(
                choice,
                keep,
                (total * threshold_fraction / 10).max(1),
            ))
            .unwrap()
            .build_stage::<Message>()
            .unwrap();
            let iteration = u32::try_from(iteration).unwrap() + 1;
            let mut context = VisitContext::new(iteration, 1_000 * u64::from(iteration));
            context.measured = Some(Measured {
                usage: Usage { input: total, output: 10 },
                sent_messages: conversation.len(),
                iteration,
            });
            let outcome = stage.visit(conversation, context, &mut memory).unwrap();
            let plan = outcome.resolve(|_| {
                Ok(SummaryResponse { text: "The \"agent\" ran\ncommands.".into(), usage: None })
            });
            if let Some(mut plan) = plan {
                history.apply(&mut plan, &errored).unwrap();
            }
            prop_assert_eq!(history.rendered().len(), history.conversation().len());
            let expected = reference(api, &history, &errored, &tools);
            let got = assembled(&history, &tools);
            prop_assert!(got == expected, "iteration {}: {:?} against {:?}", iteration,
                got.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
                expected.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()));
        }
    }
}
