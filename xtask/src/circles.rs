//! Circles between a crate's modules, read from its sources' paths.
//!
//! A module depends on a sibling when any of its files names a path into that sibling
//! (`use crate::engine::Outlet`, `super::backend::Spawn`, `use crate::{a, b::c}`, or a bare
//! `engine::Outlet` where `engine` is a child of the module the file is in). Siblings are
//! modules with the same parent, at every depth: `session::engine` and `session::backend`
//! are siblings under `session`; `session` and `supervisor` under the crate root. A parent
//! naming its own children, or a child naming its parent's items, is not an edge (that is
//! how modules nest). `tests` modules are left out: a test may reach anywhere.
//!
//! A circle is a strongly connected set of two or more siblings: none of them can be read,
//! moved to another crate or tested without the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};

use crate::purity::code_tokens;

/// A module's path below its crate root (`[]` is the root).
pub type ModulePath = Vec<String>;

/// One circle: its scope (the parent module, `::`-joined, empty at the root) and its members.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Circle {
    /// The modules' common parent.
    pub scope: String,
    /// The siblings in the circle, sorted.
    pub members: Vec<String>,
}

impl std::fmt::Display for Circle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scope = if self.scope.is_empty() {
            "crate"
        } else {
            &self.scope
        };
        write!(f, "{scope}: {}", self.members.join(" ↔ "))
    }
}

/// The module a source file at `relative` (below `src/`) defines.
pub fn file_module(relative: &Path) -> ModulePath {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
        let names_its_folder =
            stem == "mod" || parts.is_empty() && matches!(stem.as_str(), "lib" | "main");
        if !names_its_folder {
            parts.push(stem);
        }
    }
    parts
}

