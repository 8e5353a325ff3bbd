//! A remote session's updates over SSH on loopback against the same updates on the daemon's own
//! socket, in one run (issue 21: "a remote session's update over SSH on loopback reaches the
//! local dashboard within 5 ms p99 of the remote daemon logging it").
//!
//! The "remote" side is a real `panewise daemon` in a directory of its own hosting N fake Claude
//! Code sessions (the daemon bench's `fake_claude`, each streaming R lines per second). Two API
//! clients subscribe to every session at once: one on the daemon's Unix socket (the floor: what
//! a client beside the daemon gets), and one through a real `sshd` on 127.0.0.1 — `ssh HOST
//! 'panewise daemon --stdio'`, the path `--remote HOST` takes for the commands and the
//! dashboard. Per streamed line, measured in this one process (one clock): the agent's write →
//! each client's read of the `session/line` notification, and **SSH's own share, the SSH
//! client's read minus the socket client's read of the same line** — the time from the remote
//! daemon having delivered the logged line locally to it reaching the machine across SSH.
//!
//! Needs `/usr/sbin/sshd` (Debian's openssh-server) and the `panewise` binary of the same
//! profile: `cargo build --release -p panewise-cli` first (or `PANEWISE_BIN=path`). Then
//! `cargo bench -p panewise-benches --bench remote [-- SESSIONS:RATE:SECONDS …]`
//! (default `10:10:10 50:100:10`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode};
use std::sync::mpsc;
use std::time::Duration;

use panewise_benches::rig::{
    agent_write_times, cpu_seconds, daemon_socket, load_runs, now_ns, panewise_binary,
    peak_rss_kib, percentile, spawn_daemon, spread, Connection, Sshd,
};
use serde_json::{json, Value};

/// What one client read: (when, the line) for every line after the prompts went out.
type Reads = Vec<(u128, String)>;

/// Reads `connection` until `expected` streamed lines came or it ends.
fn read_streamed(mut connection: Connection, expected: u64) -> Reads {
    let mut reads = Vec::with_capacity(expected as usize * 2);
    let mut streamed = 0;
    while streamed < expected {
        let Some(line) = connection.next_line() else {
            break;
        };
        let at = now_ns();
        if line.contains("output_streamed") {
            streamed += 1;
        }
        reads.push((at, line));
    }
    reads
}

/// The k-th streamed line of each session a client read: `times[session][k]` = when, checked
/// against the fake agent's k-th write's length; the count of lines out of order.
fn streamed_times(reads: &Reads, index_of: &HashMap<String, usize>) -> (Vec<Vec<u128>>, u64) {
    let mut times = vec![Vec::new(); index_of.len()];
    let mut mismatched = 0;
    for (at, line) in reads {
        let Ok(notice) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if notice["method"] != "session/line" {
            continue;
        }
        let Some(&session) = notice["params"]["session"]
            .as_str()
            .and_then(|id| index_of.get(id))
        else {
            continue;
        };
        let Some(logged) = notice["params"]["line"]
            .as_str()
            .and_then(|line| serde_json::from_str::<Value>(line).ok())
        else {
            continue;
        };
        if logged["msg"]["type"] != "output_streamed" {
            continue;
        }
        let k = times[session].len();
        if logged["msg"]["chars"].as_u64() != Some(k as u64 % 50 + 1) {
            mismatched += 1;
        }
        times[session].push(*at);
    }
    (times, mismatched)
}

fn micros(from: u128, to: u128) -> u64 {
    u64::try_from(to.saturating_sub(from) / 1_000).unwrap_or(u64::MAX)
}

/// The run's figures.
struct Figures {
    expected: u64,
    local: Vec<u64>,
    remote: Vec<u64>,
    ssh_share: Vec<u64>,
    mismatched: u64,
    cpu_pct: f64,
    rss_mib: u64,
}

