//! The socket: bound once per user (a lock, a stale socket replaced); `shell/` serves it.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

use crate::error::SupervisorError;
use crate::paths;

/// The socket bound, with the lock that keeps a second daemon out.
pub struct Bound {
    listener: UnixListener,
    socket: PathBuf,
    _lock: File,
}

impl Bound {
    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub(crate) fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// Removes the socket, as the daemon exits (the lock goes with `self`).
    pub(crate) fn remove_socket(self) {
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Takes the lock in `dir` and binds the socket: a socket left by a daemon that died (the
/// lock is free, and connecting fails) is removed first.
pub fn bind(dir: &Path) -> Result<Bound, SupervisorError> {
    let lock_path = dir.join(paths::LOCK_NAME);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|error| SupervisorError::io(format!("open {}", lock_path.display()), error))?;
    if let Err(error) = lock.try_lock() {
        return match error {
            std::fs::TryLockError::WouldBlock => Err(SupervisorError::AlreadyRunning(lock_path)),
            std::fs::TryLockError::Error(error) => Err(SupervisorError::io(
                format!("lock {}", lock_path.display()),
                error,
            )),
        };
    }
    let socket = dir.join(paths::SOCKET_NAME);
    if std::fs::symlink_metadata(&socket).is_ok() {
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Err(SupervisorError::AlreadyRunning(lock_path));
        }
        tracing::info!(socket = %socket.display(), "removing the stale socket of a daemon that died");
        std::fs::remove_file(&socket)
            .map_err(|error| SupervisorError::io(format!("remove {}", socket.display()), error))?;
    }
    let listener = UnixListener::bind(&socket)
        .map_err(|error| SupervisorError::io(format!("bind {}", socket.display()), error))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|error| SupervisorError::io(format!("chmod {}", socket.display()), error))?;
    Ok(Bound {
        listener,
        socket,
        _lock: lock,
    })
}
