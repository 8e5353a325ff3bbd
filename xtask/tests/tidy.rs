//! The purity check and the tidy checks, under `cargo test`.
//!
//! The real-crate tests run the same code as `cargo xtask deps`; the planted-violation tests
//! show that each check fails when it should, on copies in a temporary directory, so the
//! real crates are never edited.
// Test helpers fail the test on a broken fixture, which is what `expect` is for here.
#![allow(clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use xtask::metadata::{workspace_root, Metadata};
use xtask::purity::{self, Finding, Violation};
use xtask::tidy;

/// One `cargo metadata` run shared by every test in this binary.
fn metadata() -> &'static Metadata {
    static METADATA: OnceLock<Metadata> = OnceLock::new();
    METADATA.get_or_init(|| Metadata::load(&workspace_root()).expect("cargo metadata runs"))
}

fn assert_pure(package: &str) {
    let krate = purity::pure_crate(package).expect("listed in PURE_CRATES");
    let violations = purity::crate_violations(metadata(), &workspace_root(), krate)
        .expect("the crate's sources are readable");
    let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(
        lines.is_empty(),
        "{package} is not pure ({} violations):\n  {}",
        lines.len(),
        lines.join("\n  ")
    );
}

#[test]
fn every_pure_crate_is_pure() {
    for krate in purity::PURE_CRATES {
        assert_pure(krate.package);
    }
}

#[test]
fn the_pure_modules_of_effectful_crates_are_pure() {
    let violations =
        purity::module_violations(&workspace_root()).expect("the modules' sources are readable");
    let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(
        lines.is_empty(),
        "a pure module is not pure ({} violations):\n  {}",
        lines.len(),
        lines.join("\n  ")
    );
}