fn measure(
    sessions: usize,
    rate: u64,
    seconds: u64,
    panewise: &Path,
    sshd: &Sshd,
    dir: &Path,
    pid: u32,
) -> Option<Figures> {
    let mut local = Connection::unix(&daemon_socket(dir))?;
    local.hello("remote-bench-local")?;
    let remote_command = format!(
        "env XDG_RUNTIME_DIR={run} XDG_DATA_HOME={data} XDG_CONFIG_HOME={config} HOME={home} \
         {panewise} daemon --stdio",
        run = dir.join("run").display(),
        data = dir.join("data").display(),
        config = dir.join("config").display(),
        home = dir.join("home").display(),
        panewise = panewise.display(),
    );
    let mut remote = Connection::child(sshd.command(&remote_command))?;
    remote.hello("remote-bench-ssh")?;
    let mut ids = Vec::with_capacity(sessions);
    let mut cwds = Vec::with_capacity(sessions);
    for index in 0..sessions {
        let cwd = dir.join(format!("work/s{index}"));
        std::fs::create_dir_all(&cwd).ok()?;
        let created = local.call(
            "session/create",
            json!({"provider": "claude-code", "cwd": cwd, "name": format!("s{index}"),
                   "approval": "full-access"}),
        )?;
        ids.push(created["session"]["id"].as_str()?.to_owned());
        cwds.push(cwd);
    }
    for id in &ids {
        for client in [&mut local, &mut remote] {
            client.call(
                "session/subscribe",
                json!({"session": id, "from_line": 0, "attach": false}),
            )?;
        }
    }
    let lines = rate * seconds;
    let expected = lines * sessions as u64;
    // Every agent starts at one instant, once every prompt is on its way.
    let start = now_ns() + 300_000_000 + sessions as u128 * 1_000_000;
    for id in &ids {
        let text = format!("START_NS={start} RATE={rate} LINES={lines}");
        local.send("session/prompt", json!({"session": id, "text": text}))?;
    }
    let cpu_before = cpu_seconds(pid);
    let wall = std::time::Instant::now();
    let (done, finished) = mpsc::channel();
    for (name, client) in [("local", local), ("ssh", remote)] {
        let done = done.clone();
        std::thread::spawn(move || {
            let _ = done.send((name, read_streamed(client, expected)));
        });
    }
    let mut reads: HashMap<&str, Reads> = HashMap::new();
    let deadline = Duration::from_secs(seconds + 60);
    while reads.len() < 2 {
        let Ok((name, read)) = finished.recv_timeout(deadline) else {
            eprintln!("remote bench: a client did not read every line within {deadline:?}");
            return None;
        };
        reads.insert(name, read);
    }
    let wall = wall.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    let rss_mib = peak_rss_kib(pid) / 1024;

    let index_of: HashMap<String, usize> = ids
        .iter()
        .enumerate()
        .map(|(index, id)| (id.clone(), index))
        .collect();
    let written = agent_write_times(&cwds, lines);
    let (local_times, local_mismatched) = streamed_times(reads.get("local")?, &index_of);
    let (remote_times, remote_mismatched) = streamed_times(reads.get("ssh")?, &index_of);
    let mut figures = Figures {
        expected,
        local: Vec::new(),
        remote: Vec::new(),
        ssh_share: Vec::new(),
        mismatched: local_mismatched + remote_mismatched,
        cpu_pct: cpu / wall.max(0.001) * 100.0,
        rss_mib,
    };
    for session in 0..sessions {
        for (k, wrote) in written[session].iter().enumerate() {
            let at_local = local_times[session].get(k);
            let at_remote = remote_times[session].get(k);
            if let Some(at) = at_local {
                figures.local.push(micros(*wrote, *at));
            }
            if let Some(at) = at_remote {
                figures.remote.push(micros(*wrote, *at));
            }
            if let (Some(local), Some(remote)) = (at_local, at_remote) {
                // A line can reach the SSH client first (the two clients are scheduled
                // independently): its share is then nothing, not negative.
                figures.ssh_share.push(micros(*local, *remote));
            }
        }
    }
    for sorted in [
        &mut figures.local,
        &mut figures.remote,
        &mut figures.ssh_share,
    ] {
        sorted.sort_unstable();
    }
    Some(figures)
}

