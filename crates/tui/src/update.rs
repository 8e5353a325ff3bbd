//! `update(App, Event) -> (App, Vec<Effect>)`: every change of the dashboard's state, and
//! every request it makes, decided from events alone.

use panewise_api::view::{reply_key, Reply};
use panewise_api::{AgentState, CreateParams, SessionSummary, WaitingFor};

use crate::app::{host_of, App, Field, Form, Group, Mode, Notice, Purpose, Watched, NOTICE_CAP};
use crate::event::{Effect, Event, Key, Mouse};
use crate::text::one_line;
use crate::view::{list_row_at, LIST_TOP};

/// The dashboard's next state and what the shell must do for it.
pub fn update(mut app: App, event: Event) -> (App, Vec<Effect>) {
    let mut effects = Vec::new();
    match event {
        Event::Key(key) => on_key(&mut app, key, &mut effects),
        Event::Mouse(mouse) => on_mouse(&mut app, mouse, &mut effects),
        Event::Resize { width, height } => app.size = (width, height),
        Event::Tick { now_ms } => app.now_ms = now_ms,
        Event::List(sessions) => {
            // This machine's list: the remote hosts' sessions stay.
            app.sessions.retain(|id, _| host_of(id).is_some());
            app.sessions.extend(
                sessions
                    .into_iter()
                    .map(|session| (session.id.clone(), session)),
            );
            app.loaded = true;
            app.disconnected = false;
            select_after_list(&mut app, &mut effects);
        }
        Event::Changed(session) => on_changed(&mut app, *session, &mut effects),
        Event::Removed { id } => {
            app.sessions.remove(&id);
            if app.selected.as_deref() == Some(id.as_str()) {
                app.watched = None;
                app.selected = None;
                if matches!(app.mode, Mode::Attached { .. }) {
                    app.mode = Mode::List;
                }
                let next = app.selectable().into_iter().next();
                select(&mut app, next, &mut effects);
            }
        }
        Event::Line {
            session,
            index,
            line,
        } => {
            if let Some(watched) = app.watched.as_mut().filter(|w| w.session == session) {
                watched.fold(index, &line);
            }
        }
        Event::Ended { session } => {
            if let Some(watched) = app.watched.as_mut().filter(|w| w.session == session) {
                watched.ended = true;
            }
        }
        Event::Failed { what, message } => {
            let text = format!("{what}: {message}");
            notice(&mut app, text, true);
        }
        Event::HostList { host, sessions } => on_host_list(&mut app, host, sessions, &mut effects),
        Event::HostLost { host, why } => {
            if app.unreachable.insert(host.clone()) {
                let text = format!(
                    "{}: unreachable, reconnecting ({}); its agents may still run",
                    one_line(&host, 40),
                    one_line(&why, 120)
                );
                host_notice(&mut app, text, true, Some(host));
            }
        }
        Event::ConnectionLost => {
            app.disconnected = true;
            notice(
                &mut app,
                "the daemon closed the connection; the agents it hosted may still run \
                 (`panewise agents`)"
                    .to_owned(),
                true,
            );
        }
    }
    forget_moved_on(&mut app);
    retitle(&mut app, &mut effects);
    (app, effects)
}

/// Drops the answered requests whose session no longer shows them waiting.
fn forget_moved_on(app: &mut App) {
    let sessions = &app.sessions;
    app.answered.retain(|(session, request)| {
        sessions
            .get(session)
            .and_then(|summary| summary.waiting_for.as_ref())
            .is_some_and(|waiting| request_id(waiting) == request)
    });
}

fn request_id(waiting: &WaitingFor) -> &str {
    waiting.id()
}

