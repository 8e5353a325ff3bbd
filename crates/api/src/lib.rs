//! # panewise-api
//!
//! The supervisor's local API, as plain data: the messages `panewise daemon` and its clients
//! (`panewise agents`, `new`, `attach`, the dashboard) exchange over the daemon's Unix
//! socket, JSON-RPC 2.0 with one JSON object per line. [`Method`] names every method, with
//! one params struct and one result struct each (`methods.rs`); [`NOTIFICATIONS`] every
//! notification; [`ErrorCode`] every error a response can carry (`error.rs`);
//! [`SessionSummary`] a session in the list, with its [`AgentState`] derived from the pane
//! state by [`classify`] (`summary.rs`); [`SessionView`] the one client model of a session
//! every front end folds and words it with: the fold of its log lines, the open request, the
//! accepted answers ([`parse_reply`]), and the row's age, tokens and cost (`view.rs`);
//! [`pick_approval`] which waiting approval an answer answers (`approvals.rs`).
//! `docs/API.md` documents all of it, and a test holds
//! the two together.
//!
//! ## Invariants
//! - The version is [`API_VERSION`]; a change that breaks a client bumps it.
//! - A request line is at most [`MAX_LINE_BYTES`]; a longer one, or one that is not a
//!   request, is answered with an error response ([`rpc::parse_request`] says which code) and
//!   the connection goes on.
//! - A subscriber's lines are the session log's own lines with their index: a client folds
//!   them with the reducer `panewise replay` uses and, reconnecting, asks for the line after
//!   the last it has, losing nothing and getting nothing twice.
//! - The state class is a pure function of the pane state and what the daemon observed
//!   ([`classify`]); `needs_input` sorts first.
//!
//! ## API boundary
//! Pure: no I/O, no async, no clock, no randomness (in the purity check). Depends only on the
//! shared vocabulary (`panewise-protocol`) and the reducer's types (`panewise-pane-state`).
//! The daemon that serves it is `panewise-supervisor`.
//!
//! ## Where to start reading
//! [`Method`] (`methods.rs`), then [`rpc::parse_request`], then [`classify`] in
//! `summary.rs`.

pub mod approvals;
pub mod error;
pub mod id;
pub mod methods;
pub mod rpc;
pub mod summary;
pub mod view;

pub use approvals::{pick_approval, waiting_approvals, NotAnswered, WaitingApproval};
pub use error::{ApiError, ErrorCode};
pub use id::RequestId;
pub use methods::*;
pub use rpc::{Incoming, Notification, Request, Response, RpcError};
pub use summary::{
    candidates, classify, context_pct, default_session_name, resolve_session, shown_key,
    sort_sessions, tokens, waiting_for, AgentState, Ending, Observed, PaneFields, SessionSummary,
    WaitingFor, SUMMARY_VERSION,
};
pub use view::{is_agent_up_note, open_request, parse_reply, Folded, Reply, SessionView};

/// The API's version: a client sends it in `hello`, and a daemon of another version refuses.
pub const API_VERSION: u32 = 1;

/// The longest request line the daemon reads (1 MiB); a longer one is answered with
/// [`ErrorCode::LineTooLong`] and skipped.
pub const MAX_LINE_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests;
