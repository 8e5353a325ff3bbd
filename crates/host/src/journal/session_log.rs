//! Session logs written as a session runs: each message is folded and its line written to the
//! file at once, whole, in one write, so a crash of panewise (even `kill -9`) loses at most the
//! line being written, and the log replays up to there (a cut-off last line is skipped with a
//! warning by every reader).
//!
//! A log is created new ([`SessionLogFile::create`]): never over an existing file, readable
//! by its owner alone, and locked for as long as the session writes it, so two sessions never
//! share a log and `panewise sessions` can tell a running session from one that crashed.

use std::io::Write;
use std::path::{Path, PathBuf};

use panewise_pane_state::log::{LogHeader, LogNote, Recorder, TranscriptEntry};
use panewise_pane_state::{Cmd, Msg, State};

/// Where recorded sessions live: `$XDG_DATA_HOME/panewise/sessions`, else
/// `~/.local/share/panewise/sessions`; `None` when neither variable is set.
pub fn sessions_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .map(|data| data.join("panewise/sessions"))
}

/// A path as given, or the log of the recorded session with that id (`<sessions dir>/<id>.jsonl`)
/// when no such file exists.
pub fn resolve_session(given: &Path) -> PathBuf {
    if given.as_os_str() == "-" || given.exists() {
        return given.to_path_buf();
    }
    let by_id = sessions_dir().map(|dir| dir.join(given).with_extension("jsonl"));
    match by_id {
        Some(path) if path.exists() => path,
        _ => given.to_path_buf(),
    }
}

/// The longest a session goes without a checkpoint while it logs (30 s): a session killed
/// (`kill -9`) leaves a log that `replay` verifies up to its last checkpoint.
pub const CHECKPOINT_EVERY_MS: u64 = 30_000;

/// The most log bytes written between two checkpoints (1 MiB), so a flooding session is
/// verifiable well before its next 30 s are up.
pub const CHECKPOINT_EVERY_BYTES: u64 = 1024 * 1024;

/// Whether a checkpoint is due: something was logged since the last one, and either
/// [`CHECKPOINT_EVERY_BYTES`] were or [`CHECKPOINT_EVERY_MS`] passed. Pure.
pub fn checkpoint_due(bytes_since: u64, ms_since: u64) -> bool {
    bytes_since > 0 && (bytes_since >= CHECKPOINT_EVERY_BYTES || ms_since >= CHECKPOINT_EVERY_MS)
}

pub use panewise_core::config::DEFAULT_LOG_CAP_BYTES;

/// What a log may still take past its cap, for the lines that close a stopped session (the
/// transcript's end saying why, the final checkpoint).
pub const CLOSING_ROOM_BYTES: u64 = 1024 * 1024;

/// What to do with `len` more bytes for a log of `written` bytes under `cap`, `capped` once
/// the session was told the cap is reached. Pure.
pub fn log_room(written: u64, len: u64, cap: u64, capped: bool) -> LogRoom {
    let after = written.saturating_add(len);
    if after <= cap {
        LogRoom::Fits
    } else if !capped {
        // Written whatever its size (the fold already holds it, and the file must agree),
        // then the session is told.
        LogRoom::Crosses
    } else if after <= cap.saturating_add(CLOSING_ROOM_BYTES) {
        LogRoom::Closing
    } else {
        LogRoom::Full
    }
}

/// Where a line lands against the log's cap ([`log_room`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogRoom {
    /// Under the cap: written.
    Fits,
    /// The line that crosses the cap: written, and the write fails so the session stops.
    Crosses,
    /// Past the cap after the session was told, within the room kept for closing it:
    /// written.
    Closing,
    /// Past that room too: not written, an error.
    Full,
}

/// What a [`SessionLogFile`] hands a copy of each write to: the bytes, exactly as written
/// to the file, after the file took them.
pub type LogMirror = Box<dyn FnMut(&[u8]) + Send>;

/// A session log file being written, with the state folded from what it holds.
pub struct SessionLogFile {
    file: Box<dyn Write + Send>,
    recorder: Recorder,
    /// The most bytes the log takes before the session is stopped ([`DEFAULT_LOG_CAP_BYTES`]).
    cap: u64,
    /// Bytes written to the file so far.
    written: u64,
    /// The cap was reached (the session is being stopped; said once).
    capped: bool,
    /// Given each write after the file took it ([`SessionLogFile::mirror`]).
    mirror: Option<LogMirror>,
    /// Bytes written since the last checkpoint.
    since_checkpoint: u64,
    /// When the last checkpoint was written (or the first check was made).
    last_checkpoint_ms: Option<u64>,
}

