//! `panewise run --provider mock|anthropic|openai|gemini`: panewise's own agent loop
//! ([`panewise_host::agent_loop`]) instead of a supervised CLI; this file is its end-of-run
//! report, the launch being `panewise_host::launch` and `crate::launch`'s.
//!
//! The provider, model, approval mode and window strategy come from `panewise.toml`
//! (`panewise_host::config`), the flags overriding it. With no provider anywhere the default is `mock`:
//! the workspace's mock server is started in-process on 127.0.0.1 and the same HTTP client a
//! real provider gets is pointed at it (the Anthropic format), so a fresh machine runs the
//! whole path offline — window stage, model call, a real `shell` run, session log and ledger.
//! The mock's default approval is `full-access` in a fresh temporary directory: the scripted
//! model only ever runs `echo hello`, and nothing it does can touch the person's files.
//! A real provider's default stays `ask`, in the current directory.

use std::path::Path;

use panewise_host::agent_loop::ledger::{ledger_path, Ledger};
use panewise_host::backend::model::ModelOutcome;

/// What the person is told at the end: the tools, the window's decisions, the files;
/// `own_dir` whether the mock's own directory was removed (`None`: the person named it).
pub(crate) fn report(
    outcome: &ModelOutcome,
    strategy: &str,
    cwd: &Path,
    own_dir: Option<bool>,
    log: &Path,
    mock: bool,
) {
    let ran = outcome.tool_runs.iter().filter(|run| run.ran).count();
    eprintln!(
        "panewise run: tools: {ran} ran, {} refused, in {}{}",
        outcome.tool_runs.len().saturating_sub(ran),
        cwd.display(),
        match own_dir {
            Some(true) => " (removed: nothing was left in it)",
            Some(false) => " (kept: the tools left files in it)",
            None => "",
        }
    );
    eprintln!(
        "panewise run: window: {strategy}, {} visit(s), {} engaged{}",
        outcome.visits,
        outcome.records.len(),
        if outcome.records.is_empty() {
            " (nothing was removed)"
        } else {
            ":"
        }
    );
    let lines = Ledger::read(&ledger_path(log))
        .map(|ledger| ledger.printed_lines())
        .unwrap_or_default();
    for line in lines {
        // A call's line names the provider's model, and a provider's edit may name a type it
        // reported: their text is escaped as every agent text is.
        eprintln!("  {}", crate::terminal_text::escape_controls(&line, "  "));
    }
    eprintln!("panewise run: session log: {}", log.display());
    eprintln!(
        "panewise run: window ledger: {}",
        ledger_path(log).display()
    );
    // The archive exists once the window let something go (W75).
    let archive = panewise_host::agent_loop::archive::archive_path(log);
    if archive.exists() {
        eprintln!("panewise run: window archive: {}", archive.display());
    }
    if mock {
        eprintln!(
            "panewise run: that was the offline mock model; for a real one pass --provider \
             anthropic with ANTHROPIC_API_KEY set (or openai / OPENAI_API_KEY, gemini / \
             GEMINI_API_KEY), or set provider = \"anthropic\" in panewise.toml"
        );
    }
}
