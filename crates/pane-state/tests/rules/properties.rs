//! Property tests over random message sequences (R77, R91): the reducer's invariants hold after
//! every step, and a session log written while folding live replays to the same state.

use panewise_pane_state::log::{
    encode_checkpoint, encode_entry, encode_header, fold_entries, LogEntry, LogHeader, SessionLog,
};
use panewise_pane_state::msg::Msg;
use panewise_pane_state::state::{
    ContextInvalidation, InitPhase, WaitingReason, MAX_QUEUED_PROMPTS,
};
use panewise_pane_state::{
    parse_log_bytes, step, CompactionTrigger, Failure, FailureKind, SessionStats, State, TurnId,
    TurnPhase,
};
use proptest::prelude::*;

const MODELS: [&str; 5] = [
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-opus-4-1[1m]",
    "gpt-5.5",
    "gemini-2.5-pro",
];

fn model() -> impl Strategy<Value = String> {
    prop::sample::select(MODELS.to_vec()).prop_map(str::to_owned)
}

fn tokens() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        1u64..50_000,
        50_000u64..400_000,
        400_000u64..2_000_000,
    ]
}

fn stats() -> impl Strategy<Value = Option<SessionStats>> {
    prop::option::of(
        (
            prop::option::of(0.0f64..5.0),
            prop::option::of(0u64..100_000),
            prop::option::of(0u64..500_000),
            prop::option::of(0u64..50_000),
            prop::option::of(0u64..5),
        )
            .prop_map(
                |(cost_usd, duration_ms, input, output, turns)| SessionStats {
                    cost_usd,
                    duration_ms,
                    input_tokens: input,
                    output_tokens: output,
                    num_turns: turns,
                    ..SessionStats::default()
                },
            ),
    )
}

fn turn() -> impl Strategy<Value = Option<TurnId>> {
    prop::option::of((1u64..4).prop_map(TurnId))
}

fn trigger() -> impl Strategy<Value = CompactionTrigger> {
    prop_oneof![
        Just(CompactionTrigger::Auto),
        Just(CompactionTrigger::Manual)
    ]
}

/// A message whose times are offsets from the current clock, resolved in [`sequence`].
#[derive(Debug, Clone)]
struct Planned {
    advance_ms: u64,
    msg: Msg,
}

