//! Answering many waiting sessions in a row (issue 28, finding 5), a key that does nothing
//! saying why, and the footer after a host comes back (finding 7).

use panewise_api::{AgentState, Decision, SessionSummary};
use panewise_tui::{view, App, Effect, Event, Key};
use ratatui_core::backend::TestBackend;
use ratatui_core::terminal::Terminal;

use crate::fixtures::{app, asking, feed, session};

/// Three sessions waiting for an approval, `first` the longest, and one done.
fn three_waiting() -> Vec<SessionSummary> {
    vec![
        asking("second", 200, "ls"),
        asking("first", 300, "pwd"),
        asking("third", 100, "date"),
        session("over", AgentState::Done, 30),
    ]
}

fn approved(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Approve {
                session,
                decision: Decision::AllowOnce,
                ..
            } => Some(session.clone()),
            _ => None,
        })
        .collect()
}

/// The daemon's word that `name` was answered and finished its turn.
fn finished(name: &str) -> Event {
    Event::Changed(Box::new(session(name, AgentState::Done, 10)))
}

fn footer(app: &App) -> String {
    let mut terminal = match Terminal::new(TestBackend::new(app.size.0, app.size.1)) {
        Ok(terminal) => terminal,
        Err(error) => panic!("a test backend: {error}"),
    };
    if let Err(error) = terminal.draw(|frame| view(app, frame)) {
        panic!("drawing: {error}");
    }
    let buffer = terminal.backend().buffer().clone();
    let last = buffer.area.height.saturating_sub(1);
    (0..buffer.area.width)
        .map(|x| buffer[(x, last)].symbol().to_owned())
        .collect::<String>()
        .trim_end()
        .to_owned()
}

#[test]
fn y_y_y_answers_every_waiting_session_longest_waiting_first() {
    let key_y = || Event::Key(Key::Char('y'));
    // (the events between the keys, rule)
    let cases: [(Vec<Event>, Vec<Event>, &str); 3] = [
        (
            vec![],
            vec![],
            "keys faster than the daemon: the answered ones are passed over",
        ),
        (
            vec![finished("first")],
            vec![finished("second")],
            "the daemon says each moved on before the next key",
        ),
        (
            vec![finished("first")],
            vec![],
            "the daemon says so for some",
        ),
    ];
    for (after_first, after_second, rule) in cases {
        let (ready, _) = feed(app(120, 30), [Event::List(three_waiting())]);
        assert_eq!(ready.selected.as_deref(), Some("0190-first"), "{rule}");
        let mut events = vec![key_y()];
        events.extend(after_first);
        events.push(key_y());
        events.extend(after_second);
        events.push(key_y());
        let (done, effects) = feed(ready, events);
        assert_eq!(
            approved(&effects),
            ["0190-first", "0190-second", "0190-third"],
            "{rule}: each y answers the next waiting session, none twice"
        );
        // Rule: with none left to answer, the selection stays on the last answered.
        assert_eq!(done.selected.as_deref(), Some("0190-third"), "{rule}");
        // Rule: a fourth y answers nothing, and says why.
        let (after, effects) = feed(done, [key_y()]);
        assert_eq!(approved(&effects), Vec::<String>::new(), "{rule}");
        let said = after
            .notices
            .last()
            .map(|n| n.text.clone())
            .unwrap_or_default();
        assert!(said.starts_with("y: third"), "{rule}: {said}");
    }
}

/// A row of [`a_key_that_does_nothing_says_why`]: the list, the keys before, the key, the
/// footer it leaves, and the rule.
type Row = (
    Vec<SessionSummary>,
    Vec<Key>,
    char,
    &'static str,
    &'static str,
);

