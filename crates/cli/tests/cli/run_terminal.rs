//! What a person sees of panewise's own loop: failures said in plain output, and — on a real
//! terminal (tmux, looked at with `capture-pane`, typed into with `send-keys`) — the line
//! editor: y/n only while a question waits, Ctrl-C at an idle prompt clearing the line, a
//! planted escape in the model's command shown escaped, "allow for this session", Ctrl-D
//! ending the session, and the prompts kept in the working directory's history.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use panewise_mock_server::Scenario;

use crate::run_own_loop::{stderr, Machine};

/// The machine, with its project's `panewise.toml` pointing the mock provider at `server`.
fn machine_for(server: &panewise_mock_server::RunningServer) -> Machine {
    let machine = Machine::new();
    std::fs::write(
        machine.path("project/panewise.toml"),
        format!("[providers.mock]\nbase_url = \"{}\"\n", server.base_url()),
    )
    .unwrap();
    machine
}

#[test]
fn a_rate_limit_and_a_server_error_are_said_in_plain_output_with_the_exit_codes_sentence() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (scenario, code, said) in [
        (
            Scenario::RateLimit,
            10,
            "panewise run: failed: rate limited (HTTP 429) after ",
        ),
        (
            Scenario::ServerError,
            12,
            "panewise run: failed: server error (HTTP 500) after ",
        ),
        (
            Scenario::StreamCut,
            15,
            "panewise run: failed: the connection failed or was cut",
        ),
    ] {
        let server = runtime.block_on(crate::start(scenario));
        let machine = machine_for(&server);
        let output = machine.run(&["run", "print hello with the shell"]);
        runtime.block_on(server.shutdown());
        let stderr = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "{scenario:?}: {stderr}");
        assert!(stderr.contains(said), "{scenario:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "panewise run: exit {code}: the last turn failed: "
            )),
            "{scenario:?}: {stderr}"
        );
    }
}

/// A tmux server of its own, running one command.
pub(crate) struct Terminal {
    socket: String,
}

