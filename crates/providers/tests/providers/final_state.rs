//! Folding each fixture through decoder, mapping and reducer gives the state a person should see.

use panewise_pane_state::Msg;
use panewise_providers::{
    decode_all, fold_events, summarize, CostSource, FailureKind, Fold, Mapper, ModelTable,
    PaneSummary, Provider,
};

use crate::fixture;

fn summary_of(provider: Provider, path: &str) -> PaneSummary {
    let (decoded, counts) = decode_all(provider, &fixture(path));
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(provider, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    summarize(&mapper, counts, &events, &fold.state)
}

fn assert_clean(summary: &PaneSummary) {
    assert_eq!(summary.unknown_events, 0);
    assert_eq!(summary.decode_errors, 0);
}

fn assert_cost(summary: &PaneSummary, expected: f64) {
    let cost = summary.cost_usd.expect("a cost");
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
}

#[test]
fn claude_tool_call_ends_done_with_one_bash_call_and_the_reported_window() {
    for path in [
        "claude-code/tool-call.ndjson",
        "claude-code/tool-call-partial-messages.ndjson",
    ] {
        let summary = summary_of(Provider::ClaudeCode, path);
        assert_clean(&summary);
        assert_eq!(summary.turn_phase, "done", "{path}");
        assert_eq!(summary.turns_completed, 1);
        assert_eq!(crate::tool_calls(&summary), [("Bash", 1)]);
        // Input, cache writes and cache reads apart: 6240 + 2400 + 18000.
        assert_eq!(summary.input_tokens, Some(6_240));
        assert_eq!(summary.cache_write_input_tokens, Some(2_400));
        assert_eq!(summary.output_tokens, Some(90));
        assert_eq!(summary.cached_input_tokens, Some(18_000));
        assert_cost(&summary, 0.042_36);
        assert_eq!(summary.cost_source, CostSource::Reported);
        assert_eq!(summary.model.as_deref(), Some("claude-opus-5-5"));
        assert!(!summary.model_assumed);
        // The last call's whole prompt: 3160 + 1200 written + 9000 read.
        assert_eq!(summary.context_tokens, Some(13_360));
        assert_eq!(summary.context_window, Some(1_000_000));
        assert_eq!(summary.compactions, 0);
        assert_eq!(summary.failure, None);
    }
}

#[test]
fn claude_auto_compact_counts_one_real_compaction_and_a_fresh_context_reading() {
    let summary = summary_of(Provider::ClaudeCode, "claude-code/auto-compact.ndjson");
    assert_clean(&summary);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 1);
    assert_eq!(crate::tool_calls(&summary), [("Bash", 3)]);
    // The per-turn model breakdown includes the compaction call, which `usage` leaves out.
    assert_eq!(
        summary
            .input_tokens
            .zip(summary.cache_write_input_tokens)
            .map(|(a, b)| a + b),
        Some(202_680 + 6_000)
    );
    assert_eq!(summary.output_tokens, Some(235));
    assert_eq!(summary.cached_input_tokens, Some(45_000));
    assert_cost(&summary, 0.854_42);
    assert_eq!(summary.cost_source, CostSource::Reported);
    assert_eq!(summary.context_tokens, Some(3_200 + 1_200 + 9_000));
    assert_eq!(summary.context_window, Some(1_000_000));
    assert_eq!(summary.compactions, 1);
    assert_eq!(summary.failure, None);
}

#[test]
fn claude_rate_limit_is_a_retryable_rate_limited_failure_not_a_crash() {
    let summary = summary_of(Provider::ClaudeCode, "claude-code/error-429.ndjson");
    assert_clean(&summary);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 0);
    assert!(summary.tools.is_empty());
    assert_eq!(summary.input_tokens, Some(0));
    assert_eq!(summary.output_tokens, Some(0));
    assert_cost(&summary, 0.0);
    assert_eq!(summary.context_tokens, None);
    assert_eq!(summary.compactions, 0);
    let failure = summary.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::RateLimited);
    assert!(failure.retryable);
    assert!(failure.message.contains("(429)"), "{}", failure.message);
}