/// A remote host's list: its sessions replaced, the host reachable again, and the watched
/// session, when it is there, subscribed again after the last line folded: the earlier
/// subscription ended with the connection, and the daemon sends the lines from `from_line`,
/// so none is missed and none folded twice.
fn on_host_list(
    app: &mut App,
    host: String,
    sessions: Vec<SessionSummary>,
    effects: &mut Vec<Effect>,
) {
    app.sessions
        .retain(|id, _| host_of(id) != Some(host.as_str()));
    app.sessions.extend(
        sessions
            .into_iter()
            .map(|session| (session.id.clone(), session)),
    );
    if app.unreachable.remove(&host) {
        // The host answers again: its `unreachable, reconnecting` line is no longer true.
        app.notices
            .retain(|notice| notice.host.as_deref() != Some(host.as_str()));
        notice(
            app,
            format!("{}: reachable again", one_line(&host, 40)),
            false,
        );
    }
    if let Some(watched) = app
        .watched
        .as_ref()
        .filter(|watched| host_of(&watched.session) == Some(host.as_str()))
    {
        if app.sessions.contains_key(&watched.session) && !watched.ended {
            effects.push(Effect::Subscribe {
                session: watched.session.clone(),
                from_line: watched.next_line(),
                attach: watched.attached,
            });
        }
    }
    select_after_list(app, effects);
}

/// After a list (this machine's or a host's): nothing selected yet, the first row; and until
/// the person has chosen, a session that waits for them takes the selection from one that does
/// not. The hosts' lists arrive one by one (this machine's first, a host over ssh seconds
/// later): without this the dashboard would keep peeking at a local session that is done
/// while a remote one waits, and `y` would answer nothing.
fn select_after_list(app: &mut App, effects: &mut Vec<Effect>) {
    // The one that has waited longest for a person: the list shows needs-input sessions
    // first, the oldest first.
    let first = app.selectable().into_iter().next();
    if app.selected.is_none() {
        select(app, first, effects);
        return;
    }
    let waits = |app: &App, id: Option<&String>| {
        id.and_then(|id| app.sessions.get(id))
            .is_some_and(|session| session.state == AgentState::NeedsInput)
    };
    if !app.chosen
        && matches!(app.mode, Mode::List)
        && !waits(app, app.selected.as_ref())
        && waits(app, first.as_ref())
    {
        select(app, first, effects);
    }
}

/// A line at the bottom.
fn notice(app: &mut App, text: String, error: bool) {
    host_notice(app, text, error, None);
}

/// A line at the bottom about a remote `host`.
fn host_notice(app: &mut App, text: String, error: bool, host: Option<String>) {
    app.notices.push(Notice {
        at_ms: app.now_ms,
        text,
        error,
        host,
    });
    if app.notices.len() > NOTICE_CAP {
        app.notices.remove(0);
    }
}

/// The terminal's title says how many wait, set only when that changes.
fn retitle(app: &mut App, effects: &mut Vec<Effect>) {
    if !app.loaded {
        return;
    }
    let waiting = app
        .sessions
        .values()
        .filter(|session| session.state == AgentState::NeedsInput)
        .count();
    let title = match waiting {
        0 => "panewise".to_owned(),
        1 => "panewise: 1 needs input".to_owned(),
        n => format!("panewise: {n} need input"),
    };
    if title != app.title {
        app.title = title.clone();
        effects.push(Effect::SetTitle(title));
    }
}

/// A summary changed: the edges into needs-input and done are notices (and the bell), except
/// for the session being looked at.
fn on_changed(app: &mut App, session: SessionSummary, effects: &mut Vec<Effect>) {
    let before = app.sessions.get(&session.id).map(|old| old.state);
    // The session on screen (peeked or attached) is being looked at: no notice for it.
    let viewed = app.selected.as_deref() == Some(session.id.as_str());
    let edge = match session.state {
        AgentState::NeedsInput if before != Some(AgentState::NeedsInput) => Some("needs input"),
        AgentState::Done if before != Some(AgentState::Done) && before.is_some() => Some("done"),
        AgentState::Failed if before.is_some_and(|state| state != AgentState::Failed) => {
            Some("failed")
        }
        _ => None,
    };
    let name = one_line(&session.name, 40);
    let id = session.id.clone();
    app.sessions.insert(session.id.clone(), session);
    if let Some(edge) = edge {
        if !viewed {
            notice(app, format!("{name} {edge}"), false);
            if app.settings.bell {
                effects.push(Effect::Bell);
            }
        }
    }
    let selected_waits = app
        .selected
        .as_ref()
        .and_then(|selected| app.sessions.get(selected))
        .is_some_and(|selected| selected.state == AgentState::NeedsInput);
    let starts_waiting = edge == Some("needs input");
    if app.selected.is_none()
        || (starts_waiting && !app.chosen && !selected_waits && matches!(app.mode, Mode::List))
    {
        select(app, Some(id), effects);
    }
}

