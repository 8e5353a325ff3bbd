//! One visit of the stage: the caller's data in ([`VisitContext`]), the strategy's view of the
//! window ([`Visit`]), the refusal engine (W14–W18) and the pins (W21–W29).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Range;

use crate::archive::SpanFacts;
use crate::span_cache::{Placeholder, SpanCache};

use crate::cache::CachePricing;
use crate::conversation::{Conversation, TurnMeta, NOT_BORN, NO_TOOL};
use crate::message::{Role, WindowMessage};
use crate::record::{
    Eviction, PinnedTurn, Refusal, RefusalReason, Standing, Usage, WindowObservations, WindowRecord,
};

/// A provider's reading of the last call, as the caller measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// What the provider reported.
    pub usage: Usage,
    /// How many of the window's leading messages that call sent. Messages after them were
    /// appended since and are counted with the conversation's token counter.
    pub sent_messages: usize,
    /// The iteration of the call. A reading older than the previous iteration is stale and
    /// ignored (W53).
    pub iteration: u32,
}

/// The tool call the run is paused on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paused<'a> {
    /// The paused call's id.
    pub call_id: &'a str,
    /// True when the pause waits for a human consent check-in.
    pub check_in: bool,
}

/// The model's declared standings of tool results, by call id (W24). Last filing wins.
/// Ordered by call id, so reading the facts never depends on a hasher's seed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    standings: BTreeMap<String, Standing>,
}

impl Findings {
    /// An armed, empty findings ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Files the model's standing for the result of `call_id`, replacing any earlier filing.
    pub fn declare(&mut self, call_id: impl Into<String>, standing: Standing) {
        self.standings.insert(call_id.into(), standing);
    }

    /// The declared standing of a result, if any.
    pub fn standing(&self, call_id: &str) -> Option<Standing> {
        self.standings.get(call_id).copied()
    }

    fn facts(&self) -> impl Iterator<Item = &str> {
        self.standings
            .iter()
            .filter(|(_, standing)| **standing == Standing::Fact)
            .map(|(id, _)| id.as_str())
    }
}

/// Everything a visit needs from the caller, as data: the stage reads no clock and does no I/O.
#[derive(Debug, Clone, Copy)]
pub struct VisitContext<'a> {
    /// The ReAct iteration of this boundary.
    pub iteration: u32,
    /// The visit's clock value in milliseconds, from the caller's clock.
    pub now_ms: u64,
    /// The run's id; records say `unknown` when it is missing, never a made-up id.
    pub run_id: Option<&'a str>,
    /// The provider the agent calls, named in the unmeasurable error.
    pub provider: &'a str,
    /// The reading of the most recent call, if there was one.
    pub measured: Option<Measured>,
    /// What the person said for this run, to find the current request (W19).
    pub current_request: Option<&'a str>,
    /// The call the run is paused on, if any.
    pub paused: Option<Paused<'a>>,
    /// The findings ledger, when the agent has one armed.
    pub findings: Option<&'a Findings>,
    /// The records filed so far, oldest first, for the stand-down (W28).
    pub previous_records: &'a [WindowRecord],
    /// The provider's prompt-cache multipliers, so an edit's record says what it costs in
    /// cache and the cache guard can hold it back; `None` when there is no cache to break.
    pub cache_pricing: Option<CachePricing>,
}

impl<'a> VisitContext<'a> {
    /// A context for `iteration` at clock value `now_ms`, with nothing else known.
    pub fn new(iteration: u32, now_ms: u64) -> Self {
        Self {
            iteration,
            now_ms,
            run_id: None,
            provider: "unknown",
            measured: None,
            current_request: None,
            paused: None,
            findings: None,
            previous_records: &[],
            cache_pricing: None,
        }
    }
}

/// The pin ceilings (W23, W24) and the tools whose results never leave (W87).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinSettings {
    /// `keepLastToolResults`: 0 turns the recency pin off. Default 2.
    pub keep_last_tool_results: usize,
    /// `keepLedgerFacts`: 0 turns the fact pin off. Default 4; only used when findings are
    /// armed.
    pub keep_ledger_facts: usize,
    /// `excludeTools`: a turn holding a result of one of these tools never leaves and is
    /// never masked, whatever the strategy (W87). Unlike the two pins it has no ceiling and
    /// never stands down: it is configuration, not a heuristic.
    pub exclude_tools: Vec<String>,
}

