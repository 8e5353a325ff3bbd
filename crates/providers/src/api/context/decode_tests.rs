//! What the decoders make of the providers' context-management reports, stream by stream.

use panewise_window::AppliedContextEdit;

use crate::api::ApiKind;
use crate::event::ProviderEvent;
use crate::mapping::Mapper;
use crate::{ModelTable, Provider};

fn decode(api: ApiKind, stream: &[(&str, &str)]) -> Vec<ProviderEvent> {
    let mut decoder = api.decoder();
    let mut out = Vec::new();
    for (event, data) in stream {
        decoder.feed(event, data, &mut out);
    }
    decoder.finish(&mut out);
    out
}

fn managed(events: &[ProviderEvent]) -> Option<Vec<AppliedContextEdit>> {
    events.iter().find_map(|event| match event {
        ProviderEvent::ContextManaged { edits } => Some(edits.clone()),
        _ => None,
    })
}

const ANTHROPIC_START: (&str, &str) = (
    "message_start",
    r#"{"type":"message_start","message":{"model":"claude-opus-4-6","usage":{"input_tokens":10,"output_tokens":1}}}"#,
);
const ANTHROPIC_STOP: (&str, &str) = ("message_stop", r#"{"type":"message_stop"}"#);

/// An SSE stream: each event's name and data.
type Stream<'a> = &'a [(&'a str, &'a str)];

#[test]
fn each_report_becomes_one_context_managed_event_before_the_call_ends() {
    let cleared = [
        ANTHROPIC_START,
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5},"context_management":{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":8,"cleared_input_tokens":50000},{"type":"clear_thinking_20251015","cleared_thinking_turns":3,"cleared_input_tokens":1500},{"type":"clear_everything_20990101","cleared_input_tokens":1}]}}"#,
        ),
        ANTHROPIC_STOP,
    ];
    let compacted = [
        ANTHROPIC_START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"compaction","content":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"compaction_delta","content":"Summary: built the "}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"compaction_delta","content":"parser."}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"compaction"},"usage":{"input_tokens":900,"output_tokens":40,"iterations":[{"type":"compaction","input_tokens":180000,"output_tokens":3500},{"type":"message","input_tokens":900,"output_tokens":40}]}}"#,
        ),
        ANTHROPIC_STOP,
    ];
    let openai = [
        (
            "response.output_item.done",
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"compaction","id":"cmp_1","encrypted_content":"gAAA-opaque"}}"#,
        ),
        (
            "response.completed",
            r#"{"type":"response.completed","response":{"model":"gpt-5.5","status":"completed","usage":{"input_tokens":1200,"output_tokens":30}}}"#,
        ),
    ];
    let plain = [ANTHROPIC_START, ANTHROPIC_STOP];
    let cases: [(ApiKind, Stream<'_>, Option<Vec<AppliedContextEdit>>); 4] = [
        (
            ApiKind::Anthropic,
            &cleared,
            Some(vec![
                AppliedContextEdit::ClearedToolUses {
                    provider_type: "clear_tool_uses_20250919".into(),
                    cleared_tool_uses: Some(8),
                    cleared_input_tokens: Some(50_000),
                },
                AppliedContextEdit::ClearedThinking {
                    provider_type: "clear_thinking_20251015".into(),
                    cleared_thinking_turns: Some(3),
                    cleared_input_tokens: Some(1_500),
                },
                AppliedContextEdit::Unrecognized {
                    provider_type: Some("clear_everything_20990101".into()),
                    raw: serde_json::json!({"type": "clear_everything_20990101", "cleared_input_tokens": 1})
                        .to_string(),
                },
            ]),
        ),
        (
            ApiKind::Anthropic,
            &compacted,
            Some(vec![AppliedContextEdit::Compacted {
                api: "anthropic".into(),
                content: "Summary: built the parser.".into(),
                item_id: None,
                input_tokens: Some(180_000),
                output_tokens: Some(3_500),
            }]),
        ),
        (
            ApiKind::OpenAi,
            &openai,
            Some(vec![AppliedContextEdit::Compacted {
                api: "openai".into(),
                content: "gAAA-opaque".into(),
                item_id: Some("cmp_1".into()),
                input_tokens: None,
                output_tokens: None,
            }]),
        ),
        (ApiKind::Anthropic, &plain, None),
    ];
    for (api, stream, expected) in cases {
        let events = decode(api, stream);
        assert_eq!(managed(&events), expected, "{api}: {events:?}");
        // The report comes just before the call's end, which still ends the stream.
        let kinds: Vec<&str> = events.iter().map(ProviderEvent::kind_name).collect();
        let tail: &[&str] = if expected.is_some() {
            &["context_managed", "call_ended"]
        } else {
            &["call_ended"]
        };
        assert!(kinds.ends_with(tail), "{api}: {kinds:?}");
    }
}

/// A compaction with its token counts reaches the pane as an agent's own; one without them is
/// a warning, never a made-up count; cleared results are the ledger's, not the pane's.
#[test]
fn the_mapper_shows_a_provider_compaction_as_a_boundary() {
    let compacted = |input: Option<u64>, output: Option<u64>| ProviderEvent::ContextManaged {
        edits: vec![AppliedContextEdit::Compacted {
            api: "anthropic".into(),
            content: "s".into(),
            item_id: None,
            input_tokens: input,
            output_tokens: output,
        }],
    };
    let cleared = ProviderEvent::ContextManaged {
        edits: vec![AppliedContextEdit::ClearedToolUses {
            provider_type: "clear_tool_uses_20250919".into(),
            cleared_tool_uses: Some(1),
            cleared_input_tokens: Some(10),
        }],
    };
    let cases = [
        (compacted(Some(180_000), Some(3_500)), 2, 0),
        (compacted(None, None), 0, 1),
        (cleared, 0, 0),
    ];
    for (event, messages, warnings) in cases {
        let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::default());
        let mut out = Vec::new();
        mapper.map(&event, 7, &mut out);
        assert_eq!(out.len(), messages, "{event:?}: {out:?}");
        assert_eq!(mapper.warnings().len(), warnings, "{event:?}");
        if let Some(panewise_pane_state::Msg::CompactionBoundary {
            pre_tokens,
            post_tokens,
            ..
        }) = out.last()
        {
            assert_eq!((*pre_tokens, *post_tokens), (180_000, 3_500));
        }
    }
}
