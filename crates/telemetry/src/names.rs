//! Every span name, attribute key, event name and metric name panewise emits, in one place, so
//! that `docs/TELEMETRY.md` can be held to them (`tests/doc_contract.rs`).
//!
//! The `gen_ai.*` names follow the OpenTelemetry GenAI semantic conventions v1.41.0 (the last
//! release in the core repository; every `gen_ai.*` name is at Development status); the
//! `panewise.*` names are panewise's own.

/// The session span's name (`gen_ai.operation.name` `invoke_agent`).
pub const SPAN_INVOKE_AGENT: &str = "invoke_agent";
/// The prefix of a model call's span name: `chat {gen_ai.request.model}`.
pub const SPAN_CHAT: &str = "chat";
/// The prefix of a tool's span name: `execute_tool {gen_ai.tool.name}`.
pub const SPAN_EXECUTE_TOOL: &str = "execute_tool";
/// The span of the time an approval question waited for its answer.
pub const SPAN_APPROVAL_WAIT: &str = "panewise.approval.wait";

/// Every span name (the prefix, for those that carry a model or tool name).
pub const SPANS: &[&str] = &[
    SPAN_INVOKE_AGENT,
    SPAN_CHAT,
    SPAN_EXECUTE_TOOL,
    SPAN_APPROVAL_WAIT,
];

/// `gen_ai.operation.name`.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.agent.name`.
pub const AGENT_NAME: &str = "gen_ai.agent.name";
/// `gen_ai.conversation.id`.
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// `gen_ai.provider.name`.
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// `gen_ai.request.model`.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.model`.
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `gen_ai.response.finish_reasons`.
pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.usage.input_tokens`.
pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens`.
pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.usage.cache_read.input_tokens`.
pub const CACHE_READ_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// `gen_ai.usage.cache_creation.input_tokens`.
pub const CACHE_CREATION_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
/// `gen_ai.usage.reasoning.output_tokens`.
pub const REASONING_TOKENS: &str = "gen_ai.usage.reasoning.output_tokens";
/// `gen_ai.tool.name`.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id`.
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `gen_ai.tool.type`.
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
/// `gen_ai.token.type` (a metric attribute: `input`, `output`).
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
/// `error.type`: a failure's classified kind, a tool's failed status.
pub const ERROR_TYPE: &str = "error.type";
/// How an approval question was settled: `approved`, `denied`, `withdrawn`, `unanswered`.
pub const APPROVAL_DECISION: &str = "panewise.approval.decision";
/// Who settled it: `policy`, `person`, `client`, `session`, `agent`.
pub const APPROVAL_BY: &str = "panewise.approval.by";
/// The session's total cost in USD, when known.
pub const COST_USD: &str = "panewise.cost.usd";
/// Where a cost figure came from: `reported`, `estimated`, `unknown`.
pub const COST_SOURCE: &str = "panewise.cost.source";
/// The turns the session ran.
pub const TURNS: &str = "panewise.session.turns";
/// A session's state, on the sessions metric: `started`, `ended`.
pub const SESSION_STATE: &str = "panewise.session.state";
/// What asked for a compaction: `manual`, `auto`.
pub const COMPACTION_TRIGGER: &str = "panewise.compaction.trigger";
/// Context tokens before a compaction.
pub const COMPACTION_PRE_TOKENS: &str = "panewise.compaction.pre_tokens";
/// Tokens of the summary after it.
pub const COMPACTION_POST_TOKENS: &str = "panewise.compaction.post_tokens";

/// `gen_ai.input.messages` (content opt-in): the messages a model call was sent, as the
/// conventions' JSON (the turn's prompt, the tools' results).
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// `gen_ai.output.messages` (content opt-in): the text the call answered, as JSON.
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// `gen_ai.tool.call.arguments` (content opt-in): a tool's input.
pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// `gen_ai.tool.call.result` (content opt-in): a tool's output.
pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";

/// Every attribute key (span, event and metric attributes).
pub const ATTRIBUTES: &[&str] = &[
    OPERATION_NAME,
    AGENT_NAME,
    CONVERSATION_ID,
    PROVIDER_NAME,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    FINISH_REASONS,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    CACHE_READ_TOKENS,
    CACHE_CREATION_TOKENS,
    REASONING_TOKENS,
    TOOL_NAME,
    TOOL_CALL_ID,
    TOOL_TYPE,
    TOKEN_TYPE,
    ERROR_TYPE,
    APPROVAL_DECISION,
    APPROVAL_BY,
    COST_USD,
    COST_SOURCE,
    TURNS,
    SESSION_STATE,
    COMPACTION_TRIGGER,
    COMPACTION_PRE_TOKENS,
    COMPACTION_POST_TOKENS,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
];

/// The event on the session span for a compaction (tokens before and after).
pub const EVENT_COMPACTED: &str = "gen_ai.conversation.compacted";
/// The event on the session span (and the failing call's span) for a classified failure.
pub const EVENT_FAILURE: &str = "panewise.failure";

/// Every event name.
pub const EVENTS: &[&str] = &[EVENT_COMPACTED, EVENT_FAILURE];

/// `gen_ai.client.token.usage`: a histogram of tokens per model call, by `gen_ai.token.type`.
pub const METRIC_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// `gen_ai.client.operation.duration`: a histogram of model-call durations, in seconds.
pub const METRIC_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// The cost in USD, a counter, by `panewise.cost.source`.
pub const METRIC_COST: &str = "panewise.cost.usage";
/// Sessions by state, a counter.
pub const METRIC_SESSIONS: &str = "panewise.sessions";
/// Time an approval question waited on a person, a histogram in seconds.
pub const METRIC_APPROVAL_WAIT: &str = "panewise.approval.wait.duration";
/// Approvals by decision, a counter.
pub const METRIC_APPROVALS: &str = "panewise.approvals";

/// Every metric name.
pub const METRICS: &[&str] = &[
    METRIC_TOKEN_USAGE,
    METRIC_OPERATION_DURATION,
    METRIC_COST,
    METRIC_SESSIONS,
    METRIC_APPROVAL_WAIT,
    METRIC_APPROVALS,
];