impl Default for PinSettings {
    fn default() -> Self {
        Self {
            keep_last_tool_results: 2,
            keep_ledger_facts: 4,
            exclude_tools: Vec::new(),
        }
    }
}

impl PinSettings {
    /// True when `tool` is one of `excludeTools`.
    pub fn excludes(&self, tool: Option<&str>) -> bool {
        tool.is_some_and(|tool| self.exclude_tools.iter().any(|name| name == tool))
    }
}

/// A pin candidate, newest first in every list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PinCandidate {
    pub(crate) tool: u32,
    pub(crate) turn_index: usize,
    pub(crate) chars: u64,
}

/// A contiguous run of turns chosen for removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnSpan {
    /// The first turn.
    pub from_turn: usize,
    /// The last turn, inclusive.
    pub to_turn: usize,
    /// The index of the span's first message (pre-change).
    pub start: usize,
    /// One past the index of its last message (pre-change).
    pub end: usize,
}

impl TurnSpan {
    /// The messages of the span, as pre-change indices.
    pub fn messages(&self) -> Range<usize> {
        self.start..self.end
    }
}

/// The refusal engine's answer (W16).
#[derive(Debug, Clone, PartialEq)]
pub struct RemovalPlan {
    /// The removable span, or `None` when nothing may leave.
    pub span: Option<TurnSpan>,
    /// Every turn that refused, in the order of W16.
    pub refusals: Vec<Refusal>,
}

/// What a strategy sees of one visit. The guards are inside: a strategy can ask the refusal
/// engine for a plan, but it cannot skip the refusal rules.
///
/// A visit lives until its plan is returned (through [`crate::PendingSummary::complete`] when
/// the strategy asked for a summary) and is the only thing the strategy writes to:
/// [`Visit::plan_removal`] notes what the pins did so the stage can put it on the record.
/// Nothing in it outlives the visit.
pub struct Visit<'a, M: WindowMessage> {
    conversation: &'a Conversation<M>,
    context: VisitContext<'a>,
    anchor: Option<usize>,
    anchor_turn: Option<usize>,
    paused_turns: Vec<(usize, bool)>,
    tool_pins: Vec<PinCandidate>,
    fact_pins: Vec<PinCandidate>,
    /// Turns holding a result of an excluded tool (W87), ascending.
    excluded_turns: Vec<usize>,
    pins: PinSettings,
    stand_down: bool,
    /// What the pins did on the last [`Visit::plan_removal`]: recency, then ledger facts.
    observed: (Option<WindowObservations>, Option<WindowObservations>),
    /// The archive facts the run's memory keeps, lent to this visit by the stage for its
    /// plan (a visit built alone starts with none). In a cell because a strategy plans with a
    /// shared `Visit`: a notice or a placeholder asks for facts wherever it is written.
    span_cache: RefCell<SpanCache>,
}

impl<'a, M: WindowMessage> Visit<'a, M> {
    /// Prepares a visit: finds the anchor and the paused turn, works out the stand-down and the
    /// pin candidates. Costs O(log n) plus the tool roster and the declared facts.
    pub fn new(
        conversation: &'a Conversation<M>,
        context: VisitContext<'a>,
        pins: PinSettings,
    ) -> Self {
        let anchor = conversation.current_request_index(context.current_request);
        let anchor_turn = anchor.and_then(|index| conversation.turn_index_of(index));
        let paused_turns = paused_turns(conversation, context.paused);
        let stand_down = pins_stand_down(&context, &pins);
        let excluded_turns = excluded_turns(conversation, &pins.exclude_tools);
        let armed_facts = context.findings.is_some() && pins.keep_ledger_facts > 0;
        let (tool_pins, fact_pins) = if stand_down {
            (Vec::new(), Vec::new())
        } else {
            let tool_pins = if pins.keep_last_tool_results > 0 {
                tool_result_pins(conversation, anchor)
            } else {
                Vec::new()
            };
            let fact_pins = match context.findings {
                Some(findings) if armed_facts => ledger_fact_pins(conversation, anchor, findings),
                _ => Vec::new(),
            };
            (tool_pins, fact_pins)
        };
        Self {
            conversation,
            context,
            anchor,
            anchor_turn,
            paused_turns,
            tool_pins,
            fact_pins,
            excluded_turns,
            pins,
            stand_down,
            observed: (None, None),
            span_cache: RefCell::new(SpanCache::default()),
        }
    }

