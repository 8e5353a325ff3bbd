//! Approval modes on the own loop's tools: read-only refuses a write, ask without a terminal
//! denies it and says why, ask with a terminal runs it on `y`, auto allows a write inside the
//! working directory and asks (here: denies, no terminal) for one outside it. Every denial
//! goes back to the model as the call's error result, and the turn goes on.

use panewise_host::approval::ApprovalMode;
use panewise_host::session::lines::UserInput;
use panewise_mock_server::{Scenario, WRITTEN_CONTENT, WRITTEN_FILE};
use panewise_providers::ApiKind;

use crate::{assert_no_orphans, run, Setup};

fn write(api: ApiKind, approval: ApprovalMode) -> Setup {
    let mut setup = Setup::new(api, Scenario::FileWrite);
    setup.approval = approval;
    setup
}

fn second_request_says(run: &crate::Run, text: &str) -> bool {
    run.requests
        .iter()
        .filter(|request| request.method == "POST")
        .nth(1)
        .is_some_and(|request| request.body.to_string().contains(text))
}

#[tokio::test]
async fn read_only_refuses_a_write_and_tells_the_model() {
    for api in ApiKind::ALL {
        let run = run(write(api, ApprovalMode::ReadOnly)).await;
        let tools = &run.outcome.tool_runs;
        assert_eq!(tools.len(), 1, "{api}: {tools:?}");
        assert_eq!(tools[0].name, "write_file", "{api}");
        assert!(!tools[0].ran, "{api}");
        assert!(!run.cwd.join(WRITTEN_FILE).exists(), "{api}");
        assert!(
            second_request_says(&run, "denied by approval mode read-only"),
            "{api}"
        );
        assert_no_orphans(api, &run.requests);
        assert_eq!(run.outcome.state.turns_completed, 1, "{api}");
    }
}

#[tokio::test]
async fn ask_without_a_terminal_denies_through_the_reducers_queue_and_says_why() {
    let run = run(write(ApiKind::Anthropic, ApprovalMode::Ask)).await;
    assert!(!run.cwd.join(WRITTEN_FILE).exists());
    assert!(run
        .view
        .notices
        .iter()
        .any(|notice| notice.contains("there is no terminal to ask on")));
    assert!(second_request_says(&run, "no terminal to ask on"));
    // R86: the request went through the approval queue and was answered.
    let log = std::fs::read_to_string(&run.log).unwrap();
    assert!(log.contains("\"approval_requested\""), "{log}");
    assert!(log.contains("\"approval_answered\""), "{log}");
    assert!(run.outcome.state.pending_approvals.is_empty());
}

#[tokio::test]
async fn ask_with_a_terminal_runs_the_write_when_the_person_says_yes() {
    let (sender, lines) = panewise_host::session::lines::line_queue();
    let mut setup = write(ApiKind::Anthropic, ApprovalMode::Ask);
    // The person answers `y` when the question is shown, as on a terminal.
    setup.view.answer = Some((sender, "y".to_owned()));
    setup.user = UserInput {
        lines: Some(lines),
        prompts: false,
        ask: true,
    };
    let run = run(setup).await;
    assert_eq!(run.view.asked.len(), 1, "{:?}", run.view.asked);
    assert_eq!(run.view.asked[0].0, "write_file");
    let written = std::fs::read_to_string(run.cwd.join(WRITTEN_FILE)).unwrap();
    assert_eq!(written, WRITTEN_CONTENT);
}

#[tokio::test]
async fn auto_allows_a_write_inside_the_working_directory() {
    for api in ApiKind::ALL {
        let run = run(write(api, ApprovalMode::Auto)).await;
        let written = std::fs::read_to_string(run.cwd.join(WRITTEN_FILE)).unwrap_or_default();
        assert_eq!(written, WRITTEN_CONTENT, "{api}: {:?}", run.view.notices);
        assert!(run.outcome.tool_runs[0].ran, "{api}");
    }
}

#[tokio::test]
async fn auto_refuses_a_write_outside_the_working_directory() {
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = std::fs::canonicalize(outside.path()).unwrap();
    let mut setup = write(ApiKind::Anthropic, ApprovalMode::Auto);
    // The mock writes into the directory the prompt states: here, one outside the cwd.
    setup.stated_cwd = Some(outside_dir.clone());
    let run = run(setup).await;
    assert!(!outside_dir.join(WRITTEN_FILE).exists());
    assert!(!run.outcome.tool_runs[0].ran);
    assert!(second_request_says(&run, "no terminal to ask on"));
}
