//! Which tool calls fetch the same content again, and which calls change files in between: the
//! classification behind the re-fetch measure (rules in the parent module's docs).

use std::collections::BTreeMap;

use panewise_window::{Message, ToolCall};
use serde_json::Value;

use super::{argument_texts, is_path_like, strip_line_suffix, terms_of};

/// Per tool call (assistant message, position) that repeats earlier fetches: what it fetched,
/// shown, and the result messages of the earlier identical fetches made since the last change
/// that touched their content.
pub(super) type Repeats = BTreeMap<(usize, usize), (String, Vec<usize>)>;

/// What a fetch fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// A file read: its normalised path and line range (`a..b`, `a..end`, `whole`).
    Read { path: String, range: String },
    /// Any other tool: its name and arguments as normalised JSON.
    Other { name: String, args: String },
}

impl Key {
    fn same(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::Read { path, range }, Key::Read { path: p, range: r }) => {
                range == r && same_path(path, p)
            }
            (Key::Other { .. }, Key::Other { .. }) => self == other,
            _ => false,
        }
    }

    fn shown(&self) -> String {
        match self {
            Key::Read { path, range } => format!("read {path} {range}"),
            Key::Other { name, args } => {
                let shown = format!("{name} {args}");
                match shown.char_indices().nth(160) {
                    Some((end, _)) => format!("{}…", shown.get(..end).unwrap_or(&shown)),
                    None => shown,
                }
            }
        }
    }
}

/// Which files a change may have touched.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    /// The files named (normalised paths).
    Paths(Vec<String>),
    /// Any file: the change names none, or changes many (`git checkout`, a formatter).
    All,
}

impl Scope {
    fn touches(&self, key: &Key) -> bool {
        match (self, key) {
            (Scope::All, _) | (Scope::Paths(_), Key::Other { .. }) => true,
            (Scope::Paths(paths), Key::Read { path, .. }) => {
                paths.iter().any(|changed| same_path(changed, path))
            }
        }
    }
}

/// What one tool call does, for the re-fetch measure.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Act {
    Fetch(Key),
    Change(Scope),
    /// Neither: bookkeeping tools (plans, to-do lists, questions).
    Neither,
}

/// Every tool call of `messages` that fetches again what an earlier call fetched, with nothing
/// changed in between. `result_of` maps a call id to its result message.
pub(super) fn repeats(messages: &[Message], result_of: &BTreeMap<&str, usize>) -> Repeats {
    struct Fetch {
        key: Key,
        result: Option<usize>,
        seq: usize,
    }
    let mut fetches: Vec<Fetch> = Vec::new();
    let mut changes: Vec<(usize, Scope)> = Vec::new();
    let mut repeats = Repeats::new();
    let mut seq = 0usize;
    for (index, message) in messages.iter().enumerate() {
        for (position, call) in message.tool_calls.iter().enumerate() {
            seq += 1;
            let result = result_of.get(call.id.as_str()).copied();
            let output = result
                .and_then(|at| messages.get(at))
                .map(|m| m.content.as_str());
            match classify(call, output) {
                Act::Change(scope) => changes.push((seq, scope)),
                Act::Neither => {}
                Act::Fetch(key) => {
                    let earlier: Vec<usize> = fetches
                        .iter()
                        .filter(|fetch| fetch.key.same(&key))
                        .filter(|fetch| {
                            !changes
                                .iter()
                                .any(|(at, scope)| *at > fetch.seq && scope.touches(&key))
                        })
                        .filter_map(|fetch| fetch.result)
                        .collect();
                    if !earlier.is_empty() {
                        repeats.insert((index, position), (key.shown(), earlier));
                    }
                    fetches.push(Fetch { key, result, seq });
                }
            }
        }
    }
    repeats
}

const READ_TOOLS: &[&str] = &["read", "read_file", "readfile", "view", "view_file"];
const EDITOR_TOOLS: &[&str] = &[
    "str_replace_editor",
    "str_replace_based_edit_tool",
    "text_editor",
];
const EDIT_TOOLS: &[&str] = &[
    "edit",
    "multiedit",
    "write",
    "write_file",
    "edit_file",
    "create",
    "create_file",
    "notebookedit",
    "edit_notebook",
    "apply_patch",
    "replace",
    "insert",
    "append",
    "str_replace",
    "search_replace",
    "delete_file",
    "patch",
];
/// Sub-agents may change anything.
const AGENT_TOOLS: &[&str] = &["agent", "task", "agent_spawn"];
const BOOKKEEPING_TOOLS: &[&str] = &[
    "todowrite",
    "todo_write",
    "update_plan",
    "taskcreate",
    "taskupdate",
    "checklist_write",
    "askuserquestion",
    "exitplanmode",
    "submit",
];
/// Argument keys that hold the path of the file a tool reads or edits.
const PATH_KEYS: &[&str] = &[
    "file_path",
    "path",
    "absolute_path",
    "target_file",
    "filename",
    "file",
    "notebook_path",
];

