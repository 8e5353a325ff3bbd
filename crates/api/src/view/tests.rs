//! The client model: its fold, the open request, the accepted answers and the row's words,
//! each table naming the rule its rows check.

use panewise_pane_state::log::{
    encode_entry, encode_header, encode_transcript, LogEntry, LogHeader, TranscriptEntry,
};
use panewise_pane_state::Msg;
use panewise_protocol::{CostSource, FailureKind, SessionStats};

use super::*;
use crate::summary::{AgentState, SessionSummary, WaitingFor};

const T0: u64 = 1_796_216_400_000;

fn message(ts: u64, msg: Msg) -> String {
    encode_entry(&LogEntry { ts, msg }).unwrap_or_default()
}

/// A session's log: its header, a prompt, an approval asked, then answered.
fn asked_then_answered() -> Vec<String> {
    let header = LogHeader {
        agent_id: "mock".to_owned(),
        started_at_ms: T0,
        ..LogHeader::default()
    };
    vec![
        encode_header(&header).unwrap_or_default(),
        encode_transcript(
            T0,
            &TranscriptEntry::Prompt {
                text: "print hello".to_owned(),
            },
        )
        .unwrap_or_default(),
        message(
            T0 + 1,
            Msg::ApprovalRequested {
                id: "r1".to_owned(),
                tool: "shell".to_owned(),
                summary: "echo hello".to_owned(),
                turn: None,
            },
        ),
        message(
            T0 + 2,
            Msg::ApprovalAnswered {
                id: Some("r1".to_owned()),
                approved: true,
                for_session: false,
                by: None,
                reason: None,
            },
        ),
    ]
}

#[test]
fn the_fold_reads_the_open_request_until_it_is_answered() {
    let lines = asked_then_answered();
    let mut view = SessionView::new();
    let mut open = Vec::new();
    let mut titles = Vec::new();
    for (index, line) in (0u64..).zip(&lines) {
        view.fold_line(index, line);
        open.push(view.open_request().is_some());
        titles.push(view.title("demo"));
    }
    // Rule: the request is open from the line that asks it to the line that answers it.
    assert_eq!(open, [false, false, true, false]);
    // Rule: the title says "needs input" exactly while a request is open.
    assert_eq!(titles[2], "panewise: demo needs input");
    assert!(!titles[3].contains("needs input"), "{}", titles[3]);
    assert_eq!(view.transcript().len(), 1);
    assert_eq!(view.next_line(), 4);
    assert_eq!(
        open_request(&{
            let mut again = SessionView::new();
            for (index, line) in (0u64..).zip(&lines[..3]) {
                again.fold_line(index, line);
            }
            again.state().clone()
        }),
        Some(WaitingFor::Approval {
            id: "r1".to_owned(),
            tool: "shell".to_owned(),
            argument: "echo hello".to_owned(),
        })
    );
}

#[test]
fn a_line_out_of_order_is_skipped_and_a_bad_one_reported() {
    let lines = asked_then_answered();
    let mut view = SessionView::new();
    let cases: [(u64, &str, &str); 4] = [
        // (index, line, rule)
        (0, &lines[0], "the first line folds"),
        (
            0,
            &lines[0],
            "a line again (an earlier subscription's) is skipped",
        ),
        (5, &lines[1], "a line ahead of the next expected is skipped"),
        (
            1,
            "{not json",
            "an unreadable line is reported, and counts as read",
        ),
    ];
    let folded: Vec<Folded> = cases
        .iter()
        .map(|(index, line, _)| view.fold_line(*index, line))
        .collect();
    assert_eq!(folded[0], Folded::Header, "{}", cases[0].2);
    assert_eq!(folded[1], Folded::OutOfOrder, "{}", cases[1].2);
    assert_eq!(folded[2], Folded::OutOfOrder, "{}", cases[2].2);
    assert!(
        matches!(&folded[3], Folded::Unreadable(why) if why.starts_with("line 1:")),
        "{}: {:?}",
        cases[3].2,
        folded[3]
    );
    assert_eq!(view.next_line(), 2);
    assert!(view.unreadable().is_some());
}

