//! The daemon's pure core: [`Registry::update`] folds what the sessions, the clients and the
//! timers deliver ([`Event`]) into the registry and returns what the shell must do
//! ([`Effect`]). It owns the list of sessions and their summaries, every connection's
//! subscriptions and offsets, what each connection has queued, notification timing, answer
//! routing, removal and shutdown.
//!
//! It does no I/O, reads no clock (times come in events), spawns nothing, takes no lock and
//! has no `async`: every rule is checked by feeding events and comparing effects
//! (`tests.rs`). The shell (`shell/`) is one loop that owns the registry and executes the
//! effects, one reader and one writer task per connection, and one task per session.

mod budget;
mod delivery;
mod methods;
mod session;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use panewise_api::{
    AgentState, ChangedNotice, CreateParams, Ending, ErrorCode, Observed, Request, RequestId,
    Response, RpcError, SessionSummary,
};
use panewise_pane_state::State;
use panewise_session_protocol::{Control, Update};
use serde_json::Value;

use crate::launcher::LaunchInfo;
use crate::notify::NotifyConfig;

pub(crate) use delivery::Conn;
pub use delivery::Limits;
use session::awaits_the_mode;
pub(crate) use session::{session_id, Session};

/// A connection, numbered by the shell in the order they were accepted.
pub(crate) type ConnId = u64;

/// A line for a client, newline-terminated; shared when one line goes to many.
pub(crate) type Line = Arc<[u8]>;

/// What reaches the registry.
#[derive(Debug)]
pub(crate) enum Event {
    /// A client connected.
    Connected { conn: ConnId },
    /// A client sent a request (or a notification: no id).
    Request { conn: ConnId, request: Request },
    /// A client sent a line that is no request; this is its answer.
    Refused { conn: ConnId, response: Response },
    /// A connection's writer wrote `lines` of its queue (`bytes` in all).
    Written {
        conn: ConnId,
        lines: usize,
        bytes: usize,
    },
    /// A client went.
    Disconnected { conn: ConnId },
    /// A launch asked for by [`Effect::Launch`] or [`Effect::Resume`] made a session, which
    /// the shell now runs as `id` ([`session_id`]); `at_ms` is when, ms since the epoch.
    Hosted {
        conn: ConnId,
        request: Option<RequestId>,
        id: String,
        info: LaunchInfo,
        origin: Origin,
        at_ms: u64,
    },
    /// A launch failed; `why` is a sentence for the client.
    LaunchFailed {
        conn: ConnId,
        request: Option<RequestId>,
        origin: Origin,
        why: String,
    },
    /// What a session told its front ends since the last wake (only what the fold reads:
    /// `Started` and `Recorded`), and the complete lines its log gained, the first of them
    /// starting at byte `first_byte`.
    Session {
        id: String,
        updates: Vec<Update>,
        lines: Vec<String>,
        first_byte: u64,
    },
    /// A session's task ended (after its last lines were delivered): `failed` says how, when
    /// it failed.
    Ended { id: String, failed: Option<String> },
    /// What [`Effect::ReadLog`] sent: `lines` lines (`bytes` in all) of the `count` asked, the
    /// next line starting at byte `next_byte`; `error` when the log could not be read.
    LogRead {
        conn: ConnId,
        session: String,
        lines: usize,
        bytes: usize,
        asked: ReadBudget,
        next_byte: Option<u64>,
    },
    /// What [`Effect::Forget`] did: the worktree removed or kept, when the session had one.
    Forgotten {
        conn: ConnId,
        request: Option<RequestId>,
        id: String,
        worktree: Option<String>,
    },
    /// A delay an [`Effect::After`] set ran out.
    Timer(Timer),
    /// A notification's delay ran out: notify `state` if it still holds and nobody looks.
    NotifyDue {
        id: String,
        state: AgentState,
        config: NotifyConfig,
    },
    /// Stop the daemon: SIGTERM, or `daemon/shutdown` answered.
    Terminate,
}

/// What a launch was for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Origin {
    /// `session/create`, with the name asked for (held meanwhile).
    Create { name: Option<String> },
    /// `session/resume`; the session continued, when the daemon still lists it under a name
    /// the new one takes.
    Resume { continued: Option<(String, String)> },
}

