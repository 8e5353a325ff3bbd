//! The readers of the CLIs' own recordings (Claude Code stream-json and session store, Codex
//! rollouts, Gemini CLI chats), on the shared real sessions and on small hand-written cases.

use std::collections::BTreeSet;

use panewise_window::{Message, Role};
use panewise_window_eval::formats::{self, claude, codex, gemini};
use panewise_window_eval::{Family, Format, RecordedUsage, Recording};

/// The shared trajectories, from the workspace's parent directory.
fn shared(path: &str) -> String {
    let full = format!(
        "{}/../../../shared/trajectories/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("reading {full}: {e}"))
}

const STREAM_JSON: [&str; 6] = [
    "issue-667-pricing-calculation-failures__pr49-run2-log.ndjson",
    "issue-759-log-truncation__gist-7257b11a-log.ndjson",
    "pr-4-ci-log-issue__session-2-log.ndjson",
    "pr-4-revert-issue__session1_log.ndjson",
    "pr-4-revert-issue__session2_log.ndjson",
    "pr-4-revert-issue__session3_log.ndjson",
];

/// Distinct assistant `message.id`s of the top-level context, counted straight from the JSON
/// (first session only, sub-agent events left out), to check the reader against.
fn top_level_ids(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut session = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        let kind = value["type"].as_str().unwrap_or("");
        if kind == "result" {
            break;
        }
        if kind == "system" {
            let id = value["session_id"].as_str().map(str::to_string);
            if session.is_some() && session != id {
                break;
            }
            session = id;
        }
        if kind == "assistant" && value["parent_tool_use_id"].is_null() {
            let id = value["message"]["id"].as_str().unwrap_or("").to_string();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

/// Tool results whose call is not earlier in the history.
fn orphan_results(messages: &[Message]) -> usize {
    let mut calls = BTreeSet::new();
    let mut orphans = 0;
    for message in messages {
        calls.extend(message.tool_calls.iter().map(|c| c.id.clone()));
        if message.role == Role::Tool
            && !calls.contains(message.tool_call_id.as_deref().unwrap_or(""))
        {
            orphans += 1;
        }
    }
    orphans
}

fn usage(input: u64, cache_read: u64, cache_write: u64, output: u64) -> Option<RecordedUsage> {
    Some(RecordedUsage {
        input,
        cache_read,
        cache_write,
        output,
    })
}

fn roles(recording: &Recording) -> Vec<Role> {
    recording.messages.iter().map(|m| m.role).collect()
}

fn sents(recording: &Recording) -> Vec<usize> {
    recording.calls.iter().map(|c| c.sent).collect()
}

fn has_note(recording: &Recording, part: &str) -> bool {
    recording.notes.iter().any(|n| n.contains(part))
}

// ---- Claude Code stream-json, the shared sessions ----

#[test]
fn stream_json_shared_sessions_read_whole() {
    for name in STREAM_JSON {
        let text = shared(&format!("claude-stream-json/{name}"));
        assert_eq!(
            formats::detect(&text),
            Some(Format::ClaudeStreamJson),
            "{name}"
        );
        assert_eq!(claude::detect(&text), Some(Format::ClaudeStreamJson));
        assert!(!codex::detect(&text) && !gemini::detect(&text), "{name}");

        let ids = top_level_ids(&text);
        let raw =
            claude::read(&text, Format::ClaudeStreamJson).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            raw.calls.len(),
            ids.len(),
            "{name}: one call per message id"
        );

        let recording = formats::read(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(recording.format, Format::ClaudeStreamJson);
        assert_eq!(recording.family, Some(Family::Anthropic));
        assert_eq!(
            recording.model.as_deref(),
            Some("claude-sonnet-4-5-20250929")
        );
        assert_eq!(
            recording.calls.len(),
            ids.len(),
            "{name}: repair kept every call"
        );
        assert!(recording.calls.iter().all(|c| c.usage.is_some()), "{name}");
        assert!(recording.tool_call_count() > 0, "{name}");
        assert_eq!(orphan_results(&recording.messages), 0, "{name}");
        // Each call's answer is the assistant message it points at.
        for call in &recording.calls {
            assert_eq!(
                recording.messages.get(call.sent).map(|m| m.role),
                Some(Role::Assistant),
                "{name}"
            );
        }
        // The prompt is not in stream-json: an empty user message stands for it.
        assert_eq!(recording.messages.first().map(|m| m.role), Some(Role::User));
        assert_eq!(recording.calls.first().map(|c| c.sent), Some(1));
    }
}

/// Figures of issue-667 counted independently (python over the JSON): 41 assistant ids before
/// the `result`, 45 `tool_use` blocks, 38 `tool_result` blocks (the log lost some), 19
/// sub-agent events, 19 lines of a second run after the `result`; summed usage equals the
/// `result` line's own totals for input and cache (156, 1,773,252 read, 60,390 written).
#[test]
fn stream_json_issue_667_pinned_figures() {
    let text =
        shared("claude-stream-json/issue-667-pricing-calculation-failures__pr49-run2-log.ndjson");
    let recording = claude::read(&text, Format::ClaudeStreamJson).expect("reads");
    assert_eq!(recording.calls.len(), 41);
    assert_eq!(recording.tool_call_count(), 45);
    let results = recording
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    assert_eq!(results, 38);
    // 41 assistant messages + 38 results + the stand-in prompt.
    assert_eq!(recording.messages.len(), 80);
    assert_eq!(orphan_results(&recording.messages), 0);
    assert_eq!(
        recording.calls.first().and_then(|c| c.usage),
        usage(3, 0, 17159, 1)
    );
    assert_eq!(
        recording.calls.last().and_then(|c| c.usage),
        usage(0, 59947, 443, 479)
    );
    let mut total = RecordedUsage::default();
    for call in &recording.calls {
        let u = call.usage.expect("every call has usage");
        total.input += u.input;
        total.cache_read += u.cache_read;
        total.cache_write += u.cache_write;
        total.output += u.output;
    }
    assert_eq!(
        total,
        RecordedUsage {
            input: 156,
            cache_read: 1_773_252,
            cache_write: 60_390,
            output: 7_733
        }
    );
    assert!(
        has_note(&recording, "19 sub-agent event(s) skipped"),
        "{:?}",
        recording.notes
    );
    // The 19 lines after the `result` are a second run (a new `init`, a new session id):
    // `read_all` gives it as a session of its own, `claude::read` only the first run.
    let parts = formats::read_all(&text).expect("reads");
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].part.as_deref(), Some("run 1"));
    assert_eq!(parts[1].part.as_deref(), Some("run 2"));
    assert_eq!(parts[0].calls.len(), 41);
    // The main model's cost from `modelUsage`; the helper model's is said in a note.
    let total = parts[0]
        .recorded_total
        .as_ref()
        .expect("the result's total");
    assert_eq!(total.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(total.cost_usd, Some(0.9176061));
    assert_eq!(
        total.usage,
        RecordedUsage {
            input: 156,
            cache_read: 1_773_252,
            cache_write: 60_390,
            output: 10_580
        }
    );
    assert!(has_note(&parts[0], "claude-haiku-4-5-20251001 $0.0468"));
    // Seven tool calls whose results the stream lacks, each followed by more calls.
    assert_eq!(parts[0].missing_results.len(), 7);
    // The second run has no `result`: no recorded total.
    assert!(parts[1].recorded_total.is_none());
    // The first call's answer: its text and its one Bash call, merged from two events.
    let first = &recording.messages[1];
    assert_eq!(first.role, Role::Assistant);
    assert!(first
        .content
        .starts_with("I'll start by reading the issue details"));
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].name, "Bash");
    assert!(first.tool_calls[0].args.contains("\"command\""));
    // The Task call's result is the sub-agent's report, given back as a list of text blocks.
    let task = recording
        .messages
        .iter()
        .find(|m| m.tool_name.as_deref() == Some("Task"))
        .expect("the Task result");
    assert!(!task.content.is_empty());
}

