//! How the shell reaches the daemon: the [`Daemon`] trait (a fake in the router's tests) and
//! [`LocalDaemon`], this machine's daemon over its socket, with one connection per client
//! name so that each device's answers are recorded under its own name.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use panewise_api::{
    ChangedNotice, EndNotice, ErrorCode, LineNotice, ListParams, ListResult, Method, RemovedNotice,
    SessionSummary, SubscribeParams,
};
use panewise_supervisor::{Client, SupervisorError};
use tokio::sync::mpsc;

/// This machine's daemon in the host column.
pub const LOCAL_HOST: &str = "local";

/// How long a call to the daemon may take before the daemon counts as unreachable.
pub const CALL_DEADLINE: Duration = Duration::from_secs(10);

/// What went wrong reaching the daemon.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct DaemonError {
    /// The API's error code, when the daemon answered with one.
    pub code: Option<ErrorCode>,
    /// The daemon's sentence, or why it could not be reached.
    pub message: String,
}

impl DaemonError {
    /// An error that is not the daemon's answer (it could not be reached).
    pub fn unreachable(message: impl Into<String>) -> DaemonError {
        DaemonError {
            code: None,
            message: message.into(),
        }
    }
}

impl From<SupervisorError> for DaemonError {
    fn from(error: SupervisorError) -> DaemonError {
        let code = error.code();
        let message = match &error {
            SupervisorError::Api(panewise_api::ApiError::Remote { message, .. }) => message.clone(),
            other => other.to_string(),
        };
        DaemonError { code, message }
    }
}

/// One event of a log subscription.
#[derive(Debug, Clone, PartialEq)]
pub enum LogEvent {
    /// Log line `index`.
    Line {
        /// Its index (0: the header).
        index: u64,
        /// The line, without its newline.
        line: String,
    },
    /// The session ended and every line was sent.
    Ended,
}

/// One change of the daemon's session list (`sessions/subscribe`).
#[derive(Debug, Clone, PartialEq)]
pub enum ListEvent {
    /// A session's summary changed, or it was created.
    Changed(Box<SessionSummary>),
    /// A session was removed (its full id).
    Removed(String),
}

/// The session list now and its changes from then on; the stream ends when the daemon
/// closes the connection.
pub type ListStream = (Vec<SessionSummary>, mpsc::Receiver<ListEvent>);

/// A daemon, as the web shell uses it.
#[async_trait::async_trait]
pub trait Daemon: Send + Sync + 'static {
    /// Calls `method` with `params` on a connection that said hello as `client`.
    async fn call(
        &self,
        client: &str,
        method: Method,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, DaemonError>;

    /// Every session.
    async fn list(&self) -> Result<Vec<SessionSummary>, DaemonError> {
        let value = self
            .call(
                "panewise web",
                Method::List,
                serde_json::to_value(ListParams {})
                    .map_err(|error| DaemonError::unreachable(error.to_string()))?,
            )
            .await?;
        let list: ListResult = serde_json::from_value(value)
            .map_err(|error| DaemonError::unreachable(error.to_string()))?;
        Ok(list.sessions)
    }

    /// Every host's sessions, this machine's first (`local`): a daemon that also reaches
    /// other hosts (`panewise web --remote HOST`) gives each host's by its name, their ids
    /// `HOST:ID` as the dashboard names them, and a host that cannot be reached its error.
    async fn list_hosts(&self) -> Vec<(String, Result<Vec<SessionSummary>, DaemonError>)> {
        vec![(LOCAL_HOST.to_owned(), self.list().await)]
    }

    /// This machine's session list and its changes as the daemon publishes them, on a
    /// connection of its own (the push watcher's); `Ok(None)` when this daemon offers no
    /// stream (several hosts), and the watcher lists every host each second instead.
    async fn list_stream(&self) -> Result<Option<ListStream>, DaemonError> {
        Ok(None)
    }

    /// Session `session`'s log lines from 0, then live, on a connection of its own named
    /// `client`; the connection closes when the receiver is dropped.
    async fn subscribe(
        &self,
        client: &str,
        session: &str,
    ) -> Result<mpsc::Receiver<LogEvent>, DaemonError>;
}

/// This machine's daemon, started when none runs at the first connection (as every client
/// does); later connections only connect.
pub struct LocalDaemon {
    program: PathBuf,
    clients: tokio::sync::Mutex<HashMap<String, Arc<Client>>>,
    /// Whether a connection was made once: the daemon is started for the first only, so a
    /// daemon the person stopped later is shown unreachable, not started again behind them.
    started: std::sync::atomic::AtomicBool,
}

