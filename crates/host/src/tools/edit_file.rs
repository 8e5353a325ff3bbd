//! `edit_file`: replaces an exact string in a file. Without `replace_all` the string must occur
//! exactly once, so an edit never lands somewhere the model did not mean.

use serde::Deserialize;
use serde_json::{json, Value};

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::paths::{self, OpenFor, WriteTarget};
use super::read_file::plural;
use super::{ToolContext, ToolOutcome};
use crate::error::WriteRefusal;

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

/// Edits the file.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    let path = context.resolve(&args.path);
    let shown = path.display();
    if args.old_string.is_empty() {
        return ToolOutcome::error(format!("{NAME}: `old_string` is empty")).at(&path);
    }
    if args.old_string == args.new_string {
        return ToolOutcome::error(format!(
            "{NAME}: `old_string` and `new_string` are the same; nothing would change"
        ))
        .at(&path);
    }
    let cwd = context.cwd.clone();
    let given = args.path.clone();
    let (old, new, replace_all) = (
        args.old_string.clone(),
        args.new_string.clone(),
        args.replace_all,
    );
    let edited =
        tokio::task::spawn_blocking(move || edit(&cwd, &given, &old, &new, replace_all)).await;
    match edited {
        Ok(Ok(Edited::Replaced { found, target })) => ToolOutcome::ok(format!(
            "replaced {found} {} in {shown}{}",
            plural(found, "occurrence"),
            paths::through_links_note(&target)
        ))
        .at(&path),
        Ok(Ok(Edited::NotUtf8)) => {
            ToolOutcome::error(format!("{shown} is not UTF-8 text")).at(&path)
        }
        Ok(Ok(Edited::NotFound)) => {
            ToolOutcome::error(format!("`old_string` was not found in {shown}")).at(&path)
        }
        Ok(Ok(Edited::NotUnique { found })) => ToolOutcome::error(format!(
            "`old_string` was found {found} times in {shown}; give more surrounding text to \
             make it unique, or pass `replace_all`"
        ))
        .at(&path),
        Ok(Err(refusal)) => ToolOutcome::error(refusal.to_string()).at(&path),
        Err(error) => ToolOutcome::error(format!("cannot edit {shown}: {error}")).at(&path),
    }
}

/// What an edit came to.
enum Edited {
    Replaced { found: usize, target: WriteTarget },
    NotUtf8,
    NotFound,
    NotUnique { found: usize },
}

/// Checks the path, opens the file as checked, and reads, edits and writes back that same
/// open file, so the file edited is the file checked.
fn edit(
    cwd: &Path,
    given: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Edited, WriteRefusal> {
    let target = paths::check_write(cwd, given)?;
    let mut file = paths::open_for_write(&target, OpenFor::Edit)?;
    let io = |action: &'static str| {
        let path = target.path.clone();
        move |error: std::io::Error| WriteRefusal::Io {
            action,
            path,
            reason: error.to_string(),
            kind: error.kind(),
        }
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io("read"))?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(Edited::NotUtf8);
    };
    let found = text.matches(old).count();
    if found == 0 {
        return Ok(Edited::NotFound);
    }
    if found > 1 && !replace_all {
        return Ok(Edited::NotUnique { found });
    }
    let edited = text.replace(old, new);
    file.seek(SeekFrom::Start(0)).map_err(io("write"))?;
    file.set_len(0).map_err(io("write"))?;
    file.write_all(edited.as_bytes()).map_err(io("write"))?;
    Ok(Edited::Replaced { found, target })
}
