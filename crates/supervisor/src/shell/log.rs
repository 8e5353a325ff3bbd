//! A session's log as the shell reads it: the tail its task reads as the log grows (each
//! line read once, handed to the loop), and the read from an offset for a subscriber that
//! fell behind ([`crate::registry::Effect::ReadLog`]).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use panewise_api::{rpc, LineNotice};
use tokio::sync::mpsc;

use super::Outgoing;
use crate::launcher::SharedLogMirror;
use crate::registry::{Line, ReadBudget};

/// The log bytes one [`Event::Session`](crate::registry::Event::Session) carries at most: a session that wrote more since its
/// last wake is handed over in parts, each waiting for room in the loop's inputs.
pub(super) const HAND_OVER_BYTES: usize = 256 * 1024;

/// A session's log read as it grows: complete lines only, each read once. With the engine's
/// [`SharedLogMirror`], the new bytes are taken from memory (the engine copied them as it
/// wrote them to the file); the log's first bytes, written before the mirror was attached,
/// and everything once the mirror stopped copying, are read from the file.
pub(super) struct LogTail {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
    /// The byte after the last complete line handed over.
    offset: u64,
    partial: Vec<u8>,
    /// Read into, kept across calls (a fresh one per wake would be zeroed each time).
    buffer: Vec<u8>,
    mirror: Option<SharedLogMirror>,
}

/// Where a [`LogTail`] takes its next bytes from.
enum Source {
    /// The file, up to this offset (the mirror's start), or to its end.
    File(Option<u64>),
    /// The mirror's bytes, taken; more wait when true.
    Mirror(Vec<u8>, bool),
}

impl LogTail {
    pub(super) fn new(path: std::path::PathBuf, mirror: Option<SharedLogMirror>) -> LogTail {
        LogTail {
            path,
            file: None,
            offset: 0,
            partial: Vec::new(),
            buffer: vec![0; 64 * 1024],
            mirror,
        }
    }

    /// The complete lines written since the last call (about [`HAND_OVER_BYTES`] at most),
    /// where the first starts, and whether more may wait. `to_end`: read until the file says
    /// it has no more, for the last call, after the session ended, which no later update
    /// follows; otherwise a short read is taken as all there is.
    pub(super) fn read_new(&mut self, to_end: bool) -> (Vec<String>, u64, bool) {
        let first_byte = self.offset;
        let mut lines = Vec::new();
        loop {
            match self.source() {
                Source::Mirror(bytes, more) => {
                    self.split(&bytes, &mut lines);
                    return (lines, first_byte, more);
                }
                Source::File(limit) => {
                    let more = self.read_file(first_byte, limit, to_end, &mut lines);
                    let consumed = self.offset + self.partial.len() as u64;
                    // The bytes before the mirror are read; the rest is the mirror's.
                    if more || limit.is_none_or(|limit| consumed < limit) {
                        return (lines, first_byte, more);
                    }
                }
            }
        }
    }

    /// The mirror's bytes when it holds the next ones, else how far to read the file. A
    /// mirror that stopped copying, or does not join where the file reading is, is let go.
    fn source(&mut self) -> Source {
        let consumed = self.offset + self.partial.len() as u64;
        let Some(shared) = &self.mirror else {
            return Source::File(None);
        };
        let taken = match shared.lock() {
            Ok(mirror) if !mirror.lost && consumed < mirror.start => {
                return Source::File(Some(mirror.start));
            }
            Ok(mut mirror) if !mirror.lost && consumed == mirror.start => {
                let more = mirror.bytes.len() > HAND_OVER_BYTES;
                let bytes = if more {
                    let rest = mirror.bytes.split_off(HAND_OVER_BYTES);
                    std::mem::replace(&mut mirror.bytes, rest)
                } else {
                    std::mem::take(&mut mirror.bytes)
                };
                mirror.start += bytes.len() as u64;
                Some((bytes, more))
            }
            _ => None,
        };
        match taken {
            Some((bytes, more)) => Source::Mirror(bytes, more),
            None => {
                // From here on the file: it holds every byte the mirror did not.
                self.mirror = None;
                if let Some(file) = self.file.as_mut() {
                    if let Err(error) = file.seek(SeekFrom::Start(consumed)) {
                        tracing::warn!(%error, "seeking a session's log");
                    }
                }
                Source::File(None)
            }
        }
    }

