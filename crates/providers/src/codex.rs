//! Codex `exec --json`: `thread.started`, `turn.started`, `item.started` / `item.updated` /
//! `item.completed` (agent_message, reasoning, command_execution, file_change, mcp_tool_call,
//! web_search, error…), `turn.completed` with the turn's summed usage, `turn.failed` and `error`.
//!
//! The format names no model and reports usage only per turn, summed over the turn's calls; it
//! reports no context window and no compaction. The usage of a resumed thread (`codex exec
//! resume`) is a running total of the whole thread, so each run's own figures are that total
//! minus the total the thread's previous run reported in the same stream.

use std::borrow::Cow;
use std::collections::BTreeMap;

use panewise_protocol::SessionStats;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::args::{first_significant_arg, unwrap_shell_command, SHELL_TOOL};
use crate::channel::push_unknown;
use crate::classify::{classify, ErrorReport};
use crate::error::describe_json_error;
use crate::event::{ProviderEvent, ToolStatus, UsageScope};
use crate::figures::since;
use crate::line::LineDecoder;
use crate::line::Provider;
use panewise_protocol::{PlanStep, PlanStepStatus};

/// State carried between lines of one Codex stream.
#[derive(Debug, Default)]
pub(crate) struct CodexDecoder {
    /// Items whose start was reported, so that a completion without a start still reports both.
    started_items: Vec<String>,
    /// The message of the failure last reported in this turn: `turn.failed` repeats `error`.
    reported_failure: Option<String>,
    /// The thread the stream is in (from `thread.started`).
    thread_id: Option<String>,
    /// The running usage total each thread last reported, to take a resumed run's own figures
    /// out of the thread's running total.
    thread_totals: BTreeMap<String, SessionStats>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thread_id: Option<Cow<'a, str>>,
    usage: Option<Usage>,
    #[serde(borrow)]
    item: Option<Item<'a>>,
    #[serde(borrow)]
    error: Option<ErrorBody<'a>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Usage {
    /// Prompt tokens, cached reads and cache writes included.
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
    /// Output tokens, reasoning included.
    output_tokens: Option<u64>,
    reasoning_output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    command: Option<Cow<'a, str>>,
    exit_code: Option<i64>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    changes: Option<Vec<FileChange<'a>>>,
    #[serde(borrow)]
    server: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    query: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    items: Option<Vec<TodoItem<'a>>>,
    /// A command's output, stdout and stderr as they came.
    #[serde(borrow)]
    aggregated_output: Option<Cow<'a, str>>,
    /// An MCP tool call's result, as the server returned it.
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    /// An MCP tool call's error.
    #[serde(borrow)]
    error: Option<ItemError<'a>>,
}

#[derive(Deserialize)]
struct ItemError<'a> {
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TodoItem<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    completed: Option<bool>,
}

#[derive(Deserialize)]
struct FileChange<'a> {
    #[serde(borrow)]
    path: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

