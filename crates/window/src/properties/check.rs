//! The checks of one visit: what the window held before, and what must be true of the plan,
//! its record and the window after it is applied. Each check recomputes what it needs from
//! the messages the slow, plain way, so it does not share the stage's indexes.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crate::config::StrategyConfig;
use crate::conversation::{Conversation, Turn};
use crate::message::{Message, Role, WindowMessage};
use crate::notice::{COMPACTION_FRAME_PREFIX, DROP_NOTICE_PREFIX, MASKED_PLACEHOLDER_PREFIX};
use crate::plan::WindowPlan;
use crate::record::{EditDecision, RefusalReason, WindowRecord};
use crate::visit::{Findings, PinSettings, VisitContext};

use super::Property;

/// What a strategy promises about the window's size, as the checks judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// At most `keep` turns (sliding-window).
    Turns { keep: usize },
    /// At most `threshold` tokens, judged from the reading (token-budget, summarize-oldest,
    /// hybrid); `keep` turns are never removed.
    Tokens { threshold: u64, keep: usize },
    /// No tool result older than the newest `keep` left unmasked (observation-masking),
    /// but for excluded tools' (W87); only once a reading reaches `trigger`, and only when
    /// masking them saves at least `clear_at_least` tokens (W88).
    Observations {
        keep: usize,
        trigger: Option<u64>,
        clear_at_least: Option<u64>,
    },
    /// The provider edits the context on its side; locally nothing changes.
    Provider,
}

impl Budget {
    pub(crate) fn of(config: &StrategyConfig) -> Self {
        match config {
            StrategyConfig::SlidingWindow {
                keep_recent_turns, ..
            } => Budget::Turns {
                keep: *keep_recent_turns,
            },
            StrategyConfig::TokenBudget {
                threshold_tokens,
                keep_recent_turns,
                ..
            }
            | StrategyConfig::SummarizeOldest {
                threshold_tokens,
                keep_recent_turns,
                ..
            }
            | StrategyConfig::Hybrid {
                threshold_tokens,
                keep_recent_turns,
                ..
            } => Budget::Tokens {
                threshold: *threshold_tokens,
                keep: *keep_recent_turns,
            },
            StrategyConfig::ObservationMasking {
                keep_recent_observations,
                clear_at_least_tokens,
                trigger_tokens,
                ..
            } => Budget::Observations {
                keep: *keep_recent_observations,
                trigger: *trigger_tokens,
                clear_at_least: *clear_at_least_tokens,
            },
            StrategyConfig::Provider(_) => Budget::Provider,
        }
    }

    /// The keep window of a strategy that removes turns.
    fn keep_turns(self) -> Option<usize> {
        match self {
            Budget::Turns { keep } | Budget::Tokens { keep, .. } => Some(keep),
            Budget::Observations { .. } | Budget::Provider => None,
        }
    }
}

/// How a visit stood against its strategy's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// The window after the visit fits the budget.
    Fits,
    /// It does not, and the record says why.
    Explained,
    /// No fresh reading: a token budget cannot be judged, and the strategy does not engage.
    Unmeasured,
    /// A provider-side strategy: the budget is the provider's to keep.
    Delegated,
}

/// A failed check: which property and what was seen.
pub(crate) type Failure = (Property, String);

/// The window as it was before a visit, and what the checks derive from it.
pub(crate) struct Before {
    messages: Vec<Message>,
    turns: Vec<Turn>,
    chars: u64,
    tokens: u64,
    /// The reading's judgement of the window: reported input plus the tokens counted since,
    /// when the reading is fresh (W53).
    judged: Option<u64>,
    anchor: Option<usize>,
    pinned_turns: Vec<usize>,
    /// The tool results of excluded tools (W87), by message index.
    excluded_results: Vec<usize>,
    /// The pins and excluded tools the visit ran with.
    pins: PinSettings,
}

