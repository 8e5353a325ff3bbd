//! `cargo xtask`: the workspace's automation, written in Rust so it runs wherever cargo does.
//!
//! - `cargo xtask ci` — format check, clippy with warnings denied, all tests (which include the
//!   purity and tidy tests in `xtask/tests/tidy.rs`), and docs with warnings denied. This is
//!   what `.ci/run` executes.
//! - `cargo xtask deps` — the purity check alone (dependency allowlists and source scan).
//! - `cargo xtask bench [--compare]` — the criterion benches; `--compare` also runs the external
//!   baseline comparison of the window stage.

mod compare;

use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

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

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.task {
        Task::Ci => ci(),
        Task::Deps => xtask::purity::check(),
        Task::Bench { compare, bench } => {
            let mut args = vec!["bench", "-p", "panewise-benches"];
            if let Some(name) = bench.as_deref() {
                args.extend(["--bench", name]);
            }
            cargo(&args, &[])?;
            if compare {
                compare::run()?;
            }
            Ok(())
        }
    }
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
