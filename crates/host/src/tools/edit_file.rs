//! `edit_file`: replaces an exact string in a file. Without `replace_all` the string must occur
//! exactly once, so an edit never lands somewhere the model did not mean.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::paths::{self, OpenFor, WriteTarget};
use super::read_file::plural;
use super::{ToolContext, ToolOutcome};
use crate::error::WriteRefusal;

pub use panewise_core::tools::edit_file::*;

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
