//! The one approval policy: every mode × own tool × where the target lies, the supervised
//! agents' file edits by the same check, the check itself against a model of the truth over
//! random trees of symlinks and hard links, and the writes that change under the check.

use std::path::{Path, PathBuf};

use panewise_host::approval::{agent_edit_paths, decide_in, ApprovalMode, Decision, ToolRequest};
use panewise_host::error::WriteRefusal;
use panewise_host::tools::paths::{check_write, is_inside, open_for_write, OpenFor};
use panewise_host::tools::{self, ToolCall, ToolContext, ToolName};
use serde_json::{json, Value};

const MODES: [ApprovalMode; 4] = [
    ApprovalMode::ReadOnly,
    ApprovalMode::Ask,
    ApprovalMode::Auto,
    ApprovalMode::FullAccess,
];

/// A call of `tool` on `path` (`shell` runs a command naming it instead).
fn call_on(tool: ToolName, path: &str) -> ToolCall {
    let arguments = match tool {
        ToolName::Shell => json!({ "command": format!("cat {path}") }),
        ToolName::ReadFile | ToolName::ListDir => json!({ "path": path }),
        ToolName::WriteFile => json!({ "path": path, "content": "x" }),
        ToolName::EditFile => json!({ "path": path, "old_string": "a", "new_string": "b" }),
        // `recall` reads the session's archive, never a path: the query names one.
        ToolName::Recall => json!({ "query": path }),
        // Not in `ToolName::ALL`: the own loop's catalog parses these (tool_catalog's tests).
        ToolName::Mcp | ToolName::ToolSearch => json!({}),
        // `ask_user` reads the person: the question names it.
        ToolName::AskUser => json!({ "question": format!("may I read {path}?") }),
    };
    ToolCall::parse(tool.as_str(), &arguments).unwrap()
}

fn own(mode: ApprovalMode, call: &ToolCall, cwd: &Path) -> Decision {
    decide_in(mode, &ToolRequest::Own(call), cwd)
}

fn kind(decision: &Decision) -> &'static str {
    match decision {
        Decision::Run => "run",
        Decision::Ask => "ask",
        Decision::Deny { .. } => "deny",
    }
}

/// Where a target lies for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Inside the working directory, by the one check.
    Inside,
    /// Outside it, named as outside.
    Outside,
    /// Refused by the check (it leads out through a symlink, a dangling symlink, a hard link).
    Refused,
}

/// A working directory beside an outside one, with every kind of target:
/// `cwd/{inside.txt, sub/, hard.txt (linked from outside), link-out -> outside,
/// link-in -> sub, dangling -> outside/new.txt}`.
struct Tree {
    _root: tempfile::TempDir,
    cwd: PathBuf,
    outside: PathBuf,
}

impl Tree {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        let cwd = base.join("cwd");
        let outside = base.join("outside");
        std::fs::create_dir_all(cwd.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(cwd.join("inside.txt"), "a").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        std::fs::hard_link(outside.join("secret.txt"), cwd.join("hard.txt")).unwrap();
        std::os::unix::fs::symlink(&outside, cwd.join("link-out")).unwrap();
        std::os::unix::fs::symlink("sub", cwd.join("link-in")).unwrap();
        std::os::unix::fs::symlink("../outside/new.txt", cwd.join("dangling")).unwrap();
        Self {
            _root: root,
            cwd,
            outside,
        }
    }

    fn targets(&self) -> Vec<(String, Place)> {
        let mut targets: Vec<(String, Place)> = [
            ("inside.txt", Place::Inside),
            ("new/dir/file.txt", Place::Inside),
            ("sub/../inside.txt", Place::Inside),
            ("link-in/file.txt", Place::Inside),
            ("../outside.txt", Place::Outside),
            ("sub/../../outside.txt", Place::Outside),
            ("link-out/file.txt", Place::Refused),
            ("link-out/new/file.txt", Place::Refused),
            ("dangling", Place::Refused),
            ("hard.txt", Place::Refused),
        ]
        .into_iter()
        .map(|(path, place)| (path.to_owned(), place))
        .collect();
        targets.push((
            self.cwd.join("inside.txt").display().to_string(),
            Place::Inside,
        ));
        targets.push((
            self.outside.join("other.txt").display().to_string(),
            Place::Outside,
        ));
        targets
    }
}

