//! The purity check: `panewise-pane-state` and `panewise-window` must not depend, through normal
//! (non-dev) edges, on tokio or on any crate whose job is I/O, networking or processes.

use std::process::Command;

use anyhow::{bail, Context, Result};

/// The crates that must stay pure.
const PURE_CRATES: &[&str] = &[
    "panewise-pane-state",
    "panewise-window",
    "panewise-protocol",
    "panewise-providers",
];

/// Crates whose presence in a pure crate's graph means it can do I/O, run an executor or spawn.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "mio",
    "async-std",
    "smol",
    "futures-executor",
    "reqwest",
    "hyper",
    "ureq",
    "socket2",
    "tempfile",
    "walkdir",
    "notify",
    "rand",
    "getrandom",
    "chrono",
    "time",
];

/// Runs `cargo tree` on every pure crate and fails naming each forbidden dependency found.
pub(crate) fn check() -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut violations = Vec::new();
    for krate in PURE_CRATES {
        let output = Command::new(&cargo)
            .args([
                "tree", "-p", krate, "-e", "normal", "--prefix", "none", "--format", "{p}",
            ])
            .output()
            .with_context(|| format!("could not run `cargo tree -p {krate}`"))?;
        if !output.status.success() {
            bail!(
                "`cargo tree -p {krate}` failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let tree = String::from_utf8_lossy(&output.stdout);
        for line in tree.lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            if FORBIDDEN.contains(&name) {
                violations.push(format!("{krate} depends on {name} ({})", line.trim()));
            }
        }
    }
    if !violations.is_empty() {
        bail!(
            "purity check failed; these crates must do no I/O and read no clock:\n  {}",
            violations.join("\n  ")
        );
    }
    println!(
        "xtask deps: {} pure crates checked, no forbidden dependency",
        PURE_CRATES.len()
    );
    Ok(())
}
