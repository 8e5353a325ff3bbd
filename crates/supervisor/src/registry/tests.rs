//! The registry's rules, each checked by feeding events and comparing effects. A small
//! harness plays the shell's part where an effect delivers an event at once (a log read, a
//! forget), over an in-memory log.

use std::collections::BTreeMap;
use std::path::PathBuf;

use panewise_api::{AgentState, Request, RequestId};
use panewise_pane_state::Msg;
use panewise_session_protocol::{Control, Update};
use serde_json::{json, Value};

use super::*;

mod budget;
mod questions;
const A: ConnId = 1;
const B: ConnId = 2;

fn limits() -> Limits {
    Limits {
        queue_lines: 4,
        queue_bytes: 1 << 20,
        answer_slack_lines: 3,
        stall_ms: 30_000,
        stop_grace_ms: 10_000,
        total_queue_bytes: 64 << 20,
    }
}

fn info(id: &str) -> LaunchInfo {
    LaunchInfo {
        provider: "mock".to_owned(),
        model: None,
        cwd: PathBuf::from("/w"),
        approval: "ask".to_owned(),
        log: PathBuf::from(format!("/logs/{id}.jsonl")),
        worktree: None,
        own_dir: false,
        name: None,
    }
}

/// The registry with the shell's immediate answers played, over in-memory logs.
struct Harness {
    registry: Option<Registry>,
    /// Each session's log lines.
    logs: BTreeMap<String, Vec<String>>,
    next_request: u64,
}

impl Harness {
    fn new(limits: Limits) -> Harness {
        Harness {
            registry: Some(Registry::new(limits, 7)),
            logs: BTreeMap::new(),
            next_request: 0,
        }
    }

    fn registry(&self) -> &Registry {
        self.registry.as_ref().unwrap_or_else(|| unreachable!())
    }

    /// Feeds `event`, and what the shell would deliver at once; every effect, in order
    /// (a log read shows as the lines it queued).
    fn feed(&mut self, event: Event) -> Vec<Effect> {
        let mut pending = std::collections::VecDeque::from([event]);
        let mut all = Vec::new();
        while let Some(event) = pending.pop_front() {
            let registry = self.registry.take().unwrap_or_else(|| unreachable!());
            let (registry, effects) = registry.update(event);
            self.registry = Some(registry);
            for effect in effects {
                match effect {
                    Effect::ReadLog {
                        conn,
                        session,
                        from_index,
                        budget,
                        ..
                    } => {
                        let log = self.logs.get(&session).cloned().unwrap_or_default();
                        let (mut lines, mut bytes) = (0, 0);
                        for (index, text) in log.iter().enumerate().skip(from_index as usize) {
                            if lines >= budget.lines || (bytes >= budget.bytes && lines > 0) {
                                break;
                            }
                            let params = delivery::LineRef {
                                session: &session,
                                index: index as u64,
                                line: text,
                            };
                            let line = delivery::notice_line("session/line", &params)
                                .unwrap_or_else(|| unreachable!());
                            bytes += line.len();
                            lines += 1;
                            all.push(Effect::Send { conn, line });
                        }
                        pending.push_back(Event::LogRead {
                            conn,
                            session,
                            lines,
                            bytes,
                            asked: budget,
                            next_byte: None,
                        });
                    }
                    Effect::Forget {
                        conn, request, id, ..
                    } => {
                        pending.push_back(Event::Forgotten {
                            conn,
                            request,
                            id,
                            worktree: None,
                        });
                    }
                    other => all.push(other),
                }
            }
        }
        all
    }

    fn request(&mut self, conn: ConnId, method: &str, params: Value) -> Vec<Effect> {
        self.next_request += 1;
        self.feed(Event::Request {
            conn,
            request: Request {
                jsonrpc: "2.0".to_owned(),
                id: Some(RequestId::number(self.next_request)),
                method: method.to_owned(),
                params: Some(params),
            },
        })
    }

    /// Launches and hosts the session `id` for `conn`.
    fn host(&mut self, conn: ConnId, id: &str) -> Vec<Effect> {
        let mut effects = self.request(conn, "session/create", json!({}));
        effects.extend(self.feed(Event::Hosted {
            conn,
            request: Some(RequestId::number(self.next_request)),
            id: id.to_owned(),
            info: info(id),
            origin: Origin::Create { name: None },
            at_ms: 1_000,
        }));
        effects
    }

    /// The session `id` records `msgs` (stamped from `at`).
    fn record(&mut self, id: &str, at: u64, msgs: Vec<Msg>) -> Vec<Effect> {
        let updates = (at..)
            .zip(msgs)
            .map(|(at, msg)| Update::Recorded { at, msg })
            .collect();
        self.feed(Event::Session {
            id: id.to_owned(),
            updates,
            lines: Vec::new(),
            first_byte: 0,
        })
    }

