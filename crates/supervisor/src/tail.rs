//! A subscriber's lines: the session's own log file read from its start, complete lines only,
//! woken by the session's updates, so what a client gets is exactly what the log holds.

use std::io::Read;
use std::path::PathBuf;

use panewise_api::{EndNotice, LineNotice, Notification};
use tokio::sync::{mpsc, watch};

/// Sends the lines of `log` from index `from_line` on, as they are written, then
/// [`EndNotice`] once `ended` says the session is over and every line was sent.
pub(crate) async fn tail(
    id: String,
    log: PathBuf,
    from_line: u64,
    mut changed: watch::Receiver<Progress>,
    out: mpsc::UnboundedSender<Notification>,
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
                    let line = String::from_utf8_lossy(partial.get(start..end).unwrap_or_default())
                        .into_owned();
                    let notice = LineNotice {
                        session: id.clone(),
                        index,
                        line,
                    };
                    if out.send(notification(LineNotice::METHOD, &notice)).is_err() {
                        return;
                    }
                }
                index += 1;
                start = end + 1;
            }
            partial.drain(..start);
        }
        if ended {
            let notice = EndNotice {
                session: id.clone(),
                lines: index,
            };
            let _gone = out.send(notification(EndNotice::METHOD, &notice));
            return;
        }
        if changed.changed().await.is_err() {
            // The session was removed: what the file holds now is all there is.
            let _gone = out.send(notification(
                EndNotice::METHOD,
                &EndNotice {
                    session: id.clone(),
                    lines: index,
                },
            ));
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

/// A notification of `method` with `params`.
pub(crate) fn notification(method: &str, params: &impl serde::Serialize) -> Notification {
    Notification {
        jsonrpc: "2.0".to_owned(),
        method: method.to_owned(),
        params: serde_json::to_value(params).unwrap_or(serde_json::Value::Null),
    }
}
