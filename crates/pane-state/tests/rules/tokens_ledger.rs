//! Part B.12–B.13: turn tokens, the output counter, the turn ledger and the carry rule
//! (R67–R74).

use panewise_pane_state::ledger::TurnLedger;
use panewise_pane_state::state::TurnTokens;
use panewise_pane_state::{step, CompactionTrigger, FailureKind, Msg, State};
use serde_json::json;

use crate::support::*;

fn ledger(turn_id: u64, seq: u64, active: bool) -> TurnLedger {
    serde_json::from_value(json!({
        "turn_id": turn_id,
        "seq": seq,
        "started_at_ms": T0,
        "active": active,
    }))
    .unwrap()
}

fn observed(ledger: TurnLedger) -> Msg {
    Msg::TurnLedgerObserved {
        ledger: Box::new(ledger),
    }
}

fn request_started() -> Msg {
    Msg::RequestStarted { turn: None }
}

#[test]
fn r67_tokens_in_starts_a_call_from_nothing() {
    let (s, cmds) = step(streaming(T0), T0 + 1, tokens_in(1_000, None));
    assert_eq!(s.turn_tokens, Some(tokens(1_000, 0)));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r67_a_new_call_folds_the_previous_output_as_the_larger_of_exact_and_estimate() {
    // Interpretation: the original folds `outputSoFar`, i.e. max(exact, chars/4), so the counter
    // a user saw is what the next call builds on.
    let s = settle(
        streaming(T0),
        &[
            (T0 + 1, tokens_in(1_000, None)),
            (T0 + 2, request_started()),
            (T0 + 3, streamed(400)),
            (T0 + 4, tokens_out(80)),
            (T0 + 5, request_started()),
        ],
    );
    let (s, _) = step(s, T0 + 6, tokens_in(2_000, None));
    assert_eq!(
        s.turn_tokens,
        Some(TurnTokens {
            input: 2_000,
            output: 0,
            output_done: 100,
            streamed_chars: 0,
            shown_output: 100,
            requesting: false,
            ledger_turn_id: None,
            ledger_pass: None,
        })
    );
    let s = settle(
        s,
        &[(T0 + 7, tokens_out(150)), (T0 + 8, tokens_in(3_000, None))],
    );
    assert_eq!(s.turn_tokens.as_ref().map(|t| t.output_done), Some(250));
}

#[test]
fn r67_a_call_is_stamped_with_the_open_ledger_turn_and_pass() {
    let mut open = ledger(7, 1, true);
    open.passes = 2;
    let s = settle(streaming(T0), &[(T0, observed(open))]);
    let (s, _) = step(s, T0 + 1, tokens_in(1_000, None));
    let t = s.turn_tokens.clone().unwrap();
    assert_eq!((t.ledger_turn_id, t.ledger_pass), (Some(7), Some(2)));
    // A closed ledger turn stamps nothing.
    let s = settle(streaming(T0), &[(T0, observed(ledger(7, 1, false)))]);
    let (s, _) = step(s, T0 + 1, tokens_in(1_000, None));
    let t = s.turn_tokens.clone().unwrap();
    assert_eq!((t.ledger_turn_id, t.ledger_pass), (None, None));
}

#[test]
fn r68_tokens_out_overwrites_the_call_output() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, tokens_out(10))],
    );
    let (s, cmds) = step(s, T0 + 3, tokens_out(25));
    assert_eq!(s.turn_tokens.as_ref().map(|t| t.output), Some(25));
    assert_eq!(
        s.turn_output_tokens(),
        25,
        "cumulative counts are not added up"
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r68_request_started_and_streamed_output_toggle_requesting() {
    let s = settle(streaming(T0), &[(T0 + 1, tokens_in(1_000, None))]);
    let (s, cmds) = step(s, T0 + 2, request_started());
    assert_eq!(s.turn_tokens.as_ref().map(|t| t.requesting), Some(true));
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 3, streamed(10));
    let (s, _) = step(s, T0 + 4, streamed(6));
    let t = s.turn_tokens.clone().unwrap();
    assert_eq!((t.streamed_chars, t.requesting), (16, false));
    assert_eq!(cmds, vec![]);
    assert_eq!(s.turn_output_tokens(), 4);
}

