use super::*;
use crate::config::StrategyConfig;
use crate::message::Message;

fn parsed(json: &str) -> Result<ProviderContext, String> {
    match StrategyConfig::from_json(json) {
        Ok(config) => config
            .provider_context()
            .cloned()
            .ok_or_else(|| format!("{json}: not a provider-side strategy")),
        Err(error) => Err(error.to_string()),
    }
}

#[test]
fn provider_strategies_parse_with_the_apis_defaults() {
    let cases: [(&str, ProviderContext); 6] = [
        (
            r#"{"strategy":"anthropic-clear-tool-uses"}"#,
            ProviderContext::AnthropicClearToolUses(ClearToolUses {
                trigger_tokens: 100_000,
                keep_tool_uses: 3,
                clear_at_least_tokens: None,
                exclude_tools: Vec::new(),
                clear_tool_inputs: false,
            }),
        ),
        (
            r#"{"strategy":"anthropic-clear-tool-uses","triggerTokens":30000,"keepToolUses":0,
                "clearAtLeastTokens":5000,"excludeTools":["web_search"],"clearToolInputs":true}"#,
            ProviderContext::AnthropicClearToolUses(ClearToolUses {
                trigger_tokens: 30_000,
                keep_tool_uses: 0,
                clear_at_least_tokens: Some(5_000),
                exclude_tools: vec!["web_search".into()],
                clear_tool_inputs: true,
            }),
        ),
        (
            r#"{"strategy":"anthropic-clear-thinking"}"#,
            ProviderContext::AnthropicClearThinking(ClearThinking {
                keep_thinking_turns: ThinkingKeep::Turns(1),
            }),
        ),
        (
            r#"{"strategy":"anthropic-clear-thinking","keepThinkingTurns":"all"}"#,
            ProviderContext::AnthropicClearThinking(ClearThinking {
                keep_thinking_turns: ThinkingKeep::All,
            }),
        ),
        (
            r#"{"strategy":"anthropic-compact","instructions":"Keep paths.","pauseAfterCompaction":true}"#,
            ProviderContext::AnthropicCompact(AnthropicCompact {
                trigger_tokens: 150_000,
                instructions: Some("Keep paths.".into()),
                pause_after_compaction: true,
            }),
        ),
        (
            r#"{"strategy":"openai-compaction","compactThreshold":200000}"#,
            ProviderContext::OpenAiCompaction(OpenAiCompaction {
                compact_threshold: 200_000,
            }),
        ),
    ];
    for (json, expected) in cases {
        assert_eq!(parsed(json), Ok(expected.clone()), "{json}");
        // What a configuration serializes to reads back as itself.
        let config = StrategyConfig::Provider(expected);
        let text = serde_json::to_string(&config).unwrap_or_default();
        assert_eq!(StrategyConfig::from_json(&text), Ok(config), "{text}");
    }
}

#[test]
fn bad_provider_settings_name_the_field_and_the_reason() {
    let cases = [
        (
            r#"{"strategy":"anthropic-compact","triggerTokens":1000}"#,
            "field `triggerTokens`: must be a whole number of at least 50000, got 1000",
        ),
        (
            r#"{"strategy":"openai-compaction"}"#,
            "field `compactThreshold`: is required",
        ),
        (
            r#"{"strategy":"anthropic-clear-thinking","keepThinkingTurns":0}"#,
            "field `keepThinkingTurns`: must be a whole number of at least 1 or \"all\", got 0",
        ),
        (
            r#"{"strategy":"anthropic-clear-tool-uses","excludeTools":"bash"}"#,
            "field `excludeTools`: must be a list of non-empty strings, got the string \"bash\"",
        ),
        (
            r#"{"strategy":"anthropic-compact","instructions":" "}"#,
            "field `instructions`: must be a non-empty string",
        ),
        (
            r#"{"strategy":"anthropic-clear-tool-uses","paybackCalls":3}"#,
            "field `paybackCalls`: is not an option of the `anthropic-clear-tool-uses` strategy",
        ),
        (
            r#"{"strategy":"openai-compaction","compactThreshold":1000,"shadow":true}"#,
            "field `shadow`: is not an option of the `openai-compaction` strategy; it takes strategy, compactThreshold",
        ),
    ];
    for (json, expected) in cases {
        let error = parsed(json).err().unwrap_or_default();
        assert!(error.contains(expected), "{json}: {error}");
    }
}

