//! The purity check. Each pure crate gets two tests that can fail:
//!
//! - an **allowlist** of the crates its library may link: every package reachable from it
//!   through normal edges, with every one of its features on, must be listed. Resolved per
//!   crate (`cargo tree -p`), as building it alone would: a feature another member turns on
//!   in a shared dependency is that member's, not the pure crate's.
//!   No feature is exempt: a pure crate has no feature that adds effects (the model API
//!   clients' transport, once providers' `api` feature, is its own crate, `panewise-transport`);
//! - a **source scan** of all of its `src/`, no path excluded, for the ways Rust code reaches
//!   the outside world: the
//!   `std` modules that do I/O, spawn or read the environment, the clocks, OS-seeded hashing,
//!   tokio, and `async`. Comments, doc comments and string literals are skipped, so prose that
//!   names these things does not trip it.
//!
//! `#[cfg(test)]` modules under `src/` are scanned too: a test that needs files belongs in
//! `tests/`, where the crate's library stays out of it.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::metadata::Metadata;

/// One pure crate and what it may use.
#[derive(Debug)]
pub struct PureCrate {
    /// The package name.
    pub package: &'static str,
    /// The crate's directory, relative to the workspace root.
    pub dir: &'static str,
    /// Groups of package names the library may link (through normal edges, all features).
    pub allowed: &'static [&'static [&'static str]],
}

/// serde and the proc-macro crates its derive is built from (they run in the compiler).
const SERDE: &[&str] = &[
    "serde",
    "serde_core",
    "serde_derive",
    "proc-macro2",
    "quote",
    "syn",
    "unicode-ident",
];
/// serde_json and what it links.
const SERDE_JSON: &[&str] = &["serde_json", "itoa", "memchr", "zmij"];
/// thiserror and its derive.
const THISERROR: &[&str] = &["thiserror", "thiserror-impl"];
/// The exact o200k token counter behind `panewise-window`'s `o200k` feature: an embedded
/// vocabulary and pure string algorithms, no I/O.
const O200K: &[&str] = &[
    "bpe-openai",
    "bpe",
    "aneubeck-daachorse",
    "aho-corasick",
    "base64",
    "either",
    "fnv",
    "itertools",
    "num-traits",
    "regex-automata",
    "regex-syntax",
    "rmp",
    "rmp-serde",
    "tinyvec",
    "unicode-normalization",
];

/// SHA-256 for the window archive's content-addressed span ids (`panewise-window`'s
/// `archive`): pure hashing, the CPU-feature probe it dispatches on, and its array types. The
/// probe links `libc` on some targets (aarch64 Linux reads the CPU's features with
/// `getauxval`, a lookup in the process's own auxiliary vector: no file, no clock).
const SHA2: &[&str] = &[
    "sha2",
    "digest",
    "block-buffer",
    "crypto-common",
    "hybrid-array",
    "typenum",
    "cpufeatures",
    "cfg-if",
    "libc",
];

/// ratatui's backend-free halves, as the dashboard's core links them: `ratatui-core` (layout,
/// text, style, the `Frame`), `ratatui-widgets` (`Paragraph`, `Block`), and what they are built
/// from: the layout solver (`kasuari`), small-string, width and segmentation tables, the
/// layout cache (`lru`, `critical-section`), and the proc-macros of `strum`, `instability` and
/// `indoc`, which run in the compiler. No backend, no terminal library.
const RATATUI_CORE: &[&str] = &[
    "ratatui-core",
    "ratatui-widgets",
    "allocator-api2",
    "bitflags",
    "castaway",
    "cfg-if",
    "compact_str",
    "critical-section",
    "darling",
    "darling_core",
    "darling_macro",
    "either",
    "equivalent",
    "foldhash",
    "hashbrown",
    "heck",
    "ident_case",
    "indoc",
    "instability",
    "itertools",
    "kasuari",
    "line-clipping",
    "lru",
    "rustversion",
    "ryu",
    "static_assertions",
    "strsim",
    "strum",
    "strum_macros",
    "unicode-segmentation",
    "unicode-truncate",
    "unicode-width",
];

/// `panewise-providers` and the workspace crates it links: the decoders' vocabulary, the
/// price table and the model APIs' pure half.
const PROVIDERS: &[&str] = &[
    "panewise-protocol",
    "panewise-pane-state",
    "panewise-window",
    "panewise-providers",
];

/// `toml`: `panewise.toml` parsed in the core.
const TOML: &[&str] = &[
    "toml",
    "toml_datetime",
    "toml_edit",
    "toml_write",
    "serde_spanned",
    "winnow",
    "indexmap",
    "equivalent",
    "hashbrown",
];

/// `url`: a provider's `base_url` checked as the HTTP client will parse it (IDNA's Unicode
/// tables included).
const URL: &[&str] = &[
    "url",
    "form_urlencoded",
    "percent-encoding",
    "idna",
    "idna_adapter",
    "utf8_iter",
    "icu_collections",
    "icu_locale_core",
    "icu_normalizer",
    "icu_normalizer_data",
    "icu_properties",
    "icu_properties_data",
    "icu_provider",
    "displaydoc",
    "litemap",
    "potential_utf",
    "smallvec",
    "stable_deref_trait",
    "tinystr",
    "writeable",
    "yoke",
    "yoke-derive",
    "zerofrom",
    "zerofrom-derive",
    "zerotrie",
    "zerovec",
    "zerovec-derive",
    "synstructure",
    "utf_types",
];

/// The crates that must do no I/O, read no clock, spawn nothing, draw no randomness and have
/// no `async`.
pub const PURE_CRATES: &[PureCrate] = &[
    PureCrate {
        package: "panewise-protocol",
        dir: "crates/protocol",
        allowed: &[SERDE],
    },
    PureCrate {
        package: "panewise-pane-state",
        dir: "crates/pane-state",
        allowed: &[SERDE, SERDE_JSON, THISERROR, &["panewise-protocol"]],
    },
    PureCrate {
        package: "panewise-api",
        dir: "crates/api",
        allowed: &[
            SERDE,
            SERDE_JSON,
            THISERROR,
            &["panewise-protocol", "panewise-pane-state"],
        ],
    },
    PureCrate {
        package: "panewise-window",
        dir: "crates/window",
        allowed: &[SERDE, SERDE_JSON, THISERROR, O200K, SHA2],
    },
    PureCrate {
        package: "panewise-providers",
        dir: "crates/providers",
        // The window crate (pure) for the provider-side strategies' settings and records.
        allowed: &[
            SERDE,
            SERDE_JSON,
            THISERROR,
            O200K,
            SHA2,
            &[
                "panewise-protocol",
                "panewise-pane-state",
                "panewise-window",
            ],
        ],
    },
    PureCrate {
        package: "panewise-session-protocol",
        dir: "crates/session-protocol",
        // providers: the decoders' event vocabulary.
        allowed: &[SERDE, SERDE_JSON, THISERROR, O200K, SHA2, PROVIDERS],
    },
    PureCrate {
        package: "panewise-window-eval",
        dir: "crates/window-eval",
        // providers: the price table and the decoders' vocabulary.
        allowed: &[SERDE, SERDE_JSON, THISERROR, O200K, SHA2, PROVIDERS],
    },
    PureCrate {
        package: "panewise-tui",
        dir: "crates/tui",
        allowed: &[
            SERDE,
            SERDE_JSON,
            THISERROR,
            RATATUI_CORE,
            &["panewise-protocol", "panewise-pane-state", "panewise-api"],
        ],
    },
    PureCrate {
        package: "panewise-core",
        dir: "crates/core",
        // Every decision the host makes: the pure crates it decides over, the configuration's
        // TOML and the endpoints' URLs.
        allowed: &[
            SERDE,
            SERDE_JSON,
            THISERROR,
            O200K,
            SHA2,
            PROVIDERS,
            TOML,
            URL,
            &[
                "panewise-protocol",
                "panewise-pane-state",
                "panewise-api",
                "panewise-window",
                "panewise-session-protocol",
            ],
        ],
    },
];

impl PureCrate {
    /// Whether `package` is on this crate's allowlist.
    pub fn allows(&self, package: &str) -> bool {
        self.allowed.iter().any(|group| group.contains(&package))
    }
}

/// One way a pure crate broke the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A package outside the allowlist is reachable through normal edges.
    Dependency {
        /// The pure crate.
        krate: String,
        /// The package it should not link.
        dependency: String,
    },
    /// A forbidden construct in the source.
    Source {
        /// The file, relative to the workspace root when it is inside it.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was found.
        what: String,
    },
    /// A file listed as a pure module that does not exist, so the list is stale.
    StaleModule {
        /// The path as written in the table.
        path: PathBuf,
    },
    /// A file in the folder of a listed `mod.rs` that the list does not name: a pure module's
    /// folder is pure whole, so a new file there cannot escape the scan.
    UnlistedModuleFile {
        /// The file, relative to the workspace root.
        path: PathBuf,
    },
    /// The pure crate is not a workspace member.
    MissingCrate {
        /// The package name.
        krate: String,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Dependency { krate, dependency } => write!(
                f,
                "{krate} links `{dependency}`, which is not on its allowlist (xtask/src/purity.rs)"
            ),
            Violation::Source { path, line, what } => {
                write!(f, "{}:{line}: {what}", path.display())
            }
            Violation::StaleModule { path } => {
                write!(
                    f,
                    "{}: listed as a pure module but does not exist",
                    path.display()
                )
            }
            Violation::UnlistedModuleFile { path } => write!(
                f,
                "{}: in a pure module's folder but not listed in PURE_MODULES \
                 (xtask/src/purity.rs)",
                path.display()
            ),
            Violation::MissingCrate { krate } => write!(f, "{krate} is not a workspace member"),
        }
    }
}

