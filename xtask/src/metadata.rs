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

    /// The names of every package reachable from `root_id` through normal edges only.
    ///
    /// Dev edges are left out at every step (tests may do I/O), and so are build edges: a
    /// build script runs on the build machine, not in the library. Edges for every target
    /// platform are followed, so the answer holds on all of them.
    pub fn normal_closure(&self, root_id: &str) -> BTreeSet<String> {
        let nodes: BTreeMap<&str, &Node> = self
            .resolve
            .nodes
            .iter()
            .map(|n| (n.id.as_str(), n))
            .collect();
        let names: BTreeMap<&str, &str> = self
            .packages
            .iter()
            .map(|p| (p.id.as_str(), p.name.as_str()))
            .collect();
        let packages: BTreeMap<&str, &Package> =
            self.packages.iter().map(|p| (p.id.as_str(), p)).collect();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut stack = vec![root_id];
        while let Some(id) = stack.pop() {
            let Some(node) = nodes.get(id) else { continue };
            for dep in &node.deps {
                let name = names.get(dep.pkg.as_str()).copied().unwrap_or(&dep.pkg);
                if let Some(package) = packages.get(id) {
                    if !optional_dependency_enabled(package, &node.features, name) {
                        continue;
                    }
                }
                let normal = dep.dep_kinds.iter().any(|k| k.kind.is_none());
                if normal && seen.insert(dep.pkg.as_str()) {
                    stack.push(dep.pkg.as_str());
                }
            }
        }
        seen.iter()
            .map(|id| names.get(id).copied().unwrap_or(id).to_string())
            .collect()
    }
}

/// Whether `package`, with `features` on, links its normal dependency `name`: always when it
/// is not optional, else when an enabled feature turns it on (`dep:name`, `name/feature`, or the
/// implicit feature `name`). A weak `name?/feature` does not: it only adds a feature to the
/// dependency should something else turn it on. `cargo metadata` lists such a dependency in
/// the resolve all the same (ratatui's `std` names `palette?/std`), so the graph is pruned here.
pub fn optional_dependency_enabled(package: &Package, features: &[String], name: &str) -> bool {
    let declared: Vec<&DeclaredDependency> = package
        .dependencies
        .iter()
        .filter(|d| d.name == name && d.kind.is_none())
        .collect();
    if declared.is_empty() || declared.iter().any(|d| !d.optional) {
        return true;
    }
    declared.iter().any(|d| {
        let key = d.rename.as_deref().unwrap_or(&d.name);
        features.iter().any(|feature| {
            feature == key
                || package.features.get(feature).is_some_and(|enables| {
                    enables.iter().any(|item| {
                        item.strip_prefix("dep:") == Some(key)
                            || item
                                .split_once('/')
                                .is_some_and(|(dependency, _)| dependency == key)
                    })
                })
        })
    })
}

/// The workspace root: the parent of the `xtask` package.
pub fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}