/// Any message kind, with small value ranges so that interesting collisions happen often.
fn any_msg() -> impl Strategy<Value = Msg> {
    let at = 0u64..400_000;
    prop_oneof![
        Just(Msg::InitStart),
        at.clone().prop_map(|at| Msg::InitReady { at }),
        at.clone().prop_map(|at| Msg::InitFailed {
            at,
            reason: "boom".into()
        }),
        at.clone().prop_map(|at| Msg::StreamSubscribe { at }),
        at.clone().prop_map(|at| Msg::StreamUnsubscribe { at }),
        (0u64..5, at.clone()).prop_map(|(n, at)| Msg::StreamFlushObserved { added_count: n, at }),
        Just(Msg::StreamWatchdogTick),
        Just(Msg::StreamSessionStarted),
        (at.clone(), any::<bool>())
            .prop_map(|(at, active)| Msg::ReconcileTurnActive { at, active }),
        (
            prop::option::of(tokens()),
            prop::option::of(model()),
            prop::option::of(at.clone()),
            prop::option::of((model(), 1_000u64..2_000_000))
        )
            .prop_map(
                |(tokens, model, at, window)| Msg::ReconcileContextFromHistory {
                    tokens,
                    model,
                    at,
                    reported_windows: window.into_iter().collect(),
                }
            ),
        prop::collection::btree_map(model(), prop_oneof![Just(0u64), 1_000u64..2_000_000], 0..3)
            .prop_map(|windows| Msg::ContextWindowsReported { windows }),
        Just(Msg::ContextInvalidated {
            reason: ContextInvalidation::FreshSession
        }),
        model().prop_map(|model| Msg::ContextModelSwitched { model }),
        (
            at.clone(),
            prop::option::of(prop_oneof![
                Just("/compact".to_string()),
                Just("hi".to_string())
            ])
        )
            .prop_map(|(at, content)| Msg::TurnStart { at, content }),
        (stats(), turn(), any::<bool>()).prop_map(|(stats, turn, interrupted)| Msg::TurnEnd {
            stats,
            turn,
            interrupted
        }),
        Just(Msg::TurnReset),
        Just(Msg::TurnStartFailed),
        (1u64..4).prop_map(|t| Msg::TurnCancelled { turn: TurnId(t) }),
        (prop::option::of(Just("src/main.rs".to_string())), turn()).prop_map(|(arg, turn)| {
            Msg::ToolStart {
                name: "Bash".into(),
                arg,
                turn,
            }
        }),
        turn().prop_map(|turn| Msg::ToolEnd { turn }),
        (
            tokens(),
            prop::option::of(model()),
            prop::option::of(0u64..1_000),
            turn()
        )
            .prop_map(|(input, model, cache_read, turn)| Msg::TokensIn {
                input,
                model,
                // Only an annotation: any split must fold as the whole prompt alone does.
                cache_read: cache_read.map(|read| read.min(input)),
                cache_write: None,
                cache_write_1h: None,
                turn
            }),
        (0u64..10_000, turn()).prop_map(|(output, turn)| Msg::TokensOut { output, turn }),
        (0u64..10_000, turn()).prop_map(|(chars, turn)| Msg::OutputStreamed { chars, turn }),
        turn().prop_map(|turn| Msg::RequestStarted { turn }),
        at.clone().prop_map(|at| Msg::RequestStop { at }),
        Just(Msg::StopFailed),
        (turn(), prop::option::of(at.clone()))
            .prop_map(|(turn, deadline_ms)| { Msg::InterruptTimeoutElapsed { turn, deadline_ms } }),
        (turn(), prop::option::of(at.clone()))
            .prop_map(|(turn, deadline_ms)| Msg::SubmitTimeoutElapsed { turn, deadline_ms }),
        ((0u8..3), at.clone(), any::<bool>()).prop_map(|(id, at, busy)| {
            Msg::PendingMessageQueued {
                id: format!("m{id}"),
                text: "later".into(),
                at,
                enqueued_while_busy: busy,
            }
        }),
        (0u8..3).prop_map(|id| Msg::PendingMessageAccepted {
            id: format!("m{id}")
        }),
        (0u8..3).prop_map(|id| Msg::PendingMessageExpired {
            id: format!("m{id}")
        }),
        (0u8..3).prop_map(|id| Msg::PendingMessageFlushStarted {
            id: format!("m{id}")
        }),
        (prop::option::of(0u64..100_000), at.clone()).prop_map(|(retry_after_ms, at)| {
            Msg::ProviderWaiting {
                reason: WaitingReason::RateLimited,
                retry_after_ms,
                at,
            }
        }),
        at.clone().prop_map(|at| Msg::FailureObserved {
            failure: Failure {
                kind: FailureKind::RateLimited,
                retryable: true,
                message: "429".into(),
                http_status: Some(429)
            },
            at
        }),
        Just(Msg::FailureCleared),
        Just(Msg::DetailsToggle),
        Just(Msg::StashToggle),
        (trigger(), at.clone()).prop_map(|(trigger, at)| Msg::CompactionStarted { trigger, at }),
        (
            trigger(),
            tokens(),
            tokens(),
            at.clone(),
            prop::option::of(at.clone())
        )
            .prop_map(|(trigger, pre_tokens, post_tokens, at, frame_timestamp)| {
                Msg::CompactionBoundary {
                    trigger,
                    pre_tokens,
                    post_tokens,
                    duration_ms: None,
                    at,
                    frame_timestamp,
                }
            }),
        at.clone().prop_map(|at| Msg::AttachedTaskObserved { at }),
        Just(Msg::AttachedTaskCleared),
        ((0u8..3), turn()).prop_map(|(id, turn)| Msg::ApprovalRequested {
            id: format!("a{id}"),
            tool: "Bash".into(),
            summary: "rm".into(),
            turn
        }),
        any::<bool>().prop_map(|approved| Msg::approval_answer(None, approved, None)),
        (1u64..4, "[a-z]{0,40}").prop_map(|(t, text)| Msg::HookContextAdded {
            text,
            turn: TurnId(t)
        }),
        Just(Msg::Quit),
        "[a-z]{1,8}".prop_map(|text| Msg::PromptSubmitted { text }),
        (
            prop::option::of(0i32..3),
            prop::option::of(prop_oneof![Just(2i32), Just(9i32)])
        )
            .prop_map(|(code, signal)| Msg::AgentExited { code, signal }),
    ]
}

/// Sequences of messages with a clock that only moves forward, as a recorder would write them.
fn sequence(max_len: usize) -> impl Strategy<Value = Vec<LogEntry>> {
    prop::collection::vec(
        (0u64..120_000, any_msg()).prop_map(|(advance_ms, msg)| Planned { advance_ms, msg }),
        0..max_len,
    )
    .prop_map(|planned| {
        let mut now = 1_000_000u64;
        planned
            .into_iter()
            .map(|p| {
                now += p.advance_ms;
                LogEntry {
                    ts: now,
                    msg: shift_times(p.msg, now),
                }
            })
            .collect()
    })
}