/// One row per mode and own tool: the decision for a target inside the working directory,
/// one outside it, and one the check refuses.
const TABLE: [(ApprovalMode, ToolName, &str, &str, &str); 28] = [
    // `ask_user` changes nothing and asks the person anyway: it runs in every mode.
    (
        ApprovalMode::ReadOnly,
        ToolName::AskUser,
        "run",
        "run",
        "run",
    ),
    (ApprovalMode::Ask, ToolName::AskUser, "run", "run", "run"),
    (ApprovalMode::Auto, ToolName::AskUser, "run", "run", "run"),
    (
        ApprovalMode::FullAccess,
        ToolName::AskUser,
        "run",
        "run",
        "run",
    ),
    // `recall` only reads, as `read_file` does (W76): it runs in every mode.
    (
        ApprovalMode::ReadOnly,
        ToolName::Recall,
        "run",
        "run",
        "run",
    ),
    (ApprovalMode::Ask, ToolName::Recall, "run", "run", "run"),
    (ApprovalMode::Auto, ToolName::Recall, "run", "run", "run"),
    (
        ApprovalMode::FullAccess,
        ToolName::Recall,
        "run",
        "run",
        "run",
    ),
    (
        ApprovalMode::ReadOnly,
        ToolName::ReadFile,
        "run",
        "run",
        "run",
    ),
    (
        ApprovalMode::ReadOnly,
        ToolName::ListDir,
        "run",
        "run",
        "run",
    ),
    (
        ApprovalMode::ReadOnly,
        ToolName::WriteFile,
        "deny",
        "deny",
        "deny",
    ),
    (
        ApprovalMode::ReadOnly,
        ToolName::EditFile,
        "deny",
        "deny",
        "deny",
    ),
    (
        ApprovalMode::ReadOnly,
        ToolName::Shell,
        "deny",
        "deny",
        "deny",
    ),
    (ApprovalMode::Ask, ToolName::ReadFile, "run", "run", "run"),
    (ApprovalMode::Ask, ToolName::ListDir, "run", "run", "run"),
    (ApprovalMode::Ask, ToolName::WriteFile, "ask", "ask", "deny"),
    (ApprovalMode::Ask, ToolName::EditFile, "ask", "ask", "deny"),
    (ApprovalMode::Ask, ToolName::Shell, "ask", "ask", "ask"),
    (ApprovalMode::Auto, ToolName::ReadFile, "run", "run", "run"),
    (ApprovalMode::Auto, ToolName::ListDir, "run", "run", "run"),
    (
        ApprovalMode::Auto,
        ToolName::WriteFile,
        "run",
        "ask",
        "deny",
    ),
    (ApprovalMode::Auto, ToolName::EditFile, "run", "ask", "deny"),
    (ApprovalMode::Auto, ToolName::Shell, "ask", "ask", "ask"),
    (
        ApprovalMode::FullAccess,
        ToolName::ReadFile,
        "run",
        "run",
        "run",
    ),
    (
        ApprovalMode::FullAccess,
        ToolName::ListDir,
        "run",
        "run",
        "run",
    ),
    (
        ApprovalMode::FullAccess,
        ToolName::WriteFile,
        "run",
        "run",
        "deny",
    ),
    (
        ApprovalMode::FullAccess,
        ToolName::EditFile,
        "run",
        "run",
        "deny",
    ),
    (
        ApprovalMode::FullAccess,
        ToolName::Shell,
        "run",
        "run",
        "run",
    ),
];

