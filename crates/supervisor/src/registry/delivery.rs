//! What each connection is sent, and how much it may have queued.
//!
//! Every line for a client goes through one queue per connection, and the registry counts
//! what is in it: lines are added by [`Effect::Send`] and taken off by [`Event::Written`](super::Event::Written).
//! The queue is bounded ([`Limits::queue_lines`], [`Limits::queue_bytes`]), and what happens
//! at the bound is chosen per kind of line:
//! - **Log lines** are sent live, from the lines the session's reader handed over, while the
//!   subscriber is caught up and its queue has room. At the bound the subscription falls
//!   behind: nothing more is queued for it, and once the client has read, the lines it missed
//!   are read from the log ([`Effect::ReadLog`]) from the offset it reached, so nothing is
//!   lost and nothing is sent twice.
//! - **List changes** at the bound mark the list subscription stale; once there is room, every
//!   summary (and every removal missed) is sent again, so the client's list is whole.
//! - **Answers** are always queued (up to [`Limits::answer_slack_lines`] over the bound): a
//!   client that asks without reading is dropped when even that is used.
//! - A queue that stays full for [`Limits::stall_ms`] drops its client: what it had queued
//!   is thrown away (it is in the log), and it is told why, and where each subscription
//!   resumes ([`panewise_api::DroppedNotice`]).
//! - **The daemon's total** is bounded too ([`Limits::total_queue_bytes`]): each connection's
//!   byte bound is its share of the total, [`Limits::conn_queue_bytes`], so a hundred clients
//!   that never read hold at most the total between them (each one line past its share, plus
//!   answers), and each is dropped at its stall like one alone.

use std::collections::{BTreeMap, BTreeSet};

use panewise_api::{ChangedNotice, DroppedNotice, EndNotice, LineNotice, RemovedNotice, ResumeAt};
use serde::Serialize;

use super::{ConnId, Effect, Line, ReadBudget, Registry, Timer};

/// The bounds of each connection's queue, and the daemon's stop grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Lines a connection may have queued.
    pub queue_lines: usize,
    /// Bytes a connection may have queued (one line may pass it).
    pub queue_bytes: usize,
    /// Answers queued past the bound before a client that asks without reading is dropped.
    pub answer_slack_lines: usize,
    /// How long a queue may stay full before its client is dropped, ms.
    pub stall_ms: u64,
    /// How long the daemon's stop waits for its sessions to end, ms.
    pub stop_grace_ms: u64,
    /// Bytes all connections together may have queued: each one's bound is its share
    /// ([`Limits::conn_queue_bytes`]).
    pub total_queue_bytes: usize,
}

/// The smallest share of [`Limits::total_queue_bytes`] a connection gets, however many there
/// are: a subscriber still gets its lines in reads of this size.
pub const MIN_CONN_QUEUE_BYTES: usize = 64 * 1024;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            queue_lines: 4096,
            queue_bytes: 8 * 1024 * 1024,
            answer_slack_lines: 256,
            stall_ms: 30_000,
            stop_grace_ms: 10_000,
            total_queue_bytes: 64 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The most lines the shell's queue must hold: the bound, the answers past it, and the
    /// one dropping notice.
    pub fn channel_capacity(&self) -> usize {
        self.queue_lines + self.answer_slack_lines + 1
    }

    /// One connection's byte bound while `conns` are connected: its share of the total,
    /// no less than `MIN_CONN_QUEUE_BYTES` and no more than [`Limits::queue_bytes`]. Pure.
    pub fn conn_queue_bytes(&self, conns: usize) -> usize {
        (self.total_queue_bytes / conns.max(1))
            .max(MIN_CONN_QUEUE_BYTES)
            .min(self.queue_bytes)
    }

    /// These limits with the byte bound of one of `conns` connections.
    fn shared_by(self, conns: usize) -> Limits {
        Limits {
            queue_bytes: self.conn_queue_bytes(conns),
            ..self
        }
    }
}

/// One connection: who it is, what it subscribed to and what it has queued.
#[derive(Debug, Default)]
pub(crate) struct Conn {
    pub(crate) client: Option<String>,
    queued_lines: usize,
    queued_bytes: usize,
    /// Log subscriptions by session id.
    lines: BTreeMap<String, LineSub>,
    list: Option<ListSub>,
    /// How often the queue filled; the stall timer names the fill it was set for.
    fills: u64,
    full: bool,
    /// A log subscription may be behind or owed its end. Set whenever one can become so (a
    /// subscription made, a line not queued); cleared only by a [`Registry::pump`] that
    /// walked every subscription and left none waiting. While it is clear, a pump (one per
    /// batch the writer finishes) does not walk the subscriptions.
    owed: bool,
}