/// Message times are generated as offsets around the clock so they land near it.
fn shift_times(msg: Msg, now: u64) -> Msg {
    let near = |at: u64| now.saturating_sub(200_000) + at;
    match msg {
        Msg::InitReady { at } => Msg::InitReady { at: near(at) },
        Msg::StreamSubscribe { at } => Msg::StreamSubscribe { at: near(at) },
        Msg::StreamUnsubscribe { at } => Msg::StreamUnsubscribe { at: near(at) },
        Msg::StreamFlushObserved { added_count, at } => Msg::StreamFlushObserved {
            added_count,
            at: near(at),
        },
        Msg::TurnStart { at, content } => Msg::TurnStart {
            at: near(at),
            content,
        },
        Msg::CompactionStarted { trigger, at } => Msg::CompactionStarted {
            trigger,
            at: near(at),
        },
        Msg::CompactionBoundary {
            trigger,
            pre_tokens,
            post_tokens,
            duration_ms,
            at,
            frame_timestamp,
        } => Msg::CompactionBoundary {
            trigger,
            pre_tokens,
            post_tokens,
            duration_ms,
            at: near(at),
            frame_timestamp: frame_timestamp.map(near),
        },
        other => other,
    }
}

fn fresh() -> State {
    State::new("prop")
}

fn header() -> LogHeader {
    LogHeader {
        agent_id: "prop".into(),
        started_at_ms: 1_000_000,
        model: None,
        ..LogHeader::default()
    }
}

/// The state a log with [`header`] starts its fold from.
fn fresh_at_header() -> State {
    SessionLog {
        header: Some(header()),
        ..SessionLog::default()
    }
    .initial_state()
}

fn fail(error: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(error.to_string())
}

fn totals_field(stats: &Option<SessionStats>) -> (f64, u64, u64, u64, u64) {
    let s = stats.clone().unwrap_or_default();
    (
        s.cost_usd.unwrap_or(0.0),
        s.duration_ms.unwrap_or(0),
        s.input_tokens.unwrap_or(0),
        s.output_tokens.unwrap_or(0),
        s.num_turns.unwrap_or(0),
    )
}

