//! The records the stage files: one [`WindowRecord`] per engaged visit, plus the
//! [`FoldedSpan`]s of a fold. They are plain serde types; the caller appends them to a ledger
//! it owns.

use serde::{Deserialize, Serialize};

use crate::cache::EditCost;

/// Why a turn refused to leave the window: a closed set every strategy shares (W14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalReason {
    /// The turn contains a system message.
    SystemEnvelope,
    /// The turn contains the message this run is executing.
    CurrentRequest,
    /// A tool call in the turn has no result anywhere in the window.
    UnresolvedToolCall,
    /// The turn holds the tool call the run is paused on.
    PausedTool,
    /// The turn holds the paused call, and the pause waits for a human consent check-in.
    PendingCheckIn,
    /// The turn is one of the last `keepRecentTurns` turns.
    InsideKeepWindow,
    /// The turn holds a result of a tool named in `excludeTools` (W87): configuration says
    /// its results never leave and are never masked.
    ExcludedTool,
    /// The turn holds a pinned latest result of some tool.
    LastToolResult,
    /// The turn holds a result the model declared as a fact.
    LedgerFact,
    /// The only removable candidate is a summary from an earlier fold.
    OnlyExistingSummary,
    /// The summarizer returned an error.
    SummarizerFailed,
    /// The replacement is not smaller, in characters, than the span it would replace.
    ReplacementNotSmaller,
    /// What must stay is already over the threshold, so removing this span could not bring
    /// the window under it: the stage stood down instead (W81). Names the first turn of the
    /// span that would have left; the record's `floor` says why.
    FloorAboveThreshold,
}

impl RefusalReason {
    /// True for the two pin reasons, which the stand-down treats as one group (W28).
    pub fn is_pin(self) -> bool {
        matches!(
            self,
            RefusalReason::LastToolResult | RefusalReason::LedgerFact
        )
    }
}

/// One turn that refused to leave (W14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    /// Why it stayed.
    pub reason: RefusalReason,
    /// The turn's index in the pre-removal window.
    pub turn_index: usize,
    /// The index of the turn's first message in the pre-removal window.
    pub message_index: usize,
}

/// One turn a pin held (W27).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinnedTurn {
    /// The tool the pin is named after.
    pub tool_name: String,
    /// The held turn.
    pub turn_index: usize,
    /// The turn's total content characters: what the pin cost.
    pub chars: u64,
}

/// What one pin did on a visit (W27, W28).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowObservations {
    /// The admitted pins, newest first.
    pub pinned: Vec<PinnedTurn>,
    /// Contested pins turned away at the ceiling.
    pub yielded: usize,
    /// The ceiling.
    pub limit: usize,
    /// Present and true when the pin stood down on this visit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stand_down: Option<bool>,
}

/// How the model judged a tool result in a findings ledger (W24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Judged to be noise.
    Noise,
    /// Judged and ruled out.
    RuledOut,
    /// Still open.
    Open,
    /// Declared a fact.
    Fact,
}

/// The standing of one tool result that left the window (W26). `standing` absent means the
/// model never declared one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DroppedStanding {
    /// The tool call id the result answered.
    pub id: String,
    /// The model's declared standing, when it declared one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing: Option<Standing>,
}

/// What one engaged visit put in the ledger (W45). Character counts are exact; there is
/// deliberately no "tokens after", because an unsent window cannot be counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowRecord {
    /// The deciding strategy's name.
    pub strategy: String,
    /// The iteration this visit belongs to.
    pub iteration: u32,
    /// Stage ids of the messages that left, in order of first appearance.
    pub removed_stage_ids: Vec<String>,
    /// How many messages left the window.
    pub removed_message_count: usize,
    /// Exact content characters of the window before the visit.
    pub window_chars_before: u64,
    /// Exact content characters of the window the visit leaves.
    pub window_chars_after: u64,
    /// Every turn that refused to leave, named.
    pub refusals: Vec<Refusal>,
    /// Every tool whose result left on this visit, in first-appearance order, unfiltered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_observations: Option<Vec<String>>,
    /// What the last-tool-result pin did, when it did something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observations: Option<WindowObservations>,
    /// What the ledger-fact pin did, when it did something (armed agents only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_facts: Option<WindowObservations>,
    /// Standings of the tool results that left (armed agents only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_standings: Option<Vec<DroppedStanding>>,
    /// What the visit's edit costs in prompt cache, and what the stage did with it, when the
    /// caller gave the provider's cache multipliers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheImpact>,
    /// Present when the stage stood down because what must stay is over the threshold
    /// (W81): the floor, its parts and the threshold. Nothing was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<WindowFloor>,
    /// The strategy-specific part.
    #[serde(flatten)]
    pub detail: RecordDetail,
}

