//! # panewise-host
//!
//! The effect runner of panewise and the library behind the `panewise` binary: the only crate
//! with files, processes, sockets, tokio and the clock. The pure crates say what should happen
//! (`Cmd`s, plans, events); this crate makes it happen and records it.
//!
//! ## Invariants
//! - Every message folded live is appended to the session log before its effects run, one
//!   complete line per write, so `kill -9` loses at most the line being written and the log
//!   always replays ([`session_log`]).
//! - The host decides nothing the reducer should decide: it executes the commands it is given.
//! - Secrets (API keys) are never written to a log, a trace or an error message.
//!
//! ## API boundary
//! [`agent::AgentProcess`] runs one agent CLI in a process group of its own (bytes out, lines
//! in, interrupt, kill, exit read as code or signal; the group dies with it).
//! [`session_log::SessionLogFile`] writes a crash-safe session log while folding it. The
//! subcommands of the binary (`run`, `sessions`, `replay`, `window`, `decode`, `mock-server`)
//! live in the binary's own modules under `src/`. [`runner::run_session`] supervises one Claude
//! Code session live: one loop over a closed input enum, one `match` over the reducer's commands.
//! [`summarize`] answers the window stage's summary requests: [`summarize::WindowRunner`]
//! drives a stage with an async [`summarize::Summarizer`], and [`summarize::ModelSummarizer`]
//! is one over any model API client.
//!
//! ## Where to start reading
//! [`runner`], then [`agent`] and [`session_log`], then the binary's `main.rs` and one subcommand module (`decode_cmd.rs` folds a
//! live stream and records it through [`session_log::SessionLogFile`]).
#![deny(missing_docs)]

pub mod agent;
pub mod clock;
pub mod error;
pub mod runner;
pub mod session_log;
pub mod summarize;
