//! `panewise window`: runs a context-window strategy over a conversation file once and prints
//! a summary of the visit (or, with `--json`, the kept window and the record as JSON).
//!
//! The conversation is JSON Lines in the OpenAI chat-completions shape, from a file or from
//! standard input (`-`). The strategy comes from a JSON (or, by extension, TOML)
//! configuration. Summarizing strategies are answered by the offline extractive summarizer,
//! since the command calls no model; the visit is driven through the same [`WindowRunner`] a
//! model-calling runner uses. Exit codes are the table in [`crate::exit`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use panewise_pane_state::log::LogWarning;
use panewise_window::config::{accepted_keys, PIN_OPTIONS, STRATEGY_DOCS};
use panewise_window::record::{BudgetPressure, RecordDetail};
use panewise_window::{
    openai, Conversation, ExtractiveSummarizer, FoldedSpan, Measured, Message, StrategyConfig,
    Usage, VisitContext, WindowRecord,
};
use serde::Serialize;
use serde_json::Value;

use crate::summarize::{block_on, Summarizer, WindowRunner};
use panewise_host::agent_loop::ledger::{is_ledger, ledger_path};

/// Arguments of `panewise window`.
#[derive(clap::Args)]
pub struct Args {
    /// `eval`: replay recorded sessions through every strategy and compare them.
    #[command(subcommand)]
    command: Option<WindowCommand>,
    /// The strategy configuration: JSON, or TOML when the file name ends in `.toml`
    /// (`--help` lists the strategies and their options).
    // The list sits on this option because the subcommand's own description and after-help
    // are set where the subcommand is declared.
    #[arg(long, value_name = "STRATEGY.json", long_help = config_help(), required = true)]
    config: Option<PathBuf>,
    /// The conversation: one chat-completions message per line; `-` for standard input; or a
    /// session panewise's own loop recorded (its log, its id or its `.window.jsonl` ledger),
    /// whose messages are read from the ledger.
    #[arg(value_name = "CONVERSATION.jsonl", required = true)]
    conversation: Option<PathBuf>,
    /// Input tokens the provider reported for the call that sent this whole conversation.
    /// Token-triggered strategies do not engage without it.
    #[arg(long, value_name = "INPUT_TOKENS")]
    usage: Option<u64>,
    /// How many leading messages of the file that call sent (default: all). Messages after
    /// them are counted by the stage's token counter and added to the reading.
    #[arg(long, value_name = "MESSAGES")]
    sent_messages: Option<usize>,
    /// Output tokens of that call (with `--usage 0`, the default 0 makes the reading 0/0).
    #[arg(long, value_name = "OUTPUT_TOKENS", default_value_t = 0)]
    usage_output: u64,
    /// The ReAct iteration of this visit.
    #[arg(long, default_value_t = 1)]
    iteration: u32,
    /// The visit's clock value in milliseconds (the stage reads no clock).
    #[arg(long, default_value_t = 0)]
    now_ms: u64,
    /// The provider name used in the unmeasurable-usage error.
    #[arg(long, default_value = "unknown")]
    provider: String,
    /// Print the kept window, the record and any folded spans as JSON instead of a summary.
    #[arg(long)]
    json: bool,
}

/// `--config`'s long help, with the strategies and options drawn from the configuration's own
/// table (which a test of the window crate holds to what the parser accepts).
fn config_help() -> String {
    let mut text = String::from(
        "The strategy configuration: a JSON object, or a TOML table when the file name ends in \
         `.toml`, with a `strategy` key and that strategy's options (camelCase); any other key \
         is an error. Without `--json` the command prints the strategy, whether it engaged and \
         why, messages and characters before and after, the turns that refused to leave, the \
         record, and the kept window.\n\n\
         Strategies:",
    );
    for doc in &STRATEGY_DOCS {
        let trigger = if doc.token_triggered {
            " (engages only with a --usage reading)"
        } else if doc.provider_side {
            " (applied by the provider on its servers; never engages here)"
        } else {
            ""
        };
        text.push_str(&format!("\n  {}: {}{trigger}", doc.name, doc.summary));
        for option in doc.options {
            text.push_str(&format!("\n      {}: {}", option.name, option.value));
        }
    }
    text.push_str(
        "\n  Every local strategy (not the provider-side ones) also takes the pin ceilings and \
         the cache guard:",
    );
    for option in &PIN_OPTIONS {
        text.push_str(&format!("\n      {}: {}", option.name, option.value));
    }
    text.push_str(
        "\n\nExample: {\"strategy\": \"token-budget\", \"thresholdTokens\": 8000, \
         \"keepRecentTurns\": 6}",
    );
    text
}