/// A delay's purpose.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Timer {
    /// `session/remove` stopped a settled session and waits for it to end.
    RemoveGrace {
        conn: ConnId,
        request: Option<RequestId>,
        id: String,
    },
    /// The daemon's stop waits for every session to end.
    ShutdownGrace,
    /// A connection's queue has been full since `since` (a count of how often it filled):
    /// still full at this timer, the client is dropped.
    Stall { conn: ConnId, since: u64 },
}

/// How much a [`Effect::ReadLog`] may send: lines and bytes reserved in the connection's
/// queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadBudget {
    pub(crate) lines: usize,
    pub(crate) bytes: usize,
}

/// What the shell does.
#[derive(Debug, PartialEq)]
pub(crate) enum Effect {
    /// Queue `line` on the connection (room for it is counted: the queue never overflows).
    Send { conn: ConnId, line: Line },
    /// Queue the answer to `daemon/shutdown`: once written, the daemon stops.
    SendLast { conn: ConnId, line: Line },
    /// Read lines `from_index..` of the log (at `from_byte` when known, else counting from
    /// the start) and queue them as `session/line` notices, within `budget`; then deliver
    /// [`Event::LogRead`].
    ReadLog {
        conn: ConnId,
        session: String,
        log: PathBuf,
        from_index: u64,
        from_byte: Option<u64>,
        budget: ReadBudget,
    },
    /// Launch the session `params` describe; then [`Event::Hosted`] or
    /// [`Event::LaunchFailed`].
    Launch {
        conn: ConnId,
        request: Option<RequestId>,
        params: CreateParams,
    },
    /// Launch a session continuing `log`; then [`Event::Hosted`] or [`Event::LaunchFailed`].
    Resume {
        conn: ConnId,
        request: Option<RequestId>,
        log: PathBuf,
        prompt: Option<String>,
        client: Option<panewise_api::ClientContext>,
        continued: Option<(String, String)>,
    },
    /// Send `control` to the session `id`.
    Control { id: String, control: Control },
    /// Read `[notify]` and, when it has a sink, deliver [`Event::NotifyDue`] after its delay.
    ScheduleNotify { id: String, state: AgentState },
    /// Deliver a notification of `summary`.
    Notify {
        config: NotifyConfig,
        summary: Box<SessionSummary>,
    },
    /// Deliver [`Event::Timer`] after `delay_ms`.
    After { delay_ms: u64, timer: Timer },
    /// The session `info` describes is forgotten: remove what the launcher made for it, then
    /// deliver [`Event::Forgotten`].
    Forget {
        conn: ConnId,
        request: Option<RequestId>,
        id: String,
        info: Box<LaunchInfo>,
    },
    /// Close the connection: throw away what it has queued, then write `notice` (after the
    /// line being written, if any) and close.
    Drop { conn: ConnId, notice: Line },
    /// Log a warning (the registry itself writes nothing).
    Warn { message: String },
    /// Every session has ended or the grace ran out: tidy `infos` and exit; `running` names
    /// the sessions still running.
    Exit {
        infos: Vec<LaunchInfo>,
        running: Vec<String>,
    },
}

/// A removal waiting for the session it stopped to end.
#[derive(Debug, Clone, PartialEq)]
struct PendingRemoval {
    conn: ConnId,
    request: Option<RequestId>,
    id: String,
}

/// The daemon's state.
#[derive(Debug)]
pub(crate) struct Registry {
    limits: Limits,
    /// The daemon's process id, for `daemon/hello`.
    pid: u32,
    sessions: BTreeMap<String, Session>,
    /// Names asked for by creates still launching, so two at once cannot take one name.
    reserved: BTreeSet<String>,
    conns: BTreeMap<ConnId, Conn>,
    removals: Vec<PendingRemoval>,
    shutting_down: bool,
    /// The daemon's spend caps over all its sessions, and the verdict they were told.
    budget: budget::DaemonBudget,
}

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

/// How long `session/remove` waits for a settled session it stopped to end.
pub(crate) const REMOVE_STOP_GRACE_MS: u64 = 10_000;

impl Registry {
    pub(crate) fn new(limits: Limits, pid: u32) -> Registry {
        Registry {
            limits,
            pid,
            sessions: BTreeMap::new(),
            reserved: BTreeSet::new(),
            conns: BTreeMap::new(),
            removals: Vec::new(),
            shutting_down: false,
            budget: budget::DaemonBudget::default(),
        }
    }

