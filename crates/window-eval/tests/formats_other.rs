//! The readers of SpecStory markdown, SWE-agent and mini-swe-agent trajectories, panewise
//! session logs and window conversation files: on the shared recorded sessions (read in
//! place), with figures pinned from independent counts (grep and Python over the files), and
//! on small inline cases for each format's edge cases and for detection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use panewise_window::Role;
use panewise_window_eval::formats::{
    self, panewise_log, specstory, swe_agent, window_conversation,
};
use panewise_window_eval::{EvalError, Family, Format, Recording};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/trajectories");

fn shared_files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(format!("{SHARED}/{dir}"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn shared(path: &str) -> String {
    std::fs::read_to_string(format!("{SHARED}/{path}")).unwrap()
}

fn name(path: &std::path::Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Every tool result answers a call made earlier, and no call is answered twice.
fn assert_results_follow_calls(recording: &Recording, label: &str) {
    let mut calls = BTreeSet::new();
    let mut answered = BTreeSet::new();
    for (index, message) in recording.messages.iter().enumerate() {
        for call in &message.tool_calls {
            assert!(
                calls.insert(call.id.clone()),
                "{label}: call id {} used twice",
                call.id
            );
            assert!(
                serde_json::from_str::<serde_json::Value>(&call.args).is_ok(),
                "{label}: args of {} are not JSON",
                call.id
            );
        }
        if message.role == Role::Tool {
            let id = message.tool_call_id.clone().unwrap_or_default();
            assert!(
                calls.contains(&id),
                "{label}: result {index} answers no earlier call"
            );
            assert!(
                answered.insert(id),
                "{label}: result {index} answers a call twice"
            );
        }
    }
}

fn count_role(recording: &Recording, role: Role) -> usize {
    recording
        .messages
        .iter()
        .filter(|message| message.role == role)
        .count()
}

fn has_note(recording: &Recording, words: &str) -> bool {
    recording.notes.iter().any(|note| note.contains(words))
}

// ---- SpecStory ----

#[test]
fn specstory_every_shared_file_is_detected_and_read_with_its_tool_calls() {
    let files = shared_files("specstory", ".md");
    assert_eq!(files.len(), 20);
    for path in files {
        let label = name(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(specstory::detect(&text), "{label}");
        assert_eq!(formats::detect(&text), Some(Format::SpecStory), "{label}");
        let recording = formats::read(&text).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(recording.format, Format::SpecStory);
        assert!(recording.tool_call_count() > 0, "{label}");
        assert!(!recording.calls.is_empty(), "{label}");
        assert!(
            recording.calls.iter().all(|call| call.usage.is_none()),
            "{label}"
        );
        assert!(
            recording.family.is_some(),
            "{label}: every file names its agent"
        );
        assert!(
            !has_note(&recording, "without an earlier call"),
            "{label}: {:?}",
            recording.notes
        );
        assert_results_follow_calls(&recording, &label);
    }
}

/// Counted independently with Python over the file (headers split by regex, `<tool-use`
/// blocks and thinking removed): 9 user sections, 107 tool blocks, 24 text-only agent
/// sections, so 9 + 2 × 107 + 24 = 247 messages and 111 model calls.
#[test]
fn specstory_v2_file_figures_are_pinned() {
    let text = shared("specstory/getspecstory__2026-02-20_22-41-47Z-02-20-26-17.md");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.messages.len(), 247);
    assert_eq!(recording.calls.len(), 111);
    assert_eq!(recording.tool_call_count(), 107);
    assert_eq!(count_role(&recording, Role::User), 9);
    assert_eq!(count_role(&recording, Role::Tool), 107);
    assert_eq!(recording.model.as_deref(), Some("claude-opus-4-6"));
    assert_eq!(recording.family, Some(Family::Anthropic));
    assert_eq!(recording.system, None);
    assert!(recording.notes.is_empty(), "{:?}", recording.notes);

    // The first answer is text, then one call per tool use, each with its whole output.
    let first = &recording.messages[1];
    assert_eq!(first.role, Role::Assistant);
    assert_eq!(first.content, "Let me fix these lint issues.");
    let read = &recording.messages[2];
    assert_eq!(read.tool_calls.len(), 1);
    assert_eq!(read.tool_calls[0].name, "Read");
    assert_eq!(read.tool_calls[0].id, "specstory-1");
    // A `Read` keeps Claude Code's argument names, so reads compare by path (and range,
    // where the render shows one: this one failed, so its output has no line numbers).
    let args: serde_json::Value = serde_json::from_str(&read.tool_calls[0].args).unwrap();
    assert_eq!(
        args,
        serde_json::json!({"file_path": "./pkg/providers/cursorcli/markdown_tools.go"})
    );
    let result = &recording.messages[3];
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.tool_call_id.as_deref(), Some("specstory-1"));
    assert_eq!(result.tool_name.as_deref(), Some("Read"));
    assert_eq!(
        result.content,
        "<tool_use_error>File does not exist.</tool_use_error>"
    );
    // A Bash block: the description and the command are the input, the fenced text the output.
    let bash = recording
        .messages
        .iter()
        .find(|m| m.tool_calls.iter().any(|c| c.name == "Bash"))
        .unwrap();
    let args: serde_json::Value = serde_json::from_str(&bash.tool_calls[0].args).unwrap();
    assert_eq!(
        args["input"],
        "Run linter to verify fixes\n\n`cd /Users/sean/Source/SpecStory/getspecstory/specstory-cli && golangci-lint run`"
    );
}

/// The older layout (`Tool use: **Name**`, `Result:`), counted with Python over the file: 23
/// user sections, 43 tool uses of which 41 with a `Result:`, 61 text-only agent sections.
#[test]
fn specstory_older_layout_figures_are_pinned() {
    let text =
        shared("specstory/keyframe-blogger__2025-07-14_20-58-30Z-we-renamed-this-project.md");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.messages.len(), 170);
    assert_eq!(recording.calls.len(), 64);
    assert_eq!(recording.tool_call_count(), 43);
    assert_eq!(count_role(&recording, Role::User), 23);
    assert_eq!(recording.model.as_deref(), Some("claude-opus-4-20250514"));
    assert!(recording
        .notes
        .contains(&"2 tool use(s) with no rendered output given an empty result".to_string()));
    let multi_edit = recording
        .messages
        .iter()
        .position(|m| m.tool_calls.iter().any(|c| c.name == "MultiEdit"))
        .unwrap();
    let output = &recording.messages[multi_edit + 1].content;
    assert!(output.starts_with("Applied 2 edits to "), "{output}");
    assert!(!output.contains("```"));
}

/// The Gemini CLI session (resumed from Codex) renders its 29 tool uses in the older
/// `Tool use:` form whose outputs hold unbalanced fences; no model is named, the session
/// comment gives the family.
#[test]
fn specstory_gemini_session_reads_every_tool_use() {
    let text = shared("specstory/getspecstory__2026-06-18_15-52-09Z-read-docs-git-provenance.md");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.tool_call_count(), 29);
    assert_eq!(recording.model, None);
    assert_eq!(recording.family, Some(Family::Gemini));
}

