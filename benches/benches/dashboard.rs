//! The dashboard under load, two parts in one run (not criterion: load runs that print their
//! percentiles).
//!
//! **Frames** (in process): `panewise_tui::update` then `view` drawn on ratatui's
//! `TestBackend`, 200×50, with 100 sessions listed and the selected one's log folding a line
//! per frame and one session's summary changing per frame: the time of one frame, computed
//! and drawn, p50 / p99 / max — beside the same with one session listed (the floor).
//!
//! **End to end**: the real `panewise daemon` hosts N fake Claude Code sessions
//! (`benches/src/bin/fake_claude.rs` as `PANEWISE_CLAUDE`, the daemon bench's agent), each
//! streaming R lines per second; the real `panewise ui` runs in a pseudo-terminal of its own
//! (200×50) whose output this bench parses with a terminal emulator (`vt100`). The dashboard
//! selects one session; its peek counts the characters being written (`writing N chars so
//! far…`), so every write of that agent changes a cell. Measured per write of the selected
//! agent: from the write (the agent's clock read just before it) to the first screen state
//! showing it, p50 / p99 / max; beside it, in the same run, the floor: the same writes to a
//! plain API subscriber of that session on the daemon's socket (the daemon's share). Also the
//! dashboard's frames (output bursts on the pty) per second while streaming and the shortest gap
//! between two, its CPU over the streaming and over 10 s of idling afterwards (its own user +
//! system time from `/proc/<pid>/stat`), and its peak RSS (`VmHWM`).
//!
//! Needs the `panewise` binary of the same profile: `cargo build --release -p panewise-cli`
//! first (or `PANEWISE_BIN=path`). Then
//! `cargo bench -p panewise-benches --bench dashboard [-- SESSIONS:RATE:SECONDS]`
//! (default `100:10:20`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use panewise_api::{AgentState, SessionSummary, WaitingFor};
use panewise_benches::rig::{
    self, cpu_seconds, daemon_environment, load_runs, now_ns, panewise_binary, peak_rss_kib,
    spawn_daemon, spread, Connection, Reaped,
};
use panewise_protocol::CostSource;
use panewise_tui::{update, App, Event, Settings};
use ratatui_core::backend::TestBackend;
use ratatui_core::terminal::Terminal;
use serde_json::json;

const COLUMNS: u16 = 200;
const ROWS: u16 = 50;

// ---------------------------------------------------------------- frames, in process

fn summary(n: usize, now_ms: u64) -> SessionSummary {
    let states = [
        AgentState::NeedsInput,
        AgentState::Working,
        AgentState::Working,
        AgentState::Done,
        AgentState::Idle,
        AgentState::Failed,
    ];
    let state = states[n % states.len()];
    SessionSummary {
        v: 1,
        id: format!("0190-{n:04}"),
        name: format!("agent-{n:03}"),
        provider: "claude-code".to_owned(),
        model: Some("claude-opus-4-5".to_owned()),
        cwd: "/tmp/work".to_owned(),
        state,
        waiting_for: (state == AgentState::NeedsInput).then(|| WaitingFor::Approval {
            id: format!("req-{n}"),
            tool: "Bash".to_owned(),
            argument: "cargo test --workspace -- --nocapture".to_owned(),
        }),
        tool: (state == AgentState::Working).then(|| "Bash".to_owned()),
        tool_arg: (state == AgentState::Working).then(|| "cargo build --release".to_owned()),
        context_pct: Some(42.0),
        context_window_source: None,
        tokens: Some(123_456),
        cost_usd: Some(0.4321),
        cost_source: Some(CostSource::Reported),
        budget: None,
        waiting_since_ms: (state == AgentState::NeedsInput).then_some(now_ms - 5_000),
        failure_kind: None,
        log: String::new(),
        approval: "ask".to_owned(),
        started_at_ms: now_ms - n as u64 * 7_000,
        turns: 3,
        attached: 0,
        worktree: None,
        failure: None,
        window_stood_down: None,
    }
}

