//! What `panewise run` shows.
//!
//! - On an interactive terminal (stdin, stdout and stderr all terminals, no `--json`), the line
//!   editor of `editor.rs` owns the terminal: its prompt is the live line, and the answer,
//!   notices and failures are printed above it.
//! - Otherwise the answer goes to stdout, notices and failures to stderr, and — when stderr is
//!   a terminal — a live line is redrawn on stderr every second and on every change.
//! - With `--json`, stdout is the versioned NDJSON stream of `docs/JSON.md` and nothing else.
//!
//! Everything shown on a terminal that came from the agent, the model or a tool is escaped
//! (`terminal_text.rs`); the answer written to a file or pipe is kept verbatim.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use panewise_host::session::lines::{Answer, Question, View};
use panewise_pane_state::log::Actor;
use panewise_pane_state::{State, TurnPhase};
use panewise_providers::ProviderEvent;
use serde_json::{json, Value};

use super::editor::EditorHandle;
use super::live::{self, Activity};
use crate::terminal_text::{escape_controls, one_line};

pub use crate::json::JSON_SCHEMA_VERSION;

/// The most bytes of a tool's output one `--json` line carries; the rest is counted.
pub const JSON_TOOL_OUTPUT_MAX: usize = 16 * 1024;

/// A status line on stderr is redrawn at most this often on changes (and once a second).
const REDRAW_MS: u128 = 100;

/// What the session is, for `session_started`.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    /// The provider as `run --provider` names it.
    pub provider: String,
    /// The model, when known.
    pub model: Option<String>,
    /// The agent's working directory.
    pub cwd: PathBuf,
}

/// Where the view writes.
enum Screen {
    /// `--json`: NDJSON on stdout.
    Json,
    /// Plain streams: the answer on stdout (escaped when it is a terminal), the rest on
    /// stderr, with a live line there when it is a terminal.
    Plain {
        live_line: bool,
        stdout_terminal: bool,
    },
    /// The line editor owns the terminal.
    Editor(EditorHandle),
}

pub struct TerminalView {
    screen: Screen,
    info: SessionInfo,
    /// Lines are prompts: the prompt mark shows between turns.
    interactive: bool,
    activity: Activity,
    frame: usize,
    turn_started: Option<Instant>,
    last_draw: Option<Instant>,
    /// The answer's unfinished line: plain mode has written it (the live line waits), the
    /// editor has not (it prints whole lines).
    partial: String,
    mid_line: bool,
    /// The question waiting for the person's answer.
    asking: Option<Question>,
    /// The failure last said (its time), so each is said once.
    failure_said: Option<u64>,
    /// The answer could not be written to stdout (a full disk, a closed pipe).
    lost_output: Option<std::io::Error>,
    /// Whether the last turn's answer printed anything (a blank line then separates turns).
    turn_printed: bool,
    last_state: Option<State>,
    /// The stuck stream was said since the agent last wrote.
    stuck_said: bool,
}

impl TerminalView {
    /// The plain or `--json` view.
    pub fn new(json: bool, live_line: bool, interactive: bool) -> Self {
        let screen = if json {
            Screen::Json
        } else {
            Screen::Plain {
                live_line,
                stdout_terminal: std::io::IsTerminal::is_terminal(&std::io::stdout()),
            }
        };
        Self::on(screen, interactive)
    }

    /// The view of an interactive terminal, drawn by the line editor.
    pub fn with_editor(editor: EditorHandle, interactive: bool) -> Self {
        Self::on(Screen::Editor(editor), interactive)
    }

    fn on(screen: Screen, interactive: bool) -> Self {
        TerminalView {
            screen,
            info: SessionInfo::default(),
            interactive,
            activity: Activity::default(),
            frame: 0,
            turn_started: None,
            last_draw: None,
            partial: String::new(),
            mid_line: false,
            asking: None,
            failure_said: None,
            lost_output: None,
            turn_printed: false,
            last_state: None,
            stuck_said: false,
        }
    }