#[test]
fn every_front_end_accepts_the_same_answers() {
    let table: [(&str, Option<Reply>, &str); 20] = [
        ("y", Some(Reply::AllowOnce), "the letter allows once"),
        ("yes", Some(Reply::AllowOnce), "the word allows once"),
        ("allow", Some(Reply::AllowOnce), "run's word allows once"),
        (
            "allow once",
            Some(Reply::AllowOnce),
            "the dashboard's hint allows once",
        ),
        ("Y", Some(Reply::AllowOnce), "any case"),
        ("  yes \n", Some(Reply::AllowOnce), "trimmed"),
        (
            "a",
            Some(Reply::AllowForSession),
            "the letter allows for the session",
        ),
        (
            "always",
            Some(Reply::AllowForSession),
            "the word allows for the session",
        ),
        (
            "s",
            Some(Reply::AllowForSession),
            "run's letter for the session",
        ),
        (
            "session",
            Some(Reply::AllowForSession),
            "run's word for the session",
        ),
        (
            "allow  for session",
            Some(Reply::AllowForSession),
            "inner spaces count as one",
        ),
        (
            "allow for this session",
            Some(Reply::AllowForSession),
            "the dashboard's hint",
        ),
        ("n", Some(Reply::Deny), "the letter denies"),
        ("No", Some(Reply::Deny), "the word denies, any case"),
        ("deny", Some(Reply::Deny), "run's word denies"),
        ("", None, "an empty line answers nothing"),
        ("yes please", None, "a sentence is a prompt, not an answer"),
        ("yep", None, "only the listed words answer"),
        ("1", None, "a digit is a question's choice, not an approval"),
        ("nope", None, "a word that starts like an answer is not one"),
    ];
    for (text, expected, rule) in table {
        assert_eq!(parse_reply(text), expected, "{rule}: {text:?}");
    }
    // Rule: every listed answer parses to what the list says.
    for (word, reply) in REPLIES {
        assert_eq!(parse_reply(word), Some(reply), "{word}");
    }
    let keys: [(char, Option<Reply>, &str); 6] = [
        ('y', Some(Reply::AllowOnce), "y allows once, as the line y"),
        (
            'a',
            Some(Reply::AllowForSession),
            "a allows for the session",
        ),
        ('n', Some(Reply::Deny), "n denies"),
        (
            's',
            None,
            "s stops a session on the dashboard: not an answer there",
        ),
        ('Y', None, "a capital is not an answer key"),
        ('1', None, "a digit picks a question's choice"),
    ];
    for (key, expected, rule) in keys {
        assert_eq!(reply_key(key), expected, "{rule}");
    }
    assert_eq!(
        Reply::Deny.decision(Some("not now".to_owned())),
        Decision::Deny {
            message: Some("not now".to_owned())
        }
    );
}

#[test]
fn ages_tokens_and_costs_read_one_way() {
    let ages: [(u64, &str, &str); 6] = [
        (0, "0s", "now"),
        (59_999, "59s", "seconds below a minute"),
        (60_000, "1m", "whole minutes"),
        (3_600_000, "1h", "whole hours"),
        (86_400_000 * 3, "3d", "whole days"),
        (
            u64::MAX,
            "0s",
            "a start in the future reads 0s, never a wrap",
        ),
    ];
    for (ago, expected, rule) in ages {
        let since = if ago == u64::MAX {
            T0 + 5_000
        } else {
            T0 - ago
        };
        assert_eq!(age_text(T0, since), expected, "{rule}");
    }
    let counts: [(Option<u64>, &str, &str); 8] = [
        (None, "-", "unknown"),
        (Some(950), "950", "below a thousand as is"),
        (Some(3_798), "3.8k", "thousands with one decimal"),
        (Some(3_750), "3.8k", "rounded half up"),
        (Some(999_949), "999.9k", "the largest thousands"),
        (
            Some(999_950),
            "1.0M",
            "rounded into millions, never 1000.0k",
        ),
        (Some(1_234_567), "1.2M", "millions with one decimal"),
        (
            Some(u64::MAX),
            "18446744073709.6M",
            "the largest count, no overflow",
        ),
    ];
    for (count, expected, rule) in counts {
        assert_eq!(tokens_text(count), expected, "{rule}");
    }
    let costs: [(Option<f64>, Option<CostSource>, &str, &str); 4] = [
        (
            Some(0.0123),
            Some(CostSource::Reported),
            "$0.0123",
            "four decimals",
        ),
        (
            Some(0.0123),
            Some(CostSource::Estimated),
            "~$0.0123",
            "an estimate is marked ~",
        ),
        (
            Some(1.5),
            None,
            "$1.5000",
            "a source not given is not marked",
        ),
        (None, Some(CostSource::Unknown), "-", "unknown"),
    ];
    for (cost, source, expected, rule) in costs {
        assert_eq!(cost_text(cost, source), expected, "{rule}");
    }
}