/// The selected session's log: a header, then streamed output lines, one per frame.
fn log_line(index: u64) -> String {
    use panewise_pane_state::log::{encode_entry, encode_header};
    use panewise_pane_state::{LogEntry, LogHeader, Msg};
    if index == 0 {
        let header = LogHeader {
            agent_id: "claude-code".to_owned(),
            ..LogHeader::default()
        };
        return encode_header(&header).unwrap_or_default();
    }
    let entry = LogEntry {
        ts: index * 100,
        msg: Msg::OutputStreamed {
            chars: index % 50 + 1,
            turn: None,
        },
    };
    encode_entry(&entry).unwrap_or_default()
}

/// Frame times (µs) of `frames` frames with `sessions` listed.
fn frame_times(sessions: usize, frames: u64) -> Vec<u64> {
    let now_ms = 1_796_216_400_000;
    let list: Vec<SessionSummary> = (0..sessions).map(|n| summary(n, now_ms)).collect();
    let (mut app, _) = update(
        App::new(Settings::default(), now_ms, (COLUMNS, ROWS)),
        Event::List(list.clone()),
    );
    let Some(selected) = app.selected.clone() else {
        return Vec::new();
    };
    let Ok(mut terminal) = Terminal::new(TestBackend::new(COLUMNS, ROWS));
    let mut times = Vec::with_capacity(frames as usize);
    for index in 0..frames {
        let start = Instant::now();
        let mut changed = list[index as usize % list.len()].clone();
        changed.tokens = Some(index);
        for event in [
            Event::Line {
                session: selected.clone(),
                index,
                line: log_line(index),
            },
            Event::Changed(Box::new(changed)),
            Event::Tick {
                now_ms: now_ms + index * 16,
            },
        ] {
            app = update(app, event).0;
        }
        if terminal
            .draw(|frame| panewise_tui::view(&app, frame))
            .is_err()
        {
            return Vec::new();
        }
        times.push(u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX));
    }
    times.sort_unstable();
    times
}

// ---------------------------------------------------------------- end to end

/// What the pty showed, as the reader thread saw it.
#[derive(Default)]
struct Screen {
    /// The emulated screen.
    parser: Option<vt100::Parser>,
    /// (when, the count the peek showed) each time it grew.
    counts: Vec<(u128, u64)>,
    /// When each read that carried bytes returned.
    bursts: Vec<u128>,
    /// Bytes read in all.
    bytes: u64,
}

impl Screen {
    fn contents(&self) -> String {
        self.parser
            .as_ref()
            .map(|parser| parser.screen().contents())
            .unwrap_or_default()
    }
}

/// The number in `writing N chars so far…`, if the screen shows it.
fn writing_count(contents: &str) -> Option<u64> {
    let at = contents.find("writing ")? + "writing ".len();
    let rest = contents.get(at..)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    rest.get(digits.len()..)?
        .starts_with(" chars so far")
        .then(|| digits.parse().ok())
        .flatten()
}

/// The selected session's name: the peek's title, `sN · claude-code`.
fn selected_name(contents: &str) -> Option<String> {
    let at = contents.find(" · claude-code")?;
    let before = &contents[..at];
    let start = before.rfind(|c: char| !(c.is_ascii_alphanumeric()))? + 1;
    let name = before.get(start..)?;
    (name.starts_with('s') && name.len() > 1).then(|| name.to_owned())
}

fn read_pty(mut master: std::fs::File, screen: Arc<Mutex<Screen>>) {
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let Ok(n) = master.read(&mut buffer) else {
                return;
            };
            if n == 0 {
                return;
            }
            let at = now_ns();
            let Ok(mut screen) = screen.lock() else {
                return;
            };
            screen.bursts.push(at);
            screen.bytes += n as u64;
            let parser = screen.parser.get_or_insert_with(|| {
                let size =
                    |n: u16| std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN);
                vt100::Parser::new(size(ROWS), size(COLUMNS), 0)
            });
            parser.process(&buffer[..n]);
            let contents = parser.screen().contents();
            if let Some(count) = writing_count(&contents) {
                if screen.counts.last().is_none_or(|(_, last)| count > *last) {
                    screen.counts.push((at, count));
                }
            }
        }
    });
}

