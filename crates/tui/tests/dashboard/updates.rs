//! `update` on events alone, its effects compared whole.

use panewise_api::{AgentState, CreateParams, Decision, SessionSummary, WaitingFor};
use panewise_tui::app::Mode;
use panewise_tui::{Effect, Event, Key};

use crate::fixtures::{app, asking, every_state, feed, line_events, log_lines, session};

fn keys(text: &str) -> Vec<Event> {
    text.chars().map(|c| Event::Key(Key::Char(c))).collect()
}

fn subscribe(id: &str, attach: bool) -> Effect {
    Effect::Subscribe {
        session: id.to_owned(),
        from_line: 0,
        attach,
    }
}

#[test]
fn the_first_list_selects_the_session_that_has_waited_longest_and_titles_the_terminal() {
    let list = vec![
        asking("late", 10, "ls"),
        asking("early", 500, "rm -rf target"),
        session("idle", AgentState::Idle, 900),
    ];
    let (app, effects) = feed(app(120, 40), [Event::List(list)]);
    assert_eq!(app.selected.as_deref(), Some("0190-early"));
    assert_eq!(
        effects,
        vec![
            subscribe("0190-early", false),
            Effect::SetTitle("panewise: 2 need input".to_owned()),
        ]
    );
}

#[test]
fn y_a_and_n_answer_the_waiting_approval_by_its_request() {
    let start = feed(app(120, 40), [Event::List(vec![asking("tests", 60, "ls")])]).0;
    let approve = |decision| Effect::Approve {
        session: "0190-tests".to_owned(),
        request: "req-tests".to_owned(),
        decision,
    };
    let (_, effects) = feed(start.clone(), keys("y"));
    assert_eq!(effects, vec![approve(Decision::AllowOnce)]);
    let (_, effects) = feed(start.clone(), keys("a"));
    assert_eq!(effects, vec![approve(Decision::AllowForSession)]);
    let (denying, effects) = feed(start.clone(), keys("n"));
    assert_eq!(effects, vec![]);
    assert!(matches!(denying.mode, Mode::Input { .. }));
    let mut events = keys("not now");
    events.push(Event::Key(Key::Enter));
    let (after, effects) = feed(denying.clone(), events);
    assert_eq!(
        effects,
        vec![approve(Decision::Deny {
            message: Some("not now".to_owned())
        })]
    );
    assert_eq!(after.mode, Mode::List);
    let (_, effects) = feed(denying, [Event::Key(Key::Enter)]);
    assert_eq!(effects, vec![approve(Decision::Deny { message: None })]);
}

#[test]
fn a_question_is_answered_by_a_number_or_by_text() {
    let question = SessionSummary {
        waiting_for: Some(WaitingFor::Question {
            id: "q1".to_owned(),
            questions: vec!["Which one?\n1. fast\n2. safe".to_owned()],
        }),
        ..session("plan", AgentState::NeedsInput, 30)
    };
    let start = feed(app(120, 40), [Event::List(vec![question])]).0;
    let (_, effects) = feed(start.clone(), keys("2"));
    assert_eq!(
        effects,
        vec![Effect::Answer {
            session: "0190-plan".to_owned(),
            text: "2".to_owned()
        }]
    );
    let mut events = keys("rboth, please");
    events.push(Event::Key(Key::Enter));
    let (_, effects) = feed(start, events);
    assert_eq!(
        effects,
        vec![Effect::Answer {
            session: "0190-plan".to_owned(),
            text: "both, please".to_owned()
        }]
    );
}

#[test]
fn moving_the_selection_moves_the_subscription() {
    let start = feed(app(120, 40), [Event::List(every_state())]).0;
    assert_eq!(start.selected.as_deref(), Some("0190-tests"));
    let (moved, effects) = feed(start, [Event::Key(Key::Down)]);
    assert_eq!(
        effects,
        vec![
            Effect::Unsubscribe {
                session: "0190-tests".to_owned()
            },
            subscribe("0190-build", false),
        ]
    );
    assert_eq!(moved.selected.as_deref(), Some("0190-build"));
    let (at_top, _) = feed(moved, [Event::Key(Key::Up), Event::Key(Key::Up)]);
    assert_eq!(at_top.selected.as_deref(), Some("0190-tests"));
}

