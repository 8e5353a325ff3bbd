//! Recorded session logs: one JSON object per line, each with a schema version (R91).
//!
//! ```text
//! {"v":1,"header":{"agent_id":"a1","started_at_ms":1700000000000}}
//! {"v":1,"ts":1700000000000,"msg":{"type":"stream_subscribe","at":1700000000000}}
//! ```
//!
//! `ts` is exactly the `now_ms` the reducer saw, so folding the entries recomputes the state.
//! Lines are upgraded on read: [`upgrade`] turns any older schema into the current one before
//! it is decoded, so logs written by older versions stay readable.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::LogError;
use crate::msg::Msg;
use crate::reducer::step_into;
use crate::state::State;

/// The schema version this build writes and the newest it reads.
pub const LOG_SCHEMA_VERSION: u64 = 1;

/// The optional first line of a log: what the fold starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    /// The agent the pane shows.
    pub agent_id: String,
    /// When recording started.
    #[serde(default)]
    pub started_at_ms: u64,
    /// The model configured at the start, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
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
        }
    }
}

/// A parsed log.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionLog {
    /// The header, when the log has one.
    pub header: Option<LogHeader>,
    /// The entries, in order.
    pub entries: Vec<LogEntry>,
    /// What was skipped.
    pub warnings: Vec<LogWarning>,
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

/// Brings a line written at schema `version` up to [`LOG_SCHEMA_VERSION`].
///
/// Version 1 is the first published schema, so today every readable line is already current;
/// a future version adds one arm here per older schema, each rewriting the line one step.
pub fn upgrade(line: usize, version: u64, value: Value) -> Result<Value, LogError> {
    match version {
        LOG_SCHEMA_VERSION => Ok(value),
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
    let ends_with_newline = bytes.ends_with(b"\n");
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last_content_line = lines
        .iter()
        .rposition(|l| !l.trim_ascii().is_empty())
        .map(|i| i + 1);
    for (index, raw) in lines.iter().enumerate() {
        let line = index + 1;
        if raw.trim_ascii().is_empty() {
            continue;
        }
        let is_cut_off = !ends_with_newline && Some(line) == last_content_line;
        let parsed = std::str::from_utf8(raw)
            .map_err(|e| format!("not valid UTF-8 ({e})"))
            .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| json_reason(&e)));
        let value = match parsed {
            Ok(value) => value,
            Err(_) if is_cut_off => {
                log.warnings.push(LogWarning::TruncatedLastLine { line });
                continue;
            }
            Err(reason) => return Err(LogError::Malformed { line, reason }),
        };
        parse_line(&mut log, line, value)?;
    }
    Ok(log)
}

fn parse_line(log: &mut SessionLog, line: usize, value: Value) -> Result<(), LogError> {
    let malformed = |reason: String| LogError::Malformed { line, reason };
    let version = value
        .get("v")
        .and_then(Value::as_u64)
        .ok_or(LogError::MissingVersion { line })?;
    let mut value = upgrade(line, version, value)?;
    if let Some(header) = value.get_mut("header").map(Value::take) {
        if value.get("msg").is_some() {
            return Err(malformed(
                "a line holds either a header or a message".into(),
            ));
        }
        if log.header.is_some() || !log.entries.is_empty() || !log.warnings.is_empty() {
            return Err(malformed("a header may only open the log".into()));
        }
        let header = serde_json::from_value(header)
            .map_err(|e| malformed(format!("bad header: {}", json_reason(&e))))?;
        log.header = Some(header);
        return Ok(());
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
        Ok(msg) => log.entries.push(LogEntry { ts, msg }),
        // Only a message kind this build does not know is skipped; a known kind with a bad
        // field (an unknown enum value inside it, say) is malformed, never silently lost.
        Err(_) if !is_known_kind(&kind) => {
            log.warnings.push(LogWarning::UnknownMessage { line, kind });
        }
        Err(error) => {
            return Err(malformed(format!("`{kind}`: {}", json_reason(&error))));
        }
    }
    Ok(())
}

/// Whether `kind` names a [`Msg`] variant: a bare `{"type": kind}` fails to decode with
/// "unknown variant" exactly when it does not.
fn is_known_kind(kind: &str) -> bool {
    match serde_json::from_value::<Msg>(serde_json::json!({ "type": kind })) {
        Ok(_) => true,
        Err(error) => !error.to_string().starts_with("unknown variant"),
    }
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
