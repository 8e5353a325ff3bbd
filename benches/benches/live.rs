//! The live pipeline, from a byte on an agent's stdout to the folded state with its session-log
//! line written: N supervised fake agents (`fake_agent`, writing a real Claude Code capture with
//! partial messages) at R lines per second each, read by the host's own pieces (`AgentProcess`,
//! `Decoder`, `Mapper`, `SessionLogFile`) on one tokio runtime.
//!
//! Reports per run: p50 / p99 latency from the time a line was written (and, beside it, from the
//! time it was due, which adds the fake agent's own wake-up delay) to the time its messages were
//! folded and logged, the host's CPU per second of wall time, its peak RSS, and where the host's
//! busy time went (decode; map, fold and log write; the rest is reading and waking).
//!
//! `cargo bench -p panewise-benches --bench live [-- AGENTS:RATE:SECONDS …]`
//! (default: `1:100:10 10:100:10 50:100:10 50:1000:5`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use panewise_benches::rig::{cpu_seconds, load_runs, now_ns, peak_rss_kib, percentile};

use panewise_host::agent::{AgentCommand, AgentProcess};
use panewise_host::session_log::SessionLogFile;
use panewise_pane_state::log::LogHeader;
use panewise_providers::{Decoder, Mapper, ModelTable, Provider};

/// One agent's figures: latency per line from its due time and from its write time (µs), and
/// the time spent decoding and folding-and-logging (ns).
#[derive(Default)]
struct Measured {
    from_due: Vec<u64>,
    from_write: Vec<u64>,
    decode_ns: u128,
    fold_log_ns: u128,
}

/// Supervises one fake agent to its end.
async fn supervise(
    agent_bin: PathBuf,
    capture: PathBuf,
    rate: f64,
    lines: u64,
    start: u128,
    log: PathBuf,
) -> Measured {
    let times = log.with_extension("times");
    let command = AgentCommand {
        program: agent_bin.to_string_lossy().into_owned(),
        args: vec![
            capture.to_string_lossy().into_owned(),
            rate.to_string(),
            lines.to_string(),
            start.to_string(),
            times.to_string_lossy().into_owned(),
        ],
        ..AgentCommand::default()
    };
    let Ok(mut agent) = AgentProcess::spawn(&command) else {
        eprintln!("live: cannot start {}", command.program);
        return Measured::default();
    };
    let header = LogHeader {
        agent_id: "bench".into(),
        started_at_ms: 0,
        model: None,
        ..LogHeader::default()
    };
    let mut log = match SessionLogFile::create(&log, &header) {
        Ok(log) => log,
        Err(error) => {
            eprintln!("live: cannot create {}: {error}", log.display());
            return Measured::default();
        }
    };
    let mut decoder = Decoder::new(Provider::ClaudeCode);
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let mut measured = Measured::default();
    let mut folded_at = Vec::with_capacity(usize::try_from(lines).unwrap_or(0));
    let mut decoded = Vec::new();
    let mut msgs = Vec::new();
    let mut line_index: u64 = 0;
    for msg in mapper.prologue(0) {
        let _ignored = log.record(0, msg);
    }
    while let Some(bytes) = agent.next_output().await {
        let began = Instant::now();
        decoder.feed(&bytes, &mut decoded);
        let decoded_at = Instant::now();
        let complete_lines = bytes.iter().filter(|byte| **byte == b'\n').count() as u64;
        let ts = u64::try_from(now_ns() / 1_000_000).unwrap_or(0);
        for event in decoded.drain(..).flatten() {
            mapper.map(&event, ts, &mut msgs);
            for msg in msgs.drain(..) {
                let _ignored = log.record(ts, msg);
            }
        }
        measured.decode_ns += decoded_at.duration_since(began).as_nanos();
        measured.fold_log_ns += decoded_at.elapsed().as_nanos();
        let done = now_ns();
        for _ in 0..complete_lines {
            let due = start + (line_index as f64 * 1e9 / rate) as u128;
            measured
                .from_due
                .push(u64::try_from(done.saturating_sub(due) / 1_000).unwrap_or(u64::MAX));
            folded_at.push(done);
            line_index += 1;
        }
    }
    let _ignored = agent.wait().await;
    let written: Vec<u128> = std::fs::read_to_string(&times)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.parse().ok())
        .collect();
    measured.from_write = folded_at
        .iter()
        .zip(&written)
        .map(|(done, wrote)| u64::try_from(done.saturating_sub(*wrote) / 1_000).unwrap_or(u64::MAX))
        .collect();
    measured
}

