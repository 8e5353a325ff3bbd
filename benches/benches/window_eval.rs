//! `panewise window eval` on the whole shared corpus (`../shared/trajectories` from the
//! workspace root): every file read and parsed, every session replayed through the default
//! strategy set, the totals table rendered, as the CLI does it (its shell's progress bar and
//! standard-error lines left out).
//!
//! Prints the table the CLI prints, then, from the same process: the floor (reading and
//! parsing every file, nothing else), each strategy's replay time summed over the sessions
//! (timed in `evaluate_session`'s hook, as the CLI times it), and the whole run, min and
//! median of several; the target is the whole shared corpus under 2 s (the median), and the
//! bench exits non-zero when it is missed.
//!
//! `cargo bench -p panewise-benches --bench window-eval` (or `cargo xtask bench --bench
//! window-eval`). Without `--bench` (as `cargo test --all-targets` runs it, in the test
//! profile) it runs once and checks no target.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use panewise_benches::rig::percentile;
use panewise_providers::PriceTable;
use panewise_window_eval::replay::Figures;
use panewise_window_eval::report::{
    default_strategies, evaluate_all, CacheChoice, Strategy, DEFAULT_EVAL_THRESHOLD,
};
use panewise_window_eval::{formats, EvalError, Recording};

/// The target: the whole shared corpus evaluated in under this.
const TARGET: Duration = Duration::from_secs(2);

/// Timed runs of the whole evaluation, after one warm-up run whose table is printed. A run
/// takes a fraction of a second, so eleven give a median that one slow run does not move.
const RUNS: usize = 11;

/// What one run of the whole evaluation produced and how long its parts took.
struct Run {
    table: String,
    sessions: usize,
    skipped: Vec<String>,
    /// Every file read and parsed, inside the run.
    parse: Duration,
    /// `evaluate_session` outside its replays: each recording prepared for replay (its
    /// messages hashed, its tool calls' arguments counted, the head sized, the loss index
    /// built) and its figures collected.
    prepare: Duration,
    /// Each strategy's replays, summed over the sessions.
    replays: Vec<Duration>,
    /// The totals table rendered.
    table_time: Duration,
    whole: Duration,
}

/// Every file under `dir`, in name order, recursively; hidden entries and the window ledgers
/// beside panewise logs left out, as `panewise window eval` walks a directory.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| !name.starts_with('.') && !name.ends_with(".window.jsonl"))
        })
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            walk(&entry, files)?;
        } else if entry.is_file() {
            files.push(entry);
        }
    }
    Ok(())
}

