//! `panewise sessions` over a directory holding a live, an ended and a crashed session, and
//! one file of each kind it cannot read: each bad file is skipped with one warning line, and
//! nothing panics or hangs.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::run_own_loop::{stderr, Machine};

/// `panewise sessions ARGS` under `machine`'s HOME, killed (and the test failed) if it does
/// not end within a minute: a hang is the bug a named pipe used to cause.
fn sessions(machine: &Machine, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_panewise"))
        .arg("sessions")
        .args(args)
        .env("HOME", machine.path("home"))
        .env("XDG_DATA_HOME", machine.path("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("panewise sessions {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The log of one finished mock session in the sessions directory.
fn record_one(machine: &Machine) -> PathBuf {
    let out = machine.run(&["run", "print hello with the shell"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = machine.path("data/panewise/sessions");
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| !path.to_string_lossy().ends_with(".window.jsonl"))
        .unwrap()
}

/// `log` without its closing lines (the final checkpoint, `session_ended`): what a session
/// killed with -9 leaves.
fn without_closing(log: &Path) -> String {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|line| !line.contains("\"checkpoint\"") && !line.contains("session_ended"))
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn sessions_tells_live_ended_and_crashed_apart_and_skips_every_unreadable_file() {
    let machine = Machine::new();
    let ended = record_one(&machine);
    let dir = ended.parent().unwrap().to_path_buf();
    let cut = without_closing(&ended);
    std::fs::write(dir.join("crashed.jsonl"), &cut).unwrap();
    std::fs::write(dir.join("live.jsonl"), &cut).unwrap();
    // A running session: this process holds the log's lock, as a session's writer does.
    let live = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("live.jsonl"))
        .unwrap();
    live.try_lock().unwrap();

    let bad: [(&[u8], &[u8]); 4] = [
        (b"\xff\xfe.jsonl", b"{}\n"),
        (b"empty.jsonl", b""),
        (
            b"far-future.jsonl",
            b"{\"v\":3,\"header\":{\"agent_id\":\"mock\",\"started_at_ms\":253402300800000}}\n",
        ),
        (b"garbage.jsonl", b"\x00\x01 not a log \x1b[2J\n"),
    ];
    for (name, content) in bad {
        let path = dir.join(std::ffi::OsStr::from_bytes(name));
        std::fs::File::create(path)
            .unwrap()
            .write_all(content)
            .unwrap();
    }
    let fifo = dir.join("pipe.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());

    for json in [false, true] {
        let args: &[&str] = if json { &["--json"] } else { &[] };
        let out = sessions(&machine, args);
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        let warnings: Vec<&str> = err
            .lines()
            .filter(|line| line.contains("warning"))
            .collect();
        assert_eq!(warnings.len(), 5, "one warning per unreadable file:\n{err}");
        for (file, why) in [
            ("empty.jsonl", "empty"),
            ("far-future.jsonl", "past the year 9999"),
            ("garbage.jsonl", "not a readable session log"),
            ("pipe.jsonl", "a named pipe"),
            ("\u{fffd}", "not UTF-8"),
        ] {
            assert!(
                warnings
                    .iter()
                    .any(|line| line.contains(file) && line.contains(why)),
                "{file}: {why}:\n{err}"
            );
        }
        // The garbage's escape sequence reaches the terminal escaped, if at all.
        assert!(!err.contains('\u{1b}'), "{err:?}");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let id = ended.file_stem().unwrap().to_string_lossy().into_owned();
        if json {
            let lines: Vec<serde_json::Value> = stdout
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect();
            assert_eq!(lines.len(), 3, "{stdout}");
            assert!(lines.iter().all(|line| line["v"] == 1), "{stdout}");
            let status_of = |id: &str| {
                lines
                    .iter()
                    .find(|line| line["id"] == id)
                    .map(|line| line["status"].clone())
                    .unwrap_or_else(|| panic!("{id} not listed: {stdout}"))
            };
            assert_eq!(status_of(&id), "ended");
            assert_eq!(status_of("crashed"), "crashed");
            assert_eq!(status_of("live"), "live");
            for line in &lines {
                assert_eq!(line["provider"], "mock", "{line}");
                assert_eq!(line["first_prompt"], "print hello with the shell", "{line}");
                assert!(
                    line["cwd"].as_str().is_some_and(|cwd| !cwd.is_empty()),
                    "{line}"
                );
            }
        } else {
            let row = |id: &str| {
                stdout
                    .lines()
                    .find(|line| line.starts_with(id))
                    .unwrap_or_else(|| panic!("{id} not listed: {stdout}"))
                    .to_owned()
            };
            assert!(row(&id).contains(" ended "), "{stdout}");
            assert!(row("crashed").contains(" crashed "), "{stdout}");
            assert!(row("live").contains(" live "), "{stdout}");
            assert!(
                row("live").ends_with("print hello with the shell"),
                "{stdout}"
            );
        }
    }
    drop(live);
    // Its writer gone without closing it, the live session is a crashed one. The lock is the
    // open file's, so a child another test forks at this moment holds it until its exec:
    // look again, bounded, while it still reads live.
    let live_line = || {
        let out = sessions(&machine, &["--json"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|line| line.contains("\"id\":\"live\""))
            .unwrap()
            .to_owned()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut line = live_line();
    while line.contains("\"status\":\"live\"") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        line = live_line();
    }
    assert!(line.contains("\"status\":\"crashed\""), "{line}");
}
