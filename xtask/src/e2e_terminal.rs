//! The end-to-end cases that need a real terminal: `panewise run` inside tmux (a terminal
//! emulator, so the line editor's queries are answered as on a person's screen), looked at with
//! `capture-pane` — what a person would see — and answered with `send-keys`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};

/// How long a terminal case waits for a screen or for the exit.
const PATIENCE: Duration = Duration::from_secs(150);

/// A terminal running one command, on a tmux server of its own.
pub struct Terminal {
    socket: String,
    exit_file: std::path::PathBuf,
}

impl Terminal {
    /// Starts `command` (with its environment) on a fresh 160×48 terminal. Its exit code is
    /// written to `dir/exit-code` when it ends.
    pub fn start(command: &Command, dir: &Path, name: &str) -> Result<Terminal> {
        let quote =
            |word: &std::ffi::OsStr| format!("'{}'", word.to_string_lossy().replace('\'', "'\\''"));
        let mut script = String::from("#!/bin/sh\n");
        for (key, value) in command.get_envs() {
            if let Some(value) = value {
                script.push_str(&format!(
                    "export {}={}\n",
                    key.to_string_lossy(),
                    quote(value)
                ));
            }
        }
        if let Some(cwd) = command.get_current_dir() {
            script.push_str(&format!("cd {}\n", quote(cwd.as_os_str())));
        }
        let line: Vec<String> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(quote)
            .collect();
        let exit_file = dir.join("exit-code");
        script.push_str(&format!(
            "{}\necho $? > {}\n",
            line.join(" "),
            quote(exit_file.as_os_str())
        ));
        let script_path = dir.join("terminal.sh");
        std::fs::write(&script_path, script)?;
        let socket = format!("panewise-e2e-{name}-{}", std::process::id());
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "48",
                "sh",
            ])
            .arg(&script_path)
            .status()
            .context("cannot run tmux (the terminal cases need it)")?;
        ensure!(status.success(), "tmux new-session failed");
        Ok(Terminal { socket, exit_file })
    }

    /// What the terminal shows now, one string per row.
    pub fn screen(&self) -> Result<String> {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J"])
            .output()?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Waits until the screen holds `needle`; the screen then.
    pub fn wait_for(&self, needle: &str) -> Result<String> {
        self.wait_until(&format!("{needle:?}"), |screen| screen.contains(needle))
    }

    /// Waits until `holds` is true of the screen (`what` names the condition in the error);
    /// the screen then.
    pub fn wait_until(&self, what: &str, holds: impl Fn(&str) -> bool) -> Result<String> {
        let start = Instant::now();
        loop {
            let screen = self.screen()?;
            if holds(&screen) {
                return Ok(screen);
            }
            if let Some(code) = self.exit_code() {
                anyhow::bail!("exited {code} before the screen showed {what}:\n{screen}");
            }
            ensure!(
                start.elapsed() < PATIENCE,
                "the screen never showed {what}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `text` and Enter.
    pub fn type_line(&self, text: &str) -> Result<()> {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-l", text])
            .status()?;
        ensure!(status.success(), "tmux send-keys failed");
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "Enter"])
            .status()?;
        ensure!(status.success(), "tmux send-keys failed");
        Ok(())
    }

    /// Types `text` as keys, without Enter.
    pub fn type_keys(&self, text: &str) -> Result<()> {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-l", text])
            .status()?;
        ensure!(status.success(), "tmux send-keys failed");
        Ok(())
    }

    /// Presses one key by its tmux name (`Enter`, `Tab`, `BSpace`, `Up`).
    pub fn press(&self, key: &str) -> Result<()> {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", key])
            .status()?;
        ensure!(status.success(), "tmux send-keys {key} failed");
        Ok(())
    }

    fn exit_code(&self) -> Option<i32> {
        std::fs::read_to_string(&self.exit_file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
    }

    /// Waits for the command to end; its exit code and the last screen.
    pub fn wait_exit(&self) -> Result<(i32, String)> {
        let start = Instant::now();
        loop {
            if let Some(code) = self.exit_code() {
                return Ok((code, self.screen().unwrap_or_default()));
            }
            ensure!(
                start.elapsed() < PATIENCE,
                "the command never ended:\n{}",
                self.screen()?
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // The server is gone already when the command ended (its one session closed).
        let _ignored = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// The approval question on a terminal, asked about a command holding `shown`: the question
/// (the last line on screen) names the tool and `shown`, and is still the last line well after
/// it was asked (the live line once overwrote it after about 4 s). Answered `y`; the exit code
/// and the last screen.
pub fn question_stays(
    command: &Command,
    dir: &Path,
    name: &str,
    tool: &str,
    shown: &str,
) -> Result<(i32, String)> {
    let terminal = Terminal::start(command, dir, name)?;
    let asked = terminal.wait_for("[y]es / [n]o")?;
    let question = last_line(&asked);
    ensure!(
        question.contains(&format!("allow {tool}")) && question.contains(shown),
        "the question does not name {tool} and {shown:?}:\n{asked}"
    );
    // Long past the live line's redraws: the question is still the last thing on screen.
    std::thread::sleep(Duration::from_secs(6));
    let later = terminal.screen()?;
    ensure!(
        last_line(&later) == question,
        "the question left the screen:\n{later}"
    );
    terminal.type_line("y")?;
    terminal.wait_exit()
}

fn last_line(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim_end()
        .to_owned()
}

/// The mock's `spoofed-command` on a terminal: the question shows the carriage return and the
/// erase-line escape it plants escaped, so `touch spoofed` is in plain sight, and `y` runs it.
pub fn spoofed_command_shown_escaped(
    command: &Command,
    dir: &Path,
    name: &str,
    tool: &str,
    work: &Path,
) -> Result<()> {
    let (code, screen) = question_stays(
        command,
        dir,
        name,
        tool,
        "touch spoofed #\\u{d}\\u{1b}[2Kecho hello",
    )?;
    ensure!(code == 0, "exit {code}; screen:\n{screen}");
    ensure!(
        work.join("spoofed").exists(),
        "the approved command did not run; screen:\n{screen}"
    );
    Ok(())
}
