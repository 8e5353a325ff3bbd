//! A tool round trip in each API format: the model asks for `shell`, the loop runs it, the
//! result goes back with its call, and the model's answer ends the turn.

use panewise_mock_server::Scenario;
use panewise_pane_state::{TurnOutcome, TurnPhase};
use panewise_providers::ApiKind;

use crate::{assert_no_orphans, assert_replays, ledger, run, Setup};

#[tokio::test]
async fn each_api_runs_the_models_shell_call_and_sends_its_result_back_with_the_call() {
    for api in ApiKind::ALL {
        let run = run(Setup::new(api, Scenario::ToolThenAnswer)).await;
        let tools = &run.outcome.tool_runs;
        assert_eq!(tools.len(), 1, "{api}: {tools:?}");
        assert_eq!(tools[0].name, "shell", "{api}");
        assert_eq!(tools[0].summary, "echo hello", "{api}");
        assert!(tools[0].ran && !tools[0].is_error, "{api}: {tools:?}");
        assert_eq!(tools[0].exit_code, Some(0), "{api}");
        // Two calls: the one asking for the tool, the one answering after its result.
        let posts: Vec<_> = run
            .requests
            .iter()
            .filter(|request| request.method == "POST")
            .cloned()
            .collect();
        assert_eq!(posts.len(), 2, "{api}");
        let second = posts[1].body.to_string();
        assert!(second.contains("hello\\n[exit code 0]"), "{api}: {second}");
        assert_no_orphans(api, &posts);
        // R32: the turn ended completed, as the model answered without tools.
        assert!(
            matches!(
                run.outcome.state.turn_phase,
                TurnPhase::Done {
                    outcome: TurnOutcome::Completed,
                    ..
                }
            ),
            "{api}: {:?}",
            run.outcome.state.turn_phase
        );
        // R7: the tool's start and end reached the pane through the mapper.
        assert_eq!(run.outcome.state.turns_completed, 1, "{api}");
        assert!(run.outcome.state.session_totals.is_some(), "{api}");
        assert_replays(&run.log);
        let ledger = ledger(&run.log);
        assert_eq!(
            ledger.messages().count(),
            4,
            "{api}: user, call, result, answer"
        );
        assert_eq!(ledger.visit_lines().len(), 2, "{api}: a visit per call");
    }
}

#[tokio::test]
async fn a_failing_model_call_fails_the_turn_with_its_classified_kind() {
    // R11: a classified failure ends the working turn errored.
    for api in ApiKind::ALL {
        let run = run(Setup::new(api, Scenario::ServerError)).await;
        let failure = run.outcome.state.failure.as_ref().map(|f| f.failure.kind);
        assert_eq!(
            failure,
            Some(panewise_providers::FailureKind::ServerError),
            "{api}"
        );
        assert!(run.outcome.tool_runs.is_empty(), "{api}");
        assert_replays(&run.log);
    }
}
