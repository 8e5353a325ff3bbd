//! `panewise attach ID`: one hosted session on this terminal, its conversation from the start
//! then live, as the daemon's log lines fold; a waiting approval is asked inline (y / a / n),
//! any other line is a prompt, and Ctrl-D detaches, leaving the session running.
//!
//! On a terminal it is `panewise run`'s screen: the line editor with its history, the live line
//! as the prompt (what the agent does, context, tokens, cost, elapsed), redrawn every second and
//! on every line, the waiting question as the prompt until it is answered, and Ctrl-C
//! interrupting the turn. Elsewhere (a pipe) lines are read and printed plainly.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use panewise_api::{
    parse_reply, ApproveParams, EndNotice, Folded, LineNotice, Method, PromptParams, SessionView,
    SubscribeParams, SubscribeResult, WaitingFor,
};
use panewise_host::session::lines::Signal;
use panewise_pane_state::log::TranscriptEntry;
use panewise_pane_state::State;
use tokio::sync::mpsc;

use crate::run::editor::EditorHandle;
use crate::run::live::{self, Activity, Streamed};

use crate::replay::conversation::entry_text;
use crate::terminal_text::one_line;

/// `panewise attach ID`.
#[derive(clap::Args)]
pub struct Args {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    id: String,
    #[command(flatten)]
    remote: crate::remote::RemoteArgs,
}