/// Moves the selection to `id`, subscribing to it in place of the one watched before.
fn select(app: &mut App, id: Option<String>, effects: &mut Vec<Effect>) {
    if app.selected == id && app.watched.is_some() {
        return;
    }
    if let Some(old) = app.watched.take() {
        effects.push(Effect::Unsubscribe {
            session: old.session,
        });
    }
    app.selected = id.clone();
    app.scroll = 0;
    if let Some(id) = id {
        let attach = matches!(app.mode, Mode::Attached { .. });
        app.watched = Some(Watched::new(&id, attach));
        effects.push(Effect::Subscribe {
            session: id,
            from_line: 0,
            attach,
        });
    }
}

/// Subscribes to the selected session again, attached or not (the fold starts over).
fn resubscribe(app: &mut App, attach: bool, effects: &mut Vec<Effect>) {
    let Some(id) = app.selected.clone() else {
        return;
    };
    if app.watched.is_some() {
        effects.push(Effect::Unsubscribe {
            session: id.clone(),
        });
    }
    app.watched = Some(Watched::new(&id, attach));
    effects.push(Effect::Subscribe {
        session: id,
        from_line: 0,
        attach,
    });
}

/// Moves the selection by `delta` rows.
fn move_by(app: &mut App, delta: isize, effects: &mut Vec<Effect>) {
    let ids = app.selectable();
    if ids.is_empty() {
        return;
    }
    let at = app
        .selected
        .as_ref()
        .and_then(|id| ids.iter().position(|other| other == id));
    let last = ids.len().saturating_sub(1);
    let next = match at {
        None => 0,
        Some(at) if delta < 0 => at.saturating_sub(delta.unsigned_abs()),
        Some(at) => at.saturating_add(delta.unsigned_abs()).min(last),
    };
    let id = ids.get(next).cloned();
    select(app, id, effects);
}

/// What an answer key found.
enum Answering {
    /// It answered (or opened the input that will).
    Answered,
    /// It is an answer key, and answers nothing now: why.
    Refused(String),
    /// Not an answer key.
    NotAnswer,
}

/// Whether `key` answers something: `y`, `a`, `n` (an approval, [`reply_key`]), a digit or
/// `r` (a question).
fn is_answer_key(key: Key) -> bool {
    matches!(key, Key::Char(c) if reply_key(c).is_some() || c == 'r' || ('1'..='9').contains(&c))
}

