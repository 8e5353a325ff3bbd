//! No process outlives its session: `panewise run` on its own loop, signalled while the mock's
//! `shell` call sleeps, leaves nothing running in the tool's directory, and its log replays.
//! SIGTERM and SIGHUP end the session as a second Ctrl-C does (exit 128 + the signal, the log
//! closed by its checkpoint); after SIGKILL, the kernel and panewise's guard process kill
//! what it started, and the log replays up to the line being written.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use panewise_mock_server::{RunningServer, Scenario};

/// A fresh machine and a working directory (a repository of its own) whose `panewise.toml`
/// points the mock provider at `server`.
struct Session {
    dir: tempfile::TempDir,
    child: Child,
}

impl Session {
    fn start(server: &RunningServer) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "data", "config", "work/.git"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let work = dir.path().join("work");
        std::fs::write(
            work.join("panewise.toml"),
            format!("[providers.mock]\nbase_url = \"{}\"\n", server.base_url()),
        )
        .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_panewise"))
            .arg("run")
            .arg("--cwd")
            .arg(&work)
            .arg("--log")
            .arg(dir.path().join("session.jsonl"))
            .arg("run the tool")
            .current_dir(&work)
            .env("HOME", dir.path().join("home"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Session { dir, child }
    }

    fn work(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path().join("work")).unwrap()
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("session.jsonl")
    }

    fn signal(&self, signal: Signal) {
        kill(
            Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            signal,
        )
        .unwrap();
    }

    /// Waits (bounded) for panewise to exit.
    async fn exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "panewise did not exit");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The live (not zombie) processes whose working directory is `dir`, as (pid, name).
pub(crate) fn processes_in(dir: &Path) -> Vec<(i32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let zombie = rest.starts_with('Z') || rest.starts_with('X');
            (cwd == dir && !zombie).then(|| (pid, name.to_owned()))
        })
        .collect()
}

/// Waits (bounded) until `done` holds; false if it never did.
pub(crate) async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// `panewise replay LOG` and its exit status.
fn replay(log: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_panewise"))
        .arg("replay")
        .arg(log)
        .output()
        .unwrap()
}

struct SignalCase {
    signal: Signal,
    /// The exit code, or `None` when panewise is killed by the signal.
    exit_code: Option<i32>,
    /// Whether the log ends with its closing checkpoint.
    closed: bool,
}

const CASES: &[SignalCase] = &[
    SignalCase {
        signal: Signal::SIGTERM,
        exit_code: Some(143),
        closed: true,
    },
    SignalCase {
        signal: Signal::SIGHUP,
        exit_code: Some(129),
        closed: true,
    },
    SignalCase {
        signal: Signal::SIGKILL,
        exit_code: None,
        closed: false,
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signalled_session_leaves_no_process_of_its_tool_and_its_log_replays() {
    let server = crate::start(Scenario::SleepingTool).await;
    for case in CASES {
        let label = format!("{:?}", case.signal);
        let mut session = Session::start(&server);
        let work = session.work();
        // The tool's `sh` and its forked `sleep 30` run in the working directory.
        assert!(
            eventually(|| processes_in(&work).iter().any(|(_, name)| name == "sleep")).await,
            "{label}: the tool's sleep never started"
        );
        session.signal(case.signal);
        let status = session.exit().await;
        let stderr = {
            use std::io::Read;
            let mut text = String::new();
            if let Some(mut pipe) = session.child.stderr.take() {
                pipe.read_to_string(&mut text).unwrap();
            }
            text
        };
        match case.exit_code {
            Some(code) => assert_eq!(status.code(), Some(code), "{label}: {stderr}"),
            None => assert_eq!(status.signal(), Some(case.signal as i32), "{label}"),
        }
        assert!(
            eventually(|| processes_in(&work).is_empty()).await,
            "{label}: still running after panewise: {:?}",
            processes_in(&work)
        );
        let replayed = replay(&session.log());
        assert!(
            replayed.status.success(),
            "{label}: replay: {}",
            String::from_utf8_lossy(&replayed.stderr)
        );
        let text = std::fs::read_to_string(session.log()).unwrap();
        // The transcript's closing line follows the last checkpoint.
        let last = text
            .lines()
            .rfind(|line| !line.contains("\"transcript\""))
            .unwrap_or_default();
        assert_eq!(
            last.contains("\"checkpoint\""),
            case.closed,
            "{label}: the last line is {last}"
        );
        if case.closed {
            assert!(text.contains("\"type\":\"quit\""), "{label}: no quit line");
            assert!(
                stderr.contains(&format!("{}: ending the session", label)),
                "{label}: {stderr}"
            );
        }
    }
    server.shutdown().await;
}

/// A process the tool's command detached with `setsid -f` is killed when the command ends, and
/// the result the model gets names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_process_is_killed_with_the_tool_call_and_the_result_names_it() {
    let server = crate::start(Scenario::DetachingTool).await;
    let mut session = Session::start(&server);
    let work = session.work();
    let status = session.exit().await;
    server.shutdown().await;
    assert_eq!(status.code(), Some(0));
    assert!(
        eventually(|| processes_in(&work).is_empty()).await,
        "still running: {:?}",
        processes_in(&work)
    );
    let ledger = std::fs::read_to_string(panewise_host::agent_loop::ledger::ledger_path(
        &session.log(),
    ))
    .unwrap();
    assert!(
        ledger.contains("detached\\n[exit code 0]\\n[killed 1 process(es) it had left running outside its process group: "),
        "{ledger}"
    );
    assert!(replay(&session.log()).status.success());
}