/// Attaches to a session until it ends or stdin does.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (runtime, target) = crate::agents_cmd::target(&args.remote, &args.id, "panewise attach")?;
    let client = std::sync::Arc::new(target.client);
    // The bell and the title are for a person at a terminal, unless `[notify] bell = false`.
    let bell = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::current_dir()
            .ok()
            .and_then(|dir| panewise_host::config::load(&dir).ok())
            .is_none_or(|config| config.notify.bell.unwrap_or(true));
    let on_terminal = [
        std::io::IsTerminal::is_terminal(&std::io::stdin()),
        std::io::IsTerminal::is_terminal(&std::io::stdout()),
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    ]
    .iter()
    .all(|terminal| *terminal);
    // Ctrl-C from the editor, bounded: past the bound one is coalesced with the unread ones.
    let (interrupt_sender, mut interrupts) = panewise_host::session::lines::signal_queue();
    let (mut screen, mut lines) = if on_terminal {
        let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
        let _entered = runtime.enter();
        let (editor, lines) = EditorHandle::start(&cwd, interrupt_sender);
        (Screen::Editor(editor), lines)
    } else {
        drop(interrupt_sender);
        (Screen::Plain, crate::run::stdin_lines())
    };
    let outcome = runtime.block_on(async {
        let subscribed: SubscribeResult = client
            .call(
                Method::Subscribe,
                SubscribeParams {
                    session: target.session.clone(),
                    from_line: 0,
                    attach: true,
                },
            )
            .await?;
        let id = subscribed.id;
        // The calls go out from a task of their own, in order, so the loop below reads the
        // notifications while a call waits for its response (which comes after them): a call
        // awaited here would stop that reading, and past the client's bound of unread
        // notifications its response would never be read. The loop takes a line or a Ctrl-C
        // only when the queue has room, so a pipe of lines waits rather than piling up.
        let (calls, queued) = mpsc::channel(CALLS_QUEUED);
        let (said, mut answers) = mpsc::channel(CALLS_QUEUED);
        let caller = tokio::spawn(call_in_order(std::sync::Arc::clone(&client), queued, said));
        screen.say(format!(
            "panewise attach: {}; type a prompt and press Enter; y, a (always) or n answers an \
             approval; Ctrl-C stops the turn; Ctrl-D detaches and leaves the session running",
            one_line(&args.id, 40)
        ));
        // The client model: the fold, the open request, the accepted answers, the title.
        let mut view = SessionView::new();
        let mut title = String::new();
        let mut asked: Option<(String, String)> = None;
        // The waiting request is a question: the next line typed is its answer.
        let mut answering = false;
        let mut live = LiveLine::default();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            screen.show(view.state(), &live, asked.as_ref().map(|(_, question)| question.as_str()));
            tokio::select! {
                _ = tick.tick() => live.frame = live.frame.wrapping_add(1),
                Some(Signal::Interrupt) = interrupts.recv(), if calls.capacity() > 0 => {
                    let _gone = calls.try_send(Call::Interrupt(panewise_api::SessionParams {
                        session: id.clone(),
                    }));
                }
                Some(said) = answers.recv() => screen.say(said),
                notice = client.next_notification() => {
                    let Some(notice) = notice else {
                        anyhow::bail!("the daemon closed the connection");
                    };
                    if notice.method == EndNotice::METHOD {
                        screen.say("panewise attach: the session ended".to_owned());
                        return anyhow::Ok(());
                    }
                    if notice.method != LineNotice::METHOD {
                        continue;
                    }
                    let line: LineNotice = serde_json::from_value(notice.params)?;
                    match view.fold_line(line.index, &line.line) {
                        Folded::Message => live.follow(view.state()),
                        Folded::Transcript(entry) => {
                            live.observe(&entry);
                            screen.print(entry_text(&entry));
                        }
                        Folded::Unreadable(why) => screen.say(format!("panewise attach: {why}")),
                        Folded::Header | Folded::Other | Folded::OutOfOrder => {}
                    }
                    if bell {
                        // The window title (OSC 2, ended by BEL) follows the state: it says
                        // "needs input" while a request waits, and stops once it is answered.
                        let now = view.title(&one_line(&args.id, 40));
                        if now != title {
                            eprint!("\u{1b}]2;{now}\u{7}");
                            title = now;
                        }
                    }
                    match view.open_request() {
                        Some(WaitingFor::Approval { id: request, tool, argument })
                            if asked.as_ref().map(|(id, _)| id) != Some(&request) =>
                        {
                            answering = false;
                            if bell {
                                eprint!("\u{7}");
                            }
                            let question =
                                format!("allow {} {}?", one_line(&tool, 30), one_line(&argument, 80));
                            if !screen.is_editor() {
                                eprintln!("panewise attach: {question} [y]es, [a]lways, [n]o");
                            }
                            asked = Some((request, question));
                        }
                        Some(WaitingFor::Question { id: set, questions })
                            if asked.as_ref().map(|(id, _)| id) != Some(&set) =>
                        {
                            if bell {
                                eprint!("\u{7}");
                            }
                            let question = format!(
                                "{} (type your answer)",
                                one_line(&questions.join(" / "), 160)
                            );
                            if !screen.is_editor() {
                                eprintln!("panewise attach: {question}");
                            }
                            asked = Some((set, question));
                            answering = true;
                        }
                        None => {
                            asked = None;
                            answering = false;
                        }
                        _ => {}
                    }
                }
                typed = lines.recv(), if calls.capacity() > 0 => {
                    let Some(typed) = typed else {
                        // What was typed before the end is sent before detaching.
                        drop(calls);
                        finish_calls(&client, caller, &mut answers, &screen).await;
                        screen.say("panewise attach: detached; the session goes on".to_owned());
                        return Ok(());
                    };
                    let word = typed.trim();
                    if answering && !word.is_empty() {
                        // A question's answer is the whole line, whatever it says.
                        answering = false;
                        let _gone = calls.try_send(Call::Answer(panewise_api::AnswerParams {
                            session: id.clone(),
                            text: typed,
                        }));
                        continue;
                    }
                    // The answers every front end accepts (`panewise_api::view::REPLIES`).
                    let decision = asked
                        .as_ref()
                        .and_then(|_| parse_reply(word))
                        .map(|reply| reply.decision(None));
                    let call = match decision {
                        Some(decision) => Call::Approve(ApproveParams {
                            session: id.clone(),
                            request: asked.as_ref().map(|(id, _)| id.clone()),
                            decision,
                        }),
                        None if word.is_empty() => continue,
                        None => Call::Prompt(PromptParams { session: id.clone(), text: typed }),
                    };
                    let _gone = calls.try_send(call);
                }
            }
        }
    });
    // An editor waiting for room for a typed line (the lines' bound) ends now, so stopping
    // it finds it ended rather than waiting out its grace.
    drop(lines);
    screen.stop();
    // The stdin thread may still wait for a line; it must not hold the process open.
    runtime.shutdown_background();
    outcome?;
    Ok(ExitCode::SUCCESS)
}

/// The calls attach may have queued and not yet answered.
const CALLS_QUEUED: usize = 16;

/// A call attach makes for the person.
enum Call {
    Interrupt(panewise_api::SessionParams),
    Approve(ApproveParams),
    Answer(panewise_api::AnswerParams),
    Prompt(PromptParams),
}