// ---- Claude Code stream-json, hand-written edge cases ----

const STREAM_CASE: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-x","tools":[]}
{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"thinking","thinking":"Think."}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"Look."}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":5}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":40}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"sub1","content":[{"type":"text","text":"sub-agent"}],"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":"t0","session_id":"s1"}
not json at all
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"line one"},{"type":"text","text":"line two"}]},{"type":"text","text":"and a note"}]},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":3,"cache_read_input_tokens":130,"cache_creation_input_tokens":9,"output_tokens":2}},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"result","subtype":"success","session_id":"s1"}
{"type":"system","subtype":"init","session_id":"s2","model":"claude-x"}
"#;

#[test]
fn stream_json_merges_blocks_of_one_message_and_skips_sub_agents() {
    assert_eq!(claude::detect(STREAM_CASE), Some(Format::ClaudeStreamJson));
    let recording = formats::read(STREAM_CASE).expect("reads");
    assert_eq!(
        roles(&recording),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::Assistant
        ]
    );
    assert_eq!(sents(&recording), [1, 4]);
    let answer = &recording.messages[1];
    assert_eq!(answer.content, "Think.\nLook.");
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].id, "t1");
    assert_eq!(answer.tool_calls[0].args, r#"{"path":"a"}"#);
    // The last event's usage: output grows over the events of one message.
    assert_eq!(recording.calls[0].usage, usage(10, 100, 20, 40));
    assert_eq!(recording.calls[1].usage, usage(3, 130, 9, 2));
    let result = &recording.messages[2];
    assert_eq!(result.content, "line one\nline two");
    assert_eq!(result.tool_call_id.as_deref(), Some("t1"));
    assert_eq!(result.tool_name.as_deref(), Some("Read"));
    assert_eq!(recording.messages[3].content, "and a note");
    assert_eq!(recording.model.as_deref(), Some("claude-x"));
    assert!(
        has_note(&recording, "1 line(s) not JSON skipped"),
        "{:?}",
        recording.notes
    );
    assert!(has_note(&recording, "1 sub-agent event(s) skipped"));
    // The trailing `init` of another session is a second run with nothing in it: left out,
    // and said.
    assert!(
        has_note(
            &recording,
            "1 part(s) of the file left out: no model call (run 2)"
        ),
        "{:?}",
        recording.notes
    );
    assert_eq!(recording.part.as_deref(), Some("run 1"));
}

