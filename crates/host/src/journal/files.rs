//! How a session's files are made and probed: ids that never collide, files created new and
//! readable by their owner alone, the lock a running session holds on its log, and opening a
//! file to read without ever blocking on something that is not a regular file.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Owner read and write, nothing for anyone else: a session's files hold its prompts, its
/// tools' output and its working directory.
pub const PRIVATE_MODE: u32 = 0o600;

/// A new session id: a UUIDv7, so ids of sessions started in the same millisecond (by
/// processes that know nothing of each other) still differ, and ids sort by start time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The log of a new session in `dir`: `<dir>/<new id>.jsonl`.
pub fn new_log_path(dir: &Path) -> PathBuf {
    dir.join(format!("{}.jsonl", new_session_id()))
}

/// Creates `path`, which must not exist yet, readable and writable by its owner alone. An
/// existing file (of anyone's: another session's log, a file the person named by mistake) is
/// an `AlreadyExists` error naming it, and is left as it was.
pub fn create_new_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_MODE)
        .open(path)
        .map_err(|error| match error.kind() {
            io::ErrorKind::AlreadyExists => io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} already exists, and panewise never writes over a file",
                    path.display()
                ),
            ),
            _ => error,
        })
}

/// Creates or truncates `path`, readable and writable by its owner alone (an existing file's
/// mode is narrowed too): for files a person names to be written again, such as a capture.
pub fn create_private(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(PRIVATE_MODE)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_MODE))?;
    Ok(file)
}

/// Writes `contents` to `path` as [`create_private`] makes it.
pub fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    create_private(path)?.write_all(contents)
}

/// Takes the exclusive lock a running session holds on its log for as long as the file stays
/// open; `panewise sessions` reads a held lock as "live".
pub fn lock_exclusive(file: &File, path: &Path) -> io::Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("{} is locked by another running session", path.display()),
        )),
        Err(TryLockError::Error(error)) => Err(error),
    }
}

/// Whether another open file holds a lock on `file` (a running session on its log). The probe
/// takes a shared lock and lets it go at once.
pub fn is_locked_elsewhere(file: &File) -> io::Result<bool> {
    match file.try_lock_shared() {
        Ok(()) => {
            file.unlock()?;
            Ok(false)
        }
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(error)) => Err(error),
    }
}

/// Opens `path` to read when it is a regular file, and refuses anything else (a directory, a
/// named pipe, a device) with an `InvalidInput` error saying what it is, without blocking:
/// [`crate::regular_file::open_regular`], as an `io::Error`.
pub fn open_regular(path: &Path) -> io::Result<File> {
    crate::regular_file::open_regular(path).map_err(crate::regular_file::FileError::into_io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_and_sort_by_time() {
        let ids: Vec<String> = (0..1000).map(|_| new_session_id()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        assert_eq!(
            sorted, ids,
            "UUIDv7 ids made one after another sort in order"
        );
    }
}
