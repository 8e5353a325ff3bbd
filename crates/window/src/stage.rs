//! The stage (W49): one visit per iteration boundary. It prepares the visit, asks the strategy,
//! and completes the record with what only the stage knows (dropped tool names, pin
//! observations, standings), so a custom strategy's records carry them too.
//!
//! A visit is synchronous. When the strategy needs a summary, the visit stops at
//! [`VisitOutcome::NeedsSummary`]: the caller obtains the summary however it likes (a model
//! call, a cache, a pure function) and hands it to [`PendingSummary::complete`], which is the
//! only way to the plan. What the stage must remember from one visit to the next lives in the
//! caller's [`StageMemory`], passed to every visit.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::cache::edit_cost;
use crate::cache::CacheGuard;
use crate::error::{SummarizerError, WindowError};
use crate::floor::{floor_step, FloorKey, FloorStep};
use crate::message::{Role, WindowMessage};
use crate::plan::WindowPlan;
use crate::record::{CacheImpact, DroppedStanding, EditDecision};
use crate::span_cache::SpanCache;
use crate::strategy::summarize::{SpanKey, SpanTranscript};
use crate::strategy::{Planned, SummaryAsk, SummaryRequest, SummaryResponse, WindowStrategy};
use crate::visit::{PinSettings, Visit, VisitContext};
use crate::Conversation;

/// The window stage: one strategy and its pin ceilings. It holds no state of its own; a
/// visit's memory of earlier visits is the caller's [`StageMemory`].
pub struct WindowStage<M: WindowMessage> {
    strategy: Box<dyn WindowStrategy<M>>,
    pins: PinSettings,
    guard: CacheGuard,
}

impl<M: WindowMessage> std::fmt::Debug for WindowStage<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowStage")
            .field("strategy", &self.strategy.name())
            .field("pins", &self.pins)
            .field("guard", &self.guard)
            .finish()
    }
}

/// What the stage carries from one visit to the next, owned by the caller and passed to every
/// [`WindowStage::visit`]: whether a strategy warning was already passed on (W49), and the
/// spans whose summary came back not smaller, which are not sent to a summarizer again (W34).
///
/// Keep one per stage and run; a fresh one forgets both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageMemory {
    warned: bool,
    refused_spans: BTreeSet<SpanKey>,
    /// How many tokens the last summary took: the size the cache guard expects of the next
    /// one when it decides, before asking, whether a fold pays (0 before any summary, the
    /// most a fold could save).
    last_summary_tokens: Option<u64>,
    /// The stand-down on file (W81–W84): the request under which a visit stood down because
    /// the floor is over the threshold. While it holds, such visits file nothing.
    floor_stand_down: Option<FloorKey>,
    /// The archive id and description of each message a visit named, so the next visits
    /// read them instead of hashing and describing again (W70, W71).
    span_facts: SpanCache,
}

impl StageMemory {
    /// A memory of no visits.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once a strategy warning has been passed on; later warnings are dropped.
    pub fn warned(&self) -> bool {
        self.warned
    }

    /// True while a stand-down on the floor is on file (W82): visits over the floor under the
    /// same request do not engage.
    pub fn stood_down(&self) -> bool {
        self.floor_stand_down.is_some()
    }

    /// How many spans are remembered as refused for a summary not smaller than them.
    pub fn refused_span_count(&self) -> usize {
        self.refused_spans.len()
    }

    /// True when the span `range` of `conversation` was refused before. A span whose size
    /// matches no refused span is answered without reading its text.
    fn is_refused<M: WindowMessage>(
        &self,
        conversation: &Conversation<M>,
        range: Range<usize>,
    ) -> bool {
        let (low, high) = SpanKey::size_bounds(range.len(), conversation.chars_in(range.clone()));
        if self.refused_spans.range(low..=high).next().is_none() {
            return false;
        }
        self.refused_spans
            .contains(&SpanKey::of(conversation, range))
    }
}