#[test]
fn claude_multi_turn_session_adds_per_turn_costs_once() {
    let summary = summary_of(Provider::ClaudeCode, "claude-code/multi-turn-stdin.ndjson");
    assert_clean(&summary);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 2);
    assert_eq!(crate::tool_calls(&summary), [("Bash", 2)]);
    assert_eq!(summary.input_tokens, Some(6_240 + 6_560));
    assert_eq!(summary.cache_write_input_tokens, Some(2_400 + 2_400));
    assert_eq!(summary.output_tokens, Some(180));
    assert_eq!(summary.cached_input_tokens, Some(36_000));
    // The CLI's running total after turn two, not turn one's total plus the running total.
    assert_cost(&summary, 0.086);
    assert_eq!(summary.context_tokens, Some(3_320 + 1_200 + 9_000));
    assert_eq!(summary.context_window, Some(1_000_000));
    assert_eq!(summary.compactions, 0);
    assert_eq!(summary.failure, None);
}

#[test]
fn codex_tool_call_takes_its_window_from_the_model_table() {
    let summary = summary_of(Provider::Codex, "codex/tool-call.jsonl");
    assert_clean(&summary);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 1);
    assert_eq!(crate::tool_calls(&summary), [("shell", 1)]);
    // Codex counts cached tokens inside input_tokens; they are kept apart here.
    assert_eq!(summary.input_tokens, Some(5_330 - 2_048));
    assert_eq!(summary.output_tokens, Some(60));
    assert_eq!(summary.reasoning_tokens, Some(16));
    assert_eq!(summary.cached_input_tokens, Some(2_048));
    // Codex reports no cost: estimated at gpt-5.5's prices ($5 in, $0.50 cached, $30 out per
    // million), the model the table assumes because the stream names none.
    assert_cost(
        &summary,
        (3_282.0 * 5.0 + 2_048.0 * 0.5 + 60.0 * 30.0) / 1e6,
    );
    assert_eq!(summary.cost_source, CostSource::Estimated);
    assert_eq!(summary.model.as_deref(), Some("gpt-5.5"));
    assert!(summary.model_assumed);
    // Codex reports only the turn's sum over its two calls (2620 + 2710 prompt tokens): not a
    // context reading. The meter still knows the model's window from the table.
    assert_eq!(summary.context_tokens, None);
    assert_eq!(summary.context_window, Some(400_000));
    assert_eq!(summary.compactions, 0);
    assert_eq!(summary.failure, None);
}

#[test]
fn codex_rate_limit_is_one_retryable_failure_with_no_invented_usage() {
    let summary = summary_of(Provider::Codex, "codex/error-429.jsonl");
    assert_clean(&summary);
    assert_eq!(summary.events, 4);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 0);
    assert!(summary.tools.is_empty());
    assert_eq!(summary.input_tokens, None);
    assert_eq!(summary.output_tokens, None);
    assert_eq!(summary.cost_usd, None);
    assert_eq!(summary.cost_source, CostSource::Unknown);
    assert_eq!(summary.context_tokens, None);
    assert_eq!(summary.compactions, 0);
    let failure = summary.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::RateLimited);
    assert!(failure.retryable);
}

#[test]
fn gemini_tool_call_follows_the_working_model_not_the_router() {
    let summary = summary_of(Provider::GeminiCli, "gemini-cli/tool-call.jsonl");
    assert_clean(&summary);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 1);
    assert_eq!(crate::tool_calls(&summary), [("run_shell_command", 1)]);
    assert_eq!(summary.input_tokens, Some(4_404));
    // 40 + 20 output plus 32 thoughts tokens (the total beyond input and output).
    assert_eq!(summary.output_tokens, Some(92));
    assert_eq!(summary.reasoning_tokens, Some(32));
    assert_eq!(summary.cached_input_tokens, Some(4_096));
    // The working model is newer than the price list: no cost, and a warning naming it.
    assert_eq!(summary.cost_usd, None);
    assert_eq!(summary.cost_source, CostSource::Unknown);
    assert_eq!(summary.warnings.len(), 1);
    assert!(
        summary.warnings[0].contains("`gemini-3.8-flash`"),
        "{:?}",
        summary.warnings
    );
    assert!(!summary.model_assumed);
    // 8200 is the working model's two calls summed (4050 + 4150 prompt tokens): not a reading.
    assert_eq!(summary.context_tokens, None);
    assert_eq!(summary.context_window, Some(1_048_576));
    assert_eq!(summary.compactions, 0);
    assert_eq!(summary.failure, None);
}

