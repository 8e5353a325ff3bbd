//! The interactive terminal of `panewise run`: a line editor (reedline) that owns the terminal
//! for the whole session, with history per working directory.
//!
//! The editor's prompt *is* the live line: what the agent does, then `> ` (or, while a question
//! waits, the question and its answers). Everything else the session prints — the agent's
//! answer, notices, failures — goes through the editor's external printer, which writes it
//! above the line being typed, so output never tears the line the person is typing and a
//! pending question never scrolls away.
//!
//! The editor runs on a thread of its own (reading the terminal blocks). The session's side
//! holds an [`EditorHandle`]: it sets the prompt, prints lines, and wakes the editor to
//! repaint. Lines typed come back as the line front end's lines; Ctrl-C as its interrupt;
//! Ctrl-D as the end of input.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use panewise_host::session::lines::{Signal, UserLines};
use reedline::{
    Color, ExternalPrinter, FileBackedHistory, Prompt, PromptEditMode, PromptHistorySearch,
    Reedline,
};
use tokio::sync::mpsc;

/// Lines of history kept per working directory.
const HISTORY_LINES: usize = 1_000;

/// Lines the session may print ahead of the editor's next repaint (it drains them every
/// poll, 100 ms at most); past it, printing waits.
const PRINT_BACKLOG: usize = 4_096;

/// How long stopping waits for the editor thread to see its flag (it polls every 100 ms).
const EDITOR_STOP_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

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
        Color::DarkGrey
    }
    fn get_indicator_color(&self) -> Color {
        Color::Reset
    }
}

/// The session's hold on the editor thread.
pub struct EditorHandle {
    prompt: Arc<Mutex<PromptText>>,
    printer: ExternalPrinter<String>,
    repaint: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    /// The editor thread still reads the terminal (and drains the printer).
    alive: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Clears `alive` however the editor thread ends.
struct Alive(Arc<AtomicBool>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl EditorHandle {
    /// Starts the editor on the terminal, with the history of `cwd`. Lines typed arrive on
    /// the returned receiver; Ctrl-C is sent to `interrupts`.
    pub fn start(
        cwd: &Path,
        interrupts: mpsc::UnboundedSender<Signal>,
    ) -> (EditorHandle, UserLines) {
        let prompt = Arc::new(Mutex::new(PromptText {
            live: String::new(),
            mark: "> ".to_owned(),
        }));
        let printer = ExternalPrinter::new(PRINT_BACKLOG);
        let repaint = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let mut editor = Reedline::create()
            .with_external_printer(printer.clone())
            .with_break_signal(repaint.clone());
        if let Some(history) = history_file(cwd)
            .and_then(|path| FileBackedHistory::with_file(HISTORY_LINES, path).ok())
        {
            editor = editor.with_history(Box::new(history));
        }
        let (sender, lines) = mpsc::unbounded_channel();
        let shown = LivePrompt(prompt.clone());
        let finished = done.clone();
        let alive = Arc::new(AtomicBool::new(true));
        let alive_guard = Alive(alive.clone());
        let thread = std::thread::spawn(move || loop {
            let _alive = &alive_guard;
            match editor.read_line(&shown) {
                Ok(reedline::Signal::Success(line)) => {
                    if sender.send(line).is_err() {
                        return;
                    }
                }
                Ok(reedline::Signal::CtrlC) => {
                    let _gone = interrupts.send(Signal::Interrupt);
                }
                // Ctrl-D on an empty line: the input ends (dropping the sender says so).
                Ok(reedline::Signal::CtrlD) | Err(_) => return,
                // Woken to repaint with a new prompt, or to stop.
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
                printer,
                repaint,
                done,
                alive,
                thread: Some(thread),
            },
            lines,
        )
    }

    /// Shows `live` and `mark` as the prompt, repainted at once.
    pub fn set_prompt(&self, live: &str, mark: &str) {
        if let Ok(mut text) = self.prompt.lock() {
            if text.live == live && text.mark == mark {
                return;
            }
            live.clone_into(&mut text.live);
            mark.clone_into(&mut text.mark);
        }
        self.repaint.store(true, Ordering::SeqCst);
    }

    /// Prints `text` (one or more lines) above the line being typed.
    pub fn print(&self, text: String) {
        // Once the editor is gone (Ctrl-D ended the input, the session goes on), the terminal
        // is the session's again: lines are printed plainly.
        if !self.alive.load(Ordering::SeqCst) {
            self.drain();
            eprintln!("{text}");
        } else {
            // One message per line: the editor ends each message with CR LF and counts them
            // to know where its prompt is; a line feed inside a message (raw mode: no carriage
            // return) would step the text sideways and leave the prompt where the editor does
            // not think it is.
            for line in text.split('\n') {
                if let Err(refused) = self.printer.print(line.to_owned()) {
                    eprintln!("{}", refused.0);
                }
            }
        }
    }

    /// Prints what the editor did not print before it ended.
    fn drain(&self) {
        while let Some(line) = self.printer.get_line() {
            eprintln!("{line}");
        }
    }

    /// Stops the editor and gives the terminal back. Lines still queued for printing are
    /// printed first.
    pub fn stop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        self.repaint.store(true, Ordering::SeqCst);
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
