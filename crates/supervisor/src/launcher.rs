//! How the daemon turns a `session/create` into a running session: the binary supplies it
//! (it knows the providers, `panewise.toml` and the mock), the daemon only hosts.

use std::path::PathBuf;

use panewise_api::{ClientContext, CreateParams};
use panewise_session_protocol::{Control, Update};
use tokio::sync::mpsc;

/// What a launched session is, for the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchInfo {
    /// The provider as named.
    pub provider: String,
    /// The model.
    pub model: Option<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The approval mode's name.
    pub approval: String,
    /// The session log.
    pub log: PathBuf,
    /// The git worktree the session runs in, when it has one.
    pub worktree: Option<PathBuf>,
    /// The working directory was made for the session (the mock's fresh directory): it goes
    /// with the session when nothing was left in it.
    pub own_dir: bool,
    /// The name the session's log records (`new --name`, or the resumed session's), which a
    /// resumed session keeps when no running session has taken it.
    pub name: Option<String>,
}

/// The most bytes a [`LogMirror`] holds untaken: past it the engine stops copying (it sets
/// `lost`) and the daemon reads the rest from the log file, so a daemon that fell behind
/// never holds more of a log in memory than this.
pub const LOG_MIRROR_MAX_BYTES: usize = 4 * 1024 * 1024;

/// What a session wrote to its log that the daemon has not taken yet, copied by the engine
/// as it writes, so the daemon hands new lines to subscribers without reading its own log
/// back. The file stays the record (late subscribers read it); this is a copy of its tail.
#[derive(Debug, Default)]
pub struct LogMirror {
    /// The log offset of `bytes`' first byte.
    pub start: u64,
    /// The bytes written from `start` on, in order.
    pub bytes: Vec<u8>,
    /// The copy stopped (it would have held more than [`LOG_MIRROR_MAX_BYTES`]): the log from
    /// `start` on is read from the file.
    pub lost: bool,
}

impl LogMirror {
    /// A mirror of a log that held `start` bytes when it was attached.
    pub fn at(start: u64) -> LogMirror {
        LogMirror {
            start,
            ..LogMirror::default()
        }
    }

    /// Appends what the engine just wrote, or stops copying once the daemon has left
    /// [`LOG_MIRROR_MAX_BYTES`] untaken.
    pub fn append(&mut self, written: &[u8]) {
        if self.lost {
            return;
        }
        if self.bytes.len().saturating_add(written.len()) > LOG_MIRROR_MAX_BYTES {
            self.lost = true;
            self.bytes = Vec::new();
            return;
        }
        self.bytes.extend_from_slice(written);
    }
}

/// A [`LogMirror`] the engine writes and the daemon's session task takes from.
pub type SharedLogMirror = std::sync::Arc<std::sync::Mutex<LogMirror>>;

/// A session's run to its end; the error is a sentence (the session failed).
pub type SessionRun = futures_util::future::BoxFuture<'static, Result<(), String>>;

/// A session made and not yet run: the daemon sees it through the session protocol only, so
/// it hosts any engine the binary gives it.
pub struct Launched {
    /// The session's run, spawned by the daemon on a task of its own.
    pub run: SessionRun,
    /// Where its controls go. Bounded: a control is sent with `try_send`, never waited for
    /// (the daemon's loop waits on nothing but its inputs), and a full channel is the session
    /// not reading its controls: the daemon logs the control it could not queue.
    pub controls: mpsc::Sender<Control>,
    /// What it tells its front ends, in order. Bounded: the session waits while it is full,
    /// so the daemon must read it without waiting on the session.
    pub updates: mpsc::Receiver<Update>,
    /// What it is.
    pub info: LaunchInfo,
    /// The copy of its log's new bytes, when the engine keeps one; without it the daemon
    /// reads each new line back from the log file.
    pub log_mirror: Option<SharedLogMirror>,
}

/// Makes sessions for the daemon. Every session it makes must ask its front ends
/// (`SessionSpec::can_ask`) and stay open for prompts (`stay_open`).
#[async_trait::async_trait]
pub trait Launcher: Send + Sync + 'static {
    /// Makes the session `params` describe, from the asking client's context
    /// (`params.client`); the error is a sentence for the client.
    async fn create(&self, params: &CreateParams) -> Result<Launched, String>;

    /// Makes a session that continues the recorded `log`, with the asking client's context.
    async fn resume(
        &self,
        log: &std::path::Path,
        prompt: Option<String>,
        client: Option<&ClientContext>,
    ) -> Result<Launched, String>;

    /// Removes what the launcher made for a session (its worktree); says what it did.
    fn remove(&self, info: &LaunchInfo) -> Option<String> {
        let _ = info;
        None
    }

    /// Tidies what the launcher made for a session the daemon's stop ended, which a later
    /// `resume` does not need (an empty directory made for it); a worktree stays, as resume
    /// continues there.
    fn at_shutdown(&self, info: &LaunchInfo) {
        let _ = info;
    }
}
