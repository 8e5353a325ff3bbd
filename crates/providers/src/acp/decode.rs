//! The decoder of an ACP stream, behind [`Decoder`](crate::Decoder) with
//! [`Provider::Acp`]: what the agent writes (and, when the host's side is fed too, what the
//! host answered) as [`ProviderEvent`]s. A turn opens at its first update or permission request
//! and ends with the `session/prompt` answer, read by its shape; a loaded session's replayed
//! updates are history, not a turn.

use std::collections::BTreeMap;

use panewise_protocol::{PlanStep, PlanStepStatus, SessionStats};
use serde_json::Value;

use super::wire::{text_of, Answer, PermissionRequest, TokenCount, ToolCall, Update, UpdateParams};
use crate::args::SHELL_TOOL;
use crate::channel::{params_of, push_unknown};
use crate::classify::classify_rpc_error;
use crate::event::{ProviderEvent, ToolStatus, UsageScope};
use crate::line::{LineDecoder, Provider};
use crate::rpc::{answered_id, Envelope, Shape};

/// The model name Gemini CLI gives its router; its tokens are real, but it says nothing about
/// which model holds the conversation.
const ROUTED_MODEL: &str = "auto";

/// What is known of a tool call of the turn, and whether its start was reported.
#[derive(Debug, Default)]
struct SeenTool {
    kind: Option<String>,
    arg: Option<String>,
    input: Option<Value>,
    started: bool,
}

/// State carried between lines of one ACP stream.
#[derive(Debug, Default)]
pub(crate) struct AcpDecoder {
    turn_open: bool,
    model: Option<String>,
    /// Tool calls seen in the turn, by id.
    tools: BTreeMap<String, SeenTool>,
    /// Permission requests waiting, with the tool call each is about.
    waiting: BTreeMap<String, Option<String>>,
    /// From the agent's `initialize` answer until the client's first prompt: what arrives then
    /// is a loaded session's history, never a turn's output. `session/load` replays it as
    /// updates, and an agent may go on replaying after its answer (Gemini CLI streams the
    /// history without waiting for it), so the answer to a load does not end it: the client's
    /// prompt does ([`AcpDecoder::prompt_sent`]), or, in a stream decoded without the client's
    /// side, the first sign of a live turn (a permission request, a tool call starting, a
    /// prompt's answer). A new session's answer (it names the session) has no history to
    /// follow and ends it at once.
    loading: bool,
    /// The session is established (its `session/new`, `load` or `resume` answered): from then
    /// on the client's requests are prompts, so an error answer is a prompt's failure.
    session_ready: bool,
}

impl AcpDecoder {
    /// The client sent a prompt: what the agent writes from now on is the turn's.
    pub(crate) fn prompt_sent(&mut self) {
        self.loading = false;
    }
}

