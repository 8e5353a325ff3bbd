//! Reading a file someone named — a log given as a path, every `*.jsonl` in the sessions
//! directory, a recording to evaluate — without letting the file stall the reader.
//!
//! A path can name a FIFO (whose `open` waits for a writer and whose `read` waits for data), a
//! device (`/dev/zero` never ends), a socket, a directory, or a regular file far larger than
//! any log. Every such read goes through here: [`open_regular`] opens the path with
//! `O_NONBLOCK` (so opening a FIFO returns at once instead of waiting for a writer), then asks
//! the open handle (`fstat`, not the path, so a swap between check and read changes nothing)
//! what it is, and refuses anything but a regular file. [`read_capped`] then reads it whole
//! up to a cap, and [`read_line_capped`] reads one line up to a cap. `O_NONBLOCK` has no effect
//! on a regular file's reads, so the handle is used as is.
//!
//! The caps are constants, named in the errors: [`MAX_READ_BYTES`] for a file read whole,
//! [`MAX_LINE_BYTES`] for one line.

use std::fs::File;
use std::io::{BufRead, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use panewise_core::config::MAX_READ_BYTES;

/// The longest line a log reader takes (64 MiB): far over any line panewise writes (a tool's
/// output is cut well before this; a checkpoint of a long session is a few MiB), and small
/// enough that a file of one endless line is refused before it fills the memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a regular file: a FIFO, a device, a socket or a directory, which could
    /// block the reader or never end.
    #[error("{} is {kind}, not a regular file; only a regular file is read", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is ("a FIFO", "a character device", ...).
        kind: &'static str,
    },
    /// It is larger than the cap.
    #[error(
        "{} holds {size} bytes, over the {cap}-byte cap on a file read whole ({} MiB)",
        path.display(),
        cap / (1024 * 1024)
    )]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// Its size as read (at least the cap plus one when it grew while read).
        size: u64,
        /// The cap.
        cap: u64,
    },
}

impl FileError {
    /// The error as the `std::io::Error` callers that speak `io` return; its message is
    /// this error's.
    pub fn into_io(self) -> std::io::Error {
        let kind = match &self {
            FileError::Io { source, .. } => source.kind(),
            FileError::NotRegular { .. } | FileError::TooLarge { .. } => {
                std::io::ErrorKind::InvalidInput
            }
        };
        std::io::Error::new(kind, self)
    }
}

/// What a file type is, in words, or `None` for a regular file. Pure, so the table of kinds
/// is tested without making devices.
pub fn irregular_kind(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_fifo() {
        Some("a named pipe (FIFO)")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_dir() {
        Some("a directory")
    } else {
        Some("not a file")
    }
}

/// Opens `path` for reading without blocking (`O_NONBLOCK`: a FIFO opens at once) and
/// refuses it unless the opened handle is a regular file. Links are followed: what is
/// checked is what would be read.
pub fn open_regular(path: &Path) -> Result<File, FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let file_type = file.metadata().map_err(io)?.file_type();
    match irregular_kind(file_type) {
        None => Ok(file),
        Some(kind) => Err(FileError::NotRegular {
            path: path.to_path_buf(),
            kind,
        }),
    }
}

/// All of `path`, a regular file ([`open_regular`]) of at most `cap` bytes: refused before any
/// read when its size says it is over, and when it grows past the cap while read.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, FileError> {
    read_opened(open_regular(path)?, path, cap)
}

