//! The slice of `cargo metadata --format-version 1` the checks read: packages, their library
//! targets, and the resolved dependency graph with the kind of every edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// A workspace as `cargo metadata` describes it, resolved with every feature of every member on.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    /// Every package in the resolve, workspace members and dependencies alike.
    pub packages: Vec<Package>,
    /// The resolved graph.
    pub resolve: Resolve,
    /// The ids of the workspace members.
    pub workspace_members: Vec<String>,
}

/// One package.
#[derive(Debug, Deserialize)]
pub struct Package {
    /// The opaque package id the resolve refers to.
    pub id: String,
    /// The package name, as in `Cargo.toml`.
    pub name: String,
    /// The build targets (lib, bins, tests, benches).
    #[serde(default)]
    pub targets: Vec<Target>,
    /// The dependencies as declared in `Cargo.toml`.
    #[serde(default)]
    pub dependencies: Vec<DeclaredDependency>,
    /// The features and what each enables (`dep:name`, `name/feature`, other features).
    #[serde(default)]
    pub features: BTreeMap<String, Vec<String>>,
}

/// One dependency as a package declares it.
#[derive(Debug, Deserialize)]
pub struct DeclaredDependency {
    /// The depended-on package's name.
    pub name: String,
    /// `None` for a normal dependency, otherwise `"dev"` or `"build"`.
    pub kind: Option<String>,
    /// Whether only a feature brings it in.
    #[serde(default)]
    pub optional: bool,
    /// The name it is known by in the depending package (`package = …` renames), which its
    /// features use.
    #[serde(default)]
    pub rename: Option<String>,
    /// The features the depending package asks of it.
    #[serde(default)]
    pub features: Vec<String>,
}

/// One build target of a package.
#[derive(Debug, Deserialize)]
pub struct Target {
    /// The target's name (a bench's, as `cargo bench --bench NAME` takes it).
    #[serde(default)]
    pub name: String,
    /// `lib`, `bin`, `test`, `proc-macro`, ...
    pub kind: Vec<String>,
    /// The target's root source file.
    pub src_path: PathBuf,
}

/// The resolved dependency graph.
#[derive(Debug, Deserialize)]
pub struct Resolve {
    /// One node per package.
    pub nodes: Vec<Node>,
}

/// One package's resolved dependencies.
#[derive(Debug, Deserialize)]
pub struct Node {
    /// The package id.
    pub id: String,
    /// The edges out of this package.
    pub deps: Vec<NodeDep>,
    /// The features resolved on.
    #[serde(default)]
    pub features: Vec<String>,
}

/// One edge of the graph; a dependency can be normal, dev and build at once.
#[derive(Debug, Deserialize)]
pub struct NodeDep {
    /// The id of the package depended on.
    pub pkg: String,
    /// Each way this edge is declared.
    pub dep_kinds: Vec<DepKind>,
}

/// One declaration of an edge.
#[derive(Debug, Deserialize)]
pub struct DepKind {
    /// `None` for a normal dependency, otherwise `"dev"` or `"build"`.
    pub kind: Option<String>,
}

impl Metadata {
    /// Runs `cargo metadata --all-features` on the workspace at `root`.
    pub fn load(root: &Path) -> Result<Self> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let manifest = root.join("Cargo.toml");
        let output = Command::new(&cargo)
            .args(["metadata", "--format-version", "1", "--all-features"])
            .arg("--manifest-path")
            .arg(&manifest)
            .output()
            .with_context(|| format!("could not run `{cargo} metadata`"))?;
        if !output.status.success() {
            bail!(
                "`cargo metadata` failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Self::parse(&output.stdout)
    }

    /// Parses the JSON `cargo metadata --format-version 1` prints.
    pub fn parse(json: &[u8]) -> Result<Self> {
        serde_json::from_slice(json).context("`cargo metadata` printed JSON of an unexpected shape")
    }

    /// The workspace member called `name`.
    pub fn member(&self, name: &str) -> Option<&Package> {
        self.packages
            .iter()
            .find(|p| p.name == name && self.workspace_members.contains(&p.id))
    }
}

/// Every package `package` links through normal edges, resolved as `cargo build -p package
/// --all-features` would: per package, so a feature another workspace member turns on in a
/// shared dependency does not count against it (cargo unifies features only across the
/// packages one build selects), and edges for every target platform followed. Dev and build
/// edges are left out (tests may do I/O; a build script runs on the build machine).
pub fn linked_packages(root: &Path, package: &str) -> Result<BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(&cargo)
        .args(["tree", "-p", package, "--all-features", "-e", "normal"])
        .args(["--target", "all", "--prefix", "none", "-f", "{p}"])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .output()
        .with_context(|| format!("could not run `{cargo} tree`"))?;
    if !output.status.success() {
        bail!(
            "`cargo tree -p {package}` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(parse_tree(&String::from_utf8_lossy(&output.stdout)))
}

/// The package names in `cargo tree --prefix none -f {p}` output, the root (its first line)
/// left out: each line is `name vX.Y.Z [(path)] [(proc-macro)] [(*)]`.
pub fn parse_tree(text: &str) -> BTreeSet<String> {
    text.lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The workspace root: the parent of the `xtask` package.
pub fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}
