//! Safety the stage can prove (issue 31): properties checked on every visit of generated
//! histories, for every strategy, local and provider-side.
//!
//! A case is a strategy and a seed. From the seed ([`SplitMix64`], no OS randomness) come the
//! strategy's options, a history (system prompt, requests, assistant turns with parallel
//! calls, failed tools, long outputs, injected notes, notes of earlier visits, pending calls,
//! declared findings) and a run of one to six visits with the stage's memory and ledger
//! carried: each plan is applied, the history grows, and the stage visits again with a new
//! usage reading (fresh, stale, above or below the threshold, or 0/0). A summary is answered
//! by [`crate::ExtractiveSummarizer`], a short text, a text not smaller than the span, or a
//! failure. On every visit:
//!
//! - [`Property::Pairing`]: no tool call without its result or result without its call
//!   that was whole before the visit, and a removal is whole turns (W7);
//! - [`Property::CurrentRequest`]: the current request (W19, recomputed) and the system
//!   envelope never leave, and only tool results are rewritten;
//! - [`Property::Pins`]: no removal, and so no summary, covers a turn the pins hold (W21–W28,
//!   recomputed from the messages) or a turn the record names as pinned;
//! - [`Property::Budget`]: the window after the visit fits the strategy's budget (keep turns,
//!   threshold tokens judged from the reading, unmasked observations), or the record says why
//!   not: the cache guard held the edit, a visit-level refusal (summarizer failed, no
//!   replacement smaller, or any reason that does not point at one turn), or every turn that
//!   could have left and stayed is named in `refusals`;
//! - [`Property::Record`]: the record's character and message counts are exact and the applied
//!   window is exactly what the plan describes.
//!
//! `cargo test -p panewise-window` runs a few hundred cases per strategy; `cargo xtask fuzz
//! --target window-properties` runs a million (the crate's `properties` feature).

mod check;
mod generate;
#[cfg(test)]
mod tests;

use std::fmt;

pub use generate::{Answer, SplitMix64, STRATEGIES};

use crate::conversation::Conversation;
use crate::error::WindowError;
use crate::message::Message;
use crate::record::{Usage, WindowRecord};
use crate::stage::StageMemory;
use crate::visit::{Measured, Paused, VisitContext};
use check::{Before, Budget, Standing};
use generate::History;

/// The properties a visit is checked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    /// No tool call without its result, no result without its call.
    Pairing,
    /// The current request and the system envelope stay.
    CurrentRequest,
    /// Pinned turns stay; a summary never replaces a range holding one.
    Pins,
    /// The window fits the budget, or the record says why not.
    Budget,
    /// The record is exact and the plan applies as described.
    Record,
    /// At most one drop notice is in the window (W38): a visit never adds a second.
    OneNotice,
    /// The stage returned an error it should not, or a plan that does not apply.
    Stage,
}

impl Property {
    /// The property's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Property::Pairing => "pairing",
            Property::CurrentRequest => "current-request",
            Property::Pins => "pins",
            Property::Budget => "budget",
            Property::Record => "record",
            Property::OneNotice => "one-notice",
            Property::Stage => "stage",
        }
    }
}

/// A property that did not hold, with the case that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The strategy's index in [`STRATEGIES`].
    pub strategy: usize,
    /// The case's seed.
    pub seed: u64,
    /// The visit (0-based) that broke it.
    pub visit: usize,
    /// Which property.
    pub property: Property,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "property {} broken on visit {} of case `{}`: {}",
            self.property.name(),
            self.visit,
            case_line(self.strategy, self.seed),
            self.detail
        )
    }
}

