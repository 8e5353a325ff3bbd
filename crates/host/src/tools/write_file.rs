//! `write_file`: writes a whole file, creating its parent directories.

use serde::Deserialize;
use serde_json::{json, Value};

use super::read_file::plural;
use super::{ToolContext, ToolOutcome};

/// The name the model calls it by.
pub const NAME: &str = "write_file";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Write `content` to a file, replacing it if it exists and \
creating missing parent directories. Relative paths are resolved against the working \
directory.";

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

/// Writes the file.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    let path = context.resolve(&args.path);
    let shown = path.display();
    if let Some(parent) = path.parent() {
        if let Err(error) = tokio::fs::create_dir_all(parent).await {
            return ToolOutcome::error(format!(
                "cannot create the directory {}: {error}",
                parent.display()
            ))
            .at(&path);
        }
    }
    match tokio::fs::write(&path, args.content.as_bytes()).await {
        Ok(()) => {
            let lines = args.content.lines().count();
            ToolOutcome::ok(format!(
                "wrote {} bytes ({lines} {}) to {shown}",
                args.content.len(),
                plural(lines, "line")
            ))
            .at(&path)
        }
        Err(error) => ToolOutcome::error(format!("cannot write {shown}: {error}")).at(&path),
    }
}
