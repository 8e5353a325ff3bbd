//! Files of several parts (runs, compaction segments), call times, missing results and the
//! recorded totals, on small hand-built inputs and on the shared corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use panewise_window::{Message, Role};
use panewise_window_eval::formats;
use panewise_window_eval::{Format, RecordedUsage, Recording};

fn shared(path: &str) -> String {
    let path = format!(
        "{}/../../../shared/trajectories/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn usage(input: u64, cache_read: u64, cache_write: u64, output: u64) -> RecordedUsage {
    RecordedUsage {
        input,
        cache_read,
        cache_write,
        output,
    }
}

fn roles(recording: &Recording) -> Vec<Role> {
    recording.messages.iter().map(|m| m.role).collect()
}

/// Two `claude -p` runs in one log: the second `init` (a new session id) after the first
/// `result`. The first run's call is streamed as two events of one message id, the second
/// with the larger (still partial) output count.
const TWO_RUNS: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-a"}
{"type":"assistant","message":{"id":"m1","model":"claude-a","content":[{"type":"text","text":"Looking."}],"usage":{"input_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":900,"output_tokens":2}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"m1","model":"claude-a","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":900,"output_tokens":30}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.rs"}]},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"m2","model":"claude-a","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":3,"cache_read_input_tokens":900,"cache_creation_input_tokens":40,"output_tokens":4}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"result","subtype":"success","session_id":"s1","usage":{"input_tokens":8,"cache_read_input_tokens":900,"cache_creation_input_tokens":940,"output_tokens":77},"modelUsage":{"claude-a":{"costUSD":0.25},"claude-helper":{"costUSD":0.01}}}
{"type":"system","subtype":"init","session_id":"s2","model":"claude-a"}
{"type":"assistant","message":{"id":"m3","model":"claude-a","content":[{"type":"text","text":"Second run."}],"usage":{"input_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":800,"output_tokens":3}},"parent_tool_use_id":null,"session_id":"s2"}
"#;

#[test]
fn a_stream_json_file_of_two_runs_gives_two_sessions() {
    let parts = formats::read_all(TWO_RUNS).expect("reads");
    assert_eq!(parts.len(), 2);
    let labels: Vec<Option<&str>> = parts.iter().map(|p| p.part.as_deref()).collect();
    assert_eq!(labels, [Some("run 1"), Some("run 2")]);
    let first = &parts[0];
    assert_eq!(first.format, Format::ClaudeStreamJson);
    assert_eq!(first.calls.len(), 2);
    // A call's usage is the last event of its message id (output 30, not 2), still partial.
    assert_eq!(first.calls[0].usage, Some(usage(5, 0, 900, 30)));
    // The run's total is the `result`'s, with the final output count and the run's own
    // model's cost; the helper's cost is said.
    let total = first.recorded_total.as_ref().expect("a total");
    assert_eq!(total.usage, usage(8, 900, 940, 77));
    assert_eq!(total.cost_usd, Some(0.25));
    assert_eq!(total.model.as_deref(), Some("claude-a"));
    assert!(
        first
            .notes
            .iter()
            .any(|n| n.contains("claude-helper $0.0100")),
        "{:?}",
        first.notes
    );
    // Stream-json records no times.
    assert!(first.calls.iter().all(|c| c.at_ms.is_none()));
    let second = &parts[1];
    assert_eq!(second.calls.len(), 1);
    assert!(second.recorded_total.is_none());
    assert_eq!(
        second.messages.last().map(|m| m.content.as_str()),
        Some("Second run.")
    );
    // `read` keeps the first part.
    assert_eq!(formats::read(TWO_RUNS).expect("reads"), parts[0]);
}

/// A session-store file with a compaction: the continuation summary (`isCompactSummary`)
/// begins segment 2, which holds what the agent sent after it.
const STORE_COMPACTED: &str = r#"{"type":"user","sessionId":"s","parentUuid":null,"uuid":"u1","timestamp":"2026-01-02T03:04:05.000Z","message":{"role":"user","content":"fix it"}}
{"type":"assistant","sessionId":"s","parentUuid":"u1","uuid":"a1","timestamp":"2026-01-02T03:04:06.500Z","message":{"id":"m1","model":"claude-a","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.rs"}}],"usage":{"input_tokens":1,"output_tokens":2}}}
{"type":"user","sessionId":"s","parentUuid":"a1","uuid":"u2","timestamp":"2026-01-02T03:04:07.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn a() {}"}]}}
{"type":"assistant","sessionId":"s","parentUuid":"u2","uuid":"a2","timestamp":"2026-01-02T03:04:08.000Z","message":{"id":"m2","model":"claude-a","role":"assistant","content":[{"type":"text","text":"Read it."}],"usage":{"input_tokens":1,"output_tokens":2}}}
{"type":"system","subtype":"compact_boundary","sessionId":"s","parentUuid":null,"uuid":"b1","timestamp":"2026-01-02T04:00:00.000Z"}
{"type":"user","sessionId":"s","parentUuid":"b1","uuid":"u3","isCompactSummary":true,"timestamp":"2026-01-02T04:00:01.000Z","message":{"role":"user","content":"Summary: the user asked to fix it; a.rs was read."}}
{"type":"assistant","sessionId":"s","parentUuid":"u3","uuid":"a3","timestamp":"2026-01-02T04:00:03.000Z","message":{"id":"m3","model":"claude-a","role":"assistant","content":[{"type":"text","text":"Carrying on."}],"usage":{"input_tokens":1,"output_tokens":2}}}
"#;

