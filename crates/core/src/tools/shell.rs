//! `shell`'s name, description, arguments and the JSON schema a model is given; the
//! host runs it (`panewise_host::tools::shell`).

use serde::Deserialize;
use serde_json::{json, Value};

/// The name the model calls it by.
pub const NAME: &str = "shell";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Run a shell command with `sh -c` in the working directory. \
stdout and stderr are returned together, in the order they were written, followed by the exit \
code. When the command ends or exceeds its timeout, its process group is killed, and so are \
the processes it started that left the group (as `setsid` does); the result names those, and \
any it could not kill. Long output is cut with a note.";

/// The arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line, run by `sh -c`.
    pub command: String,
    /// How long it may run, in milliseconds (default and ceiling: the context's limits).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, run by `sh -c`."},
            "timeout_ms": {"type": "integer", "minimum": 1,
                           "description": "How long the command may run, in milliseconds."}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}