/// What the command prints.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    strategy: String,
    engaged: bool,
    window: Vec<Value>,
    record: Option<WindowRecord>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    folded_spans: Vec<FoldedSpan<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_pressure: Option<BudgetPressure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

/// What `panewise window` does besides windowing one conversation.
#[derive(clap::Subcommand)]
pub enum WindowCommand {
    /// Replay recorded agent sessions through every strategy and measure input tokens, the
    /// prompt cache, cost and what the model lost, the raw history as the baseline.
    #[command(after_help = crate::exit::EXIT_CODES)]
    Eval(crate::window_eval_cmd::EvalArgs),
}

/// Runs `panewise window`.
pub fn run(args: Args) -> Result<ExitCode> {
    let (config_path, conversation_path) =
        match (args.command, args.config, args.conversation) {
            (Some(WindowCommand::Eval(eval)), _, _) => return crate::window_eval_cmd::run(eval),
            (None, Some(config), Some(conversation)) => (config, conversation),
            // clap requires both when no subcommand is given; this is the same error in words.
            _ => return Err(crate::exit::Usage(
                "panewise window needs --config STRATEGY.json and a CONVERSATION.jsonl, or the \
                 eval subcommand"
                    .into(),
            )
            .into()),
        };
    let config = crate::strategy_config::read_config(&config_path)?;
    let name = input_name(&conversation_path);
    let messages = read_conversation(&conversation_path, &name)?;
    if let (Some(threshold), None) = (config.threshold_tokens(), args.usage) {
        eprintln!(
            "panewise window: warning: no --usage reading: `{}` is triggered by tokens \
             (thresholdTokens {threshold}) and never engages without one; pass --usage \
             INPUT_TOKENS",
            config.strategy_name()
        );
    }

    let summarizer: Option<Box<dyn Summarizer>> = config
        .needs_summarizer()
        .then(|| Box::new(ExtractiveSummarizer::default()) as Box<dyn Summarizer>);
    let mut stage = WindowRunner::<Message>::from_config(&config, summarizer)?;
    let mut conversation: Conversation = Conversation::from_messages(messages);
    let before = Size::of(&conversation);

    let mut context = VisitContext::new(args.iteration, args.now_ms);
    context.provider = &args.provider;
    context.measured = args.usage.map(|input| Measured {
        usage: Usage {
            input,
            output: args.usage_output,
        },
        sent_messages: args
            .sent_messages
            .unwrap_or(conversation.len())
            .min(conversation.len()),
        iteration: args.iteration.saturating_sub(1),
    });
    let plan = block_on(stage.visit(&conversation, context))?;

    let output = match plan {
        None => Output {
            strategy: stage.strategy_name().to_string(),
            engaged: false,
            window: conversation
                .messages()
                .iter()
                .map(openai::to_value)
                .collect(),
            record: None,
            folded_spans: Vec::new(),
            budget_pressure: None,
            warning: None,
        },
        Some(mut plan) => {
            conversation.apply(&mut plan)?;
            let folded_spans = plan
                .folded
                .into_iter()
                .map(|span| FoldedSpan {
                    summary_fingerprint: span.summary_fingerprint,
                    run_id: span.run_id,
                    iteration: span.iteration,
                    folded_at_ms: span.folded_at_ms,
                    model: span.model,
                    message_count: span.message_count,
                    removed_stage_ids: span.removed_stage_ids,
                    retained: span.retained,
                    messages: span
                        .messages
                        .map(|messages| messages.iter().map(openai::to_value).collect()),
                })
                .collect();
            Output {
                strategy: stage.strategy_name().to_string(),
                engaged: true,
                window: conversation
                    .messages()
                    .iter()
                    .map(openai::to_value)
                    .collect(),
                record: Some(plan.record),
                folded_spans,
                budget_pressure: plan.budget_pressure,
                warning: plan.warning,
            }
        }
    };
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&output)?)?;
    } else {
        let visit = VisitSummary {
            config: &config,
            usage: args.usage,
            before,
            after: Size::of(&conversation),
            turns: conversation.turn_count(),
        };
        write_summary(&mut stdout, &visit, &output, conversation.messages())?;
    }
    // Errors propagate: a closed pipe ends quietly and a full disk is an I/O error (exit table).
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// How an input is named in messages: its path, or "standard input" for `-`.
fn input_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}

