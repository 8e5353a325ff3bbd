//! The commands a runner needs to drive an agent, decided here and not in the host: sending a
//! prompt (R94), interrupting and killing the agent (R95), the agent's exit (R96) and the
//! watchdog's tick interval (R97), and a turn the agent ends as interrupted (R98).

use panewise_pane_state::reducer::{LIVENESS_RECOVERY_MS, STUCK_THRESHOLD_MS};
use panewise_pane_state::state::{InitPhase, MAX_QUEUED_PROMPTS};
use panewise_pane_state::{
    step, Cmd, Event, FailureKind, Msg, State, TurnOutcome, TurnPhase, WATCHDOG_TICK_MS,
};

use crate::support::*;

fn prompt(text: &str) -> Msg {
    Msg::PromptSubmitted {
        text: text.to_owned(),
    }
}

fn exited(code: Option<i32>, signal: Option<i32>) -> Msg {
    Msg::AgentExited { code, signal }
}

fn send(turn: u64, text: &str) -> Cmd {
    Cmd::SendPrompt {
        turn: TurnId(turn),
        text: text.to_owned(),
    }
}

/// Messages with the clock each is stamped at.
type Steps = Vec<(u64, Msg)>;

fn sends(cmds: &[Cmd]) -> Vec<&Cmd> {
    cmds.iter()
        .filter(|c| matches!(c, Cmd::SendPrompt { .. }))
        .collect()
}

/// A streaming turn (TurnId 1) with `texts` typed while it works.
fn streaming_with_queued(at: u64, texts: &[&str]) -> State {
    let msgs: Vec<(u64, Msg)> = texts.iter().map(|t| (at, prompt(t))).collect();
    settle(streaming(at), &msgs)
}

#[test]
fn r94_a_prompt_while_idle_starts_a_turn_as_turn_start_does_and_is_sent() {
    let at = T0 + 1;
    let (s, cmds) = step(subscribed_ready(T0), at, prompt("hello"));
    assert_eq!(
        s.turn_phase,
        TurnPhase::Submitting {
            submitted_at: at,
            pending_content: "hello".into()
        }
    );
    assert_eq!(s.current_turn, Some(TurnId(1)));
    assert_eq!(
        cmds,
        vec![
            schedule(DeadlineKind::Submit, 1, at + 30_000),
            send(1, "hello"),
        ]
    );
    // Exactly what a TurnStart with the same content would have done to the state (R94), but
    // the pane now knows it drives its agent (R99) and waits for the agent to acknowledge the
    // prompt it sent (R104).
    let (mut by_turn_start, _) = step(subscribed_ready(T0), at, turn_start_with(at, "hello"));
    assert!(s.drives_agent && !by_turn_start.drives_agent);
    assert_eq!(s.prompt_sent_turn, Some(TurnId(1)));
    by_turn_start.drives_agent = true;
    by_turn_start.prompt_sent_turn = Some(TurnId(1));
    assert_eq!(s, by_turn_start);
}

#[test]
fn r94_a_prompt_after_a_finished_turn_gets_the_next_turn_id() {
    for (finished, next) in [(done_completed(T0), 2), (done_errored(T0), 2)] {
        let (s, cmds) = step(finished, T0 + 5, prompt("again"));
        assert_eq!(s.current_turn, Some(TurnId(next)));
        assert_eq!(sends(&cmds), vec![&send(next, "again")]);
    }
}

#[test]
fn r94_a_prompt_while_working_waits_and_is_sent_after_turn_end_with_the_next_turn() {
    let (s, cmds) = step(streaming(T0), T0 + 1, prompt("next"));
    assert_eq!(cmds, vec![]);
    assert_eq!(s.current_turn, Some(TurnId(1)));
    assert_eq!(s.queued_prompts.len(), 1);
    let (s, cmds) = step(s, T0 + 2, turn_end());
    assert!(s.queued_prompts.is_empty());
    assert_eq!(s.current_turn, Some(TurnId(2)));
    // Turn 1 ended, completed, before the queued prompt started turn 2.
    assert_eq!(s.turns_completed, 1);
    assert_eq!(sends(&cmds), vec![&send(2, "next")]);
    assert!(cmds.contains(&schedule(DeadlineKind::Submit, 2, T0 + 2 + 30_000)));
}

