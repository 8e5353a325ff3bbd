//! How far one evaluation's totals can be trusted: the spread of the per-session cost ratio,
//! a bootstrap interval over sessions, the share of sessions a strategy makes cheaper, and a
//! split-half check of the recommendation; pure functions of per-session outcomes.
//!
//! ## Definitions
//! - A session's **cost ratio** is the strategy's cost over the raw history's cost on that
//!   session; sessions whose raw cost is not positive have none and are left out of every
//!   figure here.
//! - **Quantiles** are R's type 7 (numpy's default): over the `n` sorted values, `q` falls at
//!   `h = (n − 1) q`, between the values at `⌊h⌋` and `⌊h⌋ + 1`, linearly interpolated. The
//!   median is `q = 0.5` (of `[1, 2, 3, 4]`: 2.5); the quartiles `q = 0.25` and `0.75`.
//! - The **bootstrap interval** is over sessions: [`RESAMPLES`] times, `n` sessions are drawn
//!   with replacement, and the dollar-weighted ratio (the drawn sessions' strategy cost summed
//!   over their raw cost summed) computed; the interval is the 5th and 95th percentiles
//!   (type 7) of those ratios. The draws come from [`SplitMix64`] seeded with [`SEED`], so the
//!   same outcomes always give the same interval.
//! - A strategy's **loss** over a set of sessions is its evicted-before-use share (calls over
//!   calls that made a tool call) plus its re-fetch share (re-fetches over tool calls), each
//!   pooled over the sessions, as the report's totals compute them.
//! - The **pick** on a set of sessions is the strategy with the lowest dollar-weighted cost
//!   ratio among those whose loss is at most raw's plus [`LOSS_TOLERANCE`]; the raw history
//!   (ratio 1, loss 0) is always eligible, so the pick may be raw. Ties go to the earlier
//!   strategy.
//! - A strategy is **good** on a set of sessions when its loss is eligible, its ratio is below
//!   1, and its ratio is at most [`BEST_MARGIN`] times the pick's ratio there.
//! - The **split-half check** shuffles the sessions [`SPLITS`] times (Fisher–Yates with the
//!   same generator) and cuts each order into a first half of `⌊n/2⌋` sessions and the rest.
//!   The recommendation **holds** on a split when the pick of the first half is, on the second
//!   half, within [`BEST_MARGIN`] of that half's pick and (unless it is raw) below 1 there.
//!   A strategy's own agreement is the share of splits on which it is good on both halves or on
//!   neither: 1 for one consistently good or consistently not.
//! - The **recommendation** ([`summarize`]) is the pick on all the sessions, when it is not raw,
//!   its 90 % interval lies wholly below 1, and the recommendation held on at least
//!   [`MIN_AGREEMENT`] of the splits; otherwise there is none: no strategy is reliably better
//!   than raw on this data.

use serde::Serialize;

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 2_000;

/// Random halvings of the split-half check.
pub const SPLITS: usize = 200;

/// The seed of every draw (the bootstrap's and the split-half check's).
pub const SEED: u64 = 0x5eed_0039_c0ff_ee00;

/// How much more loss than raw's (evicted-before-use share plus re-fetch share, a fraction of
/// 1) a strategy may have and still be picked.
pub const LOSS_TOLERANCE: f64 = 0.05;

/// How close to the best a pick must stay on the other half: its ratio at most this times the
/// best's.
pub const BEST_MARGIN: f64 = 1.05;

/// The least split-half agreement a recommendation needs.
pub const MIN_AGREEMENT: f64 = 0.8;

/// The interval's level: the central 90 % of the bootstrap ratios.
pub const INTERVAL_LEVEL: f64 = 0.9;

/// splitmix64 (Steele, Lea and Flood 2014): a fixed-seed 64-bit generator, written out so the
/// draws are the same on every machine and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0), by multiply-shift: the bias is below
    /// `bound / 2^64`, nothing at the sizes drawn here.
    pub fn below(&mut self, bound: usize) -> usize {
        let wide = u128::from(self.next_u64()) * bound as u128;
        usize::try_from(wide >> 64).unwrap_or(0)
    }
}

