//! Sessions side by side: many started at once under one HOME each get a log of their own,
//! `--log` never writes over a file, and two sessions given the same `--log` never share it.

use std::process::{Child, Command, Stdio};

use super::run_own_loop::{stderr, Machine};

/// `panewise run …` on the mock under `machine`'s HOME, started and not waited for.
fn spawn_run(machine: &Machine, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_panewise"))
        .arg("run")
        .args(args)
        .current_dir(machine.path("project"))
        .env("HOME", machine.path("home"))
        .env("XDG_DATA_HOME", machine.path("data"))
        .env("XDG_CONFIG_HOME", machine.path("config"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("PANEWISE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The session logs in the machine's sessions directory (not their window ledgers).
fn session_logs(machine: &Machine) -> Vec<std::path::PathBuf> {
    let dir = machine.path("data/panewise/sessions");
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.to_string_lossy();
            name.ends_with(".jsonl") && !name.ends_with(".window.jsonl")
        })
        .collect();
    logs.sort();
    logs
}

#[test]
fn fifty_sessions_started_at_once_under_one_home_each_keep_a_log_that_replays() {
    const SESSIONS: usize = 50;
    let machine = Machine::new();
    let children: Vec<Child> = (0..SESSIONS)
        .map(|_| spawn_run(&machine, &["print hello with the shell"]))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let logs = session_logs(&machine);
    assert_eq!(logs.len(), SESSIONS, "{logs:?}");
    for log in &logs {
        super::assert_replays(log);
        let text = std::fs::read_to_string(log).unwrap();
        assert_eq!(text.matches("\"header\"").count(), 1, "{}", log.display());
        assert!(
            text.contains("\"kind\":\"session_ended\""),
            "{}",
            log.display()
        );
        let replayed = machine.run(&["replay", log.to_str().unwrap()]);
        assert!(replayed.status.success(), "{}", stderr(&replayed));
    }
}

#[test]
fn log_refuses_an_existing_file_and_leaves_it_as_it_was() {
    let machine = Machine::new();
    let taken = machine.path("taken.jsonl");
    std::fs::write(&taken, "precious\n").unwrap();
    let out = machine.run(&["run", "--log", taken.to_str().unwrap(), "say hello"]);
    // The output cannot be written: exit code 3 of the shared table.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "precious\n");
    assert!(!machine.path("taken.jsonl.window.jsonl").exists());
}

#[test]
fn two_sessions_given_the_same_log_never_share_it() {
    let machine = Machine::new();
    let log = machine.path("shared.jsonl");
    let args = ["--log", log.to_str().unwrap(), "print hello with the shell"];
    let first = spawn_run(&machine, &args);
    let second = spawn_run(&machine, &args);
    let outcomes: Vec<_> = [first, second]
        .into_iter()
        .map(|child| child.wait_with_output().unwrap())
        .collect();
    let succeeded = outcomes.iter().filter(|out| out.status.success()).count();
    assert_eq!(succeeded, 1, "exactly one session owns the log");
    let refused = outcomes.iter().find(|out| !out.status.success()).unwrap();
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(refused));
    assert!(
        stderr(refused).contains("already exists"),
        "{}",
        stderr(refused)
    );
    super::assert_replays(&log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("\"header\"").count(), 1, "{text}");
    assert_eq!(text.matches("\"session_ended\"").count(), 1, "{text}");
}

#[test]
fn session_files_are_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let machine = Machine::new();
    let out = machine.run(&["run", "print hello with the shell"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = machine.path("data/panewise/sessions");
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    assert_eq!(files.len(), 2, "the log and its window ledger: {files:?}");
    for file in files {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
}