#[test]
fn every_mode_tool_and_target_is_decided_by_the_table() {
    let tree = Tree::new();
    for mode in MODES {
        for tool in ToolName::ALL {
            let rows = TABLE.iter().filter(|row| row.0 == mode && row.1 == tool);
            assert_eq!(rows.count(), 1, "{mode:?} {tool}");
        }
    }
    for (mode, tool, when_inside, when_outside, when_refused) in TABLE {
        for (path, place) in tree.targets() {
            let decision = own(mode, &call_on(tool, &path), &tree.cwd);
            let expected = match place {
                Place::Inside => when_inside,
                Place::Outside => when_outside,
                Place::Refused => when_refused,
            };
            assert_eq!(kind(&decision), expected, "{} {tool} {path}", mode.name());
            let Decision::Deny { reason } = decision else {
                continue;
            };
            if mode == ApprovalMode::ReadOnly {
                assert_eq!(
                    reason,
                    format!(
                        "denied by approval mode read-only: {tool} may not run (only read_file, \
                         list_dir, recall and MCP tools annotated read-only do)"
                    )
                );
            } else {
                assert!(
                    reason.starts_with(&format!("{tool} refuses this path: ")),
                    "{reason}"
                );
            }
        }
    }
}

#[test]
fn a_refusal_says_why_the_path_is_refused() {
    let tree = Tree::new();
    let cwd = &tree.cwd;
    let outside = &tree.outside;
    let cases = [
        (
            "dangling",
            format!(
                "{} goes through the symlink {} (to ../outside/new.txt), whose target does not \
                 exist; a write through it would create the file wherever the link points, so \
                 write to the target itself",
                cwd.join("dangling").display(),
                cwd.join("dangling").display()
            ),
        ),
        (
            "hard.txt",
            format!(
                "{} has 2 hard links: its other names may be outside the working directory, and \
                 a write through one name changes the file under all of them",
                cwd.join("hard.txt").display()
            ),
        ),
        (
            "link-out/file.txt",
            format!(
                "{} is inside the working directory but leads outside it, to {}, through a \
                 symlink; name {} itself to write there",
                cwd.join("link-out/file.txt").display(),
                outside.join("file.txt").display(),
                outside.join("file.txt").display()
            ),
        ),
        (
            "sub",
            format!(
                "{} is a directory, not a regular file",
                cwd.join("sub").display()
            ),
        ),
        (
            "inside.txt/x",
            format!(
                "{} cannot be written: {} is not a directory",
                cwd.join("inside.txt/x").display(),
                cwd.join("inside.txt").display()
            ),
        ),
    ];
    // A link whose target ends in `/.` needs a directory there, as the kernel does.
    std::os::unix::fs::symlink("inside.txt/.", cwd.join("file-as-dir")).unwrap();
    let refusal = check_write(cwd, "file-as-dir").unwrap_err();
    assert_eq!(
        refusal.to_string(),
        format!(
            "{} cannot be written: {} is not a directory",
            cwd.join("file-as-dir").display(),
            cwd.join("inside.txt").display()
        )
    );
    for (path, expected) in cases {
        let refusal = check_write(cwd, path).unwrap_err();
        assert_eq!(refusal.to_string(), expected, "{path}");
    }
}

/// A cwd given through a symlink is the directory it leads to: its own files are inside,
/// named through the alias or by their real path.
#[test]
fn a_cwd_reached_through_a_symlink_keeps_its_files_inside() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("real")).unwrap();
    std::os::unix::fs::symlink(root.path().join("real"), root.path().join("alias")).unwrap();
    let cwd = root.path().join("alias");
    for path in [
        "file.txt".to_owned(),
        root.path().join("real/file.txt").display().to_string(),
    ] {
        let write = call_on(ToolName::WriteFile, &path);
        assert_eq!(
            own(ApprovalMode::Auto, &write, &cwd),
            Decision::Run,
            "{path}"
        );
    }
}

