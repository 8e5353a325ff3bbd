//! The session engine (issue 17) against the bare fold of the same bytes, in the same run.
//!
//! Input: the real Claude Code capture `claude-code/tool-call-partial-messages.ndjson`, its
//! `system/init` line, then its turn body (every line between the init and the final `result`)
//! repeated `REPEATS` times, then its `result` line: one long turn, sent one line per chunk, as a
//! stream-json CLI writes it.
//!
//! - `engine`: a whole [`Session`] (`Session::run`, spawned) over a Claude CLI backend whose
//!   process is scripted in memory (`Launcher::scripted()`): the bench receives the spawn,
//!   reads the two stdin lines the session writes (the initialize request, the prompt), sends
//!   the lines on stdout, waits for the session to close stdin once the turn is done, closes
//!   stdout and sends the exit. Everything the engine does per message is in it: decode, map,
//!   record + fold, transcript lines, the updates to a front end (drained by a task on the same
//!   runtime). The log goes to a sink writer (`Session::with_log`), so no disk is timed.
//! - `bare-fold`: `Decoder` + `Mapper` + `SessionLogFile::record` over the same chunks, the log
//!   on the same sink writer (what `benches/benches/live.rs` does per line, without a process).
//!
//! Throughput is in reducer messages recorded (each path's own count, printed once). Wall time
//! on one current-thread tokio runtime.
//!
//! Run: `cargo bench -p panewise-benches --bench engine -- --measurement-time 3`.
// A bench that cannot set up its input has nothing to measure, so setup failures panic; and
// criterion's macros generate undocumented public functions.
#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use panewise_host::agent::AgentExit;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::cli::{Channel, CliAgent, CliLaunch};
use panewise_host::backend::process::Launcher;
use panewise_host::backend::Backend;
use panewise_host::session::handle::spawn;
use panewise_host::session::{log_header, Session, SessionSpec, Update};
use panewise_host::session_log::SessionLogFile;
use panewise_providers::claude_control::ClaudeLaunch;
use panewise_providers::{Decoder, Mapper, ModelTable, Provider};

/// How many times the capture's turn body is repeated in one session.
const REPEATS: [usize; 2] = [10, 100];

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// The capture's lines: init, the body `repeats` times, the result; one chunk per line.
fn chunks(repeats: usize) -> Vec<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/providers/tests/data/claude-code/tool-call-partial-messages.ndjson");
    let text = std::fs::read_to_string(path).expect("the capture");
    let lines: Vec<String> = text.lines().map(|line| format!("{line}\n")).collect();
    let (init, rest) = lines.split_first().expect("an init line");
    let (result, body) = rest.split_last().expect("a result line");
    let mut out = vec![init.clone().into_bytes()];
    for _ in 0..repeats {
        out.extend(body.iter().map(|line| line.clone().into_bytes()));
    }
    out.push(result.clone().into_bytes());
    out
}

/// One whole session over the chunks; returns how many messages it recorded.
async fn engine_once(chunks: &[Vec<u8>], cwd: &std::path::Path) -> usize {
    let (launcher, mut spawned) = Launcher::scripted();
    let backend = CliAgent::new(CliLaunch {
        program: "claude".to_owned(),
        channel: Channel::Claude(ClaudeLaunch::default()),
        cwd: cwd.to_path_buf(),
        env: Vec::new(),
        env_remove: Vec::new(),
        resume: None,
        capture: None,
        launcher,
        startup_limit: std::time::Duration::from_secs(60),
    })
    .expect("a CLI backend");
    let header = log_header("claude-code", None, cwd, None);
    let log = SessionLogFile::with_writer(Box::new(std::io::sink()), &header).expect("a log");
    let spec = SessionSpec {
        prompts: vec!["run echo hello".to_owned()],
        approval: ApprovalMode::ReadOnly,
        ..SessionSpec::new(header, cwd.join("engine-bench.jsonl"), cwd.to_path_buf())
    };
    let (session, mut handle) = Session::with_log(spec, Backend::Cli(Box::new(backend)), log);
    let task = spawn(session);
    let front_end = tokio::spawn(async move {
        let mut recorded = 0;
        while let Some(update) = handle.next_update().await {
            if matches!(update, Update::Recorded { .. }) {
                recorded += 1;
            }
            black_box(&update);
        }
        recorded
    });
    let mut process = spawned.recv().await.expect("the session starts its CLI");
    // The initialize request and the prompt.
    for _ in 0..2 {
        black_box(process.stdin.recv().await);
    }
    for chunk in chunks {
        process
            .stdout
            .send(chunk.clone())
            .await
            .expect("the session reads stdout");
    }
    // The turn ended and nothing more can come: the session closes the CLI's stdin.
    while process.stdin.recv().await.is_some() {}
    drop(process.stdout);
    let _ignored = process.exit.send(AgentExit {
        code: Some(0),
        signal: None,
    });
    let outcome = task.await.expect("the session task").expect("the session");
    black_box(&outcome.state);
    front_end.await.expect("the front end")
}

/// The bare fold of the same chunks; returns how many messages it recorded.
fn bare_once(chunks: &[Vec<u8>]) -> usize {
    let header = log_header("claude-code", None, &std::env::temp_dir(), None);
    let mut log = SessionLogFile::with_writer(Box::new(std::io::sink()), &header).expect("a log");
    let mut decoder = Decoder::new(Provider::ClaudeCode);
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let mut decoded = Vec::new();
    let mut msgs = Vec::new();
    let mut recorded = 0;
    for msg in mapper.prologue(0) {
        let _ignored = log.record(0, msg);
        recorded += 1;
    }
    for chunk in chunks {
        decoder.feed(chunk, &mut decoded);
        let ts = now_ms();
        for event in decoded.drain(..).flatten() {
            mapper.map(&event, ts, &mut msgs);
            for msg in msgs.drain(..) {
                let _ignored = black_box(log.record(ts, msg));
                recorded += 1;
            }
        }
    }
    black_box(log.state());
    recorded
}

fn engine(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let cwd = std::env::temp_dir();
    let mut group = c.benchmark_group("engine");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    for repeats in REPEATS {
        let chunks = chunks(repeats);
        let engine_msgs = runtime.block_on(engine_once(&chunks, &cwd));
        let bare_msgs = bare_once(&chunks);
        eprintln!(
            "engine: {repeats} repeats, {} lines, {} bytes; messages recorded: engine {engine_msgs}, bare fold {bare_msgs}",
            chunks.len(),
            chunks.iter().map(Vec::len).sum::<usize>(),
        );
        group.throughput(Throughput::Elements(engine_msgs as u64));
        group.bench_with_input(BenchmarkId::new("session", repeats), &repeats, |b, _| {
            b.iter_custom(|iterations| {
                let began = Instant::now();
                for _ in 0..iterations {
                    black_box(runtime.block_on(engine_once(&chunks, &cwd)));
                }
                began.elapsed()
            })
        });
        group.throughput(Throughput::Elements(bare_msgs as u64));
        group.bench_with_input(BenchmarkId::new("bare-fold", repeats), &repeats, |b, _| {
            b.iter(|| black_box(bare_once(&chunks)))
        });
    }
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