/// A file added to the folder a listed pure file owns (that of a `mod.rs`, or `x/` beside an
/// `x.rs`) is caught until it is listed: a pure module's folder cannot gain a file that escapes
/// the scan.
#[test]
fn a_file_added_to_a_pure_modules_folder_must_be_listed() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    for module in purity::PURE_MODULES {
        for file in module.files {
            let to = tree.path().join(file);
            std::fs::create_dir_all(to.parent().expect("a listed file has a folder"))
                .expect("create dir");
            std::fs::copy(workspace_root().join(file), &to).expect("copy a listed file");
        }
    }
    assert!(
        purity::module_violations(tree.path())
            .expect("readable")
            .is_empty(),
        "the copies alone are clean"
    );
    // In the folder of a listed `mod.rs`.
    let planted = ["crates/supervisor/src/registry/planted.rs"];
    for file in planted {
        std::fs::write(tree.path().join(file), "pub fn planted() {}\n").expect("plant");
    }
    let found: Vec<String> = purity::module_violations(tree.path())
        .expect("readable")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(found.len(), planted.len(), "{found:?}");
    for (found, planted) in found.iter().zip(planted) {
        assert!(
            found.starts_with(planted) && found.contains("not listed in PURE_MODULES"),
            "{found:?}"
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("list dir") {
        let path = entry.expect("dir entry").path();
        let target = to.join(path.file_name().expect("file name"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy file");
        }
    }
}

/// Copies a real crate's `src/` into a temp tree, appends `planted` to `file`, and returns
/// the findings the plant added (everything the scan reports after, minus before).
fn planted_findings(package: &str, file: &str, planted: &str) -> Vec<Violation> {
    let krate = purity::pure_crate(package).expect("listed in PURE_CRATES");
    let tree = tempfile::tempdir().expect("a temporary directory");
    copy_tree(
        &workspace_root().join(krate.dir).join("src"),
        &tree.path().join("src"),
    );
    let scan = || purity::source_violations(tree.path(), tree.path()).expect("scan");
    let before = scan();
    let path = tree.path().join("src").join(file);
    let mut text = std::fs::read_to_string(&path).expect("file to plant in");
    text.push_str(planted);
    std::fs::write(&path, text).expect("write planted file");
    scan().into_iter().filter(|v| !before.contains(v)).collect()
}

fn source_finding(path: &str, line: usize, what: &str) -> Violation {
    Violation::Source {
        path: PathBuf::from(path),
        line,
        what: what.to_string(),
    }
}

#[test]
fn planted_std_fs_read_in_pane_state_is_caught() {
    let lines = std::fs::read_to_string(workspace_root().join("crates/pane-state/src/reducer.rs"))
        .expect("reducer.rs")
        .lines()
        .count();
    let added = planted_findings(
        "panewise-pane-state",
        "reducer.rs",
        "\n/// Reads std::fs in prose only.\npub fn planted() -> Vec<u8> {\n    std::fs::read(\"log\").unwrap_or_default()\n}\n",
    );
    assert_eq!(
        added,
        vec![source_finding("src/reducer.rs", lines + 4, "std::fs")]
    );
}

#[test]
fn planted_random_state_in_window_is_caught() {
    let lines = std::fs::read_to_string(workspace_root().join("crates/window/src/visit.rs"))
        .expect("visit.rs")
        .lines()
        .count();
    let added = planted_findings(
        "panewise-window",
        "visit.rs",
        "\n// RandomState in a comment is fine.\nfn planted_seed() -> u64 {\n    use std::hash::BuildHasher;\n    std::hash::RandomState::new().hash_one(1u8)\n}\n",
    );
    assert_eq!(
        added,
        vec![source_finding("src/visit.rs", lines + 5, "RandomState")]
    );
}

/// `(source, expected findings as (line, what))`: what the scan must and must not report.
const SCAN_CASES: &[(&str, &[(usize, &str)])] = &[
    ("let f = std::fs::read(p);", &[(1, "std::fs")]),
    (
        "use std::net::TcpStream;\nuse std::process::Command;",
        &[(1, "std::net"), (2, "std::process")],
    ),
    (
        "std::thread::spawn(f);\nlet v = ::std::env::var(k);",
        &[(1, "std::thread"), (2, "std::env")],
    ),
    (
        "use std::{collections::BTreeMap, fs, io::{self, Read},\n    env};",
        &[(1, "std::{fs}"), (2, "std::{env}")],
    ),
    ("use std::{io, fmt::Write};", &[]),
    ("let t = std::time::Instant::now();", &[(1, "Instant")]),
    (
        "use std::time::{Duration, SystemTime};",
        &[(1, "SystemTime")],
    ),
    ("let s = RandomState::new();", &[(1, "RandomState")]),
    ("tokio::spawn(x);", &[(1, "tokio")]),
    ("pub async fn plan() {}", &[(1, "async fn")]),
    ("let r = async move { 1 };", &[(1, "async block")]),
    ("let r = fut\n    .await;", &[(2, ".await")]),
    (
        "let m = HashMap::new();\nlet s = HashSet::with_capacity(4);",
        &[
            (1, "HashMap::new (hashes with the OS-seeded RandomState)"),
            (
                2,
                "HashSet::with_capacity (hashes with the OS-seeded RandomState)",
            ),
        ],
    ),
    (
        "use std::collections::HashMap;\nstruct S { m: HashMap<String, Vec<u8>> }",
        &[(
            2,
            "std HashMap without a hasher parameter (defaults to RandomState)",
        )],
    ),
    (
        "use std::collections::HashMap;\ntype M<V> = HashMap<Box<str>, V, Fixed>;",
        &[],
    ),
    (
        "type HashMap<K, V> = std::collections::HashMap<K, V, Fixed>;\nstruct S(HashMap<u8, u8>);",
        &[],
    ),
    (
        "struct S(std::collections::HashSet<u8>);",
        &[(
            1,
            "std HashSet without a hasher parameter (defaults to RandomState)",
        )],
    ),
    ("let m: HashMap<u8, u8> = HashMap::default();", &[]),
    // Prose, doc comments and literals never count.
    (
        "// std::fs::read, Instant, tokio\n/// async fn x() { y.await }\nlet x = 1;",
        &[],
    ),
    (
        "//! RandomState\n/* std::process /* nested std::net */ SystemTime */",
        &[],
    ),
    (
        "let s = \"std::fs and tokio\";\nlet r = r#\"async fn \"quoted\" Instant\"#;",
        &[],
    ),
    (
        "let b = b\"std::env\"; let c = '\"'; let q = '\\''; fn f<'a>(x: &'a str) {}",
        &[],
    ),
    (
        "let s = \"escaped \\\" std::fs\"; let t = std::fs::read(p);",
        &[(1, "std::fs")],
    ),
    (
        "let instant = 1; let my_tokio = 2; let std_fs = 3; let awaited = x.awaited;",
        &[],
    ),
    // The standard streams, printing, the OS, locks, atomics and statics.
    (
        "let out = std::io::stdout();\nlet line = stdin().lines();\nlet err = io::stderr;",
        &[
            (1, "stdout (a standard stream)"),
            (2, "stdin (a standard stream)"),
            (3, "stderr (a standard stream)"),
        ],
    ),
    (
        "let piped = child.stdout(x); struct Result { stdout: String }",
        &[],
    ),
    (
        "println!(\"x\");\neprint!(\"y\");\nlet v = dbg!(1);\nlet print = 1;",
        &[
            (1, "println! (prints)"),
            (2, "eprint! (prints)"),
            (3, "dbg! (prints)"),
        ],
    ),
    (
        "use std::os::unix::fs::PermissionsExt;",
        &[(1, "std::os")],
    ),
    (
        "use std::sync::{Arc, Mutex};\nlet l: RwLock<u8>;\nstatic C: OnceLock<u8> = OnceLock::new();",
        &[
            (1, "Mutex"),
            (2, "RwLock"),
            (3, "static item"),
            (3, "OnceLock"),
            (3, "OnceLock"),
        ],
    ),
    (
        "use std::sync::atomic::{AtomicU64, Ordering};\nstatic mut N: u8 = 0;",
        &[
            (1, "std::sync::atomic"),
            (1, "AtomicU64 (an atomic)"),
            (2, "static item"),
        ],
    ),
    (
        "fn f(x: &'static str) -> &'static [&'static str] { &[] }\nconst A: &str = \"a\";",
        &[],
    ),
];

#[test]
fn source_scan_finds_each_forbidden_construct_and_skips_prose() {
    for (source, expected) in SCAN_CASES {
        let found = purity::scan_source(source);
        let expected: Vec<Finding> = expected
            .iter()
            .map(|&(line, what)| Finding {
                line,
                what: what.to_string(),
            })
            .collect();
        assert_eq!(found, expected, "scanning {source:?}");
    }
}

/// providers is scanned whole: its API module, once beside the transport the scan skipped,
/// is held to the rule like the decoders.
#[test]
fn planted_sleep_in_providers_api_module_is_caught() {
    let lines = std::fs::read_to_string(workspace_root().join("crates/providers/src/api/retry.rs"))
        .expect("retry.rs")
        .lines()
        .count();
    let added = planted_findings(
        "panewise-providers",
        "api/retry.rs",
        "
/// Waits with tokio (in prose only).
pub async fn planted_wait() {
    tokio::time::sleep(std::time::Duration::ZERO).await;
}
",
    );
    assert_eq!(
        added,
        vec![
            source_finding("src/api/retry.rs", lines + 3, "async fn"),
            source_finding("src/api/retry.rs", lines + 4, "tokio"),
            source_finding("src/api/retry.rs", lines + 4, ".await"),
        ]
    );
}

#[test]
fn every_file_under_src_is_scanned_however_deep() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(tree.path().join("src/clients/http")).expect("dirs");
    std::fs::write(
        tree.path().join("src/lib.rs"),
        "pub mod clients;
",
    )
    .expect("lib.rs");
    std::fs::write(
        tree.path().join("src/clients/mod.rs"),
        "pub mod http;
",
    )
    .expect("mod.rs");
    std::fs::write(
        tree.path().join("src/clients/http/send.rs"),
        "fn now() -> std::time::Instant { std::time::Instant::now() }
",
    )
    .expect("send.rs");
    assert_eq!(
        purity::source_violations(tree.path(), tree.path()).expect("scan"),
        vec![
            source_finding("src/clients/http/send.rs", 1, "Instant"),
            source_finding("src/clients/http/send.rs", 1, "Instant"),
        ]
    );
}

/// `cargo tree -p panewise-window --prefix none -f {p}` had window linked rayon (with
/// rayon-core under it) and serde pulled in nix.
const PLANTED_TREE: &str = "panewise-window v0.1.0 (/w/crates/window)
serde v1.0.229
nix v0.30.1
rayon v1.11.0
rayon-core v1.13.0
serde v1.0.229 (*)
serde_derive v1.0.229 (proc-macro)
";

#[test]
fn planted_disallowed_dependencies_are_caught() {
    let krate = purity::pure_crate("panewise-window").expect("listed");
    let linked = xtask::metadata::parse_tree(PLANTED_TREE);
    assert!(
        !linked.contains("panewise-window"),
        "the root is not its own dependency"
    );
    let found: BTreeSet<String> = purity::disallowed(&linked, krate)
        .into_iter()
        .map(|v| match v {
            Violation::Dependency { dependency, .. } => dependency,
            other => panic!("unexpected violation {other}"),
        })
        .collect();
    let expected: BTreeSet<String> = ["nix", "rayon", "rayon-core"]
        .map(String::from)
        .into_iter()
        .collect();
    assert_eq!(found, expected);
}

/// The per-crate resolution is real: `panewise-window` is checked as built alone, so what
/// the web crate's Web Push turns on in the SHA-256 stack they share (getrandom, wasm-bindgen,
/// futures) is not linked by window, while the workspace-wide resolve has it.
#[test]
fn a_pure_crate_is_resolved_alone_not_with_the_workspace_s_features() {
    let linked = xtask::metadata::linked_packages(&workspace_root(), "panewise-window")
        .expect("cargo tree runs");
    assert!(
        linked.contains("sha2") && linked.contains("serde"),
        "{linked:?}"
    );
    for unified in ["getrandom", "wasm-bindgen", "futures-util"] {
        assert!(
            !linked.contains(unified),
            "window links {unified}: {linked:?}"
        );
    }
}

/// A workspace of panewise-window alone.
const ONE_MEMBER_METADATA: &str = r#"{
  "workspace_members": ["w"],
  "packages": [{"id": "w", "name": "panewise-window"}],
  "resolve": {"nodes": [{"id": "w", "deps": []}]}
}"#;