/// A supervised agent's request as the agent sends it: `tool` editing `paths`.
fn agent_edit(tool: &str, paths: &[&str]) -> Value {
    match tool {
        "Write" => json!({ "file_path": paths[0], "content": "x" }),
        "Edit" => json!({ "file_path": paths[0], "old_string": "a", "new_string": "b" }),
        "MultiEdit" => json!({ "file_path": paths[0], "edits": [] }),
        "NotebookEdit" => json!({ "notebook_path": paths[0], "new_source": "x" }),
        "file_change" => json!({
            "threadId": "t", "turnId": "u", "itemId": "i",
            "changes": paths.iter().map(|path| json!({ "path": path, "kind": "update" })).collect::<Vec<_>>(),
        }),
        "edit" => json!({
            "sessionId": "s",
            "toolCall": {
                "toolCallId": "c", "kind": "edit",
                "locations": paths.iter().map(|path| json!({ "path": path })).collect::<Vec<_>>(),
            },
        }),
        other => panic!("no request shape for {other}"),
    }
}

const AGENT_EDITS: [&str; 6] = [
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "file_change",
    "edit",
];

#[test]
fn an_agents_file_edits_are_decided_by_the_same_check() {
    let tree = Tree::new();
    for mode in MODES {
        for tool in AGENT_EDITS {
            for (path, place) in tree.targets() {
                let input = agent_edit(tool, &[&path]);
                let decision = decide_in(
                    mode,
                    &ToolRequest::Agent {
                        tool,
                        input: &input,
                    },
                    &tree.cwd,
                );
                let expected = match (mode, place) {
                    (ApprovalMode::ReadOnly, _) => "deny",
                    (ApprovalMode::FullAccess, _) => "run",
                    (ApprovalMode::Auto, Place::Inside) => "run",
                    // The agent writes by itself: a path the check refuses is the person's call.
                    (ApprovalMode::Auto | ApprovalMode::Ask, _) => "ask",
                };
                assert_eq!(kind(&decision), expected, "{} {tool} {path}", mode.name());
            }
        }
        // Anything but a file edit is asked in `auto`, whatever it names.
        let command = json!({ "command": "ls", "file_path": "inside.txt" });
        let decision = decide_in(
            mode,
            &ToolRequest::Agent {
                tool: "Bash",
                input: &command,
            },
            &tree.cwd,
        );
        let expected = match mode {
            ApprovalMode::ReadOnly => "deny",
            ApprovalMode::Ask | ApprovalMode::Auto => "ask",
            ApprovalMode::FullAccess => "run",
        };
        assert_eq!(kind(&decision), expected, "{} Bash", mode.name());
    }
}

#[test]
fn auto_runs_an_agents_edit_only_when_every_path_is_inside() {
    let tree = Tree::new();
    let outside = tree.outside.join("x.txt").display().to_string();
    let auto = |tool: &str, input: &Value| {
        kind(&decide_in(
            ApprovalMode::Auto,
            &ToolRequest::Agent { tool, input },
            &tree.cwd,
        ))
    };
    for tool in ["file_change", "edit"] {
        assert_eq!(
            auto(tool, &agent_edit(tool, &["inside.txt", "sub/new.txt"])),
            "run",
            "{tool}"
        );
        assert_eq!(
            auto(tool, &agent_edit(tool, &["inside.txt", &outside])),
            "ask",
            "{tool}"
        );
        assert_eq!(
            auto(tool, &agent_edit(tool, &["inside.txt", "dangling"])),
            "ask",
            "{tool}"
        );
    }
    // Codex's own request names the item, not the files: nothing to check, so it asks.
    let codex = json!({ "threadId": "t", "turnId": "u", "itemId": "i", "reason": null });
    assert_eq!(auto("file_change", &codex), "ask");
    assert_eq!(agent_edit_paths("file_change", &codex), Some(Vec::new()));
    // A root asked for the rest of the session is a directory, never an edit inside.
    let grant = json!({ "itemId": "i", "grantRoot": tree.cwd.display().to_string() });
    assert_eq!(auto("file_change", &grant), "ask");
    // An ACP edit's diff names its file too: an inside location does not hide it.
    let acp = json!({ "toolCall": {
        "kind": "edit",
        "locations": [{ "path": "inside.txt" }],
        "content": [{ "type": "diff", "path": outside, "oldText": "a", "newText": "b" }],
    }});
    assert_eq!(auto("edit", &acp), "ask");
    // Claude Code's request without its path, or with a path that is not a string.
    assert_eq!(auto("Write", &json!({ "content": "x" })), "ask");
    assert_eq!(auto("Edit", &json!({ "file_path": 3 })), "ask");
    // Not an edit at all.
    assert_eq!(agent_edit_paths("Bash", &json!({ "command": "ls" })), None);
}

