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

/// Why a session stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
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
    /// The window stage refused the conversation.
    #[error("window stage: {0}")]
    Window(#[from] panewise_window::WindowError),
    /// A request would have carried an orphan tool call or result.
    #[error("refused to send a request: {0}")]
    Pairing(#[from] PairingError),
    /// Talking to the agent failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A model's tool call could not be parsed. The agent loop hands it back to the model as the
/// call's error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// No tool has that name.
    #[error("unknown tool `{name}`; the tools are {known}")]
    UnknownTool {
        /// The name the model called.
        name: String,
        /// The tools there are, comma-separated.
        known: String,
    },
    /// The arguments do not fit the tool's schema.
    #[error("bad arguments for `{tool}`: {reason}")]
    BadArguments {
        /// The tool called.
        tool: &'static str,
        /// What is wrong with them.
        reason: String,
    },
}

/// A `panewise.toml` could not be read or holds an invalid value. Every variant names the
/// file; an invalid value also names its key (dotted, as in `window.thresholdTokens`).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("{}: line {line}: {reason}", path.display())]
    Syntax {
        /// The file.
        path: std::path::PathBuf,
        /// The line of the error, from 1.
        line: usize,
        /// What the TOML reader said.
        reason: String,
    },
    /// A key is unknown or its value is invalid.
    #[error("{}: key `{key}`: {reason}", path.display())]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// The key, dotted from the top of the file.
        key: String,
        /// Why it was rejected.
        reason: String,
    },
}

/// A request that would break the tool-call pairing: refused where the request is built,
/// before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairingError {
    /// A tool result whose call is not before it in the request.
    #[error("message {index}: the tool result for call `{call_id}` has no call before it in the request")]
    ResultWithoutCall {
        /// The call id the result quotes.
        call_id: String,
        /// Its position among the request's messages.
        index: usize,
    },
    /// A tool call with no result after it in the request.
    #[error("message {index}: tool call `{call_id}` has no result after it in the request")]
    CallWithoutResult {
        /// The call's id.
        call_id: String,
        /// Its position among the request's messages.
        index: usize,
    },
    /// Two calls with the same id.
    #[error("message {index}: tool call id `{call_id}` is used twice in the request")]
    DuplicateCall {
        /// The repeated id.
        call_id: String,
        /// The position of the second call.
        index: usize,
    },
}
