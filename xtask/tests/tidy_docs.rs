//! The tidy checks of the docs and the sources' shape, under `cargo test`: no source file past
//! [`tidy::MAX_FILE_LINES`] outside the shrinking [`tidy::LONG_FILES`], no backticked repository
//! path in the docs that does not exist, and a docs/ARCHITECTURE.md that stays short and cites
//! only tests that exist. Each check has a planted-violation test on a temporary tree.
// Test helpers fail the test on a broken fixture, which is what `expect` is for here.
#![allow(clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use xtask::metadata::workspace_root;
use xtask::tidy;

#[test]
fn no_source_file_grows_past_a_thousand_lines() {
    let lines = tidy::rust_file_lines(&workspace_root(), &["crates", "xtask"])
        .expect("the workspace's sources are readable");
    assert!(lines.len() > 100, "only {} files found", lines.len());
    let problems = tidy::long_file_problems(&lines, tidy::LONG_FILES, tidy::MAX_FILE_LINES);
    assert!(
        problems.is_empty(),
        "source file lengths against xtask/src/tidy.rs's LONG_FILES:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_length_check_names_each_way_a_file_breaks_the_list() {
    let lines: std::collections::BTreeMap<String, usize> = [
        ("ok.rs", 10),
        ("new_long.rs", 11),
        ("grew.rs", 21),
        ("shrank.rs", 15),
        ("fixed.rs", 9),
        ("exact.rs", 20),
    ]
    .into_iter()
    .map(|(file, count)| (file.to_owned(), count))
    .collect();
    let allowed = [
        ("grew.rs", 20),
        ("shrank.rs", 20),
        ("fixed.rs", 20),
        ("gone.rs", 20),
        ("exact.rs", 20),
    ];
    assert_eq!(
        tidy::long_file_problems(&lines, &allowed, 10),
        vec![
            "new_long.rs has 11 lines, over 10: split it (the allow-list only shrinks)",
            "grew.rs grew to 21 lines, past its ceiling of 20: split it",
            "shrank.rs shrank to 15 lines: lower its ceiling from 20 to 15",
            "fixed.rs is down to 9 lines, within 10: remove it from the list",
            "gone.rs is listed but gone: remove it from the list",
        ]
    );
}

/// The Markdown files whose backticked paths are checked: README.md and docs/*.md.
fn checked_docs() -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md")];
    for entry in std::fs::read_dir(workspace_root().join("docs")).expect("docs/") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|ext| ext == "md") {
            let name = path.file_name().expect("file name");
            docs.push(Path::new("docs").join(name));
        }
    }
    docs.sort();
    docs
}

#[test]
fn every_backticked_path_in_the_docs_exists() {
    let docs = checked_docs();
    assert!(docs.len() >= 10, "docs found: {docs:?}");
    let roots = tidy::root_dirs(&workspace_root()).expect("the root is listable");
    let named: usize = docs
        .iter()
        .map(|doc| {
            let text = std::fs::read_to_string(workspace_root().join(doc)).expect("doc");
            tidy::doc_paths(&text, &roots).len()
        })
        .sum();
    assert!(named > 100, "only {named} paths found; is the scan broken?");
    let missing = tidy::missing_doc_paths(&workspace_root(), &docs).expect("the docs are readable");
    assert!(
        missing.is_empty(),
        "paths the docs name that do not exist:\n  {}",
        missing.join("\n  ")
    );
}