/// The dangling symlink a cloned repository can carry: `auto` would have run the write,
/// and the old check followed the link out of the tree. Now it is refused at decision time
/// and, given to the tool directly, at write time.
#[tokio::test]
async fn a_write_through_a_dangling_symlink_creates_nothing_outside() {
    let tree = Tree::new();
    let write = call_on(ToolName::WriteFile, "dangling");
    assert_eq!(kind(&own(ApprovalMode::Auto, &write, &tree.cwd)), "deny");
    let outcome = tools::run(&write, &ToolContext::new(&tree.cwd)).await;
    assert!(outcome.is_error, "{outcome:?}");
    assert!(!tree.outside.join("new.txt").exists());
    // A hard link to a file outside: refused, and the outside file unchanged.
    let edit = ToolCall::parse(
        "edit_file",
        &json!({ "path": "hard.txt", "old_string": "secret", "new_string": "owned" }),
    )
    .unwrap();
    let outcome = tools::run(&edit, &ToolContext::new(&tree.cwd)).await;
    assert!(outcome.content.contains("has 2 hard links"), "{outcome:?}");
    let write = call_on(ToolName::WriteFile, "hard.txt");
    let outcome = tools::run(&write, &ToolContext::new(&tree.cwd)).await;
    assert!(outcome.is_error, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(tree.outside.join("secret.txt")).unwrap(),
        "secret"
    );
}

/// What replaces a file inside after its write was decided.
#[derive(Debug, Clone, Copy)]
enum Swap {
    SymlinkToAnOutsideFile,
    DanglingSymlinkOut,
    HardLinkOfAnOutsideFile,
}

impl Swap {
    fn apply(self, tree: &Tree, victim: &Path) {
        match self {
            Swap::SymlinkToAnOutsideFile => {
                std::fs::remove_file(victim).unwrap();
                std::os::unix::fs::symlink(tree.outside.join("secret.txt"), victim).unwrap();
            }
            Swap::DanglingSymlinkOut => {
                std::fs::remove_file(victim).unwrap();
                std::os::unix::fs::symlink(tree.outside.join("created.txt"), victim).unwrap();
            }
            Swap::HardLinkOfAnOutsideFile => {
                let staged = tree.cwd.join("staged");
                std::fs::hard_link(tree.outside.join("secret.txt"), &staged).unwrap();
                std::fs::rename(&staged, victim).unwrap();
            }
        }
    }
}