/// The keys that answer what the selected session waits for: `y`, `a`, `n`, digits, `r`.
fn answer_key(app: &mut App, key: Key, effects: &mut Vec<Effect>) -> Answering {
    let Key::Char(pressed) = key else {
        return Answering::NotAnswer;
    };
    if !is_answer_key(key) {
        return Answering::NotAnswer;
    }
    let Some(session) = app.selected_session() else {
        return Answering::Refused(format!("{pressed}: no session is selected"));
    };
    let name = one_line(&session.name, 40);
    let waiting_for = match (&session.waiting_for, session.state) {
        (Some(waiting), AgentState::NeedsInput) => waiting.clone(),
        _ => {
            let others = app
                .sessions
                .values()
                .filter(|other| other.state == AgentState::NeedsInput && other.id != session.id)
                .count();
            let hint = match others {
                0 => String::new(),
                1 => "; 1 other waits (↑↓ selects)".to_owned(),
                n => format!("; {n} others wait (↑↓ selects)"),
            };
            return Answering::Refused(format!("{pressed}: {name} waits for nothing{hint}"));
        }
    };
    // A host that cannot be reached takes no answer now: it would be lost, not queued.
    if app.is_unreachable(session) {
        return Answering::Refused(format!(
            "{pressed}: {name}'s host is unreachable (reconnecting); nothing was sent"
        ));
    }
    let session = session.id.clone();
    let request = request_id(&waiting_for).to_owned();
    if app.answered.contains(&(session.clone(), request.clone())) {
        return Answering::Refused(format!(
            "{pressed}: {name}'s request was answered; waiting for the agent to go on"
        ));
    }
    match (waiting_for, pressed) {
        (WaitingFor::Approval { id, .. }, c) if reply_key(c).is_some() => match reply_key(c) {
            Some(Reply::Deny) => {
                app.mode = Mode::Input {
                    purpose: Purpose::DenyMessage {
                        session,
                        request: id,
                    },
                    text: String::new(),
                };
                return Answering::Answered;
            }
            Some(reply) => effects.push(Effect::Approve {
                session: session.clone(),
                request: id,
                decision: reply.decision(None),
            }),
            None => {}
        },
        (WaitingFor::Question { .. }, digit @ '1'..='9') => {
            effects.push(Effect::Answer {
                session: session.clone(),
                text: digit.to_string(),
            });
        }
        (WaitingFor::Question { .. }, 'r') => {
            app.mode = Mode::Input {
                purpose: Purpose::Answer { session },
                text: String::new(),
            };
            return Answering::Answered;
        }
        (WaitingFor::Approval { .. }, _) => {
            return Answering::Refused(format!(
                "{pressed}: {name} waits for an approval: y allows, a allows for the session, n denies"
            ));
        }
        (WaitingFor::Question { .. }, _) => {
            return Answering::Refused(format!(
                "{pressed}: {name} asks a question: 1-9 picks a choice, r replies"
            ));
        }
        (WaitingFor::Budget { .. }, _) => {
            return Answering::Refused(format!(
                "{pressed}: {name} is held at its budget: raise it with `panewise budget \
                 {name} --max-cost-usd N`, or s stops it"
            ));
        }
    }
    after_answer(app, session, request, effects);
    Answering::Answered
}

/// `request` of `session` was answered: it is remembered until the daemon says the session
/// moved on, and in the list the selection moves to the session that has waited longest for
/// a person, so the next `y` answers the next one. None waiting: it stays.
fn after_answer(app: &mut App, session: String, request: String, effects: &mut Vec<Effect>) {
    app.answered.insert((session, request));
    if !matches!(app.mode, Mode::List) {
        return;
    }
    if let Some(next) = longest_waiting(app) {
        select(app, Some(next), effects);
    }
}

/// The session, among those listed, that has waited longest for a person and can be answered
/// now: not answered already, its host reachable.
pub fn longest_waiting(app: &App) -> Option<String> {
    app.selectable().into_iter().find(|id| {
        app.sessions.get(id).is_some_and(|session| {
            session.state == AgentState::NeedsInput
                && !app.is_unreachable(session)
                && session.waiting_for.as_ref().is_some_and(|waiting| {
                    !app.answered
                        .contains(&(id.clone(), request_id(waiting).to_owned()))
                })
        })
    })
}

fn on_key(app: &mut App, key: Key, effects: &mut Vec<Effect>) {
    app.chosen = true;
    if key == Key::Ctrl('c') {
        effects.push(Effect::Quit);
        return;
    }
    let mode = std::mem::replace(&mut app.mode, Mode::List);
    match mode {
        Mode::List => on_list_key(app, key, effects),
        Mode::Help => {
            // Any key closes the help.
        }
        Mode::Attached { prompt } => on_attached_key(app, prompt, key, effects),
        Mode::Input { purpose, text } => on_input_key(app, purpose, text, key, effects),
        Mode::New(form) => on_form_key(app, form, key, effects),
    }
}

