//! The interactive terminal of `panewise run` and `panewise attach`: a line editor (reedline) that owns the terminal
//! for the whole session, with history per working directory.
//!
//! The editor's prompt *is* the live line: what the agent does, then `> ` (or, while a question
//! waits, the question and its answers). Everything else the session prints — the agent's
//! answer, notices, failures — goes through the editor's external printer, which writes it
//! above the line being typed, so output never tears the line the person is typing and a
//! pending question never scrolls away.
//!
//! The editor runs on a thread of its own (reading the terminal blocks). The session's side
//! holds an [`EditorHandle`]: it sets the prompt (repainted in place, the line being typed
//! kept) and queues lines to print, which the editor takes at its next poll (every 100 ms) and
//! prints together, the prompt below them. Lines typed come back as the line front end's lines;
//! Ctrl-C as its interrupt; Ctrl-D as the end of input.
//!
//! Both queues back are bounded (`panewise_host::session::lines`): a Ctrl-C past its bound is
//! coalesced, and a typed line past its bound makes the editor wait, reading no more keys. While
//! it waits it is out of its line (the terminal plain, no prompt drawn) and the session's
//! printing goes straight to the terminal: a session that prints before it takes its next
//! line never waits on an editor that waits for it to take one.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use panewise_host::session::lines::{self, Signal, UserLines};
use reedline::{
    Color, ExternalPrinter, FileBackedHistory, Prompt, PromptEditMode, PromptHistorySearch,
    Reedline,
};
use tokio::sync::mpsc;

/// Lines of history kept per working directory.
const HISTORY_LINES: usize = 1_000;

/// Lines the session may print ahead of the editor's next poll (100 ms at most); past it,
/// printing waits. The editor's own printer holds as many, so one poll's lines always fit.
const PRINT_BACKLOG: usize = 4_096;

/// How long stopping waits for the editor thread to see its flag (it polls every 100 ms).
const EDITOR_STOP_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// How often a full backlog is looked at again while the editor drains it.
const BACKLOG_RETRY: std::time::Duration = std::time::Duration::from_millis(10);

/// Whether the editor thread is out of its line, waiting for room to hand over a typed line
/// ([`hand_over`]); a print holds it while it writes to the terminal, so the editor draws its
/// line again only after that print.
type WaitingForRoom = Arc<Mutex<bool>>;

/// What the prompt shows; shared between the session and the editor thread.
#[derive(Debug, Clone, Default)]
struct PromptText {
    /// The live line, before the mark.
    live: String,
    /// The mark the person types after: `> `, or the question's answers.
    mark: String,
}

struct LivePrompt(Arc<Mutex<PromptText>>);

impl LivePrompt {
    fn text(&self) -> PromptText {
        self.0.lock().map(|text| text.clone()).unwrap_or_default()
    }
}

impl Prompt for LivePrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Owned(self.text().live)
    }
    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Owned(self.text().mark)
    }
    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }
    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(history search: {}) ", search.term))
    }
    fn get_prompt_color(&self) -> Color {
        Color::DarkGray
    }
    fn get_indicator_color(&self) -> Color {
        Color::Default
    }
}

/// The session's hold on the editor thread.
pub struct EditorHandle {
    prompt: Arc<Mutex<PromptText>>,
    /// Lines to print, handed to the editor's printer at its next poll.
    queue: SyncSender<String>,
    /// The other end of `queue`: the editor's poll takes from it, and once the editor has
    /// ended, whatever it did not take is printed plainly from here.
    queued: Arc<Mutex<Receiver<String>>>,
    /// Asks the editor to repaint its prompt in place at its next poll (reedline's repaint
    /// signal, whose type it does not export).
    repaint: Box<dyn Fn() + Send + Sync>,
    done: Arc<AtomicBool>,
    /// The editor thread still reads the terminal (and prints the queue).
    alive: Arc<AtomicBool>,
    /// The editor thread waits for the session to take a typed line: it prints nothing.
    waiting_for_room: WaitingForRoom,
    thread: Option<JoinHandle<()>>,
}

