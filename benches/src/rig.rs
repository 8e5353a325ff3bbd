//! The rig of the load runs against the real `panewise` binary (`daemon`, `dashboard`,
//! `remote`): the daemon in a directory of its own, a JSON-RPC connection to it (its socket, or
//! `panewise daemon --stdio` at the far end of a child process such as `ssh`), a throwaway
//! `sshd` on 127.0.0.1, and the process figures (CPU, peak RSS) read from `/proc`.
//!
//! A load run prints what failed and returns rather than panicking: these are measurements,
//! not tests, and a machine without `sshd` or without the release binary still runs the rest.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// One load run asked for on the command line as `SESSIONS:RATE:SECONDS`: so many agents, each
/// writing `rate` lines a second for `seconds`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadRun {
    /// Agents (sessions) at once.
    pub sessions: usize,
    /// Lines per second from each agent.
    pub rate: u64,
    /// How long each agent writes.
    pub seconds: u64,
}

/// The load runs a bench binary was asked for: every `SESSIONS:RATE:SECONDS` argument, else
/// `full` under `cargo bench` (`--bench`), else `quick` — `cargo test --all-targets` runs the
/// bench targets without `--bench`, and one short run shows the target still works. A malformed
/// spec is reported and skipped.
pub fn load_runs(bench: &str, quick: &[&str], full: &[&str]) -> Vec<LoadRun> {
    let asked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| arg.contains(':'))
        .collect();
    let benching = std::env::args().any(|arg| arg == "--bench");
    let specs = match (asked.is_empty(), benching) {
        (false, _) => asked,
        (true, false) => quick.iter().map(ToString::to_string).collect(),
        (true, true) => full.iter().map(ToString::to_string).collect(),
    };
    specs
        .iter()
        .filter_map(|spec| {
            let run = parse_load_run(spec);
            if run.is_none() {
                eprintln!("{bench} bench: expected SESSIONS:RATE:SECONDS, got {spec}");
            }
            run
        })
        .collect()
}