/// Reads the conversation: warns about a cut-off last line and orphan tool results, and
/// refuses a conversation with no message.
fn read_conversation(path: &Path, name: &str) -> Result<Vec<Message>> {
    let text = match recorded_session(path) {
        Some(ledger) => {
            // A recorded session: its messages, as panewise's own loop gave them to the window.
            let read = panewise_host::agent_loop::ledger::read(&ledger)
                .with_context(|| format!("cannot read the window ledger {}", ledger.display()))?;
            let mut text = String::new();
            for message in read.messages() {
                text.push_str(&message.to_string());
                text.push('\n');
            }
            text
        }
        None => {
            let bytes =
                crate::input::read_all(path).with_context(|| format!("cannot read {name}"))?;
            crate::strategy_config::utf8_text(bytes, name)?
        }
    };
    let text_is_blank = text.trim().is_empty();
    let (text, truncated) = without_truncated_last_line(&text);
    if let Some(line) = truncated {
        // The same fault as in a session log, in the same words (`replay` prints this too).
        eprintln!(
            "panewise window: warning: {name}: {}",
            LogWarning::TruncatedLastLine { line }
        );
    }
    let parsed = openai::read_jsonl(text).with_context(|| format!("bad conversation in {name}"))?;
    // Orphans are warned about, not rejected, so a real (imperfect) log still windows.
    for orphan in &parsed.orphans {
        let call = orphan.tool_call_id.as_deref().map_or_else(
            || "without a `tool_call_id`".to_string(),
            |id| format!("for call `{id}`"),
        );
        eprintln!(
            "panewise window: warning: {name}: line {}: tool result {call} answers no earlier \
             assistant tool call; it is kept",
            orphan.line
        );
    }
    if parsed.messages.is_empty() {
        if text_is_blank {
            return Err(crate::exit::empty_input(name));
        }
        anyhow::bail!(
            "{name}: no message in it; a conversation is one chat-completions message per line"
        );
    }
    Ok(parsed.messages)
}

/// The window ledger of a recorded session given as the conversation: the ledger itself, or
/// the one beside a session log (a path or a session id, as `replay` takes them).
fn recorded_session(given: &Path) -> Option<PathBuf> {
    if given.as_os_str() == "-" {
        return None;
    }
    if is_ledger(given) {
        return Some(given.to_path_buf());
    }
    let log = panewise_host::session_log::resolve_session(given);
    let ledger = ledger_path(&log);
    ledger.is_file().then_some(ledger)
}

/// The text without its last line when that line was cut off mid-write: no trailing newline
/// and not JSON. Returns the 1-based number of the line dropped.
fn without_truncated_last_line(text: &str) -> (&str, Option<usize>) {
    if text.ends_with('\n') {
        return (text, None);
    }
    let mut start = 0;
    let mut last = None;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if !line.trim().is_empty() {
            last = Some((index, start, line));
        }
        start += line.len();
    }
    match last {
        Some((index, start, line)) if serde_json::from_str::<Value>(line).is_err() => (
            text.get(..start).unwrap_or_default(),
            Some(index.saturating_add(1)),
        ),
        _ => (text, None),
    }
}

/// Messages and characters of a window.
#[derive(Clone, Copy)]
struct Size {
    messages: usize,
    chars: u64,
}

impl Size {
    fn of(conversation: &Conversation) -> Self {
        Self {
            messages: conversation.len(),
            chars: conversation.window_chars(),
        }
    }
}

/// What the human summary needs besides the JSON output.
struct VisitSummary<'a> {
    config: &'a StrategyConfig,
    usage: Option<u64>,
    before: Size,
    after: Size,
    turns: usize,
}