fn on_list_key(app: &mut App, key: Key, effects: &mut Vec<Effect>) {
    match answer_key(app, key, effects) {
        Answering::Answered => return,
        Answering::Refused(why) => {
            notice(app, why, false);
            return;
        }
        Answering::NotAnswer => {}
    }
    let selected = app.selected.clone();
    let input = |purpose: Purpose| Mode::Input {
        purpose,
        text: String::new(),
    };
    match key {
        Key::Char('q') => effects.push(Effect::Quit),
        Key::Up | Key::Char('k') => move_by(app, -1, effects),
        Key::Down | Key::Char('j') => move_by(app, 1, effects),
        Key::PageUp => move_by(app, -10, effects),
        Key::PageDown => move_by(app, 10, effects),
        Key::Home => move_by(app, isize::MIN / 2, effects),
        Key::End => move_by(app, isize::MAX / 2, effects),
        Key::Char('?') => app.mode = Mode::Help,
        Key::Char('/') => {
            app.mode = Mode::Input {
                purpose: Purpose::Filter,
                text: app.filter.clone(),
            }
        }
        Key::Char('z') => {
            // Opens (or closes) the folded groups.
            for group in [Group::Idle, Group::Finished] {
                match app.toggled.iter().position(|g| *g == group) {
                    Some(at) => {
                        app.toggled.remove(at);
                    }
                    None => app.toggled.push(group),
                }
            }
            let ids = app.selectable();
            if app.selected.as_ref().is_some_and(|id| !ids.contains(id)) {
                select(app, ids.first().cloned(), effects);
            }
        }
        Key::Char('c') => {
            let settings = &app.settings;
            app.mode = Mode::New(Form {
                values: [
                    settings.provider.clone(),
                    settings.model.clone(),
                    String::new(),
                    settings.cwd.clone(),
                    "n".to_owned(),
                    settings.approval.clone(),
                ],
                focus: 2,
            });
        }
        Key::Esc => app.filter.clear(),
        _ => {}
    }
    let Some(session) = selected else {
        if let Some(pressed) = session_key(key) {
            notice(app, format!("{pressed}: no session is selected"), false);
        }
        return;
    };
    match key {
        Key::Enter | Key::Right => {
            app.mode = Mode::Attached {
                prompt: String::new(),
            };
            resubscribe(app, true, effects);
        }
        Key::Char('p') => app.mode = input(Purpose::Prompt { session }),
        Key::Char('e') => app.mode = input(Purpose::Rename { session }),
        Key::Char('i') => effects.push(Effect::Interrupt { session }),
        Key::Char('s') => effects.push(Effect::Stop { session }),
        Key::Char('d') => effects.push(Effect::Remove { session }),
        Key::Char('u') => effects.push(Effect::Resume { session }),
        _ => {}
    }
}

/// The name of a key that acts on the selected session, if `key` is one.
fn session_key(key: Key) -> Option<&'static str> {
    match key {
        Key::Enter => Some("Enter"),
        Key::Right => Some("→"),
        Key::Char('p') => Some("p"),
        Key::Char('e') => Some("e"),
        Key::Char('i') => Some("i"),
        Key::Char('s') => Some("s"),
        Key::Char('d') => Some("d"),
        Key::Char('u') => Some("u"),
        _ => None,
    }
}

fn on_attached_key(app: &mut App, mut prompt: String, key: Key, effects: &mut Vec<Effect>) {
    // An approval is answered with y / a / n only while nothing is typed, so a prompt being
    // typed when an approval arrives does not answer it; a key that answers nothing is text.
    if prompt.is_empty() && waiting_here(app) {
        // Attached while answering: the selection stays on the session looked at.
        app.mode = Mode::Attached {
            prompt: String::new(),
        };
        if matches!(answer_key(app, key, effects), Answering::Answered) {
            return;
        }
        app.mode = Mode::List;
    }
    match key {
        Key::Esc | Key::Left if prompt.is_empty() || key == Key::Esc => {
            app.mode = Mode::List;
            resubscribe(app, false, effects);
            return;
        }
        Key::Enter => {
            let text = prompt.trim().to_owned();
            if let (false, Some(session)) = (text.is_empty(), app.selected.clone()) {
                effects.push(Effect::Prompt { session, text });
            }
            prompt.clear();
        }
        Key::Backspace => {
            prompt.pop();
        }
        Key::Char(c) => prompt.push(c),
        Key::Ctrl('x') => {
            if let Some(session) = app.selected.clone() {
                effects.push(Effect::Interrupt { session });
            }
        }
        Key::Up | Key::PageUp => app.scroll = app.scroll.saturating_add(5),
        Key::Down | Key::PageDown => app.scroll = app.scroll.saturating_sub(5),
        _ => {}
    }
    app.mode = Mode::Attached { prompt };
}

