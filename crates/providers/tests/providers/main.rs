//! Integration tests of the provider decoders, run on the real CLI captures in `tests/data/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod final_state;
mod fixtures;
mod robustness;
mod splits;

use std::path::PathBuf;

use panewise_providers::Provider;

/// Every captured stream: provider, file under `tests/data/`, and the name of its snapshot.
pub const FIXTURES: &[(Provider, &str)] = &[
    (Provider::ClaudeCode, "claude-code/tool-call.ndjson"),
    (
        Provider::ClaudeCode,
        "claude-code/tool-call-partial-messages.ndjson",
    ),
    (Provider::ClaudeCode, "claude-code/auto-compact.ndjson"),
    (Provider::ClaudeCode, "claude-code/error-429.ndjson"),
    (Provider::ClaudeCode, "claude-code/multi-turn-stdin.ndjson"),
    (Provider::Codex, "codex/tool-call.jsonl"),
    (Provider::Codex, "codex/error-429.jsonl"),
    (Provider::GeminiCli, "gemini-cli/tool-call.jsonl"),
    (Provider::GeminiCli, "gemini-cli/error-429.jsonl"),
];

/// The bytes of a captured stream.
pub fn fixture(relative: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(relative);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}
