//! The drop mechanism sliding-window and token-budget share (W30, W31): remove one contiguous
//! span of turns and, where the wire needs it, put a drop notice in its place.

use crate::archive::{spans_of, spans_sentence, Removal};
use crate::message::{Role, WindowMessage};
use crate::notice::DropNotice;
use crate::plan::{WindowEdit, WindowPlan};
use crate::record::{Refusal, RefusalReason, WindowRecord};
use crate::visit::{RemovalPlan, TurnSpan, Visit};

/// The outcome of dropping a span: the plan, and the turn count after it.
pub(crate) struct Dropped<M> {
    pub(crate) plan: WindowPlan<M>,
    pub(crate) turns_after: usize,
}

/// Drops `span` (a span the refusal engine produced, possibly shortened to fewer turns) and
/// files `record` (already holding the planner's refusals) with the removal facts.
pub(crate) fn drop_span<M: WindowMessage>(
    visit: &Visit<'_, M>,
    removal: &RemovalPlan,
    span: TurnSpan,
    mut record: WindowRecord,
) -> Dropped<M> {
    let conversation = visit.conversation();
    let turns_before = conversation.turn_count();
    let range = span.messages();
    // The turns before the span are the ones the engine stepped over. When they are only the
    // system envelope and the current request, the drop starts at the earliest droppable
    // position (W30 step 5): the original's `spanStart == 0` or request-at-head case, extended
    // to a window that opens with system messages, as chat-completions windows do.
    let stepped_over = removal
        .refusals
        .iter()
        .filter(|r| r.turn_index < span.from_turn);
    let at_earliest_position = stepped_over.clone().all(|r| {
        matches!(
            r.reason,
            RefusalReason::SystemEnvelope | RefusalReason::CurrentRequest
        )
    });
    let kept_request_at_head = at_earliest_position
        && stepped_over
            .clone()
            .any(|r| r.reason == RefusalReason::CurrentRequest);
    let span_chars = conversation.chars_in(range.clone());
    let mut inserted = None;
    if at_earliest_position {
        let messages = conversation.messages();
        // Providers want the conversation after the system envelope to open on a user turn.
        let new_head = messages[..range.start]
            .iter()
            .find(|message| message.role() != Role::System)
            .or_else(|| messages.get(range.end));
        let wire_needs_notice = new_head.is_none_or(|message| message.role() != Role::User);
        let tool_names = visit.tool_names_in(range.clone());
        let notice = DropNotice {
            dropped: range.len(),
            iteration: visit.context().iteration,
            strategy: &record.strategy,
            request_kept: kept_request_at_head,
        };
        let spans = spans_of(
            conversation,
            range.clone(),
            Removal::Dropped,
            visit.context().iteration,
        );
        // The ladder (W31): names and described spans, then the bare span ids, then nothing
        // but the counts; the first that is smaller than the span.
        let rungs = [
            (tool_names.as_slice(), spans_sentence(&spans, true)),
            (&[][..], spans_sentence(&spans, false)),
            (&[][..], String::new()),
        ];
        let chosen = rungs
            .iter()
            .map(|(names, sentence)| notice.render(names, sentence))
            .find(|text| (text.chars().count() as u64) < span_chars);
        match chosen {
            Some(text) => inserted = Some(text),
            None if wire_needs_notice => {
                // Nothing fits and the wire cannot open on this head: keep everything (W31).
                record.refusals.insert(
                    0,
                    Refusal {
                        reason: RefusalReason::ReplacementNotSmaller,
                        turn_index: span.from_turn,
                        message_index: range.start,
                    },
                );
                return Dropped {
                    plan: WindowPlan::unchanged(record),
                    turns_after: turns_before,
                };
            }
            None => {}
        }
    }
    let (stage_ids, evictions) = visit.removal_facts(range.clone());
    let inserted_chars = inserted
        .as_ref()
        .map_or(0, |text: &String| text.chars().count() as u64);
    record.removed_stage_ids = stage_ids;
    record.removed_message_count = range.len();
    record.window_chars_after = record.window_chars_before - span_chars + inserted_chars;
    let removed_turns = span.to_turn - span.from_turn + 1;
    let turns_after = turns_before - removed_turns + usize::from(inserted.is_some());
    let edit = WindowEdit {
        removed: range,
        inserted,
        inserted_at_ms: visit.context().now_ms,
        replaced: Vec::new(),
    };
    let mut plan = WindowPlan::unchanged(record);
    plan.edit = Some(edit);
    plan.evictions = evictions;
    Dropped { plan, turns_after }
}
