//! The dashboard's frame: `view` of 30 and of 100 sessions drawn into a 200×50 `TestBackend`
//! (the selected one waiting, with 400 transcript lines folded), and `update` folding one log
//! line of the watched session. `cargo bench -p panewise-tui --bench view`; figures in
//! docs/BENCHMARKS.md.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use panewise_api::{AgentState, SessionSummary, WaitingFor};
use panewise_pane_state::log::{encode_header, encode_transcript, LogHeader, TranscriptEntry};
use panewise_protocol::CostSource;
use panewise_tui::{update, view, App, Event, Settings};
use ratatui_core::backend::TestBackend;
use ratatui_core::terminal::Terminal;

const NOW: u64 = 1_796_216_400_000;

fn session(n: usize) -> SessionSummary {
    let states = [
        AgentState::NeedsInput,
        AgentState::Working,
        AgentState::Done,
        AgentState::Idle,
        AgentState::Failed,
        AgentState::Stopped,
    ];
    let state = states[n % states.len()];
    let age = u64::try_from(n).unwrap_or(0) * 7_000;
    SessionSummary {
        v: 1,
        id: format!("0190-{n:04}"),
        name: format!("agent-{n:03}"),
        provider: "mock".to_owned(),
        model: Some("panewise-mock".to_owned()),
        cwd: "/tmp/work".to_owned(),
        state,
        waiting_for: (state == AgentState::NeedsInput).then(|| WaitingFor::Approval {
            id: format!("req-{n}"),
            tool: "shell".to_owned(),
            argument: "cargo test --workspace -- --nocapture".to_owned(),
        }),
        tool: (state == AgentState::Working).then(|| "shell".to_owned()),
        tool_arg: (state == AgentState::Working).then(|| "cargo build --release".to_owned()),
        context_pct: Some(42.0),
        context_window_source: None,
        waiting_since_ms: None,
        failure_kind: None,
        window_stood_down: None,
        tokens: Some(123_456),
        cost_usd: Some(0.4321),
        cost_source: Some(CostSource::Estimated),
        budget: None,
        log: String::new(),
        approval: "ask".to_owned(),
        started_at_ms: NOW.saturating_sub(age),
        turns: 3,
        attached: 0,
        worktree: None,
        failure: None,
    }
}

/// A dashboard of `count` sessions, the first selected with 400 transcript lines folded.
fn dashboard(count: usize) -> App {
    let mut app = App::new(Settings::default(), NOW, (200, 50));
    app = update(app, Event::List((0..count).map(session).collect())).0;
    let selected = app.selected.clone().unwrap_or_default();
    let header = LogHeader {
        agent_id: "mock".to_owned(),
        ..LogHeader::default()
    };
    let mut lines = vec![encode_header(&header).unwrap_or_default()];
    for n in 0..400 {
        let entry = TranscriptEntry::Text {
            text: format!("line {n} of the agent's answer, long enough to be cut at the edge"),
        };
        lines.push(encode_transcript(NOW, &entry).unwrap_or_default());
    }
    for (index, line) in lines.into_iter().enumerate() {
        let event = Event::Line {
            session: selected.clone(),
            index: u64::try_from(index).unwrap_or(0),
            line,
        };
        app = update(app, event).0;
    }
    app
}

fn bench(c: &mut Criterion) {
    for count in [30, 100] {
        let app = dashboard(count);
        let Ok(mut terminal) = Terminal::new(TestBackend::new(200, 50));
        c.bench_function(&format!("view {count} sessions 200x50"), |b| {
            b.iter(|| {
                let _ = terminal.draw(|frame| view(black_box(&app), frame));
            });
        });
    }
    let app = dashboard(30);
    let selected = app.selected.clone().unwrap_or_default();
    let next = app
        .watched
        .as_ref()
        .map_or(0, |watched| watched.next_line());
    let line = encode_transcript(
        NOW,
        &TranscriptEntry::Text {
            text: "one more line".to_owned(),
        },
    )
    .unwrap_or_default();
    c.bench_function("update folds one line of 30 sessions' watched one", |b| {
        b.iter_batched(
            || app.clone(),
            |app| {
                update(
                    app,
                    Event::Line {
                        session: selected.clone(),
                        index: next,
                        line: line.clone(),
                    },
                )
            },
            criterion::BatchSize::LargeInput,
        );
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
