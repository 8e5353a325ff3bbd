//! The reducer owns the interaction with the person (R101–R104): which requests wait, who
//! answered each, what a late or second answer meets, which tools are allowed for the session,
//! and when the agent has acknowledged the prompt panewise sent.

use panewise_pane_state::log::Actor;
use panewise_pane_state::state::RequestClosed;
use panewise_pane_state::{step, AnswerRefusal, Cmd, Event, Msg, State, TurnPhase};
use proptest::prelude::*;

use crate::support::*;

fn ask(id: &str, tool: &str) -> Msg {
    Msg::ApprovalRequested {
        id: id.into(),
        tool: tool.into(),
        summary: format!("{tool} {id}"),
        turn: None,
    }
}

fn answer(id: &str, approved: bool, by: Actor) -> Msg {
    Msg::approval_answer(Some(id), approved, Some(by))
}

fn allow_for_session(id: &str, by: Actor) -> Msg {
    Msg::ApprovalAnswered {
        id: Some(id.into()),
        approved: true,
        for_session: true,
        by: Some(by),
        reason: None,
    }
}

fn api(client: &str) -> Actor {
    Actor::Api {
        client: Some(client.into()),
    }
}

/// What one row expects of the last message's fold.
#[derive(Debug)]
enum Expect {
    /// The request is resolved, with this verdict, once.
    Resolved { id: &'static str, approved: bool },
    /// The answer is refused, for this reason, and nothing is resolved.
    Refused(AnswerRefusal),
}

struct Row {
    rule: &'static str,
    before: Vec<Msg>,
    last: Msg,
    expect: Expect,
    waiting_after: &'static [&'static str],
}

#[test]
fn r101_r102_answers_to_requests_follow_the_interaction_rules() {
    let rows = vec![
        Row {
            rule: "R101 the first answer wins",
            before: vec![ask("0", "shell")],
            last: answer("0", true, Actor::Person),
            expect: Expect::Resolved {
                id: "0",
                approved: true,
            },
            waiting_after: &[],
        },
        Row {
            rule: "R101 a second answer is refused and recorded",
            before: vec![ask("0", "shell"), answer("0", true, Actor::Person)],
            last: answer("0", false, api("panewise approve")),
            expect: Expect::Refused(AnswerRefusal::AlreadyAnswered {
                approved: true,
                by: Some(Actor::Person),
            }),
            waiting_after: &[],
        },
        Row {
            rule: "R101 an answer to a withdrawn request is refused",
            before: vec![ask("0", "shell"), Msg::ApprovalWithdrawn { id: "0".into() }],
            last: answer("0", true, Actor::Person),
            expect: Expect::Refused(AnswerRefusal::Withdrawn),
            waiting_after: &[],
        },
        Row {
            rule: "R101 an answer to a request a stop cleared is refused as withdrawn",
            before: vec![ask("0", "shell"), Msg::RequestStop { at: T0 + 1 }],
            last: answer("0", true, Actor::Person),
            expect: Expect::Refused(AnswerRefusal::Withdrawn),
            waiting_after: &[],
        },
        Row {
            rule: "R101 an answer naming no request that waited is refused as unknown",
            before: vec![ask("0", "shell")],
            last: answer("7", true, Actor::Person),
            expect: Expect::Refused(AnswerRefusal::Unknown),
            waiting_after: &["0"],
        },
        Row {
            rule: "R101 an answer by id reaches that request, not the front",
            before: vec![ask("0", "shell"), ask("1", "write")],
            last: answer("1", false, api("panewise approve")),
            expect: Expect::Resolved {
                id: "1",
                approved: false,
            },
            waiting_after: &["0"],
        },
        Row {
            rule: "R86 an answer without an id (an older log) answers the front request",
            before: vec![ask("0", "shell"), ask("1", "write")],
            last: Msg::approval_answer(None, true, None),
            expect: Expect::Resolved {
                id: "0",
                approved: true,
            },
            waiting_after: &["1"],
        },
        Row {
            rule: "R101 an id-less answer once every request closed is refused: nothing waits",
            before: vec![ask("0", "shell"), answer("0", true, Actor::Person)],
            last: Msg::approval_answer(None, true, None),
            expect: Expect::Refused(AnswerRefusal::NothingWaiting),
            waiting_after: &[],
        },
    ];
    for row in rows {
        let mut state = streaming(T0);
        for (index, msg) in row.before.into_iter().enumerate() {
            state = step(state, T0 + 1 + index as u64, msg).0;
        }
        let ignored_before = state.diagnostics.ignored;
        let (state, cmds) = step(state, T0 + 100, row.last);
        let resolved: Vec<(&str, bool)> = cmds
            .iter()
            .filter_map(|cmd| match cmd {
                Cmd::ResolveApproval { id, approved, .. } => Some((id.as_str(), *approved)),
                _ => None,
            })
            .collect();
        match &row.expect {
            Expect::Resolved { id, approved } => {
                assert_eq!(resolved, vec![(*id, *approved)], "{}", row.rule);
                assert_eq!(state.diagnostics.ignored, ignored_before, "{}", row.rule);
            }
            Expect::Refused(refusal) => {
                assert_eq!(resolved, vec![], "{}", row.rule);
                let refused: Vec<&AnswerRefusal> = cmds
                    .iter()
                    .filter_map(|cmd| match cmd {
                        Cmd::Emit(Event::AnswerRefused { refusal, .. }) => Some(refusal),
                        _ => None,
                    })
                    .collect();
                assert_eq!(refused, vec![refusal], "{}", row.rule);
                assert_eq!(
                    state.diagnostics.ignored,
                    ignored_before + 1,
                    "{}: the refusal is counted",
                    row.rule
                );
            }
        }
        let waiting: Vec<&str> = state
            .pending_approvals
            .iter()
            .map(|pending| pending.id.as_str())
            .collect();
        assert_eq!(waiting, row.waiting_after, "{}", row.rule);
    }
}

