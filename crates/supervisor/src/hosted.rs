//! The sessions the daemon hosts: each one's task, its folded pane state, and the watchers of
//! its progress. What a session asks is read from its fold alone ([`panewise_api::pick_approval`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use panewise_api::{
    sort_sessions, AgentState, Ending, ErrorCode, Observed, PaneFields, RpcError, SessionSummary,
    WaitingFor, SUMMARY_VERSION,
};
use panewise_pane_state::State;
use panewise_session_protocol::{Actor, Control, Update};
use tokio::sync::{broadcast, mpsc, watch};

use crate::launcher::{LaunchInfo, Launched};
use crate::notify::NotifySource;
use crate::tail::Progress;

/// A change to the session list, for `sessions/subscribe`.
#[derive(Debug, Clone)]
pub(crate) enum ListEvent {
    /// A session's summary is now this.
    Changed(Box<SessionSummary>),
    /// A session was removed.
    Removed(String),
}

/// One hosted session.
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) info: LaunchInfo,
    controls: mpsc::Sender<Control>,
    state: State,
    observed: Observed,
    /// The requests this daemon sent an answer to that the fold does not show closed yet,
    /// with who answered. Not a second record of what is asked (that is the fold's): a guard
    /// on the sending side, so that of two answers arriving before the session records the
    /// first, the second is refused here rather than sent (R101). Dropped as the fold closes
    /// each request.
    forwarded: BTreeMap<String, Actor>,
    stop_requested: bool,
    pub(crate) attached: u32,
    started_at_ms: u64,
    /// What the session waits for (the front request's id) and since when, ms since the
    /// epoch: the stamp of the message that brought the request to the fold's front.
    waiting: Option<(String, u64)>,
    progress: watch::Sender<Progress>,
    last_sent: Option<SessionSummary>,
}

impl Entry {
    pub(crate) fn summary(&self) -> SessionSummary {
        let pane = PaneFields::of(&self.state, &self.observed);
        let waiting_since_ms = match (&pane.waiting_for, &self.waiting) {
            (Some(waiting_for), Some((id, since))) if waiting_id(waiting_for) == id => Some(*since),
            _ => None,
        };
        SessionSummary {
            v: SUMMARY_VERSION,
            id: self.id.clone(),
            name: self.name.clone(),
            provider: self.info.provider.clone(),
            model: self.info.model.clone(),
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
            log: self.info.log.display().to_string(),
            approval: self.info.approval.clone(),
            started_at_ms: self.started_at_ms,
            turns: pane.turns,
            attached: self.attached,
            worktree: self.info.worktree.as_ref().map(|w| w.display().to_string()),
            failure: match &self.observed.ending {
                Some(Ending::Failed { reason }) => Some(reason.clone()),
                _ => None,
            },
        }
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.observed.ending.is_some()
    }

