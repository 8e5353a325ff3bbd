//! The API on a pair of byte streams (`panewise daemon --stdio`: standard input and output,
//! what `ssh HOST panewise daemon --stdio` carries): relayed byte for byte to and from the
//! daemon's socket, so there is one server, the socket's, with its checks and its line cap.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::error::SupervisorError;

/// Relays `input` to `socket` and `socket` to `output` until the daemon closes the
/// connection. The end of `input` is passed on (the daemon then ends the connection once it
/// has answered what came before), so a client that goes away frees its subscriptions.
pub async fn relay<I, O>(
    socket: UnixStream,
    mut input: I,
    mut output: O,
) -> Result<(), SupervisorError>
where
    I: AsyncRead + Send + Unpin + 'static,
    O: AsyncWrite + Send + Unpin,
{
    let (mut from_daemon, mut to_daemon) = socket.into_split();
    let upstream = tokio::spawn(async move {
        let copied = tokio::io::copy(&mut input, &mut to_daemon).await;
        // Whatever ended the input, the daemon is told no more requests come.
        let _ = to_daemon.shutdown().await;
        copied
    });
    let downstream = tokio::io::copy(&mut from_daemon, &mut output).await;
    let _ = output.flush().await;
    // The daemon closed: nothing more is read (a read of standard input may be blocked on
    // a thread; the caller exits without waiting for it).
    upstream.abort();
    downstream
        .map(drop)
        .map_err(|error| SupervisorError::io("relay the daemon's answers", error))
}