/// What must stay in the window, by part, when it is over the threshold (W80, W81): the
/// stage's reason for standing down. Every figure is in tokens.
///
/// `outsideWindowTokens` is the provider's reading (plus the counted tokens appended since)
/// minus the local count of every message in the window: the system prompt, the tool
/// definitions and the provider's framing, which the window does not hold but every call
/// sends. The other parts are the local counts of the turns that refused to leave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowFloor {
    /// The floor: what would still be sent if everything the configuration lets go went.
    pub floor_tokens: u64,
    /// The configured threshold the floor is over.
    pub threshold_tokens: u64,
    /// The floor's parts; they add up to `floorTokens` (after `maskingSavesTokens`).
    pub parts: FloorParts,
}

/// The parts of a [`WindowFloor`], in tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FloorParts {
    /// The system prompt, the tool definitions and the provider's framing (reading minus the
    /// window's local count).
    pub outside_window_tokens: u64,
    /// System messages inside the window.
    pub system_tokens: u64,
    /// The turn of the current request.
    pub current_request_tokens: u64,
    /// Turns held by a pin (the last result of a tool, a declared fact) or by `excludeTools`.
    pub pinned_tokens: u64,
    /// Turns held by the paused call, a pending check-in or a call without its result.
    pub pending_tokens: u64,
    /// The last `keepRecentTurns` turns.
    pub kept_tail_tokens: u64,
    /// The configured number of recent turns kept.
    pub keep_recent_turns: usize,
    /// `hybrid` only: what masking could still save inside the parts above; subtracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masking_saves_tokens: Option<u64>,
}

/// What an edit does to the provider's prompt cache, and what the stage did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheImpact {
    /// The first message the edit changes, as an index in the window before it: the cached
    /// prefix breaks there.
    pub break_at_message: usize,
    /// What it re-writes, what it saves, and when it pays ([`crate::cache::edit_cost`]).
    #[serde(flatten)]
    pub cost: EditCost,
    /// What the stage did with the edit.
    pub decision: EditDecision,
    /// Why, in words.
    pub reason: String,
}

/// What the stage did with an edit it knew the cache cost of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EditDecision {
    /// Applied: no guard, or it pays back within the guard's horizon.
    Applied,
    /// Held back: it would not pay back within `paybackCalls`; the window is unchanged.
    Held,
    /// Applied although it does not pay back, because the window reached `overflowTokens`.
    Forced,
    /// Not applied, only recorded (`shadow`).
    Shadow,
}

impl WindowRecord {
    /// A record with the always-present fields and no strategy detail.
    pub fn new(strategy: impl Into<String>, iteration: u32, chars: u64) -> Self {
        Self {
            strategy: strategy.into(),
            iteration,
            removed_stage_ids: Vec::new(),
            removed_message_count: 0,
            window_chars_before: chars,
            window_chars_after: chars,
            refusals: Vec::new(),
            dropped_observations: None,
            observations: None,
            ledger_facts: None,
            dropped_standings: None,
            cache: None,
            floor: None,
            detail: RecordDetail::Custom {},
        }
    }

    /// True when the visit stood down because the floor is over the threshold (W81).
    pub fn stood_down(&self) -> bool {
        self.floor.is_some()
    }

    /// True when the visit removed nothing and names a pin refusal (W28). Other refusals,
    /// such as the system envelope and the current request, are always present and do not
    /// count against it.
    pub fn blocked_by_pins(&self) -> bool {
        self.removed_message_count == 0 && self.refusals.iter().any(|r| r.reason.is_pin())
    }
}

/// The strategy-specific fields of a record (W46), flattened into it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecordDetail {
    /// Filed by `summarize-oldest`.
    Compaction(CompactionRecord),
    /// Filed by `hybrid`.
    Hybrid(HybridRecord),
    /// Filed by `observation-masking`.
    Masking(MaskingRecord),
    /// Filed by `token-budget`.
    TokenBudget(TokenBudgetRecord),
    /// Filed by `sliding-window`.
    SlidingWindow(SlidingWindowRecord),
    /// A custom strategy's record carries no extra field.
    Custom {},
}

/// `sliding-window`'s fields (W46).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlidingWindowRecord {
    /// The configured number of recent turns kept.
    pub keep_recent_turns: usize,
    /// Turns before the visit.
    pub turns_before: usize,
    /// Turns after the visit.
    pub turns_after: usize,
}

/// `token-budget`'s fields (W46).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenBudgetRecord {
    /// Provider-reported input tokens of the last call.
    pub measured_tokens: u64,
    /// Exact content characters of the messages appended since that call.
    pub chars_since_measured: u64,
    /// Those messages' tokens as the conversation's token counter counts them: the part of
    /// the trigger that the provider has not reported yet. Never a figure for the window after.
    pub tokens_since_measured: u64,
    /// The configured threshold.
    pub threshold_tokens: u64,
    /// Always true: the strategy files a record only when over budget.
    pub over_budget: bool,
    /// The configured number of recent turns kept.
    pub keep_recent_turns: usize,
    /// Turns before the visit.
    pub turns_before: usize,
    /// Turns after the visit.
    pub turns_after: usize,
}