#[test]
fn r101_who_answered_each_request_is_state() {
    let state = settle(
        streaming(T0),
        &[
            (T0 + 1, ask("0", "shell")),
            (T0 + 2, ask("1", "shell")),
            (T0 + 3, answer("0", true, api("panewise approve"))),
            (T0 + 4, Msg::ApprovalWithdrawn { id: "1".into() }),
        ],
    );
    let closed: Vec<(&str, &RequestClosed)> = state
        .closed_requests
        .iter()
        .map(|closed| (closed.id.as_str(), &closed.closed))
        .collect();
    assert_eq!(
        closed,
        vec![
            (
                "0",
                &RequestClosed::Answered {
                    approved: true,
                    by: Some(api("panewise approve"))
                }
            ),
            ("1", &RequestClosed::Withdrawn),
        ]
    );
}

/// A rule, the messages folded, and each waiting request with whether it was asked.
type AskedRow = (&'static str, Vec<Msg>, &'static [(&'static str, bool)]);

#[test]
fn r102_a_request_put_to_a_person_is_marked_asked() {
    let rows: [AskedRow; 3] = [
        (
            "R102 a new request waits for the approval mode, not yet a person",
            vec![ask("0", "shell")],
            &[("0", false)],
        ),
        (
            "R102 asking marks the request the person answers",
            vec![
                ask("0", "shell"),
                ask("1", "shell"),
                Msg::ApprovalAsked { id: "0".into() },
            ],
            &[("0", true), ("1", false)],
        ),
        (
            "R102 asking about a request that no longer waits changes nothing",
            vec![ask("0", "shell"), Msg::ApprovalAsked { id: "9".into() }],
            &[("0", false)],
        ),
    ];
    for (rule, msgs, expected) in rows {
        let mut state = streaming(T0);
        for msg in msgs {
            state = step(state, T0 + 1, msg).0;
        }
        let asked: Vec<(&str, bool)> = state
            .pending_approvals
            .iter()
            .map(|pending| (pending.id.as_str(), pending.asked))
            .collect();
        assert_eq!(asked, expected, "{rule}");
    }
}

/// A rule, the messages folded, and each tool allowed for the session with who allowed it.
type AllowedRow = (&'static str, Vec<Msg>, &'static [(&'static str, Actor)]);

#[test]
fn r103_allowed_for_the_session_is_state_per_tool_with_who_allowed_it() {
    let rows: [AllowedRow; 4] = [
        (
            "R103 allowed for the session: the same tool is not asked again",
            vec![ask("0", "shell"), allow_for_session("0", Actor::Person)],
            &[("shell", Actor::Person)],
        ),
        (
            "R103 allowing once allows nothing for the session",
            vec![ask("0", "shell"), answer("0", true, Actor::Person)],
            &[],
        ),
        (
            "R103 a denial is never for the session",
            vec![
                ask("0", "shell"),
                Msg::ApprovalAnswered {
                    id: Some("0".into()),
                    approved: false,
                    for_session: true,
                    by: Some(Actor::Person),
                    reason: None,
                },
            ],
            &[],
        ),
        (
            "R103 a refused answer allows nothing for the session",
            vec![
                ask("0", "shell"),
                answer("0", false, Actor::Person),
                allow_for_session("0", api("panewise approve")),
            ],
            &[],
        ),
    ];
    for (rule, msgs, expected) in rows {
        let mut state = streaming(T0);
        for msg in msgs {
            state = step(state, T0 + 1, msg).0;
        }
        let allowed: Vec<(&str, Actor)> = state
            .allowed_for_session
            .iter()
            .map(|(tool, by)| (tool.as_str(), by.clone()))
            .collect();
        assert_eq!(allowed, expected, "{rule}");
    }
}

#[test]
fn r104_the_agents_turn_start_acknowledges_the_prompt_panewise_sent() {
    let state = subscribed_ready(T0);
    let (state, _) = step(state, T0 + 1, Msg::PromptSubmitted { text: "go".into() });
    assert!(state.submit_deadline.is_some());
    let (state, cmds) = step(state, T0 + 5, turn_start(T0 + 5));
    assert!(state.turn_phase.is_working());
    assert!(
        matches!(state.turn_phase, TurnPhase::Streaming { .. }),
        "{:?}",
        state.turn_phase
    );
    assert_eq!(state.submit_deadline, None);
    assert!(cmds.contains(&cancel(DeadlineKind::Submit, 1)), "{cmds:?}");
    assert!(!cmds
        .iter()
        .any(|cmd| matches!(cmd, Cmd::ScheduleDeadline { .. })));
}

/// What the agent or the person can do while a prompt is in flight.
#[derive(Debug, Clone)]
enum Step {
    Prompt,
    AgentTurnStart,
    Asked(u8),
    Answered(u8, bool),
    Withdrawn(u8),
    /// The runner's timer fires for the deadline armed now (if any), as a live session does.
    DeadlineDue,
    Output,
    TurnEnd,
    Tick,
}

fn steps() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Prompt),
        Just(Step::AgentTurnStart),
        (0u8..3).prop_map(Step::Asked),
        ((0u8..3), any::<bool>()).prop_map(|(id, approved)| Step::Answered(id, approved)),
        (0u8..3).prop_map(Step::Withdrawn),
        Just(Step::DeadlineDue),
        Just(Step::DeadlineDue),
        Just(Step::Output),
        Just(Step::TurnEnd),
        Just(Step::Tick),
    ]
}

fn message(state: &State, step: &Step, at: u64) -> Msg {
    match step {
        Step::Prompt => Msg::PromptSubmitted { text: "go".into() },
        Step::AgentTurnStart => turn_start(at),
        Step::Asked(id) => ask(&id.to_string(), "shell"),
        Step::Answered(id, approved) => answer(&id.to_string(), *approved, Actor::Person),
        Step::Withdrawn(id) => Msg::ApprovalWithdrawn { id: id.to_string() },
        Step::DeadlineDue => match state.submit_deadline {
            Some(armed) => Msg::SubmitTimeoutElapsed {
                turn: armed.turn,
                deadline_ms: Some(armed.deadline_ms),
            },
            None => submit_elapsed(),
        },
        Step::Output => streamed(5),
        Step::TurnEnd => turn_end(),
        Step::Tick => Msg::StreamWatchdogTick,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// R104 (finding: a Gemini CLI approval answered after 11 minutes ended the turn as "no
    /// sign of work within 30 s"): once the agent started the turn of a prompt panewise sent,
    /// or asked for approval in it, no submit deadline ends that turn, whatever the person's
    /// pace and in whatever order the messages come.
    #[test]
    fn r104_a_submit_deadline_never_fires_after_the_turn_started(
        script in proptest::collection::vec((steps(), 0u64..700_000), 1..40),
    ) {
        let mut state = subscribed_ready(T0);
        let mut now = T0;
        // The turn of the prompt in flight, once the agent has shown it started it.
        let mut started: Option<panewise_pane_state::TurnId> = None;
        for (step_kind, wait) in &script {
            now += wait;
            let msg = message(&state, step_kind, now);
            let working_before = state.turn_phase.is_working();
            // A start while the turn is being stopped is a new turn, not the acknowledgement.
            let awaiting_ack = state.prompt_sent_turn.is_some()
                && state.prompt_sent_turn == state.current_turn
                && matches!(
                    state.turn_phase,
                    TurnPhase::Submitting { .. } | TurnPhase::Streaming { .. }
                );
            let is_deadline = matches!(msg, Msg::SubmitTimeoutElapsed { .. });
            let (next, _) = step(state, now, msg);
            state = next;
            // A submit deadline that fires ends the working turn (R35).
            let timed_out = is_deadline && working_before && !state.turn_phase.is_working();
            if started.is_some() && working_before {
                prop_assert!(!timed_out, "the submit deadline fired after the turn started: {:?}", script);
            }
            let shows_start = match step_kind {
                Step::AgentTurnStart => working_before && awaiting_ack,
                Step::Asked(_) => working_before,
                _ => false,
            };
            if shows_start && state.turn_phase.is_working() {
                started = state.current_turn;
                prop_assert_eq!(state.submit_deadline, None, "{:?}", script);
            } else if !state.turn_phase.is_working() || state.current_turn != started {
                started = None;
            }
        }
    }
}
