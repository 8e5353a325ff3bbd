//! `docs/API.md` is the contract of the daemon's API: every method, notification and error
//! code the `panewise-api` crate defines is documented, nothing documented is missing from
//! it, and the version it states is the crate's.

use std::collections::BTreeSet;

fn section(doc: &str, title: &str) -> String {
    let start = doc
        .find(title)
        .unwrap_or_else(|| panic!("docs/API.md has no section {title}"));
    let rest = &doc[start + title.len()..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

/// The first back-quoted word of each bullet.
fn bullets(body: &str) -> BTreeSet<String> {
    body.lines()
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name.to_owned()))
        .collect()
}

#[test]
fn the_api_document_lists_every_method_notification_and_error_code() {
    let doc = std::fs::read_to_string(crate::workspace_path("docs/API.md")).unwrap();
    assert!(
        doc.contains(&format!("API version: {}", panewise_api::API_VERSION)),
        "docs/API.md states another version"
    );
    let methods: BTreeSet<String> = panewise_api::Method::ALL
        .iter()
        .map(|method| method.name().to_owned())
        .collect();
    assert_eq!(bullets(&section(&doc, "## Methods")), methods);
    let notifications: BTreeSet<String> = panewise_api::NOTIFICATIONS
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    assert_eq!(bullets(&section(&doc, "## Notifications")), notifications);
    let codes: BTreeSet<(String, i64)> = section(&doc, "## Error codes")
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_owned(), cells.get(2)?.parse().ok()?))
        })
        .collect();
    let expected: BTreeSet<(String, i64)> = panewise_api::ErrorCode::ALL
        .iter()
        .map(|code| (code.name().to_owned(), code.code()))
        .collect();
    assert_eq!(codes, expected);
}
