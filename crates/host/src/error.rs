//! Errors of the host library: an agent that cannot start, a control a session did not take,
//! and why a session stopped. The errors of the decisions are `panewise_core::error`'s,
//! re-exported here.

pub use panewise_core::error::{
    ConfigError, LaunchError, LoopError, PairingError, ToolError, WriteRefusal,
};

/// An agent CLI could not be started.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The program is not on `PATH`.
    #[error("`{program}` is not installed or not on PATH{}", install_hint(npm_package.as_deref()))]
    NotInstalled {
        /// The program that was looked for.
        program: String,
        /// The npm package that installs it.
        npm_package: Option<String>,
    },
    /// The program started but wrote nothing on its output channel within its start-up
    /// limit (`[deadlines] startup_secs`): it was stopped.
    #[error(
        "`{program}` started but wrote nothing in {seconds} s, so the session was stopped{}",
        stderr.as_deref().map(|line| format!("; its last error line: {line}")).unwrap_or_default()
    )]
    Silent {
        /// The program.
        program: String,
        /// The limit it ran out.
        seconds: u64,
        /// The last line it wrote on stderr, if any.
        stderr: Option<String>,
    },
    /// The program exists but could not be started.
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

fn install_hint(npm_package: Option<&str>) -> String {
    npm_package
        .map(|package| format!(" (install it with `npm install -g {package}`)"))
        .unwrap_or_default()
}

/// Why a session stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The window strategy is one the provider applies, and this API or model does not:
    /// refused at start, never ignored.
    #[error(transparent)]
    ProviderContext(#[from] panewise_providers::Unsupported),
    /// The agent CLI could not be started.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The session log cannot be written: the session was stopped.
    #[error("cannot write the session log {}: {source}; the session was stopped and the agent interrupted", path.display())]
    Log {
        /// The log.
        path: std::path::PathBuf,
        /// What the write said.
        source: std::io::Error,
    },
    /// The window ledger cannot be written: the session was stopped.
    #[error("cannot write the window ledger {}: {source}; the session was stopped", path.display())]
    Ledger {
        /// The ledger.
        path: std::path::PathBuf,
        /// What the write said.
        source: std::io::Error,
    },
    /// The window's archive cannot be written or read: the session was stopped (W75).
    #[error("cannot {action} the window archive {}: {source}; the session was stopped", path.display())]
    Archive {
        /// `write` or `read`.
        action: &'static str,
        /// The archive.
        path: std::path::PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The window stage refused the conversation.
    #[error("window stage: {0}")]
    Window(#[from] panewise_window::WindowError),
    /// A request would have carried an orphan tool call or result.
    #[error("refused to send a request: {0}")]
    Pairing(#[from] PairingError),
    /// The request's rendered history went out of step with the conversation (a window edit
    /// it could not replay).
    #[error("cannot build the request: {0}")]
    Request(panewise_providers::RequestError),
    /// Talking to the agent failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl From<panewise_providers::RequestError> for SessionError {
    fn from(error: panewise_providers::RequestError) -> Self {
        match error {
            panewise_providers::RequestError::Pairing(pairing) => SessionError::Pairing(pairing),
            other => SessionError::Request(other),
        }
    }
}

impl From<LoopError> for SessionError {
    fn from(error: LoopError) -> Self {
        match error {
            LoopError::Window(window) => SessionError::Window(window),
            LoopError::Pairing(pairing) => SessionError::Pairing(pairing),
            LoopError::Request(request) => SessionError::Request(request),
        }
    }
}

impl From<crate::agent_loop::history::SyncError> for SessionError {
    fn from(error: crate::agent_loop::history::SyncError) -> Self {
        LoopError::from(error).into()
    }
}
