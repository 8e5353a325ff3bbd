//! The live line of `panewise run`: what the agent is doing now, as a pure function of the
//! pane state, what the view saw of the agent's events, and the time.
//!
//! Every word on it comes from the state or from an event: "thinking" only after thinking was
//! streamed, "writing" only after text, "running" only while a tool runs, "rate limited" only
//! while the agent said it waits to retry. Text from the agent is shown escaped and shortened.

use std::time::{Duration, Instant};

use panewise_pane_state::state::InitPhase;
use panewise_pane_state::{State, TurnPhase, WindowSource};
use panewise_providers::{CostSource, ProviderEvent};

use crate::terminal_text::one_line;

/// The spinner's frames; one per redraw while the turn works.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// What the agent's events said last, beyond what the state keeps.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    /// The kind of output the agent streamed last in this turn.
    pub streaming: Option<Streamed>,
    /// A retry the agent announced and has not begun yet.
    pub retry: Option<Retry>,
    /// Retries announced in this turn.
    pub retries: u64,
    /// The turn's first event arrived: the agent is no longer starting.
    pub agent_spoke: bool,
}

/// The last kind of output streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streamed {
    Thinking,
    Text,
}

/// An announced retry: what failed, and when the next attempt begins.
#[derive(Debug, Clone)]
pub struct Retry {
    pub reason: String,
    pub http_status: Option<u16>,
    pub attempt: Option<u64>,
    pub max_retries: Option<u64>,
    /// When the agent said it retries; `None` when it did not say.
    pub resumes_at: Option<Instant>,
}

impl Activity {
    /// Notes what `event` says about the agent's activity, seen at `now`.
    pub fn observe(&mut self, event: &ProviderEvent, now: Instant) {
        match event {
            ProviderEvent::TurnStarted { .. } => {
                *self = Activity {
                    agent_spoke: true,
                    ..Activity::default()
                };
            }
            ProviderEvent::ThinkingDelta { .. } | ProviderEvent::ThinkingProgress { .. } => {
                self.agent_spoke = true;
                self.retry = None;
                self.streaming = Some(Streamed::Thinking);
            }
            ProviderEvent::TextDelta { .. } => {
                self.agent_spoke = true;
                self.retry = None;
                self.streaming = Some(Streamed::Text);
            }
            ProviderEvent::ToolStarted { .. } | ProviderEvent::ToolEnded { .. } => {
                self.agent_spoke = true;
                self.retry = None;
                self.streaming = None;
            }
            ProviderEvent::ProviderRetrying {
                attempt,
                max_retries,
                retry_delay_ms,
                http_status,
                reason,
            } => {
                self.agent_spoke = true;
                self.retries = self.retries.saturating_add(1);
                self.retry = Some(Retry {
                    reason: retry_reason(reason.as_deref(), *http_status),
                    http_status: *http_status,
                    attempt: *attempt,
                    max_retries: *max_retries,
                    resumes_at: retry_delay_ms
                        .and_then(|ms| now.checked_add(Duration::from_millis(ms))),
                });
            }
            ProviderEvent::TurnEnded { .. } => {
                self.streaming = None;
                self.retry = None;
            }
            _ => self.agent_spoke = true,
        }
    }
}

/// "rate limited", "overloaded", "server error" from a retry's status and reason.
fn retry_reason(reason: Option<&str>, http_status: Option<u16>) -> String {
    let reason = reason.unwrap_or_default().to_lowercase();
    match http_status {
        Some(429) => "rate limited".to_owned(),
        Some(529) => "overloaded".to_owned(),
        Some(500..=599) => "server error".to_owned(),
        _ if reason.contains("rate") => "rate limited".to_owned(),
        _ if reason.contains("overload") => "overloaded".to_owned(),
        _ if reason.is_empty() => "the call failed".to_owned(),
        _ => one_line(&reason, 40),
    }
}

