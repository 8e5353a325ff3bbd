//! Golden sessions of the mock's scenarios: the conversation rebuilt from a session's log
//! (`agent_loop::resume::rebuild`) is the conversation the session had: the messages its
//! window ledger filed as the loop appended them, and, rendered for the API, exactly what
//! the session's last request sent (so each result's error flag is kept too).
//!
//! The scenarios whose model call fails mid-stream are left out of the exact comparison: there
//! the loop files the failed call's text after the next prompt when that prompt comes before
//! the stream's end, while the transcript (and so the rebuild) keeps it where it was said.

use panewise_host::agent_loop::history::LoopHistory;
use panewise_host::agent_loop::resume::{rebuild, Rebuilt};
use panewise_host::approval::ApprovalMode;
use panewise_mock_server::Scenario;
use panewise_providers::{ApiKind, RequestHead};
use panewise_window::{Message, Role};
use serde_json::Value;

use crate::{ledger, run, Setup};

/// A message's role, content, calls (id, name, arguments) and the call a result answers.
type Shape = (Role, String, Vec<(String, String, Value)>, Option<String>);

/// The fields the loop's history holds (not the time a message was born, which a resumed
/// session stamps with its own clock).
fn shape(message: &Message) -> Shape {
    let calls = message
        .tool_calls
        .iter()
        .map(|call| {
            // Arguments compared as JSON: the log keeps the input as a value.
            let args = serde_json::from_str(&call.args)
                .unwrap_or_else(|_| Value::String(call.args.clone()));
            (call.id.clone(), call.name.clone(), args)
        })
        .collect();
    let tool = message.tool_call_id.clone();
    (message.role, message.content.clone(), calls, tool)
}

fn rebuilt_of(log: &std::path::Path) -> Rebuilt {
    let bytes = std::fs::read(log).unwrap();
    let parsed = panewise_pane_state::parse_log_bytes(&bytes).unwrap();
    let entries: Vec<_> = parsed
        .transcript
        .into_iter()
        .map(|line| line.entry)
        .collect();
    rebuild([&entries])
}

/// The conversation part of a request body, by API.
fn conversation(api: ApiKind, body: &Value) -> Value {
    match api {
        ApiKind::Anthropic => body["messages"].clone(),
        ApiKind::OpenAi => body["input"].clone(),
        ApiKind::Gemini => body["contents"].clone(),
    }
}

#[tokio::test]
async fn the_history_rebuilt_from_a_log_is_the_history_its_session_had() {
    let scenarios = [
        Scenario::ToolThenAnswer,
        Scenario::MultiRound,
        Scenario::ParallelCalls,
        Scenario::FailingTool,
        Scenario::FileWrite,
        Scenario::RateLimitOnce,
    ];
    let mut checked = 0;
    for api in ApiKind::ALL {
        for scenario in scenarios {
            // full-access runs every call; read-only refuses the shell, so results are errors.
            let approvals: &[ApprovalMode] = match scenario {
                Scenario::ToolThenAnswer | Scenario::ParallelCalls => {
                    &[ApprovalMode::FullAccess, ApprovalMode::ReadOnly]
                }
                _ => &[ApprovalMode::FullAccess],
            };
            for &approval in approvals {
                let mut setup = Setup::new(api, scenario);
                setup.approval = approval;
                setup.prompts = vec!["run the command".to_owned(), "and once more".to_owned()];
                let run = run(setup).await;
                let what = format!("{api} {} {}", scenario.name(), approval.name());
                let rebuilt = rebuilt_of(&run.log);
                let filed: Vec<Message> = ledger(&run.log)
                    .messages()
                    .map(|value| panewise_window::openai::from_value(value).unwrap())
                    .collect();
                assert!(filed.len() >= 2, "{what}: {filed:?}");
                assert_eq!(
                    rebuilt.messages.iter().map(shape).collect::<Vec<_>>(),
                    filed.iter().map(shape).collect::<Vec<_>>(),
                    "{what}"
                );
                assert_eq!(
                    (
                        rebuilt.closed_calls,
                        rebuilt.dropped_calls,
                        rebuilt.cut_outputs
                    ),
                    (0, 0, 0),
                    "{what}"
                );
                // Rendered for the API, the history before the last call's answer is what the
                // session's last request carried, byte for byte once parsed.
                let Some(last) = run
                    .requests
                    .iter()
                    .rev()
                    .find(|request| request.method == "POST")
                else {
                    panic!("{what}: no request");
                };
                // The last request carried the history up to its call: some prefix of the
                // rebuilt one (a turn that failed may leave a prompt unsent) that holds every
                // tool result.
                let errored = rebuilt.errored.clone();
                let head = RequestHead {
                    model: "mock-model",
                    system: None,
                    tools: &[],
                    max_output_tokens: 1024,
                    // As the session sent it: a prefix of the history carries the breakpoint
                    // on its own last block, as the request did.
                    prompt_cache: true,
                    cache_key: None,
                    context_management: None,
                };
                let sent = conversation(api, &last.body);
                let matched = (1..=rebuilt.messages.len()).rev().find(|&len| {
                    let mut history = LoopHistory::new(api);
                    for message in &rebuilt.messages[..len] {
                        history.push(message.clone(), &errored);
                    }
                    let request = history.request(&head).unwrap();
                    let body: Value = serde_json::from_slice(&request.body).unwrap();
                    conversation(api, &body) == sent
                });
                let results = rebuilt
                    .messages
                    .iter()
                    .rposition(|m| m.role == Role::Tool)
                    .map_or(0, |at| at + 1);
                assert!(
                    matched.is_some_and(|len| len >= results),
                    "{what}: no prefix of the rebuilt history holding its results is the last \
                     request's {sent:#}"
                );
                if approval == ApprovalMode::ReadOnly && scenario == Scenario::ToolThenAnswer {
                    assert!(
                        !rebuilt.errored.is_empty(),
                        "{what}: the refusal is an error"
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * (6 + 2));
}
