//! The `window-properties` target: generated histories run through every window strategy, with
//! the safety properties of `panewise_window::properties` checked on every visit (issue 31).
//!
//! Unlike the byte targets it mutates nothing: case `i` is strategy `i mod 9` and a seed drawn
//! from the run's seed and `i`, so every strategy gets the same share of the budget and a run
//! is the same cases however many threads share it. A case that breaks a property (or panics)
//! is saved as its case line, which `--reproduce` reruns.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use panewise_window::properties::{self, Tally, STRATEGIES};

/// The strategies, in the order of [`PropertyCounts::per_strategy`].
pub const STRATEGY_NAMES: [&str; STRATEGIES.len()] = STRATEGIES;

use super::mutate::SplitMix64;
use super::{catch, input_hash, peak_rss_kib, save_crash, Options, Report, Target};

/// What a properties run counted, per strategy in [`STRATEGIES`] order.
#[derive(Debug, Clone, Default)]
pub struct PropertyCounts {
    /// The tally of each strategy's cases.
    pub per_strategy: [Tally; STRATEGIES.len()],
}

impl PropertyCounts {
    /// Every strategy's counts added up.
    pub fn total(&self) -> Tally {
        let mut total = Tally::default();
        for tally in &self.per_strategy {
            total.add(tally);
        }
        total
    }
}

/// The seed of case `index` of a run seeded with `run_seed`: a function of the two alone, so
/// a case is the same whichever thread runs it.
fn case_seed(run_seed: u64, index: u64) -> u64 {
    SplitMix64::new(run_seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64()
}

/// What one thread's share of a run found.
#[derive(Default)]
struct Share {
    cases: u64,
    counts: PropertyCounts,
    failures: Vec<(String, String)>,
    slowest: (Duration, String),
}

/// Runs cases `first`, `first + stride`, … until the budget runs out.
fn run_share(options: &Options, run_seed: u64, first: u64, stride: u64, started: Instant) -> Share {
    let mut share = Share::default();
    let mut index = first;
    loop {
        let spent = options.iterations.is_some_and(|limit| index >= limit)
            || options
                .time_limit
                .is_some_and(|limit| started.elapsed() >= limit);
        if spent {
            return share;
        }
        let strategy = (index % STRATEGIES.len() as u64) as usize;
        let seed = case_seed(run_seed, index);
        let began = Instant::now();
        let outcome = catch(|| properties::run_case(strategy, seed));
        let took = began.elapsed();
        share.cases += 1;
        let line = || properties::case_line(strategy, seed);
        if took > share.slowest.0 {
            share.slowest = (took, line());
        }
        match outcome {
            Ok(Ok(tally)) => share.counts.per_strategy[strategy].add(&tally),
            Ok(Err(violation)) => share.failures.push((line(), violation.to_string())),
            Err(panic) => share
                .failures
                .push((line(), format!("panic in case `{}`: {panic}", line()))),
        }
        index += stride;
    }
}

/// Runs cases until the iteration or time budget runs out, on every core the machine offers:
/// case `i` is strategy `i mod 9` with a seed drawn from the run's seed and `i`.
pub fn run(options: &Options) -> Result<Report> {
    let target = Target::WindowProperties;
    let run_seed = options.seed ^ input_hash(target.name().as_bytes());
    let threads = std::thread::available_parallelism().map_or(1, usize::from) as u64;
    let started = Instant::now();
    let shares: Option<Vec<Share>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|first| scope.spawn(move || run_share(options, run_seed, first, threads, started)))
            .collect();
        // Each case's panic is caught inside its share; a thread that still died lost cases.
        handles
            .into_iter()
            .map(|handle| handle.join().ok())
            .collect()
    });
    let Some(shares) = shares else {
        bail!("a window-properties thread died outside a case");
    };
    let mut report = Report {
        target,
        inputs: 0,
        panics: 0,
        crashes: Vec::new(),
        elapsed: started.elapsed(),
        slowest: (Duration::ZERO, 0),
        peak_rss_kib: peak_rss_kib(),
        properties: None,
    };
    let mut counts = PropertyCounts::default();
    let mut slowest_line = String::new();
    for share in shares {
        report.inputs += share.cases;
        for (total, tally) in counts
            .per_strategy
            .iter_mut()
            .zip(&share.counts.per_strategy)
        {
            total.add(tally);
        }
        if share.slowest.0 > report.slowest.0 {
            report.slowest = (share.slowest.0, share.slowest.1.len());
            slowest_line = share.slowest.1;
        }
        for (line, message) in share.failures {
            report.panics += 1;
            save_crash(target, options, line.as_bytes(), &message, &mut report)?;
        }
    }
    report.properties = Some(counts);
    let dir = options.out_dir.join(target.name());
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("slowest.bin"), slowest_line)?;
    Ok(report)
}

/// Runs one saved case line; panics with the broken property, as a byte target panics.
pub fn run_line(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let Some((strategy, seed)) = properties::parse_case_line(text.trim()) else {
        return;
    };
    if let Err(violation) = properties::run_case(strategy, seed) {
        panic!("{violation}");
    }
}
