//! The pure half of panewise's MCP support: the `[mcp]` configuration and `.mcp.json`
//! ([`config`]), and the tool catalog a model is offered ([`catalog`]). The clients and the
//! server are `crates/mcp`.

pub mod catalog;
pub mod config;