#[test]
fn gemini_quota_error_is_a_retryable_rate_limited_failure() {
    let summary = summary_of(Provider::GeminiCli, "gemini-cli/error-429.jsonl");
    assert_clean(&summary);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 0);
    assert!(summary.tools.is_empty());
    assert_eq!(summary.input_tokens, Some(300));
    assert_eq!(summary.output_tokens, Some(20));
    // Only the routing model was called; it is priced ($0.30 in, $2.50 out per million).
    assert_cost(&summary, (300.0 * 0.3 + 20.0 * 2.5) / 1e6);
    assert_eq!(summary.cost_source, CostSource::Estimated);
    // Those 300 tokens are the router's prompt, not the conversation: no context reading.
    assert_eq!(summary.context_tokens, None);
    assert_eq!(summary.context_window, None);
    assert_eq!(summary.compactions, 0);
    let failure = summary.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::RateLimited);
    assert!(failure.retryable);
    assert!(failure
        .message
        .starts_with("[API Error: Resource has been exhausted"));
}

#[test]
fn a_configured_table_overrides_the_built_in_window() {
    let (decoded, counts) = decode_all(Provider::Codex, &fixture("codex/tool-call.jsonl"));
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let table = ModelTable::built_in().overridden_by(
        ModelTable::from_json(r#"{"windows":[{"model":"gpt-5.5","window":272000}]}"#).unwrap(),
    );
    let mut mapper = Mapper::new(Provider::Codex, table);
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.context_window, Some(272_000));
    let mut mapper =
        Mapper::new(Provider::Codex, ModelTable::built_in()).with_model(Some("o3".into()));
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.context_window, Some(200_000));
}

#[test]
fn a_token_drop_without_a_reported_compaction_counts_as_a_heuristic_compaction() {
    // Two Codex turns of one model call each (no tool), whose prompt shrinks from 60k to 20k:
    // each turn's sum is that call's prompt, a real reading. Codex reports no compaction, so the
    // reducer's drop heuristic must.
    let stream = concat!(
        r#"{"type":"thread.started","thread_id":"t"}"#,
        "\n",
        r#"{"type":"turn.started"}"#,
        "\n",
        r#"{"type":"turn.completed","usage":{"input_tokens":60000,"cached_input_tokens":0,"output_tokens":10}}"#,
        "\n",
        r#"{"type":"turn.started"}"#,
        "\n",
        r#"{"type":"turn.completed","usage":{"input_tokens":20000,"cached_input_tokens":0,"output_tokens":10}}"#,
        "\n",
    );
    let (decoded, counts) = decode_all(Provider::Codex, stream.as_bytes());
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::Codex, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.turns_completed, 2);
    assert_eq!(summary.compactions, 1);
    assert_eq!(summary.context_tokens, Some(20_000));
}

#[test]
fn a_rate_limit_retry_shows_as_waiting_with_the_retry_delay_before_the_failure() {
    let (decoded, _) = decode_all(
        Provider::ClaudeCode,
        &fixture("claude-code/error-429.ndjson"),
    );
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let retry = events
        .iter()
        .position(|event| {
            matches!(
                event,
                panewise_providers::ProviderEvent::ProviderRetrying { .. }
            )
        })
        .expect("a retry event");
    // Fold only up to the retry, as a live pane would have it then (no end of stream yet).
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let mut messages = mapper.prologue(1_000);
    for (index, event) in events[..=retry].iter().enumerate() {
        mapper.map(event, 1_010 + index as u64 * 10, &mut messages);
    }
    let mut state = panewise_pane_state::State::new("pane");
    for msg in messages {
        state = panewise_pane_state::step(state, 2_000, msg).0;
    }
    match &state.turn_phase {
        panewise_pane_state::TurnPhase::Streaming {
            waiting_reason,
            retry_after_ms,
            ..
        } => {
            assert!(waiting_reason.is_some());
            assert_eq!(*retry_after_ms, Some(1_024));
        }
        other => panic!("expected a waiting streaming phase, got {other:?}"),
    }
    assert!(state.failure.is_none());
}