    pub(crate) fn progress(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    fn ended_error(&self) -> RpcError {
        RpcError::new(
            ErrorCode::SessionEnded,
            format!("session {} has ended", self.name),
        )
    }

    /// Sends `control` without waiting (this runs under the registry's lock); a session whose
    /// bounded control channel is full is not reading its controls, and the client is told so.
    fn send(&self, control: Control) -> Result<(), RpcError> {
        self.controls
            .try_send(control)
            .map_err(|error| match error {
                mpsc::error::TrySendError::Closed(_) => self.ended_error(),
                mpsc::error::TrySendError::Full(_) => RpcError::new(
                    ErrorCode::InternalError,
                    format!(
                        "session {} is not taking controls: those sent before are still unread",
                        self.name
                    ),
                ),
            })
    }

    /// Marks what attached clients have seen as seen.
    /// Keeps when the request at the front of the pane state's queues was first seen: a new
    /// request (another id) starts a new wait, none ends it.
    fn note_waiting(&mut self, at_ms: u64) {
        let front = panewise_api::waiting_for(&self.state);
        self.waiting = match (front, self.waiting.take()) {
            (None, _) => None,
            (Some(front), Some((id, since))) if waiting_id(&front) == id => Some((id, since)),
            (Some(front), _) => Some((waiting_id(&front).to_owned(), at_ms)),
        };
    }

    pub(crate) fn look(&mut self) {
        self.observed.turns_seen = self.state.turns_completed;
    }
}

/// The front approval request is still the approval mode's to decide: the session has not
/// put it to a person (R102).
fn awaits_the_mode(state: &State) -> bool {
    state
        .pending_approvals
        .front()
        .is_some_and(|front| !front.asked)
}

/// The id of the request a session waits on.
fn waiting_id(waiting_for: &WaitingFor) -> &str {
    match waiting_for {
        WaitingFor::Approval { id, .. } | WaitingFor::Question { id, .. } => id,
    }
}

/// The daemon's sessions.
#[derive(Clone)]
pub(crate) struct Hosted {
    inner: Arc<Mutex<BTreeMap<String, Entry>>>,
    /// Names asked for by creates still launching, so two at once cannot take one name.
    reserved: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Read again at each edge that may be notified: `[notify]` is the file's as it is now.
    notify: NotifySource,
    list: broadcast::Sender<ListEvent>,
    changes: watch::Sender<u64>,
}

impl Hosted {
    pub(crate) fn new(notify: NotifySource) -> Hosted {
        Hosted {
            inner: Arc::new(Mutex::new(BTreeMap::new())),
            reserved: Arc::default(),
            notify,
            list: broadcast::channel(1024).0,
            changes: watch::channel(0).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        // A panic while the lock was held left the map as it was between two whole
        // operations (each edit is one assignment): keep using it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn list_events(&self) -> broadcast::Receiver<ListEvent> {
        self.list.subscribe()
    }

    /// A receiver that is told whenever any session changes (for `wait`).
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub(crate) fn summaries(&self) -> Vec<SessionSummary> {
        let mut list: Vec<SessionSummary> = self.lock().values().map(Entry::summary).collect();
        sort_sessions(&mut list);
        list
    }

    /// Runs `f` on the session `key` names (an id, a unique prefix of one, or a name).
    pub(crate) fn with<T>(
        &self,
        key: &str,
        f: impl FnOnce(&mut Entry) -> Result<T, RpcError>,
    ) -> Result<T, RpcError> {
        let mut map = self.lock();
        let id = resolve(&map, key)?;
        let entry = map
            .get_mut(&id)
            .ok_or_else(|| RpcError::new(ErrorCode::UnknownSession, "no such session"))?;
        let result = f(entry);
        let summary = entry.summary();
        drop(map);
        self.publish(summary);
        result
    }

    fn publish(&self, summary: SessionSummary) {
        let mut map = self.lock();
        let Some(entry) = map.get_mut(&summary.id) else {
            return;
        };
        if entry.last_sent.as_ref() == Some(&summary) {
            return;
        }
        let before = entry.last_sent.as_ref().map(|sent| sent.state);
        entry.last_sent = Some(summary.clone());
        drop(map);
        if before != Some(summary.state)
            && crate::notify::notified(summary.state)
            && summary.attached == 0
        {
            let config = (self.notify)();
            if config.any() {
                self.notify_later(summary.id.clone(), summary.state, config);
            }
        }
        let _no_subscriber = self.list.send(ListEvent::Changed(Box::new(summary)));
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// After the delay, notifies `state` of session `id` if it still holds and nobody is
    /// attached.
    fn notify_later(&self, id: String, state: AgentState, config: crate::notify::NotifyConfig) {
        let hosted = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(config.delay).await;
            let now = hosted.lock().get(&id).map(Entry::summary);
            if let Some(summary) = now.filter(|s| s.state == state && s.attached == 0) {
                crate::notify::deliver(&config, &summary).await;
            }
        });
    }

    pub(crate) fn name_taken(&self, name: &str) -> bool {
        self.lock().values().any(|entry| entry.name == name)
            || self
                .reserved
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(name)
    }

    /// Holds `name` for a session being launched; false when it is taken. Released by
    /// [`Hosted::release`] once the session is hosted (or failed to start).
    pub(crate) fn reserve(&self, name: &str) -> bool {
        if self.lock().values().any(|entry| entry.name == name) {
            return false;
        }
        self.reserved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned())
    }

