//! Remote supervisors over a real SSH server: Debian's `/usr/sbin/sshd` started by the test
//! on a free port of 127.0.0.1 with a throwaway host key and an authorised key of its own,
//! reached with `ssh -F <config of its own>` through `PANEWISE_SSH_COMMAND`. The "remote"
//! daemon is a second `panewise daemon` on this machine with its own runtime, data and
//! config directories, started on demand by `panewise daemon --stdio` at the far end of ssh.
//!
//! Every wait is for a condition under a deadline; none is a fixed sleep.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use panewise_api::{AgentState, HelloParams, HelloResult, ListParams, ListResult, Method};
use panewise_supervisor::Client;

use crate::daemon::{Daemon, DEADLINE};

/// The host name the tests give `--remote`: an alias of the client config.
pub(crate) const HOST: &str = "panewise-test";

/// A running sshd of the test's own, and the client config that reaches it.
pub(crate) struct Sshd {
    pub(crate) dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

fn run_ok(command: &mut Command) -> Output {
    let out = command.output().unwrap();
    assert!(out.status.success(), "{command:?}: {out:?}");
    out
}

impl Sshd {
    /// Keys, configs, then the server, once its port accepts connections.
    pub(crate) fn start() -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        for key in ["host_key", "user_key"] {
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-C", "panewise-test", "-f"])
                    .arg(path(key)),
            );
        }
        std::fs::copy(path("user_key.pub"), path("authorized_keys")).unwrap();
        let host_key = std::fs::read_to_string(path("host_key.pub")).unwrap();
        std::fs::write(path("known_hosts"), format!("{HOST} {host_key}")).unwrap();
        let user = String::from_utf8(run_ok(Command::new("id").arg("-un")).stdout).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::write(
            path("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nPidFile {pid}\n\
                 AuthorizedKeysFile {keys}\nStrictModes no\nUsePAM no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
                 AllowUsers {user}\nLogLevel VERBOSE\n",
                host = path("host_key").display(),
                pid = path("sshd.pid").display(),
                keys = path("authorized_keys").display(),
                user = user.trim(),
            ),
        )
        .unwrap();
        std::fs::write(
            path("ssh_config"),
            format!(
                "Host {HOST}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {key}\n  IdentitiesOnly yes\n  HostKeyAlias {HOST}\n  \
                 StrictHostKeyChecking yes\n  UserKnownHostsFile {known}\n  \
                 GlobalKnownHostsFile /dev/null\n  BatchMode yes\n  ConnectTimeout 5\n  \
                 LogLevel ERROR\n",
                user = user.trim(),
                key = path("user_key").display(),
                known = path("known_hosts").display(),
            ),
        )
        .unwrap();
        let mut sshd = Sshd {
            dir,
            port,
            child: None,
        };
        sshd.spawn();
        sshd
    }

    /// The server on the same port and keys again.
    pub(crate) fn spawn(&mut self) {
        // sshd run as root wants its privilege separation directory, which an init system
        // would make (`RuntimeDirectory=sshd`); a bare container has none.
        if nix::unistd::getuid().is_root() {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let log = std::fs::File::create(self.dir.path().join("sshd.log")).unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(self.dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("/usr/sbin/sshd runs (apt-get install openssh-server)");
        self.child = Some(child);
        let until = Instant::now() + DEADLINE;
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("sshd exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < until,
                "sshd did not listen: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// `PANEWISE_SSH_COMMAND` for this server.
    pub(crate) fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.dir.path().join("ssh_config").display())
    }

    /// Stops the server and cuts every connection it serves (each one a child of it).
    pub(crate) fn kill_all(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = i32::try_from(child.id()).unwrap();
        let connections = children_of(pid);
        let _ = child.kill();
        let _ = child.wait();
        for connection in connections {
            let _ = kill(Pid::from_raw(connection), Signal::SIGKILL);
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The pids whose parent is `parent`, from /proc.
fn children_of(parent: i32) -> Vec<i32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so read after its last `)`.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<i32>().ok());
        if ppid == Some(parent) {
            children.push(pid);
        }
    }
    children
}

/// The "remote" side: the directories its daemon uses, distinct from the local one's; the
/// daemon itself is started by `daemon --stdio`, and shut down when this goes.
pub(crate) struct RemoteSide {
    pub(crate) dir: tempfile::TempDir,
}

impl RemoteSide {
    pub(crate) fn new() -> RemoteSide {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["run", "data", "home", "config/panewise"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(
            dir.path().join("config/panewise/panewise.toml"),
            "[notify]\ndesktop = false\n",
        )
        .unwrap();
        RemoteSide { dir }
    }

    /// `[remote] remote_command`: this workspace's panewise in this side's directories.
    pub(crate) fn remote_command(&self) -> String {
        let at = |sub: &str| self.dir.path().join(sub).display().to_string();
        format!(
            "env XDG_RUNTIME_DIR={} XDG_DATA_HOME={} XDG_CONFIG_HOME={} HOME={} {}",
            at("run"),
            at("data"),
            at("config"),
            at("home"),
            env!("CARGO_BIN_EXE_panewise")
        )
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join("run/panewise/daemon.sock")
    }

    /// A client on the remote daemon's own socket (the test is on the same machine).
    pub(crate) async fn direct(&self, name: &str) -> Client {
        Client::connect(&self.socket(), name).await.unwrap()
    }
}

impl Drop for RemoteSide {
    fn drop(&mut self) {
        // The daemon `daemon --stdio` started outlives every connection by design: stopped
        // here by its pid, which it tells in `hello`.
        let socket = self.socket();
        let pid = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let client = Client::connect(&socket, "cleanup").await.ok()?;
                let hello: HelloResult = client
                    .call(
                        Method::Hello,
                        HelloParams {
                            api_version: panewise_api::API_VERSION,
                            client: None,
                        },
                    )
                    .await
                    .ok()?;
                Some(hello.pid)
            })
        })
        .join()
        .ok()
        .flatten();
        if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// A local daemon whose user file reaches `remote` through `sshd`.
