//! W86–W89: the local strategies take Anthropic's context-editing keys where they mean the
//! same thing, so one option set describes `observation-masking` and its provider-side twin
//! `anthropic-clear-tool-uses`.

use panewise_window::provider::{oldest_tool_result_indices, reconcile};
use panewise_window::record::RecordDetail;
use panewise_window::{
    AppliedContextEdit, Conversation, Message, ProviderContext, RefusalReason, StrategyConfig,
    WindowPlan,
};

use crate::support::*;

/// A request, then calls of `read_file`, `grep` and `ls` in turn, each answered with 1,000
/// characters: results worth masking.
fn traffic(results: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("sys"), Message::user("request")];
    for i in 0..results {
        let tool = ["read_file", "grep", "ls"][i % 3];
        messages.extend(tool_turn(&format!("c{i}"), tool, 1_000));
    }
    messages
}

/// The message indices a plan masked.
fn masked(plan: Option<&WindowPlan<Message>>) -> Vec<usize> {
    let mut indices: Vec<usize> = plan
        .and_then(|plan| plan.edit.as_ref())
        .map(|edit| edit.replaced.iter().map(|r| r.index).collect())
        .unwrap_or_default();
    indices.sort_unstable();
    indices
}

fn config(strategy: &str, options: &str) -> StrategyConfig {
    let json = if options.is_empty() {
        format!("{{\"strategy\":\"{strategy}\"}}")
    } else {
        format!("{{\"strategy\":\"{strategy}\",{options}}}")
    };
    StrategyConfig::from_json(&json).unwrap_or_else(|error| panic!("{json}: {error}"))
}

