//! `write_file`: writes a whole file, creating its parent directories.

use serde::Deserialize;
use serde_json::{json, Value};

use std::io::Write;

use super::paths::{self, OpenFor};
use super::read_file::plural;
use super::{ToolContext, ToolOutcome};
use crate::error::WriteRefusal;

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

/// Writes the file: checked again ([`paths::check_write`]) and opened as checked
/// ([`paths::open_for_write`]), then truncated and written.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    let path = context.resolve(&args.path);
    let cwd = context.cwd.clone();
    let given = args.path.clone();
    let content = args.content.clone();
    let written = tokio::task::spawn_blocking(move || {
        let target = paths::check_write(&cwd, &given)?;
        let mut file = paths::open_for_write(&target, OpenFor::Replace)?;
        let io = |error: std::io::Error| WriteRefusal::Io {
            action: "write",
            path: target.path.clone(),
            reason: error.to_string(),
            kind: error.kind(),
        };
        file.set_len(0).map_err(io)?;
        file.write_all(content.as_bytes()).map_err(io)?;
        Ok::<_, WriteRefusal>(target)
    })
    .await;
    match written {
        Ok(Ok(target)) => {
            let lines = args.content.lines().count();
            ToolOutcome::ok(format!(
                "wrote {} bytes ({lines} {}) to {}{}",
                args.content.len(),
                plural(lines, "line"),
                path.display(),
                paths::through_links_note(&target)
            ))
            .at(&path)
        }
        Ok(Err(refusal)) => ToolOutcome::error(refusal.to_string()).at(&path),
        Err(error) => {
            ToolOutcome::error(format!("cannot write {}: {error}", path.display())).at(&path)
        }
    }
}
