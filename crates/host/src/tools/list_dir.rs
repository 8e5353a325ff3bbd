//! `list_dir`: a directory's entries, one a line, sorted by name, directories ending in `/`.

use super::output::cap_text;
use super::{ToolContext, ToolOutcome};

pub use panewise_core::tools::list_dir::*;

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
