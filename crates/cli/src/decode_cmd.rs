//! `panewise decode [--provider claude-code|codex|gemini-cli] FILE|- [--json]`: decode a
//! provider CLI stream, fold it through the reducer, and print the normalised events and the
//! final pane state.
//!
//! With `--json`, stdout is one JSON object per event (a malformed line appears as
//! `{"type":"decode_error","line":N,"message":…}`), then a summary object, each line with the
//! schema version `v` (`docs/JSON.md`); the summary's keys are
//! `provider`, `events`, `unknown_events`, `decode_errors`, `turn_phase`, `turns_completed`,
//! `tools` (each tool once with its calls), `tools_unlisted`, `input_tokens`, `output_tokens`, `cached_input_tokens`, `cache_write_input_tokens`,
//! `reasoning_tokens`, `cost_usd`, `cost_source` (`reported`, `estimated` or `unknown`),
//! `model`, `model_assumed`, `plan`, `warnings`, `context_tokens`, `context_window`,
//! `compactions` and `failure`. A cost the CLI does not report is estimated from the built-in
//! price table (`--prices` lays a file over it); a model without a price gives `cost_usd: null`,
//! `cost_source: "unknown"` and a warning on stderr naming the model.
//!
//! With `--record LOG.jsonl` it also writes the reducer messages it folded as a session log,
//! which `panewise replay` folds back to the same final state, and the conversation as the
//! log's transcript lines (the prompts the stream repeats, the answer, thinking, tool calls
//! with their input and output, approvals, failures, retries), which `panewise replay`
//! prints. The log is created new: an existing file is never written over.
//!
//! Time and memory are linear in the stream and bounded by its longest line plus the state:
//! the head is scanned once while the CLI is told (`providers::sniff`), each chunk after it is
//! handed to the decoder as read, and tools are tallied by name, never kept with their input.
//!
//! Exit codes are the table in [`crate::exit`]: 0 when the stream was decoded (decode errors are
//! reported, not fatal); 1 when no line of it is an event of the chosen CLI (the wrong
//! `--provider`, or not a stream at all), when the CLI cannot be told from its first lines, or a
//! table file is wrong, or when the stream is empty; 3 when a file cannot be read. A last line
//! cut off without its newline is skipped with the warning every subcommand gives for it.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_host::journal::transcript::{PromptSource, TranscriptRecorder};
use panewise_host::session_log::SessionLogFile;
use panewise_pane_state::log::LogHeader;
use panewise_providers::mapping::{REPLAY_START_MS, REPLAY_STEP_MS};
use panewise_providers::{
    summarize_tally, CostSource, DecodeError, Decoder, LiveFold, Mapper, ModelTable, PaneSummary,
    PriceTable, Provider, ProviderEvent, Sniffer, ToolTally,
};

/// Bytes handed to the decoder at a time, as a pipe would deliver them.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Arguments of `panewise decode`.
#[derive(clap::Args)]
pub struct Args {
    /// Which CLI wrote the stream. Detected from the stream's first lines when not given; a
    /// given one that disagrees is warned about.
    #[arg(
        long,
        value_parser = clap::builder::TypedValueParser::try_map(
            clap::builder::PossibleValuesParser::new(Provider::ALL.map(Provider::as_str)),
            |name| name.parse::<Provider>(),
        )
    )]
    provider: Option<Provider>,
    /// The stream (one JSON object per line); `-` reads standard input as it arrives.
    file: PathBuf,
    /// Print one JSON object per event and a JSON summary last.
    #[arg(long)]
    json: bool,
    /// The model the CLI was started with, for streams that never name it (Codex).
    #[arg(long)]
    model: Option<String>,
    /// A JSON model table laid over the built-in one:
    /// `{"windows":[{"model":"gpt-5*","window":400000}],"default_models":{"codex":"gpt-5.5"}}`.
    #[arg(long)]
    model_table: Option<PathBuf>,
    /// A JSON price table laid over the built-in one, for models it lacks or prices it has
    /// wrong: `{"prices":[{"model":"gemini-3.8-flash","input":0.5,"output":3,"cached_input":0.05}]}`
    /// (US dollars per million tokens; `cache_write` and `reasoning` are optional too).
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// Also write the folded reducer messages and the conversation as a session log
    /// (`panewise replay` reads it); LOG must not exist yet.
    #[arg(long, value_name = "LOG")]
    record: Option<PathBuf>,
}

