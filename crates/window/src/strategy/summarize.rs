//! `summarize-oldest` (W34): fold the oldest removable span into a summary. The strategy
//! does not write the summary: it returns a [`SummaryAsk`], the stage hands the caller a
//! [`SummaryRequest`], and the caller completes the visit with the answer or the failure.
//! One attempt; a failure becomes the `summarizer-failed` refusal; a span whose summary came
//! back not smaller is not sent again (the caller's [`crate::StageMemory`] remembers it).

use std::borrow::Cow;
use std::ops::Range;

use super::{fresh_reading, Billing, Planned, WindowStrategy, DEFAULT_KEEP_RECENT_TURNS};
use crate::archive::{spans_sentence, Removal};
use crate::conversation::Conversation;
use crate::error::{SummarizerError, WindowError};
use crate::floor::{measure_floor, over_threshold, stood_down_plan};
use crate::message::{fnv1a_hex, Role, ToolCallRef, WindowMessage};
use crate::notice::{summary_frame, SUMMARIZER_SYSTEM_PROMPT};
use crate::plan::{ContentReplacement, WindowEdit, WindowPlan};
use crate::record::{
    BudgetPressure, CompactionRecord, FoldedSpan, HybridRecord, MaskingRecord, PlanAction,
    RecordDetail, Refusal, RefusalReason, Retain, Spend, Usage, WindowRecord,
};
use crate::visit::visit_notice_spans;
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

/// What the caller must ask a summarizer for, from [`crate::PendingSummary::request`]: the
/// system prompt, the model and the span's transcript. Read the span with
/// [`SummaryRequest::lines`], or call [`SummaryRequest::render`] for the text of the single
/// user message (W41).
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

/// What a summarizer answered, handed back through [`crate::PendingSummary::complete`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryResponse {
    /// The summary text, used exactly as returned.
    pub text: String,
    /// The tokens the call cost, when the model reported them.
    pub usage: Option<Usage>,
}

/// Folds the oldest removable span into a summary when the window is over budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummarizeOldest {
    threshold_tokens: u64,
    keep_recent_turns: usize,
    model: String,
    retain: Retain,
}

impl SummarizeOldest {
    /// The strategy's name in records.
    pub const NAME: &'static str = "summarize-oldest";

