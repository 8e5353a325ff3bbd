//! `write_file`'s name, description, arguments and the JSON schema a model is given; the
//! host runs it (`panewise_host::tools::write_file`).

use serde::Deserialize;
use serde_json::{json, Value};

/// The name the model calls it by.
pub const NAME: &str = "write_file";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Write `content` to a file, replacing it if it exists and \
creating missing parent directories. Relative paths are resolved against the working \
directory. A path inside the working directory that leads out of it through a symlink, a \
dangling symlink and a file with other hard links are refused.";

/// The arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file. `file_path` is read as well, the name other agents' write tools use.
    #[serde(alias = "file_path")]
    pub path: String,
    /// Its whole new content.
    pub content: String,
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The file's whole new content."}
        },
        "required": ["path", "content"],
        "additionalProperties": false
    })
}