/// The race: the call is decided on a plain file inside, then the file is swapped for a
/// symlink out of the tree (or a hard link of a file outside, or its directory for a
/// symlink) before the write. The write refuses; nothing outside changes.
#[tokio::test]
async fn a_link_swapped_in_between_the_decision_and_the_write_is_refused() {
    let tree = Tree::new();
    let victim = tree.cwd.join("inside.txt");
    let context = ToolContext::new(&tree.cwd);
    for swap in [
        Swap::SymlinkToAnOutsideFile,
        Swap::DanglingSymlinkOut,
        Swap::HardLinkOfAnOutsideFile,
    ] {
        let make_swap = || swap.apply(&tree, &victim);
        for tool in [ToolName::WriteFile, ToolName::EditFile] {
            std::fs::remove_file(&victim).ok();
            std::fs::write(&victim, "a").unwrap();
            let call = call_on(tool, "inside.txt");
            assert_eq!(own(ApprovalMode::Auto, &call, &tree.cwd), Decision::Run);
            // Decided by the check; now the swap, then the write, through the tool...
            make_swap();
            let outcome = tools::run(&call, &context).await;
            assert!(outcome.is_error, "{swap:?} {tool}: {outcome:?}");
            assert_eq!(
                std::fs::read_to_string(tree.outside.join("secret.txt")).unwrap(),
                "secret",
                "{swap:?} {tool}"
            );
            assert!(
                !tree.outside.join("created.txt").exists(),
                "{swap:?} {tool}"
            );
        }
        // ...and between the write's own check and its open: the open refuses.
        std::fs::remove_file(&victim).ok();
        std::fs::write(&victim, "a").unwrap();
        let target = check_write(&tree.cwd, "inside.txt").unwrap();
        assert!(target.inside);
        make_swap();
        for purpose in [OpenFor::Replace, OpenFor::Edit] {
            let refusal = open_for_write(&target, purpose).unwrap_err();
            assert!(
                matches!(
                    refusal,
                    WriteRefusal::Changed { .. } | WriteRefusal::HardLinked { .. }
                ),
                "{swap:?} {purpose:?}: {refusal}"
            );
        }
        assert!(!tree.outside.join("created.txt").exists(), "{swap:?}");
    }
    // A directory on the way swapped for a symlink out of the tree after the check.
    let target = check_write(&tree.cwd, "sub/new.txt").unwrap();
    std::fs::rename(tree.cwd.join("sub"), tree.cwd.join("sub-moved")).unwrap();
    std::os::unix::fs::symlink(&tree.outside, tree.cwd.join("sub")).unwrap();
    let refusal = open_for_write(&target, OpenFor::Replace).unwrap_err();
    assert!(matches!(refusal, WriteRefusal::Changed { .. }), "{refusal}");
    assert!(!tree.outside.join("new.txt").exists());
}

/// The truth the check must agree with, found another way: the canonical path of the
/// nearest ancestor that `canonicalize` resolves, plus the components after it; refused when
/// the first of those exists in some form (a dangling link, a loop) or the ancestor is not a
/// directory, when a path written inside leads outside, and when what it leads to is not a
/// regular file or (for a write held to the tree) has other links.
fn model(cwd: &Path, path: &str) -> Option<(PathBuf, bool)> {
    use std::os::unix::fs::MetadataExt;
    let written = tools::paths::resolve(cwd, path);
    let real_cwd = std::fs::canonicalize(cwd).unwrap();
    let mut ancestor = written.clone();
    let mut rest = Vec::new();
    let canonical = loop {
        match std::fs::canonicalize(&ancestor) {
            Ok(canonical) => break canonical,
            Err(_) => {
                rest.push(ancestor.file_name()?.to_owned());
                ancestor.pop();
            }
        }
    };
    if let Some(first) = rest.last() {
        if std::fs::symlink_metadata(ancestor.join(first)).is_ok() || !canonical.is_dir() {
            return None;
        }
    }
    let real = rest
        .iter()
        .rev()
        .fold(canonical, |real, part| real.join(part));
    let written_inside = written.starts_with(cwd) || written.starts_with(&real_cwd);
    let inside = real.starts_with(&real_cwd);
    if written_inside && !inside {
        return None;
    }
    if let Ok(metadata) = std::fs::symlink_metadata(&real) {
        if !metadata.is_file() || ((written_inside || inside) && metadata.nlink() > 1) {
            return None;
        }
    }
    Some((real, inside))
}

mod random_trees {
    use proptest::prelude::*;

    use super::*;