#[test]
fn claude_without_any_message_is_a_bad_recording() {
    let text = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\",\"model\":\"m\"}\nnot json\n";
    assert_eq!(claude::detect(text), Some(Format::ClaudeStreamJson));
    match claude::read(text, Format::ClaudeStreamJson) {
        Err(panewise_window_eval::EvalError::BadRecording { format, reason }) => {
            assert_eq!(format, "claude-stream-json");
            assert!(reason.contains("1 not JSON"), "{reason}");
        }
        other => panic!("expected BadRecording, got {other:?}"),
    }
}

// ---- Claude Code session store ----

#[test]
fn claude_session_store_shared_session() {
    let text = shared("native/claude-code-session.jsonl");
    assert_eq!(formats::detect(&text), Some(Format::ClaudeCodeSession));
    assert!(!codex::detect(&text) && !gemini::detect(&text));
    let recording = formats::read(&text).expect("reads");
    assert_eq!(recording.format, Format::ClaudeCodeSession);
    assert_eq!(recording.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(recording.family, Some(Family::Anthropic));
    assert!(recording
        .system
        .as_deref()
        .is_some_and(|s| s.contains("You are an agent working with the user")));
    // The prompt, seven rendered reminders (six in the system role), the merged answer
    // (thinking, text, Bash call), its result, the final answer.
    assert_eq!(
        roles(&recording),
        [
            Role::User,
            Role::System,
            Role::System,
            Role::System,
            Role::System,
            Role::System,
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(recording.messages[0].content, "make the file please");
    assert_eq!(sents(&recording), [8, 10]);
    let answer = &recording.messages[8];
    assert!(answer
        .content
        .starts_with("The user wants me to run echo hello."));
    assert!(answer.content.ends_with("I'll run the command."));
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "Bash");
    assert_eq!(recording.messages[9].content, "ok");
    assert_eq!(recording.messages[9].tool_name.as_deref(), Some("Bash"));
    assert_eq!(recording.calls[0].usage, usage(3080, 9000, 1200, 55));
    assert_eq!(recording.calls[1].usage, usage(3160, 9000, 1200, 35));
    assert_eq!(recording.tool_call_count(), 1);
}

const STORE_CASE: &str = r#"{"type":"summary","summary":"A title","leafUuid":"u4"}
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"fix it"},"uuid":"u1","sessionId":"s","timestamp":"t"}
{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"a1","model":"claude-y","role":"assistant","content":[{"type":"text","text":"On it."}],"usage":{"input_tokens":4,"cache_read_input_tokens":0,"cache_creation_input_tokens":50,"output_tokens":3}},"uuid":"u2","sessionId":"s"}
{"parentUuid":"u2","isSidechain":false,"type":"assistant","message":{"id":"a1","model":"claude-y","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"prompt":"look"}}],"usage":{"input_tokens":4,"cache_read_input_tokens":0,"cache_creation_input_tokens":50,"output_tokens":30}},"uuid":"u3","sessionId":"s"}
{"parentUuid":null,"isSidechain":true,"type":"user","message":{"role":"user","content":"look"},"uuid":"x1","sessionId":"s"}
{"parentUuid":"x1","isSidechain":true,"type":"assistant","message":{"id":"x","model":"claude-y","content":[{"type":"text","text":"sub"}],"usage":{"input_tokens":1,"output_tokens":1}},"uuid":"x2","sessionId":"s"}
{"parentUuid":"u3","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"found"}]},"uuid":"u4","sessionId":"s"}
{"parentUuid":"u4","isSidechain":false,"type":"assistant","message":{"id":"e1","model":"<synthetic>","content":[{"type":"text","text":"API Error"}]},"isApiErrorMessage":true,"uuid":"u5","sessionId":"s"}
{"parentUuid":"u4","isSidechain":false,"type":"assistant","message":{"id":"a2","model":"claude-y","content":[{"type":"text","text":"Fixed."}],"usage":{"input_tokens":2,"cache_read_input_tokens":54,"cache_creation_input_tokens":5,"output_tokens":4}},"uuid":"u6","sessionId":"s"}
{"parentUuid":"u6","isSidechain":false,"type":"system","subtype":"local_command","content":"x","uuid":"u7","sessionId":"s"}
{"parentUuid":"u6","isSidechain":false,"type":"assistant","message":{"id":"a2","model":"claude-y","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":2,"cache_read_input_tokens":54,"cache_creation_input_tokens":5,"output_tokens":9}},"uuid":"u8","sessionId":"s"}
"#;

#[test]
fn claude_session_store_skips_sidechains_and_synthetic_lines() {
    assert_eq!(formats::detect(STORE_CASE), Some(Format::ClaudeCodeSession));
    let recording = formats::read(STORE_CASE).expect("reads");
    assert_eq!(
        roles(&recording),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(sents(&recording), [1, 3]);
    assert_eq!(recording.messages[1].content, "On it.");
    assert_eq!(recording.messages[1].tool_calls[0].name, "Task");
    assert_eq!(recording.messages[2].content, "found");
    // The second message's blocks merge across the system line between them.
    assert_eq!(recording.messages[3].content, "Fixed.");
    assert_eq!(
        recording.messages[3].tool_calls[0].args,
        r#"{"command":"ls"}"#
    );
    assert_eq!(recording.calls[0].usage, usage(4, 0, 50, 30));
    assert_eq!(recording.calls[1].usage, usage(2, 54, 5, 9));
    assert_eq!(recording.model.as_deref(), Some("claude-y"));
    assert!(
        has_note(&recording, "2 sidechain (sub-agent) line(s) skipped"),
        "{:?}",
        recording.notes
    );
    assert!(has_note(&recording, "1 synthetic assistant line(s)"));
}

// ---- Codex rollouts ----

#[test]
fn codex_shared_rollout() {
    let text = shared("native/codex-rollout.jsonl");
    assert_eq!(formats::detect(&text), Some(Format::CodexRollout));
    assert!(codex::detect(&text));
    assert_eq!(claude::detect(&text), None);
    assert!(!gemini::detect(&text));
    let recording = formats::read(&text).expect("reads");
    assert_eq!(recording.family, Some(Family::OpenAi));
    assert_eq!(recording.model.as_deref(), Some("gpt-5.5"));
    assert!(recording
        .system
        .as_deref()
        .is_some_and(|s| s.starts_with("You are Codex")));
    // Developer instructions, environment context, prompt, the first call's answer
    // (reasoning summary and exec_command), the command's output, the final answer.
    assert_eq!(
        roles(&recording),
        [
            Role::System,
            Role::User,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(sents(&recording), [3, 5]);
    let answer = &recording.messages[3];
    assert!(answer.content.contains("**Running the command**"));
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "exec_command");
    assert_eq!(answer.tool_calls[0].args, r#"{"cmd": "echo hello"}"#);
    assert_eq!(
        recording.messages[4].tool_name.as_deref(),
        Some("exec_command")
    );
    assert!(recording.messages[4].content.ends_with("hello\n"));
    assert_eq!(
        recording.messages[5].content,
        "The command printed `hello`. Done."
    );
    // input_tokens includes the cached ones.
    assert_eq!(recording.calls[0].usage, usage(2620 - 1024, 1024, 0, 30));
    assert_eq!(recording.calls[1].usage, usage(2710 - 1024, 1024, 0, 30));
    assert_eq!(recording.tool_call_count(), 1);
}

const CODEX_CASE: &str = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s","instructions":"Be Codex."}}
{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}
{"timestamp":"t","type":"turn_context","payload":{"model":"gpt-9","cwd":"/"}}
{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox rules"}]}}
{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"patch it"}]}}
{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"patch it"}}
{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"encrypted_content":"x"}}
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch"}}
{"timestamp":"t","type":"response_item","payload":{"type":"function_call","call_id":"c2","name":"shell","arguments":"{\"command\":[\"ls\"]}"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":70,"reasoning_output_tokens":20}}}}
broken {
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1","output":"Success"}}
{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":{"content":"a.txt","success":true}}}
{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Patched."}]}}
{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1200,"cached_input_tokens":1000,"output_tokens":5}}}}
{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1200,"cached_input_tokens":1000,"output_tokens":5}}}}
{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]}}
{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"You're welcome."}]}}
"#;