impl LineDecoder for AcpDecoder {
    fn decode_line(&mut self, raw: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String> {
        let envelope = Envelope::parse(raw)?;
        match envelope.shape() {
            None => push_unknown(None, raw, out),
            Some(Shape::Response { result, error, .. }) => match error {
                // While a turn runs, or once the session is established, the one request of
                // the client in flight is its prompt: a failed prompt is the turn's failure and
                // its end, even when the agent wrote nothing before it (Gemini CLI answers a
                // prompt whose model calls all failed with the API's status as the code).
                Some(error) if self.turn_open || self.session_ready => {
                    self.open_turn(out);
                    out.push(ProviderEvent::Failure {
                        failure: classify_rpc_error(
                            Provider::Acp,
                            error.code,
                            error.message_or_default(),
                        ),
                    });
                    self.end_turn(SessionStats::default(), BTreeMap::new(), false, out);
                }
                // Outside a turn (a session that could not be loaded, say) the client decides
                // what follows; the refusal is shown, not a turn's failure.
                Some(error) => {
                    self.loading = false;
                    out.push(ProviderEvent::Warning {
                        message: format!(
                            "the agent refused a request: {}",
                            error.message_or_default()
                        ),
                    });
                }
                None => {
                    if let Some(answer) = params_of::<Answer>(result, raw)? {
                        // The `initialize` answer (its protocol version) opens the handshake;
                        // the next answer is the session's, and ends any replay.
                        let initialize = answer.protocol_version.is_some();
                        if initialize {
                            self.loading = true;
                        } else {
                            if self.loading {
                                self.session_ready = true;
                            }
                            if answer.session_id.is_some() || answer.stop_reason.is_some() {
                                self.loading = false;
                            }
                        }
                        self.answer(answer, out);
                    }
                }
            },
            Some(Shape::Request { id, method, params }) => {
                if method == "session/request_permission" {
                    self.loading = false;
                    let call = params_of::<PermissionRequest>(params, raw)?
                        .and_then(|request| request.tool_call)
                        .unwrap_or_default();
                    let input: Value = params_of(params, raw)?.unwrap_or(Value::Null);
                    self.open_turn(out);
                    if let Some(call_id) = &call.tool_call_id {
                        self.tools
                            .entry(call_id.clone())
                            .or_insert_with(|| SeenTool {
                                kind: call.kind.clone(),
                                arg: call.arg(),
                                input: call.raw_input.clone(),
                                started: false,
                            });
                    }
                    self.waiting.insert(id.clone(), call.tool_call_id.clone());
                    out.push(ProviderEvent::ApprovalRequested {
                        request_id: id,
                        tool: tool_name(call.kind.as_deref()),
                        arg: call.arg(),
                        call_id: call.tool_call_id,
                        input,
                    });
                } else {
                    push_unknown(Some(method), raw, out);
                }
            }
            Some(Shape::Notification { method, params }) => {
                if method == "session/update" {
                    if let Some(update) =
                        params_of::<UpdateParams>(params, raw)?.and_then(|p| p.update)
                    {
                        self.update(update, raw, out);
                    }
                } else {
                    push_unknown(Some(method), raw, out);
                }
            }
        }
        Ok(())
    }
}

/// The name a tool call of ACP `kind` goes by, in its question and its tool line alike: ACP's
/// `execute` is the shell every other agent's command runs in.
fn tool_name(kind: Option<&str>) -> String {
    match kind {
        Some("execute") => SHELL_TOOL.to_owned(),
        Some(kind) => kind.to_owned(),
        None => "tool".to_owned(),
    }
}

impl AcpDecoder {
    /// A line the host wrote to the agent: an answer to a permission request means the host
    /// closed it, so the tool call going on afterwards is no withdrawal.
    pub(crate) fn host_line(&mut self, raw: &[u8]) {
        if let Some(id) = answered_id(raw) {
            self.waiting.remove(&id);
        }
    }

    fn open_turn(&mut self, out: &mut Vec<ProviderEvent>) {
        if !std::mem::replace(&mut self.turn_open, true) {
            self.tools.clear();
            out.push(ProviderEvent::TurnStarted { prompt: None });
        }
    }

