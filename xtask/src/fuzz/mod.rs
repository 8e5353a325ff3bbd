//! `cargo xtask fuzz`: a fuzz harness on stable Rust for every reader of untrusted bytes.
//!
//! Inputs are structure-aware mutations ([`mutate`]) of the real captures, golden logs and the
//! window conversation, run in-process under [`std::panic::catch_unwind`]. Overflow checks must
//! be on for a wrapped sum to count as a finding: the dev and test profiles have them by
//! default, and the workspace's release profile sets `overflow-checks = true`.
//!
//! The `window-properties` target ([`properties`]) mutates nothing: it generates histories and
//! checks the window stage's safety properties on every visit, printing per-strategy counts.
//!
//! A panicking input is saved as `<out>/<target>/crash-<hash>.bin` (default out:
//! `target/fuzz`) and the command that reproduces it is printed; the slowest input of the run
//! is kept as `<out>/<target>/slowest.bin`.

pub mod mutate;
pub mod properties;
pub mod targets;

use std::cell::RefCell;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use mutate::{Mutator, SplitMix64};
pub use targets::{Target, PLANTED_SEED};

/// The seed used when `--seed` is not given, so two runs try the same inputs.
pub const DEFAULT_SEED: u64 = 0x5EED_FA11_0000_0001;

/// At most this many distinct crashing inputs are saved per target and run.
const MAX_SAVED_CRASHES: usize = 20;

/// How long and how a target is fuzzed.
#[derive(Debug, Clone)]
pub struct Options {
    /// Stop after this many inputs (seeds included).
    pub iterations: Option<u64>,
    /// Stop after this long.
    pub time_limit: Option<Duration>,
    /// Seed of the mutation PRNG.
    pub seed: u64,
    /// Where crashing inputs are saved (`<out>/<target>/crash-<hash>.bin`).
    pub out_dir: PathBuf,
    /// The workspace root, where the seed files are found.
    pub root: PathBuf,
}

/// What one target's run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target.
    pub target: Target,
    /// Inputs run, seeds included.
    pub inputs: u64,
    /// Inputs that panicked.
    pub panics: u64,
    /// The saved crashing inputs (distinct ones, at most 20 per run).
    pub crashes: Vec<PathBuf>,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The slowest input: its time and its size in bytes.
    pub slowest: (Duration, usize),
    /// The process's peak resident memory so far (`VmHWM`), in KiB, when the OS reports it.
    pub peak_rss_kib: Option<u64>,
    /// The `window-properties` target's counts; `None` for a byte target.
    pub properties: Option<properties::PropertyCounts>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9);
        if let Some(counts) = &self.properties {
            writeln!(
                f,
                "fuzz {}: {} generated histories in {:.1} s ({rate:.0}/s), {} broke a property, \
                 slowest case {:.2} ms",
                self.target.name(),
                self.inputs,
                self.elapsed.as_secs_f64(),
                self.panics,
                self.slowest.0.as_secs_f64() * 1e3,
            )?;
            for (name, tally) in properties::STRATEGY_NAMES.iter().zip(&counts.per_strategy) {
                writeln!(f, "  {name}: {tally}")?;
            }
            return write!(f, "  all strategies: {}", counts.total());
        }
        write!(
            f,
            "fuzz {}: {} inputs in {:.1} s ({rate:.0}/s), {} panics, slowest input {:.2} ms \
             ({} bytes), peak memory {}",
            self.target.name(),
            self.inputs,
            self.elapsed.as_secs_f64(),
            self.panics,
            self.slowest.0.as_secs_f64() * 1e3,
            self.slowest.1,
            self.peak_rss_kib
                .map_or_else(|| "unknown".to_owned(), |kib| format!("{} MiB", kib / 1024)),
        )
    }
}

thread_local! {
    /// Set while this thread runs fuzz inputs: its panics are recorded here, not printed.
    static CAUGHT: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// Installs, once, a panic hook that keeps fuzzed panics quiet (recording their message) and
/// passes every other panic to the default hook.
fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let quiet = CAUGHT.with(|caught| {
                let mut caught = caught.borrow_mut();
                match caught.as_mut() {
                    Some(slot) => {
                        *slot = Some(info.to_string());
                        true
                    }
                    None => false,
                }
            });
            if !quiet {
                default(info);
            }
        }));
    });
}

/// Runs one input, returning the panic message when it panicked.
pub fn run_caught(target: Target, input: &[u8]) -> Option<String> {
    catch(|| target.run(input)).err()
}

/// Runs `work` with its panic caught quietly: its value, or the panic's message.
pub(crate) fn catch<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    install_quiet_hook();
    CAUGHT.with(|caught| *caught.borrow_mut() = Some(None));
    let result = panic::catch_unwind(AssertUnwindSafe(work));
    let message = CAUGHT.with(|caught| caught.borrow_mut().take().flatten());
    result.map_err(|_| message.unwrap_or_else(|| "panic without a message".to_owned()))
}

