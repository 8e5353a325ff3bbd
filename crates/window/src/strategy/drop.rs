//! The drop mechanism sliding-window and token-budget share (W30, W31): remove one contiguous
//! span of turns and, where the wire needs it, put a drop notice in its place.

use crate::archive::{spans_sentence, Removal};
use crate::conversation::Kind;
use crate::message::{Role, WindowMessage};
use crate::notice::DropNotice;
use crate::plan::{ContentReplacement, WindowEdit, WindowPlan};
use crate::record::{Refusal, RefusalReason, WindowRecord};
use crate::visit::visit_notice_spans;
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
    // An earlier drop's notice that would stand after the span, behind system messages only
    // (it followed a request that is now leaving): the new notice takes its place rather than
    // standing beside it, so one notice stays (W38).
    let earlier_notice = if at_earliest_position {
        conversation.messages()[range.end..]
            .iter()
            .position(|message| message.role() != Role::System)
            .map(|offset| range.end + offset)
            .filter(|&index| {
                conversation
                    .meta(index)
                    .is_some_and(|meta| meta.kind == Kind::DropNotice)
            })
    } else {
        None
    };
    let span_chars = conversation.chars_in(range.clone());
    let mut inserted = None;
    if at_earliest_position {
        let messages = conversation.messages();
        // Providers want the conversation after the system envelope to open on a user turn.
        let new_head = messages[..range.start]
            .iter()
            .find(|message| message.role() != Role::System)
            .or_else(|| messages.get(range.end));
        // An earlier notice that stays (rewritten below) opens the conversation on a user turn.
        let wire_needs_notice =
            earlier_notice.is_none() && new_head.is_none_or(|message| message.role() != Role::User);
        let tool_names = visit.tool_names_in(range.clone());
        let notice = DropNotice {
            dropped: range.len(),
            iteration: visit.context().iteration,
            strategy: &record.strategy,
            request_kept: kept_request_at_head,
        };
        let (spans, total) = visit_notice_spans(
            visit,
            range.clone(),
            Removal::Dropped,
            visit.context().iteration,
        );
        // The ladder (W31): names and described spans, then the bare span ids, then nothing
        // but the counts; the first that is smaller than the span.
        // The ids a merged earlier notice named: they stay named, so the model can still
        // recall them by id (W38).
        let earlier = earlier_notice
            .and_then(|index| conversation.messages().get(index))
            .map_or(String::new(), |old| earlier_ids_sentence(old.content()));
        // Each rung is written only when the one above did not fit (the first almost always
        // does).
        let rungs = [
            (tool_names.as_slice(), Some(true)),
            (&[][..], Some(false)),
            (&[][..], None),
        ];
        let chosen = rungs
            .iter()
            .map(|(names, described)| {
                let sentence = match described {
                    Some(described) => spans_sentence(&spans, total, *described) + &earlier,
                    None => String::new(),
                };
                notice.render(names, &sentence)
            })
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
    // The new notice rewrites the earlier one in place, or goes where the span was.
    let (inserted, replaced) = match (inserted, earlier_notice) {
        (Some(text), Some(index)) => (
            None,
            vec![ContentReplacement {
                index,
                content: text,
            }],
        ),
        (inserted, _) => (inserted, Vec::new()),
    };
    let inserted_chars = inserted
        .as_ref()
        .map_or(0, |text: &String| text.chars().count() as u64);
    let rewritten_chars: i128 = replaced
        .iter()
        .map(|replacement| {
            let old = conversation.chars_in(replacement.index..replacement.index + 1);
            i128::from(replacement.content.chars().count() as u64) - i128::from(old)
        })
        .sum();
    record.removed_stage_ids = stage_ids;
    record.removed_message_count = range.len();
    let after = i128::from(record.window_chars_before) - i128::from(span_chars)
        + i128::from(inserted_chars)
        + rewritten_chars;
    record.window_chars_after = u64::try_from(after).unwrap_or(0);
    let removed_turns = span.to_turn - span.from_turn + 1;
    let turns_after = turns_before - removed_turns + usize::from(inserted.is_some());
    let edit = WindowEdit {
        removed: range,
        inserted,
        inserted_at_ms: visit.context().now_ms,
        replaced,
    };
    let mut plan = WindowPlan::unchanged(record);
    plan.edit = Some(edit);
    plan.evictions = evictions;
    Dropped { plan, turns_after }
}

/// The span ids an earlier drop notice named, as a sentence for the notice that replaces it
/// (W38): `sp-` and 12 lowercase hex digits each, in order, once each, at most
/// [`crate::archive::NOTICE_SPAN_LIMIT`]; empty when it named none. Only ids are carried over,
/// never the old notice's other text.
fn earlier_ids_sentence(old_notice: &str) -> String {
    let mut ids: Vec<&str> = Vec::new();
    let mut rest = old_notice;
    while let Some(at) = rest.find("sp-") {
        let candidate = rest.get(at..at + 15);
        let is_id = candidate.is_some_and(|id| {
            id[3..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        match candidate {
            Some(id) if is_id => {
                if !ids.contains(&id) && ids.len() < crate::archive::NOTICE_SPAN_LIMIT {
                    ids.push(id);
                }
                rest = &rest[at + 15..];
            }
            _ => rest = &rest[at + 3..],
        }
    }
    if ids.is_empty() {
        String::new()
    } else {
        format!(" Archived by an earlier drop: {}.", ids.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::earlier_ids_sentence;

    #[test]
    fn w38_the_ids_an_earlier_notice_named_are_carried_over_and_nothing_else() {
        let cases = [
            ("no ids", "[dropped history: 2 earlier messages]", ""),
            (
                "two ids, one repeated",
                "by id: sp-0123456789ab (x); sp-abcdefabcdef; sp-0123456789ab",
                " Archived by an earlier drop: sp-0123456789ab; sp-abcdefabcdef.",
            ),
            ("too short", "sp-0123", ""),
            ("not hex", "sp-0123456789xz", ""),
            (
                "an id after a false start",
                "sp-sp-fedcba987654]",
                " Archived by an earlier drop: sp-fedcba987654.",
            ),
            ("multi-byte after the prefix", "sp-é0123456789a", ""),
        ];
        for (rule, notice, expected) in cases {
            assert_eq!(earlier_ids_sentence(notice), expected, "{rule}");
        }
    }
}
