//! End-to-end tests of the `panewise` binary: one integration-test binary, one module per subcommand.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod decode;
mod mock_server;
mod replay;
mod window;

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built `panewise` binary with `args`, from the host crate's directory.
pub fn panewise(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_panewise"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the panewise binary runs")
}

/// The path of a file under the workspace root, for test data owned by other crates.
pub fn workspace_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}
