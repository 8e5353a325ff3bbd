//! The daemon's notifications: on the edges into `needs_input` and `done` only, after a
//! delay the state must last, never while a client is attached to the session; delivered to a
//! command (the event as JSON on its stdin) and to the desktop (`notify-send`, where present).

use std::time::Duration;

use panewise_api::{AgentState, SessionSummary, WaitingFor};
use serde::Serialize;
use tokio::io::AsyncWriteExt;

/// Where and when notifications go (`[notify]` in `panewise.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyConfig {
    /// How long the state must last before it is notified.
    pub delay: Duration,
    /// A command run with `sh -c`, the event on its stdin.
    pub command: Option<String>,
    /// `notify-send`, where installed.
    pub desktop: bool,
}

/// Where the daemon reads its `[notify]` settings, each time it may notify: the binary reads
/// the user's file then, so an edited `[notify]` applies without a restart.
pub type NotifySource = std::sync::Arc<dyn Fn() -> NotifyConfig + Send + Sync>;

impl NotifyConfig {
    /// Whether any sink is configured.
    pub fn any(&self) -> bool {
        self.command.is_some() || self.desktop
    }
}

/// The states whose edges are notified (`[notify]`, and `panewise web`'s push, which reuses
/// these rules).
pub fn notified(state: AgentState) -> bool {
    matches!(state, AgentState::NeedsInput | AgentState::Done)
}

/// Whether a summary that was in state `before` (`None`: first seen) and is now `now` is an
/// edge to notify once the delay ran out: into a notified state, nobody attached.
pub fn is_edge(before: Option<AgentState>, now: &SessionSummary) -> bool {
    before != Some(now.state) && notified(now.state) && now.attached == 0
}

/// Whether an edge into `state`, its delay run out, is still to be notified for `now`: the
/// state lasted and still nobody is attached.
pub fn still_due(state: AgentState, now: &SessionSummary) -> bool {
    now.state == state && now.attached == 0
}

/// The event a command reads on its stdin.
#[derive(Debug, Serialize)]
struct Event<'a> {
    v: u32,
    event: &'a str,
    session: &'a SessionSummary,
}

/// Delivers the notification of `summary`'s state to every configured sink.
pub(crate) async fn deliver(config: &NotifyConfig, summary: &SessionSummary) {
    let event = Event {
        v: 1,
        event: summary.state.as_str(),
        session: summary,
    };
    if let Some(command) = &config.command {
        if let Err(error) = run_command(command, &event).await {
            tracing::warn!(%error, "the notification command failed");
        }
    }
    if config.desktop {
        let body = match &summary.waiting_for {
            Some(WaitingFor::Approval { tool, argument, .. }) => {
                format!("approve {tool} {argument}")
            }
            Some(WaitingFor::Question { questions, .. }) => questions.join(" / "),
            Some(WaitingFor::Budget { reason }) => reason.clone(),
            None => format!("{} turn(s) done", summary.turns),
        };
        let title = format!(
            "panewise: {} {}",
            summary.name,
            match summary.state {
                AgentState::NeedsInput => "needs input",
                _ => "is done",
            }
        );
        let sent = tokio::process::Command::new("notify-send")
            .arg("--app-name=panewise")
            .arg(title)
            .arg(body)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .await;
        if let Err(error) = sent {
            // Not installed: the desktop sink is simply absent.
            tracing::debug!(%error, "notify-send");
        }
    }
}

async fn run_command(command: &str, event: &Event<'_>) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is no error.
        let _ = stdin.write_all(&line).await;
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .map_err(|_| std::io::Error::other("still running after 30 s; killed"))??;
    if !status.success() {
        return Err(std::io::Error::other(format!("exited with {status}")));
    }
    Ok(())
}