/// Runs `panewise decode`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let name = args.file.display().to_string();
    if let Some(record) = &args.record {
        let same = record == &args.file
            || matches!(
                (std::fs::canonicalize(record), std::fs::canonicalize(&args.file)),
                (Ok(a), Ok(b)) if a == b
            );
        anyhow::ensure!(
            !same,
            "--record {} would overwrite the input",
            record.display()
        );
    }
    let mut input =
        crate::input::open(&args.file).with_context(|| format!("cannot read {name}"))?;
    let mut table = ModelTable::built_in();
    if let Some(path) = &args.model_table {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let overrides = ModelTable::from_json(&text)
            .with_context(|| format!("{}{}", path.display(), toml_hint(&text)))?;
        table = table.overridden_by(overrides);
    }
    let mut prices = PriceTable::built_in();
    if let Some(path) = &args.prices {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let overrides = PriceTable::from_json(&text)
            .with_context(|| format!("{}{}", path.display(), toml_hint(&text)))?;
        prices = prices.overridden_by(overrides);
    }

    // Read until a line names the CLI (or a few lines did not), then decode as bytes arrive.
    // Each byte read is looked at once, so a long first line costs its length, not its square.
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    let mut sniff = Sniffer::new(args.provider.is_some());
    let mut ended = false;
    while sniff.wants_more() {
        let read =
            read_some(&mut input, &mut chunk).with_context(|| format!("cannot read {name}"))?;
        match chunk.get(..read) {
            Some(bytes) if !bytes.is_empty() => sniff.push(bytes),
            _ => {
                ended = true;
                sniff.finish();
            }
        }
    }
    let blank = sniff.is_blank();
    let (detected, head) = sniff.into_parts();
    let provider = match (args.provider, detected) {
        (Some(given), Some(found)) if given != found => {
            eprintln!(
                "panewise decode: warning: {name}: the stream looks like {found}, \
                 decoding it as {given} as asked"
            );
            given
        }
        (Some(given), _) => given,
        (None, Some(found)) => found,
        (None, None) if blank => {
            return Err(crate::exit::empty_input(&name));
        }
        (None, None) => anyhow::bail!(
            "{name}: cannot tell which CLI wrote this stream from its first lines; \
             pass --provider claude-code|codex|gemini-cli"
        ),
    };

    let mapper = Mapper::new(provider, table)
        .with_model(args.model)
        .with_prices(prices);
    let mut live = LiveFold::new(mapper, args.record.is_some());
    // The log is written as the stream is folded, line by line, so it survives a crash.
    let mut record = match &args.record {
        Some(path) => {
            let header = LogHeader {
                agent_id: provider.as_str().to_owned(),
                started_at_ms: panewise_providers::mapping::REPLAY_START_MS,
                model: None,
                ..LogHeader::default()
            };
            let log = SessionLogFile::create(path, &header)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Some((path.clone(), log))
        }
        None => None,
    };
    // The transcript's clock is the fold's synthetic one: each event a step later.
    let mut transcript = TranscriptRecorder::new(PromptSource::Stream);
    let mut clock = REPLAY_START_MS;
    record_messages(&mut record, &mut transcript, live.take_messages())?;
    let mut decoder = Decoder::new(provider);
    let mut tools = ToolTally::default();
    let mut known_events = 0u64;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut decoded = Vec::new();
    let mut truncated = 0;
    // The head is decoded first, then every chunk as it is read; the head's bytes are let go
    // once decoded (a long first line is not kept for the rest of the stream).
    let mut head = Some(head);
    let mut read = 0;
    loop {
        match head.take() {
            Some(head) => decoder.feed(&head, &mut decoded),
            None => decoder.feed(chunk.get(..read).unwrap_or_default(), &mut decoded),
        }
        if ended {
            // A last line without its newline that does not decode was cut off mid-write: a
            // warning, worded as everywhere else, not a decode error.
            let mut last = Vec::new();
            decoder.finish(&mut last);
            for item in last {
                match item {
                    Err(error) if !error.message.starts_with("line longer than") => {
                        eprintln!(
                            "panewise decode: warning: {name}: {}",
                            crate::exit::truncated_last_line(error.line)
                        );
                        truncated += 1;
                    }
                    event => decoded.push(event),
                }
            }
        }
        for item in decoded.drain(..) {
            if let Ok(event) = &item {
                clock = clock.saturating_add(REPLAY_STEP_MS);
                live.push(event);
                if record.is_some() {
                    transcript.on_event(event, clock);
                }
                record_messages(&mut record, &mut transcript, live.take_messages())?;
                if !matches!(event, ProviderEvent::Unknown { .. }) {
                    known_events += 1;
                }
                tools.record(event);
            }
            write_item(&mut out, &item, args.json)?;
        }
        // What arrived is shown before waiting for more: a live pipe or `tail -f` works.
        out.flush()?;
        if ended {
            break;
        }
        read = read_some(&mut input, &mut chunk).with_context(|| format!("cannot read {name}"))?;
        ended = read == 0;
    }
    let mut counts = decoder.counts();
    counts.decode_errors = counts.decode_errors.saturating_sub(truncated);
    let (fold, mapper) = live.finish();
    let summary = summarize_tally(&mapper, counts, &tools, &fold.state);
    for warning in &summary.warnings {
        eprintln!("panewise decode: warning: {warning}");
    }
    transcript.flush(clock);
    record_messages(&mut record, &mut transcript, fold.messages)?;
    if let Some((path, log)) = &mut record {
        // The folded state closes the log, so a replay proves it folds the same state.
        log.checkpoint()
            .with_context(|| format!("cannot write {}", path.display()))?;
        transcript
            .finish(clock.saturating_add(REPLAY_STEP_MS), None, log)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        writeln!(out, "{}", crate::json::line(&summary)?)?;
    } else {
        write!(out, "{}", human_summary(&summary))?;
    }
    out.flush()?;
    drop(out);
    if counts.events == 0 && counts.decode_errors == 0 {
        return Err(crate::exit::empty_input(&name));
    }
    if known_events == 0 {
        eprintln!(
            "panewise decode: {name}: no line of it is a {provider} event \
             ({} unknown, {} decode error{})",
            counts.unknown_events,
            counts.decode_errors,
            if counts.decode_errors == 1 { "" } else { "s" },
        );
        return Ok(ExitCode::from(crate::exit::DATA));
    }
    Ok(ExitCode::SUCCESS)
}