impl Before {
    /// Takes the snapshot a visit is checked against.
    pub(crate) fn take(
        conversation: &Conversation<Message>,
        context: &VisitContext<'_>,
        budget: Budget,
        pins: &PinSettings,
    ) -> Self {
        let messages = conversation.messages().to_vec();
        let turns: Vec<Turn> = conversation.turns().collect();
        let judged = judged(conversation, context);
        let anchor = current_request(&messages, context.current_request);
        let tools = result_tools(&messages);
        let excluded_results: Vec<usize> = (0..messages.len())
            .filter(|index| pins.excludes(tools[*index]))
            .collect();
        let turn_of = turn_of(&turns, messages.len());
        let mut pinned_turns = match budget.keep_turns() {
            Some(keep) => {
                let candidates = turns.len().saturating_sub(keep);
                let stood_down = stands_down(context, pins);
                expected_pins(
                    &messages,
                    &turns,
                    anchor,
                    candidates,
                    pins,
                    context.findings,
                    stood_down,
                )
            }
            None => Vec::new(),
        };
        // An excluded tool's turn stays whatever the pins do: no ceiling, no stand-down.
        if budget.keep_turns().is_some() {
            pinned_turns.extend(excluded_results.iter().map(|index| turn_of[*index]));
        }
        Self {
            chars: conversation.window_chars(),
            tokens: conversation.tokens_in(0..conversation.len()),
            messages,
            turns,
            judged,
            anchor,
            pinned_turns,
            excluded_results,
            pins: pins.clone(),
        }
    }

    /// The turns the checks hold pinned.
    pub(crate) fn pinned_turn_count(&self) -> usize {
        self.pinned_turns.len()
    }

    /// The results of excluded tools the checks hold unchanged.
    pub(crate) fn excluded_result_count(&self) -> usize {
        self.excluded_results.len()
    }

    /// True when the window held a current request.
    pub(crate) fn has_current_request(&self) -> bool {
        self.anchor.is_some()
    }
}

/// The reading's judgement of the window, when the reading is fresh (W53): the reported
/// input plus the tokens counted since.
fn judged(conversation: &Conversation<Message>, context: &VisitContext<'_>) -> Option<u64> {
    context
        .measured
        .filter(|measured| measured.iteration.saturating_add(1) >= context.iteration)
        .map(|measured| {
            measured
                .usage
                .input
                .saturating_add(conversation.tokens_in(measured.sent_messages..conversation.len()))
        })
}

/// W19 the plain way: the newest message a person said whose content is what they said for
/// this run, else the newest message a person said.
fn current_request(messages: &[Message], said: Option<&str>) -> Option<usize> {
    let person_said = |message: &Message| {
        message.role == Role::User
            && message.injected_by.is_none()
            && !message.content.starts_with(DROP_NOTICE_PREFIX)
            && !message.content.starts_with(COMPACTION_FRAME_PREFIX)
    };
    said.and_then(|said| {
        messages
            .iter()
            .rposition(|message| person_said(message) && message.content == said)
    })
    .or_else(|| messages.iter().rposition(person_said))
}

/// W28 the plain way: the last two records removed nothing and named a pin.
fn stands_down(context: &VisitContext<'_>, pins: &PinSettings) -> bool {
    if pins.keep_last_tool_results == 0
        && (context.findings.is_none() || pins.keep_ledger_facts == 0)
    {
        return false;
    }
    let records = context.previous_records;
    let blocked = |record: &WindowRecord| {
        record.removed_message_count == 0
            && record.refusals.iter().any(|refusal| {
                matches!(
                    refusal.reason,
                    RefusalReason::LastToolResult | RefusalReason::LedgerFact
                )
            })
    };
    records.len() >= 2 && records[records.len() - 2..].iter().all(blocked)
}

/// The turn of every message.
fn turn_of(turns: &[Turn], len: usize) -> Vec<usize> {
    let mut of = vec![0; len];
    for turn in turns {
        for slot in of.iter_mut().skip(turn.start).take(turn.len) {
            *slot = turn.index;
        }
    }
    of
}

/// The tool of every result (W22): the name it carries, else its call's; `None` for other
/// messages and results whose tool cannot be named.
fn result_tools(messages: &[Message]) -> Vec<Option<&str>> {
    let mut calls: BTreeMap<&str, &str> = BTreeMap::new();
    messages
        .iter()
        .map(|message| {
            for call in &message.tool_calls {
                calls.insert(&call.id, &call.name);
            }
            if message.role != Role::Tool {
                return None;
            }
            message.tool_name.as_deref().or_else(|| {
                message
                    .tool_call_id
                    .as_deref()
                    .and_then(|id| calls.get(id).copied())
            })
        })
        .collect()
}

