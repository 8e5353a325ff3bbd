//! R112, R113: the spend caps and the hold at them.

use panewise_pane_state::budget::{self, DaemonCaps, DayLedger};
use panewise_pane_state::{BudgetCaps, BudgetHold, Msg, SessionStats, State};

use crate::support::*;

fn reached() -> Msg {
    Msg::BudgetReached {
        reason: "budget reached: $0.02 of $0.01".into(),
    }
}

fn released() -> Msg {
    Msg::BudgetReleased {
        reason: "budget raised to $2.00".into(),
    }
}

fn prompt(text: &str) -> Msg {
    Msg::PromptSubmitted { text: text.into() }
}

fn caps(max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> Msg {
    Msg::BudgetSet {
        caps: BudgetCaps {
            max_cost_usd,
            max_tokens,
        },
    }
}

/// Each row: where the session starts, the messages, then whether it holds (and since when),
/// how many prompts wait in the queue, and whether a turn works.
#[test]
fn r112_r113_a_session_at_its_budget_holds_until_the_cap_is_raised() {
    type Row = (
        &'static str,
        State,
        Vec<(u64, Msg)>,
        Option<u64>,
        usize,
        bool,
    );
    let rows: Vec<Row> = vec![
        (
            "R112 reaching a cap mid-turn holds the working turn and waits for input",
            streaming(T0),
            vec![(T0 + 5, reached())],
            Some(T0 + 5),
            0,
            true,
        ),
        (
            "R112 a held idle session queues a prompt rather than start a turn",
            done_completed(T0),
            vec![(T0 + 5, reached()), (T0 + 6, prompt("next"))],
            Some(T0 + 5),
            1,
            false,
        ),
        (
            "R112 a stop of the held turn leaves the hold",
            streaming(T0),
            vec![
                (T0 + 5, reached()),
                (T0 + 6, Msg::RequestStop { at: T0 + 6 }),
            ],
            Some(T0 + 5),
            0,
            true,
        ),
        (
            "R113 a release ends the hold and the wait",
            streaming(T0),
            vec![(T0 + 5, reached()), (T0 + 9, released())],
            None,
            0,
            true,
        ),
        (
            "R113 a release sends the queued prompt",
            done_completed(T0),
            vec![
                (T0 + 5, reached()),
                (T0 + 6, prompt("next")),
                (T0 + 9, released()),
            ],
            None,
            0,
            true,
        ),
        (
            "R113 a release without a hold changes nothing",
            streaming(T0),
            vec![(T0 + 9, released())],
            None,
            0,
            true,
        ),
    ];
    for (rule, start, msgs, since, queued, working) in rows {
        let (state, _) = run(start, &msgs);
        assert_eq!(
            state.budget_hold.as_ref().map(|hold| hold.since),
            since,
            "{rule}"
        );
        assert_eq!(state.queued_prompts.len(), queued, "{rule}");
        assert_eq!(state.turn_phase.is_working(), working, "{rule}");
    }
}

#[test]
fn r112_the_hold_says_why_and_the_latest_caps_replace_the_earlier() {
    let state = settle(
        streaming(T0),
        &[
            (T0 + 1, caps(Some(0.01), None)),
            (T0 + 2, caps(Some(2.0), Some(1_000))),
            (T0 + 3, reached()),
        ],
    );
    assert_eq!(
        state.budget,
        Some(BudgetCaps {
            max_cost_usd: Some(2.0),
            max_tokens: Some(1_000),
        })
    );
    assert_eq!(
        state.budget_hold,
        Some(BudgetHold {
            reason: "budget reached: $0.02 of $0.01".into(),
            since: T0 + 3,
        })
    );
    let cleared = settle(state, &[(T0 + 4, caps(None, None))]);
    assert_eq!(cleared.budget, None, "no cap at all is no budget");
}

#[test]
fn r112_the_watchdog_is_silent_while_held() {
    let held = settle(streaming(T0), &[(T0 + 1, reached())]);
    let later = T0 + 10 * 60 * 1000;
    let (state, _) = run(held, &[(later, Msg::StreamWatchdogTick)]);
    assert!(state.failure.is_none(), "{:?}", state.failure);
    assert!(state.turn_phase.is_working());
}

fn stats(cost_usd: Option<f64>, input: u64, output: u64) -> SessionStats {
    SessionStats {
        cost_usd,
        input_tokens: Some(input),
        output_tokens: Some(output),
        ..SessionStats::default()
    }
}

/// Each row: the caps, the finished turns' totals, the running turn's figures, then the
/// verdict's reason.
#[test]
fn r112_a_session_is_over_its_cap_by_cost_or_by_tokens_when_its_cost_is_unknown() {
    type Row = (
        &'static str,
        BudgetCaps,
        Option<SessionStats>,
        Option<SessionStats>,
        Option<&'static str>,
    );
    let cost = |cap| BudgetCaps {
        max_cost_usd: Some(cap),
        max_tokens: None,
    };
    let both = |cap, tokens| BudgetCaps {
        max_cost_usd: Some(cap),
        max_tokens: Some(tokens),
    };
    let rows: Vec<Row> = vec![
        (
            "no cap holds nothing",
            BudgetCaps::default(),
            Some(stats(Some(9.0), 10, 10)),
            None,
            None,
        ),
        (
            "below the cost cap",
            cost(0.5),
            Some(stats(Some(0.25), 10, 10)),
            None,
            None,
        ),
        (
            "at the cost cap",
            cost(0.5),
            Some(stats(Some(0.5), 10, 10)),
            None,
            Some("budget reached: $0.5000 of $0.5000"),
        ),
        (
            "the running turn counts with the finished ones",
            cost(2.0),
            Some(stats(Some(1.5), 10, 10)),
            Some(stats(Some(0.75), 10, 10)),
            Some("budget reached: $2.25 of $2.00"),
        ),
        ("nothing spent yet", cost(0.01), None, None, None),
        (
            "an unknown cost is not compared with a cost cap",
            cost(0.01),
            Some(stats(None, 5_000, 5_000)),
            None,
            None,
        ),
        (
            "an unknown cost counts tokens against max_tokens",
            both(0.01, 1_000),
            Some(stats(None, 900, 200)),
            None,
            Some("budget reached: 1100 tokens of 1000 (cost unknown)"),
        ),
        (
            "one unpriced part makes the whole cost unknown",
            both(0.01, 1_000),
            Some(stats(Some(5.0), 100, 100)),
            Some(stats(None, 700, 100)),
            Some("budget reached: 1000 tokens of 1000 (cost unknown)"),
        ),
        (
            "a token cap holds a priced session too",
            BudgetCaps {
                max_cost_usd: None,
                max_tokens: Some(100),
            },
            Some(stats(Some(0.001), 60, 40)),
            None,
            Some("budget reached: 100 tokens of 100"),
        ),
        (
            "below both caps",
            both(1.0, 1_000),
            Some(stats(Some(0.5), 100, 100)),
            None,
            None,
        ),
    ];
    for (rule, caps, totals, turn, reason) in rows {
        let spend = budget::Spend::of(totals.as_ref(), turn.as_ref());
        assert_eq!(
            budget::session_verdict(&caps, &spend).as_deref(),
            reason,
            "{rule}"
        );
    }
}

/// Each row: the caps and hold the state has, what is spent, the daemon's verdict, then the
/// message due.
#[test]
fn r112_r113_the_hold_follows_the_verdict_and_a_raise_releases_it() {
    let held = |state: State| settle(state, &[(T0 + 1, reached())]);
    let with_caps = |state: State, cap: f64| settle(state, &[(T0 + 1, caps(Some(cap), None))]);
    let spent = |mut state: State, cost: f64| {
        state.session_totals = Some(stats(Some(cost), 10, 10));
        state
    };
    type Row = (&'static str, State, Option<&'static str>, Option<Msg>);
    let rows: Vec<Row> = vec![
        (
            "over the cap and not held: held",
            spent(with_caps(done_completed(T0), 0.01), 0.02),
            None,
            Some(Msg::BudgetReached {
                reason: "budget reached: $0.0200 of $0.0100".into(),
            }),
        ),
        (
            "over the cap and held: nothing new",
            held(spent(with_caps(done_completed(T0), 0.01), 0.02)),
            None,
            None,
        ),
        (
            "held and the cap raised past the spend: released",
            held(spent(with_caps(done_completed(T0), 2.0), 0.02)),
            None,
            Some(Msg::BudgetReleased {
                reason: "budget raised to $2.00".into(),
            }),
        ),
        (
            "the daemon's verdict holds a session within its own caps",
            spent(with_caps(done_completed(T0), 2.0), 0.02),
            Some("daemon budget reached: $5.00 of $5.00"),
            Some(Msg::BudgetReached {
                reason: "daemon budget reached: $5.00 of $5.00".into(),
            }),
        ),
        (
            "held by the daemon while its verdict stands: nothing new",
            held(spent(with_caps(done_completed(T0), 2.0), 0.02)),
            Some("daemon budget reached: $5.00 of $5.00"),
            None,
        ),
        ("no caps, no hold: nothing", done_completed(T0), None, None),
    ];
    for (rule, state, outside, msg) in rows {
        assert_eq!(budget::due(&state, None, outside), msg, "{rule}");
    }
}

/// Each row: the daemon's caps, every session's cost together, the day's, then the reason.
#[test]
fn r112_the_daemon_and_the_day_have_caps_of_their_own() {
    let caps = DaemonCaps {
        max_cost_usd: Some(10.0),
        daily_max_cost_usd: Some(3.0),
    };
    let rows: [(&str, DaemonCaps, f64, f64, Option<&str>); 5] = [
        ("within both", caps, 5.0, 1.0, None),
        (
            "the daemon's total",
            caps,
            10.0,
            1.0,
            Some("daemon budget reached: $10.00 of $10.00"),
        ),
        (
            "the day's",
            caps,
            5.0,
            3.5,
            Some("daily budget reached: $3.50 of $3.00"),
        ),
        ("no caps", DaemonCaps::default(), 99.0, 99.0, None),
        (
            "the total first",
            caps,
            12.0,
            4.0,
            Some("daemon budget reached: $12.00 of $10.00"),
        ),
    ];
    for (rule, caps, total, today, reason) in rows {
        assert_eq!(
            budget::daemon_verdict(&caps, total, today).as_deref(),
            reason,
            "{rule}"
        );
    }
}

/// The day's spend is what the sessions added since the day given began; an earlier or the
/// same day keeps the baselines.
#[test]
fn r112_the_day_counts_from_its_start_given_as_data() {
    let mut ledger = DayLedger::default();
    let costs = |list: &'static [(&'static str, f64)]| list.iter().map(|(id, cost)| (*id, *cost));
    ledger.roll(20_000, costs(&[("a", 1.0), ("b", 2.0)]));
    assert_eq!(
        ledger.spent(costs(&[("a", 1.5), ("b", 2.0), ("c", 0.25)])),
        0.75
    );
    ledger.roll(20_000, costs(&[("a", 9.0)]));
    ledger.roll(19_999, costs(&[("a", 9.0)]));
    assert_eq!(
        ledger.spent(costs(&[("a", 1.5)])),
        0.5,
        "the same or an earlier day keeps it"
    );
    ledger.roll(20_001, costs(&[("a", 1.5), ("c", 0.25)]));
    assert_eq!(
        ledger.spent(costs(&[("a", 1.5), ("b", 2.0), ("c", 1.25)])),
        3.0
    );
}
