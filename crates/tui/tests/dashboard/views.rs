//! `view` on ratatui's `TestBackend`, snapshot-tested with insta.

use panewise_api::{AgentState, SessionSummary};
use panewise_tui::{view, App, Event, Key};
use ratatui_core::backend::TestBackend;
use ratatui_core::terminal::Terminal;

use crate::fixtures::{app, asking, every_state, feed, line_events, log_lines, session, working};

fn draw(app: &App) -> Terminal<TestBackend> {
    let mut terminal = match Terminal::new(TestBackend::new(app.size.0, app.size.1)) {
        Ok(terminal) => terminal,
        Err(error) => panic!("a test backend: {error}"),
    };
    if let Err(error) = terminal.draw(|frame| view(app, frame)) {
        panic!("drawing: {error}");
    }
    terminal
}

/// Every state, with the waiting session's log folded into the peek.
fn every_state_app(width: u16, height: u16) -> App {
    let mut events = vec![Event::List(every_state())];
    events.extend(line_events("0190-tests", &log_lines()));
    feed(app(width, height), events).0
}

#[test]
fn every_state_at_80x24() {
    insta::assert_snapshot!(draw(&every_state_app(80, 24)).backend());
}

#[test]
fn every_state_at_200x50() {
    insta::assert_snapshot!(draw(&every_state_app(200, 50)).backend());
}

#[test]
fn a_long_tool_argument_is_cut_on_the_row_and_shown_whole_in_the_peek() {
    let argument = format!(
        "cargo test --workspace -- {}",
        "--exact a::very::long::name ".repeat(8)
    );
    let list = vec![
        asking("long", 30, &argument),
        working("build", 60, "shell", &argument),
    ];
    let app = feed(app(120, 30), [Event::List(list)]).0;
    insta::assert_snapshot!(draw(&app).backend());
}

