//! `panewise decode` (issue 4).

use std::process::ExitCode;

/// Arguments of `panewise decode`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `panewise decode`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`panewise decode` is not built yet (issue 4)")
}
