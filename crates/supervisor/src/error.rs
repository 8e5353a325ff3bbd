//! What can go wrong in the daemon and its client.

use std::path::PathBuf;

/// An error of the daemon or of a client of it.
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// Neither `XDG_RUNTIME_DIR` nor a private directory under the temporary directory can
    /// be used.
    #[error("no private runtime directory for the daemon's socket: {0}")]
    RuntimeDir(String),
    /// Another daemon holds the lock.
    #[error("a panewise daemon is already running (its lock is {0})")]
    AlreadyRunning(PathBuf),
    /// A file or socket operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The daemon could not be reached, nor started.
    #[error("cannot reach the panewise daemon at {socket}: {why}")]
    Unreachable {
        /// Its socket.
        socket: PathBuf,
        /// Why.
        why: String,
    },
    /// A remote host's daemon could not be reached over the command that reaches it (ssh).
    #[error("{host}: unreachable: {why}")]
    Remote {
        /// The host.
        host: String,
        /// Why: the command's own last words on stderr, when it said any.
        why: String,
    },
    /// The daemon answered with an error, or with something that is not the API.
    #[error(transparent)]
    Api(#[from] panewise_api::ApiError),
    /// The connection closed before the answer came.
    #[error("the daemon closed the connection")]
    Closed,
}

impl SupervisorError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> SupervisorError {
        SupervisorError::Io {
            what: what.into(),
            source,
        }
    }

    /// The API error code, when the daemon answered with one.
    pub fn code(&self) -> Option<panewise_api::ErrorCode> {
        match self {
            SupervisorError::Api(error @ panewise_api::ApiError::Remote { .. }) => {
                Some(error.code())
            }
            _ => None,
        }
    }
}
