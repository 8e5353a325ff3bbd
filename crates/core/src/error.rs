//! Errors of panewise's decisions: a tool call that does not parse, a write the check
//! refuses, a configuration file that does not hold, a request that cannot become a session,
//! and why the own loop stopped.

use std::path::PathBuf;

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

/// Why a file tool does not write a path: the one "inside the working directory" check
/// (`tools::paths::check_write`) refused it when the call was decided, or what is on disk at
/// the moment of the write is no longer what the check saw (`tools::paths::open_for_write`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteRefusal {
    /// A component of the path is a symlink whose target does not exist: writing through it
    /// would create the file wherever the link points.
    #[error(
        "{} goes through the symlink {} (to {}), whose target does not exist; a write through \
         it would create the file wherever the link points, so write to the target itself",
        path.display(), link.display(), target.display()
    )]
    DanglingLink {
        /// The path as given, resolved against the working directory.
        path: PathBuf,
        /// The dangling symlink.
        link: PathBuf,
        /// What it points to, as written in the link.
        target: PathBuf,
    },
    /// Resolving the path follows more symlinks than the system would (a loop).
    #[error("{} cannot be resolved: too many levels of symlinks at {}", path.display(), link.display())]
    LinkLoop {
        /// The path as given, resolved against the working directory.
        path: PathBuf,
        /// The symlink at which the limit was reached.
        link: PathBuf,
    },
    /// A component that must be a directory is a file.
    #[error("{} cannot be written: {} is not a directory", path.display(), component.display())]
    NotADirectory {
        /// The path as given, resolved against the working directory.
        path: PathBuf,
        /// The component that is not a directory.
        component: PathBuf,
    },
    /// The path leads to something that is not a regular file.
    #[error("{} is {kind}, not a regular file", path.display())]
    NotAFile {
        /// Where the path leads.
        path: PathBuf,
        /// What it is (`a directory`, `a FIFO`, …).
        kind: &'static str,
    },
    /// The file has more than one hard link: its other names may be outside the working
    /// directory, and a write through one name changes them all.
    #[error(
        "{} has {links} hard links: its other names may be outside the working directory, and \
         a write through one name changes the file under all of them",
        path.display()
    )]
    HardLinked {
        /// Where the path leads.
        path: PathBuf,
        /// How many names the file has.
        links: u64,
    },
    /// The path names a place inside the working directory but leads outside it.
    #[error(
        "{} is inside the working directory but leads outside it, to {}, through a symlink; \
         name {} itself to write there",
        path.display(), real.display(), real.display()
    )]
    Escapes {
        /// The path as given, resolved against the working directory.
        path: PathBuf,
        /// Where it really leads.
        real: PathBuf,
    },
    /// Between the check and the write, something changed on disk (a directory or the file
    /// swapped for a symlink): nothing was written.
    #[error("{} changed after it was checked: {what}; nothing was written", path.display())]
    Changed {
        /// The path as given, resolved against the working directory.
        path: PathBuf,
        /// What changed.
        what: String,
    },
    /// The filesystem refused to answer or to do it (permissions, a missing file to edit).
    #[error("cannot {action} {}: {reason}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `resolve`, `create the directory`).
        action: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The system's reason.
        reason: String,
        /// The error's kind, so callers can tell a missing file.
        kind: std::io::ErrorKind,
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
/// before anything is sent. The providers' own type, so the loop's check and a
/// [`RenderedHistory`](panewise_providers::RenderedHistory)'s refuse a request with one error.
pub use panewise_providers::PairingError;

/// Why a request cannot become a session: a sentence for the person who asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The provider is not one panewise knows.
    #[error("--provider {name}: expected one of {expected}")]
    UnknownProvider {
        /// The name given.
        name: String,
        /// Every valid name.
        expected: String,
    },
    /// An own-loop provider without an API key in either environment.
    #[error(
        "--provider {provider}: no API key: set {variable} in the environment of the command \
         that asks for the session (or name the variable holding it with `api_key_env` under \
         [providers.{provider}] in panewise.toml); `--provider mock` runs offline"
    )]
    NoKey {
        /// The provider.
        provider: String,
        /// The variable looked up.
        variable: String,
    },
    /// A relative working directory from a client that sent no directory of its own.
    #[error(
        "cwd {}: give an absolute path (the client sent no working directory to take it from)",
        .0.display()
    )]
    RelativeCwd(PathBuf),
    /// A resumed session's working directory is gone.
    #[error("{}: its working directory {} is gone; give another with --cwd", log.display(), cwd.display())]
    RecordedCwdGone {
        /// The log resumed.
        log: PathBuf,
        /// Its recorded directory.
        cwd: PathBuf,
    },
    /// A provider named for a resumed session is not the one it ran with.
    #[error("--provider {named}: {} is a session of {recorded}, and continues with it", log.display())]
    ResumeProvider {
        /// The log resumed.
        log: PathBuf,
        /// The provider it ran with.
        recorded: String,
        /// The provider named.
        named: String,
    },
    /// What a recorded log says cannot be used.
    #[error("{}: recorded {what}", log.display())]
    Recorded {
        /// The log.
        log: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A channel the agent is not driven by.
    #[error("--channel {channel}: {provider} is driven by {driven_by}")]
    Channel {
        /// The channel given.
        channel: String,
        /// The provider.
        provider: String,
        /// The channels it has.
        driven_by: String,
    },
    /// A mock scenario for another provider.
    #[error("mock_scenario: only a session of the `mock` provider has one, not {0}")]
    ScenarioNotMock(String),
    /// A mock scenario when the configuration names the mock's server.
    #[error(
        "mock_scenario: panewise.toml names the mock's base_url, so the scenario is that \
         server's (`panewise mock-server --scenario`)"
    )]
    ScenarioWithBaseUrl,
    /// A scenario the mock does not have.
    #[error("mock_scenario {name:?}: expected one of {expected}")]
    UnknownScenario {
        /// The name given.
        name: String,
        /// Every scenario.
        expected: String,
    },
    /// The launching process offers no mock scenario, so a mock session cannot start.
    #[error("the mock has no scenario to run (the launching process named none)")]
    NoMockScenario,
    /// Any other value that cannot be used, said as a sentence.
    #[error("{0}")]
    Invalid(String),
}

/// Why the own loop's core stopped a session: what it was asked to build cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
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
}

impl From<panewise_providers::RequestError> for LoopError {
    fn from(error: panewise_providers::RequestError) -> Self {
        match error {
            panewise_providers::RequestError::Pairing(pairing) => LoopError::Pairing(pairing),
            other => LoopError::Request(other),
        }
    }
}
