//! The normalised event vocabulary every provider decoder produces.

use std::collections::BTreeMap;

use panewise_protocol::{CompactionTrigger, Failure, PlanStep, SessionStats};
use panewise_window::AppliedContextEdit;
use serde::{Deserialize, Serialize};

/// One thing that happened in a provider's stream, in words every provider shares.
///
/// Decoders never drop what they do not understand: such a line becomes [`ProviderEvent::Unknown`]
/// and is counted, so a new CLI release shows up as a number rather than as silence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProviderEvent {
    /// The CLI announced a (possibly resumed) session.
    SessionStarted {
        /// The provider's session or thread id, used to resume it.
        session_id: Option<String>,
        /// The model the CLI says it will use (`auto` for Gemini's router).
        model: Option<String>,
        /// The working directory the agent runs in.
        cwd: Option<String>,
        /// The tools the agent may call, as the CLI names them.
        tools: Vec<String>,
    },
    /// The agent began working on a user message.
    TurnStarted {
        /// The user's message, when the stream repeats it.
        prompt: Option<String>,
    },
    /// The agent finished a turn, successfully or not, with the turn's own figures (never a
    /// running total of the session).
    TurnEnded {
        /// Usage and cost of this turn alone (of this run alone, when the CLI reports running
        /// totals of a resumed session).
        stats: SessionStats,
        /// The same figures per model, when the CLI breaks them down (Gemini CLI's routing
        /// model and main model, Claude Code's models); empty otherwise. Costs are estimated
        /// per model from these.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        models: BTreeMap<String, SessionStats>,
        /// The turn ended because the person interrupted it (the agent says so): an
        /// interrupted turn, never a failure.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
    },
    /// A piece of assistant text.
    TextDelta {
        /// The text, verbatim.
        text: String,
    },
    /// A piece of the model's visible reasoning.
    ThinkingDelta {
        /// The text, verbatim.
        text: String,
    },
    /// The CLI's running estimate of reasoning tokens produced so far in the current call.
    ThinkingProgress {
        /// Estimated reasoning tokens so far.
        estimated_tokens: u64,
    },
    /// A user-role message that is not a tool result (for example a compaction summary).
    UserMessage {
        /// Its text, verbatim.
        text: String,
        /// True when the CLI wrote it itself rather than the person.
        synthetic: bool,
    },
    /// The CLI sent a request to the model and is waiting for the answer.
    RequestStarted,
    /// The agent started a tool.
    ToolStarted {
        /// The tool's name as the provider spells it.
        name: String,
        /// The provider's id of this call, matching the [`ProviderEvent::ToolEnded`].
        call_id: String,
        /// The first significant argument: the command, the file path, the pattern…
        arg: Option<String>,
        /// The tool's whole input as the stream gives it (Claude Code's and Gemini CLI's
        /// tool arguments, Codex's command or file changes, an ACP tool call's `rawInput`),
        /// when it does; the transcript records it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<serde_json::Value>,
    },
    /// A tool finished.
    ToolEnded {
        /// The id from the matching [`ProviderEvent::ToolStarted`].
        call_id: String,
        /// Whether it succeeded.
        status: ToolStatus,
        /// The process exit code, for shell tools that report one.
        exit_code: Option<i64>,
        /// What the tool printed (or the result it returned), when the stream reports it:
        /// Claude Code's `tool_result` content, Codex's aggregated output, Gemini CLI's
        /// `output`, an ACP tool call's content.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// Token usage, either of one model call as it starts (`scope: call`), or summed over a turn
    /// when the format reports nothing finer (`scope: turn`).
    Usage {
        /// What the figures cover.
        scope: UsageScope,
        /// The model that was called, when known.
        model: Option<String>,
        /// Prompt tokens not read from the cache (cache writes included): with
        /// `cached_input_tokens`, the whole prompt, which is what the context meter shows.
        input_tokens: u64,
        /// Prompt tokens read from the provider's cache.
        cached_input_tokens: u64,
        /// The part of `input_tokens` written to the provider's cache, when the format reports
        /// cache writes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write_input_tokens: Option<u64>,
        /// The part of `cache_write_input_tokens` kept for an hour, when reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write_1h_input_tokens: Option<u64>,
        /// Output tokens so far, when reported.
        output_tokens: Option<u64>,
        /// Reasoning tokens, when reported separately.
        reasoning_tokens: Option<u64>,
    },
    /// The running output-token count of the current model call.
    OutputTokens {
        /// Output tokens of the call so far (cumulative within the call).
        output_tokens: u64,
    },
    /// Context windows the provider reported, per model id.
    ContextWindows {
        /// Window size in tokens, per model id.
        windows: BTreeMap<String, u64>,
    },
    /// The CLI began compacting the conversation.
    CompactionStarted {
        /// Who asked for it, when the stream says.
        trigger: Option<CompactionTrigger>,
    },
    /// The CLI reported the outcome of a compaction (`success` or the provider's word for failure).
    CompactionEnded {
        /// The provider's result word.
        result: String,
    },
    /// The conversation was replaced by its compacted form.
    CompactionBoundary {
        /// Who asked for it.
        trigger: CompactionTrigger,
        /// Context tokens before.
        pre_tokens: u64,
        /// Tokens of the compacted summary.
        post_tokens: u64,
        /// How long compaction took.
        duration_ms: Option<u64>,
    },
    /// A model call failed and the CLI will retry it after a delay.
    ProviderRetrying {
        /// Which attempt this is.
        attempt: Option<u64>,
        /// How many retries the CLI allows.
        max_retries: Option<u64>,
        /// How long the CLI waits before retrying.
        retry_delay_ms: Option<u64>,
        /// The HTTP status of the failed call.
        http_status: Option<u16>,
        /// The provider's short reason (for example `rate_limit`).
        reason: Option<String>,
    },
    /// A classified failure.
    Failure {
        /// What failed, classified, with the provider's own message.
        failure: Failure,
    },
    /// The agent asks whether a tool may run, and waits for the answer (Claude Code's
    /// `can_use_tool` control request, a Codex app-server `…/requestApproval` or
    /// `requestUserInput` request, an ACP `session/request_permission`).
    ApprovalRequested {
        /// The agent's id of the request, to answer it with.
        request_id: String,
        /// The tool asking.
        tool: String,
        /// Its first significant argument (the file, the command), for the person.
        arg: Option<String>,
        /// The model's id of the tool call, when given.
        call_id: Option<String>,
        /// The tool's whole input, as the agent sent it (an allow answer echoes it back).
        input: serde_json::Value,
    },
    /// The agent withdrew an approval request it no longer needs answered (or, for the JSON-RPC
    /// channels, showed that it was answered: Codex's `serverRequest/resolved`, an ACP tool
    /// call that moved on, a turn that ended).
    ApprovalWithdrawn {
        /// The withdrawn request.
        request_id: String,
    },
    /// The agent replaced its plan (Codex's `todo_list` item): every step, in its order.
    PlanUpdated {
        /// The steps and how far along each is.
        steps: Vec<PlanStep>,
    },
    /// The account's rate-limit snapshot (Codex app-server's `account/rateLimits/updated`),
    /// kept verbatim for a view: it says how much of a quota is left, not that a call waits.
    RateLimitsUpdated {
        /// The snapshot as the CLI sent it.
        limits: serde_json::Value,
    },
    /// The model asked for a tool call, its arguments assembled from their streamed pieces
    /// (the model API clients' decoders; a CLI runs its tools itself and reports
    /// [`ProviderEvent::ToolStarted`] instead).
    ToolCallRequested {
        /// The provider's id of the call, to send its result back with (Gemini gives none;
        /// its decoder numbers the calls of an answer `call_0`, `call_1`, …).
        call_id: String,
        /// The tool's name, as offered in the request.
        name: String,
        /// The arguments, JSON text exactly as the model wrote it.
        arguments: String,
    },
    /// One model API call ended (the model API clients' decoders): why it stopped and its
    /// exact usage. Each usage field is the provider's figure, absent when the provider did
    /// not report it, never a 0 standing in for "unknown".
    CallEnded {
        /// The model that answered, when the stream named it.
        model: Option<String>,
        /// The provider's stop reason word (`end_turn`, `tool_use`, `completed`, `STOP`, …).
        stop_reason: Option<String>,
        /// The call's usage: `input_tokens` neither read from nor written to the cache,
        /// `cached_input_tokens`, `cache_write_input_tokens`, `output_tokens` (reasoning
        /// included), `reasoning_tokens`; priced by the transport (`cost_usd`, `cost_source`).
        stats: SessionStats,
    },
    /// The provider applied its own context management to the call (a provider-side window
    /// strategy): each edit as it reported it, in the stream's order (the model API clients'
    /// decoders, just before the call's [`ProviderEvent::CallEnded`]). Anthropic reports
    /// `context_management.applied_edits` and a `compaction` block with its
    /// `usage.iterations` entry; OpenAI a `compaction` output item.
    ContextManaged {
        /// What the provider did.
        edits: Vec<AppliedContextEdit>,
    },
    /// A message of an earlier session that the agent replayed as it loaded the session
    /// (ACP `session/load` streams the history as updates before it answers): history, not
    /// output of a turn, so it opens no turn and starts no tool.
    HistoryReplayed {
        /// Whose message it was: `user`, `assistant`, `thinking` or `tool` (a tool call, its
        /// title as the text).
        role: String,
        /// The text, verbatim.
        text: String,
    },
    /// A non-fatal notice from the CLI.
    Warning {
        /// The CLI's message, verbatim.
        message: String,
    },
    /// A well-formed line this decoder does not know, kept verbatim.
    Unknown {
        /// The line's `type` (and subtype, as `type/subtype`), when it has one.
        event_type: Option<String>,
        /// The whole line.
        raw: String,
    },
}

