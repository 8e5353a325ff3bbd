//! One hosted session as the registry knows it: its fold (the session's own messages, folded
//! again here, so the daemon needs nothing of the engine but its updates), what the daemon
//! observed of it, and the summary the list shows.

use std::collections::BTreeMap;

use panewise_api::{
    Ending, ErrorCode, Observed, PaneFields, RpcError, SessionSummary, WaitingFor, SUMMARY_VERSION,
};
use panewise_pane_state::State;
use panewise_session_protocol::Actor;

use crate::launcher::LaunchInfo;

/// One hosted session as the registry knows it.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) info: LaunchInfo,
    pub(super) state: State,
    pub(super) observed: Observed,
    /// The requests this daemon sent an answer to that the fold does not show closed yet,
    /// with who answered: of two answers arriving before the session records the first, the
    /// second is refused here rather than sent (R101). Dropped as the fold closes each.
    pub(super) forwarded: BTreeMap<String, Actor>,
    pub(super) stop_requested: bool,
    pub(super) attached: u32,
    pub(super) started_at_ms: u64,
    /// What the session waits for (the front request's id) and since when.
    pub(super) waiting: Option<(String, u64)>,
    /// What the summary last published said of the fields that change (the rest is the
    /// launch's): compared before a whole summary is built, once per handed-over batch.
    pub(super) last_sent: Option<Changing>,
    /// Complete lines of its log so far, and the byte after the last of them.
    pub(super) logged: u64,
    pub(super) logged_bytes: u64,
}

/// A summary's fields that change while its session runs (every other field is its
/// launch's).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Changing {
    pub(super) pane: PaneFields,
    pub(super) name: String,
    pub(super) waiting_since_ms: Option<u64>,
    pub(super) attached: u32,
    pub(super) failure: Option<String>,
}

impl Session {
    pub(crate) fn summary(&self) -> SessionSummary {
        self.summary_with(self.changing())
    }

    /// The summary's fields that change while the session runs.
    pub(super) fn changing(&self) -> Changing {
        let pane = PaneFields::of(&self.state, &self.observed);
        let waiting_since_ms = match (&pane.waiting_for, &self.waiting) {
            (Some(waiting_for), Some((id, since))) if waiting_id(waiting_for) == id => Some(*since),
            _ => None,
        };
        Changing {
            pane,
            name: self.name.clone(),
            waiting_since_ms,
            attached: self.attached,
            failure: match &self.observed.ending {
                Some(Ending::Failed { reason }) => Some(reason.clone()),
                _ => None,
            },
        }
    }

    /// The whole summary: `changing` and what the launch fixed.
    pub(super) fn summary_with(&self, changing: Changing) -> SessionSummary {
        let Changing {
            pane,
            name,
            waiting_since_ms,
            attached,
            failure,
        } = changing;
        SessionSummary {
            v: SUMMARY_VERSION,
            id: self.id.clone(),
            name,
            provider: self.info.provider.clone(),
            model: pane.model.or_else(|| self.info.model.clone()),
            cwd: self.info.cwd.display().to_string(),
            state: pane.state,
            waiting_for: pane.waiting_for,
            tool: pane.tool,
            tool_arg: pane.tool_arg,
            context_pct: pane.context_pct,
            context_window_source: pane.context_window_source,
            waiting_since_ms,
            failure_kind: pane.failure_kind,
            window_stood_down: pane.window_stood_down,
            tokens: pane.tokens,
            cost_usd: pane.cost_usd,
            cost_source: pane.cost_source,
            budget: pane.budget,
            log: self.info.log.display().to_string(),
            approval: self.info.approval.clone(),
            started_at_ms: self.started_at_ms,
            turns: pane.turns,
            attached,
            worktree: self.info.worktree.as_ref().map(|w| w.display().to_string()),
            failure,
        }
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.observed.ending.is_some()
    }

    pub(super) fn ended_error(&self) -> RpcError {
        RpcError::new(
            ErrorCode::SessionEnded,
            format!("session {} has ended", self.name),
        )
    }

    /// Keeps when the request at the front of the fold's queues was first seen: a new
    /// request (another id) starts a new wait, none ends it.
    pub(super) fn note_waiting(&mut self, at_ms: u64) {
        let front = panewise_api::waiting_for(&self.state);
        self.waiting = match (front, self.waiting.take()) {
            (None, _) => None,
            (Some(front), Some((id, since))) if waiting_id(&front) == id => Some((id, since)),
            (Some(front), _) => Some((waiting_id(&front).to_owned(), at_ms)),
        };
    }

    /// Marks what attached clients have seen as seen.
    pub(super) fn look(&mut self) {
        self.observed.turns_seen = self.state.turns_completed;
    }
}

/// The front approval request is still the approval mode's to decide: the session has not
/// put it to a person (R102).
pub(super) fn awaits_the_mode(state: &State) -> bool {
    state
        .pending_approvals
        .front()
        .is_some_and(|front| !front.asked)
}

/// The id of the request a session waits on.
pub(super) fn waiting_id(waiting_for: &WaitingFor) -> &str {
    waiting_for.id()
}

/// The id the daemon lists a launched session under: its log's file stem.
pub(crate) fn session_id(info: &LaunchInfo) -> String {
    info.log
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| info.log.display().to_string())
}
