//! `panewise.toml` found and read: the types, their parsing and layering are
//! `panewise_core::config`'s, re-exported here; this module finds the user file and the
//! project file and reads them (see `docs/CONFIG.md`).

use std::path::{Path, PathBuf};

pub use panewise_core::config::*;

use crate::error::ConfigError;

/// Loads the user file, then the project file found from `cwd` (an absolute path, so the walk
/// sees every ancestor) over it. A file that does not exist is skipped.
pub fn load(cwd: &Path) -> Result<Config, ConfigError> {
    load_files(user_file().as_deref(), project_file(cwd).as_deref())
}

/// Loads `user` (the base) and `project` over it, skipping either when it is `None` or does
/// not exist.
pub fn load_files(user: Option<&Path>, project: Option<&Path>) -> Result<Config, ConfigError> {
    let user = match user.filter(|path| path.is_file()) {
        Some(path) => Some((read_text(path)?, path)),
        None => None,
    };
    let project = match project.filter(|path| path.is_file()) {
        Some(path) => Some((read_text(path)?, path)),
        None => None,
    };
    Config::layered(
        user.as_ref().map(|(text, path)| (text.as_str(), *path)),
        project.as_ref().map(|(text, path)| (text.as_str(), *path)),
    )
}

/// Reads and parses one file.
pub fn read(path: &Path) -> Result<Config, ConfigError> {
    Config::parse(&read_text(path)?, path)
}

/// One configuration file's text, at most [`crate::regular_file::MAX_READ_BYTES`]; a FIFO or a
/// device is refused, not waited on.
fn read_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = crate::regular_file::read_capped(path, crate::regular_file::MAX_READ_BYTES)
        .map_err(|error| ConfigError::Read {
            path: path.to_path_buf(),
            source: error.into_io(),
        })?;
    String::from_utf8(bytes).map_err(|error| ConfigError::Read {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
    })
}

/// The nearest `panewise.toml` from `cwd` up: `cwd` first, then each ancestor, up to and
/// including the first directory holding `.git`, or up to the filesystem root.
pub fn project_file(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// `$XDG_CONFIG_HOME/panewise/panewise.toml` (`~/.config/…` when the variable is unset or
/// not absolute); `None` when there is no home directory either.
pub fn user_file() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    let strategy = etcetera::choose_base_strategy().ok()?;
    Some(strategy.config_dir().join("panewise").join(FILE_NAME))
}
