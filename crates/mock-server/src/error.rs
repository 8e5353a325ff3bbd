//! The errors the mock server reports to its caller.

use std::path::PathBuf;

/// Why the mock server could not start or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// The loopback listener could not be bound (port taken, no permission).
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port that was asked for (0 = ephemeral).
        port: u16,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The JSONL request log could not be opened for appending.
    #[error("cannot open the request log {path}: {source}")]
    LogFile {
        /// The path given with `--log`.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Accepting a connection failed in a way that stops the server.
    #[error("the listener failed: {0}")]
    Accept(std::io::Error),
    /// A scenario name that is not one of [`crate::Scenario::ALL`].
    #[error("unknown scenario `{0}` (known: {known})", known = crate::Scenario::names().join(", "))]
    UnknownScenario(String),
}

/// The crate's result type.
pub type Result<T, E = MockError> = std::result::Result<T, E>;
