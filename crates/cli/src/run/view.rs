//! What `panewise run` shows: on a terminal, the agent's answer on stdout and a live status line
//! on stderr; with `--json`, the versioned NDJSON event stream on stdout and nothing else.

use std::io::Write;
use std::time::Instant;

use panewise_host::session::lines::View;
use panewise_pane_state::{State, TurnPhase, WindowSource};
use panewise_providers::{CostSource, ProviderEvent};
use serde_json::Value;

pub use crate::json::JSON_SCHEMA_VERSION;

/// The status line is redrawn at most this often, so a busy stream does not flood stderr.
const STATUS_REDRAW_MS: u128 = 80;

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

pub struct TerminalView {
    json: bool,
    status: bool,
    /// Lines are prompts: show a prompt mark between turns.
    interactive: bool,
    /// The answer's last line is not finished: the status line waits, so that it never draws
    /// over the text.
    mid_line: bool,
    started: Instant,
    last_draw: Option<Instant>,
    frame: usize,
    /// Whether the prompt mark for the current idle spell was shown.
    prompt_shown: bool,
}

impl TerminalView {
    pub fn new(json: bool, status: bool, interactive: bool) -> Self {
        TerminalView {
            json,
            status,
            interactive,
            mid_line: false,
            started: Instant::now(),
            last_draw: None,
            frame: 0,
            prompt_shown: false,
        }
    }

    /// Ends the answer's unfinished line.
    pub fn end_line(&mut self) {
        if std::mem::take(&mut self.mid_line) {
            let mut out = std::io::stdout().lock();
            super::stdout::checked(writeln!(out));
        }
    }

    pub fn clear_status(&self) {
        if self.status {
            eprint!("\r\x1b[2K");
        }
    }

    /// The last `--json` line: how the session ended and where its log is.
    pub fn session_ended(&self, state: &State, exit_code: u8, log: &std::path::Path) {
        if !self.json {
            return;
        }
        let line = serde_json::json!({
            "v": JSON_SCHEMA_VERSION,
            "type": "session_ended",
            "exit_code": exit_code,
            "phase": state.turn_phase.kind_name(),
            "failure": state.failure.as_ref().map(|failure| &failure.failure),
            "totals": state.session_totals,
            "log": log.display().to_string(),
        });
        let mut out = std::io::stdout().lock();
        super::stdout::checked(writeln!(out, "{line}"));
    }

    fn status_line(&mut self, state: &State) -> String {
        self.frame = self.frame.wrapping_add(1);
        let spinner = if state.turn_phase.is_working() {
            SPINNER[self.frame % SPINNER.len()]
        } else {
            '·'
        };
        let phase = if !state.pending_approvals.is_empty() {
            "waiting for your approval".to_owned()
        } else {
            state.turn_phase.kind_name().to_owned()
        };
        let mut line = format!("{spinner} {phase}");
        if let Some(tool) = &state.current_tool {
            line.push_str(&format!(" · {tool}"));
            if let Some(arg) = state.current_tool_arg.as_deref() {
                line.push_str(&format!(" {}", shorten(arg, 48)));
            }
        }
        if let Some(reading) = state.plausible_reading() {
            match reading.window.filter(|window| *window > 0) {
                Some(window) => {
                    let source = match reading.window_source {
                        Some(WindowSource::Reported) => "reported",
                        Some(WindowSource::Model) => "model table",
                        Some(WindowSource::Learned) => "learned",
                        None => "unknown",
                    };
                    line.push_str(&format!(
                        " · context {:.0}% of {} ({source})",
                        reading.tokens as f64 * 100.0 / window as f64,
                        tokens(window)
                    ));
                }
                None => line.push_str(&format!(" · context {}", tokens(reading.tokens))),
            }
        }
        if let Some(totals) = &state.session_totals {
            let input = totals
                .input_tokens
                .unwrap_or(0)
                .saturating_add(totals.cached_input_tokens.unwrap_or(0));
            line.push_str(&format!(
                " · {} in {} out",
                tokens(input),
                tokens(totals.output_tokens.unwrap_or(0))
            ));
            match (totals.cost_usd, totals.cost_source) {
                (Some(cost), source) => {
                    let source = match source {
                        Some(CostSource::Reported) => "reported",
                        Some(CostSource::Estimated) => "estimated",
                        _ => "unknown source",
                    };
                    line.push_str(&format!(" · ${cost:.4} ({source})"));
                }
                (None, Some(CostSource::Unknown)) => line.push_str(" · cost unknown"),
                (None, _) => {}
            }
        }
        line.push_str(&format!(" · {:.1}s", self.started.elapsed().as_secs_f64()));
        line
    }
}