/// The result of one visit. `#[must_use]`: a visit that asked for a summary has no plan until
/// the caller completes it.
#[must_use = "a visit that needs a summary has no plan until `PendingSummary::complete`"]
#[derive(Debug)]
// The outcome is matched as soon as it is returned; boxing either large variant would cost an
// allocation on every visit for nothing.
#[allow(clippy::large_enum_variant)]
pub enum VisitOutcome<'a, M: WindowMessage> {
    /// The strategy did not engage: nothing is to be applied or recorded.
    NotEngaged,
    /// The plan: apply it with [`Conversation::apply`] and append `plan.record` to the ledger.
    Ready(WindowPlan<M>),
    /// The strategy folds a span into a summary the caller must obtain.
    NeedsSummary(PendingSummary<'a, M>),
}

impl<M: WindowMessage> VisitOutcome<'_, M> {
    /// The plan, answering a summary request, if there is one, with `summarize` on the spot.
    /// For callers whose summarizer needs no waiting; `None` when the strategy did not engage.
    pub fn resolve(
        self,
        summarize: impl FnOnce(SummaryRequest<'_>) -> Result<SummaryResponse, SummarizerError>,
    ) -> Option<WindowPlan<M>> {
        match self {
            VisitOutcome::NotEngaged => None,
            VisitOutcome::Ready(plan) => Some(plan),
            VisitOutcome::NeedsSummary(pending) => {
                let answer = summarize(pending.request());
                Some(pending.complete(answer))
            }
        }
    }
}

/// A visit waiting for its summary. Ask a summarizer with [`PendingSummary::request`], then
/// finish the visit with [`PendingSummary::complete`], passing the summary or the failure.
/// The summarizer is asked at most once per visit and never retried (W42).
#[must_use = "the visit's plan comes from `PendingSummary::complete`"]
pub struct PendingSummary<'a, M: WindowMessage> {
    stage: &'a WindowStage<M>,
    visit: Visit<'a, M>,
    ask: SummaryAsk,
    transcript: SpanTranscript<'a, M>,
    memory: &'a mut StageMemory,
}

impl<M: WindowMessage> std::fmt::Debug for PendingSummary<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSummary")
            .field("span", &self.ask.span())
            .field("model", &self.ask.model())
            .finish()
    }
}

impl<M: WindowMessage> PendingSummary<'_, M> {
    /// What to ask the summarizer: the fixed system prompt, the model and the span's
    /// transcript, borrowed from the conversation.
    pub fn request(&self) -> SummaryRequest<'_> {
        self.transcript.request(self.ask.model())
    }

    /// The messages to fold, as pre-change indices.
    pub fn span(&self) -> Range<usize> {
        self.ask.span()
    }

    /// Completes the visit with the summarizer's answer. A failure files the
    /// `summarizer-failed` refusal and a warning, and changes nothing (W42); a summary not
    /// smaller than the span files `summary-not-smaller` and is remembered, so the same span
    /// is not sent again. The cache guard decided before the summary was asked for: a fold
    /// whose summary was paid for is never held (its record still files the real cost).
    pub fn complete(mut self, answer: Result<SummaryResponse, SummarizerError>) -> WindowPlan<M> {
        let span = self.ask.span();
        let (plan, not_smaller) = self.ask.complete(&self.visit, answer);
        // The facts the frame's notice read or computed go back to the run's memory.
        self.memory.span_facts = self.visit.take_span_cache();
        if not_smaller {
            self.memory
                .refused_spans
                .insert(SpanKey::of(self.visit.conversation(), span.clone()));
        }
        let summary_tokens = plan.edit.as_ref().and_then(|edit| {
            edit.inserted
                .as_deref()
                .map(|note| self.visit.conversation().count_tokens(note))
        });
        if summary_tokens.is_some() {
            self.memory.last_summary_tokens = summary_tokens;
        }
        self.stage
            .finish(&self.visit, plan, self.memory, Asked::Summary)
    }
}

impl<M: WindowMessage> WindowStage<M> {
    /// A stage running `strategy` with the default pin ceilings.
    pub fn new(strategy: Box<dyn WindowStrategy<M>>) -> Self {
        Self::with_pins(strategy, PinSettings::default())
    }

    /// A stage running `strategy` with the given pin ceilings.
    pub fn with_pins(strategy: Box<dyn WindowStrategy<M>>, pins: PinSettings) -> Self {
        Self {
            strategy,
            pins,
            guard: CacheGuard::default(),
        }
    }