/// The `q` quantile (type 7, see the module doc) of `values`, NaNs left out; `None` when none
/// is left or `q` is outside `[0, 1]`.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    quantile_sorted(&sorted, q)
}

fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let low = h.floor();
    let index = low as usize;
    let below = *sorted.get(index)?;
    let above = sorted.get(index + 1).copied().unwrap_or(below);
    Some(below + (h - low) * (above - below))
}

/// The median of `values` (type 7: the mean of the two middle values of an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// The first and third quartiles of `values`, `[q1, q3]`; the interquartile range is their
/// difference.
pub fn quartiles(values: &[f64]) -> Option<[f64; 2]> {
    Some([quantile(values, 0.25)?, quantile(values, 0.75)?])
}

/// One strategy on one session: what the statistics need of its figures.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Outcome {
    /// Its cost in US dollars.
    pub cost: f64,
    /// Calls whose action needed content the strategy had taken out.
    pub evicted_before_use: u64,
    /// Calls that made a tool call.
    pub action_calls: u64,
    /// Tool calls that fetched again what the strategy had taken out.
    pub refetches: u64,
    /// Tool calls.
    pub tool_calls: u64,
}

/// `(strategy cost, raw cost)` per session, the sessions without a positive raw cost left out.
pub fn cost_pairs(strategy: &[Outcome], raw: &[Outcome]) -> Vec<(f64, f64)> {
    strategy
        .iter()
        .zip(raw)
        .filter(|(_, raw)| raw.cost > 0.0)
        .map(|(outcome, raw)| (outcome.cost, raw.cost))
        .collect()
}

/// The dollar-weighted ratio of `pairs`: their costs summed over their raw costs summed.
pub fn weighted_ratio(pairs: &[(f64, f64)]) -> Option<f64> {
    let (cost, raw) = pairs
        .iter()
        .fold((0.0, 0.0), |(c, r), (cost, raw)| (c + cost, r + raw));
    (raw > 0.0).then(|| cost / raw)
}

/// The share of `pairs` whose cost is strictly below the raw cost.
pub fn cheaper_share(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let cheaper = pairs.iter().filter(|(cost, raw)| cost < raw).count();
    Some(cheaper as f64 / pairs.len() as f64)
}

/// The central `level` bootstrap interval of the dollar-weighted ratio of `pairs`, over
/// `resamples` draws of as many sessions with replacement from a generator seeded with `seed`.
/// `None` without pairs or resamples.
pub fn bootstrap_interval(
    pairs: &[(f64, f64)],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Option<[f64; 2]> {
    if pairs.is_empty() || resamples == 0 {
        return None;
    }
    let mut generator = SplitMix64::new(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (mut cost, mut raw) = (0.0, 0.0);
        for _ in 0..pairs.len() {
            if let Some((c, r)) = pairs.get(generator.below(pairs.len())) {
                cost += c;
                raw += r;
            }
        }
        if raw > 0.0 {
            ratios.push(cost / raw);
        }
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some([
        quantile_sorted(&ratios, tail)?,
        quantile_sorted(&ratios, 1.0 - tail)?,
    ])
}

/// The pooled loss of one strategy over `sessions` (indices into `outcomes`).
pub fn loss(outcomes: &[Outcome], sessions: &[usize]) -> f64 {
    let mut sums = [0u64; 4];
    for outcome in sessions.iter().filter_map(|&s| outcomes.get(s)) {
        sums[0] = sums[0].saturating_add(outcome.evicted_before_use);
        sums[1] = sums[1].saturating_add(outcome.action_calls);
        sums[2] = sums[2].saturating_add(outcome.refetches);
        sums[3] = sums[3].saturating_add(outcome.tool_calls);
    }
    let share = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 / whole as f64
        }
    };
    share(sums[0], sums[1]) + share(sums[2], sums[3])
}

