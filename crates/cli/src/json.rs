//! The `--json` output every subcommand shares: one schema version (`docs/JSON.md`).

/// The version of the `--json` line schema: every line of every subcommand carries it as `v`.
pub const JSON_SCHEMA_VERSION: u64 = 1;
