//! The client side: connect to the daemon (starting it on demand), call methods, read
//! notifications. The connection is any byte stream: the Unix socket, or a child process's
//! standard input and output (`ssh HOST panewise daemon --stdio`, [`Client::over_command`]).

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
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};

use crate::error::SupervisorError;
use crate::paths;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Response>>>>;

/// The notifications a client holds unread. At the bound the connection's reader waits: it
/// reads nothing more from the daemon, whose writes to the connection then block and whose
/// bounded outbox (4,096 lines) fills, so a subscription's tail waits there and its lines stay
/// in the log. Nothing is lost and neither side's memory grows. Responses come on the same
/// stream after the notifications before them, so a caller that awaits a call while it is
/// subscribed must keep reading notifications on another task (or in the same `select!`):
/// otherwise, past the bound, the call waits for notifications nobody reads.
pub(crate) const NOTICE_BOUND: usize = 1024;

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A connection to the daemon.
pub struct Client {
    writer: tokio::sync::Mutex<Writer>,
    pending: Pending,
    next_id: AtomicU64,
    notifications: tokio::sync::Mutex<mpsc::Receiver<Notification>>,
    /// The process the connection runs through (ssh), killed when the client is dropped so
    /// it never outlives the command.
    _child: Option<tokio::process::Child>,
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
        Client::over(read, write, None, name).await
    }

    /// Speaks the API over `read` and `write` (any byte stream carrying the API's lines) and
    /// says hello as `name`; `child`, the process at the other end of them, is kept with the
    /// client and killed when it goes.
    pub async fn over<R, W>(
        read: R,
        write: W,
        child: Option<tokio::process::Child>,
        name: &str,
    ) -> Result<Client, SupervisorError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let pending: Pending = Arc::default();
        let (notices, notifications) = mpsc::channel(NOTICE_BOUND);
        let routes = Arc::clone(&pending);
        tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match rpc::parse_incoming(line.as_bytes()) {
                    Ok(Incoming::Notification(notice)) => {
                        // Waits while NOTICE_BOUND are unread; none is kept once the client
                        // has gone (the receiver dropped), and responses are still routed.
                        let _gone = notices.send(notice).await;
                    }
                    Ok(Incoming::Response(response)) => {
                        let route = response
                            .id
                            .as_ref()
                            .and_then(panewise_api::RequestId::as_u64)
                            .and_then(|id| {
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
            writer: tokio::sync::Mutex::new(Box::new(write)),
            pending,
            next_id: AtomicU64::new(1),
            notifications: tokio::sync::Mutex::new(notifications),
            _child: child,
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
        let stream = connect_stream_or_start(program, deadline).await?;
        let (read, write) = stream.into_split();
        Client::over(read, write, None, name).await
    }

    /// Runs `argv` (`ssh HOST panewise daemon --stdio`) and speaks the API over its standard
    /// input and output, says hello as `name`; `host` names it in errors. No answer within
    /// `deadline` (a host that does not answer, a password prompt nobody types into) is an
    /// error, never a hang; the process's last lines on stderr say why it failed. The process
    /// is killed when the client is dropped, and ends by itself when this one exits (its
    /// standard input closes).
    pub async fn over_command(
        argv: &[String],
        host: &str,
        name: &str,
        deadline: Duration,
    ) -> Result<Client, SupervisorError> {
        let unreachable = |why: String| SupervisorError::Remote {
            host: host.to_owned(),
            why,
        };
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| unreachable("the command to reach it is empty".to_owned()))?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|error| unreachable(format!("cannot start {program}: {error}")))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(unreachable(format!("{program} has no standard streams")));
        };
        let said = tokio::spawn(last_lines(stderr, host.to_owned()));
        let connected =
            tokio::time::timeout(deadline, Client::over(stdout, stdin, Some(child), name)).await;
        let why = match connected {
            Ok(Ok(client)) => return Ok(client),
            Ok(Err(error @ SupervisorError::Api(_))) => error.to_string(),
            Ok(Err(_)) => format!("{program} ended before the daemon answered"),
            Err(_) => format!("no answer within {deadline:?}"),
        };
        // The process is gone (or killed with the dropped client): its stderr ends soon.
        let said = tokio::time::timeout(Duration::from_secs(2), said)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Err(unreachable(if said.is_empty() {
            why
        } else {
            format!("{why}: {said}")
        }))
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

/// The connected socket of this user's daemon, starting `program daemon` first when none
/// answers and waiting for its socket up to `deadline` (`panewise daemon --stdio` relays it).
pub async fn connect_stream_or_start(
    program: &Path,
    deadline: Duration,
) -> Result<UnixStream, SupervisorError> {
    let socket = paths::socket_path()?;
    if let Ok(stream) = UnixStream::connect(&socket).await {
        return Ok(stream);
    }
    start_daemon(program)?;
    let until = tokio::time::Instant::now() + deadline;
    let mut pause = Duration::from_millis(5);
    loop {
        match UnixStream::connect(&socket).await {
            Ok(stream) => return Ok(stream),
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

/// The most of a remote command's stderr kept for an error message.
const STDERR_KEPT: usize = 600;

/// Reads `stderr` to its end, tracing each line; the last lines, at most [`STDERR_KEPT`]
/// bytes, joined.
async fn last_lines(stderr: tokio::process::ChildStderr, host: String) -> String {
    let mut lines = BufReader::new(stderr).lines();
    let mut kept: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(%host, %line, "the remote command's stderr");
        let line: String = line
            .chars()
            .filter(|c| !c.is_control())
            .take(STDERR_KEPT)
            .collect();
        if line.trim().is_empty() {
            continue;
        }
        kept.push_back(line);
        while kept.iter().map(String::len).sum::<usize>() > STDERR_KEPT {
            kept.pop_front();
        }
    }
    Vec::from(kept).join(" / ")
}

/// The variables of this process's environment the daemon is started without: every API key
/// ([`panewise_providers::keys::is_secret_variable`]). A daemon serves many sessions over
/// its life, each with the keys its client sends; a key of the shell that happened to start it
/// must not reach them (nor the agents and tools they run).
pub(crate) fn daemon_env_removals() -> Vec<std::ffi::OsString> {
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            name.to_str()
                .is_some_and(panewise_providers::keys::is_secret_variable)
        })
        .collect()
}

/// Starts `program daemon` detached: its own session, no terminal, stderr in the runtime
/// directory, no API key in its environment ([`daemon_env_removals`]).
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
    for name in daemon_env_removals() {
        command.env_remove(name);
    }
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command.spawn().map_err(|error| {
        SupervisorError::io(format!("start {} daemon", program.display()), error)
    })?;
    // The daemon outlives this client by design; it is reaped by init once this exits.
    drop(child);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::AtomicUsize;

    /// Notifications the fake daemon sends: well past what the client holds unread.
    const SENT: usize = NOTICE_BOUND * 3;

    /// A daemon on the far end of `stream`: answers the hello, then sends [`SENT`]
    /// notifications numbered from 0, counting each one written in `written`.
    async fn daemon(stream: tokio::io::DuplexStream, written: Arc<AtomicUsize>) {
        let (read, mut write) = tokio::io::split(stream);
        let mut lines = BufReader::new(read).lines();
        let Ok(Some(hello)) = lines.next_line().await else {
            panic!("no hello");
        };
        let hello: serde_json::Value = serde_json::from_str(&hello).unwrap_or_default();
        let response = serde_json::json!({
            "jsonrpc": "2.0",
            "id": hello["id"],
            "result": {"api_version": API_VERSION, "panewise_version": "test", "pid": 1},
        });
        let mut line = response.to_string().into_bytes();
        line.push(b'\n');
        write.write_all(&line).await.ok();
        for n in 0..SENT {
            let Ok(line) = rpc::notification_line("test/n", &serde_json::json!({ "n": n })) else {
                panic!("a notification line");
            };
            if write.write_all(&line).await.is_err() {
                return;
            }
            written.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_reads_no_notifications_holds_the_daemon_back_and_loses_none() {
        let (near, far) = tokio::io::duplex(16 * 1024);
        let written = Arc::new(AtomicUsize::new(0));
        let daemon = tokio::spawn(daemon(far, Arc::clone(&written)));
        let (read, write) = tokio::io::split(near);
        let client = Client::over(read, write, None, "test").await;
        let Ok(client) = client else {
            panic!("the hello is answered");
        };
        // Paused time moves only once every task waits: the daemon's writes are then blocked.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let held_at = written.load(Ordering::Relaxed);
        assert!(
            (NOTICE_BOUND..SENT).contains(&held_at),
            "the daemon wrote {held_at} of {SENT} notifications to a client that read none \
             (it holds {NOTICE_BOUND})"
        );
        for n in 0..SENT {
            let Some(notice) = client.next_notification().await else {
                panic!("the connection closed after {n} notifications");
            };
            assert_eq!(notice.params["n"], n, "notification {n} in order");
        }
        assert!(daemon.await.is_ok());
        assert_eq!(written.load(Ordering::Relaxed), SENT);
    }
}
