//! `view(&App, &mut Frame)`: the dashboard drawn from the state alone. Every piece of text
//! that came from a model, a tool or an agent goes through [`crate::text`] first, so an
//! escape sequence in it is shown, never run.

use panewise_api::view::{age_text, cost_text, failure_kind_text, tokens_text, what_text};
use panewise_api::{AgentState, SessionSummary, WaitingFor};
use panewise_pane_state::WindowSource;
use ratatui_core::layout::{Constraint, Direction, Layout, Rect};
use ratatui_core::style::{Color, Modifier, Style};
use ratatui_core::terminal::Frame;
use ratatui_core::text::{Line, Span};
use ratatui_widgets::block::Block;
use ratatui_widgets::borders::Borders;
use ratatui_widgets::clear::Clear;
use ratatui_widgets::paragraph::{Paragraph, Wrap};

use crate::app::{host_label, App, Field, Group, Mode, Purpose, Watched};
use crate::text::{cell, one_line};
use crate::transcript::entry_lines;

/// The first row of the list (the header is row 0).
pub const LIST_TOP: u16 = 1;

/// Columns from which the peek sits beside the list rather than below it.
const SIDE_BY_SIDE: u16 = 110;

/// Draws the dashboard.
pub fn view(app: &App, frame: &mut Frame) {
    let area = frame.area();
    let [header, body, footer] = rows(area);
    frame.render_widget(Paragraph::new(header_line(app)), header);
    match &app.mode {
        Mode::Attached { prompt } => attached(app, prompt, frame, body),
        Mode::List | Mode::Input { .. } | Mode::New(_) | Mode::Help => {
            let (list, peek_area) = split(body);
            list_view(app, frame, list);
            peek(app, frame, peek_area);
        }
    }
    frame.render_widget(Paragraph::new(footer_line(app)), footer);
    match &app.mode {
        Mode::Help => help(frame, area),
        Mode::New(form) => new_form(form, frame, area),
        Mode::List | Mode::Attached { .. } | Mode::Input { .. } => {}
    }
}

fn rows(area: Rect) -> [Rect; 3] {
    Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(1),
            Constraint::Length(1),
        ])
        .areas(area)
}

/// The list's area and the peek's, side by side on a wide terminal, stacked otherwise.
fn split(body: Rect) -> (Rect, Rect) {
    let [list, peek] = if body.width >= SIDE_BY_SIDE {
        Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(58), Constraint::Percentage(42)])
            .areas(body)
    } else {
        Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
            .areas(body)
    };
    (list, peek)
}

/// The list's area for a terminal of `size` (the mouse maps clicks with it).
fn list_area(size: (u16, u16)) -> Rect {
    let [_, body, _] = rows(Rect::new(0, 0, size.0, size.1));
    split(body).0
}

/// A state's mark and colour.
pub fn mark(state: AgentState) -> (&'static str, Color) {
    match state {
        AgentState::NeedsInput => ("◆", Color::Yellow),
        AgentState::Working => ("●", Color::Cyan),
        AgentState::Done => ("✓", Color::Green),
        AgentState::Idle => ("○", Color::Gray),
        AgentState::Failed => ("✗", Color::Red),
        AgentState::Interrupted => ("‖", Color::Gray),
        AgentState::Stopped => ("■", Color::DarkGray),
        AgentState::Exited => ("·", Color::DarkGray),
    }
}

fn header_line(app: &App) -> Line<'static> {
    let mut spans = vec![Span::styled(
        "panewise",
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if !app.loaded {
        spans.push(Span::raw(" · connecting to the daemon…"));
        return Line::from(spans);
    }
    if app.sessions.is_empty() {
        spans.push(Span::raw(" · no sessions (c starts one)"));
    }
    for (state, count) in app.counts() {
        let (symbol, color) = mark(state);
        spans.push(Span::raw(" · "));
        spans.push(Span::styled(
            format!("{symbol} {count} {}", state.as_str().replace('_', " ")),
            Style::default().fg(color),
        ));
    }
    if !app.filter.is_empty() {
        spans.push(Span::raw(format!(
            " · filter \"{}\" (Esc clears)",
            one_line(&app.filter, 30)
        )));
    }
    for host in &app.unreachable {
        spans.push(Span::styled(
            format!(" · {} unreachable", one_line(host, 30)),
            Style::default().fg(Color::Red),
        ));
    }
    if app.disconnected {
        spans.push(Span::styled(
            " · disconnected",
            Style::default().fg(Color::Red),
        ));
    }
    Line::from(spans)
}

/// One entry of the list: a group heading, a folded group, or a session.
enum Entry<'a> {
    Heading(Group, usize),
    Folded(Group, usize),
    Session(&'a SessionSummary),
}

fn entries(app: &App) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
    for (group, members) in app.grouped() {
        if app.is_folded(group) {
            out.push(Entry::Folded(group, members.len()));
            continue;
        }
        out.push(Entry::Heading(group, members.len()));
        out.extend(members.into_iter().map(Entry::Session));
    }
    out
}