/// W21–W27 the plain way: the turns the last-tool-result and ledger-fact pins hold on a visit
/// that removes turns before `candidates`.
fn expected_pins(
    messages: &[Message],
    turns: &[Turn],
    anchor: Option<usize>,
    candidates: usize,
    pins: &PinSettings,
    findings: Option<&Findings>,
    stood_down: bool,
) -> Vec<usize> {
    if stood_down {
        return Vec::new();
    }
    let turn_of = turn_of(turns, messages.len());
    let after_anchor = |index: usize| anchor.is_none_or(|anchor| index > anchor);
    let mut held = Vec::new();
    // Newest result of each tool, newest first; a parallel batch is one pin.
    let tools = result_tools(messages);
    let mut newest: Vec<(&str, usize)> = Vec::new();
    for (index, tool) in tools.iter().enumerate().rev() {
        if !after_anchor(index) {
            continue;
        }
        let Some(tool) = *tool else {
            continue;
        };
        if !newest.iter().any(|(known, _)| *known == tool) {
            newest.push((tool, index));
        }
    }
    let mut tool_turns: Vec<usize> = Vec::new();
    for (_, index) in newest {
        if !tool_turns.contains(&turn_of[index]) {
            tool_turns.push(turn_of[index]);
        }
    }
    if pins.keep_last_tool_results > 0 {
        held.extend(
            tool_turns
                .into_iter()
                .filter(|turn| *turn < candidates)
                .take(pins.keep_last_tool_results),
        );
    }
    if let (Some(findings), true) = (findings, pins.keep_ledger_facts > 0) {
        let mut fact_turns: Vec<usize> = Vec::new();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        for (index, message) in messages.iter().enumerate().rev() {
            let Some(id) = message.tool_call_id.as_deref() else {
                continue;
            };
            // Only the newest result quoting an id counts.
            if message.role != Role::Tool || !seen.insert(id) {
                continue;
            }
            let is_fact = findings.standing(id) == Some(crate::record::Standing::Fact);
            let turn = &turns[turn_of[index]];
            // A fact turn is named after its newest named result; one with none is skipped (W24).
            let named = tools[turn.start..turn.start + turn.len]
                .iter()
                .any(Option::is_some);
            if is_fact && named && after_anchor(index) && !fact_turns.contains(&turn.index) {
                fact_turns.push(turn.index);
            }
        }
        held.extend(
            fact_turns
                .into_iter()
                .filter(|turn| *turn < candidates)
                .take(pins.keep_ledger_facts),
        );
    }
    held
}

/// Results without their call before them, and calls without a result, by id.
fn pairing(messages: &[Message]) -> (BTreeSet<&str>, BTreeSet<&str>) {
    let mut calls_seen: BTreeSet<&str> = BTreeSet::new();
    let mut answered: BTreeSet<&str> = BTreeSet::new();
    let mut orphans = BTreeSet::new();
    for message in messages {
        for call in &message.tool_calls {
            calls_seen.insert(&call.id);
        }
        if message.role == Role::Tool {
            if let Some(id) = message.tool_call_id.as_deref() {
                answered.insert(id);
                if !calls_seen.contains(id) {
                    orphans.insert(id);
                }
            }
        }
    }
    let unanswered = calls_seen.difference(&answered).copied().collect();
    (orphans, unanswered)
}

/// What the checks counted on one visit.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Checked {
    pub(crate) folds: u64,
    pub(crate) standing: Option<Standing>,
}

/// A visit over its token budget that did not engage is explained when the stage stands down
/// (W81–W83): its memory says so, and the last floor record of this run names a floor over
/// the same threshold. That record is the reason, filed once; the quiet visits after it are
/// not a second loop. Any other failure stands.
pub(crate) fn stood_down(
    failure: Failure,
    memory: &crate::StageMemory,
    records: &[crate::WindowRecord],
    budget: Budget,
) -> Result<Standing, Failure> {
    let Budget::Tokens { threshold, .. } = budget else {
        return Err(failure);
    };
    let floor_over = records
        .iter()
        .rev()
        .find_map(|record| record.floor.as_ref())
        .is_some_and(|floor| floor.threshold_tokens == threshold && floor.floor_tokens > threshold);
    if failure.0 == Property::Budget && memory.stood_down() && floor_over {
        Ok(Standing::Explained)
    } else {
        Err(failure)
    }
}