#[test]
fn enter_attaches_a_prompt_is_sent_and_esc_returns_to_the_list() {
    let start = feed(
        app(120, 40),
        [Event::List(vec![session("docs", AgentState::Done, 9)])],
    )
    .0;
    let (attached, effects) = feed(start, [Event::Key(Key::Enter)]);
    assert_eq!(
        effects,
        vec![
            Effect::Unsubscribe {
                session: "0190-docs".to_owned()
            },
            subscribe("0190-docs", true),
        ]
    );
    let mut events = keys("and once more");
    events.push(Event::Key(Key::Enter));
    let (typed, effects) = feed(attached, events);
    assert_eq!(
        effects,
        vec![Effect::Prompt {
            session: "0190-docs".to_owned(),
            text: "and once more".to_owned()
        }]
    );
    assert_eq!(
        typed.mode,
        Mode::Attached {
            prompt: String::new()
        }
    );
    let (back, effects) = feed(typed, [Event::Key(Key::Esc)]);
    assert_eq!(back.mode, Mode::List);
    assert_eq!(
        effects,
        vec![
            Effect::Unsubscribe {
                session: "0190-docs".to_owned()
            },
            subscribe("0190-docs", false),
        ]
    );
}

#[test]
fn typing_a_prompt_when_an_approval_arrives_does_not_answer_it() {
    let start = feed(
        app(120, 40),
        [Event::List(vec![session("docs", AgentState::Idle, 9)])],
    )
    .0;
    let (attached, _) = feed(start, [Event::Key(Key::Enter), Event::Key(Key::Char('x'))]);
    let (typed, effects) = feed(
        attached,
        [
            Event::Changed(Box::new(asking("docs", 9, "ls"))),
            Event::Key(Key::Char('y')),
        ],
    );
    assert_eq!(
        effects,
        vec![Effect::SetTitle("panewise: 1 needs input".to_owned())]
    );
    assert_eq!(
        typed.mode,
        Mode::Attached {
            prompt: "xy".to_owned()
        }
    );
}

#[test]
fn the_edges_into_needs_input_and_done_ring_the_bell_except_for_the_session_viewed() {
    let start = feed(
        app(120, 40),
        [Event::List(vec![
            session("viewed", AgentState::Working, 50),
            session("other", AgentState::Working, 40),
        ])],
    )
    .0;
    assert_eq!(start.selected.as_deref(), Some("0190-viewed"));
    // The person has taken the selection (a key, a click): it stays where they put it.
    let mut start = start;
    start.chosen = true;
    let (after, effects) = feed(
        start,
        [
            Event::Changed(Box::new(asking("other", 40, "ls"))),
            Event::Changed(Box::new(session("viewed", AgentState::Done, 50))),
        ],
    );
    assert_eq!(
        effects,
        vec![
            Effect::Bell,
            Effect::SetTitle("panewise: 1 needs input".to_owned())
        ]
    );
    let texts: Vec<&str> = after.notices.iter().map(|n| n.text.as_str()).collect();
    assert_eq!(texts, vec!["other needs input"]);
}

#[test]
fn the_watched_session_folds_its_lines_once_in_order() {
    let start = feed(
        app(120, 40),
        [Event::List(vec![session("docs", AgentState::Done, 9)])],
    )
    .0;
    let lines = log_lines();
    let mut events = line_events("0190-docs", &lines);
    // A line again (an earlier subscription's, still in flight) and one of another session.
    events.extend(line_events("0190-docs", &lines[..2]));
    events.extend(line_events("0190-other", &lines));
    let (after, effects) = feed(start, events);
    assert_eq!(effects, vec![]);
    let watched = after
        .watched
        .as_ref()
        .map(|w| (w.next_line(), w.transcript().len()));
    assert_eq!(watched, Some((4, 3)));
}

#[test]
fn the_actions_on_the_selected_session() {
    let start = feed(
        app(120, 40),
        [Event::List(vec![session("docs", AgentState::Idle, 9)])],
    )
    .0;
    let id = || "0190-docs".to_owned();
    for (key, effect) in [
        ('i', Effect::Interrupt { session: id() }),
        ('s', Effect::Stop { session: id() }),
        ('d', Effect::Remove { session: id() }),
        ('u', Effect::Resume { session: id() }),
        ('q', Effect::Quit),
    ] {
        let (_, effects) = feed(start.clone(), keys(&key.to_string()));
        assert_eq!(effects, vec![effect], "key {key}");
    }
    let mut events = keys("ewriter");
    events.push(Event::Key(Key::Enter));
    let (_, effects) = feed(start.clone(), events);
    assert_eq!(
        effects,
        vec![Effect::Rename {
            session: id(),
            name: "writer".to_owned()
        }]
    );
    let mut events = keys("pfix the docs");
    events.push(Event::Key(Key::Enter));
    let (_, effects) = feed(start, events);
    assert_eq!(
        effects,
        vec![Effect::Prompt {
            session: id(),
            text: "fix the docs".to_owned()
        }]
    );
}

