//! `panewise window eval`: replays recorded agent sessions through window strategies and
//! prints, per strategy, the input tokens sent, the prompt cache's reads and writes, the cost
//! with the cache counted, and what the model lost (docs/WINDOW.md).
//!
//! The shell around `panewise-window-eval`: it walks the paths, reads the files, times each
//! strategy's replays, draws the plot and shows the progress bar; every figure comes from the
//! pure crate. Standard output is deterministic (the same files give the same bytes); the
//! times go to standard error.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use panewise_providers::PriceTable;
use panewise_window::cache::CacheRules;
use panewise_window_eval::replay::Figures;
use panewise_window_eval::report::{
    default_strategies, evaluate_all, CacheChoice, Report, Strategy, DEFAULT_EVAL_THRESHOLD,
};
use panewise_window_eval::{formats, EvalError, Recording};

use crate::exit::Usage;
use crate::strategy_config::read_config;
use crate::terminal_text::escape_controls;

/// Arguments of `panewise window eval`.
#[derive(clap::Args)]
pub struct EvalArgs {
    /// Recorded sessions: files, or directories searched recursively (in name order). Claude
    /// Code session JSONL (~/.claude/projects/) and stream-json, Codex rollouts
    /// (~/.codex/sessions/), Gemini CLI chats (~/.gemini/tmp/), SpecStory markdown, SWE-agent
    /// `.traj` and mini-swe-agent `.traj.json`, panewise session logs and window conversation
    /// files; the format is read from the content. A file that cannot be read is named with
    /// the reason on standard error and the rest go on.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    /// A strategy configuration, as `panewise window --config` reads it (JSON, or TOML by
    /// extension); repeat for several. Without one, every built-in strategy with its
    /// defaults (observation masking also batched, clearAtLeastTokens 20000, and at
    /// Anthropic's context-editing defaults, triggerTokens 100000 keeping 3), then each but
    /// those two again with the cache guard (paybackCalls 10, labelled +payback10). The raw
    /// history is always the baseline.
    #[arg(long, value_name = "STRATEGY.json")]
    config: Vec<PathBuf>,
    /// The thresholdTokens of the default set's token-triggered strategies.
    #[arg(long, value_name = "TOKENS", default_value_t = DEFAULT_EVAL_THRESHOLD)]
    threshold: u64,
    /// Price every session as this model (default: the session's own model, else the
    /// provider's stand-in: claude-sonnet-4-5, gpt-5, gemini-2.5-pro).
    #[arg(long, value_name = "MODEL")]
    price_model: Option<String>,
    /// A price table laid over the built-in one, row by row (JSON:
    /// {"prices":[{"model":"m*","input":1,"output":2,"cached_input":0.1,"cache_write":1.25}]}).
    #[arg(long, value_name = "PRICES.json")]
    prices: Option<PathBuf>,
    /// The cache rules of the primary figures: each session's provider's (default), or one for
    /// all (`none` also leaves the cache guard nothing to judge: +payback rows equal the plain
    /// ones). Every strategy is also priced under each provider's rules, side by side.
    #[arg(long, value_enum, default_value_t = CacheArg::Provider)]
    cache: CacheArg,
    /// One JSON object per line (schema panewise.window-eval/2): each strategy on each
    /// session (with costUsdByRules), then the totals (with the cost ratio's median,
    /// quartiles, 90 % interval, share of sessions cheaper than raw, split-half agreement, and
    /// the same per provider's rules in byRules), then one recommendation per provider.
    #[arg(long)]
    json: bool,
    /// Also print one table per session.
    #[arg(long)]
    sessions: bool,
    /// Draw cost against loss per strategy, the frontier marked, to this `.svg` or `.png`.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Write every loss event to this file, one JSON object per line: `session`, `strategy`,
    /// `call` (the call that needed the content), `kind` (`evicted_before_use` or `refetch`),
    /// `term` (what matched), `evictedAt` (the call at which it left the window) and `message`
    /// (the history message that held it). Written after the report; left untouched when no
    /// session could be read.
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
}

/// `--cache`'s choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum CacheArg {
    /// Each session's provider: Anthropic breakpoints, OpenAI or Gemini prefixes.
    Provider,
    /// Anthropic's explicit breakpoints for every session.
    Anthropic,
    /// OpenAI's automatic prefix cache for every session.
    Openai,
    /// Gemini's implicit cache for every session.
    Gemini,
    /// No cache: every input token at the full price.
    None,
}

impl CacheArg {
    fn choice(self) -> CacheChoice {
        match self {
            CacheArg::Provider => CacheChoice::Provider,
            CacheArg::Anthropic => CacheChoice::Fixed(CacheRules::anthropic()),
            CacheArg::Openai => CacheChoice::Fixed(CacheRules::openai()),
            CacheArg::Gemini => CacheChoice::Fixed(CacheRules::gemini()),
            CacheArg::None => CacheChoice::Fixed(CacheRules::None),
        }
    }
}

