//! # panewise-protocol
//!
//! The vocabulary shared between panewise crates, and nothing else: plain data types that derive
//! `serde`, `Clone`, `PartialEq` and `Debug`, with no logic beyond trivial accessors.
//!
//! ## Invariants
//! - Depends on `serde` only. No I/O, no clock, no async, no parsing of provider formats.
//! - Every type here is stable on the wire: field names are `snake_case` and enums are tagged, so
//!   logs written by one crate are readable by every other.
//!
//! ## API boundary
//! [`SessionStats`] (per-turn and cumulative usage and cost), [`Failure`] with its closed
//! [`FailureKind`], [`CostSource`], [`PlanStep`], [`CompactionTrigger`] and [`TurnId`]. `panewise-pane-state` folds these;
//! [`TelemetrySettings`] is `panewise.toml`'s `[telemetry]` table, read by the host's
//! configuration and resolved by `panewise-telemetry`, which so needs no host.
//! `panewise-providers` produces them; `panewise-window` reads [`SessionStats`]-free usage only
//! through its own input type, so it does not need this crate at all.
//!
//! ## Where to start reading
//! [`Failure`].
#![deny(missing_docs)]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Identifies one user-visible turn. Effect results carry the turn they belong to, so results
/// that arrive after their turn was cancelled or replaced can be recognised and dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TurnId(pub u64);

/// Who asked for a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The user asked for it (for example `/compact`).
    Manual,
    /// The agent decided on its own because the context was filling up.
    Auto,
}

/// Usage and cost figures of one turn, or the running sum of several.
///
/// Every field is optional because providers report different subsets; a missing figure is
/// "not reported", never zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStats {
    /// Cost in US dollars, when the provider prices its calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Wall time of the turn in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Input (prompt) tokens neither read from nor written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output (completion) tokens, reasoning tokens included: everything the model generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache (billed at the cache-write price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
    /// The part of `cache_write_input_tokens` written to be kept for an hour (Anthropic's
    /// `ephemeral_1h_input_tokens`, billed at twice the input price rather than 1.25 times),
    /// where the provider reports the split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h_input_tokens: Option<u64>,
    /// The part of `output_tokens` spent on reasoning, where the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Number of model round trips ("turns" in Claude Code's result line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    /// Where `cost_usd` comes from. Absent in logs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_source: Option<CostSource>,
}

/// Where a cost figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The agent reported the cost itself (Claude Code's `total_cost_usd`).
    Reported,
    /// panewise estimated it from the tokens and a price table (at least in part).
    Estimated,
    /// No cost can be given: a model without a price was used. The cost is then absent, never 0.
    Unknown,
}

/// One step of an agent's plan (a to-do list the agent keeps and updates).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// The step, in the agent's words.
    pub text: String,
    /// How far along it is.
    pub status: PlanStepStatus,
}

/// The status of a [`PlanStep`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// The closed set of failure kinds every provider's errors are classified into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The provider refused the call because a rate or quota limit was hit (HTTP 429).
    RateLimited,
    /// The provider is temporarily overloaded (HTTP 529, or 503 with an overload message).
    Overloaded,
    /// The provider failed on its side (HTTP 5xx).
    ServerError,
    /// Credentials are missing, wrong or lack permission (HTTP 401/403).
    Auth,
    /// The request did not fit the model's context window.
    ContextOverflow,
    /// The response stream broke off before it finished.
    StreamDisconnected,
    /// The agent process exited without finishing its turn.
    ProcessExited,
    /// Anything the classifier could not place; the provider's message is kept verbatim.
    Unknown,
}

impl FailureKind {
    /// Whether retrying the same request later can succeed without the user changing anything.
    pub const fn default_retryable(self) -> bool {
        matches!(
            self,
            FailureKind::RateLimited
                | FailureKind::Overloaded
                | FailureKind::ServerError
                | FailureKind::StreamDisconnected
        )
    }
}

/// A classified failure as the user should see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Which kind of failure this is.
    pub kind: FailureKind,
    /// Whether the same request may succeed if retried.
    pub retryable: bool,
    /// The provider's own message, verbatim.
    pub message: String,
    /// The HTTP status the provider reported, when it reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_round_trips_through_json_with_snake_case_kind() {
        let failure = Failure {
            kind: FailureKind::RateLimited,
            retryable: true,
            message: "429 Too Many Requests".into(),
            http_status: Some(429),
        };
        let json = serde_json::to_string(&failure).unwrap_or_default();
        assert!(json.contains("\"rate_limited\""), "{json}");
        let back: Failure = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(back, failure);
    }

    #[test]
    fn only_transient_kinds_are_retryable_by_default() {
        assert!(FailureKind::RateLimited.default_retryable());
        assert!(!FailureKind::Auth.default_retryable());
        assert!(!FailureKind::ContextOverflow.default_retryable());
    }
}

/// The `[telemetry]` table: OpenTelemetry export, under the standard `OTEL_*` variables
/// (which win). It holds no headers: those carry collectors' API keys, and come from
/// `OTEL_EXPORTER_OTLP_HEADERS` only, never from a file a repository may ship.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TelemetrySettings {
    /// `enabled`: `false` turns export off even when the variables are set.
    pub enabled: Option<bool>,
    /// `endpoint`: the OTLP base URL (as `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: Option<String>,
    /// `protocol`: `http/protobuf` or `grpc` (as `OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: Option<String>,
    /// `service_name` (as `OTEL_SERVICE_NAME`).
    pub service_name: Option<String>,
    /// `resource_attributes`: a table of strings (as `OTEL_RESOURCE_ATTRIBUTES`).
    pub resource_attributes: BTreeMap<String, String>,
    /// `content`: export prompts, answers and tool input and output too (as
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`); read from the user file only.
    pub content: Option<bool>,
}
