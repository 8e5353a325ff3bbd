//! Repository hygiene checks in the style of rust-analyzer's "tidy" tests: every rule number
//! the code cites resolves in `docs/RULES.md`, every library crate opens with a `//!` doc
//! in the workspace's shape, `unsafe` appears in one audited function only, and the crate
//! graph is the one `docs/ARCHITECTURE.md`'s "Layering" table lists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::metadata::Metadata;

/// The headings every crate doc carries, in this order, each followed by some prose.
pub const CRATE_DOC_SECTIONS: &[&str] = &[
    "## Invariants",
    "## API boundary",
    "## Where to start reading",
];

/// The rule numbers cited in `text`: `R12`, `W6`, and every number of a range `R63–R66`
/// (en dash or hyphen).
pub fn cited_rules(text: &str) -> BTreeSet<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut rules = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let Some((rule, end)) = rule_at(&chars, i) else {
            i += 1;
            continue;
        };
        i = end;
        // A range: the same letter on both sides of a dash, no suffix letters.
        let range_end = match chars.get(end) {
            Some('–' | '-') => rule_at(&chars, end + 1),
            _ => None,
        };
        if let Some((last, after)) = range_end {
            if let (Some(from), Some(to)) = (plain_number(&rule), plain_number(&last)) {
                if rule.starts_with(&last[..1]) && from < to && to - from <= 100 {
                    let letter = &rule[..1];
                    rules.extend((from..=to).map(|n| format!("{letter}{n}")));
                    i = after;
                    continue;
                }
            }
        }
        rules.insert(rule);
    }
    rules
}

/// A rule number starting at `chars[i]` on a word boundary, and the index after it.
fn rule_at(chars: &[char], i: usize) -> Option<(String, usize)> {
    let word = |c: &char| c.is_alphanumeric() || *c == '_';
    let letter = *chars.get(i)?;
    if !matches!(letter, 'R' | 'W') || (i > 0 && chars.get(i - 1).is_some_and(word)) {
        return None;
    }
    let mut end = i + 1;
    while chars.get(end).is_some_and(char::is_ascii_digit) {
        end += 1;
    }
    if end == i + 1 {
        return None;
    }
    if chars.get(end).is_some_and(char::is_ascii_lowercase) {
        end += 1;
    }
    if chars.get(end).is_some_and(word) {
        return None;
    }
    Some((chars[i..end].iter().collect(), end))
}

fn plain_number(rule: &str) -> Option<u32> {
    rule[1..].parse().ok()
}

/// The rule numbers `docs/RULES.md` gives a line to: lines of the form `- **R12** ...`.
pub fn documented_rules(rules_md: &str) -> BTreeSet<String> {
    rules_md
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- **"))
        .filter_map(|rest| rest.split_once("**").map(|(rule, _)| rule.to_string()))
        .collect()
}

/// Every rule number cited in the files under `dirs` (relative to `root`), with one file
/// that cites it; `skip` files are left out.
pub fn cited_rules_in(
    root: &Path,
    dirs: &[&str],
    skip: &[PathBuf],
) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    for dir in dirs {
        text_files(&root.join(dir), &mut files)?;
    }
    files.sort();
    let mut cited: Vec<(String, PathBuf)> = Vec::new();
    let mut seen = BTreeSet::new();
    for file in files.into_iter().filter(|f| !skip.contains(f)) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // not text
        };
        for rule in cited_rules(&text) {
            if seen.insert(rule.clone()) {
                let shown = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
                cited.push((rule, shown));
            }
        }
    }
    Ok(cited)
}