#[test]
fn a_compaction_in_the_session_store_starts_a_segment() {
    let parts = formats::read_all(STORE_COMPACTED).expect("reads");
    assert_eq!(parts.len(), 2);
    let labels: Vec<Option<&str>> = parts.iter().map(|p| p.part.as_deref()).collect();
    assert_eq!(labels, [Some("segment 1"), Some("segment 2")]);
    assert!(!parts[0].segment_starts_with_compaction);
    assert!(parts[1].segment_starts_with_compaction);
    assert_eq!(
        roles(&parts[0]),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    // Segment 2's raw history is what the agent sent after the compaction.
    assert_eq!(roles(&parts[1]), [Role::User, Role::Assistant]);
    assert!(parts[1].messages[0].content.starts_with("Summary:"));
    assert_eq!(parts[1].calls.len(), 1);
    assert_eq!(parts[1].calls[0].sent, 1);
    // Times: the first event of each call, in ms since the epoch.
    let times: Vec<Option<u64>> = parts[0].calls.iter().map(|c| c.at_ms).collect();
    assert_eq!(times, [Some(1_767_323_046_500), Some(1_767_323_048_000)]);
    assert_eq!(parts[1].calls[0].at_ms, Some(1_767_326_403_000));
}

/// The same in stream-json: a user message that opens with Claude Code's continuation text.
#[test]
fn a_continuation_summary_in_stream_json_starts_a_segment() {
    let text = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-a"}
{"type":"assistant","message":{"id":"m1","model":"claude-a","content":[{"type":"text","text":"One."}],"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"This session is being continued from a previous conversation that ran out of context. Summary."}]},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"m2","model":"claude-a","content":[{"type":"text","text":"Two."}],"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s1"}
"#;
    let parts = formats::read_all(text).expect("reads");
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1].part.as_deref(), Some("segment 2"));
    assert!(parts[1].messages[0]
        .content
        .starts_with("This session is being continued"));
    assert_eq!(roles(&parts[1]), [Role::User, Role::Assistant]);
}

/// A SpecStory render of a compaction (the sub-agent that wrote the summary is a sidechain,
/// left out), timed headers, and a `Read` whose output shows lines 10-12.
const SPECSTORY_COMPACTED: &str = "<!-- Generated by SpecStory, Markdown v2.1.0 -->

# 2026-02-23 12:05:09Z

<!-- Claude Code Session aaa (2026-02-23 12:05:09Z) -->

_**User (2026-02-23 12:05:09Z)**_

Implement the plan.

---

_**Agent (claude-opus-4-6 2026-02-23 12:05:13Z)**_

<tool-use data-tool-type=\"read\" data-tool-name=\"Read\"><details>
<summary>Tool use: **Read**</summary>
 `./src/main.go`

```text
    10→package main
    11→
    12→func main() {}
```
</details></tool-use>

_**Agent - sidechain (claude-opus-4-6 2026-02-23 13:21:50Z)**_

<summary>the summary</summary>

_**User (2026-02-23 13:21:56Z)**_

This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.

_**Agent (claude-opus-4-6 2026-02-23 13:22:00Z)**_

Continuing with the plan.
";

#[test]
fn a_specstory_compaction_starts_a_segment_and_a_read_keeps_its_range() {
    let parts = formats::read_all(SPECSTORY_COMPACTED).expect("reads");
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1].part.as_deref(), Some("segment 2"));
    assert!(parts[1].segment_starts_with_compaction);
    assert_eq!(roles(&parts[1]), [Role::User, Role::Assistant]);
    assert!(parts[1].messages[0]
        .content
        .starts_with("This session is being continued"));
    // Calls at the agent sections' rendered times.
    assert_eq!(parts[0].calls[0].at_ms, Some(1_771_848_313_000));
    assert_eq!(parts[1].calls[0].at_ms, Some(1_771_852_920_000));
    let read = &parts[0].messages[1].tool_calls[0];
    assert_eq!(read.name, "Read");
    let args: serde_json::Value = serde_json::from_str(&read.args).expect("JSON");
    assert_eq!(
        args,
        serde_json::json!({"file_path": "./src/main.go", "offset": 10, "limit": 3})
    );
}

