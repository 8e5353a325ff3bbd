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
//! [`serve::serve_stdio`] over a [`serve::Daemon`] (the binary connects it to the daemon's
//! socket); the client's entry points are [`client`]'s.
//!
//! ## Where to start reading
//! [`client`], then [`serve`].

#![deny(missing_docs)]

pub mod client;
pub mod error;
pub mod serve;

pub use error::McpError;
