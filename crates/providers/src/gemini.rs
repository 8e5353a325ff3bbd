//! Gemini CLI `--output-format stream-json`: `init`, `message` (user, and assistant deltas),
//! `tool_use`, `tool_result`, `error` (non-fatal notices) and `result` with the turn's stats,
//! per model, summed over the turn's calls (the routing model's call included).
//!
//! The format reports no context window and no compression. Its `stats` are the run's own
//! figures (a resumed session's run reports only itself). Reasoning ("thoughts") tokens are not
//! listed apart; they are the part of `total_tokens` beyond input and output, and the
//! vocabulary counts them inside the output tokens, as Gemini bills them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use panewise_protocol::SessionStats;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::args::first_significant_arg;
use crate::classify::{classify, ErrorReport};
use crate::error::describe_json_error;
use crate::event::{ProviderEvent, ToolStatus, UsageScope};
use crate::line::LineDecoder;
use crate::line::Provider;

/// Gemini's stream needs no state between lines.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    parameters: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    error: Option<ErrorBody<'a>>,
    stats: Option<Stats>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    /// A `tool_result`'s output.
    #[serde(borrow)]
    output: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Stats {
    #[serde(flatten)]
    totals: ModelStats,
    duration_ms: Option<u64>,
    models: Option<BTreeMap<String, ModelStats>>,
}

#[derive(Deserialize, Default)]
struct ModelStats {
    /// Every token of the run: input, output, thoughts and tool-use prompts.
    total_tokens: Option<u64>,
    /// Prompt tokens, cached ones included.
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    cached: Option<u64>,
    /// Prompt tokens not read from the cache.
    input: Option<u64>,
}

impl ModelStats {
    fn uncached_input(&self) -> Option<u64> {
        self.input.or_else(|| {
            self.input_tokens
                .map(|input| input.saturating_sub(self.cached.unwrap_or(0)))
        })
    }

    /// Thoughts tokens: what the total holds beyond input and output (tool-use prompt tokens,
    /// rare in a CLI turn, would count here too).
    fn reasoning(&self) -> Option<u64> {
        let listed = self
            .input_tokens
            .unwrap_or(0)
            .saturating_add(self.output_tokens.unwrap_or(0));
        self.total_tokens.map(|total| total.saturating_sub(listed))
    }

    /// The vocabulary's figures: output includes reasoning.
    fn stats(&self) -> SessionStats {
        let reasoning = self.reasoning();
        SessionStats {
            input_tokens: self.uncached_input(),
            cached_input_tokens: self.cached,
            output_tokens: match (self.output_tokens, reasoning) {
                (None, None) => None,
                (output, reasoning) => {
                    Some(output.unwrap_or(0).saturating_add(reasoning.unwrap_or(0)))
                }
            },
            reasoning_tokens: reasoning,
            ..SessionStats::default()
        }
    }
}

impl LineDecoder for GeminiDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let line: Line<'_> =
            serde_json::from_slice(raw).map_err(|error| describe_json_error(raw, &error))?;
        match (line.kind.as_deref(), line.role.as_deref()) {
            (Some("init"), _) => out.push(ProviderEvent::SessionStarted {
                session_id: owned(&line.session_id),
                model: owned(&line.model),
                cwd: None,
                tools: Vec::new(),
            }),
            (Some("message"), Some("user")) => out.push(ProviderEvent::TurnStarted {
                prompt: owned(&line.content),
            }),
            (Some("message"), Some("assistant")) => out.push(ProviderEvent::TextDelta {
                text: owned(&line.content).unwrap_or_default(),
            }),
            (Some("tool_use"), _) => out.push(ProviderEvent::ToolStarted {
                name: owned(&line.tool_name).unwrap_or_default(),
                call_id: owned(&line.tool_id).unwrap_or_default(),
                arg: line
                    .parameters
                    .map(RawValue::get)
                    .and_then(first_significant_arg),
                input: line
                    .parameters
                    .and_then(|parameters| serde_json::from_str(parameters.get()).ok()),
            }),
            (Some("tool_result"), _) => out.push(ProviderEvent::ToolEnded {
                call_id: owned(&line.tool_id).unwrap_or_default(),
                status: match line.status.as_deref() {
                    Some("success") => ToolStatus::Success,
                    _ => ToolStatus::Error,
                },
                exit_code: None,
                // A failed tool reports its error instead of an output.
                output: owned(&line.output)
                    .or_else(|| line.error.as_ref().and_then(|error| owned(&error.message))),
            }),
            // Fatal errors arrive in `result`; these are notices the run survives.
            (Some("error"), _) => out.push(ProviderEvent::Warning {
                message: owned(&line.message).unwrap_or_default(),
            }),
            (Some("result"), _) => result(&line, out),
            (kind, _) => out.push(ProviderEvent::Unknown {
                event_type: kind.map(str::to_owned),
                raw: String::from_utf8_lossy(raw).into_owned(),
            }),
        }
        Ok(())
    }
}

fn result(line: &Line<'_>, out: &mut Vec<ProviderEvent>) {
    let mut stats = SessionStats::default();
    let mut models = BTreeMap::new();
    if let Some(reported) = &line.stats {
        stats = reported.totals.stats();
        stats.duration_ms = reported.duration_ms;
        models = reported
            .models
            .iter()
            .flatten()
            .map(|(name, usage)| (name.clone(), usage.stats()))
            .collect();
        // The context meter follows the model that did the work: the one that read the most
        // prompt tokens, not the small routing model Gemini CLI calls first.
        let main_model = reported
            .models
            .iter()
            .flatten()
            .max_by_key(|(_, model)| model.input_tokens.unwrap_or(0));
        let (model, usage) = match main_model {
            Some((name, usage)) => (Some(name.clone()), usage),
            None => (None, &reported.totals),
        };
        // A failed turn's sums mostly come from the routing call, which says nothing about the
        // conversation's context, so a failed turn gives no reading.
        let failed = line.status.as_deref() == Some("error");
        if !failed && usage.input_tokens.unwrap_or(0) > 0 {
            let figures = usage.stats();
            out.push(ProviderEvent::Usage {
                scope: UsageScope::Turn,
                model,
                input_tokens: figures.input_tokens.unwrap_or(0),
                cached_input_tokens: figures.cached_input_tokens.unwrap_or(0),
                cache_write_input_tokens: figures.cache_write_input_tokens,
                cache_write_1h_input_tokens: None,
                output_tokens: figures.output_tokens,
                reasoning_tokens: figures.reasoning_tokens,
            });
        }
    }
    if line.status.as_deref() == Some("error") {
        let error = line.error.as_ref();
        let message = error
            .and_then(|error| error.message.as_deref())
            .unwrap_or("the turn ended with an error");
        out.push(ProviderEvent::Failure {
            failure: classify(
                Some(Provider::GeminiCli),
                &ErrorReport {
                    error_type: error.and_then(|error| error.kind.as_deref()),
                    message,
                    ..ErrorReport::default()
                },
            ),
        });
    }
    out.push(ProviderEvent::TurnEnded {
        stats,
        models,
        interrupted: false,
    });
}

fn owned(text: &Option<Cow<'_, str>>) -> Option<String> {
    text.as_deref().map(str::to_owned)
}