impl LocalDaemon {
    /// A daemon reached through its socket; `program` (the panewise binary) starts it when
    /// none runs.
    pub fn new(program: PathBuf) -> LocalDaemon {
        LocalDaemon {
            program,
            clients: tokio::sync::Mutex::default(),
            started: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A new connection named `name`: starting the daemon the first time only.
    async fn connect(&self, name: &str) -> Result<Client, SupervisorError> {
        if self.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            Client::connect(&panewise_supervisor::paths::socket_path()?, name).await
        } else {
            Client::connect_or_start(&self.program, name, CALL_DEADLINE).await
        }
    }

    async fn client(&self, name: &str) -> Result<Arc<Client>, DaemonError> {
        let mut clients = self.clients.lock().await;
        if let Some(client) = clients.get(name) {
            return Ok(Arc::clone(client));
        }
        let client = tokio::time::timeout(CALL_DEADLINE, self.connect(name))
            .await
            .map_err(|_| DaemonError::unreachable("the daemon did not answer in time"))??;
        let client = Arc::new(client);
        clients.insert(name.to_owned(), Arc::clone(&client));
        Ok(client)
    }

    async fn forget(&self, name: &str) {
        self.clients.lock().await.remove(name);
    }
}

#[async_trait::async_trait]
impl Daemon for LocalDaemon {
    async fn call(
        &self,
        client: &str,
        method: Method,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, DaemonError> {
        // A cached connection the daemon closed (a restart) is dropped and made again once.
        for attempt in 0..2 {
            let connection = self.client(client).await?;
            let called = tokio::time::timeout(
                CALL_DEADLINE,
                connection.call_raw(method.name(), params.clone()),
            )
            .await;
            match called {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error @ SupervisorError::Api(_))) => return Err(error.into()),
                Ok(Err(error)) => {
                    self.forget(client).await;
                    if attempt == 1 {
                        return Err(error.into());
                    }
                }
                Err(_) => {
                    self.forget(client).await;
                    return Err(DaemonError::unreachable(
                        "the daemon did not answer in time",
                    ));
                }
            }
        }
        Err(DaemonError::unreachable("the daemon closed the connection"))
    }

    async fn subscribe(
        &self,
        client: &str,
        session: &str,
    ) -> Result<mpsc::Receiver<LogEvent>, DaemonError> {
        let connection = self.connect(client).await?;
        subscription(connection, session).await
    }

    async fn list_stream(&self) -> Result<Option<ListStream>, DaemonError> {
        let connection = tokio::time::timeout(CALL_DEADLINE, self.connect("panewise web push"))
            .await
            .map_err(|_| DaemonError::unreachable("the daemon did not answer in time"))??;
        list_stream(connection).await.map(Some)
    }
}

/// Subscribes `connection` to the session list: the list now, and its changes handed on
/// until the daemon closes the connection or the receiver is dropped.
pub async fn list_stream(connection: Client) -> Result<ListStream, DaemonError> {
    let list: ListResult = tokio::time::timeout(
        CALL_DEADLINE,
        connection.call(Method::SubscribeList, ListParams {}),
    )
    .await
    .map_err(|_| DaemonError::unreachable("the daemon did not answer in time"))??;
    let (events, receiver) = mpsc::channel(256);
    tokio::spawn(async move {
        while let Some(notice) = connection.next_notification().await {
            let event = if notice.method == ChangedNotice::METHOD {
                match serde_json::from_value::<ChangedNotice>(notice.params) {
                    Ok(changed) => ListEvent::Changed(Box::new(changed.session)),
                    Err(_) => continue,
                }
            } else if notice.method == RemovedNotice::METHOD {
                match serde_json::from_value::<RemovedNotice>(notice.params) {
                    Ok(removed) => ListEvent::Removed(removed.id),
                    Err(_) => continue,
                }
            } else {
                continue;
            };
            if events.send(event).await.is_err() {
                break;
            }
        }
    });
    Ok((list.sessions, receiver))
}

/// Subscribes `connection` to `session`'s log from line 0 and hands its lines on until the
/// session ends or the receiver is dropped (the connection closes with the task).
pub async fn subscription(
    connection: Client,
    session: &str,
) -> Result<mpsc::Receiver<LogEvent>, DaemonError> {
    let _subscribed: serde_json::Value = connection
        .call(
            Method::Subscribe,
            SubscribeParams {
                session: session.to_owned(),
                from_line: 0,
                attach: false,
            },
        )
        .await?;
    let (events, receiver) = mpsc::channel(256);
    tokio::spawn(async move {
        while let Some(notice) = connection.next_notification().await {
            let event = if notice.method == LineNotice::METHOD {
                match serde_json::from_value::<LineNotice>(notice.params) {
                    Ok(line) => LogEvent::Line {
                        index: line.index,
                        line: line.line,
                    },
                    Err(_) => continue,
                }
            } else if notice.method == EndNotice::METHOD {
                LogEvent::Ended
            } else {
                continue;
            };
            let ended = event == LogEvent::Ended;
            if events.send(event).await.is_err() || ended {
                break;
            }
        }
    });
    Ok(receiver)
}