/// Sub-agent sections are left out: the file has 332 `<tool-use` blocks, 156 of them in
/// sidechain sections (counted with Python).
#[test]
fn specstory_sidechains_are_left_out_and_counted() {
    let text = shared("specstory/getspecstory__2026-06-30_15-24-48Z-ok-let-s-start.md");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.tool_call_count(), 176);
    assert!(recording
        .notes
        .contains(&"337 sidechain (sub-agent) section(s) left out".to_string()));
}

/// A tool that printed another export (cut by `head`, its block without a closer) does not
/// swallow the rest of the session: 231 line-start blocks, one of them printed inside another.
#[test]
fn specstory_printed_export_inside_a_tool_output_stays_output() {
    let text = shared("specstory/getspecstory__2026-07-16_20-14-28Z.md");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.tool_call_count(), 230);
}

#[test]
fn specstory_inline_edge_cases() {
    let text = "\
<!-- Generated by SpecStory, Markdown v2.1.0 -->

<!-- Codex CLI Session 1 (2026-01-01 00:00:00Z) -->

_**User (2026-01-01 00:00:00Z)**_

Look at this render:

```
_**Agent (fake 2026-01-01)**_
<tool-use data-tool-type=\"read\" data-tool-name=\"Fake\"><details>
```

---

_**Agent (gpt-5.2 2026-01-01 00:00:01Z)**_

<think><details><summary>Thought Process</summary>
Quoting a closer:
```
</details></think>
```
</details></think>

Checking.

<tool-use data-tool-type=\"shell\" data-tool-name=\"exec_command\"><details>
<summary>Tool use: **exec_command** `ls`</summary>
```
a.txt
```
</details></tool-use>

_**Agent (gpt-5.2 2026-01-01 00:00:02Z)**_

<tool-use data-tool-type=\"write\" data-tool-name=\"apply_patch\"><details>
<summary>Tool use: **apply_patch**</summary>
```diff
+hello
```
</details></tool-use>

_**Agent (gpt-5.2 2026-01-01 00:00:03Z)**_

<tool-use data-tool-type=\"generic\" data-tool-name=\"mcp\"><details>
<summary>Tool use: **mcp**</summary>
{\"query\": \"x\"}

```text
ok
```
</details></tool-use>

_**Agent - sidechain (gpt-5.2 2026-01-01 00:00:04Z)**_

Sub-agent text.

_**Agent (<synthetic>)**_

No response requested.

_**Agent (gpt-5.2 2026-01-01 00:00:05Z)**_

Done.
";
    assert!(specstory::detect(text));
    let recording = specstory::read(text).unwrap();
    let roles: Vec<Role> = recording.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    // The pasted render stays in the prompt.
    assert!(recording.messages[0]
        .content
        .contains("data-tool-name=\"Fake\""));
    // Thinking (with its quoted closer) is left out; the text before the call is its content.
    assert_eq!(recording.messages[1].content, "Checking.");
    assert_eq!(
        recording.messages[1].tool_calls[0].args,
        r#"{"input":"`ls`"}"#
    );
    assert_eq!(recording.messages[2].content, "a.txt");
    // An input-only block (the diff) gets an empty result, noted.
    assert_eq!(recording.messages[3].tool_calls[0].name, "apply_patch");
    assert_eq!(recording.messages[4].content, "");
    // A JSON input is the arguments as they are.
    assert_eq!(recording.messages[5].tool_calls[0].args, r#"{"query":"x"}"#);
    assert_eq!(recording.messages[6].content, "ok");
    assert_eq!(recording.messages[7].content, "Done.");
    assert_eq!(recording.calls.len(), 4);
    assert_eq!(recording.model.as_deref(), Some("gpt-5.2"));
    assert_eq!(recording.family, Some(Family::OpenAi));
    for note in [
        "1 sidechain (sub-agent) section(s) left out",
        "1 synthetic (not model) section(s) left out",
        "1 thinking block(s) left out (not context for later calls)",
        "1 tool use(s) with no rendered output given an empty result",
    ] {
        assert!(
            recording.notes.contains(&note.to_string()),
            "{:?}",
            recording.notes
        );
    }
}

#[test]
fn specstory_without_sections_is_a_bad_recording() {
    let text = "<!-- Generated by SpecStory -->\n\n# Title only\n";
    assert!(specstory::detect(text));
    assert!(matches!(
        specstory::read(text),
        Err(EvalError::BadRecording {
            format: "specstory",
            ..
        })
    ));
}

#[test]
fn specstory_cut_anywhere_never_panics() {
    let text = shared("specstory/getspecstory__2026-01-29_17-39-47Z-the-droid-factory-provider.md");
    let mut cut = 0;
    while cut < text.len() {
        if text.is_char_boundary(cut) {
            let _ = specstory::read(&text[..cut]);
        }
        cut += 7919;
    }
}

// ---- SWE-agent and mini-swe-agent ----

#[test]
fn swe_agent_every_shared_file_is_detected_and_read() {
    let files = shared_files("swe-agent", ".traj");
    assert_eq!(files.len(), 16);
    for path in files {
        let label = name(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            swe_agent::detect(&text),
            Some(Format::SweAgentTraj),
            "{label}"
        );
        assert_eq!(
            formats::detect(&text),
            Some(Format::SweAgentTraj),
            "{label}"
        );
        let recording = formats::read(&text).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(recording.tool_call_count() > 0, "{label}");
        assert!(recording.system.is_some(), "{label}");
        assert!(
            recording.messages.iter().all(|m| m.role != Role::System),
            "{label}"
        );
        assert_eq!(
            recording.calls.len(),
            count_role(&recording, Role::Assistant),
            "{label}: one call per answer"
        );
        assert!(
            !has_note(&recording, "without an earlier call"),
            "{label}: {:?}",
            recording.notes
        );
        assert_results_follow_calls(&recording, &label);
    }
}

/// Counted with Python over the file: `history` holds 1 system, 14 user and 14 assistant
/// messages, each assistant with an `action`; the first user message is the task, the other
/// 13 the observations; the last action (`submit`) has none.
#[test]
fn swe_agent_default_file_figures_are_pinned() {
    let text = shared("swe-agent/marshmallow-1867__default.traj");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.messages.len(), 28);
    assert_eq!(recording.calls.len(), 14);
    assert_eq!(recording.tool_call_count(), 14);
    assert_eq!(count_role(&recording, Role::Tool), 13);
    assert_eq!(count_role(&recording, Role::User), 1);
    assert_eq!(recording.system.as_deref().map(str::len), Some(4877));
    let names: Vec<&str> = recording
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            "ls",
            "open",
            "pip",
            "create",
            "edit",
            "python",
            "ls",
            "find_file",
            "open",
            "edit",
            "edit",
            "python",
            "rm",
            "submit"
        ]
    );
    let first = &recording.messages[1];
    assert_eq!(first.tool_calls[0].args, r#"{"command":"ls -F"}"#);
    // The action left the text (SWE-agent's own `thought`); the observation is its result.
    assert!(!first.content.contains("```"));
    assert!(first
        .content
        .starts_with("Let's list out some of the files"));
    assert_eq!(recording.messages[2].role, Role::Tool);
    assert_eq!(recording.messages[2].tool_name.as_deref(), Some("ls"));
    assert!(recording.messages[2].content.starts_with("AUTHORS.rst"));
}

