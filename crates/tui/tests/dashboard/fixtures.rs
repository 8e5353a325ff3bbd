//! Sessions, log lines and a dashboard fed with them.

use panewise_api::{AgentState, SessionSummary, WaitingFor};
use panewise_pane_state::log::{encode_header, encode_transcript, LogHeader, TranscriptEntry};
use panewise_pane_state::WindowSource;
use panewise_protocol::{CostSource, FailureKind};
use panewise_tui::{update, App, Effect, Event, Settings};

/// 2026-12-02 13:00 UTC, in ms.
pub const NOW: u64 = 1_796_216_400_000;

/// A session in `state`, started `age_s` seconds before [`NOW`].
pub fn session(name: &str, state: AgentState, age_s: u64) -> SessionSummary {
    SessionSummary {
        v: 1,
        id: format!("0190-{name}"),
        name: name.to_owned(),
        provider: "mock".to_owned(),
        model: Some("panewise-mock".to_owned()),
        cwd: "/tmp/work".to_owned(),
        state,
        waiting_for: None,
        tool: None,
        tool_arg: None,
        context_pct: Some(12.5),
        context_window_source: Some(WindowSource::Reported),
        waiting_since_ms: None,
        failure_kind: None,
        window_stood_down: None,
        tokens: Some(3_798),
        cost_usd: Some(0.0123),
        cost_source: Some(CostSource::Estimated),
        budget: None,
        log: format!("/tmp/{name}.jsonl"),
        approval: "ask".to_owned(),
        started_at_ms: NOW.saturating_sub(age_s * 1000),
        turns: 1,
        attached: 0,
        worktree: None,
        failure: None,
    }
}

/// A session waiting for an approval of `shell` running `argument`.
pub fn asking(name: &str, age_s: u64, argument: &str) -> SessionSummary {
    SessionSummary {
        waiting_since_ms: Some(NOW.saturating_sub(age_s * 500)),
        waiting_for: Some(WaitingFor::Approval {
            id: format!("req-{name}"),
            tool: "shell".to_owned(),
            argument: argument.to_owned(),
        }),
        ..session(name, AgentState::NeedsInput, age_s)
    }
}

/// A session running `tool` with `arg`.
pub fn working(name: &str, age_s: u64, tool: &str, arg: &str) -> SessionSummary {
    SessionSummary {
        tool: Some(tool.to_owned()),
        tool_arg: Some(arg.to_owned()),
        ..session(name, AgentState::Working, age_s)
    }
}

/// A session of every state, as a list the daemon sends.
pub fn every_state() -> Vec<SessionSummary> {
    vec![
        working("build", 300, "shell", "cargo build --release"),
        asking("tests", 120, "cargo test -p panewise-tui"),
        session("docs", AgentState::Done, 60),
        session("lint", AgentState::Idle, 3_600),
        SessionSummary {
            failure_kind: Some(FailureKind::RateLimited),
            ..session("fetch", AgentState::Failed, 90_000)
        },
        SessionSummary {
            failure: Some("the agent's task panicked".to_owned()),
            ..session("crash", AgentState::Failed, 80_000)
        },
        SessionSummary {
            context_window_source: Some(WindowSource::Model),
            context_pct: Some(61.0),
            ..session("guessed", AgentState::Idle, 30)
        },
        session("old", AgentState::Stopped, 7_200),
        SessionSummary {
            cost_source: Some(CostSource::Reported),
            ..session("review", AgentState::Exited, 400)
        },
    ]
}

/// A log's lines for a session: its header and a short conversation.
pub fn log_lines() -> Vec<String> {
    let header = LogHeader {
        agent_id: "mock".to_owned(),
        started_at_ms: NOW,
        ..LogHeader::default()
    };
    let entries = [
        TranscriptEntry::Prompt {
            text: "print hello with the shell".to_owned(),
        },
        TranscriptEntry::Text {
            text: "I'll run the command.".to_owned(),
        },
        TranscriptEntry::ToolCall {
            call_id: "c1".to_owned(),
            name: "shell".to_owned(),
            input: None,
            arg: Some("echo hello".to_owned()),
        },
    ];
    let mut lines = vec![encode_header(&header).unwrap_or_default()];
    lines.extend(
        entries
            .iter()
            .map(|entry| encode_transcript(NOW, entry).unwrap_or_default()),
    );
    lines
}

/// A dashboard at [`NOW`], `width`×`height`.
pub fn app(width: u16, height: u16) -> App {
    App::new(
        Settings {
            bell: true,
            provider: "mock".to_owned(),
            model: String::new(),
            approval: "ask".to_owned(),
            cwd: String::new(),
            remote_hosts: Vec::new(),
        },
        NOW,
        (width, height),
    )
}

/// `app` after `events`, with every effect returned.
pub fn feed(mut app: App, events: impl IntoIterator<Item = Event>) -> (App, Vec<Effect>) {
    let mut all = Vec::new();
    for event in events {
        let (next, effects) = update(app, event);
        app = next;
        all.extend(effects);
    }
    (app, all)
}

/// The lines of a log as the daemon sends them for `session`.
pub fn line_events(session: &str, lines: &[String]) -> Vec<Event> {
    lines
        .iter()
        .enumerate()
        .map(|(index, line)| Event::Line {
            session: session.to_owned(),
            index: u64::try_from(index).unwrap_or(u64::MAX),
            line: line.clone(),
        })
        .collect()
}
