//! docs/TELEMETRY.md lists every span, attribute, event and metric `names.rs` holds, and no
//! other: the mapping's test holds what it emits to `names.rs`, so a new name fails one of
//! the two until both list it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use panewise_telemetry::names;

/// The first-column names of the table under `## {section}`: the backticked text, up to a
/// space (`chat {model}` is the span `chat`).
fn documented(doc: &str, section: &str) -> BTreeSet<String> {
    let body = doc
        .split(&format!("\n## {section}\n"))
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("docs/TELEMETRY.md has a {section} section"));
    body.lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name))
        .map(|name| name.split(' ').next().unwrap_or(name).to_owned())
        .collect()
}

fn listed(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn the_document_lists_exactly_the_emitted_names() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/TELEMETRY.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    assert_eq!(documented(&doc, "Spans"), listed(names::SPANS));
    assert_eq!(documented(&doc, "Attributes"), listed(names::ATTRIBUTES));
    assert_eq!(documented(&doc, "Events"), listed(names::EVENTS));
    assert_eq!(documented(&doc, "Metrics"), listed(names::METRICS));
}
