//! Recorded session logs: one JSON object per line, each with a schema version (R91).
//!
//! ```text
//! {"v":3,"header":{"agent_id":"a1","started_at_ms":1700000000000}}
//! {"v":3,"ts":1700000000000,"msg":{"type":"stream_subscribe","at":1700000000000}}
//! {"v":3,"ts":1700000000000,"transcript":{"kind":"prompt","text":"print hello"}}
//! {"v":3,"checkpoint":{"after":1,"state":{"now_ms":1700000000000,…}}}
//! ```
//!
//! Five kinds of line:
//! - a **header** (optional, first line only): what the fold starts from;
//! - a **message**: `ts` is exactly the `now_ms` the reducer saw, so folding the entries
//!   recomputes the state;
//! - a **checkpoint** (optional, anywhere after the header): the state the writer folded after
//!   the first `after` messages, `after` counting every message line above it. A replay folds
//!   the messages and compares its state with each checkpoint as it passes it
//!   ([`SessionLog::fold_checked`]), so a log can prove that the build reading it folds the same
//!   state as the build that wrote it, not merely the same state twice. A checkpoint whose
//!   state this build cannot decode (a state shape from another version) is skipped with a
//!   warning: checkpoints check a fold, they are never needed to do one;
//! - a **note** (optional, anywhere after the header): a fact learned as the session ran that
//!   is not a reducer input, such as the agent's own session id ([`LogNote`]); folds skip it;
//! - a **transcript** line (optional, anywhere after the header): the conversation itself
//!   ([`TranscriptEntry`]: prompts, the answer's text and thinking, tool calls with their input
//!   and output, approvals and who answered them, failures, retries, interrupts, the end of
//!   the session). Folds skip it, checkpoints do not count it, and one this build cannot read
//!   is skipped with a warning.
//!
//! [`Recorder`] writes a log the way a host does: it folds each message live and appends its
//! line, and appends a checkpoint when asked (typically at the end of a session).
//!
//! Lines are upgraded on read: [`upgrade`] turns any older schema into the current one before
//! it is decoded, so logs written by older versions stay readable.

pub mod transcript;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use transcript::{Actor, ToolCallStatus, TranscriptEntry, TranscriptLine};

use crate::cmd::Cmd;
use crate::error::{CheckpointMismatch, LogError};
use crate::msg::{Msg, MsgKind};
use crate::reducer::step_into;
use crate::state::State;

/// The schema version this build writes and the newest it reads.
///
/// - 1: headers and messages.
/// - 2: checkpoint lines; deadline messages carry their turn and deadline, and the watchdog
///   tick no longer carries its own `now_ms` (the line's `ts` is the one clock).
/// - 3: transcript lines ([`TranscriptEntry`]); every v2 line reads unchanged.
pub const LOG_SCHEMA_VERSION: u64 = 3;

/// The optional first line of a log: what the fold starts from, and what the session ran.
///
/// Only `agent_id` is required; every other field is absent from older logs and optional in
/// newer ones, so adding one never needs a schema version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    /// The agent the pane shows.
    pub agent_id: String,
    /// When recording started.
    #[serde(default)]
    pub started_at_ms: u64,
    /// The model configured at the start, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The supervised CLI's version, as it reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_version: Option<String>,
    /// The version of panewise that wrote the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panewise_version: Option<String>,
    /// The recorded session this one continues, by its log's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<String>,
    /// The provider as the person named it (`--provider codex`, `mock`), when that differs
    /// from `agent_id`'s name of the stream (`codex-app-server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// How panewise's own agent loop was configured, for a session of it: what a resume
    /// continues with. Absent for a supervised CLI and in logs written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_loop: Option<OwnLoopHeader>,
    /// The name the person gave the session (`new --name`), which `replay`, `resume` and a
    /// resumed session keep. Absent when it was given none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The settings of a session of panewise's own agent loop that its header keeps, so that the
/// session can be resumed as it ran (the provider, model and working directory are the
/// header's own fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnLoopHeader {
    /// The approval mode's name (`read-only`, `ask`, `auto`, `full-access`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// The window strategy, as its JSON configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Value>,
    /// The most model calls one turn may make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// The mock server's scenario, when the session ran against panewise's in-process mock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock_scenario: Option<String>,
}

