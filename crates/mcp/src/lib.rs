//! # panewise-mcp
//!
//! MCP for panewise, on the official SDK (`rmcp`, pinned exactly).
//!
//! - [`client`]: the own loop's client of the MCP servers a session is configured with.
//! - [`serve`]: `panewise mcp serve`, the daemon's verbs as MCP tools over stdio.
//!
//! ## Invariants
//! - No server process outlives the session that started it.
//!
//! ## API boundary
//! Talks MCP only; what a session does with a tool's result, and what the person is asked,
//! stay in `panewise-host` and the daemon.
//!
//! ## Where to start reading
//! [`client`], then [`serve`].

#![deny(missing_docs)]

pub mod client;
pub mod error;
pub mod serve;

pub use error::McpError;