    /// The same visit with the facts `cache` keeps (the stage lends the run's memory's).
    pub(crate) fn with_span_cache(self, cache: SpanCache) -> Self {
        Self {
            span_cache: RefCell::new(cache),
            ..self
        }
    }

    /// The facts kept, now with those this visit computed, given back for the run's memory.
    pub(crate) fn take_span_cache(&mut self) -> SpanCache {
        std::mem::take(self.span_cache.get_mut())
    }

    /// `read` given message `index`'s archive id and description (`None` for a message with
    /// no span: a drop notice, a placeholder): kept from an earlier visit of the run, else
    /// computed now and kept. Asked again from inside `read`, they are computed, not kept.
    pub(crate) fn with_span_facts<R>(
        &self,
        index: usize,
        read: impl FnOnce(Option<&SpanFacts>) -> R,
    ) -> R {
        match self.span_cache.try_borrow_mut() {
            Ok(mut cache) => read(cache.facts(self.conversation, index)),
            Err(_) => read(crate::archive::facts_of(self.conversation, index).as_ref()),
        }
    }

    /// The placeholder masking result `index`: kept from an earlier visit of the run, else
    /// written now by `write` from the result's archive facts and kept. `None` when `write`
    /// found none smaller than the result.
    pub(crate) fn placeholder(
        &self,
        index: usize,
        write: impl FnOnce(Option<&SpanFacts>) -> Option<Placeholder>,
    ) -> Option<Placeholder> {
        match self.span_cache.try_borrow_mut() {
            Ok(mut cache) => cache.placeholder(self.conversation, index, write).cloned(),
            Err(_) => write(crate::archive::facts_of(self.conversation, index).as_ref()),
        }
    }

