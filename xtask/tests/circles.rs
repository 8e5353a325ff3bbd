//! Circles between a crate's modules (`xtask::circles`): none in any crate but those of the
//! shrinking `KNOWN_CIRCLES` list, and the reader finds each way a path names a module.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use xtask::circles::{self, ModulePath, KNOWN_CIRCLES};
use xtask::metadata::workspace_root;

#[test]
fn no_crate_has_a_circle_between_its_modules_but_the_shrinking_known_ones() {
    let found = circles::workspace_circles(&workspace_root()).expect("the sources are readable");
    let known: BTreeSet<(String, String)> = KNOWN_CIRCLES
        .iter()
        .map(|(dir, circle)| ((*dir).to_owned(), (*circle).to_owned()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "module circles against xtask/src/circles.rs's KNOWN_CIRCLES:\n  new (break it: move the \
         shared part into a leaf both use): {new:?}\n  gone (strike it from the list): {gone:?}"
    );
}

fn module(path: &str) -> ModulePath {
    path.split("::")
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_file_s_module_is_its_path_with_mod_lib_and_main_naming_their_folder() {
    for (file, expected) in [
        ("lib.rs", ""),
        ("main.rs", ""),
        ("engine.rs", "engine"),
        ("engine/mod.rs", "engine"),
        ("engine/outlet.rs", "engine::outlet"),
        ("bin/main.rs", "bin::main"),
    ] {
        assert_eq!(
            circles::file_module(Path::new(file)),
            module(expected),
            "{file}"
        );
    }
}

/// `(text, the module the file is, the modules it names)`.
const NAMING: &[(&str, &str, &[&str])] = &[
    ("use crate::engine::Outlet;", "backend", &["engine"]),
    (
        "use crate::{engine::{Outlet, Spawn}, backend};",
        "journal",
        &["engine", "backend"],
    ),
    ("use super::wire::Frame;", "acp::session", &["acp::wire"]),
    ("use super::super::engine::X;", "acp::session", &["engine"]),
    (
        "let x = crate::engine::outlet::make();",
        "backend",
        &["engine::outlet"],
    ),
    ("use self::inner::Thing;", "engine", &["engine::inner"]),
    ("fn f() -> engine::Outlet { todo() }", "", &["engine"]),
    (
        "use std::collections::BTreeMap; use serde::Serialize;",
        "engine",
        &[],
    ),
    (
        "// use crate::backend::X;\nlet s = \"crate::backend::Y\";",
        "engine",
        &[],
    ),
    ("use crate::engine as e;", "backend", &["engine"]),
];

#[test]
fn each_way_a_file_names_a_module_is_read() {
    let modules: BTreeSet<ModulePath> = [
        "",
        "engine",
        "engine::outlet",
        "engine::inner",
        "backend",
        "journal",
        "acp",
        "acp::session",
        "acp::wire",
    ]
    .into_iter()
    .map(module)
    .collect();
    for (text, from, expected) in NAMING {
        let named: Vec<ModulePath> = circles::named_paths(text, &module(from), &modules);
        let expected: Vec<ModulePath> = expected.iter().copied().map(module).collect();
        assert_eq!(named, expected, "{text}");
    }
}

#[test]
fn siblings_that_name_each_other_are_a_circle_and_nesting_is_not() {
    let references: Vec<(ModulePath, ModulePath)> = [
        // A circle at the root, through a third module.
        ("engine", "backend"),
        ("backend::spawn", "journal"),
        ("journal", "engine::outlet"),
        // Parent and child name each other: nesting, not a circle.
        ("acp", "acp::wire"),
        ("acp::wire", "acp"),
        // One way only.
        ("acp::session", "acp::wire"),
    ]
    .into_iter()
    .map(|(from, to)| (module(from), module(to)))
    .collect();
    let edges: BTreeMap<_, _> = circles::sibling_edges(&references);
    let found: Vec<String> = circles::circles(&edges)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(found, ["crate: backend ↔ engine ↔ journal"]);
}
