//! The live pipeline under the daemon: the real `panewise daemon` binary in a temporary runtime
//! directory hosts N supervised Claude Code sessions, each a fake agent (`fake_claude`, given
//! to the daemon as `PANEWISE_CLAUDE`) streaming R lines per second, and one API client, this
//! bench, is subscribed to every session (`session/subscribe` per session, through the socket).
//!
//! Measured per line: from the agent's write (its clock read just before the write) to the
//! `session/line` notification of the line it became in the session log, read by the
//! subscriber: p50 / p99 / max. Also the daemon's CPU over the wall time of the run (its own
//! user + system time from `/proc/<pid>/stat`; the agents are other processes) and its peak RSS
//! (`VmHWM`).
//!
//! Beside each load, in the same run, its floor: the same fake agents on the same schedule,
//! their stdout carried by `floor_relay` (`benches/src/bin/floor_relay.rs`), a separate process
//! that reads each agent's pipe line by line and writes every line, unparsed and unlogged, to one
//! Unix socket the bench reads as the subscriber. Its latency, CPU and peak RSS are measured as
//! the daemon's are and printed on the line under the daemon's (`floor: …`): what is left above
//! it is the daemon's own cost.
//!
//! Needs the `panewise` binary of the same profile: `cargo build --release -p panewise-cli`
//! first (or `PANEWISE_BIN=path`). Then
//! `cargo bench -p panewise-benches --bench daemon [-- SESSIONS:RATE:SECONDS …]`
//! (default: `50:100:10 200:10:10`; add `--staggered` to spread the agents' writes evenly
//! instead of aligning them, see [`schedule`]).
//!
//! The cost of export: when this bench's environment names an OTLP endpoint (the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, with `OTEL_EXPORTER_OTLP_PROTOCOL` if need be), each
//! size runs twice in one run: export off (every `OTEL_*` variable removed from the daemon's
//! environment), then export on (the daemon inherits them), and a third row gives on / off.
//! The bench does not start the receiver: point it at one already running.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use panewise_benches::rig::{
    agent_write_times, cpu_seconds, daemon_command, load_runs, now_ns, panewise_binary,
    peak_rss_kib, percentile, LoadRun, Reaped,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};

/// One JSON-RPC connection to the daemon, spoken line by line.
struct Connection {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
    next_id: u64,
}

impl Connection {
    async fn open(socket: &Path) -> Option<Connection> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(stream) = UnixStream::connect(socket).await {
                let (read, write) = stream.into_split();
                return Some(Connection {
                    lines: BufReader::new(read).lines(),
                    write,
                    next_id: 1,
                });
            }
            if Instant::now() > until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends a request; its id.
    async fn send(&mut self, method: &str, params: Value) -> Option<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            .to_string()
            .into_bytes();
        line.push(b'\n');
        self.write.write_all(&line).await.ok()?;
        Some(id)
    }

    /// Calls `method` and reads up to its response (notifications before it are dropped: none
    /// is measured before the prompts go out); its result.
    async fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.send(method, params).await?;
        while let Ok(Some(line)) = self.lines.next_line().await {
            let value: Value = serde_json::from_str(&line).ok()?;
            if value["id"] == id {
                if !value["error"].is_null() {
                    eprintln!("daemon bench: {method}: {}", value["error"]);
                    return None;
                }
                return Some(value["result"].clone());
            }
        }
        None
    }
}

/// A run's figures.
struct Figures {
    latencies_us: Vec<u64>,
    expected: u64,
    mismatched: u64,
    cpu_pct: f64,
    rss_mib: u64,
}

impl Figures {
    /// Every line was measured, in order: a run that lost or reordered one failed.
    fn whole(&self) -> bool {
        self.mismatched == 0 && self.latencies_us.len() as u64 == self.expected
    }
}

/// One streamed delta as the subscriber read it: when, from which agent, and its length.
struct Delta {
    at: u128,
    agent: usize,
    chars: Option<u64>,
}

