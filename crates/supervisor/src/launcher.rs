//! How the daemon turns a `session/create` into a running session: the binary supplies it
//! (it knows the providers, `panewise.toml` and the mock), the daemon only hosts.

use std::path::PathBuf;

use panewise_api::{ClientContext, CreateParams};
use panewise_host::session::{Session, SessionHandle};

/// What a launched session is, for the list.
#[derive(Debug, Clone)]
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

/// A session made and not yet run.
pub struct Launched {
    /// The session.
    pub session: Session,
    /// Its handle.
    pub handle: SessionHandle,
    /// What it is.
    pub info: LaunchInfo,
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
}
