//! The daemon's notifications against a real daemon with the mock model: none while a client
//! is attached to the session, and a `[notify] delay_secs` that holds them back, so an edge
//! the session has left again before the delay ran out (approved quickly) sends nothing.
//!
//! The sink is a command appending each event to a file; every wait is for a condition under
//! a deadline.

use std::path::Path;
use std::time::{Duration, Instant};

use panewise_api::{
    Ack, AgentState, ApproveParams, CreateParams, Decision, Method, PromptParams, SubscribeParams,
    SubscribeResult,
};

use crate::daemon::{create, mock, until_state, Daemon, DEADLINE};

/// The events the notification command received so far: (session name, event).
fn events(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                event["session"]["name"].as_str().unwrap().to_owned(),
                event["event"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Waits until the events file holds `event` of session `name`; when it came.
async fn until_event(path: &Path, name: &str, event: &str) -> Instant {
    let until = Instant::now() + DEADLINE;
    loop {
        if events(path).iter().any(|(n, e)| n == name && e == event) {
            return Instant::now();
        }
        assert!(
            Instant::now() < until,
            "no {event} of {name}; so far: {:?}",
            events(path)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn config(delay_secs: u64) -> String {
    format!(
        "[notify]\ncommand = \"cat >> '{{dir}}/events.jsonl'\"\ndesktop = false\n\
         delay_secs = {delay_secs}\n"
    )
}

fn approve(session: &str) -> ApproveParams {
    ApproveParams {
        session: session.to_owned(),
        request: None,
        decision: Decision::AllowOnce,
    }
}

/// Approves what `session` waits for, once the list shows it `needs_input`: the daemon answers
/// from the folded request, so no retry is needed (one would hide that going wrong).
async fn approve_waiting(client: &panewise_supervisor::Client, session: &str) {
    let _: Ack = client
        .call(Method::Approve, approve(session))
        .await
        .unwrap_or_else(|error| panic!("approve {session}: {error}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_notification_while_a_client_is_attached_to_the_session() {
    let daemon = Daemon::start_with(Some(&config(0))).await;
    let events_path = daemon.dir.path().join("events.jsonl");
    let client = daemon.connect("attached").await;
    // Started without a prompt, so the client is attached before anything happens.
    let watched = create(
        &client,
        CreateParams {
            name: Some("watched".into()),
            approval: Some("ask".into()),
            ..CreateParams::default()
        },
    )
    .await;
    let _: SubscribeResult = client
        .call(
            Method::Subscribe,
            SubscribeParams {
                session: watched.id.clone(),
                from_line: 0,
                attach: true,
            },
        )
        .await
        .unwrap();
    let watcher = daemon.connect("watcher").await;
    until_state(&watcher, &watched.id, |s| s.attached == 1).await;
    let _: Ack = client
        .call(
            Method::Prompt,
            PromptParams {
                session: watched.id.clone(),
                text: "run the tool".into(),
            },
        )
        .await
        .unwrap();
    until_state(&watcher, &watched.id, |s| s.state == AgentState::NeedsInput).await;
    // A session nobody is attached to, started after: its events are the yardstick of when
    // the watched session's would have come.
    let alone = create(&watcher, mock("alone", "ask", "run the tool")).await;
    until_state(&watcher, &alone.id, |s| s.state == AgentState::NeedsInput).await;
    until_event(&events_path, "alone", "needs_input").await;
    approve_waiting(&client, &watched.id).await;
    approve_waiting(&watcher, &alone.id).await;
    // The attached session's finished turn counts as seen: idle, not done.
    until_state(&watcher, &watched.id, |s| {
        s.state == AgentState::Idle && s.turns == 1
    })
    .await;
    until_state(&watcher, &alone.id, |s| s.state == AgentState::Done).await;
    until_event(&events_path, "alone", "done").await;
    let got = events(&events_path);
    assert!(
        got.iter().all(|(name, _)| name == "alone"),
        "the attached session was notified: {got:?}"
    );
    assert_eq!(got.len(), 2, "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_holds_notifications_back_and_an_edge_left_before_it_sends_nothing() {
    // Long enough that approving and finishing fit inside it on a loaded 2-core machine.
    const DELAY: Duration = Duration::from_secs(10);
    let daemon = Daemon::start_with(Some(&config(DELAY.as_secs()))).await;
    let events_path = daemon.dir.path().join("events.jsonl");
    let client = daemon.connect("quick").await;
    let session = create(&client, mock("quick", "ask", "run the tool")).await;
    let asked = until_state(&client, &session.id, |s| s.state == AgentState::NeedsInput).await;
    let asked_at = Instant::now();
    approve_waiting(&client, &session.id).await;
    let done = until_state(&client, &session.id, |s| s.state == AgentState::Done).await;
    let done_at = Instant::now();
    // The approval must have come inside the delay for this test to say anything; on a
    // machine too loaded for that, it says so rather than passing on nothing.
    assert!(
        done_at.duration_since(asked_at) < DELAY,
        "approving and finishing took {:?}, longer than the delay {DELAY:?}: {asked:?}",
        done_at.duration_since(asked_at)
    );
    let notified_at = until_event(&events_path, "quick", "done").await;
    // Held back by the delay: the done edge came at or before `done_at`, by however long
    // this client took to see it (a second allowed for that).
    assert!(
        notified_at.duration_since(done_at) >= DELAY - Duration::from_secs(1),
        "the done notification came {:?} after done, under the delay {DELAY:?}",
        notified_at.duration_since(done_at)
    );
    // The needs-input edge's delay ran out before the done edge's did, with the session no
    // longer waiting: nothing was sent for it.
    let got = events(&events_path);
    assert_eq!(got, [("quick".to_owned(), "done".to_owned())], "{done:?}");
}