#[test]
fn a_stream_cut_off_mid_turn_ends_as_process_exited_not_as_a_turn_that_never_ends() {
    let whole = fixture("claude-code/tool-call.ndjson");
    let cut: Vec<u8> = whole
        .split_inclusive(|byte| *byte == b'\n')
        .take(9)
        .flatten()
        .copied()
        .collect();
    let (decoded, counts) = decode_all(Provider::ClaudeCode, &cut);
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 0);
    assert_eq!(crate::tool_calls(&summary), [("Bash", 1)]);
    let failure = summary.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::ProcessExited);
    assert!(!failure.retryable);
    assert_eq!(
        panewise_providers::process_exited_failure(Some(1)).message,
        "the agent process exited with code 1 before finishing its turn"
    );
}

/// Decodes and folds `stream` (lines joined with newlines) as `provider`'s output.
fn fold_stream(provider: Provider, lines: &[&str]) -> (Fold, PaneSummary) {
    let stream: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let (decoded, counts) = decode_all(provider, stream.as_bytes());
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(provider, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    (fold, summary)
}

fn context_readings(fold: &Fold) -> Vec<u64> {
    fold.messages
        .iter()
        .filter_map(|(_, msg)| match msg {
            Msg::TokensIn { input, .. } => Some(*input),
            _ => None,
        })
        .collect()
}

#[test]
fn codex_turn_summed_usage_is_not_a_context_reading() {
    // The capture's turn ran one tool, so two model calls: its usage (5330 prompt tokens) is
    // their sum, while the context the model saw was 2710 tokens at most.
    let (decoded, counts) = decode_all(Provider::Codex, &fixture("codex/tool-call.jsonl"));
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::Codex, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    assert_eq!(context_readings(&fold), Vec::<u64>::new());
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.context_tokens, None);
    assert_eq!(summary.context_window, Some(400_000));
    // The turn's totals still count every call.
    assert_eq!(summary.input_tokens, Some(5_330 - 2_048));
    assert_eq!(summary.cached_input_tokens, Some(2_048));
    assert_eq!(summary.output_tokens, Some(60));
}

#[test]
fn gemini_turn_summed_usage_is_not_a_context_reading() {
    let (decoded, _) = decode_all(Provider::GeminiCli, &fixture("gemini-cli/tool-call.jsonl"));
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::GeminiCli, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    assert_eq!(context_readings(&fold), Vec::<u64>::new());
}

#[test]
fn codex_turn_sums_over_several_calls_do_not_count_a_false_compaction() {
    // Three tools (four calls) summing 80k, then a one-call turn of 21k: the context did not
    // shrink by half, the number of calls did. Only the second turn is a reading.
    let tool = |id: &str| {
        format!(
            r#"{{"type":"item.completed","item":{{"id":"{id}","type":"command_execution","command":"ls","aggregated_output":"","exit_code":0,"status":"completed"}}}}"#
        )
    };
    let (tool_1, tool_2, tool_3) = (tool("item_1"), tool("item_2"), tool("item_3"));
    let (fold, summary) = fold_stream(
        Provider::Codex,
        &[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"turn.started"}"#,
            &tool_1,
            &tool_2,
            &tool_3,
            r#"{"type":"turn.completed","usage":{"input_tokens":80000,"cached_input_tokens":0,"output_tokens":10}}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":21000,"cached_input_tokens":0,"output_tokens":10}}"#,
        ],
    );
    assert_eq!(summary.turns_completed, 2);
    assert_eq!(summary.compactions, 0);
    assert_eq!(context_readings(&fold), vec![21_000]);
    assert_eq!(summary.context_tokens, Some(21_000));
    assert_eq!(summary.context_window, Some(400_000));
    assert_eq!(summary.input_tokens, Some(101_000));
}