/// Checks a visit that did not engage (so nothing was applied): the strategy had no reason
/// to.
pub(crate) fn not_engaged(
    conversation: &Conversation<Message>,
    context: &VisitContext<'_>,
    budget: Budget,
    pins: &PinSettings,
) -> Result<Standing, Failure> {
    match budget {
        Budget::Turns { keep } if conversation.turn_count() > keep => Err((
            Property::Budget,
            format!(
                "{} turns against keepRecentTurns {keep}, and the strategy did not engage",
                conversation.turn_count()
            ),
        )),
        Budget::Turns { .. } => Ok(Standing::Fits),
        Budget::Tokens { threshold, .. } => match judged(conversation, context) {
            None => Ok(Standing::Unmeasured),
            Some(judged) if judged > threshold => Err((
                Property::Budget,
                format!("judged {judged} tokens against a threshold of {threshold}, and the strategy did not engage"),
            )),
            Some(_) => Ok(Standing::Fits),
        },
        Budget::Observations {
            keep,
            trigger,
            clear_at_least,
        } => {
            if let Some(trigger) = trigger {
                match judged(conversation, context) {
                    None => return Ok(Standing::Unmeasured),
                    Some(judged) if judged < trigger => return Ok(Standing::Fits),
                    Some(_) => {}
                }
            }
            let old = unmasked_old_results(conversation.messages(), keep, pins);
            let saving = masking_saves(conversation, &old);
            match old.first() {
                None => Ok(Standing::Fits),
                // Masking all of them would save less than the minimum (W88).
                Some(_) if clear_at_least.is_some_and(|minimum| saving < minimum) => {
                    Ok(Standing::Explained)
                }
                Some(index) => Err((
                    Property::Budget,
                    format!("tool result {index} is older than the newest {keep} and unmasked, and the strategy did not engage"),
                )),
            }
        }
        Budget::Provider => Ok(Standing::Delegated),
    }
}

/// Tool results older than the newest `keep` that masking would shorten (W: masking rule:
/// more than 200 characters and not a placeholder already), but for excluded tools' (W87).
fn unmasked_old_results(messages: &[Message], keep: usize, pins: &PinSettings) -> Vec<usize> {
    let tools = result_tools(messages);
    let results: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, message)| message.role == Role::Tool)
        .map(|(index, _)| index)
        .collect();
    let older = results.len().saturating_sub(keep);
    results[..older]
        .iter()
        .copied()
        .filter(|index| {
            let content = &messages[*index].content;
            content.chars().count() as u64 > crate::conversation::MASKABLE_MIN_CHARS
                && !content.starts_with(MASKED_PLACEHOLDER_PREFIX)
                && !pins.excludes(tools[*index])
        })
        .collect()
}

/// The tokens placeholders would save over the results at `indices`, counted the plain way:
/// each result's tokens less its placeholder's, where the placeholder is shorter (W88).
fn masking_saves(conversation: &Conversation<Message>, indices: &[usize]) -> u64 {
    let messages = conversation.messages();
    let tools = result_tools(messages);
    indices
        .iter()
        .map(|index| {
            let content = &messages[*index].content;
            let chars = content.chars().count() as u64;
            // The placeholder ladder (W31, W73): the span named and described, its bare id,
            // the tool alone; the first shorter than the result.
            let span = crate::archive::facts_of(conversation, *index);
            let Some(placeholder) = [
                crate::notice::masked_placeholder(tools[*index], chars, span.as_ref(), true),
                crate::notice::masked_placeholder(tools[*index], chars, span.as_ref(), false),
                crate::notice::masked_placeholder(tools[*index], chars, None, false),
            ]
            .into_iter()
            .find(|text| (text.chars().count() as u64) < chars) else {
                return 0;
            };
            conversation
                .count_tokens(content)
                .saturating_sub(conversation.count_tokens(&placeholder))
        })
        .sum()
}