/// What the live line says the agent is doing.
pub fn doing(state: &State, activity: &Activity, now: Instant) -> String {
    if let Some(approval) = state.pending_approvals.front() {
        return format!(
            "waiting for your approval of {}",
            one_line(&approval.tool, 32)
        );
    }
    if let Some(retry) = &activity.retry {
        let status = retry
            .http_status
            .map(|status| format!(" (HTTP {status})"))
            .unwrap_or_default();
        let attempt = match (retry.attempt, retry.max_retries) {
            (Some(attempt), Some(max)) => format!(", attempt {attempt} of {max}"),
            (Some(attempt), None) => format!(", attempt {attempt}"),
            _ => String::new(),
        };
        let when = match retry.resumes_at {
            Some(at) => {
                let left = at.saturating_duration_since(now).as_secs_f64().ceil();
                format!("retrying in {left:.0} s")
            }
            None => "retrying".to_owned(),
        };
        return format!("{}{status}, {when}{attempt}", retry.reason);
    }
    if state.compacting.is_some() {
        return "compacting the conversation".to_owned();
    }
    match &state.turn_phase {
        TurnPhase::Idle | TurnPhase::Done { .. } if !state.queued_prompts.is_empty() => {
            format!(
                "starting {} ({} prompt(s) queued, waiting for its first line)",
                state.streaming.agent_id,
                state.queued_prompts.len()
            )
        }
        TurnPhase::Idle if matches!(state.init_phase, InitPhase::InitPending) => {
            format!("starting {}", state.streaming.agent_id)
        }
        TurnPhase::Idle => "idle".to_owned(),
        TurnPhase::Done { outcome, .. } => format!("done ({})", outcome_name(*outcome)),
        TurnPhase::Submitting { .. } if matches!(state.init_phase, InitPhase::InitPending) => {
            format!(
                "starting {} (the prompt waits for it)",
                state.streaming.agent_id
            )
        }
        TurnPhase::Submitting { .. } => "waiting for the model".to_owned(),
        TurnPhase::Streaming { tools_active, .. } => {
            if let Some(tool) = &state.current_tool {
                let arg = state
                    .current_tool_arg
                    .as_deref()
                    .map(|arg| format!(" {}", one_line(arg, 48)))
                    .unwrap_or_default();
                return format!("running {}{arg}", one_line(tool, 32));
            }
            if *tools_active > 0 {
                return "running a tool".to_owned();
            }
            match activity.streaming {
                Some(Streamed::Thinking) => "thinking".to_owned(),
                Some(Streamed::Text) => "writing".to_owned(),
                None => "waiting for the model".to_owned(),
            }
        }
        TurnPhase::Interrupting { .. } => "stopping the turn".to_owned(),
        TurnPhase::Disconnected { .. } => "the agent's stream went away".to_owned(),
    }
}

fn outcome_name(outcome: panewise_pane_state::TurnOutcome) -> &'static str {
    use panewise_pane_state::TurnOutcome;
    match outcome {
        TurnOutcome::Completed => "completed",
        TurnOutcome::Stopped => "stopped",
        TurnOutcome::Interrupted => "interrupted",
        TurnOutcome::Errored => "failed",
    }
}

/// The whole live line: spinner, what the agent does, context, tokens, cost, elapsed.
pub fn line(
    state: &State,
    activity: &Activity,
    now: Instant,
    turn_started: Option<Instant>,
    frame: usize,
) -> String {
    let spinner = if state.turn_phase.is_working() || !state.queued_prompts.is_empty() {
        SPINNER[frame % SPINNER.len()]
    } else {
        '·'
    };
    let mut line = format!("{spinner} {}", doing(state, activity, now));
    if let Some(reading) = state.plausible_reading() {
        match reading.window.filter(|window| *window > 0) {
            Some(window) => {
                let source = match reading.window_source {
                    Some(WindowSource::Reported) => "reported",
                    Some(WindowSource::Model) => "model table",
                    Some(WindowSource::Learned) => "learned",
                    None => "window unknown",
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
    if let Some(stand_down) = &state.window_stood_down {
        // R110: the window keeps everything until what must stay falls under its threshold.
        line.push_str(&format!(
            " · {}",
            panewise_api::view::window_stood_down_text(stand_down)
        ));
    }
    if let Some(totals) = &state.session_totals {
        // `in` is every input token, cached or not, as TOKENS counts them everywhere.
        let input = panewise_api::view::input_tokens(totals).unwrap_or(0);
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
                    _ => "source unknown",
                };
                let cost = panewise_api::view::cost_text(Some(cost), None);
                line.push_str(&format!(" · {cost} ({source})"));
            }
            (None, Some(CostSource::Unknown)) => line.push_str(" · cost unknown"),
            (None, _) => {}
        }
    }
    if let Some(started) = turn_started {
        line.push_str(&format!(
            " · {}",
            elapsed(now.saturating_duration_since(started))
        ));
    }
    line
}

/// `7s`, `1m05s`, `1h02m`: whole seconds, so the clock moves once a second.
pub fn elapsed(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..=59 => format!("{seconds}s"),
        60..=3_599 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3_600, (seconds % 3_600) / 60),
    }
}

