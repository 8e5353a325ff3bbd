//! The mapping, on scripted sessions: what a model call, a tool, an approval wait, a
//! compaction and a failure become.

use panewise_pane_state::State;
use panewise_protocol::{CompactionTrigger, CostSource, Failure, FailureKind};

use super::*;

fn info() -> SessionInfo {
    SessionInfo {
        id: "sess-1".to_owned(),
        agent: "panewise".to_owned(),
        provider: "anthropic".to_owned(),
        model: Some("claude-x".to_owned()),
    }
}

fn stats(input: u64, output: u64) -> SessionStats {
    SessionStats {
        input_tokens: Some(input),
        output_tokens: Some(output),
        cached_input_tokens: Some(7),
        cache_write_input_tokens: Some(3),
        reasoning_tokens: Some(2),
        cost_usd: Some(0.125),
        cost_source: Some(CostSource::Estimated),
        ..SessionStats::default()
    }
}

/// The own loop's shape: a call asking for a tool, an approval, the tool, a last call.
fn own_loop_session() -> Vec<(u64, Update)> {
    vec![
        (
            1_000,
            Update::Started {
                log: "/tmp/x.jsonl".into(),
                state: Box::new(State::new("")),
            },
        ),
        (
            1_010,
            Update::Recorded {
                at: 10,
                msg: Msg::TurnStart {
                    at: 10,
                    content: None,
                },
            },
        ),
        (
            1_100,
            Update::Agent(ProviderEvent::CallEnded {
                model: Some("claude-x-2026".to_owned()),
                stop_reason: Some("tool_use".to_owned()),
                stats: stats(100, 20),
            }),
        ),
        (
            1_110,
            Update::Ask {
                id: "req-1".to_owned(),
                tool: "shell".to_owned(),
                summary: "echo hello".to_owned(),
                offers_session: true,
            },
        ),
        (
            1_610,
            Update::Answered {
                id: "req-1".to_owned(),
                tool: "shell".to_owned(),
                approved: true,
                for_session: false,
                by: Actor::Person,
                reason: None,
            },
        ),
        (
            1_620,
            Update::Agent(ProviderEvent::ToolStarted {
                name: "shell".to_owned(),
                call_id: "call-1".to_owned(),
                arg: Some("echo hello".to_owned()),
                input: None,
            }),
        ),
        (
            1_700,
            Update::Agent(ProviderEvent::ToolEnded {
                call_id: "call-1".to_owned(),
                status: ToolStatus::Success,
                exit_code: Some(0),
                output: Some("hello".to_owned()),
            }),
        ),
        (
            1_900,
            Update::Agent(ProviderEvent::CallEnded {
                model: Some("claude-x-2026".to_owned()),
                stop_reason: Some("end_turn".to_owned()),
                stats: stats(150, 30),
            }),
        ),
        (
            1_950,
            Update::Recorded {
                at: 950,
                msg: Msg::CompactionBoundary {
                    trigger: CompactionTrigger::Auto,
                    pre_tokens: 9_000,
                    post_tokens: 800,
                    duration_ms: None,
                    at: 950,
                    frame_timestamp: None,
                },
            },
        ),
        (
            1_960,
            Update::Agent(ProviderEvent::TurnEnded {
                stats: SessionStats {
                    cost_usd: Some(0.25),
                    cost_source: Some(CostSource::Estimated),
                    ..SessionStats::default()
                },
                models: Default::default(),
                interrupted: false,
            }),
        ),
    ]
}

fn run(updates: &[(u64, Update)], end_ms: u64) -> Vec<Record> {
    let mut tracker = Tracker::new(info());
    let mut out = Vec::new();
    for (at, update) in updates {
        tracker.observe(*at, update, &mut out);
    }
    tracker.finish(end_ms, &mut out);
    out
}

fn spans(records: &[Record]) -> Vec<&SpanRecord> {
    records
        .iter()
        .filter_map(|record| match record {
            Record::Span(span) => Some(span),
            _ => None,
        })
        .collect()
}

fn attr<'a>(span: &'a SpanRecord, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, value)| value)
}