    /// The registry with the daemon's spend caps (`[limits] daemon_max_cost_usd`,
    /// `daily_max_cost_usd`).
    pub(crate) fn with_daemon_caps(
        mut self,
        caps: panewise_pane_state::budget::DaemonCaps,
    ) -> Registry {
        self.budget.caps = caps;
        self
    }

    /// Folds `event` in; returns the registry and what the shell must do, in order.
    pub(crate) fn update(mut self, event: Event) -> (Registry, Vec<Effect>) {
        let mut effects = Vec::new();
        self.step(event, &mut effects);
        (self, effects)
    }

    fn step(&mut self, event: Event, effects: &mut Vec<Effect>) {
        match event {
            Event::Connected { conn } => {
                self.conns.insert(conn, Conn::default());
            }
            Event::Request { conn, request } => self.request(conn, request, effects),
            Event::Refused { conn, response } => self.respond(conn, response, effects),
            Event::Written { conn, lines, bytes } => self.written(conn, lines, bytes, effects),
            Event::Disconnected { conn } => self.disconnect(conn, effects),
            Event::Hosted {
                conn,
                request,
                id,
                info,
                origin,
                at_ms,
            } => self.hosted(conn, request, id, info, origin, at_ms, effects),
            Event::LaunchFailed {
                conn,
                request,
                origin,
                why,
            } => {
                if let Origin::Create { name: Some(name) } = &origin {
                    self.reserved.remove(name);
                }
                let code = match origin {
                    Origin::Create { .. } => ErrorCode::LaunchFailed,
                    Origin::Resume { .. } => ErrorCode::CannotResume,
                };
                self.answer(conn, request, Err(RpcError::new(code, why)), effects);
            }
            Event::Session {
                id,
                updates,
                lines,
                first_byte,
            } => self.session_progress(&id, updates, lines, first_byte, effects),
            Event::Ended { id, failed } => self.ended(&id, failed, effects),
            Event::LogRead {
                conn,
                session,
                lines,
                bytes,
                asked,
                next_byte,
            } => self.log_read(conn, &session, lines, bytes, asked, next_byte, effects),
            Event::Forgotten {
                conn,
                request,
                id,
                worktree,
            } => self.answer(
                conn,
                request,
                methods::result(panewise_api::RemoveResult { id, worktree }),
                effects,
            ),
            Event::Timer(timer) => self.timer(timer, effects),
            Event::NotifyDue { id, state, config } => {
                let Some(session) = self.sessions.get(&id) else {
                    return;
                };
                let summary = session.summary();
                if crate::notify::still_due(state, &summary) {
                    effects.push(Effect::Notify {
                        config,
                        summary: Box::new(summary),
                    });
                }
            }
            Event::Terminate => self.terminate(effects),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn hosted(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        id: String,
        info: LaunchInfo,
        origin: Origin,
        at_ms: u64,
        effects: &mut Vec<Effect>,
    ) {
        let name = match origin {
            Origin::Create { name } => {
                if let Some(name) = &name {
                    self.reserved.remove(name);
                }
                name
            }
            Origin::Resume {
                continued: Some((old_id, name)),
            } => {
                // The session continued goes back to its default name: the new one takes it.
                if let Some(old) = self.sessions.get_mut(&old_id) {
                    old.name = panewise_api::default_session_name(&old.id);
                    self.publish(&old_id, effects);
                }
                Some(name)
            }
            Origin::Resume { continued: None } => {
                info.name.clone().filter(|name| !self.name_taken(name))
            }
        };
        let name = name.unwrap_or_else(|| panewise_api::default_session_name(&id));
        let session = Session {
            id: id.clone(),
            name,
            state: State::new(info.provider.clone()),
            info,
            observed: Observed::default(),
            forwarded: BTreeMap::new(),
            stop_requested: false,
            attached: 0,
            started_at_ms: at_ms,
            waiting: None,
            last_sent: None,
            logged: 0,
            logged_bytes: 0,
        };
        let summary = session.summary();
        self.sessions.insert(id.clone(), session);
        self.answer(
            conn,
            request,
            methods::result(panewise_api::CreateResult { session: summary }),
            effects,
        );
        self.publish(&id, effects);
        self.tell_new_session(&id, effects);
        if self.shutting_down {
            // Launched while the daemon stops: it stops too.
            self.stop(&id, effects);
        }
    }

    fn session_progress(
        &mut self,
        id: &str,
        updates: Vec<Update>,
        lines: Vec<String>,
        first_byte: u64,
        effects: &mut Vec<Effect>,
    ) {
        let first_at = updates.iter().find_map(|update| match update {
            Update::Recorded { at, .. } => Some(*at),
            _ => None,
        });
        if let Some(at) = first_at {
            self.roll_day(at);
        }
        let Some(session) = self.sessions.get_mut(id) else {
            return;
        };
        let mut may_change = false;
        let mut folded_at = None;
        for update in updates {
            match update {
                Update::Started { state, .. } => {
                    session.state = *state;
                    may_change = true;
                }
                Update::Recorded { at, msg } => {
                    folded_at = Some(at);
                    let state = std::mem::replace(&mut session.state, State::new(""));
                    session.state = panewise_pane_state::step(state, at, msg).0;
                    session.note_waiting(at);
                    let pending = &session.state.pending_approvals;
                    session
                        .forwarded
                        .retain(|id, _| pending.iter().any(|pending| pending.id == *id));
                    may_change = true;
                }
                // Only the fold's messages change a summary: none is built for anything
                // else (one per streamed delta would be).
                Update::Ask { .. }
                | Update::AskWithdrawn { .. }
                | Update::Answered { .. }
                | Update::Agent(_)
                | Update::Emitted(_)
                | Update::Notice(_) => {}
            }
        }
        if session.attached > 0 {
            session.look();
        }
        // A request the approval mode has yet to decide is decided in the engine's same step:
        // no summary says `needs_input` for it, so no client answers a request that is not a
        // person's to answer (and none sees a request the mode allows flicker).
        let publish = may_change && !awaits_the_mode(&session.state);
        if !lines.is_empty() {
            self.logged(id, lines, first_byte, effects);
        }
        if let Some(at) = folded_at {
            self.weigh_daemon_budget(at, effects);
        }
        if publish {
            self.publish(id, effects);
        }
    }

    fn ended(&mut self, id: &str, failed: Option<String>, effects: &mut Vec<Effect>) {
        let Some(session) = self.sessions.get_mut(id) else {
            return;
        };
        session.forwarded.clear();
        session.observed.ending = Some(match failed {
            Some(reason) => Ending::Failed { reason },
            None if session.stop_requested => Ending::Stopped,
            None => Ending::Ended,
        });
        self.publish(id, effects);
        self.deliver_ends(id, effects);
        let (done, waiting): (Vec<PendingRemoval>, Vec<PendingRemoval>) =
            std::mem::take(&mut self.removals)
                .into_iter()
                .partition(|removal| removal.id == id);
        self.removals = waiting;
        for removal in done {
            self.forget(removal.conn, removal.request, &removal.id, effects);
        }
        if self.shutting_down && self.sessions.values().all(Session::is_ended) {
            self.exit(effects);
        }
    }

    fn timer(&mut self, timer: Timer, effects: &mut Vec<Effect>) {
        match timer {
            Timer::RemoveGrace { conn, request, id } => {
                let pending = PendingRemoval {
                    conn,
                    request: request.clone(),
                    id,
                };
                let before = self.removals.len();
                self.removals.retain(|removal| *removal != pending);
                if self.removals.len() < before {
                    let error = RpcError::new(
                        ErrorCode::SessionRunning,
                        format!(
                            "the session did not end within {} s of its stop",
                            REMOVE_STOP_GRACE_MS / 1000
                        ),
                    );
                    self.answer(conn, request, Err(error), effects);
                }
            }
            Timer::ShutdownGrace => {
                if self.shutting_down {
                    self.exit(effects);
                }
            }
            Timer::Stall { conn, since } => self.stalled(conn, since, effects),
        }
    }

    fn terminate(&mut self, effects: &mut Vec<Effect>) {
        if self.shutting_down {
            return;
        }
        self.shutting_down = true;
        let running: Vec<String> = self
            .sessions
            .values()
            .filter(|session| !session.is_ended())
            .map(|session| session.id.clone())
            .collect();
        if running.is_empty() {
            self.exit(effects);
            return;
        }
        for id in running {
            self.stop(&id, effects);
        }
        effects.push(Effect::After {
            delay_ms: self.limits.stop_grace_ms,
            timer: Timer::ShutdownGrace,
        });
    }

    fn exit(&mut self, effects: &mut Vec<Effect>) {
        let running = self
            .sessions
            .values()
            .filter(|session| !session.is_ended())
            .map(|session| session.name.clone())
            .collect();
        let infos = self
            .sessions
            .values()
            .map(|session| session.info.clone())
            .collect();
        // Exited once: a late timer or end finds nothing to do.
        self.shutting_down = false;
        effects.push(Effect::Exit { infos, running });
    }

    /// Asks the session `id` to stop, as `session/stop` does.
    fn stop(&mut self, id: &str, effects: &mut Vec<Effect>) {
        if let Some(session) = self.sessions.get_mut(id) {
            session.stop_requested = true;
            effects.push(Effect::Control {
                id: id.to_owned(),
                control: Control::Stop,
            });
        }
    }

    /// Removes the ended session `id` and has the shell tidy it and answer.
    fn forget(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        id: &str,
        effects: &mut Vec<Effect>,
    ) {
        let Some(session) = self.sessions.remove(id) else {
            // A second `session/remove` of a session that waited to end: the first took it.
            // It is answered all the same, so no request is left without an answer.
            let error = RpcError::new(
                ErrorCode::UnknownSession,
                format!("session {id} was removed by another request meanwhile"),
            );
            self.answer(conn, request, Err(error), effects);
            return;
        };
        self.end_subscriptions_of(id, effects);
        self.list_removed(id, effects);
        effects.push(Effect::Forget {
            conn,
            request,
            id: id.to_owned(),
            info: Box::new(session.info),
        });
    }

    fn name_taken(&self, name: &str) -> bool {
        self.sessions.values().any(|session| session.name == name) || self.reserved.contains(name)
    }

    /// The full id `key` names: an id, a unique prefix of one, or a name.
    fn resolve(&self, key: &str) -> Result<String, RpcError> {
        panewise_api::resolve_session(
            self.sessions
                .values()
                .map(|session| (session.id.as_str(), session.name.as_str())),
            key,
        )
    }

    /// Publishes the session's summary when it changed: to list subscribers, and to the
    /// notifications on an edge into a notified state nobody looks at.
    fn publish(&mut self, id: &str, effects: &mut Vec<Effect>) {
        let Some(session) = self.sessions.get_mut(id) else {
            return;
        };
        let changing = session.changing();
        if session.last_sent.as_ref() == Some(&changing) {
            return;
        }
        let before = session.last_sent.as_ref().map(|sent| sent.pane.state);
        session.last_sent = Some(changing.clone());
        let summary = session.summary_with(changing);
        if crate::notify::is_edge(before, &summary) {
            effects.push(Effect::ScheduleNotify {
                id: id.to_owned(),
                state: summary.state,
            });
        }
        let notice = ChangedNotice { session: summary };
        self.broadcast_list(ChangedNotice::METHOD, &notice, effects);
    }

    /// Every summary, in the list's order.
    pub(crate) fn summaries(&self) -> Vec<SessionSummary> {
        let mut list: Vec<SessionSummary> = self.sessions.values().map(Session::summary).collect();
        panewise_api::sort_sessions(&mut list);
        list
    }

    /// Queues `response` on `conn` (counted against its queue, over the bound if it must be:
    /// an answer is never dropped; a client that asks without reading is dropped instead).
    fn respond(&mut self, conn: ConnId, response: Response, effects: &mut Vec<Effect>) {
        match panewise_api::rpc::to_line(&response) {
            Ok(line) => self.send_response(conn, Line::from(line), effects),
            Err(error) => effects.push(Effect::Warn {
                message: format!("a response could not be serialised: {error}"),
            }),
        }
    }

    /// Answers `request` (nothing, for a notification).
    fn answer(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        outcome: Result<Value, RpcError>,
        effects: &mut Vec<Effect>,
    ) {
        let Some(id) = request else {
            return;
        };
        let response = match outcome {
            Ok(value) => Response::ok(Some(id), value),
            Err(error) => Response::err(Some(id), error),
        };
        self.respond(conn, response, effects);
    }
}
