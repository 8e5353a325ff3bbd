//! `cargo xtask bench --compare`: the window stage against an external baseline on the same input.

use anyhow::{bail, Result};

/// Runs the external baseline comparison.
pub(crate) fn run() -> Result<()> {
    bail!("the window-stage comparison is not built yet (issue 3)")
}