    /// The window.
    pub fn conversation(&self) -> &'a Conversation<M> {
        self.conversation
    }

    /// The caller's data for this visit.
    pub fn context(&self) -> &VisitContext<'a> {
        &self.context
    }

    /// The pin ceilings and the excluded tools this visit runs with.
    pub fn pins(&self) -> &PinSettings {
        &self.pins
    }

    /// The index of the current request (W19), if there is one.
    pub fn current_request_index(&self) -> Option<usize> {
        self.anchor
    }

    /// The reading of the last call, or `None` before the first call and when it is stale
    /// (W53).
    pub fn measured(&self) -> Option<Measured> {
        self.context
            .measured
            .filter(|measured| measured.iteration.saturating_add(1) >= self.context.iteration)
    }

    /// The provider-reported input tokens plus the counted tokens of every message appended
    /// since that call: the window's size as well as it can be known before it is sent.
    pub fn tokens_now(&self, measured: Measured) -> (u64, u64) {
        let since = self
            .conversation
            .tokens_in(measured.sent_messages..self.conversation.len());
        (measured.usage.input, since)
    }

    /// A record with the always-present fields filled for this visit and no removal.
    pub fn empty_record(&self, strategy: &str) -> WindowRecord {
        WindowRecord::new(
            strategy,
            self.context.iteration,
            self.conversation.window_chars(),
        )
    }

    /// The shared refusal engine (W16). `summary_aware` passes the "is this turn an earlier
    /// summary" predicate that only summarizing strategies use. The pins' observations of
    /// this call are kept on the visit for the record (W27); a later call replaces them.
    pub fn plan_removal(&mut self, keep_recent_turns: usize, summary_aware: bool) -> RemovalPlan {
        let turns = self.conversation.turn_meta();
        let candidate_count = turns.len().saturating_sub(keep_recent_turns);
        let keep_refusals: Vec<Refusal> = turns[candidate_count..]
            .iter()
            .enumerate()
            .map(|(offset, turn)| Refusal {
                reason: RefusalReason::InsideKeepWindow,
                turn_index: candidate_count + offset,
                message_index: turn.start,
            })
            .collect();
        let (tool_admitted, tool_observations) = admit(
            &self.tool_pins,
            candidate_count,
            self.pins.keep_last_tool_results,
            self.conversation,
        );
        let fact_limit = self.pins.keep_ledger_facts;
        let (fact_admitted, fact_observations) = admit(
            &self.fact_pins,
            candidate_count,
            fact_limit,
            self.conversation,
        );
        self.observed = (tool_observations, fact_observations);
        if candidate_count == 0 {
            return RemovalPlan {
                span: None,
                refusals: keep_refusals,
            };
        }
        let mut refusals = Vec::new();
        let mut span: Option<(usize, usize)> = None;
        // Turns that may refuse on this visit: the statically blocked ones (system, unanswered
        // calls) come from the conversation's index; the rest are few. The walk jumps between
        // them, so it costs O(refusing turns × log n) rather than O(turns).
        let mut dynamic: Vec<usize> = self
            .anchor_turn
            .into_iter()
            .chain(self.paused_turns.iter().map(|(turn, _)| *turn))
            .chain(self.excluded_turns.iter().copied())
            .chain(tool_admitted.iter().copied())
            .chain(fact_admitted.iter().copied())
            .filter(|turn| *turn < candidate_count)
            .collect();
        dynamic.sort_unstable();
        dynamic.dedup();
        let mut position = 0;
        while position < candidate_count {
            let next_static = self
                .conversation
                .next_blocked_turn(position)
                .unwrap_or(usize::MAX);
            let next_dynamic = dynamic[dynamic.partition_point(|turn| *turn < position)..]
                .first()
                .copied()
                .unwrap_or(usize::MAX);
            let next_refusing = next_static.min(next_dynamic).min(candidate_count);
            if next_refusing > position {
                span = Some((position, next_refusing - 1));
            }
            if next_refusing >= candidate_count {
                break;
            }
            let turn = &turns[next_refusing];
            if let Some(reason) =
                self.refusal_for(next_refusing, turn, &tool_admitted, &fact_admitted)
            {
                refusals.push(Refusal {
                    reason,
                    turn_index: next_refusing,
                    message_index: turn.start,
                });
            }
            if span.is_some() {
                // A refusing turn after the span began ends the scan (W16).
                break;
            }
            position = next_refusing + 1;
        }
        let Some((from, to)) = span else {
            refusals.extend(keep_refusals);
            return RemovalPlan {
                span: None,
                refusals,
            };
        };
        if summary_aware && from == to && turns[from].starts_with_frame {
            // A lone earlier summary is not folded again until a real turn joins it (W56).
            refusals.push(Refusal {
                reason: RefusalReason::OnlyExistingSummary,
                turn_index: from,
                message_index: turns[from].start,
            });
            refusals.extend(keep_refusals);
            return RemovalPlan {
                span: None,
                refusals,
            };
        }
        refusals.extend(keep_refusals);
        RemovalPlan {
            span: Some(TurnSpan {
                from_turn: from,
                to_turn: to,
                start: turns[from].start,
                end: turns[to].end(),
            }),
            refusals,
        }
    }

    /// Every turn that may not leave on this visit, with its reason (W80): the refusal
    /// engine's walk of [`Visit::plan_removal`], carried past the first span to the end of the
    /// window, and the kept tail. What is left over is everything the configuration lets go.
    /// Costs O(refusing turns × log n), like the engine itself.
    pub(crate) fn kept_turns(&self, keep_recent_turns: usize) -> Vec<(usize, RefusalReason)> {
        let turns = self.conversation.turn_meta();
        let candidate_count = turns.len().saturating_sub(keep_recent_turns);
        let (tool_admitted, _) = admit(
            &self.tool_pins,
            candidate_count,
            self.pins.keep_last_tool_results,
            self.conversation,
        );
        let (fact_admitted, _) = admit(
            &self.fact_pins,
            candidate_count,
            self.pins.keep_ledger_facts,
            self.conversation,
        );
        let mut dynamic: Vec<usize> = self
            .anchor_turn
            .into_iter()
            .chain(self.paused_turns.iter().map(|(turn, _)| *turn))
            .chain(self.excluded_turns.iter().copied())
            .chain(tool_admitted.iter().copied())
            .chain(fact_admitted.iter().copied())
            .filter(|turn| *turn < candidate_count)
            .collect();
        let mut position = 0;
        while let Some(blocked) = self
            .conversation
            .next_blocked_turn(position)
            .filter(|turn| *turn < candidate_count)
        {
            dynamic.push(blocked);
            position = blocked + 1;
        }
        dynamic.sort_unstable();
        dynamic.dedup();
        let mut kept: Vec<(usize, RefusalReason)> = dynamic
            .into_iter()
            .filter_map(|index| {
                self.refusal_for(index, &turns[index], &tool_admitted, &fact_admitted)
                    .map(|reason| (index, reason))
            })
            .collect();
        kept.extend((candidate_count..turns.len()).map(|index| {
            // The current request never leaves, even inside the keep window: name it so.
            let reason = if self.anchor_turn == Some(index) {
                RefusalReason::CurrentRequest
            } else {
                RefusalReason::InsideKeepWindow
            };
            (index, reason)
        }));
        kept
    }

    /// The first refusal reason that applies to a turn, in the fixed order of W15.
    fn refusal_for(
        &self,
        index: usize,
        turn: &TurnMeta,
        tool_pins: &[usize],
        fact_pins: &[usize],
    ) -> Option<RefusalReason> {
        if self.anchor_turn == Some(index) {
            return Some(RefusalReason::CurrentRequest);
        }
        if turn.has_system {
            return Some(RefusalReason::SystemEnvelope);
        }
        if let Some((_, check_in)) = self.paused_turns.iter().find(|(t, _)| *t == index) {
            return Some(if *check_in {
                RefusalReason::PendingCheckIn
            } else {
                RefusalReason::PausedTool
            });
        }
        if turn.unanswered > 0 {
            return Some(RefusalReason::UnresolvedToolCall);
        }
        if self.excluded_turns.binary_search(&index).is_ok() {
            return Some(RefusalReason::ExcludedTool);
        }
        if tool_pins.contains(&index) {
            return Some(RefusalReason::LastToolResult);
        }
        if fact_pins.contains(&index) {
            return Some(RefusalReason::LedgerFact);
        }
        None
    }

    /// What the pins did on the last `plan_removal` call, for the record (W27, W28).
    pub(crate) fn observations(&self) -> (Option<WindowObservations>, Option<WindowObservations>) {
        let armed_facts = self.context.findings.is_some() && self.pins.keep_ledger_facts > 0;
        if self.stand_down {
            let stood_down = |limit| WindowObservations {
                pinned: Vec::new(),
                yielded: 0,
                limit,
                stand_down: Some(true),
            };
            return (
                (self.pins.keep_last_tool_results > 0)
                    .then(|| stood_down(self.pins.keep_last_tool_results)),
                armed_facts.then(|| stood_down(self.pins.keep_ledger_facts)),
            );
        }
        self.observed.clone()
    }

    /// Stage ids and evictions of the messages in `range` (W13). The stage ids come from
    /// per-stage indexes in O(stages × log n); the evictions read only the cached birth times.
    pub fn removal_facts(&self, range: Range<usize>) -> (Vec<String>, Vec<Eviction>) {
        let conversation = self.conversation;
        let range = range.start.min(conversation.len())..range.end.min(conversation.len());
        let stage_ids = conversation
            .stages_in(range.clone())
            .into_iter()
            .map(str::to_string)
            .collect();
        let now = self.context.now_ms;
        // An unknown birth is `NOT_BORN`, `u64::MAX`, which the saturating difference already
        // turns into 0 for any `now`: no branch per message, so the loop vectorises (it is
        // most of a token-budget visit: one entry per dropped message).
        const _: () = assert!(NOT_BORN == u64::MAX);
        let evictions = conversation
            .born_slice(range.clone())
            .iter()
            .zip(range)
            .map(|(born, index)| Eviction {
                index,
                survival_ms: now.saturating_sub(*born),
            })
            .collect();
        (stage_ids, evictions)
    }

    /// The recoverable tool names of the results in `range`, each once, in first-appearance
    /// order (W35). A result whose name cannot be recovered contributes nothing. Costs
    /// O(tools × log n), independent of the range's length.
    pub fn tool_names_in(&self, range: Range<usize>) -> Vec<&'a str> {
        self.conversation.tools_in(range)
    }
}

