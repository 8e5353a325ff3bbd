//! Telling which CLI wrote a stream from its first lines as they arrive, holding those lines
//! for the decoder that is then made for it.
//!
//! Every byte pushed is scanned once: a line is tried with [`Provider::detect`] when its
//! newline arrives, never while it is still partial, so a first line of N bytes costs O(N)
//! however many reads it takes (trying each partial line, or counting the held newlines again
//! after every read, was O(N²): a 100 MB first line took minutes). A held line is cut past
//! [`DEFAULT_MAX_LINE_BYTES`] + 1 bytes: the decoder skips such a line whatever its end, and
//! the cut keeps the head's memory bounded by the lines it holds, not by the stream.

use crate::decoder::DEFAULT_MAX_LINE_BYTES;
use crate::line::Provider;

/// Lines tried before giving up on telling the CLI.
pub const DETECT_LINES: usize = 20;

/// Bytes held to check a provider given by the person against the stream: past this the
/// check is given up rather than hold more of a long line (the warning is advice, the
/// decoding does not need it).
pub const CHECK_BYTES: usize = 1024 * 1024;

/// The stream's head while its CLI is being told: push bytes until [`Sniffer::wants_more`] is
/// false, then hand [`Sniffer::into_parts`]'s bytes to a [`crate::Decoder`] before the rest.
#[derive(Debug)]
pub struct Sniffer {
    bytes: Vec<u8>,
    line_start: usize,
    lines: usize,
    found: Option<Provider>,
    checking_only: bool,
    done: bool,
}

impl Sniffer {
    /// A sniffer; `checking_only` when the provider is already known and the head is read only
    /// to warn when the stream disagrees, so that it holds at most about [`CHECK_BYTES`].
    pub fn new(checking_only: bool) -> Self {
        Sniffer {
            bytes: Vec::new(),
            line_start: 0,
            lines: 0,
            found: None,
            checking_only,
            done: false,
        }
    }

    /// Whether more of the stream is needed: nothing was found yet, fewer than
    /// [`DETECT_LINES`] lines were tried, the stream has not ended (and, when only checking,
    /// fewer than [`CHECK_BYTES`] are held).
    pub fn wants_more(&self) -> bool {
        !self.done
            && self.found.is_none()
            && self.lines < DETECT_LINES
            && !(self.checking_only && self.bytes.len() >= CHECK_BYTES)
    }

    /// Takes the next bytes of the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        while let Some(newline) = crate::scan::find_byte(bytes, b'\n') {
            let (line, rest) = bytes.split_at(newline);
            self.hold(line);
            self.end_line();
            self.bytes.push(b'\n');
            self.line_start = self.bytes.len();
            bytes = rest.get(1..).unwrap_or_default();
        }
        self.hold(bytes);
    }

    /// The stream ended: a last line without its newline is tried too.
    pub fn finish(&mut self) {
        if self.line_start < self.bytes.len() {
            self.end_line();
        }
        self.done = true;
    }

    /// The provider found, if any, and the bytes held (every byte pushed, but for long lines
    /// cut past the decoder's limit).
    pub fn into_parts(self) -> (Option<Provider>, Vec<u8>) {
        (self.found, self.bytes)
    }

    /// Whether the stream was empty but for whitespace.
    pub fn is_blank(&self) -> bool {
        self.bytes.iter().all(u8::is_ascii_whitespace)
    }

    fn hold(&mut self, part: &[u8]) {
        let held = self.bytes.len().saturating_sub(self.line_start);
        let room = DEFAULT_MAX_LINE_BYTES
            .saturating_add(1)
            .saturating_sub(held);
        self.bytes
            .extend_from_slice(part.get(..room.min(part.len())).unwrap_or_default());
    }

    fn end_line(&mut self) {
        if self.found.is_none() && self.lines < DETECT_LINES {
            // A line cut by `hold` is past the decoder's limit and is not tried: it would not
            // parse, and the decoder skips it anyway.
            let line = self.bytes.get(self.line_start..).unwrap_or_default();
            if line.len() <= DEFAULT_MAX_LINE_BYTES {
                self.found = Provider::detect(line);
            }
        }
        self.lines = self.lines.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODEX: &[u8] = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n";

    fn sniff(stream: &[u8], chunk: usize, checking_only: bool) -> (Option<Provider>, Vec<u8>) {
        let mut sniffer = Sniffer::new(checking_only);
        let mut chunks = stream.chunks(chunk);
        while sniffer.wants_more() {
            match chunks.next() {
                Some(bytes) => sniffer.push(bytes),
                None => sniffer.finish(),
            }
        }
        let rest: Vec<u8> = chunks.flatten().copied().collect();
        let (found, mut held) = sniffer.into_parts();
        held.extend_from_slice(&rest);
        (found, held)
    }

    #[test]
    fn the_provider_is_found_however_the_head_is_split() {
        let long_text = format!(
            "{{\"type\":\"item.completed\",\"item\":{{\"text\":\"{}\"}}}}\n",
            "x".repeat(100_000)
        );
        let streams: [(&[u8], Option<Provider>); 5] = [
            (CODEX, Some(Provider::Codex)),
            (
                b"not json\n\n{\"type\":\"init\"}",
                Some(Provider::GeminiCli),
            ),
            (long_text.as_bytes(), Some(Provider::Codex)),
            (b"{\"no\":\"type\"}\n", None),
            (b"", None),
        ];
        for (stream, expected) in streams {
            for chunk in [1, 7, 64, 4096, 1 << 20] {
                let (found, held) = sniff(stream, chunk, false);
                assert_eq!(found, expected, "chunk {chunk}");
                assert_eq!(held, stream, "every byte is handed on (chunk {chunk})");
            }
        }
    }

    #[test]
    fn detection_gives_up_after_its_lines() {
        let mut stream = b"{}\n".repeat(DETECT_LINES);
        stream.extend_from_slice(CODEX);
        assert_eq!(sniff(&stream, 5, false).0, None);
        assert_eq!(sniff(&stream[3..], 5, false).0, Some(Provider::Codex));
    }

    #[test]
    fn a_check_holds_no_more_than_its_bytes() {
        let stream = vec![b'x'; CHECK_BYTES * 3];
        let mut sniffer = Sniffer::new(true);
        let mut pushed = 0;
        for chunk in stream.chunks(64 * 1024) {
            if !sniffer.wants_more() {
                break;
            }
            sniffer.push(chunk);
            pushed += chunk.len();
        }
        assert_eq!(pushed, CHECK_BYTES);
        assert_eq!(sniffer.into_parts(), (None, vec![b'x'; CHECK_BYTES]));
    }
}
