//! Each model call's prompt reaches the session log with its cache split (`tokens_in`'s
//! `cache_read`, `cache_write`, `cache_write_1h`) where the provider reports it per call, and
//! without one where it does not: worked out by hand from the captures' usage lines.

use panewise_pane_state::Msg;
use panewise_providers::{
    decode_all, fold_events, Mapper, ModelTable, Provider, ProviderEvent, SessionStats,
};

use crate::fixture;

/// (prompt, cache read, cache write, of them 1h) of one `tokens_in`.
type Split = (u64, Option<u64>, Option<u64>, Option<u64>);

fn splits(messages: &[(u64, Msg)]) -> Vec<Split> {
    messages
        .iter()
        .filter_map(|(_, msg)| match msg {
            Msg::TokensIn {
                input,
                cache_read,
                cache_write,
                cache_write_1h,
                ..
            } => Some((*input, *cache_read, *cache_write, *cache_write_1h)),
            _ => None,
        })
        .collect()
}

#[test]
fn captured_streams_log_each_calls_cache_split_where_the_provider_reports_it() {
    let table: [(Provider, &str, Vec<Split>); 3] = [
        // Claude Code: `input_tokens` 3080 + `cache_creation_input_tokens` 1200 +
        // `cache_read_input_tokens` 9000, then 3160 + 1200 + 9000 for the second call.
        (
            Provider::ClaudeCode,
            "claude-code/tool-call.ndjson",
            vec![
                (13_280, Some(9_000), Some(1_200), None),
                (13_360, Some(9_000), Some(1_200), None),
            ],
        ),
        // Codex app-server's per-call `last`: `inputTokens` 2620 holds `cachedInputTokens`
        // 1024 and `cacheWriteInputTokens` 0.
        (
            Provider::CodexAppServer,
            "codex-app-server/appserver-accept.ndjson",
            vec![
                (2_620, Some(1_024), Some(0), None),
                (2_710, Some(1_024), Some(0), None),
            ],
        ),
        // Codex exec sums a turn of two calls: no reading, so no split either.
        (Provider::Codex, "codex/tool-call.jsonl", vec![]),
    ];
    for (provider, path, want) in table {
        let (decoded, _) = decode_all(provider, &fixture(path));
        let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
        let mut mapper = Mapper::new(provider, ModelTable::built_in());
        let fold = fold_events(&mut mapper, &events);
        assert_eq!(splits(&fold.messages), want, "{path}");
    }
}

/// The own loop's calls end with the API's usage: the prompt is fresh + read + written, and
/// the split is each figure the API reported, absent where it reported none.
#[test]
fn an_api_calls_end_logs_its_prompt_with_the_reported_split() {
    let stats = |fresh, read, write, hour| SessionStats {
        input_tokens: fresh,
        cached_input_tokens: read,
        cache_write_input_tokens: write,
        cache_write_1h_input_tokens: hour,
        output_tokens: Some(39),
        ..SessionStats::default()
    };
    let table: [(SessionStats, Vec<Split>); 5] = [
        // Anthropic: every kind, the 1-hour part of the writes too.
        (
            stats(Some(166), Some(7_983), Some(1_000), Some(400)),
            vec![(9_149, Some(7_983), Some(1_000), Some(400))],
        ),
        // OpenAI: reads (`cached_tokens`), no writes.
        (
            stats(Some(2_000), Some(48_000), None, None),
            vec![(50_000, Some(48_000), None, None)],
        ),
        // Gemini without `cached_content_token_count`: the prompt alone.
        (
            stats(Some(1_200), None, None, None),
            vec![(1_200, None, None, None)],
        ),
        (
            stats(Some(0), Some(0), Some(0), None),
            vec![(0, Some(0), Some(0), None)],
        ),
        // No prompt figure: no reading at all.
        (stats(None, None, None, None), vec![]),
    ];
    for (stats, want) in table {
        let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
        let mut out = Vec::new();
        mapper.map(
            &ProviderEvent::CallEnded {
                model: Some("claude-sonnet-4-5".to_owned()),
                stop_reason: Some("end_turn".to_owned()),
                stats: stats.clone(),
            },
            1,
            &mut out,
        );
        let messages: Vec<(u64, Msg)> = out.into_iter().map(|msg| (1, msg)).collect();
        assert_eq!(splits(&messages), want, "{stats:?}");
    }
}