/// The turns holding a result of an excluded tool (W87), ascending and each once. Costs
/// O(results of the excluded tools × log n).
fn excluded_turns<M: WindowMessage>(
    conversation: &Conversation<M>,
    excluded: &[String],
) -> Vec<usize> {
    let mut turns: Vec<usize> = excluded
        .iter()
        .flat_map(|tool| conversation.results_of_tool(tool))
        .filter_map(|index| conversation.turn_index_of(index))
        .collect();
    turns.sort_unstable();
    turns.dedup();
    turns
}

/// The turns holding the paused call or a result quoting it.
fn paused_turns<M: WindowMessage>(
    conversation: &Conversation<M>,
    paused: Option<Paused<'_>>,
) -> Vec<(usize, bool)> {
    let Some(paused) = paused else {
        return Vec::new();
    };
    [
        conversation.call_index(paused.call_id),
        conversation.result_index(paused.call_id),
    ]
    .into_iter()
    .flatten()
    .filter_map(|index| conversation.turn_index_of(index))
    .map(|turn| (turn, paused.check_in))
    .collect()
}

/// The stand-down (W28): the last two records both removed nothing and named a pin.
fn pins_stand_down(context: &VisitContext<'_>, pins: &PinSettings) -> bool {
    if pins.keep_last_tool_results == 0
        && (context.findings.is_none() || pins.keep_ledger_facts == 0)
    {
        return false;
    }
    let records = context.previous_records;
    records.len() >= 2
        && records[records.len() - 2..]
            .iter()
            .all(WindowRecord::blocked_by_pins)
}