    /// The session `id`'s log gains `count` lines.
    fn log(&mut self, id: &str, count: usize) -> Vec<Effect> {
        self.log_padded(id, count, 0)
    }

    /// The session `id`'s log gains `count` lines of `pad` bytes more than [`Harness::log`]'s.
    fn log_padded(&mut self, id: &str, count: usize, pad: usize) -> Vec<Effect> {
        let log = self.logs.entry(id.to_owned()).or_default();
        let first = log.len();
        let padding = "x".repeat(pad);
        let lines: Vec<String> = (first..first + count)
            .map(|n| format!("{{\"line\":{n},\"pad\":\"{padding}\"}}"))
            .map(|line| {
                if pad == 0 {
                    line.replace(",\"pad\":\"\"", "")
                } else {
                    line
                }
            })
            .collect();
        log.extend(lines.iter().cloned());
        self.feed(Event::Session {
            id: id.to_owned(),
            updates: Vec::new(),
            lines,
            first_byte: 0,
        })
    }

    /// The session `id`'s task ends (not failed).
    fn end(&mut self, id: &str) -> Vec<Effect> {
        self.feed(Event::Ended {
            id: id.to_owned(),
            failed: None,
        })
    }

    fn summary(&self, id: &str) -> SessionSummary {
        self.registry()
            .sessions
            .get(id)
            .map(Session::summary)
            .unwrap_or_else(|| unreachable!("no session {id}"))
    }
}

/// The JSON of every line `effects` queue on `conn`.
fn sent(effects: &[Effect], conn: ConnId) -> Vec<Value> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Send { conn: to, line } | Effect::SendLast { conn: to, line }
                if *to == conn =>
            {
                serde_json::from_slice(line).ok()
            }
            _ => None,
        })
        .collect()
}

/// The `index` of every `session/line` in `lines`.
fn indices(lines: &[Value]) -> Vec<u64> {
    lines
        .iter()
        .filter(|line| line["method"] == "session/line")
        .filter_map(|line| line["params"]["index"].as_u64())
        .collect()
}

fn methods(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|line| match line["method"].as_str() {
            Some(method) => method.to_owned(),
            None if line.get("error").is_some() => "error".to_owned(),
            None => "answer".to_owned(),
        })
        .collect()
}

fn asked(id: &str) -> Vec<Msg> {
    vec![
        Msg::ApprovalRequested {
            id: id.to_owned(),
            tool: "shell".to_owned(),
            summary: "rm -rf build".to_owned(),
            turn: None,
        },
        Msg::ApprovalAsked { id: id.to_owned() },
    ]
}

fn controls(effects: &[Effect]) -> Vec<(String, Control)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Control { id, control } => Some((id.clone(), control.clone())),
            _ => None,
        })
        .collect()
}

fn connected(harness: &mut Harness, conns: &[ConnId]) {
    for conn in conns {
        harness.feed(Event::Connected { conn: *conn });
    }
}

#[test]
fn of_two_answers_to_one_approval_the_first_wins_and_the_second_is_told_by_whom() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A, B]);
    h.request(
        A,
        "daemon/hello",
        json!({"api_version": panewise_api::API_VERSION, "client": "one"}),
    );
    h.host(A, "s1");
    h.record("s1", 10, asked("r1"));
    assert_eq!(h.summary("s1").state, AgentState::NeedsInput);
    // Both answers arrive before the session records the first.
    let first = h.request(
        A,
        "session/approve",
        json!({"session": "s1", "decision": "allow_once"}),
    );
    let second = h.request(
        B,
        "session/approve",
        json!({"session": "s1", "decision": "allow_once"}),
    );
    assert_eq!(
        controls(&first).len(),
        1,
        "the first answer goes to the session"
    );
    assert!(controls(&second).is_empty(), "the second is not sent");
    let refused = sent(&second, B);
    assert_eq!(methods(&refused), ["error"]);
    let message = refused[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("already answered by an API client"),
        "says who answered: {message}"
    );
}

#[test]
fn an_answer_or_a_prompt_to_an_ended_session_is_refused_and_not_sent() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.record("s1", 10, asked("r1"));
    h.end("s1");
    for (method, params) in [
        (
            "session/approve",
            json!({"session": "s1", "decision": "allow_once"}),
        ),
        ("session/prompt", json!({"session": "s1", "text": "go on"})),
        ("session/stop", json!({"session": "s1"})),
    ] {
        let effects = h.request(A, method, params);
        assert!(controls(&effects).is_empty(), "{method}: nothing sent");
        let answer = sent(&effects, A);
        assert_eq!(answer[0]["error"]["code"], json!(-32004), "{method}");
    }
}