/// Pairs the k-th delta received from each agent with that agent's k-th write (checking its
/// length, `k % 50 + 1`, as `fake_claude` writes it): the sorted latencies in µs and how many
/// deltas came out of order.
fn pair(deltas: &[Delta], written: &[Vec<u128>]) -> (Vec<u64>, u64) {
    let mut seen = vec![0usize; written.len()];
    let mut latencies_us = Vec::with_capacity(deltas.len());
    let mut mismatched = 0;
    for delta in deltas {
        let Some(count) = seen.get_mut(delta.agent) else {
            continue;
        };
        let k = *count;
        *count += 1;
        if delta.chars != Some(k as u64 % 50 + 1) {
            mismatched += 1;
            continue;
        }
        if let Some(wrote) = written[delta.agent].get(k) {
            latencies_us
                .push(u64::try_from(delta.at.saturating_sub(*wrote) / 1_000).unwrap_or(u64::MAX));
        }
    }
    latencies_us.sort_unstable();
    (latencies_us, mismatched)
}

/// The prompts of one run, one per agent, and the lines each agent writes. Every agent starts
/// at one instant, far enough ahead that every prompt is on its way by then. Aligned, every
/// agent writes at the same instants (bursts of N lines at once: the worst case); staggered,
/// agent i starts i/N of a period later, so the writes of the N agents are spread evenly, as
/// independent agents' would be.
fn schedule(staggered: bool, sessions: usize, rate: u64, seconds: u64) -> (Vec<String>, u64) {
    let lines = rate * seconds;
    let start = now_ns() + 300_000_000 + sessions as u128 * 1_000_000;
    let period_ns = 1_000_000_000 / u128::from(rate.max(1));
    let prompts = (0..sessions)
        .map(|index| {
            let start = if staggered {
                start + period_ns * index as u128 / sessions.max(1) as u128
            } else {
                start
            };
            format!("START_NS={start} RATE={rate} LINES={lines}")
        })
        .collect();
    (prompts, lines)
}

/// The `OTEL_*` variables of this bench's environment that turn export on, if any do.
fn export_endpoint() -> Option<String> {
    [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ]
    .iter()
    .find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
    })
}

fn spawn_daemon(panewise: &Path, fake: &Path, dir: &Path, export: bool) -> Option<Child> {
    // No desktop sink: `notify-send` is no part of the pipeline measured.
    let mut command = daemon_command(panewise, fake, dir, "[notify]\ndesktop = false\n")?;
    if !export {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("OTEL_") {
                command.env_remove(name);
            }
        }
    }
    command.spawn().ok()
}

