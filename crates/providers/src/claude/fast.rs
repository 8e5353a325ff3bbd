//! The fast reader of Claude Code's hot lines: `stream_event` deltas and `assistant`/`user`
//! lines whose `type` comes first, read in one pass with the [`Scanner`] and handed to the
//! same emitters the serde reader uses. Anything it is unsure of is given up (`Err(GiveUp)`)
//! before it emits or changes anything, and the serde reader takes the line; the tests here
//! hold both readers to the same events.

use std::borrow::Cow;

use super::{
    emit_delta, emit_user, AssistantView, ClaudeDecoder, ContentBlock, DeltaView, RawJson, Usage,
    UserView, SYNTHETIC_MODEL,
};
use crate::event::ProviderEvent;
use crate::scan::{GiveUp, Scan, Scanner};

/// The line types the scanner reads without serde.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FastKind {
    StreamEvent,
    Assistant,
    User,
}

impl ClaudeDecoder {
    /// Reads the three hot line shapes (`stream_event` deltas, `assistant` and `user` lines
    /// whose `type` comes first) with the [`Scanner`], in one pass and without building serde
    /// structures for the fields it does not use. `Err` means the line is left to the serde path;
    /// nothing has been emitted or changed then.
    ///
    /// Fields a line type does not use are checked for JSON syntax only, not for their type.
    pub(super) fn fast_line(
        &mut self,
        text: &str,
        raw: &[u8],
        out: &mut Vec<ProviderEvent>,
    ) -> Scan<()> {
        let mut scanner = Scanner::new(text);
        let mut kind = None;
        let mut delta = None;
        let mut message = None;
        let mut main_agent = true;
        let mut synthetic = false;
        scanner.object(|key, scanner| {
            let Some(kind) = kind else {
                if !key.is("type") {
                    return Err(GiveUp);
                }
                let value = scanner.string()?;
                kind = Some(if value.is("stream_event") {
                    FastKind::StreamEvent
                } else if value.is("assistant") {
                    FastKind::Assistant
                } else if value.is("user") {
                    FastKind::User
                } else {
                    return Err(GiveUp);
                });
                return Ok(());
            };
            match (kind, key) {
                (FastKind::StreamEvent, key) if key.is("event") && delta.is_none() => {
                    delta = Some(scan_delta_event(scanner)?);
                }
                (FastKind::Assistant | FastKind::User, key)
                    if key.is("message") && message.is_none() =>
                {
                    message = Some(scan_message(scanner)?);
                }
                (_, key) if key.is("parent_tool_use_id") => {
                    main_agent = scanner.null()?;
                    if !main_agent {
                        scanner.string()?;
                    }
                }
                (FastKind::User, key) if key.is("isSynthetic") => {
                    synthetic = scan_bool(scanner)?.unwrap_or(false);
                }
                // API-error messages and other rarities are the serde path's business.
                (FastKind::Assistant, key) if key.is("is_api_error_message") || key.is("error") => {
                    return Err(GiveUp)
                }
                _ => scanner.skip_value()?,
            }
            Ok(())
        })?;
        scanner.finish()?;
        match kind {
            Some(FastKind::StreamEvent) => {
                let delta = delta.ok_or(GiveUp)?;
                let before = out.len();
                if emit_delta(delta, out) {
                    Ok(())
                } else {
                    out.truncate(before);
                    Err(GiveUp)
                }
            }
            Some(FastKind::Assistant) => {
                let message = message.ok_or(GiveUp)?;
                if message.model.as_deref() == Some(SYNTHETIC_MODEL) {
                    return Err(GiveUp);
                }
                let view = AssistantView {
                    message_id: message.id,
                    model: message.model,
                    usage: message.usage,
                    blocks: message.blocks,
                    main_agent,
                };
                self.emit_assistant(view, raw, out);
                Ok(())
            }
            Some(FastKind::User) => {
                let message = message.ok_or(GiveUp)?;
                emit_user(
                    UserView {
                        blocks: message.blocks,
                        synthetic,
                    },
                    raw,
                    out,
                );
                Ok(())
            }
            None => Err(GiveUp),
        }
    }
}

/// A `message` object as the scanner reads it.
struct ScannedMessage<'a> {
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    usage: Option<Usage>,
    blocks: Vec<ContentBlock<'a>>,
}

