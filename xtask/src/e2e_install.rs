//! The published CLIs the end-to-end cases run, installed from npm at the versions
//! `e2e/versions.json` pins.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

/// Installs `package` at its pinned version under `target/e2e/` (once) and returns the path of
/// its `bin` and the version.
pub(crate) fn install(
    root: &Path,
    target: &Path,
    package: &str,
    bin: &str,
) -> Result<(PathBuf, String)> {
    let versions: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("e2e/versions.json")).context("e2e/versions.json")?,
    )?;
    let version = versions[package]
        .as_str()
        .with_context(|| format!("e2e/versions.json names no version of {package}"))?;
    std::fs::create_dir_all(target)?;
    let installed = target
        .join("node_modules")
        .join(package)
        .join("package.json");
    let current = std::fs::read_to_string(&installed)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if current.as_deref() != Some(version) {
        eprintln!("e2e: npm install {package}@{version}");
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(target)
            .arg(format!("{package}@{version}"))
            .status()
            .context("cannot run npm (Node.js and npm are needed for the end-to-end run)")?;
        ensure!(status.success(), "npm install {package}@{version} failed");
    }
    Ok((
        target.join("node_modules/.bin").join(bin),
        version.to_owned(),
    ))
}
