//! Integration tests of the provider decoders, run on the real CLI captures in `tests/data/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod answered;
mod bad_figures;
mod call_split;
mod channels;
mod final_state;
mod fixtures;
mod resumed;
mod robustness;
mod splits;

use std::path::PathBuf;

use panewise_providers::{PaneSummary, Provider};

/// Every captured stream under `tests/data/<provider>/` (`*.ndjson`, `*.jsonl`, but not the
/// `*.input.ndjson` a host wrote to the CLI), with its
/// provider, sorted by path. Found from the directory, so a new capture is tested (and fails
/// until its snapshot and expectations exist) without being listed anywhere.
pub fn fixtures() -> Vec<(Provider, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut found = Vec::new();
    for provider in Provider::ALL {
        let dir = root.join(provider.as_str());
        for entry in
            std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            // `NAME.input.ndjson` is what the host wrote to the CLI's stdin, not a stream of it.
            let is_stream = name.ends_with(".ndjson") || name.ends_with(".jsonl");
            if is_stream && !name.contains(".input.") {
                found.push((provider, format!("{}/{name}", provider.as_str())));
            }
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    assert!(found.len() >= 9, "fixtures went missing: {found:?}");
    found
}

/// The bytes of a captured stream.
pub fn fixture(relative: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(relative);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A summary's tools as (name, calls), in the order they first started.
pub fn tool_calls(summary: &PaneSummary) -> Vec<(&str, u64)> {
    summary
        .tools
        .iter()
        .map(|tool| (tool.name.as_str(), tool.calls))
        .collect()
}
