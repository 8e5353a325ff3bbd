//! `summarize-oldest` (W34): fold the oldest removable span into a summary written by a
//! [`Summarizer`]. One attempt; a failure becomes the `summarizer-failed` refusal; a span whose
//! summary came back not smaller is not sent again.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{fresh_reading, Billing, WindowStrategy, DEFAULT_KEEP_RECENT_TURNS};
use crate::error::{SummarizerError, WindowError};
use crate::message::{fnv1a_hex, Role, ToolCallRef, WindowMessage};
use crate::notice::{summary_frame, SUMMARIZER_SYSTEM_PROMPT};
use crate::plan::{ContentReplacement, WindowEdit, WindowPlan};
use crate::record::{
    BudgetPressure, CompactionRecord, FoldedSpan, PlanAction, RecordDetail, Refusal, RefusalReason,
    Retain, Spend, Usage, WindowRecord,
};
use crate::visit::{TurnSpan, Visit};

/// How a transcript line is labelled (W41). Kept unformatted so building a request costs no
/// string formatting; [`TranscriptLine::label`] renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineLabel<'a> {
    /// A message labelled by its role.
    Role(Role),
    /// A tool result, with its recovered tool name when there is one.
    ToolResult(Option<&'a str>),
    /// An assistant message that makes tool calls.
    Calls(Vec<ToolCallRef<'a>>),
}

/// One transcript line of a summary request (W41): a label and the content, borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptLine<'a> {
    /// What the line is labelled with.
    pub label: LineLabel<'a>,
    /// The message content.
    pub content: &'a str,
}

impl TranscriptLine<'_> {
    /// `tool_result[name]` (or `tool_result[unknown]`), `assistant (calls: name(args), …)`, or
    /// the role.
    pub fn label(&self) -> Cow<'_, str> {
        match &self.label {
            LineLabel::Role(role) => Cow::Borrowed(role.as_str()),
            LineLabel::ToolResult(name) => {
                Cow::Owned(format!("tool_result[{}]", name.unwrap_or("unknown")))
            }
            LineLabel::Calls(calls) => {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|call| format!("{}({})", call.name, call.args))
                    .collect();
                Cow::Owned(format!("assistant (calls: {})", calls.join(", ")))
            }
        }
    }
}

/// The span a summarizer is asked about, read line by line on demand: building a request
/// copies nothing, so a summarizer that answers from a cache, or a benchmark's instant one,
/// costs the stage nothing per message.
pub trait TranscriptLines: Send + Sync {
    /// How many lines (messages) the span has.
    fn len(&self) -> usize;
    /// True for an empty span.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `index`-th line.
    fn line(&self, index: usize) -> Option<TranscriptLine<'_>>;
}

/// What the stage asks a summarizer. Read the span with [`SummaryRequest::lines`], or call
/// [`SummaryRequest::render`] for the text of the single user message (W41).
#[derive(Clone, Copy)]
pub struct SummaryRequest<'a> {
    /// The fixed, library-written system prompt (W40).
    pub system_prompt: &'static str,
    /// The model to ask.
    pub model: &'a str,
    /// The span, one line per message.
    pub transcript: &'a dyn TranscriptLines,
}

impl std::fmt::Debug for SummaryRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryRequest")
            .field("model", &self.model)
            .field("lines", &self.transcript.len())
            .finish()
    }
}

impl<'a> SummaryRequest<'a> {
    /// The span's lines, in order.
    pub fn lines(&self) -> impl Iterator<Item = TranscriptLine<'a>> + 'a {
        let transcript = self.transcript;
        (0..transcript.len()).filter_map(move |index| transcript.line(index))
    }

    /// The single user message: the delimiters around one `label: content` line per message.
    pub fn render(&self) -> String {
        let size: usize = self.lines().map(|line| line.content.len() + 24).sum();
        let mut text = String::with_capacity(size + 40);
        text.push_str("<<<TRANSCRIPT>>>\n");
        for line in self.lines() {
            text.push_str(&line.label());
            text.push_str(": ");
            text.push_str(line.content);
            text.push('\n');
        }
        text.push_str("<<<END TRANSCRIPT>>>");
        text
    }
}

/// What a summarizer answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryResponse {
    /// The summary text, used exactly as returned.
    pub text: String,
    /// The tokens the call cost, when the model reported them.
    pub usage: Option<Usage>,
}

/// Writes summaries. The stage calls it at most once per visit and never retries (W42).
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// Summarizes the span in `request`.
    async fn summarize(
        &self,
        request: SummaryRequest<'_>,
    ) -> Result<SummaryResponse, SummarizerError>;
}

/// Folds the oldest removable span into a summary when the window is over budget.
pub struct SummarizeOldest {
    threshold_tokens: u64,
    keep_recent_turns: usize,
    model: String,
    retain: Retain,
    summarizer: Box<dyn Summarizer>,
    /// Keys of spans whose summary came back not smaller; lives as long as the strategy.
    refused_spans: Mutex<HashSet<u64>>,
}