/// A file's recordings (every run and segment), or why it cannot be read: the CLI's read.
fn read_recording(path: &Path) -> Result<Vec<Recording>, String> {
    let bytes = std::fs::read(path).map_err(|error| format!("cannot read it: {error}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    formats::read_all(&text).map_err(|error| error.to_string())
}

/// The floor: every file read and parsed, its recording dropped, nothing else.
fn floor(files: &[PathBuf]) -> Duration {
    let clock = Instant::now();
    for file in files {
        // Dropped inside the timed loop, as a run drops each recording after its session.
        let recording = read_recording(file);
        std::hint::black_box(&recording);
    }
    clock.elapsed()
}

/// One whole evaluation, as `panewise window eval DIR` runs it: the walk, each file read and
/// parsed, billed, replayed under every strategy, the table rendered.
fn run(corpus: &Path, strategies: &[Strategy], prices: &PriceTable) -> Result<Run, String> {
    let clock = Instant::now();
    let mut files = Vec::new();
    walk(corpus, &mut files)
        .map_err(|error| format!("cannot walk {}: {error}", corpus.display()))?;
    let mut replays = vec![Duration::ZERO; strategies.len()];
    let mut skipped = Vec::new();
    let mut parse = Duration::ZERO;
    let mut sessions = Vec::new();
    for file in &files {
        let started = Instant::now();
        let read = read_recording(file);
        parse += started.elapsed();
        match read {
            Ok(recordings) => {
                for recording in recordings {
                    let name = match &recording.part {
                        Some(part) => format!("{} ({part})", file.display()),
                        None => file.display().to_string(),
                    };
                    sessions.push((name, recording));
                }
            }
            Err(_) => {
                // The README and licence files beside the sessions; the CLI skips them too.
                skipped.push(
                    file.strip_prefix(corpus)
                        .unwrap_or(file)
                        .display()
                        .to_string(),
                );
            }
        }
    }
    let mut timed = |index: usize, replay: &mut dyn FnMut() -> Result<Figures, EvalError>| {
        let started = Instant::now();
        let figures = replay();
        if let Some(time) = replays.get_mut(index) {
            *time += started.elapsed();
        }
        figures
    };
    let started = Instant::now();
    let (report, refused) = evaluate_all(
        &sessions,
        strategies,
        prices,
        None,
        CacheChoice::Provider,
        &mut timed,
    );
    let evaluate = started.elapsed();
    if let Some((name, error)) = refused.first() {
        return Err(format!("{name}: the replay failed: {error}"));
    }
    let started = Instant::now();
    let table = report.table();
    let table_time = started.elapsed();
    let whole = clock.elapsed();
    let replayed: Duration = replays.iter().sum();
    Ok(Run {
        table,
        sessions: report.sessions.len(),
        skipped,
        parse,
        prepare: evaluate.saturating_sub(replayed),
        replays,
        table_time,
        whole,
    })
}

/// The min and the median of `times`, in milliseconds.
fn min_median(times: &[Duration]) -> (f64, f64) {
    let mut nanos: Vec<u64> = times
        .iter()
        .map(|time| u64::try_from(time.as_nanos()).unwrap_or(u64::MAX))
        .collect();
    nanos.sort_unstable();
    let millis = |nanos: u64| nanos as f64 / 1e6;
    (
        millis(nanos.first().copied().unwrap_or(0)),
        millis(percentile(&nanos, 0.5)),
    )
}

/// Per run, every strategy's replays together (`replays` is per strategy, then per run).
fn all_replays(replays: &[Vec<Duration>], runs: usize) -> Vec<Duration> {
    (0..runs)
        .map(|index| replays.iter().filter_map(|times| times.get(index)).sum())
        .collect()
}

fn main() -> ExitCode {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/trajectories");
    if !corpus.is_dir() {
        eprintln!(
            "window-eval bench: the shared corpus is not at {} (expected ../shared/trajectories beside the workspace root)",
            corpus.display()
        );
        return ExitCode::FAILURE;
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this in the test profile,
    // where one run shows the bench still works and a time would say nothing about the target.
    let benching = std::env::args().any(|arg| arg == "--bench");
    let prices = PriceTable::built_in();
    let strategies: Vec<Strategy> = default_strategies(DEFAULT_EVAL_THRESHOLD)
        .into_iter()
        .map(|strategy| strategy.with_summarizer_prices(&prices))
        .collect();
    let mut files = Vec::new();
    if let Err(error) = walk(&corpus, &mut files) {
        eprintln!(
            "window-eval bench: cannot walk {}: {error}",
            corpus.display()
        );
        return ExitCode::FAILURE;
    }

    // The warm-up brings the files into the page cache, so every timed run reads them alike.
    let first = match run(&corpus, &strategies, &prices) {
        Ok(first) => first,
        Err(error) => {
            eprintln!("window-eval bench: {error}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", first.table);
    if first.sessions == 0 {
        eprintln!("window-eval bench: no session could be read");
        return ExitCode::FAILURE;
    }

    let runs = if benching { RUNS } else { 1 };
    let mut floors = Vec::with_capacity(runs);
    let mut wholes = Vec::with_capacity(runs);
    let mut parses = Vec::with_capacity(runs);
    let mut prepares = Vec::with_capacity(runs);
    let mut tables = Vec::with_capacity(runs);
    let mut replays: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); strategies.len()];
    for _ in 0..runs {
        // The floor and the whole alternate, so a change in the machine's load falls on both.
        floors.push(floor(&files));
        let measured = match run(&corpus, &strategies, &prices) {
            Ok(measured) => measured,
            Err(error) => {
                eprintln!("window-eval bench: {error}");
                return ExitCode::FAILURE;
            }
        };
        // The CLI's standard output is deterministic; a run that printed another table would
        // be timing different work.
        if measured.table != first.table {
            eprintln!("window-eval bench: a run's table differs from the first run's");
            return ExitCode::FAILURE;
        }
        for (times, time) in replays.iter_mut().zip(&measured.replays) {
            times.push(*time);
        }
        wholes.push(measured.whole);
        parses.push(measured.parse);
        prepares.push(measured.prepare);
        tables.push(measured.table_time);
    }

    let (floor_min, floor_median) = min_median(&floors);
    let (whole_min, whole_median) = min_median(&wholes);
    println!();
    println!(
        "window-eval bench: {} files, {} sessions, {} skipped ({}), {} strategies; {runs} timed run(s) after a warm-up{}",
        files.len(),
        first.sessions,
        first.skipped.len(),
        first.skipped.join(", "),
        strategies.len(),
        if benching { "" } else { " (test profile: no target checked)" }
    );
    println!("  (min / median of the runs, ms)");
    let line = |label: &str, (min, median): (f64, f64)| {
        println!("  {label:<46} {min:>8.2} / {median:>8.2}");
    };
    line(
        "floor: every file read and parsed, alone",
        (floor_min, floor_median),
    );
    line(
        "whole run: walk, read, parse, replay, table",
        (whole_min, whole_median),
    );
    println!(
        "  the whole run is {:.1}× the floor (medians); inside it:",
        whole_median / floor_median.max(1e-9)
    );
    line("  read + parse", min_median(&parses));
    line(
        "  each recording prepared for replay",
        min_median(&prepares),
    );
    line(
        "  replays, every strategy",
        min_median(&all_replays(&replays, runs)),
    );
    for (strategy, times) in strategies.iter().zip(&replays) {
        line(&format!("    {}", strategy.label), min_median(times));
    }
    line("  table", min_median(&tables));
    if !benching {
        return ExitCode::SUCCESS;
    }
    let met = whole_median < TARGET.as_secs_f64() * 1e3;
    println!(
        "  target, the whole shared corpus under {:.0} s (median {:.3} s): {}",
        TARGET.as_secs_f64(),
        whole_median / 1e3,
        if met { "PASS" } else { "FAIL" }
    );
    if met {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