/// The function-calling run reuses call ids (5 of its 11 calls); each result still pairs with
/// its own call.
#[test]
fn swe_agent_function_calling_reused_ids_are_made_unique() {
    let text = shared("swe-agent/marshmallow-1867__function_calling.traj");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.tool_call_count(), 11);
    assert_eq!(count_role(&recording, Role::Tool), 11);
    assert_eq!(recording.calls.len(), 11);
    assert_eq!(recording.model.as_deref(), Some("gpt-4o"));
    assert_eq!(recording.family, Some(Family::OpenAi));
    assert!(recording
        .notes
        .contains(&"5 reused tool call id(s) made unique".to_string()));
    assert_eq!(recording.messages[1].tool_calls[0].name, "create");
    assert_eq!(
        recording.messages[1].tool_calls[0].args,
        r#"{"filename":"reproduce.py"}"#
    );
}

#[test]
fn swe_agent_history_only_file_reads() {
    let text = shared("swe-agent/function_calling_simple.traj");
    let recording = formats::read(&text).unwrap();
    assert_eq!(recording.tool_call_count(), 5);
    assert_eq!(count_role(&recording, Role::Tool), 5);
    assert_eq!(recording.model, None);
}

#[test]
fn swe_agent_empty_history_and_trajectory_is_a_clear_error() {
    let text = r#"{"environment": "swe_main", "trajectory": [], "history": [], "info": {}}"#;
    assert_eq!(swe_agent::detect(text), Some(Format::SweAgentTraj));
    match swe_agent::read(text, Format::SweAgentTraj) {
        Err(EvalError::BadRecording { format, reason }) => {
            assert_eq!(format, "swe-agent-traj");
            assert!(reason.contains("empty"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(formats::read(text).is_err());
    assert!(swe_agent::read("{\"history\": ", Format::SweAgentTraj).is_err());
}

#[test]
fn swe_agent_empty_history_falls_back_on_the_trajectory() {
    let text = r#"{"environment": "swe_main", "history": [], "trajectory": [
        {"response": "Look.\n```\nls\n```", "thought": "Look.\n", "action": "ls\n", "observation": "a.py"},
        {"response": "Done.\n```\nsubmit\n```", "thought": "Done.\n", "action": "submit\n", "observation": "diff"}
    ]}"#;
    let recording = formats::read(text).unwrap();
    assert_eq!(recording.tool_call_count(), 2);
    assert_eq!(count_role(&recording, Role::Tool), 2);
    assert_eq!(recording.messages[0].content, "Look.");
    assert!(has_note(&recording, "rebuilt from the trajectory"));
}

#[test]
fn swe_agent_actions_in_text_xml_and_format_errors() {
    let text = r#"{"history": [
        {"role": "system", "content": "You are an agent.", "agent": "primary"},
        {"role": "user", "content": "Fix the bug.", "agent": "primary"},
        {"role": "assistant", "content": "Open it.\n<command>\nopen a.py\n</command>", "agent": "primary"},
        {"role": "user", "content": "[File: a.py]", "agent": "primary"},
        {"role": "assistant", "content": "I think I am done.", "agent": "primary"},
        {"role": "user", "content": "Your output was not formatted correctly.", "agent": "primary"},
        {"role": "assistant", "content": [{"type": "text", "text": "Run it.\n```\npython a.py\n```"}], "agent": "primary"},
        {"role": "user", "content": [{"type": "text", "text": "ok"}], "agent": "primary"}
    ]}"#;
    let recording = formats::read(text).unwrap();
    assert_eq!(recording.system.as_deref(), Some("You are an agent."));
    let roles: Vec<Role> = recording.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert_eq!(recording.messages[1].content, "Open it.");
    assert_eq!(recording.messages[1].tool_calls[0].name, "open");
    assert_eq!(
        recording.messages[1].tool_calls[0].args,
        r#"{"command":"open a.py"}"#
    );
    assert!(recording.messages[3].tool_calls.is_empty());
    assert_eq!(recording.messages[5].tool_calls[0].name, "python");
    assert_eq!(recording.messages[6].content, "ok");
    assert_eq!(recording.calls.len(), 3);
}