impl std::fmt::Debug for SummarizeOldest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummarizeOldest")
            .field("threshold_tokens", &self.threshold_tokens)
            .field("keep_recent_turns", &self.keep_recent_turns)
            .field("model", &self.model)
            .field("retain", &self.retain)
            .finish()
    }
}

impl SummarizeOldest {
    /// The strategy's name in records.
    pub const NAME: &'static str = "summarize-oldest";

    /// Folds when over `threshold_tokens` (greater than 0), asking `summarizer` with `model`
    /// (non-empty), keeping the default 6 recent turns and the originals with the conversation.
    pub fn new(
        threshold_tokens: u64,
        model: impl Into<String>,
        summarizer: Box<dyn Summarizer>,
    ) -> Result<Self, WindowError> {
        let model = model.into();
        if threshold_tokens == 0 {
            return Err(invalid("thresholdTokens", "must be greater than 0"));
        }
        if model.trim().is_empty() {
            return Err(invalid("model", "must be a non-empty string"));
        }
        Ok(Self {
            threshold_tokens,
            keep_recent_turns: DEFAULT_KEEP_RECENT_TURNS,
            model,
            retain: Retain::Conversation,
            summarizer,
            refused_spans: Mutex::new(HashSet::new()),
        })
    }

    /// Keeps `keep_recent_turns` (at least 1) recent turns.
    pub fn keep_recent_turns(mut self, keep_recent_turns: usize) -> Result<Self, WindowError> {
        if keep_recent_turns == 0 {
            return Err(invalid(
                "keepRecentTurns",
                "must be a whole number of at least 1",
            ));
        }
        self.keep_recent_turns = keep_recent_turns;
        Ok(self)
    }

    /// Chooses how folded originals are kept.
    pub fn retain(mut self, retain: Retain) -> Self {
        self.retain = retain;
        self
    }

    pub(crate) fn threshold_tokens(&self) -> u64 {
        self.threshold_tokens
    }

    /// Folds the planned span. `masks` are replacements the hybrid strategy adds outside the
    /// span; `record` already holds the strategy name and iteration.
    pub(crate) async fn fold<M: WindowMessage>(
        &self,
        visit: &Visit<'_, M>,
        measured: u64,
        judged: u64,
        record: WindowRecord,
        masks: Vec<ContentReplacement>,
    ) -> (WindowPlan<M>, CompactionRecord) {
        let conversation = visit.conversation();
        let removal = visit.plan_removal(self.keep_recent_turns, true);
        let mut record = record;
        record.refusals = removal.refusals.clone();
        let mut compaction = CompactionRecord {
            measured_tokens: measured,
            threshold_tokens: self.threshold_tokens,
            over_budget: true,
            summary_chars: 0,
            summarizer_tokens: None,
            summarizer_skipped: None,
            keep_recent_turns: self.keep_recent_turns,
        };
        let pressure = |action| BudgetPressure {
            cap_tokens: self.threshold_tokens,
            projected_tokens: judged,
            plan_action: action,
        };
        let unchanged = |record: WindowRecord, masks: Vec<ContentReplacement>| {
            let mut plan = WindowPlan::unchanged(record);
            if !masks.is_empty() {
                plan.edit = Some(WindowEdit {
                    removed: 0..0,
                    inserted: None,
                    inserted_at_ms: visit.context().now_ms,
                    replaced: masks,
                });
            }
            plan
        };
        let Some(span) = removal.span else {
            let mut plan = unchanged(record, masks);
            plan.budget_pressure = Some(pressure(PlanAction::None));
            return (plan, compaction);
        };
        let range = span.messages();
        let refuse_first = |record: &mut WindowRecord, reason| {
            record.refusals.insert(
                0,
                Refusal {
                    reason,
                    turn_index: span.from_turn,
                    message_index: range.start,
                },
            );
        };
        let key = span_key(visit, span);
        if self.is_refused(key) {
            refuse_first(&mut record, RefusalReason::ReplacementNotSmaller);
            compaction.summarizer_skipped = Some(true);
            let mut plan = unchanged(record, masks);
            plan.budget_pressure = Some(pressure(PlanAction::None));
            return (plan, compaction);
        }
        let transcript = SpanTranscript {
            conversation,
            range: range.clone(),
        };
        let request = SummaryRequest {
            system_prompt: SUMMARIZER_SYSTEM_PROMPT,
            model: &self.model,
            transcript: &transcript,
        };
        let response = match self.summarizer.summarize(request).await {
            Ok(response) => response,
            Err(error) => {
                refuse_first(&mut record, RefusalReason::SummarizerFailed);
                let mut plan = unchanged(record, masks);
                plan.budget_pressure = Some(pressure(PlanAction::None));
                plan.warning = Some(format!(
                    "summarize-oldest: nothing was folded at iteration {}: the summarizer \
                     failed ({error}); measured {measured} input tokens against a threshold of \
                     {}. The run continues with the window as it was.",
                    visit.context().iteration,
                    self.threshold_tokens
                ));
                return (plan, compaction);
            }
        };
        let frame = summary_frame(
            range.len(),
            visit.context().iteration,
            &self.model,
            self.retain,
            &response.text,
        );
        let frame_chars = frame.chars().count() as u64;
        let span_chars = conversation.chars_in(range.clone());
        compaction.summary_chars = frame_chars;
        compaction.summarizer_tokens = response.usage.map(|usage| usage.input + usage.output);
        let spend = Spend {
            model: self.model.clone(),
            usage: response.usage,
        };
        if frame_chars >= span_chars {
            if let Ok(mut refused) = self.refused_spans.lock() {
                refused.insert(key);
            }
            refuse_first(&mut record, RefusalReason::ReplacementNotSmaller);
            let mut plan = unchanged(record, masks);
            plan.budget_pressure = Some(pressure(PlanAction::None));
            plan.spend = Some(spend);
            return (plan, compaction);
        }
        let (stage_ids, evictions) = visit.removal_facts(range.clone());
        let folded = FoldedSpan {
            summary_fingerprint: fnv1a_hex(&frame),
            run_id: visit.context().run_id.unwrap_or("unknown").to_string(),
            iteration: visit.context().iteration,
            folded_at_ms: visit.context().now_ms,
            model: self.model.clone(),
            message_count: range.len(),
            removed_stage_ids: stage_ids.clone(),
            retained: self.retain,
            messages: None,
        };
        record.removed_stage_ids = stage_ids;
        record.removed_message_count = range.len();
        let masks: Vec<ContentReplacement> = masks
            .into_iter()
            .filter(|mask| !range.contains(&mask.index))
            .collect();
        let masked_saving: u64 = masks
            .iter()
            .filter_map(|mask| {
                let before = conversation.chars_in(mask.index..mask.index + 1);
                before.checked_sub(mask.content.chars().count() as u64)
            })
            .sum();
        record.window_chars_after =
            record.window_chars_before - span_chars + frame_chars - masked_saving;
        let mut plan = WindowPlan::unchanged(record);
        plan.edit = Some(WindowEdit {
            removed: range,
            inserted: Some(frame),
            inserted_at_ms: visit.context().now_ms,
            replaced: masks,
        });
        plan.evictions = evictions;
        plan.folded = vec![folded];
        plan.budget_pressure = Some(pressure(PlanAction::Summarize));
        plan.spend = Some(spend);
        (plan, compaction)
    }