#[test]
fn a_provider_strategy_never_engages_locally_and_names_itself() {
    let config =
        StrategyConfig::from_json(r#"{"strategy":"openai-compaction","compactThreshold":9}"#);
    let Ok(config) = config else {
        panic!("{config:?}");
    };
    assert_eq!(config.strategy_name(), "openai-compaction");
    assert_eq!(config.threshold_tokens(), None);
    assert!(!config.needs_summarizer());
    let strategy = config
        .build::<Message>()
        .map(|strategy| strategy.name().to_owned());
    assert_eq!(strategy, Ok("openai-compaction".to_owned()));
}

fn message(role: Role, content: &str, tool: Option<&str>) -> Message {
    Message {
        role,
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: tool.map(|name| format!("call-{name}")),
        tool_name: tool.map(str::to_owned),
        injected_by: None,
        ..Message::user("")
    }
}

#[test]
fn reconciliation_sets_the_local_estimate_beside_the_providers_count() {
    let mut conversation = Conversation::new();
    for message in [
        message(Role::User, "start", None),
        message(Role::Tool, &"a".repeat(400), Some("read")),
        message(Role::Tool, &"b".repeat(800), Some("web_search")),
        message(Role::Tool, &"c".repeat(1200), Some("read")),
        message(Role::Tool, &"d".repeat(40), Some("read")),
    ] {
        conversation.push(message);
    }
    let one = conversation.tokens_in(1..2);
    let three = conversation.tokens_in(3..4);
    let whole = conversation.tokens_in(0..conversation.len());
    let clear = ProviderContext::AnthropicClearToolUses(ClearToolUses {
        trigger_tokens: 1,
        keep_tool_uses: 1,
        clear_at_least_tokens: None,
        exclude_tools: vec!["web_search".into()],
        clear_tool_inputs: false,
    });
    let compact = ProviderContext::AnthropicCompact(AnthropicCompact {
        trigger_tokens: 50_000,
        instructions: None,
        pause_after_compaction: false,
    });
    let cleared = |count: Option<u64>| AppliedContextEdit::ClearedToolUses {
        provider_type: "clear_tool_uses_20250919".into(),
        cleared_tool_uses: count,
        cleared_input_tokens: Some(700),
    };
    // (context, edit, provider's removed tokens, local estimate)
    let cases = [
        (&clear, cleared(Some(2)), Some(700), Some(one + three)),
        (
            &clear,
            cleared(Some(9)),
            Some(700),
            Some(one + three + conversation.tokens_in(4..5)),
        ),
        (&clear, cleared(None), Some(700), None),
        (
            &clear,
            AppliedContextEdit::ClearedThinking {
                provider_type: "clear_thinking_20251015".into(),
                cleared_thinking_turns: Some(2),
                cleared_input_tokens: Some(90),
            },
            Some(90),
            None,
        ),
        (
            &compact,
            AppliedContextEdit::Compacted {
                api: "anthropic".into(),
                content: "summary".into(),
                item_id: None,
                input_tokens: Some(5_000),
                output_tokens: Some(300),
            },
            Some(4_700),
            Some(whole),
        ),
        (
            &compact,
            AppliedContextEdit::Unrecognized {
                provider_type: Some("clear_everything_2030".into()),
                raw: "{}".into(),
            },
            None,
            None,
        ),
    ];
    for (context, edit, provider, local) in cases {
        // W77: the results archived for a clearing are the ones the estimate counts.
        let archived = cleared_spans(&conversation, context, 7, &edit);
        let archived_tokens = archived.iter().fold(0u64, |sum, span| {
            sum + conversation.tokens_in(span.window_index..span.window_index + 1)
        });
        match (&edit, local) {
            (AppliedContextEdit::ClearedToolUses { .. }, Some(local)) => {
                assert_eq!(archived_tokens, local, "{edit:?}");
                assert!(archived.iter().all(|span| span.removal
                    == crate::archive::Removal::ProviderCleared
                    && span.tool.as_deref() == Some("read")));
            }
            _ => assert!(archived.is_empty(), "{edit:?}: {archived:?}"),
        }
        let record = reconcile(&conversation, context, 7, &edit);
        assert_eq!(record.source, EditSource::Provider);
        assert_eq!(record.iteration, 7);
        assert_eq!(record.strategy, context.strategy_name());
        assert_eq!(
            (record.provider_removed_tokens, record.local_estimate_tokens),
            (provider, local),
            "{edit:?}: {}",
            record.estimate_basis
        );
        assert_eq!(record.edit, edit);
    }
}