#[test]
fn codex_token_counts_attach_to_the_call_they_end() {
    assert!(codex::detect(CODEX_CASE));
    let recording = formats::read(CODEX_CASE).expect("reads");
    assert_eq!(recording.system.as_deref(), Some("Be Codex."));
    assert_eq!(recording.model.as_deref(), Some("gpt-9"));
    assert_eq!(
        roles(&recording),
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
    assert_eq!(recording.messages[0].content, "sandbox rules");
    assert_eq!(sents(&recording), [2, 5, 7]);
    let calls = &recording.messages[2].tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].args, "\"*** Begin Patch\"");
    assert_eq!(calls[1].args, r#"{"command":["ls"]}"#);
    assert_eq!(
        recording.messages[3].tool_name.as_deref(),
        Some("apply_patch")
    );
    assert_eq!(recording.messages[4].content, "a.txt");
    assert_eq!(recording.calls[0].usage, usage(200, 800, 0, 70));
    // The repeated count is not given to the next call.
    assert_eq!(recording.calls[1].usage, usage(200, 1000, 0, 5));
    assert_eq!(recording.calls[2].usage, None);
    assert!(
        has_note(&recording, "1 line(s) not JSON skipped"),
        "{:?}",
        recording.notes
    );
    assert!(has_note(
        &recording,
        "1 model call(s) without a token count"
    ));
}

