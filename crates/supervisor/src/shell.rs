//! The registry's shell: one loop owns the [`Registry`] and executes its effects; each
//! connection is a reader task and a writer task, each session one task that hands its
//! updates and new log lines to the loop. No lock is shared: everything reaches the loop as
//! an [`Input`] on one bounded channel, and the loop never waits on anything but that channel
//! (it queues on connections with `try_send`, into room the registry has counted).

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use panewise_api::{rpc, ErrorCode, LineNotice, Response, RpcError, MAX_LINE_BYTES};
use panewise_session_protocol::{Control, Update};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::error::SupervisorError;
use crate::launcher::{Launched, Launcher};
use crate::notify::NotifySource;
use crate::registry::{
    session_id, ConnId, Effect, Event, Limits, Line, Origin, ReadBudget, Registry,
};
use crate::server::Bound;

/// Inputs the loop waits for at most at once; past it, their senders (a session's task, a
/// connection's reader or writer) wait.
const INPUTS: usize = 1024;

/// Updates a session's task hands over in one wake at most.
const UPDATES_PER_WAKE: usize = 1024;

/// How long a dropped connection's writer may take to finish the line it was writing and
/// the notice, before the socket is closed regardless.
const DROP_CLOSE_GRACE: Duration = Duration::from_secs(10);

/// What reaches the loop.
pub(crate) enum Input {
    /// An event for the registry.
    Event(Event),
    /// A launch finished (the session's run and channels are the shell's to keep).
    Launched {
        conn: ConnId,
        request: Option<serde_json::Value>,
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
    terminate: impl std::future::Future<Output = ()>,
) -> Result<(), SupervisorError> {
    let (inputs, mut received) = mpsc::channel::<Input>(INPUTS);
    let mut shell = Shell {
        registry: Some(Registry::new(limits, std::process::id())),
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
        request: Option<serde_json::Value>,
        origin: Origin,
        launched: Launched,
    ) {
        let Launched {
            run,
            controls,
            updates,
            info,
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
        tokio::spawn(session_task(id, run, updates, log, self.inputs.clone()));
    }
}

/// One session: its run on a task of its own (a panic there ends this session only), its
/// updates and new log lines handed to the loop once per wake, then its end.
async fn session_task(
    id: String,
    run: crate::launcher::SessionRun,
    mut updates: mpsc::Receiver<Update>,
    log: std::path::PathBuf,
    inputs: mpsc::Sender<Input>,
) {
    let mut run = tokio::spawn(run);
    let mut reader = LogTail::new(log);
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
                    if !hand_over(&id, batch, &mut reader, &inputs).await {
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
    if !hand_over(&id, batch, &mut reader, &inputs).await {
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

/// Hands the loop `updates` and the log's new lines, at most [`HAND_OVER_BYTES`] of lines
/// per event; false when the loop is gone.
async fn hand_over(
    id: &str,
    mut updates: Vec<Update>,
    reader: &mut LogTail,
    inputs: &mpsc::Sender<Input>,
) -> bool {
    loop {
        let (lines, first_byte, more) = reader.read_new();
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

/// The log bytes one [`Event::Session`] carries at most: a session that wrote more since its
/// last wake is handed over in parts, each waiting for room in the loop's inputs.
const HAND_OVER_BYTES: usize = 256 * 1024;

/// A session's log read as it grows: complete lines only, each read once.
struct LogTail {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
    /// The byte after the last complete line handed over.
    offset: u64,
    partial: Vec<u8>,
    /// Read into, kept across calls (a fresh one per wake would be zeroed each time).
    buffer: Vec<u8>,
}

impl LogTail {
    fn new(path: std::path::PathBuf) -> LogTail {
        LogTail {
            path,
            file: None,
            offset: 0,
            partial: Vec::new(),
            buffer: vec![0; 64 * 1024],
        }
    }

    /// The complete lines written since the last call (about [`HAND_OVER_BYTES`] at most),
    /// where the first starts, and whether more may wait.
    fn read_new(&mut self) -> (Vec<String>, u64, bool) {
        let first_byte = self.offset;
        if self.file.is_none() {
            // Not there yet: the session opens its log as it starts.
            self.file = std::fs::File::open(&self.path).ok();
        }
        let Some(file) = self.file.as_mut() else {
            return (Vec::new(), first_byte, false);
        };
        // Read with std, in this task: the log is a regular file the session has just
        // written, so a read is a copy out of the page cache that never waits on the disk.
        let buffer = &mut self.buffer;
        let mut lines = Vec::new();
        loop {
            if self.offset - first_byte >= HAND_OVER_BYTES as u64 {
                return (lines, first_byte, true);
            }
            let read = match file.read(buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) => {
                    tracing::warn!(%error, "reading a session's log");
                    break;
                }
            };
            // A short read took all there was: no second read to learn the end (a line
            // written after it comes with an update of its own, and so another wake).
            let short = read < buffer.len();
            self.partial
                .extend_from_slice(buffer.get(..read).unwrap_or_default());
            let mut start = 0;
            while let Some(at) = self
                .partial
                .get(start..)
                .and_then(|rest| rest.iter().position(|byte| *byte == b'\n'))
            {
                let end = start + at;
                let line = self.partial.get(start..end).unwrap_or_default();
                lines.push(String::from_utf8_lossy(line).into_owned());
                self.offset += (at + 1) as u64;
                start = end + 1;
            }
            self.partial.drain(..start);
            if short {
                break;
            }
        }
        (lines, first_byte, false)
    }
}

/// What a [`read_log`] queued.
#[derive(Default)]
struct LogRead {
    lines: usize,
    bytes: usize,
    next_byte: Option<u64>,
}

/// Queues lines `from_index..` of `log` (at `from_byte` when known) as `session/line`
/// notices on `out`, within `budget` (one line at least, when there is one).
fn read_log(
    log: &Path,
    session: &str,
    from_index: u64,
    from_byte: Option<u64>,
    budget: ReadBudget,
    out: &mpsc::Sender<Outgoing>,
) -> LogRead {
    let mut done = LogRead::default();
    let Ok(mut file) = std::fs::File::open(log) else {
        return done;
    };
    let (mut index, mut byte) = match from_byte {
        Some(byte) if file.seek(SeekFrom::Start(byte)).is_ok() => (from_index, byte),
        _ => (0, 0),
    };
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    while done.lines < budget.lines && (done.bytes < budget.bytes || done.lines == 0) {
        line.clear();
        match std::io::BufRead::read_until(&mut reader, b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') {
            // A line still being written: it is sent once complete.
            break;
        }
        byte += line.len() as u64;
        if index >= from_index {
            let text = String::from_utf8_lossy(line.get(..line.len() - 1).unwrap_or_default());
            let params = LineNotice {
                session: session.to_owned(),
                index,
                line: text.into_owned(),
            };
            let Ok(notice) = rpc::notification_line(LineNotice::METHOD, &params) else {
                break;
            };
            done.bytes += notice.len();
            if out.try_send(Outgoing::Line(Line::from(notice))).is_err() {
                break;
            }
            done.lines += 1;
            done.next_byte = Some(byte);
        }
        index += 1;
    }
    done
}

/// A peer of another uid: told so, then closed.
async fn refuse(
    read: tokio::net::unix::OwnedReadHalf,
    mut write: tokio::net::unix::OwnedWriteHalf,
) {
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
async fn read_requests(
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
                    serde_json::Value::Null,
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
async fn write_all(
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

/// The wall clock in ms since the epoch: when a session was hosted, for its age.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}