/// A token count read at a glance, as every front end reads it
/// ([`panewise_api::view::count_text`]).
pub fn tokens(count: u64) -> String {
    panewise_api::view::count_text(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_pane_state::{step, Msg};

    fn at(state: State, ms: u64, msg: Msg) -> State {
        step(state, ms, msg).0
    }

    #[test]
    fn counts_and_times_read_at_a_glance() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(2_500_000), "2.5M");
        assert_eq!(elapsed(Duration::from_millis(7_900)), "7s");
        assert_eq!(elapsed(Duration::from_secs(65)), "1m05s");
        assert_eq!(elapsed(Duration::from_secs(3_720)), "1h02m");
    }

    #[test]
    fn the_line_says_only_what_the_events_said() {
        let now = Instant::now();
        let mut activity = Activity::default();
        let state = State::new("claude-code");
        assert_eq!(doing(&state, &activity, now), "starting claude-code");
        let state = at(state, 1, Msg::PromptSubmitted { text: "hi".into() });
        assert_eq!(
            doing(&state, &activity, now),
            "starting claude-code (1 prompt(s) queued, waiting for its first line)"
        );
        activity.observe(&ProviderEvent::ThinkingDelta { text: "hm".into() }, now);
        let mut streaming = State::new("codex");
        streaming.turn_phase = TurnPhase::Streaming {
            buffer_size: 0,
            tools_active: 0,
            last_event_ms: 0,
            waiting_reason: None,
            retry_after_ms: None,
        };
        streaming.init_phase = InitPhase::InitReady { at: 0 };
        assert_eq!(doing(&streaming, &activity, now), "thinking");
        activity.observe(&ProviderEvent::TextDelta { text: "ok".into() }, now);
        assert_eq!(doing(&streaming, &activity, now), "writing");
        streaming.current_tool = Some("shell".into());
        streaming.current_tool_arg = Some("sleep 20\u{1b}[2K\rrm -rf".into());
        assert_eq!(
            doing(&streaming, &activity, now),
            "running shell sleep 20\\u{1b}[2K\\u{d}rm -rf"
        );
        streaming.current_tool = None;
        activity.observe(
            &ProviderEvent::ProviderRetrying {
                attempt: Some(3),
                max_retries: Some(7),
                retry_delay_ms: Some(4_200),
                http_status: Some(429),
                reason: Some("rate_limit".into()),
            },
            now,
        );
        assert_eq!(
            doing(&streaming, &activity, now + Duration::from_millis(1_000)),
            "rate limited (HTTP 429), retrying in 4 s, attempt 3 of 7"
        );
        assert_eq!(
            doing(&streaming, &activity, now + Duration::from_millis(9_000)),
            "rate limited (HTTP 429), retrying in 0 s, attempt 3 of 7"
        );
        activity.observe(
            &ProviderEvent::TextDelta {
                text: "back".into(),
            },
            now,
        );
        assert_eq!(doing(&streaming, &activity, now), "writing");
        assert_eq!(activity.retries, 1);
    }

    /// R110, R111: the line says the window stood down while it does, and no longer after.
    #[test]
    fn the_line_says_the_window_stood_down_while_it_does() {
        let now = Instant::now();
        let activity = Activity::default();
        let state = State::new("anthropic");
        let stood = at(
            state,
            1,
            Msg::WindowStoodDown {
                floor_tokens: 1_869,
                threshold_tokens: 1,
                at: 1,
            },
        );
        let shown = line(&stood, &activity, now, None, 0);
        assert!(
            shown.contains(" · window stood down: floor 1.9k > threshold 1"),
            "{shown}"
        );
        let resumed = at(stood, 2, Msg::WindowResumed { at: 2 });
        let shown = line(&resumed, &activity, now, None, 0);
        assert!(!shown.contains("window stood down"), "{shown}");
    }
}
