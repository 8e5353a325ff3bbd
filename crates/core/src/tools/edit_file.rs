//! `edit_file`'s name, description, arguments and the JSON schema a model is given; the
//! host runs it (`panewise_host::tools::edit_file`).

use serde::Deserialize;
use serde_json::{json, Value};

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