#[test]
fn a_model_call_becomes_a_chat_span_with_its_usage() {
    let records = run(&own_loop_session(), 2_000);
    let chats: Vec<_> = spans(&records)
        .into_iter()
        .filter(|span| span.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 2);
    let first = chats[0];
    assert_eq!(first.name, "chat claude-x");
    assert_eq!(first.kind, Kind::Client);
    assert_eq!((first.start_ms, first.end_ms), (1_010, 1_100));
    assert_eq!(attr(first, n::INPUT_TOKENS), Some(&Value::Int(110)));
    assert_eq!(attr(first, n::OUTPUT_TOKENS), Some(&Value::Int(20)));
    assert_eq!(attr(first, n::CACHE_READ_TOKENS), Some(&Value::Int(7)));
    assert_eq!(attr(first, n::CACHE_CREATION_TOKENS), Some(&Value::Int(3)));
    assert_eq!(attr(first, n::REASONING_TOKENS), Some(&Value::Int(2)));
    // The call's own cost, as the transport priced it.
    assert_eq!(attr(first, n::COST_USD), Some(&Value::Float(0.125)));
    assert_eq!(
        attr(first, n::COST_SOURCE),
        Some(&Value::Str("estimated".to_owned()))
    );
    assert_eq!(
        attr(first, n::RESPONSE_MODEL),
        Some(&Value::Str("claude-x-2026".to_owned()))
    );
    assert_eq!(
        attr(first, n::FINISH_REASONS),
        Some(&Value::StrList(vec!["tool_use".to_owned()]))
    );
    assert_eq!(
        attr(first, n::PROVIDER_NAME),
        Some(&Value::Str("anthropic".to_owned()))
    );
    // The second call starts when the tool's result came back.
    assert_eq!((chats[1].start_ms, chats[1].end_ms), (1_700, 1_900));
}

#[test]
fn a_tool_and_its_approval_wait_become_spans() {
    let records = run(&own_loop_session(), 2_000);
    let all = spans(&records);
    let tool = all
        .iter()
        .find(|span| span.name == "execute_tool shell")
        .expect("a tool span");
    assert_eq!((tool.start_ms, tool.end_ms), (1_620, 1_700));
    assert_eq!(
        attr(tool, n::TOOL_CALL_ID),
        Some(&Value::Str("call-1".to_owned()))
    );
    assert_eq!(tool.error, None);
    let wait = all
        .iter()
        .find(|span| span.name == n::SPAN_APPROVAL_WAIT)
        .expect("a wait span");
    assert_eq!((wait.start_ms, wait.end_ms), (1_110, 1_610));
    assert_eq!(
        attr(wait, n::APPROVAL_DECISION),
        Some(&Value::Str("approved".to_owned()))
    );
    assert_eq!(
        attr(wait, n::APPROVAL_BY),
        Some(&Value::Str("person".to_owned()))
    );
    let waited = records.iter().any(|record| {
        matches!(record, Record::Metric(m) if m.name == n::METRIC_APPROVAL_WAIT && m.value == 0.5)
    });
    assert!(waited, "{records:#?}");
}

#[test]
fn the_session_span_opens_first_and_closes_last_with_its_totals() {
    let records = run(&own_loop_session(), 2_000);
    match records.first() {
        Some(Record::SessionOpened {
            start_ms,
            attributes,
        }) => {
            assert_eq!(*start_ms, 1_000);
            assert!(attributes.contains(&(n::CONVERSATION_ID, Value::Str("sess-1".to_owned()))));
            assert!(attributes.contains(&(n::AGENT_NAME, Value::Str("panewise".to_owned()))));
        }
        other => panic!("the session opens first, got {other:?}"),
    }
    let closed = records
        .iter()
        .find_map(|record| match record {
            Record::SessionClosed {
                end_ms,
                attributes,
                error,
            } => Some((end_ms, attributes, error)),
            _ => None,
        })
        .expect("the session closes");
    assert_eq!(*closed.0, 2_000);
    assert!(closed.1.contains(&(n::TURNS, Value::Int(1))));
    assert!(closed.1.contains(&(n::COST_USD, Value::Float(0.25))));
    assert!(closed
        .1
        .contains(&(n::COST_SOURCE, Value::Str("estimated".to_owned()))));
    assert_eq!(closed.2, &None);
}

