//! The registry's shell: one loop owns the [`Registry`] and executes its effects; each
//! connection is a reader task and a writer task, each session one task that hands its
//! updates and new log lines to the loop. No lock is shared: everything reaches the loop as
//! an [`Input`] on one bounded channel, and the loop never waits on anything but that channel
//! (it queues on connections with `try_send`, into room the registry has counted).

mod connection;
mod log;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use panewise_session_protocol::{Control, Update};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::error::SupervisorError;
use crate::launcher::{Launched, Launcher};
use crate::notify::NotifySource;
use crate::registry::{session_id, ConnId, Effect, Event, Limits, Line, Origin, Registry};
use crate::server::Bound;
use connection::{read_requests, refuse, write_all};
use log::{read_log, LogRead, LogTail};

/// Inputs the loop waits for at most at once; past it, their senders (a session's task, a
/// connection's reader or writer) wait.
const INPUTS: usize = 1024;

/// Updates a session's task hands over in one wake at most.
const UPDATES_PER_WAKE: usize = 1024;

/// What reaches the loop.
pub(crate) enum Input {
    /// An event for the registry.
    Event(Event),
    /// A launch finished (the session's run and channels are the shell's to keep).
    Launched {
        conn: ConnId,
        request: Option<panewise_api::RequestId>,
        origin: Origin,
        launched: Result<Launched, String>,
    },
}

/// A line for a connection's writer.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// A response or a notification.
    Line(Line),
    /// The answer to `daemon/shutdown`: once it is written the daemon stops.
    Last(Line),
}

/// What the loop keeps of a connection.
struct ConnHandle {
    out: mpsc::Sender<Outgoing>,
    drop: oneshot::Sender<Line>,
    reader: AbortHandle,
}

/// Serves `bound` until `daemon/shutdown` or `terminate` resolves (SIGTERM), then stops
/// every session as `session/stop` does and returns once their logs are closed (or the grace
/// ran out).
pub async fn serve(
    bound: Bound,
    launcher: Arc<dyn Launcher>,
    notify: NotifySource,
    limits: Limits,
    caps: panewise_pane_state::budget::DaemonCaps,
    terminate: impl std::future::Future<Output = ()>,
) -> Result<(), SupervisorError> {
    let (inputs, mut received) = mpsc::channel::<Input>(INPUTS);
    let mut shell = Shell {
        registry: Some(Registry::new(limits, std::process::id()).with_daemon_caps(caps)),
        limits,
        inputs,
        launcher,
        notify,
        conns: HashMap::new(),
        controls: HashMap::new(),
        next_conn: 0,
        exit: None,
    };
    tokio::pin!(terminate);
    let mut terminated = false;
    while shell.exit.is_none() {
        tokio::select! {
            accepted = bound.listener().accept() => match accepted {
                Ok((stream, _)) => shell.accept(stream),
                Err(error) => tracing::warn!(%error, "accept failed"),
            },
            Some(input) = received.recv() => shell.input(input),
            () = &mut terminate, if !terminated => {
                terminated = true;
                shell.feed(Event::Terminate);
            }
        }
    }
    if let Some((infos, running)) = shell.exit.take() {
        if !running.is_empty() {
            tracing::warn!(
                ?running,
                "sessions still running after the stop grace; exiting anyway"
            );
            eprintln!(
                "panewise daemon: still running after {:?}, left to the process guard: {}",
                Duration::from_millis(limits.stop_grace_ms),
                running.join(", ")
            );
        }
        for info in &infos {
            shell.launcher.at_shutdown(info);
        }
    }
    bound.remove_socket();
    Ok(())
}

struct Shell {
    /// Taken for the length of one `update` (it is folded by value).
    registry: Option<Registry>,
    limits: Limits,
    inputs: mpsc::Sender<Input>,
    launcher: Arc<dyn Launcher>,
    notify: NotifySource,
    conns: HashMap<ConnId, ConnHandle>,
    controls: HashMap<String, mpsc::Sender<Control>>,
    next_conn: ConnId,
    exit: Option<(Vec<crate::launcher::LaunchInfo>, Vec<String>)>,
}

impl Shell {
    fn input(&mut self, input: Input) {
        match input {
            Input::Event(event) => self.feed(event),
            Input::Launched {
                conn,
                request,
                origin,
                launched: Ok(launched),
            } => self.host(conn, request, origin, launched),
            Input::Launched {
                conn,
                request,
                origin,
                launched: Err(why),
            } => self.feed(Event::LaunchFailed {
                conn,
                request,
                origin,
                why,
            }),
        }
    }