    /// Names the session for `session_started`.
    pub fn describe(mut self, info: SessionInfo) -> Self {
        self.info = info;
        self
    }

    /// Ends the editor (the terminal is the caller's again) and any unfinished line.
    pub fn finish(&mut self) {
        self.end_line();
        match &mut self.screen {
            Screen::Editor(editor) => editor.stop(),
            Screen::Plain {
                live_line: true, ..
            } => eprint!("\r\x1b[2K"),
            Screen::Plain { .. } | Screen::Json => {}
        }
    }

    /// The retries the agent announced in the last turn.
    pub fn retries(&self) -> u64 {
        self.activity.retries
    }

    /// The error that kept the answer from stdout, if one did.
    pub fn lost_output(&self) -> Option<&std::io::Error> {
        self.lost_output.as_ref()
    }

    /// Ends the answer's unfinished line.
    pub fn end_line(&mut self) {
        let partial = std::mem::take(&mut self.partial);
        if let Screen::Editor(editor) = &self.screen {
            if !partial.is_empty() {
                editor.print(partial);
            }
            return;
        }
        if std::mem::take(&mut self.mid_line) {
            self.write_stdout("\n");
        }
    }

    /// A line for the person, from panewise (its parts from the agent already escaped).
    fn say(&mut self, line: &str) {
        self.end_line();
        match &self.screen {
            Screen::Editor(editor) => editor.print(line.to_owned()),
            Screen::Json => eprintln!("{line}"),
            Screen::Plain { live_line, .. } => {
                if *live_line {
                    eprint!("\r\x1b[2K");
                }
                eprintln!("{line}");
                // The live line is drawn again at once, below the new line.
                self.last_draw = None;
            }
        }
    }

    fn json(&mut self, value: Value) {
        let mut value = value;
        if let Value::Object(fields) = &mut value {
            fields.insert("v".to_owned(), Value::from(JSON_SCHEMA_VERSION));
        }
        let line = format!("{value}\n");
        self.write_stdout(&line);
    }

    fn write_stdout(&mut self, text: &str) {
        if self.lost_output.is_some() {
            return;
        }
        let mut out = std::io::stdout().lock();
        if let Err(error) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            self.lost_output = Some(error);
        }
    }

    /// The last `--json` line: how the session ended and where its log is.
    pub fn session_ended(&mut self, state: &State, exit_code: u8, log: &Path) {
        if !matches!(self.screen, Screen::Json) {
            return;
        }
        self.json(json!({
            "type": "session_ended",
            "exit_code": exit_code,
            "phase": state.turn_phase.kind_name(),
            "failure": state.failure.as_ref().map(|failure| &failure.failure),
            "totals": state.session_totals,
            "log": log.display().to_string(),
        }));
    }

    fn text(&mut self, text: &str) {
        self.turn_printed = true;
        match &self.screen {
            Screen::Json => {}
            Screen::Editor(editor) => {
                let shown = escape_controls(text, "");
                self.partial.push_str(&shown);
                if let Some(end) = self.partial.rfind('\n') {
                    let rest = self.partial.split_off(end.saturating_add(1));
                    let mut whole = std::mem::replace(&mut self.partial, rest);
                    whole.pop();
                    editor.print(whole);
                }
            }
            Screen::Plain {
                live_line,
                stdout_terminal,
            } => {
                if *live_line && !self.mid_line {
                    eprint!("\r\x1b[2K");
                }
                let shown = if *stdout_terminal {
                    escape_controls(text, "")
                } else {
                    text.to_owned()
                };
                self.write_stdout(&shown);
                self.mid_line = !text.ends_with('\n');
            }
        }
    }

    /// The live line (or, in the editor, the prompt), if it is due.
    fn draw(&mut self, state: &State, forced: bool) {
        let now = Instant::now();
        if !forced
            && self
                .last_draw
                .is_some_and(|last| now.duration_since(last).as_millis() < REDRAW_MS)
        {
            return;
        }
        self.last_draw = Some(now);
        self.frame = self.frame.wrapping_add(1);
        let working = state.turn_phase.is_working() || !state.queued_prompts.is_empty();
        let line = live::line(state, &self.activity, now, self.turn_started, self.frame);
        let mark = match &self.asking {
            Some(question) => question_mark(question),
            None => "> ".to_owned(),
        };
        match &self.screen {
            Screen::Json => {}
            Screen::Editor(editor) => {
                // A waiting question is the prompt until it is answered; idle with nothing to
                // say, the prompt is the mark alone.
                let live = match &self.asking {
                    Some(question) => format!("{} ", question_text(question)),
                    None if working => format!("{line} "),
                    None => String::new(),
                };
                editor.set_prompt(&live, &mark);
            }
            Screen::Plain { live_line, .. } => {
                if !*live_line || self.mid_line {
                    return;
                }
                if let Some(question) = &self.asking {
                    // A waiting question stays on screen: it is the live line until answered.
                    eprint!(
                        "\r\x1b[2K{} {}",
                        question_text(question),
                        question_mark(question)
                    );
                } else if working {
                    eprint!("\r\x1b[2K{line}");
                } else if self.interactive {
                    eprint!("\r\x1b[2K> ");
                } else {
                    eprint!("\r\x1b[2K");
                }
            }
        }
    }

    /// Says a failure the state holds, once.
    fn say_failure(&mut self, state: &State) {
        let Some(failure) = &state.failure else {
            return;
        };
        if self.failure_said == Some(failure.at) {
            return;
        }
        self.failure_said = Some(failure.at);
        let line = failure_line(&failure.failure, self.activity.retries);
        self.say(&line);
    }
}

