//! Long scripted sessions (several tool rounds via `multi-round`, a huge reported input via
//! `huge-input`) under each built-in strategy, in each API format: the ledger holds the
//! records the strategy should file, and no request carried an orphan call or result.

use panewise_host::agent_loop::ledger::summarizer_call;
use panewise_mock_server::Scenario;
use panewise_providers::ApiKind;
use panewise_window::{RefusalReason, WindowRecord};

use crate::{assert_no_orphans, assert_replays, ledger, run, Setup};

fn has_refusal(records: &[WindowRecord], reason: RefusalReason) -> bool {
    records.iter().any(|record| {
        record
            .refusals
            .iter()
            .any(|refusal| refusal.reason == reason)
    })
}

async fn session(api: ApiKind, scenario: Scenario, strategy: &'static str) -> crate::Run {
    let mut setup = Setup::new(api, scenario);
    setup.strategy = strategy;
    // Long prompts: the first turn is worth removing once the second is the current request
    // (a drop notice or a summary must be smaller than what it replaces, W31).
    setup.prompts = vec![
        format!("first task: {}", "context ".repeat(400)),
        format!("second task: {}", "context ".repeat(400)),
    ];
    setup.max_iterations = 8;
    let run = run(setup).await;
    assert_no_orphans(api, &run.requests);
    assert_replays(&run.log);
    let ledger = ledger(&run.log);
    let named = ledger.visit_lines();
    let name = strategy.split('"').nth(3).unwrap_or_default();
    assert!(!named.is_empty(), "{api} {name}: no visit in the ledger");
    assert!(
        named.iter().all(|line| line.contains(name)),
        "{api} {name}: {named:#?}"
    );
    run
}

/// W14, W19, W32: the sliding window removes old turns and keeps the current request and
/// the keep window, naming both.
#[tokio::test]
async fn sliding_window_removes_old_turns_and_names_its_refusals() {
    for api in ApiKind::ALL {
        let run = session(
            api,
            Scenario::MultiRound,
            r#"{"strategy":"sliding-window","keepRecentTurns":1}"#,
        )
        .await;
        let records = &run.outcome.records;
        assert!(
            records.iter().any(|r| r.removed_message_count > 0),
            "{api}: {records:#?}"
        );
        assert!(has_refusal(records, RefusalReason::CurrentRequest), "{api}");
        // W27: the last tool result stays inside the keep window in these scripts, so the
        // pin has nothing to hold and the keep window is what is named.
        assert!(
            has_refusal(records, RefusalReason::InsideKeepWindow),
            "{api}"
        );
        // R45: each removal was reported to the pane as a compaction.
        assert!(run.outcome.state.compactions > 0, "{api}");
    }
}

/// W33: over the token budget the oldest turns leave; the huge reported input trips it.
#[tokio::test]
async fn token_budget_removes_when_the_reported_input_is_over_the_threshold() {
    for api in ApiKind::ALL {
        let run = session(
            api,
            Scenario::HugeInput,
            r#"{"strategy":"token-budget","thresholdTokens":100000,"keepRecentTurns":1,"keepLastToolResults":0}"#,
        )
        .await;
        let records = &run.outcome.records;
        assert!(
            !records.is_empty(),
            "{api}: the huge input did not engage it"
        );
        assert!(
            records.iter().any(|r| r.removed_message_count > 0)
                || has_refusal(records, RefusalReason::CurrentRequest),
            "{api}: {records:#?}"
        );
    }
}

/// W34, W43, W46: summarize-oldest asks the summarizer, over the same client, and files its tokens.
#[tokio::test]
async fn summarize_oldest_calls_the_model_summarizer_and_files_its_tokens() {
    // The threshold is over what must stay in the second task (the tool definitions, its
    // request, the kept tail: W80) and under both tasks together, so the first task is folded.
    for api in ApiKind::ALL {
        let run = session(
            api,
            Scenario::MultiRound,
            r#"{"strategy":"summarize-oldest","thresholdTokens":3200,"keepRecentTurns":1,"keepLastToolResults":0,"model":"mock-summarizer"}"#,
        )
        .await;
        let records = &run.outcome.records;
        let spent: Vec<_> = records.iter().filter_map(summarizer_call).collect();
        assert!(!spent.is_empty(), "{api}: {records:#?}");
        assert!(spent.iter().any(Option::is_some), "{api}: {spent:?}");
        // The summary request went to the same server, with the window's transcript.
        assert!(run
            .requests
            .iter()
            .any(|request| request.body.to_string().contains("<<<TRANSCRIPT>>>")));
        assert!(records.iter().any(|r| r.removed_message_count > 0), "{api}");
    }
}

/// Masking never removes: every visit keeps the message count; results only change content.
#[tokio::test]
async fn observation_masking_never_removes_a_message() {
    for api in ApiKind::ALL {
        let run = session(
            api,
            Scenario::MultiRound,
            r#"{"strategy":"observation-masking","keepRecentObservations":1}"#,
        )
        .await;
        assert!(
            run.outcome
                .records
                .iter()
                .all(|r| r.removed_message_count == 0),
            "{api}"
        );
    }
}

/// W34, W46: hybrid masks first and folds when masking is not enough, through the summarizer.
#[tokio::test]
async fn hybrid_folds_through_the_summarizer_when_masking_is_not_enough() {
    // Over what must stay, under both tasks together (as for summarize-oldest, W80).
    for api in ApiKind::ALL {
        let run = session(
            api,
            Scenario::MultiRound,
            r#"{"strategy":"hybrid","thresholdTokens":3200,"keepRecentTurns":1,"keepRecentObservations":1,"keepLastToolResults":0,"model":"mock-summarizer"}"#,
        )
        .await;
        let records = &run.outcome.records;
        assert!(!records.is_empty(), "{api}");
        assert!(
            records.iter().filter_map(summarizer_call).count() > 0,
            "{api}: {records:#?}"
        );
    }
}