    /// Lets go of a name [`Hosted::reserve`] held.
    pub(crate) fn release(&self, name: &str) {
        self.reserved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(name);
    }

    /// Adds a launched session and runs it on a task of its own; a panic in that task ends
    /// that session only (it is marked failed).
    pub(crate) fn host(&self, launched: Launched, name: Option<String>) -> SessionSummary {
        let Launched {
            run,
            controls,
            mut updates,
            info,
        } = launched;
        let id = info
            .log
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| info.log.display().to_string());
        let name = name.unwrap_or_else(|| default_name(&id));
        let entry = Entry {
            id: id.clone(),
            name,
            info: info.clone(),
            controls,
            state: State::new(info.provider.clone()),
            observed: Observed::default(),
            forwarded: BTreeMap::new(),
            stop_requested: false,
            attached: 0,
            started_at_ms: now_ms(),
            waiting: None,
            progress: watch::channel(Progress::default()).0,
            last_sent: None,
        };
        let summary = entry.summary();
        self.lock().insert(id.clone(), entry);
        self.publish(summary.clone());
        let mut run = tokio::spawn(run);
        let hosted = self.clone();
        tokio::spawn(async move {
            // The session's end is its task's end, not its update channel's: a sender can
            // outlive the run in a task the backend left behind.
            let mut ended = None;
            while ended.is_none() {
                tokio::select! {
                    biased;
                    update = updates.recv() => match update {
                        Some(update) => hosted.apply(&id, update),
                        None => ended = Some((&mut run).await),
                    },
                    result = &mut run => ended = Some(result),
                }
            }
            while let Ok(update) = updates.try_recv() {
                hosted.apply(&id, update);
            }
            let ending = match ended {
                Some(Ok(Ok(_))) | None => None,
                Some(Ok(Err(reason))) => Some(Ending::Failed { reason }),
                Some(Err(join)) if join.is_panic() => Some(Ending::Failed {
                    reason: "the session's task panicked".to_owned(),
                }),
                Some(Err(join)) => Some(Ending::Failed {
                    reason: join.to_string(),
                }),
            };
            hosted.finish(&id, ending);
        });
        summary
    }

    fn apply(&self, id: &str, update: Update) {
        // Only the fold's messages change a summary: none is built for anything else (one
        // per streamed delta would be). The question and its answer are read from the fold,
        // which records them before the engine tells its front ends.
        let may_change = matches!(update, Update::Started { .. } | Update::Recorded { .. });
        let summary = {
            let mut map = self.lock();
            let Some(entry) = map.get_mut(id) else {
                return;
            };
            match update {
                Update::Started { state, .. } => entry.state = *state,
                Update::Recorded { at, msg } => {
                    let state = std::mem::replace(&mut entry.state, State::new(""));
                    entry.state = panewise_pane_state::step(state, at, msg).0;
                    entry.note_waiting(at);
                    let pending = &entry.state.pending_approvals;
                    entry
                        .forwarded
                        .retain(|id, _| pending.iter().any(|pending| pending.id == *id));
                }
                Update::Ask { .. }
                | Update::AskWithdrawn { .. }
                | Update::Answered { .. }
                | Update::Agent(_)
                | Update::Emitted(_)
                | Update::Notice(_) => {}
            }
            if entry.attached > 0 {
                entry.look();
            }
            entry.progress.send_modify(|progress| {
                progress.updates = progress.updates.wrapping_add(1);
            });
            // A request the approval mode has yet to decide is decided in the engine's same
            // step: no summary says `needs_input` for it, so no client answers a request that
            // is not a person's to answer (and none sees a request the mode allows flicker).
            if !may_change || awaits_the_mode(&entry.state) {
                return;
            }
            entry.summary()
        };
        self.publish(summary);
    }

    fn finish(&self, id: &str, failed: Option<Ending>) {
        let summary = {
            let mut map = self.lock();
            let Some(entry) = map.get_mut(id) else {
                return;
            };
            entry.forwarded.clear();
            entry.observed.ending = Some(match failed {
                Some(failed) => failed,
                None if entry.stop_requested => Ending::Stopped,
                None => Ending::Ended,
            });
            entry.progress.send_modify(|progress| progress.ended = true);
            entry.summary()
        };
        self.publish(summary);
        // The end is a change even when the summary reads the same (a turn already listed
        // `stopped`): whoever waits for every session to end must be woken.
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Answers the approval `key`'s session waits on (the one named by `request`, or the only
    /// one waiting), as the fold shows it; the first answer wins, and a second (from another
    /// client) is told it was answered already, and by whom.
    pub(crate) fn answer(
        &self,
        key: &str,
        request: Option<&str>,
        decision: &panewise_api::Decision,
        by: Actor,
    ) -> Result<panewise_api::WaitingApproval, RpcError> {
        self.with(key, |entry| {
            if entry.is_ended() {
                return Err(entry.ended_error());
            }
            let answered = panewise_api::pick_approval(&entry.state, &entry.forwarded, request)
                .map_err(|why| why.to_rpc(&entry.name))?;
            let id = Some(answered.id.clone());
            let control = match decision {
                panewise_api::Decision::AllowOnce => Control::allow(id, by.clone()),
                panewise_api::Decision::AllowForSession => {
                    Control::allow_for_session(id, by.clone())
                }
                panewise_api::Decision::Deny { message } => {
                    Control::deny(id, message.clone(), by.clone())
                }
            };
            entry.send(control)?;
            entry.forwarded.insert(answered.id.clone(), by);
            Ok(answered)
        })
    }

    /// Sends a prompt, an interrupt or a stop.
    pub(crate) fn control(&self, key: &str, control: Control) -> Result<(), RpcError> {
        self.with(key, |entry| {
            if entry.is_ended() {
                return Err(entry.ended_error());
            }
            if control == Control::Stop {
                entry.stop_requested = true;
            }
            entry.send(control)
        })
    }

    /// What `session/remove` does with the session `key` names ([`removal`]).
    pub(crate) fn removal(&self, key: &str) -> Result<Removal, RpcError> {
        self.with(key, |entry| {
            Ok(removal(entry.summary().state, entry.is_ended()))
        })
    }

    /// Waits until the session `key` names has ended, for at most `limit`.
    pub(crate) async fn until_ended(
        &self,
        key: &str,
        limit: std::time::Duration,
    ) -> Result<(), RpcError> {
        let mut changes = self.changes();
        let ended = tokio::time::timeout(limit, async {
            loop {
                if self.with(key, |entry| Ok(entry.is_ended()))? {
                    return Ok(());
                }
                if changes.changed().await.is_err() {
                    return Ok(());
                }
            }
        })
        .await;
        ended.unwrap_or_else(|_| {
            Err(RpcError::new(
                ErrorCode::SessionRunning,
                format!("the session did not end within {limit:?} of its stop"),
            ))
        })
    }

    /// Removes an ended session.
    pub(crate) fn remove(&self, key: &str) -> Result<Entry, RpcError> {
        let mut map = self.lock();
        let id = resolve(&map, key)?;
        if map.get(&id).is_some_and(|entry| !entry.is_ended()) {
            return Err(RpcError::new(
                ErrorCode::SessionRunning,
                "the session is still running: stop it first (`panewise stop`)",
            ));
        }
        let entry = map
            .remove(&id)
            .ok_or_else(|| RpcError::new(ErrorCode::UnknownSession, "no such session"))?;
        drop(map);
        let _no_subscriber = self.list.send(ListEvent::Removed(id));
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        Ok(entry)
    }

    /// Stops every running session as `session/stop` does; true when there was any.
    pub(crate) fn stop_all(&self) -> bool {
        let mut map = self.lock();
        let mut any = false;
        for entry in map.values_mut().filter(|entry| !entry.is_ended()) {
            entry.stop_requested = true;
            any |= entry.send(Control::Stop).is_ok();
        }
        any
    }

    /// The names of the sessions whose task still runs.
    pub(crate) fn running(&self) -> Vec<String> {
        self.lock()
            .values()
            .filter(|entry| !entry.is_ended())
            .map(|entry| entry.name.clone())
            .collect()
    }

    /// What every hosted session was launched as.
    pub(crate) fn launch_infos(&self) -> Vec<LaunchInfo> {
        self.lock()
            .values()
            .map(|entry| entry.info.clone())
            .collect()
    }

    pub(crate) fn all_ended(&self) -> bool {
        self.lock().values().all(Entry::is_ended)
    }
}