impl ProviderEvent {
    /// The snake_case name of this event's variant, as written in its `type` field.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ProviderEvent::SessionStarted { .. } => "session_started",
            ProviderEvent::TurnStarted { .. } => "turn_started",
            ProviderEvent::TurnEnded { .. } => "turn_ended",
            ProviderEvent::TextDelta { .. } => "text_delta",
            ProviderEvent::ThinkingDelta { .. } => "thinking_delta",
            ProviderEvent::ThinkingProgress { .. } => "thinking_progress",
            ProviderEvent::UserMessage { .. } => "user_message",
            ProviderEvent::RequestStarted => "request_started",
            ProviderEvent::ToolStarted { .. } => "tool_started",
            ProviderEvent::ToolEnded { .. } => "tool_ended",
            ProviderEvent::Usage { .. } => "usage",
            ProviderEvent::OutputTokens { .. } => "output_tokens",
            ProviderEvent::ContextWindows { .. } => "context_windows",
            ProviderEvent::CompactionStarted { .. } => "compaction_started",
            ProviderEvent::CompactionEnded { .. } => "compaction_ended",
            ProviderEvent::CompactionBoundary { .. } => "compaction_boundary",
            ProviderEvent::ProviderRetrying { .. } => "provider_retrying",
            ProviderEvent::Failure { .. } => "failure",
            ProviderEvent::PlanUpdated { .. } => "plan_updated",
            ProviderEvent::ApprovalRequested { .. } => "approval_requested",
            ProviderEvent::ApprovalWithdrawn { .. } => "approval_withdrawn",
            ProviderEvent::RateLimitsUpdated { .. } => "rate_limits_updated",
            ProviderEvent::ToolCallRequested { .. } => "tool_call_requested",
            ProviderEvent::CallEnded { .. } => "call_ended",
            ProviderEvent::ContextManaged { .. } => "context_managed",
            ProviderEvent::HistoryReplayed { .. } => "history_replayed",
            ProviderEvent::Warning { .. } => "warning",
            ProviderEvent::Unknown { .. } => "unknown",
        }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool did what it was asked.
    Success,
    /// The tool reported an error (or a non-zero exit).
    Error,
    /// The call was refused or cancelled before it ran to the end.
    Declined,
}

/// What a [`ProviderEvent::Usage`] covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageScope {
    /// One model call: the prompt is the context as sent.
    Call,
    /// The sum over every call of a turn, for formats that report nothing finer. Its prompt
    /// total is an upper bound of the context of the turn's last call.
    Turn,
}
