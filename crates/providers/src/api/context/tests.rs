use std::borrow::Cow;

use panewise_window::provider::OpenAiCompaction;
use panewise_window::StrategyConfig;

use super::*;
use crate::api::{ApiMessage, ModelRequest, RenderedHistory};

fn context(json: &str) -> ProviderContext {
    StrategyConfig::from_json(json)
        .ok()
        .and_then(|config| config.provider_context().cloned())
        // A configuration that does not parse shows as a threshold of 0 in every assertion.
        .unwrap_or(ProviderContext::OpenAiCompaction(OpenAiCompaction {
            compact_threshold: 0,
        }))
}

const CLEAR_TOOL_USES: &str = r#"{"strategy":"anthropic-clear-tool-uses","triggerTokens":30000,"keepToolUses":2,"clearAtLeastTokens":5000,"excludeTools":["web_search"],"clearToolInputs":true}"#;
const CLEAR_TOOL_USES_DEFAULTS: &str = r#"{"strategy":"anthropic-clear-tool-uses"}"#;
const CLEAR_THINKING: &str = r#"{"strategy":"anthropic-clear-thinking","keepThinkingTurns":2}"#;
const CLEAR_THINKING_ALL: &str =
    r#"{"strategy":"anthropic-clear-thinking","keepThinkingTurns":"all"}"#;
const COMPACT: &str = r#"{"strategy":"anthropic-compact","triggerTokens":60000,"instructions":"Keep \"messages\":[] paths.","pauseAfterCompaction":true}"#;
const COMPACTION: &str = r#"{"strategy":"openai-compaction","compactThreshold":200000}"#;

/// Ok, or the words a refusal must hold.
type Expected = Result<(), &'static [&'static str]>;

/// (API, model, strategy, expected)
#[test]
fn support_is_checked_by_api_and_model() {
    let cases: [(ApiKind, &str, &str, Expected); 12] = [
        (
            ApiKind::Anthropic,
            "claude-sonnet-4-5-20250929",
            CLEAR_TOOL_USES,
            Ok(()),
        ),
        (
            ApiKind::Anthropic,
            "claude-haiku-4-5",
            CLEAR_THINKING,
            Ok(()),
        ),
        (ApiKind::Anthropic, "claude-opus-4-6", COMPACT, Ok(())),
        (ApiKind::Anthropic, "claude-sonnet-4-6", COMPACT, Ok(())),
        (ApiKind::OpenAi, "gpt-5.5", COMPACTION, Ok(())),
        (ApiKind::OpenAi, "GPT-5-mini", COMPACTION, Ok(())),
        (
            ApiKind::Anthropic,
            "claude-sonnet-4-5",
            COMPACT,
            Err(&[
                "`anthropic-compact`",
                "claude-sonnet-4-5",
                "does not document",
                "anthropic-clear-tool-uses, anthropic-clear-thinking",
            ]),
        ),
        (
            ApiKind::Anthropic,
            "claude-3-5-haiku-latest",
            CLEAR_TOOL_USES,
            Err(&["claude-3-5-haiku-latest", "use a local strategy"]),
        ),
        (
            ApiKind::OpenAi,
            "gpt-5.5",
            COMPACT,
            Err(&["the anthropic API only", "use `openai-compaction`"]),
        ),
        (
            ApiKind::Anthropic,
            "claude-opus-4-6",
            COMPACTION,
            Err(&["the openai API only", "use `anthropic-compact`"]),
        ),
        (
            ApiKind::Gemini,
            "gemini-2.5-pro",
            COMPACTION,
            Err(&[
                "Gemini has no provider-side context management",
                "summarize-oldest",
            ]),
        ),
        (
            ApiKind::OpenAi,
            "gpt-4o",
            COMPACTION,
            Err(&["gpt-4o", "does not document"]),
        ),
    ];
    for (api, model, strategy, expected) in cases {
        let result = check_provider_context(api, model, &context(strategy));
        match (result, expected) {
            (Ok(()), Ok(())) => {}
            (Err(error), Err(words)) => {
                let text = error.to_string();
                for word in words {
                    assert!(text.contains(word), "{api} {model} {strategy}: {text}");
                }
            }
            (result, expected) => {
                assert_eq!(
                    result.is_ok(),
                    expected.is_ok(),
                    "{api} {model} {strategy}: {result:?}"
                )
            }
        }
    }
}

#[test]
fn a_model_table_rule_adds_support() {
    let table = ModelTable::built_in().overridden_by(
        ModelTable::from_json(
            r#"{"context_management":[{"model":"mock-*","strategies":["openai-compaction"]}]}"#,
        )
        .unwrap_or_default(),
    );
    let compaction = context(COMPACTION);
    assert_eq!(
        check_provider_context_in(&table, ApiKind::OpenAi, "mock-model", &compaction),
        Ok(())
    );
    assert!(check_provider_context(ApiKind::OpenAi, "mock-model", &compaction).is_err());
}

fn request<'a>(
    messages: &'a [ApiMessage<'a>],
    context: Option<&'a ProviderContext>,
) -> ModelRequest<'a> {
    ModelRequest {
        model: Cow::Borrowed("m"),
        system: None,
        messages: Cow::Borrowed(messages),
        tools: Cow::Borrowed(&[]),
        max_output_tokens: 9,
        prompt_cache: true,
        cache_key: None,
        context_management: context.map(Cow::Borrowed),
    }
}