/// What one over-budget visit to `summarize-oldest` filed (W46).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRecord {
    /// Provider-reported input tokens of the last call: what tripped the check.
    pub measured_tokens: u64,
    /// The configured threshold.
    pub threshold_tokens: u64,
    /// True when the measurement was over budget, so a fold was attempted.
    pub over_budget: bool,
    /// Characters of the summary message; 0 when nothing was produced.
    pub summary_chars: u64,
    /// Tokens the summarizer reported spending, when it ran and reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer_tokens: Option<u64>,
    /// Present and true when the summarizer was deliberately not called: this exact span had
    /// already come back not smaller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer_skipped: Option<bool>,
    /// The configured number of recent turns kept.
    pub keep_recent_turns: usize,
}

/// `observation-masking`'s fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MaskingRecord {
    /// The configured number of most recent tool results left unmasked.
    pub keep_recent_observations: usize,
    /// Tool results replaced by a placeholder on this visit.
    pub masked_message_count: usize,
    /// Tools whose results were masked, in first-appearance order.
    pub masked_tools: Vec<String>,
    /// Tools of `excludeTools` whose results were old enough to mask and were left as they
    /// are (W87), in first-appearance order; absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_tools: Vec<String>,
    /// Present when the masks would have saved fewer tokens than `clearAtLeastTokens`, so
    /// nothing was masked (W88): the configured minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_at_least_tokens: Option<u64>,
}

/// `hybrid`'s fields: masking first, a fold only when masking was not enough.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HybridRecord {
    /// Provider-reported input tokens of the last call.
    pub measured_tokens: u64,
    /// The configured threshold.
    pub threshold_tokens: u64,
    /// The masking half.
    pub masking: MaskingRecord,
    /// The summarizing half, present when masking was not enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionRecord>,
}

/// How a fold keeps its originals (W47).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retain {
    /// The folded messages stay with the conversation and can be produced.
    #[default]
    Conversation,
    /// Only the summary carries them forward.
    Discard,
}

/// A span a fold replaced (W47). Looked up by fingerprint, never by index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FoldedSpan<M> {
    /// FNV-1a of the summary message's content.
    pub summary_fingerprint: String,
    /// The run's id, or `unknown`.
    pub run_id: String,
    /// The iteration of the fold.
    pub iteration: u32,
    /// When the fold happened, from the visit's clock value.
    pub folded_at_ms: u64,
    /// The summarizer model.
    pub model: String,
    /// How many messages were folded.
    pub message_count: usize,
    /// Stage ids of the folded messages.
    pub removed_stage_ids: Vec<String>,
    /// How the originals are kept.
    pub retained: Retain,
    /// The folded messages, present only under `conversation` retention once the plan has
    /// been applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<M>>,
}

/// The span a summary message replaced, found by the summary's fingerprint (W48).
pub fn folded_span_for<'a, M>(
    spans: &'a [FoldedSpan<M>],
    summary_content: &str,
) -> Option<&'a FoldedSpan<M>> {
    let fingerprint = crate::message::fnv1a_hex(summary_content);
    spans
        .iter()
        .find(|span| span.summary_fingerprint == fingerprint)
}

/// Every retained folded message, oldest fold first (W48). Discarded spans add nothing.
pub fn folded_messages<M: Clone>(spans: &[FoldedSpan<M>]) -> Vec<M> {
    spans
        .iter()
        .filter_map(|span| span.messages.as_ref())
        .flat_map(|messages| messages.iter().cloned())
        .collect()
}

/// One message that left the window (W13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Eviction {
    /// Its index in the pre-change window.
    pub index: usize,
    /// How long it was in the window, or 0 when its birth time is unknown.
    pub survival_ms: u64,
}

/// What a strategy decided about a budget (W11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanAction {
    /// Messages were dropped.
    Evict,
    /// Messages were folded into a summary.
    Summarize,
    /// Tool results were masked.
    Mask,
    /// Nothing changed.
    None,
}

/// Budget pressure a token-triggered strategy reports (W11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetPressure {
    /// The threshold.
    pub cap_tokens: u64,
    /// The reading the decision was made on.
    pub projected_tokens: u64,
    /// What the strategy did about it.
    pub plan_action: PlanAction,
}

/// Token usage, as a provider reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// A paid call the strategy made (W11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spend {
    /// The model billed.
    pub model: String,
    /// What it reported, when it reported anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}