    /// The same stage judging each edit's prompt-cache cost with `guard`.
    pub fn with_cache_guard(mut self, guard: CacheGuard) -> Self {
        self.guard = guard;
        self
    }

    /// The cache guard.
    pub fn cache_guard(&self) -> CacheGuard {
        self.guard
    }

    /// The strategy's name.
    pub fn strategy_name(&self) -> &str {
        self.strategy.name()
    }

    /// The pin ceilings.
    pub fn pins(&self) -> &PinSettings {
        &self.pins
    }

    /// Visits the window once, synchronously. `memory` is what earlier visits of this run
    /// left; the visit reads and updates it and nothing else.
    ///
    /// A strategy warning is returned on the first plan that carries one and dropped after,
    /// so it reaches the developer once per memory. A span already refused for a summary not
    /// smaller than it is answered at once (`summarizerSkipped`), without asking the caller.
    /// A visit that stands down because the floor is over the threshold files its record once
    /// per request and then does not engage until the floor falls back under it (W81–W84).
    pub fn visit<'a>(
        &'a self,
        conversation: &'a Conversation<M>,
        context: VisitContext<'a>,
        memory: &'a mut StageMemory,
    ) -> Result<VisitOutcome<'a, M>, WindowError> {
        let mut visit = Visit::new(conversation, context, self.pins.clone())
            .with_span_cache(std::mem::take(&mut memory.span_facts));
        let planned = self.strategy.plan(&mut visit);
        // The facts this plan computed stay with the run for the next visits.
        memory.span_facts = visit.take_span_cache();
        memory.span_facts.prune(conversation);
        let Some(planned) = planned? else {
            return Ok(VisitOutcome::NotEngaged);
        };
        let stood_down = matches!(&planned, Planned::Ready(plan) if plan.record.stood_down());
        let (step, on_file) = floor_step(memory.floor_stand_down, FloorKey::of(&visit), stood_down);
        memory.floor_stand_down = on_file;
        match step {
            FloorStep::Quiet => return Ok(VisitOutcome::NotEngaged),
            FloorStep::File | FloorStep::Proceed => {}
        }
        let ask = match planned {
            Planned::Ready(plan) => {
                return Ok(VisitOutcome::Ready(self.finish(
                    &visit,
                    plan,
                    memory,
                    Asked::Nothing,
                )));
            }
            Planned::Summarize(ask) => ask,
        };
        if memory.is_refused(conversation, ask.span()) {
            let plan = ask.skip();
            return Ok(VisitOutcome::Ready(self.finish(
                &visit,
                plan,
                memory,
                Asked::Nothing,
            )));
        }
        let expected_summary = memory.last_summary_tokens.unwrap_or(0);
        if let Some(impact) = self.fold_held_before_asking(&visit, &ask, expected_summary) {
            // The summary would be paid for and then not used: do not ask for it.
            let mut plan = WindowPlan::unchanged(visit.empty_record(self.strategy.name()));
            plan.record.cache = Some(impact);
            return Ok(VisitOutcome::Ready(self.finish(
                &visit,
                plan,
                memory,
                Asked::Nothing,
            )));
        }
        let transcript = SpanTranscript::new(conversation, ask.span());
        // Lent again until the summary is in: the frame names the folded spans.
        let visit = visit.with_span_cache(std::mem::take(&mut memory.span_facts));
        Ok(VisitOutcome::NeedsSummary(PendingSummary {
            stage: self,
            visit,
            ask,
            transcript,
            memory,
        }))
    }

    /// Completes a strategy's plan with what only the stage knows, and passes a warning on
    /// only if none was before.
    fn finish(
        &self,
        visit: &Visit<'_, M>,
        mut plan: WindowPlan<M>,
        memory: &mut StageMemory,
        asked: Asked,
    ) -> WindowPlan<M> {
        let conversation = visit.conversation();
        let (observations, ledger_facts) = visit.observations();
        if plan.record.observations.is_none() {
            plan.record.observations = observations;
        }
        if plan.record.ledger_facts.is_none() {
            plan.record.ledger_facts = ledger_facts;
        }
        if let Some(edit) = &plan.edit {
            let removed = edit.removed.clone();
            if plan.record.dropped_observations.is_none() {
                let names = visit.tool_names_in(removed.clone());
                if !names.is_empty() {
                    plan.record.dropped_observations =
                        Some(names.into_iter().map(str::to_string).collect());
                }
            }
            if let Some(findings) = visit.context().findings {
                let removed_messages = conversation.messages().get(removed).unwrap_or(&[]);
                let standings: Vec<DroppedStanding> = removed_messages
                    .iter()
                    .filter(|message| message.role() == Role::Tool)
                    .filter_map(|message| message.tool_call_id())
                    .map(|id| DroppedStanding {
                        id: id.to_string(),
                        standing: findings.standing(id),
                    })
                    .collect();
                if !standings.is_empty() && plan.record.dropped_standings.is_none() {
                    plan.record.dropped_standings = Some(standings);
                }
            }
        }
        self.judge_cache(visit, &mut plan, asked);
        if plan.warning.is_some() {
            if memory.warned {
                plan.warning = None;
            } else {
                memory.warned = true;
            }
        }
        plan
    }
}