/// A fact about the session learned while it runs that is not a reducer input: a note line
/// (`{"v":2,"note":{…}}`). Folds skip notes; tools that continue a session read them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogNote {
    /// The agent CLI's own id of the session (Claude Code's `session_id`, Codex's thread id,
    /// Gemini CLI's session id), which resumes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// The supervised agent wrote its first output: it came up (`panewise new` waits for
    /// this or the session's end).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_up: bool,
}

/// One recorded message with the time the reducer saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The injected clock for this message.
    pub ts: u64,
    /// The message.
    pub msg: Msg,
}

/// Something in a log that was skipped, reported rather than fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogWarning {
    /// The last line was cut off mid-write (a crash) and was skipped.
    TruncatedLastLine {
        /// 1-based line number.
        line: usize,
    },
    /// A message kind this build does not know (written by a newer version) was skipped.
    UnknownMessage {
        /// 1-based line number.
        line: usize,
        /// The unknown `type`.
        kind: String,
    },
    /// A checkpoint's state could not be decoded by this build and was skipped.
    UnreadableCheckpoint {
        /// 1-based line number.
        line: usize,
        /// Why it could not be decoded.
        reason: String,
    },
    /// A transcript line this build cannot read (a kind from a newer version, a bad field) was
    /// skipped; transcript lines never change the fold.
    UnreadableTranscript {
        /// 1-based line number.
        line: usize,
        /// Why it could not be read.
        reason: String,
    },
}

impl std::fmt::Display for LogWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogWarning::TruncatedLastLine { line } => {
                write!(
                    f,
                    "line {line}: truncated last line (crash mid-write?), skipped"
                )
            }
            LogWarning::UnknownMessage { line, kind } => {
                write!(f, "line {line}: unknown message type `{kind}`, skipped")
            }
            LogWarning::UnreadableCheckpoint { line, reason } => {
                write!(f, "line {line}: unreadable checkpoint ({reason}), skipped")
            }
            LogWarning::UnreadableTranscript { line, reason } => {
                write!(
                    f,
                    "line {line}: unreadable transcript line ({reason}), skipped"
                )
            }
        }
    }
}

/// A checkpoint line as read back: the state recorded after the first `after` messages.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCheckpoint {
    /// 1-based line number of the checkpoint.
    pub line: usize,
    /// How many message lines precede it in the log, as the writer counted them.
    pub after: usize,
    /// How many decoded [`SessionLog::entries`] precede it. Smaller than `after` when message
    /// lines of unknown kinds were skipped; such a checkpoint cannot be compared.
    pub entries_before: usize,
    /// The state the writer folded at that point.
    pub state: State,
}

impl RecordedCheckpoint {
    /// Whether every message before the checkpoint was decoded, so a fold can be compared.
    pub fn is_comparable(&self) -> bool {
        self.after == self.entries_before
    }
}

/// A parsed log.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionLog {
    /// The header, when the log has one.
    pub header: Option<LogHeader>,
    /// The entries, in order.
    pub entries: Vec<LogEntry>,
    /// The checkpoints, in order.
    pub checkpoints: Vec<RecordedCheckpoint>,
    /// What was skipped.
    pub warnings: Vec<LogWarning>,
    /// The note lines, in order.
    pub notes: Vec<LogNote>,
    /// The transcript lines, in order.
    pub transcript: Vec<TranscriptLine>,
}

impl SessionLog {
    /// The state the fold starts from: the header's agent, or an anonymous pane.
    pub fn initial_state(&self) -> State {
        let mut state = State::new(
            self.header
                .as_ref()
                .map_or_else(|| "replay".to_owned(), |h| h.agent_id.clone()),
        );
        state.now_ms = self.header.as_ref().map_or(0, |h| h.started_at_ms);
        state
    }

    /// Folds every entry from [`SessionLog::initial_state`].
    pub fn fold(&self) -> State {
        fold_entries(self.initial_state(), &self.entries)
    }

    /// The last checkpoint that covers every message of the log, when there is one: the
    /// writer's final state, to compare a replay against.
    pub fn final_checkpoint(&self) -> Option<&RecordedCheckpoint> {
        self.checkpoints
            .last()
            .filter(|c| c.is_comparable() && c.entries_before == self.entries.len())
    }