impl std::fmt::Debug for SessionLogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLogFile")
            .field("recorder", &self.recorder)
            .finish_non_exhaustive()
    }
}

impl SessionLogFile {
    /// Creates `path`, which must not exist (an `AlreadyExists` error otherwise, the file
    /// untouched), mode 0600, takes its exclusive lock for as long as this value lives, and
    /// writes `header` as its first line.
    pub fn create(path: &Path, header: &LogHeader) -> std::io::Result<Self> {
        let file = super::files::create_new_private(path)?;
        super::files::lock_exclusive(&file, path)?;
        Self::with_writer(Box::new(file), header)
    }

    /// Writes the log to `writer` (a file, or a test's failing disk), `header` first.
    pub fn with_writer(writer: Box<dyn Write + Send>, header: &LogHeader) -> std::io::Result<Self> {
        let recorder = Recorder::new(header).map_err(std::io::Error::other)?;
        let mut log = SessionLogFile {
            file: writer,
            recorder,
            cap: DEFAULT_LOG_CAP_BYTES,
            written: 0,
            capped: false,
            mirror: None,
            since_checkpoint: 0,
            last_checkpoint_ms: None,
        };
        log.write_pending()?;
        Ok(log)
    }

    /// Appends a note about the session (the agent's own session id); the fold is unchanged.
    pub fn note(&mut self, note: &LogNote) -> std::io::Result<()> {
        self.recorder.note(note).map_err(std::io::Error::other)?;
        self.write_pending()
    }

    /// Appends `msg`, stamped `ts`, and folds it; returns the commands the reducer asked for.
    /// The line is on its way to the disk before the caller runs those commands.
    pub fn record(&mut self, ts: u64, msg: Msg) -> std::io::Result<Vec<Cmd>> {
        let commands = self
            .recorder
            .record(ts, msg)
            .map_err(std::io::Error::other)?;
        self.write_pending()?;
        Ok(commands)
    }

    /// Appends a transcript line ([`TranscriptEntry`]) stamped `at_ms`; the fold is unchanged.
    pub fn transcript(&mut self, at_ms: u64, entry: &TranscriptEntry) -> std::io::Result<()> {
        self.recorder
            .transcript(at_ms, entry)
            .map_err(std::io::Error::other)?;
        self.write_pending()
    }

    /// Appends a checkpoint of the folded state, so a replay can prove it folds the same.
    pub fn checkpoint(&mut self) -> std::io::Result<()> {
        self.recorder.checkpoint().map_err(std::io::Error::other)?;
        self.write_pending()?;
        self.since_checkpoint = 0;
        Ok(())
    }

    /// Appends a checkpoint when one is due at `now_ms` ([`checkpoint_due`]); true when it
    /// did. The session calls it after every fold, so a log cut off by a crash replays
    /// verified up to a recent checkpoint.
    pub fn checkpoint_if_due(&mut self, now_ms: u64) -> std::io::Result<bool> {
        let last = *self.last_checkpoint_ms.get_or_insert(now_ms);
        if !checkpoint_due(self.since_checkpoint, now_ms.saturating_sub(last)) {
            return Ok(false);
        }
        self.checkpoint()?;
        self.last_checkpoint_ms = Some(now_ms);
        Ok(true)
    }

    /// Caps the log at `cap` bytes: the line that crosses it is written and its write fails
    /// with [`log_cap_error`], which stops the session; the lines that close the session
    /// still get [`CLOSING_ROOM_BYTES`].
    pub fn with_cap(mut self, cap: u64) -> Self {
        self.cap = cap;
        self
    }

    /// From now on, hands `mirror` a copy of every write once the file took it, so a reader
    /// in this process (the daemon) has each new line without reading the file back; returns
    /// the bytes the log held before, which the mirror does not see. The file stays the
    /// record: the mirror only sees what was written to it, in order.
    pub fn mirror(&mut self, mirror: LogMirror) -> u64 {
        self.mirror = Some(mirror);
        self.written
    }

    /// The state folded from the log so far.
    pub fn state(&self) -> &State {
        self.recorder.state()
    }