/// Makes `calls` one after another, saying on `said` what the person is to be told: that the
/// turn is stopping, or why a call failed.
async fn call_in_order(
    client: std::sync::Arc<panewise_supervisor::Client>,
    mut calls: mpsc::Receiver<Call>,
    said: mpsc::Sender<String>,
) {
    while let Some(call) = calls.recv().await {
        let interrupt = matches!(call, Call::Interrupt(_));
        let sent = match call {
            Call::Interrupt(params) => {
                client
                    .call::<_, panewise_api::Ack>(Method::Interrupt, params)
                    .await
            }
            Call::Approve(params) => {
                client
                    .call::<_, panewise_api::Ack>(Method::Approve, params)
                    .await
            }
            Call::Answer(params) => {
                client
                    .call::<_, panewise_api::Ack>(Method::Answer, params)
                    .await
            }
            Call::Prompt(params) => {
                client
                    .call::<_, panewise_api::Ack>(Method::Prompt, params)
                    .await
            }
        };
        let say = match sent {
            Ok(_) if interrupt => "panewise attach: stopping the turn".to_owned(),
            Ok(_) => continue,
            Err(error) => format!("panewise attach: {error}"),
        };
        if said.send(say).await.is_err() {
            return;
        }
    }
}

/// Waits for `caller` to make the calls queued before a detach, saying what they answered and
/// reading (and passing over) notifications meanwhile, so their responses can be read.
async fn finish_calls(
    client: &panewise_supervisor::Client,
    mut caller: tokio::task::JoinHandle<()>,
    answers: &mut mpsc::Receiver<String>,
    screen: &Screen,
) {
    loop {
        tokio::select! {
            _ = &mut caller => break,
            Some(said) = answers.recv() => screen.say(said),
            notice = client.next_notification() => if notice.is_none() { break },
        }
    }
    while let Ok(said) = answers.try_recv() {
        screen.say(said);
    }
}

/// Where attach writes: the line editor on a terminal, plain stdout and stderr elsewhere.
enum Screen {
    Plain,
    Editor(EditorHandle),
}

impl Screen {
    fn is_editor(&self) -> bool {
        matches!(self, Screen::Editor(_))
    }

    /// A transcript entry's text (already escaped by `entry_text`).
    fn print(&self, text: String) {
        match self {
            Screen::Plain => print!("{text}"),
            Screen::Editor(editor) => editor.print(text.trim_end_matches('\n').to_owned()),
        }
    }

    /// A line of panewise's own.
    fn say(&self, text: String) {
        match self {
            Screen::Plain => eprintln!("{text}"),
            Screen::Editor(editor) => editor.print(text),
        }
    }

    /// The prompt: the question while one waits, else the live line.
    fn show(&self, state: &State, live: &LiveLine, question: Option<&str>) {
        let Screen::Editor(editor) = self else {
            return;
        };
        // As `run` shows it: the question until it is answered, the live line while the
        // agent works, the mark alone when idle.
        let working = state.turn_phase.is_working() || !state.queued_prompts.is_empty();
        match question {
            Some(question) => editor.set_prompt(
                &format!("{question} "),
                "[y]es / [n]o / [a]lways this session > ",
            ),
            None if working => editor.set_prompt(&format!("{} ", live.text(state)), "> "),
            None => editor.set_prompt("", "> "),
        }
    }

    fn stop(&mut self) {
        if let Screen::Editor(editor) = self {
            editor.stop();
        }
    }
}

/// What the live line needs beyond the folded state: what the transcript said last, and when
/// the running turn began (as this client saw it).
#[derive(Default)]
struct LiveLine {
    activity: Activity,
    turn_started: Option<Instant>,
    frame: usize,
}

impl LiveLine {
    /// Notes a transcript entry: thinking and text say what the model streams.
    fn observe(&mut self, entry: &TranscriptEntry) {
        match entry {
            TranscriptEntry::Thinking { .. } => {
                self.activity.streaming = Some(Streamed::Thinking);
            }
            TranscriptEntry::Text { .. } => self.activity.streaming = Some(Streamed::Text),
            TranscriptEntry::Prompt { .. } => self.activity = Activity::default(),
            _ => {}
        }
    }

    /// Notes the state after a message: a turn began or ended.
    fn follow(&mut self, state: &State) {
        let working = state.turn_phase.is_working();
        match (working, self.turn_started) {
            (true, None) => self.turn_started = Some(Instant::now()),
            (false, Some(_)) => self.turn_started = None,
            _ => {}
        }
    }

    fn text(&self, state: &State) -> String {
        live::line(
            state,
            &self.activity,
            Instant::now(),
            self.turn_started,
            self.frame,
        )
    }
}