/// `rate limited (HTTP 429) after 7 retries: <the provider's message>`, escaped.
pub fn failure_line(failure: &panewise_pane_state::Failure, retries: u64) -> String {
    use panewise_pane_state::FailureKind;
    let kind = match failure.kind {
        FailureKind::RateLimited => "rate limited",
        FailureKind::Overloaded => "the provider is overloaded",
        FailureKind::ServerError => "server error",
        FailureKind::Auth => "authentication failed",
        FailureKind::ContextOverflow => "the context window overflowed",
        FailureKind::StreamDisconnected => "the connection failed or was cut",
        FailureKind::ProcessExited => "the agent's process exited",
        // The message says it all.
        FailureKind::Unknown => "",
    };
    let status = failure
        .http_status
        .map(|status| format!(" (HTTP {status})"))
        .unwrap_or_default();
    let retries = match retries {
        0 => String::new(),
        1 => " after 1 retry".to_owned(),
        n => format!(" after {n} retries"),
    };
    let mut message = one_line(failure.message.trim(), 400);
    if message.ends_with("(the submit deadline)") {
        message.push_str(": --submit-timeout, or [deadlines] submit_secs in panewise.toml");
    }
    let head = format!("{kind}{status}{retries}");
    let head = head.trim();
    match (head.is_empty(), message.is_empty()) {
        (true, true) => "panewise run: failed".to_owned(),
        (true, false) => format!("panewise run: failed: {message}"),
        (false, true) => format!("panewise run: failed: {head}"),
        (false, false) => format!("panewise run: failed: {head}: {message}"),
    }
}

/// `Bash wants to run: echo hi`, the agent's words escaped.
fn question_text(question: &Question) -> String {
    format!(
        "allow {} {}?",
        one_line(&question.tool, 40),
        one_line(&question.summary, 160)
    )
}

fn question_mark(question: &Question) -> String {
    if question.offers_session {
        "[y]es / [n]o / [a]lways this session > ".to_owned()
    } else {
        "[y]es / [n]o > ".to_owned()
    }
}