#[test]
fn a_turn_sum_is_no_reading_after_a_retry_or_when_the_turn_start_was_not_seen() {
    // A reconnect may have cost a call the sum includes; a turn seen only from its middle may
    // have run tools before: either way the count of calls is unknown.
    let (fold, summary) = fold_stream(
        Provider::Codex,
        &[
            r#"{"type":"turn.started"}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":9000,"cached_input_tokens":0,"output_tokens":10}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":9500,"cached_input_tokens":0,"output_tokens":10}}"#,
        ],
    );
    assert_eq!(context_readings(&fold), Vec::<u64>::new());
    assert_eq!(summary.context_tokens, None);
    assert_eq!(summary.input_tokens, Some(18_500));
}

#[test]
fn gemini_single_call_turn_sum_is_the_context_reading() {
    // No tool: the working model was called once, so its turn figures are that call's prompt.
    let (fold, summary) = fold_stream(
        Provider::GeminiCli,
        &[
            r#"{"type":"init","session_id":"s","model":"auto"}"#,
            r#"{"type":"message","role":"user","content":"hi"}"#,
            r#"{"type":"message","role":"assistant","content":"Hello.","delta":true}"#,
            r#"{"type":"result","status":"success","stats":{"input_tokens":4300,"output_tokens":25,"cached":0,"input":4300,"duration_ms":5,"tool_calls":0,"models":{"gemini-3.5-flash-lite":{"input_tokens":300,"output_tokens":20,"cached":0,"input":300},"gemini-3.8-flash":{"input_tokens":4000,"output_tokens":5,"cached":0,"input":4000}}}}"#,
        ],
    );
    assert_eq!(context_readings(&fold), vec![4_000]);
    assert_eq!(summary.context_tokens, Some(4_000));
    assert_eq!(summary.context_window, Some(1_048_576));
    assert_eq!(summary.compactions, 0);
}

