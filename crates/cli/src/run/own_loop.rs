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

use panewise_host::agent_loop::ledger::{ledger_path, Ledger, LedgerLine};
use panewise_host::backend::model::ModelOutcome;
use panewise_providers::call_usage::grouped;
use panewise_window::AppliedContextEdit;

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
    let ledger = panewise_host::agent_loop::ledger::read(&ledger_path(log)).unwrap_or_default();
    let provider = ProviderEdits::of(&ledger);
    eprintln!(
        "panewise run: {}",
        window_line(strategy, outcome.visits, outcome.records.len(), &provider)
    );
    for line in ledger.printed_lines() {
        // A call's line names the provider's model, and a provider's edit may name a type it
        // reported: their text is escaped as every agent text is.
        eprintln!("  {}", crate::terminal_text::escape_controls(&line, "  "));
    }
    eprintln!("panewise run: {}", cost_line(&ledger));
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

/// What a provider-side strategy did, from the edits the provider reported in its responses
/// (filed in the ledger as the provider's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ProviderEdits {
    /// Calls whose response reported at least one edit.
    calls: usize,
    /// The most tool uses one call's response said were cleared: the API clears again, on
    /// every call, what it cleared before (the client still sends it), so a sum would count
    /// the same results many times.
    most_tool_uses: Option<u64>,
    /// The most thinking turns one call's response said were cleared.
    most_thinking_turns: Option<u64>,
    /// Compactions: each is a new summary, sent back in later requests, so they add up.
    compactions: usize,
    /// Edits of a type this build does not know.
    unrecognized: usize,
}

impl ProviderEdits {
    fn of(ledger: &Ledger) -> Self {
        let mut edits = Self::default();
        let mut calls = std::collections::BTreeSet::new();
        for line in &ledger.lines {
            let LedgerLine::ProviderEdit { record } = line else {
                continue;
            };
            calls.insert(record.iteration);
            match &record.edit {
                AppliedContextEdit::ClearedToolUses {
                    cleared_tool_uses, ..
                } => edits.most_tool_uses = edits.most_tool_uses.max(*cleared_tool_uses),
                AppliedContextEdit::ClearedThinking {
                    cleared_thinking_turns,
                    ..
                } => {
                    edits.most_thinking_turns =
                        edits.most_thinking_turns.max(*cleared_thinking_turns)
                }
                AppliedContextEdit::Compacted { .. } => edits.compactions += 1,
                AppliedContextEdit::Unrecognized { .. } => edits.unrecognized += 1,
            }
        }
        edits.calls = calls.len();
        edits
    }
}

/// The window's summary line: the stage's visits and engagements, and what the provider
/// reported it removed on its side. "Nothing was removed" only when neither removed anything.
fn window_line(strategy: &str, visits: u32, engaged: usize, provider: &ProviderEdits) -> String {
    let mut line = format!("window: {strategy}, {visits} visit(s), {engaged} engaged");
    if provider.calls > 0 {
        let mut what = Vec::new();
        if let Some(count) = provider.most_tool_uses {
            what.push(format!("up to {} tool use(s) cleared", grouped(count)));
        }
        if let Some(count) = provider.most_thinking_turns {
            what.push(format!("up to {} thinking turn(s) cleared", grouped(count)));
        }
        if provider.compactions > 0 {
            what.push(format!("{} compaction(s)", provider.compactions));
        }
        if provider.unrecognized > 0 {
            what.push(format!(
                "{} edit(s) of an unknown type",
                provider.unrecognized
            ));
        }
        let what = if what.is_empty() {
            String::new()
        } else {
            format!(": {}", what.join(", "))
        };
        line.push_str(&format!(
            ", and the provider edited the context on {} call(s){what}",
            provider.calls
        ));
    } else if engaged == 0 {
        line.push_str(" (nothing was removed)");
    }
    if engaged > 0 {
        line.push(':');
    }
    line
}

/// The session's total cost, from the ledger's call lines: the tokens each response reported,
/// priced with panewise's price table, so it is an estimate (the APIs report tokens, not
/// dollars). Calls of a model without a price are named, never counted as free.
fn cost_line(ledger: &Ledger) -> String {
    let (mut priced, mut unpriced, mut unreported) = (0usize, 0usize, 0usize);
    let mut total = 0.0_f64;
    for line in &ledger.lines {
        let LedgerLine::Call { tokens, cost, .. } = line else {
            continue;
        };
        match (tokens, cost) {
            (Some(_), Some(cost)) => {
                priced += 1;
                total += cost.total_usd;
            }
            (Some(_), None) => unpriced += 1,
            (None, _) => unreported += 1,
        }
    }
    let calls = priced + unpriced + unreported;
    if calls == 0 {
        return "cost: no model call was made".to_owned();
    }
    if priced == 0 {
        return format!(
            "cost: unknown ({calls} call(s): {unpriced} of a model without a price, \
             {unreported} without reported usage)"
        );
    }
    let mut line = format!(
        "cost: ${total:.4} in {calls} call(s), estimated from the tokens the provider reported \
         at panewise's prices"
    );
    if unpriced + unreported > 0 {
        line.push_str(&format!(
            "; at least, as {} call(s) could not be priced ({unpriced} of a model without a \
             price, {unreported} without reported usage)",
            unpriced + unreported
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_line_counts_the_provider_s_edits() {
        let none = ProviderEdits::default();
        let cleared = ProviderEdits {
            calls: 12,
            most_tool_uses: Some(38),
            ..ProviderEdits::default()
        };
        let compacted = ProviderEdits {
            calls: 1,
            compactions: 1,
            ..ProviderEdits::default()
        };
        let cases = [
            (
                0,
                &none,
                "window: s, 5 visit(s), 0 engaged (nothing was removed)",
            ),
            (2, &none, "window: s, 5 visit(s), 2 engaged:"),
            (
                0,
                &cleared,
                "window: s, 5 visit(s), 0 engaged, and the provider edited the context on 12 \
                 call(s): up to 38 tool use(s) cleared",
            ),
            (
                1,
                &compacted,
                "window: s, 5 visit(s), 1 engaged, and the provider edited the context on 1 \
                 call(s): 1 compaction(s):",
            ),
        ];
        for (engaged, provider, expected) in cases {
            assert_eq!(window_line("s", 5, engaged, provider), expected);
        }
    }

    #[test]
    fn the_cost_line_sums_the_priced_calls_and_names_the_rest() {
        let call = |cost: Option<f64>, reported: bool| LedgerLine::Call {
            iteration: 1,
            model: Some("m".into()),
            tokens: reported.then(|| panewise_providers::CallTokens {
                prompt: 10,
                ..Default::default()
            }),
            cost: cost.map(|total| panewise_providers::CostSplit {
                input_usd: total,
                cache_read_usd: 0.0,
                cache_write_5m_usd: 0.0,
                cache_write_1h_usd: 0.0,
                output_usd: 0.0,
                total_usd: total,
            }),
            prefix_break: None,
            tools: None,
        };
        let cases = [
            (vec![], "cost: no model call was made".to_owned()),
            (
                vec![call(Some(0.5), true), call(Some(0.25), true)],
                "cost: $0.7500 in 2 call(s), estimated from the tokens the provider reported at \
                 panewise's prices"
                    .to_owned(),
            ),
            (
                vec![call(None, true)],
                "cost: unknown (1 call(s): 1 of a model without a price, 0 without reported \
                 usage)"
                    .to_owned(),
            ),
        ];
        for (lines, expected) in cases {
            let ledger = Ledger { lines, skipped: 0 };
            assert_eq!(cost_line(&ledger), expected);
        }
    }
}
