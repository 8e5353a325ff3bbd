//! What a connection writes: whole lines, serialised where they are made, through one bounded
//! queue to the connection's one writer.
//!
//! The queue is bounded so a client that stops reading costs the daemon a fixed amount of
//! memory: a subscription's tail then waits to send, and the lines it has not sent stay in the
//! log file (the buffer a subscription has anyway), to be read when the client catches up. The
//! writer sends what has queued up in one `write`, so a burst of lines costs one system call.

use panewise_api::rpc;
use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The lines one connection may have queued before its senders wait.
pub(crate) const OUTBOX_LINES: usize = 4096;

/// The bytes the writer gathers for one `write` at most (a line longer than this goes alone).
const BATCH_BYTES: usize = 256 * 1024;

/// A line for the client, newline-terminated.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// A response or a notification.
    Line(Vec<u8>),
    /// The answer to `daemon/shutdown`: once it is written the daemon stops.
    Last(Vec<u8>),
}

/// The sending side of a connection's queue.
pub(crate) type Outbox = mpsc::Sender<Outgoing>;

/// A connection's queue.
pub(crate) fn outbox() -> (Outbox, mpsc::Receiver<Outgoing>) {
    mpsc::channel(OUTBOX_LINES)
}

/// The notification `method` with `params`, as a line; `None` (logged) if it cannot be
/// serialised, which the API's own types never fail.
pub(crate) fn notice(method: &str, params: &impl Serialize) -> Option<Outgoing> {
    match rpc::notification_line(method, params) {
        Ok(line) => Some(Outgoing::Line(line)),
        Err(error) => {
            tracing::warn!(%error, method, "a notification could not be serialised");
            None
        }
    }
}

/// Writes what `queue` receives to `write` until the queue closes or a write fails; calls
/// `on_last` once an [`Outgoing::Last`] line is written and flushed.
pub(crate) async fn write_all(
    mut queue: mpsc::Receiver<Outgoing>,
    mut write: impl AsyncWrite + Unpin,
    on_last: impl FnOnce(),
) {
    let mut batch: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut on_last = Some(on_last);
    while let Some(first) = queue.recv().await {
        batch.clear();
        let mut last = gather(first, &mut batch);
        while !last && batch.len() < BATCH_BYTES {
            match queue.try_recv() {
                Ok(next) => last = gather(next, &mut batch),
                Err(_) => break,
            }
        }
        let written = write.write_all(&batch).await.is_ok();
        if last {
            let _ = write.flush().await;
            if let Some(on_last) = on_last.take() {
                on_last();
            }
        }
        if !written {
            return;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queued_lines_go_out_in_order_and_the_last_one_calls_back() {
        let (sender, queue) = outbox();
        for n in 0..3 {
            let line = format!("{{\"n\":{n}}}\n").into_bytes();
            sender.send(Outgoing::Line(line)).await.ok();
        }
        sender.send(Outgoing::Last(b"bye\n".to_vec())).await.ok();
        drop(sender);
        let mut written = Vec::new();
        let mut called = false;
        write_all(queue, &mut written, || called = true).await;
        assert_eq!(
            String::from_utf8_lossy(&written),
            "{\"n\":0}\n{\"n\":1}\n{\"n\":2}\nbye\n"
        );
        assert!(called);
    }

    #[test]
    fn a_notice_is_the_same_line_as_the_apis_notification() {
        let params = panewise_api::LineNotice {
            session: "s1".into(),
            index: 3,
            line: "{\"k\":\"a \\\"q\\\"\"}".into(),
        };
        let Some(Outgoing::Line(line)) = notice(panewise_api::LineNotice::METHOD, &params) else {
            panic!("no line");
        };
        let parsed = panewise_api::rpc::parse_incoming(line.strip_suffix(b"\n").unwrap_or(&line));
        let Ok(panewise_api::Incoming::Notification(parsed)) = parsed else {
            panic!("not a notification: {parsed:?}");
        };
        assert_eq!(parsed.method, panewise_api::LineNotice::METHOD);
        let back: panewise_api::LineNotice =
            serde_json::from_value(parsed.params).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, params);
    }
}
