//! The cache guard (beyond the original rules): every edit's record says where the prompt
//! cache breaks, what the edit re-writes and saves, and when it pays back; `paybackCalls`
//! holds back an edit that does not pay in time, `overflowTokens` forces it, `shadow` only
//! records it.

use panewise_window::cache::{edit_cost, CachePricing, CacheRules};
use panewise_window::{EditDecision, Message, VisitContext};

use crate::support::*;

fn traffic(results: usize, chars: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("sys"), Message::user("request")];
    for i in 0..results {
        messages.extend(tool_turn(&format!("c{i}"), "read_file", chars));
    }
    messages
}

fn priced(mut context: VisitContext<'static>) -> VisitContext<'static> {
    context.cache_pricing = CachePricing::for_rules(CacheRules::anthropic());
    context
}

const MASK: &str = r#"{"strategy": "observation-masking", "keepRecentObservations": 2, "keepLastToolResults": false"#;

fn config(extra: &str) -> String {
    format!("{MASK}{extra}}}")
}

#[test]
fn cache_an_edit_s_record_names_the_break_what_it_rewrites_and_saves_and_its_payback() {
    let mut conversation = conversation(traffic(6, 4_000));
    let stage = configured(&config(""), None);
    let before = conversation.tokens_in(0..conversation.len());
    let plan = visit_and_apply(&stage, &mut conversation, priced(context(2))).unwrap();
    let after = conversation.tokens_in(0..conversation.len());
    let impact = plan
        .record
        .cache
        .expect("a priced visit files the cache impact");
    // The first masked result is the first tool result: system, request, call, result.
    assert_eq!(impact.break_at_message, 3);
    assert_eq!(impact.cost.saved_tokens, before - after);
    assert_eq!(
        impact.cost.rewritten_tokens,
        conversation.tokens_in(3..conversation.len())
    );
    let expected = edit_cost(
        CachePricing::for_rules(CacheRules::anthropic()).unwrap(),
        impact.cost.rewritten_tokens,
        impact.cost.saved_tokens,
    );
    assert_eq!(impact.cost, expected);
    assert_eq!(impact.decision, EditDecision::Applied);
    assert!(
        impact.reason.contains("pays back after"),
        "{}",
        impact.reason
    );
}

#[test]
fn cache_an_edit_that_does_not_pay_within_payback_calls_is_held_and_says_why() {
    // Small results deep in a long window: masking saves little and re-writes a lot.
    let mut messages = traffic(4, 800);
    for i in 0..6 {
        messages.extend(tool_turn(&format!("late{i}"), "grep", 20_000));
    }
    let mut conversation = conversation(messages);
    let untouched = contents(&conversation);
    let stage = configured(
        &config(r#", "keepRecentObservations": 7, "paybackCalls": 3"#),
        None,
    );
    let plan = visit_and_apply(&stage, &mut conversation, priced(context(2))).unwrap();
    let impact = plan.record.cache.expect("filed");
    assert_eq!(impact.decision, EditDecision::Held);
    assert!(
        impact.cost.payback_calls.unwrap_or(u64::MAX) > 3,
        "{impact:?}"
    );
    assert!(
        impact.reason.contains("beyond paybackCalls 3"),
        "{}",
        impact.reason
    );
    assert!(plan.edit.is_none());
    assert_eq!(
        plan.record.window_chars_after,
        plan.record.window_chars_before
    );
    assert_eq!(
        contents(&conversation),
        untouched,
        "a held edit changes nothing"
    );
}

#[test]
fn cache_an_edit_that_pays_within_payback_calls_is_applied() {
    let mut conversation = conversation(traffic(6, 4_000));
    let stage = configured(&config(r#", "paybackCalls": 50"#), None);
    let plan = visit_and_apply(&stage, &mut conversation, priced(context(2))).unwrap();
    let impact = plan.record.cache.expect("filed");
    assert_eq!(impact.decision, EditDecision::Applied, "{impact:?}");
    assert!(impact.reason.contains("within paybackCalls 50"));
    assert!(plan.edit.is_some());
}

#[test]
fn cache_at_overflow_tokens_an_edit_that_does_not_pay_is_forced_and_says_so() {
    let mut messages = traffic(4, 800);
    for i in 0..6 {
        messages.extend(tool_turn(&format!("late{i}"), "grep", 20_000));
    }
    let mut conversation = conversation(messages);
    let stage = configured(
        &config(r#", "keepRecentObservations": 7, "paybackCalls": 3, "overflowTokens": 30000"#),
        None,
    );
    let context = priced(measured_context(&conversation, 2, 40_000));
    let plan = visit_and_apply(&stage, &mut conversation, context).unwrap();
    let impact = plan.record.cache.expect("filed");
    assert_eq!(impact.decision, EditDecision::Forced);
    assert!(
        impact.reason.contains("forced at 40000 tokens"),
        "{}",
        impact.reason
    );
    assert!(plan.edit.is_some());
}

#[test]
fn cache_shadow_records_what_would_be_done_and_changes_nothing() {
    let mut conversation = conversation(traffic(6, 4_000));
    let untouched = contents(&conversation);
    let stage = configured(&config(r#", "shadow": true"#), None);
    let plan = visit_and_apply(&stage, &mut conversation, priced(context(2))).unwrap();
    let impact = plan.record.cache.expect("filed");
    assert_eq!(impact.decision, EditDecision::Shadow);
    assert!(impact.cost.saved_tokens > 0);
    assert!(plan.edit.is_none());
    assert_eq!(contents(&conversation), untouched);
}

#[test]
fn cache_without_the_provider_s_multipliers_no_impact_is_filed() {
    let mut conversation = conversation(traffic(6, 4_000));
    let stage = configured(&config(r#", "paybackCalls": 1"#), None);
    let plan = visit_and_apply(&stage, &mut conversation, context(2)).unwrap();
    assert_eq!(plan.record.cache, None);
    assert!(
        plan.edit.is_some(),
        "no multipliers, nothing to judge: the edit applies"
    );
}

#[test]
fn cache_guard_options_are_checked_by_name() {
    for (bad, field) in [
        (r#", "paybackCalls": 0"#, "paybackCalls"),
        (r#", "overflowTokens": -1"#, "overflowTokens"),
        (r#", "shadow": "yes""#, "shadow"),
    ] {
        let error = panewise_window::StrategyConfig::from_json(&config(bad))
            .unwrap_err()
            .to_string();
        assert!(error.contains(field), "{error}");
    }
}

/// Small old turns and two huge recent ones: folding the old ones saves little and re-writes
/// the huge tail.
fn small_span_huge_tail() -> Vec<Message> {
    let mut messages = vec![Message::system("sys"), Message::user("request")];
    for i in 0..4 {
        messages.extend(tool_turn(&format!("old{i}"), "read_file", 400));
    }
    // A call still waiting for its result ends the span, so the fold is small; the huge
    // turns after it may leave on a later visit, so what must stay (W80) is small too.
    messages.push(Message::assistant_calls("", &[("open", "shell", "{}")]));
    for i in 0..2 {
        messages.extend(tool_turn(&format!("new{i}"), "read_file", 40_000));
    }
    messages.push(Message::assistant("reading"));
    messages
}

const FOLD: &str = r#"{"strategy": "summarize-oldest", "thresholdTokens": 1000, "keepRecentTurns": 1, "model": "m", "keepLastToolResults": false"#;

#[test]
fn cache_a_fold_that_cannot_pay_even_with_an_empty_summary_is_held_without_asking_for_one() {
    let conversation = conversation(small_span_huge_tail());
    let summarizer = FixedSummarizer::new("summary");
    let stage = configured(
        &format!(r#"{FOLD}, "paybackCalls": 5}}"#),
        Some(Box::new(summarizer.clone())),
    );
    let context = priced(measured_context(&conversation, 2, 21_000));
    let plan = visit(&stage, &conversation, context).expect("engaged");
    assert_eq!(
        summarizer.calls(),
        0,
        "no summary is paid for a fold that is held"
    );
    let impact = plan.record.cache.expect("filed");
    assert_eq!(impact.decision, EditDecision::Held);
    assert!(
        impact.reason.contains("no summary asked"),
        "{}",
        impact.reason
    );
    assert!(plan.edit.is_none());
}

#[test]
fn cache_a_fold_that_may_pay_is_asked_for_and_judged_on_its_summary() {
    let conversation = conversation(small_span_huge_tail());
    let summarizer = FixedSummarizer::new("summary");
    let stage = configured(
        &format!(r#"{FOLD}, "paybackCalls": 100000}}"#),
        Some(Box::new(summarizer.clone())),
    );
    let context = priced(measured_context(&conversation, 2, 21_000));
    let plan = visit(&stage, &conversation, context).expect("engaged");
    assert_eq!(summarizer.calls(), 1);
    let impact = plan.record.cache.expect("filed");
    assert_eq!(impact.decision, EditDecision::Applied, "{impact:?}");
    assert!(plan.edit.is_some());
}

#[test]
fn cache_a_summary_is_never_asked_for_a_fold_the_guard_then_holds() {
    // (paybackCalls, summary chars): horizons from "nothing pays" to "everything pays", and
    // summaries from tiny to nearly the span's size, so some folds pay with an empty summary
    // but not with the one that came back.
    let horizons = [1u64, 2, 3, 5, 8, 13, 21, 34, 55, 89, 1_000, 100_000];
    let summaries = [7usize, 600, 1_200, 1_500];
    let mut asked_then_not_paying = 0;
    for horizon in horizons {
        for chars in summaries {
            let conversation = conversation(small_span_huge_tail());
            let summarizer = FixedSummarizer::new(&text(chars));
            let stage = configured(
                &format!(r#"{FOLD}, "paybackCalls": {horizon}}}"#),
                Some(Box::new(summarizer.clone())),
            );
            let context = priced(measured_context(&conversation, 2, 21_000));
            let plan = visit(&stage, &conversation, context).expect("engaged");
            let case = format!("paybackCalls {horizon}, summary of {chars} chars");
            let Some(impact) = plan.record.cache.clone() else {
                // A summary not smaller than the span: refused, nothing for the guard.
                assert!(plan.edit.is_none(), "{case}");
                continue;
            };
            match impact.decision {
                EditDecision::Held => {
                    assert_eq!(summarizer.calls(), 0, "{case}: held after asking");
                    assert!(plan.edit.is_none(), "{case}");
                    assert!(
                        plan.spend.is_none(),
                        "{case}: a held fold spent on a summary"
                    );
                }
                decision => {
                    assert_eq!(summarizer.calls(), 1, "{case}: {decision:?}");
                    assert!(plan.edit.is_some(), "{case}: a paid summary was not used");
                    if impact
                        .cost
                        .payback_calls
                        .is_none_or(|calls| calls > horizon)
                    {
                        asked_then_not_paying += 1;
                        assert!(impact.reason.contains("before its summary"), "{case}");
                    }
                }
            }
        }
    }
    assert!(
        asked_then_not_paying > 0,
        "the table holds no fold whose summary made it miss the horizon"
    );
}

#[test]
fn cache_the_last_summary_s_size_is_expected_of_the_next_before_asking() {
    let conversation = conversation(small_span_huge_tail());
    let summarizer = FixedSummarizer::new(&text(1_200));
    // A horizon the fold meets with an empty summary, not with one of 1,200 chars.
    let horizon = (1..100_000u64)
        .find(|horizon| {
            let probe = FixedSummarizer::new(&text(1_200));
            let stage = configured(
                &format!(r#"{FOLD}, "paybackCalls": {horizon}}}"#),
                Some(Box::new(probe.clone())),
            );
            let context = priced(measured_context(&conversation, 2, 21_000));
            let plan = visit(&stage, &conversation, context).expect("engaged");
            probe.calls() == 1
                && plan
                    .record
                    .cache
                    .is_some_and(|impact| impact.cost.payback_calls.is_none_or(|c| c > *horizon))
        })
        .expect("some horizon is met only with an empty summary");
    let stage = configured(
        &format!(r#"{FOLD}, "paybackCalls": {horizon}}}"#),
        Some(Box::new(summarizer.clone())),
    );
    let context = || priced(measured_context(&conversation, 2, 21_000));
    let first = visit(&stage, &conversation, context()).expect("engaged");
    assert_eq!(summarizer.calls(), 1);
    assert!(first.edit.is_some(), "a paid summary is used");
    // The same span again (the first plan not applied): now judged with the last summary's
    // size, it is held without a second summary.
    let second = visit(&stage, &conversation, context()).expect("engaged");
    assert_eq!(summarizer.calls(), 1, "a second summary was asked for");
    let impact = second.record.cache.expect("filed");
    assert_eq!(impact.decision, EditDecision::Held);
    assert!(
        impact.reason.contains("no summary asked"),
        "{}",
        impact.reason
    );
}
