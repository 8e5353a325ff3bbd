//! The one client model of a session: what every front end (`panewise run`'s terminal,
//! `attach`, the dashboard, `agents`, the daemon's summaries) knows about a session, folded and
//! worded once.
//!
//! - [`SessionView`]: the fold of a session's recorded log lines with the reducer, as
//!   `panewise replay` folds a log, with the conversation it carries.
//! - [`open_request`]: the request that waits for a person, read from the folded state. It is
//!   the ONE place that reads the reducer's pending approvals and questions, so a change of how
//!   the reducer keeps them is adapted here alone.
//! - [`parse_reply`]: the answers a person types (or presses) to an approval, one set for
//!   every front end ([`REPLIES`] lists them).
//! - [`what_text`], [`age_text`], [`tokens_text`], [`cost_text`]: a row's words, one precision
//!   and one meaning everywhere. TOKENS counts every token the session's calls processed:
//!   input, whether read from the prompt cache, written to it or neither, plus output
//!   ([`total_tokens`]); `in` columns count all of the input ([`input_tokens`]).
//!
//! Pure: no I/O, no clock (times are arguments), no lock.

use panewise_pane_state::log::{LogLine, LogReader, TranscriptEntry};
use panewise_pane_state::{Msg, State, WindowStandDown};
use panewise_protocol::{CostSource, FailureKind};

use crate::methods::Decision;
use crate::summary::{classify, AgentState, Observed, PaneFields, SessionSummary, WaitingFor};
pub use crate::summary::{input_tokens, model_of, open_request, total_tokens};

/// The most conversation entries a view keeps; older ones are dropped (the log keeps them
/// all, `panewise replay` prints them).
pub const TRANSCRIPT_CAP: usize = 2_000;

/// What folding one log line did.
#[derive(Debug, Clone, PartialEq)]
pub enum Folded {
    /// The line was not the next one expected (a line of an earlier subscription still in
    /// flight): skipped, never folded twice.
    OutOfOrder,
    /// The header: the fold started over.
    Header,
    /// A message, folded into the state.
    Message,
    /// An entry of the conversation, kept.
    Transcript(TranscriptEntry),
    /// A line the fold does not use (blank, checkpoint, note, a warning).
    Other,
    /// A line that could not be read, with why.
    Unreadable(String),
}

/// A session as a client sees it: its recorded log lines folded with the reducer.
#[derive(Debug, Clone)]
pub struct SessionView {
    reader: LogReader,
    next_line: u64,
    state: State,
    transcript: Vec<TranscriptEntry>,
    streaming_chars: u64,
    unreadable: Option<String>,
}

impl Default for SessionView {
    fn default() -> Self {
        SessionView::new()
    }
}

impl SessionView {
    /// A view of nothing yet: the next line expected is line 0.
    pub fn new() -> SessionView {
        SessionView {
            reader: LogReader::default(),
            next_line: 0,
            state: State::new(""),
            transcript: Vec::new(),
            streaming_chars: 0,
            unreadable: None,
        }
    }

    /// Folds the log line numbered `index` (from 0, as the daemon numbers a subscription's
    /// lines); any other than the next expected is skipped.
    pub fn fold_line(&mut self, index: u64, line: &str) -> Folded {
        if index != self.next_line {
            return Folded::OutOfOrder;
        }
        self.next_line = index.saturating_add(1);
        match self.reader.read_line(line.as_bytes(), false) {
            Ok(LogLine::Header(header)) => {
                self.state = State::new(header.agent_id);
                Folded::Header
            }
            Ok(LogLine::Entry(entry)) => {
                self.step(entry.ts, entry.msg);
                Folded::Message
            }
            Ok(LogLine::Transcript(transcript)) => {
                self.streaming_chars = 0;
                self.transcript.push(transcript.entry.clone());
                if self.transcript.len() > TRANSCRIPT_CAP {
                    let excess = self.transcript.len().saturating_sub(TRANSCRIPT_CAP);
                    self.transcript.drain(..excess);
                }
                Folded::Transcript(transcript.entry)
            }
            Ok(
                LogLine::Blank | LogLine::Checkpoint(_) | LogLine::Warning(_) | LogLine::Note(_),
            ) => Folded::Other,
            Err(error) => {
                let why = format!("line {index}: {error}");
                self.unreadable = Some(why.clone());
                Folded::Unreadable(why)
            }
        }
    }

    /// Folds one recorded message at `ts` (a front end that gets the messages themselves,
    /// not log lines).
    pub fn step(&mut self, ts: u64, msg: Msg) {
        if let Msg::OutputStreamed { chars, .. } = &msg {
            self.streaming_chars = self.streaming_chars.saturating_add(*chars);
        }
        let state = std::mem::replace(&mut self.state, State::new(""));
        self.state = panewise_pane_state::step(state, ts, msg).0;
    }

    /// The folded pane state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The conversation, newest last, at most [`TRANSCRIPT_CAP`] entries.
    pub fn transcript(&self) -> &[TranscriptEntry] {
        &self.transcript
    }

