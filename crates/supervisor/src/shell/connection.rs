//! A connection's two tasks: the reader, which hands the loop each request line (capped at
//! [`MAX_LINE_BYTES`]), and the writer, which writes what the loop queued and tells it what
//! was written; and the refusal of a peer of another uid.

use std::time::Duration;

use panewise_api::{rpc, ErrorCode, Response, RpcError, MAX_LINE_BYTES};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::{Input, Outgoing};
use crate::registry::{ConnId, Event, Line};

/// How long a dropped connection's writer may take to finish the line it was writing and
/// the notice, before the socket is closed regardless.
const DROP_CLOSE_GRACE: Duration = Duration::from_secs(10);

/// A peer of another uid: told so, then closed.
pub(super) async fn refuse(
    read: tokio::net::unix::OwnedReadHalf,
    mut write: tokio::net::unix::OwnedWriteHalf,
) {
    let refusal = Response::err(
        None,
        RpcError::new(
            ErrorCode::InvalidRequest,
            "this daemon serves only the user who started it",
        ),
    );
    if let Ok(line) = rpc::to_line(&refusal) {
        let _ = write.write_all(&line).await;
    }
    // Closed with the peer's request still unread, the socket would be reset and the peer's
    // read fail before it reads the refusal: stop writing, then read and drop what it sent (a
    // request line at most, for a second at most) until it closes.
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
}

/// A connection's requests, handed to the loop in order until the client goes.
pub(super) async fn read_requests(
    conn: ConnId,
    read: tokio::net::unix::OwnedReadHalf,
    inputs: mpsc::Sender<Input>,
) {
    let mut reader = BufReader::new(read);
    loop {
        let event = match read_capped_line(&mut reader).await {
            Ok(Some(Line_::Whole(line))) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match rpc::parse_request(&line) {
                    Ok(request) => Event::Request { conn, request },
                    Err(error) => Event::Refused {
                        conn,
                        response: Response::err(
                            rpc::salvage_id(&line),
                            RpcError::new(error.code(), error.to_string()),
                        ),
                    },
                }
            }
            Ok(Some(Line_::TooLong(len))) => Event::Refused {
                conn,
                response: Response::err(
                    None,
                    RpcError::new(
                        ErrorCode::LineTooLong,
                        format!(
                            "the request line is over {MAX_LINE_BYTES} bytes ({len} read); it was skipped"
                        ),
                    ),
                ),
            },
            Ok(None) | Err(_) => break,
        };
        if inputs.send(Input::Event(event)).await.is_err() {
            return;
        }
    }
    let _ = inputs
        .send(Input::Event(Event::Disconnected { conn }))
        .await;
}

/// Writes what `queue` receives to `write`, telling the loop what was written, until the
/// queue closes, a write fails, or the connection is dropped (then the line being written is
/// finished, the notice written, and the socket closed).
pub(super) async fn write_all(
    conn: ConnId,
    mut queue: mpsc::Receiver<Outgoing>,
    mut write: impl AsyncWrite + Unpin,
    mut dropped: oneshot::Receiver<Line>,
    inputs: mpsc::Sender<Input>,
) {
    /// The bytes gathered for one `write` at most (a longer line goes alone).
    const BATCH_BYTES: usize = 256 * 1024;
    let mut batch: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        let first = tokio::select! {
            biased;
            notice = &mut dropped => {
                if let Ok(notice) = notice {
                    finish_dropped(&mut write, &[], &notice).await;
                }
                return;
            }
            next = queue.recv() => match next {
                Some(next) => next,
                None => return,
            },
        };
        batch.clear();
        let (mut lines, mut last) = (1usize, gather(first, &mut batch));
        while !last && batch.len() < BATCH_BYTES {
            match queue.try_recv() {
                Ok(next) => {
                    lines += 1;
                    last = gather(next, &mut batch);
                }
                Err(_) => break,
            }
        }
        let mut written = 0;
        while written < batch.len() {
            let rest = batch.get(written..).unwrap_or_default();
            tokio::select! {
                biased;
                notice = &mut dropped => {
                    if let Ok(notice) = notice {
                        finish_dropped(&mut write, rest, &notice).await;
                    }
                    return;
                }
                wrote = write.write(rest) => match wrote {
                    Ok(0) | Err(_) => return,
                    Ok(n) => written += n,
                },
            }
        }
        if last {
            let _ = write.flush().await;
            let _ = inputs.send(Input::Event(Event::Terminate)).await;
        }
        let bytes = batch.len();
        if inputs
            .send(Input::Event(Event::Written { conn, lines, bytes }))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// A dropped connection: the rest of the line being written (so the notice starts a line),
/// the notice, then the socket closed; within [`DROP_CLOSE_GRACE`].
async fn finish_dropped(write: &mut (impl AsyncWrite + Unpin), rest: &[u8], notice: &[u8]) {
    let line_end = rest
        .iter()
        .position(|byte| *byte == b'\n')
        .map_or(0, |at| at + 1);
    let _ = tokio::time::timeout(DROP_CLOSE_GRACE, async {
        write
            .write_all(rest.get(..line_end).unwrap_or_default())
            .await?;
        write.write_all(notice).await?;
        write.shutdown().await
    })
    .await;
}

/// Appends `message` to `batch`; true for the last line the connection writes.
fn gather(message: Outgoing, batch: &mut Vec<u8>) -> bool {
    match message {
        Outgoing::Line(line) => {
            batch.extend_from_slice(&line);
            false
        }
        Outgoing::Last(line) => {
            batch.extend_from_slice(&line);
            true
        }
    }
}

enum Line_ {
    Whole(Vec<u8>),
    TooLong(usize),
}

/// The next line without its newline, at most [`MAX_LINE_BYTES`]; a longer one is read to its
/// end and dropped, so the next line starts clean.
async fn read_capped_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Line_>> {
    let mut line = Vec::new();
    let mut total = 0usize;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (total, line.is_empty()) {
                (0, _) => None,
                (len, _) if len > MAX_LINE_BYTES => Some(Line_::TooLong(len)),
                _ => Some(Line_::Whole(line)),
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
                Line_::TooLong(total)
            } else {
                Line_::Whole(line)
            }));
        }
    }
}