#[test]
fn a_request_the_approval_mode_has_not_put_to_a_person_is_never_listed_as_needing_input() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.request(A, "sessions/subscribe", json!({}));
    h.host(A, "s1");
    let requested = h.record(
        "s1",
        10,
        vec![Msg::ApprovalRequested {
            id: "r1".to_owned(),
            tool: "shell".to_owned(),
            summary: "ls".to_owned(),
            turn: None,
        }],
    );
    assert!(
        sent(&requested, A).is_empty(),
        "no summary while the mode decides"
    );
    let answered = h.record(
        "s1",
        11,
        vec![Msg::ApprovalAnswered {
            id: Some("r1".to_owned()),
            approved: true,
            for_session: false,
            by: None,
            reason: None,
        }],
    );
    let states: Vec<Value> = sent(&answered, A)
        .iter()
        .map(|line| line["params"]["session"]["state"].clone())
        .collect();
    assert!(!states.contains(&json!("needs_input")), "{states:?}");
}

#[test]
fn a_subscriber_gets_the_log_from_its_offset_then_live_lines_from_memory() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.log("s1", 3);
    let subscribed = h.request(
        A,
        "session/subscribe",
        json!({"session": "s1", "from_line": 1}),
    );
    let lines = sent(&subscribed, A);
    assert_eq!(
        methods(&lines)[0],
        "answer",
        "the answer comes before the lines"
    );
    assert_eq!(indices(&lines), [1, 2], "read from the log from the offset");
    h.feed(Event::Written {
        conn: A,
        lines: 3,
        bytes: 0,
    });
    let live = h.log("s1", 2);
    assert_eq!(indices(&sent(&live, A)), [3, 4]);
    assert!(
        !live.iter().any(|e| matches!(e, Effect::ReadLog { .. })),
        "a caught-up subscriber is not read for"
    );
}

#[test]
fn a_subscriber_at_its_queues_bound_falls_behind_and_resumes_from_the_log_losing_nothing() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    let subscribed = h.request(A, "session/subscribe", json!({"session": "s1"}));
    let mut got = indices(&sent(&subscribed, A));
    let flood = h.log("s1", 10);
    got.extend(indices(&sent(&flood, A)));
    // The queue holds the answers to create and subscribe, and two lines.
    assert_eq!(got, [0, 1], "the queue is bounded");
    assert!(
        flood.iter().any(|e| matches!(
            e,
            Effect::After {
                timer: Timer::Stall { .. },
                ..
            }
        )),
        "a full queue starts the stall timer"
    );
    // The client reads; the rest comes from the log, in order, with no gap or repeat.
    for _ in 0..4 {
        let more = h.feed(Event::Written {
            conn: A,
            lines: 4,
            bytes: 0,
        });
        got.extend(indices(&sent(&more, A)));
    }
    assert_eq!(got, (0..10).collect::<Vec<u64>>());
}

#[test]
fn a_client_that_never_reads_is_dropped_at_the_stall_and_told_why_and_where_to_resume() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.request(
        A,
        "session/subscribe",
        json!({"session": "s1", "attach": true}),
    );
    assert_eq!(h.summary("s1").attached, 1);
    let flood = h.log("s1", 10);
    let since = flood
        .iter()
        .find_map(|e| match e {
            Effect::After {
                delay_ms,
                timer: Timer::Stall { since, .. },
            } => Some((*delay_ms, *since)),
            _ => None,
        })
        .unwrap_or_else(|| unreachable!("no stall timer"));
    assert_eq!(since.0, limits().stall_ms);
    let more = h.log("s1", 1000);
    assert!(sent(&more, A).is_empty(), "nothing past the bound");
    let dropped = h.feed(Event::Timer(Timer::Stall {
        conn: A,
        since: since.1,
    }));
    let notice = dropped
        .iter()
        .find_map(|e| match e {
            Effect::Drop { conn: A, notice } => serde_json::from_slice::<Value>(notice).ok(),
            _ => None,
        })
        .unwrap_or_else(|| unreachable!("not dropped"));
    assert_eq!(notice["method"], "daemon/dropped");
    let reason = notice["params"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("read nothing for 30 s"), "{reason}");
    assert_eq!(
        notice["params"]["resume"],
        json!([{"session": "s1", "from_line": 2}])
    );
    assert_eq!(h.summary("s1").attached, 0, "its attach is released");
    assert!(!h.registry().conns.contains_key(&A));
}

