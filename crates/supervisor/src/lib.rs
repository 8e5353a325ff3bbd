//! # panewise-supervisor
//!
//! The panewise daemon: many sessions hosted at once on one tokio runtime, outliving any
//! terminal, driven over the local API of `panewise-api`. [`bind`] takes this user's lock and
//! socket (`$XDG_RUNTIME_DIR/panewise/`, or `/tmp/panewise-<uid>/`, mode 0700; the socket
//! 0600), replacing a stale socket a crashed daemon left; [`serve`] accepts clients, each a
//! reader of request lines and a writer of responses and notifications, and hosts the
//! sessions a [`Launcher`] makes, each on a task of its own. Every decision is the pure
//! registry's (`registry/`: `Registry::update(registry, event) -> (registry, effects)`); the
//! shell (`shell/`) is one loop that owns it and executes its effects. [`Client`] is the
//! other side: connect, start the daemon on demand, call, read notifications, over the socket
//! or over a child process's standard streams ([`Client::over_command`]: `ssh HOST panewise
//! daemon --stdio`, whose far end is [`stdio::relay`] to that host's socket).
//!
//! ## Invariants
//! - A peer of another uid is refused; two daemons never run (the lock).
//! - A request line over `panewise_api::MAX_LINE_BYTES`, or one that is not a request, gets an
//!   error response and the connection goes on.
//! - A panic in one session's task ends that session only (it is listed `failed`).
//! - What waits for an answer is read from each session's folded state alone; of two answers
//!   to one approval the first wins and the second is told it was already answered, and by
//!   whom; a client that goes away mid-question leaves the question pending.
//! - A subscriber's lines are the log file's own complete lines, each read once per session and
//!   handed to caught-up subscribers from memory, so a client that reconnects at an offset gets
//!   exactly the lines it missed.
//! - Every queue is bounded ([`Limits`]): a subscriber at its connection's bound falls behind and
//!   is served from the log at its offset, losing nothing; a client whose queue stays full past
//!   the stall limit is dropped, told why and where each subscription resumes.
//! - The registry does no I/O, reads no clock and takes no lock; the shell shares no lock.
//! - A client over a child process (ssh) never waits past its connect deadline for the
//!   hello, and the child is killed when the client is dropped.
//! - Shutdown (SIGTERM, `daemon/shutdown`) stops every session as `session/stop` does and
//!   waits for their logs to close.
//!
//! ## API boundary
//! Knows nothing of providers, configuration or the mock: the binary's [`Launcher`] turns a
//! `session/create` into a `Session`. Does its I/O with tokio; the protocol's types are
//! `panewise-api`'s. Errors are [`SupervisorError`].
//!
//! ## Where to start reading
//! `registry/mod.rs` (`Event`, `Effect`, `Registry::update`), then `registry/methods.rs` (one
//! function per method) and `registry/delivery.rs` (the queues), then `shell/mod.rs`.

mod client;
pub mod error;
mod launcher;
mod notify;
pub mod paths;
mod registry;
mod server;
mod shell;
pub mod stdio;

pub use client::{connect_stream_or_start, Client};
pub use error::SupervisorError;
pub use launcher::{
    LaunchInfo, Launched, Launcher, LogMirror, SharedLogMirror, LOG_MIRROR_MAX_BYTES,
};
pub use notify::{is_edge, notified, still_due, NotifyConfig, NotifySource};
pub use registry::Limits;
pub use server::{bind, Bound};
pub use shell::serve;
