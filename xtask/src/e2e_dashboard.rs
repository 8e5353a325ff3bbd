//! The end-to-end cases of the dashboard (`dashboard-*`): `panewise ui` in a real terminal
//! (tmux), the daemon it starts on demand hosting one published CLI against the mock on
//! 127.0.0.1, and everything a person does done with keys on the dashboard: `c` opens the
//! new-session form, the provider, working directory and `ask` approval are typed into it,
//! Enter starts the session; its row then shows it waiting with the tool and its argument, the
//! peek shows the question, and `y` answers it. The case checks the screen (the row, the peek,
//! the answer in the transcript, the row done), the file the tool wrote, and the session's log:
//! the approval answered by the dashboard's API client, the tool's success, the replay, the
//! header and the token totals.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

pub(crate) use crate::e2e_support::list_row;
use crate::e2e_support::{
    check_header, check_totals, list_part, processes_with_env, replay, start_mock, text, Cli,
    Place, WRITE,
};
use crate::e2e_terminal::Terminal;

/// One CLI started and answered from the dashboard.
pub struct DashboardCase {
    /// The CLI.
    pub cli: Cli,
    /// The case's name (`cargo xtask e2e dashboard`).
    pub name: &'static str,
    /// The tool the CLI asks about, as the dashboard names it.
    tool: &'static str,
    /// The stream format the session log's header names.
    stream_format: &'static str,
}

/// The cases: the mock's `file-write` in each CLI (Claude Code's `Write`, Codex's shell
/// command writing the file, Gemini CLI's `write_file`, an `edit` over ACP), so the approved tool leaves a file.
pub const CASES: &[DashboardCase] = &[
    DashboardCase {
        cli: Cli::Claude,
        name: "dashboard-claude-code",
        tool: "Write",
        stream_format: "claude-code",
    },
    DashboardCase {
        cli: Cli::Codex,
        name: "dashboard-codex",
        tool: "shell",
        stream_format: "codex-app-server",
    },
    DashboardCase {
        cli: Cli::Gemini,
        name: "dashboard-gemini-cli",
        // ACP names a tool call by its kind.
        tool: "edit",
        stream_format: "acp",
    },
];

/// How long a `panewise` command of the case may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// The file the mock's `file-write` has the agent write.
const WRITTEN: &str = "hello.txt";

/// Stops every daemon whose runtime directory is one of these, whatever happened: the
/// daemon `panewise ui` started outlives the dashboard by design.
pub(crate) struct StopDaemons(pub(crate) Vec<PathBuf>);

impl Drop for StopDaemons {
    fn drop(&mut self) {
        for run in &self.0 {
            let entry = format!("XDG_RUNTIME_DIR={}", run.display());
            for (pid, name) in processes_with_env(&entry) {
                if name == "panewise" {
                    let _ = Command::new("kill").arg(pid.to_string()).status();
                }
            }
        }
    }
}

/// The peek's text (what is inside its border), its lines joined by `glue`.
fn peek_text(screen: &str, glue: &str) -> String {
    screen
        .lines()
        .filter_map(|line| {
            let (_, inside) = line.split_once('│')?;
            Some(
                inside
                    .rsplit_once('│')
                    .map_or(inside, |(inside, _)| inside)
                    .trim(),
            )
        })
        .collect::<Vec<_>>()
        .join(glue)
}

/// Whether the peek shows `needle`, on one line or wrapped over several (a long path is cut
/// anywhere, words at spaces).
pub(crate) fn peek_shows(screen: &str, needle: &str) -> bool {
    peek_text(screen, " ").contains(needle) || peek_text(screen, "").contains(needle)
}

/// The transcript entries of the log at `log`.
pub(crate) fn transcript_entries(log: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(log).with_context(|| format!("{}", log.display()))?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|line| line.get("transcript").cloned())
        .collect())
}