    /// The index of the next line expected (where a new subscription resumes).
    pub fn next_line(&self) -> u64 {
        self.next_line
    }

    /// Characters the model streamed since the last conversation entry: the text still being
    /// written, which the log records whole only once it ends.
    pub fn streaming_chars(&self) -> u64 {
        self.streaming_chars
    }

    /// The last line that could not be read, with why.
    pub fn unreadable(&self) -> Option<&str> {
        self.unreadable.as_deref()
    }

    /// The request that waits for a person ([`open_request`]).
    pub fn open_request(&self) -> Option<WaitingFor> {
        open_request(&self.state)
    }

    /// The state class, with what the daemon `observed`.
    pub fn class(&self, observed: &Observed) -> AgentState {
        classify(&self.state, observed)
    }

    /// The summary's pane-derived fields, with what the daemon `observed`.
    pub fn fields(&self, observed: &Observed) -> PaneFields {
        PaneFields::of(&self.state, observed)
    }

    /// The terminal title of a client showing the session named `name`: whether it needs
    /// the person, works, or neither, so it stops saying "needs input" once answered.
    pub fn title(&self, name: &str) -> String {
        title_text(
            name,
            self.open_request().is_some(),
            self.state.turn_phase.is_working(),
        )
    }

    /// Whether the model's window is a guess from the model-name table.
    pub fn window_is_guess(&self) -> bool {
        self.state
            .plausible_reading()
            .and_then(|reading| reading.window_source)
            .is_some_and(|source| source == panewise_pane_state::WindowSource::Model)
    }
}

/// A terminal title: `panewise: NAME needs input`, `… working`, or `panewise: NAME`.
pub fn title_text(name: &str, waits: bool, working: bool) -> String {
    match (waits, working) {
        (true, _) => format!("panewise: {name} needs input"),
        (false, true) => format!("panewise: {name} working"),
        (false, false) => format!("panewise: {name}"),
    }
}

/// A person's answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Allow this request.
    AllowOnce,
    /// Allow it and every later one of the same tool in this session.
    AllowForSession,
    /// Deny it.
    Deny,
}

impl Reply {
    /// The API's decision, with `message` for the agent when it is a denial.
    pub fn decision(self, message: Option<String>) -> Decision {
        match self {
            Reply::AllowOnce => Decision::AllowOnce,
            Reply::AllowForSession => Decision::AllowForSession,
            Reply::Deny => Decision::Deny { message },
        }
    }
}

/// Every answer a typed line gives (`panewise run`'s terminal, `attach`), each with what it
/// means: matched whole, after trimming, in any case. The dashboard answers with single keys,
/// the three letters of this list that are not bound to something else there ([`reply_key`]).
pub const REPLIES: [(&str, Reply); 13] = [
    ("y", Reply::AllowOnce),
    ("yes", Reply::AllowOnce),
    ("allow", Reply::AllowOnce),
    ("allow once", Reply::AllowOnce),
    ("a", Reply::AllowForSession),
    ("always", Reply::AllowForSession),
    ("s", Reply::AllowForSession),
    ("session", Reply::AllowForSession),
    ("allow for session", Reply::AllowForSession),
    ("allow for this session", Reply::AllowForSession),
    ("n", Reply::Deny),
    ("no", Reply::Deny),
    ("deny", Reply::Deny),
];

/// The answer `text` is, if it is one of [`REPLIES`]; inner runs of spaces count as one.
pub fn parse_reply(text: &str) -> Option<Reply> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let wanted = words.join(" ").to_lowercase();
    REPLIES
        .iter()
        .find(|(word, _)| *word == wanted)
        .map(|(_, reply)| *reply)
}

/// The answer a dashboard key gives: `y`, `a` or `n`, as [`parse_reply`] reads them (its `s`
/// stops a session, and capitals are not answers, so a key held by mistake answers nothing).
pub fn reply_key(key: char) -> Option<Reply> {
    matches!(key, 'y' | 'a' | 'n')
        .then(|| parse_reply(key.encode_utf8(&mut [0; 4])))
        .flatten()
}

/// What a row says the session does or waits for (unescaped: the caller sanitises it).
pub fn what_text(session: &SessionSummary) -> String {
    match (&session.waiting_for, &session.tool) {
        (Some(WaitingFor::Approval { tool, argument, .. }), _) => {
            format!("approve {tool} {argument}")
        }
        (Some(WaitingFor::Question { questions, .. }), _) => {
            format!("answer: {}", questions.join(" / "))
        }
        (Some(WaitingFor::Budget { reason }), _) => reason.clone(),
        (None, Some(tool)) => match &session.tool_arg {
            Some(arg) => format!("{tool} {arg}"),
            None => tool.clone(),
        },
        (None, None) => match (&session.failure, session.failure_kind) {
            (Some(why), _) => format!("failed: {why}"),
            (None, Some(kind)) if session.state == AgentState::Failed => {
                format!("failed: {}", failure_kind_text(kind))
            }
            (None, _) => session
                .window_stood_down
                .as_ref()
                .map(window_stood_down_text)
                .unwrap_or_default(),
        },
    }
}