/// A hint for a table file that holds TOML: the tables are JSON.
fn toml_hint(text: &str) -> &'static str {
    let is_json = serde_json::from_str::<serde_json::Value>(text).is_ok();
    let is_toml = toml::from_str::<toml::Table>(text).is_ok_and(|table| !table.is_empty());
    if !is_json && is_toml {
        " (this file holds TOML; the table is JSON)"
    } else {
        ""
    }
}

/// Reads what is available (at least one byte, or 0 at the end), retrying interrupted reads.
fn read_some(input: &mut dyn Read, chunk: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match input.read(chunk) {
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn write_item(
    out: &mut impl Write,
    item: &Result<ProviderEvent, DecodeError>,
    json: bool,
) -> anyhow::Result<()> {
    match (item, json) {
        (Ok(event), true) => writeln!(out, "{}", crate::json::line(event)?)?,
        (Err(error), true) => writeln!(out, "{}", crate::json::line(&decode_error_json(error))?)?,
        (Ok(event), false) => writeln!(out, "{}", event_line(event)?)?,
        (Err(error), false) => writeln!(out, "{:<20}{error}", "decode_error")?,
    }
    Ok(())
}

/// Appends the queued transcript lines, then the folded messages, to the session log being
/// recorded, if any.
fn record_messages(
    record: &mut Option<(PathBuf, SessionLogFile)>,
    transcript: &mut TranscriptRecorder,
    messages: Vec<(u64, panewise_pane_state::Msg)>,
) -> anyhow::Result<()> {
    if let Some((path, log)) = record {
        transcript
            .write_to(log)
            .with_context(|| format!("cannot write {}", path.display()))?;
        for (ts, msg) in messages {
            log.record(ts, msg)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(())
}

fn decode_error_json(error: &DecodeError) -> serde_json::Value {
    serde_json::json!({ "type": "decode_error", "line": error.line, "message": error.message })
}

/// `kind                field=value …`, with the event's fields as compact JSON.
fn event_line(event: &ProviderEvent) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(event)?;
    if let Some(object) = value.as_object_mut() {
        object.remove("type");
    }
    let fields = match &value {
        serde_json::Value::Object(object) if object.is_empty() => String::new(),
        other => other.to_string(),
    };
    Ok(format!("{:<20}{fields}", event.kind_name()))
}

/// `Bash ×3, Read`: each tool once with its calls, so the line is as long as the names of
/// the tools (bounded by the tally), not as long as the stream.
fn tools_line(summary: &PaneSummary) -> String {
    if summary.tools.is_empty() && summary.tools_unlisted == 0 {
        return "none".into();
    }
    let mut names: Vec<String> = summary
        .tools
        .iter()
        .map(|tool| match tool.calls {
            1 => tool.name.clone(),
            calls => format!("{} ×{calls}", tool.name),
        })
        .collect();
    if summary.tools_unlisted > 0 {
        names.push(format!("{} call(s) of other tools", summary.tools_unlisted));
    }
    crate::terminal_text::escape_controls(&names.join(", "), "")
}

fn human_summary(summary: &PaneSummary) -> String {
    let mut text = String::from("\nfinal pane state\n");
    let mut line = |label: &str, value: String| text.push_str(&format!("  {label:<18}{value}\n"));
    let number =
        |value: Option<u64>| value.map_or_else(|| "not reported".into(), |v| v.to_string());
    line("provider", summary.provider.to_string());
    line(
        "decoded",
        format!(
            "{} events, {} unknown, {} decode errors",
            summary.events, summary.unknown_events, summary.decode_errors
        ),
    );
    line("turn phase", summary.turn_phase.clone());
    line("turns completed", summary.turns_completed.to_string());
    line("tools", tools_line(summary));
    let assumed = if summary.model_assumed {
        ", model assumed"
    } else {
        ""
    };
    line(
        "model",
        match &summary.model {
            Some(model) if summary.model_assumed => {
                format!("{model} (assumed: the stream names no model)")
            }
            Some(model) => model.clone(),
            None => "not named".into(),
        },
    );
    line("input tokens", number(summary.input_tokens));
    line("cached input", number(summary.cached_input_tokens));
    line("cache writes", number(summary.cache_write_input_tokens));
    line("output tokens", number(summary.output_tokens));
    line("reasoning", number(summary.reasoning_tokens));
    line(
        "cost",
        match (summary.cost_usd, summary.cost_source) {
            (Some(cost), CostSource::Reported) => format!("${cost:.4} (reported)"),
            (Some(cost), _) => format!("${cost:.4} (estimated{assumed})"),
            (None, _) => "unknown".into(),
        },
    );
    line(
        "context",
        match (summary.context_tokens, summary.context_window) {
            (Some(tokens), Some(window)) if window > 0 => format!(
                "{tokens} / {window} tokens ({:.1}%){}",
                tokens as f64 * 100.0 / window as f64,
                if summary.model_assumed {
                    ", window assumed"
                } else {
                    ""
                }
            ),
            (Some(tokens), _) => format!("{tokens} tokens, window unknown"),
            (None, Some(window)) => format!(
                "no reading, window {window} tokens{}",
                if summary.model_assumed {
                    " (assumed)"
                } else {
                    ""
                }
            ),
            (None, None) => "no reading".into(),
        },
    );
    if !summary.plan.is_empty() {
        let done = summary
            .plan
            .iter()
            .filter(|step| step.status == panewise_providers::PlanStepStatus::Completed)
            .count();
        line(
            "plan",
            format!("{done} of {} steps done", summary.plan.len()),
        );
    }
    line("compactions", summary.compactions.to_string());
    line(
        "failure",
        summary.failure.as_ref().map_or_else(
            || "none".into(),
            |failure| {
                format!(
                    "{} ({}): {}",
                    serde_json::to_value(failure.kind)
                        .ok()
                        .and_then(|kind| kind.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    if failure.retryable {
                        "retryable"
                    } else {
                        "not retryable"
                    },
                    failure.message
                )
            },
        ),
    );
    text
}
