//! `panewise ui` (and `panewise` alone on a terminal): the dashboard's shell. It connects to
//! the daemon (starting it when none runs), subscribes to the list and to the selected
//! session, feeds every key, mouse event, resize, tick and notification to
//! `panewise_tui::update`, carries out the effects it returns with one exhaustive match, and
//! draws `panewise_tui::view` when something changed. The terminal is restored on exit and
//! on a panic; quitting leaves every agent running. With `--remote HOST` (or `[remote]
//! hosts`) each host's daemon is listed too, over ssh, kept connected by `ui_remote.rs`, and
//! every action goes to its session's host.

use std::io::Stdout;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use crossterm::event::{
    self as term, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen, SetTitle,
};
use panewise_api::{
    Ack, ApproveParams, CreateParams, CreateResult, ListParams, ListResult, Method, PromptParams,
    RemoveResult, RenameParams, ResumeParams, SessionParams, SubscribeParams, SubscribeResult,
};
use panewise_supervisor::Client;
use panewise_tui::{App, Effect, Event, Key, Mouse, Settings};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use tokio::sync::mpsc;

use crate::ui_remote::{Connections, Route};

/// `panewise ui`.
#[derive(clap::Args, Default)]
pub struct Args {
    /// First start six sessions on the offline mock, so every state shows: one waiting for an
    /// approval (selected; `y` allows it, `n` denies it), one running a slow tool for 30 s,
    /// one done, one failed on a rate limit, one idle with no prompt yet, one stopped.
    #[arg(long)]
    demo: bool,
    #[command(flatten)]
    remote: crate::remote::RemoteArgs,
}

/// How often the clock ticks (the ages on the list).
const TICK: Duration = Duration::from_secs(1);

/// The least time between two frames: at most 60 a second.
const FRAME: Duration = Duration::from_millis(16);

/// The events the loop has not folded yet: keys, mouse and resizes from the terminal's reader,
/// notifications from each host, the calls' failures. At the bound every producer waits (the
/// terminal's reader thread, so keys wait in the terminal; a host's notifications wait in its
/// client's queue, then the daemon's), and none is lost: the loop waits on none of them (it
/// folds, draws, and hands calls over without waiting). Resizes are not coalesced: the loop
/// folds what is queued (at most this many a frame) before it draws once. Most events are notifications passed on one
/// for one, so the bound is the client's own (`NOTICE_BOUND`, 1,024).
const EVENT_BOUND: usize = 1_024;

/// The API calls handed to the calls task and not yet made. A call past the bound is refused
/// at once, and the refusal folded as a failure the person sees ("not sent"): the loop must not
/// wait on the calls task, which waits on the loop to take its failures. A key makes a call or
/// two, each answered by the daemon within milliseconds: 256 waiting means the daemon has
/// stopped answering, as the engine's `CONTROL_BOUND` (256) means a wedged session.
const CALL_BOUND: usize = 256;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// The settings the dashboard starts with, from `panewise.toml` where it is run.
fn settings(remote_hosts: Vec<String>) -> Settings {
    let cwd = std::env::current_dir().unwrap_or_default();
    let config = panewise_host::config::load(&cwd).ok();
    let config = config.as_ref();
    Settings {
        bell: config.is_none_or(|config| config.notify.bell.unwrap_or(true)),
        provider: config.and_then(|config| config.provider).map_or_else(
            || "mock".to_owned(),
            |provider| provider.as_str().to_owned(),
        ),
        model: config
            .and_then(|config| config.model.clone())
            .unwrap_or_default(),
        approval: config
            .and_then(|config| config.approval)
            .map_or_else(String::new, |mode| mode.name().to_owned()),
        cwd: String::new(),
        remote_hosts,
    }
}

/// Runs the dashboard until `q`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let remotes = crate::remote::Remotes::load(&args.remote)?;
    let (runtime, client) = crate::agents_cmd::connect("panewise ui")?;
    let client = Arc::new(client);
    if args.demo {
        runtime.block_on(demo(&client))?;
    }
    let mut terminal = enter()?;
    let outcome = runtime.block_on(event_loop(&mut terminal, Arc::clone(&client), remotes));
    leave();
    runtime.shutdown_background();
    outcome?;
    eprintln!("panewise ui: every agent goes on running (`panewise agents` lists them)");
    Ok(ExitCode::SUCCESS)
}

/// One session of the demo: its name, first prompt, approval mode and mock scenario.
struct DemoSession {
    name: &'static str,
    prompt: Option<&'static str>,
    approval: &'static str,
    scenario: Option<&'static str>,
}

