//! The client side: connect to the daemon (starting it on demand), call methods, read
//! notifications.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use panewise_api::{
    rpc, HelloParams, HelloResult, Incoming, Method, Notification, Request, Response, API_VERSION,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};

use crate::error::SupervisorError;
use crate::paths;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Response>>>>;

/// A connection to the daemon.
pub struct Client {
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    pending: Pending,
    next_id: AtomicU64,
    notifications: tokio::sync::Mutex<mpsc::UnboundedReceiver<Notification>>,
}

impl Client {
    /// Connects to the socket at `socket` and says hello as `name`.
    pub async fn connect(socket: &Path, name: &str) -> Result<Client, SupervisorError> {
        let stream =
            UnixStream::connect(socket)
                .await
                .map_err(|error| SupervisorError::Unreachable {
                    socket: socket.to_owned(),
                    why: error.to_string(),
                })?;
        let (read, write) = stream.into_split();
        let pending: Pending = Arc::default();
        let (notices, notifications) = mpsc::unbounded_channel();
        let routes = Arc::clone(&pending);
        tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match rpc::parse_incoming(line.as_bytes()) {
                    Ok(Incoming::Notification(notice)) => {
                        let _ = notices.send(notice);
                    }
                    Ok(Incoming::Response(response)) => {
                        let route = response.id.as_u64().and_then(|id| {
                            routes
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .remove(&id)
                        });
                        if let Some(route) = route {
                            let _ = route.send(response);
                        }
                    }
                    Err(error) => tracing::warn!(%error, "a line from the daemon is not the API"),
                }
            }
            // The connection closed: every call waiting is told so (its sender dropped).
            routes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clear();
        });
        let client = Client {
            writer: tokio::sync::Mutex::new(write),
            pending,
            next_id: AtomicU64::new(1),
            notifications: tokio::sync::Mutex::new(notifications),
        };
        let _hello: HelloResult = client
            .call(
                Method::Hello,
                HelloParams {
                    api_version: API_VERSION,
                    client: Some(name.to_owned()),
                },
            )
            .await?;
        Ok(client)
    }

    /// Connects to this user's daemon, starting `program daemon` first when none answers,
    /// and waiting for its socket up to `deadline`.
    pub async fn connect_or_start(
        program: &Path,
        name: &str,
        deadline: Duration,
    ) -> Result<Client, SupervisorError> {
        let socket = paths::socket_path()?;
        if let Ok(client) = Client::connect(&socket, name).await {
            return Ok(client);
        }
        start_daemon(program)?;
        let until = tokio::time::Instant::now() + deadline;
        let mut pause = Duration::from_millis(5);
        loop {
            match Client::connect(&socket, name).await {
                Ok(client) => return Ok(client),
                Err(error) if tokio::time::Instant::now() >= until => {
                    let log = paths::runtime_dir()
                        .map(|dir| dir.join(paths::STDERR_NAME).display().to_string())
                        .unwrap_or_default();
                    return Err(SupervisorError::Unreachable {
                        socket,
                        why: format!(
                            "the daemon did not answer within {deadline:?} of being started \
                             ({error}); its stderr is in {log}"
                        ),
                    });
                }
                Err(_) => {}
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// Calls `method` with `params` and reads its result.
    pub async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: Method,
        params: P,
    ) -> Result<R, SupervisorError> {
        let value = self
            .call_raw(
                method.name(),
                serde_json::to_value(params).map_err(panewise_api::ApiError::from)?,
            )
            .await?;
        Ok(serde_json::from_value(value).map_err(panewise_api::ApiError::from)?)
    }

    /// Calls the method named `method` with `params` as JSON.
    pub async fn call_raw(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, SupervisorError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (route, answer) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, route);
        let request = Request::new(id, method, params)?;
        self.send_line(&rpc::to_line(&request)?).await?;
        let response = answer.await.map_err(|_| SupervisorError::Closed)?;
        Ok(response.into_result()?)
    }

    /// Writes raw bytes on the connection (tests of malformed requests).
    pub async fn send_line(&self, line: &[u8]) -> Result<(), SupervisorError> {
        self.writer
            .lock()
            .await
            .write_all(line)
            .await
            .map_err(|error| SupervisorError::io("write to the daemon", error))
    }

    /// The next notification; `None` once the connection closed.
    pub async fn next_notification(&self) -> Option<Notification> {
        self.notifications.lock().await.recv().await
    }
}

/// Starts `program daemon` detached: its own session, no terminal, stderr in the runtime
/// directory.
fn start_daemon(program: &Path) -> Result<(), SupervisorError> {
    let dir = paths::runtime_dir()?;
    let stderr_path: PathBuf = dir.join(paths::STDERR_NAME);
    let stderr = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&stderr_path)
        .map_err(|error| SupervisorError::io(format!("open {}", stderr_path.display()), error))?;
    let mut command = std::process::Command::new(program);
    command
        .arg("daemon")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command.spawn().map_err(|error| {
        SupervisorError::io(format!("start {} daemon", program.display()), error)
    })?;
    // The daemon outlives this client by design; it is reaped by init once this exits.
    drop(child);
    Ok(())
}
