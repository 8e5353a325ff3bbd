//! Repository hygiene checks in the style of rust-analyzer's "tidy" tests: every rule number
//! the code cites resolves in `docs/RULES.md`, every library crate opens with a `//!` doc
//! in the workspace's shape, `unsafe` appears in one audited function only, the crate
//! graph is the one `docs/ARCHITECTURE.md`'s "Layering" table lists, no source file grows past
//! [`MAX_FILE_LINES`] outside the shrinking [`LONG_FILES`], every repository path the docs name
//! in backticks exists ([`doc_paths`] states the rule), and every test the docs cite as
//! `file.rs::name` is declared there.

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

/// The most lines a source file may have, unless [`LONG_FILES`] lists it.
pub const MAX_FILE_LINES: usize = 1_000;

/// The source files allowed past [`MAX_FILE_LINES`], each with its line count when it was
/// listed as its ceiling. The list may only shrink: a listed file that grows past its ceiling
/// fails, and so does one that got shorter (lower its ceiling to the new count, so that what
/// was cut cannot come back) or that is no longer over the limit (remove it). Splitting these
/// is issue 42's work.
pub const LONG_FILES: &[(&str, usize)] = &[
    ("crates/cli/tests/cli/daemon.rs", 1_097),
    ("crates/pane-state/src/reducer.rs", 1_624),
    ("crates/pane-state/tests/rules/phases.rs", 1_190),
    ("crates/supervisor/src/registry/tests.rs", 1_208),
    ("crates/window/src/conversation.rs", 1_214),
    ("xtask/src/e2e.rs", 1_520),
];

/// The line count of every `.rs` file under `dirs` of `root`, by its path from `root` with
/// `/` separators.
pub fn rust_file_lines(root: &Path, dirs: &[&str]) -> Result<BTreeMap<String, usize>> {
    let mut files = Vec::new();
    for dir in dirs {
        text_files(&root.join(dir), &mut files)?;
    }
    let mut lines = BTreeMap::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("could not read {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(file);
        lines.insert(slashed(shown), text.lines().count());
    }
    Ok(lines)
}

fn slashed(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// What is wrong with the files' lengths against `allowed` (path, ceiling) and `limit`, one
/// sentence each: a file over the limit that is not listed, a listed file over its ceiling, a
/// listed file shorter than its ceiling, a listed file no longer over the limit or gone.
pub fn long_file_problems(
    lines: &BTreeMap<String, usize>,
    allowed: &[(&str, usize)],
    limit: usize,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (file, &count) in lines.iter().filter(|(_, &count)| count > limit) {
        if !allowed.iter().any(|(listed, _)| listed == file) {
            problems.push(format!(
                "{file} has {count} lines, over {limit}: split it (the allow-list only shrinks)"
            ));
        }
    }
    for &(file, ceiling) in allowed {
        match lines.get(file) {
            None => problems.push(format!(
                "{file} is listed but gone: remove it from the list"
            )),
            Some(&count) if count <= limit => problems.push(format!(
                "{file} is down to {count} lines, within {limit}: remove it from the list"
            )),
            Some(&count) if count > ceiling => problems.push(format!(
                "{file} grew to {count} lines, past its ceiling of {ceiling}: split it"
            )),
            Some(&count) if count < ceiling => problems.push(format!(
                "{file} shrank to {count} lines: lower its ceiling from {ceiling} to {count}"
            )),
            Some(_) => {}
        }
    }
    problems
}

/// The repository paths the inline code spans of a Markdown text name, with their line
/// numbers. The rule, precisely:
///
/// - Only inline code spans count (text between single backticks on one line); fenced code
///   blocks (between lines that start with three backticks) and link targets are not read.
/// - A span names a repository path when it has no whitespace and its first component, before
///   the first `/`, is one of `roots` (the directories at the repository's root).
/// - Cut before checking: a `::item` suffix (a Rust item in the file, as in
///   `crates/x/src/lib.rs::name`), a `#anchor`, and a `:LINE` or `:LINE:COL` suffix.
/// - A span holding any of `* ? < > { } [ ] $ | …` is a pattern or a placeholder, not a path,
///   and is left out.
pub fn doc_paths(markdown: &str, roots: &BTreeSet<String>) -> Vec<(usize, String)> {
    let mut paths = Vec::new();
    let mut fenced = false;
    for (index, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            if span.is_empty() || span.contains(char::is_whitespace) {
                continue;
            }
            if span.contains(['*', '?', '<', '>', '{', '}', '[', ']', '$', '|', '…']) {
                continue;
            }
            let Some((first, _)) = span.split_once('/') else {
                continue;
            };
            if !roots.contains(first) {
                continue;
            }
            let path = span.split("::").next().unwrap_or(span);
            let path = path.split('#').next().unwrap_or(path);
            let mut path = path;
            while let Some((before, after)) = path.rsplit_once(':') {
                if after.is_empty() || !after.chars().all(|c| c.is_ascii_digit()) {
                    break;
                }
                path = before;
            }
            paths.push((index + 1, path.to_string()));
        }
    }
    paths
}

