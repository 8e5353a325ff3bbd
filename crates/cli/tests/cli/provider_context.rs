//! The provider-side window strategies through the binary: panewise's own loop against the
//! mock, which applies the context management it is sent as the real APIs do. Each strategy
//! is in the request body (with its beta header), each edit the mock reports is in the window
//! ledger as the provider's with the local estimate beside it, a compaction goes back in the
//! next request, and a strategy the API cannot apply is refused before anything is sent.

use std::path::Path;

use panewise_host::agent_loop::ledger::{ledger_path, LedgerLine};
use panewise_mock_server::{LoggedRequest, Scenario};
use panewise_window::AppliedContextEdit;
use serde_json::Value;

use crate::run_own_loop::{stderr, Machine};

/// The own loop over `api` (and `model`, when given) against `server`, with the window
/// strategy `strategy` (JSON).
async fn run_with_strategy(
    machine: &Machine,
    server: &panewise_mock_server::RunningServer,
    (api, model): (&str, Option<&str>),
    strategy: &str,
    log: &Path,
) -> std::process::Output {
    let config = machine.path(&format!("{api}-strategy.json"));
    std::fs::write(&config, strategy).unwrap();
    let mut args = vec![
        "run",
        "--provider",
        api,
        "--approval",
        "full-access",
        "--window",
        config.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ];
    if let Some(model) = model {
        args.extend(["--model", model]);
    }
    args.push("go on with the rounds");
    let mut command = machine.command(&args);
    match api {
        "anthropic" => command
            .env("ANTHROPIC_API_KEY", "sk-ant-mock-key")
            .env("ANTHROPIC_BASE_URL", server.base_url()),
        _ => command
            .env("OPENAI_API_KEY", "sk-mock-key")
            .env("OPENAI_BASE_URL", server.base_url()),
    };
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn model_calls(server: &panewise_mock_server::RunningServer) -> Vec<LoggedRequest> {
    server
        .log()
        .into_iter()
        .filter(|request| {
            request.method == "POST"
                && (request.path == "/v1/messages" || request.path == "/v1/responses")
        })
        .collect()
}

fn provider_edits(log: &Path) -> Vec<panewise_window::ProviderEditRecord> {
    panewise_host::agent_loop::ledger::read(&ledger_path(log))
        .unwrap()
        .lines
        .into_iter()
        .filter_map(|line| match line {
            LedgerLine::ProviderEdit { record } => Some(*record),
            _ => None,
        })
        .collect()
}

/// Whether any item of the request's history is a compaction sent back.
fn carries_compaction(body: &Value) -> bool {
    let anthropic = body["messages"].as_array().into_iter().flatten().any(|m| {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|block| block["type"] == "compaction")
    });
    let openai = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|item| item["type"] == "compaction");
    anthropic || openai
}