/// Last-tool-result pin candidates (W21), newest first, at most one per turn.
fn tool_result_pins<M: WindowMessage>(
    conversation: &Conversation<M>,
    anchor: Option<usize>,
) -> Vec<PinCandidate> {
    let mut newest: Vec<(usize, u32)> = conversation
        .newest_result_per_tool()
        .filter(|(_, index)| anchor.is_none_or(|anchor| *index > anchor))
        .map(|(tool, index)| (index, tool))
        .collect();
    newest.sort_unstable_by_key(|entry| std::cmp::Reverse(entry.0));
    let mut pins: Vec<PinCandidate> = Vec::with_capacity(newest.len());
    for (index, tool) in newest {
        let Some(turn_index) = conversation.turn_index_of(index) else {
            continue;
        };
        // A parallel batch is one pin: the newest result's tool names it.
        if pins.iter().any(|pin| pin.turn_index == turn_index) {
            continue;
        }
        pins.push(candidate(conversation, tool, turn_index));
    }
    pins
}

/// Ledger-fact pin candidates (W24), newest first.
fn ledger_fact_pins<M: WindowMessage>(
    conversation: &Conversation<M>,
    anchor: Option<usize>,
    findings: &Findings,
) -> Vec<PinCandidate> {
    let mut turns: Vec<usize> = findings
        .facts()
        .filter_map(|id| conversation.result_index(id))
        .filter(|index| anchor.is_none_or(|anchor| *index > anchor))
        .filter_map(|index| conversation.turn_index_of(index))
        .collect();
    turns.sort_unstable_by(|a, b| b.cmp(a));
    turns.dedup();
    turns
        .into_iter()
        .filter_map(|turn_index| {
            let turn = conversation.turn_meta().get(turn_index)?;
            // Named after the newest result in the turn that has a name.
            let tool = (turn.start..turn.end())
                .rev()
                .filter_map(|index| conversation.meta(index))
                .find(|meta| meta.role == Role::Tool && meta.tool != NO_TOOL)?
                .tool;
            Some(candidate(conversation, tool, turn_index))
        })
        .collect()
}