#[test]
fn r94_every_way_a_turn_ends_sends_the_next_queued_prompt() {
    let stop = |at| (at, Msg::RequestStop { at });
    let cases: Vec<(&str, State, Steps)> = vec![
        (
            "completed",
            streaming_with_queued(T0, &["q"]),
            vec![(T0 + 1, turn_end())],
        ),
        (
            "stopped by the result",
            streaming_with_queued(T0, &["q"]),
            vec![stop(T0 + 1), (T0 + 2, turn_end())],
        ),
        (
            "stopped by the drained cancel",
            streaming_with_queued(T0, &["q"]),
            vec![
                stop(T0 + 1),
                (T0 + 2, Msg::TurnCancelled { turn: TurnId(1) }),
            ],
        ),
        (
            "errored by a failure",
            streaming_with_queued(T0, &["q"]),
            vec![(
                T0 + 1,
                Msg::FailureObserved {
                    failure: failure(FailureKind::RateLimited),
                    at: T0 + 1,
                },
            )],
        ),
        (
            "errored by the submit deadline",
            settle(submitting(T0), &[(T0, prompt("q"))]),
            vec![(T0 + 30_000, submit_elapsed())],
        ),
        (
            "interrupted, once the killed agent exited",
            streaming_with_queued(T0, &["q"]),
            vec![
                stop(T0 + 1),
                (T0 + 5_001, interrupt_elapsed()),
                (T0 + 5_002, exited(None, Some(9))),
            ],
        ),
        (
            "the agent exited mid-turn",
            streaming_with_queued(T0, &["q"]),
            vec![(T0 + 1, exited(Some(1), None))],
        ),
        (
            "stopped by the watchdog, once the agent exited (R99)",
            streaming_with_queued(T0, &["q"]),
            vec![
                (T0 + 180_000, Msg::StreamWatchdogTick),
                (T0 + 180_001, exited(Some(130), None)),
            ],
        ),
    ];
    for (name, start, msgs) in cases {
        let (s, cmds) = run(start, &msgs);
        assert_eq!(sends(&cmds), vec![&send(2, "q")], "{name}");
        assert_eq!(s.current_turn, Some(TurnId(2)), "{name}");
        assert!(s.queued_prompts.is_empty(), "{name}");
    }
}

#[test]
fn r94_queued_prompts_go_first_in_first_out_one_turn_each() {
    let s = streaming_with_queued(T0, &["first", "second"]);
    let (s, cmds) = step(s, T0 + 1, turn_end());
    assert_eq!(sends(&cmds), vec![&send(2, "first")]);
    assert_eq!(s.queued_prompts.len(), 1);
    let s = settle(s, &[(T0 + 2, flush(1, T0 + 2))]);
    let (s, cmds) = step(s, T0 + 3, turn_end());
    assert_eq!(sends(&cmds), vec![&send(3, "second")]);
    assert!(s.queued_prompts.is_empty());
}

#[test]
fn r94_r28_r29_a_prompt_waits_for_the_stream_and_for_init() {
    let (s, cmds) = step(fresh(), T0, prompt("early"));
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 1, Msg::StreamSubscribe { at: T0 + 1 });
    assert!(sends(&cmds).is_empty());
    assert!(matches!(s.init_phase, InitPhase::InitPending));
    let (s, cmds) = step(s, T0 + 2, Msg::InitReady { at: T0 + 2 });
    assert_eq!(sends(&cmds), vec![&send(1, "early")]);
    assert_eq!(s.current_turn, Some(TurnId(1)));
}