/// Clears `alive` however the editor thread ends.
struct Alive(Arc<AtomicBool>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// What the editor does at each poll, before it looks at its printer: on `done`, it breaks
/// out of the line (and prints nothing more, so no line handed over is left unprinted when
/// it ends); otherwise it hands the queued lines to its printer, which prints them in the
/// same poll. The lines stay in `queued` until then, where stopping still finds them.
fn poll_hook(
    done: Arc<AtomicBool>,
    stop_line: Arc<AtomicBool>,
    queued: Arc<Mutex<Receiver<String>>>,
    printer: SyncSender<String>,
) -> Box<dyn FnMut() + Send> {
    Box::new(move || {
        if done.load(Ordering::SeqCst) {
            stop_line.store(true, Ordering::SeqCst);
            return;
        }
        let Ok(queued) = queued.lock() else {
            return;
        };
        // The printer was emptied at the last poll and holds PRINT_BACKLOG lines: this many
        // always fit.
        for line in queued.try_iter().take(PRINT_BACKLOG) {
            if let Err(TrySendError::Full(line) | TrySendError::Disconnected(line)) =
                printer.try_send(line)
            {
                eprintln!("{line}");
            }
        }
    })
}

/// Hands a typed line to the session; `false` once nobody takes them. At the queue's bound
/// ([`lines::LINE_BOUND`]) the editor thread waits, reading no more keys (they wait in the
/// terminal), so nothing typed is lost. It waits out of its line (reedline gives the terminal
/// back between lines) and says so in `waiting_for_room`, so the session's printing goes
/// straight to the terminal meanwhile instead of to the poll that will not come.
fn hand_over(typed: &mpsc::Sender<String>, line: String, waiting_for_room: &Mutex<bool>) -> bool {
    let line = match typed.try_send(line) {
        Ok(()) => return true,
        Err(mpsc::error::TrySendError::Closed(_)) => return false,
        Err(mpsc::error::TrySendError::Full(line)) => line,
    };
    set(waiting_for_room, true);
    let sent = typed.blocking_send(line).is_ok();
    // Waits for a print that is writing: the line is drawn again below it.
    set(waiting_for_room, false);
    sent
}

fn set(flag: &Mutex<bool>, value: bool) {
    *flag.lock().unwrap_or_else(PoisonError::into_inner) = value;
}

impl EditorHandle {
    /// Starts the editor on the terminal, with the history of `cwd`. Lines typed arrive on
    /// the returned receiver; Ctrl-C is sent to `interrupts` (coalesced past its bound).
    pub fn start(cwd: &Path, interrupts: mpsc::Sender<Signal>) -> (EditorHandle, UserLines) {
        let prompt = Arc::new(Mutex::new(PromptText {
            live: String::new(),
            mark: "> ".to_owned(),
        }));
        let printer = ExternalPrinter::new(PRINT_BACKLOG);
        let (queue, queued) = sync_channel(PRINT_BACKLOG);
        let queued = Arc::new(Mutex::new(queued));
        let stop_line = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let hook = poll_hook(
            done.clone(),
            stop_line.clone(),
            queued.clone(),
            printer.sender(),
        );
        let mut editor = Reedline::create()
            .with_external_printer(printer)
            .with_break_signal(stop_line)
            .with_idle_callback(hook);
        let repaint_signal = editor.repaint_signal();
        let repaint = Box::new(move || repaint_signal.request_repaint());
        if let Some(history) = history_file(cwd)
            .and_then(|path| FileBackedHistory::with_file(HISTORY_LINES, path).ok())
        {
            editor = editor.with_history(Box::new(history));
        }
        let (sender, lines) = lines::line_queue();
        let shown = LivePrompt(prompt.clone());
        let finished = done.clone();
        let alive = Arc::new(AtomicBool::new(true));
        let alive_guard = Alive(alive.clone());
        let waiting_for_room = WaitingForRoom::default();
        let waits = waiting_for_room.clone();
        let thread = std::thread::spawn(move || loop {
            let _alive = &alive_guard;
            match editor.read_line(&shown) {
                Ok(reedline::Signal::Success(line)) => {
                    if !hand_over(&sender, line, &waits) {
                        return;
                    }
                }
                Ok(reedline::Signal::CtrlC) => {
                    // Queued, coalesced with the unread ones, or nobody reads them: never waits.
                    let _raised = lines::interrupt(&interrupts);
                }
                // Ctrl-D on an empty line: the input ends (dropping the sender says so).
                Ok(reedline::Signal::CtrlD) | Err(_) => return,
                // Broken out of the line to stop.
                Ok(_) => {
                    if finished.load(Ordering::SeqCst) {
                        return;
                    }
                }
            }
        });
        (
            EditorHandle {
                prompt,
                queue,
                queued,
                repaint,
                done,
                alive,
                waiting_for_room,
                thread: Some(thread),
            },
            lines,
        )
    }

    /// Shows `live` and `mark` as the prompt, repainted in place at the editor's next poll
    /// (the line being typed stays as it is).
    pub fn set_prompt(&self, live: &str, mark: &str) {
        if let Ok(mut text) = self.prompt.lock() {
            if text.live == live && text.mark == mark {
                return;
            }
            live.clone_into(&mut text.live);
            mark.clone_into(&mut text.mark);
        }
        (self.repaint)();
    }

    /// Prints `text` (one or more lines; the editor gives each a row of its own) above the line
    /// being typed.
    pub fn print(&self, text: String) {
        let mut text = text;
        loop {
            // Once the editor is gone (Ctrl-D ended the input, the session goes on), the
            // terminal is the session's again: lines are printed plainly.
            if !self.alive.load(Ordering::SeqCst) {
                self.drain();
                eprintln!("{text}");
                return;
            }
            {
                // The editor waits for this session to take a typed line: it will not poll
                // until then, so the terminal is written here (held, so the editor draws its
                // line again only after).
                let waiting = self
                    .waiting_for_room
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if *waiting {
                    self.drain();
                    eprintln!("{text}");
                    return;
                }
            }
            match self.queue.try_send(text) {
                Ok(()) => return,
                Err(TrySendError::Full(back) | TrySendError::Disconnected(back)) => {
                    text = back;
                    std::thread::sleep(BACKLOG_RETRY);
                }
            }
        }
    }

    /// Prints what the editor did not print before it ended.
    fn drain(&self) {
        if let Ok(queued) = self.queued.lock() {
            for line in queued.try_iter() {
                eprintln!("{line}");
            }
        }
    }

    /// Stops the editor and gives the terminal back. Lines still queued for printing are
    /// printed first.
    pub fn stop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            // The editor checks the flag at its next poll (100 ms). A terminal that has gone
            // away (the window closed: SIGHUP) can leave it spinning inside crossterm's read on
            // end of file, never back at the flag: it is waited for a while, then left to die
            // with the process rather than joined forever.
            let waited_since = std::time::Instant::now();
            while !thread.is_finished() && waited_since.elapsed() < EDITOR_STOP_GRACE {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ignored = thread.join();
            }
        }
        // Whatever was printed after the editor's last poll.
        self.drain();
    }
}