    /// Folds when over `threshold_tokens` (greater than 0), asking for summaries by `model`
    /// (non-empty), keeping the default 6 recent turns and the originals with the conversation.
    pub fn new(threshold_tokens: u64, model: impl Into<String>) -> Result<Self, WindowError> {
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

    /// Plans the fold of the oldest removable span: a [`SummaryAsk`] for it, or the finished
    /// plan when nothing may leave. `masks` are replacements the hybrid strategy adds outside
    /// the span; `record` already holds the strategy name and iteration; `detail` says which
    /// record detail the finished plan carries.
    pub(crate) fn begin_fold<M: WindowMessage>(
        &self,
        visit: &mut Visit<'_, M>,
        reading: Reading,
        record: WindowRecord,
        masks: Vec<ContentReplacement>,
        detail: FoldDetail,
    ) -> Planned<M> {
        let removal = visit.plan_removal(self.keep_recent_turns, true);
        let mut record = record;
        let floor = measure_floor(
            visit,
            self.keep_recent_turns,
            reading.judged,
            self.threshold_tokens,
            matches!(detail, FoldDetail::Hybrid { .. }).then_some(masks.as_slice()),
        );
        if over_threshold(&floor) {
            // No summary can bring the window under what must stay: ask for none (W81).
            let compaction = CompactionRecord {
                measured_tokens: reading.measured,
                threshold_tokens: self.threshold_tokens,
                over_budget: true,
                summary_chars: 0,
                summarizer_tokens: None,
                summarizer_skipped: None,
                keep_recent_turns: self.keep_recent_turns,
            };
            record.detail = match detail {
                FoldDetail::Compaction => RecordDetail::Compaction(compaction),
                FoldDetail::Hybrid { masking, .. } => RecordDetail::Hybrid(HybridRecord {
                    measured_tokens: reading.measured,
                    threshold_tokens: self.threshold_tokens,
                    masking: MaskingRecord {
                        masked_message_count: 0,
                        masked_tools: Vec::new(),
                        ..masking
                    },
                    compaction: Some(compaction),
                }),
            };
            return Planned::Ready(stood_down_plan(
                record,
                removal.refusals,
                removal.span,
                floor,
                reading.judged,
            ));
        }
        record.refusals = removal.refusals;
        let basis = FoldBasis {
            model: self.model.clone(),
            retain: self.retain,
            threshold_tokens: self.threshold_tokens,
            reading,
            record,
            compaction: CompactionRecord {
                measured_tokens: reading.measured,
                threshold_tokens: self.threshold_tokens,
                over_budget: true,
                summary_chars: 0,
                summarizer_tokens: None,
                summarizer_skipped: None,
                keep_recent_turns: self.keep_recent_turns,
            },
            masks,
            detail,
            now_ms: visit.context().now_ms,
        };
        match removal.span {
            None => Planned::Ready(basis.unchanged(None).finish()),
            Some(span) => Planned::Summarize(SummaryAsk { basis, span }),
        }
    }
}

fn invalid(field: &str, reason: &str) -> WindowError {
    WindowError::InvalidConfig {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// The reading a token-triggered fold was judged on: the provider's measured input tokens,
/// and those plus the counted tokens since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading {
    pub(crate) measured: u64,
    pub(crate) judged: u64,
}

/// Which record detail a finished fold carries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FoldDetail {
    /// summarize-oldest's own compaction detail.
    Compaction,
    /// hybrid's detail: the masking it did before folding, and the characters that saved.
    Hybrid {
        masking: MaskingRecord,
        saved_chars: u64,
    },
}

/// What a fold decided before any summary exists, shared by the ask and the plans that end it
/// without one.
#[derive(Debug, Clone, PartialEq)]
struct FoldBasis {
    model: String,
    retain: Retain,
    threshold_tokens: u64,
    reading: Reading,
    record: WindowRecord,
    compaction: CompactionRecord,
    masks: Vec<ContentReplacement>,
    detail: FoldDetail,
    now_ms: u64,
}

/// A plan that is not finished yet: its record still lacks the strategy's detail.
struct FoldResult<M> {
    plan: WindowPlan<M>,
    compaction: CompactionRecord,
    detail: FoldDetail,
    threshold_tokens: u64,
    measured: u64,
}

impl FoldBasis {
    fn pressure(&self, action: PlanAction) -> BudgetPressure {
        BudgetPressure {
            cap_tokens: self.threshold_tokens,
            projected_tokens: self.reading.judged,
            plan_action: action,
        }
    }

    /// A plan that folds nothing: only the masks (if any) apply. `refusal` names the reason
    /// the span itself stayed, filed first (W16).
    fn unchanged<M>(self, refusal: Option<(RefusalReason, TurnSpan)>) -> FoldResult<M> {
        let pressure = self.pressure(PlanAction::None);
        let mut record = self.record;
        if let Some((reason, span)) = refusal {
            record.refusals.insert(
                0,
                Refusal {
                    reason,
                    turn_index: span.from_turn,
                    message_index: span.start,
                },
            );
        }
        let mut plan = WindowPlan::unchanged(record);
        if !self.masks.is_empty() {
            plan.edit = Some(WindowEdit::replacements_only(self.masks, self.now_ms));
        }
        plan.budget_pressure = Some(pressure);
        FoldResult {
            plan,
            compaction: self.compaction,
            detail: self.detail,
            threshold_tokens: self.threshold_tokens,
            measured: self.reading.measured,
        }
    }
}

impl<M> FoldResult<M> {
    /// Files the strategy's detail on the record and returns the plan.
    fn finish(self) -> WindowPlan<M> {
        let mut plan = self.plan;
        match self.detail {
            FoldDetail::Compaction => {
                plan.record.detail = RecordDetail::Compaction(self.compaction);
            }
            FoldDetail::Hybrid {
                masking,
                saved_chars,
            } => {
                if plan
                    .edit
                    .as_ref()
                    .is_some_and(|edit| edit.removed.is_empty())
                {
                    // Only the masks apply: the fold changed nothing.
                    plan.record.window_chars_after = plan.record.window_chars_before - saved_chars;
                }
                plan.record.detail = RecordDetail::Hybrid(HybridRecord {
                    measured_tokens: self.measured,
                    threshold_tokens: self.threshold_tokens,
                    masking,
                    compaction: Some(self.compaction),
                });
            }
        }
        plan
    }
}

/// A fold that waits for its summary: the span to fold and everything decided before asking,
/// so the caller's answer completes the visit exactly as an inline call would have. Built only
/// by the summarizing strategies; the stage turns it into a [`crate::PendingSummary`].
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryAsk {
    basis: FoldBasis,
    span: TurnSpan,
}

impl SummaryAsk {
    /// The messages to fold, as pre-change indices.
    pub fn span(&self) -> Range<usize> {
        self.span.messages()
    }