/// The request bodies and headers, byte for byte: the golden record of what each strategy
/// sends. The compaction a provider returned goes back as the API requires.
#[test]
fn each_strategy_is_rendered_as_its_api_asks() {
    let messages = [
        ApiMessage::User {
            text: Cow::Borrowed("go"),
        },
        ApiMessage::Compaction {
            content: Cow::Borrowed("summary"),
        },
        ApiMessage::User {
            text: Cow::Borrowed("on"),
        },
    ];
    let cases = [
        (
            ApiKind::Anthropic,
            CLEAR_TOOL_USES,
            r#"{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"compaction","content":"summary"}]},{"role":"user","content":[{"type":"text","text":"on","cache_control":{"type":"ephemeral"}}]}],"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":30000},"keep":{"type":"tool_uses","value":2},"clear_at_least":{"type":"input_tokens","value":5000},"exclude_tools":["web_search"],"clear_tool_inputs":true}]}}"#,
            Some("context-management-2025-06-27"),
        ),
        (
            ApiKind::Anthropic,
            CLEAR_TOOL_USES_DEFAULTS,
            r#"{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"compaction","content":"summary"}]},{"role":"user","content":[{"type":"text","text":"on","cache_control":{"type":"ephemeral"}}]}],"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":100000},"keep":{"type":"tool_uses","value":3}}]}}"#,
            Some("context-management-2025-06-27"),
        ),
        (
            ApiKind::Anthropic,
            CLEAR_THINKING,
            r#"{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"compaction","content":"summary"}]},{"role":"user","content":[{"type":"text","text":"on","cache_control":{"type":"ephemeral"}}]}],"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":{"type":"thinking_turns","value":2}}]}}"#,
            Some("context-management-2025-06-27"),
        ),
        (
            ApiKind::Anthropic,
            CLEAR_THINKING_ALL,
            r#"{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"compaction","content":"summary"}]},{"role":"user","content":[{"type":"text","text":"on","cache_control":{"type":"ephemeral"}}]}],"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}}"#,
            Some("context-management-2025-06-27"),
        ),
        (
            ApiKind::Anthropic,
            COMPACT,
            r#"{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"compaction","content":"summary"}]},{"role":"user","content":[{"type":"text","text":"on","cache_control":{"type":"ephemeral"}}]}],"context_management":{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":60000},"pause_after_compaction":true,"instructions":"Keep \"messages\":[] paths."}]}}"#,
            Some("compact-2026-01-12"),
        ),
        (
            ApiKind::OpenAi,
            COMPACTION,
            r#"{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"compaction","encrypted_content":"summary"},{"type":"message","role":"user","content":[{"type":"input_text","text":"on"}]}],"max_output_tokens":9,"stream":true,"store":false,"context_management":[{"type":"compaction","compact_threshold":200000}]}"#,
            None,
        ),
    ];
    for (api, strategy, golden, beta) in cases {
        let settings = context(strategy);
        let request = request(&messages, Some(&settings));
        let body = api
            .body(&request)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        assert_eq!(body.as_deref(), Ok(golden), "{strategy}");
        // The own loop's assembled body is the same bytes.
        let mut history = RenderedHistory::new(api);
        for message in &messages {
            history.push(std::slice::from_ref(message));
        }
        let assembled = history
            .body(&request.head())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        assert_eq!(assembled.as_deref(), Ok(golden), "{strategy} assembled");
        let headers = request_headers(api, Some(&settings));
        let expected: Vec<(String, String)> = beta
            .map(|beta| vec![("anthropic-beta".to_owned(), beta.to_owned())])
            .unwrap_or_default();
        assert_eq!(headers, expected, "{strategy}");
    }
    assert_eq!(request_headers(ApiKind::Anthropic, None), Vec::new());
}

/// A strategy of another API, or a compaction sent to Gemini, is an error, never left out.
#[test]
fn a_strategy_of_another_api_is_a_render_error() {
    let text = [ApiMessage::User {
        text: Cow::Borrowed("go"),
    }];
    let compaction = [ApiMessage::Compaction {
        content: Cow::Borrowed("s"),
    }];
    let openai = context(COMPACTION);
    let anthropic = context(COMPACT);
    let cases: [(ApiKind, &[ApiMessage<'_>], Option<&ProviderContext>, &str); 4] = [
        (
            ApiKind::Anthropic,
            &text,
            Some(&openai),
            "`openai-compaction` strategy cannot be sent to the anthropic API",
        ),
        (
            ApiKind::OpenAi,
            &text,
            Some(&anthropic),
            "`anthropic-compact` strategy cannot be sent to the openai API",
        ),
        (
            ApiKind::Gemini,
            &text,
            Some(&openai),
            "cannot be sent to the gemini API",
        ),
        (
            ApiKind::Gemini,
            &compaction,
            None,
            "cannot be sent to the Gemini API",
        ),
    ];
    for (api, messages, settings, words) in cases {
        let request = request(messages, settings);
        let error = api
            .body(&request)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains(words), "{api}: {error}");
        let mut history = RenderedHistory::new(api);
        history.push(messages);
        let assembled = history
            .body(&request.head())
            .err()
            .map(|error| error.to_string());
        assert_eq!(assembled, Some(error), "{api} assembled");
    }
}