    /// Folds every entry like [`SessionLog::fold`], comparing the state with each comparable
    /// checkpoint as the fold reaches it; the first difference is the error. Checkpoints that
    /// follow a skipped message (see [`RecordedCheckpoint::is_comparable`]) are not compared.
    pub fn fold_checked(&self) -> Result<State, CheckpointMismatch> {
        let mut state = self.initial_state();
        let mut commands: Vec<Cmd> = Vec::new();
        let mut folded = 0;
        for checkpoint in self.checkpoints.iter().filter(|c| c.is_comparable()) {
            let upto = checkpoint.entries_before.min(self.entries.len());
            for entry in self.entries.get(folded..upto).unwrap_or_default() {
                commands.clear();
                state = step_into(state, entry.ts, entry.msg.clone(), &mut commands);
            }
            folded = folded.max(upto);
            if state != checkpoint.state {
                return Err(CheckpointMismatch {
                    line: checkpoint.line,
                    after: checkpoint.after,
                    recorded: Box::new(checkpoint.state.clone()),
                    folded: Box::new(state),
                });
            }
        }
        let rest = self.entries.get(folded..).unwrap_or_default();
        Ok(fold_entries(state, rest))
    }
}

/// Writes a session log while folding it live, the way a host records a session.
///
/// Each [`Recorder::record`] steps the state and appends the message's line; the bytes build up
/// in memory for the caller to write out (this crate does no I/O). [`Recorder::checkpoint`]
/// appends the current state as a checkpoint line.
#[derive(Debug, Clone)]
pub struct Recorder {
    state: State,
    messages: usize,
    bytes: Vec<u8>,
}

impl Recorder {
    /// Starts a log with `header` as its first line; the fold starts where
    /// [`SessionLog::initial_state`] will start when the log is read back.
    pub fn new(header: &LogHeader) -> Result<Self, serde_json::Error> {
        let mut bytes = encode_header(header)?.into_bytes();
        bytes.push(b'\n');
        let log = SessionLog {
            header: Some(header.clone()),
            ..SessionLog::default()
        };
        Ok(Recorder {
            state: log.initial_state(),
            messages: 0,
            bytes,
        })
    }

    /// Appends the line of `msg` at `ts`, then folds it; returns the commands the reducer asked
    /// for. The fold uses the message as it arrived, not its decoded line: if encoding ever
    /// lost something, the live state and a replay differ, and a checkpoint shows it.
    pub fn record(&mut self, ts: u64, msg: Msg) -> Result<Vec<Cmd>, serde_json::Error> {
        let entry = LogEntry { ts, msg };
        let line = encode_entry(&entry)?;
        self.bytes.extend_from_slice(line.as_bytes());
        self.bytes.push(b'\n');
        self.messages = self.messages.saturating_add(1);
        let mut commands = Vec::new();
        let state = std::mem::replace(&mut self.state, State::new(String::new()));
        self.state = step_into(state, entry.ts, entry.msg, &mut commands);
        Ok(commands)
    }

    /// Appends a note line; the fold is unchanged.
    pub fn note(&mut self, note: &LogNote) -> Result<(), serde_json::Error> {
        let line = encode_note(note)?;
        self.bytes.extend_from_slice(line.as_bytes());
        self.bytes.push(b'\n');
        Ok(())
    }

    /// Appends a transcript line stamped `ts`; the fold is unchanged.
    pub fn transcript(
        &mut self,
        ts: u64,
        entry: &TranscriptEntry,
    ) -> Result<(), serde_json::Error> {
        let line = encode_transcript(ts, entry)?;
        self.bytes.extend_from_slice(line.as_bytes());
        self.bytes.push(b'\n');
        Ok(())
    }

    /// Appends a checkpoint of the current state.
    pub fn checkpoint(&mut self) -> Result<(), serde_json::Error> {
        let line = encode_checkpoint(self.messages, &self.state)?;
        self.bytes.extend_from_slice(line.as_bytes());
        self.bytes.push(b'\n');
        Ok(())
    }

    /// The state folded so far.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Takes the bytes written since the last call, for the caller to append to its file.
    pub fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }

    /// Ends recording: the final state and the bytes not yet taken.
    pub fn finish(self) -> (State, Vec<u8>) {
        (self.state, self.bytes)
    }
}