    fn answer(&mut self, answer: Answer, out: &mut Vec<ProviderEvent>) {
        if let Some(stop_reason) = answer.stop_reason.as_deref() {
            self.open_turn(out);
            let quota = answer.meta.and_then(|meta| meta.quota);
            let (stats, models) = match quota {
                Some(quota) => {
                    let models: BTreeMap<String, SessionStats> = quota
                        .model_usage
                        .into_iter()
                        .flatten()
                        .filter_map(|usage| Some((usage.model?, usage.token_count?.stats())))
                        .collect();
                    let stats = quota.token_count.map(TokenCount::stats).unwrap_or_default();
                    (stats, models)
                }
                None => (SessionStats::default(), BTreeMap::new()),
            };
            // The meter follows the model that did the work, not the router.
            let main = models
                .iter()
                .filter(|(model, _)| model.as_str() != ROUTED_MODEL)
                .max_by_key(|(_, usage)| usage.input_tokens.unwrap_or(0));
            let (model, usage) = match main {
                Some((model, usage)) => (Some(model.clone()), usage),
                None => (None, &stats),
            };
            if usage.input_tokens.unwrap_or(0) > 0 {
                out.push(ProviderEvent::Usage {
                    scope: UsageScope::Turn,
                    model,
                    input_tokens: usage.input_tokens.unwrap_or(0),
                    cached_input_tokens: 0,
                    cache_write_input_tokens: None,
                    cache_write_1h_input_tokens: None,
                    output_tokens: usage.output_tokens,
                    reasoning_tokens: None,
                });
            }
            match stop_reason {
                // A finished turn, and a stopped one: stopping is not a failure.
                "end_turn" | "cancelled" => {}
                "max_tokens" => out.push(ProviderEvent::Warning {
                    message: "the turn stopped at the model's output token limit (max_tokens)"
                        .to_owned(),
                }),
                "max_turn_requests" => out.push(ProviderEvent::Warning {
                    message: "the turn stopped at the agent's limit of model requests per turn \
                              (max_turn_requests)"
                        .to_owned(),
                }),
                "refusal" => out.push(ProviderEvent::Warning {
                    message: "the agent refused to go on (refusal)".to_owned(),
                }),
                other => out.push(ProviderEvent::Warning {
                    message: format!("the turn stopped: {other}"),
                }),
            }
            self.end_turn(stats, models, stop_reason == "cancelled", out);
        } else if let Some(session_id) = answer.session_id {
            self.session_ready = true;
            let model = answer.models.and_then(|models| models.current_model_id);
            self.model = model.clone().filter(|model| model != ROUTED_MODEL);
            out.push(ProviderEvent::SessionStarted {
                session_id: Some(session_id),
                model,
                cwd: None,
                tools: Vec::new(),
            });
        }
    }

    /// Ends the turn; `interrupted` when the agent says it was cancelled (R98).
    fn end_turn(
        &mut self,
        stats: SessionStats,
        models: BTreeMap<String, SessionStats>,
        interrupted: bool,
        out: &mut Vec<ProviderEvent>,
    ) {
        // The prompt is answered: no permission request of it waits any more.
        for request_id in std::mem::take(&mut self.waiting).into_keys() {
            out.push(ProviderEvent::ApprovalWithdrawn { request_id });
        }
        self.turn_open = false;
        self.tools.clear();
        out.push(ProviderEvent::TurnEnded {
            stats,
            models,
            interrupted,
        });
    }

    fn update(&mut self, update: Update, raw: &[u8], out: &mut Vec<ProviderEvent>) {
        let kind = update.session_update.as_deref().unwrap_or_default();
        if self.loading {
            // A replayed tool call is listed done; one created running is this turn's.
            let starts = kind == "tool_call"
                && matches!(
                    update.tool.status.as_deref(),
                    Some("pending" | "in_progress")
                );
            if !starts {
                return history(kind, &update, out);
            }
            self.loading = false;
        }
        match kind {
            "agent_message_chunk" | "agent_thought_chunk" => {
                self.open_turn(out);
                if let Some(text) = text_of(update.content.as_ref()) {
                    out.push(if kind == "agent_message_chunk" {
                        ProviderEvent::TextDelta { text }
                    } else {
                        ProviderEvent::ThinkingDelta { text }
                    });
                }
            }
            "user_message_chunk" => {
                if let Some(text) = text_of(update.content.as_ref()) {
                    out.push(ProviderEvent::UserMessage {
                        text,
                        synthetic: false,
                    });
                }
            }
            "tool_call" | "tool_call_update" => {
                self.open_turn(out);
                self.tool_call(&update.tool, out);
            }
            "plan" => {
                self.open_turn(out);
                out.push(ProviderEvent::PlanUpdated {
                    steps: update
                        .entries
                        .into_iter()
                        .flatten()
                        .map(|entry| PlanStep {
                            text: entry.content.unwrap_or_default(),
                            status: match entry.status.as_deref() {
                                Some("completed") => PlanStepStatus::Completed,
                                Some("in_progress") => PlanStepStatus::InProgress,
                                _ => PlanStepStatus::Pending,
                            },
                        })
                        .collect(),
                });
            }
            "usage_update" => {
                if let (Some(size), Some(model)) = (update.size, &self.model) {
                    out.push(ProviderEvent::ContextWindows {
                        windows: BTreeMap::from([(model.clone(), size)]),
                    });
                }
                if let Some(used) = update.used {
                    out.push(ProviderEvent::Usage {
                        scope: UsageScope::Call,
                        model: self.model.clone(),
                        input_tokens: used,
                        cached_input_tokens: 0,
                        cache_write_input_tokens: None,
                        cache_write_1h_input_tokens: None,
                        output_tokens: None,
                        reasoning_tokens: None,
                    });
                }
            }
            // Known, and nothing for the pane: the slash commands, the mode and the options
            // on offer, and the session's title.
            "available_commands_update"
            | "current_mode_update"
            | "config_option_update"
            | "session_info_update" => {}
            other => push_unknown(Some(&format!("session/update/{other}")), raw, out),
        }
    }

