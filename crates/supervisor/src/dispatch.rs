//! One arm per method: params read into their struct, the hosted sessions asked, the result
//! written back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use panewise_api::{
    Ack, AnswerParams, ApproveParams, CreateParams, CreateResult, ErrorCode, HelloParams,
    HelloResult, ListParams, ListResult, Method, PromptParams, RemoveResult, RemovedNotice,
    RenameParams, ResumeParams, RpcError, SessionParams, SubscribeParams, SubscribeResult,
    API_VERSION,
};
use panewise_session_protocol::{Actor, Control};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::hosted::{Hosted, ListEvent, Removal};
use crate::launcher::Launcher;
use crate::outbox::{notice, Outbox};
use crate::tail::tail;

/// How long `session/remove` waits for a settled session it stopped to end (its agent
/// killed, its log closed) before it says so.
const REMOVE_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// The daemon's state shared by every connection.
#[derive(Clone)]
pub(crate) struct Daemon {
    hosted: Hosted,
    launcher: Arc<dyn Launcher>,
    shutdown: Arc<watch::Sender<bool>>,
}

/// What one connection holds: who it is and what it subscribed to.
pub(crate) struct Connection {
    client: Option<String>,
    outbox: Outbox,
    lines: HashMap<String, (JoinHandle<()>, bool)>,
    list: Option<JoinHandle<()>>,
    /// Subscriptions started by the request being handled, waiting for its answer to be queued.
    held: Vec<oneshot::Sender<()>>,
}

impl Connection {
    pub(crate) fn new(outbox: Outbox) -> Connection {
        Connection {
            client: None,
            outbox,
            lines: HashMap::new(),
            list: None,
            held: Vec::new(),
        }
    }

    /// A subscription's first notice waits on this until the answer to the request that
    /// started it is queued: a client gets the list (or the log's name) first and the changes
    /// after it, never a change that the older list in the answer would then undo.
    fn hold_until_answered(&mut self) -> oneshot::Receiver<()> {
        let (open, held) = oneshot::channel();
        self.held.push(open);
        held
    }

    /// The answer to the request just handled is queued (or there is none): the
    /// subscriptions it started may send.
    pub(crate) fn answered(&mut self) {
        for open in self.held.drain(..) {
            let _ = open.send(());
        }
    }

    fn actor(&self) -> Actor {
        Actor::Api {
            client: self.client.clone(),
        }
    }

    /// Ends every subscription of this connection.
    pub(crate) fn close(&mut self, daemon: &Daemon) {
        for (id, (task, attached)) in self.lines.drain() {
            task.abort();
            if attached {
                daemon.detach(&id);
            }
        }
        if let Some(task) = self.list.take() {
            task.abort();
        }
    }
}

fn params<T: DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value)
        .map_err(|error| RpcError::new(ErrorCode::InvalidParams, error.to_string()))
}

fn result(value: impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value)
        .map_err(|error| RpcError::new(ErrorCode::InternalError, error.to_string()))
}

impl Daemon {
    pub(crate) fn new(launcher: Arc<dyn Launcher>, notify: crate::notify::NotifySource) -> Daemon {
        Daemon {
            hosted: Hosted::new(notify),
            launcher,
            shutdown: Arc::new(watch::channel(false).0),
        }
    }

    pub(crate) fn launcher(&self) -> &dyn Launcher {
        self.launcher.as_ref()
    }

    pub(crate) fn hosted(&self) -> &Hosted {
        &self.hosted
    }