/// The directories at the repository's root that a doc path may start with: all but hidden
/// version-control state and build output (`.git`, `target`).
pub fn root_dirs(root: &Path) -> Result<BTreeSet<String>> {
    let mut dirs = BTreeSet::new();
    for entry in
        std::fs::read_dir(root).with_context(|| format!("could not list {}", root.display()))?
    {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && name != ".git" && name != "target" {
            dirs.insert(name);
        }
    }
    Ok(dirs)
}

/// Every repository path the Markdown `docs` (relative to `root`) name in backticks that does
/// not exist, as `doc:line: path`.
pub fn missing_doc_paths(root: &Path, docs: &[PathBuf]) -> Result<Vec<String>> {
    let roots = root_dirs(root)?;
    let mut missing = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(root.join(doc))
            .with_context(|| format!("could not read {}", doc.display()))?;
        for (line, path) in doc_paths(&text, &roots) {
            if !root.join(&path).exists() {
                missing.push(format!("{}:{line}: {path}", doc.display()));
            }
        }
    }
    Ok(missing)
}

/// The tests a Markdown text cites: inline code spans of the form `path/to/file.rs::name`.
pub fn cited_tests(markdown: &str) -> Vec<(String, String)> {
    markdown
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| span.split_once(".rs::"))
        .filter(|(path, name)| {
            !path.contains(char::is_whitespace)
                && !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .map(|(path, name)| (format!("{path}.rs"), name.to_string()))
        .collect()
}

/// Whether Rust `source` declares a function `name` (`fn name(` or `fn name<`), as a test is
/// declared, in a `proptest!` block too.
pub fn declares_fn(source: &str, name: &str) -> bool {
    let needle = format!("fn {name}");
    source.match_indices(&needle).any(|(at, _)| {
        let before = source[..at].chars().next_back();
        let after = source[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && matches!(after, Some('(' | '<'))
    })
}

/// Each test `markdown` cites whose file is missing or does not declare it, as a sentence.
pub fn missing_cited_tests(root: &Path, markdown: &str) -> Vec<String> {
    cited_tests(markdown)
        .into_iter()
        .filter_map(
            |(path, name)| match std::fs::read_to_string(root.join(&path)) {
                Err(_) => Some(format!("{path}::{name}: no such file")),
                Ok(source) if !declares_fn(&source, &name) => {
                    Some(format!("{path}::{name}: the file declares no `fn {name}`"))
                }
                Ok(_) => None,
            },
        )
        .collect()
}

/// The `### ` sections of a Markdown text that cite no test (`file.rs::name`).
pub fn sections_citing_no_test(markdown: &str) -> Vec<String> {
    markdown
        .split("\n### ")
        .skip(1)
        .map(|section| section.split("\n## ").next().unwrap_or(section))
        .filter(|section| cited_tests(section).is_empty())
        .map(|section| section.lines().next().unwrap_or_default().to_string())
        .collect()
}

/// The workspace's library crates that depend on `anyhow` through a normal edge, but for
/// `exempt` (xtask, whose library is the binary's checks).
pub fn libraries_on_anyhow(metadata: &Metadata, exempt: &[&str]) -> Vec<String> {
    let (libs, _) = workspace_libs(metadata);
    metadata
        .packages
        .iter()
        .filter(|package| libs.iter().any(|(name, _)| *name == package.name))
        .filter(|package| !exempt.contains(&package.name.as_str()))
        .filter(|package| {
            package
                .dependencies
                .iter()
                .any(|dep| dep.kind.is_none() && dep.name == "anyhow")
        })
        .map(|package| package.name.clone())
        .collect()
}