async fn measure(
    staggered: bool,
    sessions: usize,
    rate: u64,
    seconds: u64,
    dir: &Path,
    pid: u32,
) -> Option<Figures> {
    let mut client = Connection::open(&dir.join("run/panewise/daemon.sock")).await?;
    client
        .call("hello", json!({"api_version": 1, "client": "daemon-bench"}))
        .await?;
    let mut ids = Vec::with_capacity(sessions);
    let mut cwds = Vec::with_capacity(sessions);
    for index in 0..sessions {
        let cwd = dir.join(format!("work/s{index}"));
        std::fs::create_dir_all(&cwd).ok()?;
        let created = client
            .call(
                "session/create",
                json!({"provider": "claude-code", "cwd": cwd, "name": format!("s{index}"),
                       "approval": "full-access"}),
            )
            .await?;
        ids.push(created["session"]["id"].as_str()?.to_owned());
        cwds.push(cwd);
    }
    for id in &ids {
        client
            .call(
                "session/subscribe",
                json!({"session": id, "from_line": 0, "attach": false}),
            )
            .await?;
    }
    let (prompts, lines) = schedule(staggered, sessions, rate, seconds);
    let expected = lines * sessions as u64;
    let cpu_before = cpu_seconds(pid);
    let wall = Instant::now();
    for (id, text) in ids.iter().zip(&prompts) {
        client
            .send("session/prompt", json!({"session": id, "text": text}))
            .await?;
    }
    let mut received: Vec<(u128, String)> = Vec::with_capacity(expected as usize * 2);
    let mut streamed = 0u64;
    let until = Instant::now() + Duration::from_secs(seconds + 30);
    while streamed < expected {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(Ok(Some(line))) = tokio::time::timeout(left, client.lines.next_line()).await else {
            eprintln!("daemon bench: {streamed} of {expected} lines came before the deadline");
            break;
        };
        let at = now_ns();
        if line.contains("output_streamed") {
            streamed += 1;
        }
        received.push((at, line));
    }
    let wall = wall.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    let rss_mib = peak_rss_kib(pid) / 1024;
    // Before the shutdown, which ends the agents: each writes its times after its last line.
    let written = agent_write_times(&cwds, lines);
    let _ = client.call("daemon/shutdown", json!({})).await;

    let index_of: std::collections::HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(index, id)| (id.as_str(), index))
        .collect();
    let mut deltas = Vec::with_capacity(expected as usize);
    for (at, line) in &received {
        let Ok(notice) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if notice["method"] != "session/line" {
            continue;
        }
        let Some(&agent) = notice["params"]["session"]
            .as_str()
            .and_then(|id| index_of.get(id))
        else {
            continue;
        };
        let Ok(logged) = serde_json::from_str::<Value>(notice["params"]["line"].as_str()?) else {
            continue;
        };
        if logged["msg"]["type"] != "output_streamed" {
            continue;
        }
        deltas.push(Delta {
            at: *at,
            agent,
            chars: logged["msg"]["chars"].as_u64(),
        });
    }
    let (latencies_us, mismatched) = pair(&deltas, &written);
    Some(Figures {
        latencies_us,
        expected,
        mismatched,
        cpu_pct: cpu / wall.max(0.001) * 100.0,
        rss_mib,
    })
}

/// The floor of one load: the same agents on the same schedule, relayed by `floor_relay`
/// (started by this bench, the agents its children) to a socket this bench listens on.
async fn measure_floor(
    staggered: bool,
    sessions: usize,
    rate: u64,
    seconds: u64,
    paths: &Paths<'_>,
    dir: &Path,
) -> Option<Figures> {
    let socket = dir.join("floor.sock");
    let cwds: Vec<PathBuf> = (0..sessions)
        .map(|index| dir.join(format!("work/s{index}")))
        .collect();
    for cwd in &cwds {
        std::fs::create_dir_all(cwd).ok()?;
    }
    let listener = UnixListener::bind(&socket).ok()?;
    let stderr = std::fs::File::create(dir.join("relay.stderr")).ok()?;
    let mut relay = Reaped(
        Command::new(paths.relay)
            .arg(&socket)
            .arg(paths.fake)
            .args(&cwds)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .ok()?,
    );
    let pid = relay.0.id();
    let mut prompts_in = relay.0.stdin.take()?;
    // The relay connects once every agent is started.
    let (stream, _) = tokio::time::timeout(Duration::from_secs(60), listener.accept())
        .await
        .ok()?
        .ok()?;
    let mut from_relay = BufReader::new(stream).lines();
    let (prompts, lines) = schedule(staggered, sessions, rate, seconds);
    let expected = lines * sessions as u64;
    let cpu_before = cpu_seconds(pid);
    let wall = Instant::now();
    let mut text = prompts.join("\n");
    text.push('\n');
    prompts_in.write_all(text.as_bytes()).ok()?;
    let mut received: Vec<(u128, String)> = Vec::with_capacity(expected as usize + 8 * sessions);
    let mut streamed = 0u64;
    let until = Instant::now() + Duration::from_secs(seconds + 30);
    while streamed < expected {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(Ok(Some(line))) = tokio::time::timeout(left, from_relay.next_line()).await else {
            eprintln!(
                "daemon bench: floor: {streamed} of {expected} lines came before the deadline"
            );
            break;
        };
        let at = now_ns();
        if line.contains(TEXT_DELTA) {
            streamed += 1;
        }
        received.push((at, line));
    }
    let wall = wall.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    let rss_mib = peak_rss_kib(pid) / 1024;
    let written = agent_write_times(&cwds, lines);
    // The end of its stdin ends the relay's agents, then the relay.
    drop(prompts_in);
    let until = Instant::now() + Duration::from_secs(15);
    while matches!(relay.0.try_wait(), Ok(None)) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let deltas: Vec<Delta> = received
        .iter()
        .filter_map(|(at, line)| {
            let (agent, line) = line.split_once(' ')?;
            let text = &line[line.find(TEXT_DELTA)? + TEXT_DELTA.len()..];
            Some(Delta {
                at: *at,
                agent: agent.parse().ok()?,
                chars: text.find('"').map(|end| end as u64),
            })
        })
        .collect();
    let (latencies_us, mismatched) = pair(&deltas, &written);
    Some(Figures {
        latencies_us,
        expected,
        mismatched,
        cpu_pct: cpu / wall.max(0.001) * 100.0,
        rss_mib,
    })
}