fn tokens(count: u64) -> String {
    match count {
        0..=999 => count.to_string(),
        1_000..=999_999 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.2}M", count as f64 / 1_000_000.0),
    }
}

/// At most `max` characters of `text`, on one line.
fn shorten(text: &str, max: usize) -> String {
    let one_line = text.lines().next().unwrap_or_default();
    let mut short: String = one_line.chars().take(max).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// An event as a `--json` line: the event's own fields and `type`, and the schema version.
pub fn json_line(event: &ProviderEvent) -> Option<String> {
    let mut value = serde_json::to_value(event).ok()?;
    if let Value::Object(fields) = &mut value {
        fields.insert("v".to_owned(), Value::from(JSON_SCHEMA_VERSION));
    }
    serde_json::to_string(&value).ok()
}

impl View for TerminalView {
    fn agent_event(&mut self, event: &ProviderEvent) {
        let mut out = std::io::stdout().lock();
        if self.json {
            if let Some(line) = json_line(event) {
                super::stdout::checked(writeln!(out, "{line}"));
            }
        } else if let ProviderEvent::TextDelta { text } = event {
            if !self.mid_line {
                self.clear_status();
            }
            super::stdout::checked(write!(out, "{text}").and_then(|()| out.flush()));
            self.mid_line = !text.ends_with('\n');
        }
    }

    fn state(&mut self, state: &State) {
        let done = matches!(state.turn_phase, TurnPhase::Done { .. } | TurnPhase::Idle);
        if done || !state.pending_approvals.is_empty() {
            // A turn's answer ends with its turn, and a question needs a line of its own.
            self.end_line();
        }
        if !done {
            self.prompt_shown = false;
        }
        if self.interactive && !self.json && done && !self.prompt_shown {
            self.clear_status();
            eprint!("> ");
            self.prompt_shown = true;
            return;
        }
        if !self.status || self.mid_line || self.prompt_shown {
            return;
        }
        let now = Instant::now();
        if self
            .last_draw
            .is_some_and(|last| now.duration_since(last).as_millis() < STATUS_REDRAW_MS)
        {
            return;
        }
        self.last_draw = Some(now);
        let line = self.status_line(state);
        eprint!("\r\x1b[2K{line}");
    }

    fn ask(&mut self, tool: &str, arg: &str) {
        self.end_line();
        self.clear_status();
        eprint!("allow {tool} {arg}? [y/N] ");
    }

    fn notice(&mut self, text: &str) {
        self.end_line();
        self.clear_status();
        eprintln!("panewise run: {text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_line_carries_the_schema_version_and_the_event_type() {
        let event = ProviderEvent::ToolStarted {
            name: "Bash".into(),
            call_id: "c1".into(),
            arg: Some("echo hi".into()),
            input: None,
        };
        let line = json_line(&event).unwrap_or_default();
        let value: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(value["v"], JSON_SCHEMA_VERSION);
        assert_eq!(value["type"], "tool_started");
        assert_eq!(value["arg"], "echo hi");
    }

    #[test]
    fn token_counts_read_at_a_glance() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(2_500_000), "2.50M");
        assert_eq!(shorten("abcdef", 3), "abc…");
        assert_eq!(shorten("ab\ncd", 10), "ab…");
    }
}