fn parse_load_run(spec: &str) -> Option<LoadRun> {
    let mut parts = spec.split(':').map(str::parse::<u64>);
    let (Some(Ok(sessions)), Some(Ok(rate)), Some(Ok(seconds)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some(LoadRun {
        sessions: usize::try_from(sessions).ok()?,
        rate,
        seconds,
    })
}

/// A child process that is killed and reaped when this value is dropped, however the run that
/// started it ends (an early return included), so no process outlives its run.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The write times the fake agents (`fake_claude`) recorded in each of `cwds`, `lines` of
/// them each. An agent writes its file just after its last line, so a reader that has just
/// received that line waits for the file (up to 10 s); an agent whose file never filled gives
/// what it holds, and the run counts those lines as not measured.
pub fn agent_write_times(cwds: &[PathBuf], lines: u64) -> Vec<Vec<u128>> {
    let read = |cwd: &PathBuf| -> Vec<u128> {
        std::fs::read_to_string(cwd.join("fake-claude.times"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.parse().ok())
            .collect()
    };
    let whole = usize::try_from(lines).unwrap_or(usize::MAX);
    let _ = wait_until(10, || cwds.iter().all(|cwd| read(cwd).len() >= whole));
    cwds.iter().map(read).collect()
}

/// Nanoseconds since the Unix epoch: the clock the fake agents stamp their writes with, so a
/// reader in another process can take the difference.
pub fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

/// User plus system CPU time of process `pid`, in seconds (0 when it cannot be read).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // After `(comm)`: utime and stime are fields 14 and 15 of the whole line.
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Peak resident set size of process `pid` in KiB (`VmHWM`; 0 when it cannot be read).
pub fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The value at `fraction` (0..=1) of `sorted`, nearest rank; 0 for no values.
pub fn percentile(sorted: &[u64], fraction: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// `p50 …, p99 …, max …` of `sorted`, in `unit`.
pub fn spread(sorted: &[u64], unit: &str) -> String {
    format!(
        "p50 {} {unit}, p99 {} {unit}, max {} {unit}",
        percentile(sorted, 0.50),
        percentile(sorted, 0.99),
        sorted.last().copied().unwrap_or(0)
    )
}

/// The `panewise` binary: `PANEWISE_BIN`, else the one in the profile directory of the running
/// bench (`target/<profile>/deps/<bench>-<hash>` → `target/<profile>/panewise`).
pub fn panewise_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PANEWISE_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let candidate = exe.parent()?.parent()?.join("panewise");
    candidate.exists().then_some(candidate)
}

/// The directories of one daemon under `dir`, given to every process of it.
pub fn daemon_environment(command: &mut Command, dir: &Path) {
    command
        .current_dir(dir.join("work"))
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("HOME", dir.join("home"))
        .env_remove("PANEWISE_LOG");
}

/// The daemon's socket for a daemon whose directories are under `dir`.
pub fn daemon_socket(dir: &Path) -> PathBuf {
    dir.join("run/panewise/daemon.sock")
}

/// Starts `panewise daemon` with its directories under `dir`, `fake` as its Claude Code, and
/// `config` as its `panewise.toml` (the notification sinks off: no sink is part of what a
/// bench measures). Its stderr goes to `dir/daemon.stderr`.
pub fn spawn_daemon(panewise: &Path, fake: &Path, dir: &Path, config: &str) -> Option<Child> {
    daemon_command(panewise, fake, dir, config)?.spawn().ok()
}

/// [`spawn_daemon`]'s command, its directories made and its config written, for a caller that
/// changes its environment before spawning it.
pub fn daemon_command(panewise: &Path, fake: &Path, dir: &Path, config: &str) -> Option<Command> {
    for sub in ["run", "data", "home", "config/panewise", "work"] {
        std::fs::create_dir_all(dir.join(sub)).ok()?;
    }
    std::fs::write(dir.join("config/panewise/panewise.toml"), config).ok()?;
    let stderr = std::fs::File::create(dir.join("daemon.stderr")).ok()?;
    let mut command = Command::new(panewise);
    daemon_environment(&mut command, dir);
    command
        .arg("daemon")
        .env("PANEWISE_CLAUDE", fake)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    Some(command)
}

/// Calls `poll` every 20 ms until it is true or `seconds` pass; whether it came true.
pub fn wait_until(seconds: u64, mut poll: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(seconds);
    loop {
        if poll() {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One JSON-RPC connection to a daemon, blocking, line by line.
pub struct Connection {
    lines: std::io::Lines<BufReader<Box<dyn Read + Send>>>,
    write: Box<dyn Write + Send>,
    next_id: u64,
    /// The process at the far end, for a connection through one (ended with the connection).
    child: Option<Child>,
}

impl Connection {
    /// The daemon's socket, once it accepts (within 20 s).
    pub fn unix(socket: &Path) -> Option<Connection> {
        let mut stream = None;
        wait_until(20, || {
            stream = UnixStream::connect(socket).ok();
            stream.is_some()
        });
        let stream = stream?;
        let write = stream.try_clone().ok()?;
        Some(Connection::over(Box::new(stream), Box::new(write), None))
    }

    /// `command`'s standard output and input: the API of `panewise daemon --stdio` at its end.
    pub fn child(mut command: Command) -> Option<Connection> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let stdout = child.stdout.take()?;
        let stdin: ChildStdin = child.stdin.take()?;
        Some(Connection::over(
            Box::new(stdout),
            Box::new(stdin),
            Some(child),
        ))
    }

    fn over(
        read: Box<dyn Read + Send>,
        write: Box<dyn Write + Send>,
        child: Option<Child>,
    ) -> Connection {
        Connection {
            lines: BufReader::new(read).lines(),
            write,
            next_id: 1,
            child,
        }
    }

    /// Sends a request; its id.
    pub fn send(&mut self, method: &str, params: Value) -> Option<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            .to_string()
            .into_bytes();
        line.push(b'\n');
        self.write.write_all(&line).ok()?;
        self.write.flush().ok()?;
        Some(id)
    }

    /// Calls `method` and reads up to its response (notifications before it are dropped: a
    /// bench measures none before its agents start); its result, or `None` with the error on
    /// stderr.
    pub fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.send(method, params)?;
        for line in self.lines.by_ref() {
            let value: Value = serde_json::from_str(&line.ok()?).ok()?;
            if value["id"] == id {
                if !value["error"].is_null() {
                    eprintln!("bench: {method}: {}", value["error"]);
                    return None;
                }
                return Some(value["result"].clone());
            }
        }
        None
    }

    /// The next line the daemon sent (`None` at the end of the connection).
    pub fn next_line(&mut self) -> Option<String> {
        self.lines.next()?.ok()
    }

    /// `hello` with the API version this rig speaks.
    pub fn hello(&mut self, client: &str) -> Option<Value> {
        self.call("hello", json!({"api_version": 1, "client": client}))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The host name the bench's ssh config names.
pub const SSH_HOST: &str = "panewise-bench";

/// A throwaway `sshd` (Debian's `/usr/sbin/sshd`) on a free port of 127.0.0.1, with a host key
/// and an authorised key of its own, and the client config (`ssh -F`) that reaches it.
pub struct Sshd {
    dir: PathBuf,
    child: Child,
}

impl Sshd {
    /// Keys, configs and the server under `dir`, once its port accepts; `None` (with the reason
    /// on stderr) when there is no sshd or it does not start.
    pub fn start(dir: &Path) -> Option<Sshd> {
        let fail = |what: &str| {
            eprintln!("bench: sshd: {what}");
            None
        };
        std::fs::create_dir_all(dir).ok()?;
        let path = |name: &str| dir.join(name);
        for key in ["host_key", "user_key"] {
            let made = Command::new("ssh-keygen")
                .args([
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    "panewise-bench",
                    "-f",
                ])
                .arg(path(key))
                .status();
            if !matches!(made, Ok(status) if status.success()) {
                return fail("ssh-keygen failed (apt-get install openssh-server)");
            }
        }
        std::fs::copy(path("user_key.pub"), path("authorized_keys")).ok()?;
        let host_key = std::fs::read_to_string(path("host_key.pub")).ok()?;
        std::fs::write(path("known_hosts"), format!("{SSH_HOST} {host_key}")).ok()?;
        let user = Command::new("id").arg("-un").output().ok()?;
        let user = String::from_utf8_lossy(&user.stdout).trim().to_owned();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        std::fs::write(
            path("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nPidFile {pid}\n\
                 AuthorizedKeysFile {keys}\nStrictModes no\nUsePAM no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
                 AllowUsers {user}\nLogLevel ERROR\n",
                host = path("host_key").display(),
                pid = path("sshd.pid").display(),
                keys = path("authorized_keys").display(),
            ),
        )
        .ok()?;
        std::fs::write(
            path("ssh_config"),
            format!(
                "Host {SSH_HOST}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {key}\n  IdentitiesOnly yes\n  HostKeyAlias {SSH_HOST}\n  \
                 StrictHostKeyChecking yes\n  UserKnownHostsFile {known}\n  \
                 GlobalKnownHostsFile /dev/null\n  BatchMode yes\n  ConnectTimeout 5\n  \
                 LogLevel ERROR\n",
                key = path("user_key").display(),
                known = path("known_hosts").display(),
            ),
        )
        .ok()?;
        // sshd run as root wants its privilege separation directory, which an init system
        // would make; a bare container has none.
        let _ = std::fs::create_dir_all("/run/sshd");
        let log = std::fs::File::create(path("sshd.log")).ok()?;
        let Ok(child) = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
        else {
            return fail("cannot run /usr/sbin/sshd (apt-get install openssh-server)");
        };
        let mut sshd = Sshd {
            dir: dir.to_owned(),
            child,
        };
        let listening = wait_until(20, || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                || !matches!(sshd.child.try_wait(), Ok(None))
        });
        if !listening || !matches!(sshd.child.try_wait(), Ok(None)) {
            let log = std::fs::read_to_string(path("sshd.log")).unwrap_or_default();
            return fail(&format!("did not listen: {log}"));
        }
        Some(sshd)
    }

    /// `ssh -F <config> HOST remote` as a command, its stderr to the rig's directory.
    pub fn command(&self, remote: &str) -> Command {
        let mut command = Command::new("ssh");
        command
            .arg("-F")
            .arg(self.dir.join("ssh_config"))
            .arg(SSH_HOST)
            .arg(remote);
        if let Ok(log) = std::fs::File::create(self.dir.join("ssh.stderr")) {
            command.stderr(log);
        }
        command
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_load_run, LoadRun};

    #[test]
    fn a_load_run_is_three_whole_numbers() {
        assert_eq!(
            parse_load_run("50:100:10"),
            Some(LoadRun {
                sessions: 50,
                rate: 100,
                seconds: 10
            })
        );
        for malformed in ["50:100", "50:100:10:1", "50:x:10", "-1:100:10", "50:1.5:10"] {
            assert_eq!(parse_load_run(malformed), None, "{malformed}");
        }
    }
}
