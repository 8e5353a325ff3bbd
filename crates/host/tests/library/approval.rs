//! The approval policy of the own tools: every mode × tool × where the target lies.

use panewise_host::approval::ApprovalMode;
use panewise_host::tools::approval::{decide, Decision};
use panewise_host::tools::{ToolCall, ToolName};
use serde_json::json;

/// A call of `tool` on `path` (`shell` runs a command naming it instead).
fn call_on(tool: ToolName, path: &str) -> ToolCall {
    let arguments = match tool {
        ToolName::Shell => json!({ "command": format!("cat {path}") }),
        ToolName::ReadFile | ToolName::ListDir => json!({ "path": path }),
        ToolName::WriteFile => json!({ "path": path, "content": "x" }),
        ToolName::EditFile => json!({ "path": path, "old_string": "a", "new_string": "b" }),
    };
    ToolCall::parse(tool.as_str(), &arguments).unwrap()
}

/// The targets, each with whether it is inside the working directory: plain and nested new
/// files inside; `..`, an absolute path elsewhere and a symlink out of the cwd outside.
const TARGETS: [(&str, bool); 8] = [
    ("inside.txt", true),
    ("new/dir/file.txt", true),
    ("sub/../inside.txt", true),
    ("../outside.txt", false),
    ("sub/../../outside.txt", false),
    ("/etc/hosts", false),
    ("link-out/file.txt", false),
    ("link-out/new/file.txt", false),
];

/// One row per mode and tool: the decision for a target inside the working directory, then
/// for one outside.
const TABLE: [(ApprovalMode, ToolName, &str, &str); 20] = [
    (ApprovalMode::ReadOnly, ToolName::ReadFile, "run", "run"),
    (ApprovalMode::ReadOnly, ToolName::ListDir, "run", "run"),
    (ApprovalMode::ReadOnly, ToolName::WriteFile, "deny", "deny"),
    (ApprovalMode::ReadOnly, ToolName::EditFile, "deny", "deny"),
    (ApprovalMode::ReadOnly, ToolName::Shell, "deny", "deny"),
    (ApprovalMode::Ask, ToolName::ReadFile, "run", "run"),
    (ApprovalMode::Ask, ToolName::ListDir, "run", "run"),
    (ApprovalMode::Ask, ToolName::WriteFile, "ask", "ask"),
    (ApprovalMode::Ask, ToolName::EditFile, "ask", "ask"),
    (ApprovalMode::Ask, ToolName::Shell, "ask", "ask"),
    (ApprovalMode::Auto, ToolName::ReadFile, "run", "run"),
    (ApprovalMode::Auto, ToolName::ListDir, "run", "run"),
    (ApprovalMode::Auto, ToolName::WriteFile, "run", "ask"),
    (ApprovalMode::Auto, ToolName::EditFile, "run", "ask"),
    (ApprovalMode::Auto, ToolName::Shell, "ask", "ask"),
    (ApprovalMode::FullAccess, ToolName::ReadFile, "run", "run"),
    (ApprovalMode::FullAccess, ToolName::ListDir, "run", "run"),
    (ApprovalMode::FullAccess, ToolName::WriteFile, "run", "run"),
    (ApprovalMode::FullAccess, ToolName::EditFile, "run", "run"),
    (ApprovalMode::FullAccess, ToolName::Shell, "run", "run"),
];

fn kind(decision: &Decision) -> &'static str {
    match decision {
        Decision::Run => "run",
        Decision::Ask => "ask",
        Decision::Deny { .. } => "deny",
    }
}

#[test]
fn every_mode_tool_and_target_is_decided_by_the_table() {
    let outside = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("cwd");
    std::fs::create_dir_all(cwd.join("sub")).unwrap();
    std::fs::write(cwd.join("inside.txt"), "a").unwrap();
    std::os::unix::fs::symlink(outside.path(), cwd.join("link-out")).unwrap();
    // Every mode and every tool has its row.
    for mode in [
        ApprovalMode::ReadOnly,
        ApprovalMode::Ask,
        ApprovalMode::Auto,
        ApprovalMode::FullAccess,
    ] {
        for tool in ToolName::ALL {
            let rows = TABLE.iter().filter(|row| row.0 == mode && row.1 == tool);
            assert_eq!(rows.count(), 1, "{mode:?} {tool}");
        }
    }
    for (mode, tool, when_inside, when_outside) in TABLE {
        for (path, inside) in TARGETS {
            let decision = decide(mode, &call_on(tool, path), &cwd);
            let expected = if inside { when_inside } else { when_outside };
            assert_eq!(kind(&decision), expected, "{} {tool} {path}", mode.name());
            if let Decision::Deny { reason } = decision {
                assert_eq!(
                    reason,
                    format!(
                        "denied by approval mode {}: {tool} may not run (only read_file and \
                         list_dir do)",
                        mode.name()
                    )
                );
            }
        }
    }
}

/// A cwd given through a symlink is the directory it leads to: its own files are inside.
#[test]
fn a_cwd_reached_through_a_symlink_keeps_its_files_inside() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("real")).unwrap();
    std::os::unix::fs::symlink(root.path().join("real"), root.path().join("alias")).unwrap();
    let cwd = root.path().join("alias");
    let write = call_on(ToolName::WriteFile, "file.txt");
    assert_eq!(decide(ApprovalMode::Auto, &write, &cwd), Decision::Run);
    let absolute = root.path().join("real/file.txt");
    let write = call_on(ToolName::WriteFile, &absolute.display().to_string());
    // Lexically outside `alias`, so it asks even though it is the same directory.
    assert_eq!(decide(ApprovalMode::Auto, &write, &cwd), Decision::Ask);
}