#[test]
fn a_second_rendered_specstory_session_is_a_second_run() {
    let text = "<!-- Generated by SpecStory, Markdown v2.1.0 -->

<!-- Claude Code Session aaa (2026-02-23 12:05:09Z) -->

_**User (2026-02-23 12:05:09Z)**_

First.

_**Agent (claude-opus-4-6 2026-02-23 12:05:13Z)**_

One.

<!-- Generated by SpecStory, Markdown v2.1.0 -->

# 2026-02-24 09:00:00Z

<!-- Claude Code Session bbb (2026-02-24 09:00:00Z) -->

_**User (2026-02-24 09:00:00Z)**_

Second.

_**Agent (claude-opus-4-6 2026-02-24 09:00:05Z)**_

Two.
";
    let parts = formats::read_all(text).expect("reads");
    let labels: Vec<Option<&str>> = parts.iter().map(|p| p.part.as_deref()).collect();
    assert_eq!(labels, [Some("run 1"), Some("run 2")]);
    let contents: Vec<Vec<&str>> = parts
        .iter()
        .map(|p| p.messages.iter().map(|m| m.content.as_str()).collect())
        .collect();
    assert_eq!(contents, [vec!["First.", "One."], vec!["Second.", "Two."]]);
    assert!(!parts[1].segment_starts_with_compaction);
}

