//! # panewise-mcp
//!
//! MCP for panewise, on the official SDK (`rmcp`, pinned exactly).
//!
//! - [`config`]: which servers a session has (`[mcp.servers.NAME]`, `.mcp.json`), and
//!   [`catalog`]: their tools as the model sees them (namespacing, approval class, tool
//!   budget, the local search tool): pure, `panewise_core::mcp`'s, re-exported here.
//! - [`client`]: the own loop's client of the MCP servers a session is configured with.
//! - [`serve`]: `panewise mcp serve`, the daemon's verbs as MCP tools over stdio.
//!
//! ## Invariants
//! - No server process outlives the session that started it.
//!
//! ## API boundary
//! The own loop (`panewise-host`) uses [`config`] to read `[mcp]` and `.mcp.json`, [`catalog`]
//! to offer and classify the tools, and [`client::McpClients`] to start, call and end the
//! servers (a stdio server spawned through the host's [`client::Spawner`]). `panewise mcp
//! serve` is [`serve::serve_stdio`] over a [`serve::Daemon`] (the binary connects it to the
//! daemon's socket). The panewise crates this one depends on are `panewise-api`, the
//! daemon's protocol types, and `panewise-core`, for the pure halves.
//!
//! ## Where to start reading
//! [`client`], then [`serve`].

#![deny(missing_docs)]

pub mod client;
pub mod error;
pub use panewise_core::mcp::{catalog, config};
pub mod serve;

pub use error::McpError;