    fn is_refused(&self, key: u64) -> bool {
        self.refused_spans
            .lock()
            .map(|refused| refused.contains(&key))
            .unwrap_or(false)
    }
}

fn invalid(field: &str, reason: &str) -> WindowError {
    WindowError::InvalidConfig {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// The latch key of a span: built from the messages' role-and-content hashes, each taken once
/// and cached by the conversation, so after a message's first visit it costs O(messages in the
/// span) and never rereads their text. The count and characters are mixed
/// in to make collisions between different spans even less likely.
fn span_key<M: WindowMessage>(visit: &Visit<'_, M>, span: TurnSpan) -> u64 {
    let conversation = visit.conversation();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for index in span.messages() {
        let message_hash = conversation.message_hash(index);
        hash ^= message_hash;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^ (span.messages().len() as u64).rotate_left(32) ^ conversation.chars_in(span.messages())
}

/// A span of the conversation as transcript lines (W41), built on demand.
struct SpanTranscript<'a, M: WindowMessage> {
    conversation: &'a crate::Conversation<M>,
    range: std::ops::Range<usize>,
}

impl<M: WindowMessage> TranscriptLines for SpanTranscript<'_, M> {
    fn len(&self) -> usize {
        self.range.len()
    }

    fn line(&self, offset: usize) -> Option<TranscriptLine<'_>> {
        let index = self.range.start + offset;
        if index >= self.range.end {
            return None;
        }
        let conversation = self.conversation;
        let message = conversation.messages().get(index)?;
        let label = match message.role() {
            Role::Tool => LineLabel::ToolResult(
                conversation
                    .meta(index)
                    .and_then(|meta| conversation.tool_name(meta.tool)),
            ),
            Role::Assistant if message.tool_call_count() > 0 => LineLabel::Calls(
                (0..message.tool_call_count())
                    .filter_map(|i| message.tool_call(i))
                    .collect(),
            ),
            role => LineLabel::Role(role),
        };
        Some(TranscriptLine {
            label,
            content: message.content(),
        })
    }
}

#[async_trait]
impl<M: WindowMessage> WindowStrategy<M> for SummarizeOldest {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn billing(&self) -> Option<Billing> {
        Some(Billing {
            model: self.model.clone(),
        })
    }

    async fn plan(&self, visit: &Visit<'_, M>) -> Result<Option<WindowPlan<M>>, WindowError> {
        let Some((measured, since)) = fresh_reading(visit)? else {
            return Ok(None);
        };
        let judged = measured.saturating_add(since);
        if judged <= self.threshold_tokens {
            return Ok(None);
        }
        let record = visit.empty_record(Self::NAME);
        let (mut plan, compaction) = self.fold(visit, measured, judged, record, Vec::new()).await;
        plan.record.detail = RecordDetail::Compaction(compaction);
        Ok(Some(plan))
    }
}
