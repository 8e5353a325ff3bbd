//! The byte-stream front end shared by every provider: it cuts arriving bytes into lines (a line
//! may be split across any number of reads), numbers them, hands each to the provider's line
//! decoder and counts what came out.

use crate::acp::AcpDecoder;
use crate::claude::ClaudeDecoder;
use crate::codex::CodexDecoder;
use crate::codex_appserver::AppServerDecoder;
use crate::error::DecodeError;
use crate::event::ProviderEvent;
use crate::gemini::GeminiDecoder;
use crate::line::LineDecoder;
pub use crate::line::{DecodeCounts, Decoded, Provider, UnknownProvider};

/// A line longer than this is reported as a [`DecodeError`] and skipped, so that a stream without
/// newlines cannot make the decoder buffer without bound. Real lines are far below it.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug)]
enum Format {
    Claude(ClaudeDecoder),
    Codex(CodexDecoder),
    Gemini(GeminiDecoder),
    // Boxed: its turn figures make it several times the size of the others.
    AppServer(Box<AppServerDecoder>),
    Acp(AcpDecoder),
}

impl Format {
    fn decode_line(&mut self, line: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        match self {
            Format::Claude(decoder) => decoder.decode_line(line, out),
            Format::Codex(decoder) => decoder.decode_line(line, out),
            Format::Gemini(decoder) => decoder.decode_line(line, out),
            Format::AppServer(decoder) => decoder.decode_line(line, out),
            Format::Acp(decoder) => decoder.decode_line(line, out),
        }
    }
}

/// A pure, incremental decoder of one provider's stream: feed it bytes as they arrive, get
/// normalised events back. It does no I/O and keeps only the unfinished last line and the little
/// state a format needs (for example which model call's usage was already reported).
///
/// ```
/// use panewise_providers::{Decoder, Provider, ProviderEvent};
///
/// let mut decoder = Decoder::new(Provider::Codex);
/// let mut out = Vec::new();
/// decoder.feed(br#"{"type":"turn.sta"#, &mut out);
/// assert!(out.is_empty());
/// decoder.feed(b"rted\"}\n", &mut out);
/// decoder.finish(&mut out);
/// assert_eq!(out, vec![Ok(ProviderEvent::TurnStarted { prompt: None })]);
/// ```
#[derive(Debug)]
pub struct Decoder {
    provider: Provider,
    format: Format,
    pending: Vec<u8>,
    skipping_long_line: bool,
    max_line_bytes: usize,
    line_number: u64,
    counts: DecodeCounts,
    scratch: Vec<ProviderEvent>,
}

impl Decoder {
    /// A decoder for `provider`'s stream format.
    pub fn new(provider: Provider) -> Self {
        let format = match provider {
            Provider::ClaudeCode => Format::Claude(ClaudeDecoder::default()),
            Provider::Codex => Format::Codex(CodexDecoder::default()),
            Provider::GeminiCli => Format::Gemini(GeminiDecoder),
            Provider::CodexAppServer => Format::AppServer(Box::default()),
            Provider::Acp => Format::Acp(AcpDecoder::default()),
        };
        Decoder {
            provider,
            format,
            pending: Vec::new(),
            skipping_long_line: false,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            line_number: 0,
            counts: DecodeCounts::default(),
            scratch: Vec::new(),
        }
    }

    /// The same decoder with another limit on line length (see [`DEFAULT_MAX_LINE_BYTES`]).
    pub fn with_max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes.max(1);
        self
    }

    /// Which provider's format this decoder reads.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// What has been produced so far.
    pub fn counts(&self) -> DecodeCounts {
        self.counts
    }

    /// Decodes every line that `bytes` completes and appends the results to `out`. An unfinished
    /// last line is kept until a later call (or [`Decoder::finish`]) completes it.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Decoded>) {
        while !bytes.is_empty() {
            match crate::scan::find_byte(bytes, b'\n') {
                Some(newline) => {
                    let (head, rest) = bytes.split_at(newline);
                    bytes = rest.get(1..).unwrap_or_default();
                    if self.pending.is_empty() && !self.skipping_long_line {
                        self.complete_line(head, out);
                    } else {
                        self.buffer(head);
                        let line = std::mem::take(&mut self.pending);
                        self.complete_line(&line, out);
                        // Keep the allocation for the next split line.
                        self.pending = line;
                        self.pending.clear();
                    }
                }
                None => {
                    self.buffer(bytes);
                    bytes = &[];
                }
            }
        }
    }

    /// Tells the decoder of a line the host wrote to the agent (an approval's answer): a
    /// request the host answered is closed by the host, and the agent going on with it
    /// afterwards is not reported as a withdrawal. Lines of other formats are ignored.
    pub fn host_line(&mut self, line: &[u8]) {
        match &mut self.format {
            Format::AppServer(decoder) => decoder.host_line(line),
            Format::Acp(decoder) => decoder.host_line(line),
            Format::Claude(_) | Format::Codex(_) | Format::Gemini(_) => {}
        }
    }

    /// The client sent the agent a prompt (ACP: what the agent writes from now on is the
    /// turn's, not a loaded session's history). Nothing for the other formats.
    pub fn prompt_sent(&mut self) {
        if let Format::Acp(decoder) = &mut self.format {
            decoder.prompt_sent();
        }
    }

    /// Ends the stream: decodes a last line that had no newline. The decoder can be fed again
    /// afterwards, as if a new stream began (line numbers go on).
    pub fn finish(&mut self, out: &mut Vec<Decoded>) {
        if self.skipping_long_line || !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.complete_line(&line, out);
            self.pending = line;
            self.pending.clear();
        }
    }

    fn buffer(&mut self, bytes: &[u8]) {
        if self.skipping_long_line {
            return;
        }
        if self.pending.len() + bytes.len() > self.max_line_bytes {
            self.pending.clear();
            self.skipping_long_line = true;
            // The error is reported when the line ends, so that its number is right and the
            // output does not depend on how the bytes were split.
            return;
        }
        self.pending.extend_from_slice(bytes);
    }

    fn complete_line(&mut self, line: &[u8], out: &mut Vec<Decoded>) {
        self.line_number += 1;
        self.counts.lines += 1;
        if std::mem::take(&mut self.skipping_long_line) || line.len() > self.max_line_bytes {
            self.push_error(
                format!("line longer than {} bytes, skipped", self.max_line_bytes),
                out,
            );
            return;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        self.scratch.clear();
        match self.format.decode_line(line, &mut self.scratch) {
            Ok(()) => {
                if self.scratch.is_empty() {
                    self.counts.silent_lines += 1;
                }
                for event in self.scratch.drain(..) {
                    self.counts.events += 1;
                    if matches!(event, ProviderEvent::Unknown { .. }) {
                        self.counts.unknown_events += 1;
                    }
                    out.push(Ok(event));
                }
            }
            Err(message) => {
                self.scratch.clear();
                self.push_error(message, out);
            }
        }
    }

    fn push_error(&mut self, message: String, out: &mut Vec<Decoded>) {
        self.counts.decode_errors += 1;
        out.push(Err(DecodeError {
            line: self.line_number,
            message,
        }));
    }
}

/// Decodes a whole captured stream at once.
pub fn decode_all(provider: Provider, bytes: &[u8]) -> (Vec<Decoded>, DecodeCounts) {
    let mut decoder = Decoder::new(provider);
    let mut out = Vec::new();
    decoder.feed(bytes, &mut out);
    decoder.finish(&mut out);
    (out, decoder.counts())
}