fn stop(mut daemon: Child, dir: &Path) {
    if let Some(mut client) = Connection::unix(&daemon_socket(dir)) {
        let _ = client.call("daemon/shutdown", json!({}));
    }
    let _ = panewise_benches::rig::wait_until(15, || !matches!(daemon.try_wait(), Ok(None)));
    let _ = daemon.kill();
    let _ = daemon.wait();
}

/// One run, printed; false when it failed (no `sshd` is a skip, not a failure).
fn run(
    sessions: usize,
    rate: u64,
    seconds: u64,
    panewise: &Path,
    fake: &Path,
    root: &Path,
) -> bool {
    let dir = root.join(format!("{sessions}x{rate}x{seconds}-{}", now_ns()));
    let Some(sshd) = Sshd::start(&dir.join("ssh")) else {
        eprintln!("remote bench: no sshd on 127.0.0.1, nothing measured");
        return true;
    };
    let daemon_dir = dir.join("remote");
    let Some(daemon) = spawn_daemon(
        panewise,
        fake,
        &daemon_dir,
        "[notify]\ndesktop = false\nbell = false\n",
    ) else {
        eprintln!("remote bench: cannot start {}", panewise.display());
        return false;
    };
    let pid = daemon.id();
    let figures = measure(sessions, rate, seconds, panewise, &sshd, &daemon_dir, pid);
    stop(daemon, &daemon_dir);
    drop(sshd);
    let Some(figures) = figures else {
        eprintln!(
            "remote bench: the run failed; the daemon's stderr is in {}, ssh's in {}",
            daemon_dir.join("daemon.stderr").display(),
            dir.join("ssh/ssh.stderr").display()
        );
        return false;
    };
    let out_of_order = if figures.mismatched > 0 {
        format!(" ({} out of order)", figures.mismatched)
    } else {
        String::new()
    };
    println!(
        "remote {sessions:>3} sessions × {rate:>4} lines/s × {seconds} s: {} / {} / {} of {} lines read (socket / ssh / both){out_of_order}; daemon CPU {:.1} % of one core, peak RSS {} MiB",
        figures.local.len(),
        figures.remote.len(),
        figures.ssh_share.len(),
        figures.expected,
        figures.cpu_pct,
        figures.rss_mib,
    );
    println!("  write → socket client   {}", spread(&figures.local, "µs"));
    println!(
        "  write → ssh client      {}",
        spread(&figures.remote, "µs")
    );
    println!(
        "  ssh's share (ssh read − socket read of the same line) {}",
        spread(&figures.ssh_share, "µs")
    );
    println!(
        "  p99 over ssh against the socket: {:.2}×",
        percentile(&figures.remote, 0.99) as f64 / (percentile(&figures.local, 0.99).max(1)) as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
    // Every line reached both clients, in order, or the run failed.
    figures.mismatched == 0
        && figures.local.len() as u64 == figures.expected
        && figures.remote.len() as u64 == figures.expected
}

/// A run that failed fails the target, so `cargo test --all-targets` (one short run) notices.
fn main() -> ExitCode {
    let fake = PathBuf::from(env!("CARGO_BIN_EXE_fake_claude"));
    let Some(panewise) = panewise_binary() else {
        eprintln!(
            "remote bench: no panewise binary beside this bench; build it first \
             (`cargo build --release -p panewise-cli`) or set PANEWISE_BIN"
        );
        return ExitCode::SUCCESS;
    };
    let root = std::env::temp_dir().join(format!("pw-remote-bench-{}", std::process::id()));
    let mut failed = false;
    for load in load_runs("remote", &["2:10:1"], &["10:10:10", "50:100:10"]) {
        let (sessions, rate, seconds) = (load.sessions, load.rate, load.seconds);
        failed |= !run(sessions, rate, seconds, &panewise, &fake, &root);
    }
    let _ = std::fs::remove_dir_all(&root);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