fn run(agents: usize, rate: f64, seconds: f64, agent_bin: &Path, capture: &Path, dir: &Path) {
    // Session logs are created new (an existing file is refused), so each run writes its own.
    let dir = &dir.join(format!("{agents}x{rate}x{seconds}-{}", now_ns()));
    if let Err(error) = std::fs::create_dir_all(dir) {
        eprintln!("live: cannot create {}: {error}", dir.display());
        return;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("live: cannot start a runtime");
        return;
    };
    let lines = (rate * seconds) as u64;
    // Start in half a second, so every agent is up before its first line is due.
    let start = now_ns() + 500_000_000;
    let cpu_before = cpu_seconds(std::process::id());
    let wall = Instant::now();
    let measured: Vec<Measured> = runtime.block_on(async {
        let tasks: Vec<_> = (0..agents)
            .map(|index| {
                tokio::spawn(supervise(
                    agent_bin.to_path_buf(),
                    capture.to_path_buf(),
                    rate,
                    lines,
                    start,
                    dir.join(format!("agent-{index}.jsonl")),
                ))
            })
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            all.push(task.await.unwrap_or_default());
        }
        all
    });
    let wall = wall.elapsed().as_secs_f64() - 0.5;
    let cpu = cpu_seconds(std::process::id()) - cpu_before;
    let mut from_write: Vec<u64> = measured
        .iter()
        .flat_map(|m| m.from_write.iter().copied())
        .collect();
    let mut from_due: Vec<u64> = measured
        .iter()
        .flat_map(|m| m.from_due.iter().copied())
        .collect();
    from_write.sort_unstable();
    from_due.sort_unstable();
    let decode_s = measured.iter().map(|m| m.decode_ns).sum::<u128>() as f64 / 1e9;
    let fold_log_s = measured.iter().map(|m| m.fold_log_ns).sum::<u128>() as f64 / 1e9;
    let share = |part: f64| part / cpu.max(0.000_001) * 100.0;
    println!(
        "live {agents:>3} agents × {rate:>5} lines/s × {seconds} s: {} lines, from write p50 {} µs, p99 {} µs, max {} µs (from due p50 {} µs, p99 {} µs), host CPU {:.1} % of one core, peak RSS {} MiB; of the host's CPU: decode {:.0} %, map+fold+log write {:.0} %, the rest (reading stdout, waking, the runtime) {:.0} %",
        from_write.len(),
        percentile(&from_write, 0.50),
        percentile(&from_write, 0.99),
        from_write.last().copied().unwrap_or(0),
        percentile(&from_due, 0.50),
        percentile(&from_due, 0.99),
        cpu / wall.max(0.001) * 100.0,
        peak_rss_kib(std::process::id()) / 1024,
        share(decode_s),
        share(fold_log_s),
        (100.0 - share(decode_s) - share(fold_log_s)).max(0.0),
    );
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let capture =
        root.join("crates/providers/tests/data/claude-code/tool-call-partial-messages.ndjson");
    let agent_bin = PathBuf::from(env!("CARGO_BIN_EXE_fake_agent"));
    let dir = std::env::temp_dir().join(format!("panewise-live-bench-{}", std::process::id()));
    if let Err(error) = std::fs::create_dir_all(&dir) {
        eprintln!("live: cannot create {}: {error}", dir.display());
        return;
    }
    let full = ["1:100:10", "10:100:10", "50:100:10", "50:1000:5"];
    for load in load_runs("live", &["2:100:1"], &full) {
        run(
            load.sessions,
            load.rate as f64,
            load.seconds as f64,
            &agent_bin,
            &capture,
            &dir,
        );
    }
    let _ignored = std::fs::remove_dir_all(&dir);
}