/// Folds entries into `state`, stamping each entry's `ts` as the injected clock.
pub fn fold_entries(state: State, entries: &[LogEntry]) -> State {
    fold_messages(state, entries.iter().map(|e| (e.ts, e.msg.clone())))
}

/// Folds owned `(ts, msg)` pairs into `state`, reusing one command buffer for every message.
pub fn fold_messages(state: State, messages: impl IntoIterator<Item = (u64, Msg)>) -> State {
    let mut commands = Vec::new();
    messages.into_iter().fold(state, |state, (ts, msg)| {
        commands.clear();
        step_into(state, ts, msg, &mut commands)
    })
}

/// Encodes one entry as a log line (without the newline), at the current schema version.
pub fn encode_entry(entry: &LogEntry) -> Result<String, serde_json::Error> {
    #[derive(Serialize)]
    struct Line<'a> {
        v: u64,
        ts: u64,
        msg: &'a Msg,
    }
    serde_json::to_string(&Line {
        v: LOG_SCHEMA_VERSION,
        ts: entry.ts,
        msg: &entry.msg,
    })
}

/// Encodes a header line (without the newline).
pub fn encode_header(header: &LogHeader) -> Result<String, serde_json::Error> {
    serde_json::to_string(&serde_json::json!({"v": LOG_SCHEMA_VERSION, "header": header}))
}

/// Encodes a note line (without the newline).
pub fn encode_note(note: &LogNote) -> Result<String, serde_json::Error> {
    serde_json::to_string(&serde_json::json!({"v": LOG_SCHEMA_VERSION, "note": note}))
}

/// Encodes a transcript line (without the newline).
pub fn encode_transcript(ts: u64, entry: &TranscriptEntry) -> Result<String, serde_json::Error> {
    #[derive(Serialize)]
    struct Line<'a> {
        v: u64,
        ts: u64,
        transcript: &'a TranscriptEntry,
    }
    serde_json::to_string(&Line {
        v: LOG_SCHEMA_VERSION,
        ts,
        transcript: entry,
    })
}

/// Encodes a checkpoint line (without the newline): `state` as folded after the first `after`
/// message lines of the log.
pub fn encode_checkpoint(after: usize, state: &State) -> Result<String, serde_json::Error> {
    #[derive(Serialize)]
    struct Body<'a> {
        after: usize,
        state: &'a State,
    }
    #[derive(Serialize)]
    struct Line<'a> {
        v: u64,
        checkpoint: Body<'a>,
    }
    serde_json::to_string(&Line {
        v: LOG_SCHEMA_VERSION,
        checkpoint: Body { after, state },
    })
}

/// Brings a line written at schema `version` up to [`LOG_SCHEMA_VERSION`], one step per
/// older schema.
///
/// 1 → 2: a watchdog tick drops its own `now_ms` (v1 writers set it to the line's `ts`, the
/// clock the reducer now reads). Deadline messages of v1 name no turn and no deadline; they
/// decode with both absent and skip those checks, exactly as v1 folded them.
///
/// 2 → 3: nothing changes; v3 adds a kind of line (transcript) that v2 never wrote.
pub fn upgrade(line: usize, version: u64, mut value: Value) -> Result<Value, LogError> {
    match version {
        LOG_SCHEMA_VERSION => Ok(value),
        2 => upgrade(line, 3, value),
        1 => {
            if let Some(msg) = value.get_mut("msg").and_then(Value::as_object_mut) {
                if msg.get("type").and_then(Value::as_str) == Some("stream_watchdog_tick") {
                    msg.remove("now_ms");
                }
            }
            upgrade(line, 2, value)
        }
        found if found > LOG_SCHEMA_VERSION => Err(LogError::NewerVersion {
            line,
            found,
            supported: LOG_SCHEMA_VERSION,
        }),
        found => Err(LogError::Malformed {
            line,
            reason: format!("schema version {found} never existed"),
        }),
    }
}

/// Parses a whole log given as text. See [`parse_log_bytes`].
pub fn parse_log(text: &str) -> Result<SessionLog, LogError> {
    parse_log_bytes(text.as_bytes())
}

