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

/// Opens a session log for reading: standard input for `-`, else a regular file only
/// ([`panewise_host::regular_file::open_regular`]), so a FIFO or a device named as a log is
/// refused at once rather than waited on or read without end.
pub fn open_log(path: &Path) -> std::io::Result<Box<dyn Read>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin()));
    }
    let file = panewise_host::regular_file::open_regular(path)
        .map_err(panewise_host::regular_file::FileError::into_io)?;
    Ok(Box::new(file))
}

/// Reads all of `path`, or of standard input for `-`: for inputs needed whole (a conversation
/// to window).
pub fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A session given as `replay`, `resume` and `run --resume` take it: a log's path, `-`, or a
/// recorded session by the forms every command that names a session takes — its id, a unique
/// prefix of it, or its name (the one `new --name` gave it, else its id's last 8 characters,
/// as `panewise agents` shows it). A key that names no recorded session is a not-found error
/// that says where sessions are looked for (an id is what people mistype, and "No such file
/// or directory" would name a file they never meant); one that starts several ids says so.
pub fn session(given: &Path) -> std::io::Result<PathBuf> {
    let resolved = panewise_host::session_log::resolve_session(given);
    let looks_like_key = given.components().count() == 1
        && given.extension().is_none_or(|ext| ext != "jsonl")
        && given.as_os_str() != "-";
    if !looks_like_key || resolved.exists() {
        return Ok(resolved);
    }
    let Some(dir) = panewise_host::session_log::sessions_dir() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no session {} (neither XDG_DATA_HOME nor HOME is set, so there is no sessions \
                 directory)",
                shown_key(given)
            ),
        ));
    };
    let recorded = recorded_sessions(&dir);
    let key = given.to_string_lossy();
    let found = panewise_api::resolve_session(
        recorded
            .iter()
            .map(|(id, name)| (id.as_str(), name.as_str())),
        &key,
    );
    match found {
        Ok(id) => Ok(dir.join(format!("{id}.jsonl"))),
        Err(error) if error.code == panewise_api::ErrorCode::AmbiguousSession.code() => {
            Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} (recorded in {}; `panewise sessions` lists them)",
                    error.message,
                    dir.display()
                ),
            ))
        }
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no session with the id, prefix or name {} in {} (see `panewise sessions`)",
                shown_key(given),
                dir.display()
            ),
        )),
    }
}

fn shown_key(given: &Path) -> String {
    crate::terminal_text::escape_controls(&given.display().to_string(), "")
}

/// Every recorded session in `dir`, newest first: its id (the log's name) and its name (the header's, else
/// the default). A log that cannot be read is left out: it cannot be replayed either.
fn recorded_sessions(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut sessions = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(file) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        let Some(id) = file.strip_suffix(".jsonl") else {
            continue;
        };
        if panewise_host::agent_loop::is_beside_log(&path) {
            continue;
        }
        let name = header_name(&path).unwrap_or_else(|| panewise_api::default_session_name(id));
        sessions.push((id.to_owned(), name));
    }
    // Newest first (ids begin with their start time): a name that several sessions had (a
    // session and those resuming it) names the newest.
    sessions.sort_by(|a, b| b.cmp(a));
    sessions
}

/// The name in the log's header, reading its first line only (at most 64 KiB of it), of a
/// regular file only: a FIFO or a device named `*.jsonl` in the sessions directory is passed
/// over, never waited on.
fn header_name(log: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = panewise_host::regular_file::open_regular(log).ok()?;
    let mut first = Vec::new();
    std::io::BufReader::new(file.take(64 * 1024))
        .read_until(b'\n', &mut first)
        .ok()?;
    let line: serde_json::Value = serde_json::from_slice(&first).ok()?;
    line.get("header")?.get("name")?.as_str().map(str::to_owned)
}