impl LineDecoder for CodexDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let line: Line<'_> =
            serde_json::from_slice(raw).map_err(|error| describe_json_error(raw, &error))?;
        match line.kind.as_deref() {
            Some("thread.started") => {
                self.thread_id = line.thread_id.as_deref().map(str::to_owned);
                out.push(ProviderEvent::SessionStarted {
                    session_id: self.thread_id.clone(),
                    model: None,
                    cwd: None,
                    tools: Vec::new(),
                })
            }
            Some("turn.started") => {
                self.reported_failure = None;
                self.started_items.clear();
                out.push(ProviderEvent::TurnStarted { prompt: None });
            }
            Some("turn.completed") => {
                let stats = match &line.usage {
                    Some(usage) => self.run_stats(turn_stats(usage), out),
                    None => SessionStats::default(),
                };
                if line.usage.is_some() {
                    out.push(ProviderEvent::Usage {
                        scope: UsageScope::Turn,
                        model: None,
                        input_tokens: stats
                            .input_tokens
                            .unwrap_or(0)
                            .saturating_add(stats.cache_write_input_tokens.unwrap_or(0)),
                        cached_input_tokens: stats.cached_input_tokens.unwrap_or(0),
                        cache_write_input_tokens: stats.cache_write_input_tokens,
                        cache_write_1h_input_tokens: None,
                        output_tokens: stats.output_tokens,
                        reasoning_tokens: stats.reasoning_tokens,
                    });
                }
                out.push(ProviderEvent::TurnEnded {
                    stats,
                    models: BTreeMap::new(),
                    interrupted: false,
                });
            }
            Some("turn.failed") => {
                let message = line
                    .error
                    .as_ref()
                    .and_then(|error| error.message.as_deref())
                    .unwrap_or("the turn failed");
                self.report_failure(message, out);
                out.push(ProviderEvent::TurnEnded {
                    stats: SessionStats::default(),
                    models: BTreeMap::new(),
                    interrupted: false,
                });
            }
            Some("error") => {
                let message = line.message.as_deref().unwrap_or_default();
                match reconnect_attempt(message) {
                    Some((attempt, max_retries)) => out.push(ProviderEvent::ProviderRetrying {
                        attempt: Some(attempt),
                        max_retries: Some(max_retries),
                        retry_delay_ms: None,
                        http_status: None,
                        reason: Some(message.to_owned()),
                    }),
                    None => self.report_failure(message, out),
                }
            }
            Some("item.started") => self.item(&line, Phase::Started, raw, out),
            Some("item.updated") => self.item(&line, Phase::Updated, raw, out),
            Some("item.completed") => self.item(&line, Phase::Completed, raw, out),
            _ => push_unknown(line.kind.as_deref(), raw, out),
        }
        Ok(())
    }
}

impl CodexDecoder {
    /// This run's own figures from the thread's running total `total`, remembering the total
    /// for the thread's next run. A total lower than the previous one is not a running total
    /// (the thread was started afresh): it is taken as the run's own, with a warning.
    fn run_stats(&mut self, total: SessionStats, out: &mut Vec<ProviderEvent>) -> SessionStats {
        let Some(thread) = self.thread_id.clone() else {
            return total;
        };
        let run = match self.thread_totals.get(&thread) {
            None => total.clone(),
            Some(before) => since(&total, before).unwrap_or_else(|| {
                out.push(ProviderEvent::Warning {
                    message: format!(
                        "thread {thread} reported less usage than its previous run; \
                         taken as this run's own figures"
                    ),
                });
                total.clone()
            }),
        };
        self.thread_totals.insert(thread, total);
        run
    }

    fn report_failure(&mut self, message: &str, out: &mut Vec<ProviderEvent>) {
        if self.reported_failure.as_deref() == Some(message) {
            return;
        }
        self.reported_failure = Some(message.to_owned());
        out.push(ProviderEvent::Failure {
            failure: classify(
                Some(Provider::Codex),
                &ErrorReport {
                    message,
                    ..ErrorReport::default()
                },
            ),
        });
    }

