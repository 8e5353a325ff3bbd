//! `panewise window`: runs a context-window strategy over a conversation file once and prints,
//! as JSON, the kept window and the record the visit filed.
//!
//! The conversation is JSON Lines in the OpenAI chat-completions shape. The strategy comes from
//! a JSON (or, by extension, TOML) configuration. Summarizing strategies are answered by the
//! offline extractive summarizer, since the command calls no model; the visit is driven through
//! the same [`WindowRunner`] a model-calling runner uses.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use panewise_window::record::BudgetPressure;
use panewise_window::{
    openai, Conversation, ExtractiveSummarizer, FoldedSpan, Measured, Message, StrategyConfig,
    Usage, VisitContext, WindowRecord,
};
use serde::Serialize;
use serde_json::Value;

use crate::summarize::{block_on, Summarizer, WindowRunner};

/// Arguments of `panewise window`.
#[derive(clap::Args)]
pub struct Args {
    /// The strategy configuration: JSON, or TOML when the file name ends in `.toml`.
    #[arg(long, value_name = "STRATEGY.json")]
    config: PathBuf,
    /// The conversation: one chat-completions message per line.
    #[arg(value_name = "CONVERSATION.jsonl")]
    conversation: PathBuf,
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

/// Runs `panewise window`.
pub fn run(args: Args) -> Result<ExitCode> {
    let config_text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("cannot read {}", args.config.display()))?;
    let is_toml = args
        .config
        .extension()
        .is_some_and(|extension| extension == "toml");
    let config: StrategyConfig = if is_toml {
        toml::from_str(&config_text)
            .with_context(|| format!("bad configuration in {}", args.config.display()))?
    } else {
        StrategyConfig::from_json(&config_text)
            .with_context(|| format!("bad configuration in {}", args.config.display()))?
    };
    let conversation_text = std::fs::read_to_string(&args.conversation)
        .with_context(|| format!("cannot read {}", args.conversation.display()))?;
    let parsed = openai::read_jsonl(&conversation_text)
        .with_context(|| format!("bad conversation in {}", args.conversation.display()))?;
    // Orphans are warned about, not rejected, so a real (imperfect) log still windows.
    for orphan in &parsed.orphans {
        let call = orphan.tool_call_id.as_deref().map_or_else(
            || "without a `tool_call_id`".to_string(),
            |id| format!("for call `{id}`"),
        );
        eprintln!(
            "panewise window: warning: {} line {}: tool result {call} answers no earlier \
             assistant tool call; it is kept",
            args.conversation.display(),
            orphan.line
        );
    }
    let messages = parsed.messages;

    let summarizer: Option<Box<dyn Summarizer>> = config
        .needs_summarizer()
        .then(|| Box::new(ExtractiveSummarizer::default()) as Box<dyn Summarizer>);
    let mut stage = WindowRunner::<Message>::from_config(&config, summarizer)?;
    let mut conversation: Conversation = Conversation::from_messages(messages);

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
    let text = serde_json::to_string_pretty(&output)?;
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}") {
        // A reader that stopped early (`| head`) is not a failure of the command.
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(error.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}