impl Terminal {
    pub(crate) fn start(script: &Path, name: &str) -> Terminal {
        let socket = format!("panewise-test-{name}-{}", std::process::id());
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "150",
                "-y",
                "40",
                "sh",
            ])
            .arg(script)
            .status()
            .expect("tmux runs (the terminal tests need it)");
        assert!(status.success());
        Terminal { socket }
    }

    pub(crate) fn screen(&self) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J", "-S", "-200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The screen as it shows now, without the scrollback above it.
    pub(crate) fn visible(&self) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The window title the program set (OSC 2).
    pub(crate) fn title(&self) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "display-message", "-p", "#{pane_title}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
    }

    pub(crate) fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, Terminal::screen, |screen| screen.contains(needle))
    }

    /// Waits until `capture` of the terminal satisfies `done`; returns that capture. `what`
    /// names the wait in the failure.
    pub(crate) fn wait_until(
        &self,
        what: &str,
        capture: impl Fn(&Terminal) -> String,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let captured = capture(self);
            if done(&captured) {
                return captured;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the terminal never showed {what:?}:\n{captured}\nthe whole screen and its scrollback:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the line a script's `echo $? > FILE` writes, and returns it. The shell creates
    /// the file before `echo` writes to it, so only a whole line counts.
    pub(crate) fn wait_for_line(&self, path: &Path) -> String {
        let start = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(path) {
                if text.ends_with('\n') {
                    return text;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{} never written; the screen:\n{}",
                path.display(),
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub(crate) fn line(&self, text: &str) {
        self.keys(&["-l", text]);
        self.keys(&["Enter"]);
    }
}

/// Whether `screen` holds `lines` (each the start of a line of its own, after the last one's
/// start) in that order, the last of them being the last line written on it.
pub(crate) fn shows_in_order(screen: &str, lines: &[&str]) -> bool {
    let rows: Vec<&str> = screen
        .lines()
        .filter(|row| !row.trim().is_empty())
        .collect();
    let mut wanted = lines.iter().peekable();
    let mut last_found = None;
    for (at, row) in rows.iter().enumerate() {
        if wanted.peek().is_some_and(|line| row.starts_with(*line)) {
            wanted.next();
            last_found = Some(at);
        }
    }
    wanted.peek().is_none() && last_found.is_some_and(|at| at + 1 == rows.len())
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ignored = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[test]
fn on_a_terminal_the_line_editor_asks_shows_escapes_escaped_and_keeps_the_history() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(crate::start(Scenario::SpoofedCommand));
    let machine = machine_for(&server);
    let exit_file = machine.path("exit-code");
    let script = machine.path("terminal.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{project}'\nexport HOME='{home}' XDG_DATA_HOME='{data}' XDG_CONFIG_HOME='{config}'\n\
             unset ANTHROPIC_API_KEY OPENAI_API_KEY GEMINI_API_KEY PANEWISE_LOG\n\
             '{panewise}' run --approval ask --cwd '{project}'\necho $? > '{exit}'\n",
            project = machine.path("project").display(),
            home = machine.path("home").display(),
            data = machine.path("data").display(),
            config = machine.path("config").display(),
            panewise = env!("CARGO_BIN_EXE_panewise"),
            exit = exit_file.display(),
        ),
    )
    .unwrap();
    let terminal = Terminal::start(&script, "own-loop");
    terminal.wait_for("type a prompt and press Enter");
    // No question waits: a lone `y` is not sent as a prompt.
    terminal.line("y");
    terminal.wait_for("no question is waiting for an answer; \"y\" was not sent");
    // Ctrl-C at the idle prompt drops the line typed and ends nothing.
    terminal.keys(&["-l", "half a thought"]);
    terminal.keys(&["C-c"]);
    terminal.wait_for("nothing is running; Ctrl-D ends the session");
    terminal.line("print hello with the shell");
    let asked = terminal.wait_for("[y]es / [n]o / [a]lways this session");
    assert!(
        asked.contains("allow shell touch spoofed #\\u{d}\\u{1b}[2Kecho hello?"),
        "{asked}"
    );
    // An answer that is no answer asks again.
    terminal.line("maybe");
    terminal.wait_for("answer y (allow), n (deny) or a (allow for this session)");
    terminal.line("a");
    terminal.wait_for("allowed for this session: shell");
    terminal.wait_for("The command ran. Done.");
    // The turn is on the screen above the prompt, not pushed into the scrollback.
    terminal.wait_until(
        "the turn, then the prompt as the last line",
        Terminal::visible,
        |screen| {
            shows_in_order(
                screen,
                &[
                    "> print hello with the shell",
                    "The command ran. Done.",
                    ">",
                ],
            )
        },
    );
    assert!(machine.path("project/spoofed").exists());
    terminal.keys(&["C-d"]);
    let exit_code = terminal.wait_for_line(&exit_file);
    runtime.block_on(server.shutdown());
    assert_eq!(exit_code, "0\n", "{}", terminal.screen());
    let history_dir = machine.path("data/panewise/history");
    let histories: Vec<_> = std::fs::read_dir(&history_dir).unwrap().collect();
    assert_eq!(histories.len(), 1, "one history for the one directory");
    let history =
        std::fs::read_to_string(histories[0].as_ref().unwrap().path()).unwrap_or_default();
    assert!(history.contains("print hello with the shell"), "{history}");
}

/// Closing the window (the terminal goes away: SIGHUP, then end of file on every read) ends
/// `panewise run`; it neither waits forever for the line editor nor spins on the dead terminal.
#[test]
fn closing_the_window_ends_the_session_and_the_process() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(crate::start(Scenario::SpoofedCommand));
    let machine = machine_for(&server);
    let pid_file = machine.path("pid");
    let script = machine.path("terminal.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{project}'\nexport HOME='{home}' XDG_DATA_HOME='{data}' XDG_CONFIG_HOME='{config}'\n\
             unset ANTHROPIC_API_KEY OPENAI_API_KEY GEMINI_API_KEY PANEWISE_LOG\n\
             echo $$ > '{pid}'\nexec '{panewise}' run --cwd '{project}'\n",
            project = machine.path("project").display(),
            home = machine.path("home").display(),
            data = machine.path("data").display(),
            config = machine.path("config").display(),
            panewise = env!("CARGO_BIN_EXE_panewise"),
            pid = pid_file.display(),
        ),
    )
    .unwrap();
    let terminal = Terminal::start(&script, "closed");
    terminal.wait_for("type a prompt and press Enter");
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    let process = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(process.exists());
    drop(terminal);
    let start = Instant::now();
    // A zombie (reaped by nobody yet) has ended too: its state is `Z`.
    let alive = || {
        std::fs::read_to_string(process.join("stat"))
            .map(|stat| !stat.contains(") Z "))
            .unwrap_or(false)
    };
    while alive() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "panewise run (pid {pid}) outlived its closed window"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    runtime.block_on(server.shutdown());
}