fn text_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("could not list {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            text_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// What is wrong with a crate's opening `//!` doc, if anything: it must open the file, start
/// with `# <package name>` and a line saying what the crate is, and then carry each of
/// [`CRATE_DOC_SECTIONS`] in order, each with prose under it.
pub fn crate_doc_problems(package: &str, lib_rs: &str) -> Vec<String> {
    let doc: Vec<&str> = lib_rs
        .lines()
        .take_while(|line| line.starts_with("//!"))
        .map(|line| line.trim_start_matches("//!").trim())
        .collect();
    if doc.is_empty() {
        return vec!["does not open with a `//!` doc".to_string()];
    }
    let mut problems = Vec::new();
    let title = format!("# {package}");
    if doc.first() != Some(&title.as_str()) {
        problems.push(format!("first doc line is not `{title}`"));
    }
    let says_what = doc
        .iter()
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .any(|line| !line.is_empty());
    if !says_what {
        problems.push("no prose under the title saying what the crate is".to_string());
    }
    let mut from = 0;
    for section in CRATE_DOC_SECTIONS {
        let Some(at) = doc[from..].iter().position(|line| line == section) else {
            problems.push(format!("no `{section}` heading (after the ones before it)"));
            continue;
        };
        let at = from + at;
        let has_prose = doc[at + 1..]
            .iter()
            .take_while(|line| !line.starts_with('#'))
            .any(|line| !line.is_empty());
        if !has_prose {
            problems.push(format!("`{section}` has nothing under it"));
        }
        from = at + 1;
    }
    problems
}

/// The library crates of the workspace (package name and `lib.rs` path), and the members
/// that have no library target.
pub fn workspace_libs(metadata: &Metadata) -> (Vec<(String, PathBuf)>, Vec<String>) {
    let mut libs = Vec::new();
    let mut without = Vec::new();
    for package in &metadata.packages {
        if !metadata.workspace_members.contains(&package.id) {
            continue;
        }
        let lib = package
            .targets
            .iter()
            .find(|t| t.kind.iter().any(|k| k == "lib" || k == "proc-macro"));
        match lib {
            Some(target) => libs.push((package.name.clone(), target.src_path.clone())),
            None => without.push(package.name.clone()),
        }
    }
    libs.sort();
    without.sort();
    (libs, without)
}

/// The one function allowed `unsafe`: its file (from the workspace root) and its name. It sets
/// the parent-death signal between fork and exec, which `pre_exec` makes `unsafe`.
pub const AUDITED_UNSAFE_FN: (&str, &str) = ("crates/host/src/process.rs", "die_with_parent");

/// The lint levels that would let `unsafe` through where the workspace denies it.
const LENIENT_LEVELS: &[&str] = &["allow", "expect", "warn"];

/// Every `unsafe` and every lenient `unsafe_code` lint attribute (`allow`, `expect`, `warn`) in
/// `text`, comments and literals ignored, as (line, what), except those of the function named
/// `audited`: one lenient attribute among the tokens just before its `fn`, and `unsafe` in its
/// body.
pub fn unaudited_unsafe(text: &str, audited: Option<&str>) -> Vec<(usize, String)> {
    let tokens = crate::purity::code_tokens(text);
    let word = |k: usize| tokens.get(k).map(|(_, text)| text.as_str());
    // The audited function: its `fn` token and the end of its body.
    let span = audited.and_then(|name| {
        let start =
            (0..tokens.len()).find(|&k| word(k) == Some("fn") && word(k + 1) == Some(name))?;
        let open = (start..tokens.len()).find(|&k| word(k) == Some("{"))?;
        let mut depth = 0usize;
        let end = (open..tokens.len()).find(|&k| {
            match word(k) {
                Some("{") => depth += 1,
                Some("}") => depth = depth.saturating_sub(1),
                _ => {}
            }
            depth == 0
        })?;
        Some((start, end))
    });
    let mut audited_attributes = 0usize;
    let mut findings = Vec::new();
    for (k, (line, text)) in tokens.iter().enumerate() {
        match text.as_str() {
            "unsafe" if !span.is_some_and(|(start, end)| k > start && k < end) => {
                findings.push((*line, "unsafe".to_string()));
            }
            "unsafe_code" => {
                // The level is the word before the `(` that holds the lint.
                let open = (0..k).rev().find(|&j| word(j) == Some("("));
                let level = open.and_then(|j| j.checked_sub(1)).and_then(word);
                let Some(level) = level.filter(|level| LENIENT_LEVELS.contains(level)) else {
                    continue;
                };
                let before_fn = span.is_some_and(|(start, _)| k < start && start - k <= 8);
                if before_fn && audited_attributes == 0 {
                    audited_attributes += 1;
                } else {
                    findings.push((*line, format!("{level}(unsafe_code)")));
                }
            }
            _ => {}
        }
    }
    findings
}

/// Every `unsafe` or lenient `unsafe_code` attribute in the workspace's Rust files (under
/// `dirs` of `root`) outside [`AUDITED_UNSAFE_FN`], as `path:line: what`.
pub fn unsafe_outside_the_audited_function(root: &Path, dirs: &[&str]) -> Result<Vec<String>> {
    let mut files = Vec::new();
    for dir in dirs {
        text_files(&root.join(dir), &mut files)?;
    }
    files.retain(|file| file.extension().is_some_and(|ext| ext == "rs"));
    files.sort();
    let (audited_file, audited_fn) = AUDITED_UNSAFE_FN;
    let mut findings = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("could not read {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
        let audited = (shown == Path::new(audited_file)).then_some(audited_fn);
        for (line, what) in unaudited_unsafe(&text, audited) {
            findings.push(format!("{}:{line}: {what}", shown.display()));
        }
    }
    Ok(findings)
}

/// The crate graph as `docs/ARCHITECTURE.md`'s "Layering" table lists it: each crate and the
/// workspace crates it may depend on. Rows are `| \`crate\` | \`dep\`, \`dep\` |`; `—` is none.
pub fn documented_layering(architecture_md: &str) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let section = architecture_md
        .split("\n## ")
        .find(|part| part.starts_with("Layering"))
        .context("docs/ARCHITECTURE.md has no \"## Layering\" section")?;
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split(',')
            .map(|name| name.trim().trim_matches('`').to_owned())
            .filter(|name| !name.is_empty() && name != "—")
            .collect()
    };
    let mut layering = BTreeMap::new();
    for row in section.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
        let [krate, deps] = cells.as_slice() else {
            bail!("a Layering row is not `| crate | deps |`: {row}");
        };
        let krate = krate.trim().trim_matches('`').to_owned();
        if layering.insert(krate.clone(), names(deps)).is_some() {
            bail!("the Layering table lists {krate} twice");
        }
    }
    Ok(layering)
}