/// The window stage's stand-down in words (R110), numbers only, counted as [`count_text`]
/// counts: `window stood down: floor 1.9k > threshold 1`.
pub fn window_stood_down_text(stand_down: &WindowStandDown) -> String {
    format!(
        "window stood down: floor {} > threshold {}",
        count_text(stand_down.floor_tokens),
        count_text(stand_down.threshold_tokens)
    )
}

/// A failure's kind in words.
pub fn failure_kind_text(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::RateLimited => "rate limited",
        FailureKind::Overloaded => "overloaded",
        FailureKind::ServerError => "server error",
        FailureKind::Auth => "authentication",
        FailureKind::ContextOverflow => "context overflow",
        FailureKind::StreamDisconnected => "stream cut",
        FailureKind::ProcessExited => "agent exited",
        FailureKind::Unknown => "error",
    }
}

/// How long since `since_ms`, at `now_ms`, in its largest whole unit: `12s`, `3m`, `2h`, `4d`
/// (a time in the future reads `0s`).
pub fn age_text(now_ms: u64, since_ms: u64) -> String {
    let seconds = now_ms.saturating_sub(since_ms) / 1000;
    match seconds {
        0..=59 => format!("{seconds}s"),
        60..=3599 => format!("{}m", seconds / 60),
        3600..=86_399 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

/// A token count read at a glance: `950`, `3.8k`, `1.2M` (one decimal; `-` when unknown).
pub fn tokens_text(tokens: Option<u64>) -> String {
    match tokens {
        None => "-".to_owned(),
        Some(n) => count_text(n),
    }
}

/// A count with one decimal of its unit, rounded: `950`, `3.8k`, `1.2M`.
pub fn count_text(n: u64) -> String {
    // Rounded to the unit's tenths in integers: 999_950 reads `1.0M`, never `1000.0k`.
    let tenths = |unit: u128| (u128::from(n) + unit / 20) / (unit / 10);
    match n {
        0..=999 => n.to_string(),
        _ if tenths(1_000) < 10_000 => {
            let t = tenths(1_000);
            format!("{}.{}k", t / 10, t % 10)
        }
        _ => {
            let t = tenths(1_000_000);
            format!("{}.{}M", t / 10, t % 10)
        }
    }
}

/// A cost: `$0.0123`, `~$0.0123` when estimated, `-` when unknown (four decimals: a call of
/// a small model costs fractions of a cent).
pub fn cost_text(cost: Option<f64>, source: Option<CostSource>) -> String {
    match (cost, source) {
        (Some(cost), Some(CostSource::Estimated)) => format!("~${cost:.4}"),
        (Some(cost), _) => format!("${cost:.4}"),
        (None, _) => "-".to_owned(),
    }
}

/// COST with the session's cap, when it has one (R112): `$0.0123/$0.50`, or the tokens
/// against a token cap when no cost cap is set (`1.2k/20.0k tok`).
pub fn cost_cap_text(
    cost: Option<f64>,
    source: Option<CostSource>,
    tokens: Option<u64>,
    budget: Option<&panewise_pane_state::BudgetCaps>,
) -> String {
    let spent = cost_text(cost, source);
    match budget {
        Some(panewise_pane_state::BudgetCaps {
            max_cost_usd: Some(cap),
            ..
        }) => format!("{spent}/{}", panewise_pane_state::budget::usd(*cap)),
        Some(panewise_pane_state::BudgetCaps {
            max_tokens: Some(cap),
            ..
        }) => format!("{}/{} tok", tokens_text(tokens), tokens_text(Some(*cap))),
        _ => spent,
    }
}

#[cfg(test)]
mod tests;

/// Whether a session log line is the note that a supervised agent came up (wrote its first
/// output): what `panewise new` waits for before it says the session started.
pub fn is_agent_up_note(line: &str) -> bool {
    // Only note lines are read whole; a session's other lines are skipped on a substring.
    line.contains("\"agent_up\"")
        && serde_json::from_str::<serde_json::Value>(line)
            .is_ok_and(|value| value["note"]["agent_up"] == serde_json::Value::Bool(true))
}

#[cfg(test)]
mod agent_up_tests {
    use super::is_agent_up_note;

    #[test]
    fn only_the_note_says_the_agent_came_up() {
        for (line, up) in [
            (r#"{"v":3,"note":{"agent_up":true}}"#, true),
            (
                r#"{"v":3,"note":{"agent_session_id":"s","agent_up":true}}"#,
                true,
            ),
            (r#"{"v":3,"note":{"agent_session_id":"s"}}"#, false),
            (r#"{"v":3,"note":{"agent_up":false}}"#, false),
            (
                r#"{"v":3,"transcript":{"kind":"text","text":"\"agent_up\":true"}}"#,
                false,
            ),
            (r#"{"v":3,"msg":{"type":"init_ready","at":1}}"#, false),
            ("{not json \"agent_up\"", false),
        ] {
            assert_eq!(is_agent_up_note(line), up, "{line}");
        }
    }
}
