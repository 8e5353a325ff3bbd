//! Tests of the host library's modules, called directly (no binary): one integration-test
//! binary, one module per library module.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approval;
mod config;
mod process;
mod secrets;
mod tools;

use std::path::Path;

/// Writes `text` to `dir/relative`, creating its parent directories.
pub fn write(dir: &Path, relative: &str, text: &str) {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