fn scan_optional_string<'a>(scanner: &mut Scanner<'a>) -> Scan<Option<Cow<'a, str>>> {
    if scanner.null()? {
        Ok(None)
    } else {
        scanner.string_value().map(Some)
    }
}

/// Reads a `usage` object: the four token counts a model call reports.
fn scan_usage(scanner: &mut Scanner<'_>) -> Scan<Option<Usage>> {
    if scanner.null()? {
        return Ok(None);
    }
    let mut usage = Usage::default();
    scanner.object(|key, scanner| {
        if key.is("input_tokens") {
            usage.input_tokens = scanner.optional_u64()?;
        } else if key.is("cache_creation_input_tokens") {
            usage.cache_creation_input_tokens = scanner.optional_u64()?;
        } else if key.is("cache_read_input_tokens") {
            usage.cache_read_input_tokens = scanner.optional_u64()?;
        } else if key.is("output_tokens") {
            usage.output_tokens = scanner.optional_u64()?;
        } else if key.is("output_tokens_details") {
            let raw = scanner.raw_value()?;
            usage.output_tokens_details = serde_json::from_str(raw).map_err(|_| GiveUp)?;
        } else {
            scanner.skip_value()?;
        }
        Ok(())
    })?;
    Ok(Some(usage))
}

fn scan_bool(scanner: &mut Scanner<'_>) -> Scan<Option<bool>> {
    match scanner.raw_value()? {
        "true" => Ok(Some(true)),
        "false" => Ok(Some(false)),
        "null" => Ok(None),
        _ => Err(GiveUp),
    }
}

fn scan_message<'a>(scanner: &mut Scanner<'a>) -> Scan<ScannedMessage<'a>> {
    let mut message = ScannedMessage {
        id: None,
        model: None,
        usage: None,
        blocks: Vec::new(),
    };
    let mut has_content = false;
    scanner.object(|key, scanner| {
        if key.is("id") {
            message.id = scan_optional_string(scanner)?;
        } else if key.is("model") {
            message.model = scan_optional_string(scanner)?;
        } else if key.is("usage") {
            message.usage = scan_usage(scanner)?;
        } else if key.is("content") && !has_content {
            has_content = true;
            // A plain-string content (a user's typed message) is left to the serde path.
            if scanner.at_string() {
                return Err(GiveUp);
            }
            scanner.array(|scanner| {
                message.blocks.push(scan_block(scanner)?);
                Ok(())
            })?;
        } else {
            scanner.skip_value()?;
        }
        Ok(())
    })?;
    if has_content {
        Ok(message)
    } else {
        Err(GiveUp)
    }
}

fn scan_block<'a>(scanner: &mut Scanner<'a>) -> Scan<ContentBlock<'a>> {
    let mut block = ContentBlock::default();
    let mut has_kind = false;
    scanner.object(|key, scanner| {
        if key.is("type") {
            block.kind = scanner.string()?.value()?;
            has_kind = true;
        } else if key.is("text") {
            block.text = scan_optional_string(scanner)?;
        } else if key.is("thinking") {
            block.thinking = scan_optional_string(scanner)?;
        } else if key.is("id") {
            block.id = scan_optional_string(scanner)?;
        } else if key.is("name") {
            block.name = scan_optional_string(scanner)?;
        } else if key.is("tool_use_id") {
            block.tool_use_id = scan_optional_string(scanner)?;
        } else if key.is("input") {
            block.input = if scanner.null()? {
                None
            } else {
                Some(RawJson(scanner.raw_value()?))
            };
        } else if key.is("content") {
            block.content = if scanner.null()? {
                None
            } else {
                Some(RawJson(scanner.raw_value()?))
            };
        } else if key.is("is_error") {
            block.is_error = scan_bool(scanner)?;
        } else {
            scanner.skip_value()?;
        }
        Ok(())
    })?;
    if has_kind {
        Ok(block)
    } else {
        Err(GiveUp)
    }
}

