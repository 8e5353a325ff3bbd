//! The socket: bound once per user (a lock, a stale socket replaced), every peer of another
//! uid refused, each connection one reader of request lines and one writer of response and
//! notification lines.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use panewise_api::{rpc, ErrorCode, Method, Request, Response, RpcError, MAX_LINE_BYTES};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::dispatch::{Connection, Daemon};
use crate::error::SupervisorError;
use crate::launcher::Launcher;
use crate::outbox::{outbox, write_all, Outgoing};
use crate::paths;

/// The socket bound, with the lock that keeps a second daemon out.
pub struct Bound {
    listener: UnixListener,
    socket: PathBuf,
    _lock: File,
}

impl Bound {
    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

/// Takes the lock in `dir` and binds the socket: a socket left by a daemon that died (the
/// lock is free, and connecting fails) is removed first.
pub fn bind(dir: &Path) -> Result<Bound, SupervisorError> {
    let lock_path = dir.join(paths::LOCK_NAME);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|error| SupervisorError::io(format!("open {}", lock_path.display()), error))?;
    if let Err(error) = lock.try_lock() {
        return match error {
            std::fs::TryLockError::WouldBlock => Err(SupervisorError::AlreadyRunning(lock_path)),
            std::fs::TryLockError::Error(error) => Err(SupervisorError::io(
                format!("lock {}", lock_path.display()),
                error,
            )),
        };
    }
    let socket = dir.join(paths::SOCKET_NAME);
    if std::fs::symlink_metadata(&socket).is_ok() {
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Err(SupervisorError::AlreadyRunning(lock_path));
        }
        tracing::info!(socket = %socket.display(), "removing the stale socket of a daemon that died");
        std::fs::remove_file(&socket)
            .map_err(|error| SupervisorError::io(format!("remove {}", socket.display()), error))?;
    }
    let listener = UnixListener::bind(&socket)
        .map_err(|error| SupervisorError::io(format!("bind {}", socket.display()), error))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|error| SupervisorError::io(format!("chmod {}", socket.display()), error))?;
    Ok(Bound {
        listener,
        socket,
        _lock: lock,
    })
}

/// Serves `bound` until `daemon/shutdown` or `terminate` resolves (SIGTERM), then stops
/// every session as `session/stop` does and returns once their logs are closed (or the grace
/// ran out).
pub async fn serve(
    bound: Bound,
    launcher: Arc<dyn Launcher>,
    notify: crate::notify::NotifySource,
    stop_grace: Duration,
    terminate: impl std::future::Future<Output = ()>,
) -> Result<(), SupervisorError> {
    let daemon = Daemon::new(launcher, notify);
    let mut shutdown = daemon.shutdown_requested();
    tokio::pin!(terminate);
    loop {
        tokio::select! {
            accepted = bound.listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let daemon = daemon.clone();
                    tokio::spawn(async move { connection(daemon, stream).await });
                }
                Err(error) => tracing::warn!(%error, "accept failed"),
            },
            () = &mut terminate => break,
            _ = shutdown.changed() => break,
        }
    }
    tracing::info!("stopping every session");
    daemon.hosted().stop_all();
    let mut changes = daemon.hosted().changes();
    let waited = tokio::time::timeout(stop_grace, async {
        while !daemon.hosted().all_ended() {
            if changes.changed().await.is_err() {
                break;
            }
        }
    })
    .await;
    if waited.is_err() {
        let running = daemon.hosted().running();
        tracing::warn!(
            ?running,
            "sessions still running after the stop grace; exiting anyway"
        );
        eprintln!(
            "panewise daemon: still running after {stop_grace:?}, left to the process guard: {}",
            running.join(", ")
        );
    }
    for info in daemon.hosted().launch_infos() {
        daemon.launcher().at_shutdown(&info);
    }
    let _ = std::fs::remove_file(&bound.socket);
    Ok(())
}

