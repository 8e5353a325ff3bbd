//! Arithmetic on the figures streams report: token counts that saturate instead of wrapping,
//! costs that are checked before they are used, and running totals turned into the figures of
//! one run.

use panewise_protocol::SessionStats;

/// The sum of two optional counts: absent when both are, otherwise saturating at `u64::MAX`.
pub(crate) fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

/// The sum of optional costs; absent when no cost was reported (never `0` or `-0.0`).
pub(crate) fn sum_costs(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values
        .into_iter()
        .flatten()
        .fold(None, |total, cost| Some(total.unwrap_or(0.0) + cost))
}

/// A cost as reported in `field`, checked: a finite, non-negative number of dollars (`-0.0`
/// reads as `0`). Anything else is refused with a message naming the field.
pub(crate) fn checked_cost(field: &str, cost: Option<f64>) -> Result<Option<f64>, String> {
    match cost {
        None => Ok(None),
        Some(cost) if cost.is_finite() && cost >= 0.0 => Ok(Some(cost + 0.0)),
        Some(cost) => Err(format!(
            "field `{field}`: {cost} is not a cost (a non-negative number of US dollars)"
        )),
    }
}

/// Adds `turn`'s token counts into `total` (cost and cost source are the caller's).
pub(crate) fn add_tokens(total: &mut SessionStats, turn: &SessionStats) {
    total.input_tokens = add(total.input_tokens, turn.input_tokens);
    total.cached_input_tokens = add(total.cached_input_tokens, turn.cached_input_tokens);
    total.cache_write_input_tokens = add(
        total.cache_write_input_tokens,
        turn.cache_write_input_tokens,
    );
    total.cache_write_1h_input_tokens = add(
        total.cache_write_1h_input_tokens,
        turn.cache_write_1h_input_tokens,
    );
    total.output_tokens = add(total.output_tokens, turn.output_tokens);
    total.reasoning_tokens = add(total.reasoning_tokens, turn.reasoning_tokens);
}

/// The figures of one run, from the running total after it and the running total before it.
/// `None` when a figure went down: then `total` was not a running total after all (the CLI
/// started counting afresh) and is the run's own.
pub(crate) fn since(total: &SessionStats, before: &SessionStats) -> Option<SessionStats> {
    fn minus(after: Option<u64>, before: Option<u64>) -> Option<Option<u64>> {
        match (after, before) {
            (after, None) => Some(after),
            (None, Some(_)) => Some(None),
            (Some(after), Some(before)) => after.checked_sub(before).map(Some),
        }
    }
    let cost = match (total.cost_usd, before.cost_usd) {
        (after, None) => after,
        (None, Some(_)) => None,
        (Some(after), Some(before)) if after >= before => Some(after - before),
        (Some(_), Some(_)) => return None,
    };
    Some(SessionStats {
        input_tokens: minus(total.input_tokens, before.input_tokens)?,
        cached_input_tokens: minus(total.cached_input_tokens, before.cached_input_tokens)?,
        cache_write_input_tokens: minus(
            total.cache_write_input_tokens,
            before.cache_write_input_tokens,
        )?,
        cache_write_1h_input_tokens: minus(
            total.cache_write_1h_input_tokens,
            before.cache_write_1h_input_tokens,
        )?,
        output_tokens: minus(total.output_tokens, before.output_tokens)?,
        reasoning_tokens: minus(total.reasoning_tokens, before.reasoning_tokens)?,
        cost_usd: cost,
        ..total.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_and_absent_stays_absent() {
        assert_eq!(add(Some(3080), Some(u64::MAX)), Some(u64::MAX));
        assert_eq!(add(None, None), None);
        assert_eq!(sum_costs([None, None]), None);
        assert_eq!(sum_costs([Some(0.25), None, Some(0.5)]), Some(0.75));
    }

    #[test]
    fn costs_are_checked_and_negative_zero_reads_as_zero() {
        assert_eq!(
            checked_cost("c", Some(-0.0)).map(|c| c.map(f64::is_sign_negative)),
            Ok(Some(false))
        );
        assert!(checked_cost("total_cost_usd", Some(-1.0))
            .is_err_and(|message| message.contains("`total_cost_usd`")));
        assert!(checked_cost("c", Some(f64::NAN)).is_err());
        assert!(checked_cost("c", Some(f64::INFINITY)).is_err());
        assert_eq!(checked_cost("c", None), Ok(None));
    }

    #[test]
    fn a_run_is_its_running_total_minus_the_previous_one() {
        let before = SessionStats {
            input_tokens: Some(100),
            output_tokens: Some(10),
            cost_usd: Some(0.5),
            ..SessionStats::default()
        };
        let after = SessionStats {
            input_tokens: Some(250),
            output_tokens: Some(30),
            cached_input_tokens: Some(7),
            cost_usd: Some(0.75),
            ..SessionStats::default()
        };
        let run = since(&after, &before);
        assert_eq!(run.as_ref().and_then(|run| run.input_tokens), Some(150));
        assert_eq!(run.as_ref().and_then(|run| run.output_tokens), Some(20));
        assert_eq!(
            run.as_ref().and_then(|run| run.cached_input_tokens),
            Some(7)
        );
        assert_eq!(run.as_ref().and_then(|run| run.cost_usd), Some(0.25));
        assert_eq!(since(&before, &after), None);
    }
}
