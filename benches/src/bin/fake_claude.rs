//! A fake Claude Code for the daemon bench, started by `panewise daemon` through
//! `PANEWISE_CLAUDE` as the real one would be: it answers `--version`, reads the control
//! session's `initialize` line and then the first prompt from stdin, and streams one turn of
//! Claude Code's partial-message lines (from the real capture's shapes) on a fixed schedule.
//!
//! The prompt carries the schedule, `START_NS=<ns> RATE=<lines/s> LINES=<n>`, so every agent of
//! a run starts at one instant the bench chose after all sessions exist. After the opening lines
//! (`system/init`, `message_start`, a text block's start), line `i` of the schedule is a
//! `text_delta` of `i % 50 + 1` characters, which the daemon logs as exactly one
//! `output_streamed` line: the bench pairs the `i`-th such line a subscriber receives with the
//! `i`-th write here, and checks the length. Each write time (read just before the write) goes
//! to `fake-claude.times` in the working directory when the turn ends.

use std::io::{BufRead, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SESSION: &str = "7b0c3a52-0000-4000-8000-000000000000";

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

/// The number after `key=` in `text`.
fn field(text: &str, key: &str) -> Option<u128> {
    let at = text.find(&format!("{key}="))? + key.len() + 1;
    let digits: String = text
        .get(at..)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn main() {
    if std::env::args().any(|arg| arg == "--version") {
        println!("2.0.0 (Claude Code)");
        return;
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock().lines();
    // The control session's `initialize`, then the prompt with the schedule.
    let _initialize = input.next();
    let Some(Ok(prompt)) = input.next() else {
        std::process::exit(2);
    };
    let (Some(start), Some(rate), Some(total)) = (
        field(&prompt, "START_NS"),
        field(&prompt, "RATE"),
        field(&prompt, "LINES"),
    ) else {
        eprintln!("fake_claude: the prompt holds no schedule: {prompt}");
        std::process::exit(2);
    };
    let rate = rate.max(1) as f64;
    let mut out = std::io::stdout().lock();
    let opening = [
        format!(
            r#"{{"type":"system","subtype":"init","cwd":"/tmp","session_id":"{SESSION}","tools":["Bash"],"model":"claude-opus-5-5","permissionMode":"default"}}"#
        ),
        format!(
            r#"{{"type":"stream_event","event":{{"type":"message_start","message":{{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":3080,"cache_creation_input_tokens":1200,"cache_read_input_tokens":9000,"output_tokens":1}}}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}"#
        ),
        format!(
            r#"{{"type":"stream_event","event":{{"type":"content_block_start","index":0,"content_block":{{"type":"text","text":""}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}"#
        ),
    ];
    for line in &opening {
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
    let mut written = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for index in 0..total {
        let due = start + (index as f64 * 1e9 / rate) as u128;
        let now = now_ns();
        if due > now {
            std::thread::sleep(Duration::from_nanos(u64::try_from(due - now).unwrap_or(0)));
        }
        let text = "x".repeat((index % 50 + 1) as usize);
        let line = format!(
            r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{text}"}}}},"session_id":"{SESSION}","parent_tool_use_id":null,"uuid":"d-{index}"}}"#
        );
        written.push(now_ns());
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    let times: String = written.iter().map(|ns| format!("{ns}\n")).collect();
    let _ignored = std::fs::write("fake-claude.times", times);
    let closing = [
        format!(
            r#"{{"type":"stream_event","event":{{"type":"content_block_stop","index":0}},"session_id":"{SESSION}","parent_tool_use_id":null}}"#
        ),
        format!(
            r#"{{"type":"stream_event","event":{{"type":"message_stop"}},"session_id":"{SESSION}","parent_tool_use_id":null}}"#
        ),
        format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"duration_ms":1000,"num_turns":1,"result":"done","session_id":"{SESSION}","total_cost_usd":0.01,"usage":{{"input_tokens":3080,"output_tokens":{total}}}}}"#
        ),
    ];
    for line in &closing {
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
    // Stays for more prompts, as Claude Code does, until stdin closes (the session's stop).
    for line in input {
        if line.is_err() {
            break;
        }
    }
}
