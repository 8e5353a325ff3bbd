//! The end-to-end case of remote supervisors (`ssh-dashboard`): a real `sshd` (Debian's
//! openssh-server) started on a free port of 127.0.0.1 with a throwaway host key and an
//! authorised key of the case's own; a local daemon and a "remote" one (this machine, its own
//! runtime, data and config directories, started by `panewise daemon --stdio` at the far end
//! of ssh) each host a mock session; `panewise ui --remote HOST` in tmux lists both with their
//! hosts (a host column), peeks at the remote one's question, and `y` answers it: the remote
//! session runs its tool and ends done, and its log (read on the "remote" side) replays with
//! the approval answered by the dashboard through the API.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::e2e_dashboard::{list_row, peek_shows, transcript_entries};
use crate::e2e_support::{processes_with_env, replay, text, within};
use crate::e2e_terminal::Terminal;

/// The case's name (`cargo xtask e2e ssh`).
pub const NAME: &str = "ssh-dashboard";

/// The host `--remote` names: an alias of the case's ssh config (short enough for the
/// dashboard's host column, 11 characters).
const HOST: &str = "e2e-remote";

/// How long any state may take to come (two cores, everything else in sequence).
const DEADLINE: Duration = Duration::from_secs(120);

/// A running sshd of the case's own.
struct Sshd {
    child: Child,
    config: PathBuf,
    dir: PathBuf,
}

impl Sshd {
    /// What sshd wrote (`-e`: its log on stderr).
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn checked(command: &mut Command) -> Result<Output> {
    let out = command
        .output()
        .with_context(|| format!("cannot run {command:?}"))?;
    ensure!(out.status.success(), "{command:?}: {}", text(&out));
    Ok(out)
}

/// Keys, the server's config and the client's, then the server, once it listens.
fn start_sshd(dir: &Path) -> Result<Sshd> {
    std::fs::create_dir_all(dir)?;
    for key in ["host_key", "user_key"] {
        checked(
            Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", NAME, "-f"])
                .arg(dir.join(key)),
        )?;
    }
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys"))?;
    let host_key = std::fs::read_to_string(dir.join("host_key.pub"))?;
    std::fs::write(dir.join("known_hosts"), format!("{HOST} {host_key}"))?;
    let user = String::from_utf8(checked(Command::new("id").arg("-un"))?.stdout)?;
    let user = user.trim();
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    std::fs::write(
        dir.join("sshd_config"),
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\n\
             StrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             PermitRootLogin prohibit-password\nAllowUsers {user}\n",
            dir.join("host_key").display(),
            dir.join("sshd.pid").display(),
            dir.join("authorized_keys").display(),
        ),
    )?;
    let config = dir.join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "Host {HOST}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {}\n  \
             IdentitiesOnly yes\n  HostKeyAlias {HOST}\n  StrictHostKeyChecking yes\n  \
             UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  BatchMode yes\n  \
             ConnectTimeout 5\n  LogLevel ERROR\n",
            dir.join("user_key").display(),
            dir.join("known_hosts").display(),
        ),
    )?;
    // Run as root, sshd wants its privilege separation directory (an init system makes it).
    if user == "root" {
        let _ = std::fs::create_dir_all("/run/sshd");
    }
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sshd.log"))?)
        .spawn()
        .context("cannot run /usr/sbin/sshd (apt-get install openssh-server)")?;
    let mut sshd = Sshd {
        child,
        config,
        dir: dir.to_owned(),
    };
    let until = Instant::now() + DEADLINE;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        let log = || std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
        if let Some(status) = sshd.child.try_wait()? {
            bail!("sshd exited ({status}): {}", log());
        }
        ensure!(Instant::now() < until, "sshd did not listen: {}", log());
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(sshd)
}

/// The environment of one side's panewise: its own runtime, data, config and home.
fn side_env(side: &Path) -> Vec<(String, String)> {
    [
        "XDG_RUNTIME_DIR:run",
        "XDG_DATA_HOME:data",
        "XDG_CONFIG_HOME:config",
        "HOME:home",
    ]
    .into_iter()
    .filter_map(|pair| pair.split_once(':'))
    .map(|(key, sub)| (key.to_owned(), side.join(sub).display().to_string()))
    .collect()
}

/// Stops every daemon the case started (by their runtime directories), whatever happened.
struct Daemons(Vec<PathBuf>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for side in &self.0 {
            let entry = format!("XDG_RUNTIME_DIR={}", side.join("run").display());
            for (pid, name) in processes_with_env(&entry) {
                if name == "panewise" {
                    let _ = Command::new("kill").arg(pid.to_string()).status();
                }
            }
        }
    }
}