    /// Folds `event` and whatever its effects deliver at once.
    fn feed(&mut self, event: Event) {
        let mut pending = VecDeque::from([event]);
        while let Some(event) = pending.pop_front() {
            let Some(registry) = self.registry.take() else {
                return;
            };
            let (registry, effects) = registry.update(event);
            self.registry = Some(registry);
            for effect in effects {
                if let Some(next) = self.execute(effect) {
                    pending.push_back(next);
                }
            }
        }
    }

    /// Does `effect`; returns the event it delivers at once, if any.
    fn execute(&mut self, effect: Effect) -> Option<Event> {
        match effect {
            Effect::Send { conn, line } => self.queue(conn, Outgoing::Line(line)),
            Effect::SendLast { conn, line } => self.queue(conn, Outgoing::Last(line)),
            Effect::ReadLog {
                conn,
                session,
                log,
                from_index,
                from_byte,
                budget,
            } => {
                let read = match self.conns.get(&conn) {
                    Some(handle) => {
                        read_log(&log, &session, from_index, from_byte, budget, &handle.out)
                    }
                    None => LogRead::default(),
                };
                return Some(Event::LogRead {
                    conn,
                    session,
                    lines: read.lines,
                    bytes: read.bytes,
                    asked: budget,
                    next_byte: read.next_byte,
                });
            }
            Effect::Launch {
                conn,
                request,
                params,
            } => {
                let launcher = self.launcher.clone();
                let inputs = self.inputs.clone();
                let origin = Origin::Create {
                    name: params.name.clone(),
                };
                tokio::spawn(async move {
                    let launched = launcher.create(&params).await;
                    let _ = inputs
                        .send(Input::Launched {
                            conn,
                            request,
                            origin,
                            launched,
                        })
                        .await;
                });
            }
            Effect::Resume {
                conn,
                request,
                log,
                prompt,
                client,
                continued,
            } => {
                let launcher = self.launcher.clone();
                let inputs = self.inputs.clone();
                tokio::spawn(async move {
                    let launched = launcher.resume(&log, prompt, client.as_ref()).await;
                    let _ = inputs
                        .send(Input::Launched {
                            conn,
                            request,
                            origin: Origin::Resume { continued },
                            launched,
                        })
                        .await;
                });
            }
            Effect::Control { id, control } => {
                if let Some(controls) = self.controls.get(&id) {
                    match controls.try_send(control) {
                        Ok(()) => {}
                        // A session whose task ended drops its receiver; its end is on the way.
                        Err(mpsc::error::TrySendError::Closed(_)) => {}
                        // The loop never waits on a session: one that has left its bounded
                        // control queue unread is wedged, and the control is logged, not queued.
                        Err(mpsc::error::TrySendError::Full(control)) => tracing::warn!(
                            session = %id,
                            ?control,
                            "the session reads no controls (its queue is full); dropped"
                        ),
                    }
                }
            }
            Effect::ScheduleNotify { id, state } => {
                let config = (self.notify)();
                if config.any() {
                    let inputs = self.inputs.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(config.delay).await;
                        let _ = inputs
                            .send(Input::Event(Event::NotifyDue { id, state, config }))
                            .await;
                    });
                }
            }
            Effect::Notify { config, summary } => {
                tokio::spawn(async move { crate::notify::deliver(&config, &summary).await });
            }
            Effect::After { delay_ms, timer } => {
                let inputs = self.inputs.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                    let _ = inputs.send(Input::Event(Event::Timer(timer))).await;
                });
            }
            Effect::Forget {
                conn,
                request,
                id,
                info,
            } => {
                self.controls.remove(&id);
                let worktree = self.launcher.remove(&info);
                return Some(Event::Forgotten {
                    conn,
                    request,
                    id,
                    worktree,
                });
            }
            Effect::Drop { conn, notice } => {
                if let Some(handle) = self.conns.remove(&conn) {
                    handle.reader.abort();
                    let _ = handle.drop.send(notice);
                }
            }
            Effect::Warn { message } => tracing::warn!("{message}"),
            Effect::Exit { infos, running } => self.exit = Some((infos, running)),
        }
        None
    }

    fn queue(&mut self, conn: ConnId, message: Outgoing) {
        let Some(handle) = self.conns.get(&conn) else {
            return;
        };
        match handle.out.try_send(message) {
            Ok(()) => {}
            // The registry counts what each queue holds: a full one is a miscount.
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(conn, "a connection's queue was full; a line was not sent");
            }
            // The client went; its reader tells the registry.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// A client: its uid checked, then a reader and a writer.
    fn accept(&mut self, stream: UnixStream) {
        let (read, write) = stream.into_split();
        let peer = read.as_ref().peer_cred().map(|cred| cred.uid());
        if peer
            .as_ref()
            .map_or(true, |uid| *uid != crate::paths::uid())
        {
            tracing::warn!(?peer, "refused a peer of another user");
            tokio::spawn(refuse(read, write));
            return;
        }
        let conn = self.next_conn;
        self.next_conn += 1;
        let (out, queue) = mpsc::channel(self.limits.channel_capacity());
        let (drop, dropped) = oneshot::channel();
        let inputs = self.inputs.clone();
        tokio::spawn(write_all(conn, queue, write, dropped, inputs.clone()));
        let reader = tokio::spawn(read_requests(conn, read, inputs)).abort_handle();
        self.conns.insert(conn, ConnHandle { out, drop, reader });
        self.feed(Event::Connected { conn });
    }

    /// Runs a launched session: the registry lists it first, then its task starts handing
    /// over what it does.
    fn host(
        &mut self,
        conn: ConnId,
        request: Option<panewise_api::RequestId>,
        origin: Origin,
        launched: Launched,
    ) {
        let Launched {
            run,
            controls,
            updates,
            info,
            log_mirror,
        } = launched;
        let id = session_id(&info);
        self.controls.insert(id.clone(), controls);
        let log = info.log.clone();
        self.feed(Event::Hosted {
            conn,
            request,
            id: id.clone(),
            info,
            origin,
            at_ms: now_ms(),
        });
        let reader = LogTail::new(log, log_mirror);
        tokio::spawn(session_task(id, run, updates, reader, self.inputs.clone()));
    }
}