#[test]
fn a_pure_crate_missing_from_the_workspace_is_a_violation() {
    let metadata = Metadata::parse(ONE_MEMBER_METADATA.as_bytes()).expect("fixture parses");
    let krate = purity::pure_crate("panewise-protocol").expect("listed");
    assert_eq!(
        purity::dependency_violations(&metadata, &workspace_root(), krate)
            .expect("a missing member is answered without running cargo"),
        vec![Violation::MissingCrate {
            krate: "panewise-protocol".to_string()
        }]
    );
}

/// `(text, rule numbers cited)`.
const CITATION_CASES: &[(&str, &[&str])] = &[
    ("(R12)", &["R12"]),
    ("W6/W7 and R38, R47", &["R38", "R47", "W6", "W7"]),
    ("R63–R66", &["R63", "R64", "R65", "R66"]),
    ("W19-W20", &["W19", "W20"]),
    // Spelled in two halves so this file does not itself cite a rule with a letter suffix.
    (concat!("R", "8a"), &[concat!("R", "8a")]),
    ("WR12 R12x3 XR1 R 12 W", &[]),
    ("R12–W14", &["R12", "W14"]),
];

#[test]
fn citations_are_read_as_single_numbers_and_ranges() {
    for (text, expected) in CITATION_CASES {
        let expected: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(tidy::cited_rules(text), expected, "reading {text:?}");
    }
}

