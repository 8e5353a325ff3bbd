//! The decoder of an app-server stream, behind [`Decoder`](crate::Decoder) with
//! [`Provider::CodexAppServer`]: what the server writes (and, when the host's side is fed too,
//! what the host answered) as [`ProviderEvent`]s. Answers are read by their shape (a `thread`
//! in the result), so a capture decodes without the session that wrote it; usage comes from
//! each `thread/tokenUsage/updated`'s `last`, a repeated `total` skipped.

use std::collections::{BTreeMap, BTreeSet};

use panewise_protocol::{PlanStep, PlanStepStatus, SessionStats};
use serde_json::value::RawValue;
use serde_json::Value;

use super::session::{server_request_kind, ServerRequestKind};
use super::wire::{
    Answer, ApprovalParams, Delta, ErrorParams, Item, ItemParams, NoticeParams, PlanParams,
    RateLimitParams, Resolved, TextPart, Thread, TokenUsage, Tokens, UsageParams,
};
use crate::args::{first_significant_arg, unwrap_shell_command, SHELL_TOOL};
use crate::channel::{params_of, push_unknown};
use crate::classify::{classify, classify_rpc_error, ErrorReport};
use crate::event::{ProviderEvent, ToolStatus, UsageScope};
use crate::figures::add_tokens;
use crate::line::{LineDecoder, Provider};
use crate::rpc::{answered_id, id_text, lenient, Envelope, Shape};

/// State carried between lines of one app-server stream.
#[derive(Debug, Default)]
pub(crate) struct AppServerDecoder {
    thread_id: Option<String>,
    model: Option<String>,
    /// The window last reported, so that each update does not report it again.
    window: Option<u64>,
    /// The last `total` seen: an update repeating it is the same call reported again.
    last_total: Option<Tokens>,
    /// The running turn's own figures: the sum of its calls.
    turn_usage: SessionStats,
    /// Tool items started in the turn, with their first argument (a file change's approval
    /// request names no file; its item does).
    tool_items: BTreeMap<String, Option<String>>,
    /// Message and reasoning items whose text arrived as deltas, not to be counted again when
    /// the item completes.
    streamed: BTreeSet<String>,
    /// Server requests waiting for an answer.
    waiting: BTreeSet<String>,
    /// The failure last reported in the turn: `turn/completed` `failed` repeats `error`.
    reported_failure: Option<String>,
}

impl LineDecoder for AppServerDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let envelope = Envelope::parse(raw)?;
        match envelope.shape() {
            None => push_unknown(None, raw, out),
            Some(Shape::Response { result, error, .. }) => match error {
                // Before a thread is known, a refusal answers the handshake (a `thread/resume`
                // of a thread the server cannot find, say): the client decides what follows
                // (it starts a new thread), so it is shown, not a turn's failure.
                Some(error) if self.thread_id.is_none() => out.push(ProviderEvent::Warning {
                    message: format!(
                        "the agent refused a request: {}",
                        error.message_or_default()
                    ),
                }),
                Some(error) => out.push(ProviderEvent::Failure {
                    failure: classify_rpc_error(
                        Provider::CodexAppServer,
                        error.code,
                        error.message_or_default(),
                    ),
                }),
                None => {
                    let answer: Option<Answer> = lenient(result);
                    if let Some(answer) = answer {
                        if let Some(thread) = answer.thread {
                            self.session_started(thread, answer.model, answer.cwd, out);
                        }
                    }
                }
            },
            Some(Shape::Request { id, method, params }) => {
                self.server_request(id, method, params, raw, out)?;
            }
            Some(Shape::Notification { method, params }) => {
                self.notification(method, params, raw, out)?;
            }
        }
        Ok(())
    }
}

impl AppServerDecoder {
    /// A line the host wrote to the server: an answer to a server request means the host,
    /// not the server, closed it, so the server's `serverRequest/resolved` that follows is
    /// no withdrawal.
    pub(crate) fn host_line(&mut self, raw: &[u8]) {
        if let Some(id) = answered_id(raw) {
            self.waiting.remove(&id);
        }
    }

