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
//! - Secrets (API keys) are never written to a log, a trace or an error message, and never
//!   read from `panewise.toml` ([`config`]).
//! - No request of the own agent loop carries a tool result without its call or a call
//!   without its result; an interrupted call still gets a result ([`agent_loop`]).
//! - An own tool's `shell` command runs in a process group of its own, which is killed when
//!   the command ends or times out: nothing it started outlives the call.
//!
//! ## API boundary
//! [`agent::AgentProcess`] runs one agent CLI in a process group of its own (bytes out, lines
//! in, interrupt, kill, exit read as code or signal; the group dies with it).
//! [`session_log::SessionLogFile`] writes a crash-safe session log while folding it, created
//! new, mode 0600 and locked while it is written; [`journal::transcript::TranscriptRecorder`]
//! turns a session's events into the log's transcript lines; [`journal::files`] makes session
//! ids (UUIDv7) and the session's private files. The
//! subcommands of the binary (`run`, `sessions`, `replay`, `window`, `decode`, `mock-server`)
//! live in the binary's own modules under `src/`. [`runner::run_session`] supervises one agent
//! CLI session live (Claude Code's persistent process, or Codex and Gemini CLI one process per
//! turn): one loop over a closed input enum, one `match` over the reducer's commands, the
//! person's lines as prompts or answers. [`cli_version`] reads a CLI's version for the log
//! header.
//! [`tools`] are panewise's own tools for its agent loop (`shell`, `read_file`, `write_file`,
//! `edit_file`, `list_dir`): a closed [`tools::ToolName`] set, each tool's description and
//! argument schema for the model, [`tools::run_json`] to parse and run a model's call (bad
//! arguments are an error result, never a panic), and [`tools::approval::decide`], the pure
//! policy saying whether a call runs, asks or is denied under the
//! [`runner::ApprovalMode`]. [`config::Config`] reads `panewise.toml` (user file, then the
//! nearest project file, then flags; see `docs/CONFIG.md`).
//! [`agent_loop::run_loop`] is panewise's own agent loop over any model API client: the window
//! stage visited before every call (the plan applied, the visit filed in the session's window
//! ledger, a compaction reported to the reducer), the request built from the kept messages and
//! refused if it would carry an orphan tool call or result ([`agent_loop::request`]), the
//! model's tool calls run under the approval policy, the reducer's commands driving it as they
//! drive [`runner`].
//! [`summarize`] answers the window stage's summary requests: [`summarize::WindowRunner`]
//! drives a stage with an async [`summarize::Summarizer`], and [`summarize::ModelSummarizer`]
//! is one over any model API client.
//!
//! ## Where to start reading
//! [`runner`], then [`agent`] and [`session_log`], then the binary's `main.rs` and one subcommand module (`decode_cmd.rs` folds a
//! live stream and records it through [`session_log::SessionLogFile`]).
#![deny(missing_docs)]

pub mod agent;
pub mod agent_loop;
pub mod cli_version;
pub mod clock;
pub mod config;
pub mod error;
pub mod journal;
pub mod runner;
// `crate::session_log::…` paths predate the journal module.
pub use journal::session_log;
pub mod summarize;
pub mod tools;
