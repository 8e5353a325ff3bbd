//! `list_dir`'s name, description, arguments and the JSON schema a model is given; the
//! host runs it (`panewise_host::tools::list_dir`).

use serde::Deserialize;
use serde_json::{json, Value};

/// The name the model calls it by.
pub const NAME: &str = "list_dir";

/// What it does, for the model.
pub const DESCRIPTION: &str = "List a directory's entries (not recursive), sorted by name, \
directories ending in `/`. The path defaults to the working directory.";

/// The arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The directory (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
}

impl Args {
    /// The directory as given, `.` when none was.
    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or(".")
    }
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "The directory to list (default: the working directory)."}
        },
        "additionalProperties": false
    })
}