#[test]
fn r94_reset_and_quit_drop_the_queued_prompts() {
    let s = streaming_with_queued(T0, &["a", "b"]);
    assert_eq!(s.queued_prompts.len(), 2);
    let (reset, cmds) = step(s.clone(), T0 + 1, Msg::TurnReset);
    assert!(reset.queued_prompts.is_empty());
    assert!(sends(&cmds).is_empty());

    let (quit, cmds) = step(s, T0 + 1, Msg::Quit);
    assert!(quit.queued_prompts.is_empty());
    assert!(quit.should_exit);
    assert!(sends(&cmds).is_empty());
    // Nothing sends a prompt typed after quitting.
    let (quit, cmds) = step(quit, T0 + 2, prompt("too late"));
    assert!(quit.queued_prompts.is_empty());
    assert_eq!(cmds, vec![]);
}

#[test]
fn r94_r88_the_prompt_queue_is_capped_and_drops_its_oldest() {
    let texts: Vec<String> = (0..=MAX_QUEUED_PROMPTS).map(|i| format!("p{i}")).collect();
    let msgs: Vec<(u64, Msg)> = texts.iter().map(|t| (T0 + 1, prompt(t))).collect();
    let (s, cmds) = run(streaming(T0), &msgs);
    assert_eq!(s.queued_prompts.len(), MAX_QUEUED_PROMPTS);
    // Only the oldest went: the rest wait in order.
    let waiting: Vec<&str> = s.queued_prompts.iter().map(|p| p.text.as_str()).collect();
    let kept: Vec<&str> = texts[1..].iter().map(String::as_str).collect();
    assert_eq!(waiting, kept);
    assert!(sends(&cmds).is_empty());
}

#[test]
fn r95_stop_interrupts_the_agent_and_arms_the_deadline() {
    let (s, cmds) = step(streaming(T0), T0 + 1, Msg::RequestStop { at: T0 + 1 });
    assert_eq!(s.turn_phase, interrupting_phase(T0 + 1));
    assert_eq!(
        cmds,
        vec![
            schedule(DeadlineKind::Interrupt, 1, T0 + 5_001),
            Cmd::InterruptAgent {
                turn: Some(TurnId(1))
            },
        ]
    );
}

#[test]
fn r95_r35_the_interrupt_deadline_kills_the_agent_and_ends_the_turn_interrupted() {
    let (s, cmds) = step(streaming(T0), T0 + 1, Msg::RequestStop { at: T0 + 1 });
    // The runner sends back exactly what the schedule command named.
    let fired = cmds.iter().find_map(|c| match c {
        Cmd::ScheduleDeadline {
            turn,
            kind,
            deadline_ms,
        } => Some(kind.elapsed(*turn, *deadline_ms)),
        _ => None,
    });
    let (s, cmds) = step(s, T0 + 5_001, fired.unwrap());
    assert_eq!(s.turn_phase, done(TurnOutcome::Interrupted, T0 + 5_001));
    assert_eq!(cmds, vec![kill(1),]);
    // The kill's exit is expected: no failure, nothing to report (R96).
    let (s, cmds) = step(s, T0 + 5_002, exited(None, Some(9)));
    assert_eq!(cmds, vec![]);
    assert_eq!(s.failure, None);
    assert!(!s.agent_kill_sent);
}