    fn session_started(
        &mut self,
        thread: Thread,
        model: Option<String>,
        cwd: Option<String>,
        out: &mut Vec<ProviderEvent>,
    ) {
        let model = model.or(thread.model);
        // The `thread/start` answer and `thread/started` name the same thread: said once.
        if thread.id.is_some() && thread.id == self.thread_id && model == self.model {
            return;
        }
        if thread.id != self.thread_id {
            self.last_total = None;
        }
        self.thread_id.clone_from(&thread.id);
        self.model.clone_from(&model);
        out.push(ProviderEvent::SessionStarted {
            session_id: thread.id,
            model,
            cwd: cwd.or(thread.cwd),
            tools: Vec::new(),
        });
    }

    fn notification(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        raw: &[u8],
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), String> {
        match method {
            "thread/started" => {
                if let Some(thread) = params_of::<Answer>(params, raw)?.and_then(|a| a.thread) {
                    self.session_started(thread, None, None, out);
                }
            }
            "turn/started" => {
                self.turn_usage = SessionStats::default();
                self.tool_items.clear();
                self.streamed.clear();
                self.reported_failure = None;
                out.push(ProviderEvent::TurnStarted { prompt: None });
            }
            "turn/completed" => {
                let turn = params_of::<Answer>(params, raw)?.and_then(|answer| answer.turn);
                if let Some(turn) = &turn {
                    if turn.status.as_deref() == Some("failed") {
                        let error = turn.error.as_ref();
                        let message = error
                            .and_then(|error| error.message.as_deref())
                            .unwrap_or("the turn failed");
                        let info = error.and_then(|error| error.codex_error_info.as_ref());
                        self.report_failure(message, info, out);
                    }
                }
                // A turn that ends leaves nothing to answer.
                for request_id in std::mem::take(&mut self.waiting) {
                    out.push(ProviderEvent::ApprovalWithdrawn { request_id });
                }
                let interrupted = turn
                    .as_ref()
                    .is_some_and(|turn| turn.status.as_deref() == Some("interrupted"));
                out.push(ProviderEvent::TurnEnded {
                    stats: std::mem::take(&mut self.turn_usage),
                    models: BTreeMap::new(),
                    interrupted,
                });
            }
            "item/started" | "item/completed" => {
                let completed = method == "item/completed";
                if let Some(item) = params_of::<ItemParams<'_>>(params, raw)?.and_then(|p| p.item) {
                    self.item(&item, completed, raw, out);
                }
            }
            "item/agentMessage/delta"
            | "item/reasoning/summaryTextDelta"
            | "item/reasoning/textDelta" => {
                let delta = params_of::<Delta<'_>>(params, raw)?;
                let Some(delta) = delta else { return Ok(()) };
                if let Some(item) = delta.item_id {
                    self.streamed.insert(item.into_owned());
                }
                let text = delta.delta.unwrap_or_default().into_owned();
                out.push(if method == "item/agentMessage/delta" {
                    ProviderEvent::TextDelta { text }
                } else {
                    ProviderEvent::ThinkingDelta { text }
                });
            }
            "thread/tokenUsage/updated" => {
                if let Some(usage) =
                    params_of::<UsageParams>(params, raw)?.and_then(|p| p.token_usage)
                {
                    self.token_usage(&usage, out);
                }
            }
            "account/rateLimits/updated" => {
                let limits = params_of::<RateLimitParams>(params, raw)?
                    .and_then(|p| p.rate_limits)
                    .unwrap_or(Value::Null);
                out.push(ProviderEvent::RateLimitsUpdated { limits });
            }
            "error" => {
                let params = params_of::<ErrorParams>(params, raw)?;
                let (message, info, will_retry) = match &params {
                    Some(params) => (
                        params
                            .error
                            .as_ref()
                            .and_then(|error| error.message.as_deref()),
                        params
                            .error
                            .as_ref()
                            .and_then(|error| error.codex_error_info.as_ref()),
                        params.will_retry == Some(true),
                    ),
                    None => (None, None, false),
                };
                let message = message.unwrap_or("the server reported an error");
                if will_retry {
                    out.push(ProviderEvent::ProviderRetrying {
                        attempt: None,
                        max_retries: None,
                        retry_delay_ms: None,
                        http_status: None,
                        reason: Some(message.to_owned()),
                    });
                } else {
                    self.report_failure(message, info, out);
                }
            }
            "configWarning" | "deprecationNotice" => {
                let summary = params_of::<NoticeParams>(params, raw)?.and_then(|p| p.summary);
                out.push(ProviderEvent::Warning {
                    message: summary.unwrap_or_else(|| method.to_owned()),
                });
            }
            "serverRequest/resolved" => {
                let resolved = params_of::<Resolved<'_>>(params, raw)?;
                if let Some(id) = resolved.and_then(|resolved| resolved.request_id) {
                    let request_id = id_text(id);
                    if self.waiting.remove(&request_id) {
                        out.push(ProviderEvent::ApprovalWithdrawn { request_id });
                    }
                }
            }
            "turn/plan/updated" => {
                let plan = params_of::<PlanParams>(params, raw)?.and_then(|p| p.plan);
                out.push(ProviderEvent::PlanUpdated {
                    steps: plan
                        .into_iter()
                        .flatten()
                        .map(|entry| PlanStep {
                            text: entry.step.unwrap_or_default(),
                            status: plan_status(entry.status.as_deref()),
                        })
                        .collect(),
                });
            }
            // Known, and nothing for the pane: the approval request itself says the thread
            // waits (`waitingOnApproval`), command output arrives whole with its item, a
            // summary part's text arrives as deltas, and remote control is not used.
            "thread/status/changed"
            | "item/reasoning/summaryPartAdded"
            | "item/commandExecution/outputDelta"
            | "remoteControl/status/changed" => {}
            _ => push_unknown(Some(method), raw, out),
        }
        Ok(())
    }

    fn server_request(
        &mut self,
        id: String,
        method: &str,
        params: Option<&RawValue>,
        raw: &[u8],
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), String> {
        let kind = server_request_kind(method);
        if kind == ServerRequestKind::Other {
            push_unknown(Some(method), raw, out);
            return Ok(());
        }
        let fields = params_of::<ApprovalParams>(params, raw)?;
        let input: Value = params_of(params, raw)?.unwrap_or(Value::Null);
        let tool = match method {
            "item/commandExecution/requestApproval" => SHELL_TOOL.to_owned(),
            "item/fileChange/requestApproval" => "file_change".to_owned(),
            "item/tool/requestUserInput" => "request_user_input".to_owned(),
            other => other
                .trim_start_matches("item/")
                .rsplit_once('/')
                .map_or(other, |(head, _)| head)
                .to_owned(),
        };
        let (call_id, arg) = match fields {
            Some(fields) => {
                let from_item = fields
                    .item_id
                    .as_ref()
                    .and_then(|item| self.tool_items.get(item).cloned().flatten());
                let question = fields
                    .questions
                    .iter()
                    .flatten()
                    .find_map(|question| question.question.clone());
                let arg = fields
                    .command
                    .as_deref()
                    .map(unwrap_shell_command)
                    .or(from_item)
                    .or(question)
                    .or(fields.reason);
                (fields.item_id, arg)
            }
            None => (None, None),
        };
        self.waiting.insert(id.clone());
        out.push(ProviderEvent::ApprovalRequested {
            request_id: id,
            tool,
            arg,
            call_id,
            input,
        });
        Ok(())
    }

    fn token_usage(&mut self, usage: &TokenUsage, out: &mut Vec<ProviderEvent>) {
        if let (Some(window), Some(model)) = (usage.model_context_window, &self.model) {
            if self.window != Some(window) {
                self.window = Some(window);
                out.push(ProviderEvent::ContextWindows {
                    windows: BTreeMap::from([(model.clone(), window)]),
                });
            }
        }
        let total = usage.total;
        if total.is_some() && total == self.last_total {
            // The same running total again: no new call was made.
            return;
        }
        self.last_total = total;
        let Some(last) = usage.last else { return };
        let call = last.stats();
        add_tokens(&mut self.turn_usage, &call);
        out.push(ProviderEvent::Usage {
            scope: UsageScope::Call,
            model: self.model.clone(),
            input_tokens: call
                .input_tokens
                .unwrap_or(0)
                .saturating_add(call.cache_write_input_tokens.unwrap_or(0)),
            cached_input_tokens: call.cached_input_tokens.unwrap_or(0),
            cache_write_input_tokens: call.cache_write_input_tokens,
            cache_write_1h_input_tokens: None,
            output_tokens: call.output_tokens,
            reasoning_tokens: call.reasoning_tokens,
        });
    }

    /// A failure with Codex's `codexErrorInfo`: a word (`internalServerError`) or an object
    /// named by its word holding the call's `httpStatusCode`
    /// (`{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`).
    fn report_failure(
        &mut self,
        message: &str,
        info: Option<&Value>,
        out: &mut Vec<ProviderEvent>,
    ) {
        if self.reported_failure.as_deref() == Some(message) {
            return;
        }
        self.reported_failure = Some(message.to_owned());
        let (error_type, http_status) = match info {
            Some(Value::String(word)) => (Some(word.as_str()), None),
            Some(Value::Object(map)) => (
                map.keys().next().map(String::as_str),
                map.values()
                    .find_map(|inner| inner.get("httpStatusCode"))
                    .and_then(Value::as_u64)
                    .and_then(|status| u16::try_from(status).ok()),
            ),
            _ => (None, None),
        };
        out.push(ProviderEvent::Failure {
            failure: classify(
                Some(Provider::CodexAppServer),
                &ErrorReport {
                    message,
                    error_type,
                    http_status,
                    ..ErrorReport::default()
                },
            ),
        });
    }

    fn item(&mut self, item: &Item<'_>, completed: bool, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        let id = item.id.as_deref().unwrap_or_default();
        let kind = item.kind.as_deref().unwrap_or_default();
        let (name, arg, input) = match kind {
            "userMessage" => {
                if completed {
                    let parts: Vec<TextPart> = lenient(item.content).unwrap_or_default();
                    let text: Vec<String> =
                        parts.into_iter().filter_map(|part| part.text).collect();
                    out.push(ProviderEvent::UserMessage {
                        text: text.join("\n"),
                        synthetic: false,
                    });
                }
                return;
            }
            "agentMessage" => {
                if completed && !self.streamed.contains(id) {
                    out.push(ProviderEvent::TextDelta {
                        text: item.text.as_deref().unwrap_or_default().to_owned(),
                    });
                }
                return;
            }
            "reasoning" => {
                if completed && !self.streamed.contains(id) {
                    let mut parts = item.summary.clone().unwrap_or_default();
                    if parts.is_empty() {
                        parts = lenient(item.content).unwrap_or_default();
                    }
                    if !parts.is_empty() {
                        out.push(ProviderEvent::ThinkingDelta {
                            text: parts.join("\n"),
                        });
                    }
                }
                return;
            }
            "commandExecution" => (
                SHELL_TOOL.to_owned(),
                item.command.as_deref().map(unwrap_shell_command),
                item.command
                    .as_deref()
                    .map(|command| serde_json::json!({ "command": command })),
            ),
            "fileChange" => (
                "file_change".to_owned(),
                item.changes.iter().flatten().find_map(|change| {
                    change
                        .get("path")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                }),
                item.changes
                    .as_ref()
                    .map(|changes| serde_json::json!({ "changes": changes })),
            ),
            "mcpToolCall" => (
                match (item.server.as_deref(), item.tool.as_deref()) {
                    (Some(server), Some(tool)) => format!("{server}.{tool}"),
                    (None, Some(tool)) => tool.to_owned(),
                    _ => "mcp_tool_call".to_owned(),
                },
                item.arguments
                    .map(RawValue::get)
                    .and_then(first_significant_arg),
                item.arguments
                    .and_then(|arguments| serde_json::from_str(arguments.get()).ok()),
            ),
            "webSearch" => (
                "web_search".to_owned(),
                item.query.as_deref().map(str::to_owned),
                item.query
                    .as_deref()
                    .map(|query| serde_json::json!({ "query": query })),
            ),
            _ => return push_unknown(Some(&format!("item/{kind}")), raw, out),
        };
        if !self.tool_items.contains_key(id) {
            self.tool_items.insert(id.to_owned(), arg.clone());
            out.push(ProviderEvent::ToolStarted {
                name,
                call_id: id.to_owned(),
                arg,
                input,
            });
        }
        if completed {
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
                output: item
                    .aggregated_output
                    .clone()
                    .or_else(|| item.result.map(|result| result.get().to_owned()))
                    .or_else(|| item.error.as_ref().and_then(|error| error.message.clone())),
            });
        }
    }
}

fn plan_status(status: Option<&str>) -> PlanStepStatus {
    match status {
        Some("completed") => PlanStepStatus::Completed,
        Some("inProgress" | "in_progress") => PlanStepStatus::InProgress,
        _ => PlanStepStatus::Pending,
    }
}