/// The full id `key` names: an id, a unique prefix of one, or a name.
fn resolve(map: &BTreeMap<String, Entry>, key: &str) -> Result<String, RpcError> {
    panewise_api::resolve_session(
        map.values()
            .map(|entry| (entry.id.as_str(), entry.name.as_str())),
        key,
    )
}

pub(crate) use panewise_api::default_session_name as default_name;

/// What `session/remove` does with a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    /// It has ended: it goes now.
    Now,
    /// It is settled (nothing runs, nobody is asked): it is stopped, then goes.
    StopThenRemove,
    /// It works or waits for a person: removing it would lose that; the reason.
    Refuse(&'static str),
}

/// What `session/remove` does with a session in `state` (`ended`: its task has ended). A
/// settled session is stopped and removed in one call; one that works or waits for a person
/// is refused, so a remove never loses a turn or a question.
pub(crate) fn removal(state: AgentState, ended: bool) -> Removal {
    if ended {
        return Removal::Now;
    }
    match state {
        AgentState::Idle | AgentState::Done | AgentState::Interrupted | AgentState::Failed => {
            Removal::StopThenRemove
        }
        AgentState::Working => Removal::Refuse(
            "the session is working: stop it first (`panewise stop`), or wait for its turn to end",
        ),
        AgentState::NeedsInput => Removal::Refuse(
            "the session waits for an answer: answer it or stop it first (`panewise stop`)",
        ),
        // An ended state with the task not yet seen ending: the stop is under way.
        AgentState::Stopped | AgentState::Exited => Removal::StopThenRemove,
    }
}