const MINI: &str = r#"{
  "info": {
    "exit_status": "Submitted",
    "submission": "diff --git a/a.py b/a.py",
    "model_stats": {"instance_cost": 0.01, "api_calls": 3},
    "mini_version": "1.9.0",
    "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5-20250929"}}
  },
  "messages": [
    {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
    {"role": "user", "content": "Please solve this issue: a.py prints 1."},
    {"role": "assistant", "content": "THOUGHT: Look first.\n\n```bash\ncat a.py\n```"},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\nprint(1)\n</output>"},
    {"role": "assistant", "content": "THOUGHT: Fix it.\n\n```bash\nsed -i 's/1/2/' a.py\n```"},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
    {"role": "assistant", "content": "THOUGHT: Submit.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```"},
    {"role": "user", "content": "diff --git a/a.py b/a.py"}
  ],
  "trajectory_format": "mini-swe-agent-1"
}"#;

#[test]
fn mini_swe_agent_inline_trajectory_reads() {
    assert_eq!(swe_agent::detect(MINI), Some(Format::MiniSweAgentTraj));
    assert_eq!(formats::detect(MINI), Some(Format::MiniSweAgentTraj));
    let recording = formats::read(MINI).unwrap();
    assert_eq!(recording.format, Format::MiniSweAgentTraj);
    assert_eq!(
        recording.model.as_deref(),
        Some("anthropic/claude-sonnet-4-5-20250929")
    );
    assert_eq!(recording.family, Some(Family::Anthropic));
    assert!(recording.system.is_some());
    assert_eq!(recording.messages.len(), 7);
    assert_eq!(recording.calls.len(), 3);
    assert_eq!(recording.tool_call_count(), 3);
    assert_eq!(count_role(&recording, Role::Tool), 3);
    let first = &recording.messages[1];
    assert_eq!(first.content, "THOUGHT: Look first.");
    assert_eq!(first.tool_calls[0].name, "cat");
    assert_eq!(first.tool_calls[0].args, r#"{"command":"cat a.py"}"#);
    assert_eq!(recording.messages[2].tool_call_id.as_deref(), Some("swe-1"));
    assert_results_follow_calls(&recording, "mini");
}

#[test]
fn mini_swe_agent_is_not_claimed_without_its_marker() {
    let text = r#"{"info": {"x": 1}, "messages": [{"role": "user", "content": "hi"}]}"#;
    assert_eq!(swe_agent::detect(text), None);
}

// ---- panewise session logs ----

#[test]
fn panewise_log_golden_transcript_reads() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../pane-state/tests/data/golden/transcript-v3-own-loop.jsonl"
    ))
    .unwrap();
    assert!(panewise_log::detect(&text));
    assert_eq!(formats::detect(&text), Some(Format::PanewiseLog));
    let recording = formats::read(&text).unwrap();
    let roles: Vec<Role> = recording.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(recording.messages[0].content, "print hello with the shell");
    assert_eq!(recording.messages[1].content, "I'll run the command.");
    assert_eq!(recording.messages[1].tool_calls[0].name, "shell");
    assert_eq!(
        recording.messages[1].tool_calls[0].args,
        r#"{"command":"echo hello"}"#
    );
    assert_eq!(recording.messages[2].tool_name.as_deref(), Some("shell"));
    assert!(recording.messages[2].content.starts_with("denied:"));
    assert_eq!(
        recording.messages[3].content,
        "The command printed `hello`. Done."
    );
    assert_eq!(recording.calls.len(), 2);
    assert_eq!(recording.model.as_deref(), Some("panewise-mock"));
    assert!(recording
        .notes
        .contains(&"1 thinking line(s) left out (not context for later calls)".to_string()));
}