/// What each strategy looks like on one set of sessions: its ratio (`None` without a raw
/// cost) and whether its loss is eligible.
fn standings(outcomes: &[Vec<Outcome>], sessions: &[usize]) -> Vec<(Option<f64>, bool)> {
    let raw = outcomes.first().map(Vec::as_slice).unwrap_or(&[]);
    let raw_loss = loss(raw, sessions);
    outcomes
        .iter()
        .map(|strategy| {
            let pairs: Vec<(f64, f64)> = sessions
                .iter()
                .filter_map(|&s| Some((strategy.get(s)?.cost, raw.get(s)?.cost)))
                .filter(|(_, raw)| *raw > 0.0)
                .collect();
            let eligible = loss(strategy, sessions) <= raw_loss + LOSS_TOLERANCE;
            (weighted_ratio(&pairs), eligible)
        })
        .collect()
}

/// The index of the pick among `standings`: the eligible strategy of lowest ratio, raw (index
/// 0) when none is below it.
fn pick_of(standings: &[(Option<f64>, bool)]) -> usize {
    let mut best = (0, 1.0);
    for (index, (ratio, eligible)) in standings.iter().enumerate().skip(1) {
        if let (Some(ratio), true) = (ratio, eligible) {
            if *ratio < best.1 {
                best = (index, *ratio);
            }
        }
    }
    best.0
}

/// The pick on `sessions` (see the module doc): an index into `outcomes`, whose first entry is
/// the raw history's. `outcomes` is per strategy, then per session.
pub fn pick(outcomes: &[Vec<Outcome>], sessions: &[usize]) -> usize {
    pick_of(&standings(outcomes, sessions))
}

/// Whether strategy `index` is good among `standings`, whose pick is `best`.
fn good(standings: &[(Option<f64>, bool)], index: usize, best: usize) -> bool {
    let best_ratio = standings.get(best).and_then(|s| s.0).unwrap_or(1.0);
    match standings.get(index) {
        Some((Some(ratio), true)) => {
            (index == 0 || *ratio < 1.0) && *ratio <= best_ratio * BEST_MARGIN
        }
        _ => false,
    }
}

/// The split-half check's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SplitHalf {
    /// The share of splits on which the first half's pick held on the second half.
    pub recommendation: Option<f64>,
    /// Per strategy, the share of splits on which it was good on both halves or on neither.
    pub per_strategy: Vec<Option<f64>>,
    /// The splits made (0 with fewer than 2 sessions).
    pub splits: usize,
}

/// The split-half check over `outcomes` (per strategy, then per session; raw first), `splits`
/// shuffles from a generator seeded with `seed`.
pub fn split_half(outcomes: &[Vec<Outcome>], splits: usize, seed: u64) -> SplitHalf {
    let sessions = outcomes.first().map_or(0, Vec::len);
    if sessions < 2 || splits == 0 {
        return SplitHalf {
            recommendation: None,
            per_strategy: vec![None; outcomes.len()],
            splits: 0,
        };
    }
    let mut generator = SplitMix64::new(seed);
    let mut order: Vec<usize> = (0..sessions).collect();
    let mut held = 0usize;
    let mut agreed = vec![0usize; outcomes.len()];
    for _ in 0..splits {
        for i in (1..sessions).rev() {
            order.swap(i, generator.below(i + 1));
        }
        let (first, second) = order.split_at(sessions / 2);
        let train = standings(outcomes, first);
        let test = standings(outcomes, second);
        let (train_pick, test_pick) = (pick_of(&train), pick_of(&test));
        if good(&test, train_pick, test_pick) {
            held += 1;
        }
        for (index, count) in agreed.iter_mut().enumerate() {
            if good(&train, index, train_pick) == good(&test, index, test_pick) {
                *count += 1;
            }
        }
    }
    let share = |count: usize| Some(count as f64 / splits as f64);
    SplitHalf {
        recommendation: share(held),
        per_strategy: agreed.into_iter().map(share).collect(),
        splits,
    }
}

/// One strategy's confidence figures over the sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Confidence {
    /// The dollar-weighted cost ratio over the sessions compared.
    pub cost_ratio_total: Option<f64>,
    /// The median per-session cost ratio.
    pub cost_ratio_median: Option<f64>,
    /// The per-session cost ratio's first and third quartiles, `[q1, q3]`.
    pub cost_ratio_iqr: Option<[f64; 2]>,
    /// The 90 % bootstrap interval of the dollar-weighted ratio, `[lo, hi]`.
    pub cost_ratio_interval90: Option<[f64; 2]>,
    /// The share of sessions on which it costs less than raw.
    pub cheaper_than_raw_share: Option<f64>,
    /// The split-half agreement of its verdict (good or not).
    pub split_half_agreement: Option<f64>,
    /// Its pooled loss over every session.
    pub loss: f64,
    /// The sessions compared (those with a positive raw cost).
    pub sessions: usize,
}

