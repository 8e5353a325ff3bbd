//! The dashboard end to end on a real terminal (tmux, read with `capture-pane`, typed into with
//! `send-keys`) against a real daemon in a temporary runtime and data directory, on the
//! offline mock: four sessions started with `panewise new`, two of them in `ask` mode, one
//! running a slow tool; one approved with `y` in the peek, one denied with `n`, attached to,
//! sent a follow-up, the slow one interrupted with `i`; then quit and reopened with every
//! session still there. And `panewise ui --demo` showing every state it promises.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use panewise_api::{Ack, Empty, Method};
use panewise_supervisor::Client;

use crate::run_terminal::Terminal;

pub(crate) struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub(crate) fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["run", "data", "home", "config", "work"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Home { dir }
    }

    pub(crate) fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    pub(crate) fn panewise(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_panewise"))
            .current_dir(self.path("work"))
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("HOME", self.path("home"))
            .env_remove("PANEWISE_LOG")
            .args(args)
            .output()
            .unwrap()
    }

    /// The sessions' names and states, as `panewise agents --json` prints them.
    pub(crate) fn agents(&self) -> Vec<(String, String)> {
        let output = self.panewise(&["agents", "--json"]);
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                (
                    value["name"].as_str().unwrap_or("").to_owned(),
                    value["state"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// Waits (bounded) until `name` is in `state`.
    pub(crate) fn until_state(&self, name: &str, state: &str) {
        let start = Instant::now();
        loop {
            let agents = self.agents();
            if agents.iter().any(|(n, s)| n == name && s == state) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{name} never became {state}: {agents:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let socket = self.path("run/panewise/daemon.sock");
        let Ok(runtime) = tokio::runtime::Runtime::new() else {
            return;
        };
        runtime.block_on(async {
            if let Ok(client) = Client::connect(&socket, "test").await {
                let _: Result<Ack, _> = client.call(Method::Shutdown, Empty {}).await;
            }
        });
    }
}

#[test]
fn the_dashboard_approves_denies_attaches_sends_and_reopens_with_every_session() {
    let home = Home::new();
    for args in [
        &[
            "new",
            "--name",
            "asker",
            "--approval",
            "ask",
            "print hello with the shell",
        ][..],
        &[
            "new",
            "--name",
            "refuser",
            "--approval",
            "ask",
            "print hello with the shell",
        ][..],
        &["new", "--name", "runner", "print hello with the shell"][..],
    ] {
        let output = home.panewise(args);
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    home.until_state("asker", "needs_input");
    home.until_state("refuser", "needs_input");
    let script = home.path("ui.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{work}'\nexport XDG_RUNTIME_DIR='{run}' XDG_DATA_HOME='{data}' \
             XDG_CONFIG_HOME='{config}' HOME='{home}'\nunset PANEWISE_LOG\n\
             '{panewise}' ui\necho $? > '{work}/first'\n'{panewise}'\necho $? > '{work}/second'\n\
             sleep 60\n",
            work = home.path("work").display(),
            run = home.path("run").display(),
            data = home.path("data").display(),
            config = home.path("config").display(),
            home = home.path("home").display(),
            panewise = env!("CARGO_BIN_EXE_panewise"),
        ),
    )
    .unwrap();
    let terminal = Terminal::start(&script, "ui");
    // The selection starts on the session that has waited longest: asker, started first.
    let screen = terminal.wait_for("y allow once · a allow for this session · n deny");
    assert!(screen.contains("◆ 2 needs input"), "{screen}");
    assert!(screen.contains("asker · mock · needs_input"), "{screen}");
    terminal.keys(&["y"]);
    // The answer moves the selection to the one still waiting, with no key: refuser.
    terminal.wait_for("refuser · mock · needs_input");
    home.until_state("asker", "done");
    terminal.wait_for("✓ asker ");
    terminal.keys(&["n"]);
    terminal.wait_for("deny, with a message (Enter: none):");
    terminal.line("not now");
    terminal.wait_for("answer denied by panewise ui");
    // Attach, send a follow-up, come back.
    terminal.keys(&["Enter"]);
    terminal.wait_for("Esc returns to the list");
    terminal.line("and once more");
    terminal.wait_for("prompt and once more");
    terminal.keys(&["Escape"]);
    terminal.wait_for("↑↓ select · Enter attach");
    // Interrupt one running its 30-second tool: the filter selects it, `i` stops the turn
    // (had the tool run to its end, the session would be done, never interrupted). It starts
    // only now, so the steps above, however slow, do not eat into its half minute.
    let output = home.panewise(&[
        "new",
        "--name",
        "sleeper",
        "--mock-scenario",
        "sleeping-tool",
        "wait, then say done",
    ]);
    assert!(output.status.success(), "{output:?}");
    terminal.wait_for("shell sleep 30; echo done");
    terminal.keys(&["/"]);
    terminal.line("sleeper");
    terminal.wait_for("sleeper · mock · working");
    terminal.keys(&["i"]);
    // `i` interrupts the turn: the session stays open for a prompt (`interrupted`, not the
    // `stopped` of an ended session).
    terminal.wait_for("sleeper · mock · interrupted");
    home.until_state("sleeper", "interrupted");
    terminal.keys(&["Escape"]);
    terminal.wait_for("↑↓ select · Enter attach");
    terminal.keys(&["q"]);
    assert_eq!(terminal.wait_for_line(&home.path("work/first")), "0\n");
    // `panewise` alone on a terminal opens it again, with every session.
    let screen = terminal.wait_for("── done");
    for name in ["asker", "refuser", "runner", "sleeper"] {
        assert!(screen.contains(name), "{name} missing:\n{screen}");
    }
    terminal.keys(&["q"]);
    assert_eq!(terminal.wait_for_line(&home.path("work/second")), "0\n");
    let names: Vec<String> = home.agents().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names.len(), 4, "{names:?}");
}

/// The README's first command: every state the demo promises is on the screen, and the
/// approval it waits for is answered with `y`.
#[test]
fn the_demo_shows_every_state_and_its_approval_is_answered_with_y() {
    let home = Home::new();
    let script = home.path("demo.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{work}'\nexport XDG_RUNTIME_DIR='{run}' XDG_DATA_HOME='{data}' \
             XDG_CONFIG_HOME='{config}' HOME='{home}'\nunset PANEWISE_LOG\n\
             '{panewise}' ui --demo\necho $? > '{work}/first'\nsleep 60\n",
            work = home.path("work").display(),
            run = home.path("run").display(),
            data = home.path("data").display(),
            config = home.path("config").display(),
            home = home.path("home").display(),
            panewise = env!("CARGO_BIN_EXE_panewise"),
        ),
    )
    .unwrap();
    let terminal = Terminal::start(&script, "demo");
    // The approval is selected, its keys shown; the slow tool runs; the rate limit failed.
    terminal.wait_for("y allow once · a allow for this session · n deny");
    terminal.wait_for("shell sleep 30; echo done");
    terminal.wait_for("failed: rate limited");
    // Each group as the demo settles (demo-stopped is idle until its stop has landed).
    let mut screen = String::new();
    for heading in [
        "── needs input (1)",
        "── working (1)",
        "── done (1)",
        "── idle (1)",
        "── failed / stopped / exited (2)",
    ] {
        screen = terminal.wait_for(heading);
    }
    assert!(screen.contains("demo-ask"), "{screen}");
    terminal.keys(&["y"]);
    let agents = || home.agents();
    let start = Instant::now();
    while !agents()
        .iter()
        .any(|(name, state)| name.starts_with("demo-ask") && state == "done")
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "demo-ask never finished after y: {:?}",
            agents()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    terminal.keys(&["q"]);
    assert_eq!(terminal.wait_for_line(&home.path("work/first")), "0\n");
    assert_eq!(home.agents().len(), 6);
}