/// What precedes a delta's text in `fake_claude`'s line (the text is `x` repeated, no escape).
const TEXT_DELTA: &str = r#""type":"text_delta","text":""#;

/// Where the run's binaries are and where it may write.
struct Paths<'a> {
    panewise: &'a Path,
    fake: &'a Path,
    relay: &'a Path,
    root: &'a Path,
}

fn run(
    staggered: bool,
    sessions: usize,
    rate: u64,
    seconds: u64,
    export: bool,
    paths: &Paths<'_>,
) -> Option<Figures> {
    let Paths {
        panewise,
        fake,
        root,
        ..
    } = *paths;
    let dir = root.join(format!("{sessions}x{rate}x{seconds}-{}", now_ns()));
    let Some(mut daemon) = spawn_daemon(panewise, fake, &dir, export) else {
        eprintln!("daemon bench: cannot start {}", panewise.display());
        return None;
    };
    let figures = block_on(measure(
        staggered,
        sessions,
        rate,
        seconds,
        &dir,
        daemon.id(),
    ))
    .flatten();
    let until = Instant::now() + Duration::from_secs(15);
    while matches!(daemon.try_wait(), Ok(None)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    let Some(figures) = figures else {
        eprintln!(
            "daemon bench: the run failed; the daemon's stderr is in {}",
            dir.join("daemon.stderr").display()
        );
        return None;
    };
    if export {
        // An endpoint that refused is said once on the daemon's stderr: a run that exported
        // nothing measured nothing of export.
        let said = std::fs::read_to_string(dir.join("daemon.stderr")).unwrap_or_default();
        if let Some(line) = said.lines().find(|line| line.contains("cannot export")) {
            eprintln!("daemon bench: export failed during the run: {line}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Some(figures)
}

/// The floor of one load (see [`measure_floor`]).
fn run_floor(
    staggered: bool,
    sessions: usize,
    rate: u64,
    seconds: u64,
    paths: &Paths<'_>,
) -> Option<Figures> {
    let dir = paths
        .root
        .join(format!("floor-{sessions}x{rate}x{seconds}-{}", now_ns()));
    std::fs::create_dir_all(&dir).ok()?;
    let figures = block_on(measure_floor(
        staggered, sessions, rate, seconds, paths, &dir,
    ))
    .flatten();
    if figures.is_none() {
        eprintln!(
            "daemon bench: the floor failed; the relay's stderr is in {}",
            dir.join("relay.stderr").display()
        );
        return None;
    }
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

/// `future` on a runtime of one thread, as the subscriber of every run reads.
fn block_on<F: std::future::Future>(future: F) -> Option<F::Output> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("daemon bench: cannot start a runtime");
        return None;
    };
    Some(runtime.block_on(future))
}

fn print(sessions: usize, rate: u64, seconds: u64, label: &str, figures: &Figures) {
    println!(
        "daemon {sessions:>3} sessions × {rate:>4} lines/s × {seconds} s{label}: {}",
        described(figures, "daemon")
    );
}

/// The floor's line, printed under the daemon's of the same load.
fn print_floor(figures: &Figures) {
    println!(
        "    floor (bare pipe → socket relay, same agents and schedule): {}",
        described(figures, "relay")
    );
}

/// A run's figures as the bench prints them; `process` names whose CPU and RSS they are.
fn described(figures: &Figures, process: &str) -> String {
    let sorted = &figures.latencies_us;
    format!(
        "{} of {} lines measured{}, write → subscriber p50 {} µs, p99 {} µs, max {} µs, {process} CPU {:.1} % of one core, peak RSS {} MiB",
        sorted.len(),
        figures.expected,
        if figures.mismatched > 0 {
            format!(" ({} out of order)", figures.mismatched)
        } else {
            String::new()
        },
        percentile(sorted, 0.50),
        percentile(sorted, 0.99),
        sorted.last().copied().unwrap_or(0),
        figures.cpu_pct,
        figures.rss_mib,
    )
}

/// Export on over export off, each figure a ratio (1.00: no cost).
fn print_ratio(off: &Figures, on: &Figures) {
    let ratio = |on: f64, off: f64| {
        if off > 0.0 {
            format!("{:.2}", on / off)
        } else {
            "n/a".to_owned()
        }
    };
    let at = |figures: &Figures, fraction| percentile(&figures.latencies_us, fraction) as f64;
    let max = |figures: &Figures| figures.latencies_us.last().copied().unwrap_or(0) as f64;
    println!(
        "    export on / off: p50 ×{}, p99 ×{}, max ×{}, daemon CPU ×{}, peak RSS ×{}",
        ratio(at(on, 0.50), at(off, 0.50)),
        ratio(at(on, 0.99), at(off, 0.99)),
        ratio(max(on), max(off)),
        ratio(on.cpu_pct, off.cpu_pct),
        ratio(on.rss_mib as f64, off.rss_mib as f64),
    );
}

/// A run that failed fails the target, so `cargo test --all-targets` (one short run) notices.
fn main() -> ExitCode {
    let fake = PathBuf::from(env!("CARGO_BIN_EXE_fake_claude"));
    let relay = PathBuf::from(env!("CARGO_BIN_EXE_floor_relay"));
    let Some(panewise) = panewise_binary() else {
        eprintln!(
            "daemon bench: no panewise binary beside this bench; build it first \
             (`cargo build --release -p panewise-cli`) or set PANEWISE_BIN"
        );
        return ExitCode::SUCCESS;
    };
    let root = std::env::temp_dir().join(format!("pw-daemon-bench-{}", std::process::id()));
    let exporting = export_endpoint();
    let staggered = std::env::args().any(|arg| arg == "--staggered");
    let paths = Paths {
        panewise: &panewise,
        fake: &fake,
        relay: &relay,
        root: &root,
    };
    let mut failed = false;
    for LoadRun {
        sessions,
        rate,
        seconds,
    } in load_runs("daemon", &["2:100:1"], &["50:100:10", "200:10:10"])
    {
        let schedule = if staggered {
            ", staggered"
        } else {
            ", aligned"
        };
        let off = run(staggered, sessions, rate, seconds, false, &paths);
        failed |= !off.as_ref().is_some_and(Figures::whole);
        let floor = run_floor(staggered, sessions, rate, seconds, &paths);
        failed |= !floor.as_ref().is_some_and(Figures::whole);
        let Some(endpoint) = &exporting else {
            if let Some(off) = &off {
                print(sessions, rate, seconds, schedule, off);
            }
            if let Some(floor) = &floor {
                print_floor(floor);
            }
            continue;
        };
        let on = run(staggered, sessions, rate, seconds, true, &paths);
        failed |= !on.as_ref().is_some_and(Figures::whole);
        if let Some(off) = &off {
            print(
                sessions,
                rate,
                seconds,
                &format!("{schedule}, export off"),
                off,
            );
        }
        if let Some(on) = &on {
            print(
                sessions,
                rate,
                seconds,
                &format!("{schedule}, export on to {endpoint}"),
                on,
            );
        }
        if let Some(floor) = &floor {
            print_floor(floor);
        }
        if let (Some(off), Some(on)) = (&off, &on) {
            print_ratio(off, on);
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
