//! # xtask
//!
//! The workspace's automation as a library, so the checks `cargo xtask` runs are also
//! `#[test]`s under `cargo test` (in `xtask/tests/tidy.rs` and `xtask/tests/tidy_docs.rs`): the
//! purity check of the pure crates, and the tidy checks of rule citations, crate docs, source
//! file lengths, the docs' repository paths and the tests docs/ARCHITECTURE.md cites.
//!
//! ## Invariants
//! - Every check can fail, and a test plants a violation to show that it does.
//! - A check reports every violation it finds, not just the first, each with its file and line
//!   or its package.
//! - The lists the checks enforce (allowlists, scan exclusions, doc headings) are data in this
//!   crate, each entry with the reason it is there.
//!
//! ## API boundary
//! [`purity`] ([`purity::PURE_CRATES`], [`purity::check`], [`purity::scan_source`]),
//! [`tidy`] (rule citations, crate docs, layering, file lengths, doc paths), [`metadata`], the slice of `cargo metadata`
//! both read, and [`fuzz`] ([`fuzz::run`], [`fuzz::Target`]), the fuzz harness of the
//! readers of untrusted bytes. The `cargo xtask` binary (`src/main.rs`) is a thin command line over these plus
//! the CI and bench runners.
//!
//! ## Where to start reading
//! [`purity::PURE_CRATES`] for what each pure crate may link, then [`purity::scan_source`] for
//! what its source may not say, then `xtask/tests/tidy.rs` for the tests.

pub mod circles;
pub mod fuzz;
pub mod metadata;
pub mod purity;
pub mod tidy;
