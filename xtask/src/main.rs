//! `cargo xtask`: the workspace's automation, written in Rust so it runs wherever cargo does.
//!
//! - `cargo xtask ci` — format check, clippy with warnings denied, all tests (which include the
//!   purity and tidy tests in `xtask/tests/tidy.rs`), docs with warnings denied, a fuzz run
//!   of 20 seconds per byte target, and a million generated histories through the window
//!   stage's safety properties (`window-properties`). This is what `.ci/run` executes.
//! - `cargo xtask deps` — the purity check alone (dependency allowlists and source scan).
//! - `cargo xtask fuzz [--target T] [--iterations N] [--seconds S] [--seed X]` — the fuzz
//!   harness (`xtask/src/fuzz/`); `--reproduce FILE` reruns one saved crashing input.
//! - `cargo xtask bench [--compare]` — the criterion benches; `--compare` also runs the external
//!   baseline comparison of the window stage.

mod compare;
mod e2e;
mod e2e_context;
mod e2e_daemon;
mod e2e_dashboard;
mod e2e_mcp;
mod e2e_metrics;
mod e2e_npm;
mod e2e_questions;
mod e2e_recall;
mod e2e_ssh;
mod e2e_support;
mod e2e_telemetry;
mod e2e_terminal;
mod e2e_views;
mod e2e_window_floor;

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use xtask::fuzz::{self, Target};

#[derive(Parser)]
#[command(name = "xtask", about = "panewise build, check and bench automation")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Run every check CI runs, in order, stopping at the first failure.
    Ci,
    /// Fail if a pure crate links a crate off its allowlist or its source does I/O, reads a
    /// clock, spawns, draws randomness or uses async.
    Deps,
    /// Fuzz the readers of untrusted bytes, and check the window stage's safety properties on
    /// generated histories (`window-properties`); exits non-zero when any input panicked or
    /// broke a property.
    Fuzz(FuzzArgs),
    /// Run `panewise run` against the published CLIs (npm, pinned in e2e/versions.json) and the
    /// mock model server.
    E2e {
        /// Only the cases whose name contains this (`codex`, `gemini`, `claude-write`, `dashboard`,
        /// `ssh`).
        filter: Option<String>,
        /// Save each case's raw CLI stream (and its stdin) into this directory, named after the
        /// case, as decoder fixtures.
        #[arg(long, value_name = "DIR")]
        capture: Option<std::path::PathBuf>,
    },
    /// Run the criterion benches.
    Bench {
        /// Also run the external baseline comparison of the window stage and print the ratio.
        #[arg(long)]
        compare: bool,
        /// Only run this bench target (for example `window` or `reducer_fold`).
        #[arg(long)]
        bench: Option<String>,
    },
}

#[derive(clap::Args)]
struct FuzzArgs {
    /// Only this target (default: every byte target, then `window-properties`; `planted` is the
    /// harness's self-test).
    #[arg(long, value_enum)]
    target: Option<Target>,
    /// Inputs per target, the unmutated seeds included (for `window-properties`: generated
    /// histories, spread evenly over the nine strategies).
    #[arg(long)]
    iterations: Option<u64>,
    /// Seconds per target. With neither budget, 20 000 inputs per target.
    #[arg(long)]
    seconds: Option<f64>,
    /// Seed of the mutation PRNG (the same seed tries the same inputs).
    #[arg(long, default_value_t = fuzz::DEFAULT_SEED)]
    seed: u64,
    /// Where crashing inputs are saved, as `<DIR>/<target>/crash-<hash>.bin`.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run one saved input through `--target` and report whether it panics.
    #[arg(long, value_name = "FILE", requires = "target")]
    reproduce: Option<PathBuf>,
}

/// The fuzz budget of each byte target in `cargo xtask ci`: seven targets, under three minutes.
const CI_FUZZ_SECONDS_PER_TARGET: Duration = Duration::from_secs(20);

/// The budget of `window-properties` in `cargo xtask ci`: the million generated histories issue
/// 31 asks for, about two minutes on one core of a dev build (the window crate is built at
/// opt-level 1 in dev for this), less with more cores.
const CI_WINDOW_PROPERTIES_CASES: u64 = 1_000_000;

/// Inputs per target when no budget is given.
const DEFAULT_FUZZ_ITERATIONS: u64 = 20_000;