/// Every path a file names that starts at a module: each as the segments after resolving
/// `crate`, `super` and `self` against `module`, and a leading child of `module` (or of the
/// crate root, for a `use` in edition 2018 form) taken as relative.
pub fn named_paths(
    text: &str,
    module: &[String],
    modules: &BTreeSet<ModulePath>,
) -> Vec<ModulePath> {
    let tokens: Vec<String> = code_tokens(text).into_iter().map(|(_, t)| t).collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts_path = i == 0 || tokens[i - 1] != "::";
        if starts_path && is_ident(&tokens[i]) {
            if tokens[i] == "use" {
                let (paths, next) = use_tree(&tokens, i + 1, Vec::new());
                for path in paths {
                    if let Some(resolved) = resolve(&path, module, modules) {
                        if !found.contains(&resolved) {
                            found.push(resolved);
                        }
                    }
                }
                i = next.max(i + 1);
                continue;
            }
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while j + 1 < tokens.len() && tokens[j] == "::" && is_ident(&tokens[j + 1]) {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            if path.len() > 1 || matches!(path[0].as_str(), "crate" | "super" | "self") {
                if let Some(resolved) = resolve(&path, module, modules) {
                    if !found.contains(&resolved) {
                        found.push(resolved);
                    }
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
    found
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The paths of the `use` tree starting at `tokens[start]`, each prefixed by `prefix`; and the
/// index after the tree.
fn use_tree(tokens: &[String], start: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    let mut i = start;
    while let Some(token) = tokens.get(i) {
        if token == "::" {
            i += 1;
        } else if token == "{" {
            let mut paths = Vec::new();
            i += 1;
            loop {
                match tokens.get(i).map(String::as_str) {
                    None => return (paths, i),
                    Some("}") => return (paths, i + 1),
                    Some(",") => i += 1,
                    Some(_) => {
                        let (inner, next) = use_tree(tokens, i, path.clone());
                        paths.extend(inner);
                        i = next.max(i + 1);
                    }
                }
            }
        } else if is_ident(token) && token != "as" {
            path.push(token.clone());
            i += 1;
            if tokens.get(i).map(String::as_str) == Some("as") {
                i += 2;
            }
        } else {
            // `;`, `,`, `}` or `*` ends this branch.
            if token == "*" {
                i += 1;
            }
            return (vec![path], i);
        }
    }
    (vec![path], i)
}

/// The module `path` (as written in a file of `module`) lands in: the longest known module
/// its resolved segments start with. `None` for a path outside the crate.
fn resolve(
    path: &[String],
    module: &[String],
    modules: &BTreeSet<ModulePath>,
) -> Option<ModulePath> {
    let mut base: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("self") => {
            base = module.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            base = module.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = module.to_vec();
            child.push(first.to_owned());
            if modules.contains(&child) {
                base = module.to_vec();
            } else {
                return None;
            }
        }
        None => return None,
    }
    let mut landed = base.clone();
    for segment in rest {
        let mut next = landed.clone();
        next.push(segment.clone());
        if modules.contains(&next) {
            landed = next;
        } else {
            break;
        }
    }
    Some(landed)
}

/// The sibling edges: for each scope (a parent module), which child depends on which.
pub fn sibling_edges(
    references: &[(ModulePath, ModulePath)],
) -> BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> {
    let mut edges: BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, to) in references {
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        if let (Some(a), Some(b)) = (from.get(common), to.get(common)) {
            edges
                .entry(from[..common].to_vec())
                .or_default()
                .entry(a.clone())
                .or_default()
                .insert(b.clone());
        }
    }
    edges
}

/// The circles among the siblings of each scope (Tarjan's strongly connected components of
/// two or more).
pub fn circles(edges: &BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>>) -> Vec<Circle> {
    let mut found = Vec::new();
    for (scope, graph) in edges {
        for component in strongly_connected(graph) {
            if component.len() > 1 {
                found.push(Circle {
                    scope: scope.join("::"),
                    members: component,
                });
            }
        }
    }
    found.sort();
    found
}

fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                component.sort();
                self.components.push(component);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.components
}

/// The circles inside the crate whose sources are under `src`.
pub fn crate_circles(src: &Path) -> Result<Vec<Circle>> {
    let mut files = Vec::new();
    collect(src, src, &mut files)?;
    let modules: BTreeSet<ModulePath> = files.iter().map(|(module, _)| module.clone()).collect();
    let mut references = Vec::new();
    for (module, text) in &files {
        if module
            .iter()
            .any(|part| part == "tests" || part.ends_with("_tests"))
        {
            continue;
        }
        for target in named_paths(text, module, &modules) {
            if !target.iter().any(|part| part == "tests") {
                references.push((module.clone(), target));
            }
        }
    }
    Ok(circles(&sibling_edges(&references)))
}

fn collect(src: &Path, dir: &Path, files: &mut Vec<(ModulePath, String)>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(src, &path, files)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src).unwrap_or(&path);
            if relative.starts_with("bin") {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            files.push((file_module(relative), text));
        }
    }
    Ok(())
}

/// The circles that exist today, by crate folder, as [`Circle`]'s `Display` prints them. This
/// list may only shrink: a circle not on it fails the tidy test, and so does one listed that
/// is gone (strike it).
pub const KNOWN_CIRCLES: &[(&str, &str)] = &[];

/// Every circle in the crates under `root/crates` and `root/xtask`, as `(crate folder,
/// circle)`.
pub fn workspace_circles(root: &Path) -> Result<BTreeSet<(String, String)>> {
    let mut dirs: Vec<_> = std::fs::read_dir(root.join("crates"))
        .with_context(|| format!("reading {}", root.join("crates").display()))?
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .map(|entry| format!("crates/{}", entry.file_name().to_string_lossy()))
        .collect();
    dirs.push("xtask".to_owned());
    let mut found = BTreeSet::new();
    for dir in dirs {
        let src = root.join(&dir).join("src");
        if !src.is_dir() {
            continue;
        }
        for circle in crate_circles(&src)? {
            found.insert((dir.clone(), circle.to_string()));
        }
    }
    Ok(found)
}