#[test]
fn a_new_session_starts_with_the_configured_defaults() {
    let start = feed(app(120, 40), [Event::List(vec![])]).0;
    let mut events = keys("chello");
    events.push(Event::Key(Key::Enter));
    let (after, effects) = feed(start, events);
    assert_eq!(
        effects,
        vec![Effect::Create(Box::new(CreateParams {
            provider: Some("mock".to_owned()),
            prompt: Some("hello".to_owned()),
            approval: Some("ask".to_owned()),
            ..CreateParams::default()
        }))]
    );
    assert_eq!(after.mode, Mode::List);
}

#[test]
fn the_filter_keeps_matching_sessions_and_moves_the_selection_onto_one() {
    let start = feed(app(120, 40), [Event::List(every_state())]).0;
    let mut events = keys("/failed");
    events.push(Event::Key(Key::Enter));
    let (filtered, effects) = feed(start, events);
    assert_eq!(
        filtered.selectable(),
        vec!["0190-fetch".to_owned(), "0190-crash".to_owned()]
    );
    assert_eq!(
        effects,
        vec![
            Effect::Unsubscribe {
                session: "0190-tests".to_owned()
            },
            subscribe("0190-fetch", false),
        ]
    );
    let (cleared, _) = feed(filtered, [Event::Key(Key::Esc)]);
    assert_eq!(cleared.selectable().len(), 9);
}

#[test]
fn a_removed_session_leaves_the_selection_for_the_next() {
    let start = feed(app(120, 40), [Event::List(every_state())]).0;
    let (after, effects) = feed(
        start,
        [Event::Removed {
            id: "0190-tests".to_owned(),
        }],
    );
    assert_eq!(
        effects,
        vec![
            subscribe("0190-build", false),
            Effect::SetTitle("panewise".to_owned())
        ]
    );
    assert_eq!(after.selected.as_deref(), Some("0190-build"));
}

#[test]
fn a_failed_request_and_a_lost_connection_are_shown() {
    let (after, effects) = feed(
        app(120, 40),
        [
            Event::Failed {
                what: "approve".to_owned(),
                message: "already answered".to_owned(),
            },
            Event::ConnectionLost,
        ],
    );
    assert_eq!(effects, vec![]);
    assert!(after.disconnected);
    assert_eq!(after.notices.len(), 2);
}

#[test]
fn the_selection_starts_on_the_session_that_has_waited_longest_not_the_oldest() {
    // `older` started first but asked a minute ago; `newer` has waited ten minutes.
    let older = SessionSummary {
        waiting_since_ms: Some(crate::fixtures::NOW - 60_000),
        ..asking("older", 3_600, "ls")
    };
    let newer = SessionSummary {
        waiting_since_ms: Some(crate::fixtures::NOW - 600_000),
        ..asking("newer", 900, "ls")
    };
    let (app, effects) = feed(app(120, 40), [Event::List(vec![older, newer])]);
    assert_eq!(app.selected.as_deref(), Some("0190-newer"));
    assert_eq!(effects[0], subscribe("0190-newer", false));
}

#[test]
fn until_the_person_chooses_the_selection_follows_a_session_that_starts_waiting() {
    let start = feed(
        app(120, 40),
        [Event::List(vec![
            session("first", AgentState::Working, 50),
            session("ask", AgentState::Working, 40),
        ])],
    )
    .0;
    assert_eq!(start.selected.as_deref(), Some("0190-first"));
    let (moved, effects) = feed(
        start.clone(),
        [Event::Changed(Box::new(asking("ask", 40, "ls")))],
    );
    assert_eq!(moved.selected.as_deref(), Some("0190-ask"));
    assert!(
        effects.contains(&subscribe("0190-ask", false)),
        "{effects:?}"
    );
    // A second one that starts waiting does not take the selection from the first.
    let (stays, _) = feed(
        moved,
        [Event::Changed(Box::new(asking("first", 50, "rm x")))],
    );
    assert_eq!(stays.selected.as_deref(), Some("0190-ask"));
    // Once a key was pressed, the selection is the person's.
    let mut chosen = start;
    chosen.chosen = true;
    let (kept, _) = feed(chosen, [Event::Changed(Box::new(asking("ask", 40, "ls")))]);
    assert_eq!(kept.selected.as_deref(), Some("0190-first"));
}