pub(crate) async fn local_daemon(remote: &RemoteSide) -> Daemon {
    Daemon::start_with(Some(&format!(
        "[notify]\ndesktop = false\n\n[remote]\nremote_command = \"{}\"\n",
        remote.remote_command()
    )))
    .await
}

fn run(daemon: &Daemon, sshd: &Sshd, args: &[&str]) -> Output {
    daemon
        .command()
        .env("PANEWISE_SSH_COMMAND", sshd.ssh_command())
        .args(args)
        .output()
        .unwrap()
}

fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

/// Polls `remote`'s own socket until session `id` is in `state`.
async fn remote_state(remote: &RemoteSide, id: &str) -> AgentState {
    let client = remote.direct("check").await;
    let list: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
    list.sessions
        .iter()
        .find(|session| session.id == id)
        .map(|session| session.state)
        .expect("the remote daemon still lists the session")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_ssh_is_listed_answered_and_survives_a_cut_connection() {
    let mut sshd = Sshd::start();
    let remote = RemoteSide::new();
    let daemon = local_daemon(&remote).await;

    // Started on the remote host (its daemon started by `daemon --stdio` there), waiting
    // for an approval; and one on this machine.
    let far = run(
        &daemon,
        &sshd,
        &[
            "new",
            "--remote",
            HOST,
            "--name",
            "far",
            "--approval",
            "ask",
            "run the tool",
        ],
    );
    assert!(far.status.success(), "{far:?}\nsshd: {}", sshd.log());
    let far_key = last_line(&far);
    let far_id = far_key
        .strip_prefix(&format!("{HOST}:"))
        .unwrap_or_else(|| panic!("a remote id is HOST:ID: {far_key}"))
        .to_owned();
    assert!(
        remote.socket().exists(),
        "the remote daemon has its own socket"
    );
    let near = run(&daemon, &sshd, &["new", "--name", "near", "run the tool"]);
    assert!(near.status.success(), "{near:?}");
    let near_id = last_line(&near);

    let waited = run(
        &daemon,
        &sshd,
        &["wait", "--remote", HOST, &far_key, "--until", "needs-input"],
    );
    // Reaching the state waited for is success, remotely as locally.
    assert_eq!(waited.status.code(), Some(0), "{waited:?}");
    assert_eq!(
        String::from_utf8_lossy(&waited.stdout).trim(),
        "needs_input"
    );
    let waited = run(&daemon, &sshd, &["wait", &near_id, "--until", "done"]);
    assert_eq!(waited.status.code(), Some(0), "{waited:?}");

    // One list, both hosts.
    let listed = run(&daemon, &sshd, &["agents", "--remote", HOST, "--json"]);
    assert!(listed.status.success(), "{listed:?}");
    let entries = json_lines(&listed);
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[0]["host"], HOST, "needs_input first");
    assert_eq!(entries[0]["id"], far_id.as_str());
    assert_eq!(entries[0]["state"], "needs_input");
    assert_eq!(entries[0]["waiting_for"]["tool"], "shell");
    assert_eq!(entries[1]["host"], "local");
    assert_eq!(entries[1]["id"], near_id.as_str());
    let table = run(&daemon, &sshd, &["agents", "--remote", HOST]);
    let text = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(text.starts_with("HOST "), "{text}");
    let row_of = |name: &str| {
        text.lines()
            .find(|line| line.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row {name}: {text}"))
            .to_owned()
    };
    assert!(row_of("far").starts_with(HOST), "{text}");
    assert!(row_of("far").contains("needs_input"), "{text}");
    assert!(row_of("near").starts_with("local"), "{text}");

    // The approval, by name alone: found on the one host that has it.
    let approved = run(&daemon, &sshd, &["approve", "--remote", HOST, "far"]);
    assert!(approved.status.success(), "{approved:?}");
    let done = run(
        &daemon,
        &sshd,
        &["wait", "--remote", HOST, &far_key, "--until", "done"],
    );
    assert_eq!(done.status.code(), Some(0), "{done:?}");

    // A connection held open (as the dashboard holds one), then cut with the server.
    let held = Client::over_command(
        &[
            "ssh".to_owned(),
            "-F".to_owned(),
            sshd.dir.path().join("ssh_config").display().to_string(),
            HOST.to_owned(),
            format!("{} daemon --stdio", remote.remote_command()),
        ],
        HOST,
        "held",
        DEADLINE,
    )
    .await
    .unwrap();
    let _: ListResult = held
        .call(Method::SubscribeList, ListParams {})
        .await
        .unwrap();
    sshd.kill_all();
    let closed = tokio::time::timeout(DEADLINE, async {
        while held.next_notification().await.is_some() {}
    })
    .await;
    assert!(closed.is_ok(), "the cut connection is seen as closed");

    // Unreachable now: said so, the local rows still listed, and the session not stopped.
    let cut = run(&daemon, &sshd, &["agents", "--remote", HOST]);
    assert_eq!(cut.status.code(), Some(1), "{cut:?}");
    let text = String::from_utf8_lossy(&cut.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&cut.stderr).into_owned();
    assert!(
        text.lines()
            .any(|line| line.starts_with(HOST) && line.contains("unreachable")),
        "{text}"
    );
    assert!(text.contains("near"), "{text}");
    assert!(!text.contains("stopped"), "{text}");
    assert!(stderr.contains(&format!("{HOST}: unreachable")), "{stderr}");
    assert_eq!(remote_state(&remote, &far_id).await, AgentState::Done);
    let approve = run(&daemon, &sshd, &["approve", &far_key, "--remote", HOST]);
    assert_eq!(approve.status.code(), Some(1), "{approve:?}");
    assert!(
        String::from_utf8_lossy(&approve.stderr).contains("unreachable"),
        "{approve:?}"
    );

    // The server back: the same session, as it was.
    sshd.spawn();
    let back = run(&daemon, &sshd, &["agents", "--remote", HOST, "--json"]);
    assert!(back.status.success(), "{back:?}");
    let entries = json_lines(&back);
    let far_entry = entries
        .iter()
        .find(|entry| entry["host"] == HOST)
        .expect("the remote session listed again");
    assert_eq!(far_entry["id"], far_id.as_str());
    assert_eq!(far_entry["state"], "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_host_is_one_error_line_never_a_hang() {
    let remote = RemoteSide::new();
    let daemon = local_daemon(&remote).await;
    // A port nothing listens on: ssh is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let out = daemon
        .command()
        .env(
            "PANEWISE_SSH_COMMAND",
            format!("ssh -o BatchMode=yes -o ConnectTimeout=5 -p {port}"),
        )
        .args(["approve", "nowhere:s1", "--remote", "nowhere"])
        .output()
        .unwrap();
    assert!(started.elapsed() < DEADLINE);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("panewise: nowhere: unreachable"),
        "{stderr}"
    );
    // An ssh command that is not a program at all.
    let out = daemon
        .command()
        .env("PANEWISE_SSH_COMMAND", "/nonexistent/ssh")
        .args(["agents", "--remote", "nowhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot start /nonexistent/ssh"), "{stderr}");
    // A host that ssh would read as an option is refused before anything runs.
    let out = daemon
        .command()
        .args(["agents", "--remote", "-oProxyCommand=touch /tmp/x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `daemon --stdio` alone: the API on its standard streams, the daemon started on demand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_stdio_speaks_the_api_on_its_standard_streams() {
    let remote = RemoteSide::new();
    let argv: Vec<String> = ["sh", "-c"]
        .into_iter()
        .map(str::to_owned)
        .chain([format!("{} daemon --stdio", remote.remote_command())])
        .collect();
    let client = Client::over_command(&argv, "stdio", "stdio-test", DEADLINE)
        .await
        .unwrap();
    let list: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
    assert!(list.sessions.is_empty());
    let bad = client.send_line(b"not json\n").await;
    assert!(bad.is_ok());
    let list: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
    assert!(
        list.sessions.is_empty(),
        "the connection goes on after a bad line"
    );
    assert!(Path::new(&remote.socket()).exists());
}