/// The first entry shown, so that the selected one is on screen.
fn scroll_of(app: &App, entries: &[Entry<'_>], height: usize) -> usize {
    let at = entries
        .iter()
        .position(|entry| {
            matches!(entry, Entry::Session(session) if Some(&session.id) == app.selected.as_ref())
        })
        .unwrap_or(0);
    at.saturating_add(1).saturating_sub(height)
}

/// The session whose row is at (`column`, `row`) of the terminal, if any.
pub fn list_row_at(app: &App, column: u16, row: u16) -> Option<String> {
    let area = list_area(app.size);
    if column < area.x || column >= area.x.saturating_add(area.width) || row < area.y {
        return None;
    }
    let entries = entries(app);
    let first = scroll_of(app, &entries, usize::from(area.height));
    let index = first.saturating_add(usize::from(row.saturating_sub(area.y)));
    match entries.get(index) {
        Some(Entry::Session(session)) => Some(session.id.clone()),
        _ => None,
    }
}

/// The context column: `~` marks a window guessed from the model's name (the summary's
/// source, else the watched fold's).
fn context_text(app: &App, session: &SessionSummary) -> String {
    let guess = match session.context_window_source {
        Some(source) => source == WindowSource::Model,
        None => app
            .watched_of(&session.id)
            .is_some_and(Watched::window_is_guess),
    };
    match session.context_pct {
        Some(pct) if guess => format!("~{pct:.0}%"),
        Some(pct) => format!("{pct:.0}%"),
        None => "-".to_owned(),
    }
}

/// The width of the host column, when there is one.
const HOST_COLUMN: usize = 12;

/// The narrowest and widest name column: a name is what the commands take, so the column
/// fits the longest name listed within these, leaving the "what it does" column at least
/// `WHAT_MIN` wide.
const NAME_COLUMN: (usize, usize) = (14, 32);
const WHAT_MIN: usize = 24;

/// The name column's width for the sessions `entries` lists in a list `width` wide.
fn name_column(entries: &[Entry<'_>], width: u16, host: bool) -> usize {
    let longest = entries
        .iter()
        .filter_map(|entry| match entry {
            Entry::Session(session) => Some(one_line(&session.name, NAME_COLUMN.1).chars().count()),
            Entry::Heading(..) | Entry::Folded(..) => None,
        })
        .max()
        .unwrap_or(0);
    let others = ROW_FIXED + if host { HOST_COLUMN + 1 } else { 0 } + WHAT_MIN;
    let room = usize::from(width).saturating_sub(others);
    longest
        .clamp(NAME_COLUMN.0, NAME_COLUMN.1)
        .min(room.max(NAME_COLUMN.0))
}

/// The row's columns but the name and "what": the mark, provider, context, tokens, cost, age
/// and the spaces between.
const ROW_FIXED: usize = 2 + 1 + 10 + 6 + 7 + 9 + 5;

fn session_row(
    app: &App,
    session: &SessionSummary,
    width: u16,
    name_width: usize,
) -> Line<'static> {
    let unreachable = app.is_unreachable(session);
    let (symbol, color) = if unreachable {
        ("?", Color::DarkGray)
    } else {
        mark(session.state)
    };
    let context = context_text(app, session);
    let host = if app.settings.remote_hosts.is_empty() {
        String::new()
    } else {
        format!(
            "{:<HOST_COLUMN$} ",
            one_line(host_label(&session.id), HOST_COLUMN.saturating_sub(1))
        )
    };
    let fixed = ROW_FIXED + name_width + host.chars().count();
    let what_width = usize::from(width).saturating_sub(fixed).max(8);
    let what = if unreachable {
        format!("unreachable (was {})", session.state.as_str())
    } else {
        what_text(session)
    };
    let text = format!(
        "{:<name_width$} {host}{:<9} {:<what_width$} {:>5} {:>6} {:>8} {:>4}",
        cell(&session.name, name_width),
        one_line(&session.provider, 8),
        one_line(&what, what_width.saturating_sub(1)),
        context,
        tokens_text(session.tokens),
        cost_text(session.cost_usd, session.cost_source),
        age_text(app.now_ms, session.started_at_ms),
    );
    let selected = app.selected.as_ref() == Some(&session.id);
    let style = match (selected, unreachable) {
        (true, _) => Style::default().add_modifier(Modifier::REVERSED),
        (false, true) => Style::default().fg(Color::DarkGray),
        (false, false) => Style::default(),
    };
    Line::from(vec![
        Span::styled(format!("{symbol} "), style.fg(color)),
        Span::styled(text, style),
    ])
}

fn list_view(app: &App, frame: &mut Frame, area: Rect) {
    let entries = entries(app);
    let height = usize::from(area.height);
    let first = scroll_of(app, &entries, height);
    let name_width = name_column(&entries, area.width, !app.settings.remote_hosts.is_empty());
    let lines: Vec<Line<'static>> = entries
        .iter()
        .skip(first)
        .take(height)
        .map(|entry| match entry {
            Entry::Heading(group, count) => Line::styled(
                format!("── {} ({count})", group.title()),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Entry::Folded(group, count) => Line::styled(
                format!("── {} ({count}, folded: z opens)", group.title()),
                Style::default().fg(Color::DarkGray),
            ),
            Entry::Session(session) => session_row(app, session, area.width, name_width),
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

/// Text shown in a paragraph: each line sanitised, tabs as spaces.
fn safe_lines(text: &str, style: Style) -> Vec<Line<'static>> {
    text.split('\n')
        .map(|line| Line::styled(one_line(line, usize::MAX), style))
        .collect()
}

/// What the session waits for, in full, with the keys that answer it.
fn waiting_lines(session: &SessionSummary) -> Vec<Line<'static>> {
    let bold = Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD);
    let mut lines = Vec::new();
    match &session.waiting_for {
        Some(WaitingFor::Approval { tool, argument, .. }) => {
            lines.push(Line::styled(
                format!("wants to run {}:", one_line(tool, 40)),
                bold,
            ));
            lines.extend(safe_lines(argument, Style::default()));
            lines.push(Line::styled(
                "y allow once · a allow for this session · n deny",
                bold,
            ));
        }
        Some(WaitingFor::Question { questions, .. }) => {
            lines.push(Line::styled("asks:", bold));
            for question in questions {
                lines.extend(safe_lines(question, Style::default()));
            }
            lines.push(Line::styled("1-9 picks a choice · r replies", bold));
        }
        Some(WaitingFor::Budget { reason }) => {
            lines.extend(safe_lines(reason, bold));
            lines.push(Line::styled(
                "raise it: panewise budget NAME --max-cost-usd N · s stops it",
                bold,
            ));
        }
        None => {}
    }
    lines
}

/// The transcript's last `room` lines at least (whole entries, newest last): a frame folds
/// only what it can show, however long the session.
/// `working`: the list says a turn runs, so the text being written is counted at the bottom.
fn transcript_lines(watched: &Watched, room: usize, working: bool) -> Vec<Line<'static>> {
    let mut newest_first: Vec<Line<'static>> = Vec::new();
    if let Some(unreadable) = watched.view.unreadable() {
        newest_first.push(Line::styled(
            format!("unreadable {}", one_line(unreadable, 200)),
            Style::default().fg(Color::Red),
        ));
    }
    for entry in watched.transcript().iter().rev() {
        if newest_first.len() >= room {
            break;
        }
        let mut lines = Vec::new();
        for (label, text, color) in entry_lines(entry) {
            for (n, piece) in text.split('\n').enumerate() {
                let label = if n == 0 { label } else { "" };
                lines.push(Line::from(vec![
                    Span::styled(format!("{label:>9} "), Style::default().fg(color)),
                    Span::raw(one_line(piece, usize::MAX)),
                ]));
            }
        }
        newest_first.extend(lines.into_iter().rev());
    }
    newest_first.reverse();
    if watched.view.streaming_chars() > 0 && working {
        newest_first.push(Line::styled(
            format!(
                "{:>9} {} chars so far…",
                "writing",
                watched.view.streaming_chars()
            ),
            Style::default().fg(Color::DarkGray),
        ));
    }
    newest_first
}

fn peek(app: &App, frame: &mut Frame, area: Rect) {
    let Some(session) = app.selected_session() else {
        let block = Block::default().borders(Borders::TOP).title(" peek ");
        frame.render_widget(Paragraph::new("no session selected").block(block), area);
        return;
    };
    let state = if app.is_unreachable(session) {
        format!("unreachable (was {})", session.state.as_str())
    } else {
        session.state.as_str().to_owned()
    };
    let host = if app.settings.remote_hosts.is_empty() {
        String::new()
    } else {
        format!(" · {}", one_line(host_label(&session.id), 30))
    };
    let title = format!(
        " {}{host} · {} · {state}{} ",
        one_line(&session.name, 30),
        one_line(&session.provider, 20),
        session
            .model
            .as_ref()
            .map(|model| format!(" · {}", one_line(model, 30)))
            .unwrap_or_default(),
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut top = vec![Line::styled(
        format!("cwd {}", one_line(&session.cwd, usize::MAX)),
        Style::default().fg(Color::DarkGray),
    )];
    if let Some(since) = session
        .waiting_since_ms
        .filter(|_| session.waiting_for.is_some())
    {
        top.push(Line::styled(
            format!("waiting for you for {}", age_text(app.now_ms, since)),
            Style::default().fg(Color::Yellow),
        ));
    }
    top.extend(waiting_lines(session));
    if let Some(failure) = &session.failure {
        top.extend(safe_lines(
            &format!("failed: {failure}"),
            Style::default().fg(Color::Red),
        ));
    } else if let Some(failure) = app
        .watched_of(&session.id)
        .and_then(|watched| watched.state().failure.as_ref())
        .filter(|_| session.state == AgentState::Failed)
    {
        let status = failure
            .failure
            .http_status
            .map(|status| format!(" (HTTP {status})"))
            .unwrap_or_default();
        top.extend(safe_lines(
            &format!(
                "failed: {}{status}: {}",
                failure_kind_text(failure.failure.kind),
                failure.failure.message
            ),
            Style::default().fg(Color::Red),
        ));
    }
    let history = app
        .watched_of(&session.id)
        .map(|watched| {
            transcript_lines(
                watched,
                usize::from(inner.height),
                session.state == AgentState::Working,
            )
        })
        .unwrap_or_default();
    // The question sits at the top in full; the last exchanges fill what is left, newest at
    // the bottom.
    let top_height = wrapped_height(&top, inner.width).min(inner.height);
    let [top_area, rest] = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(top_height), Constraint::Min(0)])
        .areas(inner);
    frame.render_widget(Paragraph::new(top).wrap(Wrap { trim: false }), top_area);
    let room = usize::from(rest.height);
    let skip = history.len().saturating_sub(room);
    frame.render_widget(
        Paragraph::new(history.into_iter().skip(skip).collect::<Vec<_>>()),
        rest,
    );
}