    /// Reads the file from where the last read stopped, up to `limit` when given; true when
    /// more may wait past [`HAND_OVER_BYTES`].
    fn read_file(
        &mut self,
        first_byte: u64,
        limit: Option<u64>,
        to_end: bool,
        lines: &mut Vec<String>,
    ) -> bool {
        if self.file.is_none() {
            // Not there yet: the session opens its log as it starts.
            self.file = std::fs::File::open(&self.path).ok();
        }
        let Some(mut file) = self.file.take() else {
            return false;
        };
        // Read with std, in this task: the log is a regular file the session has just
        // written, so a read is a copy out of the page cache that never waits on the disk.
        let mut buffer = std::mem::take(&mut self.buffer);
        let mut more = false;
        loop {
            if self.offset - first_byte >= HAND_OVER_BYTES as u64 {
                more = true;
                break;
            }
            let consumed = self.offset + self.partial.len() as u64;
            let room = match limit {
                Some(limit) if limit <= consumed => break,
                Some(limit) => usize::try_from(limit - consumed)
                    .unwrap_or(usize::MAX)
                    .min(buffer.len()),
                None => buffer.len(),
            };
            let Some(into) = buffer.get_mut(..room) else {
                break;
            };
            let read = match file.read(into) {
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
            let short = read < room && !to_end;
            self.split(buffer.get(..read).unwrap_or_default(), lines);
            if short {
                break;
            }
        }
        self.buffer = buffer;
        self.file = Some(file);
        more
    }

    /// Appends `bytes` to what was read and hands over every line they complete.
    fn split(&mut self, bytes: &[u8], lines: &mut Vec<String>) {
        self.partial.extend_from_slice(bytes);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launcher::LogMirror;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    /// Writes `text` to the log file and, as the engine does, to the mirror.
    fn write(file: &mut std::fs::File, mirror: &SharedLogMirror, text: &str) {
        file.write_all(text.as_bytes()).unwrap();
        mirror.lock().unwrap().append(text.as_bytes());
    }

    #[test]
    fn the_tail_reads_the_head_from_the_file_then_the_mirror_then_the_file_once_it_stops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let mut file = std::fs::File::create(&path).unwrap();
        // The header, written before the mirror was attached.
        file.write_all(b"header\n").unwrap();
        let mirror: SharedLogMirror = Arc::new(Mutex::new(LogMirror::at(7)));
        let mut tail = LogTail::new(path.clone(), Some(mirror.clone()));
        write(&mut file, &mirror, "one\ntw");
        assert_eq!(
            tail.read_new(false),
            (vec!["header".to_owned(), "one".to_owned()], 0, false)
        );
        write(&mut file, &mirror, "o\nthree\n");
        assert_eq!(
            tail.read_new(false),
            (vec!["two".to_owned(), "three".to_owned()], 11, false)
        );
        assert!(mirror.lock().unwrap().bytes.is_empty(), "taken from memory");
        // The mirror stops (the daemon fell behind): the rest is read from the file.
        file.write_all(b"four\n").unwrap();
        {
            let mut mirror = mirror.lock().unwrap();
            mirror.append(&vec![b'x'; crate::launcher::LOG_MIRROR_MAX_BYTES + 1]);
            assert!(mirror.lost);
        }
        write(&mut file, &mirror, "five\n");
        assert_eq!(
            tail.read_new(true),
            (vec!["four".to_owned(), "five".to_owned()], 21, false)
        );
        // Every line once, and what a tail without a mirror reads from the same file.
        let mut plain = LogTail::new(path, None);
        let (lines, _, _) = plain.read_new(true);
        assert_eq!(lines, ["header", "one", "two", "three", "four", "five"]);
    }
}