/// Whether this build panics on integer overflow (the profile's `overflow-checks`).
pub fn overflow_checks_on() -> bool {
    install_quiet_hook();
    CAUGHT.with(|caught| *caught.borrow_mut() = Some(None));
    let max = std::hint::black_box(u8::MAX);
    #[allow(clippy::arithmetic_side_effects)]
    let wrapped = panic::catch_unwind(move || max + std::hint::black_box(1)).is_err();
    CAUGHT.with(|caught| caught.borrow_mut().take());
    wrapped
}

/// Reads the seed files of `target`, sorted by path so the run is reproducible.
pub fn load_seeds(root: &Path, target: Target) -> Result<Vec<Vec<u8>>> {
    if target == Target::Planted {
        return Ok(vec![PLANTED_SEED.as_bytes().to_vec()]);
    }
    let mut paths = Vec::new();
    for (dir, extensions) in target.seed_dirs() {
        let dir = root.join(dir);
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            let matches = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e));
            if matches {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
        .iter()
        .map(|path| std::fs::read(path).with_context(|| format!("cannot read {}", path.display())))
        .collect()
}

/// FNV-1a over the input: names a crash file, so the same input is saved once.
fn input_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The peak resident set size of this process in KiB (`VmHWM` in `/proc/self/status`).
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Fuzzes one target until its iteration or time budget runs out (the seeds alone when
/// neither is given), saving and announcing every distinct crashing input.
pub fn run(target: Target, options: &Options) -> Result<Report> {
    if target == Target::WindowProperties {
        return properties::run(options);
    }
    let seeds = load_seeds(&options.root, target)?;
    let mut all_seeds = Vec::new();
    for other in Target::REAL {
        all_seeds.extend(load_seeds(&options.root, other)?);
    }
    all_seeds.extend(seeds.iter().cloned());
    let mutator = Mutator::new(seeds, &all_seeds);
    // Each target draws its own stream from the one seed.
    let mut rng = SplitMix64::new(options.seed ^ input_hash(target.name().as_bytes()));

    let started = Instant::now();
    let mut slowest_input = Vec::new();
    let mut report = Report {
        target,
        inputs: 0,
        panics: 0,
        crashes: Vec::new(),
        elapsed: Duration::ZERO,
        slowest: (Duration::ZERO, 0),
        peak_rss_kib: None,
        properties: None,
    };
    loop {
        if options
            .iterations
            .is_some_and(|limit| report.inputs >= limit)
            || options
                .time_limit
                .is_some_and(|limit| started.elapsed() >= limit)
        {
            break;
        }
        let input = match mutator.seeds().get(report.inputs as usize) {
            Some(seed) => seed.clone(),
            None => mutator.mutate(&mut rng),
        };
        let began = Instant::now();
        let outcome = run_caught(target, &input);
        let took = began.elapsed();
        report.inputs += 1;
        if took > report.slowest.0 {
            report.slowest = (took, input.len());
            slowest_input.clone_from(&input);
        }
        if let Some(message) = outcome {
            report.panics += 1;
            save_crash(target, options, &input, &message, &mut report)?;
        }
    }
    report.elapsed = started.elapsed();
    report.peak_rss_kib = peak_rss_kib();
    // Kept for a look at what is slow; `--reproduce` reruns it.
    let dir = options.out_dir.join(target.name());
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join("slowest.bin");
    std::fs::write(&path, &slowest_input)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(report)
}

fn save_crash(
    target: Target,
    options: &Options,
    input: &[u8],
    message: &str,
    report: &mut Report,
) -> Result<()> {
    let dir = options.out_dir.join(target.name());
    let path = dir.join(format!("crash-{:016x}.bin", input_hash(input)));
    if report.crashes.contains(&path) || report.crashes.len() >= MAX_SAVED_CRASHES {
        return Ok(());
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(&path, input).with_context(|| format!("cannot write {}", path.display()))?;
    let first_line = message.lines().collect::<Vec<_>>().join(" ");
    let what = if target == Target::WindowProperties {
        "PROPERTY BROKEN"
    } else {
        "PANIC"
    };
    eprintln!(
        "fuzz {}: {what} ({} bytes): {first_line}\n  saved {}\n  reproduce: cargo xtask fuzz \
         --target {} --reproduce {}",
        target.name(),
        input.len(),
        path.display(),
        target.name(),
        path.display(),
    );
    report.crashes.push(path);
    Ok(())
}

/// Runs one saved input, letting its panic print with the default hook's message and location.
/// Returns whether it panicked.
pub fn reproduce(target: Target, file: &Path) -> Result<bool> {
    let input = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let result = panic::catch_unwind(AssertUnwindSafe(|| target.run(&input)));
    Ok(result.is_err())
}