/// A log subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LineSub {
    /// A person looks at the session through it.
    attach: bool,
    /// The index of the next line to send.
    next: u64,
    /// Where that line starts in the log, when known.
    next_byte: Option<u64>,
    /// `session/ended` was sent.
    end_sent: bool,
}

/// The list subscription.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ListSub {
    /// Changes were not queued (no room): every summary is sent again once there is.
    stale: bool,
    /// Sessions removed while stale.
    removed: BTreeSet<String>,
}

impl Conn {
    fn has_room(&self, limits: &Limits) -> bool {
        self.queued_lines < limits.queue_lines && self.queued_bytes < limits.queue_bytes
    }

    fn budget(&self, limits: &Limits) -> ReadBudget {
        ReadBudget {
            lines: limits.queue_lines.saturating_sub(self.queued_lines),
            bytes: limits.queue_bytes.saturating_sub(self.queued_bytes),
        }
    }
}

/// A notification as a line.
pub(super) fn notice_line(method: &str, params: &impl Serialize) -> Option<Line> {
    panewise_api::rpc::notification_line(method, params)
        .ok()
        .map(Line::from)
}

impl Registry {
    /// The limits with each connection's byte bound its share of the daemon's total.
    fn shared_limits(&self) -> Limits {
        self.limits.shared_by(self.conns.len())
    }

    /// Counts `line` as queued on `conn` and has the shell queue it.
    fn queue(&mut self, conn: ConnId, line: Line, effects: &mut Vec<Effect>) {
        self.count_and_push(conn, Effect::Send { conn, line }, effects);
    }

    /// Counts the line `send` (an [`Effect::Send`] or [`Effect::SendLast`]) queues on `conn`,
    /// then pushes it.
    fn count_and_push(&mut self, conn: ConnId, send: Effect, effects: &mut Vec<Effect>) {
        let Some(connection) = self.conns.get_mut(&conn) else {
            return;
        };
        if let Effect::Send { line, .. } | Effect::SendLast { line, .. } = &send {
            connection.queued_lines += 1;
            connection.queued_bytes += line.len();
        }
        effects.push(send);
        self.note_full(conn, effects);
    }

    /// A queue that just filled starts its stall timer.
    fn note_full(&mut self, conn: ConnId, effects: &mut Vec<Effect>) {
        let limits = self.shared_limits();
        let Some(connection) = self.conns.get_mut(&conn) else {
            return;
        };
        if !connection.full && !connection.has_room(&limits) {
            connection.full = true;
            connection.fills += 1;
            effects.push(Effect::After {
                delay_ms: limits.stall_ms,
                timer: Timer::Stall {
                    conn,
                    since: connection.fills,
                },
            });
        }
    }

    /// Queues an answer: past the bound too, up to the slack; a client past even that asks
    /// without reading, and is dropped.
    pub(super) fn send_response(&mut self, conn: ConnId, line: Line, effects: &mut Vec<Effect>) {
        self.send_answer(conn, line, false, effects);
    }

    /// [`Registry::send_response`]; `last`: the answer to `daemon/shutdown`.
    pub(super) fn send_answer(
        &mut self,
        conn: ConnId,
        line: Line,
        last: bool,
        effects: &mut Vec<Effect>,
    ) {
        let limits = self.shared_limits();
        let Some(connection) = self.conns.get_mut(&conn) else {
            return;
        };
        if connection.queued_lines >= limits.queue_lines + limits.answer_slack_lines {
            let reason = format!(
                "the client sent requests without reading their answers ({} answers and \
                 notices waited for it)",
                connection.queued_lines
            );
            self.drop_conn(conn, reason, effects);
            return;
        }
        let send = if last {
            Effect::SendLast { conn, line }
        } else {
            Effect::Send { conn, line }
        };
        self.count_and_push(conn, send, effects);
    }

    /// The writer wrote part of the queue: room again for what waits.
    pub(super) fn written(
        &mut self,
        conn: ConnId,
        lines: usize,
        bytes: usize,
        effects: &mut Vec<Effect>,
    ) {
        let limits = self.shared_limits();
        let Some(connection) = self.conns.get_mut(&conn) else {
            return;
        };
        connection.queued_lines = connection.queued_lines.saturating_sub(lines);
        connection.queued_bytes = connection.queued_bytes.saturating_sub(bytes);
        if connection.full && connection.has_room(&limits) {
            connection.full = false;
        }
        self.pump(conn, effects);
    }