impl Drop for EditorHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `$XDG_DATA_HOME/panewise/history/<cwd, escaped>`: each working directory keeps the
/// prompts typed in it. The directory is the owner's alone, like the session logs.
fn history_file(cwd: &Path) -> Option<PathBuf> {
    let dir = panewise_host::session_log::sessions_dir()?
        .parent()?
        .join("history");
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&dir)
        .ok()?;
    Some(dir.join(history_name(cwd)))
}

/// A file name for `cwd` that no other directory shares: `%` and `/` escaped.
fn history_name(cwd: &Path) -> String {
    let mut name = String::new();
    for c in cwd.display().to_string().chars() {
        match c {
            '%' => name.push_str("%25"),
            '/' => name.push_str("%2F"),
            c => name.push(c),
        }
    }
    name.push_str(".history");
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_poll_hands_the_queued_lines_over_unless_stopping() {
        struct Row {
            rule: &'static str,
            done: bool,
            queued: usize,
            handed_over: usize,
            broken: bool,
        }
        let rows = [
            Row {
                rule: "editing: every queued line goes to the printer, the line is not broken",
                done: false,
                queued: 3,
                handed_over: 3,
                broken: false,
            },
            Row {
                rule: "nothing queued: nothing handed over, nothing broken",
                done: false,
                queued: 0,
                handed_over: 0,
                broken: false,
            },
            Row {
                rule: "stopping: the line is broken and nothing handed over, so what is \
                       queued stays for stop to print",
                done: true,
                queued: 3,
                handed_over: 0,
                broken: true,
            },
            Row {
                rule: "past the printer's room: as many as it holds now, the rest next poll",
                done: false,
                queued: PRINT_BACKLOG + 1,
                handed_over: PRINT_BACKLOG,
                broken: false,
            },
        ];
        for row in rows {
            let (queue, queued) = sync_channel(PRINT_BACKLOG + 1);
            for n in 0..row.queued {
                queue.send(format!("line {n}")).unwrap();
            }
            let queued = Arc::new(Mutex::new(queued));
            let (printer, printed) = sync_channel(PRINT_BACKLOG);
            let stop_line = Arc::new(AtomicBool::new(false));
            let mut hook = poll_hook(
                Arc::new(AtomicBool::new(row.done)),
                stop_line.clone(),
                queued.clone(),
                printer,
            );
            hook();
            let handed: Vec<String> = printed.try_iter().collect();
            let expected: Vec<String> = (0..row.handed_over).map(|n| format!("line {n}")).collect();
            assert_eq!(handed, expected, "{}", row.rule);
            let left = queued.lock().unwrap().try_iter().count();
            assert_eq!(left, row.queued - row.handed_over, "{}", row.rule);
            assert_eq!(stop_line.load(Ordering::SeqCst), row.broken, "{}", row.rule);
        }
    }

    /// A handle on no editor thread: `alive` says whether one would still read the terminal,
    /// `waiting` whether it waits for room for a typed line; `queued` lines wait to be printed
    /// in a print queue that holds `room` more.
    fn handle(alive: bool, waiting: bool, queued: usize, room: usize) -> EditorHandle {
        let (queue, receiver) = sync_channel(queued + room);
        for n in 0..queued {
            queue.send(format!("queued {n}")).unwrap();
        }
        EditorHandle {
            prompt: Arc::default(),
            queue,
            queued: Arc::new(Mutex::new(receiver)),
            repaint: Box::new(|| {}),
            done: Arc::new(AtomicBool::new(false)),
            alive: Arc::new(AtomicBool::new(alive)),
            waiting_for_room: Arc::new(Mutex::new(waiting)),
            thread: None,
        }
    }

    #[test]
    fn printing_goes_straight_to_the_terminal_while_the_editor_cannot_poll() {
        struct Row {
            rule: &'static str,
            alive: bool,
            waiting: bool,
            queued: usize,
            room: usize,
            /// Left in the queue for the editor's poll after the print.
            left: usize,
        }
        let rows = [
            Row {
                rule: "editing: the line waits in the queue for the editor's next poll",
                alive: true,
                waiting: false,
                queued: 1,
                room: 1,
                left: 2,
            },
            Row {
                rule: "the editor waits, the queue has room: printed at once all the same, \
                       after what was queued before it",
                alive: true,
                waiting: true,
                queued: 1,
                room: 4,
                left: 0,
            },
            Row {
                rule: "the editor waits for room for a typed line and the queue is full: \
                       the queue and the line are printed at once, nothing waits on the editor",
                alive: true,
                waiting: true,
                queued: 3,
                room: 0,
                left: 0,
            },
            Row {
                rule: "the editor has ended: printed plainly",
                alive: false,
                waiting: false,
                queued: 2,
                room: 0,
                left: 0,
            },
        ];
        for row in rows {
            let handle = handle(row.alive, row.waiting, row.queued, row.room);
            handle.print("printed".to_owned());
            let left = handle.queued.lock().unwrap().try_iter().count();
            assert_eq!(left, row.left, "{}", row.rule);
        }
    }

    #[test]
    fn a_typed_line_past_the_bound_waits_and_the_session_can_print_meanwhile() {
        let (typed, mut queue) = lines::line_queue();
        for n in 0..lines::LINE_BOUND {
            assert!(hand_over(&typed, format!("typed {n}"), &Mutex::new(false)));
        }
        let session = handle(true, false, 2, 0);
        let waiting = Arc::clone(&session.waiting_for_room);
        let editor = std::thread::spawn(move || {
            let handed = hand_over(&typed, "typed last".to_owned(), &waiting);
            (handed, typed)
        });
        while !*session.waiting_for_room.lock().unwrap() {
            std::thread::yield_now();
        }
        // The print queue is full and the editor will not poll: the print must not wait.
        session.print("printed while the editor waits".to_owned());
        assert_eq!(session.queued.lock().unwrap().try_iter().count(), 0);
        let mut taken = Vec::new();
        while taken.len() <= lines::LINE_BOUND {
            taken.extend(queue.blocking_recv());
        }
        let (handed, typed) = editor.join().unwrap();
        assert!(handed, "the line was handed over");
        assert_eq!(taken.last().map(String::as_str), Some("typed last"));
        assert_eq!(taken.len(), lines::LINE_BOUND + 1, "no typed line lost");
        assert!(
            !*session.waiting_for_room.lock().unwrap(),
            "back in its line, the editor prints again"
        );
        drop(queue);
        let nobody_takes = Mutex::new(false);
        assert!(
            !hand_over(&typed, "to nobody".to_owned(), &nobody_takes),
            "the session gone, the editor stops"
        );
        assert!(!*nobody_takes.lock().unwrap());
    }

    #[test]
    fn each_directory_has_a_history_of_its_own() {
        let names = [
            history_name(Path::new("/a/b")),
            history_name(Path::new("/a_b")),
            history_name(Path::new("/a%2Fb")),
        ];
        assert_eq!(names[0], "%2Fa%2Fb.history");
        assert!(names[0] != names[1] && names[0] != names[2] && names[1] != names[2]);
    }
}