/// Whether a plan reached the guard with a summary already paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// No summary was asked for: the guard may hold the edit.
    Nothing,
    /// The plan folds a summary that was asked for: the guard decided before asking, and a
    /// summary is never paid for an edit then held.
    Summary,
}

/// Where an edit breaks the prompt cache, what it re-writes from there and what it saves per
/// call: `removed` (pre-change indices) replaced by a note of `note_tokens`, and `replaced`
/// messages given new contents. `None` when the edit changes nothing.
fn edit_figures<M: WindowMessage>(
    conversation: &Conversation<M>,
    removed: Range<usize>,
    note_tokens: Option<u64>,
    replaced: &[crate::plan::ContentReplacement],
) -> Option<(usize, u64, u64)> {
    let len = conversation.len();
    let end = removed.end.min(len);
    let removed = removed.start.min(end)..end;
    let removes = !removed.is_empty() || note_tokens.is_some();
    let first_replaced = replaced.iter().map(|r| r.index).min();
    let break_at = match (removes, first_replaced) {
        (false, None) => return None,
        (false, Some(index)) => index,
        (true, None) => removed.start,
        (true, Some(index)) => index.min(removed.start),
    };
    let (mut replaced_before, mut replaced_after) = (0u64, 0u64);
    for replacement in replaced {
        if removed.contains(&replacement.index) {
            continue;
        }
        replaced_before = replaced_before
            .saturating_add(conversation.tokens_in(replacement.index..replacement.index + 1));
        replaced_after =
            replaced_after.saturating_add(conversation.count_tokens(&replacement.content));
    }
    let gone = conversation
        .tokens_in(removed)
        .saturating_add(replaced_before);
    let came = note_tokens.unwrap_or(0).saturating_add(replaced_after);
    let rewritten = conversation
        .tokens_in(break_at..len)
        .saturating_sub(gone)
        .saturating_add(came);
    Some((break_at, rewritten, gone.saturating_sub(came)))
}