fn main() -> Result<ExitCode> {
    let cli = Cli::parse();
    let done = match cli.task {
        Task::Fuzz(args) => return fuzz_cmd(args),
        Task::Ci => ci(),
        Task::Deps => xtask::purity::check(),
        Task::E2e { filter, capture } => e2e::run(
            &xtask::metadata::workspace_root(),
            filter.as_deref(),
            capture.as_deref(),
        ),
        Task::Bench { compare, bench } => bench_cmd(compare, bench.as_deref()),
    };
    done.map(|()| ExitCode::SUCCESS)
}

fn fuzz_cmd(args: FuzzArgs) -> Result<ExitCode> {
    let root = xtask::metadata::workspace_root();
    if let (Some(file), Some(target)) = (&args.reproduce, args.target) {
        return Ok(if fuzz::reproduce(target, file)? {
            eprintln!("fuzz {}: {} panics", target.name(), file.display());
            ExitCode::FAILURE
        } else {
            eprintln!(
                "fuzz {}: {} runs without a panic",
                target.name(),
                file.display()
            );
            ExitCode::SUCCESS
        });
    }
    let time_limit = args
        .seconds
        .map(|s| Duration::try_from_secs_f64(s).context("--seconds must be a non-negative number"))
        .transpose()?;
    let options = fuzz::Options {
        iterations: match (args.iterations, time_limit) {
            (None, None) => Some(DEFAULT_FUZZ_ITERATIONS),
            (iterations, _) => iterations,
        },
        time_limit,
        seed: args.seed,
        out_dir: args.out.unwrap_or_else(|| root.join("target").join("fuzz")),
        root,
    };
    eprintln!(
        "fuzz: overflow checks {} ({} build), seed {:#x}",
        if fuzz::overflow_checks_on() {
            "on"
        } else {
            "OFF: a wrapped sum goes unnoticed"
        },
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        options.seed
    );
    let targets = args
        .target
        .map_or_else(|| Target::DEFAULT.to_vec(), |t| vec![t]);
    let mut panics = 0;
    for target in targets {
        let report = fuzz::run(target, &options)?;
        println!("{report}");
        panics += report.panics;
    }
    Ok(if panics == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("fuzz: {panics} inputs panicked");
        ExitCode::FAILURE
    })
}

fn bench_cmd(compare: bool, bench: Option<&str>) -> Result<()> {
    let mut args = vec!["bench", "-p", "panewise-benches"];
    if let Some(name) = bench {
        args.extend(["--bench", name]);
    }
    cargo(&args, &[])?;
    if compare {
        compare::run()?;
    }
    Ok(())
}

fn ci() -> Result<()> {
    cargo(&["fmt", "--all", "--check"], &[])?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(&["test", "--workspace", "--all-targets"], &[])?;
    // Doc tests are not part of `--all-targets`, so they run as their own step.
    cargo(&["test", "--workspace", "--doc"], &[])?;
    cargo(
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // A short, time-bounded fuzz run of every target, in this (dev, overflow-checked) build.
    let root = xtask::metadata::workspace_root();
    let options = fuzz::Options {
        iterations: None,
        time_limit: Some(CI_FUZZ_SECONDS_PER_TARGET),
        seed: fuzz::DEFAULT_SEED,
        out_dir: root.join("target").join("fuzz"),
        root,
    };
    let mut panics = 0;
    for target in Target::DEFAULT {
        let options = if target == Target::WindowProperties {
            fuzz::Options {
                iterations: Some(CI_WINDOW_PROPERTIES_CASES),
                time_limit: None,
                ..options.clone()
            }
        } else {
            options.clone()
        };
        let report = fuzz::run(target, &options)?;
        println!("{report}");
        panics += report.panics;
    }
    if panics > 0 {
        bail!("fuzz: {panics} inputs panicked or broke a property (saved under target/fuzz/)");
    }
    // The purity check ran above as part of `cargo test` (xtask/tests/tidy.rs).
    println!("xtask ci: all checks passed");
    Ok(())
}

/// Runs `cargo` with the given arguments and extra environment, failing on a non-zero exit.
pub(crate) fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("could not start `{cargo}`"))?;
    if !status.success() {
        bail!("`cargo {}` failed with {status}", args.join(" "));
    }
    Ok(())
}