#[test]
fn every_cited_rule_has_a_line_in_rules_md() {
    let root = workspace_root();
    let rules_md = root.join("docs/RULES.md");
    let documented =
        tidy::documented_rules(&std::fs::read_to_string(&rules_md).expect("docs/RULES.md"));
    let cited = tidy::cited_rules_in(&root, &["crates", "benches", "xtask", "docs"], &[rules_md])
        .expect("sources readable");
    assert!(
        cited.len() > 100,
        "only {} rule numbers found; is the scan broken?",
        cited.len()
    );
    let missing: Vec<String> = cited
        .iter()
        .filter(|(rule, _)| !documented.contains(rule))
        .map(|(rule, file)| format!("{rule} (cited in {})", file.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "rule numbers cited without a line in docs/RULES.md:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn rules_md_has_one_line_of_prose_per_rule() {
    let text = std::fs::read_to_string(workspace_root().join("docs/RULES.md")).expect("RULES.md");
    let mut seen = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("- **")) {
        let rules = tidy::documented_rules(line);
        let rule = rules.iter().next().expect("one rule per line");
        assert!(seen.insert(rule.clone()), "{rule} has two lines");
        let prose = line.split_once("** ").map(|(_, p)| p.trim()).unwrap_or("");
        assert!(prose.len() > 10, "{rule} has no paraphrase: {line:?}");
    }
}

#[test]
fn every_library_crate_opens_with_the_crate_doc() {
    let (libs, without_lib) = tidy::workspace_libs(metadata());
    // Members with no lib.rs (the host is a binary) have no crate doc to check.
    eprintln!("no lib.rs, not checked: {}", without_lib.join(", "));
    assert!(libs.len() >= 6, "libraries found: {libs:?}");
    let mut problems = Vec::new();
    for (package, lib_rs) in &libs {
        let text = std::fs::read_to_string(lib_rs).expect("lib.rs readable");
        for problem in tidy::crate_doc_problems(package, &text) {
            let shown = lib_rs.strip_prefix(workspace_root()).unwrap_or(lib_rs);
            problems.push(format!("{}: {problem}", shown.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "crate docs out of shape:\n  {}",
        problems.join("\n  ")
    );
}

/// A crate doc in the workspace's shape.
const GOOD_DOC: &str = "//! # demo\n//!\n//! What it is.\n//!\n//! ## Invariants\n//! - Pure.\n//!\n\
    //! ## API boundary\n//! [`f`].\n//!\n//! ## Where to start reading\n//! [`f`].\n\npub fn f() {}\n";

/// `(text of GOOD_DOC to replace, replacement, expected problems)`.
const CRATE_DOC_CASES: &[(&str, &str, &[&str])] = &[
    ("", "", &[]),
    (
        "//! # demo\n",
        "//! # other\n",
        &["first doc line is not `# demo`"],
    ),
    (
        "//! What it is.\n",
        "",
        &["no prose under the title saying what the crate is"],
    ),
    (
        "//! ## Invariants\n//! - Pure.\n",
        "",
        &["no `## Invariants` heading (after the ones before it)"],
    ),
    (
        "//! - Pure.\n",
        "",
        &["`## Invariants` has nothing under it"],
    ),
    (
        "//! ## Where to start reading\n",
        "//! Start reading at [`f`].\n",
        &["no `## Where to start reading` heading (after the ones before it)"],
    ),
    (
        "//! # demo\n",
        "/// # demo\n",
        &["does not open with a `//!` doc"],
    ),
];

#[test]
fn crate_doc_check_flags_each_missing_part() {
    for (from, to, expected) in CRATE_DOC_CASES {
        let doc = GOOD_DOC.replacen(from, to, 1);
        assert_eq!(
            tidy::crate_doc_problems("demo", &doc),
            *expected,
            "doc:\n{doc}"
        );
    }
}

/// Findings as (line, what).
type Expected = &'static [(usize, &'static str)];

/// `(source, audited function, expected findings)`.
const UNSAFE_CASES: &[(&str, Option<&str>, Expected)] = &[
    ("fn f() { unsafe { g() } }", None, &[(1, "unsafe")]),
    ("unsafe fn f() {}\nunsafe impl Send for S {}", None, &[(1, "unsafe"), (2, "unsafe")]),
    (
        "#[allow(unsafe_code)]\nfn f() {}\n#![expect(clippy::x, unsafe_code)]",
        None,
        &[(1, "allow(unsafe_code)"), (3, "expect(unsafe_code)")],
    ),
    // Prose, strings and the workspace's own denial are not findings.
    (
        "// unsafe here\n/// allow(unsafe_code)\nlet s = \"unsafe\";\n#![deny(unsafe_code)]",
        None,
        &[],
    ),
    // The audited function: its one attribute and the `unsafe` in its body.
    (
        "#[cfg(x)]\n#[allow(unsafe_code)]\nfn audited(c: &mut C) {\n    unsafe { c.pre_exec(|| { Ok(()) }); }\n}\nfn other() { unsafe { g() } }",
        Some("audited"),
        &[(6, "unsafe")],
    ),
    // A second attribute near it, or `unsafe` outside its body, is still found.
    (
        "#[allow(unsafe_code)]\n#[allow(unsafe_code)]\nfn audited() {}\nunsafe fn x() {}",
        Some("audited"),
        &[(1, "allow(unsafe_code)"), (4, "unsafe")],
    ),
];

#[test]
fn the_unsafe_scan_finds_every_unaudited_unsafe_and_skips_prose() {
    for (source, audited, expected) in UNSAFE_CASES {
        let expected: Vec<(usize, String)> = expected
            .iter()
            .map(|(line, what)| (*line, (*what).to_string()))
            .collect();
        assert_eq!(
            tidy::unaudited_unsafe(source, *audited),
            expected,
            "scanning {source:?}"
        );
    }
}

/// The workspace denies `unsafe_code` (deny, not forbid, so that one audited function can
/// allow it) and no file but that function's holds `unsafe` or lets it through.
#[test]
fn unsafe_appears_only_in_the_audited_function() {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        manifest.contains("unsafe_code = \"deny\""),
        "the workspace lints no longer deny unsafe_code"
    );
    let findings =
        tidy::unsafe_outside_the_audited_function(&root, &["crates", "xtask", "benches"])
            .expect("the workspace's sources are readable");
    assert!(
        findings.is_empty(),
        "`unsafe` outside {:?}:\n  {}",
        tidy::AUDITED_UNSAFE_FN,
        findings.join("\n  ")
    );
    let (file, name) = tidy::AUDITED_UNSAFE_FN;
    let audited = std::fs::read_to_string(root.join(file)).expect("the audited file");
    assert!(
        tidy::unaudited_unsafe(&audited, None).len() == 2,
        "{file} should hold exactly the audited attribute and one `unsafe` block, in {name}"
    );
}

#[test]
fn the_crate_graph_is_the_documented_layering() {
    let architecture =
        std::fs::read_to_string(workspace_root().join("docs/ARCHITECTURE.md")).expect("read");
    let documented = tidy::documented_layering(&architecture).expect("a Layering table");
    let differences = tidy::layering_differences(&documented, &tidy::workspace_edges(metadata()));
    assert!(
        differences.is_empty(),
        "the crate graph differs from docs/ARCHITECTURE.md's Layering table:\n  {}",
        differences.join("\n  ")
    );
}

#[test]
fn the_layering_check_names_an_unlisted_edge_a_gone_edge_and_an_unlisted_crate() {
    let doc = "# A\n\n## Layering\n\n| crate | depends on |\n|---|---|\n\
               | `low` | — |\n| `high` | `low`, `mid` |\n\n## Next\n\n| `ignored` | `x` |\n";
    let documented = tidy::documented_layering(doc).expect("parses");
    let actual: std::collections::BTreeMap<String, BTreeSet<String>> = [
        ("low", &["high"][..]),
        ("high", &["low"][..]),
        ("new", &[][..]),
    ]
    .into_iter()
    .map(|(krate, deps)| {
        (
            krate.to_owned(),
            deps.iter().map(|dep| (*dep).to_owned()).collect(),
        )
    })
    .collect();
    assert_eq!(
        tidy::layering_differences(&documented, &actual),
        vec![
            "the layering lists high -> mid, which is gone".to_owned(),
            "low depends on high, an edge the layering does not list".to_owned(),
            "new is not in the Layering table".to_owned(),
        ]
    );
    assert!(tidy::documented_layering("# no section").is_err());
}

/// The workspace crates the README's crate table lists: `| \`dir\` | \`package\` | what |`.
fn readme_crate_table(readme: &str) -> BTreeSet<String> {
    readme
        .lines()
        .filter(|line| line.starts_with("| `"))
        .filter_map(|line| line.split('|').nth(2))
        .map(|cell| cell.trim().trim_matches('`').to_owned())
        .filter(|package| package.starts_with("panewise-") || package == "xtask")
        .collect()
}

#[test]
fn the_readme_crate_table_lists_every_workspace_member() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README");
    let listed = readme_crate_table(&readme);
    let members: BTreeSet<String> = tidy::workspace_edges(metadata()).into_keys().collect();
    assert_eq!(
        listed, members,
        "README.md's crate table against the workspace's members"
    );
}

