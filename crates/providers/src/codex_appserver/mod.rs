//! Codex `app-server`: one persistent process speaking JSON-RPC 2.0 over stdio, one message per
//! line and **without** the `"jsonrpc"` field. The host opens with `initialize` and the
//! `initialized` notification, starts (`thread/start`) or resumes (`thread/resume`) a thread,
//! then sends `turn/start` per prompt and `turn/interrupt` to stop one. The server streams
//! notifications (`turn/started`, `item/started` / `item/completed`, message and reasoning
//! deltas, `thread/tokenUsage/updated`, `turn/completed`, …) and sends requests of its own
//! (`item/commandExecution/requestApproval`, `item/fileChange/requestApproval`,
//! `item/tool/requestUserInput`) that wait for the host's answer.
//!
//! Two halves, both pure. [`AppServerSession`] is the client side: it writes the lines, numbers
//! its requests and remembers which id was which, so that the `thread/start` answer gives the
//! thread id and the `turn/start` answer (or `turn/started`) the turn id `turn/interrupt` needs.
//! The decoder, behind [`Decoder`](crate::Decoder) with
//! [`Provider::CodexAppServer`](crate::Provider::CodexAppServer), turns what the server writes
//! into [`ProviderEvent`](crate::ProviderEvent)s; it reads answers by their shape (a `thread` in the result), so a
//! capture decodes without the session that wrote it.
//!
//! Figures: `thread/tokenUsage/updated` carries `last` (the model call just made) and `total`
//! (the thread's running sum). Each update becomes one [`UsageScope::Call`](crate::UsageScope::Call) usage from `last`; a
//! repeated update (the same `total` again) is skipped, and the turn's own figures are the sum of
//! its calls' `last`s, so a resumed thread's running total is never counted again.
//! `modelContextWindow` becomes [`ProviderEvent::ContextWindows`](crate::ProviderEvent::ContextWindows) for the thread's model.
//! A turn `interrupted` ends as a plain [`ProviderEvent::TurnEnded`](crate::ProviderEvent::TurnEnded), as Claude Code's
//! interrupted turn does: stopping is not a failure (R95).
//!
//! Three files: `session.rs` holds the client half ([`AppServerSession`] and the types its
//! caller sees), `decode.rs` the decoder of the server's lines, and `wire.rs` the serde shapes
//! of the server's messages that both read.

mod decode;
mod session;
mod wire;

pub(crate) use decode::AppServerDecoder;
pub use session::{
    AppServerLine, AppServerSession, ApprovalDecision, ClientInfo, RequestKind, ServerRequestKind,
    ThreadOptions,
};