/// Rule: Anthropic's tool-use clearing is sent with its beta header; each clearing the
/// provider reports is filed as the provider's, with its count and the local estimate, and
/// `panewise replay` prints it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_tool_use_clearing_is_sent_applied_and_filed_as_the_providers() {
    let server = crate::start(Scenario::LongSession).await;
    let machine = Machine::new();
    let log = machine.path("clearing.jsonl");
    let strategy = r#"{"strategy": "anthropic-clear-tool-uses", "triggerTokens": 3000,
                       "keepToolUses": 2}"#;
    let output = run_with_strategy(&machine, &server, ("anthropic", None), strategy, &log).await;
    assert!(output.status.success(), "{}", stderr(&output));
    // The run's summary counts the provider's edits and prints the session's total cost.
    let err = stderr(&output);
    let window = err
        .lines()
        .find(|line| line.starts_with("panewise run: window:"))
        .unwrap_or_default();
    assert!(!window.contains("nothing was removed"), "{window}");
    assert!(
        window.contains("the provider edited the context on")
            && window.contains("tool use(s) cleared"),
        "{window}"
    );
    let cost = err
        .lines()
        .find(|line| line.starts_with("panewise run: cost: $"))
        .unwrap_or_default();
    assert!(
        cost.contains("estimated from the tokens the provider reported"),
        "{err}"
    );
    let calls = model_calls(&server);
    server.shutdown().await;
    for call in &calls {
        assert_eq!(
            call.body["context_management"]["edits"][0]["type"], "clear_tool_uses_20250919",
            "{}",
            call.body
        );
        let beta = call
            .headers
            .get("anthropic-beta")
            .cloned()
            .unwrap_or_default();
        assert!(beta.contains("context-management-2025-06-27"), "{beta}");
    }
    let edits = provider_edits(&log);
    assert!(edits.len() > 20, "{edits:?}");
    for record in &edits {
        let AppliedContextEdit::ClearedToolUses {
            cleared_tool_uses: Some(cleared),
            cleared_input_tokens: Some(tokens),
            ..
        } = &record.edit
        else {
            panic!("{record:?}");
        };
        assert!(*cleared > 0 && *tokens > 0, "{record:?}");
        assert_eq!(record.provider_removed_tokens, Some(*tokens));
        assert!(record.local_estimate_tokens.is_some_and(|local| local > 0));
    }
    let replay = crate::panewise(&["replay", log.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(
        text.contains("anthropic-clear-tool-uses (the provider's): cleared"),
        "{text}"
    );
    assert!(text.contains("by the local estimate"), "{text}");
}

/// Rule: Anthropic's compaction is sent with its beta header; the compaction the provider
/// reports is filed as the provider's, its own model call is billed, and the next request
/// sends the compaction back in its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_compaction_is_filed_billed_and_sent_back() {
    // The huge-input scenario's prompt counts past the 150,000-token trigger at once.
    let server = crate::start(Scenario::HugeInput).await;
    let machine = Machine::new();
    let log = machine.path("compact.jsonl");
    let strategy = r#"{"strategy": "anthropic-compact", "triggerTokens": 150000}"#;
    let output = run_with_strategy(
        &machine,
        &server,
        ("anthropic", Some("claude-sonnet-4-6")),
        strategy,
        &log,
    )
    .await;
    let calls = model_calls(&server);
    server.shutdown().await;
    assert!(calls.len() >= 2, "{}: {calls:?}", stderr(&output));
    assert_eq!(
        calls[0].body["context_management"]["edits"][0]["type"],
        "compact_20260112"
    );
    let beta = calls[0]
        .headers
        .get("anthropic-beta")
        .cloned()
        .unwrap_or_default();
    assert!(beta.contains("compact-2026-01-12"), "{beta}");
    let edits = provider_edits(&log);
    let compacted = edits
        .iter()
        .find(|record| matches!(record.edit, AppliedContextEdit::Compacted { .. }))
        .unwrap_or_else(|| panic!("no compaction filed: {edits:?}"));
    assert_eq!(compacted.strategy, "anthropic-compact");
    assert!(carries_compaction(&calls[1].body), "{}", calls[1].body);
    // The compaction's own call is a call of the session, billed with the prompt it read,
    // and the pane saw a compaction.
    let replay = crate::panewise(&["replay", log.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains("usage      prompt 190,000"), "{text}");
    assert!(
        text.contains("anthropic-compact (the provider's): compacted the conversation"),
        "{text}"
    );
    let session = std::fs::read_to_string(&log).unwrap();
    assert!(
        session.contains("\"type\":\"compaction_boundary\""),
        "{session}"
    );
}

/// Rule: OpenAI's compaction is sent in the Responses body; the compaction item the provider
/// returns is filed as the provider's and goes back in the next request's input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_compaction_is_filed_and_its_item_sent_back() {
    let server = crate::start(Scenario::LongSession).await;
    let machine = Machine::new();
    let log = machine.path("openai-compaction.jsonl");
    let strategy = r#"{"strategy": "openai-compaction", "compactThreshold": 3000}"#;
    let output = run_with_strategy(&machine, &server, ("openai", None), strategy, &log).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let calls = model_calls(&server);
    server.shutdown().await;
    assert_eq!(
        calls[0].body["context_management"][0],
        serde_json::json!({"type": "compaction", "compact_threshold": 3000})
    );
    let edits = provider_edits(&log);
    assert!(
        edits
            .iter()
            .any(|record| matches!(record.edit, AppliedContextEdit::Compacted { .. })),
        "{edits:?}"
    );
    let first_compacted = calls
        .iter()
        .position(|call| carries_compaction(&call.body))
        .unwrap_or_else(|| panic!("no request sent a compaction back"));
    assert!(first_compacted > 0);
}

/// Rule: thinking clearing is sent with its beta header (the own loop resends no thinking, so
/// the provider has none to clear and reports no edit, and none is filed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_thinking_clearing_is_sent_with_its_header() {
    let server = crate::start(Scenario::MultiRound).await;
    let machine = Machine::new();
    let log = machine.path("thinking.jsonl");
    let strategy = r#"{"strategy": "anthropic-clear-thinking", "keepThinkingTurns": 1}"#;
    let output = run_with_strategy(&machine, &server, ("anthropic", None), strategy, &log).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let calls = model_calls(&server);
    server.shutdown().await;
    assert!(!calls.is_empty());
    for call in &calls {
        assert_eq!(
            call.body["context_management"]["edits"][0]["type"],
            "clear_thinking_20251015"
        );
        let beta = call
            .headers
            .get("anthropic-beta")
            .cloned()
            .unwrap_or_default();
        assert!(beta.contains("context-management-2025-06-27"), "{beta}");
    }
    assert_eq!(provider_edits(&log), Vec::new());
}

/// Rule: a provider-side strategy the API or model cannot apply is refused at start with the
/// reason, and nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strategy_the_api_cannot_apply_is_refused_before_anything_is_sent() {
    let server = crate::start(Scenario::LongSession).await;
    let machine = Machine::new();
    let strategy = r#"{"strategy": "anthropic-compact", "triggerTokens": 150000}"#;
    // An Anthropic strategy on the OpenAI API; compaction on an Anthropic model the provider
    // does not document it for.
    for (api, reason) in [
        (("openai", None), "on the openai API"),
        (
            ("anthropic", Some("claude-sonnet-4-5")),
            "model `claude-sonnet-4-5`",
        ),
    ] {
        let log = machine.path(&format!("refused-{}.jsonl", api.0));
        let output = run_with_strategy(&machine, &server, api, strategy, &log).await;
        assert!(!output.status.success());
        let err = stderr(&output);
        assert!(err.contains("anthropic-compact"), "{err}");
        assert!(err.contains(reason), "{err}");
        assert_eq!(err.matches("cannot run").count(), 1, "said once: {err}");
    }
    let calls = model_calls(&server);
    server.shutdown().await;
    assert!(calls.is_empty(), "{calls:?}");
}