/// Parses a whole log as it lies on disk.
///
/// Blank lines are skipped. A line that cannot be read (not UTF-8, not JSON, a known message
/// with bad fields, a header after the log began) is an error naming its line. Two things are
/// skipped and reported as warnings instead: a cut-off last line (no trailing newline, not
/// readable: a crash mid-write), and a message whose `type` this build does not know (written by
/// a newer version).
pub fn parse_log_bytes(bytes: &[u8]) -> Result<SessionLog, LogError> {
    let mut log = SessionLog::default();
    let mut reader = LogReader::default();
    let ends_with_newline = bytes.ends_with(b"\n");
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last_content_line = lines
        .iter()
        .rposition(|l| !l.trim_ascii().is_empty())
        .map(|i| i + 1);
    for (index, raw) in lines.iter().enumerate() {
        let is_cut_off = !ends_with_newline && Some(index + 1) == last_content_line;
        match reader.read_line(raw, is_cut_off)? {
            LogLine::Blank => {}
            LogLine::Header(header) => log.header = Some(header),
            LogLine::Entry(entry) => log.entries.push(entry),
            LogLine::Checkpoint(checkpoint) => log.checkpoints.push(checkpoint),
            LogLine::Warning(warning) => log.warnings.push(warning),
            LogLine::Note(note) => log.notes.push(note),
            LogLine::Transcript(entry) => log.transcript.push(entry),
        }
    }
    Ok(log)
}

/// What one line of a log holds, as [`LogReader::read_line`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum LogLine {
    /// A blank line.
    Blank,
    /// The header (only ever the first line with content).
    Header(LogHeader),
    /// A message.
    Entry(LogEntry),
    /// A checkpoint, with the count of decoded entries before it.
    Checkpoint(RecordedCheckpoint),
    /// Something skipped.
    Warning(LogWarning),
    /// A note about the session ([`LogNote`]).
    Note(LogNote),
    /// A line of the conversation ([`TranscriptEntry`]).
    Transcript(TranscriptLine),
}

/// Reads a log one line at a time, so a log can be folded as it is read (or as it is written,
/// followed live) in memory bounded by one line and the state. It keeps only the counts the
/// rules of the format need: whether anything came before a header, and how many message lines
/// a checkpoint follows.
#[derive(Debug, Clone, Default)]
pub struct LogReader {
    line: usize,
    anything_read: bool,
    entries: usize,
    unknown_messages: usize,
}

impl LogReader {
    /// The 1-based number of the line read last.
    pub fn line_number(&self) -> usize {
        self.line
    }

