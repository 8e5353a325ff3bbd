//! The byte-stream front end shared by every provider: it cuts arriving bytes into lines (a line
//! may be split across any number of reads), numbers them, hands each to the provider's line
//! decoder and counts what came out.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::acp::AcpDecoder;
use crate::claude::ClaudeDecoder;
use crate::codex::CodexDecoder;
use crate::codex_appserver::AppServerDecoder;
use crate::error::DecodeError;
use crate::event::ProviderEvent;
use crate::gemini::GeminiDecoder;

/// One decoder output: an event, or a line that could not be decoded.
pub type Decoded = Result<ProviderEvent, DecodeError>;

/// A line longer than this is reported as a [`DecodeError`] and skipped, so that a stream without
/// newlines cannot make the decoder buffer without bound. Real lines are far below it.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The coding-agent CLIs whose streams this crate decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Claude Code, `--output-format stream-json` (with or without `--include-partial-messages`).
    ClaudeCode,
    /// OpenAI Codex, `exec --json`.
    Codex,
    /// Gemini CLI, `--output-format stream-json`.
    GeminiCli,
    /// OpenAI Codex, `app-server`: JSON-RPC 2.0 lines without the `jsonrpc` field.
    CodexAppServer,
    /// Any agent speaking the Agent Client Protocol over stdio (Gemini CLI `--acp` first).
    Acp,
}

impl Provider {
    /// Every provider, in a fixed order.
    pub const ALL: [Provider; 5] = [
        Provider::ClaudeCode,
        Provider::Codex,
        Provider::GeminiCli,
        Provider::CodexAppServer,
        Provider::Acp,
    ];

    /// The name used on the command line and in JSON: `claude-code`, `codex`, `gemini-cli`,
    /// `codex-app-server`, `acp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::ClaudeCode => "claude-code",
            Provider::Codex => "codex",
            Provider::GeminiCli => "gemini-cli",
            Provider::CodexAppServer => "codex-app-server",
            Provider::Acp => "acp",
        }
    }
}

impl Provider {
    /// Which CLI wrote `line`, told by the line's `type` (and, for a `result`, by its fields):
    /// each CLI opens its stream with a line only it writes. A JSON-RPC message without a
    /// `type` is ACP when it carries `"jsonrpc":"2.0"` and Codex app-server when it does not.
    /// `None` for a line that could be any of them or none (not JSON, no `type`, an `error`
    /// notice).
    pub fn detect(line: &[u8]) -> Option<Provider> {
        #[derive(Deserialize)]
        struct Probe<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow)]
            subtype: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            stats: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            jsonrpc: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            method: Option<&'a serde_json::value::RawValue>,
        }
        let probe: Probe<'_> = serde_json::from_slice(line).ok()?;
        let Some(kind) = probe.kind.as_deref() else {
            return match (probe.jsonrpc, probe.id.or(probe.method)) {
                (Some(_), _) => Some(Provider::Acp),
                (None, Some(_)) => Some(Provider::CodexAppServer),
                (None, None) => None,
            };
        };
        match kind {
            "system" | "assistant" | "user" | "stream_event" | "control_request"
            | "control_response" => Some(Provider::ClaudeCode),
            "thread.started" | "turn.started" | "turn.completed" | "turn.failed" => {
                Some(Provider::Codex)
            }
            kind if kind.starts_with("item.") => Some(Provider::Codex),
            "init" | "message" | "tool_use" | "tool_result" => Some(Provider::GeminiCli),
            "result" if probe.stats.is_some() => Some(Provider::GeminiCli),
            "result" if probe.subtype.is_some() => Some(Provider::ClaudeCode),
            _ => None,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// The text was not one of the provider names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown provider `{0}` (expected claude-code, codex, gemini-cli, codex-app-server or acp)"
)]
pub struct UnknownProvider(pub String);

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.as_str() == text)
            .ok_or_else(|| UnknownProvider(text.to_owned()))
    }
}

/// How many lines, events, unknown events and errors a decoder has produced so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecodeCounts {
    /// Complete lines seen, blank ones included.
    pub lines: u64,
    /// Events produced, unknown ones included.
    pub events: u64,
    /// [`ProviderEvent::Unknown`] events produced.
    pub unknown_events: u64,
    /// Lines that could not be decoded.
    pub decode_errors: u64,
    /// Well-formed lines of a known kind that carry nothing for the pane (an answer to the
    /// host's own request, a list of slash commands), counted so that nothing vanishes unseen.
    #[serde(default)]
    pub silent_lines: u64,
}

/// The per-provider part: turns one complete line into events. `Err` carries the reason the
/// line is malformed; events pushed before an `Err` are discarded by the caller.
pub(crate) trait LineDecoder {
    fn decode_line(&mut self, line: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String>;
}

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
