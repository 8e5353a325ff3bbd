//! A subscriber's lines: the session's own log file read from its start, complete lines only,
//! woken by the session's updates, so what a client gets is exactly what the log holds.

use std::io::Read;
use std::path::PathBuf;

use panewise_api::{EndNotice, LineNotice};
use serde::Serialize;
use tokio::sync::watch;

use crate::outbox::{notice, Outbox};

/// Sends the lines of `log` from index `from_line` on, as they are written, then
/// [`EndNotice`] once `ended` says the session is over and every line was sent. A full
/// outbox (a client that does not read) makes it wait: the lines stay in the file meanwhile.
pub(crate) async fn tail(
    id: String,
    log: PathBuf,
    from_line: u64,
    mut changed: watch::Receiver<Progress>,
    out: Outbox,
) {
    // Read with std, in this task: the log is a regular file the session has just written, so
    // a read is a copy out of the page cache that never waits on the disk. `tokio::fs` would
    // send every read (two per wake: the new lines, then the end) to the blocking pool and
    // back, two thread hand-offs per line on its way to the subscriber.
    let mut file = match std::fs::File::open(&log) {
        Ok(file) => file,
        Err(error) => {
            tracing::warn!(%error, log = %log.display(), "cannot read the log to tail");
            return;
        }
    };
    let mut index: u64 = 0;
    let mut partial: Vec<u8> = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        // Read what was written before the session's progress was looked at: once it says
        // ended, everything the session will write is in the file.
        let ended = changed.borrow_and_update().ended;
        loop {
            let read = match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) => {
                    tracing::warn!(%error, "reading the log to tail");
                    return;
                }
            };
            partial.extend_from_slice(buffer.get(..read).unwrap_or_default());
            let mut start = 0;
            while let Some(offset) = partial
                .get(start..)
                .and_then(|rest| rest.iter().position(|byte| *byte == b'\n'))
            {
                let end = start + offset;
                if index >= from_line {
                    let line = String::from_utf8_lossy(partial.get(start..end).unwrap_or_default());
                    let params = LineRef {
                        session: &id,
                        index,
                        line: &line,
                    };
                    if let Some(message) = notice(LineNotice::METHOD, &params) {
                        if out.send(message).await.is_err() {
                            return;
                        }
                    }
                }
                index += 1;
                start = end + 1;
            }
            partial.drain(..start);
        }
        // Ended, or the session was removed (what the file holds now is all there is).
        if ended || changed.changed().await.is_err() {
            let end = EndNotice {
                session: id.clone(),
                lines: index,
            };
            if let Some(message) = notice(EndNotice::METHOD, &end) {
                let _gone = out.send(message).await;
            }
            return;
        }
    }
}

/// What subscribers watch of a session: bumped on every update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Updates seen.
    pub(crate) updates: u64,
    /// The session's task has ended and its log is closed.
    pub(crate) ended: bool,
}

/// [`LineNotice`] borrowed from the tail's buffer: the same fields, serialised without
/// copying the line (a test holds the two to one shape).
#[derive(Serialize)]
struct LineRef<'a> {
    session: &'a str,
    index: u64,
    line: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_borrowed_line_serialises_as_the_apis_line_notice() {
        let owned = LineNotice {
            session: "abc".into(),
            index: 4,
            line: "{\"a\":1}".into(),
        };
        let borrowed = LineRef {
            session: &owned.session,
            index: owned.index,
            line: &owned.line,
        };
        assert_eq!(
            serde_json::to_value(&borrowed).ok(),
            serde_json::to_value(&owned).ok()
        );
    }
}