/// A Codex compaction: the `compacted` item's replacement history is what later calls sent.
#[test]
fn a_codex_compaction_starts_a_segment_with_the_replacement_history() {
    let text = r#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"x"}}
{"timestamp":"2026-01-02T03:04:05.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}}
{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done part one"}]}}
{"timestamp":"2026-01-02T03:05:00.000Z","type":"compacted","payload":{"message":"summary","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"summary of part one"}]}]}}
{"timestamp":"2026-01-02T03:05:01.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"part two"}]}}
"#;
    let parts = formats::read_all(text).expect("reads");
    assert_eq!(parts.len(), 2);
    assert!(parts[1].segment_starts_with_compaction);
    let contents: Vec<&str> = parts[1]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(contents, ["do it", "summary of part one", "part two"]);
    // The replacement's items opened no call: one call, for "part two".
    assert_eq!(parts[1].calls.len(), 1);
    assert_eq!(parts[1].calls[0].sent, 2);
    assert_eq!(parts[0].calls[0].at_ms, Some(1_767_323_046_000));
    assert_eq!(parts[1].calls[0].at_ms, Some(1_767_323_101_000));
}

/// A tool call with no recorded result, followed by another call: a placeholder stands for
/// the result after its call's own results, and the calls that sent it count it. A call at
/// the end, after which nothing was sent, gets none.
#[test]
fn a_result_the_recording_lacks_gets_a_placeholder() {
    let messages = vec![
        Message::user("go"),
        Message::assistant_calls("", &[("a", "Read", "{}"), ("b", "Read", "{}")]),
        Message::tool_result("a", "content of a"),
        Message::assistant_calls("", &[("c", "Bash", "{}")]),
    ];
    let mut recording = Recording::new(Format::WindowConversation);
    recording.calls = Recording::calls_at_assistant_messages(&messages);
    recording.messages = messages;
    recording.repair();
    assert_eq!(
        roles(&recording),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(recording.missing_results, [3]);
    let placeholder = &recording.messages[3];
    assert_eq!(placeholder.tool_call_id.as_deref(), Some("b"));
    assert!(placeholder.content.is_empty());
    let sents: Vec<usize> = recording.calls.iter().map(|c| c.sent).collect();
    assert_eq!(sents, [1, 4]);
    // Repair again: nothing more to insert.
    recording.repair();
    assert_eq!(recording.missing_results, [3]);
    assert_eq!(recording.messages.len(), 5);
}

/// The six shared stream-json logs give seven sessions: issue-667's log holds a second run
/// after its `result`, now read as its own session (45 tool calls, then 9).
#[test]
fn the_shared_stream_json_logs_give_seven_sessions() {
    let names = [
        "issue-667-pricing-calculation-failures__pr49-run2-log.ndjson",
        "issue-759-log-truncation__gist-7257b11a-log.ndjson",
        "pr-4-ci-log-issue__session-2-log.ndjson",
        "pr-4-revert-issue__session1_log.ndjson",
        "pr-4-revert-issue__session2_log.ndjson",
        "pr-4-revert-issue__session3_log.ndjson",
    ];
    let mut sessions = 0;
    for name in names {
        let parts = formats::read_all(&shared(&format!("claude-stream-json/{name}")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        sessions += parts.len();
        if name.starts_with("issue-667") {
            let tools: Vec<usize> = parts.iter().map(Recording::tool_call_count).collect();
            assert_eq!(tools, [45, 9]);
        }
        // Every run that ended with a `result` carries its total.
        let results = shared(&format!("claude-stream-json/{name}"))
            .lines()
            .filter(|l| l.contains("\"type\": \"result\"") || l.contains("\"type\":\"result\""))
            .count();
        let totals = parts.iter().filter(|p| p.recorded_total.is_some()).count();
        assert_eq!(totals, results, "{name}");
    }
    assert_eq!(sessions, 7);
}

/// The shared SpecStory session with a real Claude Code compaction is read as two segments.
#[test]
fn the_shared_specstory_compaction_gives_two_segments() {
    let text =
        shared("specstory/getspecstory__2026-02-23_12-05-09Z-implement-the-following-plan.md");
    let parts = formats::read_all(&text).expect("reads");
    assert_eq!(parts.len(), 2);
    assert!(parts[1].segment_starts_with_compaction);
    assert!(parts[1].messages[0]
        .content
        .starts_with("This session is being continued"));
    assert!(parts
        .iter()
        .all(|p| p.calls.iter().all(|c| c.at_ms.is_some())));
}