fn wait_until(what: &str, seconds: u64, done: impl FnMut() -> bool) -> bool {
    let came = rig::wait_until(seconds, done);
    if !came {
        eprintln!("dashboard bench: {what} did not happen within {seconds} s");
    }
    came
}

struct EndToEnd {
    latencies_us: Vec<u64>,
    floor_us: Vec<u64>,
    writes: usize,
    frames_per_s: f64,
    shortest_gap_ms: f64,
    cpu_streaming_pct: f64,
    cpu_idle_pct: f64,
    idle_bytes: u64,
    rss_mib: u64,
}

/// Σ (i % 50 + 1) for i in 0..=k: what the peek counts once write k arrived.
fn cumulative(k: usize) -> u64 {
    (0..=k as u64).map(|i| i % 50 + 1).sum()
}

fn end_to_end(
    sessions: usize,
    rate: u64,
    seconds: u64,
    panewise: &Path,
    dir: &Path,
) -> Option<EndToEnd> {
    let socket = dir.join("run/panewise/daemon.sock");
    let mut client = Connection::unix(&socket)?;
    client.call(
        "hello",
        json!({"api_version": 1, "client": "dashboard-bench"}),
    )?;
    let mut ids = BTreeMap::new();
    for index in 0..sessions {
        let cwd = dir.join(format!("work/s{index}"));
        std::fs::create_dir_all(&cwd).ok()?;
        let created = client.call(
            "session/create",
            json!({"provider": "claude-code", "cwd": cwd, "name": format!("s{index}"),
                   "approval": "full-access"}),
        )?;
        ids.insert(
            format!("s{index}"),
            (created["session"]["id"].as_str()?.to_owned(), cwd),
        );
    }
    // The dashboard, on a pseudo-terminal of its own.
    let winsize = nix::pty::Winsize {
        ws_row: ROWS,
        ws_col: COLUMNS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(&winsize, None).ok()?;
    let slave = std::fs::File::from(pty.slave);
    let mut command = Command::new(panewise);
    daemon_environment(&mut command, dir);
    // Killed and reaped however this run ends: no dashboard outlives it.
    let mut ui = Reaped(
        command
            .arg("ui")
            .env("TERM", "xterm-256color")
            .stdin(slave.try_clone().ok()?)
            .stdout(slave.try_clone().ok()?)
            .stderr(slave)
            .spawn()
            .ok()?,
    );
    let master = std::fs::File::from(pty.master);
    let mut keys = master.try_clone().ok()?;
    let screen = Arc::new(Mutex::new(Screen::default()));
    read_pty(master, Arc::clone(&screen));
    let contents = || screen.lock().map(|s| s.contents()).unwrap_or_default();
    if !wait_until("the list", 20, || contents().contains("idle (")) {
        return None;
    }
    // Past 12 sessions the idle group is folded: open it (`z` folds an open one), then select
    // the first.
    if contents().contains("folded: z opens") {
        keys.write_all(b"z").ok()?;
        if !wait_until("the idle group open", 20, || {
            !contents().contains("folded: z opens")
        }) {
            return None;
        }
    }
    keys.write_all(b"j").ok()?;
    let mut name = None;
    wait_until("a selection", 20, || {
        name = selected_name(&contents());
        name.is_some()
    });
    let name = name?;
    let (selected, selected_cwd) = ids.get(&name)?.clone();
    // The floor: the same session's lines on a plain subscriber.
    let mut floor = Connection::unix(&socket)?;
    floor.call(
        "hello",
        json!({"api_version": 1, "client": "dashboard-bench-floor"}),
    )?;
    floor.call(
        "session/subscribe",
        json!({"session": selected, "from_line": 0, "attach": false}),
    )?;
    let floor_lines = Arc::new(Mutex::new(Vec::<(u128, String)>::new()));
    {
        let floor_lines = Arc::clone(&floor_lines);
        std::thread::spawn(move || {
            while let Some(line) = floor.next_line() {
                let at = now_ns();
                if line.contains("output_streamed") {
                    if let Ok(mut lines) = floor_lines.lock() {
                        lines.push((at, line));
                    }
                }
            }
        });
    }
    let pid = ui.0.id();
    let lines = rate * seconds;
    let start = now_ns() + 500_000_000 + sessions as u128 * 1_000_000;
    for (id, _) in ids.values() {
        let text = format!("START_NS={start} RATE={rate} LINES={lines}");
        client.send("session/prompt", json!({"session": id, "text": text}))?;
    }
    // Past the start, measure the dashboard's CPU while everything streams.
    let wait = Duration::from_nanos(u64::try_from(start.saturating_sub(now_ns())).unwrap_or(0));
    std::thread::sleep(wait);
    let cpu_before = cpu_seconds(pid);
    let wall = Instant::now();
    let bursts_before = screen.lock().map(|s| s.bursts.len()).unwrap_or(0);
    // The agent's last write and the end of its turn arrive together: the frame that shows
    // them shows the finished answer, not a count. So streaming is over once the count of the
    // write before the last is on the screen (the last write is measured only when a frame
    // showed its count).
    let expected = cumulative((lines as usize).saturating_sub(2));
    wait_until("the last write on the screen", seconds + 30, || {
        screen
            .lock()
            .map(|s| s.counts.last().is_some_and(|(_, n)| *n >= expected))
            .unwrap_or(false)
    });
    let streaming = wall.elapsed().as_secs_f64();
    let cpu_streaming = cpu_seconds(pid) - cpu_before;
    let (bursts, frames_per_s, shortest_gap_ms) = {
        let screen = screen.lock().ok()?;
        let bursts: Vec<u128> = screen.bursts[bursts_before..].to_vec();
        let gaps = bursts.windows(2).map(|w| w[1] - w[0]);
        // Reads closer than 2 ms apart are one frame split by the pty.
        let frames: Vec<u128> = gaps.filter(|gap| *gap > 2_000_000).collect();
        let shortest = frames.iter().min().copied().unwrap_or(0) as f64 / 1e6;
        (
            bursts.len(),
            (frames.len() + 1) as f64 / streaming,
            shortest,
        )
    };
    let _ = bursts;
    // Idle: every turn is over; only the ages tick.
    wait_until("every turn's end", 60, || {
        client
            .call("session/list", json!({}))
            .and_then(|list| {
                list["sessions"].as_array().map(|sessions| {
                    sessions
                        .iter()
                        .all(|s| s["state"] != "working" && s["state"] != "needs_input")
                })
            })
            .unwrap_or(false)
    });
    std::thread::sleep(Duration::from_secs(1));
    let idle_before = cpu_seconds(pid);
    let idle_bytes_before = screen.lock().map(|s| s.bytes).unwrap_or(0);
    let idle_wall = Instant::now();
    std::thread::sleep(Duration::from_secs(10));
    let cpu_idle = cpu_seconds(pid) - idle_before;
    let idle_secs = idle_wall.elapsed().as_secs_f64();
    let idle_bytes = screen.lock().map(|s| s.bytes).unwrap_or(0) - idle_bytes_before;
    let rss_mib = peak_rss_kib(pid) / 1024;
    keys.write_all(b"q").ok()?;
    let quit_until = Instant::now() + Duration::from_secs(10);
    while matches!(ui.0.try_wait(), Ok(None)) && Instant::now() < quit_until {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(ui);
    let _ = client.call("daemon/shutdown", json!({}));

    let written: Vec<u128> = std::fs::read_to_string(selected_cwd.join("fake-claude.times"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.parse().ok())
        .collect();
    let counts = screen.lock().ok()?.counts.clone();
    let mut latencies_us = Vec::with_capacity(written.len());
    for (k, wrote) in written.iter().enumerate() {
        let wanted = cumulative(k);
        let at = counts.partition_point(|(_, n)| *n < wanted);
        if let Some((shown, _)) = counts.get(at) {
            latencies_us.push(u64::try_from(shown.saturating_sub(*wrote) / 1_000).unwrap_or(0));
        }
    }
    latencies_us.sort_unstable();
    let floor_lines = floor_lines.lock().ok()?.clone();
    let mut floor_us: Vec<u64> = floor_lines
        .iter()
        .zip(written.iter())
        .map(|((at, _), wrote)| u64::try_from(at.saturating_sub(*wrote) / 1_000).unwrap_or(0))
        .collect();
    floor_us.sort_unstable();
    Some(EndToEnd {
        latencies_us,
        floor_us,
        writes: written.len(),
        frames_per_s,
        shortest_gap_ms,
        cpu_streaming_pct: cpu_streaming / streaming.max(0.001) * 100.0,
        cpu_idle_pct: cpu_idle / idle_secs.max(0.001) * 100.0,
        idle_bytes,
        rss_mib,
    })
}

/// One end-to-end run, printed; whether it measured anything.
fn run_end_to_end(sessions: usize, rate: u64, seconds: u64, panewise: &Path, fake: &Path) -> bool {
    let dir = std::env::temp_dir().join(format!("pw-dashboard-bench-{}", now_ns()));
    let Some(mut daemon) = spawn_daemon(
        panewise,
        fake,
        &dir,
        // No desktop sink and no bell: neither is part of what is measured.
        "[notify]\ndesktop = false\nbell = false\n",
    ) else {
        eprintln!("dashboard bench: cannot start {}", panewise.display());
        return false;
    };
    let figures = end_to_end(sessions, rate, seconds, panewise, &dir);
    let until = Instant::now() + Duration::from_secs(15);
    while matches!(daemon.try_wait(), Ok(None)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    let Some(figures) = figures else {
        eprintln!(
            "dashboard bench: the run failed; the daemon's stderr is in {}",
            dir.join("daemon.stderr").display()
        );
        return false;
    };
    println!(
        "dashboard {sessions} sessions × {rate} lines/s × {seconds} s, the selected agent's {} writes: \
         write → changed cell on the dashboard's pty {} ({} measured); floor, write → plain \
         subscriber {}",
        figures.writes,
        spread(&figures.latencies_us, "µs"),
        figures.latencies_us.len(),
        spread(&figures.floor_us, "µs"),
    );
    println!(
        "dashboard frames while streaming: {:.1}/s, shortest gap {:.1} ms; CPU {:.1} % of one core \
         streaming, {:.2} % idle ({} bytes written in 10 s idle); peak RSS {} MiB",
        figures.frames_per_s,
        figures.shortest_gap_ms,
        figures.cpu_streaming_pct,
        figures.cpu_idle_pct,
        figures.idle_bytes,
        figures.rss_mib,
    );
    let _ = std::fs::remove_dir_all(&dir);
    true
}

/// A run that failed fails the target, so `cargo test --all-targets` (one short run) notices a
/// dashboard that no longer works end to end; a machine without the binary only skips it.
fn main() -> ExitCode {
    let benching = std::env::args().any(|arg| arg == "--bench");
    let frames = if benching { 3_000 } else { 50 };
    let panewise = panewise_binary();
    let fake = PathBuf::from(env!("CARGO_BIN_EXE_fake_claude"));
    let mut failed = false;
    for load in load_runs("dashboard", &["3:10:1"], &["100:10:20"]) {
        for listed in [1, load.sessions] {
            let times = frame_times(listed, frames);
            println!(
                "dashboard frame (update + view on TestBackend {COLUMNS}×{ROWS}), {listed:>3} sessions listed, {frames} frames: {}",
                spread(&times, "µs")
            );
        }
        let Some(panewise) = &panewise else {
            eprintln!(
                "dashboard bench: no panewise binary beside this bench; build it first \
                 (`cargo build --release -p panewise-cli`) or set PANEWISE_BIN"
            );
            continue;
        };
        failed |= !run_end_to_end(load.sessions, load.rate, load.seconds, panewise, &fake);
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