/// Runs the case in `dir`.
pub fn run_case(panewise: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let local = dir.join("local");
    let remote = dir.join("remote");
    for side in [&local, &remote] {
        for sub in ["run", "data", "home", "config/panewise", "work"] {
            std::fs::create_dir_all(side.join(sub))?;
        }
    }
    let _daemons = Daemons(vec![local.clone(), remote.clone()]);
    let sshd = start_sshd(&dir.join("sshd"))?;
    let remote_command = std::iter::once("env".to_owned())
        .chain(
            side_env(&remote)
                .into_iter()
                .map(|(k, v)| format!("{k}={v}")),
        )
        .chain([panewise.display().to_string()])
        .collect::<Vec<_>>()
        .join(" ");
    std::fs::write(
        remote.join("config/panewise/panewise.toml"),
        "[notify]\ndesktop = false\n",
    )?;
    std::fs::write(
        local.join("config/panewise/panewise.toml"),
        format!("[notify]\ndesktop = false\n\n[remote]\nremote_command = \"{remote_command}\"\n"),
    )?;
    let mut env = side_env(&local);
    env.push((
        "PANEWISE_SSH_COMMAND".to_owned(),
        format!("ssh -F {}", sshd.config.display()),
    ));
    let command = |args: &[&str]| {
        let mut command = Command::new(panewise);
        command
            .args(args)
            .current_dir(local.join("work"))
            .envs(env.iter().map(|(key, value)| (key, value)))
            .env_remove("PANEWISE_LOG")
            .stdin(Stdio::null());
        command
    };
    let run = |args: &[&str]| -> Result<Output> { within(command(args), DEADLINE) };
    let near = run(&["new", "--name", "near", "run the tool"])?;
    ensure!(near.status.success(), "new (local): {}", text(&near));
    let far = run(&[
        "new",
        "--remote",
        HOST,
        "--name",
        "far",
        "--approval",
        "ask",
        "run the tool",
    ])?;
    ensure!(
        far.status.success(),
        "new --remote: {}\nsshd: {}",
        text(&far),
        sshd.log()
    );
    let asked = run(&["wait", "--remote", HOST, "far", "--until", "needs-input"])?;
    ensure!(
        asked.status.code() == Some(0),
        "far did not ask: {}",
        text(&asked)
    );
    let done = run(&["wait", "near", "--until", "done"])?;
    ensure!(
        done.status.code() == Some(0),
        "near did not finish: {}",
        text(&done)
    );
    let far_entry = agent(&run, "far")?;
    let far_log = far_entry["log"]
        .as_str()
        .context("far's entry names no log")?
        .to_owned();
    ensure!(
        far_log.starts_with(&remote.display().to_string()),
        "far's log is not on the remote side: {far_log}"
    );

    let terminal = Terminal::start(&command(&["ui", "--remote", HOST]), dir, NAME)?;
    // Both hosts' lists in one: this machine's arrives first, the host's over ssh later,
    // and the selection (no key pressed yet) moves to the session that waits.
    let screen = terminal.wait_until("far waiting, peeked, beside near", |screen| {
        screen.contains("y allow once")
            && list_row(screen, "far").is_some()
            && list_row(screen, "near").is_some()
    })?;
    let far_row = list_row(&screen, "far").context("no row of far")?;
    ensure!(
        far_row.starts_with('◆') && far_row.contains(HOST) && far_row.contains("approve shell"),
        "far's row is not waiting on {HOST}: {far_row}\n{screen}"
    );
    let near_row = list_row(&screen, "near").context("no row of near")?;
    ensure!(
        near_row.starts_with('✓') && near_row.contains("local"),
        "near's row is not done on local: {near_row}\n{screen}"
    );
    for shown in [
        format!("far · {HOST} · mock · needs_input"),
        "wants to run shell:".to_owned(),
        "echo hello".to_owned(),
    ] {
        ensure!(
            screen.contains(&shown),
            "the peek does not show {shown:?}:\n{screen}"
        );
    }
    terminal.type_keys("y")?;
    let screen = terminal.wait_until("far done, allowed by the dashboard", |screen| {
        list_row(screen, "far").is_some_and(|row| row.starts_with('✓'))
            && screen.contains("allowed by panewise ui")
    })?;
    ensure!(
        peek_shows(&screen, "ok (exit 0): hello"),
        "the peek does not show the tool's output:\n{screen}"
    );
    let far_entry = agent(&run, "far")?;
    ensure!(
        far_entry["state"] == "done" && far_entry["host"] == HOST,
        "far after y: {far_entry}"
    );
    // The remote log: the approval answered by the dashboard's client over ssh, the shell
    // command run, and the log replays to its closing state without a failure.
    let entries = transcript_entries(Path::new(&far_log))?;
    ensure!(
        entries
            .iter()
            .any(|entry| entry["kind"] == "approval_answered"
                && entry["approved"] == true
                && entry["by"] == "api"
                && entry["client"] == "panewise ui"),
        "the remote log has no approval answered by the dashboard: {entries:?}"
    );
    ensure!(
        entries.iter().any(|entry| entry["kind"] == "tool_output"
            && entry["status"] == "success"
            && entry["output"]
                .as_str()
                .is_some_and(|out| out.contains("hello"))),
        "the remote log has no successful shell output: {entries:?}"
    );
    let state = replay(panewise, Path::new(&far_log))?;
    ensure!(
        state["failure"].is_null(),
        "far failed: {}",
        state["failure"]
    );
    ensure!(
        state["turns_completed"] == 1,
        "far's turns completed: {}",
        state["turns_completed"]
    );
    terminal.type_keys("q")?;
    let (code, screen) = terminal.wait_exit()?;
    ensure!(code == 0, "ui exited {code}:\n{screen}");
    drop(sshd);
    Ok(())
}

/// `agents --remote HOST --json`'s entry of the session named `name`.
fn agent(run: &dyn Fn(&[&str]) -> Result<Output>, name: &str) -> Result<Value> {
    let listed = run(&["agents", "--remote", HOST, "--json"])?;
    ensure!(listed.status.success(), "agents: {}", text(&listed));
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|entry| entry["name"] == name)
        .with_context(|| format!("agents lists no {name}: {}", text(&listed)))
}