/// Whether the selected session waits for a person now.
fn waiting_here(app: &App) -> bool {
    app.selected_session()
        .is_some_and(|session| session.state == AgentState::NeedsInput)
}

fn on_input_key(
    app: &mut App,
    purpose: Purpose,
    mut text: String,
    key: Key,
    effects: &mut Vec<Effect>,
) {
    match key {
        Key::Esc => return,
        Key::Enter => {
            let typed = text.trim().to_owned();
            match purpose {
                Purpose::DenyMessage { session, request } => {
                    effects.push(Effect::Approve {
                        session: session.clone(),
                        request: request.clone(),
                        decision: Reply::Deny.decision((!typed.is_empty()).then_some(typed)),
                    });
                    after_answer(app, session, request, effects);
                }
                Purpose::Answer { session } if !typed.is_empty() => {
                    effects.push(Effect::Answer {
                        session: session.clone(),
                        text: typed,
                    });
                    let request = app
                        .sessions
                        .get(&session)
                        .and_then(|summary| summary.waiting_for.as_ref())
                        .map(|waiting| request_id(waiting).to_owned());
                    if let Some(request) = request {
                        after_answer(app, session, request, effects);
                    }
                }
                Purpose::Prompt { session } if !typed.is_empty() => {
                    effects.push(Effect::Prompt {
                        session,
                        text: typed,
                    });
                }
                Purpose::Rename { session } if !typed.is_empty() => {
                    effects.push(Effect::Rename {
                        session,
                        name: typed,
                    });
                }
                Purpose::Answer { .. } | Purpose::Prompt { .. } | Purpose::Rename { .. } => {}
                Purpose::Filter => {
                    app.filter = typed;
                    let ids = app.selectable();
                    if app.selected.as_ref().is_none_or(|id| !ids.contains(id)) {
                        select(app, ids.first().cloned(), effects);
                    }
                }
            }
            return;
        }
        Key::Backspace => {
            text.pop();
        }
        Key::Char(c) => text.push(c),
        _ => {}
    }
    app.mode = Mode::Input { purpose, text };
}

fn on_form_key(app: &mut App, mut form: Form, key: Key, effects: &mut Vec<Effect>) {
    let fields = Field::ALL.len();
    match key {
        Key::Esc => return,
        Key::Tab | Key::Down => form.focus = (form.focus + 1) % fields,
        Key::BackTab | Key::Up => form.focus = (form.focus + fields - 1) % fields,
        Key::Enter => {
            let value = |field: Field| {
                let at = Field::ALL.iter().position(|f| *f == field).unwrap_or(0);
                let text = form.values.get(at).map(|v| v.trim()).unwrap_or("");
                (!text.is_empty()).then(|| text.to_owned())
            };
            effects.push(Effect::Create(Box::new(CreateParams {
                provider: value(Field::Provider),
                model: value(Field::Model),
                prompt: value(Field::Prompt),
                cwd: value(Field::Cwd),
                name: None,
                approval: value(Field::Approval),
                window: None,
                worktree: value(Field::Worktree).is_some_and(|text| text.eq_ignore_ascii_case("y")),
                mock_scenario: None,
                // The caps of `panewise.toml`'s `[limits]` apply; the form sets none.
                max_cost_usd: None,
                max_tokens: None,
                // The shell sends its own context (`panewise ui`'s directory and keys).
                client: None,
            })));
            return;
        }
        Key::Backspace => {
            if let Some(value) = form.values.get_mut(form.focus) {
                value.pop();
            }
        }
        Key::Char(c) => {
            if let Some(value) = form.values.get_mut(form.focus) {
                value.push(c);
            }
        }
        _ => {}
    }
    app.mode = Mode::New(form);
}

fn on_mouse(app: &mut App, mouse: Mouse, effects: &mut Vec<Effect>) {
    app.chosen = true;
    if !matches!(app.mode, Mode::List) {
        return;
    }
    match mouse {
        Mouse::ScrollUp => move_by(app, -1, effects),
        Mouse::ScrollDown => move_by(app, 1, effects),
        Mouse::Click { column, row } => {
            if row < LIST_TOP {
                return;
            }
            if let Some(id) = list_row_at(app, column, row) {
                select(app, Some(id), effects);
            }
        }
    }
}