    /// Writes what the recorder encoded since the last write: whole lines, in one write, with
    /// no buffer in this process that a crash could lose.
    fn write_pending(&mut self) -> std::io::Result<()> {
        let bytes = self.recorder.take_bytes();
        if bytes.is_empty() {
            return Ok(());
        }
        let len = bytes.len() as u64;
        let room = log_room(self.written, len, self.cap, self.capped);
        if room == LogRoom::Full {
            return Err(log_cap_error(self.cap));
        }
        self.file.write_all(&bytes)?;
        self.written = self.written.saturating_add(len);
        self.since_checkpoint = self.since_checkpoint.saturating_add(len);
        self.file.flush()?;
        if let Some(mirror) = self.mirror.as_mut() {
            mirror(&bytes);
        }
        if room == LogRoom::Crosses {
            // The error stops the session, which writes why in the closing room.
            self.capped = true;
            return Err(log_cap_error(self.cap));
        }
        Ok(())
    }
}

/// The error a log past its cap gives: what the cap is and where it is set.
pub fn log_cap_error(cap: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        format!(
            "it reached its cap of {} (`[limits] log_max_mib` in panewise.toml)",
            if cap.is_multiple_of(1024 * 1024) {
                format!("{} MiB", cap / (1024 * 1024))
            } else {
                format!("{cap} bytes")
            }
        ),
    )
}

impl panewise_core::journal::transcript::TranscriptSink for SessionLogFile {
    fn transcript(&mut self, at_ms: u64, entry: &TranscriptEntry) -> std::io::Result<()> {
        SessionLogFile::transcript(self, at_ms, entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_pane_state::parse_log_bytes;

    #[test]
    fn a_mirror_sees_every_byte_written_after_it_was_attached_and_nothing_before() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = dir.path().join("session.jsonl");
        let header = LogHeader {
            agent_id: "a".into(),
            ..LogHeader::default()
        };
        let mut log = SessionLogFile::create(&path, &header).unwrap_or_else(|e| panic!("{e}"));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let copy = seen.clone();
        let before = log.mirror(Box::new(move |bytes: &[u8]| {
            copy.lock()
                .unwrap_or_else(|e| panic!("{e}"))
                .extend_from_slice(bytes);
        }));
        log.record(1, Msg::InitReady { at: 1 })
            .unwrap_or_else(|e| panic!("{e}"));
        log.checkpoint().unwrap_or_else(|e| panic!("{e}"));
        let on_disk = std::fs::read(&path).unwrap_or_default();
        let header_bytes = usize::try_from(before).unwrap_or(usize::MAX);
        assert!(header_bytes > 0 && header_bytes < on_disk.len());
        let mirrored = seen.lock().unwrap_or_else(|e| panic!("{e}")).clone();
        assert_eq!(on_disk.get(header_bytes..), Some(&mirrored[..]));
    }

    #[test]
    fn every_recorded_line_is_in_the_file_before_record_returns_and_the_log_replays() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = dir.path().join("session.jsonl");
        let header = LogHeader {
            agent_id: "a".into(),
            started_at_ms: 5,
            model: None,
            ..LogHeader::default()
        };
        let mut log = SessionLogFile::create(&path, &header).ok();
        let messages = [
            Msg::InitReady { at: 10 },
            Msg::StreamSubscribe { at: 11 },
            Msg::TurnStart {
                at: 12,
                content: Some("hi".into()),
            },
        ];
        for (index, msg) in messages.into_iter().enumerate() {
            let recorded = log.as_mut().map(|log| log.record(10 + index as u64, msg));
            assert!(matches!(recorded, Some(Ok(_))));
            let on_disk = std::fs::read(&path).unwrap_or_default();
            assert_eq!(
                on_disk.iter().filter(|byte| **byte == b'\n').count(),
                index + 2
            );
            assert!(on_disk.ends_with(b"\n"));
        }
        assert!(matches!(
            log.as_mut().map(SessionLogFile::checkpoint),
            Some(Ok(()))
        ));
        let read = parse_log_bytes(&std::fs::read(&path).unwrap_or_default());
        let folded = read.as_ref().ok().map(|log| log.fold_checked().is_ok());
        assert_eq!(folded, Some(true));
        assert_eq!(read.map(|log| log.entries.len()).ok(), Some(3));
    }