fn check_step(
    before: &State,
    msg: &Msg,
    after: &State,
    tool_starts: u64,
) -> Result<(), TestCaseError> {
    // No working phase while the stream is unsubscribed (R28, R30).
    prop_assert!(
        !(after.is_working() && after.last_event_ms.is_none()),
        "working while unsubscribed after {:?}: {:?}",
        msg,
        after.turn_phase
    );
    // The tool count never wraps below zero (R37): it can never exceed the starts seen.
    if let TurnPhase::Streaming { tools_active, .. } = after.turn_phase {
        prop_assert!(u64::from(tools_active) <= tool_starts);
    }
    // Learned windows never shrink and their keys are never lost (R54, R77.6).
    for (model, window) in &before.learned_context_windows {
        let now = after.learned_context_windows.get(model).copied();
        prop_assert!(now.is_some_and(|w| w >= *window), "learned {model} shrank");
    }
    // Reported keys are never lost (R77.5).
    for model in before.reported_context_windows.keys() {
        prop_assert!(after.reported_context_windows.contains_key(model));
    }
    // Totals never decrease, except through the wholesale reset (R6, R61).
    if !matches!(msg, Msg::TurnReset) {
        let (c0, d0, i0, o0, n0) = totals_field(&before.session_totals);
        let (c1, d1, i1, o1, n1) = totals_field(&after.session_totals);
        prop_assert!(c1 >= c0 && d1 >= d0 && i1 >= i0 && o1 >= o0 && n1 >= n0);
        prop_assert!(after.turns_completed >= before.turns_completed);
    }
    // A shown reading never exceeds its window, or 1M when the window is unknown (R55, R77.1).
    if let Some(reading) = after.plausible_reading() {
        let window = reading.window.unwrap_or(1_000_000);
        prop_assert!(reading.tokens <= window && reading.tokens > 0);
    }
    // A switched reading has no window (R77.3).
    if let Some(reading) = &after.context {
        if reading.switched_to.is_some() {
            prop_assert!(reading.window.is_none());
        }
    }
    // Invalidation and reset leave no reading and make the pane non-seedable (R77.7).
    if matches!(msg, Msg::ContextInvalidated { .. } | Msg::TurnReset) {
        prop_assert!(after.context.is_none() && !after.context_seedable);
    }
    // These leave the reading untouched (R77.8).
    if matches!(
        msg,
        Msg::TurnStart { .. }
            | Msg::TurnEnd { .. }
            | Msg::TurnStartFailed
            | Msg::CompactionStarted { .. }
    ) {
        prop_assert_eq!(&before.context, &after.context);
    }
    // A boundary makes the pane non-seedable and never invents a reading (R77.9).
    if matches!(msg, Msg::CompactionBoundary { .. }) {
        prop_assert!(!after.context_seedable);
        prop_assert!(after.context.is_none() || after.context == before.context);
    }
    // A late seed lands nothing (R77.10): the reading's tokens and source stay. Its windows may
    // still be merged underneath the live ones and re-resolve the window (R56).
    if matches!(msg, Msg::ReconcileContextFromHistory { .. }) && !before.context_seedable {
        let key = |s: &State| s.context.as_ref().map(|r| (r.tokens, r.source, r.at));
        prop_assert_eq!(key(before), key(after));
    }
    // Hook context and task notices stay within their byte cap (R89).
    let hook_bytes: usize = after.pending_hook_context.iter().map(String::len).sum();
    prop_assert!(hook_bytes <= 16 * 1024);
    // Queued prompts stay within their cap, and wait only while a prompt cannot be sent (R94).
    prop_assert!(after.queued_prompts.len() <= MAX_QUEUED_PROMPTS);
    if !after.queued_prompts.is_empty() {
        prop_assert!(
            after.is_working()
                || !after.is_subscribed()
                || matches!(after.init_phase, InitPhase::InitPending)
                || after.should_exit
                || after.agent_kill_sent,
            "a prompt waits with nothing in its way after {:?}",
            msg
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn r77_invariants_hold_after_every_step(entries in sequence(60)) {
        let mut state = fresh();
        let mut tool_starts = 0u64;
        for entry in &entries {
            if matches!(entry.msg, Msg::ToolStart { .. }) {
                tool_starts += 1;
            }
            let before = state.clone();
            let (after, _cmds) = step(state, entry.ts, entry.msg.clone());
            check_step(&before, &entry.msg, &after, tool_starts)?;
            state = after;
        }
    }

    #[test]
    fn r91_the_live_fold_equals_the_fold_of_the_written_and_read_back_log(
        entries in sequence(80),
        checkpoint_every in 1usize..40,
    ) {
        // Live: the reducer folds the messages as they arrive.
        let live = entries
            .iter()
            .fold(fresh_at_header(), |state, e| step(state, e.ts, e.msg.clone()).0);
        // Recorded: each message encoded as a log line, written to bytes, with a checkpoint of
        // the live state now and then and at the end; then read back, decoded and folded.
        let mut bytes: Vec<u8> = Vec::new();
        let mut push_line = |line: String| {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        };
        push_line(encode_header(&header()).map_err(fail)?);
        let mut state = fresh_at_header();
        for (index, entry) in entries.iter().enumerate() {
            push_line(encode_entry(entry).map_err(fail)?);
            state = step(state, entry.ts, entry.msg.clone()).0;
            if (index + 1) % checkpoint_every == 0 {
                push_line(encode_checkpoint(index + 1, &state).map_err(fail)?);
            }
        }
        push_line(encode_checkpoint(entries.len(), &state).map_err(fail)?);
        let log = parse_log_bytes(&bytes).map_err(fail)?;
        prop_assert_eq!(&log.warnings, &vec![]);
        prop_assert_eq!(log.entries.len(), entries.len());
        prop_assert_eq!(log.fold(), live.clone());
        prop_assert_eq!(
            log.final_checkpoint().map(|c| c.state.clone()),
            Some(live.clone())
        );
        prop_assert_eq!(log.fold_checked(), Ok(live));
    }

    #[test]
    fn r91_a_fold_resumed_from_a_decoded_checkpoint_state_equals_the_whole_fold(
        entries in sequence(80),
        split in 0usize..80,
    ) {
        // What a replay that starts from a checkpoint relies on: the state survives its own
        // JSON round trip, so folding on from the decoded state changes nothing.
        let split = split.min(entries.len());
        let (head, tail) = entries.split_at(split);
        let at_split = fold_entries(fresh(), head);
        let json = serde_json::to_string(&at_split).map_err(fail)?;
        let decoded: State = serde_json::from_str(&json).map_err(fail)?;
        prop_assert_eq!(&decoded, &at_split);
        prop_assert_eq!(fold_entries(decoded, tail), fold_entries(fresh(), &entries));
    }

    #[test]
    fn r91_every_generated_message_round_trips_through_json(msg in any_msg()) {
        let json = serde_json::to_string(&msg).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: Msg = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(format!("{e}: {json}")))?;
        prop_assert_eq!(back, msg);
    }
}