/// Every workspace member and the workspace members it depends on through normal edges.
pub fn workspace_edges(metadata: &Metadata) -> BTreeMap<String, BTreeSet<String>> {
    let members: BTreeSet<&str> = metadata
        .packages
        .iter()
        .filter(|package| metadata.workspace_members.contains(&package.id))
        .map(|package| package.name.as_str())
        .collect();
    metadata
        .packages
        .iter()
        .filter(|package| members.contains(package.name.as_str()))
        .map(|package| {
            let deps = package
                .dependencies
                .iter()
                .filter(|dep| dep.kind.is_none() && members.contains(dep.name.as_str()))
                .map(|dep| dep.name.clone())
                .collect();
            (package.name.clone(), deps)
        })
        .collect()
}

/// How the crate graph differs from the documented layering, one sentence per difference.
pub fn layering_differences(
    documented: &BTreeMap<String, BTreeSet<String>>,
    actual: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut differences = Vec::new();
    for (krate, deps) in actual {
        let Some(allowed) = documented.get(krate) else {
            differences.push(format!("{krate} is not in the Layering table"));
            continue;
        };
        for dep in deps.difference(allowed) {
            differences.push(format!(
                "{krate} depends on {dep}, an edge the layering does not list"
            ));
        }
        for dep in allowed.difference(deps) {
            differences.push(format!(
                "the layering lists {krate} -> {dep}, which is gone"
            ));
        }
    }
    for krate in documented
        .keys()
        .filter(|krate| !actual.contains_key(*krate))
    {
        differences.push(format!(
            "the Layering table lists {krate}, which is not a member"
        ));
    }
    differences
}