impl<M: WindowMessage> WindowStage<M> {
    /// Whether the guard holds a fold back before its summary is asked for (held, or
    /// shadow), judged on the whole edit (the span and any masks beside it) with a summary of
    /// `expected_summary` tokens: the size of the last summary, else 0 (the most the fold
    /// could save). This is the guard's only say on a fold: once a summary is asked for, the
    /// fold is applied ([`Asked::Summary`]), so no summary is paid for an edit then held.
    fn fold_held_before_asking(
        &self,
        visit: &Visit<'_, M>,
        ask: &SummaryAsk,
        expected_summary: u64,
    ) -> Option<CacheImpact> {
        let pricing = visit.context().cache_pricing?;
        let conversation = visit.conversation();
        let span = ask.span();
        let (break_at, rewritten, saved) = edit_figures(
            conversation,
            span.clone(),
            Some(expected_summary),
            ask.masks(),
        )?;
        let cost = edit_cost(pricing, rewritten, saved);
        let estimate = format!(
            "a fold of messages {}..{} would re-write about {rewritten} tokens to save about {saved} per call",
            span.start, span.end
        );
        let payback = match cost.payback_calls {
            Some(calls) => format!("pays back after {calls} call(s) at best"),
            None => "never pays back".to_string(),
        };
        let decision = if self.guard.shadow {
            (
                EditDecision::Shadow,
                format!("shadow: {estimate}: {payback}; no summary asked"),
            )
        } else {
            let horizon = self.guard.payback_calls?;
            if cost.payback_calls.is_some_and(|calls| calls <= horizon) {
                return None;
            }
            let tokens_now = visit.measured().map(|measured| {
                let (reported, since) = visit.tokens_now(measured);
                reported.saturating_add(since)
            });
            if let (Some(limit), Some(now)) = (self.guard.overflow_tokens, tokens_now) {
                if now >= limit {
                    return None;
                }
            }
            (
                EditDecision::Held,
                format!(
                    "held: {estimate}: {payback}, beyond paybackCalls {horizon}; no summary asked"
                ),
            )
        };
        Some(CacheImpact {
            break_at_message: break_at,
            cost,
            decision: decision.0,
            reason: decision.1,
        })
    }

    /// Files what the plan's edit costs in prompt cache, and holds it back (or only records
    /// it) as the guard says. Nothing happens without the caller's cache multipliers.
    fn judge_cache(&self, visit: &Visit<'_, M>, plan: &mut WindowPlan<M>, asked: Asked) {
        let Some(pricing) = visit.context().cache_pricing else {
            return;
        };
        let Some(edit) = &plan.edit else {
            return;
        };
        let conversation = visit.conversation();
        let note = edit
            .inserted
            .as_deref()
            .map(|note| conversation.count_tokens(note));
        let Some((break_at, rewritten, saved)) =
            edit_figures(conversation, edit.removed.clone(), note, &edit.replaced)
        else {
            return;
        };
        let cost = edit_cost(pricing, rewritten, saved);
        let pays = |horizon: u64| cost.payback_calls.is_some_and(|calls| calls <= horizon);
        let tokens_now = visit.measured().map(|measured| {
            let (reported, since) = visit.tokens_now(measured);
            reported.saturating_add(since)
        });
        let payback = match cost.payback_calls {
            Some(calls) => format!("pays back after {calls} call(s)"),
            None => "never pays back (it saves nothing)".to_string(),
        };
        let summary = format!(
            "re-writes {} tokens after message {break_at} to save {} per call: {payback}",
            cost.rewritten_tokens, cost.saved_tokens
        );
        let (decision, reason) = match self.guard.payback_calls {
            _ if self.guard.shadow => (EditDecision::Shadow, format!("shadow: {summary}")),
            Some(horizon) if !pays(horizon) => {
                match (self.guard.overflow_tokens, tokens_now) {
                    (Some(limit), Some(now)) if now >= limit => (
                        EditDecision::Forced,
                        format!(
                            "forced at {now} tokens (overflowTokens {limit}): {summary}, beyond paybackCalls {horizon}"
                        ),
                    ),
                    // The summary is paid for: holding the fold now would waste it. The
                    // guard's say was before asking, on the expected summary's size.
                    _ if asked == Asked::Summary => (
                        EditDecision::Applied,
                        format!(
                            "{summary}, beyond paybackCalls {horizon} with this summary; applied, \
                             as the fold was judged to pay before its summary was asked for"
                        ),
                    ),
                    _ => (
                        EditDecision::Held,
                        format!("held: {summary}, beyond paybackCalls {horizon}"),
                    ),
                }
            }
            Some(horizon) => (
                EditDecision::Applied,
                format!("{summary}, within paybackCalls {horizon}"),
            ),
            None => (EditDecision::Applied, summary),
        };
        if matches!(decision, EditDecision::Held | EditDecision::Shadow) {
            plan.edit = None;
            plan.evictions.clear();
            plan.folded.clear();
            plan.record.removed_message_count = 0;
            plan.record.removed_stage_ids.clear();
            plan.record.window_chars_after = plan.record.window_chars_before;
        }
        plan.record.cache = Some(CacheImpact {
            break_at_message: break_at,
            cost,
            decision,
            reason,
        });
    }
}