#[test]
fn a_hostile_escape_sequence_in_a_question_is_shown_escaped() {
    let hostile = "touch spoofed #\r\u{1b}[2Kecho hello\u{1b}]0;pwned\u{7}\u{202e}txt.exe";
    let app = feed(
        app(100, 20),
        [Event::List(vec![asking("spoof", 30, hostile)])],
    )
    .0;
    let terminal = draw(&app);
    let screen = format!("{}", terminal.backend());
    assert!(!screen.contains('\u{1b}'), "an escape reached the screen");
    assert!(screen.contains("\\u{1b}[2Kecho hello"));
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_hundred_sessions_fold_the_idle_and_finished_groups() {
    let states = [
        AgentState::NeedsInput,
        AgentState::Working,
        AgentState::Done,
        AgentState::Idle,
        AgentState::Failed,
        AgentState::Stopped,
        AgentState::Exited,
    ];
    let list: Vec<SessionSummary> = (0..100_u64)
        .map(|n| {
            let state = states[usize::try_from(n).unwrap_or(0) % states.len()];
            let name = format!("agent-{n:03}");
            if state == AgentState::NeedsInput {
                asking(&name, n, "ls")
            } else {
                session(&name, state, n)
            }
        })
        .collect();
    let app = feed(app(200, 50), [Event::List(list)]).0;
    insta::assert_snapshot!(draw(&app).backend());
}

#[test]
fn attached_shows_the_transcript_and_the_prompt_line() {
    let mut events = vec![
        Event::List(vec![session("docs", AgentState::Working, 20)]),
        Event::Key(Key::Enter),
    ];
    events.extend(line_events("0190-docs", &log_lines()));
    events.extend("and again".chars().map(|c| Event::Key(Key::Char(c))));
    let app = feed(app(80, 24), events).0;
    insta::assert_snapshot!(draw(&app).backend());
}

#[test]
fn the_keys_and_the_new_session_form() {
    let start = feed(app(100, 30), [Event::List(every_state())]).0;
    let help = feed(start.clone(), [Event::Key(Key::Char('?'))]).0;
    insta::assert_snapshot!("help", draw(&help).backend());
    let form = feed(start, [Event::Key(Key::Char('c'))]).0;
    insta::assert_snapshot!("new_session", draw(&form).backend());
}

#[test]
fn the_peek_counts_the_text_being_written_and_shows_how_long_one_has_waited() {
    use panewise_pane_state::log::{encode_entry, LogEntry};
    use panewise_pane_state::Msg;
    let mut lines = log_lines();
    for (n, chars) in [40_u64, 2, 81].into_iter().enumerate() {
        let entry = LogEntry {
            ts: crate::fixtures::NOW + u64::try_from(n).unwrap_or(0),
            msg: Msg::OutputStreamed { chars, turn: None },
        };
        lines.push(encode_entry(&entry).unwrap_or_default());
    }
    let mut events = vec![Event::List(vec![
        working("writer", 20, "shell", "echo hello"),
        asking("waiter", 600, "rm -rf build"),
    ])];
    events.push(Event::Key(Key::Down));
    events.extend(line_events("0190-writer", &lines));
    let writing = feed(app(120, 24), events).0;
    let screen = format!("{}", draw(&writing).backend());
    assert!(screen.contains("writing 123 chars so far…"), "{screen}");
    insta::assert_snapshot!("writing", draw(&writing).backend());
    let waiting = feed(writing, [Event::Key(Key::Up)]).0;
    let screen = format!("{}", draw(&waiting).backend());
    assert!(screen.contains("waiting for you for 5m"), "{screen}");
}

#[test]
fn before_the_first_list() {
    insta::assert_snapshot!(draw(&app(80, 24)).backend());
}

#[test]
fn a_long_name_is_shown_whole_where_there_is_room_and_cut_where_there_is_not() {
    // A name is what `panewise approve NAME` takes: on a wide terminal the column grows to fit
    // it (up to 32), on a narrow one it is cut with `…` and the columns stay aligned.
    let list = vec![
        asking("review-the-parser-changes", 30, "cargo test"),
        session("docs", AgentState::Idle, 60),
    ];
    let wide = feed(app(200, 12), [Event::List(list.clone())]).0;
    let wide_screen = format!("{:?}", draw(&wide).backend());
    assert!(
        wide_screen.contains("review-the-parser-changes mock"),
        "{wide_screen}"
    );
    let narrow = feed(app(80, 12), [Event::List(list)]).0;
    insta::assert_snapshot!(draw(&narrow).backend());
}

/// R110: a session whose window stage stood down on its floor says so on its row, in numbers
/// only, until the stage engages again; a session not stood down says nothing of it.
#[test]
fn a_window_stood_down_on_its_floor_is_shown_on_the_row() {
    let stood_down = SessionSummary {
        window_stood_down: Some(panewise_pane_state::WindowStandDown {
            floor_tokens: 1_869,
            threshold_tokens: 1,
            since: 0,
        }),
        ..session("own-loop", AgentState::Working, 30)
    };
    let list = vec![stood_down, session("other", AgentState::Working, 60)];
    let app = feed(app(100, 12), [Event::List(list)]).0;
    let terminal = draw(&app);
    let screen = format!("{}", terminal.backend());
    assert!(
        screen.contains("window stood down: floor 1.9k > threshold 1"),
        "{screen}"
    );
    insta::assert_snapshot!(terminal.backend());
}

/// R112: a session held at its budget is listed as needing input with the reason on its row.
#[test]
fn a_session_held_at_its_budget_shows_the_reason_and_how_to_go_on() {
    let held = SessionSummary {
        state: AgentState::NeedsInput,
        waiting_for: Some(panewise_api::WaitingFor::Budget {
            reason: "budget reached: $0.0123 of $0.0100".to_owned(),
        }),
        ..session("capped", AgentState::NeedsInput, 30)
    };
    let list = vec![held, session("other", AgentState::Working, 60)];
    let app = feed(app(120, 12), [Event::List(list)]).0;
    let screen = format!("{}", draw(&app).backend());
    assert!(
        screen.contains("budget reached: $0.0123 of $0.0100"),
        "{screen}"
    );
}