/// Rows `lines` take wrapped at `width`.
fn wrapped_height(lines: &[Line<'_>], width: u16) -> u16 {
    let width = usize::from(width.max(1));
    let rows: usize = lines
        .iter()
        .map(|line| line.width().max(1).div_ceil(width))
        .sum();
    u16::try_from(rows).unwrap_or(u16::MAX)
}

fn attached(app: &App, prompt: &str, frame: &mut Frame, area: Rect) {
    let Some(session) = app.selected_session() else {
        return;
    };
    let waiting = waiting_lines(session);
    let waiting_height = wrapped_height(&waiting, area.width).min(area.height / 2);
    let waiting_height = if waiting.is_empty() {
        0
    } else {
        waiting_height
    };
    let [log_area, waiting_area, prompt_area] = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Min(1),
            Constraint::Length(waiting_height),
            Constraint::Length(1),
        ])
        .areas(area);
    let title = format!(
        " {} · {} · {} · Esc returns to the list ",
        one_line(&session.name, 30),
        one_line(&session.provider, 20),
        session.state.as_str()
    );
    let block = Block::default().borders(Borders::TOP).title(title);
    let inner = block.inner(log_area);
    frame.render_widget(block, log_area);
    let wanted = usize::from(inner.height).saturating_add(usize::from(app.scroll));
    let mut lines = app
        .watched_of(&session.id)
        .map(|watched| transcript_lines(watched, wanted, session.state == AgentState::Working))
        .unwrap_or_default();
    if app.watched_of(&session.id).is_some_and(|w| w.ended) {
        lines.push(Line::styled(
            "the session ended",
            Style::default().fg(Color::DarkGray),
        ));
    }
    let room = usize::from(inner.height);
    let skip = lines
        .len()
        .saturating_sub(room)
        .saturating_sub(usize::from(app.scroll));
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).take(room).collect::<Vec<_>>()),
        inner,
    );
    frame.render_widget(
        Paragraph::new(waiting).wrap(Wrap { trim: false }),
        waiting_area,
    );
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled("> ", Style::default().fg(Color::Cyan)),
            Span::raw(one_line(prompt, usize::MAX)),
            Span::styled("▏", Style::default().fg(Color::Cyan)),
        ])),
        prompt_area,
    );
}

