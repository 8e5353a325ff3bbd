//! Where a subcommand's input comes from: a file, or standard input for `-`.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Opens `path` for reading, or standard input for `-`.
pub fn open(path: &Path) -> std::io::Result<Box<dyn Read>> {
    if path.as_os_str() == "-" {
        Ok(Box::new(std::io::stdin()))
    } else {
        Ok(Box::new(std::fs::File::open(path)?))
    }
}

/// Reads all of `path`, or of standard input for `-`: for inputs needed whole (a conversation
/// to window).
pub fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A session given as `replay` and `run --resume` take it: a log's path, `-`, or the id of a
/// recorded session. A name that is neither an existing file nor a recorded session's id is a
/// not-found error that says where ids are looked for (an id is what people mistype, and
/// "No such file or directory" would name a file they never meant).
pub fn session(given: &Path) -> std::io::Result<PathBuf> {
    let resolved = panewise_host::session_log::resolve_session(given);
    let looks_like_id = given.components().count() == 1
        && given.extension().is_none_or(|ext| ext != "jsonl")
        && given.as_os_str() != "-";
    if looks_like_id && !resolved.exists() {
        let dir = panewise_host::session_log::sessions_dir().map_or_else(
            || "the sessions directory (neither XDG_DATA_HOME nor HOME is set)".to_owned(),
            |dir| dir.display().to_string(),
        );
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no session with id {} in {dir} (see `panewise sessions`)",
                crate::terminal_text::escape_controls(&given.display().to_string(), "")
            ),
        ));
    }
    Ok(resolved)
}
