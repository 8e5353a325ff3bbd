//! Large generated streams in Claude Code's `stream-json` format, for the decoder benches.
//!
//! The lines copy the shapes of the captured fixtures (field names, order, ids, usage blocks),
//! with text long enough to reach the target line sizes. Text varies from line to line and
//! contains JSON escapes, so the decoder cannot take a shortcut a real stream would not allow.

use std::fmt::Write;

const SESSION: &str = "16465f7a-1b16-4115-8e86-4b6e08c7b994";
const MESSAGE: &str = "msg_01700919d9b7ba4172a3b3857c";

/// Words the generated prose is made of (escapes included on purpose).
const WORDS: &[&str] = &[
    "the",
    "command",
    "printed",
    "`hello`",
    "and",
    "then",
    "I",
    "ran",
    "cargo",
    "test",
    "--",
    "\\\"quoted\\\"",
    "path/to/file.rs",
    "line\\n",
    "ok",
    "so",
    "next",
    "we",
    "check",
    "it",
];

/// Deterministic prose of at least `min_len` bytes, varied by `seed`.
fn prose(seed: usize, min_len: usize) -> String {
    let mut text = String::with_capacity(min_len + 16);
    let mut index = seed;
    while text.len() < min_len {
        index = index.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        text.push_str(WORDS[(index >> 8) % WORDS.len()]);
        text.push(' ');
    }
    text
}

/// `count` `stream_event` lines of about 270 bytes each: text deltas as Claude Code writes them
/// with `--include-partial-messages`.
pub fn claude_stream_event_lines(count: usize) -> Vec<u8> {
    let mut out = String::with_capacity(count * 280);
    for index in 0..count {
        let _ = writeln!(
            out,
            r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":1,"delta":{{"type":"text_delta","text":"{}"}}}},"session_id":"{SESSION}","parent_tool_use_id":null,"uuid":"7fb75f32-0225-4ed7-b67d-{index:012x}","api_message_id":"{MESSAGE}"}}"#,
            prose(index, 1).trim_end()
        );
    }
    out.into_bytes()
}

/// `count` lines of about 2 KB each: assistant text blocks and the tool results that answer
/// them, alternating, as Claude Code writes them without partial messages.
pub fn claude_large_lines(count: usize) -> Vec<u8> {
    let mut out = String::with_capacity(count * 2_100);
    for index in 0..count {
        let text = prose(index, 1_700);
        if index % 2 == 0 {
            let _ = writeln!(
                out,
                r#"{{"type":"assistant","message":{{"id":"msg_{index:026x}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"text","text":"{}"}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":3080,"cache_creation_input_tokens":1200,"cache_read_input_tokens":9000,"output_tokens":1,"service_tier":"standard"}},"context_management":null}},"parent_tool_use_id":null,"session_id":"{SESSION}","uuid":"986254c8-cb7c-45de-9cb4-{index:012x}","timestamp":"2026-11-30T18:15:31.546Z","request_id":"req_1db71d3cb393484f948926c3"}}"#,
                text.trim_end()
            );
        } else {
            let _ = writeln!(
                out,
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_{index:026x}","type":"tool_result","content":"{}","is_error":false}}]}},"parent_tool_use_id":null,"session_id":"{SESSION}","uuid":"10db1073-8afb-47dd-ab3f-{index:012x}","timestamp":"2026-11-30T18:15:31.603Z","tool_use_result":{{"stdout":"ok","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}}}"#,
                text.trim_end()
            );
        }
    }
    out.into_bytes()
}

/// The mean line length of a generated stream, in bytes.
pub fn mean_line_bytes(stream: &[u8]) -> usize {
    let lines = stream.iter().filter(|byte| **byte == b'\n').count();
    stream.len() / lines.max(1)
}

/// One Claude Code `assistant` line starting `Bash` with a command of `command_bytes` bytes,
/// then the line of its result: a stream whose first line is as long as asked (a tool call
/// writing a whole generated file), for the long-line bench of `panewise decode`'s path.
pub fn claude_long_first_line(command_bytes: usize) -> Vec<u8> {
    let mut out = String::with_capacity(command_bytes + 1_024);
    out.push_str(
        r#"{"type":"assistant","message":{"id":"msg_long","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"tool_use","id":"toolu_long","name":"Bash","input":{"command":""#,
    );
    // Varied text with escapes, as in the other generators, cut to the size asked.
    let mut index = 0;
    while out.len() < command_bytes {
        out.push_str(WORDS[index % WORDS.len()]);
        out.push(' ');
        index += 1;
    }
    let _ = writeln!(
        out,
        r#""}}}}],"stop_reason":null,"usage":{{"input_tokens":3080,"output_tokens":1}}}},"session_id":"{SESSION}"}}"#
    );
    let _ = writeln!(
        out,
        r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_long","type":"tool_result","content":"ok","is_error":false}}]}},"session_id":"{SESSION}"}}"#
    );
    out.into_bytes()
}