/// One session: its run on a task of its own (a panic there ends this session only), its
/// updates and new log lines handed to the loop once per wake, then its end.
async fn session_task(
    id: String,
    run: crate::launcher::SessionRun,
    mut updates: mpsc::Receiver<Update>,
    mut reader: LogTail,
    inputs: mpsc::Sender<Input>,
) {
    let mut run = tokio::spawn(run);
    // The session's end is its task's end, not its update channel's: a sender can outlive
    // the run in a task the backend left behind.
    let ended = loop {
        tokio::select! {
            biased;
            update = updates.recv() => match update {
                Some(update) => {
                    let mut batch = Vec::new();
                    keep(update, &mut batch);
                    while batch.len() < UPDATES_PER_WAKE {
                        match updates.try_recv() {
                            Ok(update) => keep(update, &mut batch),
                            Err(_) => break,
                        }
                    }
                    if !hand_over(&id, batch, &mut reader, false, &inputs).await {
                        return;
                    }
                }
                None => break (&mut run).await,
            },
            result = &mut run => break result,
        }
    };
    let mut batch = Vec::new();
    while let Ok(update) = updates.try_recv() {
        keep(update, &mut batch);
    }
    // The last: no update follows it, so the log is read to its end.
    if !hand_over(&id, batch, &mut reader, true, &inputs).await {
        return;
    }
    let failed = match ended {
        Ok(Ok(())) => None,
        Ok(Err(reason)) => Some(reason),
        Err(join) if join.is_panic() => Some("the session's task panicked".to_owned()),
        Err(join) => Some(join.to_string()),
    };
    let _ = inputs.send(Input::Event(Event::Ended { id, failed })).await;
}

/// Keeps what the registry's fold reads.
fn keep(update: Update, batch: &mut Vec<Update>) {
    if matches!(update, Update::Started { .. } | Update::Recorded { .. }) {
        batch.push(update);
    }
}

/// Hands the loop `updates` and the log's new lines, at most [`log::HAND_OVER_BYTES`] of lines
/// per event (`last`: the call after the session ended, which reads the log to its end); false
/// when the loop is gone.
async fn hand_over(
    id: &str,
    mut updates: Vec<Update>,
    reader: &mut LogTail,
    last: bool,
    inputs: &mpsc::Sender<Input>,
) -> bool {
    loop {
        let (lines, first_byte, more) = reader.read_new(last);
        if updates.is_empty() && lines.is_empty() {
            return true;
        }
        let event = Event::Session {
            id: id.to_owned(),
            updates: std::mem::take(&mut updates),
            lines,
            first_byte,
        };
        if inputs.send(Input::Event(event)).await.is_err() {
            return false;
        }
        if !more {
            return true;
        }
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
