//! The own loop's archive file (W75): every span the context window removed, masked or folded,
//! and every tool result a provider cleared, kept whole beside the session log as
//! `<log>.archive.jsonl`, one [`ArchivedSpan`] per JSON line.
//!
//! Like the session log it is append-only and crash-safe: each line is written whole with one
//! `write` and reaches the file before the next span is taken; it is created on the first span
//! (a session whose window never let anything go has none), new and mode 0600, since it holds
//! the conversation. Reading keeps every whole line and ignores a last line torn by a kill.
//! An id already written is not written again. A resumed session reloads its predecessor's
//! archive and writes it into its own, so the chain's spans stay recallable.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use panewise_window::{ArchivedSpan, SpanId};

use crate::journal::files::{create_new_private, open_regular};

/// The archive beside `log`: `<log>.archive.jsonl`.
pub fn archive_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".archive.jsonl");
    PathBuf::from(name)
}

/// True for a file name that is an archive rather than a session log.
pub fn is_archive(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".archive.jsonl")
}

/// An archive being written; the file is created on the first span.
#[derive(Debug)]
pub struct ArchiveFile {
    path: PathBuf,
    file: Option<File>,
    written: std::collections::BTreeSet<SpanId>,
}

impl ArchiveFile {
    /// The archive at `path`, not created until a span is written.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            file: None,
            written: std::collections::BTreeSet::new(),
        }
    }

    /// Where it is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `span` as one line, unless its id was written before; true when written.
    pub fn write(&mut self, span: &ArchivedSpan) -> io::Result<bool> {
        if self.written.contains(&span.id) {
            return Ok(false);
        }
        let mut line = serde_json::to_vec(span).map_err(io::Error::other)?;
        line.push(b'\n');
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(create_new_private(&self.path)?),
        };
        // One write of the whole line: a kill leaves at most this line torn, never an earlier one.
        file.write_all(&line)?;
        file.flush()?;
        self.written.insert(span.id.clone());
        Ok(true)
    }
}

/// What reading an archive found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// The spans of every whole, readable line, in order, each id once.
    pub spans: Vec<ArchivedSpan>,
    /// The last line had no newline (a write cut by a kill) and was left out.
    pub torn_tail: bool,
    /// Whole lines that were not a span, left out.
    pub unreadable_lines: usize,
}

/// Reads the archive at `path`. A missing file is an empty archive (the session let nothing
/// go); anything but a regular file is an error.
pub fn load(path: &Path) -> io::Result<Loaded> {
    let mut file = match open_regular(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(error) => return Err(error),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(parse(&bytes))
}

/// The spans of an archive's bytes: whole lines only, each id once.
pub fn parse(bytes: &[u8]) -> Loaded {
    let mut loaded = Loaded::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let Some(end) = rest.iter().position(|byte| *byte == b'\n') else {
            loaded.torn_tail = true;
            break;
        };
        let (line, after) = rest.split_at(end);
        rest = after.get(1..).unwrap_or_default();
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<ArchivedSpan>(line) {
            Ok(span) => {
                if seen.insert(span.id.clone()) {
                    loaded.spans.push(span);
                }
            }
            Err(_) => loaded.unreadable_lines += 1,
        }
    }
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_window::{Removal, Role, SpanKind};
    use std::os::unix::fs::PermissionsExt;

    fn span(content: &str) -> ArchivedSpan {
        ArchivedSpan {
            id: SpanId::of(Role::Tool, content, &[]),
            kind: SpanKind::ToolResult,
            removal: Removal::Dropped,
            iteration: 3,
            window_index: 4,
            born_at_ms: Some(17),
            call_id: Some("c1".into()),
            tool: Some("shell".into()),
            description: "tool result of shell \"echo\", 5 chars".into(),
            content: content.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    #[test]
    fn w75_the_path_sits_beside_the_log() {
        let path = archive_path(Path::new("/x/s.jsonl"));
        assert_eq!(path, Path::new("/x/s.jsonl.archive.jsonl"));
        assert!(is_archive(&path));
        assert!(!is_archive(Path::new("/x/s.jsonl")));
    }

    #[test]
    fn w75_spans_round_trip_once_each_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = archive_path(&dir.path().join("s.jsonl"));
        let mut file = ArchiveFile::new(path.clone());
        assert!(!path.exists(), "created on the first span only");
        let spans = [span("one\n"), span("two \u{1b}[1m\"quoted\"")];
        assert!(file.write(&spans[0]).unwrap());
        assert!(file.write(&spans[1]).unwrap());
        assert!(!file.write(&spans[0]).unwrap(), "an id is written once");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.spans, spans);
        assert!(!loaded.torn_tail);
    }

    #[test]
    fn w75_a_torn_last_line_is_ignored_and_earlier_lines_kept() {
        let whole = |content: &str| {
            let mut line = serde_json::to_vec(&span(content)).unwrap();
            line.push(b'\n');
            line
        };
        let first = whole("first");
        let second = whole("second");
        let cases: Vec<(Vec<u8>, usize, bool, usize)> = vec![
            (Vec::new(), 0, false, 0),
            ([first.clone(), second.clone()].concat(), 2, false, 0),
            // A kill mid-write: the second line lost its end.
            (
                [first.clone(), second[..second.len() / 2].to_vec()].concat(),
                1,
                true,
                0,
            ),
            // Only the newline was lost: the line is still not whole, so not trusted.
            (
                [first.clone(), second[..second.len() - 1].to_vec()].concat(),
                1,
                true,
                0,
            ),
            // A whole line that is not a span is counted and left out.
            (
                [first.clone(), b"{oops}\n".to_vec(), second.clone()].concat(),
                2,
                false,
                1,
            ),
            // The same span twice is kept once.
            ([first.clone(), first.clone()].concat(), 1, false, 0),
        ];
        for (bytes, spans, torn, unreadable) in cases {
            let loaded = parse(&bytes);
            assert_eq!(
                (
                    loaded.spans.len(),
                    loaded.torn_tail,
                    loaded.unreadable_lines
                ),
                (spans, torn, unreadable),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }

    #[test]
    fn w75_a_missing_archive_is_empty_and_a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(&dir.path().join("none")).unwrap(), Loaded::default());
        assert!(load(dir.path()).is_err());
    }
}