#[test]
fn a_key_that_does_nothing_says_why() {
    let waiting = || {
        vec![
            asking("asker", 100, "ls"),
            session("idle", AgentState::Idle, 50),
        ]
    };
    let question = || {
        let mut asks = asking("asker", 100, "ls");
        asks.waiting_for = Some(panewise_api::WaitingFor::Question {
            id: "q1".to_owned(),
            questions: vec!["which?".to_owned()],
        });
        vec![asks]
    };
    let done_only = || vec![session("demo-done", AgentState::Done, 50)];
    let done_and_waiting = || {
        vec![
            session("demo-done", AgentState::Done, 50),
            asking("one", 100, "ls"),
            asking("two", 90, "ls"),
        ]
    };
    // (list, keys before, the key, the footer it leaves, rule)
    let table: [Row; 7] = [
        (
            done_only(),
            vec![],
            'y',
            "y: demo-done waits for nothing",
            "an answer key on a session that waits for nothing",
        ),
        (
            done_and_waiting(),
            vec![Key::End],
            'y',
            "y: demo-done waits for nothing; 2 others wait (↑↓ selects)",
            "and how many others wait",
        ),
        (
            waiting(),
            vec![],
            '1',
            "1: asker waits for an approval: y allows, a allows for the session, n denies",
            "a question's key on an approval",
        ),
        (
            question(),
            vec![],
            'y',
            "y: asker asks a question: 1-9 picks a choice, r replies",
            "an approval's key on a question",
        ),
        (
            vec![],
            vec![],
            'y',
            "y: no session is selected",
            "an answer key with nothing selected",
        ),
        (
            vec![],
            vec![],
            'p',
            "p: no session is selected",
            "a session's key with nothing selected",
        ),
        (
            waiting(),
            vec![Key::Char('y')],
            'y',
            "y: asker's request was answered; waiting for the agent to go on",
            "no other session waits: the selection stays, and a second y is not sent twice",
        ),
    ];
    for (list, before, key, expected, rule) in table {
        let mut events = vec![Event::List(list)];
        events.extend(before.into_iter().map(Event::Key));
        events.push(Event::Key(Key::Char(key)));
        let (after, _) = feed(app(140, 30), events);
        assert_eq!(footer(&after), expected, "{rule}");
    }
}

#[test]
fn the_footer_stops_saying_unreachable_once_the_host_answers_again() {
    let mut start = app(140, 30);
    start.settings.remote_hosts = vec!["build-box".to_owned()];
    let remote = || {
        let mut far = session("far", AgentState::Working, 100);
        far.id = format!("build-box:{}", far.id);
        vec![far]
    };
    let (ready, _) = feed(
        start,
        [
            Event::List(vec![session("near", AgentState::Idle, 10)]),
            Event::HostList {
                host: "build-box".to_owned(),
                sessions: remote(),
            },
        ],
    );
    let (lost, _) = feed(
        ready,
        [Event::HostLost {
            host: "build-box".to_owned(),
            why: "Connection closed".to_owned(),
        }],
    );
    // Rule: while the host is down, the footer says so, whatever the time.
    let (lost, _) = feed(
        lost,
        [Event::Tick {
            now_ms: crate::fixtures::NOW + 60_000,
        }],
    );
    assert!(
        footer(&lost).contains("build-box: unreachable, reconnecting"),
        "{}",
        footer(&lost)
    );
    // Rule: the host's list is its answer: the footer says it is back, at once.
    let (back, _) = feed(
        lost,
        [Event::HostList {
            host: "build-box".to_owned(),
            sessions: remote(),
        }],
    );
    assert_eq!(footer(&back), "build-box: reachable again");
    // Rule: and the line goes the way of any notice, leaving the keys' hints.
    let (later, _) = feed(
        back,
        [Event::Tick {
            now_ms: crate::fixtures::NOW + 120_000,
        }],
    );
    assert!(
        !footer(&later).contains("unreachable"),
        "{}",
        footer(&later)
    );
    assert!(
        footer(&later).starts_with("↑↓ select"),
        "{}",
        footer(&later)
    );
}
