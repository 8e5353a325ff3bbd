//! Part B.8: the context reading (R50–R59).

use std::collections::BTreeMap;

use panewise_pane_state::context::{
    auto_compact_point, model_table_window, plausible_reading, AutoCompactPoint, AutoCompactReport,
    Implausible,
};
use panewise_pane_state::state::ContextInvalidation;
use panewise_pane_state::{
    step, CompactionTrigger, ContextReading, Msg, ReadingSource, State, WindowSource,
};

use crate::support::*;

const OPUS: &str = "claude-opus-4";
const HAIKU: &str = "claude-haiku-4-5";
const GPT: &str = "gpt-5";

fn live(
    tokens: u64,
    model: Option<&str>,
    window: Option<u64>,
    source: Option<WindowSource>,
    at: u64,
) -> ContextReading {
    ContextReading {
        tokens,
        model: model.map(str::to_owned),
        window,
        window_source: source,
        source: ReadingSource::Live,
        at: Some(at),
        switched_to: None,
    }
}

fn report(pairs: &[(&str, u64)]) -> Msg {
    Msg::ContextWindowsReported {
        windows: pairs.iter().map(|(m, w)| ((*m).to_owned(), *w)).collect(),
    }
}

fn seed(tokens: Option<u64>, model: Option<&str>, windows: &[(&str, u64)]) -> Msg {
    Msg::ReconcileContextFromHistory {
        tokens,
        model: model.map(str::to_owned),
        at: Some(T0 - 60_000),
        reported_windows: windows.iter().map(|(m, w)| ((*m).to_owned(), *w)).collect(),
    }
}

/// Checks that `s` keeps this reading but does not show it, implausible for `reason` (R55).
fn assert_rejected(
    s: &State,
    tokens: u64,
    window: Option<u64>,
    model: Option<&str>,
    source: ReadingSource,
    reason: &str,
) {
    let Some(reading) = s.context.as_ref() else {
        panic!("the reading must be kept");
    };
    assert_eq!(
        (
            reading.tokens,
            reading.window,
            reading.model.as_deref(),
            reading.source
        ),
        (tokens, window, model, source)
    );
    assert_eq!(
        plausible_reading(reading).map_err(Implausible::as_str),
        Err(reason)
    );
    assert_eq!(s.plausible_reading(), None);
}

fn with_reading(tokens: u64, model: &str) -> State {
    settle(streaming(T0), &[(T0 + 1, tokens_in(tokens, Some(model)))])
}