#[test]
fn panewise_log_inline_edge_cases() {
    let text = r#"{"v":3,"header":{"agent_id":"claude","started_at_ms":1}}
{"v":3,"ts":1,"transcript":{"kind":"history","role":"user","text":"earlier question"}}
{"v":3,"ts":1,"transcript":{"kind":"history","role":"assistant","text":"earlier answer"}}
{"v":3,"ts":1,"transcript":{"kind":"history","role":"tool","text":"Read a.py"}}
not json at all
{"v":3,"ts":2,"msg":{"type":"tokens_in","input":10,"model":"claude-sonnet-4-5"}}
{"v":3,"ts":2,"transcript":{"kind":"prompt","text":"go on"}}
{"v":3,"ts":3,"transcript":{"kind":"text","text":"Reading "}}
{"v":3,"ts":3,"transcript":{"kind":"text","text":"both."}}
{"v":3,"ts":3,"transcript":{"kind":"tool_call","call_id":"c1","name":"Read","arg":"a.py"}}
{"v":3,"ts":3,"transcript":{"kind":"tool_call","call_id":"c2","name":"Read","input":{"path":"b.py"}}}
{"v":3,"ts":4,"transcript":{"kind":"tool_output","call_id":"c1","status":"completed","output":"A","cut_bytes":5}}
{"v":3,"ts":4,"transcript":{"kind":"tool_output","call_id":"c2","status":"failed"}}
{"v":3,"ts":5,"transcript":{"kind":"mystery"}}
{"v":3,"ts":5,"transcript":{"kind":"text","text":"Done."}}
{"v":3,"ts":6,"transcript":{"kind":"session_ended"}}
"#;
    assert!(panewise_log::detect(text));
    let recording = panewise_log::read(text).unwrap();
    let roles: Vec<Role> = recording.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    let answer = &recording.messages[3];
    assert_eq!(answer.content, "Reading both.");
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.tool_calls[0].args, r#"{"arg":"a.py"}"#);
    assert_eq!(answer.tool_calls[1].args, r#"{"path":"b.py"}"#);
    assert_eq!(recording.messages[5].content, "");
    assert_eq!(recording.messages[5].tool_name.as_deref(), Some("Read"));
    assert_eq!(recording.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(recording.family, Some(Family::Anthropic));
    assert_eq!(recording.calls.len(), 3);
    assert_eq!(recording.notes.len(), 4, "{:?}", recording.notes);
    assert_results_follow_calls(&recording, "inline log");
}

#[test]
fn panewise_log_without_transcript_is_a_bad_recording() {
    let text = "{\"v\":3,\"header\":{\"agent_id\":\"a\"}}\n{\"v\":3,\"ts\":1,\"msg\":{\"type\":\"init_ready\",\"at\":1}}\n";
    assert!(panewise_log::detect(text));
    assert!(matches!(
        panewise_log::read(text),
        Err(EvalError::BadRecording {
            format: "panewise-log",
            ..
        })
    ));
}

// ---- window conversation files ----

#[test]
fn window_conversation_inline_reads() {
    let text = r#"{"role":"system","content":"Be brief."}
{"role":"user","content":"list files"}
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]}
{"role":"tool","tool_call_id":"c1","content":"a.txt"}
{"role":"assistant","content":"One file."}

{"role":"user","content":[{"type":"text","text":"thanks"}]}
this line is broken
"#;
    assert!(window_conversation::detect(text));
    assert_eq!(formats::detect(text), Some(Format::WindowConversation));
    let recording = formats::read(text).unwrap();
    assert_eq!(recording.system.as_deref(), Some("Be brief."));
    assert_eq!(recording.messages.len(), 5);
    assert_eq!(recording.calls.len(), 2);
    assert_eq!(recording.calls[0].sent, 1);
    assert_eq!(recording.calls[1].sent, 3);
    assert_eq!(recording.tool_call_count(), 1);
    assert_eq!(recording.messages[1].tool_calls[0].args, r#"{"cmd":"ls"}"#);
    assert_eq!(recording.messages[4].content, "thanks");
    assert_eq!(
        recording.notes,
        ["1 line(s) that are not chat-completions messages skipped"]
    );
}

#[test]
fn window_conversation_with_only_a_system_prompt_is_a_bad_recording() {
    let text = "{\"role\":\"system\",\"content\":\"x\"}\n";
    assert!(window_conversation::detect(text));
    assert!(matches!(
        window_conversation::read(text),
        Err(EvalError::BadRecording {
            format: "window-conversation",
            ..
        })
    ));
}

// ---- detection ----

/// None of these four readers claims another reader's format, and each claims only its own.
#[test]
fn detection_claims_only_its_own_format() {
    let mut others: Vec<(String, String)> = vec![
        (
            "claude stream-json".into(),
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}"#.into(),
        ),
        (
            "codex rollout".into(),
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user"}}"#.into(),
        ),
        (
            "gemini chat".into(),
            r#"{"sessionId":"s","projectHash":"p","messages":[{"type":"user","content":"hi"}]}"#.into(),
        ),
        ("plain markdown".into(), "# Notes\n\nSome text.\n".into()),
        ("empty".into(), String::new()),
        ("json array".into(), "[{\"role\":\"user\"}]".into()),
    ];
    for native in [
        "claude-code-session.jsonl",
        "codex-rollout.jsonl",
        "gemini-cli-chat.jsonl",
    ] {
        others.push((native.into(), shared(&format!("native/{native}"))));
    }
    for path in shared_files("claude-stream-json", ".ndjson") {
        others.push((name(&path), std::fs::read_to_string(&path).unwrap()));
    }
    for (label, text) in &others {
        assert!(!specstory::detect(text), "specstory claimed {label}");
        assert_eq!(swe_agent::detect(text), None, "swe-agent claimed {label}");
        assert!(!panewise_log::detect(text), "panewise log claimed {label}");
        assert!(
            !window_conversation::detect(text),
            "conversation claimed {label}"
        );
    }

    let specstory_text =
        shared("specstory/keyframe-blogger__2025-07-11_00-01-50Z-we-re-going-to.md");
    let swe_text = shared("swe-agent/ctf__pwn__warmup.traj");
    let log_text = "{\"v\":3,\"header\":{\"agent_id\":\"a\"}}\n";
    let conversation_text = "{\"role\":\"user\",\"content\":\"hi\"}\n";
    let ours: [(&str, &str); 5] = [
        ("specstory", &specstory_text),
        ("swe-agent", &swe_text),
        ("mini", MINI),
        ("log", log_text),
        ("conversation", conversation_text),
    ];
    for (label, text) in ours {
        let claims = [
            specstory::detect(text),
            swe_agent::detect(text).is_some(),
            panewise_log::detect(text),
            window_conversation::detect(text),
        ];
        assert_eq!(
            claims.iter().filter(|claimed| **claimed).count(),
            1,
            "{label}: {claims:?}"
        );
    }
}

#[test]
fn readers_never_panic_on_junk() {
    let junk = [
        "",
        "{",
        "}",
        "```",
        "_**User**_",
        "_**Agent (x)**_\n<tool-use data-tool-name=\"",
        "_**Agent**_\nTool use: **",
        "_**Agent**_\n<think>\n```",
        "{\"history\": [1, \"x\", null, {\"role\": 5}]}",
        "{\"history\": [{\"role\":\"tool\",\"tool_call_ids\":[]}], \"trajectory\": [1]}",
        "{\"messages\": [{\"role\":\"assistant\",\"content\":\"```\\n```\"}]}",
        "{\"v\":3,\"transcript\":null}",
        "{\"v\":3,\"transcript\":{\"kind\":\"tool_call\"}}",
        "{\"role\":\"tool\"}",
        "é\u{feff}{\"role\":",
    ];
    for text in junk {
        let _ = specstory::read(text);
        let _ = swe_agent::read(text, Format::SweAgentTraj);
        let _ = swe_agent::read(text, Format::MiniSweAgentTraj);
        let _ = panewise_log::read(text);
        let _ = window_conversation::read(text);
        let _ = formats::read(text);
    }
}