/// Reads a `stream_event`'s `event` when it is a `content_block_delta` whose `type` comes first.
fn scan_delta_event<'a>(scanner: &mut Scanner<'a>) -> Scan<DeltaView<'a>> {
    let mut first = true;
    let mut delta = None;
    scanner.object(|key, scanner| {
        if std::mem::take(&mut first) {
            if key.is("type") && scanner.string()?.is("content_block_delta") {
                return Ok(());
            }
            return Err(GiveUp);
        }
        if key.is("delta") && delta.is_none() {
            let mut view = DeltaView {
                kind: None,
                text: None,
                thinking: None,
            };
            scanner.object(|key, scanner| {
                if key.is("type") {
                    view.kind = scan_optional_string(scanner)?;
                } else if key.is("text") {
                    view.text = scan_optional_string(scanner)?;
                } else if key.is("thinking") {
                    view.thinking = scan_optional_string(scanner)?;
                } else {
                    scanner.skip_value()?;
                }
                Ok(())
            })?;
            delta = Some(view);
        } else {
            scanner.skip_value()?;
        }
        Ok(())
    })?;
    delta.ok_or(GiveUp)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &[&[u8]] = &[
        include_bytes!("../../tests/data/claude-code/tool-call.ndjson"),
        include_bytes!("../../tests/data/claude-code/tool-call-partial-messages.ndjson"),
        include_bytes!("../../tests/data/claude-code/auto-compact.ndjson"),
        include_bytes!("../../tests/data/claude-code/error-429.ndjson"),
        include_bytes!("../../tests/data/claude-code/multi-turn-stdin.ndjson"),
    ];

    /// Runs both paths over each line from the same decoder state and compares what they emit.
    fn assert_paths_agree(stream: &[u8]) -> usize {
        let mut fast_taken = 0;
        let mut decoder = ClaudeDecoder::default();
        for line in stream
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
        {
            let mut reference = decoder.clone();
            let mut expected = Vec::new();
            let reference_result = reference.serde_line(line, &mut expected);
            let mut fast = Vec::new();
            let text = std::str::from_utf8(line).unwrap_or_default();
            if decoder.fast_line(text, line, &mut fast).is_ok() {
                fast_taken += 1;
                assert!(reference_result.is_ok());
                assert_eq!(fast, expected, "{}", String::from_utf8_lossy(line));
                assert_eq!(decoder.usage_reported_for, reference.usage_reported_for);
            } else {
                assert!(fast.is_empty());
                decoder = reference;
            }
        }
        fast_taken
    }

    #[test]
    fn the_scanner_path_and_the_serde_path_emit_the_same_events_on_every_fixture() {
        let taken: usize = FIXTURES
            .iter()
            .map(|stream| assert_paths_agree(stream))
            .sum();
        assert!(
            taken > 40,
            "the scanner path was taken for only {taken} lines"
        );
    }

    proptest::proptest! {
        #[test]
        fn the_scanner_path_agrees_with_serde_on_arbitrary_text(text in proptest::prelude::any::<String>(), name in "[a-z_]{0,8}", spaces in " {0,2}") {
            let text = serde_json::to_string(&text).unwrap();
            let stream = format!(
                concat!(
                    r#"{{"type":"stream_event",{s}"event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{t}}}}},"x":[{t},1.5e3,{{}}]}}"#, "\n",
                    r#"{{"type":"assistant","message":{{"id":"m","model":"claude-x","content":[{{"type":"text","text":{t}}},{{"type":"tool_use","id":"t","name":"{n}","input":{{"command":{t}}}}}],"usage":{{"input_tokens":1,"output_tokens":2}}}},{s}"parent_tool_use_id":null}}"#, "\n",
                    r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":{t},"content":{t}}},{{"type":"text","text":{t}}}]}},"isSynthetic":true}}"#, "\n",
                ),
                t = text,
                n = name,
                s = spaces,
            );
            proptest::prop_assert_eq!(assert_paths_agree(stream.as_bytes()), 3);
        }
    }

    #[test]
    fn the_scanner_path_agrees_on_escapes_subagents_and_errors_in_blocks() {
        let stream = concat!(
            r#"{"type":"assistant","message":{"id":"m1","model":"claude-opus-5-5","content":[{"type":"text","text":"tab\there \u00e9 \"q\""},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a b/c.rs"}}],"usage":{"input_tokens":5,"cache_read_input_tokens":7,"output_tokens":1}},"parent_tool_use_id":"toolu_parent","session_id":"s"}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"x"}],"is_error":true},{"type":"image","source":{}}]},"isSynthetic":false}"#,
            "\n",
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm\\m"}},"parent_tool_use_id":null}"#,
            "\n",
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"new_delta"}}}"#,
            "\n",
        );
        assert_eq!(assert_paths_agree(stream.as_bytes()), 3);
    }
}