/// The demo's sessions, on the offline mock, one per state a person meets: in `ask` mode
/// waiting for an approval, running a slow tool (30 s), done, failed on a rate limit (the
/// mock answers every call with HTTP 429; the client gives up after its retries, in about
/// 3 s), idle, and stopped.
const DEMO: [DemoSession; 6] = [
    DemoSession {
        name: "demo-ask",
        prompt: Some("print hello with the shell"),
        approval: "ask",
        scenario: None,
    },
    DemoSession {
        name: "demo-slow",
        prompt: Some("wait half a minute, then say done"),
        approval: "full-access",
        scenario: Some("sleeping-tool"),
    },
    DemoSession {
        name: "demo-done",
        prompt: Some("print hello with the shell"),
        approval: "full-access",
        scenario: None,
    },
    DemoSession {
        name: "demo-limited",
        prompt: Some("print hello with the shell"),
        approval: "full-access",
        scenario: Some("rate-limit"),
    },
    DemoSession {
        name: "demo-idle",
        prompt: None,
        approval: "full-access",
        scenario: None,
    },
    DemoSession {
        name: "demo-stopped",
        prompt: None,
        approval: "full-access",
        scenario: None,
    },
];

/// Starts the demo's sessions.
async fn demo(client: &Client) -> anyhow::Result<()> {
    let mut stopped = None;
    for session in &DEMO {
        let params = CreateParams {
            prompt: session.prompt.map(str::to_owned),
            name: Some(unique_name(session.name)),
            approval: Some(session.approval.to_owned()),
            mock_scenario: session.scenario.map(str::to_owned),
            ..CreateParams::default()
        };
        let created: CreateResult = client.call(Method::Create, params).await?;
        if session.name == "demo-stopped" {
            stopped = Some(created.session.id);
        }
    }
    if let Some(session) = stopped {
        let _: Ack = client.call(Method::Stop, SessionParams { session }).await?;
    }
    Ok(())
}

/// `name`, with the time appended so a second demo does not collide with the first.
fn unique_name(name: &str) -> String {
    format!("{name}-{}", now_ms() % 100_000)
}

type Tty = Terminal<CrosstermBackend<Stdout>>;

/// Raw mode, the alternate screen, the mouse; a panic restores the terminal before its
/// message is printed.
fn enter() -> anyhow::Result<Tty> {
    enable_raw_mode().context("cannot put the terminal in raw mode")?;
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave();
        previous(info);
    }));
    crossterm::execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        term::EnableMouseCapture
    )
    .context("cannot open the alternate screen")?;
    Terminal::new(CrosstermBackend::new(std::io::stdout())).context("cannot draw on the terminal")
}

/// The terminal as it was. Safe to call twice.
fn leave() {
    let _ = crossterm::execute!(
        std::io::stdout(),
        term::DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

/// crossterm's key as the dashboard's.
fn key_of(event: KeyEvent) -> Option<Key> {
    if event.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
    Some(match event.code {
        KeyCode::Char(c) if ctrl => Key::Ctrl(c.to_ascii_lowercase()),
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        _ => return None,
    })
}

/// crossterm's event as the dashboard's.
fn event_of(event: term::Event) -> Option<Event> {
    match event {
        term::Event::Key(key) => key_of(key).map(Event::Key),
        term::Event::Mouse(mouse) => match mouse.kind {
            MouseEventKind::Down(MouseButton::Left) => Some(Event::Mouse(Mouse::Click {
                column: mouse.column,
                row: mouse.row,
            })),
            MouseEventKind::ScrollUp => Some(Event::Mouse(Mouse::ScrollUp)),
            MouseEventKind::ScrollDown => Some(Event::Mouse(Mouse::ScrollDown)),
            _ => None,
        },
        term::Event::Resize(width, height) => Some(Event::Resize { width, height }),
        _ => None,
    }
}

/// Reads the terminal on a thread of its own (crossterm's reads block) until `stop`. At
/// [`EVENT_BOUND`] it waits, reading no further, so no key is lost.
fn read_terminal(events: mpsc::Sender<Event>, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match term::poll(Duration::from_millis(100)) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => return,
            }
            let Ok(event) = term::read() else { return };
            if let Some(event) = event_of(event) {
                if events.blocking_send(event).is_err() {
                    return;
                }
            }
        }
    });
}