#[test]
fn a_stream_without_a_turn_start_that_ends_mid_turn_ends_as_process_exited() {
    // A Claude stream captured without its `system/init` line (so no turn start) and cut off
    // before its `result`: the turn's work opens the turn, and the end of the stream fails it.
    let whole = fixture("claude-code/tool-call.ndjson");
    let cut: Vec<u8> = whole
        .split_inclusive(|byte| *byte == b'\n')
        .filter(|line| !line.windows(16).any(|w| w == br#""subtype":"init""#))
        .take(8)
        .flatten()
        .copied()
        .collect();
    let (decoded, counts) = decode_all(Provider::ClaudeCode, &cut);
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    assert!(!events
        .iter()
        .any(|event| matches!(event, panewise_providers::ProviderEvent::TurnStarted { .. })));
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_ne!(summary.turn_phase, "streaming");
    assert_eq!(summary.turns_completed, 0);
    let failure = summary.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::ProcessExited);
}

#[test]
fn a_whole_turn_without_a_turn_start_ends_without_a_failure() {
    // The turn's end closes the turn its work opened: nothing is left to fail at the end.
    let whole = fixture("claude-code/tool-call.ndjson");
    let without_init: Vec<u8> = whole
        .split_inclusive(|byte| *byte == b'\n')
        .filter(|line| !line.windows(16).any(|w| w == br#""subtype":"init""#))
        .flatten()
        .copied()
        .collect();
    let (decoded, counts) = decode_all(Provider::ClaudeCode, &without_init);
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.failure, None);
}

/// What each captured failure must show: kind, retryable, HTTP status (when the stream says).
const FAILURES: &[(&str, FailureKind, bool, Option<u16>)] = &[
    (
        "claude-code/error-429.ndjson",
        FailureKind::RateLimited,
        true,
        Some(429),
    ),
    (
        "claude-code/error-500.ndjson",
        FailureKind::ServerError,
        true,
        Some(500),
    ),
    (
        "claude-code/error-503.ndjson",
        FailureKind::Overloaded,
        true,
        Some(503),
    ),
    (
        "claude-code/error-529.ndjson",
        FailureKind::Overloaded,
        true,
        Some(529),
    ),
    (
        "claude-code/stream-cut.ndjson",
        FailureKind::StreamDisconnected,
        true,
        None,
    ),
    (
        "codex/error-429.jsonl",
        FailureKind::RateLimited,
        true,
        Some(429),
    ),
    (
        "codex/error-429-no-retries.jsonl",
        FailureKind::RateLimited,
        true,
        Some(429),
    ),
    (
        "codex/error-500.jsonl",
        FailureKind::ServerError,
        true,
        None,
    ),
    (
        "codex/error-503.jsonl",
        FailureKind::Overloaded,
        true,
        Some(503),
    ),
    (
        "codex/error-529.jsonl",
        FailureKind::Overloaded,
        true,
        Some(529),
    ),
    (
        "codex/stream-cut.jsonl",
        FailureKind::StreamDisconnected,
        true,
        None,
    ),
    // Issue 18, captured by `cargo xtask e2e` (2026-12-02): the JSON-RPC channels.
    (
        "acp/error-429-gemini.ndjson",
        FailureKind::RateLimited,
        true,
        Some(429),
    ),
    (
        "acp/error-500-gemini.ndjson",
        FailureKind::ServerError,
        true,
        Some(500),
    ),
    (
        "codex-app-server/error-429.ndjson",
        FailureKind::RateLimited,
        true,
        Some(429),
    ),
    (
        "codex-app-server/error-500.ndjson",
        FailureKind::ServerError,
        true,
        None,
    ),
    (
        "gemini-cli/error-429.jsonl",
        FailureKind::RateLimited,
        true,
        None,
    ),
    (
        "gemini-cli/error-429-ten-attempts.jsonl",
        FailureKind::RateLimited,
        true,
        None,
    ),
    (
        "gemini-cli/error-500.jsonl",
        FailureKind::ServerError,
        true,
        Some(500),
    ),
    (
        "gemini-cli/error-503.jsonl",
        FailureKind::Overloaded,
        true,
        None,
    ),
    (
        "gemini-cli/error-529.jsonl",
        FailureKind::Overloaded,
        true,
        Some(529),
    ),
    (
        "gemini-cli/stream-cut.jsonl",
        FailureKind::StreamDisconnected,
        true,
        None,
    ),
];

#[test]
fn every_captured_server_error_is_classified_as_the_cli_reported_it() {
    for (path, kind, retryable, status) in FAILURES {
        let provider = crate::fixtures()
            .into_iter()
            .find(|(_, fixture)| fixture == path)
            .map(|(provider, _)| provider)
            .unwrap_or_else(|| panic!("{path} is not a fixture"));
        let (decoded, _) = decode_all(provider, &fixture(path));
        let failures: Vec<_> = decoded
            .iter()
            .filter_map(|event| match event {
                Ok(panewise_providers::ProviderEvent::Failure { failure }) => Some(failure),
                _ => None,
            })
            .collect();
        assert_eq!(failures.len(), 1, "{path}: one failure, reported once");
        let failure = failures[0];
        assert_eq!(
            (failure.kind, failure.retryable, failure.http_status),
            (*kind, *retryable, *status),
            "{path}: {}",
            failure.message
        );
        let summary = summary_of(provider, path);
        assert_eq!(summary.turn_phase, "done", "{path}");
        assert_eq!(summary.turns_completed, 0, "{path}");
    }
}

#[test]
fn every_error_capture_has_an_expected_classification() {
    for (_, path) in crate::fixtures() {
        let name = path.rsplit('/').next().unwrap_or_default();
        if name.starts_with("error-") || name.starts_with("stream-cut") {
            assert!(
                FAILURES.iter().any(|(expected, ..)| *expected == path),
                "{path} has no expected classification in FAILURES"
            );
        }
    }
}

#[test]
fn each_shared_capture_has_the_right_cost_source() {
    let expected = [
        ("claude-code/tool-call.ndjson", CostSource::Reported),
        (
            "claude-code/tool-call-partial-messages.ndjson",
            CostSource::Reported,
        ),
        ("claude-code/auto-compact.ndjson", CostSource::Reported),
        ("claude-code/multi-turn-stdin.ndjson", CostSource::Reported),
        ("claude-code/error-429.ndjson", CostSource::Reported),
        ("codex/tool-call.jsonl", CostSource::Estimated),
        ("codex/error-429.jsonl", CostSource::Unknown),
        ("gemini-cli/tool-call.jsonl", CostSource::Unknown),
        ("gemini-cli/error-429.jsonl", CostSource::Estimated),
    ];
    for (path, source) in expected {
        let provider = crate::fixtures()
            .into_iter()
            .find(|(_, fixture)| fixture == path)
            .map(|(provider, _)| provider)
            .unwrap_or_else(|| panic!("{path} is not a fixture"));
        let summary = summary_of(provider, path);
        assert_eq!(summary.cost_source, source, "{path}");
        assert_eq!(
            summary.cost_usd.is_some(),
            source != CostSource::Unknown,
            "{path}"
        );
    }
}

#[test]
fn a_codex_todo_list_becomes_the_panes_plan() {
    // The `todo_list` item of `codex exec --json`, started then updated as steps get done.
    let stream = concat!(
        r#"{"type":"thread.started","thread_id":"t"}"#,
        "\n",
        r#"{"type":"turn.started"}"#,
        "\n",
        r#"{"type":"item.started","item":{"id":"item_0","type":"todo_list","items":[{"text":"read the code","completed":false},{"text":"fix the bug","completed":false}]}}"#,
        "\n",
        r#"{"type":"item.updated","item":{"id":"item_0","type":"todo_list","items":[{"text":"read the code","completed":true},{"text":"fix the bug","completed":false}]}}"#,
        "\n",
    );
    let (decoded, counts) = decode_all(Provider::Codex, stream.as_bytes());
    assert_eq!(counts.unknown_events, 0);
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::Codex, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    let steps: Vec<_> = summary
        .plan
        .iter()
        .map(|step| (step.text.as_str(), step.status))
        .collect();
    assert_eq!(
        steps,
        [
            (
                "read the code",
                panewise_providers::PlanStepStatus::Completed
            ),
            ("fix the bug", panewise_providers::PlanStepStatus::Pending),
        ]
    );
}

#[test]
fn a_model_from_configuration_is_marked_assumed_and_a_streamed_one_is_not() {
    let (decoded, counts) = decode_all(Provider::Codex, &fixture("codex/tool-call.jsonl"));
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper =
        Mapper::new(Provider::Codex, ModelTable::built_in()).with_model(Some("gpt-5.4".into()));
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.model.as_deref(), Some("gpt-5.4"));
    assert!(summary.model_assumed);
    assert_eq!(summary.cost_source, CostSource::Estimated);
    // A model with no price: no cost, never 0, and a warning naming it.
    let mut mapper = Mapper::new(Provider::Codex, ModelTable::built_in())
        .with_model(Some("gpt-unreleased".into()));
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(
        (summary.cost_usd, summary.cost_source),
        (None, CostSource::Unknown)
    );
    assert!(summary
        .warnings
        .iter()
        .any(|warning| warning.contains("`gpt-unreleased`")));
}

#[test]
fn r98_claude_turn_interrupted_by_the_person_ends_stopped_not_failed() {
    // Real capture: the `interrupt` control request while the shell tool ran.
    let (decoded, counts) = decode_all(
        Provider::ClaudeCode,
        &fixture("claude-code/interrupt.ndjson"),
    );
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    assert!(events.iter().any(|event| matches!(
        event,
        panewise_providers::ProviderEvent::TurnEnded {
            interrupted: true,
            ..
        }
    )));
    assert!(!events
        .iter()
        .any(|event| matches!(event, panewise_providers::ProviderEvent::Failure { .. })));
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    assert!(matches!(
        fold.state.turn_phase,
        panewise_pane_state::TurnPhase::Done {
            outcome: panewise_pane_state::TurnOutcome::Stopped,
            ..
        }
    ));
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert!(summary.failure.is_none());
    assert_eq!(summary.turns_completed, 0);
    assert_eq!(crate::tool_calls(&summary), [("Bash", 1)]);
    assert_clean(&summary);
}