/// The human summary: one labelled line per fact, then the kept window.
fn write_summary(
    out: &mut impl Write,
    visit: &VisitSummary<'_>,
    output: &Output,
    window: &[Message],
) -> std::io::Result<()> {
    let label = |name: &str| format!("{name:<12}");
    writeln!(
        out,
        "{}{}{}",
        label("strategy"),
        output.strategy,
        options_text(visit.config)
    )?;
    let why = match &output.record {
        Some(record) => format!("yes: {}", engaged_because(record)),
        None => format!("no: {}", idle_because(visit)),
    };
    writeln!(out, "{}{why}", label("engaged"))?;
    let removed = output
        .record
        .as_ref()
        .map_or(0, |record| record.removed_message_count);
    // A dropped-history notice or a summary frame takes the place of what left.
    let inserted = visit
        .after
        .messages
        .saturating_sub(visit.before.messages.saturating_sub(removed));
    let inserted = if inserted > 0 {
        format!(", {inserted} inserted")
    } else {
        String::new()
    };
    writeln!(
        out,
        "{}{} -> {} ({removed} removed{inserted})",
        label("messages"),
        visit.before.messages,
        visit.after.messages
    )?;
    writeln!(
        out,
        "{}{} -> {}",
        label("characters"),
        visit.before.chars,
        visit.after.chars
    )?;
    if let Some(record) = &output.record {
        write_refusals(out, record, &label("refusals"))?;
        let compact = serde_json::to_string(record).map_err(std::io::Error::other)?;
        writeln!(out, "{}{compact}", label("record"))?;
    }
    for span in &output.folded_spans {
        writeln!(
            out,
            "{}{} messages into a summary by `{}`",
            label("folded"),
            span.message_count,
            span.model
        )?;
    }
    if let Some(pressure) = &output.budget_pressure {
        let action = serde_json::to_value(pressure.plan_action)
            .ok()
            .and_then(|value| value.as_str().map(str::to_string))
            .unwrap_or_default();
        writeln!(
            out,
            "{}projected {} of {} tokens; plan: {action}",
            label("budget"),
            pressure.projected_tokens,
            pressure.cap_tokens
        )?;
    }
    if let Some(warning) = &output.warning {
        writeln!(out, "{}{warning}", label("warning"))?;
    }
    writeln!(out, "window:")?;
    for (index, message) in window.iter().enumerate() {
        writeln!(
            out,
            "  {:>3}  {:<10}{}",
            index.saturating_add(1),
            message.role.as_str(),
            preview(message)
        )?;
    }
    Ok(())
}

/// The configured options, as `(key value, …)` in the configuration's own spelling.
fn options_text(config: &StrategyConfig) -> String {
    let Ok(Value::Object(mut map)) = serde_json::to_value(config) else {
        return String::new();
    };
    map.remove("strategy");
    let accepted = accepted_keys(config.strategy_name());
    let options: Vec<String> = accepted
        .iter()
        .filter_map(|key| map.get(*key).map(|value| format!("{key} {value}")))
        .collect();
    if options.is_empty() {
        String::new()
    } else {
        format!(" ({})", options.join(", "))
    }
}

/// Why an engaged visit engaged, from its record.
fn engaged_because(record: &WindowRecord) -> String {
    match &record.detail {
        RecordDetail::SlidingWindow(detail) => format!(
            "{} turns, more than keepRecentTurns {}",
            detail.turns_before, detail.keep_recent_turns
        ),
        RecordDetail::TokenBudget(detail) => format!(
            "{} measured + {} counted since = {} tokens, over thresholdTokens {}",
            detail.measured_tokens,
            detail.tokens_since_measured,
            detail
                .measured_tokens
                .saturating_add(detail.tokens_since_measured),
            detail.threshold_tokens
        ),
        RecordDetail::Compaction(detail) => format!(
            "{} measured tokens, over thresholdTokens {}",
            detail.measured_tokens, detail.threshold_tokens
        ),
        RecordDetail::Hybrid(detail) => format!(
            "{} measured tokens, over thresholdTokens {}",
            detail.measured_tokens, detail.threshold_tokens
        ),
        RecordDetail::Masking(detail) => {
            let spared = if detail.excluded_tools.is_empty() {
                String::new()
            } else {
                format!(
                    " (spared, as excludeTools: {})",
                    // Tool names come from the conversation: shown escaped, never interpreted.
                    crate::terminal_text::escape_controls(&detail.excluded_tools.join(", "), "")
                )
            };
            format!(
                "{} tool results older than the last keepRecentObservations {}{spared}",
                detail.masked_message_count, detail.keep_recent_observations
            )
        }
        RecordDetail::Custom {} => "the strategy filed a record".to_string(),
    }
}