fn classify(call: &ToolCall, output: Option<&str>) -> Act {
    let name = call.name.to_ascii_lowercase();
    let args: Option<Value> = serde_json::from_str(&call.args).ok();
    let field = |key: &str| args.as_ref().and_then(|a| a.get(key));
    if BOOKKEEPING_TOOLS.contains(&name.as_str()) {
        return Act::Neither;
    }
    if AGENT_TOOLS.contains(&name.as_str()) {
        return Act::Change(Scope::All);
    }
    let editor_view = EDITOR_TOOLS.contains(&name.as_str())
        && field("command").and_then(Value::as_str) == Some("view");
    if READ_TOOLS.contains(&name.as_str()) || editor_view {
        if let Some(path) = read_path(args.as_ref(), &call.args) {
            let range = range_of(args.as_ref())
                .or_else(|| output.and_then(numbered_range))
                .unwrap_or_else(|| "whole".into());
            return Act::Fetch(Key::Read { path, range });
        }
    }
    if EDITOR_TOOLS.contains(&name.as_str()) || EDIT_TOOLS.contains(&name.as_str()) {
        let mut paths: Vec<String> = PATH_KEYS
            .iter()
            .filter_map(|key| field(key).and_then(Value::as_str))
            .filter_map(normalize_path)
            .collect();
        if paths.is_empty() {
            paths = path_terms(&argument_texts(&call.args).join("\n"));
        }
        if let Some(output) = output {
            // SpecStory renders an edit by its output only: "The file /x/y.go has been updated".
            let head: String = output.chars().take(400).collect();
            paths.extend(path_terms(&head));
        }
        return Act::Change(if paths.is_empty() {
            Scope::All
        } else {
            Scope::Paths(paths)
        });
    }
    if let Some(command) = command_of(&name, args.as_ref()) {
        if let Some(scope) = shell_change(&command) {
            return Act::Change(scope);
        }
    }
    let args = match &args {
        Some(value) => value.to_string(),
        None => call.args.trim().to_string(),
    };
    Act::Fetch(Key::Other { name, args })
}

/// A read's path: a path key's value, else the first path in its arguments (SpecStory renders
/// `{"input": "`./pkg/x.go`"}`).
fn read_path(args: Option<&Value>, raw: &str) -> Option<String> {
    let keyed = PATH_KEYS.iter().find_map(|key| {
        args.and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .and_then(normalize_path)
    });
    keyed.or_else(|| {
        path_terms(&argument_texts(raw).join("\n"))
            .into_iter()
            .next()
    })
}

/// The line range the arguments ask for, when they ask for one.
fn range_of(args: Option<&Value>) -> Option<String> {
    let args = args?;
    let number = |key: &str| -> Option<i64> {
        match args.get(key)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    };
    if let Some(Value::Array(bounds)) = args.get("view_range") {
        let start = bounds.first().and_then(Value::as_i64)?;
        let end = bounds.get(1).and_then(Value::as_i64).unwrap_or(-1);
        return Some(bounds_shown(start, (end >= 0).then_some(end)));
    }
    let offset = number("offset").or_else(|| number("start_line"));
    let limit = number("limit");
    let end_line = number("end_line");
    if offset.is_none() && limit.is_none() && end_line.is_none() {
        return None;
    }
    let start = offset.unwrap_or(1).max(1);
    let end = match (limit, end_line) {
        (Some(limit), _) => Some(start.saturating_add(limit).saturating_sub(1)),
        (None, end) => end,
    };
    Some(bounds_shown(start, end))
}

fn bounds_shown(start: i64, end: Option<i64>) -> String {
    match end {
        Some(end) => format!("{start}..{end}"),
        None => format!("{start}..end"),
    }
}