#[test]
fn codex_without_messages_is_a_bad_recording() {
    let text = "{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n";
    assert!(codex::detect(text));
    assert!(matches!(
        codex::read(text),
        Err(panewise_window_eval::EvalError::BadRecording {
            format: "codex-rollout",
            ..
        })
    ));
}

// ---- Gemini CLI chats ----

#[test]
fn gemini_shared_chat() {
    let text = shared("native/gemini-cli-chat.jsonl");
    assert_eq!(formats::detect(&text), Some(Format::GeminiChat));
    assert!(gemini::detect(&text));
    assert_eq!(claude::detect(&text), None);
    assert!(!codex::detect(&text));
    let recording = formats::read(&text).expect("reads");
    assert_eq!(recording.family, Some(Family::Gemini));
    assert_eq!(recording.model.as_deref(), Some("gemini-3.8-flash"));
    // Session context, prompt, the answer with its call (two records, one call), the call's
    // result (recorded twice, kept once), the final answer.
    assert_eq!(
        roles(&recording),
        [
            Role::User,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert!(recording.messages[0]
        .content
        .starts_with("<session_context>"));
    assert_eq!(sents(&recording), [2, 4]);
    let answer = &recording.messages[2];
    assert_eq!(answer.content, "Creating it.");
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "run_shell_command");
    assert!(answer.tool_calls[0]
        .args
        .contains("touch approval-probe.txt"));
    let result = &recording.messages[3];
    assert_eq!(
        result.tool_call_id.as_deref(),
        Some("run_shell_command__run_shell_command_1796299051244_0")
    );
    assert!(result.content.contains("Output: (empty)"));
    // input includes cached; thoughts are output.
    assert_eq!(
        recording.calls[0].usage,
        usage(4050 - 2048, 2048, 0, 28 + 16)
    );
    assert_eq!(
        recording.calls[1].usage,
        usage(4150 - 2048, 2048, 0, 12 + 16)
    );
}

const GEMINI_OLD: &str = r#"{
  "sessionId": "s",
  "projectHash": "h",
  "startTime": "t",
  "messages": [
    {"id": "1", "type": "user", "content": "list files"},
    {"id": "2", "type": "info", "content": "switched model"},
    {"id": "3", "type": "gemini", "content": "", "model": "gemini-old",
     "tokens": {"input": 500, "output": 10, "cached": 100, "thoughts": 5, "tool": 7, "total": 522},
     "toolCalls": [
       {"id": "c1", "name": "ls", "args": {"path": "."},
        "result": [{"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a b"}}}]},
       {"id": "c2", "name": "read", "args": {"path": "a"}, "status": "cancelled"}
     ]},
    {"id": "4", "type": "gemini", "content": [{"text": "Two files."}],
     "tokens": {"input": 600, "output": 4, "cached": 400, "thoughts": 0, "tool": 0, "total": 604}}
  ]
}"#;