    /// Sends what `conn`'s subscriptions wait for, as far as its queue has room: a stale list
    /// again, the lines a subscription fell behind on (from the log), the ends it is owed.
    pub(super) fn pump(&mut self, conn: ConnId, effects: &mut Vec<Effect>) {
        self.resync_list(conn, effects);
        let limits = self.shared_limits();
        let Some(connection) = self.conns.get(&conn) else {
            return;
        };
        if !connection.owed {
            return;
        }
        let behind: Vec<(String, u64, Option<u64>)> = connection
            .lines
            .iter()
            .filter_map(|(id, sub)| {
                let logged = self.sessions.get(id)?.logged;
                (sub.next < logged).then(|| (id.clone(), sub.next, sub.next_byte))
            })
            .collect();
        let caught_up = behind.is_empty();
        for (id, from_index, from_byte) in behind {
            let Some(session) = self.sessions.get(&id) else {
                continue;
            };
            let (logged, log) = (session.logged, session.info.log.clone());
            let Some(connection) = self.conns.get_mut(&conn) else {
                return;
            };
            if !connection.has_room(&limits) {
                break;
            }
            let mut budget = connection.budget(&limits);
            let wanted = usize::try_from(logged - from_index).unwrap_or(usize::MAX);
            budget.lines = budget.lines.min(wanted);
            // Reserved now, given back by what the read reports it sent.
            connection.queued_lines += budget.lines;
            connection.queued_bytes += budget.bytes;
            effects.push(Effect::ReadLog {
                conn,
                session: id,
                log,
                from_index,
                from_byte,
                budget,
            });
        }
        let ids: Vec<String> = self
            .conns
            .get(&conn)
            .map(|connection| connection.lines.keys().cloned().collect())
            .unwrap_or_default();
        for id in ids {
            self.deliver_end(conn, &id, effects);
        }
        // Every subscription caught up has had its end, if it is owed one: nothing waits.
        if caught_up {
            if let Some(connection) = self.conns.get_mut(&conn) {
                connection.owed = false;
            }
        }
    }