fn footer_line(app: &App) -> Line<'static> {
    if let Mode::Input { purpose, text } = &app.mode {
        let label = match purpose {
            Purpose::DenyMessage { .. } => "deny, with a message (Enter: none)",
            Purpose::Answer { .. } => "answer",
            Purpose::Prompt { .. } => "prompt",
            Purpose::Rename { .. } => "new name",
            Purpose::Filter => "filter (name, provider or state)",
        };
        return Line::from(vec![
            Span::styled(format!("{label}: "), Style::default().fg(Color::Cyan)),
            Span::raw(one_line(text, usize::MAX)),
            Span::styled(
                "▏ Enter sends · Esc cancels",
                Style::default().fg(Color::DarkGray),
            ),
        ]);
    }
    if let Some(notice) = app.notices.last() {
        if app.now_ms.saturating_sub(notice.at_ms) < 30_000 || notice.error {
            let color = if notice.error {
                Color::Red
            } else {
                Color::Yellow
            };
            return Line::styled(one_line(&notice.text, 200), Style::default().fg(color));
        }
    }
    let hints = match app.mode {
        Mode::Attached { .. } => {
            "Enter sends the prompt · y/a/n answers an approval · Ctrl-X interrupts · ↑↓ scroll · Esc back"
        }
        Mode::List | Mode::Input { .. } | Mode::New(_) | Mode::Help => {
            "↑↓ select · Enter attach · y/a/n approve · p prompt · c new · i interrupt · s stop · ? keys · q quit"
        }
    };
    Line::styled(hints, Style::default().fg(Color::DarkGray))
}

