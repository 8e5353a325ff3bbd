//! The daemon's notifications against a real daemon with the mock model: the configured
//! command runs for a session nobody is attached to, and not for one a client is attached to.
//! When a notification is due (a state that lasted `[notify] delay_secs`, nobody looking) is
//! the registry's rule, tested without a clock in `panewise-supervisor`'s
//! `a_notification_goes_only_if_the_state_lasted_its_delay_and_nobody_looks`.
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