#[test]
fn a_client_that_read_before_the_stall_timer_is_kept() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.request(A, "session/subscribe", json!({"session": "s1"}));
    h.log("s1", 10);
    h.feed(Event::Written {
        conn: A,
        lines: 4,
        bytes: 0,
    });
    // It filled again: a second fill, and the first fill's timer runs out.
    let kept = h.feed(Event::Timer(Timer::Stall { conn: A, since: 1 }));
    assert!(!kept.iter().any(|e| matches!(e, Effect::Drop { .. })));
    assert!(h.registry().conns.contains_key(&A));
}

#[test]
fn a_client_that_asks_without_reading_is_dropped_once_the_answer_slack_is_used() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    let mut dropped = false;
    // 4 lines of queue and 3 of slack: the eighth unread answer drops it.
    for n in 0..8 {
        let effects = h.request(A, "sessions/list", json!({}));
        let drop = effects.iter().any(|e| matches!(e, Effect::Drop { .. }));
        assert_eq!(drop, n == 7, "request {n}");
        dropped |= drop;
    }
    assert!(dropped);
}

#[test]
fn a_stale_list_subscription_gets_every_removal_and_summary_again_once_it_reads() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A, B]);
    h.request(A, "sessions/subscribe", json!({}));
    h.host(B, "s1");
    h.host(B, "s2");
    h.host(B, "s3");
    // A's queue: the answer and three changes; full. s1 ends and is removed meanwhile.
    h.end("s1");
    h.request(B, "session/remove", json!({"session": "s1"}));
    let resync = h.feed(Event::Written {
        conn: A,
        lines: 4,
        bytes: 0,
    });
    let lines = sent(&resync, A);
    assert_eq!(
        methods(&lines),
        ["sessions/removed", "sessions/changed", "sessions/changed"]
    );
    assert_eq!(lines[0]["params"]["id"], "s1");
}

#[test]
fn remove_takes_an_ended_session_now_and_answers_what_it_did() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.end("s1");
    let removed = h.request(A, "session/remove", json!({"session": "s1"}));
    let lines = sent(&removed, A);
    assert_eq!(
        lines.last().map(|l| l["result"]["id"].clone()),
        Some(json!("s1"))
    );
    assert!(h.registry().sessions.is_empty());
}

#[test]
fn remove_stops_a_settled_session_and_answers_once_it_ended() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    let asked = h.request(A, "session/remove", json!({"session": "s1"}));
    assert_eq!(controls(&asked), [("s1".to_owned(), Control::Stop)]);
    assert!(sent(&asked, A).is_empty(), "answered once it has ended");
    let ended = h.end("s1");
    let answer = sent(&ended, A);
    assert_eq!(
        answer.last().map(|l| l["result"]["id"].clone()),
        Some(json!("s1"))
    );
    // The grace timer finds nothing left to answer.
    let late = h.feed(Event::Timer(Timer::RemoveGrace {
        conn: A,
        request: Some(RequestId::number(h.next_request)),
        id: "s1".to_owned(),
    }));
    assert!(sent(&late, A).is_empty());
}

#[test]
fn two_removes_of_one_settled_session_in_flight_are_both_answered() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A, B]);
    h.host(A, "s1");
    let first = h.request(A, "session/remove", json!({"session": "s1"}));
    let second = h.request(B, "session/remove", json!({"session": "s1"}));
    assert!(sent(&first, A).is_empty() && sent(&second, B).is_empty());
    let ended = h.end("s1");
    let to_a = sent(&ended, A);
    let to_b = sent(&ended, B);
    let answer = |lines: &[Value]| {
        lines
            .iter()
            .find(|line| line.get("id").is_some())
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(answer(&to_a)["result"]["id"], json!("s1"), "{to_a:?}");
    let refused = answer(&to_b);
    assert_eq!(
        refused["error"]["code"],
        json!(ErrorCode::UnknownSession.code())
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("removed by another request"), "{message}");
    assert!(h.registry().sessions.is_empty());
}

#[test]
fn remove_says_so_when_the_stopped_session_does_not_end_within_the_grace() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.request(A, "session/remove", json!({"session": "s1"}));
    let timed_out = h.feed(Event::Timer(Timer::RemoveGrace {
        conn: A,
        request: Some(RequestId::number(h.next_request)),
        id: "s1".to_owned(),
    }));
    let answer = sent(&timed_out, A);
    let message = answer[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("did not end within 10 s"), "{message}");
    assert!(h.registry().sessions.contains_key("s1"), "still listed");
}

