//! `write_file`: writes a whole file, creating its parent directories.

use std::io::Write;

use super::paths::{self, OpenFor};
use super::read_file::plural;
use super::{ToolContext, ToolOutcome};
use crate::error::WriteRefusal;

pub use panewise_core::tools::write_file::*;

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