    /// The model the summary is to be asked of.
    pub fn model(&self) -> &str {
        &self.basis.model
    }

    /// The masks the fold carries besides the span (hybrid's), so the cache guard can judge
    /// the whole edit before a summary is asked for.
    pub(crate) fn masks(&self) -> &[ContentReplacement] {
        &self.basis.masks
    }

    /// The plan when the span was already refused for a summary not smaller than it: the
    /// summarizer is not asked again (`summarizerSkipped`).
    pub(crate) fn skip<M>(self) -> WindowPlan<M> {
        let span = self.span;
        let mut basis = self.basis;
        basis.compaction.summarizer_skipped = Some(true);
        basis
            .unchanged(Some((RefusalReason::ReplacementNotSmaller, span)))
            .finish()
    }

    /// Completes the fold with the caller's answer. The flag is true when the summary came back
    /// not smaller than the span, so the span must not be sent again.
    pub(crate) fn complete<M: WindowMessage>(
        self,
        visit: &Visit<'_, M>,
        answer: Result<SummaryResponse, SummarizerError>,
    ) -> (WindowPlan<M>, bool) {
        let span = self.span;
        let mut basis = self.basis;
        let iteration = visit.context().iteration;
        let response = match answer {
            Ok(response) => response,
            Err(error) => {
                let warning = format!(
                    "summarize-oldest: nothing was folded at iteration {iteration}: the \
                     summarizer failed ({error}); measured {} input tokens against a threshold \
                     of {}. The run continues with the window as it was.",
                    basis.reading.measured, basis.threshold_tokens
                );
                let mut result = basis.unchanged(Some((RefusalReason::SummarizerFailed, span)));
                result.plan.warning = Some(warning);
                return (result.finish(), false);
            }
        };
        let conversation = visit.conversation();
        let range = span.messages();
        let span_chars = conversation.chars_in(range.clone());
        let (spans, total) = visit_notice_spans(visit, range.clone(), Removal::Folded, iteration);
        // The frame names the folded spans with their descriptions, else by bare id, else
        // not at all: the first that keeps the frame smaller than the span (W73).
        let frames: Vec<String> = [
            spans_sentence(&spans, total, true),
            spans_sentence(&spans, total, false),
            String::new(),
        ]
        .iter()
        .map(|sentence| {
            summary_frame(
                range.len(),
                iteration,
                &basis.model,
                basis.retain,
                &response.text,
                sentence,
            )
        })
        .collect();
        let frame = frames
            .iter()
            .find(|frame| (frame.chars().count() as u64) < span_chars)
            .or(frames.last())
            .cloned()
            .unwrap_or_default();
        let frame_chars = frame.chars().count() as u64;
        basis.compaction.summary_chars = frame_chars;
        basis.compaction.summarizer_tokens = response.usage.map(|usage| usage.input + usage.output);
        let spend = Spend {
            model: basis.model.clone(),
            usage: response.usage,
        };
        if frame_chars >= span_chars {
            let mut result = basis.unchanged(Some((RefusalReason::ReplacementNotSmaller, span)));
            result.plan.spend = Some(spend);
            return (result.finish(), true);
        }
        let pressure = basis.pressure(PlanAction::Summarize);
        let (stage_ids, evictions) = visit.removal_facts(range.clone());
        let folded = FoldedSpan {
            summary_fingerprint: fnv1a_hex(&frame),
            run_id: visit.context().run_id.unwrap_or("unknown").to_string(),
            iteration,
            folded_at_ms: basis.now_ms,
            model: basis.model.clone(),
            message_count: range.len(),
            removed_stage_ids: stage_ids.clone(),
            retained: basis.retain,
            messages: None,
        };
        let mut record = basis.record;
        record.removed_stage_ids = stage_ids;
        record.removed_message_count = range.len();
        let masks: Vec<ContentReplacement> = basis
            .masks
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
            inserted_at_ms: basis.now_ms,
            replaced: masks,
        });
        plan.evictions = evictions;
        plan.folded = vec![folded];
        plan.budget_pressure = Some(pressure);
        plan.spend = Some(spend);
        let result = FoldResult {
            plan,
            compaction: basis.compaction,
            detail: basis.detail,
            threshold_tokens: basis.threshold_tokens,
            measured: basis.reading.measured,
        };
        (result.finish(), false)
    }
}