#[test]
fn r95_r81_an_older_turns_interrupt_deadline_kills_nothing() {
    // Turn 1 is stopped and its result arrives; a prompt starts turn 2; turn 1's timer fires.
    let s = settle(
        interrupting(T0),
        &[
            (T0 + 1, turn_end()),
            (T0 + 2, prompt("next")),
            (T0 + 3, flush(1, T0 + 3)),
        ],
    );
    assert_eq!(s.current_turn, Some(TurnId(2)));
    let late = DeadlineKind::Interrupt.elapsed(Some(TurnId(1)), T0 + 5_000);
    let cmds = unchanged(s, T0 + 5_000, late);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r95_r96_a_second_stop_kills_at_once_and_the_exit_ends_the_turn_interrupted() {
    let (s, cmds) = step(interrupting(T0), T0 + 1, Msg::RequestStop { at: T0 + 1 });
    assert!(cmds.contains(&kill(1)));
    assert_eq!(s.turn_phase, interrupting_phase(T0));
    let (s, cmds) = step(s, T0 + 2, exited(None, Some(9)));
    assert_eq!(s.turn_phase, done(TurnOutcome::Interrupted, T0 + 2));
    assert_eq!(s.failure, None);
    assert_eq!(cmds, vec![cancel(DeadlineKind::Interrupt, 1),]);
}

#[test]
fn r96_the_agent_exiting_mid_turn_fails_the_turn_as_process_exited() {
    let cases = [
        (Some(1), None, "exited with code 1"),
        (Some(0), None, "exited with code 0"),
        (None, Some(9), "was ended by signal 9"),
        (None, None, "ended without an exit status"),
    ];
    for start in [submitting(T0), streaming(T0)] {
        for (code, signal, says) in cases {
            let (s, _) = step(start.clone(), T0 + 7, exited(code, signal));
            assert_eq!(s.turn_phase, done(TurnOutcome::Errored, T0 + 7));
            let failure = s.failure.as_ref().map(|f| &f.failure);
            assert_eq!(failure.map(|f| f.kind), Some(FailureKind::ProcessExited));
            let message = failure.map(|f| f.message.clone()).unwrap_or_default();
            assert!(
                message.contains(says) && message.contains("before its turn ended"),
                "{message}"
            );
        }
    }
}

#[test]
fn r96_the_agent_exiting_while_interrupted_ends_the_turn_stopped_not_failed() {
    // A one-shot CLI answers SIGINT by exiting: the stop took effect.
    for (code, signal) in [(Some(130), None), (None, Some(2)), (Some(0), None)] {
        let (s, cmds) = step(interrupting(T0), T0 + 3, exited(code, signal));
        assert_eq!(s.turn_phase, done(TurnOutcome::Stopped, T0 + 3));
        assert_eq!(s.failure, None);
        // The turn left Interrupting: only its deadline is disarmed.
        assert_eq!(cmds, vec![cancel(DeadlineKind::Interrupt, 1)]);
    }
}

#[test]
fn r96_a_clean_exit_with_no_turn_working_emits_nothing() {
    for s in [subscribed_ready(T0), done_completed(T0), done_errored(T0)] {
        assert_eq!(unchanged(s, T0 + 4, exited(Some(0), None)), vec![]);
    }
}

#[test]
fn r96_an_unclean_exit_with_no_turn_working_is_shown_as_a_failure() {
    let (s, cmds) = step(done_completed(T0), T0 + 4, exited(Some(2), None));
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0));
    assert_eq!(
        s.failure.as_ref().map(|f| f.failure.kind),
        Some(FailureKind::ProcessExited)
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r97_r39_ticking_at_the_interval_finds_each_threshold_within_one_tick() {
    const { assert!(WATCHDOG_TICK_MS > 0 && WATCHDOG_TICK_MS < STUCK_THRESHOLD_MS) };
    let mut s = streaming(T0);
    let (mut first_stuck, mut recovered) = (None, None);
    let mut now = T0;
    while recovered.is_none() && now < T0 + 2 * LIVENESS_RECOVERY_MS {
        now += WATCHDOG_TICK_MS;
        let (next, cmds) = step(s, now, Msg::StreamWatchdogTick);
        s = next;
        if cmds
            .iter()
            .any(|cmd| matches!(cmd, Cmd::Emit(Event::StreamStuck { .. })))
        {
            first_stuck.get_or_insert(now - T0);
        }
        // The recovery ends the turn of a pane that only watches its agent (R39).
        if s.turn_phase == TurnPhase::Idle {
            recovered = Some(now - T0);
        }
    }
    let late = |seen: Option<u64>, threshold: u64| seen.map(|at| at - threshold);
    assert!(late(first_stuck, STUCK_THRESHOLD_MS).is_some_and(|l| l < WATCHDOG_TICK_MS));
    assert!(late(recovered, LIVENESS_RECOVERY_MS).is_some_and(|l| l < WATCHDOG_TICK_MS));
}

#[test]
fn r91_the_runner_commands_and_messages_serialise_with_snake_case_tags() {
    let cases = [
        (
            serde_json::to_value(send(4, "hi")).unwrap(),
            serde_json::json!({"cmd": "send_prompt", "turn": 4, "text": "hi"}),
        ),
        (
            serde_json::to_value(Cmd::InterruptAgent {
                turn: Some(TurnId(4)),
            })
            .unwrap(),
            serde_json::json!({"cmd": "interrupt_agent", "turn": 4}),
        ),
        (
            serde_json::to_value(kill(4)).unwrap(),
            serde_json::json!({"cmd": "kill_agent", "turn": 4}),
        ),
        (
            serde_json::to_value(prompt("hi")).unwrap(),
            serde_json::json!({"type": "prompt_submitted", "text": "hi"}),
        ),
        (
            serde_json::to_value(exited(Some(1), None)).unwrap(),
            serde_json::json!({"type": "agent_exited", "code": 1}),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

#[test]
fn r96_an_exit_after_a_shown_failure_keeps_the_failure_that_explains_it() {
    // Claude Code ends an errored turn (an API error) and then exits 1: the cause stays shown.
    let s = settle(
        streaming(T0),
        &[(
            T0 + 1,
            Msg::FailureObserved {
                failure: failure(FailureKind::ServerError),
                at: T0 + 1,
            },
        )],
    );
    let (s, _) = step(s, T0 + 2, exited(Some(1), None));
    assert_eq!(
        s.failure.as_ref().map(|f| f.failure.kind),
        Some(FailureKind::ServerError)
    );
}

fn interrupted_end() -> Msg {
    Msg::TurnEnd {
        stats: None,
        turn: None,
        interrupted: true,
    }
}

#[test]
fn r98_a_turn_the_agent_reports_interrupted_ends_stopped_whether_or_not_panewise_stopped_it() {
    // Live: panewise asked for the stop, and the agent's interrupted result is its effect.
    let (stopping, _) = step(streaming(T0), T0 + 1, Msg::RequestStop { at: T0 + 1 });
    let (live, cmds) = step(stopping, T0 + 2, interrupted_end());
    // Decoded capture: the stream alone says the person stopped the turn.
    let (decoded, _) = step(streaming(T0), T0 + 2, interrupted_end());
    for s in [&live, &decoded] {
        assert_eq!(
            s.turn_phase,
            TurnPhase::Done {
                outcome: TurnOutcome::Stopped,
                finished_at: T0 + 2
            }
        );
        assert!(s.failure.is_none());
        assert_eq!(s.turns_completed, 0);
    }
    // The interrupt deadline no longer matters once the turn has ended.
    assert!(cmds.iter().any(|c| matches!(
        c,
        Cmd::CancelDeadline {
            kind: DeadlineKind::Interrupt,
            ..
        }
    )));
}

#[test]
fn r96_r98_an_unclean_exit_after_a_stopped_turn_is_no_failure() {
    // Claude Code exits 1 after an interrupted turn; that exit is the stop, not a new failure.
    let (stopped, _) = step(streaming(T0), T0 + 2, interrupted_end());
    let (s, _) = step(stopped, T0 + 4, exited(Some(1), None));
    assert!(s.failure.is_none());
    assert_eq!(s.turn_phase, done(TurnOutcome::Stopped, T0 + 2));
}

#[test]
fn r99_a_driven_turn_silent_past_recovery_is_a_failure_and_is_stopped() {
    let (driven, _) = step(subscribed_ready(T0), T0, prompt("work"));
    let driven = settle(driven, &[(T0 + 1, tool_start("Bash", Some("ls")))]);
    let driven = settle(driven, &[(T0 + 2, Msg::ToolEnd { turn: None })]);
    let at = T0 + 2 + LIVENESS_RECOVERY_MS;
    let (s, cmds) = step(driven, at, Msg::StreamWatchdogTick);
    assert!(matches!(s.turn_phase, TurnPhase::Interrupting { .. }));
    let failure = s.failure.as_ref().map(|f| &f.failure);
    assert_eq!(
        failure.map(|f| f.kind),
        Some(FailureKind::StreamDisconnected)
    );
    assert!(failure.is_some_and(|f| f.message.contains("180 s")));
    assert!(cmds.iter().any(|c| matches!(
        c,
        Cmd::InterruptAgent {
            turn: Some(TurnId(1))
        }
    )));
    assert!(cmds.iter().any(|c| matches!(
        c,
        Cmd::ScheduleDeadline {
            kind: DeadlineKind::Interrupt,
            ..
        }
    )));
    // An agent that ignores the interrupt is killed at the deadline (R95), and its exit ends
    // the turn interrupted while the silence stays the failure shown (R96).
    let (s, cmds) = step(s, at + 5_000, interrupt_elapsed());
    assert!(cmds.iter().any(|c| matches!(c, Cmd::KillAgent { .. })));
    let (s, _) = step(s, at + 5_001, exited(None, Some(9)));
    assert_eq!(s.turn_phase, done(TurnOutcome::Interrupted, at + 5_000));
    assert_eq!(
        s.failure.as_ref().map(|f| f.failure.kind),
        Some(FailureKind::StreamDisconnected)
    );
}

#[test]
fn r39_r99_a_pane_that_only_watches_still_recovers_to_idle() {
    // The same silence on a pane fed by TurnStart (a decoded or followed stream) is R39's.
    let (s, cmds) = step(
        streaming(T0),
        T0 + LIVENESS_RECOVERY_MS,
        Msg::StreamWatchdogTick,
    );
    assert_eq!(s.turn_phase, TurnPhase::Idle);
    assert!(s.failure.is_none());
    assert!(!cmds.iter().any(|c| matches!(c, Cmd::InterruptAgent { .. })));
}

#[test]
fn r100_an_agent_overdue_after_its_input_ended_is_killed_once_and_its_exit_is_no_failure() {
    let (s, cmds) = step(done_completed(T0), T0 + 10_000, Msg::AgentShutdownOverdue);
    assert!(cmds.iter().any(|c| matches!(c, Cmd::KillAgent { .. })));
    let (s, again) = step(s, T0 + 10_001, Msg::AgentShutdownOverdue);
    assert!(!again.iter().any(|c| matches!(c, Cmd::KillAgent { .. })));
    let (s, _) = step(s, T0 + 10_002, exited(None, Some(9)));
    assert!(s.failure.is_none());
    assert_eq!(s.turn_phase, done(TurnOutcome::Completed, T0));
}

#[test]
fn configured_deadlines_arm_the_submit_deadline_and_say_which_passed_and_after_how_long() {
    let configured = Msg::DeadlinesConfigured {
        submit_ms: 90_000,
        stuck_ms: 60_000,
    };
    let s = settle(subscribed_ready(T0), &[(T0, configured)]);
    let at = T0 + 1;
    let (s, cmds) = step(s, at, prompt("hello"));
    assert!(cmds.contains(&schedule(DeadlineKind::Submit, 1, at + 90_000)));
    let (s, _) = step(
        s,
        at + 90_000,
        Msg::SubmitTimeoutElapsed {
            turn: Some(TurnId(1)),
            deadline_ms: Some(at + 90_000),
        },
    );
    let failure = s
        .failure
        .as_ref()
        .map(|failure| failure.failure.message.as_str());
    assert_eq!(
        failure,
        Some("the agent showed no sign of work within 90 s of the prompt (the submit deadline)")
    );
    // A working stream is stuck after the configured silence, not the default's.
    let s = settle(
        streaming(T0),
        &[(
            T0,
            Msg::DeadlinesConfigured {
                submit_ms: 1,
                stuck_ms: 5_000,
            },
        )],
    );
    assert_eq!(
        s.deadlines.submit_ms, 1_000,
        "a deadline is at least a second"
    );
    let (_, cmds) = step(s, T0 + 5_000, Msg::StreamWatchdogTick);
    assert!(
        cmds.iter().any(|cmd| matches!(
            cmd,
            Cmd::Emit(Event::StreamStuck {
                threshold_ms: 5_000,
                ..
            })
        )),
        "{cmds:?}"
    );
}