#[test]
fn gemini_single_object_chat_with_tool_results() {
    assert!(gemini::detect(GEMINI_OLD));
    assert_eq!(formats::detect(GEMINI_OLD), Some(Format::GeminiChat));
    let recording = gemini::read(GEMINI_OLD).expect("reads");
    assert_eq!(
        roles(&recording),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(sents(&recording), [1, 3]);
    assert_eq!(recording.messages[1].tool_calls.len(), 2);
    assert_eq!(recording.messages[2].content, "a b");
    assert_eq!(recording.messages[2].tool_name.as_deref(), Some("ls"));
    assert_eq!(recording.messages[3].content, "Two files.");
    assert_eq!(recording.calls[0].usage, usage(500 - 100 + 7, 100, 0, 15));
    assert_eq!(recording.calls[1].usage, usage(200, 400, 0, 4));
    assert_eq!(recording.model.as_deref(), Some("gemini-old"));
    assert!(
        has_note(&recording, "1 display record(s)"),
        "{:?}",
        recording.notes
    );
    assert!(has_note(
        &recording,
        "1 tool call(s) without a recorded result"
    ));
}

#[test]
fn gemini_log_replays_sets_and_rewrites() {
    let text = r#"{"sessionId":"s","projectHash":"h","startTime":"t","kind":"main"}
{"$set":{"messages":[{"id":"old","type":"user","content":"dropped by the next set"}]}}
{"$set":{"messages":[{"id":"u0","type":"user","content":[{"text":"context"}]}]}}
{"id":"u1","type":"user","content":[{"text":"go"}]}
{"id":"g1","type":"gemini","content":"Partial","model":"gemini-z"}
not json
{"id":"g1","type":"gemini","content":"Whole answer.","model":"gemini-z","tokens":{"input":10,"output":2,"cached":0,"thoughts":0,"tool":0,"total":12}}
{"$set":{"lastUpdated":"t2"}}
"#;
    assert!(gemini::detect(text));
    let recording = formats::read(text).expect("reads");
    assert_eq!(roles(&recording), [Role::User, Role::User, Role::Assistant]);
    assert_eq!(recording.messages[0].content, "context");
    assert_eq!(recording.messages[2].content, "Whole answer.");
    assert_eq!(recording.calls.len(), 1);
    assert_eq!(recording.calls[0].usage, usage(10, 0, 0, 2));
    assert!(
        has_note(&recording, "1 line(s) not JSON skipped"),
        "{:?}",
        recording.notes
    );
}

// ---- Detection leaves other formats alone ----

#[test]
fn native_detectors_do_not_claim_other_formats() {
    let others = [
        // SpecStory markdown.
        "<!-- Generated by SpecStory -->\n\n# Fix the bug (2025-01-01)\n\n_**User**_\n\nfix it\n".to_string(),
        // A SWE-agent trajectory, pretty-printed JSON.
        "{\n  \"trajectory\": [],\n  \"history\": [{\"role\": \"system\", \"content\": \"x\"}],\n  \"info\": {}\n}\n".to_string(),
        // A panewise session log.
        "{\"v\":3,\"type\":\"session_start\",\"session\":\"s\"}\n{\"v\":3,\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}\n".to_string(),
        // Chat-completions messages, one per line.
        "{\"role\":\"system\",\"content\":\"be brief\"}\n{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"hello\"}\n".to_string(),
        String::new(),
        "plain text\n".to_string(),
    ];
    for text in &others {
        assert_eq!(claude::detect(text), None, "{text}");
        assert!(!codex::detect(text), "{text}");
        assert!(!gemini::detect(text), "{text}");
    }
    // The shared SWE-agent and SpecStory files too.
    for path in ["swe-agent", "specstory"] {
        let dir = format!(
            "{}/../../../shared/trajectories/{path}",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| !p.to_string_lossy().contains("LICENSE"))
            .collect();
        entries.sort();
        for file in entries {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            assert_eq!(claude::detect(&text), None, "{}", file.display());
            assert!(!codex::detect(&text), "{}", file.display());
            assert!(!gemini::detect(&text), "{}", file.display());
        }
    }
}