    /// What a [`Effect::ReadLog`] sent.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn log_read(
        &mut self,
        conn: ConnId,
        session: &str,
        lines: usize,
        bytes: usize,
        asked: ReadBudget,
        next_byte: Option<u64>,
        effects: &mut Vec<Effect>,
    ) {
        let Some(connection) = self.conns.get_mut(&conn) else {
            return;
        };
        connection.queued_lines = connection
            .queued_lines
            .saturating_sub(asked.lines)
            .saturating_add(lines);
        connection.queued_bytes = connection
            .queued_bytes
            .saturating_sub(asked.bytes)
            .saturating_add(bytes);
        if let Some(sub) = connection.lines.get_mut(session) {
            sub.next += lines as u64;
            sub.next_byte = next_byte;
        }
        self.note_full(conn, effects);
        if lines > 0 {
            self.pump(conn, effects);
        } else {
            self.deliver_end(conn, session, effects);
        }
    }

    /// The session `id`'s log gained `lines`, the first at byte `first_byte`: each caught-up
    /// subscriber gets them from memory while its queue has room.
    pub(super) fn logged(
        &mut self,
        id: &str,
        lines: Vec<String>,
        first_byte: u64,
        effects: &mut Vec<Effect>,
    ) {
        let Some(session) = self.sessions.get_mut(id) else {
            return;
        };
        let first_index = session.logged;
        let ends: Vec<u64> = lines
            .iter()
            .scan(first_byte, |byte, line| {
                *byte += line.len() as u64 + 1;
                Some(*byte)
            })
            .collect();
        session.logged += lines.len() as u64;
        session.logged_bytes = ends.last().copied().unwrap_or(session.logged_bytes);
        let subscribers: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, connection)| connection.lines.contains_key(id))
            .map(|(conn, _)| *conn)
            .collect();
        if subscribers.is_empty() {
            return;
        }
        // Serialised once, shared by every subscriber.
        let mut shared: Vec<Option<Line>> = vec![None; lines.len()];
        let limits = self.shared_limits();
        for conn in subscribers {
            for (offset, line) in lines.iter().enumerate() {
                let index = first_index + offset as u64;
                let Some(connection) = self.conns.get_mut(&conn) else {
                    break;
                };
                let room = connection.has_room(&limits);
                let Some(sub) = connection.lines.get_mut(id) else {
                    break;
                };
                if sub.next > index {
                    if sub.next == index + 1 {
                        sub.next_byte = ends.get(offset).copied();
                    }
                    continue;
                }
                if sub.next < index || !room {
                    // Behind: the rest is read from the log once there is room.
                    connection.owed = true;
                    break;
                }
                let Some(slot) = shared.get_mut(offset) else {
                    break;
                };
                let notice = match slot {
                    Some(notice) => notice.clone(),
                    None => {
                        let params = LineRef {
                            session: id,
                            index,
                            line,
                        };
                        let Some(notice) = notice_line(LineNotice::METHOD, &params) else {
                            // Not sent: behind, as at the bound (the log read will say why).
                            connection.owed = true;
                            break;
                        };
                        *slot = Some(notice.clone());
                        notice
                    }
                };
                sub.next = index + 1;
                sub.next_byte = ends.get(offset).copied();
                self.queue(conn, notice, effects);
            }
        }
    }

    /// `session/ended` to every subscriber of the ended session `id` that has every line.
    pub(super) fn deliver_ends(&mut self, id: &str, effects: &mut Vec<Effect>) {
        let subscribers: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, connection)| connection.lines.contains_key(id))
            .map(|(conn, _)| *conn)
            .collect();
        for conn in subscribers {
            self.deliver_end(conn, id, effects);
        }
    }

    fn deliver_end(&mut self, conn: ConnId, id: &str, effects: &mut Vec<Effect>) {
        let Some(session) = self.sessions.get(id) else {
            return;
        };
        let (ended, logged) = (session.is_ended(), session.logged);
        let Some(sub) = self
            .conns
            .get_mut(&conn)
            .and_then(|connection| connection.lines.get_mut(id))
        else {
            return;
        };
        if !ended || sub.end_sent || sub.next < logged {
            return;
        }
        sub.end_sent = true;
        let end = EndNotice {
            session: id.to_owned(),
            lines: logged.max(sub.next),
        };
        if let Some(line) = notice_line(EndNotice::METHOD, &end) {
            self.send_response(conn, line, effects);
        }
    }

    /// The session `id` is forgotten: each subscription of it ends where it is.
    pub(super) fn end_subscriptions_of(&mut self, id: &str, effects: &mut Vec<Effect>) {
        let subscribers: Vec<(ConnId, LineSub)> = self
            .conns
            .iter_mut()
            .filter_map(|(conn, connection)| Some((*conn, connection.lines.remove(id)?)))
            .collect();
        for (conn, sub) in subscribers {
            if sub.end_sent {
                continue;
            }
            let end = EndNotice {
                session: id.to_owned(),
                lines: sub.next,
            };
            if let Some(line) = notice_line(EndNotice::METHOD, &end) {
                self.send_response(conn, line, effects);
            }
        }
    }

    /// Starts (or restarts) `conn`'s subscription to the session `id` at `from_line`.
    pub(super) fn subscribe_lines(
        &mut self,
        conn: ConnId,
        id: &str,
        from_line: u64,
        attach: bool,
        effects: &mut Vec<Effect>,
    ) {
        let Some(connection) = self.conns.get_mut(&conn) else {
            return;
        };
        connection.owed = true;
        let previous = connection.lines.insert(
            id.to_owned(),
            LineSub {
                attach,
                next: from_line,
                next_byte: (from_line == 0).then_some(0),
                end_sent: false,
            },
        );
        if previous.is_some_and(|sub| sub.attach) {
            self.detach(id, effects);
        }
    }

    /// Ends `conn`'s subscription to the session `id`.
    pub(super) fn unsubscribe_lines(&mut self, conn: ConnId, id: &str, effects: &mut Vec<Effect>) {
        let removed = self
            .conns
            .get_mut(&conn)
            .and_then(|connection| connection.lines.remove(id));
        if removed.is_some_and(|sub| sub.attach) {
            self.detach(id, effects);
        }
    }

    /// One attached client fewer for the session `id`.
    fn detach(&mut self, id: &str, effects: &mut Vec<Effect>) {
        if let Some(session) = self.sessions.get_mut(id) {
            session.attached = session.attached.saturating_sub(1);
            self.publish(id, effects);
        }
    }

    /// Starts `conn`'s list subscription (the answer carries the list).
    pub(super) fn subscribe_list(&mut self, conn: ConnId) {
        if let Some(connection) = self.conns.get_mut(&conn) {
            connection.list = Some(ListSub::default());
        }
    }

    /// Sends a list notice to every list subscriber with room; one without goes stale.
    pub(super) fn broadcast_list(
        &mut self,
        method: &str,
        params: &impl Serialize,
        effects: &mut Vec<Effect>,
    ) {
        let subscribers: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, connection)| connection.list.is_some())
            .map(|(conn, _)| *conn)
            .collect();
        if subscribers.is_empty() {
            return;
        }
        let Some(line) = notice_line(method, params) else {
            return;
        };
        let limits = self.shared_limits();
        for conn in subscribers {
            let Some(connection) = self.conns.get_mut(&conn) else {
                continue;
            };
            let room = connection.has_room(&limits);
            let Some(list) = connection.list.as_mut() else {
                continue;
            };
            if list.stale || !room {
                list.stale = true;
                continue;
            }
            self.queue(conn, line.clone(), effects);
        }
    }

    /// A session was removed: list subscribers are told (a stale one, when it resyncs).
    pub(super) fn list_removed(&mut self, id: &str, effects: &mut Vec<Effect>) {
        for connection in self.conns.values_mut() {
            if let Some(list) = connection.list.as_mut().filter(|list| list.stale) {
                list.removed.insert(id.to_owned());
            }
        }
        let notice = RemovedNotice { id: id.to_owned() };
        self.broadcast_list(RemovedNotice::METHOD, &notice, effects);
    }

    /// A stale list subscription with room again gets every removal it missed and every
    /// summary as it is now.
    fn resync_list(&mut self, conn: ConnId, effects: &mut Vec<Effect>) {
        let limits = self.shared_limits();
        let Some(connection) = self.conns.get_mut(&conn) else {
            return;
        };
        if !connection.has_room(&limits) {
            return;
        }
        let Some(list) = connection.list.as_mut().filter(|list| list.stale) else {
            return;
        };
        let removed = std::mem::take(&mut list.removed);
        list.stale = false;
        let mut lines: Vec<Line> = removed
            .into_iter()
            .filter_map(|id| notice_line(RemovedNotice::METHOD, &RemovedNotice { id }))
            .collect();
        lines.extend(
            self.summaries().into_iter().filter_map(|session| {
                notice_line(ChangedNotice::METHOD, &ChangedNotice { session })
            }),
        );
        // A resync is sent whole (it is as long as the list): the queue may pass its bound by
        // that much, once.
        for line in lines {
            self.queue(conn, line, effects);
        }
    }

    /// The stall timer of `conn`'s fill `since` ran out: still full, the client is dropped.
    pub(super) fn stalled(&mut self, conn: ConnId, since: u64, effects: &mut Vec<Effect>) {
        let stall_ms = self.limits.stall_ms;
        let Some(connection) = self.conns.get(&conn) else {
            return;
        };
        if !connection.full || connection.fills != since {
            return;
        }
        let reason = format!(
            "the client read nothing for {} s while {} lines ({} bytes) waited for it; the \
             daemon closed the connection",
            stall_ms / 1000,
            connection.queued_lines,
            connection.queued_bytes
        );
        self.drop_conn(conn, reason, effects);
    }

    /// Closes `conn`, telling it why and where each subscription resumes.
    fn drop_conn(&mut self, conn: ConnId, reason: String, effects: &mut Vec<Effect>) {
        let Some(connection) = self.conns.get(&conn) else {
            return;
        };
        let resume = connection
            .lines
            .iter()
            .map(|(session, sub)| ResumeAt {
                session: session.clone(),
                from_line: sub.next,
            })
            .collect();
        if let Some(notice) = notice_line(DroppedNotice::METHOD, &DroppedNotice { reason, resume })
        {
            effects.push(Effect::Drop { conn, notice });
        }
        self.disconnect(conn, effects);
    }

    /// The client went (or was dropped): its subscriptions end; a question it was asked stays
    /// pending.
    pub(super) fn disconnect(&mut self, conn: ConnId, effects: &mut Vec<Effect>) {
        let Some(connection) = self.conns.remove(&conn) else {
            return;
        };
        for (id, sub) in connection.lines {
            if sub.attach {
                self.detach(&id, effects);
            }
        }
    }
}

/// [`LineNotice`] borrowed from the session's lines: the same fields, serialised without
/// copying the line (a test holds the two to one shape).
#[derive(Serialize)]
pub(super) struct LineRef<'a> {
    pub(super) session: &'a str,
    pub(super) index: u64,
    pub(super) line: &'a str,
}