/// An event as a `--json` line: the event's own fields and `type`, the schema version; a
/// tool's output cut at [`JSON_TOOL_OUTPUT_MAX`], and the agent's own session announcement
/// named `agent_session_started` (panewise's `session_started` names panewise's session).
pub fn json_event(event: &ProviderEvent) -> Option<Value> {
    let mut value = serde_json::to_value(event).ok()?;
    let Value::Object(fields) = &mut value else {
        return Some(value);
    };
    if let ProviderEvent::SessionStarted { .. } = event {
        fields.insert("type".to_owned(), Value::from("agent_session_started"));
    }
    if let Some(Value::String(output)) = fields.get_mut("output") {
        if output.len() > JSON_TOOL_OUTPUT_MAX {
            let mut cut = JSON_TOOL_OUTPUT_MAX;
            while !output.is_char_boundary(cut) {
                cut = cut.saturating_sub(1);
            }
            let dropped = output.len().saturating_sub(cut);
            output.truncate(cut);
            fields.insert("output_cut_bytes".to_owned(), Value::from(dropped));
        }
    }
    fields.insert("v".to_owned(), Value::from(JSON_SCHEMA_VERSION));
    Some(value)
}

/// Who answered, as `docs/JSON.md` names it.
fn actor_json(by: &Actor) -> Value {
    serde_json::to_value(by).unwrap_or(Value::Null)
}

impl View for TerminalView {
    fn started(&mut self, log: &Path, state: &State) {
        if matches!(self.screen, Screen::Json) {
            let session = log
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or_default()
                .to_owned();
            self.json(json!({
                "type": "session_started",
                "session": session,
                "log": log.display().to_string(),
                "agent": state.streaming.agent_id,
                "provider": self.info.provider,
                "model": self.info.model,
                "cwd": self.info.cwd.display().to_string(),
            }));
        }
        self.last_state = Some(state.clone());
        self.draw(state, true);
    }

    fn agent_event(&mut self, event: &ProviderEvent) {
        self.activity.observe(event, Instant::now());
        self.stuck_said = false;
        if matches!(self.screen, Screen::Json) {
            if let Some(value) = json_event(event) {
                self.json(value);
            }
            return;
        }
        match event {
            ProviderEvent::TextDelta { text } => self.text(text),
            // A tool (or thinking) between pieces of text ends the text's line: the next
            // message starts on a line of its own.
            ProviderEvent::ToolStarted { .. } | ProviderEvent::ThinkingDelta { .. } => {
                self.end_line()
            }
            _ => {}
        }
    }

    fn state(&mut self, state: &State) {
        let working = state.turn_phase.is_working();
        let was_working = self
            .last_state
            .as_ref()
            .is_some_and(|last| last.turn_phase.is_working());
        if working && !was_working {
            self.turn_started = Some(Instant::now());
            if self.turn_printed {
                // Answers of different turns never run together.
                self.end_line();
            }
            self.turn_printed = false;
        }
        let done = matches!(state.turn_phase, TurnPhase::Done { .. } | TurnPhase::Idle);
        if done && was_working {
            self.end_line();
        }
        self.say_failure(state);
        let changed = self
            .last_state
            .as_ref()
            .is_none_or(|last| last.turn_phase != state.turn_phase);
        self.last_state = Some(state.clone());
        self.draw(state, changed);
    }

    fn emitted(&mut self, event: &panewise_pane_state::cmd::Event) {
        if let panewise_pane_state::cmd::Event::StreamStuck {
            idle_since_ms,
            threshold_ms,
        } = event
        {
            // Said once per silence: the watchdog reports it at every tick past the deadline.
            if self.stuck_said {
                return;
            }
            self.stuck_said = true;
            self.say(&format!(
                "panewise run: the agent has written nothing for {} s (the stuck-stream deadline \
                 is {} s: --stuck-after, or [deadlines] stuck_secs in panewise.toml)",
                idle_since_ms / 1_000,
                threshold_ms / 1_000
            ));
        }
    }

    fn tick(&mut self, state: &State) {
        self.draw(state, true);
    }