/// R69 on absurd input: streamed characters near `u64::MAX` saturate the counter and its
/// rounded estimate instead of wrapping (or panicking with overflow checks on).
#[test]
fn r69_streamed_characters_at_the_limit_saturate() {
    let s = settle(streaming(T0), &[(T0 + 1, tokens_in(1_000, None))]);
    let (s, _) = step(s, T0 + 2, streamed(u64::MAX - 1));
    let (s, _) = step(s, T0 + 3, streamed(u64::MAX));
    let t = s.turn_tokens.clone().unwrap();
    assert_eq!(t.streamed_chars, u64::MAX);
    assert_eq!(s.turn_output_tokens(), u64::MAX / 4);
}

#[test]
fn r68_before_the_first_call_request_started_and_streamed_output_change_nothing() {
    assert_eq!(unchanged(streaming(T0), T0 + 1, request_started()), vec![]);
    assert_eq!(unchanged(streaming(T0), T0 + 1, streamed(40)), vec![]);
}

#[test]
fn r69_the_estimate_rounds_four_characters_to_a_token() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, streamed(6))],
    );
    assert_eq!(s.turn_output_tokens(), 2, "1.5 rounds up");
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, streamed(5))],
    );
    assert_eq!(s.turn_output_tokens(), 1, "1.25 rounds down");
}

#[test]
fn r69_the_counter_never_goes_down_within_a_turn() {
    let s = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, tokens_out(50))],
    );
    assert_eq!(s.turn_output_tokens(), 50);
    let (s, _) = step(s, T0 + 3, tokens_out(30));
    assert_eq!(s.turn_tokens.as_ref().map(|t| t.output), Some(30));
    assert_eq!(s.turn_output_tokens(), 50);
    // A new call builds on the shown figure, never below it.
    let (s, _) = step(s, T0 + 4, tokens_in(2_000, None));
    assert_eq!(s.turn_output_tokens(), 50);
    let (s, _) = step(s, T0 + 5, tokens_out(30));
    assert_eq!(s.turn_output_tokens(), 60);
}

#[test]
fn r69_input_is_never_counted_as_output() {
    let (s, _) = step(streaming(T0), T0 + 1, tokens_in(180_000, None));
    assert_eq!(s.turn_output_tokens(), 0);
}

#[test]
fn r70_hard_ends_clear_the_turn_tokens() {
    let base = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, tokens_out(9))],
    );
    let ends: Vec<(State, Msg)> = vec![
        (base.clone(), turn_end()),
        (base.clone(), Msg::TurnReset),
        (
            base.clone(),
            Msg::FailureObserved {
                failure: failure(FailureKind::Unknown),
                at: T0 + 3,
            },
        ),
        (base.clone(), Msg::StreamUnsubscribe { at: T0 + 3 }),
        (
            settle(base.clone(), &[(T0 + 3, Msg::RequestStop { at: T0 + 3 })]),
            interrupt_elapsed(),
        ),
        (
            {
                let mut s = submitting(T0);
                s.turn_tokens = Some(tokens(1_000, 9));
                s
            },
            submit_elapsed(),
        ),
        (
            {
                let mut s = settle(
                    subscribed_ready(T0),
                    &[(T0 + 1, turn_start_with(T0 + 1, "/compact"))],
                );
                s.turn_tokens = Some(tokens(1_000, 9));
                s
            },
            boundary(CompactionTrigger::Manual, T0 + 3, None),
        ),
    ];
    for (s, msg) in ends {
        let kind = msg.kind();
        let (s, _) = step(s, T0 + 3, msg);
        assert_eq!(s.turn_tokens, None, "{kind} must clear the turn tokens");
    }
}

#[test]
fn r70_soft_ends_and_new_turns_keep_the_turn_tokens() {
    let base = settle(
        streaming(T0),
        &[(T0 + 1, tokens_in(1_000, None)), (T0 + 2, tokens_out(9))],
    );
    let held = base.turn_tokens.clone();
    assert!(held.is_some());
    let s = settle(
        base.clone(),
        &[(
            T0 + 3,
            Msg::ReconcileTurnActive {
                at: T0 + 3,
                active: false,
            },
        )],
    );
    assert_eq!(s.turn_tokens, held, "reconcile demotion");
    let s = settle(
        s,
        &[(
            T0 + 4,
            Msg::ReconcileTurnActive {
                at: T0 + 4,
                active: true,
            },
        )],
    );
    assert_eq!(s.turn_tokens, held, "reconcile promotion");
    let s = settle(s, &[(T0 + 5, turn_start(T0 + 5))]);
    assert_eq!(s.turn_tokens, held, "a new turn before the old one's end");
    let s = settle(base, &[(T0 + 2 + 180_000, Msg::StreamWatchdogTick)]);
    assert_eq!(s.turn_phase, panewise_pane_state::TurnPhase::Idle);
    assert_eq!(s.turn_tokens, held, "watchdog recovery");
}

