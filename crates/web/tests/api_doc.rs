//! docs/API.md's "HTTP routes" section lists exactly the route table, with each route's access.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use panewise_web::routes::{Access, ROUTES};

#[test]
fn the_api_document_lists_every_http_route_with_its_access() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/API.md"),
    )
    .unwrap();
    let start = doc
        .find("## HTTP routes")
        .expect("docs/API.md has an HTTP routes section");
    let section = &doc[start..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    let documented: BTreeSet<(String, String)> = section
        .lines()
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| {
            let (route, rest) = rest.split_once('`')?;
            let access = rest.trim_start().strip_prefix('(')?.split_once(')')?.0;
            Some((route.to_owned(), access.to_owned()))
        })
        .collect();
    let table: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|spec| {
            let access = match spec.access {
                Access::Public => "public",
                Access::PairCode => "pairing code",
                Access::Device => "device",
            };
            (
                format!("{} {}", spec.method, spec.pattern),
                access.to_owned(),
            )
        })
        .collect();
    assert_eq!(documented, table);
}
