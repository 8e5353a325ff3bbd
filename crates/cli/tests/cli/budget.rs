//! Spend caps end to end (R112, R113): the `panewise` binary's daemon runs sessions of the
//! own loop against the workspace mock, which reports each call's usage, so the cost is known
//! (estimated from the price table, for a priced model) and the tokens always are. A session
//! at its cap is held as `needs_input` with the reason, in `agents` and the API; `panewise
//! budget` raises the cap and the session goes on; `panewise stop` ends a held one.

use panewise_api::{AgentState, SessionSummary, WaitingFor};

use crate::daemon::{until_state, Daemon};

/// The id `panewise new` printed on its last line.
fn started(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().last().unwrap().to_owned()
}

fn held_reason(summary: &SessionSummary) -> String {
    match &summary.waiting_for {
        Some(WaitingFor::Budget { reason }) => reason.clone(),
        other => panic!("not held at the budget: {other:?} in {summary:?}"),
    }
}

/// A session capped at $0.0001 makes its first call (the mock asks for a tool), runs the tool,
/// and is held before its second call with the reason shown; raised to $5, it makes the second
/// call and finishes the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_held_at_its_cost_cap_goes_on_once_the_cap_is_raised() {
    let daemon = Daemon::start().await;
    let id = started(&daemon.run(&[
        "new",
        "--name",
        "capped",
        "--model",
        "claude-sonnet-4-5",
        "--max-cost-usd",
        "0.0001",
        "run the tool",
    ]));
    let watcher = daemon.connect("watcher").await;
    let held = until_state(&watcher, &id, |s| s.state == AgentState::NeedsInput).await;
    let reason = held_reason(&held);
    let cost = held.cost_usd.unwrap_or_default();
    assert!(
        reason.starts_with("budget reached: $") && reason.ends_with(" of $0.0001"),
        "{reason}"
    );
    assert_eq!(held.turns, 0, "held mid-turn, before its second call");
    assert_eq!(
        held.budget.and_then(|budget| budget.max_cost_usd),
        Some(0.0001)
    );
    // `agents` says why, and COST shows the cap.
    let listed = daemon.run(&["agents"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    let row = text
        .lines()
        .find(|line| line.starts_with("capped"))
        .unwrap_or_else(|| panic!("no row in {text}"));
    assert!(row.contains("needs_input"), "{row}");
    assert!(row.contains(&reason), "{row}");
    assert!(row.contains("/$0.0001"), "{row}");
    let json = daemon.run(&["agents", "--json"]);
    let entry: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&json.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(entry["waiting_for"]["kind"], "budget", "{entry}");
    assert_eq!(entry["waiting_for"]["reason"], reason.as_str(), "{entry}");
    assert_eq!(entry["budget"]["max_cost_usd"], 0.0001, "{entry}");
    // Held, it stays held: it is waited for, not worked on.
    let timed_out = daemon.run(&["wait", "capped", "--until", "done", "--timeout", "300ms"]);
    assert_eq!(timed_out.status.code(), Some(9), "{timed_out:?}");

    let raised = daemon.run(&["budget", "capped", "--max-cost-usd", "5"]);
    assert!(raised.status.success(), "{raised:?}");
    assert_eq!(
        String::from_utf8_lossy(&raised.stdout).trim(),
        "budget of capped: $5.00"
    );
    let done = until_state(&watcher, &id, |s| s.state == AgentState::Done).await;
    assert_eq!(done.turns, 1);
    assert!(done.waiting_for.is_none(), "{done:?}");
    assert!(done.cost_usd.unwrap_or_default() > cost, "{done:?}");
    assert_eq!(
        done.budget.and_then(|budget| budget.max_cost_usd),
        Some(5.0)
    );
    // The log says both, in order, and replays.
    let log = std::fs::read_to_string(&done.log).unwrap();
    let reached = log
        .find("\"budget_reached\"")
        .expect("the hold is in the log");
    let released = log.find("\"budget_released\"").expect("the release too");
    assert!(reached < released);
    crate::assert_replays(std::path::Path::new(&done.log));
}

/// The mock's own model has no price, so its cost is unknown: the token cap holds it, the
/// reason in tokens, and `panewise stop` ends it as it ends any session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_unknown_cost_is_held_at_its_token_cap_and_stops_as_usual() {
    let daemon = Daemon::start().await;
    let id = started(&daemon.run(&[
        "new",
        "--name",
        "tokens",
        "--max-cost-usd",
        "0.0001",
        "--max-tokens",
        "1",
        "run the tool",
    ]));
    let watcher = daemon.connect("watcher").await;
    let held = until_state(&watcher, &id, |s| s.state == AgentState::NeedsInput).await;
    assert_eq!(held.cost_usd, None, "{held:?}");
    let reason = held_reason(&held);
    assert!(
        reason.starts_with("budget reached: ") && reason.ends_with(" tokens of 1 (cost unknown)"),
        "{reason}"
    );
    let stopped = daemon.run(&["stop", "tokens"]);
    assert!(stopped.status.success(), "{stopped:?}");
    let ended = until_state(&watcher, &id, |s| s.state == AgentState::Stopped).await;
    assert_eq!(ended.turns, 0);
}

