//! The cache guard through the binary: panewise's own loop over Anthropic's format against the
//! mock, with a masking strategy whose edits would not pay for the prompt cache they break in
//! time. The ledger and `panewise replay` say, per visit, what the edit would have cost and
//! why it was held; the requests keep the prefix the cache holds.

use crate::run_own_loop::{run_anthropic_on_mock, stderr, Machine};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_masking_edit_that_does_not_pay_back_is_held_and_replay_says_why() {
    let server = crate::start(panewise_mock_server::Scenario::LongSession).await;
    let machine = Machine::new();
    let config = machine.path("guard.json");
    std::fs::write(
        &config,
        r#"{"strategy": "observation-masking", "keepRecentObservations": 3,
            "keepLastToolResults": false, "paybackCalls": 3}"#,
    )
    .unwrap();
    let log = machine.path("guarded.jsonl");
    let output = run_anthropic_on_mock(
        &machine,
        &server,
        &["--window", config.to_str().unwrap()],
        &log,
        "count to forty",
    )
    .await;
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let calls: Vec<_> = server
        .log()
        .into_iter()
        .filter(|request| request.method == "POST" && request.path == "/v1/messages")
        .collect();
    server.shutdown().await;

    // Masking engages once a fourth result exists; every such visit was held and says why.
    let replay = crate::panewise(&["replay", log.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&replay.stdout);
    let held: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("changed nothing; held: re-writes"))
        .collect();
    assert!(held.len() > 30, "{text}");
    assert!(
        held.iter()
            .all(|line| line.contains("beyond paybackCalls 3")),
        "{held:?}"
    );
    assert!(
        !text.contains("; masked "),
        "no visit masked anything: {text}"
    );
    // Nothing earlier in any request changed, so each call read all the previous one sent.
    let mut before: Option<panewise_mock_server::Usage> = None;
    for (index, call) in calls.iter().enumerate() {
        let usage = call.usage.unwrap();
        if let Some(before) = before {
            assert_eq!(
                usage.cached_input_tokens,
                before.cached_input_tokens + before.cache_write_tokens,
                "call {index}: {usage:?}"
            );
        }
        before = Some(usage);
    }
}