/// Runs `panewise window eval`.
pub fn run(args: EvalArgs) -> Result<ExitCode> {
    if args.threshold == 0 {
        return Err(Usage("--threshold must be at least 1".into()).into());
    }
    if !args.config.is_empty() && args.threshold != DEFAULT_EVAL_THRESHOLD {
        return Err(Usage(
            "--threshold sets the default strategies' threshold; with --config, set \
             thresholdTokens in the configuration instead"
                .into(),
        )
        .into());
    }
    let mut table = PriceTable::built_in();
    if let Some(path) = &args.prices {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let overrides = PriceTable::from_json(&text)
            .map_err(|error| anyhow!("bad price table in {}: {error}", path.display()))?;
        table = table.overridden_by(overrides);
    }
    // Summaries are priced as the model each strategy asks them of.
    let strategies: Vec<Strategy> = strategies(&args)?
        .into_iter()
        .map(|strategy| strategy.with_summarizer_prices(&table))
        .collect();
    if let Some(model) = &args.price_model {
        if table.price_for(model).is_none() {
            return Err(Usage(format!(
                "--price-model {model}: the price table has no row for it (add one with --prices)"
            ))
            .into());
        }
    }
    let plot_kind = match &args.plot {
        Some(path) => Some(crate::window_eval_plot::Kind::of(path).ok_or_else(|| {
            Usage(format!(
                "--plot {}: the file name must end in .svg or .png",
                path.display()
            ))
        })?),
        None => None,
    };

    if let Some(path) = &args.plot {
        // An unwritable picture fails now, not after the whole run, without touching the file.
        crate::window_eval_plot::check_writable(path)?;
    }
    let (files, mut notes) = collect_files(&args.paths)?;
    let started = Instant::now();
    let progress = Progress::new(files.len());
    let mut times = vec![Duration::ZERO; strategies.len()];
    let mut skipped = 0usize;
    let mut stderr = std::io::stderr();
    for note in notes.drain(..) {
        let _ = writeln!(stderr, "panewise window eval: {note}");
    }
    // Every file is read first: the sessions with provider readings calibrate the counts of
    // those without (a ratio and a head per provider family, with a leave-one-out error).
    let mut sessions: Vec<(String, Recording)> = Vec::new();
    for file in &files {
        let file_name = shown(file);
        progress.step(file);
        let recordings = match read_recording(file) {
            Ok(recordings) => recordings,
            Err(reason) => {
                skipped += 1;
                progress.suspend(|| {
                    let _ = writeln!(
                        stderr,
                        "panewise window eval: skipped {file_name}: {}",
                        escape_controls(&format!("{reason:#}"), "")
                    );
                });
                continue;
            }
        };
        for recording in recordings {
            // Each run and segment of a file is a session of its own, named by its part.
            let name = match &recording.part {
                Some(part) => format!("{file_name} ({})", escape_controls(part, "")),
                None => file_name.clone(),
            };
            sessions.push((name, recording));
        }
    }
    for (name, recording) in &sessions {
        for note in &recording.notes {
            let _ = writeln!(
                stderr,
                "panewise window eval: {name}: {}",
                escape_controls(note, "")
            );
        }
    }
    let mut timed = |index: usize, run: &mut dyn FnMut() -> Result<Figures, EvalError>| {
        let clock = Instant::now();
        let figures = run();
        if let Some(time) = times.get_mut(index) {
            *time += clock.elapsed();
        }
        figures
    };
    let (report, refused) = evaluate_all(
        &sessions,
        &strategies,
        &table,
        args.price_model.as_deref(),
        args.cache.choice(),
        &mut timed,
    );
    for (name, error) in &refused {
        // One session the stage refuses is named, and the rest go on.
        skipped += 1;
        let _ = writeln!(
            stderr,
            "panewise window eval: skipped {name}: the replay failed: {}",
            escape_controls(&error.to_string(), "")
        );
    }
    progress.finish();
    if report.sessions.is_empty() {
        bail!(
            "no recorded session could be read from {} file(s)",
            files.len()
        );
    }

    let mut stdout = std::io::stdout().lock();
    if args.json {
        stdout.write_all(report.json_lines().as_bytes())?;
    } else {
        stdout.write_all(report.table().as_bytes())?;
        if args.sessions {
            stdout.write_all(report.session_tables().as_bytes())?;
        }
    }
    stdout.flush()?;
    if let (Some(path), Some(kind)) = (&args.plot, plot_kind) {
        crate::window_eval_plot::draw(&report, path, kind)?;
    }
    if let Some(path) = &args.events {
        write_events(&report, path)
            .with_context(|| format!("--events: cannot write {}", shown(path)))?;
    }

    let per_strategy: Vec<String> = strategies
        .iter()
        .zip(&times)
        .map(|(strategy, time)| format!("{} {:.3} s", strategy.label, time.as_secs_f64()))
        .collect();
    let _ = writeln!(
        stderr,
        "panewise window eval: {} session(s) read, {skipped} skipped, {} strateg{} in {:.2} s (replays: {})",
        report.sessions.len(),
        strategies.len(),
        if strategies.len() == 1 { "y" } else { "ies" },
        started.elapsed().as_secs_f64(),
        per_strategy.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes every session's loss events, one JSON line each, in session and strategy order.
fn write_events(report: &Report, path: &Path) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for session in &report.sessions {
        for (strategy, figures) in &session.figures {
            for event in &figures.events {
                let line = serde_json::json!({
                    "session": session.name,
                    "strategy": strategy,
                    "call": event.call,
                    "kind": event.kind,
                    "term": event.term,
                    "evictedAt": event.evicted_at,
                    "message": event.message,
                });
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The raw history, then the configured strategies or the default set.
fn strategies(args: &EvalArgs) -> Result<Vec<Strategy>> {
    if args.config.is_empty() {
        return Ok(default_strategies(args.threshold));
    }
    let mut strategies = vec![Strategy::raw()];
    for path in &args.config {
        let config = read_config(path)?;
        if let Some(context) = config.provider_context() {
            // A replay of it would be the raw history under another name: a silent wrong
            // number. Its edits are the provider's, seen in a real session's ledger.
            return Err(Usage(format!(
                "--config {}: `{}` is applied by the provider on its servers, which a replay \
                 cannot reproduce; run a session with it (against the provider, or \
                 `panewise mock-server`) and read its edits in the window ledger \
                 (`panewise replay`)",
                shown(path),
                context.strategy_name()
            ))
            .into());
        }
        let mut strategy = Strategy::configured(config);
        // Two configurations with the same label are told apart by their file.
        if strategies.iter().any(|s| s.label == strategy.label) {
            strategy.label = format!("{} ({})", strategy.label, shown(path));
        }
        strategies.push(strategy);
    }
    Ok(strategies)
}

/// Every file under `paths`, directories searched recursively in name order, hidden entries
/// and the files beside panewise logs (`*.window.jsonl` ledgers, read with their log, and
/// `*.archive.jsonl` archives) left out,
/// and what was passed over, in words: a directory reached through a symbolic link (a link may
/// lead back up the tree), a name that is not UTF-8, a file given twice.
fn collect_files(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    for path in paths {
        let metadata =
            std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        if metadata.is_dir() {
            walk(path, &mut files, &mut notes)?;
        } else {
            files.push(path.clone());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    files.retain(|file| {
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
        let first = seen.insert(key);
        if !first {
            notes.push(format!(
                "{} is given more than once; read once",
                shown(file)
            ));
        }
        first
    });
    Ok((files, notes))
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, notes: &mut Vec<String>) -> Result<()> {
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
        else {
            continue;
        };
        if path.file_name().and_then(|name| name.to_str()).is_none() {
            notes.push(format!("skipped {}: the name is not UTF-8", shown(&path)));
            continue;
        }
        if name.starts_with('.') || panewise_host::agent_loop::is_beside_log(&path) {
            continue;
        }
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot read {}", path.display()))?;
        entries.push((path, kind));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (entry, kind) in entries {
        if kind.is_dir() {
            walk(&entry, files, notes)?;
        } else if kind.is_symlink() {
            // A link to a file is read; a link to a directory is not followed.
            if entry.is_dir() {
                notes.push(format!(
                    "skipped {}: a link to a directory is not followed",
                    shown(&entry)
                ));
            } else if entry.is_file() {
                files.push(entry);
            }
        } else if kind.is_file() {
            files.push(entry);
        }
    }
    Ok(())
}

/// A path as the terminal may show it: control characters escaped.
fn shown(path: &Path) -> String {
    escape_controls(&path.display().to_string(), "")
}

/// Every part of a file's recording (each run, each compaction segment), or why it cannot be
/// read.
fn read_recording(path: &Path) -> Result<Vec<Recording>> {
    // Not through `regular_file`'s error: the caller names the file already.
    let bytes = panewise_host::regular_file::read_log(path).map_err(|error| match error {
        panewise_host::regular_file::FileError::Io { source, .. } => {
            anyhow!("cannot read it: {source}")
        }
        other => anyhow!("{other}"),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("not UTF-8 text"))?;
    Ok(formats::read_all(&text)?)
}

/// A progress bar on standard error when it is a terminal, nothing otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(files: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(files as u64);
            let style = indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} sessions {elapsed} {wide_msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Self { bar }
    }

    fn step(&self, file: &Path) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
            let name = file
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            bar.set_message(escape_controls(&name, ""));
        }
    }

    fn suspend(&self, print: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