#[test]
fn remove_refuses_a_session_that_works_or_waits_for_a_person() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.record("s1", 10, asked("r1"));
    let refused = h.request(A, "session/remove", json!({"session": "s1"}));
    assert!(controls(&refused).is_empty());
    assert_eq!(sent(&refused, A)[0]["error"]["code"], json!(-32009));
}

#[test]
fn a_notification_goes_only_if_the_state_lasted_its_delay_and_nobody_looks() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    let edge = h.record("s1", 10, asked("r1"));
    assert!(edge.contains(&Effect::ScheduleNotify {
        id: "s1".to_owned(),
        state: AgentState::NeedsInput
    }));
    let config = crate::notify::NotifyConfig {
        delay: std::time::Duration::from_secs(5),
        command: Some("true".to_owned()),
        desktop: false,
    };
    let due = |state| Event::NotifyDue {
        id: "s1".to_owned(),
        state,
        config: config.clone(),
    };
    let still = h.feed(due(AgentState::NeedsInput));
    assert!(matches!(still.as_slice(), [Effect::Notify { .. }]));
    let changed = h.feed(due(AgentState::Done));
    assert!(changed.is_empty(), "the state did not last");
    h.request(
        A,
        "session/subscribe",
        json!({"session": "s1", "attach": true}),
    );
    let looked_at = h.feed(due(AgentState::NeedsInput));
    assert!(looked_at.is_empty(), "someone is attached");
}

#[test]
fn a_name_held_by_a_launch_is_not_given_twice_and_is_let_go_if_the_launch_fails() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A, B]);
    let first = h.request(A, "session/create", json!({"name": "den"}));
    assert!(matches!(first.as_slice(), [Effect::Launch { .. }]));
    let second = h.request(B, "session/create", json!({"name": "den"}));
    assert_eq!(sent(&second, B)[0]["error"]["code"], json!(-32008));
    h.feed(Event::LaunchFailed {
        conn: A,
        request: Some(RequestId::number(1)),
        origin: Origin::Create {
            name: Some("den".to_owned()),
        },
        why: "no key".to_owned(),
    });
    let again = h.request(B, "session/create", json!({"name": "den"}));
    assert!(matches!(again.as_slice(), [Effect::Launch { .. }]));
}

#[test]
fn resume_gives_the_continued_sessions_name_to_the_new_one() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.request(A, "session/create", json!({"name": "den"}));
    h.feed(Event::Hosted {
        conn: A,
        request: Some(RequestId::number(1)),
        id: "old-session".to_owned(),
        info: info("old-session"),
        origin: Origin::Create {
            name: Some("den".to_owned()),
        },
        at_ms: 1,
    });
    let running = h.request(A, "session/resume", json!({"session": "den"}));
    assert_eq!(sent(&running, A)[0]["error"]["code"], json!(-32009));
    h.end("old-session");
    let resumed = h.request(A, "session/resume", json!({"session": "den"}));
    let Some(Effect::Resume { continued, log, .. }) = resumed.first() else {
        unreachable!("no resume: {resumed:?}");
    };
    assert_eq!(log, &PathBuf::from("/logs/old-session.jsonl"));
    h.feed(Event::Hosted {
        conn: A,
        request: Some(RequestId::number(9)),
        id: "new-session".to_owned(),
        info: info("new-session"),
        origin: Origin::Resume {
            continued: continued.clone(),
        },
        at_ms: 2,
    });
    assert_eq!(h.summary("new-session").name, "den");
    assert_eq!(h.summary("old-session").name, "-session");
}

#[test]
fn shutdown_stops_every_running_session_and_exits_once_all_ended() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.host(A, "s2");
    h.end("s2");
    let asked = h.request(A, "daemon/shutdown", json!({}));
    assert!(matches!(asked.as_slice(), [Effect::SendLast { .. }]));
    let stopping = h.feed(Event::Terminate);
    assert_eq!(controls(&stopping), [("s1".to_owned(), Control::Stop)]);
    let ended = h.end("s1");
    let Some(Effect::Exit { infos, running }) = ended.last() else {
        unreachable!("no exit: {ended:?}");
    };
    assert_eq!((infos.len(), running.len()), (2, 0));
    assert_eq!(h.summary("s1").state, AgentState::Stopped);
}

#[test]
fn shutdown_exits_after_its_grace_naming_what_still_runs() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    let stopping = h.feed(Event::Terminate);
    assert!(stopping.contains(&Effect::After {
        delay_ms: 10_000,
        timer: Timer::ShutdownGrace
    }));
    let exited = h.feed(Event::Timer(Timer::ShutdownGrace));
    let Some(Effect::Exit { running, .. }) = exited.last() else {
        unreachable!("no exit");
    };
    assert_eq!(running, &["s1".to_owned()]);
    assert!(
        h.feed(Event::Timer(Timer::ShutdownGrace)).is_empty(),
        "once"
    );
}