#[test]
fn r71_a_snapshot_missing_turn_id_start_or_a_boolean_active_is_rejected() {
    let full = json!({"turn_id": 1, "started_at_ms": T0, "active": true});
    assert!(serde_json::from_value::<TurnLedger>(full).is_ok());
    for missing in ["turn_id", "started_at_ms", "active"] {
        let mut v = json!({"turn_id": 1, "started_at_ms": T0, "active": true});
        v.as_object_mut().unwrap().remove(missing);
        assert!(
            serde_json::from_value::<TurnLedger>(v).is_err(),
            "without {missing}"
        );
    }
    let not_bool = json!({"turn_id": 1, "started_at_ms": T0, "active": "yes"});
    assert!(serde_json::from_value::<TurnLedger>(not_bool).is_err());
}

#[test]
fn r71_optional_fields_take_their_defaults() {
    let l = ledger(3, 0, true);
    assert_eq!(l.passes, 1);
    assert_eq!(
        (l.counted_passes, l.output_tokens, l.inputs, l.steps),
        (0, 0, 0, 0)
    );
    assert_eq!(
        (l.origin, l.end, l.ended_at_ms, l.settle_until_ms),
        (None, None, None, None)
    );
}

#[test]
fn r72_a_larger_turn_or_an_equal_or_later_seq_replaces_the_snapshot() {
    let s = settle(fresh(), &[(T0, observed(ledger(5, 3, true)))]);
    let (s1, cmds) = step(s.clone(), T0 + 1, observed(ledger(5, 3, false)));
    assert_eq!(
        s1.turn_ledger,
        Some(ledger(5, 3, false)),
        "equal seq replaces"
    );
    assert_eq!(cmds, vec![]);
    let (s2, _) = step(s.clone(), T0 + 1, observed(ledger(5, 4, false)));
    assert_eq!(s2.turn_ledger, Some(ledger(5, 4, false)));
    let (s3, _) = step(s.clone(), T0 + 1, observed(ledger(6, 0, true)));
    assert_eq!(
        s3.turn_ledger,
        Some(ledger(6, 0, true)),
        "a larger turn wins whatever its seq"
    );
    assert_eq!(
        unchanged(s.clone(), T0 + 1, observed(ledger(5, 2, false))),
        vec![]
    );
    assert_eq!(unchanged(s, T0 + 1, observed(ledger(4, 9, false))), vec![]);
}

#[test]
fn r73_settling_open_and_ended_at() {
    let mut l = ledger(1, 0, false);
    l.settle_until_ms = Some(T0 + 100);
    l.last_pass_ended_at_ms = Some(T0 + 50);
    assert!(l.is_settling(T0 + 100) && l.is_open(T0 + 100));
    assert_eq!(l.ended_at(T0 + 100), None, "no end while open");
    assert!(!l.is_settling(T0 + 101) && !l.is_open(T0 + 101));
    assert_eq!(l.ended_at(T0 + 101), Some(T0 + 50));
    l.ended_at_ms = Some(T0 + 60);
    assert!(!l.is_settling(T0 + 90), "an ended turn does not settle");
    assert_eq!(l.ended_at(T0 + 90), Some(T0 + 60));
    let active = ledger(1, 0, true);
    assert!(active.is_open(T0 + 1_000_000) && !active.is_settling(T0));
    assert_eq!(active.ended_at(T0), None);
}

#[test]
fn r73_a_held_message_joins_the_open_turn_or_one_ended_within_ten_seconds() {
    assert_eq!(ledger(4, 0, true).turn_to_join(T0 + 99_999), Some(4));
    let mut ended = ledger(4, 0, false);
    ended.ended_at_ms = Some(T0);
    assert_eq!(ended.turn_to_join(T0 + 10_000), Some(4));
    assert_eq!(ended.turn_to_join(T0 + 10_001), None);
    let never_ended = ledger(4, 0, false);
    assert_eq!(never_ended.turn_to_join(T0), None);
}

