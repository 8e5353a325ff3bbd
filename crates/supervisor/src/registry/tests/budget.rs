//! The daemon's spend caps (R112, R113): every running session is told the daemon's verdict
//! when it changes, a session hosted while it holds is told at once, a raise releases them,
//! and the day counts from its first message (the day is the stamp's, data).

use panewise_pane_state::{Msg, SessionStats};
use serde_json::json;

use super::*;

const DAY: u64 = 86_400_000;

fn spent(cost: f64) -> Vec<Msg> {
    vec![Msg::TurnEnd {
        stats: Some(SessionStats {
            cost_usd: Some(cost),
            input_tokens: Some(10),
            ..SessionStats::default()
        }),
        turn: None,
        interrupted: false,
    }]
}

fn daemon_controls(effects: &[Effect]) -> Vec<(String, Option<String>)> {
    controls(effects)
        .into_iter()
        .filter_map(|(id, control)| match control {
            Control::DaemonBudget(verdict) => Some((id, verdict)),
            _ => None,
        })
        .collect()
}

#[test]
fn r112_r113_the_daemons_cap_holds_every_running_session_until_raised() {
    // Room for every answer: this client never says it read one.
    let mut harness = Harness::new(Limits {
        queue_lines: 64,
        ..limits()
    });
    connected(&mut harness, &[A]);
    harness.host(A, "a");
    harness.host(A, "b");
    let set = harness.request(A, "daemon/set_budget", json!({"max_cost_usd": 1.0}));
    assert_eq!(daemon_controls(&set), [], "nothing is spent yet");
    assert_eq!(
        daemon_controls(&harness.record("a", 10 * DAY, spent(0.6))),
        []
    );
    let reason = Some("daemon budget reached: $1.10 of $1.00".to_owned());
    assert_eq!(
        daemon_controls(&harness.record("b", 10 * DAY + 1, spent(0.5))),
        [
            ("a".to_owned(), reason.clone()),
            ("b".to_owned(), reason.clone())
        ]
    );
    assert_eq!(
        daemon_controls(&harness.record("a", 10 * DAY + 2, spent(0.1))),
        [],
        "told once, while the verdict stands"
    );
    assert_eq!(
        daemon_controls(&harness.host(A, "c")),
        [("c".to_owned(), reason.clone())],
        "a session started while it holds is held from its start"
    );
    harness.end("c");
    let raised = harness.request(A, "daemon/set_budget", json!({"max_cost_usd": 5.0}));
    assert_eq!(
        daemon_controls(&raised),
        [("a".to_owned(), None), ("b".to_owned(), None)],
        "an ended session is told nothing"
    );
    let refused = harness.request(A, "daemon/set_budget", json!({"max_cost_usd": 0}));
    assert_eq!(daemon_controls(&refused), []);
    assert_eq!(methods(&sent(&refused, A)), ["error"]);
}

#[test]
fn r112_the_daily_cap_counts_what_the_sessions_added_since_the_day_began() {
    let mut harness = Harness::new(limits());
    harness.host(A, "a");
    harness.request(A, "daemon/set_budget", json!({"daily_max_cost_usd": 1.0}));
    // Day 10: $0.50, under the cap.
    assert_eq!(
        daemon_controls(&harness.record("a", 10 * DAY + 5, spent(0.5))),
        []
    );
    // Day 11 begins at its first message: yesterday's $0.50 is its baseline.
    assert_eq!(
        daemon_controls(&harness.record("a", 11 * DAY + 5, spent(0.25))),
        []
    );
    assert_eq!(
        daemon_controls(&harness.record("a", 11 * DAY + 6, spent(0.75))),
        [(
            "a".to_owned(),
            Some("daily budget reached: $1.00 of $1.00".to_owned())
        )]
    );
    // Day 12: nothing added yet, so the hold ends.
    assert_eq!(
        daemon_controls(&harness.record("a", 12 * DAY, vec![Msg::StreamWatchdogTick])),
        [("a".to_owned(), None)]
    );
}