/// Every key, as `?` shows them.
pub const KEYS: [(&str, &str); 24] = [
    (
        "↑ ↓ k j",
        "select a session (PgUp PgDn Home End; the mouse wheel; a click)",
    ),
    (
        "Enter →",
        "attach: the whole transcript, live, with a prompt line",
    ),
    ("Esc ←", "back to the list (in the list: clear the filter)"),
    ("y", "allow the waiting tool call once"),
    ("a", "allow it for the rest of the session"),
    (
        "n",
        "deny it (then a message for the agent, or Enter for none)",
    ),
    ("1-9", "pick a numbered choice of the waiting question"),
    ("r", "reply to the waiting question with text"),
    ("p", "send a prompt to the selected session"),
    (
        "c",
        "new session (provider, model, prompt, cwd, worktree, approval)",
    ),
    ("i", "interrupt the running turn"),
    ("s", "stop the session"),
    ("u", "resume the selected session"),
    ("d", "remove an ended session (its log stays)"),
    ("e", "rename the session"),
    (
        "/",
        "filter by name, provider or state (for example needs_input)",
    ),
    ("z", "open or fold the idle and finished groups"),
    ("?", "this list"),
    ("q Ctrl-C", "quit; every agent goes on running"),
    ("attached:", ""),
    ("text Enter", "send a follow-up prompt"),
    ("y a n", "answer an approval while nothing is typed"),
    ("Ctrl-X", "interrupt"),
    ("↑ ↓", "scroll the transcript"),
];

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

fn help(frame: &mut Frame, area: Rect) {
    let lines: Vec<Line<'static>> = KEYS
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Span::styled(format!("{key:>11}  "), Style::default().fg(Color::Cyan)),
                Span::raw(*what),
            ])
        })
        .collect();
    let height = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let popup = centered(area, 86, height);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" keys (any key closes) "),
        ),
        popup,
    );
}

fn new_form(form: &crate::app::Form, frame: &mut Frame, area: Rect) {
    let mut lines: Vec<Line<'static>> = Field::ALL
        .iter()
        .zip(form.values.iter())
        .enumerate()
        .map(|(at, (field, value))| {
            let style = if at == form.focus {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            Line::from(vec![
                Span::styled(
                    format!("{:>15} ", field.label()),
                    Style::default().fg(Color::Cyan),
                ),
                Span::styled(one_line(value, 60), style),
            ])
        })
        .collect();
    lines.push(Line::styled(
        "Tab next field · Enter starts it · Esc cancels",
        Style::default().fg(Color::DarkGray),
    ));
    let popup = centered(area, 80, 9);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" new session "),
        ),
        popup,
    );
}
