//! Errors of the host library.

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

/// A supervised session could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The agent could not be started.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The session log could not be written: the session stopped and the agent with it.
    #[error("cannot write the session log {}: {source}; the session was stopped and the agent interrupted", path.display())]
    Log {
        /// The log.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing to the agent, or waiting for it, failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
