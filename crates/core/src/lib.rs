//! # panewise-core
//!
//! Every decision panewise's session host makes, as pure functions over data: the own loop's
//! core ([`agent_loop::own_loop::OwnLoop::step`] returns effects), its history, request
//! rendering and resume planning; the launch decision ([`launch::resolve()`]); the approval
//! policy ([`approval::decide`]) and which key variables each process goes without
//! ([`secrets`]); the shell sandbox's plan ([`sandbox::plan_shell`]); the transcript recorder
//! ([`journal::transcript`]); the window ledger's line types ([`agent_loop::ledger`]); the
//! tools' names, arguments, schemas, limits and outcomes ([`tools`]); the MCP catalog and
//! configuration ([`mcp`]); `panewise.toml`'s types and parsing ([`config`]).
//! `crates/host` carries the effects out: the engine loop, processes, files, sockets, the clock.
//!
//! ## Invariants
//! - No file, process, socket, clock, lock or randomness: the crate depends on no crate that
//!   does them (no tokio, reqwest, hyper, nix, libc), so Cargo holds what a list of files
//!   could not (`xtask/tests/tidy.rs::every_pure_crate_is_pure`).
//! - Paths on disk are facts the shell resolved and passed in: the approval policy decides
//!   over [`approval::PathFacts`], and the own loop asks for them with
//!   [`agent_loop::own_loop::Effect::ResolvePaths`]
//!   (`agent_loop::own_loop::tests::a_file_tool_s_paths_are_resolved_by_the_shell_before_it_is_decided`).
//! - There is one approval policy ([`approval::decide`]) for the own tools and the supervised
//!   agents; the own loop's `match` over its inputs has no wildcard arm.
//!
//! ## API boundary
//! [`agent_loop::own_loop::OwnLoop`] (`step(LoopInput) -> Vec<Effect>`), [`launch::resolve()`]
//! over [`launch::LaunchRequest`] and [`launch::LaunchContext`], [`approval::decide`],
//! [`config::Config::parse`] and [`config::Config::layered`], [`tools::ToolCall::parse`],
//! [`journal::transcript::TranscriptRecorder`].
//!
//! ## Where to start reading
//! [`agent_loop::own_loop`] (the loop's inputs and effects), then [`launch::resolve()`], then
//! [`approval`].
#![deny(missing_docs)]

pub mod agent;
pub mod agent_loop;
pub mod approval;
pub mod approval_mode;
pub mod config;
pub mod error;
pub mod journal;
pub mod launch;
pub mod mcp;
pub mod sandbox;
pub mod secrets;
pub mod tools;