/// Checks an engaged visit's plan, then the window it left (`after`, the plan applied).
pub(crate) fn engaged(
    before: &Before,
    plan: &WindowPlan<Message>,
    after: &Conversation<Message>,
    budget: Budget,
) -> Result<Checked, Failure> {
    let record = &plan.record;
    let removed = plan.edit.as_ref().map_or(0..0, |edit| edit.removed.clone());
    let masked_excluded = plan
        .edit
        .iter()
        .flat_map(|edit| edit.replaced.iter())
        .find(|replacement| before.excluded_results.contains(&replacement.index));
    if let Some(replacement) = masked_excluded {
        return Err((
            Property::Pins,
            format!(
                "tool result {} of an excluded tool was masked",
                replacement.index
            ),
        ));
    }
    exact_record(before, plan, after, &removed)?;
    applied_as_planned(before, plan, after)?;
    one_notice(before, after)?;
    pairs_kept(before, after)?;
    let removed_turns = whole_turns(before, &removed)?;
    never_removed(before, record, &removed)?;
    let mut checked = Checked::default();
    if !plan.folded.is_empty() {
        // The summary replaced exactly the removed range: it held nothing pinned (above).
        checked.folds = 1;
    }
    checked.standing = Some(budget_kept(before, record, after, budget, removed_turns)?);
    Ok(checked)
}

/// W38: a visit never leaves more drop notices than the window had, nor more than one.
fn one_notice(before: &Before, after: &Conversation<Message>) -> Result<(), Failure> {
    let notices = |messages: &[Message]| {
        messages
            .iter()
            .filter(|m| {
                m.role == Role::User && m.content.starts_with(crate::notice::DROP_NOTICE_PREFIX)
            })
            .count()
    };
    let (was, is) = (notices(&before.messages), notices(after.messages()));
    if is > was.max(1) {
        return Err((
            Property::OneNotice,
            format!("{is} drop notices after the visit, {was} before"),
        ));
    }
    Ok(())
}

/// W45: the record's counts are exact.
fn exact_record(
    before: &Before,
    plan: &WindowPlan<Message>,
    after: &Conversation<Message>,
    removed: &Range<usize>,
) -> Result<(), Failure> {
    let record = &plan.record;
    let facts = [
        (
            "windowCharsBefore",
            record.window_chars_before,
            before.chars,
        ),
        (
            "windowCharsAfter",
            record.window_chars_after,
            after.window_chars(),
        ),
        (
            "removedMessageCount",
            record.removed_message_count as u64,
            removed.len() as u64,
        ),
    ];
    for (field, recorded, actual) in facts {
        if recorded != actual {
            return Err((
                Property::Record,
                format!("the record says {field} {recorded}, the window has {actual}"),
            ));
        }
    }
    Ok(())
}

/// The window after is the kept messages in order, the note where the span was, and the
/// replacements in place, each keeping its role and call id.
fn applied_as_planned(
    before: &Before,
    plan: &WindowPlan<Message>,
    after: &Conversation<Message>,
) -> Result<(), Failure> {
    let Some(edit) = &plan.edit else {
        return if after.messages() == before.messages.as_slice() {
            Ok(())
        } else {
            Err((
                Property::Record,
                "a plan without an edit changed the window".into(),
            ))
        };
    };
    let removed = edit.removed.clone();
    let note = edit
        .inserted
        .as_ref()
        .map(|content| Message::stage_note(content.clone(), edit.inserted_at_ms));
    let expected_len = before.messages.len() - removed.len() + usize::from(note.is_some());
    let mismatch = |what: String| Err((Property::Record, what));
    if after.len() != expected_len {
        return mismatch(format!(
            "the applied window has {} messages, the plan leaves {expected_len}",
            after.len()
        ));
    }
    for replacement in &edit.replaced {
        let Some(message) = before.messages.get(replacement.index) else {
            return mismatch(format!(
                "replacement at {} is outside the window",
                replacement.index
            ));
        };
        // A tool result may be masked; a drop notice may be rewritten as the one notice of a
        // later drop (W38). Nothing else is ever rewritten.
        let notice_rewritten = message.role == Role::User
            && message
                .content
                .starts_with(crate::notice::DROP_NOTICE_PREFIX)
            && replacement
                .content
                .starts_with(crate::notice::DROP_NOTICE_PREFIX);
        if message.role != Role::Tool && !notice_rewritten {
            return Err((
                Property::CurrentRequest,
                format!(
                    "replacement at {} rewrites a {} message",
                    replacement.index,
                    message.role.as_str()
                ),
            ));
        }
    }
    let replaced = |index: usize| {
        edit.replaced
            .iter()
            .find(|replacement| replacement.index == index)
            .map(|replacement| replacement.content.as_str())
    };
    let shift = removed.len();
    let note_len = usize::from(note.is_some());
    for (index, original) in before.messages.iter().enumerate() {
        let at = match index {
            index if index < removed.start => index,
            index if index < removed.end => continue,
            index => index - shift + note_len,
        };
        let kept = &after.messages()[at];
        let content_ok = match replaced(index) {
            Some(content) => kept.content == content,
            None => kept.content == original.content,
        };
        let same = content_ok
            && kept.role == original.role
            && kept.tool_calls == original.tool_calls
            && kept.tool_call_id == original.tool_call_id
            && kept.tool_name == original.tool_name
            && kept.injected_by == original.injected_by;
        if !same {
            return mismatch(format!(
                "message {index} is not what the plan kept (now at {at})"
            ));
        }
    }
    if let Some(note) = note {
        if after.messages()[removed.start] != note {
            return mismatch(format!("the note is not at message {}", removed.start));
        }
    }
    Ok(())
}