/// The packages `krate` links that are not on its allowlist, as `cargo tree -p` resolves
/// it in the workspace at `root` ([`crate::metadata::linked_packages`]).
pub fn dependency_violations(
    metadata: &Metadata,
    root: &Path,
    krate: &PureCrate,
) -> Result<Vec<Violation>> {
    if metadata.member(krate.package).is_none() {
        return Ok(vec![Violation::MissingCrate {
            krate: krate.package.to_string(),
        }]);
    }
    let linked = crate::metadata::linked_packages(root, krate.package)?;
    Ok(disallowed(&linked, krate))
}

/// Of the packages `linked`, those not on `krate`'s allowlist.
pub fn disallowed(linked: &BTreeSet<String>, krate: &PureCrate) -> Vec<Violation> {
    linked
        .iter()
        .filter(|name| !krate.allows(name))
        .map(|dependency| Violation::Dependency {
            krate: krate.package.to_string(),
            dependency: dependency.clone(),
        })
        .collect()
}

/// Scans all of `crate_dir/src` for forbidden constructs; paths in the findings are shown
/// relative to `shown_from`.
pub fn source_violations(crate_dir: &Path, shown_from: &Path) -> Result<Vec<Violation>> {
    let mut violations = Vec::new();
    let mut files = Vec::new();
    rust_files(&crate_dir.join("src"), &mut files)?;
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("could not read {}", file.display()))?;
        for finding in scan_source(&text) {
            violations.push(Violation::Source {
                path: shown(&file, shown_from),
                line: finding.line,
                what: finding.what,
            });
        }
    }
    Ok(violations)
}