#[test]
fn compaction_and_failures_are_events_on_the_session() {
    let mut updates = own_loop_session();
    updates.push((
        1_970,
        Update::Agent(ProviderEvent::Failure {
            failure: Failure {
                kind: FailureKind::RateLimited,
                retryable: true,
                message: "slow down".to_owned(),
                http_status: Some(429),
            },
        }),
    ));
    let records = run(&updates, 2_000);
    let events: Vec<_> = records
        .iter()
        .filter_map(|record| match record {
            Record::SessionEvent(event) => Some(event),
            _ => None,
        })
        .collect();
    assert_eq!(events[0].name, n::EVENT_COMPACTED);
    assert!(events[0]
        .attributes
        .contains(&(n::COMPACTION_PRE_TOKENS, Value::Int(9_000))));
    assert_eq!(events[1].name, n::EVENT_FAILURE);
    assert!(events[1]
        .attributes
        .contains(&(n::ERROR_TYPE, Value::Str("rate_limited".to_owned()))));
    // The message (content) is not exported.
    assert!(!format!("{records:?}").contains("slow down"));
}

#[test]
fn a_cli_call_spans_from_its_request_to_its_tool() {
    let updates = vec![
        (10, Update::Agent(ProviderEvent::RequestStarted)),
        (
            20,
            Update::Agent(ProviderEvent::Usage {
                scope: UsageScope::Call,
                model: Some("claude-y".to_owned()),
                input_tokens: 40,
                cached_input_tokens: 60,
                cache_write_input_tokens: Some(25),
                cache_write_1h_input_tokens: None,
                output_tokens: None,
                reasoning_tokens: None,
            }),
        ),
        (
            30,
            Update::Agent(ProviderEvent::OutputTokens { output_tokens: 9 }),
        ),
        (
            40,
            Update::Agent(ProviderEvent::ToolStarted {
                name: "Bash".to_owned(),
                call_id: "t1".to_owned(),
                arg: None,
                input: None,
            }),
        ),
    ];
    let mut tracker = Tracker::new(SessionInfo {
        model: None,
        provider: "claude-code".to_owned(),
        agent: "claude-code".to_owned(),
        ..info()
    });
    let mut out = Vec::new();
    for (at, update) in &updates {
        tracker.observe(*at, update, &mut out);
    }
    tracker.finish(50, &mut out);
    let all = spans(&out);
    let chat = all[0];
    assert_eq!(chat.name, "chat claude-y");
    assert_eq!((chat.start_ms, chat.end_ms), (10, 40));
    assert_eq!(attr(chat, n::INPUT_TOKENS), Some(&Value::Int(100)));
    assert_eq!(attr(chat, n::CACHE_READ_TOKENS), Some(&Value::Int(60)));
    // Claude Code's `cache_creation_input_tokens`, part of the 40 not read from the cache.
    assert_eq!(attr(chat, n::CACHE_CREATION_TOKENS), Some(&Value::Int(25)));
    assert_eq!(attr(chat, n::OUTPUT_TOKENS), Some(&Value::Int(9)));
    // A CLI's call reports no cost of its own.
    assert_eq!(attr(chat, n::COST_USD), None);
    // The unfinished tool is closed with the session.
    assert_eq!(all[1].name, "execute_tool Bash");
    assert_eq!(all[1].end_ms, 50);
}

#[test]
fn an_answer_nobody_waited_for_is_counted_without_a_wait() {
    let updates = vec![(
        5,
        Update::Answered {
            id: "r".to_owned(),
            tool: "read_file".to_owned(),
            approved: true,
            for_session: false,
            by: Actor::Policy {
                mode: "auto".to_owned(),
            },
            reason: None,
        },
    )];
    let records = run(&updates, 6);
    assert!(spans(&records).is_empty());
    assert!(records.iter().any(|record| matches!(
        record,
        Record::Metric(m) if m.name == n::METRIC_APPROVALS
            && m.attributes.contains(&(n::APPROVAL_BY, Value::Str("policy".to_owned())))
    )));
}

#[test]
fn every_emitted_name_is_a_listed_one() {
    let mut updates = own_loop_session();
    updates.push((
        1_970,
        Update::Agent(ProviderEvent::Failure {
            failure: Failure {
                kind: FailureKind::Auth,
                retryable: false,
                message: String::new(),
                http_status: None,
            },
        }),
    ));
    for record in run(&updates, 2_000) {
        crate::contract::check(&record).unwrap_or_else(|name| panic!("unlisted name {name}"));
    }
}