#[test]
fn ended_is_sent_once_every_line_reached_the_subscriber() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.request(A, "session/subscribe", json!({"session": "s1"}));
    h.log("s1", 6);
    let ended = h.end("s1");
    assert!(
        !methods(&sent(&ended, A)).contains(&"session/ended".to_owned()),
        "lines are still owed"
    );
    let caught_up = h.feed(Event::Written {
        conn: A,
        lines: 4,
        bytes: 0,
    });
    let lines = sent(&caught_up, A);
    assert_eq!(indices(&lines), [2, 3, 4, 5]);
    assert_eq!(
        methods(&lines).last().map(String::as_str),
        Some("session/ended")
    );
    assert_eq!(
        lines.last().map(|l| l["params"]["lines"].clone()),
        Some(json!(6))
    );
}

#[test]
fn summaries_are_published_only_when_they_change() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.request(A, "sessions/subscribe", json!({}));
    h.host(A, "s1");
    h.feed(Event::Written {
        conn: A,
        lines: 4,
        bytes: 0,
    });
    let lines_only = h.log("s1", 3);
    assert!(sent(&lines_only, A).is_empty());
    let same = h.record(
        "s1",
        10,
        vec![Msg::ApprovalWithdrawn {
            id: "none".to_owned(),
        }],
    );
    assert!(sent(&same, A).is_empty(), "a fold that changes no field");
    let asks = sent(&h.record("s1", 20, asked("r1")), A);
    assert_eq!(
        methods(&asks),
        ["sessions/changed"],
        "a fold that changes the state"
    );
    assert_eq!(asks[0]["params"]["session"]["state"], "needs_input");
    let renamed = sent(
        &h.request(
            A,
            "session/rename",
            json!({"session": "s1", "name": "renamed"}),
        ),
        A,
    );
    let change = renamed
        .iter()
        .find(|line| line["method"] == "sessions/changed");
    assert_eq!(
        change.map(|line| &line["params"]["session"]["name"]),
        Some(&json!("renamed")),
        "a new name: {renamed:?}"
    );
}

#[test]
fn a_list_subscriptions_answer_comes_before_its_first_change() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    let subscribed = sent(&h.request(A, "sessions/subscribe", json!({})), A);
    assert_eq!(methods(&subscribed), ["answer"]);
    let changed = sent(&h.record("s1", 10, asked("r1")), A);
    assert_eq!(methods(&changed), ["sessions/changed"]);
}

#[test]
fn a_client_that_goes_releases_its_attach_and_leaves_the_question_pending() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.record("s1", 10, asked("r1"));
    h.request(
        A,
        "session/subscribe",
        json!({"session": "s1", "attach": true}),
    );
    assert_eq!(h.summary("s1").attached, 1);
    h.feed(Event::Disconnected { conn: A });
    let summary = h.summary("s1");
    assert_eq!(
        (summary.attached, summary.state),
        (0, AgentState::NeedsInput)
    );
}

#[test]
fn a_client_that_reconnects_at_an_offset_gets_exactly_the_lines_it_missed() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.feed(Event::Written {
        conn: A,
        lines: 1,
        bytes: 0,
    });
    let first = h.request(A, "session/subscribe", json!({"session": "s1"}));
    let mut got = indices(&sent(&first, A));
    got.extend(indices(&sent(&h.log("s1", 2), A)));
    assert_eq!(got, [0, 1]);
    h.feed(Event::Disconnected { conn: A });
    // Lines written while no one listened.
    h.log("s1", 3);
    connected(&mut h, &[B]);
    let again = h.request(
        B,
        "session/subscribe",
        json!({"session": "s1", "from_line": 2}),
    );
    assert_eq!(indices(&sent(&again, B)), [2, 3, 4]);
}

#[test]
fn a_stop_and_an_answer_racing_the_session_end_are_each_answered_once() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A, B]);
    h.host(A, "s1");
    h.record("s1", 10, asked("r1"));
    let stop = h.request(A, "session/stop", json!({"session": "s1"}));
    assert_eq!(controls(&stop), [("s1".to_owned(), Control::Stop)]);
    // The answer arrives before the session has ended: it is sent (the session decides).
    let answer = h.request(
        B,
        "session/approve",
        json!({"session": "s1", "decision": "allow_once"}),
    );
    assert_eq!(controls(&answer).len(), 1);
    h.end("s1");
    assert_eq!(
        h.summary("s1").state,
        AgentState::Stopped,
        "a stop asked for"
    );
    let late = h.request(
        B,
        "session/approve",
        json!({"session": "s1", "decision": "allow_once"}),
    );
    assert!(controls(&late).is_empty(), "after the end nothing is sent");
    assert_eq!(sent(&late, B)[0]["error"]["code"], json!(-32004));
}