    /// Reads the next line (without its newline). `is_cut_off` says the line is the last one and
    /// had no newline: a crash mid-write, so an unreadable one is a warning, not an error.
    pub fn read_line(&mut self, raw: &[u8], is_cut_off: bool) -> Result<LogLine, LogError> {
        self.line = self.line.saturating_add(1);
        let line = self.line;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.trim_ascii().is_empty() {
            return Ok(LogLine::Blank);
        }
        let parsed = std::str::from_utf8(raw)
            .map_err(|e| format!("not valid UTF-8 ({e})"))
            .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| json_reason(&e)));
        let read = match parsed {
            Ok(value) => self.parse_line(line, value)?,
            Err(_) if is_cut_off => LogLine::Warning(LogWarning::TruncatedLastLine { line }),
            Err(reason) => return Err(LogError::Malformed { line, reason }),
        };
        self.anything_read = true;
        match &read {
            LogLine::Entry(_) => self.entries = self.entries.saturating_add(1),
            LogLine::Warning(LogWarning::UnknownMessage { .. }) => {
                self.unknown_messages = self.unknown_messages.saturating_add(1);
            }
            _ => {}
        }
        Ok(read)
    }

    fn parse_line(&self, line: usize, value: Value) -> Result<LogLine, LogError> {
        let malformed = |reason: String| LogError::Malformed { line, reason };
        let version = value
            .get("v")
            .and_then(Value::as_u64)
            .ok_or(LogError::MissingVersion { line })?;
        let mut value = upgrade(line, version, value)?;
        if let Some(checkpoint) = value.get_mut("checkpoint").map(Value::take) {
            if value.get("msg").is_some() || value.get("header").is_some() {
                return Err(malformed(
                    "a checkpoint line holds nothing but the checkpoint".into(),
                ));
            }
            return self.parse_checkpoint(line, checkpoint);
        }
        if let Some(entry) = value.get_mut("transcript").map(Value::take) {
            if value.get("msg").is_some() || value.get("header").is_some() {
                return Err(malformed(
                    "a transcript line holds nothing but its entry".into(),
                ));
            }
            let ts = value
                .get("ts")
                .and_then(Value::as_u64)
                .ok_or_else(|| malformed("transcript line without an integer `ts`".into()))?;
            // The conversation never changes the fold: an entry this build cannot read (a
            // kind added later) is skipped, not fatal.
            return Ok(match serde_json::from_value::<TranscriptEntry>(entry) {
                Ok(entry) => LogLine::Transcript(TranscriptLine { ts, entry }),
                Err(error) => LogLine::Warning(LogWarning::UnreadableTranscript {
                    line,
                    reason: json_reason(&error),
                }),
            });
        }
        if let Some(note) = value.get_mut("note").map(Value::take) {
            if value.get("msg").is_some() || value.get("header").is_some() {
                return Err(malformed("a note line holds nothing but the note".into()));
            }
            let note = serde_json::from_value(note)
                .map_err(|e| malformed(format!("bad note: {}", json_reason(&e))))?;
            return Ok(LogLine::Note(note));
        }
        if let Some(header) = value.get_mut("header").map(Value::take) {
            if value.get("msg").is_some() {
                return Err(malformed(
                    "a line holds either a header or a message".into(),
                ));
            }
            if self.anything_read {
                return Err(malformed("a header may only open the log".into()));
            }
            let header = serde_json::from_value(header)
                .map_err(|e| malformed(format!("bad header: {}", json_reason(&e))))?;
            return Ok(LogLine::Header(header));
        }
        let ts = value
            .get("ts")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("missing or non-integer `ts`".into()))?;
        let msg_value = value
            .get_mut("msg")
            .map(Value::take)
            .ok_or_else(|| malformed("missing `msg`".into()))?;
        let kind = msg_value
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| malformed("`msg` has no string `type`".into()))?;
        match serde_json::from_value::<Msg>(msg_value) {
            Ok(msg) => Ok(LogLine::Entry(LogEntry { ts, msg })),
            // Only a message kind this build does not know is skipped; a known kind with a bad
            // field (an unknown enum value inside it, say) is malformed, never silently lost.
            Err(_) if !is_known_kind(&kind) => {
                Ok(LogLine::Warning(LogWarning::UnknownMessage { line, kind }))
            }
            Err(error) => Err(malformed(format!("`{kind}`: {}", json_reason(&error)))),
        }
    }

    fn parse_checkpoint(&self, line: usize, mut body: Value) -> Result<LogLine, LogError> {
        let malformed = |reason: String| LogError::Malformed { line, reason };
        let after = body
            .get("after")
            .and_then(Value::as_u64)
            .and_then(|after| usize::try_from(after).ok())
            .ok_or_else(|| malformed("checkpoint without an integer `after`".into()))?;
        // Every message line above counts, decoded or skipped as unknown.
        let message_lines = self.entries.saturating_add(self.unknown_messages);
        if after != message_lines {
            return Err(malformed(format!(
                "checkpoint after {after} messages, but {message_lines} precede it"
            )));
        }
        let state_value = body
            .get_mut("state")
            .map(Value::take)
            .ok_or_else(|| malformed("checkpoint without a `state`".into()))?;
        Ok(match serde_json::from_value::<State>(state_value) {
            Ok(state) => LogLine::Checkpoint(RecordedCheckpoint {
                line,
                after,
                entries_before: self.entries,
                state,
            }),
            Err(error) => LogLine::Warning(LogWarning::UnreadableCheckpoint {
                line,
                reason: json_reason(&error),
            }),
        })
    }
}

/// Whether `kind` names a [`Msg`] variant.
fn is_known_kind(kind: &str) -> bool {
    serde_json::from_value::<MsgKind>(Value::from(kind)).is_ok()
}

/// A serde error without its position: positions count within one log line, which would read
/// as if they were line numbers of the log.
fn json_reason(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rsplit_once(" at line ") {
        Some((reason, _)) => format!("{reason} (column {})", error.column()),
        None => text,
    }
}