/// The API calls, in the order the dashboard asked for them (an unsubscribe before the next
/// subscribe), each one's failure sent back as an event.
async fn call_in_order(
    connections: Connections,
    mut calls: mpsc::Receiver<Effect>,
    events: mpsc::Sender<Event>,
) {
    while let Some(effect) = calls.recv().await {
        let what = call_name(&effect);
        let result = match connections.route(effect) {
            Route::To(client, effect) => call(&client, effect).await,
            // The subscription ended with the connection: nothing to undo.
            Route::Down(_, Effect::Unsubscribe { .. }) => continue,
            Route::Down(host, _) => {
                let _ = events
                    .send(Event::Failed {
                        what: host,
                        message: "unreachable now (reconnecting); nothing was sent".to_owned(),
                    })
                    .await;
                continue;
            }
        };
        if let Err(error) = result {
            let _ = events
                .send(Event::Failed {
                    what: what.to_owned(),
                    message: error.to_string(),
                })
                .await;
        }
    }
}

/// What an API effect is called in a failure the person is shown.
fn call_name(effect: &Effect) -> &'static str {
    match effect {
        Effect::Approve { .. } => "approve",
        Effect::Answer { .. } => "answer",
        Effect::Prompt { .. } => "prompt",
        Effect::Interrupt { .. } => "interrupt",
        Effect::Stop { .. } => "stop",
        Effect::Remove { .. } => "remove",
        Effect::Rename { .. } => "rename",
        Effect::Create(_) => "new session",
        Effect::Resume { .. } => "resume",
        Effect::Subscribe { .. } => "subscribe",
        Effect::Unsubscribe { .. } => "unsubscribe",
        Effect::SetTitle(_) | Effect::Bell | Effect::Quit => "",
    }
}

/// One API effect; the others are the terminal's and never reach here.
async fn call(client: &Client, effect: Effect) -> Result<(), panewise_supervisor::SupervisorError> {
    match effect {
        Effect::Approve {
            session,
            request,
            decision,
        } => client
            .call::<_, Ack>(
                Method::Approve,
                ApproveParams {
                    session,
                    request: Some(request),
                    decision,
                },
            )
            .await
            .map(drop),
        Effect::Answer { session, text } => client
            .call::<_, Ack>(Method::Answer, panewise_api::AnswerParams { session, text })
            .await
            .map(drop),
        Effect::Prompt { session, text } => client
            .call::<_, Ack>(Method::Prompt, PromptParams { session, text })
            .await
            .map(drop),
        Effect::Interrupt { session } => client
            .call::<_, Ack>(Method::Interrupt, SessionParams { session })
            .await
            .map(drop),
        Effect::Stop { session } => client
            .call::<_, Ack>(Method::Stop, SessionParams { session })
            .await
            .map(drop),
        Effect::Remove { session } => client
            .call::<_, RemoveResult>(Method::Remove, SessionParams { session })
            .await
            .map(drop),
        Effect::Rename { session, name } => client
            .call::<_, Ack>(Method::Rename, RenameParams { session, name })
            .await
            .map(drop),
        Effect::Create(params) => {
            let params = *params;
            client
                .call::<_, CreateResult>(
                    Method::Create,
                    // A new session is the local daemon's, made from this process's context:
                    // its directory and its keys and endpoints.
                    CreateParams {
                        client: params
                            .client
                            .or_else(|| panewise_host::launch::client_context(None).ok()),
                        ..params
                    },
                )
                .await
                .map(drop)
        }
        Effect::Resume { session } => client
            .call::<_, CreateResult>(
                Method::Resume,
                ResumeParams {
                    session,
                    prompt: None,
                    // The session may be a remote host's: no local context goes with it.
                    client: None,
                },
            )
            .await
            .map(drop),
        Effect::Subscribe {
            session,
            from_line,
            attach,
        } => client
            .call::<_, SubscribeResult>(
                Method::Subscribe,
                SubscribeParams {
                    session,
                    from_line,
                    attach,
                },
            )
            .await
            .map(drop),
        Effect::Unsubscribe { session } => client
            .call::<_, Ack>(Method::Unsubscribe, SessionParams { session })
            .await
            .map(drop),
        Effect::SetTitle(_) | Effect::Bell | Effect::Quit => Ok(()),
    }
}

/// What the loop does after an event.
enum Next {
    Go,
    Quit,
}