    #[test]
    fn a_checkpoint_is_due_after_30_s_or_1_mib_of_logging_and_never_after_nothing() {
        // (bytes since the last, ms since the last, due)
        let cases = [
            (0, 0, false),
            (0, 10 * CHECKPOINT_EVERY_MS, false),
            (1, CHECKPOINT_EVERY_MS - 1, false),
            (1, CHECKPOINT_EVERY_MS, true),
            (CHECKPOINT_EVERY_BYTES - 1, 0, false),
            (CHECKPOINT_EVERY_BYTES, 0, true),
        ];
        for (bytes, ms, due) in cases {
            assert_eq!(checkpoint_due(bytes, ms), due, "{bytes} B, {ms} ms");
        }
    }

    #[test]
    fn a_log_cut_off_after_a_periodic_checkpoint_replays_verified_up_to_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = dir.path().join("s.jsonl");
        let mut log = SessionLogFile::create(&path, &header()).ok();
        let mut due = Vec::new();
        for (at, msg) in [
            (0, Msg::InitReady { at: 0 }),
            (1_000, Msg::StreamSubscribe { at: 1_000 }),
            (CHECKPOINT_EVERY_MS + 1, Msg::StreamWatchdogTick),
            (CHECKPOINT_EVERY_MS + 2, Msg::StreamWatchdogTick),
        ] {
            let done = log.as_mut().map(|log| {
                let _ = log.record(at, msg);
                log.checkpoint_if_due(at).unwrap_or(false)
            });
            due.push(done == Some(true));
        }
        // The log is dropped without its closing checkpoint, as a kill leaves it.
        drop(log);
        assert_eq!(due, [false, false, true, false]);
        let read = parse_log_bytes(&std::fs::read(&path).unwrap_or_default());
        let checked = read.as_ref().ok().map(|log| {
            (
                log.checkpoints.len(),
                log.checkpoints.iter().all(|c| c.is_comparable()),
                log.fold_checked().is_ok(),
            )
        });
        assert_eq!(checked, Some((1, true, true)));
    }

    #[test]
    fn a_line_is_written_under_the_cap_the_crossing_one_stops_the_session_then_closing_room() {
        const CAP: u64 = 1000;
        let room = CLOSING_ROOM_BYTES;
        // (written, len, capped, room)
        let cases = [
            (0, 10, false, LogRoom::Fits),
            (990, 10, false, LogRoom::Fits),
            (990, 11, false, LogRoom::Crosses),
            (0, 5 * room, false, LogRoom::Crosses),
            (1001, 10, true, LogRoom::Closing),
            (CAP, room, true, LogRoom::Closing),
            (CAP, room + 1, true, LogRoom::Full),
            (u64::MAX, 1, true, LogRoom::Full),
        ];
        for (written, len, capped, expected) in cases {
            assert_eq!(
                log_room(written, len, CAP, capped),
                expected,
                "{written} + {len}, capped {capped}"
            );
        }
    }

    fn header() -> LogHeader {
        LogHeader {
            agent_id: "a".into(),
            ..LogHeader::default()
        }
    }

    #[test]
    fn a_log_is_never_created_over_an_existing_file_which_stays_as_it_was() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = dir.path().join("taken.jsonl");
        std::fs::write(&path, b"someone else's\n").ok();
        let error = SessionLogFile::create(&path, &header()).err();
        assert_eq!(
            error.as_ref().map(std::io::Error::kind),
            Some(std::io::ErrorKind::AlreadyExists)
        );
        assert!(error
            .map(|error| error.to_string())
            .unwrap_or_default()
            .contains("never writes over"));
        assert_eq!(
            std::fs::read(&path).ok(),
            Some(b"someone else's\n".to_vec())
        );
    }

    #[test]
    fn a_log_is_private_and_locked_while_it_is_written() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = dir.path().join("s.jsonl");
        let log = SessionLogFile::create(&path, &header());
        assert!(log.is_ok());
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o600));
        let probe = crate::journal::files::open_regular(&path);
        let locked = |probe: &std::io::Result<std::fs::File>| {
            probe
                .as_ref()
                .ok()
                .map(|file| crate::journal::files::is_locked_elsewhere(file).ok())
        };
        assert_eq!(locked(&probe), Some(Some(true)));
        drop(log);
        // The lock is the open file's (flock), so a child another test forks at this moment
        // holds it too until its exec closes the descriptor: await the release, bounded.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while locked(&probe) == Some(Some(true)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(locked(&probe), Some(Some(false)));
    }
}