    fn item(&mut self, line: &Line<'_>, phase: Phase, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        let Some(item) = &line.item else {
            return push_unknown(line.kind.as_deref(), raw, out);
        };
        let id = item.id.as_deref().unwrap_or_default();
        let kind = item.kind.as_deref().unwrap_or_default();
        let tool = match kind {
            "agent_message" => {
                if phase == Phase::Completed {
                    out.push(ProviderEvent::TextDelta {
                        text: text_of(&item.text),
                    });
                }
                return;
            }
            "reasoning" => {
                if phase == Phase::Completed {
                    out.push(ProviderEvent::ThinkingDelta {
                        text: text_of(&item.text),
                    });
                }
                return;
            }
            "todo_list" => {
                out.push(ProviderEvent::PlanUpdated {
                    steps: item
                        .items
                        .iter()
                        .flatten()
                        .map(|todo| PlanStep {
                            text: text_of(&todo.text),
                            status: if todo.completed == Some(true) {
                                PlanStepStatus::Completed
                            } else {
                                PlanStepStatus::Pending
                            },
                        })
                        .collect(),
                });
                return;
            }
            "error" => {
                if phase == Phase::Completed {
                    out.push(ProviderEvent::Warning {
                        message: text_of(&item.message),
                    });
                }
                return;
            }
            "command_execution" => (
                SHELL_TOOL.to_owned(),
                item.command.as_deref().map(unwrap_shell_command),
                item.command
                    .as_deref()
                    .map(|command| serde_json::json!({ "command": command })),
            ),
            "file_change" => (
                kind.to_owned(),
                item.changes
                    .iter()
                    .flatten()
                    .find_map(|change| change.path.as_deref().map(str::to_owned)),
                item.changes.as_ref().map(|changes| {
                    let changes: Vec<serde_json::Value> = changes
                        .iter()
                        .map(|change| {
                            serde_json::json!({ "path": change.path, "kind": change.kind })
                        })
                        .collect();
                    serde_json::json!({ "changes": changes })
                }),
            ),
            "mcp_tool_call" => (
                match (item.server.as_deref(), item.tool.as_deref()) {
                    (Some(server), Some(tool)) => format!("{server}.{tool}"),
                    (None, Some(tool)) => tool.to_owned(),
                    _ => kind.to_owned(),
                },
                item.arguments
                    .map(RawValue::get)
                    .and_then(first_significant_arg),
                item.arguments
                    .and_then(|arguments| serde_json::from_str(arguments.get()).ok()),
            ),
            "web_search" => (
                kind.to_owned(),
                item.query.as_deref().map(str::to_owned),
                item.query
                    .as_deref()
                    .map(|query| serde_json::json!({ "query": query })),
            ),
            _ => return push_unknown(Some(&format!("item/{kind}")), raw, out),
        };
        let already_started = self.started_items.iter().any(|started| started == id);
        if !already_started && phase != Phase::Updated {
            self.started_items.push(id.to_owned());
            let (name, arg, input) = tool;
            out.push(ProviderEvent::ToolStarted {
                name,
                call_id: id.to_owned(),
                arg,
                input,
            });
        }
        if phase == Phase::Completed {
            self.started_items.retain(|started| started != id);
            let status = match item.status.as_deref() {
                Some("failed") => ToolStatus::Error,
                Some("declined") => ToolStatus::Declined,
                _ if item.exit_code.is_some_and(|code| code != 0) => ToolStatus::Error,
                _ => ToolStatus::Success,
            };
            out.push(ProviderEvent::ToolEnded {
                call_id: id.to_owned(),
                status,
                exit_code: item.exit_code,
                output: item_output(item),
            });
        }
    }
}

/// What a completed item printed or returned: a command's output, an MCP call's result (its
/// JSON) or error; file changes and searches report none.
fn item_output(item: &Item<'_>) -> Option<String> {
    item.aggregated_output
        .as_deref()
        .map(str::to_owned)
        .or_else(|| item.result.map(|result| result.get().to_owned()))
        .or_else(|| {
            item.error
                .as_ref()
                .and_then(|error| error.message.as_deref().map(str::to_owned))
        })
}

/// Codex counts cached reads and cache writes inside `input_tokens`; the vocabulary keeps the
/// three apart. Reasoning tokens are part of `output_tokens`, as the vocabulary counts them.
fn turn_stats(usage: &Usage) -> SessionStats {
    let cached = usage.cached_input_tokens.unwrap_or(0);
    let written = usage.cache_write_input_tokens.unwrap_or(0);
    SessionStats {
        input_tokens: usage
            .input_tokens
            .map(|input| input.saturating_sub(cached).saturating_sub(written)),
        cached_input_tokens: usage.cached_input_tokens,
        cache_write_input_tokens: usage.cache_write_input_tokens,
        output_tokens: usage.output_tokens,
        reasoning_tokens: usage.reasoning_output_tokens,
        ..SessionStats::default()
    }
}

/// `Reconnecting... 2/5 (…)`: Codex's notice that it lost the stream and tries again.
fn reconnect_attempt(message: &str) -> Option<(u64, u64)> {
    let rest = message.strip_prefix("Reconnecting...")?.trim_start();
    let counts = rest.split_whitespace().next()?;
    let (attempt, max_retries) = counts.split_once('/')?;
    Some((attempt.parse().ok()?, max_retries.parse().ok()?))
}

fn text_of(text: &Option<Cow<'_, str>>) -> String {
    text.as_deref().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_notices_are_recognised() {
        assert_eq!(
            reconnect_attempt("Reconnecting... 2/5 (stream disconnected before completion)"),
            Some((2, 5))
        );
        assert_eq!(reconnect_attempt("exceeded retry limit"), None);
    }
}
