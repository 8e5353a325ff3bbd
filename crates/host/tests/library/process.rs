//! Process groups that outlive nothing (`panewise_host::process`): what leaves a command's
//! group is still found and killed, by the `shell` tool and by an agent's kill, and what cannot
//! be found is said.

use std::time::{Duration, Instant};

use panewise_host::agent::{AgentCommand, AgentProcess};
use panewise_host::tools::{self, ToolContext};
use serde_json::json;

/// True once `pid` is gone or a zombie (killed, waiting for a reaper that may never come in a
/// container).
fn process_ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (bounded) until `pid` has ended.
async fn ends_soon(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !process_ended(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    process_ended(pid)
}

/// Waits in the command until the escapee wrote its pid to `pid`, then prints it.
const PRINT_PID: &str = "while [ ! -s pid ]; do sleep 0.01; done; cat pid";

struct EscapeCase {
    name: &'static str,
    /// Starts a process that leaves the group; it writes its pid to the file `pid`.
    escape: &'static str,
    /// Appended after [`PRINT_PID`].
    then: &'static str,
    timeout_ms: u64,
    /// The result's lines after the output, given the escapee's pid.
    footer: fn(i32) -> Vec<String>,
}

fn killed_line(pid: i32, name: &str) -> String {
    format!("[killed 1 process(es) it had left running outside its process group: {pid} `{name}`]")
}

const CASES: &[EscapeCase] = &[
    EscapeCase {
        // A new session whose parent exits at once: found by the mark it inherited.
        name: "setsid -f, orphaned, still marked",
        escape: "setsid -f /bin/sh -c 'echo $$ > pid; exec sleep 30'",
        then: "",
        timeout_ms: 10_000,
        footer: |pid| vec!["[exit code 0]".into(), killed_line(pid, "sleep")],
    },
    EscapeCase {
        // A new session with its environment cleared (no mark), its parent still waiting
        // for it: found through its parent.
        name: "setsid with env -i, parent alive",
        escape: "setsid env -i /bin/sh -c 'echo $$ > pid; exec /bin/sleep 30' &",
        then: "; wait",
        // Long enough for the pid to be printed on a loaded machine; short of the sleep.
        timeout_ms: 5_000,
        footer: |pid| {
            vec![
                "[timed out after 5000 ms; the command's process group was killed]".into(),
                killed_line(pid, "sleep"),
            ]
        },
    },
    EscapeCase {
        // No mark and no parent: it cannot be found. It holds the output pipe, and the result
        // says so rather than claiming everything was killed.
        name: "env -i setsid -f, orphaned, unmarked",
        escape: "env -i setsid -f /bin/sh -c 'echo $$ > pid; exec /bin/sleep 30'",
        then: "",
        timeout_ms: 10_000,
        footer: |_| {
            vec![
                "[exit code 0]".into(),
                "[something it started, which could not be found to be killed, still holds its \
                 output open; output after this point is not shown]"
                    .into(),
            ]
        },
    },
];

#[tokio::test]
async fn what_leaves_the_shell_tools_group_is_killed_or_named_as_not_found() {
    for case in CASES {
        let dir = tempfile::tempdir().unwrap();
        let command = format!("{}\n{PRINT_PID}{}", case.escape, case.then);
        let started = Instant::now();
        let outcome = tools::run_json(
            "shell",
            &json!({ "command": command, "timeout_ms": case.timeout_ms }),
            &ToolContext::new(dir.path()),
        )
        .await;
        let mut lines = outcome.content.lines();
        let pid: i32 = lines
            .next()
            .and_then(|line| line.parse().ok())
            .unwrap_or_else(|| panic!("{}: no pid in {:?}", case.name, outcome.content));
        let footer: Vec<String> = lines.map(str::to_owned).collect();
        let expected = (case.footer)(pid);
        let found = expected.len() > 1 && expected[1].starts_with("[killed");
        if !found {
            // Not found by the tool, so the test ends it.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        assert_eq!(footer, expected, "{}", case.name);
        assert!(ends_soon(pid).await, "{}: {pid} still runs", case.name);
        assert!(
            // Well short of the escaped `sleep 30`: nothing waited for it.
            started.elapsed() < Duration::from_secs(20),
            "{}: took {:?}",
            case.name,
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn an_agents_kill_reaches_what_left_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let command = AgentCommand {
        program: "sh".into(),
        args: vec![
            "-c".into(),
            format!("setsid -f /bin/sh -c 'echo $$ > pid; exec sleep 30'; {PRINT_PID}; sleep 30"),
        ],
        cwd: Some(dir.path().to_path_buf()),
        ..AgentCommand::default()
    };
    let mut agent = AgentProcess::spawn(&command).unwrap();
    let mut printed = Vec::new();
    while !printed.ends_with(b"\n") {
        let Some(chunk) = agent.next_output().await else {
            break;
        };
        printed.extend(chunk);
    }
    let pid: i32 = String::from_utf8_lossy(&printed).trim().parse().unwrap();
    assert!(!process_ended(pid));
    agent.kill().unwrap();
    assert_eq!(agent.wait().await.unwrap().signal, Some(9));
    assert!(ends_soon(pid).await, "the escaped {pid} outlived the kill");
}