    /// Stops the daemon (`daemon/shutdown`, once its answer is written).
    pub(crate) fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    pub(crate) fn shutdown_requested(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    fn detach(&self, id: &str) {
        let _ = self.hosted.with(id, |entry| {
            entry.attached = entry.attached.saturating_sub(1);
            Ok(())
        });
    }

    pub(crate) async fn call(
        &self,
        client: &mut Connection,
        method: Method,
        raw: Value,
    ) -> Result<Value, RpcError> {
        match method {
            Method::Hello => {
                let hello: HelloParams = params(raw)?;
                if hello.api_version != API_VERSION {
                    return Err(RpcError::new(
                        ErrorCode::VersionMismatch,
                        format!(
                            "this daemon speaks API version {API_VERSION}, the client {}; \
                             restart the daemon (`panewise daemon`) with the same panewise",
                            hello.api_version
                        ),
                    ));
                }
                client.client = hello.client;
                result(HelloResult {
                    api_version: API_VERSION,
                    panewise_version: env!("CARGO_PKG_VERSION").to_owned(),
                    pid: std::process::id(),
                })
            }
            Method::List => {
                let ListParams {} = params(raw)?;
                result(ListResult {
                    sessions: self.hosted.summaries(),
                })
            }
            Method::Create => {
                let create: CreateParams = params(raw)?;
                if let Some(name) = &create.name {
                    if name.trim().is_empty() {
                        return Err(RpcError::new(ErrorCode::InvalidParams, "the name is empty"));
                    }
                    if !self.hosted.reserve(name) {
                        return Err(RpcError::new(
                            ErrorCode::NameTaken,
                            format!("a session is already named {name:?}"),
                        ));
                    }
                }
                let launched = self.launcher.create(&create).await;
                let hosted = launched
                    .map(|launched| self.hosted.host(launched, create.name.clone()))
                    .map_err(|why| RpcError::new(ErrorCode::LaunchFailed, why));
                if let Some(name) = &create.name {
                    self.hosted.release(name);
                }
                result(CreateResult { session: hosted? })
            }
            Method::Resume => {
                let resume: ResumeParams = params(raw)?;
                // The session continued, when the daemon still lists it: the new one takes its
                // name (and it goes back to its default), so `resume den` leaves `den` running.
                let mut continued: Option<(String, String)> = None;
                let log = match self.hosted.with(&resume.session, |entry| {
                    if entry.is_ended() {
                        // A default name is the id's own: the new session has its own.
                        if entry.name != crate::hosted::default_name(&entry.id) {
                            continued = Some((entry.id.clone(), entry.name.clone()));
                        }
                        Ok(entry.info.log.clone())
                    } else {
                        Err(RpcError::new(
                            ErrorCode::SessionRunning,
                            "the session is running; there is nothing to resume",
                        ))
                    }
                }) {
                    Ok(log) => log,
                    Err(error) if error.code == ErrorCode::UnknownSession.code() => {
                        PathBuf::from(&resume.session)
                    }
                    Err(error) => return Err(error),
                };
                let launched = self
                    .launcher
                    .resume(&log, resume.prompt, resume.client.as_ref())
                    .await
                    .map_err(|why| RpcError::new(ErrorCode::CannotResume, why))?;
                let name = match continued.take() {
                    Some((old_id, name)) => {
                        self.hosted.with(&old_id, |entry| {
                            entry.name = crate::hosted::default_name(&entry.id);
                            Ok(())
                        })?;
                        Some(name)
                    }
                    None => launched
                        .info
                        .name
                        .clone()
                        .filter(|name| !self.hosted.name_taken(name)),
                };
                result(CreateResult {
                    session: self.hosted.host(launched, name),
                })
            }
            Method::Prompt => {
                let prompt: PromptParams = params(raw)?;
                self.hosted
                    .control(&prompt.session, Control::Prompt(prompt.text))?;
                result(Ack::OK)
            }
            Method::Approve => {
                let approve: ApproveParams = params(raw)?;
                let request = self.hosted.answer(
                    &approve.session,
                    approve.request.as_deref(),
                    &approve.decision,
                    client.actor(),
                )?;
                result(panewise_api::ApproveResult { ok: true, request })
            }
            Method::Answer => {
                let answer: AnswerParams = params(raw)?;
                // No backend asks the reducer's questions yet (the engine drops them); an
                // answer goes to the agent as the next prompt, which is how every CLI that
                // asks in text takes it.
                let question = self
                    .hosted
                    .with(&answer.session, |entry| Ok(entry.summary().waiting_for))?;
                if !matches!(question, Some(panewise_api::WaitingFor::Question { .. })) {
                    return Err(RpcError::new(
                        ErrorCode::NotWaiting,
                        "the session waits for no answer to a question (an approval is \
                         answered with session/approve)",
                    ));
                }
                self.hosted
                    .control(&answer.session, Control::Prompt(answer.text))?;
                result(Ack::OK)
            }
            Method::Interrupt => {
                let SessionParams { session } = params(raw)?;
                self.hosted.control(&session, Control::Interrupt)?;
                result(Ack::OK)
            }
            Method::Stop => {
                let SessionParams { session } = params(raw)?;
                self.hosted.control(&session, Control::Stop)?;
                result(Ack::OK)
            }
            Method::Remove => {
                let SessionParams { session } = params(raw)?;
                match self.hosted.removal(&session)? {
                    Removal::Now => {}
                    Removal::StopThenRemove => {
                        self.hosted.control(&session, Control::Stop)?;
                        self.hosted.until_ended(&session, REMOVE_STOP_GRACE).await?;
                    }
                    Removal::Refuse(why) => {
                        return Err(RpcError::new(ErrorCode::SessionRunning, why))
                    }
                }
                let entry = self.hosted.remove(&session)?;
                let worktree = self.launcher.remove(&entry.info);
                result(RemoveResult {
                    id: entry.id,
                    worktree,
                })
            }
            Method::Rename => {
                let rename: RenameParams = params(raw)?;
                if rename.name.trim().is_empty() {
                    return Err(RpcError::new(ErrorCode::InvalidParams, "the name is empty"));
                }
                if self.hosted.name_taken(&rename.name) {
                    return Err(RpcError::new(
                        ErrorCode::NameTaken,
                        format!("a session is already named {:?}", rename.name),
                    ));
                }
                self.hosted.with(&rename.session, |entry| {
                    entry.name = rename.name.clone();
                    Ok(())
                })?;
                result(Ack::OK)
            }
            Method::Subscribe => {
                let subscribe: SubscribeParams = params(raw)?;
                let (id, log, progress) = self.hosted.with(&subscribe.session, |entry| {
                    if subscribe.attach {
                        entry.attached = entry.attached.saturating_add(1);
                        entry.look();
                    }
                    Ok((entry.id.clone(), entry.info.log.clone(), entry.progress()))
                })?;
                if let Some((task, attached)) = client.lines.remove(&id) {
                    task.abort();
                    if attached {
                        self.detach(&id);
                    }
                }
                let answered = client.hold_until_answered();
                let tailing = tail(
                    id.clone(),
                    log.clone(),
                    subscribe.from_line,
                    progress,
                    client.outbox.clone(),
                );
                let task = tokio::spawn(async move {
                    // Dropped unanswered only when the connection is gone; the tail then
                    // finds its outbox closed.
                    let _ = answered.await;
                    tailing.await;
                });
                client.lines.insert(id.clone(), (task, subscribe.attach));
                result(SubscribeResult {
                    id,
                    log: log.display().to_string(),
                })
            }
            Method::Unsubscribe => {
                let SessionParams { session } = params(raw)?;
                let id = self.hosted.with(&session, |entry| Ok(entry.id.clone()))?;
                if let Some((task, attached)) = client.lines.remove(&id) {
                    task.abort();
                    if attached {
                        self.detach(&id);
                    }
                }
                result(Ack::OK)
            }
            Method::SubscribeList => {
                let ListParams {} = params(raw)?;
                // Subscribed before the list is read, so no change falls between the two.
                let mut events = self.hosted.list_events();
                let sessions = self.hosted.summaries();
                let outbox = client.outbox.clone();
                let hosted = self.hosted.clone();
                if let Some(task) = client.list.take() {
                    task.abort();
                }
                let answered = client.hold_until_answered();
                client.list = Some(tokio::spawn(async move {
                    let _ = answered.await;
                    loop {
                        let message = match events.recv().await {
                            Ok(ListEvent::Changed(summary)) => notice(
                                panewise_api::ChangedNotice::METHOD,
                                &panewise_api::ChangedNotice { session: *summary },
                            ),
                            Ok(ListEvent::Removed(id)) => {
                                notice(RemovedNotice::METHOD, &RemovedNotice { id })
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                                // Changes were dropped for this slow client: it gets every
                                // summary as it is now, so its list is whole again.
                                for summary in hosted.summaries() {
                                    let Some(message) = notice(
                                        panewise_api::ChangedNotice::METHOD,
                                        &panewise_api::ChangedNotice { session: summary },
                                    ) else {
                                        continue;
                                    };
                                    if outbox.send(message).await.is_err() {
                                        return;
                                    }
                                }
                                continue;
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        };
                        let Some(message) = message else { continue };
                        if outbox.send(message).await.is_err() {
                            return;
                        }
                    }
                }));
                result(ListResult { sessions })
            }
            Method::Shutdown => {
                // The connection asks for the stop once this answer is written
                // (`request_shutdown`), so the client is told before the daemon goes.
                let panewise_api::Empty {} = params(raw)?;
                result(Ack::OK)
            }
        }
    }
}