/// Runs `case` with the CLI at `program` (at `version`) in `dir`.
pub fn run_case(
    panewise: &Path,
    program: &Path,
    version: &str,
    dir: &Path,
    case: &DashboardCase,
) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let place = Place::new(dir)?;
    let daemons = StopDaemons(vec![dir.join("run")]);
    let mock = start_mock(panewise, "file-write", dir)?;
    let place = place.with_cli(case.cli, program, &mock.url)?;
    let command = |args: &[&str]| place.command(panewise, args);
    let run = |args: &[&str]| place.run(panewise, args);

    // The dashboard, on a terminal; no daemon runs yet, so it starts one.
    let terminal = Terminal::start(&command(&["ui"]), dir, case.name)?;
    terminal.wait_for("c new")?;
    let screen = terminal.screen()?;
    ensure!(
        screen.contains("no session selected"),
        "the case's daemon already hosts a session:\n{screen}"
    );

    // The new-session form: the prompt has the focus; up twice is the provider, down three
    // times from there the working directory, twice more the approval.
    let work = &place.work;
    let work_text = work.display().to_string();
    terminal.type_keys("c")?;
    terminal.wait_for(" new session ")?;
    terminal.type_keys(WRITE)?;
    let clear = |terminal: &Terminal| -> Result<()> {
        for _ in 0..24 {
            terminal.press("BSpace")?;
        }
        Ok(())
    };
    for _ in 0..2 {
        terminal.press("Up")?;
    }
    clear(&terminal)?;
    terminal.type_keys(case.cli.provider())?;
    for _ in 0..3 {
        terminal.press("Down")?;
    }
    terminal.type_keys(&work_text)?;
    for _ in 0..2 {
        terminal.press("Down")?;
    }
    clear(&terminal)?;
    terminal.type_keys("ask")?;
    let form = terminal.wait_until("the form filled in", |screen| {
        let field = |label: &str, value: &str| {
            screen
                .lines()
                .any(|line| line.contains(&format!("{label} {value}")))
        };
        field("provider", case.cli.provider())
            && field("approval", "ask")
            && field("prompt", "Create a file hello.txt")
    })?;
    ensure!(
        form.contains(&format!("cwd {}", &work_text[..work_text.len().min(60)])),
        "the form's cwd is not the case's directory:\n{form}"
    );
    terminal.press("Enter")?;

    // The session shows up waiting, selected (no key moved the selection), and peeked.
    let screen = terminal.wait_until("a session waiting, its question peeked", |screen| {
        screen.contains("y allow once")
            && screen
                .lines()
                .map(list_part)
                .any(|row| row.starts_with('◆'))
    })?;
    let entry = only_session(&run)?;
    let name = entry["name"].as_str().context("no name")?.to_owned();
    let log = PathBuf::from(entry["log"].as_str().context("no log")?);
    ensure!(
        entry["state"] == "needs_input"
            && entry["provider"] == case.cli.provider()
            && entry["waiting_for"]["tool"] == case.tool
            && entry["cwd"] == work_text.as_str(),
        "the session started from the form: {entry}"
    );
    let row = list_row(&screen, &name).with_context(|| format!("no row of {name}:\n{screen}"))?;
    ensure!(
        row.starts_with('◆') && row.contains(&format!("approve {} ", case.tool)),
        "the row does not show the approval of {}: {row}\n{screen}",
        case.tool
    );
    let title = format!("{name} · {} · needs_input", case.cli.provider());
    ensure!(
        screen.contains(&title),
        "the peek's title is not {title:?}:\n{screen}"
    );
    for shown in [format!("wants to run {}:", case.tool), WRITTEN.to_owned()] {
        ensure!(
            peek_shows(&screen, &shown),
            "the peek does not show {shown:?}:\n{screen}"
        );
    }
    ensure!(
        !work.join(WRITTEN).exists(),
        "{WRITTEN} was written before the approval"
    );

    // `y`: the tool runs, the answer is in the transcript, the row ends done.
    terminal.type_keys("y")?;
    let screen = terminal.wait_until("the session done, allowed by the dashboard", |screen| {
        list_row(screen, &name).is_some_and(|row| row.starts_with('✓'))
            && peek_shows(screen, "allowed by panewise ui")
    })?;
    ensure!(
        screen.contains(&format!("{name} · {} · done", case.cli.provider())),
        "the peek does not show the session done:\n{screen}"
    );
    let written = std::fs::read_to_string(work.join(WRITTEN))
        .with_context(|| format!("the approved tool did not write {WRITTEN}"))?;
    ensure!(written.contains("hello"), "{WRITTEN} holds {written:?}");
    let entry = only_session(&run)?;
    ensure!(entry["state"] == "done", "after y: {entry}");
    // Issue 42: the dashboard, `agents`, `sessions` and `replay` name it alike.
    let id = entry["id"].as_str().context("no id")?;
    crate::e2e_views::check(&run, case.cli, id, &log.display().to_string())?;
    // The dashboard draws the summary the daemon pushed: wait for it, then say what differs.
    let screen = terminal
        .wait_until("the dashboard naming it as agents does", |screen| {
            crate::e2e_views::check_dashboard(screen, &name, &entry).is_ok()
        })
        .or_else(|_| terminal.screen())?;
    crate::e2e_views::check_dashboard(&screen, &name, &entry)?;

    // The log: the approval answered by the dashboard's client, the tool's success, and a
    // replay to the recorded state with one turn and no failure.
    let entries = transcript_entries(&log)?;
    ensure!(
        entries
            .iter()
            .any(|entry| entry["kind"] == "approval_answered"
                && entry["approved"] == true
                && entry["by"] == "api"
                && entry["client"] == "panewise ui"),
        "the log has no approval answered by the dashboard: {entries:?}"
    );
    ensure!(
        entries
            .iter()
            .any(|entry| entry["kind"] == "tool_output" && entry["status"] == "success"),
        "the log has no successful tool output: {entries:?}"
    );
    check_header(&log, case.stream_format, version, work)?;
    let state = replay(panewise, &log)?;
    ensure!(state["failure"].is_null(), "failure: {}", state["failure"]);
    ensure!(
        state["turns_completed"] == 1,
        "turns completed: {}",
        state["turns_completed"]
    );
    if case.stream_format != "acp" {
        check_totals(&state, &mock.log)?;
    }

    // `q` leaves the agents running; the case then stops its daemon and waits until no
    // process of the case (its HOME) is left.
    terminal.type_keys("q")?;
    let (code, screen) = terminal.wait_exit()?;
    ensure!(code == 0, "ui exited {code}:\n{screen}");
    let stopped = run(&["stop", &name])?;
    ensure!(stopped.status.success(), "stop: {}", text(&stopped));
    drop(daemons);
    let home_entry = format!("HOME={}", place.home.display());
    let until = Instant::now() + DEADLINE;
    while !processes_with_env(&home_entry).is_empty() {
        if Instant::now() > until {
            bail!(
                "left running after the daemon stopped: {:?}",
                processes_with_env(&home_entry)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(mock);
    Ok(())
}

/// `agents --json`'s one entry: the case's daemon hosts the session the form started alone.
fn only_session(run: &dyn Fn(&[&str]) -> Result<Output>) -> Result<Value> {
    let listed = run(&["agents", "--json"])?;
    ensure!(listed.status.success(), "agents: {}", text(&listed));
    let entries: Vec<Value> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    match entries.as_slice() {
        [entry] => Ok(entry.clone()),
        _ => bail!("the daemon hosts {} sessions: {entries:?}", entries.len()),
    }
}

/// The case of answering many in a row (issue 28, finding 5): three sessions of the daemon's
/// offline `mock` provider asking to run a shell command under `--approval ask`, answered in
/// the dashboard by `y`, `y`, `y` with no key moving the selection: after each answer it
/// moves to the session that has waited longest. All three end done.
pub const ANSWERS_NAME: &str = "dashboard-answers-in-a-row";

/// The sessions of [`ANSWERS_NAME`].
const ASKERS: [&str; 3] = ["asker-1", "asker-2", "asker-3"];

/// Runs [`ANSWERS_NAME`] in `dir`.
pub fn answers_case(panewise: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let place = Place::new(dir)?;
    let daemons = StopDaemons(vec![dir.join("run")]);
    let command = |args: &[&str]| place.command(panewise, args);
    let run = |args: &[&str]| place.run(panewise, args);
    let states = || -> Result<Vec<(String, String)>> {
        let listed = run(&["agents", "--json"])?;
        ensure!(listed.status.success(), "agents: {}", text(&listed));
        String::from_utf8_lossy(&listed.stdout)
            .lines()
            .map(|line| {
                let entry: Value = serde_json::from_str(line)?;
                Ok((
                    entry["name"].as_str().unwrap_or_default().to_owned(),
                    entry["state"].as_str().unwrap_or_default().to_owned(),
                ))
            })
            .collect()
    };
    let waiting_rows = |screen: &str| {
        ASKERS
            .iter()
            .filter(|name| list_row(screen, name).is_some_and(|row| row.starts_with('◆')))
            .count()
    };

    // The dashboard first (it starts the daemon), then three sessions that ask.
    let terminal = Terminal::start(&command(&["ui"]), dir, ANSWERS_NAME)?;
    terminal.wait_for("c new")?;
    for name in ASKERS {
        let created = run(&[
            "new",
            "--provider",
            "mock",
            "--approval",
            "ask",
            "--name",
            name,
            "print hello with the shell",
        ])?;
        ensure!(created.status.success(), "new {name}: {}", text(&created));
    }
    terminal.wait_until("three sessions waiting", |screen| waiting_rows(screen) == 3)?;
    let listed = states()?;
    ensure!(
        listed.len() == 3 && listed.iter().all(|(_, state)| state == "needs_input"),
        "before the answers: {listed:?}"
    );

    // `y` three times, each once the one before was taken: never an arrow, a click or `j`.
    for left in (0..3).rev() {
        terminal.type_keys("y")?;
        let screen = terminal.wait_until(&format!("{left} sessions left waiting"), |screen| {
            waiting_rows(screen) == left
        })?;
        ensure!(
            !screen.contains("waits for nothing"),
            "a y answered nothing with {} waiting:\n{screen}",
            left + 1
        );
    }
    let screen = terminal.wait_until("all three done", |screen| {
        ASKERS
            .iter()
            .all(|name| list_row(screen, name).is_some_and(|row| row.starts_with('✓')))
    })?;
    let until = Instant::now() + DEADLINE;
    loop {
        let listed = states()?;
        if listed.len() == 3 && listed.iter().all(|(_, state)| state == "done") {
            break;
        }
        ensure!(
            Instant::now() < until,
            "not all done after y, y, y: {listed:?}\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A fourth `y` answers nothing, and the footer says why.
    terminal.type_keys("y")?;
    terminal.wait_for("waits for nothing")?;

    terminal.type_keys("q")?;
    let (code, screen) = terminal.wait_exit()?;
    ensure!(code == 0, "ui exited {code}:\n{screen}");
    drop(daemons);
    Ok(())
}