    fn tool_call(&mut self, call: &ToolCall, out: &mut Vec<ProviderEvent>) {
        let Some(call_id) = call.tool_call_id.clone() else {
            return;
        };
        let status = call.status.as_deref();
        if matches!(
            status,
            Some("in_progress" | "completed" | "failed" | "cancelled")
        ) {
            // The agent went on: whatever it asked about this call has its answer.
            let answered: Vec<String> = self
                .waiting
                .iter()
                .filter(|(_, about)| about.as_deref() == Some(call_id.as_str()))
                .map(|(request, _)| request.clone())
                .collect();
            for request_id in answered {
                self.waiting.remove(&request_id);
                out.push(ProviderEvent::ApprovalWithdrawn { request_id });
            }
        }
        let entry = self.tools.entry(call_id.clone()).or_default();
        if call.kind.is_some() {
            entry.kind.clone_from(&call.kind);
        }
        if let Some(arg) = call.arg() {
            entry.arg = Some(arg);
        }
        if call.raw_input.is_some() {
            entry.input.clone_from(&call.raw_input);
        }
        if !entry.started {
            entry.started = true;
            out.push(ProviderEvent::ToolStarted {
                name: tool_name(entry.kind.as_deref()),
                call_id: call_id.clone(),
                arg: entry.arg.clone(),
                input: entry.input.clone(),
            });
        }
        let ended = match status {
            Some("completed") => Some(ToolStatus::Success),
            Some("failed") => Some(ToolStatus::Error),
            Some("cancelled") => Some(ToolStatus::Declined),
            _ => None,
        };
        if let Some(status) = ended {
            out.push(ProviderEvent::ToolEnded {
                call_id,
                status,
                exit_code: None,
                output: call.output(),
            });
        }
    }
}

/// A loaded session's replayed update, as history: its messages and tool calls, nothing that
/// opens a turn or starts a tool. The rest (a tool call's later status, the commands on offer)
/// says nothing the history needs.
fn history(kind: &str, update: &Update, out: &mut Vec<ProviderEvent>) {
    let role = match kind {
        "user_message_chunk" => "user",
        "agent_message_chunk" => "assistant",
        "agent_thought_chunk" => "thinking",
        "tool_call" => "tool",
        _ => return,
    };
    let text = if role == "tool" {
        update
            .tool
            .arg()
            .or_else(|| update.tool.kind.clone())
            .unwrap_or_else(|| "tool".to_owned())
    } else {
        match text_of(update.content.as_ref()) {
            Some(text) => text,
            None => return,
        }
    };
    out.push(ProviderEvent::HistoryReplayed {
        role: role.to_owned(),
        text,
    });
}