/// What to deploy, on the evidence of every session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recommendation {
    /// The pick on every session (0: raw).
    pub pick: usize,
    /// Whether the pick is recommended: not raw, its interval below 1, the check's agreement
    /// at least [`MIN_AGREEMENT`].
    pub reliable: bool,
    /// The share of splits on which the recommendation held.
    pub split_half_agreement: Option<f64>,
    /// The splits made.
    pub splits: usize,
    /// The sessions it was judged on.
    pub sessions: usize,
}

/// Every strategy's confidence and the recommendation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Per strategy, in `outcomes`' order.
    pub strategies: Vec<Confidence>,
    /// The recommendation.
    pub recommendation: Recommendation,
}

/// The [`Summary`] of `outcomes` (per strategy, then per session; the raw history first and
/// every strategy over the same sessions), with the module's constants.
pub fn summarize(outcomes: &[Vec<Outcome>]) -> Summary {
    let raw = outcomes.first().map(Vec::as_slice).unwrap_or(&[]);
    let all: Vec<usize> = (0..raw.len()).collect();
    let checked = split_half(outcomes, SPLITS, SEED);
    let strategies: Vec<Confidence> = outcomes
        .iter()
        .enumerate()
        .map(|(index, strategy)| {
            let pairs = cost_pairs(strategy, raw);
            let ratios: Vec<f64> = pairs.iter().map(|(cost, raw)| cost / raw).collect();
            Confidence {
                cost_ratio_total: weighted_ratio(&pairs),
                cost_ratio_median: median(&ratios),
                cost_ratio_iqr: quartiles(&ratios),
                cost_ratio_interval90: bootstrap_interval(&pairs, RESAMPLES, INTERVAL_LEVEL, SEED),
                cheaper_than_raw_share: cheaper_share(&pairs),
                split_half_agreement: checked.per_strategy.get(index).copied().flatten(),
                loss: loss(strategy, &all),
                sessions: pairs.len(),
            }
        })
        .collect();
    let pick = pick(outcomes, &all);
    let below_one = strategies
        .get(pick)
        .and_then(|c| c.cost_ratio_interval90)
        .is_some_and(|[_, hi]| hi < 1.0);
    let agreement = checked.recommendation;
    Summary {
        recommendation: Recommendation {
            pick,
            reliable: pick != 0 && below_one && agreement.is_some_and(|a| a >= MIN_AGREEMENT),
            split_half_agreement: agreement,
            splits: checked.splits,
            sessions: raw.iter().filter(|o| o.cost > 0.0).count(),
        },
        strategies,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_follow_type_7() {
        let cases: &[(&[f64], f64, Option<f64>)] = &[
            (&[1.0, 2.0, 3.0, 4.0], 0.5, Some(2.5)),
            (&[4.0, 1.0, 3.0, 2.0], 0.5, Some(2.5)),
            (&[1.0, 2.0, 3.0], 0.5, Some(2.0)),
            (&[1.0, 2.0, 3.0, 4.0], 0.25, Some(1.75)),
            (&[1.0, 2.0, 3.0, 4.0], 0.75, Some(3.25)),
            (&[1.0, 2.0, 3.0, 4.0, 5.0], 0.25, Some(2.0)),
            (&[7.0], 0.9, Some(7.0)),
            (&[1.0, 3.0], 0.0, Some(1.0)),
            (&[1.0, 3.0], 1.0, Some(3.0)),
            (&[1.0, f64::NAN, 3.0], 0.5, Some(2.0)),
            (&[], 0.5, None),
            (&[1.0], 1.5, None),
        ];
        for (values, q, expected) in cases {
            assert_eq!(quantile(values, *q), *expected, "{values:?} at {q}");
        }
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(quartiles(&[1.0, 2.0, 3.0, 4.0]), Some([1.75, 3.25]));
        assert_eq!(quartiles(&[]), None);
    }

    #[test]
    fn splitmix64_gives_the_published_sequence() {
        // The reference implementation's first outputs from seed 1234567.
        let mut generator = SplitMix64::new(1_234_567);
        let expected = [
            6_457_827_717_110_365_317,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
        ];
        for value in expected {
            assert_eq!(generator.next_u64(), value);
        }
        let mut generator = SplitMix64::new(7);
        for bound in [1usize, 2, 3, 10, 1000] {
            for _ in 0..100 {
                assert!(generator.below(bound) < bound);
            }
        }
        assert_eq!(generator.below(0), 0);
    }

    #[test]
    fn ratios_and_shares_on_hand_made_costs() {
        let pairs = [(1.0, 2.0), (3.0, 2.0), (1.0, 4.0)];
        assert_eq!(weighted_ratio(&pairs), Some(5.0 / 8.0));
        assert_eq!(cheaper_share(&pairs), Some(2.0 / 3.0));
        assert_eq!(weighted_ratio(&[]), None);
        assert_eq!(cheaper_share(&[]), None);
        let strategy = [outcome(1.0), outcome(5.0), outcome(1.0)];
        let raw = [outcome(2.0), outcome(0.0), outcome(4.0)];
        assert_eq!(cost_pairs(&strategy, &raw), vec![(1.0, 2.0), (1.0, 4.0)]);
    }

    #[test]
    fn the_bootstrap_interval_is_fixed_and_brackets_the_ratio() {
        type Case<'a> = (&'a [(f64, f64)], Option<[f64; 2]>);
        let cases: &[Case<'_>] = &[
            // Every session at the same ratio: every resample has it.
            (&[(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)], Some([0.5, 0.5])),
            (&[(1.0, 1.0)], Some([1.0, 1.0])),
            (&[], None),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                bootstrap_interval(pairs, RESAMPLES, INTERVAL_LEVEL, SEED),
                *expected
            );
        }
        let spread = [(1.0, 2.0), (3.0, 2.0), (1.0, 4.0), (2.0, 2.0), (0.5, 1.0)];
        let [lo, hi] = bootstrap_interval(&spread, RESAMPLES, INTERVAL_LEVEL, SEED).unwrap();
        let total = weighted_ratio(&spread).unwrap();
        assert!(lo < total && total < hi, "{lo} {total} {hi}");
        assert!(
            lo >= 0.25 && hi <= 1.5,
            "within the sessions' ratios: {lo} {hi}"
        );
        assert_eq!(
            bootstrap_interval(&spread, RESAMPLES, INTERVAL_LEVEL, SEED),
            Some([lo, hi]),
            "the same seed gives the same interval"
        );
        assert_eq!(bootstrap_interval(&spread, 0, INTERVAL_LEVEL, SEED), None);
    }

    fn outcome(cost: f64) -> Outcome {
        Outcome {
            cost,
            ..Outcome::default()
        }
    }

    fn lossy(cost: f64, evicted: u64) -> Outcome {
        Outcome {
            cost,
            evicted_before_use: evicted,
            action_calls: 10,
            refetches: 0,
            tool_calls: 10,
        }
    }

    #[test]
    fn the_pick_is_the_cheapest_strategy_within_the_loss_tolerance() {
        let raw = vec![lossy(10.0, 0), lossy(10.0, 0)];
        let cases: &[(&str, Vec<Vec<Outcome>>, usize)] = &[
            ("only raw", vec![raw.clone()], 0),
            (
                "the cheaper of two",
                vec![
                    raw.clone(),
                    vec![lossy(8.0, 0), lossy(8.0, 0)],
                    vec![lossy(6.0, 0), lossy(6.0, 0)],
                ],
                2,
            ),
            (
                "the cheapest loses too much",
                vec![
                    raw.clone(),
                    vec![lossy(8.0, 0), lossy(8.0, 0)],
                    vec![lossy(2.0, 5), lossy(2.0, 5)],
                ],
                1,
            ),
            (
                "nothing is cheaper than raw",
                vec![raw.clone(), vec![lossy(12.0, 0), lossy(11.0, 0)]],
                0,
            ),
            (
                "a tie goes to the earlier",
                vec![
                    raw.clone(),
                    vec![lossy(5.0, 0), lossy(5.0, 0)],
                    vec![lossy(5.0, 0), lossy(5.0, 0)],
                ],
                1,
            ),
        ];
        for (name, outcomes, expected) in cases {
            assert_eq!(pick(outcomes, &[0, 1]), *expected, "{name}");
        }
        assert!((loss(&[lossy(1.0, 5)], &[0]) - 0.5).abs() < 1e-12);
        assert_eq!(loss(&[lossy(1.0, 5)], &[]), 0.0);
    }

    /// Sessions on which `cheap` halves the raw cost and `mixed` costs 60 % of it on the even
    /// ones and twice it on the odd ones.
    fn consistent_and_mixed(sessions: usize) -> Vec<Vec<Outcome>> {
        let raw = vec![outcome(10.0); sessions];
        let cheap = vec![outcome(5.0); sessions];
        let mixed = (0..sessions)
            .map(|s| outcome(if s % 2 == 0 { 6.0 } else { 20.0 }))
            .collect();
        vec![raw, cheap, mixed]
    }

    #[test]
    fn the_split_half_check_counts_where_the_pick_held() {
        let checked = split_half(&consistent_and_mixed(10), SPLITS, SEED);
        assert_eq!(checked.splits, SPLITS);
        assert_eq!(checked.recommendation, Some(1.0));
        // `cheap` is good on every half; `mixed` and raw never are within 5 % of it.
        assert_eq!(checked.per_strategy[0], Some(1.0));
        assert_eq!(checked.per_strategy[1], Some(1.0));
        assert_eq!(checked.per_strategy[2], Some(1.0));
        // Too few sessions to split.
        let one = split_half(&consistent_and_mixed(1), SPLITS, SEED);
        assert_eq!((one.recommendation, one.splits), (None, 0));
        // A strategy that wins on some sessions and loses more on others does not hold.
        let raw = vec![outcome(10.0); 8];
        let lumpy: Vec<Outcome> = (0..8)
            .map(|s| outcome(if s == 0 { 1.0 } else { 10.5 }))
            .collect();
        let checked = split_half(&[raw, lumpy], SPLITS, SEED);
        let agreement = checked.recommendation.unwrap();
        assert!(agreement < MIN_AGREEMENT, "{agreement}");
        assert_eq!(
            split_half(&consistent_and_mixed(10), SPLITS, SEED),
            split_half(&consistent_and_mixed(10), SPLITS, SEED)
        );
    }

    #[test]
    fn the_summary_recommends_only_what_holds() {
        let summary = summarize(&consistent_and_mixed(10));
        assert_eq!(summary.recommendation.pick, 1);
        assert!(summary.recommendation.reliable);
        assert_eq!(summary.recommendation.sessions, 10);
        let cheap = &summary.strategies[1];
        assert_eq!(cheap.cost_ratio_median, Some(0.5));
        assert_eq!(cheap.cost_ratio_iqr, Some([0.5, 0.5]));
        assert_eq!(cheap.cost_ratio_interval90, Some([0.5, 0.5]));
        assert_eq!(cheap.cheaper_than_raw_share, Some(1.0));
        let mixed = &summary.strategies[2];
        assert!((mixed.cost_ratio_median.unwrap() - 1.3).abs() < 1e-12);
        assert_eq!(mixed.cheaper_than_raw_share, Some(0.5));
        let raw = &summary.strategies[0];
        assert_eq!(raw.cost_ratio_total, Some(1.0));
        assert_eq!(raw.cheaper_than_raw_share, Some(0.0));
        // Only raw: nothing to recommend.
        let summary = summarize(&consistent_and_mixed(10)[..1]);
        assert_eq!(summary.recommendation.pick, 0);
        assert!(!summary.recommendation.reliable);
        // No sessions at all.
        let summary = summarize(&[]);
        assert!(!summary.recommendation.reliable);
        assert_eq!(summary.recommendation.sessions, 0);
    }
}
