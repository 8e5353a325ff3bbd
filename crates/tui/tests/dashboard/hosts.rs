//! Several hosts in one dashboard: remote sessions keyed `HOST:ID`, a host column, a dropped
//! connection shown `unreachable`, and the watched subscription resumed at its offset.

use panewise_api::{AgentState, SessionSummary};
use panewise_tui::{view, App, Effect, Event, Key};
use ratatui_core::backend::TestBackend;
use ratatui_core::terminal::Terminal;

use crate::fixtures::{app, asking, feed, line_events, log_lines, session};

/// `session` as the shell hands a remote host's over: its id keyed `HOST:ID`.
fn on(host: &str, summary: SessionSummary) -> SessionSummary {
    SessionSummary {
        id: format!("{host}:{}", summary.id),
        ..summary
    }
}

fn with_hosts(width: u16, height: u16) -> App {
    let mut app = app(width, height);
    app.settings.remote_hosts = vec!["build-box".to_owned()];
    app
}

fn remote_list() -> Vec<SessionSummary> {
    vec![
        on("build-box", asking("far", 200, "cargo test")),
        on("build-box", session("nightly", AgentState::Working, 900)),
    ]
}

fn local_list() -> Vec<SessionSummary> {
    vec![
        session("near", AgentState::Done, 30),
        asking("here", 50, "ls"),
    ]
}

fn draw(app: &App) -> String {
    let mut terminal = match Terminal::new(TestBackend::new(app.size.0, app.size.1)) {
        Ok(terminal) => terminal,
        Err(error) => panic!("a test backend: {error}"),
    };
    if let Err(error) = terminal.draw(|frame| view(app, frame)) {
        panic!("drawing: {error}");
    }
    format!("{}", terminal.backend())
}

#[test]
fn the_hosts_lists_are_one_list_each_replaced_on_its_own() {
    let (after, _) = feed(
        with_hosts(120, 30),
        [
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote_list(),
            },
            Event::List(local_list()),
        ],
    );
    assert_eq!(after.sessions.len(), 4);
    // The first list to arrive selects its longest waiting session; the next keeps it.
    assert_eq!(after.selected.as_deref(), Some("build-box:0190-far"));
    // A host's new list replaces its own sessions only, and this machine's likewise.
    let (after, _) = feed(
        after,
        [
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: vec![on("build-box", session("nightly", AgentState::Idle, 900))],
            },
            Event::List(vec![session("near", AgentState::Idle, 30)]),
        ],
    );
    let mut ids: Vec<&str> = after.sessions.keys().map(String::as_str).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["0190-near", "build-box:0190-nightly"]);
}

#[test]
fn a_host_list_arriving_after_this_machines_moves_the_selection_to_its_waiting_session() {
    // This machine answers first: nothing waits there, so its first row is selected; the
    // host reached over ssh answers later with a session that waits for the person.
    let (after, effects) = feed(
        with_hosts(120, 30),
        [
            Event::List(vec![session("near", AgentState::Done, 30)]),
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote_list(),
            },
        ],
    );
    assert_eq!(after.selected.as_deref(), Some("build-box:0190-far"));
    assert!(
        effects.contains(&Effect::Unsubscribe {
            session: "0190-near".to_owned()
        }),
        "{effects:?}"
    );
    let (_, effects) = feed(after, [Event::Key(Key::Char('y'))]);
    assert_eq!(
        effects,
        vec![Effect::Approve {
            session: "build-box:0190-far".to_owned(),
            request: "req-far".to_owned(),
            decision: panewise_api::Decision::AllowOnce,
        }]
    );
    // Once the person has pressed a key, a later list leaves their selection alone.
    let (chosen, _) = feed(
        with_hosts(120, 30),
        [
            Event::List(vec![session("near", AgentState::Done, 30)]),
            Event::Key(Key::Char('j')),
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote_list(),
            },
        ],
    );
    assert_eq!(chosen.selected.as_deref(), Some("0190-near"));
    // A selected session that itself waits keeps the selection.
    let (kept, _) = feed(
        with_hosts(120, 30),
        [
            Event::List(local_list()),
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote_list(),
            },
        ],
    );
    assert_eq!(kept.selected.as_deref(), Some("0190-here"));
}