/// What came of an effect.
#[derive(Debug, PartialEq)]
enum Executed {
    Done,
    Quit,
    /// An API call was not handed over: [`CALL_BOUND`] calls wait already. Its name.
    Refused(&'static str),
}

/// Carries out one effect: the terminal's here, the API's in order on the calls task (refused
/// past [`CALL_BOUND`], never waited for).
fn execute(effect: Effect, calls: &mpsc::Sender<Effect>) -> anyhow::Result<Executed> {
    match effect {
        Effect::SetTitle(title) => {
            crossterm::execute!(std::io::stdout(), SetTitle(title))?;
        }
        Effect::Bell => {
            use std::io::Write;
            let mut out = std::io::stdout();
            out.write_all(b"\x07")?;
            out.flush()?;
        }
        Effect::Quit => return Ok(Executed::Quit),
        api @ (Effect::Approve { .. }
        | Effect::Answer { .. }
        | Effect::Prompt { .. }
        | Effect::Interrupt { .. }
        | Effect::Stop { .. }
        | Effect::Remove { .. }
        | Effect::Rename { .. }
        | Effect::Create(_)
        | Effect::Resume { .. }
        | Effect::Subscribe { .. }
        | Effect::Unsubscribe { .. }) => {
            return match calls.try_send(api) {
                Ok(()) => Ok(Executed::Done),
                Err(mpsc::error::TrySendError::Full(api)) => Ok(Executed::Refused(call_name(&api))),
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    Err(anyhow::anyhow!("the connection to the daemon is gone"))
                }
            };
        }
    }
    Ok(Executed::Done)
}

async fn event_loop(
    terminal: &mut Tty,
    client: Arc<Client>,
    remotes: crate::remote::Remotes,
) -> anyhow::Result<()> {
    let size = terminal.size()?;
    let hosts: Vec<String> = remotes
        .hosts()
        .into_iter()
        .filter_map(|host| match host {
            crate::remote::Host::Local => None,
            crate::remote::Host::Remote(host) => Some(host),
        })
        .collect();
    let mut app = App::new(settings(hosts.clone()), now_ms(), (size.width, size.height));
    let (events_in, mut events) = mpsc::channel(EVENT_BOUND);
    let stop = Arc::new(AtomicBool::new(false));
    read_terminal(events_in.clone(), Arc::clone(&stop));
    let (calls, calls_out) = mpsc::channel(CALL_BOUND);
    let connections = Connections::new(Arc::clone(&client), hosts.clone());
    for host in hosts {
        tokio::spawn(crate::ui_remote::keep_connected(
            remotes.clone(),
            host,
            connections.clone(),
            events_in.clone(),
        ));
    }
    tokio::spawn(call_in_order(connections, calls_out, events_in.clone()));
    let list: ListResult = client.call(Method::SubscribeList, ListParams {}).await?;
    // Folded here, not queued: the loop must not wait on its own queue.
    if let Next::Quit = step(&mut app, Event::List(list.sessions), &calls)? {
        stop.store(true, Ordering::Relaxed);
        return Ok(());
    }
    // The notifications are passed on only after the list: the daemon sends the changes after
    // the list, and a change passed on first would be undone by the older list.
    let notices = Arc::clone(&client);
    let notices_in = events_in.clone();
    tokio::spawn(async move {
        while let Some(notice) = notices.next_notification().await {
            match panewise_tui::notice::event_of(notice) {
                Ok(Some(event)) => {
                    if notices_in.send(event).await.is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%error),
            }
        }
        let _ = notices_in.send(Event::ConnectionLost).await;
    });
    let mut tick = tokio::time::interval(TICK);
    let mut last_frame = tokio::time::Instant::now();
    let result = loop {
        // A frame only after an event (a tick once a second, for the ages), and at most one
        // per FRAME: the events of a burst of lines are folded, then drawn once. At most a
        // queue's worth per frame, so a flood that refills the queue as fast as it is folded
        // cannot put the next frame off for ever.
        tokio::time::sleep_until(last_frame + FRAME).await;
        let mut quit = false;
        let mut folded = 0;
        while folded < EVENT_BOUND {
            let Ok(event) = events.try_recv() else {
                break;
            };
            folded += 1;
            if let Next::Quit = step(&mut app, event, &calls)? {
                quit = true;
                break;
            }
        }
        if quit {
            break Ok(());
        }
        terminal.draw(|frame| panewise_tui::view(&app, frame))?;
        last_frame = tokio::time::Instant::now();
        let event = tokio::select! {
            event = events.recv() => match event {
                Some(event) => event,
                None => break Ok(()),
            },
            _ = tick.tick() => Event::Tick { now_ms: now_ms() },
        };
        match step(&mut app, event, &calls) {
            Ok(Next::Go) => {}
            Ok(Next::Quit) => break Ok(()),
            Err(error) => break Err(error),
        }
    };
    stop.store(true, Ordering::Relaxed);
    result
}