/// No tool call without its result, no result without its call: the visit leaves no pair
/// broken that was whole before.
fn pairs_kept(before: &Before, after: &Conversation<Message>) -> Result<(), Failure> {
    let (orphans_before, unanswered_before) = pairing(&before.messages);
    let (orphans_after, unanswered_after) = pairing(after.messages());
    if let Some(id) = orphans_after.difference(&orphans_before).next() {
        return Err((
            Property::Pairing,
            format!("the result of {id} is in the window without its call"),
        ));
    }
    if let Some(id) = unanswered_after.difference(&unanswered_before).next() {
        return Err((
            Property::Pairing,
            format!("call {id} is in the window without its result"),
        ));
    }
    Ok(())
}

/// The removed range is whole turns (W7): `(first, last)` turn, or `None` when nothing left.
fn whole_turns(before: &Before, removed: &Range<usize>) -> Result<Option<(usize, usize)>, Failure> {
    if removed.is_empty() {
        return Ok(None);
    }
    let first = before.turns.iter().find(|turn| turn.start == removed.start);
    let last = before
        .turns
        .iter()
        .find(|turn| turn.start + turn.len == removed.end);
    match (first, last) {
        (Some(first), Some(last)) => Ok(Some((first.index, last.index))),
        _ => Err((
            Property::Pairing,
            format!("removal {removed:?} does not start and end on turn boundaries"),
        )),
    }
}

/// The current request, the system envelope and every pinned turn stay (W20, W21–W27): the
/// pins the checks derive and the pins the record names.
fn never_removed(
    before: &Before,
    record: &WindowRecord,
    removed: &Range<usize>,
) -> Result<(), Failure> {
    let summary = if removed.is_empty() {
        ""
    } else {
        " (removed or folded)"
    };
    if let Some(anchor) = before.anchor.filter(|anchor| removed.contains(anchor)) {
        return Err((
            Property::CurrentRequest,
            format!("the current request, message {anchor}, left the window{summary}"),
        ));
    }
    if let Some(index) = removed
        .clone()
        .find(|index| before.messages[*index].role == Role::System)
    {
        return Err((
            Property::CurrentRequest,
            format!("system message {index} left the window"),
        ));
    }
    let recorded = record
        .observations
        .iter()
        .chain(record.ledger_facts.iter())
        .flat_map(|observations| observations.pinned.iter().map(|pin| pin.turn_index));
    for turn_index in before.pinned_turns.iter().copied().chain(recorded) {
        let Some(turn) = before.turns.get(turn_index) else {
            return Err((
                Property::Pins,
                format!("the record pins turn {turn_index}, which does not exist"),
            ));
        };
        let range = turn.start..turn.start + turn.len;
        if range.start < removed.end && removed.start < range.end {
            return Err((
                Property::Pins,
                format!("pinned turn {turn_index} (messages {range:?}) is inside the removal {removed:?}{summary}"),
            ));
        }
    }
    Ok(())
}

/// The refusals that point at one turn (W14); any other reason (summarizer-failed,
/// replacement-not-smaller, or one added later) explains the whole visit.
fn is_turn_reason(reason: RefusalReason) -> bool {
    matches!(
        reason,
        RefusalReason::CurrentRequest
            | RefusalReason::SystemEnvelope
            | RefusalReason::PausedTool
            | RefusalReason::PendingCheckIn
            | RefusalReason::UnresolvedToolCall
            | RefusalReason::InsideKeepWindow
            | RefusalReason::ExcludedTool
            | RefusalReason::LastToolResult
            | RefusalReason::LedgerFact
            | RefusalReason::OnlyExistingSummary
    )
}