#[test]
fn an_action_on_a_remote_session_names_it_by_its_host_key() {
    let (after, _) = feed(
        with_hosts(120, 30),
        [
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote_list(),
            },
            Event::List(local_list()),
        ],
    );
    let (_, effects) = feed(after, [Event::Key(Key::Char('y'))]);
    // The answer goes to the remote host's session by its key; then the selection moves to
    // the one left waiting longest, this machine's.
    assert_eq!(
        effects,
        vec![
            Effect::Approve {
                session: "build-box:0190-far".to_owned(),
                request: "req-far".to_owned(),
                decision: panewise_api::Decision::AllowOnce,
            },
            Effect::Unsubscribe {
                session: "build-box:0190-far".to_owned()
            },
            Effect::Subscribe {
                session: "0190-here".to_owned(),
                from_line: 0,
                attach: false
            },
        ]
    );
}

#[test]
fn a_dropped_host_is_unreachable_and_its_watched_session_resumes_at_its_offset() {
    let far = "build-box:0190-far";
    let (watching, _) = feed(
        with_hosts(120, 30),
        [
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote_list(),
            },
            Event::List(local_list()),
        ]
        .into_iter()
        .chain(line_events(far, &log_lines())),
    );
    let folded = log_lines().len();
    assert_eq!(
        watching.watched.as_ref().map(|w| w.next_line()),
        Some(folded as u64)
    );
    let (lost, effects) = feed(
        watching,
        [
            Event::HostLost {
                host: "build-box".to_owned(),
                why: "Connection closed by 127.0.0.1".to_owned(),
            },
            // Said once, however many attempts fail.
            Event::HostLost {
                host: "build-box".to_owned(),
                why: "Connection refused".to_owned(),
            },
        ],
    );
    assert_eq!(effects, vec![]);
    assert!(lost.unreachable.contains("build-box"));
    assert_eq!(lost.notices.len(), 1);
    assert!(lost.notices[0].text.contains("build-box: unreachable"));
    // Its sessions are still listed, in their states: a view, not a session state.
    let far_session = lost.sessions.get(far).map(|s| s.state);
    assert_eq!(far_session, Some(AgentState::NeedsInput));
    assert!(!lost.disconnected);
    // Its question takes no answer while it cannot be reached.
    let (lost, effects) = feed(lost, [Event::Key(Key::Char('y'))]);
    assert_eq!(effects, vec![]);
    // Back: the watched session subscribed again from the line after the last folded.
    let (back, effects) = feed(
        lost,
        [Event::HostList {
            host: "build-box".to_owned(),
            sessions: remote_list(),
        }],
    );
    assert!(back.unreachable.is_empty());
    assert_eq!(
        effects,
        vec![Effect::Subscribe {
            session: far.to_owned(),
            from_line: folded as u64,
            attach: false,
        }]
    );
    // A line of the old subscription arriving again is not folded twice.
    let transcript = back.watched.as_ref().map(|w| w.transcript().len());
    let (again, _) = feed(back, line_events(far, &log_lines()));
    assert_eq!(
        again.watched.as_ref().map(|w| w.transcript().len()),
        transcript
    );
}

#[test]
fn the_host_column_and_the_unreachable_rows() {
    let (app, _) = feed(
        with_hosts(200, 16),
        [
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote_list(),
            },
            Event::List(local_list()),
        ],
    );
    insta::assert_snapshot!("two_hosts", draw(&app));
    let (app, _) = feed(
        app,
        [Event::HostLost {
            host: "build-box".to_owned(),
            why: "Connection closed".to_owned(),
        }],
    );
    let screen = draw(&app);
    assert!(screen.contains("unreachable (was needs_input)"), "{screen}");
    insta::assert_snapshot!("a_host_unreachable", screen);
}
