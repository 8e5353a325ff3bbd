//! `panewise replay` (issue 2).

use std::process::ExitCode;

/// Arguments of `panewise replay`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `panewise replay`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`panewise replay` is being built")
}