#[test]
fn resubscribing_replaces_the_subscription_and_its_attach() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    h.request(
        A,
        "session/subscribe",
        json!({"session": "s1", "attach": true}),
    );
    h.request(
        A,
        "session/subscribe",
        json!({"session": "s1", "attach": true}),
    );
    assert_eq!(h.summary("s1").attached, 1);
    h.request(A, "session/unsubscribe", json!({"session": "s1"}));
    assert_eq!(h.summary("s1").attached, 0);
}

#[test]
fn remove_stops_a_settled_session_and_refuses_one_a_person_or_a_turn_needs() {
    // (rule, state, task ended, removal)
    let table: [(&str, AgentState, bool, Removal); 9] = [
        (
            "an ended session goes now",
            AgentState::Stopped,
            true,
            Removal::Now,
        ),
        ("an exited one too", AgentState::Exited, true, Removal::Now),
        (
            "a done session is stopped, then goes",
            AgentState::Done,
            false,
            Removal::StopThenRemove,
        ),
        (
            "an idle one too",
            AgentState::Idle,
            false,
            Removal::StopThenRemove,
        ),
        (
            "an interrupted one too",
            AgentState::Interrupted,
            false,
            Removal::StopThenRemove,
        ),
        (
            "one whose turn failed too",
            AgentState::Failed,
            false,
            Removal::StopThenRemove,
        ),
        (
            "a stop under way is waited for",
            AgentState::Stopped,
            false,
            Removal::StopThenRemove,
        ),
        (
            "a working turn is never lost by a remove",
            AgentState::Working,
            false,
            Removal::Refuse(
                "the session is working: stop it first (`panewise stop`), or wait for its turn \
                 to end",
            ),
        ),
        (
            "nor a question a person has not answered",
            AgentState::NeedsInput,
            false,
            Removal::Refuse(
                "the session waits for an answer: answer it or stop it first (`panewise stop`)",
            ),
        ),
    ];
    for (rule, state, ended, expected) in table {
        assert_eq!(removal(state, ended), expected, "{rule}");
    }
    let covered: std::collections::BTreeSet<&str> =
        table.iter().map(|row| row.1.as_str()).collect();
    assert_eq!(
        covered.len(),
        AgentState::ALL.len(),
        "a state without a row"
    );
}

#[test]
fn the_borrowed_line_serialises_as_the_apis_line_notice() {
    let owned = panewise_api::LineNotice {
        session: "abc".into(),
        index: 4,
        line: "{\"a\":1}".into(),
    };
    let borrowed = delivery::LineRef {
        session: &owned.session,
        index: owned.index,
        line: &owned.line,
    };
    assert_eq!(
        serde_json::to_value(&borrowed).ok(),
        serde_json::to_value(&owned).ok()
    );
}