/// One event through `update`, and its effects carried out. The calls refused at
/// [`CALL_BOUND`] are folded as one failure, which the person sees; its own effects are the
/// terminal's (a failure makes no call), so the folding ends there.
fn step(app: &mut App, event: Event, calls: &mpsc::Sender<Effect>) -> anyhow::Result<Next> {
    let mut refused = Vec::new();
    if let Next::Quit = fold(app, event, calls, &mut refused)? {
        return Ok(Next::Quit);
    }
    if refused.is_empty() {
        return Ok(Next::Go);
    }
    let failure = Event::Failed {
        what: refused.join(", "),
        message: format!(
            "not sent: {CALL_BOUND} calls already wait for the daemon's answer; try again once \
             it answers"
        ),
    };
    let mut refused_again = Vec::new();
    fold(app, failure, calls, &mut refused_again)
}

/// `event` through `update` and its effects carried out; the names of the calls refused are
/// added to `refused`.
fn fold(
    app: &mut App,
    event: Event,
    calls: &mpsc::Sender<Effect>,
    refused: &mut Vec<&'static str>,
) -> anyhow::Result<Next> {
    let current = std::mem::replace(app, App::new(Settings::default(), 0, (0, 0)));
    let (next, effects) = panewise_tui::update(current, event);
    *app = next;
    for effect in effects {
        match execute(effect, calls)? {
            Executed::Done => {}
            Executed::Quit => return Ok(Next::Quit),
            Executed::Refused(what) => refused.push(what),
        }
    }
    Ok(Next::Go)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A calls queue holding `waiting` calls not yet made, `open` or with the calls task gone.
    fn calls(waiting: usize, open: bool) -> (mpsc::Sender<Effect>, mpsc::Receiver<Effect>) {
        let (calls, mut made) = mpsc::channel(CALL_BOUND);
        for n in 0..waiting {
            calls
                .try_send(Effect::Stop {
                    session: format!("s{n}"),
                })
                .unwrap();
        }
        if !open {
            made.close();
        }
        (calls, made)
    }

    #[test]
    fn a_call_past_the_bound_is_refused_at_once_and_nothing_waits() {
        struct Row {
            rule: &'static str,
            waiting: usize,
            open: bool,
            /// `None`: an error (the connection is gone).
            executed: Option<Executed>,
            waiting_after: usize,
        }
        let rows = [
            Row {
                rule: "room: handed to the calls task",
                waiting: 0,
                open: true,
                executed: Some(Executed::Done),
                waiting_after: 1,
            },
            Row {
                rule: "the last place: handed over",
                waiting: CALL_BOUND - 1,
                open: true,
                executed: Some(Executed::Done),
                waiting_after: CALL_BOUND,
            },
            Row {
                rule: "full: refused by name, the queue as it was",
                waiting: CALL_BOUND,
                open: true,
                executed: Some(Executed::Refused("interrupt")),
                waiting_after: CALL_BOUND,
            },
            Row {
                rule: "the calls task is gone: the loop ends with an error",
                waiting: 0,
                open: false,
                executed: None,
                waiting_after: 0,
            },
        ];
        for row in rows {
            let (calls, mut made) = calls(row.waiting, row.open);
            let effect = Effect::Interrupt {
                session: "s".to_owned(),
            };
            let executed = execute(effect, &calls).ok();
            assert_eq!(executed, row.executed, "{}", row.rule);
            let mut waiting_after = 0;
            while made.try_recv().is_ok() {
                waiting_after += 1;
            }
            assert_eq!(waiting_after, row.waiting_after, "{}", row.rule);
        }
    }

    #[test]
    fn a_refused_call_is_a_failure_the_person_sees() {
        let (calls, mut made) = calls(CALL_BOUND, true);
        let mut app = App::new(Settings::default(), 0, (80, 24));
        // `c` opens the new-session form, Enter asks for the session.
        for key in [Key::Char('c'), Key::Enter] {
            assert!(matches!(
                step(&mut app, Event::Key(key), &calls).unwrap(),
                Next::Go
            ));
        }
        let shown = app.notices.last().map(|notice| notice.text.as_str());
        assert!(
            shown.is_some_and(|text| text.starts_with("new session: not sent")),
            "{shown:?}"
        );
        assert!(app.notices.last().is_some_and(|notice| notice.error));
        let mut waiting = 0;
        while made.try_recv().is_ok() {
            waiting += 1;
        }
        assert_eq!(waiting, CALL_BOUND, "the refused call was not queued");
    }
}