/// What the checks counted; cases add up with [`Tally::add`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Generated histories.
    pub cases: u64,
    /// Visits checked.
    pub visits: u64,
    /// Visits that engaged and whose plan was applied and checked.
    pub engaged: u64,
    /// Visits where the window held a current request that had to stay.
    pub current_requests: u64,
    /// Pinned turns that had to stay, over all visits.
    pub pinned_turns: u64,
    /// Results of `excludeTools` tools in windows a plan edited, each checked to stay as it
    /// was (W87).
    pub excluded_results: u64,
    /// Summaries that replaced a range, each checked to hold nothing pinned.
    pub folds: u64,
    /// Visits after which the window fit the budget.
    pub fits: u64,
    /// Visits after which it did not, and the record said why.
    pub explained: u64,
    /// Token-strategy visits without a fresh reading (nothing to judge, nothing done).
    pub unmeasured: u64,
    /// Provider-side visits: the budget is the provider's.
    pub delegated: u64,
    /// 0/0 readings answered with the named unmeasurable error (W55).
    pub unmeasurable: u64,
}

impl Tally {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Tally) {
        self.cases += other.cases;
        self.visits += other.visits;
        self.engaged += other.engaged;
        self.current_requests += other.current_requests;
        self.pinned_turns += other.pinned_turns;
        self.excluded_results += other.excluded_results;
        self.folds += other.folds;
        self.fits += other.fits;
        self.explained += other.explained;
        self.unmeasured += other.unmeasured;
        self.delegated += other.delegated;
        self.unmeasurable += other.unmeasurable;
    }

    fn count(&mut self, standing: Standing) {
        match standing {
            Standing::Fits => self.fits += 1,
            Standing::Explained => self.explained += 1,
            Standing::Unmeasured => self.unmeasured += 1,
            Standing::Delegated => self.delegated += 1,
        }
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cases, {} visits, {} plans applied and checked: pairs whole, the current \
             request kept ({} held one), {} pinned turns kept, {} excluded tools' results \
             kept, {} summaries over unpinned ranges; budget: {} fit, {} over with the reason recorded, {} unmeasured, {} \
             provider-side, {} 0/0 readings refused",
            self.cases,
            self.visits,
            self.engaged,
            self.current_requests,
            self.pinned_turns,
            self.excluded_results,
            self.folds,
            self.fits,
            self.explained,
            self.unmeasured,
            self.delegated,
            self.unmeasurable
        )
    }
}

/// The line that names a case: the strategy's name and the seed in hex.
pub fn case_line(strategy: usize, seed: u64) -> String {
    format!("{} {seed:#018x}", STRATEGIES[strategy % STRATEGIES.len()])
}

/// Reads a [`case_line`] back: `(strategy index, seed)`.
pub fn parse_case_line(line: &str) -> Option<(usize, u64)> {
    let mut words = line.split_whitespace();
    let name = words.next()?;
    let seed = words.next()?;
    let strategy = STRATEGIES.iter().position(|known| *known == name)?;
    let digits = seed.strip_prefix("0x").unwrap_or(seed);
    let seed = u64::from_str_radix(digits, 16).ok()?;
    words.next().is_none().then_some((strategy, seed))
}