/// A pane whose current call is stamped with ledger turn 7, pass 2, with `live` output.
fn carried(live: u64, counted_passes: u64, output_tokens: u64) -> State {
    let mut open = ledger(7, 1, true);
    open.passes = 2;
    let s = settle(
        streaming(T0),
        &[
            (T0, observed(open.clone())),
            (T0 + 1, tokens_in(1_000, None)),
            (T0 + 2, tokens_out(live)),
        ],
    );
    let mut next = open;
    next.seq = 2;
    next.counted_passes = counted_passes;
    next.output_tokens = output_tokens;
    settle(s, &[(T0 + 3, observed(next))])
}

#[test]
fn r74_outside_an_open_turn_the_counter_is_the_pass_own_count() {
    let (s, _) = step(streaming(T0), T0 + 1, tokens_in(1_000, None));
    let s = settle(s, &[(T0 + 2, tokens_out(40))]);
    assert_eq!(s.turn_output_tokens(), 40, "no ledger");
    let mut closed = ledger(7, 5, false);
    closed.counted_passes = 3;
    closed.output_tokens = 900;
    let s = settle(s, &[(T0 + 3, observed(closed))]);
    assert_eq!(s.turn_output_tokens(), 40, "a closed ledger turn");
}

#[test]
fn r74_nothing_counted_yet_shows_the_uncounted_live_count() {
    assert_eq!(carried(40, 0, 0).turn_output_tokens(), 40);
}

#[test]
fn r74_counted_passes_plus_the_uncounted_live_pass() {
    assert_eq!(carried(40, 1, 500).turn_output_tokens(), 540);
}

#[test]
fn r74_a_pass_already_counted_is_not_counted_twice() {
    assert_eq!(carried(40, 2, 540).turn_output_tokens(), 540);
}

#[test]
fn r74_tokens_stamped_with_another_turn_are_not_shown_before_anything_is_counted() {
    let mut s = carried(40, 0, 0);
    if let Some(t) = s.turn_tokens.as_mut() {
        t.ledger_turn_id = Some(6);
    }
    assert_eq!(s.turn_output_tokens(), 0);
}

#[test]
fn r74_unstamped_tokens_count_as_counted_once_passes_are_counted() {
    let mut s = carried(40, 1, 500);
    if let Some(t) = s.turn_tokens.as_mut() {
        t.ledger_turn_id = None;
        t.ledger_pass = None;
    }
    assert_eq!(s.turn_output_tokens(), 500);
}

#[test]
fn r74_a_settling_turn_is_still_open_for_the_carry_rule() {
    let mut s = carried(40, 1, 500);
    let mut settling = s.turn_ledger.clone().unwrap();
    settling.seq = 3;
    settling.active = false;
    settling.settle_until_ms = Some(T0 + 1_000);
    s = settle(s, &[(T0 + 900, observed(settling))]);
    assert_eq!(s.turn_output_tokens(), 540);
    let (s, _) = step(s, T0 + 1_001, Msg::InitStart);
    assert_eq!(
        s.turn_output_tokens(),
        40,
        "once settled the pass shows its own count"
    );
}

#[test]
fn r74_between_passes_of_an_open_turn_the_counter_keeps_the_counted_output() {
    // The pass's result cleared its live tokens, but the ledger turn is still settling: the
    // working row must keep showing what the ledger counted, not drop to zero (R69).
    let s = carried(40, 1, 500);
    assert_eq!(s.turn_output_tokens(), 540);
    let mut settling = s.turn_ledger.clone().unwrap();
    settling.seq = 3;
    settling.active = false;
    settling.counted_passes = 2;
    settling.output_tokens = 540;
    settling.settle_until_ms = Some(T0 + 1_000);
    let s = settle(s, &[(T0 + 10, turn_end()), (T0 + 11, observed(settling))]);
    assert_eq!(s.turn_tokens, None);
    assert_eq!(s.turn_output_tokens(), 540);
    // Once the turn is closed there is no carry, and nothing live to show.
    let (s, _) = step(s, T0 + 1_001, Msg::InitStart);
    assert_eq!(s.turn_output_tokens(), 0);
}
