//! `panewise window` (issue 3).

use std::process::ExitCode;

/// Arguments of `panewise window`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `panewise window`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`panewise window` is not built yet (issue 3)")
}