/// `(markdown, the paths it names)`, with `crates` and `.ci` as the root's directories.
const DOC_PATH_CASES: &[(&str, &[&str])] = &[
    (
        "see `crates/a/src/lib.rs` and `.ci/run`",
        &["crates/a/src/lib.rs", ".ci/run"],
    ),
    ("`crates/a/` a directory, `crates`", &["crates/a/"]),
    (
        "`crates/a.rs::name`, `crates/b.rs:12`, `crates/c.rs:3:4`, `crates/d.md#anchor`",
        &["crates/a.rs", "crates/b.rs", "crates/c.rs", "crates/d.md"],
    ),
    // Not repository paths: another first component, words, patterns, placeholders.
    (
        "`src/lib.rs`, `target/e2e/`, `crates and more`, `crates/*/src`, `crates/<name>.rs`, \
         `crates/{a,b}`, `crates/…`",
        &[],
    ),
    // Fenced blocks and link targets are not read.
    ("```text\n`crates/fenced.rs`\n```\n[x](crates/link.rs)", &[]),
];

#[test]
fn doc_paths_are_read_by_the_stated_rule() {
    let roots: BTreeSet<String> = ["crates", ".ci"].map(String::from).into_iter().collect();
    for (markdown, expected) in DOC_PATH_CASES {
        let found: Vec<String> = tidy::doc_paths(markdown, &roots)
            .into_iter()
            .map(|(_, path)| path)
            .collect();
        assert_eq!(found, *expected, "reading {markdown:?}");
    }
}

#[test]
fn a_stale_doc_path_is_named_with_its_line() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(tree.path().join("crates/a/src")).expect("dirs");
    std::fs::write(tree.path().join("crates/a/src/lib.rs"), "").expect("lib.rs");
    std::fs::write(
        tree.path().join("README.md"),
        "# x\n\n`crates/a/src/lib.rs` is here;\n`crates/a/src/gone.rs` is not.\n",
    )
    .expect("README");
    assert_eq!(
        tidy::missing_doc_paths(tree.path(), &[PathBuf::from("README.md")]).expect("readable"),
        vec!["README.md:4: crates/a/src/gone.rs".to_owned()]
    );
}

/// The most bytes docs/ARCHITECTURE.md may hold: the bird's-eye view stays a bird's-eye view.
const ARCHITECTURE_MAX_BYTES: usize = 30_000;

#[test]
fn the_architecture_is_short_and_every_test_it_cites_exists() {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("read");
    assert!(
        text.len() < ARCHITECTURE_MAX_BYTES,
        "docs/ARCHITECTURE.md is {} bytes, over {ARCHITECTURE_MAX_BYTES}: move detail to the \
         modules' docs",
        text.len()
    );
    let cited = tidy::cited_tests(&text);
    assert!(cited.len() >= 30, "only {} tests cited", cited.len());
    let missing = tidy::missing_cited_tests(&root, &text);
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md cites tests that do not exist:\n  {}",
        missing.join("\n  ")
    );
    let uncited = tidy::sections_citing_no_test(&text);
    assert!(
        uncited.is_empty(),
        "docs/ARCHITECTURE.md's code map sections that name no test: {uncited:?}"
    );
}

#[test]
fn a_cited_test_that_is_not_declared_is_named() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(tree.path().join("t")).expect("dirs");
    std::fs::write(
        tree.path().join("t/a.rs"),
        "#[test]\nfn real() {}\nfn generic<T>() {}\n// fn in_a_comment_only_prefix_x\nfn really() {}\n",
    )
    .expect("a.rs");
    let doc = "`t/a.rs::real`, `t/a.rs::generic`, `t/a.rs::real_not`, `t/a.rs::reall`, \
               `t/gone.rs::real`, `t/a.rs` (a path, not a test)";
    assert_eq!(
        tidy::missing_cited_tests(tree.path(), doc),
        vec![
            "t/a.rs::real_not: the file declares no `fn real_not`".to_owned(),
            "t/a.rs::reall: the file declares no `fn reall`".to_owned(),
            "t/gone.rs::real: no such file".to_owned(),
        ]
    );
    assert_eq!(
        tidy::sections_citing_no_test(
            "# A\n\n### one\n`t/a.rs::real`\n\n### two\nprose\n## B\n`t/a.rs::x`\n"
        ),
        vec!["two".to_owned()]
    );
}