/// W86: the same keys parse for both strategies and pick the same tool results: what local
/// masking replaces is what the provider is asked to clear ([`ClearToolUses::would_clear`]),
/// and what [`reconcile`] would count for a report of that many cleared tool uses.
#[test]
fn w86_one_option_set_keeps_and_clears_the_same_results_locally_and_on_the_provider() {
    // (what the row checks, the shared options, results cleared on the sample)
    let rows = [
        ("keep the last 3", r#""keepToolUses":3"#, 6),
        (
            "keep 3, never read_file, a minimum both clear over",
            r#""keepToolUses":3,"excludeTools":["read_file"],"clearAtLeastTokens":200"#,
            4,
        ),
        (
            "a minimum neither reaches clears nothing",
            r#""keepToolUses":3,"clearAtLeastTokens":100000"#,
            0,
        ),
        (
            "keep none, two tools excluded",
            r#""keepToolUses":0,"excludeTools":["grep","ls"]"#,
            3,
        ),
        (
            "a trigger the reading reaches",
            r#""keepToolUses":1,"triggerTokens":1000,"clearToolInputs":false"#,
            8,
        ),
    ];
    let messages = traffic(9);
    for (what, options, cleared) in rows {
        let local = config("observation-masking", options);
        let provider = config("anthropic-clear-tool-uses", options);
        let Some(ProviderContext::AnthropicClearToolUses(settings)) = provider.provider_context()
        else {
            panic!("{what}: not the provider-side twin: {provider:?}");
        };
        let sample: Conversation = conversation(messages.clone());
        let stage = Harness::from(local.build_stage().unwrap());
        let context = measured_context(&sample, 2, 5_000);
        let plan = visit(&stage, &sample, context);
        let masked = masked(plan.as_ref());
        let provider_clears = settings.would_clear(&sample);
        assert_eq!(masked, provider_clears, "{what}");
        assert_eq!(masked.len(), cleared, "{what}");
        let reported = oldest_tool_result_indices(
            &sample,
            provider_clears.len() as u64,
            &settings.exclude_tools,
        );
        assert_eq!(reported, provider_clears, "{what}");
        let edit = AppliedContextEdit::ClearedToolUses {
            provider_type: "clear_tool_uses_20250919".into(),
            cleared_tool_uses: Some(cleared as u64),
            cleared_input_tokens: None,
        };
        let record = reconcile(&sample, provider.provider_context().unwrap(), 3, &edit);
        let counted: u64 = masked
            .iter()
            .map(|index| sample.tokens_in(*index..*index + 1))
            .sum();
        assert_eq!(record.local_estimate_tokens, Some(counted), "{what}");
    }
}

/// W86: `keepToolUses` is `keepRecentObservations` under Anthropic's name, for masking and for
/// hybrid's masking half.
#[test]
fn w86_keep_tool_uses_is_keep_recent_observations() {
    let same = [
        (
            "observation-masking",
            r#""keepToolUses":3"#,
            r#""keepRecentObservations":3"#,
        ),
        (
            "observation-masking",
            r#""keepToolUses":3,"keepRecentObservations":3"#,
            r#""keepRecentObservations":3"#,
        ),
        (
            "hybrid",
            r#""thresholdTokens":900,"model":"extractive","keepToolUses":0"#,
            r#""thresholdTokens":900,"model":"extractive","keepRecentObservations":0"#,
        ),
    ];
    for (strategy, anthropic, local) in same {
        assert_eq!(
            config(strategy, anthropic),
            config(strategy, local),
            "{anthropic}"
        );
    }
}

/// W87: a turn holding a result of an excluded tool never leaves under a removing strategy;
/// the record names it `excluded-tool`.
#[test]
fn w87_excluded_tools_hold_their_turns_under_every_removing_strategy() {
    let rows = [
        (
            "sliding-window",
            r#""keepRecentTurns":1,"keepLastToolResults":false,"excludeTools":["read_file"]"#,
        ),
        (
            "token-budget",
            r#""thresholdTokens":1000,"keepRecentTurns":1,"keepLastToolResults":false,"excludeTools":["read_file"]"#,
        ),
        (
            "summarize-oldest",
            r#""thresholdTokens":1000,"keepRecentTurns":1,"model":"extractive","keepLastToolResults":false,"excludeTools":["read_file"]"#,
        ),
        (
            "hybrid",
            r#""thresholdTokens":1000,"keepRecentTurns":1,"model":"extractive","keepLastToolResults":false,"excludeTools":["read_file"],"keepToolUses":100"#,
        ),
    ];
    for (strategy, options) in rows {
        let messages = traffic(6);
        let mut window: Conversation = conversation(messages.clone());
        let stage = Harness::new(
            config(strategy, options).build_stage().unwrap(),
            Some(Box::new(FixedSummarizer::new("sum"))),
        );
        // Several visits, so each removes what it can and the last finds only what stays. The
        // reading is the local count, so the threshold lies between what must stay (the two
        // read_file turns, the last turn, the request) and the whole window.
        for iteration in 2..8 {
            let reading = window.tokens_in(0..window.len());
            let context = measured_context(&window, iteration, reading);
            let Some(plan) = visit_and_apply(&stage, &mut window, context) else {
                break;
            };
            let removed = plan.edit.as_ref().map_or(0, |edit| edit.removed.len());
            if removed == 0 {
                assert!(
                    plan.record
                        .refusals
                        .iter()
                        .any(|r| r.reason == RefusalReason::ExcludedTool),
                    "{strategy}: a visit that removed nothing names no excluded-tool refusal: {:?}",
                    plan.record.refusals
                );
            }
        }
        let kept_reads = window
            .messages()
            .iter()
            .filter(|m| m.content == text(1_000) && m.tool_call_id.is_some())
            .filter(|m| {
                messages.iter().any(|call| {
                    call.tool_calls.iter().any(|c| {
                        Some(c.id.as_str()) == m.tool_call_id.as_deref() && c.name == "read_file"
                    })
                })
            })
            .count();
        assert_eq!(kept_reads, 2, "{strategy}: {:?}", contents(&window));
        assert!(
            window.len() < messages.len(),
            "{strategy}: something else left"
        );
    }
}

/// W87: masking leaves an excluded tool's results as they are and says so in its record.
#[test]
fn w87_masking_spares_excluded_tools_and_names_them() {
    let sample: Conversation = conversation(traffic(6));
    let stage = Harness::from(
        config(
            "observation-masking",
            r#""keepToolUses":1,"excludeTools":["grep"]"#,
        )
        .build_stage()
        .unwrap(),
    );
    let plan = visit(&stage, &sample, context(1)).unwrap();
    let RecordDetail::Masking(detail) = &plan.record.detail else {
        panic!("unexpected detail {:?}", plan.record.detail);
    };
    assert_eq!(detail.excluded_tools, vec!["grep"]);
    assert_eq!(detail.masked_tools, vec!["read_file", "ls"]);
    assert_eq!(detail.masked_message_count, 3);
}

/// W88: `clearAtLeastTokens` masks nothing short of the minimum; `triggerTokens` masks only
/// once a fresh reading reaches it. Hybrid's masking half takes the minimum too, and its
/// record says why it masked nothing.
#[test]
fn w88_the_minimum_and_the_trigger_gate_masking() {
    let sample: Conversation = conversation(traffic(4));
    // (what the row checks, options, reading, results masked)
    let rows = [
        ("no minimum", r#""keepToolUses":1"#, None, 3),
        (
            "a minimum the masks reach",
            r#""keepToolUses":1,"clearAtLeastTokens":500"#,
            None,
            3,
        ),
        (
            "a minimum the masks do not reach",
            r#""keepToolUses":1,"clearAtLeastTokens":5000"#,
            None,
            0,
        ),
        (
            "a trigger without a reading",
            r#""keepToolUses":1,"triggerTokens":3000"#,
            None,
            0,
        ),
        (
            "a trigger the reading is under",
            r#""keepToolUses":1,"triggerTokens":3000"#,
            Some(2_999),
            0,
        ),
        (
            "a trigger the reading reaches",
            r#""keepToolUses":1,"triggerTokens":3000"#,
            Some(3_000),
            3,
        ),
    ];
    for (what, options, reading, count) in rows {
        let stage = Harness::from(
            config("observation-masking", options)
                .build_stage()
                .unwrap(),
        );
        let context = match reading {
            Some(input) => measured_context(&sample, 2, input),
            None => context(2),
        };
        let plan = visit(&stage, &sample, context);
        assert_eq!(masked(plan.as_ref()).len(), count, "{what}");
    }
    let hybrid = Harness::new(
        config(
            "hybrid",
            r#""thresholdTokens":100,"model":"extractive","keepToolUses":1,"clearAtLeastTokens":5000"#,
        )
        .build_stage()
        .unwrap(),
        Some(Box::new(FixedSummarizer::new("sum"))),
    );
    let plan = visit(&hybrid, &sample, measured_context(&sample, 2, 20_000)).unwrap();
    let RecordDetail::Hybrid(detail) = &plan.record.detail else {
        panic!("unexpected detail {:?}", plan.record.detail);
    };
    assert_eq!(detail.masking.masked_message_count, 0);
    assert_eq!(detail.masking.clear_at_least_tokens, Some(5_000));
}
