//! Whether what `run` wrote to standard output got there. The view writes the answer (or the
//! `--json` lines) as events arrive and cannot stop the session when a write fails, so it
//! hands each write's result here; at the end, a failed one makes the run exit 3 with a
//! sentence on stderr, since an answer lost to a full disk is not a success. A reader that
//! closed the pipe (`… | head -1`) is no failure: the table's quiet 0.

use std::sync::Mutex;

/// The first failed write's error, worded.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Notes `result`, the result of writing to standard output.
pub fn checked(result: std::io::Result<()>) {
    if let Err(error) = result {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            return;
        }
        if let Ok(mut failed) = FAILED.lock() {
            failed.get_or_insert_with(|| error.to_string());
        }
    }
}

/// `code`, or 3 (an I/O error) with its sentence on stderr when a write to standard output
/// failed during the run.
pub fn exit_code(code: u8) -> u8 {
    let failed = FAILED.lock().ok().and_then(|failed| failed.clone());
    match failed {
        Some(error) => {
            eprintln!(
                "panewise run: the answer could not be written to standard output ({error}); \
                 the session log holds it"
            );
            crate::exit::IO
        }
        None => code,
    }
}