/// The range a numbered read output shows (`   12→text` or `12\ttext` lines): its first and
/// last line numbers.
fn numbered_range(output: &str) -> Option<String> {
    let number = |line: &str| -> Option<i64> {
        let line = line.trim_start();
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        let rest = line.get(digits..)?;
        if digits == 0 || !(rest.starts_with('→') || rest.starts_with('\t')) {
            return None;
        }
        line.get(..digits)?.parse().ok()
    };
    let first = output.lines().find_map(number)?;
    let last = output.lines().rev().find_map(number)?;
    Some(bounds_shown(first, Some(last)))
}

/// A path as written, normalised: quotes and backticks around it, `./`, repeated and trailing
/// `/` and a `:line` suffix dropped.
pub(super) fn normalize_path(raw: &str) -> Option<String> {
    let trimmed = raw.trim().trim_matches(['`', '"', '\'']).trim();
    let mut path = strip_line_suffix(trimmed);
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    let path = path.trim_end_matches('/');
    if path.is_empty() || path.contains(char::is_whitespace) {
        return None;
    }
    let mut normalized = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && normalized.ends_with('/') {
            continue;
        }
        normalized.push(c);
    }
    Some(normalized)
}

/// The path-like terms of a text, in order of first appearance.
fn path_terms(text: &str) -> Vec<String> {
    let terms = terms_of(text);
    let mut found: Vec<(usize, String)> = terms
        .into_iter()
        .filter(|term| is_path_like(term))
        .map(|term| (text.find(term.as_str()).unwrap_or(usize::MAX), term))
        .collect();
    found.sort();
    // A path's file name, given as a term of its own too, adds nothing.
    let all: Vec<String> = found.iter().map(|(_, term)| term.clone()).collect();
    found
        .into_iter()
        .map(|(_, term)| term)
        .filter(|term| {
            term.contains('/') || !all.iter().any(|other| other.ends_with(&format!("/{term}")))
        })
        .collect()
}

/// Two normalised paths name the same file: equal, or one relative and the other ending with
/// it (the same file under the working directory).
pub(super) fn same_path(a: &str, b: &str) -> bool {
    let under = |long: &str, short: &str| {
        !short.starts_with('/')
            && long.len() > short.len()
            && long.ends_with(short)
            && long.as_bytes().get(long.len() - short.len() - 1) == Some(&b'/')
    };
    a == b || under(a, b) || under(b, a)
}

/// Tools that run a shell command line.
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "exec_command",
    "shell_command",
    "run_shell_command",
    "run_terminal_cmd",
    "execute_command",
    "run_command",
    "local_shell",
];

/// A shell call's command line (`command` or `cmd`, a string or a list of words; for a shell
/// tool SpecStory rendered, its `input`, description and command together).
fn command_of(name: &str, args: Option<&Value>) -> Option<String> {
    let args = args?;
    let value = args
        .get("command")
        .or_else(|| args.get("cmd"))
        .or_else(|| {
            SHELL_TOOLS
                .contains(&name)
                .then(|| args.get("input"))
                .flatten()
        })?;
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(words) => Some(
            words
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// Programs that rewrite files they are given.
const PATH_WRITERS: &[&str] = &["tee", "mv", "cp", "rm", "touch", "truncate", "ln", "dd"];
/// Programs (or first words) that may rewrite any file.
const BROAD_WRITERS: &[&str] = &[
    "patch",
    "apply_patch",
    "gofmt",
    "goimports",
    "rustfmt",
    "black",
    "isort",
    "autopep8",
    "prettier",
    "edit",
    "create",
    "str_replace_editor",
];
/// `git` subcommands that change the work tree.
const GIT_WRITERS: &[&str] = &[
    "checkout",
    "restore",
    "reset",
    "stash",
    "pull",
    "merge",
    "rebase",
    "cherry-pick",
    "revert",
    "apply",
    "am",
    "switch",
    "clean",
    "mv",
    "rm",
];

/// The files a shell command line may change, or `None` when it changes none.
fn shell_change(command: &str) -> Option<Scope> {
    let words: Vec<&str> = command
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')'))
        .filter(|word| !word.is_empty())
        .map(|word| word.trim_matches(['"', '\'', '`']))
        .collect();
    let has = |word: &str| words.contains(&word);
    let mut broad = words.iter().any(|word| BROAD_WRITERS.contains(word));
    broad |= words.windows(2).any(|pair| match pair {
        [first, second] => {
            (*first == "git" && GIT_WRITERS.contains(second))
                || (matches!(*first, "cargo" | "go") && matches!(*second, "fmt" | "fix"))
                || (matches!(*first, "npm" | "yarn" | "pnpm") && *second == "install")
                || (*first == "ruff" && *second == "format")
        }
        _ => false,
    });
    broad |= words
        .iter()
        .any(|word| matches!(*word, "--fix" | "--write"));
    if broad {
        return Some(Scope::All);
    }
    let in_place = (has("sed") || has("perl") || has("ruby"))
        && words
            .iter()
            .any(|word| word.starts_with("-i") || word.starts_with("-pi") || *word == "--in-place");
    let writes =
        in_place || words.iter().any(|word| PATH_WRITERS.contains(word)) || redirects(command);
    if !writes {
        return None;
    }
    let paths: Vec<String> = words
        .iter()
        .filter(|word| is_path_like(word) && **word != "/dev/null")
        .filter_map(|word| normalize_path(word))
        .collect();
    Some(if paths.is_empty() {
        Scope::All
    } else {
        Scope::Paths(paths)
    })
}