#[test]
fn r50_tokens_in_builds_a_live_reading_at_the_injected_now() {
    let (s, cmds) = step(streaming(T0), T0 + 5, tokens_in(50_000, Some(OPUS)));
    assert_eq!(
        s.context,
        Some(live(
            50_000,
            Some(OPUS),
            Some(1_000_000),
            Some(WindowSource::Model),
            T0 + 5
        ))
    );
    assert!(!s.context_seedable);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r50_r55_an_implausible_live_reading_is_stored_but_not_shown() {
    let (s, cmds) = step(streaming(T0), T0 + 5, tokens_in(0, Some(OPUS)));
    assert_eq!(s.context.as_ref().map(|r| r.tokens), Some(0));
    assert_eq!(s.plausible_reading(), None);
    assert_rejected(
        &s,
        0,
        Some(1_000_000),
        Some(OPUS),
        ReadingSource::Live,
        "tokens is not a positive integer",
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r51_model_table() {
    assert_eq!(model_table_window("claude-haiku-4-5"), Some(200_000));
    assert_eq!(model_table_window("claude-opus-4-1"), Some(1_000_000));
    assert_eq!(model_table_window("fable-2"), Some(1_000_000));
    assert_eq!(model_table_window("mythos"), Some(1_000_000));
    assert_eq!(model_table_window("claude-sonnet-5"), Some(1_000_000));
    assert_eq!(model_table_window("claude-sonnet-4-5"), Some(200_000));
    assert_eq!(
        model_table_window("sonnet"),
        Some(200_000),
        "a bare sonnet is version 0"
    );
    assert_eq!(model_table_window("claude-sonnet-4-5[1m]"), Some(1_000_000));
    assert_eq!(model_table_window("custom-model[1m]"), Some(1_000_000));
    assert_eq!(model_table_window(GPT), None);
}

#[test]
fn r51_a_reported_window_beats_the_table() {
    let s = settle(streaming(T0), &[(T0, report(&[(OPUS, 500_000)]))]);
    let (s, _) = step(s, T0 + 1, tokens_in(100_000, Some(OPUS)));
    assert_eq!(
        s.context,
        Some(live(
            100_000,
            Some(OPUS),
            Some(500_000),
            Some(WindowSource::Reported),
            T0 + 1
        ))
    );
}

#[test]
fn r51_lookup_ignores_case_and_a_1m_suffix() {
    let s = settle(streaming(T0), &[(T0, report(&[(OPUS, 500_000)]))]);
    let (s, _) = step(s, T0 + 1, tokens_in(100_000, Some("Claude-Opus-4[1m]")));
    let r = s.context.clone().unwrap();
    assert_eq!(
        (r.window, r.window_source),
        (Some(500_000), Some(WindowSource::Reported))
    );
}

#[test]
fn r51_an_unknown_model_has_no_window_and_no_provider_default() {
    let (s, cmds) = step(streaming(T0), T0 + 1, tokens_in(300_000, Some(GPT)));
    assert_eq!(
        s.context,
        Some(live(300_000, Some(GPT), None, None, T0 + 1))
    );
    assert!(s.plausible_reading().is_some());
    assert_eq!(cmds, vec![]);
}

#[test]
fn r51_a_table_model_prompt_above_its_window_learns_the_next_tier() {
    let (s, cmds) = step(streaming(T0), T0 + 1, tokens_in(250_000, Some(HAIKU)));
    assert_eq!(
        s.context,
        Some(live(
            250_000,
            Some(HAIKU),
            Some(1_000_000),
            Some(WindowSource::Learned),
            T0 + 1
        ))
    );
    assert_eq!(
        s.learned_context_windows,
        BTreeMap::from([(HAIKU.to_owned(), 1_000_000)])
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r51_above_every_tier_nothing_is_learned() {
    let (s, cmds) = step(streaming(T0), T0 + 1, tokens_in(1_500_000, Some(HAIKU)));
    assert!(s.learned_context_windows.is_empty());
    assert_eq!(s.plausible_reading(), None);
    assert_rejected(
        &s,
        1_500_000,
        Some(200_000),
        Some(HAIKU),
        ReadingSource::Live,
        "tokens exceed the window",
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r51_only_table_models_learn() {
    let s = settle(streaming(T0), &[(T0, report(&[(GPT, 400_000)]))]);
    let (s, cmds) = step(s, T0 + 1, tokens_in(500_000, Some(GPT)));
    assert!(s.learned_context_windows.is_empty());
    assert_rejected(
        &s,
        500_000,
        Some(400_000),
        Some(GPT),
        ReadingSource::Live,
        "tokens exceed the window",
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r54_a_learned_window_refutes_a_smaller_report_once() {
    let s = settle(streaming(T0), &[(T0, report(&[(HAIKU, 200_000)]))]);
    let (s, cmds) = step(s, T0 + 1, tokens_in(300_000, Some(HAIKU)));
    assert_eq!(s.learned_context_windows.get(HAIKU), Some(&1_000_000));
    assert_eq!(s.refuted_models, [HAIKU.to_owned()].into());
    assert_eq!(cmds, vec![]);
    // Later calls on the same model keep the learned window and record the refutation once.
    let (s, cmds) = step(s, T0 + 2, tokens_in(200_000, Some(HAIKU)));
    assert_eq!(
        s.context,
        Some(live(
            200_000,
            Some(HAIKU),
            Some(1_000_000),
            Some(WindowSource::Learned),
            T0 + 2
        ))
    );
    assert_eq!(s.refuted_models.len(), 1);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r54_learned_windows_only_grow() {
    let s = settle(streaming(T0), &[(T0, report(&[(HAIKU, 100_000)]))]);
    let (s, _) = step(s, T0 + 1, tokens_in(150_000, Some(HAIKU)));
    assert_eq!(s.learned_context_windows.get(HAIKU), Some(&200_000));
    let (s, _) = step(s, T0 + 2, tokens_in(300_000, Some(HAIKU)));
    assert_eq!(s.learned_context_windows.get(HAIKU), Some(&1_000_000));
    let (s, _) = step(s, T0 + 3, tokens_in(150_000, Some(HAIKU)));
    assert_eq!(s.learned_context_windows.get(HAIKU), Some(&1_000_000));
}

#[test]
fn r55_plausibility_reasons() {
    let reading = |tokens, window| live(tokens, Some(GPT), window, None, T0);
    assert_eq!(plausible_reading(&reading(1, Some(1))), Ok(()));
    assert_eq!(
        plausible_reading(&reading(0, Some(10))),
        Err(Implausible::TokensNotPositive)
    );
    assert_eq!(
        plausible_reading(&reading(5, Some(0))),
        Err(Implausible::WindowNotPositive)
    );
    assert_eq!(
        plausible_reading(&reading(11, Some(10))),
        Err(Implausible::TokensExceedWindow)
    );
    assert_eq!(plausible_reading(&reading(1_000_000, None)), Ok(()));
    assert_eq!(
        plausible_reading(&reading(1_000_001, None)),
        Err(Implausible::TokensExceedEveryWindow)
    );
    assert_eq!(
        Implausible::TokensExceedEveryWindow.as_str(),
        "tokens exceed every known window"
    );
    assert_eq!(
        Implausible::WindowNotPositive.as_str(),
        "window is not a positive integer"
    );
}

#[test]
fn r55_each_implausible_reading_is_hidden_and_a_plausible_one_is_shown_again() {
    let reason = "tokens exceed every known window";
    let (s, cmds) = step(streaming(T0), T0 + 1, tokens_in(2_000_000, None));
    assert_rejected(&s, 2_000_000, None, None, ReadingSource::Live, reason);
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 2, tokens_in(3_000_000, None));
    assert_rejected(&s, 3_000_000, None, None, ReadingSource::Live, reason);
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 3, tokens_in(5_000, None));
    assert_eq!(s.plausible_reading().map(|r| r.tokens), Some(5_000));
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 4, tokens_in(2_500_000, None));
    assert_rejected(&s, 2_500_000, None, None, ReadingSource::Live, reason);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r55_a_report_that_shrinks_the_window_below_the_reading_rejects_it() {
    let s = settle(
        streaming(T0),
        &[
            (T0, report(&[(GPT, 400_000)])),
            (T0 + 1, tokens_in(300_000, Some(GPT))),
        ],
    );
    let (s, cmds) = step(s, T0 + 2, report(&[(GPT, 200_000)]));
    assert_eq!(s.context.as_ref().and_then(|r| r.window), Some(200_000));
    assert_eq!(s.plausible_reading(), None);
    assert_rejected(
        &s,
        300_000,
        Some(200_000),
        Some(GPT),
        ReadingSource::Live,
        "tokens exceed the window",
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r53_a_report_merges_and_rewindows_the_reading() {
    let s = with_reading(100_000, OPUS);
    let (s, cmds) = step(s, T0 + 2, report(&[(OPUS, 500_000)]));
    assert_eq!(
        s.reported_context_windows,
        BTreeMap::from([(OPUS.to_owned(), 500_000)])
    );
    assert_eq!(
        s.context,
        Some(live(
            100_000,
            Some(OPUS),
            Some(500_000),
            Some(WindowSource::Reported),
            T0 + 1
        ))
    );
    assert_eq!(cmds, vec![]);
    // The same report again changes nothing.
    assert_eq!(
        unchanged(s.clone(), T0 + 3, report(&[(OPUS, 500_000)])),
        vec![]
    );
    // The live report wins over the earlier one.
    let (s, _) = step(s, T0 + 4, report(&[(OPUS, 600_000)]));
    assert_eq!(s.reported_context_windows.get(OPUS), Some(&600_000));
    assert_eq!(s.context.clone().and_then(|r| r.window), Some(600_000));
}

#[test]
fn r53_a_report_about_another_model_leaves_the_reading_alone() {
    let s = with_reading(100_000, OPUS);
    let reading = s.context.clone();
    let (s, cmds) = step(s, T0 + 2, report(&[(HAIKU, 150_000)]));
    assert_eq!(s.context, reading);
    assert_eq!(s.reported_context_windows.get(HAIKU), Some(&150_000));
    assert_eq!(cmds, vec![]);
}

#[test]
fn r24_r51_implausible_reported_windows_are_ignored_when_resolving() {
    // A window outside 1 000..=100 000 000 is not a context window (R24): the meter keeps the
    // table's window instead of rejecting every reading against a nonsense report.
    let s = with_reading(100_000, OPUS);
    let reading = s.context.clone();
    let (s, cmds) = step(s, T0 + 2, report(&[(OPUS, 999)]));
    assert_eq!(s.context, reading);
    assert_eq!(cmds, vec![]);
    let (s, cmds) = step(s, T0 + 3, tokens_in(120_000, Some(OPUS)));
    assert_eq!(
        s.context,
        Some(live(
            120_000,
            Some(OPUS),
            Some(1_000_000),
            Some(WindowSource::Model),
            T0 + 3
        ))
    );
    assert_eq!(cmds, vec![]);
    // Nor does a nonsense report count as refuted by a learned window.
    let (s, _) = step(s, T0 + 4, report(&[(HAIKU, 100_000_001)]));
    let (s, cmds) = step(s, T0 + 5, tokens_in(250_000, Some(HAIKU)));
    assert!(s.refuted_models.is_empty());
    assert_eq!(cmds, vec![]);
}

#[test]
fn r24_r51_boundary_values_of_the_plausible_window_range_are_believed() {
    let s = settle(
        streaming(T0),
        &[(T0, report(&[(GPT, 1_000), ("big-model", 100_000_000)]))],
    );
    let (s, _) = step(s, T0 + 1, tokens_in(900, Some(GPT)));
    assert_eq!(s.context.as_ref().and_then(|r| r.window), Some(1_000));
    let (s, _) = step(s, T0 + 2, tokens_in(5_000_000, Some("big-model")));
    assert_eq!(s.context.as_ref().and_then(|r| r.window), Some(100_000_000));
    assert!(s.plausible_reading().is_some());
}

#[test]
fn r24_r56_implausible_history_windows_are_ignored_when_resolving() {
    let (s, cmds) = step(
        subscribed_ready(T0),
        T0,
        seed(Some(50_000), Some(HAIKU), &[(HAIKU, 10)]),
    );
    assert_eq!(
        s.context.as_ref().map(|r| (r.window, r.window_source)),
        Some((Some(200_000), Some(WindowSource::Model)))
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r56_a_history_seed_lands_once_while_seedable() {
    let (s, cmds) = step(
        subscribed_ready(T0),
        T0,
        seed(Some(80_000), Some(OPUS), &[]),
    );
    assert_eq!(
        s.context,
        Some(ContextReading {
            tokens: 80_000,
            model: Some(OPUS.into()),
            window: Some(1_000_000),
            window_source: Some(WindowSource::Model),
            source: ReadingSource::History,
            at: Some(T0 - 60_000),
            switched_to: None,
        })
    );
    assert!(!s.context_seedable);
    assert_eq!(s.last_context_model.as_deref(), Some(OPUS));
    assert_eq!(cmds, vec![]);
    // The first seed wins.
    assert_eq!(
        unchanged(s, T0 + 1, seed(Some(90_000), Some(HAIKU), &[])),
        vec![]
    );
}

#[test]
fn r56_a_late_seed_after_live_invalidation_reset_or_boundary_changes_nothing() {
    let spoilers: Vec<Msg> = vec![
        tokens_in(5_000, Some(OPUS)),
        Msg::ContextInvalidated {
            reason: ContextInvalidation::FreshSession,
        },
        Msg::TurnReset,
        boundary(CompactionTrigger::Auto, T0 + 1, None),
    ];
    for spoiler in spoilers {
        let kind = spoiler.kind();
        let s = settle(streaming(T0), &[(T0 + 1, spoiler)]);
        let cmds = unchanged(s, T0 + 2, seed(Some(80_000), Some(OPUS), &[]));
        assert_eq!(cmds, vec![], "a seed after {kind} must be ignored");
    }
}

#[test]
fn r56_history_windows_go_underneath_the_live_ones() {
    let s = settle(streaming(T0), &[(T0, report(&[(OPUS, 500_000)]))]);
    let (s, _) = step(
        s,
        T0 + 1,
        seed(None, None, &[(OPUS, 200_000), (HAIKU, 150_000)]),
    );
    assert_eq!(
        s.reported_context_windows,
        BTreeMap::from([(OPUS.to_owned(), 500_000), (HAIKU.to_owned(), 150_000)])
    );
}

#[test]
fn r56_history_windows_rewindow_the_current_reading() {
    let s = with_reading(300_000, GPT);
    let (s, cmds) = step(s, T0 + 2, seed(Some(1), Some(GPT), &[(GPT, 400_000)]));
    assert_eq!(
        s.context,
        Some(live(
            300_000,
            Some(GPT),
            Some(400_000),
            Some(WindowSource::Reported),
            T0 + 1
        ))
    );
    assert_eq!(cmds, vec![], "the seed itself is late and ignored");
}

#[test]
fn r56_an_implausible_seed_is_rejected_and_not_stored() {
    let (s, cmds) = step(
        subscribed_ready(T0),
        T0,
        seed(Some(2_000_000), Some(GPT), &[]),
    );
    assert_eq!(s.context, None);
    assert!(s.context_seedable, "a rejected seed leaves seeding open");
    assert_eq!(cmds, vec![]);
}

#[test]
fn r57_invalidation_drops_the_reading_and_repeating_it_changes_nothing() {
    let s = with_reading(100_000, OPUS);
    let (s, cmds) = step(
        s,
        T0 + 2,
        Msg::ContextInvalidated {
            reason: ContextInvalidation::TranscriptReplaced,
        },
    );
    assert_eq!(s.context, None);
    assert!(!s.context_seedable);
    assert_eq!(cmds, vec![]);
    let again = Msg::ContextInvalidated {
        reason: ContextInvalidation::FreshSession,
    };
    assert_eq!(unchanged(s.clone(), T0 + 3, again), vec![]);
    // The next, much smaller reading is a new conversation, not a compaction.
    let (s, cmds) = step(s, T0 + 4, tokens_in(8_000, Some(OPUS)));
    assert_eq!(s.compactions, 0);
    assert_eq!(cmds, vec![]);
}

#[test]
fn r58_a_model_switch_without_a_reading_changes_nothing() {
    let msg = Msg::ContextModelSwitched {
        model: HAIKU.into(),
    };
    assert_eq!(unchanged(streaming(T0), T0 + 1, msg), vec![]);
}

#[test]
fn r58_a_switched_reading_keeps_its_tokens_and_loses_its_window() {
    let s = settle(
        with_reading(100_000, OPUS),
        &[(T0 + 2, report(&[(OPUS, 500_000)]))],
    );
    let (s, cmds) = step(
        s,
        T0 + 3,
        Msg::ContextModelSwitched {
            model: HAIKU.into(),
        },
    );
    let mut expected = live(100_000, Some(OPUS), None, None, T0 + 1);
    expected.switched_to = Some(HAIKU.into());
    assert_eq!(s.context, Some(expected.clone()));
    assert_eq!(cmds, vec![]);
    // A late report about the old model does not bring its window back.
    let (s, _) = step(s, T0 + 4, report(&[(OPUS, 600_000)]));
    assert_eq!(s.context, Some(expected));
}

#[test]
fn r58_switching_back_to_the_reading_model_restores_its_window() {
    let s = settle(
        with_reading(100_000, OPUS),
        &[
            (T0 + 2, report(&[(OPUS, 500_000)])),
            (
                T0 + 3,
                Msg::ContextModelSwitched {
                    model: HAIKU.into(),
                },
            ),
        ],
    );
    let (s, cmds) = step(s, T0 + 4, Msg::ContextModelSwitched { model: OPUS.into() });
    assert_eq!(
        s.context,
        Some(live(
            100_000,
            Some(OPUS),
            Some(500_000),
            Some(WindowSource::Reported),
            T0 + 1
        ))
    );
    assert_eq!(cmds, vec![]);
}

#[test]
fn r58_the_new_model_first_tokens_make_a_normal_reading() {
    let s = settle(
        with_reading(100_000, OPUS),
        &[(
            T0 + 2,
            Msg::ContextModelSwitched {
                model: HAIKU.into(),
            },
        )],
    );
    let (s, _) = step(s, T0 + 3, tokens_in(30_000, Some(HAIKU)));
    assert_eq!(
        s.context,
        Some(live(
            30_000,
            Some(HAIKU),
            Some(200_000),
            Some(WindowSource::Model),
            T0 + 3
        ))
    );
}

#[test]
fn r59_no_auto_compact_point_without_a_reading_or_after_a_switch() {
    assert_eq!(auto_compact_point(None, None), None);
    let mut switched = live(1_000, Some(OPUS), None, None, T0);
    switched.switched_to = Some(HAIKU.into());
    assert_eq!(auto_compact_point(Some(&switched), None), None);
}

#[test]
fn r59_the_cli_report_for_the_same_model_wins() {
    let reading = live(
        1_000,
        Some("claude-opus-4-5"),
        Some(1_000_000),
        Some(WindowSource::Model),
        T0,
    );
    let enabled = AutoCompactReport {
        model: "Claude-Opus-4-5-20251101[1m]",
        enabled: true,
        threshold: 700_000,
    };
    assert_eq!(
        auto_compact_point(Some(&reading), Some(&enabled)),
        Some(AutoCompactPoint::At {
            threshold: 700_000,
            reported: true
        })
    );
    let disabled = AutoCompactReport {
        enabled: false,
        ..enabled
    };
    assert_eq!(
        auto_compact_point(Some(&reading), Some(&disabled)),
        Some(AutoCompactPoint::Off)
    );
}

#[test]
fn r59_otherwise_the_point_is_assumed_from_the_window() {
    let reading = live(
        1_000,
        Some(OPUS),
        Some(200_000),
        Some(WindowSource::Model),
        T0,
    );
    let other = AutoCompactReport {
        model: HAIKU,
        enabled: false,
        threshold: 1,
    };
    assert_eq!(
        auto_compact_point(Some(&reading), Some(&other)),
        Some(AutoCompactPoint::At {
            threshold: 167_000,
            reported: false
        })
    );
    let tiny = live(
        1_000,
        Some(GPT),
        Some(20_000),
        Some(WindowSource::Reported),
        T0,
    );
    assert_eq!(
        auto_compact_point(Some(&tiny), None),
        Some(AutoCompactPoint::At {
            threshold: 1,
            reported: false
        })
    );
    let unknown = live(1_000, Some(GPT), None, None, T0);
    assert_eq!(auto_compact_point(Some(&unknown), None), None);
}

#[test]
fn r77_turn_messages_and_compaction_starts_leave_the_reading_identical() {
    let s = with_reading(100_000, OPUS);
    let reading = s.context.clone();
    assert!(reading.is_some());
    let (s, _) = run(
        s,
        &[
            (T0 + 2, compaction_started(CompactionTrigger::Auto, T0 + 2)),
            (T0 + 3, turn_start(T0 + 3)),
            (T0 + 4, Msg::TurnStartFailed),
            (T0 + 5, turn_end()),
        ],
    );
    assert_eq!(s.context, reading);
}