/// Every violation of one pure crate in the workspace at `root`.
pub fn crate_violations(
    metadata: &Metadata,
    root: &Path,
    krate: &PureCrate,
) -> Result<Vec<Violation>> {
    let mut violations = dependency_violations(metadata, root, krate)?;
    violations.extend(source_violations(&root.join(krate.dir), root)?);
    Ok(violations)
}

/// A pure module inside a crate that also does I/O: the source scan covers its files (the
/// allowlist cannot, as the crate links what its shell needs).
#[derive(Debug)]
pub struct PureModule {
    /// The files, relative to the workspace root.
    pub files: &'static [&'static str],
    /// What the module is and why it is held pure.
    pub why: &'static str,
}

/// The pure modules inside effectful crates.
pub const PURE_MODULES: &[PureModule] = &[
    PureModule {
        files: &[
            "crates/supervisor/src/registry/mod.rs",
            "crates/supervisor/src/registry/methods.rs",
            "crates/supervisor/src/registry/delivery.rs",
            "crates/supervisor/src/registry/session.rs",
            "crates/supervisor/src/registry/tests.rs",
            "crates/supervisor/src/registry/budget.rs",
            "crates/supervisor/src/registry/tests/budget.rs",
            "crates/supervisor/src/registry/tests/questions.rs",
        ],
        why:
            "the daemon's registry: Registry::update folds events into effects the daemon's shell \
          (shell/) carries out",
    },
    PureModule {
        files: &[
            "crates/web/src/guard.rs",
            "crates/web/src/routes.rs",
            "crates/web/src/pairing.rs",
            "crates/web/src/inbox.rs",
            "crates/web/src/push.rs",
            "crates/web/src/push_tests.rs",
        ],
        why: "panewise web's decisions: the Host, Origin and credential guard, the route table, \
          pairing codes and device tokens (randomness and clock passed in), the inbox fold, Web \
          Push's subscriptions, edges and messages; the axum shell (server/) carries them out",
    },
];

