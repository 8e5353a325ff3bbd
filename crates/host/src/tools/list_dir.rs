//! `list_dir`: a directory's entries, one a line, sorted by name, directories ending in `/`.

use serde::Deserialize;
use serde_json::{json, Value};

use super::output::cap_text;
use super::{ToolContext, ToolOutcome};

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

/// Lists the directory.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    let path = context.resolve(args.path());
    let shown = path.display();
    let mut reader = match tokio::fs::read_dir(&path).await {
        Ok(reader) => reader,
        Err(error) => return ToolOutcome::error(format!("cannot list {shown}: {error}")).at(&path),
    };
    let mut entries = Vec::new();
    loop {
        match reader.next_entry().await {
            Ok(Some(entry)) => {
                let mut name = entry.file_name().to_string_lossy().into_owned();
                // A symlink to a directory lists as a directory: that is where it leads.
                if tokio::fs::metadata(entry.path())
                    .await
                    .is_ok_and(|metadata| metadata.is_dir())
                {
                    name.push('/');
                }
                entries.push(name);
            }
            Ok(None) => break,
            Err(error) => {
                return ToolOutcome::error(format!("cannot list {shown}: {error}")).at(&path);
            }
        }
    }
    entries.sort();
    let mut text = format!(
        "{shown} ({} {})\n",
        entries.len(),
        if entries.len() == 1 {
            "entry"
        } else {
            "entries"
        }
    );
    for entry in &entries {
        text.push_str(entry);
        text.push('\n');
    }
    ToolOutcome::ok(cap_text(&text, context.limits.output_bytes)).at(&path)
}
