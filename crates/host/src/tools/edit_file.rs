//! `edit_file`: replaces an exact string in a file. Without `replace_all` the string must occur
//! exactly once, so an edit never lands somewhere the model did not mean.

use serde::Deserialize;
use serde_json::{json, Value};

use super::read_file::plural;
use super::{ToolContext, ToolOutcome};

/// The name the model calls it by.
pub const NAME: &str = "edit_file";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Replace the exact text `old_string` with `new_string` in a \
file. `old_string` must occur exactly once unless `replace_all` is true; include enough \
surrounding text to make it unique. Relative paths are resolved against the working \
directory.";

/// The arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file.
    pub path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// What replaces it.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to edit."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text that replaces it."},
            "replace_all": {"type": "boolean",
                            "description": "Replace every occurrence (default false)."}
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": false
    })
}

/// Edits the file.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    let path = context.resolve(&args.path);
    let shown = path.display();
    if args.old_string.is_empty() {
        return ToolOutcome::error(format!("{NAME}: `old_string` is empty")).at(&path);
    }
    if args.old_string == args.new_string {
        return ToolOutcome::error(format!(
            "{NAME}: `old_string` and `new_string` are the same; nothing would change"
        ))
        .at(&path);
    }
    let text = match tokio::fs::read(&path).await {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                return ToolOutcome::error(format!("{shown} is not UTF-8 text")).at(&path);
            }
        },
        Err(error) => return ToolOutcome::error(format!("cannot read {shown}: {error}")).at(&path),
    };
    let found = text.matches(args.old_string.as_str()).count();
    if found == 0 {
        return ToolOutcome::error(format!("`old_string` was not found in {shown}")).at(&path);
    }
    if found > 1 && !args.replace_all {
        return ToolOutcome::error(format!(
            "`old_string` was found {found} times in {shown}; give more surrounding text to \
             make it unique, or pass `replace_all`"
        ))
        .at(&path);
    }
    let edited = text.replace(args.old_string.as_str(), &args.new_string);
    match tokio::fs::write(&path, edited.as_bytes()).await {
        Ok(()) => ToolOutcome::ok(format!(
            "replaced {found} {} in {shown}",
            plural(found, "occurrence")
        ))
        .at(&path),
        Err(error) => ToolOutcome::error(format!("cannot write {shown}: {error}")).at(&path),
    }
}