/// All of `file`, opened by [`open_regular`] from `path` (named in errors), at most `cap`
/// bytes: for a caller that does something with the handle first (probes its lock).
pub fn read_opened(file: File, path: &Path, cap: u64) -> Result<Vec<u8>, FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let size = file.metadata().map_err(io)?.len();
    let too_large = |size| FileError::TooLarge {
        path: path.to_path_buf(),
        size,
        cap,
    };
    if size > cap {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_capped`] at [`MAX_READ_BYTES`]: a log or a recording read whole.
pub fn read_log(path: &Path) -> Result<Vec<u8>, FileError> {
    read_capped(path, MAX_READ_BYTES)
}

/// A line longer than the cap.
#[derive(Debug, thiserror::Error)]
#[error("line {line} is over the {cap}-byte cap on one line ({} MiB); it was not read", cap / (1024 * 1024))]
pub struct LineTooLong {
    /// The 1-based line number.
    pub line: usize,
    /// The cap.
    pub cap: usize,
}

/// Reads the next line of `reader` into `line` (cleared first, the newline kept as read) up
/// to `cap` bytes; `Ok(0)` at the end. A line over the cap is an `InvalidData` error whose
/// message is [`LineTooLong`] for line `number`, and nothing past the cap is held in memory.
pub fn read_line_capped(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
    number: usize,
) -> std::io::Result<usize> {
    line.clear();
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            return Ok(line.len());
        }
        let (take, found) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        if line.len() + take > cap.saturating_add(usize::from(found)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                LineTooLong { line: number, cap },
            ));
        }
        line.extend_from_slice(buffer.get(..take).unwrap_or_default());
        reader.consume(take);
        if found {
            return Ok(line.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"))
    }

    fn fifo(at: &Path) {
        let made = nix::unistd::mkfifo(at, nix::sys::stat::Mode::S_IRWXU);
        assert!(made.is_ok(), "{made:?}");
    }

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_at_once_and_said_what_they_are() {
        let dir = dir();
        let pipe = dir.path().join("pipe.jsonl");
        fifo(&pipe);
        let cases: [(&Path, &str); 3] = [
            (&pipe, "is a named pipe (FIFO)"),
            (Path::new("/dev/zero"), "is a character device"),
            (dir.path(), "is a directory"),
        ];
        for (path, said) in cases {
            let message = read_log(path).err().map(|e| e.to_string());
            assert!(
                message
                    .as_deref()
                    .is_some_and(|m| m.contains(said) && m.contains("not a regular file")),
                "{path:?}: {message:?}"
            );
        }
    }

    #[test]
    fn a_file_over_the_cap_is_refused_by_its_size_and_the_cap_is_named() {
        let dir = dir();
        let path = dir.path().join("big.jsonl");
        let file = File::create(&path).map(|file| file.set_len(1 << 30));
        assert!(matches!(file, Ok(Ok(()))));
        let message = read_log(&path).err().map(|e| e.to_string());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("1073741824 bytes") && m.contains("512 MiB")),
            "{message:?}"
        );
    }

    #[test]
    fn reads_are_capped_exactly() {
        let dir = dir();
        let path = dir.path().join("small");
        assert!(std::fs::write(&path, b"0123456789").is_ok());
        let cases = [(10, true), (11, true), (9, false), (0, false)];
        for (cap, ok) in cases {
            assert_eq!(read_capped(&path, cap).is_ok(), ok, "cap {cap}");
        }
    }

    /// (input, cap, the lines read, the error's text if one ends the read)
    type LineCase = (
        &'static [u8],
        usize,
        &'static [&'static [u8]],
        Option<&'static str>,
    );

    #[test]
    fn lines_are_read_whole_up_to_the_cap_and_a_longer_one_is_an_error_naming_it() {
        let cases: [LineCase; 5] = [
            (b"ab\ncd\n", 2, &[b"ab\n", b"cd\n"], None),
            (b"ab\ncd", 2, &[b"ab\n", b"cd"], None),
            (
                b"ab\ncde\n",
                2,
                &[b"ab\n"],
                Some("line 2 is over the 2-byte cap"),
            ),
            (b"abc", 2, &[], Some("line 1 is over")),
            (b"", 2, &[], None),
        ];
        for (input, cap, lines, error) in cases {
            let mut reader = std::io::BufReader::with_capacity(1, input);
            let mut line = Vec::new();
            let mut read = Vec::new();
            let mut failed = None;
            loop {
                match read_line_capped(&mut reader, &mut line, cap, read.len() + 1) {
                    Ok(0) => break,
                    Ok(_) => read.push(line.clone()),
                    Err(e) => {
                        failed = Some(e.to_string());
                        break;
                    }
                }
            }
            assert_eq!(read, lines, "{input:?}");
            assert_eq!(failed.is_some(), error.is_some(), "{input:?}: {failed:?}");
            if let (Some(failed), Some(error)) = (failed, error) {
                assert!(failed.contains(error), "{failed}");
            }
        }
    }
}