/// The own loop's session with a prompt, an answer's text and a tool that prints a key.
fn session_with_content() -> Vec<(u64, Update)> {
    let mut updates = own_loop_session();
    updates[1].1 = Update::Recorded {
        at: 10,
        msg: Msg::TurnStart {
            at: 10,
            content: Some("list the files".to_owned()),
        },
    };
    updates.insert(
        2,
        (
            1_050,
            Update::Agent(ProviderEvent::TextDelta {
                text: "I will run ls".to_owned(),
            }),
        ),
    );
    for (_, update) in &mut updates {
        if let Update::Agent(ProviderEvent::ToolEnded { output, .. }) = update {
            *output = Some("a.txt KEY=sk-live-0123456789".to_owned());
        }
    }
    updates
}

fn run_with(content: Content, updates: &[(u64, Update)]) -> Vec<Record> {
    let mut tracker = Tracker::new(info()).with_content(content);
    let mut out = Vec::new();
    for (at, update) in updates {
        tracker.observe(*at, update, &mut out);
    }
    tracker.finish(2_000, &mut out);
    out
}

#[test]
fn content_is_exported_only_when_opted_into_and_never_a_secret() {
    let off = run_with(Content::Off, &session_with_content());
    for span in spans(&off) {
        for key in [
            n::INPUT_MESSAGES,
            n::OUTPUT_MESSAGES,
            n::TOOL_CALL_ARGUMENTS,
            n::TOOL_CALL_RESULT,
        ] {
            assert_eq!(attr(span, key), None, "{key} on {}", span.name);
        }
    }
    let on = run_with(
        Content::On {
            secrets: vec!["sk-live-0123456789".to_owned()],
        },
        &session_with_content(),
    );
    let all = spans(&on);
    let chats: Vec<_> = all
        .iter()
        .filter(|span| span.name.starts_with("chat "))
        .collect();
    let text = |span: &SpanRecord, key: &str| match attr(span, key) {
        Some(Value::Str(text)) => serde_json::from_str::<serde_json::Value>(text)
            .unwrap_or_else(|error| panic!("{key} is not JSON: {error}: {text}")),
        other => panic!("{key} on {}: {other:?}", span.name),
    };
    assert_eq!(
        text(chats[0], n::INPUT_MESSAGES),
        serde_json::json!([{"role": "user", "parts": [{"type": "text", "content": "list the files"}]}])
    );
    assert_eq!(
        text(chats[0], n::OUTPUT_MESSAGES),
        serde_json::json!([{
            "role": "assistant",
            "parts": [{"type": "text", "content": "I will run ls"}],
            "finish_reason": "tool_use",
        }])
    );
    // The second call was sent the tool's result, the key in it redacted.
    assert_eq!(
        text(chats[1], n::INPUT_MESSAGES),
        serde_json::json!([{
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call-1", "response": "a.txt KEY=[redacted]"}],
        }])
    );
    let tool = all
        .iter()
        .find(|span| span.name == "execute_tool shell")
        .expect("a tool span");
    assert_eq!(
        attr(tool, n::TOOL_CALL_ARGUMENTS),
        Some(&Value::Str("echo hello".to_owned()))
    );
    assert_eq!(
        attr(tool, n::TOOL_CALL_RESULT),
        Some(&Value::Str("a.txt KEY=[redacted]".to_owned()))
    );
    let shown = format!("{on:?}");
    assert!(!shown.contains("sk-live"), "{shown}");
    for record in &on {
        crate::contract::check(record).unwrap_or_else(|name| panic!("unlisted name {name}"));
    }
    assert_eq!(
        format!(
            "{:?}",
            Content::On {
                secrets: vec!["sk-live-0123456789".to_owned()]
            }
        ),
        "On(1 secrets)"
    );
}

#[test]
fn start_opens_the_session_span_once_before_any_update() {
    let mut tracker = Tracker::new(info());
    let mut out = Vec::new();
    tracker.start(500, &mut out);
    assert!(matches!(
        out.first(),
        Some(Record::SessionOpened { start_ms: 500, .. })
    ));
    let opened = out.len();
    for (at, update) in own_loop_session() {
        tracker.observe(at, &update, &mut out);
    }
    let opens = out
        .iter()
        .filter(|record| matches!(record, Record::SessionOpened { .. }))
        .count();
    assert_eq!(opens, 1);
    assert!(out.len() > opened);
}