/// Whether the window after fits the budget, or the record says why not.
fn budget_kept(
    before: &Before,
    record: &WindowRecord,
    after: &Conversation<Message>,
    budget: Budget,
    removed_turns: Option<(usize, usize)>,
) -> Result<Standing, Failure> {
    let held = record
        .cache
        .as_ref()
        .is_some_and(|impact| matches!(impact.decision, EditDecision::Held | EditDecision::Shadow));
    match budget {
        Budget::Provider => Err((
            Property::Budget,
            "a provider-side strategy engaged locally".into(),
        )),
        Budget::Observations { keep, .. } => {
            let left = unmasked_old_results(after.messages(), keep, &before.pins);
            match left.first() {
                None => Ok(Standing::Fits),
                Some(_) if held => Ok(Standing::Explained),
                Some(index) => Err((
                    Property::Budget,
                    format!("tool result {index} is older than the newest {keep} and still unmasked, and the record says nothing of why"),
                )),
            }
        }
        Budget::Turns { keep } => {
            let candidates = before.turns.len().saturating_sub(keep);
            // A removal never enters the keep window (W17), so what it took is candidates.
            let taken = removed_turns.map_or(0, |(first, last)| last + 1 - first);
            let survivors = candidates.saturating_sub(taken);
            if survivors == 0 {
                return Ok(Standing::Fits);
            }
            explained(record, held, candidates, removed_turns)
        }
        Budget::Tokens { threshold, keep } => {
            let Some(judged) = before.judged else {
                return Err((
                    Property::Budget,
                    "a token strategy engaged without a fresh reading".into(),
                ));
            };
            let after_tokens = after.tokens_in(0..after.len());
            let estimate =
                i128::from(judged) + i128::from(after_tokens) - i128::from(before.tokens);
            if estimate <= i128::from(threshold) {
                return Ok(Standing::Fits);
            }
            let candidates = before.turns.len().saturating_sub(keep);
            explained(record, held, candidates, removed_turns).map_err(|(property, why)| {
                (
                    property,
                    format!("{estimate} tokens after the visit against a threshold of {threshold}: {why}"),
                )
            })
        }
    }
}

/// The record explains a window over budget: the cache guard held the edit, a visit-level
/// refusal (the summarizer failed, no replacement was smaller, a floor), or every turn that
/// could have left and did not is named — those before the removed span, and the one that
/// ended it (W16: one span per visit).
fn explained(
    record: &WindowRecord,
    held: bool,
    candidates: usize,
    removed_turns: Option<(usize, usize)>,
) -> Result<Standing, Failure> {
    if held
        || record
            .refusals
            .iter()
            .any(|refusal| !is_turn_reason(refusal.reason))
    {
        return Ok(Standing::Explained);
    }
    let named = |turn: usize| {
        record.refusals.iter().any(|refusal| {
            refusal.turn_index == turn && refusal.reason != RefusalReason::InsideKeepWindow
        })
    };
    // A lone earlier summary is a span the planner found and refused whole (W16 step 4,
    // W56): it ends the walk as a removed span would.
    let lone_summary = record
        .refusals
        .iter()
        .find(|refusal| refusal.reason == RefusalReason::OnlyExistingSummary)
        .map(|refusal| (refusal.turn_index, refusal.turn_index));
    let must_be_named: Vec<usize> = match removed_turns.or(lone_summary) {
        None => (0..candidates).collect(),
        Some((first, last)) => (0..first.min(candidates))
            .chain((last + 1 < candidates).then_some(last + 1))
            .collect(),
    };
    match must_be_named.into_iter().find(|turn| !named(*turn)) {
        None => Ok(Standing::Explained),
        Some(turn) => {
            let refusals: Vec<String> = record
                .refusals
                .iter()
                .map(|refusal| format!("{:?}@{}", refusal.reason, refusal.turn_index))
                .collect();
            Err((
                Property::Budget,
                format!(
                    "turn {turn} could have left and stayed, and the record names no refusal \
                     for it (removed turns {removed_turns:?}, {candidates} turns outside the \
                     keep window, refusals [{}])",
                    refusals.join(", ")
                ),
            ))
        }
    }
}