/// Whether a command line redirects output into a file (`>`, `>>`; not `2>&1`, `->`, `=>`,
/// `>=` or into `/dev/null`).
fn redirects(command: &str) -> bool {
    let bytes = command.as_bytes();
    bytes.iter().enumerate().any(|(at, byte)| {
        if *byte != b'>' {
            return false;
        }
        let before = at.checked_sub(1).and_then(|b| bytes.get(b)).copied();
        let after = bytes.get(at + 1).copied();
        if before
            .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'&' | b'-' | b'=' | b'<' | b'>'))
            || after.is_some_and(|a| matches!(a, b'&' | b'='))
        {
            return false;
        }
        let target = command
            .get(at + 1..)
            .unwrap_or("")
            .trim_start_matches(['>', ' ']);
        !target.starts_with("/dev/null")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: name.into(),
            args: args.into(),
        }
    }

    #[test]
    fn calls_are_classified() {
        let read = |path: &str, range: &str| {
            Act::Fetch(Key::Read {
                path: path.into(),
                range: range.into(),
            })
        };
        let cases: Vec<(ToolCall, Option<&str>, Act)> = vec![
            (
                call("Read", r#"{"file_path":"./a/b.rs"}"#),
                None,
                read("a/b.rs", "whole"),
            ),
            (
                call("Read", r#"{"file_path":"a/b.rs","offset":10,"limit":5}"#),
                None,
                read("a/b.rs", "10..14"),
            ),
            (
                call("Read", r#"{"input":"`./pkg/x.go`"}"#),
                Some("     3→a\n     4→b"),
                read("pkg/x.go", "3..4"),
            ),
            (
                call(
                    "str_replace_editor",
                    r#"{"command":"view","path":"/r/x.py","view_range":[5,-1]}"#,
                ),
                None,
                read("/r/x.py", "5..end"),
            ),
            (
                call("Edit", "{}"),
                Some("The file /r/pkg/x.go has been updated."),
                Act::Change(Scope::Paths(vec!["/r/pkg/x.go".into()])),
            ),
            (
                call("Bash", r#"{"command":"sed -i 's/a/b/' src/x.rs"}"#),
                None,
                // The sed script looks like a path too: a wider scope only makes more re-reads
                // legitimate.
                Act::Change(Scope::Paths(vec!["s/a/b".into(), "src/x.rs".into()])),
            ),
            (
                call("Bash", r#"{"command":"git checkout main"}"#),
                None,
                Act::Change(Scope::All),
            ),
            (
                call("Bash", r#"{"command":"cargo test 2>&1 | tail -5"}"#),
                None,
                Act::Fetch(Key::Other {
                    name: "bash".into(),
                    args: r#"{"command":"cargo test 2>&1 | tail -5"}"#.into(),
                }),
            ),
            (
                call(
                    "Bash",
                    r#"{"input":"Fix it\n\n`sed -i '' 's/a/b/' pkg/x.go`"}"#,
                ),
                None,
                Act::Change(Scope::Paths(vec!["s/a/b".into(), "pkg/x.go".into()])),
            ),
            (call("TodoWrite", "{}"), None, Act::Neither),
        ];
        for (call, output, expected) in cases {
            assert_eq!(classify(&call, output), expected, "{call:?}");
        }
    }

    #[test]
    fn paths_match_under_the_working_directory() {
        assert!(same_path("/home/me/repo/pkg/x.go", "pkg/x.go"));
        assert!(same_path("pkg/x.go", "pkg/x.go"));
        assert!(!same_path("/home/me/repo/pkg/x.go", "/other/pkg/x.go"));
        assert!(!same_path("/home/me/repo/apkg/x.go", "pkg/x.go"));
    }
}
