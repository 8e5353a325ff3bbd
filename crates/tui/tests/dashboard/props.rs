//! `update` never panics, whatever the events and their order, and `view` draws whatever
//! state they lead to.

use panewise_api::AgentState;
use panewise_tui::{view, Event, Key, Mouse};
use proptest::prelude::*;
use ratatui_core::backend::TestBackend;
use ratatui_core::terminal::Terminal;

use crate::fixtures::{app, asking, every_state, feed, log_lines, session};

fn key() -> impl Strategy<Value = Key> {
    prop_oneof![
        any::<char>().prop_map(Key::Char),
        prop::sample::select(vec![
            'y', 'a', 'n', 'r', '1', 'c', 'p', 'e', '/', 'z', '?', 'd'
        ])
        .prop_map(Key::Char),
        Just(Key::Enter),
        Just(Key::Esc),
        Just(Key::Backspace),
        Just(Key::Tab),
        Just(Key::BackTab),
        Just(Key::Up),
        Just(Key::Down),
        Just(Key::Left),
        Just(Key::Right),
        Just(Key::PageUp),
        Just(Key::PageDown),
        Just(Key::Home),
        Just(Key::End),
        Just(Key::Ctrl('x')),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    let names = prop::sample::select(vec!["tests", "build", "docs", "ghost"]);
    let states = prop::sample::select(AgentState::ALL.to_vec());
    prop_oneof![
        4 => key().prop_map(Event::Key),
        1 => (any::<u16>(), any::<u16>())
            .prop_map(|(column, row)| Event::Mouse(Mouse::Click { column, row })),
        1 => Just(Event::Mouse(Mouse::ScrollDown)),
        1 => (0..300_u16, 0..100_u16).prop_map(|(width, height)| Event::Resize { width, height }),
        1 => any::<u64>().prop_map(|now_ms| Event::Tick { now_ms }),
        1 => Just(Event::List(every_state())),
        2 => (names.clone(), states).prop_map(|(name, state)| {
            if state == AgentState::NeedsInput {
                Event::Changed(Box::new(asking(name, 5, "rm -rf /")))
            } else {
                Event::Changed(Box::new(session(name, state, 5)))
            }
        }),
        1 => names.clone().prop_map(|name| Event::Removed { id: format!("0190-{name}") }),
        2 => (names.clone(), 0..6_u64, prop::sample::select(log_lines()), ".{0,20}")
            .prop_map(|(name, index, good, junk)| Event::Line {
                session: format!("0190-{name}"),
                index,
                line: if index % 2 == 0 { good } else { junk },
            }),
        1 => names.prop_map(|name| Event::Ended { session: format!("0190-{name}") }),
        1 => Just(Event::ConnectionLost),
    ]
}

proptest! {
    #[test]
    fn update_never_panics_and_view_always_draws(
        events in prop::collection::vec(event(), 0..60),
    ) {
        let (app, _) = feed(app(100, 30), events);
        let (width, height) = (app.size.0.clamp(1, 300), app.size.1.clamp(1, 100));
        let mut terminal = Terminal::new(TestBackend::new(width, height))
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        terminal
            .draw(|frame| view(&app, frame))
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
    }
}
