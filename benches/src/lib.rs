//! # panewise-benches
//!
//! Generators of realistic workloads shared by the criterion benches in `benches/benches/`.
//!
//! Each stage gets its own module so a team can benchmark its stage alone:
//! `cargo bench -p panewise-benches --bench <name>`.
//!
//! ## Invariants
//! - Generation is deterministic for a given size (and seed), so two runs, and both sides of a
//!   comparison, measure the same bytes.
//! - Workloads are built before the timed loop; a bench times the stage, not the generator.
//!
//! ## API boundary
//! [`reducer`] (session logs for the reducer fold), [`window`] (conversations for the window
//! stage and the LangChain comparison), [`decode`] (Claude Code streams for the decoders),
//! [`rig`] (the real `panewise daemon` in a directory of its own, a JSON-RPC connection to it
//! over its socket or `daemon --stdio` through `ssh`, a throwaway `sshd`, `/proc` figures: the
//! load runs `daemon`, `dashboard` and `remote`).
//! The benches in `benches/benches/`, `examples/window_compare.rs` and the property test in
//! `tests/` are the only callers. The own loop's history rendered once per message is the
//! host's own (`panewise_host::agent_loop::history`), which the `agent_loop` bench times.
//!
//! ## Where to start reading
//! The bench target for the stage you care about in `benches/benches/`, then the generator
//! module it calls here.
#![deny(missing_docs)]

pub mod decode;
pub mod reducer;
pub mod rig;
pub mod window;
