//! Each tool scenario driven to its end on each API: the calls of every round, the final text,
//! and the usage of every answer (reported = logged = the documented formula, its cached part
//! as the API's cache would have it).

use panewise_mock_server::{Scenario, HUGE_INPUT_TOKENS};
use serde_json::{json, Value};

use crate::{server, Api, APIS};

struct Case {
    scenario: &'static str,
    /// Tool rounds before the text answer.
    rounds: usize,
    /// The first answer's calls per API: (name, arguments).
    first_calls: fn(Api) -> Vec<(&'static str, Value)>,
    final_text: &'static str,
}

fn shell(api: Api, command: &str, description: &str) -> (&'static str, Value) {
    match api {
        Api::Anthropic => (
            "Bash",
            json!({"command": command, "description": description}),
        ),
        Api::OpenAi => ("exec_command", json!({"cmd": command})),
        Api::Gemini => (
            "run_shell_command",
            json!({"command": command, "description": description}),
        ),
    }
}

const CASES: &[Case] = &[
    Case {
        scenario: "tool-then-answer",
        rounds: 1,
        first_calls: |api| vec![shell(api, "echo hello", "Print hello")],
        final_text: "The command printed `hello`. Done.",
    },
    Case {
        scenario: "multi-round",
        rounds: 3,
        first_calls: |api| vec![shell(api, "echo round 1", "Print the round")],
        final_text: "All three rounds printed their number. Done.",
    },
    Case {
        scenario: "parallel-calls",
        rounds: 1,
        first_calls: |api| {
            vec![
                shell(api, "echo one", "Print one"),
                shell(api, "echo two", "Print two"),
            ]
        },
        final_text: "The commands printed `one` and `two`. Done.",
    },
    Case {
        scenario: "five-approvals",
        rounds: 1,
        first_calls: |api| {
            (1..=5)
                .map(|n| {
                    shell(
                        api,
                        &format!("echo approval {n}"),
                        "Print the approval's number",
                    )
                })
                .collect()
        },
        final_text: "All five commands printed their number. Done.",
    },
    Case {
        scenario: "file-write",
        rounds: 1,
        first_calls: |api| match api {
            // Claude's Write wants an absolute path: the directory its prompt states.
            Api::Anthropic => vec![(
                "Write",
                json!({"file_path": "/tmp/mock-work/hello.txt", "content": "hello from the panewise mock\n"}),
            )],
            Api::OpenAi => vec![(
                "exec_command",
                json!({"cmd": "printf 'hello from the panewise mock\\n' > hello.txt"}),
            )],
            Api::Gemini => vec![(
                "write_file",
                json!({"file_path": "hello.txt", "content": "hello from the panewise mock\n"}),
            )],
        },
        final_text: "I wrote hello.txt. Done.",
    },
    Case {
        scenario: "failing-tool",
        rounds: 1,
        first_calls: |api| {
            vec![shell(
                api,
                "echo failing >&2; exit 3",
                "Run a failing command",
            )]
        },
        final_text: "The command failed with exit status 3.",
    },
    Case {
        scenario: "huge-input",
        rounds: 1,
        first_calls: |api| vec![shell(api, "echo hello", "Print hello")],
        final_text: "PANEWISE-MOCK-SUMMARY",
    },
    Case {
        scenario: "slow-tool",
        rounds: 1,
        first_calls: |api| {
            vec![shell(
                api,
                "timeout 30 tail -f /dev/null",
                "Wait half a minute",
            )]
        },
        final_text: "The wait is over. Done.",
    },
    Case {
        scenario: "sleeping-tool",
        rounds: 1,
        first_calls: |api| vec![shell(api, "sleep 30; echo done", "Sleep half a minute")],
        final_text: "The wait is over. Done.",
    },
    Case {
        scenario: "detaching-tool",
        rounds: 1,
        first_calls: |api| {
            vec![shell(
                api,
                panewise_mock_server::DETACHING_COMMAND,
                "Start a detached sleep",
            )]
        },
        final_text: "The sleep was started. Done.",
    },
];

#[tokio::test]
async fn every_tool_scenario_runs_to_its_text_answer_on_every_api() {
    let server = server(Scenario::ToolThenAnswer).await;
    for case in CASES {
        for api in APIS {
            let label = format!("{} on {api:?}", case.scenario);
            let mut request = api.first_request();
            for round in 0..=case.rounds {
                let answer = api
                    .send(server.addr(), &request, Some(case.scenario), true)
                    .await;
                assert_eq!(answer.status, 200, "{label}, round {round}");
                assert!(answer.complete, "{label}, round {round}");
                let calls = api.calls(&answer);
                let sent_bytes = api.streaming(&request, true).to_string().len() as u64;

                let logged = server.log().pop().expect("the request is logged");
                let reported = api.reported_usage(&answer);
                assert_eq!(
                    logged.usage,
                    Some(reported),
                    "{label}, round {round}: logged = reported"
                );
                let expected_input = if case.scenario == "huge-input" && round == 0 {
                    HUGE_INPUT_TOKENS
                } else {
                    1000 + sent_bytes / 4
                };
                assert_eq!(
                    reported.input_tokens, expected_input,
                    "{label}, round {round}"
                );
                // The cache (`cache.rs`): these requests carry no `cache_control`, so
                // Anthropic reads and writes nothing; the implicit caches read a shared prefix
                // of 1,024 tokens or more (OpenAI in steps of 128) and never write.
                let cached = reported.cached_input_tokens;
                assert!(cached <= reported.input_tokens, "{label}");
                match api {
                    Api::Anthropic => assert_eq!(cached, 0, "{label}"),
                    Api::OpenAi => {
                        assert!(
                            cached == 0 || (cached - 1024) % 128 == 0,
                            "{label}: {cached}"
                        )
                    }
                    Api::Gemini => assert!(cached == 0 || cached >= 1024, "{label}: {cached}"),
                }
                if round > 0 && api != Api::Anthropic {
                    assert!(
                        cached >= 1024,
                        "{label}, round {round}: the last call's prefix"
                    );
                }
                assert_eq!(reported.cache_write_tokens, 0, "{label}");
                assert!(
                    reported.output_tokens > reported.reasoning_tokens,
                    "{label}"
                );

                if round < case.rounds {
                    assert_eq!(logged.answer, "tool-call", "{label}, round {round}");
                    if round == 0 {
                        let decoded: Vec<(&str, Value)> = calls
                            .iter()
                            .map(|c| (c.name.as_str(), c.args.clone()))
                            .collect();
                        assert_eq!(decoded, (case.first_calls)(api), "{label}");
                    }
                    assert!(!calls.is_empty(), "{label}, round {round}");
                    if api != Api::Anthropic {
                        assert!(reported.reasoning_tokens > 0, "{label}: tool answers think");
                    }
                    request = api.with_results(&request, &calls);
                } else {
                    assert_eq!(logged.answer, "text", "{label}");
                    assert!(calls.is_empty(), "{label}: the last answer calls nothing");
                    assert!(
                        api.text(&answer).contains(case.final_text),
                        "{label}: {}",
                        api.text(&answer)
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn multi_round_numbers_each_round_from_the_results_the_request_carries() {
    let server = server(Scenario::MultiRound).await;
    for api in APIS {
        let mut request = api.first_request();
        for round in 1..=3 {
            let answer = api.send(server.addr(), &request, None, true).await;
            let calls = api.calls(&answer);
            assert_eq!(calls.len(), 1, "{api:?} round {round}");
            assert_eq!(
                calls[0].args,
                shell(api, &format!("echo round {round}"), "Print the round").1
            );
            request = api.with_results(&request, &calls);
        }
    }
}

#[tokio::test]
async fn ids_of_tool_calls_differ_between_rounds_and_are_reproducible() {
    let server = server(Scenario::MultiRound).await;
    for api in [Api::Anthropic, Api::OpenAi] {
        let first = api.first_request();
        let a = api.calls(&api.send(server.addr(), &first, None, true).await);
        let again = api.calls(&api.send(server.addr(), &first, None, true).await);
        assert_eq!(a, again, "{api:?}: the same request gets the same answer");
        let second = api.with_results(&first, &a);
        let b = api.calls(&api.send(server.addr(), &second, None, true).await);
        assert_ne!(a[0].id, b[0].id, "{api:?}");
    }
}

#[tokio::test]
async fn a_request_after_compaction_gets_text_not_another_tool_call() {
    let server = server(Scenario::HugeInput).await;
    for api in APIS {
        let mut request = api.first_request();
        // A compacted conversation: the summary replaces the history, no tool results remain.
        let summary = "<summary>PANEWISE-MOCK-SUMMARY: it printed hello.</summary>";
        match api {
            Api::Anthropic => request["messages"][0]["content"][0]["text"] = json!(summary),
            Api::OpenAi => request["input"][1]["content"][0]["text"] = json!(summary),
            Api::Gemini => request["contents"][0]["parts"][0]["text"] = json!(summary),
        }
        let answer = api.send(server.addr(), &request, None, true).await;
        assert!(api.calls(&answer).is_empty(), "{api:?}");
        assert!(
            api.reported_usage(&answer).input_tokens < HUGE_INPUT_TOKENS,
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn a_generic_shell_tool_gets_a_command_and_no_known_tool_gets_text() {
    let server = server(Scenario::ToolThenAnswer).await;
    let mut request = Api::OpenAi.first_request();
    request["tools"] = json!([{"type": "function", "name": "shell", "parameters": {}}]);
    let calls = Api::OpenAi.calls(&Api::OpenAi.send(server.addr(), &request, None, true).await);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].name.as_str(), calls[0].args.clone()),
        ("shell", json!({"command": "echo hello"}))
    );

    request["tools"] = json!([]);
    let answer = Api::OpenAi.send(server.addr(), &request, None, true).await;
    assert!(Api::OpenAi.calls(&answer).is_empty());
    assert!(Api::OpenAi.text(&answer).contains("No tool"));
}

#[tokio::test]
async fn claude_writes_where_its_prompt_says_it_works_or_through_the_shell() {
    let server = server(Scenario::FileWrite).await;
    let cases = [
        (
            "Primary working directory: /a/b\nIs a git repo: no",
            json!(["Write", {"file_path": "/a/b/hello.txt", "content": "hello from the panewise mock\n"}]),
        ),
        (
            "<env>\nWorking directory: /c/\n</env>",
            json!(["Write", {"file_path": "/c/hello.txt", "content": "hello from the panewise mock\n"}]),
        ),
        (
            "Searches the current working directory.",
            json!(["Bash", {"command": "printf 'hello from the panewise mock\\n' > hello.txt", "description": "Write hello.txt"}]),
        ),
    ];
    for (system, expected) in cases {
        let mut request = Api::Anthropic.first_request();
        request["system"][0]["text"] = json!(system);
        let calls = Api::Anthropic.calls(
            &Api::Anthropic
                .send(server.addr(), &request, None, true)
                .await,
        );
        assert_eq!(calls.len(), 1, "{system}");
        assert_eq!(json!([calls[0].name, calls[0].args]), expected, "{system}");
    }
}