fn candidate<M: WindowMessage>(
    conversation: &Conversation<M>,
    tool: u32,
    turn_index: usize,
) -> PinCandidate {
    let chars = conversation
        .turn_meta()
        .get(turn_index)
        .map_or(0, |turn| conversation.chars_in(turn.start..turn.end()));
    PinCandidate {
        tool,
        turn_index,
        chars,
    }
}

/// Spends a ceiling (W27): the first `limit` contested pins, newest first, are admitted.
fn admit<M: WindowMessage>(
    candidates: &[PinCandidate],
    candidate_count: usize,
    limit: usize,
    conversation: &Conversation<M>,
) -> (Vec<usize>, Option<WindowObservations>) {
    let contested: Vec<&PinCandidate> = candidates
        .iter()
        .filter(|pin| pin.turn_index < candidate_count)
        .collect();
    let admitted: Vec<&PinCandidate> = contested.iter().take(limit).copied().collect();
    if admitted.is_empty() {
        return (Vec::new(), None);
    }
    let observations = WindowObservations {
        pinned: admitted
            .iter()
            .map(|pin| PinnedTurn {
                tool_name: conversation.tool_name(pin.tool).unwrap_or("").to_string(),
                turn_index: pin.turn_index,
                chars: pin.chars,
            })
            .collect(),
        yielded: contested.len() - admitted.len(),
        limit,
        stand_down: None,
    };
    (
        admitted.iter().map(|pin| pin.turn_index).collect(),
        Some(observations),
    )
}

/// [`crate::archive::notice_spans`] for a visit: the named spans' ids and descriptions are read from what the
/// run's memory keeps, and computed (then kept) only the first time. The spans carry no
/// content: a notice prints only ids and descriptions (the archive is [`crate::archive::archived_spans`]'s).
pub(crate) fn visit_notice_spans<M: WindowMessage>(
    visit: &Visit<'_, M>,
    range: std::ops::Range<usize>,
    removal: crate::span::Removal,
    iteration: u32,
) -> (Vec<crate::span::ArchivedSpan>, usize) {
    crate::archive::named_spans(
        visit.conversation(),
        range,
        removal,
        iteration,
        false,
        |index| visit.with_span_facts(index, |facts| facts.cloned()),
    )
}

/// The characters of the longest description a notice for a part of `range` can quote.
/// Drops take a range's oldest turns, so the part is a prefix of `range`, and a notice names its
/// first [`crate::span::NOTICE_SPAN_LIMIT`] tool results, else its first other messages (W73): those are
/// among the first [`crate::span::NOTICE_SPAN_LIMIT`] of each kind in `range`, so only they are described
/// and the scan stops there. Describing every message of a long removable range cost more than
/// the visit (100k messages: 4.6 ms against 70 µs).
pub(crate) fn longest_description_chars<M: WindowMessage>(
    visit: &Visit<'_, M>,
    range: std::ops::Range<usize>,
) -> usize {
    let conversation = visit.conversation();
    let (mut results, mut others) = (0usize, 0usize);
    let mut longest = 0usize;
    for index in range {
        if results >= crate::span::NOTICE_SPAN_LIMIT && others >= crate::span::NOTICE_SPAN_LIMIT {
            break;
        }
        let Some(meta) = conversation.meta(index) else {
            continue;
        };
        if meta.kind.is_stage_note() {
            continue;
        }
        let counted = if meta.role == Role::Tool {
            &mut results
        } else {
            &mut others
        };
        if *counted >= crate::span::NOTICE_SPAN_LIMIT {
            continue;
        }
        *counted += 1;
        let chars =
            visit.with_span_facts(index, |facts| facts.map(|facts| facts.description_chars));
        longest = longest.max(chars.unwrap_or(0));
    }
    longest
}