#[test]
fn tokens_count_cached_input_everywhere() {
    let stats = |input, cached, written, output| SessionStats {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_input_tokens: written,
        output_tokens: output,
        ..SessionStats::default()
    };
    let table: [(SessionStats, Option<u64>, Option<u64>, &str); 4] = [
        (
            stats(None, None, None, None),
            None,
            None,
            "nothing reported is unknown, not 0",
        ),
        (
            stats(Some(100), None, None, Some(20)),
            Some(100),
            Some(120),
            "uncached only",
        ),
        (
            stats(Some(100), Some(3_000), Some(500), Some(20)),
            Some(3_600),
            Some(3_620),
            "cache reads and writes are input",
        ),
        (
            stats(None, None, None, Some(7)),
            None,
            Some(7),
            "output alone",
        ),
    ];
    for (totals, input, total, rule) in table {
        assert_eq!(input_tokens(&totals), input, "in: {rule}");
        assert_eq!(total_tokens(&totals), total, "TOKENS: {rule}");
    }
}

#[test]
fn a_row_says_what_the_session_does_or_waits_for() {
    let base = SessionSummary {
        v: 1,
        id: "0190-x".to_owned(),
        name: "x".to_owned(),
        provider: "mock".to_owned(),
        model: None,
        cwd: "/tmp".to_owned(),
        state: AgentState::Working,
        waiting_for: None,
        tool: None,
        tool_arg: None,
        context_pct: None,
        context_window_source: None,
        tokens: None,
        cost_usd: None,
        cost_source: None,
        budget: None,
        waiting_since_ms: None,
        failure_kind: None,
        window_stood_down: None,
        log: "/tmp/x.jsonl".to_owned(),
        approval: "ask".to_owned(),
        started_at_ms: T0,
        turns: 0,
        attached: 0,
        worktree: None,
        failure: None,
    };
    let table: [(SessionSummary, &str, &str); 8] = [
        (
            SessionSummary {
                waiting_for: Some(WaitingFor::Approval {
                    id: "r".into(),
                    tool: "shell".into(),
                    argument: "echo hi".into(),
                }),
                tool: Some("shell".into()),
                ..base.clone()
            },
            "approve shell echo hi",
            "an approval first, over the running tool",
        ),
        (
            SessionSummary {
                waiting_for: Some(WaitingFor::Question {
                    id: "q".into(),
                    questions: vec!["which?".into(), "why?".into()],
                }),
                ..base.clone()
            },
            "answer: which? / why?",
            "every question, in order",
        ),
        (
            SessionSummary {
                tool: Some("shell".into()),
                tool_arg: Some("ls".into()),
                ..base.clone()
            },
            "shell ls",
            "the running tool and its argument",
        ),
        (
            SessionSummary {
                failure: Some("it panicked".into()),
                state: AgentState::Failed,
                ..base.clone()
            },
            "failed: it panicked",
            "the task's failure",
        ),
        (
            SessionSummary {
                failure_kind: Some(FailureKind::RateLimited),
                state: AgentState::Failed,
                ..base.clone()
            },
            "failed: rate limited",
            "a failed turn's kind",
        ),
        (
            SessionSummary {
                window_stood_down: Some(panewise_pane_state::WindowStandDown {
                    floor_tokens: 1_869,
                    threshold_tokens: 1,
                    since: 5,
                }),
                ..base.clone()
            },
            "window stood down: floor 1.9k > threshold 1",
            "R110: the window stage stood down, with nothing else to say",
        ),
        (
            SessionSummary {
                tool: Some("shell".into()),
                window_stood_down: Some(panewise_pane_state::WindowStandDown {
                    floor_tokens: 1_869,
                    threshold_tokens: 1,
                    since: 5,
                }),
                ..base.clone()
            },
            "shell",
            "R110: a running tool says more than the stand-down",
        ),
        (base.clone(), "", "nothing to say"),
    ];
    for (session, expected, rule) in table {
        assert_eq!(what_text(&session), expected, "{rule}");
    }
}