/// Why a visit left the window as it was.
fn idle_because(visit: &VisitSummary<'_>) -> String {
    match (visit.config, visit.config.threshold_tokens(), visit.usage) {
        (_, Some(_), None) => {
            "no --usage reading, and a token-triggered strategy never engages without one"
                .to_string()
        }
        (_, Some(threshold), Some(usage)) => format!(
            "the reading ({usage} input tokens, plus any messages after the call) is not over \
             thresholdTokens {threshold}"
        ),
        (
            StrategyConfig::SlidingWindow {
                keep_recent_turns, ..
            },
            None,
            _,
        ) => format!(
            "{} turns, within keepRecentTurns {keep_recent_turns}",
            visit.turns
        ),
        (
            StrategyConfig::ObservationMasking {
                trigger_tokens: Some(trigger),
                ..
            },
            None,
            None,
        ) => format!("no --usage reading, and triggerTokens {trigger} masks only on one"),
        (
            StrategyConfig::ObservationMasking {
                trigger_tokens: Some(trigger),
                ..
            },
            None,
            Some(usage),
        ) if usage < *trigger => format!(
            "the reading ({usage} input tokens, plus any messages after the call) does not \
             reach triggerTokens {trigger}"
        ),
        (
            StrategyConfig::ObservationMasking {
                keep_recent_observations,
                clear_at_least_tokens,
                ..
            },
            None,
            _,
        ) => {
            let minimum = clear_at_least_tokens.map_or(String::new(), |minimum| {
                format!(", or masking them would save fewer than clearAtLeastTokens {minimum}")
            });
            format!(
                "no tool result older than the last keepRecentObservations \
                 {keep_recent_observations} outside excludeTools{minimum}"
            )
        }
        _ => "the strategy found nothing to do".to_string(),
    }
}

/// The refusals, grouped by reason with the refusing turns.
fn write_refusals(out: &mut impl Write, record: &WindowRecord, label: &str) -> std::io::Result<()> {
    if record.refusals.is_empty() {
        return writeln!(out, "{label}none");
    }
    writeln!(out, "{label}{} turns stayed", record.refusals.len())?;
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for refusal in &record.refusals {
        let reason = serde_json::to_value(refusal.reason)
            .ok()
            .and_then(|value| value.as_str().map(str::to_string))
            .unwrap_or_default();
        match groups.iter_mut().find(|(known, _)| *known == reason) {
            Some((_, turns)) => turns.push(refusal.turn_index),
            None => groups.push((reason, vec![refusal.turn_index])),
        }
    }
    for (reason, turns) in groups {
        let turns: Vec<String> = turns.iter().map(usize::to_string).collect();
        let noun = if turns.len() == 1 { "turn" } else { "turns" };
        writeln!(out, "  {reason}: {noun} {}", turns.join(", "))?;
    }
    Ok(())
}

/// The first line of a message, cut short; a call-only message shows its calls.
fn preview(message: &Message) -> String {
    const WIDTH: usize = 72;
    let text = message.content.lines().find(|line| !line.trim().is_empty());
    let text = match text {
        Some(line) => line.trim().to_string(),
        None if !message.tool_calls.is_empty() => {
            let names: Vec<&str> = message
                .tool_calls
                .iter()
                .map(|call| call.name.as_str())
                .collect();
            format!("[calls {}]", names.join(", "))
        }
        None => "[no text]".to_string(),
    };
    let more = text.chars().count() > WIDTH || message.content.trim().lines().count() > 1;
    let mut short: String = text.chars().take(WIDTH).collect();
    if more {
        short.push('…');
    }
    short
}
