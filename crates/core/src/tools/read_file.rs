//! `read_file`'s name, description, arguments and the JSON schema a model is given; the
//! host runs it (`panewise_host::tools::read_file`).

use serde::Deserialize;
use serde_json::{json, Value};

/// The name the model calls it by.
pub const NAME: &str = "read_file";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Read a text file. Relative paths are resolved against the \
working directory. Optionally skip `offset` lines and show at most `limit` lines. The result \
starts with a header line naming the file and the lines shown; long results are cut with a \
note.";

/// The arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file.
    pub path: String,
    /// Lines skipped before the first one shown (default 0).
    #[serde(default)]
    pub offset: Option<u64>,
    /// The most lines shown (default: all).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read."},
            "offset": {"type": "integer", "minimum": 0,
                       "description": "Lines to skip before the first line shown (default 0)."},
            "limit": {"type": "integer", "minimum": 1,
                      "description": "The most lines to show (default: all)."}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}
