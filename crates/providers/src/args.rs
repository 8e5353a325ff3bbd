//! Picking the one argument of a tool call worth showing next to its name.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Argument names in the order they are worth showing: what runs, then what is touched, then
/// what is searched for, then a description.
const SIGNIFICANT_KEYS: &[&str] = &[
    "command",
    "cmd",
    "file_path",
    "absolute_path",
    "notebook_path",
    "path",
    "dir_path",
    "pattern",
    "url",
    "query",
    "prompt",
    "description",
    "subject",
];

/// The first significant argument of a tool call given as a JSON object: the command, the file
/// path, the pattern… falling back to the first string argument. Shell commands lose the
/// `bash -lc '…'` wrapper some CLIs put around them.
pub(crate) fn first_significant_arg(input: &str) -> Option<String> {
    let object: Map<String, Value> = serde_json::from_str(input).ok()?;
    let found = SIGNIFICANT_KEYS
        .iter()
        .find_map(|key| object.get(*key).and_then(argument_text))
        .or_else(|| object.values().find_map(argument_text))?;
    Some(unwrap_shell_command(&found))
}

fn argument_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        // Codex passes argv-style commands as arrays of words.
        Value::Array(words) if !words.is_empty() => {
            let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
            words.map(|words| words.join(" "))
        }
        _ => None,
    }
}

/// `/bin/bash -lc 'echo hello'` → `echo hello`: the shell and its flags say nothing to a person
/// watching, the script does. Anything not of that exact shape comes back unchanged.
pub(crate) fn unwrap_shell_command(command: &str) -> String {
    let Some((program, rest)) = command.split_once(' ') else {
        return command.to_owned();
    };
    let shell = program.rsplit('/').next().unwrap_or(program);
    if !matches!(shell, "bash" | "sh" | "zsh") {
        return command.to_owned();
    }
    let Some(script) = ["-lc ", "-c "]
        .iter()
        .find_map(|flag| rest.strip_prefix(flag))
    else {
        return command.to_owned();
    };
    match script
        .strip_prefix('\'')
        .and_then(|inner| inner.strip_suffix('\''))
    {
        // Inside single quotes a quote is written '\'' ; undo that.
        Some(inner) if !inner.is_empty() => inner.replace("'\\''", "'"),
        _ => script.to_owned(),
    }
}

/// The name a tool start is shown by, for the CLIs whose streams name a shell command by
/// their item type (Codex `command_execution`, app-server `commandExecution`) or by the
/// Agent Client Protocol's tool kind (`execute`): `shell`, as panewise's own tool and the
/// README call it. Every other name is the CLI's own tool name and stays. Approval requests
/// keep the raw name: the approval policy decides on it, and the log records what it saw.
pub(crate) const SHELL_TOOL: &str = "shell";

/// Characters of a tool's argument the reducer's state keeps, the status chip's line and some
/// to spare: the chip shows the argument's first line, cut, so a whole file written or a
/// megabyte-long command would otherwise sit in the state (and in every message recorded)
/// only to be cut when shown.
pub(crate) const TOOL_ARG_CHARS: usize = 160;

/// The argument as the status chip shows it: its first line, at most [`TOOL_ARG_CHARS`]
/// characters, with `…` when anything was cut.
pub(crate) fn chip_arg(arg: &str) -> Cow<'_, str> {
    let first_line = arg.split('\n').next().unwrap_or_default();
    match shorten(first_line, TOOL_ARG_CHARS) {
        Cow::Borrowed(kept) if kept.len() < arg.len() => Cow::Owned(format!("{kept}…")),
        shortened => shortened,
    }
}

/// `text` cut to at most `max` characters (on a character boundary), with `…` when cut.
pub(crate) fn shorten(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &str {
        text
    }

    #[test]
    fn the_chip_keeps_the_first_line_cut_to_its_length() {
        let long = "é".repeat(TOOL_ARG_CHARS + 5);
        let cut = format!("{}…", "é".repeat(TOOL_ARG_CHARS));
        for (arg, chip) in [
            ("ls -la", "ls -la"),
            ("cat <<EOF\nbody\nEOF", "cat <<EOF…"),
            (long.as_str(), cut.as_str()),
            ("", ""),
        ] {
            assert_eq!(chip_arg(arg), chip, "{arg}");
        }
    }

    #[test]
    fn command_wins_over_description() {
        let input = raw(r#"{"description":"Print hello","command":"echo hello"}"#);
        assert_eq!(first_significant_arg(input).as_deref(), Some("echo hello"));
    }

    #[test]
    fn falls_back_to_the_first_string() {
        let input = raw(r#"{"n":3,"zeta":"z"}"#);
        assert_eq!(first_significant_arg(input).as_deref(), Some("z"));
        assert_eq!(first_significant_arg(raw("[1]")), None);
    }

    #[test]
    fn shell_wrappers_are_removed() {
        assert_eq!(
            unwrap_shell_command("/bin/bash -lc 'echo hello'"),
            "echo hello"
        );
        assert_eq!(unwrap_shell_command("bash -c 'it'\\''s'"), "it's");
        assert_eq!(unwrap_shell_command("sh -c ls"), "ls");
        assert_eq!(unwrap_shell_command("python -c 'x'"), "python -c 'x'");
        assert_eq!(unwrap_shell_command("ls"), "ls");
    }
}