#[test]
fn the_architecture_lists_exactly_the_pure_crates_and_modules() {
    let architecture =
        std::fs::read_to_string(workspace_root().join("docs/ARCHITECTURE.md")).expect("read");
    let paragraph = architecture
        .split("\n- ")
        .find(|item| item.starts_with("Nothing in a pure crate"))
        .expect("the invariant naming the pure crates");
    let named: BTreeSet<String> = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| name.starts_with("panewise-") || name.starts_with("crates/"))
        .map(str::to_owned)
        .collect();
    let checked: BTreeSet<String> = purity::PURE_CRATES
        .iter()
        .map(|krate| krate.package.to_owned())
        .chain(
            purity::PURE_MODULES
                .iter()
                .flat_map(|module| module.files.iter().map(|file| (*file).to_owned())),
        )
        .collect();
    assert_eq!(
        named, checked,
        "docs/ARCHITECTURE.md's pure list against xtask/src/purity.rs"
    );
}

#[test]
fn benchmarks_md_gives_a_command_for_every_bench_and_no_other() {
    let benches: BTreeSet<String> = metadata()
        .packages
        .iter()
        .filter(|package| metadata().workspace_members.contains(&package.id))
        .flat_map(|package| &package.targets)
        .filter(|target| target.kind.iter().any(|kind| kind == "bench"))
        .map(|target| target.name.clone())
        .collect();
    let doc =
        std::fs::read_to_string(workspace_root().join("docs/BENCHMARKS.md")).expect("BENCHMARKS");
    // `--bench NAME` in the cargo commands the document gives (a criterion binary run by
    // hand takes `--bench` too, with a filter after it).
    let named: BTreeSet<String> = doc
        .lines()
        .filter(|line| line.contains("cargo bench") || line.contains("cargo xtask bench"))
        .flat_map(|line| line.split("--bench ").skip(1))
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect();
    assert!(!benches.is_empty(), "the workspace has no bench target");
    let missing: Vec<&String> = benches.difference(&named).collect();
    let unknown: Vec<&String> = named.difference(&benches).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/BENCHMARKS.md: benches with no `cargo bench --bench NAME` command {missing:?}; \
         commands naming no bench {unknown:?}"
    );
}