/// One client: its uid checked, then its lines read until it goes.
async fn connection(daemon: Daemon, stream: UnixStream) {
    let (read, mut write) = stream.into_split();
    let peer = read.as_ref().peer_cred().map(|cred| cred.uid());
    if peer.as_ref().map_or(true, |uid| *uid != paths::uid()) {
        let refusal = Response::err(
            serde_json::Value::Null,
            RpcError::new(
                ErrorCode::InvalidRequest,
                "this daemon serves only the user who started it",
            ),
        );
        if let Ok(line) = rpc::to_line(&refusal) {
            let _ = write.write_all(&line).await;
        }
        tracing::warn!(?peer, "refused a peer of another user");
        // Closed with the peer's request still unread, the socket would be reset and the
        // peer's read fail before it reads the refusal: stop writing, then read and drop what
        // it sent (a request line at most, for a second at most) until it closes.
        let _ = write.shutdown().await;
        let mut read = read;
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            let mut total = 0usize;
            while total <= MAX_LINE_BYTES {
                match read.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => total += read,
                }
            }
        })
        .await;
        return;
    }
    let (out, outgoing) = outbox();
    let stopper = daemon.clone();
    let writer = tokio::spawn(write_all(outgoing, write, move || {
        stopper.request_shutdown();
    }));
    let mut client = Connection::new(out.clone());
    let mut reader = BufReader::new(read);
    loop {
        let line = match read_capped_line(&mut reader).await {
            Ok(Some(Line::Whole(line))) => line,
            Ok(Some(Line::TooLong(len))) => {
                let error = RpcError::new(
                    ErrorCode::LineTooLong,
                    format!("the request line is over {MAX_LINE_BYTES} bytes ({len} read); it was skipped"),
                );
                let refusal = Response::err(serde_json::Value::Null, error);
                if let Ok(line) = rpc::to_line(&refusal) {
                    if out.send(Outgoing::Line(line)).await.is_err() {
                        break;
                    }
                }
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut shutdown = false;
        let response = match rpc::parse_request(&line) {
            Ok(request) => {
                shutdown = request.method == Method::Shutdown.name();
                handle(&daemon, &mut client, request).await
            }
            Err(error) => Some(Response::err(
                rpc::salvage_id(&line),
                RpcError::new(error.code(), error.to_string()),
            )),
        };
        let stops = shutdown && response.as_ref().is_none_or(|r| r.error.is_none());
        let message = match response {
            Some(response) => match rpc::to_line(&response) {
                Ok(line) if stops => Some(Outgoing::Last(line)),
                Ok(line) => Some(Outgoing::Line(line)),
                Err(error) => {
                    tracing::warn!(%error, "a response could not be serialised");
                    None
                }
            },
            None if stops => {
                daemon.request_shutdown();
                None
            }
            None => None,
        };
        let sent = match message {
            Some(message) => out.send(message).await.is_ok(),
            None => true,
        };
        // Queued (the outbox keeps order): what the request subscribed to may now follow it.
        client.answered();
        if !sent {
            break;
        }
    }
    // The client went: its subscriptions end; a question it was asked stays pending.
    client.close(&daemon);
    // The writer ends once every sender is gone: this reader's, the connection's, and those of
    // the subscriptions just aborted.
    drop(client);
    drop(out);
    let _ = writer.await;
}

async fn handle(daemon: &Daemon, client: &mut Connection, request: Request) -> Option<Response> {
    let id = request.id.clone();
    let result = match Method::from_name(&request.method) {
        Some(method) => {
            daemon
                .call(
                    client,
                    method,
                    request.params.unwrap_or(serde_json::json!({})),
                )
                .await
        }
        None => Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!("no method {:?}", request.method),
        )),
    };
    // A request without an id is a notification: nothing is answered.
    let id = id?;
    Some(match result {
        Ok(value) => Response::ok(id, value),
        Err(error) => Response::err(id, error),
    })
}

enum Line {
    Whole(Vec<u8>),
    TooLong(usize),
}

/// The next line without its newline, at most [`MAX_LINE_BYTES`]; a longer one is read to its
/// end and dropped, so the next line starts clean.
async fn read_capped_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut total = 0usize;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (total, line.is_empty()) {
                (0, _) => None,
                (len, _) if len > MAX_LINE_BYTES => Some(Line::TooLong(len)),
                _ => Some(Line::Whole(line)),
            });
        }
        let (chunk, found) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => (at, true),
            None => (buffer.len(), false),
        };
        total = total.saturating_add(chunk);
        if total <= MAX_LINE_BYTES {
            line.extend_from_slice(buffer.get(..chunk).unwrap_or_default());
        } else {
            line = Vec::new();
        }
        reader.consume(chunk + usize::from(found));
        if found {
            return Ok(Some(if total > MAX_LINE_BYTES {
                Line::TooLong(total)
            } else {
                Line::Whole(line)
            }));
        }
    }
}