/// The latch key of a span whose summary came back not smaller. The size comes first so a
/// lookup can rule out every refused span of another size without reading any text; only a
/// span of the same size is hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SpanKey {
    pub(crate) messages: usize,
    pub(crate) chars: u64,
    pub(crate) hash: u64,
}

impl SpanKey {
    /// The smallest and largest keys of spans of this size.
    pub(crate) fn size_bounds(messages: usize, chars: u64) -> (Self, Self) {
        let key = |hash| Self {
            messages,
            chars,
            hash,
        };
        (key(0), key(u64::MAX))
    }

    /// The key of the span `range`: its size, and a hash over its messages' role-and-content
    /// hashes, which costs O(the span's bytes).
    pub(crate) fn of<M: WindowMessage>(
        conversation: &Conversation<M>,
        range: Range<usize>,
    ) -> Self {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for index in range.clone() {
            hash ^= conversation.message_hash(index);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Self {
            messages: range.len(),
            chars: conversation.chars_in(range),
            hash,
        }
    }
}

/// A span of the conversation as transcript lines (W41), built on demand.
pub(crate) struct SpanTranscript<'a, M: WindowMessage> {
    conversation: &'a Conversation<M>,
    range: Range<usize>,
}

impl<'a, M: WindowMessage> SpanTranscript<'a, M> {
    pub(crate) fn new(conversation: &'a Conversation<M>, range: Range<usize>) -> Self {
        Self {
            conversation,
            range,
        }
    }

    /// The request for this span, asking `model`.
    pub(crate) fn request<'r>(&'r self, model: &'r str) -> SummaryRequest<'r> {
        SummaryRequest {
            system_prompt: SUMMARIZER_SYSTEM_PROMPT,
            model,
            transcript: self,
        }
    }
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

impl<M: WindowMessage> WindowStrategy<M> for SummarizeOldest {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn billing(&self) -> Option<Billing> {
        Some(Billing {
            model: self.model.clone(),
        })
    }

    fn plan(&self, visit: &mut Visit<'_, M>) -> Result<Option<Planned<M>>, WindowError> {
        let Some((measured, since)) = fresh_reading(visit)? else {
            return Ok(None);
        };
        let judged = measured.saturating_add(since);
        if judged <= self.threshold_tokens {
            return Ok(None);
        }
        let record = visit.empty_record(Self::NAME);
        let reading = Reading { measured, judged };
        Ok(Some(self.begin_fold(
            visit,
            reading,
            record,
            Vec::new(),
            FoldDetail::Compaction,
        )))
    }
}
