//! W9–W13 and W49–W55, W61: the stage, configuration, staleness and a custom strategy.

use panewise_window::record::RecordDetail;
use panewise_window::{
    Message, Planned, RefusalReason, StageMemory, StrategyConfig, TokenBudget, Visit, VisitOutcome,
    WindowError, WindowPlan, WindowStage, WindowStrategy,
};

use crate::support::*;

fn config_error(json: &str) -> (String, String) {
    match StrategyConfig::from_json(json).unwrap_err() {
        WindowError::InvalidConfig { field, reason } => (field, reason),
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn w51_validation_errors_name_the_bad_field() {
    let cases = [
        (r#"{"strategy":"sliding-window"}"#, "keepRecentTurns"),
        (
            r#"{"strategy":"sliding-window","keepRecentTurns":0}"#,
            "keepRecentTurns",
        ),
        (
            r#"{"strategy":"sliding-window","keepRecentTurns":2.5}"#,
            "keepRecentTurns",
        ),
        (
            r#"{"strategy":"sliding-window","keepRecentTurns":"3"}"#,
            "keepRecentTurns",
        ),
        (r#"{"strategy":"token-budget"}"#, "thresholdTokens"),
        (
            r#"{"strategy":"token-budget","thresholdTokens":0}"#,
            "thresholdTokens",
        ),
        (
            r#"{"strategy":"token-budget","thresholdTokens":-5}"#,
            "thresholdTokens",
        ),
        (
            r#"{"strategy":"summarize-oldest","thresholdTokens":10}"#,
            "model",
        ),
        (
            r#"{"strategy":"summarize-oldest","thresholdTokens":10,"model":""}"#,
            "model",
        ),
        (
            r#"{"strategy":"summarize-oldest","thresholdTokens":10,"model":"m","retain":"keep"}"#,
            "retain",
        ),
        (
            r#"{"strategy":"sliding-window","keepRecentTurns":2,"keepLastToolResults":true}"#,
            "keepLastToolResults",
        ),
        (
            r#"{"strategy":"sliding-window","keepRecentTurns":2,"keepLastToolResults":1.5}"#,
            "keepLastToolResults",
        ),
        (
            r#"{"strategy":"sliding-window","keepRecentTurns":2,"threshold":5}"#,
            "threshold",
        ),
        (r#"{"strategy":"lru"}"#, "strategy"),
        (r#"{"keepRecentTurns":2}"#, "strategy"),
    ];
    for (json, field) in cases {
        let (named, reason) = config_error(json);
        assert_eq!(named, field, "{json}: {reason}");
    }
}

#[test]
fn w51_defaults_apply_and_false_equals_zero() {
    let config = StrategyConfig::from_json(
        r#"{"strategy":"token-budget","thresholdTokens":100,"keepLastToolResults":false}"#,
    )
    .unwrap();
    match &config {
        StrategyConfig::TokenBudget {
            keep_recent_turns,
            pins,
            ..
        } => {
            assert_eq!(*keep_recent_turns, 6);
            assert_eq!(pins.keep_last_tool_results, 0);
            assert_eq!(pins.keep_ledger_facts, 4);
        }
        other => panic!("unexpected config {other:?}"),
    }
    let summarize = StrategyConfig::from_json(
        r#"{"strategy":"summarize-oldest","thresholdTokens":100,"model":"m"}"#,
    )
    .unwrap();
    assert_eq!(summarize.pins().keep_last_tool_results, 2);
}

/// The stage holds no summarizer, so it cannot be built without one; instead a summarizing
/// strategy's visit stops at a request the caller must answer. (The host's runner, which pairs a
/// stage with its summarizer, names the missing `summarizer` field.)
#[test]
fn w51_a_summarizing_strategy_asks_its_caller_for_the_summary() {
    let config = StrategyConfig::from_json(
        r#"{"strategy":"hybrid","thresholdTokens":4999,"keepRecentTurns":1,"model":"m"}"#,
    )
    .unwrap();
    assert!(config.needs_summarizer());
    let stage = config.build_stage::<Message>().unwrap();
    let conversation = conversation(vec![
        Message::user("old"),
        Message::assistant(text(2_000)),
        Message::user("now"),
    ]);
    let mut memory = StageMemory::new();
    let outcome = stage
        .visit(
            &conversation,
            measured_context(&conversation, 2, 5_000),
            &mut memory,
        )
        .unwrap();
    let VisitOutcome::NeedsSummary(pending) = outcome else {
        panic!("expected a summary request, got {outcome:?}");
    };
    assert_eq!(pending.span(), 0..2);
    let request = pending.request();
    assert_eq!(request.model, "m");
    assert_eq!(request.lines().count(), 2);
    let plan = pending.complete(Err(panewise_window::SummarizerError::new("offline")));
    assert_eq!(
        plan.record.refusals[0].reason,
        RefusalReason::SummarizerFailed
    );
}

#[test]
fn w51_configuration_reads_from_toml_and_round_trips_through_json() {
    let config: StrategyConfig = toml::from_str(
        "strategy = \"summarize-oldest\"\nthresholdTokens = 9000\nmodel = \"small\"\nretain = \"discard\"\n",
    )
    .unwrap();
    let json = serde_json::to_string(&config).unwrap();
    assert!(json.contains("\"strategy\":\"summarize-oldest\""), "{json}");
    assert!(json.contains("\"thresholdTokens\":9000"), "{json}");
    assert_eq!(StrategyConfig::from_json(&json).unwrap(), config);
    let bad: Result<StrategyConfig, _> = toml::from_str("strategy = \"token-budget\"\n");
    assert!(bad.unwrap_err().to_string().contains("thresholdTokens"));
}

#[test]
fn w53_a_stale_reading_is_not_used() {
    let conversation = conversation(vec![Message::assistant(text(5_000)), Message::user("q")]);
    let stage = stage(TokenBudget::with_keep_recent_turns(10, 1).unwrap());
    let mut context = measured_context(&conversation, 5, 5_000);
    if let Some(measured) = context.measured.as_mut() {
        measured.iteration = 3;
    }
    assert!(visit(&stage, &conversation, context).is_none());
    if let Some(measured) = context.measured.as_mut() {
        measured.iteration = 4;
    }
    assert!(visit(&stage, &conversation, context).is_some());
}

/// A custom strategy: drop the oldest removable turn, whatever the budget.
struct DropOne;

impl WindowStrategy<Message> for DropOne {
    fn name(&self) -> &str {
        "drop-one"
    }

    fn plan(
        &self,
        visit: &mut Visit<'_, Message>,
    ) -> Result<Option<Planned<Message>>, WindowError> {
        let removal = visit.plan_removal(1, false);
        let mut record = visit.empty_record("drop-one");
        record.refusals = removal.refusals;
        let Some(span) = removal.span else {
            return Ok(Some(WindowPlan::unchanged(record).into()));
        };
        let first = visit.conversation().turns().nth(span.from_turn).unwrap();
        let range = first.start..first.start + first.len;
        record.removed_message_count = range.len();
        record.window_chars_after =
            record.window_chars_before - visit.conversation().chars_in(range.clone());
        let mut plan = WindowPlan::unchanged(record);
        plan.edit = Some(panewise_window::WindowEdit::remove(range, 0));
        Ok(Some(plan.into()))
    }
}

#[test]
fn w9_a_custom_strategy_is_one_impl_and_its_record_is_completed_by_the_stage() {
    let mut messages = vec![Message::user("old")];
    messages.extend(tool_turn("c1", "grep", 100));
    messages.push(Message::user("new"));
    let mut messages_with_head = vec![Message::system("sys")];
    messages_with_head.extend(messages);
    let mut conversation = conversation(messages_with_head);
    let stage = Harness::from(WindowStage::new(Box::new(DropOne)));
    let plan = visit_and_apply(&stage, &mut conversation, context(1)).unwrap();
    assert_eq!(plan.record.strategy, "drop-one");
    assert!(matches!(plan.record.detail, RecordDetail::Custom {}));
    let plan = visit_and_apply(&stage, &mut conversation, context(2)).unwrap();
    assert_eq!(
        plan.record.dropped_observations,
        Some(vec!["grep".to_string()])
    );
    assert!(no_orphaned_results(conversation.messages()));
}

#[test]
fn w61_one_fixture_is_refused_for_the_same_reasons_under_every_strategy() {
    use panewise_window::Paused;
    let messages = vec![
        Message::system("sys"),
        Message::assistant_calls("", &[("ask", "ask_human", "{}")]),
        Message::tool_result("ask", text(400)),
        Message::user("request"),
        Message::assistant(text(400)),
    ];
    let conversation = conversation(messages);
    let stages: Vec<Harness> = vec![
        configured(r#"{"strategy":"sliding-window","keepRecentTurns":1}"#, None),
        configured(
            r#"{"strategy":"token-budget","thresholdTokens":1,"keepRecentTurns":1}"#,
            None,
        ),
        configured(
            r#"{"strategy":"summarize-oldest","thresholdTokens":1,"keepRecentTurns":1,"model":"m"}"#,
            Some(Box::new(FixedSummarizer::new("s"))),
        ),
    ];
    for stage in &stages {
        let mut context = measured_context(&conversation, 2, 10_000);
        context.paused = Some(Paused {
            call_id: "ask",
            check_in: false,
        });
        let plan = visit(stage, &conversation, context).unwrap();
        let reasons: Vec<RefusalReason> = plan.record.refusals.iter().map(|r| r.reason).collect();
        assert_eq!(
            reasons,
            vec![
                RefusalReason::SystemEnvelope,
                RefusalReason::PausedTool,
                RefusalReason::CurrentRequest,
                RefusalReason::InsideKeepWindow
            ],
            "{}",
            stage.strategy_name()
        );
        assert!(plan.edit.is_none());
        let json = serde_json::to_string(&plan.record).unwrap();
        assert!(!json.contains("summary-not-smaller"));
    }
}

#[test]
fn w45_records_have_no_tokens_after_field_and_serialize_camel_case() {
    let conversation = conversation(vec![
        Message::assistant(text(500)),
        Message::user("q"),
        Message::assistant("a"),
    ]);
    let plan = visit(
        &configured(r#"{"strategy":"sliding-window","keepRecentTurns":1}"#, None),
        &conversation,
        context(1),
    )
    .unwrap();
    let json = serde_json::to_value(&plan.record).unwrap();
    for key in [
        "strategy",
        "iteration",
        "removedStageIds",
        "removedMessageCount",
        "windowCharsBefore",
        "windowCharsAfter",
        "refusals",
        "keepRecentTurns",
        "turnsBefore",
        "turnsAfter",
    ] {
        assert!(json.get(key).is_some(), "missing {key}: {json}");
    }
    assert!(!json.to_string().to_lowercase().contains("tokensafter"));
    let back: panewise_window::WindowRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, plan.record);
}

#[test]
fn w13_removed_stage_ids_and_survival_come_from_message_origins() {
    let mut old = Message::assistant(text(500));
    old.stage_id = Some("call-llm".to_string());
    old.born_at_ms = Some(400);
    let mut tool = Message::assistant(text(10));
    tool.stage_id = Some("call-llm".to_string());
    let conversation = conversation(vec![old, tool, Message::user("q")]);
    let plan = visit(
        &configured(r#"{"strategy":"sliding-window","keepRecentTurns":1}"#, None),
        &conversation,
        context(1),
    )
    .unwrap();
    assert_eq!(plan.record.removed_stage_ids, vec!["call-llm".to_string()]);
    assert_eq!(plan.evictions[0].survival_ms, 600);
    assert_eq!(plan.evictions[1].survival_ms, 0, "unknown birth time");
}

#[test]
fn w42_the_summarizer_gets_one_attempt_per_visit_and_no_retry() {
    let conversation = conversation(vec![
        Message::user("old"),
        Message::assistant(text(2_000)),
        Message::user("now"),
    ]);
    let counting = FixedSummarizer::new("s");
    let stage = configured(
        r#"{"strategy":"summarize-oldest","thresholdTokens":899,"keepRecentTurns":1,"model":"m"}"#,
        Some(Box::new(counting.clone())),
    );
    visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 900),
    );
    assert_eq!(counting.calls(), 1);
}

#[test]
fn w49_a_strategy_warning_reaches_the_caller_once_per_stage() {
    let conversation = conversation(vec![
        Message::user("old"),
        Message::assistant(text(2_000)),
        Message::user("now"),
    ]);
    let stage = configured(
        r#"{"strategy":"summarize-oldest","thresholdTokens":899,"keepRecentTurns":1,"model":"m"}"#,
        Some(Box::new(FailingSummarizer)),
    );
    let warnings: Vec<bool> = (2..6)
        .map(|iteration| {
            visit(
                &stage,
                &conversation,
                measured_context(&conversation, iteration, 900),
            )
            .unwrap()
            .warning
            .is_some()
        })
        .collect();
    assert_eq!(warnings, vec![true, false, false, false]);
}

#[test]
fn w61_sliding_window_works_with_a_provider_that_reports_no_usage() {
    let conversation = conversation(vec![
        Message::assistant(text(500)),
        Message::user("q"),
        Message::assistant("a"),
    ]);
    let mut context = measured_context(&conversation, 2, 0);
    if let Some(measured) = context.measured.as_mut() {
        measured.usage.output = 0;
    }
    let stage = configured(r#"{"strategy":"sliding-window","keepRecentTurns":1}"#, None);
    assert!(visit(&stage, &conversation, context).is_some());
}