    /// What one entry of a random tree is.
    #[derive(Debug, Clone)]
    enum Entry {
        Dir,
        File,
        /// A hard link of the entry at this index (when it is a file).
        HardLink(usize),
        /// A symlink with this target (relative, or absolute under the root).
        Symlink(String),
    }

    /// One entry: in the working directory or beside it, its path, what it is.
    type Spec = (bool, Vec<&'static str>, Entry);

    const NAMES: [&str; 3] = ["a", "b", "c"];

    fn component() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            4 => proptest::sample::select(&NAMES[..]),
            1 => Just("zz"),
            2 => Just(".."),
            1 => Just("."),
        ]
    }

    fn relative() -> impl Strategy<Value = String> {
        proptest::collection::vec(component(), 1..5).prop_map(|parts| parts.join("/"))
    }

    /// A path or link target: relative, or absolute into the cwd or the outside directory
    /// (`@cwd/`, `@out/` stand for them until the tree's root is known).
    fn target() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => relative(),
            1 => relative().prop_map(|path| format!("@cwd/{path}")),
            1 => relative().prop_map(|path| format!("@out/{path}")),
        ]
    }

    fn entry() -> impl Strategy<Value = Spec> {
        let kind = prop_oneof![
            2 => Just(Entry::Dir),
            2 => Just(Entry::File),
            1 => (0usize..12).prop_map(Entry::HardLink),
            3 => target().prop_map(Entry::Symlink),
        ];
        (
            any::<bool>(),
            proptest::collection::vec(proptest::sample::select(&NAMES[..]), 1..4),
            kind,
        )
    }

    fn expand(text: &str, cwd: &Path, out: &Path) -> String {
        text.replace("@cwd", &cwd.display().to_string())
            .replace("@out", &out.display().to_string())
    }

    /// Builds what it can of `specs` (an entry whose parent is not a directory is skipped:
    /// the tree is whatever exists).
    fn build(specs: &[Spec], cwd: &Path, out: &Path) {
        let mut files = Vec::new();
        for (in_cwd, parts, entry) in specs {
            let path = if *in_cwd { cwd } else { out }.join(parts.join("/"));
            if std::fs::symlink_metadata(&path).is_ok() {
                continue;
            }
            if let Some(parent) = path.parent() {
                if std::fs::create_dir_all(parent).is_err() {
                    continue;
                }
            }
            let made = match entry {
                Entry::Dir => std::fs::create_dir(&path).is_ok(),
                Entry::File => std::fs::write(&path, "x").is_ok(),
                Entry::HardLink(index) => match files.get(index % files.len().max(1)) {
                    Some(original) => std::fs::hard_link(original, &path).is_ok(),
                    None => std::fs::write(&path, "x").is_ok(),
                },
                Entry::Symlink(target) => {
                    std::os::unix::fs::symlink(expand(target, cwd, out), &path).is_ok()
                }
            };
            if made && matches!(entry, Entry::File) {
                files.push(path);
            }
        }
    }

    proptest! {
        #[test]
        fn the_check_agrees_with_the_model_of_the_truth(
            specs in proptest::collection::vec(entry(), 0..14),
            queries in proptest::collection::vec(target(), 1..12),
        ) {
            let root = tempfile::tempdir().unwrap();
            let base = std::fs::canonicalize(root.path()).unwrap();
            let cwd = base.join("w/cwd");
            let out = base.join("w/out");
            std::fs::create_dir_all(&cwd).unwrap();
            std::fs::create_dir_all(&out).unwrap();
            build(&specs, &cwd, &out);
            for query in &queries {
                let query = expand(query, &cwd, &out);
                let checked = check_write(&cwd, &query)
                    .map(|target| (target.real, target.inside))
                    .ok();
                prop_assert_eq!(&checked, &model(&cwd, &query), "{} in {:?}", query, specs);
                prop_assert_eq!(
                    is_inside(&cwd, &query),
                    checked.is_some_and(|(_, inside)| inside)
                );
            }
        }
    }
}
