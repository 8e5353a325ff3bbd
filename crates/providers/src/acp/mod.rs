//! The Agent Client Protocol (ACP) over stdio: JSON-RPC 2.0 with `"jsonrpc":"2.0"`, one message
//! per line, spoken by any ACP agent (Gemini CLI `--acp` first). The client opens with
//! `initialize` (its capabilities: here no file system and no terminal, so the agent does the
//! work itself), creates a session (`session/new`) or, when the agent's `initialize` answer
//! advertises it, loads (`session/load`) or resumes (`session/resume`) one, then sends
//! `session/prompt` per prompt and the `session/cancel` notification to stop one. The agent
//! streams `session/update` notifications, asks `session/request_permission` before a tool
//! runs, and answers the prompt with its `stopReason`.
//!
//! Two halves, both pure. [`AcpSession`] is the client side: the lines to write, request ids
//! and what the answers taught (the session id, the agent's capabilities, each permission
//! request's options, answered by their `kind`, never by a hard-coded id). The decoder, behind
//! [`Decoder`](crate::Decoder) with [`Provider::Acp`](crate::Provider::Acp), turns what the agent
//! writes into [`ProviderEvent`](crate::ProviderEvent)s. The stream has no turn-start message: a turn opens at its
//! first update (or permission request) and ends with the `session/prompt` answer, read by its
//! shape (a `stopReason`), so a capture decodes without the session that wrote it. A
//! `cancelled` stop ends the turn as a plain [`ProviderEvent::TurnEnded`](crate::ProviderEvent::TurnEnded), not a failure (R95).
//!
//! Wire types are this module's own, narrow and lenient, rather than the published
//! `agent-client-protocol` crate's: that crate is the async SDK (futures, an async runtime
//! interface, `anyhow`, `tracing`), and its schema crate brings `anyhow`, `derive_more`,
//! `serde_with`, `strum` and `schemars`, none on this crate's allowlist of pure dependencies;
//! its strict enums would also reject an update kind newer than the schema instead of letting it
//! become a counted [`ProviderEvent::Unknown`](crate::ProviderEvent::Unknown).
//!
//! Three files: `session.rs` holds the client half ([`AcpSession`] and the types its caller
//! sees), `decode.rs` the decoder of the agent's lines, and `wire.rs` the serde shapes of the
//! agent's messages that both read.

mod decode;
mod session;
mod wire;

pub(crate) use decode::AcpDecoder;
pub use session::{AcpLine, AcpRequestKind, AcpSession, PermissionDecision};
pub use wire::{AgentCapabilities, PermissionOption};

pub use crate::codex_appserver::ClientInfo;

/// The protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;