#[test]
fn the_readme_names_exactly_the_demos_sessions() {
    let demo_names = |text: &str, prefix: &str| -> BTreeSet<String> {
        text.split(prefix)
            .skip(1)
            .map(|rest| {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                    .collect();
                format!("demo-{name}")
            })
            .filter(|name| name.len() > "demo-".len())
            .collect()
    };
    let source = std::fs::read_to_string(workspace_root().join("crates/cli/src/ui_cmd.rs"))
        .expect("ui_cmd.rs");
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README");
    let made = demo_names(&source, "name: \"demo-");
    assert!(made.len() >= 6, "the demo makes {made:?}");
    assert_eq!(
        demo_names(&readme, "demo-"),
        made,
        "README.md's demo against ui_cmd.rs's"
    );
}

#[test]
fn no_library_crate_depends_on_anyhow() {
    let found = tidy::libraries_on_anyhow(metadata(), &["xtask"]);
    assert!(
        found.is_empty(),
        "library crates with anyhow (errors are thiserror enums in error.rs): {found:?}"
    );
}

/// A library on anyhow through a normal edge (`lib`), one through a dev edge only (`dev`), a
/// binary on it (`bin`), and the exempt xtask.
const ANYHOW_METADATA: &str = r#"{
  "workspace_members": ["lib", "dev", "bin", "xtask"],
  "packages": [
    {"id": "lib", "name": "lib", "targets": [{"kind": ["lib"], "src_path": "lib/src/lib.rs"}],
     "dependencies": [{"name": "anyhow", "kind": null}]},
    {"id": "dev", "name": "dev", "targets": [{"kind": ["lib"], "src_path": "dev/src/lib.rs"}],
     "dependencies": [{"name": "anyhow", "kind": "dev"}]},
    {"id": "bin", "name": "bin", "targets": [{"kind": ["bin"], "src_path": "bin/src/main.rs"}],
     "dependencies": [{"name": "anyhow", "kind": null}]},
    {"id": "xtask", "name": "xtask", "targets": [{"kind": ["lib"], "src_path": "x/src/lib.rs"}],
     "dependencies": [{"name": "anyhow", "kind": null}]}
  ],
  "resolve": {"nodes": []}
}"#;

#[test]
fn the_anyhow_check_names_a_library_on_it_and_nothing_else() {
    let metadata = Metadata::parse(ANYHOW_METADATA.as_bytes()).expect("fixture parses");
    assert_eq!(
        tidy::libraries_on_anyhow(&metadata, &["xtask"]),
        vec!["lib".to_owned()]
    );
}