/// `panewise.toml`'s `[limits]` caps a session that names none, and a cap on the command line
/// that is not a number above 0 is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limits_table_caps_sessions_and_bad_caps_are_refused() {
    let daemon = Daemon::start_with(Some("[limits]\nmax_tokens = 1\n")).await;
    let id = started(&daemon.run(&["new", "--name", "filed", "run the tool"]));
    let watcher = daemon.connect("watcher").await;
    let held = until_state(&watcher, &id, |s| s.state == AgentState::NeedsInput).await;
    assert!(held_reason(&held).ends_with(" tokens of 1"), "{held:?}");
    for bad in ["0", "-1", "lots"] {
        let refused = daemon.run(&["new", "--max-cost-usd", bad, "hi"]);
        assert_eq!(refused.status.code(), Some(2), "{bad}: {refused:?}");
    }
    let nothing = daemon.run(&["budget", "filed"]);
    assert_eq!(nothing.status.code(), Some(2), "{nothing:?}");
}

/// The daemon's cap over all its sessions (`[limits] daemon_max_cost_usd` in the user file):
/// the turn that crosses it ends, then the session is held with the daemon's reason and a
/// prompt sent meanwhile waits; `panewise budget --daemon-max-cost-usd` raises it and the
/// prompt goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_cap_holds_its_sessions_until_it_is_raised() {
    let daemon = Daemon::start_with(Some("[limits]\ndaemon_max_cost_usd = 0.0001\n")).await;
    let id = started(&daemon.run(&[
        "new",
        "--name",
        "first",
        "--model",
        "claude-sonnet-4-5",
        "run the tool",
    ]));
    let watcher = daemon.connect("watcher").await;
    let held = until_state(&watcher, &id, |s| s.state == AgentState::NeedsInput).await;
    let reason = held_reason(&held);
    assert!(
        reason.starts_with("daemon budget reached: $") && reason.ends_with(" of $0.0001"),
        "{reason}"
    );
    assert_eq!(held.turns, 1, "the turn that crossed the cap ended");
    let sent = daemon.run(&["send", "first", "and again"]);
    assert!(sent.status.success(), "{sent:?}");
    let raised = daemon.run(&["budget", "--daemon-max-cost-usd", "5"]);
    assert!(raised.status.success(), "{raised:?}");
    assert_eq!(
        String::from_utf8_lossy(&raised.stdout).trim(),
        "budget of the daemon: $5.00 in all"
    );
    let after = until_state(&watcher, &id, |s| s.turns == 2).await;
    assert!(after.waiting_for.is_none(), "{after:?}");
}
