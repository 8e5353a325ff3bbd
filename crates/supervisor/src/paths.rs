//! Where the daemon's socket and lock live: `$XDG_RUNTIME_DIR/panewise/`, or a directory of
//! this user's own under the temporary directory (mode 0700) when there is no runtime
//! directory.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::SupervisorError;

/// The socket's file name in the runtime directory.
pub const SOCKET_NAME: &str = "daemon.sock";
/// The lock's file name: held by the running daemon, so two never run.
pub const LOCK_NAME: &str = "daemon.lock";
/// Where a daemon started on demand writes its stderr.
pub const STDERR_NAME: &str = "daemon.log";

/// This process's real user id.
pub fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// The daemon's directory, created (mode 0700) when missing; one that another user owns, or
/// that others can enter, is refused.
pub fn runtime_dir() -> Result<PathBuf, SupervisorError> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty()) {
        Some(base) => PathBuf::from(base).join("panewise"),
        None => std::env::temp_dir().join(format!("panewise-{}", uid())),
    };
    ensure_private_dir(&dir)?;
    Ok(dir)
}

fn ensure_private_dir(dir: &Path) -> Result<(), SupervisorError> {
    let refuse = |why: String| SupervisorError::RuntimeDir(format!("{}: {why}", dir.display()));
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(error) => return Err(refuse(error.to_string())),
    }
    let metadata = std::fs::symlink_metadata(dir).map_err(|error| refuse(error.to_string()))?;
    if !metadata.is_dir() {
        return Err(refuse("not a directory".to_owned()));
    }
    if metadata.uid() != uid() {
        return Err(refuse(format!(
            "owned by uid {}, not this user ({})",
            metadata.uid(),
            uid()
        )));
    }
    if metadata.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|error| refuse(error.to_string()))?;
    }
    Ok(())
}

/// The socket's path.
pub fn socket_path() -> Result<PathBuf, SupervisorError> {
    Ok(runtime_dir()?.join(SOCKET_NAME))
}
