//! A session's log as the shell reads it: the tail its task reads as the log grows (each
//! line read once, handed to the loop), and the read from an offset for a subscriber that
//! fell behind ([`crate::registry::Effect::ReadLog`]).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use panewise_api::{rpc, LineNotice};
use tokio::sync::mpsc;

use super::Outgoing;
use crate::registry::{Line, ReadBudget};

/// The log bytes one [`Event::Session`](crate::registry::Event::Session) carries at most: a session that wrote more since its
/// last wake is handed over in parts, each waiting for room in the loop's inputs.
pub(super) const HAND_OVER_BYTES: usize = 256 * 1024;

/// A session's log read as it grows: complete lines only, each read once.
pub(super) struct LogTail {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
    /// The byte after the last complete line handed over.
    offset: u64,
    partial: Vec<u8>,
    /// Read into, kept across calls (a fresh one per wake would be zeroed each time).
    buffer: Vec<u8>,
}

impl LogTail {
    pub(super) fn new(path: std::path::PathBuf) -> LogTail {
        LogTail {
            path,
            file: None,
            offset: 0,
            partial: Vec::new(),
            buffer: vec![0; 64 * 1024],
        }
    }

    /// The complete lines written since the last call (about [`HAND_OVER_BYTES`] at most),
    /// where the first starts, and whether more may wait. `to_end`: read until the file says
    /// it has no more, for the last call, after the session ended, which no later update
    /// follows; otherwise a short read is taken as all there is.
    pub(super) fn read_new(&mut self, to_end: bool) -> (Vec<String>, u64, bool) {
        let first_byte = self.offset;
        if self.file.is_none() {
            // Not there yet: the session opens its log as it starts.
            self.file = std::fs::File::open(&self.path).ok();
        }
        let Some(file) = self.file.as_mut() else {
            return (Vec::new(), first_byte, false);
        };
        // Read with std, in this task: the log is a regular file the session has just
        // written, so a read is a copy out of the page cache that never waits on the disk.
        let buffer = &mut self.buffer;
        let mut lines = Vec::new();
        loop {
            if self.offset - first_byte >= HAND_OVER_BYTES as u64 {
                return (lines, first_byte, true);
            }
            let read = match file.read(buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    tracing::warn!(%error, "reading a session's log");
                    break;
                }
            };
            // A short read took all there was: no second read to learn the end (a line
            // written after it comes with an update of its own, and so another wake).
            let short = read < buffer.len() && !to_end;
            self.partial
                .extend_from_slice(buffer.get(..read).unwrap_or_default());
            let mut start = 0;
            while let Some(at) = self
                .partial
                .get(start..)
                .and_then(|rest| rest.iter().position(|byte| *byte == b'\n'))
            {
                let end = start + at;
                let line = self.partial.get(start..end).unwrap_or_default();
                lines.push(String::from_utf8_lossy(line).into_owned());
                self.offset += (at + 1) as u64;
                start = end + 1;
            }
            self.partial.drain(..start);
            if short {
                break;
            }
        }
        (lines, first_byte, false)
    }
}

/// What a [`read_log`] queued.
#[derive(Default)]
pub(super) struct LogRead {
    pub(super) lines: usize,
    pub(super) bytes: usize,
    pub(super) next_byte: Option<u64>,
}

/// Queues lines `from_index..` of `log` (at `from_byte` when known) as `session/line`
/// notices on `out`, within `budget` (one line at least, when there is one).
pub(super) fn read_log(
    log: &Path,
    session: &str,
    from_index: u64,
    from_byte: Option<u64>,
    budget: ReadBudget,
    out: &mpsc::Sender<Outgoing>,
) -> LogRead {
    let mut done = LogRead::default();
    let Ok(mut file) = std::fs::File::open(log) else {
        return done;
    };
    let (mut index, mut byte) = match from_byte {
        Some(byte) if file.seek(SeekFrom::Start(byte)).is_ok() => (from_index, byte),
        _ => (0, 0),
    };
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    while done.lines < budget.lines && (done.bytes < budget.bytes || done.lines == 0) {
        line.clear();
        match std::io::BufRead::read_until(&mut reader, b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') {
            // A line still being written: it is sent once complete.
            break;
        }
        byte += line.len() as u64;
        if index >= from_index {
            let text = String::from_utf8_lossy(line.get(..line.len() - 1).unwrap_or_default());
            let params = LineNotice {
                session: session.to_owned(),
                index,
                line: text.into_owned(),
            };
            let Ok(notice) = rpc::notification_line(LineNotice::METHOD, &params) else {
                break;
            };
            let bytes = notice.len();
            if out.try_send(Outgoing::Line(Line::from(notice))).is_err() {
                break;
            }
            // Counted once queued: what was not queued is not the connection's to carry.
            done.bytes += bytes;
            done.lines += 1;
            done.next_byte = Some(byte);
        }
        index += 1;
    }
    done
}