/// Source-scan findings in the pure modules of the workspace at `root`; a listed file that is
/// gone is a violation too, so the list cannot go stale.
pub fn module_violations(root: &Path) -> Result<Vec<Violation>> {
    let mut violations = Vec::new();
    for module in PURE_MODULES {
        for file in module.files {
            let path = root.join(file);
            if !path.exists() {
                violations.push(Violation::StaleModule {
                    path: PathBuf::from(file),
                });
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("could not read {}", path.display()))?;
            for finding in scan_source(&text) {
                violations.push(Violation::Source {
                    path: PathBuf::from(file),
                    line: finding.line,
                    what: finding.what,
                });
            }
            violations.extend(unlisted_in_folder(root, &path)?);
        }
    }
    Ok(violations)
}

/// The Rust files in the folder a listed file owns that no pure module lists: the folder of a
/// `mod.rs`, or `x/` beside a listed `x.rs`. Such a folder is pure whole.
fn unlisted_in_folder(root: &Path, listed_file: &Path) -> Result<Vec<Violation>> {
    let folder = if listed_file.file_name().is_some_and(|name| name == "mod.rs") {
        listed_file.parent().map(Path::to_path_buf)
    } else {
        Some(listed_file.with_extension(""))
    };
    let Some(folder) = folder.filter(|folder| folder.is_dir()) else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    rust_files(&folder, &mut files)?;
    files.sort();
    Ok(files
        .into_iter()
        .map(|file| shown(&file, root))
        .filter(|file| {
            !PURE_MODULES
                .iter()
                .flat_map(|module| module.files)
                .any(|listed| Path::new(listed) == file)
        })
        .map(|path| Violation::UnlistedModuleFile { path })
        .collect())
}

/// The pure crate called `package`.
pub fn pure_crate(package: &str) -> Option<&'static PureCrate> {
    PURE_CRATES.iter().find(|k| k.package == package)
}

/// `cargo xtask deps`: runs both checks on every pure crate and fails listing every violation.
pub fn check() -> Result<()> {
    let root = crate::metadata::workspace_root();
    let metadata = Metadata::load(&root)?;
    let mut violations = Vec::new();
    for krate in PURE_CRATES {
        violations.extend(crate_violations(&metadata, &root, krate)?);
    }
    violations.extend(module_violations(&root)?);
    if !violations.is_empty() {
        let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
        anyhow::bail!(
            "purity check failed ({} violations); pure crates do no I/O, read no clock, spawn \
             nothing, draw no randomness and have no async:\n  {}",
            lines.len(),
            lines.join("\n  ")
        );
    }
    println!(
        "xtask deps: {} pure crates checked (allowlist over all features, source scan) and {} \
         pure modules (source scan), clean",
        PURE_CRATES.len(),
        PURE_MODULES.len()
    );
    Ok(())
}