/// The wall clock in ms since the epoch: when a session was hosted, for its age.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state, running or ended: what `session/remove` does with it.
    #[test]
    fn remove_stops_a_settled_session_and_refuses_one_a_person_or_a_turn_needs() {
        // (rule, state, task ended, removal)
        let table: [(&str, AgentState, bool, Removal); 9] = [
            (
                "an ended session goes now",
                AgentState::Stopped,
                true,
                Removal::Now,
            ),
            ("an exited one too", AgentState::Exited, true, Removal::Now),
            (
                "a done session is stopped, then goes",
                AgentState::Done,
                false,
                Removal::StopThenRemove,
            ),
            (
                "an idle one too",
                AgentState::Idle,
                false,
                Removal::StopThenRemove,
            ),
            (
                "an interrupted one too",
                AgentState::Interrupted,
                false,
                Removal::StopThenRemove,
            ),
            (
                "one whose turn failed too",
                AgentState::Failed,
                false,
                Removal::StopThenRemove,
            ),
            (
                "a stop under way is waited for",
                AgentState::Stopped,
                false,
                Removal::StopThenRemove,
            ),
            (
                "a working turn is never lost by a remove",
                AgentState::Working,
                false,
                Removal::Refuse(
                    "the session is working: stop it first (`panewise stop`), or wait for its \
                     turn to end",
                ),
            ),
            (
                "nor a question a person has not answered",
                AgentState::NeedsInput,
                false,
                Removal::Refuse(
                    "the session waits for an answer: answer it or stop it first (`panewise stop`)",
                ),
            ),
        ];
        for (rule, state, ended, expected) in table {
            assert_eq!(removal(state, ended), expected, "{rule}");
        }
        let covered: std::collections::BTreeSet<&str> =
            table.iter().map(|row| row.1.as_str()).collect();
        assert_eq!(
            covered.len(),
            AgentState::ALL.len(),
            "a state without a row"
        );
    }
}
