//! # panewise-host
//!
//! The session engine of panewise, as a library. The pure crates say what should happen
//! (`Cmd`s, plans, events; every decision of the host is `panewise-core`'s, re-exported here at
//! its old paths); this crate makes it happen and records it: files, processes, the sandbox,
//! tokio and the session's clock. Front ends — the `panewise` binary (`crates/cli`), the
//! daemon and the dashboard — are clients of a [`session::SessionHandle`].
//!
//! ## Invariants
//! - There is one session loop ([`session::Session::run`]) for every kind of agent; no
//!   backend records, steps the reducer or reads the person's input itself.
//! - The engine's `match` over `Cmd` has no wildcard arm: `Cmd` and `Msg` are exhaustive, so a
//!   new command does not compile until it is given an effect.
//! - The engine reads no terminal and no signal: controls come only through the handle.
//! - Every message folded live is appended to the session log before its effects run, one
//!   complete line per write, so `kill -9` loses at most the line being written and the log
//!   always replays ([`session_log`]).
//! - The host decides nothing the reducer should decide: it executes the commands it is given.
//!   Whether a tool runs is decided in one place for both kinds of agent, [`approval::decide`].
//! - Secrets (API keys) are never written to a log, a trace or an error message, and never
//!   read from `panewise.toml` ([`config`]). A client's keys ([`panewise_api::ClientEnv`]) live
//!   in memory for the one session they were sent for; their `Debug` shows names only.
//! - No request of the own agent loop carries a tool result without its call or a call
//!   without its result; an interrupted call still gets a result ([`backend::model`]).
//! - An agent CLI and an own tool's `shell` command each run in a process group of their own,
//!   killed when the session or the call ends. A tool runs without the API key variables
//!   panewise and its agents read ([`secrets`]); a supervised agent gets only its own
//!   provider's keys.
//! - Every command panewise starts (an agent CLI, a `shell` call) is spawned by
//!   [`process::spawn`]: a process group of its own, marked in its environment, killed by the
//!   kernel if panewise dies, its group and marked descendants killed by the guard process
//!   then. A `shell` command's group, and what left it, is killed when the command ends or times
//!   out; the result names what it found outside the group and what it could not kill.
//! - `unsafe` appears in one function only, `process::die_with_parent` (the parent-death
//!   signal set between fork and exec).
//! - There is one approval policy ([`approval::decide`]) for the own tools and the supervised
//!   agents, and one "inside the working directory" check ([`tools::paths::check_write`]),
//!   which the write tools apply again when they open the file, without following symlinks.
//!
//! ## API boundary
//! [`session`]: [`session::Session`] (one session: a [`session::SessionSpec`] and a
//! [`backend::Backend`]), [`session::SessionHandle`] ([`session::Control`]s in,
//! [`session::Update`]s out), and [`session::lines`], the front end that drives a session from
//! lines of text and signals (the terminal of `panewise run`, and tests).
//! [`backend`]: the closed set of agents — [`backend::cli::CliAgent`] (Claude Code's control
//! protocol, Codex app-server and ACP through `providers::rpc_client`, the one-shot streams)
//! and [`backend::model::ModelAgent`] (panewise's own loop over any model API client, the
//! window stage visited before every call, its ledger in [`agent_loop::ledger`], what left the
//! window kept in [`agent_loop::archive`] for the `recall` tool, the request
//! checked by [`agent_loop::request`]); [`backend::scripted`] and
//! [`backend::process::Launcher::scripted`] are in-memory backends for tests.
//! [`agent::AgentProcess`] runs one agent CLI in a process group of its own;
//! [`process::spawn`] starts a command as a [`process::ProcessGroup`], whose
//! [`process::ProcessGroup::kill`] returns a [`process::KillReport`].
//! [`signals::Terminations`] is for front ends: it resolves on SIGTERM or SIGHUP, which they
//! turn into [`session::Control::Stop`].
//! [`approval`] is the one approval policy; [`secrets`] says which API key variables each
//! started process goes without; [`tools`] are panewise's own tools (`shell`,
//! `read_file`, `write_file`, `edit_file`, `list_dir`, and `recall`, answered by the own loop
//! from its archive). [`session_log::SessionLogFile`]
//! writes a crash-safe session log while folding it, created new, mode 0600 and locked while
//! it is written; [`journal::transcript::TranscriptRecorder`] turns a session's events into
//! the log's transcript lines; [`journal::files`] makes session ids (UUIDv7) and the
//! session's private files. [`config::Config`] reads `panewise.toml`
//! (see `docs/CONFIG.md`). [`launch`] decides what to run: [`launch::resolve()`], pure, turns a
//! request and the asking client's context into a [`launch::SessionPlan`] over one closed
//! [`launch::AgentSpec`]. [`summarize`] answers the window stage's summary requests over any
//! model API client. [`cli_version`] reads a CLI's version for the log header.
//!
//! ## Where to start reading
//! [`session`] (the loop, `fold`, `execute`), then [`backend`] and one backend, then
//! [`session::lines`] and the binary's `crates/cli/src/run/`.
#![deny(missing_docs)]

pub mod agent;
pub mod agent_loop;
pub mod approval;
pub mod backend;
pub mod cli_version;
pub mod clock;
pub mod config;
pub mod error;
pub mod journal;
pub mod launch;
pub mod mcp;
pub mod process;
pub mod regular_file;
pub mod sandbox;
pub mod secrets;
pub mod session;
// `crate::session_log::…` paths predate the journal module.
pub use journal::session_log;
pub mod signals;
pub mod summarize;
pub mod tools;