fn shown(path: &Path, from: &Path) -> PathBuf {
    path.strip_prefix(from).unwrap_or(path).to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("could not list {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// A forbidden construct found by [`scan_source`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// 1-based line.
    pub line: usize,
    /// What was found, for example `std::fs` or `RandomState`.
    pub what: String,
}

/// `std` modules that do I/O, spawn, read the process environment or reach the OS.
const FORBIDDEN_STD_MODULES: &[&str] = &["fs", "net", "process", "thread", "env", "os"];
/// Names that mean a clock, OS-seeded hashing, the async runtime, a lock, a channel or
/// global state set at run time.
const FORBIDDEN_NAMES: &[&str] = &[
    "SystemTime",
    "Instant",
    "RandomState",
    "tokio",
    "Mutex",
    "RwLock",
    "Condvar",
    "Barrier",
    "OnceLock",
    "LazyLock",
    "mpsc",
    "thread_local",
];
/// Macros that write to the process's stdout or stderr.
const PRINTING_MACROS: &[&str] = &["print", "println", "eprint", "eprintln", "dbg"];
/// The process's standard streams (`std::io::stdin()` and its siblings).
const STANDARD_STREAMS: &[&str] = &["stdin", "stdout", "stderr"];
/// Constructors that exist only for std's maps with the OS-seeded `RandomState` hasher.
const RANDOM_STATE_CONSTRUCTORS: &[&str] = &["new", "with_capacity", "from"];

/// Scans Rust source for forbidden constructs, ignoring comments and literals.
pub fn scan_source(text: &str) -> Vec<Finding> {
    let tokens = tokenize(&blank_comments_and_literals(text));
    let mut findings = Vec::new();
    let mut found = |line: usize, what: String| findings.push(Finding { line, what });
    let std_maps: Vec<&str> = ["HashMap", "HashSet"]
        .into_iter()
        .filter(|name| imports_std_collection(&tokens, name))
        .collect();
    // `std::collections::HashMap<..>` written out in full.
    let after_collections =
        |k: usize| k >= 2 && tokens[k - 1].text == "::" && tokens[k - 2].text == "collections";
    for (k, token) in tokens.iter().enumerate() {
        let at = |offset: usize| tokens.get(k + offset).map(|t| t.text.as_str());
        match token.text.as_str() {
            "std" if at(1) == Some("::") => match at(2) {
                Some(module) if FORBIDDEN_STD_MODULES.contains(&module) => {
                    found(token.line, format!("std::{module}"));
                }
                Some("{") => {
                    for (line, module) in group_heads(&tokens[k + 2..]) {
                        if FORBIDDEN_STD_MODULES.contains(&module) {
                            found(line, format!("std::{{{module}}}"));
                        }
                    }
                }
                _ => {}
            },
            name if FORBIDDEN_NAMES.contains(&name) => found(token.line, name.to_string()),
            name if token.is_ident && name.starts_with("Atomic") => {
                found(token.line, format!("{name} (an atomic)"));
            }
            "atomic" if k >= 1 && tokens[k - 1].text == "::" => {
                found(token.line, "std::sync::atomic".to_string());
            }
            name if PRINTING_MACROS.contains(&name) && at(1) == Some("!") => {
                found(token.line, format!("{name}! (prints)"));
            }
            name if STANDARD_STREAMS.contains(&name)
                && ((at(1) == Some("(") && (k == 0 || tokens[k - 1].text != "."))
                    || (k >= 2 && tokens[k - 1].text == "::" && tokens[k - 2].text == "io")) =>
            {
                found(token.line, format!("{name} (a standard stream)"));
            }
            // `static` as an item; `'static`, the lifetime, is not one.
            "static" if k == 0 || tokens[k - 1].text != "'" => {
                found(token.line, "static item".to_string());
            }
            "async" => {
                let what = if at(1) == Some("fn") {
                    "async fn"
                } else {
                    "async block"
                };
                found(token.line, what.to_string());
            }
            "." if at(1) == Some("await") => found(token.line, ".await".to_string()),
            map @ ("HashMap" | "HashSet") => {
                if at(1) == Some("::") {
                    if let Some(ctor) = at(2).filter(|c| RANDOM_STATE_CONSTRUCTORS.contains(c)) {
                        found(
                            token.line,
                            format!("{map}::{ctor} (hashes with the OS-seeded RandomState)"),
                        );
                    }
                } else if at(1) == Some("<") && (std_maps.contains(&map) || after_collections(k)) {
                    let defaults_hasher = match map {
                        "HashMap" => generic_arity(&tokens[k + 1..]) == 2,
                        _ => generic_arity(&tokens[k + 1..]) == 1,
                    };
                    if defaults_hasher {
                        found(
                            token.line,
                            format!(
                                "std {map} without a hasher parameter (defaults to RandomState)"
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    findings
}

/// Whether a `use` declaration brings std's `name` (`HashMap` or `HashSet`) into scope under
/// its own name, so that a bare `HashMap<K, V>` means std's type with its default hasher
/// rather than a local alias.
fn imports_std_collection(tokens: &[Token], name: &str) -> bool {
    let mut in_use = false;
    let mut from_collections = false;
    for (k, token) in tokens.iter().enumerate() {
        match token.text.as_str() {
            "use" => {
                in_use = true;
                from_collections = false;
            }
            ";" => in_use = false,
            "collections" | "hash_map" | "hash_set" if in_use => from_collections = true,
            text if in_use
                && from_collections
                && text == name
                && tokens.get(k + 1).map(|t| t.text.as_str()) != Some("as") =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// The first identifier of each item of a `{ ... }` use group starting at `tokens[0]`, with
/// its line: for `{fs, io::{self, Read}, thread}` that is `fs`, `io`, `thread`.
fn group_heads(tokens: &[Token]) -> Vec<(usize, &str)> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item_start = false;
    for token in tokens {
        match token.text.as_str() {
            "{" => {
                depth += 1;
                item_start = depth == 1;
            }
            "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => item_start = true,
            text => {
                if item_start && depth == 1 && token.is_ident {
                    heads.push((token.line, text));
                }
                item_start = false;
            }
        }
    }
    heads
}

/// The number of top-level generic arguments of the `<...>` starting at `tokens[0]`.
fn generic_arity(tokens: &[Token]) -> usize {
    let mut angle = 0usize;
    let mut nested = 0usize;
    let mut commas = 0usize;
    let mut trailing_comma = false;
    for token in tokens {
        match token.text.as_str() {
            "<" => angle += 1,
            ">" => {
                angle = angle.saturating_sub(1);
                if angle == 0 {
                    return commas + 1 - usize::from(trailing_comma && commas > 0);
                }
            }
            "(" | "[" => nested += 1,
            ")" | "]" => nested = nested.saturating_sub(1),
            "," if angle == 1 && nested == 0 => {
                commas += 1;
                trailing_comma = true;
                continue;
            }
            _ => {}
        }
        trailing_comma = false;
    }
    0
}

/// The tokens of Rust source with comments and literals left out, each with its 1-based
/// line: identifiers, numbers, `::`, `->` and single punctuation.
pub fn code_tokens(text: &str) -> Vec<(usize, String)> {
    tokenize(&blank_comments_and_literals(text))
        .into_iter()
        .map(|token| (token.line, token.text))
        .collect()
}

#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
    is_ident: bool,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Splits blanked source into identifiers, numbers, `::`, `->` and single punctuation.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if is_ident_char(c) {
            let start = i;
            while chars.get(i).is_some_and(|&c| is_ident_char(c)) {
                i += 1;
            }
            tokens.push(Token {
                text: chars[start..i].iter().collect(),
                line,
                is_ident: !c.is_ascii_digit(),
            });
        } else {
            let pair: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let text = if pair == "::" || pair == "->" {
                pair
            } else {
                c.to_string()
            };
            i += text.chars().count();
            tokens.push(Token {
                text,
                line,
                is_ident: false,
            });
        }
    }
    tokens
}

/// Replaces comments (line, block, doc), string, byte-string, raw-string and char literals
/// with spaces, keeping newlines so line numbers still match.
fn blank_comments_and_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while let Some(&ch) = c.get(i) {
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while let Some(&ch) = c.get(i).filter(|&&ch| ch != '\n') {
                blank(&mut out, ch);
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0usize;
            while let Some(&ch) = c.get(i) {
                let next = c.get(i + 1).copied();
                if ch == '/' && next == Some('*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if ch == '*' && next == Some('/') {
                    depth = depth.saturating_sub(1);
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, ch);
                    i += 1;
                }
            }
        } else if is_ident_char(ch) && (i == 0 || !c.get(i - 1).is_some_and(|&p| is_ident_char(p)))
        {
            let start = i;
            while c.get(i).is_some_and(|&ch| is_ident_char(ch)) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            let raw = matches!(word.as_str(), "r" | "br" | "cr") && c.get(i + hashes) == Some(&'"');
            if raw {
                // r#"..."#: the literal ends at a quote followed by the same number of hashes.
                for _ in 0..word.len() + hashes + 1 {
                    out.push(' ');
                }
                i += hashes + 1;
                while let Some(&ch) = c.get(i) {
                    let closes = ch == '"'
                        && c[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&h| h == '#')
                            .count()
                            == hashes;
                    if closes {
                        for _ in 0..hashes + 1 {
                            out.push(' ');
                        }
                        i += hashes + 1;
                        break;
                    }
                    blank(&mut out, ch);
                    i += 1;
                }
            } else if matches!(word.as_str(), "b" | "c") && matches!(c.get(i), Some('"' | '\'')) {
                // A byte or C string or a byte char: the prefix goes, the literal follows.
                out.push(' ');
            } else {
                out.push_str(&word);
            }
        } else if ch == '"' {
            out.push(' ');
            i += 1;
            while let Some(&ch) = c.get(i) {
                if ch == '\\' {
                    blank(&mut out, ch);
                    if let Some(&escaped) = c.get(i + 1) {
                        blank(&mut out, escaped);
                    }
                    i += 2;
                    continue;
                }
                blank(&mut out, ch);
                i += 1;
                if ch == '"' {
                    break;
                }
            }
        } else if ch == '\'' && (next == Some('\\') || c.get(i + 2) == Some(&'\'')) {
            // A char literal; a lone quote is a lifetime or a label and stays.
            out.push(' ');
            i += 1;
            if next == Some('\\') {
                out.push_str("  ");
                i += 2;
            }
            while let Some(&ch) = c.get(i) {
                blank(&mut out, ch);
                i += 1;
                if ch == '\'' {
                    break;
                }
            }
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}