mod interleavings {
    //! Any interleaving of log growth, reads by the client, subscriptions at any offset and
    //! the session's end: every subscriber gets each line from its offset exactly once, in
    //! order, then `session/ended` once, and no queue passes its bound.

    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Step {
        Log(usize),
        Read(ConnId, usize),
        Subscribe(ConnId, u64),
        End,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (1usize..9).prop_map(Step::Log),
            4 => ((1u64..4), (1usize..6)).prop_map(|(c, n)| Step::Read(c, n)),
            1 => ((1u64..4), (0u64..12)).prop_map(|(c, f)| Step::Subscribe(c, f)),
            1 => Just(Step::End),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn every_subscriber_gets_each_line_once_in_order(steps in proptest::collection::vec(step(), 1..60)) {
            let mut h = Harness::new(limits());
            connected(&mut h, &[1, 2, 3]);
            h.host(1, "s1");
            // What each connection has queued and not yet "read", and what it got.
            let mut queued: BTreeMap<ConnId, std::collections::VecDeque<Value>> = BTreeMap::new();
            let mut from: BTreeMap<ConnId, u64> = BTreeMap::new();
            let mut got: BTreeMap<ConnId, Vec<Value>> = BTreeMap::new();
            let mut ended = false;
            let steps = steps.into_iter().chain((0..600).map(|n| Step::Read(1 + n % 3, 8)));
            for step in steps {
                let effects = match step {
                    Step::Log(n) if !ended => h.log("s1", n),
                    Step::Log(_) => Vec::new(),
                    Step::End if !ended => {
                        ended = true;
                        h.feed(Event::Ended { id: "s1".to_owned(), failed: None })
                    }
                    Step::End => Vec::new(),
                    Step::Subscribe(conn, offset) => {
                        if from.contains_key(&conn) {
                            continue;
                        }
                        from.insert(conn, offset);
                        h.request(conn, "session/subscribe", json!({"session": "s1", "from_line": offset}))
                    }
                    Step::Read(conn, n) => {
                        let queue = queued.entry(conn).or_default();
                        let take = n.min(queue.len());
                        let mut bytes = 0;
                        for line in queue.drain(..take) {
                            bytes += serde_json::to_vec(&line).map_or(0, |v| v.len());
                            got.entry(conn).or_default().push(line);
                        }
                        h.feed(Event::Written { conn, lines: take, bytes })
                    }
                };
                for conn in [1, 2, 3] {
                    queued.entry(conn).or_default().extend(sent(&effects, conn));
                    prop_assert!(queued[&conn].len() <= limits().queue_lines + limits().answer_slack_lines);
                }
            }
            let logged = h.logs.get("s1").map_or(0, Vec::len) as u64;
            for (conn, offset) in from {
                let lines = got.get(&conn).cloned().unwrap_or_default();
                let expected: Vec<u64> = (offset..logged.max(offset)).collect();
                prop_assert_eq!(indices(&lines), expected, "conn {}", conn);
                let ends = methods(&lines).iter().filter(|m| *m == "session/ended").count();
                prop_assert_eq!(ends, usize::from(ended), "conn {}", conn);
            }
        }
    }
}

/// Bytes of the lines `effects` queue, by connection.
fn queued_bytes(effects: &[Effect]) -> BTreeMap<ConnId, usize> {
    let mut queued = BTreeMap::new();
    for effect in effects {
        if let Effect::Send { conn, line } | Effect::SendLast { conn, line } = effect {
            *queued.entry(*conn).or_default() += line.len();
        }
    }
    queued
}

#[test]
fn a_connections_byte_bound_is_its_share_of_the_daemons_total() {
    let limits = Limits {
        queue_bytes: 8 << 20,
        total_queue_bytes: 64 << 20,
        ..Limits::default()
    };
    // (connections, each one's bound)
    let cases = [
        (0, 8 << 20),
        (1, 8 << 20),
        (8, 8 << 20),
        (16, 4 << 20),
        (100, (64 << 20) / 100),
        (1024, 64 << 10),
        (100_000, delivery::MIN_CONN_QUEUE_BYTES),
    ];
    for (conns, bound) in cases {
        assert_eq!(limits.conn_queue_bytes(conns), bound, "{conns} connections");
    }
}

/// A hundred clients subscribed to one big log that never read: together they hold the
/// daemon's total (each one line past its share, plus its answers), where each alone could
/// hold its own bound; and each one's stall timer starts, so each is dropped in time.
#[test]
fn a_hundred_subscribers_that_never_read_hold_the_daemons_total_between_them() {
    const CLIENTS: u64 = 100;
    let limits = Limits {
        queue_lines: 1 << 20,
        queue_bytes: 8 << 20,
        total_queue_bytes: 16 << 20,
        ..Limits::default()
    };
    let mut h = Harness::new(limits);
    let conns: Vec<ConnId> = (1..=CLIENTS).collect();
    connected(&mut h, &conns);
    h.host(1, "s1");
    // 40 MiB of log before anyone subscribes, then 40 MiB more while they are subscribed.
    h.log_padded("s1", 40 * 1024, 1024);
    let mut effects = Vec::new();
    for conn in &conns {
        effects.extend(h.request(*conn, "session/subscribe", json!({"session": "s1"})));
    }
    effects.extend(h.log_padded("s1", 40 * 1024, 1024));
    let queued = queued_bytes(&effects);
    let total: usize = queued.values().sum();
    let share = limits.conn_queue_bytes(conns.len());
    let one_line_and_answers = 2 * 1024 + 512;
    for conn in &conns {
        let held = queued.get(conn).copied().unwrap_or(0);
        assert!(
            held > 0 && held <= share + one_line_and_answers,
            "connection {conn} holds {held} bytes, its share is {share}"
        );
    }
    assert!(
        total <= limits.total_queue_bytes + conns.len() * one_line_and_answers,
        "{total} bytes queued in all"
    );
    let stalls = effects
        .iter()
        .filter(|effect| {
            matches!(
                effect,
                Effect::After {
                    timer: Timer::Stall { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(
        stalls,
        conns.len(),
        "each full queue starts its stall timer"
    );
}