    fn ask(&mut self, question: &Question) {
        self.end_line();
        if !matches!(self.screen, Screen::Json) {
            // The whole request, escaped, stays in the scrollback; the live line (the editor's
            // prompt) keeps the question until it is answered.
            self.say(&format!(
                "panewise run: {} asks to run: {}",
                one_line(&question.tool, 40),
                escape_controls(&question.summary, "    ")
            ));
            if let Screen::Plain {
                live_line: false, ..
            } = self.screen
            {
                // No live line: the question is asked on a line of its own.
                eprint!("{} {}", question_text(question), question_mark(question));
            }
        }
        self.asking = Some(question.clone());
        if let Some(state) = self.last_state.clone() {
            self.draw(&state, true);
        }
    }

    fn question_closed(&mut self) {
        self.asking = None;
        if let Some(state) = self.last_state.clone() {
            self.draw(&state, true);
        }
    }

    fn answered(&mut self, answer: &Answer) {
        if matches!(self.screen, Screen::Json) {
            let mut line = json!({
                "type": "approval_answered",
                "request_id": answer.id,
                "tool": answer.tool,
                "approved": answer.approved,
                "for_session": answer.for_session,
                "reason": answer.reason,
            });
            // Who answered, as the log writes it: `by` and its own fields beside it.
            if let (Value::Object(line), Value::Object(by)) = (&mut line, actor_json(&answer.by)) {
                line.extend(by);
            }
            self.json(line);
            return;
        }
        if matches!(answer.by, Actor::Person) {
            let verdict = match (answer.approved, answer.for_session) {
                (true, true) => "allowed for this session",
                (true, false) => "allowed",
                (false, _) => "denied",
            };
            self.say(&format!(
                "panewise run: {verdict}: {}",
                one_line(&answer.tool, 40)
            ));
        }
    }

    fn queued(&mut self, text: &str) {
        self.say(&format!(
            "panewise run: queued (sent when this turn ends): {}",
            one_line(text, 120)
        ));
    }

    fn notice(&mut self, text: &str) {
        self.say(&format!("panewise run: {}", escape_controls(text, "  ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_pane_state::{Failure, FailureKind};

    #[test]
    fn every_json_line_carries_the_schema_version_and_the_event_type() {
        let event = ProviderEvent::ToolStarted {
            name: "Bash".into(),
            call_id: "c1".into(),
            arg: Some("echo hi".into()),
            input: None,
        };
        let value = json_event(&event).unwrap_or_default();
        assert_eq!(value["v"], JSON_SCHEMA_VERSION);
        assert_eq!(value["type"], "tool_started");
        assert_eq!(value["arg"], "echo hi");
    }

    #[test]
    fn a_tools_output_is_cut_in_json_and_the_cut_counted() {
        let event = ProviderEvent::ToolEnded {
            call_id: "c1".into(),
            status: panewise_providers::ToolStatus::Success,
            exit_code: Some(0),
            output: Some("é".repeat(JSON_TOOL_OUTPUT_MAX)),
        };
        let value = json_event(&event).unwrap_or_default();
        let output = value["output"].as_str().unwrap_or_default();
        assert!(output.len() <= JSON_TOOL_OUTPUT_MAX);
        assert_eq!(
            value["output_cut_bytes"].as_u64(),
            Some((2 * JSON_TOOL_OUTPUT_MAX - output.len()) as u64)
        );
    }

    #[test]
    fn a_failure_says_its_kind_status_retries_and_the_providers_words_escaped() {
        let failure = Failure {
            kind: FailureKind::RateLimited,
            retryable: true,
            message: "slow down\u{1b}[2J".into(),
            http_status: Some(429),
        };
        assert_eq!(
            failure_line(&failure, 7),
            "panewise run: failed: rate limited (HTTP 429) after 7 retries: slow down\\u{1b}[2J"
        );
    }

    #[test]
    fn a_question_shows_a_planted_escape_escaped() {
        let question = Question {
            id: "1".into(),
            tool: "shell".into(),
            summary: "touch x #\r\u{1b}[2Kallow shell echo hello".into(),
            offers_session: true,
        };
        assert_eq!(
            question_text(&question),
            "allow shell touch x #\\u{d}\\u{1b}[2Kallow shell echo hello?"
        );
    }
}