/// Runs one case: strategy `STRATEGIES[strategy]`, everything else from `seed`. Every visit is
/// checked; the first property that does not hold is returned.
pub fn run_case(strategy: usize, seed: u64) -> Result<Tally, Violation> {
    let strategy = strategy % STRATEGIES.len();
    let fail = |visit: usize, (property, detail): (Property, String)| Violation {
        strategy,
        seed,
        visit,
        property,
        detail,
    };
    let mut rng = SplitMix64::new(seed);
    let config = generate::strategy_config(strategy, &mut rng);
    let stage = config
        .build_stage::<Message>()
        .map_err(|error| fail(0, (Property::Stage, error.to_string())))?;
    let budget = Budget::of(&config);
    let pins = config.pins();
    let pricing = generate::cache_pricing(&mut rng);
    let mut history = History::open(&mut rng);
    let opening = rng.count(0, 14);
    history.grow(&mut rng, opening);
    let mut conversation: Conversation<Message> = Conversation::from_messages(history.take());
    let mut memory = StageMemory::new();
    let mut records: Vec<WindowRecord> = Vec::new();
    let first_iteration = rng.between(1, 40) as u32;
    let visits = rng.count(1, 6);
    // The last call sent all but the messages appended since.
    let mut sent = conversation.len().saturating_sub(rng.count(0, 4));
    let mut tally = Tally {
        cases: 1,
        ..Tally::default()
    };
    for visit in 0..visits {
        if visit > 0 {
            let segments = rng.count(1, 5);
            history.grow(&mut rng, segments);
            conversation.extend(history.take());
        }
        let iteration = first_iteration + visit as u32;
        let measured = reading(&mut rng, &conversation, sent, iteration);
        let paused = match history.pending.first() {
            Some((id, _)) if rng.chance(50) => Some(Paused {
                call_id: id,
                check_in: rng.chance(30),
            }),
            _ => None,
        };
        let answer = Answer::draw(&mut rng);
        let context = VisitContext {
            iteration,
            now_ms: 10_000 + 1_000 * visit as u64,
            run_id: rng.chance(80).then_some("run-1"),
            provider: "anthropic",
            measured,
            current_request: if rng.chance(50) {
                history.said.as_deref()
            } else {
                None
            },
            paused,
            findings: history.findings.as_ref(),
            previous_records: &records,
            cache_pricing: pricing,
        };
        let zero_reading = measured.is_some_and(|measured| {
            measured.iteration.saturating_add(1) >= iteration
                && measured.usage.input == 0
                && measured.usage.output == 0
        });
        tally.visits += 1;
        let outcome = match stage.visit(&conversation, context, &mut memory) {
            Err(WindowError::Unmeasurable { .. })
                if zero_reading
                    && matches!(
                        budget,
                        Budget::Tokens { .. }
                            | Budget::Observations {
                                trigger: Some(_),
                                ..
                            }
                    ) =>
            {
                tally.unmeasurable += 1;
                continue;
            }
            Err(error) => {
                return Err(fail(
                    visit,
                    (Property::Stage, format!("the visit failed: {error}")),
                ))
            }
            Ok(outcome) => outcome,
        };
        let Some(mut plan) = outcome.resolve(|request| answer.answer(request)) else {
            let standing = check::not_engaged(&conversation, &context, budget, &pins)
                .or_else(|failure| check::stood_down(failure, &memory, &records, budget))
                .map_err(|f| fail(visit, f))?;
            tally.count(standing);
            sent = conversation.len();
            continue;
        };
        // The visit only read the window: it is still as it was before, and is copied only
        // when there is a plan to check.
        let before = Before::take(&conversation, &context, budget, &pins);
        tally.engaged += 1;
        conversation.apply(&mut plan).map_err(|error| {
            fail(
                visit,
                (Property::Stage, format!("the plan does not apply: {error}")),
            )
        })?;
        let checked =
            check::engaged(&before, &plan, &conversation, budget).map_err(|f| fail(visit, f))?;
        tally.current_requests += u64::from(before.has_current_request());
        tally.pinned_turns += before.pinned_turn_count() as u64;
        tally.excluded_results += before.excluded_result_count() as u64;
        tally.folds += checked.folds;
        if let Some(standing) = checked.standing {
            tally.count(standing);
        }
        records.push(plan.record);
        sent = conversation.len();
    }
    Ok(tally)
}

/// The provider's reading of the last call: mostly fresh and near the counted size of what it
/// sent, sometimes far off, stale, absent, or 0/0.
fn reading(
    rng: &mut SplitMix64,
    conversation: &Conversation<Message>,
    sent: usize,
    iteration: u32,
) -> Option<Measured> {
    if rng.chance(10) {
        return None;
    }
    let counted = conversation.tokens_in(0..sent);
    let input = match rng.below(25) {
        0 => 0,
        1..=3 => rng.below(40_000),
        _ => counted.saturating_mul(*rng.pick(&[50, 90, 100, 100, 110, 200, 400])) / 100,
    };
    let output = if input == 0 && rng.chance(50) {
        0
    } else {
        rng.between(1, 2_000)
    };
    let iteration = if rng.chance(90) {
        iteration.saturating_sub(1)
    } else {
        iteration.saturating_sub(rng.between(2, 4) as u32)
    };
    Some(Measured {
        usage: Usage { input, output },
        sent_messages: sent,
        iteration,
    })
}
