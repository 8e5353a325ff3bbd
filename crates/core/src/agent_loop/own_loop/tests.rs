//! The own loop's decisions, checked as whole effect vectors: each test drives the core with
//! the inputs a session would give it (times included, so a person's pace is a number) and
//! compares what it asks the shell to do. The request a call sends is compared with the body
//! the API's serde renderer makes for the same messages, an independent reference.

use std::borrow::Cow;
use std::path::PathBuf;

use panewise_providers::api::ModelRequest;
use panewise_window::{Role, StageMemory, StrategyConfig};
use serde_json::json;

use super::*;
use crate::agent_loop::request::api_messages;
use crate::approval::ApprovalMode;
const STARTED: u64 = 1_000;
/// A person's pace: an approval answered a minute after it was asked.
const A_MINUTE: u64 = 60_000;

fn config(approval: ApprovalMode, strategy: &str) -> LoopConfig {
    let mut config = LoopConfig::new(
        "mock",
        "claude-sonnet-4-5",
        PathBuf::from("/work/project"),
        StrategyConfig::from_json(strategy).unwrap(),
        PathBuf::from("/logs/session.jsonl"),
    );
    config.approval = approval;
    config
}

const TOKEN_BUDGET: &str = r#"{"strategy":"token-budget","thresholdTokens":150000}"#;

fn own_loop(approval: ApprovalMode) -> OwnLoop {
    OwnLoop::new(
        config(approval, TOKEN_BUDGET),
        ApiKind::Anthropic,
        "token-budget",
    )
}

fn at(message: Message, at_ms: u64) -> Message {
    Message {
        born_at_ms: Some(at_ms),
        ..message
    }
}

fn ledger(message: &Message) -> Effect {
    Effect::Ledger(LedgerLine::Message {
        message: openai::to_value(message),
    })
}

fn result(id: &str, name: &str, content: &str, at_ms: u64) -> Message {
    let mut message = Message::tool_result(id, content);
    message.tool_name = Some(name.to_owned());
    message.born_at_ms = Some(at_ms);
    message
}

fn assistant_calling(text: &str, calls: &[(&str, &str, &str)], at_ms: u64) -> Message {
    let mut message = at(Message::assistant(text), at_ms);
    message.tool_calls = calls
        .iter()
        .map(|(id, name, args)| panewise_window::ToolCall {
            id: (*id).to_owned(),
            name: (*name).to_owned(),
            args: (*args).to_owned(),
        })
        .collect();
    message
}

/// The request serde renders for `messages`, the reference the fragments must match.
fn request_for(core: &OwnLoop, messages: &[Message], errored: &[&str]) -> Effect {
    let errored: BTreeSet<String> = errored.iter().map(|id| (*id).to_owned()).collect();
    let config = core.config();
    let api = api_messages(messages, &errored).unwrap();
    let count = api.len();
    let body = ApiKind::Anthropic
        .body(&ModelRequest {
            model: Cow::Borrowed(&config.model),
            system: config.system.as_deref().map(Cow::Borrowed),
            messages: Cow::Owned(api),
            tools: Cow::Owned(core.catalog.definitions(!core.archive.is_empty())),
            max_output_tokens: config.max_output_tokens,
            prompt_cache: config.prompt_cache,
            cache_key: config.cache_key.as_deref().map(Cow::Borrowed),
            context_management: config.strategy.provider_context().map(Cow::Borrowed),
        })
        .unwrap();
    let headers = panewise_providers::api::context::request_headers(
        ApiKind::Anthropic,
        config.strategy.provider_context(),
    );
    Effect::CallModel(RenderedRequest {
        model: config.model.clone(),
        body,
        messages: count,
        headers,
    })
}

fn idle_visit(core: &OwnLoop, iteration: u32, measured: Option<u64>) -> Effect {
    Effect::Ledger(LedgerLine::Idle {
        iteration,
        strategy: core.strategy_name.clone(),
        measured_tokens: measured,
        threshold_tokens: core.config().strategy.threshold_tokens(),
        floor_tokens: None,
    })
}

/// Effects as text, a request's body as its JSON, so a mismatch reads.
fn shown(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .map(|effect| match effect {
            Effect::CallModel(request) => format!(
                "CallModel({}, {} messages: {})",
                request.model,
                request.messages,
                String::from_utf8_lossy(&request.body)
            ),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Compares whole effect vectors.
macro_rules! assert_effects {
    ($actual:expr, $expected:expr $(,)?) => {{
        let actual: Vec<Effect> = $actual;
        let expected: Vec<Effect> = $expected;
        assert_eq!(shown(&actual), shown(&expected))
    }};
}

fn step(core: &mut OwnLoop, input: LoopInput) -> Vec<Effect> {
    core.step(input).unwrap()
}

fn settle(core: &mut OwnLoop, at_ms: u64) -> Vec<Effect> {
    step(
        core,
        LoopInput::Settle {
            turn_working: true,
            held: false,
            at_ms,
        },
    )
}

fn visited_idle(core: &mut OwnLoop, at_ms: u64) -> Vec<Effect> {
    step(
        core,
        LoopInput::Visited {
            plan: Box::new(Ok(None)),
            at_ms,
        },
    )
}

fn event(core: &mut OwnLoop, event: ProviderEvent, at_ms: u64) -> Vec<Effect> {
    step(core, LoopInput::ModelEvent { event, at_ms })
}

fn text(text: &str) -> ProviderEvent {
    ProviderEvent::TextDelta {
        text: text.to_owned(),
    }
}

fn tool_call(id: &str, name: &str, arguments: &str) -> ProviderEvent {
    ProviderEvent::ToolCallRequested {
        call_id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

fn call_ended(input: u64, cached: u64, output: u64) -> (ProviderEvent, SessionStats) {
    let stats = SessionStats {
        input_tokens: Some(input),
        cached_input_tokens: Some(cached),
        output_tokens: Some(output),
        ..SessionStats::default()
    };
    let event = ProviderEvent::CallEnded {
        stats: stats.clone(),
        model: Some("claude-sonnet-4-5".to_owned()),
        stop_reason: None,
    };
    (event, stats)
}

fn call_transcript(id: &str, name: &str, arguments: &str, at_ms: u64) -> Effect {
    Effect::Transcript {
        at_ms,
        entry: TranscriptEntry::ToolCall {
            call_id: id.to_owned(),
            name: name.to_owned(),
            input: Some(transcript::arguments_value(arguments)),
            arg: None,
        },
    }
}

/// A tool run that exited 0 with `content`.
fn exited(content: impl Into<String>) -> ToolOutcome {
    ToolOutcome {
        content: content.into(),
        is_error: false,
        exit_code: Some(0),
        timed_out: false,
        path: None,
    }
}

const ECHO: &str = r#"{"command":"echo hi"}"#;

fn echo() -> ToolCall {
    ToolCall::parse("shell", &json!({"command": "echo hi"})).unwrap()
}

fn turn_ended(stats: SessionStats, interrupted: bool) -> Effect {
    Effect::Emit(ProviderEvent::TurnEnded {
        stats,
        models: BTreeMap::new(),
        interrupted,
    })
}

fn one_call(stats: &SessionStats) -> SessionStats {
    accumulate(Some(SessionStats::default()), Some(stats)).unwrap()
}

/// Starts a turn and its first call; the messages sent so far.
fn start_turn(core: &mut OwnLoop, prompt: &str) -> Vec<Message> {
    let user = at(Message::user(prompt), STARTED);
    assert_effects!(
        step(
            core,
            LoopInput::Prompt {
                text: prompt.to_owned(),
                at_ms: STARTED,
            }
        ),
        vec![ledger(&user)]
    );
    assert_effects!(settle(core, STARTED + 1), vec![Effect::VisitWindow]);
    let sent = vec![user];
    assert_effects!(
        visited_idle(core, STARTED + 2),
        vec![idle_visit(core, 1, None), request_for(core, &sent, &[])]
    );
    sent
}

/// Rule: a turn whose model answers without tools is one visit, one call, and the turn's end
/// with the call's figures; then the loop is idle.
#[test]
fn an_answer_without_tools_ends_the_turn_with_the_calls_figures() {
    let mut core = own_loop(ApprovalMode::Ask);
    start_turn(&mut core, "hello");
    assert_effects!(
        event(&mut core, text("Hi "), 1_010),
        vec![Effect::Emit(text("Hi "))]
    );
    event(&mut core, text("there."), 1_011);
    let (ended, stats) = call_ended(10, 90, 5);
    // The request's tool list: the built-ins, counted as the window counts.
    let count = |text: &str| core.conversation().count_tokens(text);
    let tools = ToolCatalog::cost(&crate::tools::api_definitions(false), 0, &count);
    let line = call_entry(
        1,
        Some("claude-sonnet-4-5"),
        &stats,
        &PriceTable::built_in(),
    );
    let line = line.with_request(None, tools.entry());
    // The call is filed in the ledger with its tokens by kind, its cost split and its tools.
    assert_effects!(
        event(&mut core, ended.clone(), 1_012),
        vec![Effect::Ledger(line), Effect::Emit(ended)]
    );
    let LedgerLine::Call {
        cost: Some(cost), ..
    } = call_entry(
        1,
        Some("claude-sonnet-4-5"),
        &stats,
        &PriceTable::built_in(),
    )
    else {
        panic!("the model is in the built-in price table");
    };
    assert!(
        cost.cache_read_usd > 0.0 && cost.input_usd > 0.0,
        "{cost:?}"
    );
    assert_effects!(
        step(&mut core, LoopInput::ModelEnded { at_ms: 1_013 }),
        vec![ledger(&at(Message::assistant("Hi there."), 1_013))]
    );
    assert!(!core.is_idle());
    assert_effects!(
        settle(&mut core, 1_014),
        vec![turn_ended(one_call(&stats), false)]
    );
    assert!(core.is_idle());
    assert_effects!(settle(&mut core, 1_015), vec![]);
}

/// Rule: a call the policy asks about waits for the person however long they take; nothing
/// runs and nothing is sent meanwhile; their yes starts it, its result joins the
/// conversation, and the next call carries both the call and its result.
#[test]
fn an_approval_answered_after_a_minute_runs_the_tool_then_calls_again() {
    let mut core = own_loop(ApprovalMode::Ask);
    let mut sent = start_turn(&mut core, "say hi");
    assert_effects!(
        event(&mut core, tool_call("c1", "shell", ECHO), 1_010),
        vec![
            call_transcript("c1", "shell", ECHO, 1_010),
            Effect::Emit(tool_call("c1", "shell", ECHO)),
        ]
    );
    let (ended, _) = call_ended(100, 0, 20);
    event(&mut core, ended, 1_011);
    let asking = assistant_calling("", &[("c1", "shell", ECHO)], 1_012);
    assert_effects!(
        step(&mut core, LoopInput::ModelEnded { at_ms: 1_012 }),
        vec![ledger(&asking)]
    );
    sent.push(asking);
    // No box on an unprobed machine: said once, then asked as before.
    let unboxed = core
        .config()
        .sandbox
        .plan(ApprovalMode::Ask)
        .unboxed_because
        .expect("ask without a box says why");
    assert_effects!(
        settle(&mut core, 1_013),
        vec![
            Effect::Emit(ProviderEvent::Warning { message: unboxed }),
            Effect::Transcript {
                at_ms: 1_013,
                entry: TranscriptEntry::ApprovalRequested {
                    request_id: "c1".to_owned(),
                    tool: "shell".to_owned(),
                    summary: Some("echo hi".to_owned()),
                    input: None,
                },
            },
            Effect::Reduce(Msg::ApprovalRequested {
                id: "c1".to_owned(),
                tool: "shell".to_owned(),
                summary: "echo hi".to_owned(),
                turn: None,
            }),
        ]
    );
    assert_eq!(core.request("c1"), Some(ToolRequest::Own(&echo())));
    // The person takes a minute: nothing is due meanwhile, whatever settles.
    assert!(!core.is_due(true, false));
    assert_effects!(settle(&mut core, 1_013 + A_MINUTE / 2), vec![]);
    let answered = 1_013 + A_MINUTE;
    assert_effects!(
        step(
            &mut core,
            LoopInput::Approval {
                id: "c1".to_owned(),
                approved: true,
                reason: String::new(),
                at_ms: answered,
            }
        ),
        vec![
            Effect::RunTool {
                id: "c1".to_owned(),
                call: echo(),
            },
            Effect::Emit(ProviderEvent::ToolStarted {
                name: "shell".to_owned(),
                call_id: "c1".to_owned(),
                arg: Some("echo hi".to_owned()),
                input: None,
            }),
        ]
    );
    let outcome = exited("hi\n".to_owned());
    let output = result("c1", "shell", "hi\n", answered + 5);
    assert_effects!(
        step(
            &mut core,
            LoopInput::ToolDone {
                outcome,
                at_ms: answered + 5,
            }
        ),
        vec![
            Effect::Notice("ran shell `echo hi` (exit 0)".to_owned()),
            ledger(&output),
            Effect::Emit(ProviderEvent::ToolEnded {
                call_id: "c1".to_owned(),
                status: ToolStatus::Success,
                exit_code: Some(0),
                output: Some("hi\n".to_owned()),
            }),
        ]
    );
    sent.push(output);
    // No call is left: the next settle decides the next iteration, the one after starts it.
    assert_effects!(settle(&mut core, answered + 6), vec![]);
    assert_effects!(settle(&mut core, answered + 7), vec![Effect::VisitWindow]);
    assert_effects!(
        visited_idle(&mut core, answered + 8),
        vec![
            idle_visit(&core, 2, Some(100)),
            request_for(&core, &sent, &[])
        ]
    );
}

/// Rule: the first answer settles a request; an answer naming another call changes nothing.
#[test]
fn an_answer_for_another_call_changes_nothing() {
    let mut core = own_loop(ApprovalMode::Ask);
    start_turn(&mut core, "say hi");
    event(&mut core, tool_call("c1", "shell", ECHO), 1_010);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_011 });
    settle(&mut core, 1_012);
    let stray = LoopInput::Approval {
        id: "c9".to_owned(),
        approved: true,
        reason: String::new(),
        at_ms: 1_013,
    };
    assert_effects!(step(&mut core, stray), vec![]);
    assert_eq!(core.request("c1"), Some(ToolRequest::Own(&echo())));
}

/// Rule: a call the policy denies, or the person refuses, goes back to the model as the
/// call's error result with the reason, and the next request marks it an error.
#[test]
fn a_refused_call_goes_back_to_the_model_as_an_error_result() {
    let mut core = own_loop(ApprovalMode::Ask);
    let mut sent = start_turn(&mut core, "say hi");
    event(&mut core, tool_call("c1", "shell", ECHO), 1_010);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_011 });
    sent.push(assistant_calling("", &[("c1", "shell", ECHO)], 1_011));
    settle(&mut core, 1_012);
    let refused = result("c1", "shell", "not now", 1_013);
    assert_effects!(
        step(
            &mut core,
            LoopInput::Approval {
                id: "c1".to_owned(),
                approved: false,
                reason: "not now".to_owned(),
                at_ms: 1_013,
            }
        ),
        vec![
            Effect::Notice("did not run shell `echo hi`: not now".to_owned()),
            Effect::Transcript {
                at_ms: 1_013,
                entry: TranscriptEntry::ToolOutput {
                    call_id: "c1".to_owned(),
                    status: ToolCallStatus::Declined,
                    exit_code: None,
                    output: Some("not now".to_owned()),
                    cut_bytes: 0,
                },
            },
            ledger(&refused),
        ]
    );
    sent.push(refused);
    assert_effects!(settle(&mut core, 1_014), vec![]);
    assert_effects!(settle(&mut core, 1_015), vec![Effect::VisitWindow]);
    assert_effects!(
        visited_idle(&mut core, 1_016),
        vec![
            idle_visit(&core, 2, None),
            request_for(&core, &sent, &["c1"])
        ]
    );
    assert!(!core.tool_runs()[0].ran);
}

/// Rule: under `read-only` the policy denies without asking, and says so in the transcript.
#[test]
fn the_read_only_policy_denies_without_asking() {
    let mut core = own_loop(ApprovalMode::ReadOnly);
    start_turn(&mut core, "say hi");
    event(&mut core, tool_call("c1", "shell", ECHO), 1_010);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_011 });
    let effects = settle(&mut core, 1_012);
    // `shell` is decided by the sandbox's plan: read-only runs it only in a read-only box,
    // and this machine was not probed for one.
    let decision = match core.config().sandbox.plan(ApprovalMode::ReadOnly).approval {
        crate::sandbox::ShellApproval::Deny(reason) => Decision::Deny { reason },
        other => panic!("read-only without a box ran or asked for a shell command: {other:?}"),
    };
    let Decision::Deny { reason } = &decision else {
        panic!("read-only ran a shell command: {decision:?}");
    };
    assert_effects!(
        effects,
        vec![
            Effect::Transcript {
                at_ms: 1_012,
                entry: transcript::policy_entry(
                    "c1",
                    "shell",
                    "echo hi",
                    &decision,
                    ApprovalMode::ReadOnly
                ),
            },
            Effect::Notice(format!("did not run shell `echo hi`: {reason}")),
            Effect::Transcript {
                at_ms: 1_012,
                entry: TranscriptEntry::ToolOutput {
                    call_id: "c1".to_owned(),
                    status: ToolCallStatus::Declined,
                    exit_code: None,
                    output: Some(reason.clone()),
                    cut_bytes: 0,
                },
            },
            ledger(&result("c1", "shell", reason, 1_012)),
        ]
    );
}

/// Rule: a call whose arguments do not parse is refused without asking anyone.
#[test]
fn a_call_with_bad_arguments_is_refused_without_asking() {
    let mut core = own_loop(ApprovalMode::FullAccess);
    start_turn(&mut core, "say hi");
    event(&mut core, tool_call("c1", "shell", r#"{"cmd": 1}"#), 1_010);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_011 });
    let effects = settle(&mut core, 1_012);
    assert!(
        matches!(
            effects.as_slice(),
            [Effect::Notice(notice), Effect::Transcript { .. }, Effect::Ledger(_)]
                if notice.starts_with("did not run shell ``: ")
        ),
        "{effects:?}"
    );
}

/// Rule: an interrupt during a call cancels it, keeps what it said, and ends the turn as
/// interrupted with the figures it had; a late event of the cancelled call changes nothing.
#[test]
fn an_interrupt_during_a_call_cancels_it_and_keeps_its_text() {
    let mut core = own_loop(ApprovalMode::Ask);
    start_turn(&mut core, "count");
    event(&mut core, text("one, two"), 1_010);
    assert_effects!(
        step(&mut core, LoopInput::Interrupt { at_ms: 1_020 }),
        vec![
            Effect::CancelCall,
            ledger(&at(Message::assistant("one, two"), 1_020))
        ]
    );
    assert_effects!(event(&mut core, text(", three"), 1_021), vec![]);
    assert_effects!(
        step(
            &mut core,
            LoopInput::ModelFailed {
                error: ApiError::Cancelled {
                    api: ApiKind::Anthropic
                }
            }
        ),
        vec![]
    );
    assert_effects!(
        settle(&mut core, 1_022),
        vec![turn_ended(SessionStats::default(), true)]
    );
    // A second stop changes nothing.
    assert_effects!(
        step(&mut core, LoopInput::Interrupt { at_ms: 1_023 }),
        vec![]
    );
}

/// Rule: an interrupt while a tool runs stops it, and every call left without a result gets
/// one saying it was interrupted, so the next request pairs every call.
#[test]
fn an_interrupt_during_a_tool_answers_every_call_left() {
    let mut core = own_loop(ApprovalMode::FullAccess);
    start_turn(&mut core, "two things");
    event(&mut core, tool_call("c1", "shell", ECHO), 1_010);
    event(&mut core, tool_call("c2", "shell", ECHO), 1_011);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_012 });
    let started = settle(&mut core, 1_013);
    assert!(matches!(started[1], Effect::RunTool { .. }), "{started:?}");
    assert_effects!(
        step(&mut core, LoopInput::Interrupt { at_ms: 1_020 }),
        vec![
            Effect::CancelTool,
            ledger(&result("c1", "shell", INTERRUPTED_RESULT, 1_020)),
            ledger(&result("c2", "shell", INTERRUPTED_RESULT, 1_020)),
        ]
    );
    // The killed tool's end, if it still arrives, changes nothing.
    let late = ToolOutcome {
        content: String::new(),
        is_error: true,
        exit_code: None,
        timed_out: false,
        path: None,
    };
    assert_effects!(
        step(
            &mut core,
            LoopInput::ToolDone {
                outcome: late,
                at_ms: 1_021
            }
        ),
        vec![]
    );
    assert_effects!(
        settle(&mut core, 1_022),
        vec![turn_ended(SessionStats::default(), true)]
    );
}

/// Rule: when the reducer ended the turn (a deadline, a failure), what is still under way is
/// stopped at the next settle, as an interrupt would.
#[test]
fn the_reducer_ending_the_turn_stops_the_call_under_way() {
    let mut core = own_loop(ApprovalMode::Ask);
    start_turn(&mut core, "count");
    assert!(!core.is_due(true, false));
    assert!(core.is_due(false, false));
    assert_effects!(
        step(
            &mut core,
            LoopInput::Settle {
                turn_working: false,
                held: false,
                at_ms: 1_030
            }
        ),
        vec![Effect::CancelCall]
    );
}

/// Rule: a failed call's tool calls are dropped (they would have no results), its failure
/// reaches the reducer, which ended the turn, and the loop waits.
#[test]
fn a_failed_call_drops_its_tool_calls_and_waits() {
    let mut core = own_loop(ApprovalMode::FullAccess);
    start_turn(&mut core, "go");
    event(&mut core, text("Let me"), 1_010);
    event(&mut core, tool_call("c1", "shell", ECHO), 1_011);
    let error = ApiError::Request(RequestError::HistoryEdit("broken".to_owned()));
    let failure = failure_event(&error);
    assert_effects!(
        step(&mut core, LoopInput::ModelFailed { error }),
        vec![Effect::Emit(failure)]
    );
    assert_effects!(
        step(&mut core, LoopInput::ModelEnded { at_ms: 1_012 }),
        vec![ledger(&at(Message::assistant("Let me"), 1_012))]
    );
    assert!(core.is_idle());
    assert_effects!(settle(&mut core, 1_013), vec![]);
}

/// Rule: the turn stops at the iteration limit with a failure saying so.
#[test]
fn the_iteration_limit_ends_the_turn_with_a_failure_saying_so() {
    let mut config = config(ApprovalMode::FullAccess, TOKEN_BUDGET);
    config.max_iterations = 1;
    let mut core = OwnLoop::new(config, ApiKind::Anthropic, "token-budget");
    start_turn(&mut core, "go");
    event(&mut core, tool_call("c1", "shell", ECHO), 1_010);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_011 });
    settle(&mut core, 1_012);
    let outcome = exited("hi\n".to_owned());
    step(
        &mut core,
        LoopInput::ToolDone {
            outcome,
            at_ms: 1_013,
        },
    );
    let message = "stopped after 1 model calls, the iteration limit of this turn".to_owned();
    assert_effects!(
        settle(&mut core, 1_014),
        vec![
            Effect::Notice(message.clone()),
            Effect::Emit(ProviderEvent::Failure {
                failure: Failure {
                    kind: FailureKind::Unknown,
                    retryable: false,
                    message,
                    http_status: None,
                },
            }),
        ]
    );
    assert_eq!(core.limit_reached(), 1);
}

/// Rule: a call id the session already used (APIs that number calls per answer) is renamed
/// with a suffix, in the transcript and the conversation alike.
#[test]
fn a_reused_call_id_is_renamed() {
    let mut core = own_loop(ApprovalMode::FullAccess);
    start_turn(&mut core, "go");
    event(&mut core, tool_call("call_0", "shell", ECHO), 1_010);
    assert_effects!(
        event(&mut core, tool_call("call_0", "shell", ECHO), 1_011),
        vec![
            call_transcript("call_0_2", "shell", ECHO, 1_011),
            Effect::Emit(tool_call("call_0", "shell", ECHO)),
        ]
    );
    assert_effects!(
        step(&mut core, LoopInput::ModelEnded { at_ms: 1_012 }),
        vec![ledger(&assistant_calling(
            "",
            &[("call_0", "shell", ECHO), ("call_0_2", "shell", ECHO)],
            1_012
        ))]
    );
}

/// Rule: an engaged visit is filed and shown as a compaction (started when the visit
/// started, its boundary when it ended), and the request sends the edited conversation.
#[test]
fn an_engaged_visit_is_filed_and_shown_as_a_compaction() {
    let strategy = r#"{"strategy":"observation-masking","keepRecentObservations":1}"#;
    let mut core = OwnLoop::new(
        config(ApprovalMode::FullAccess, strategy),
        ApiKind::Anthropic,
        "observation-masking",
    );
    let stage = StrategyConfig::from_json(strategy)
        .unwrap()
        .build_stage::<Message>()
        .unwrap();
    let mut memory = StageMemory::new();
    let long = "x".repeat(4_000);
    // Two rounds of a tool with a long output.
    start_turn(&mut core, "go");
    for (round, id) in ["c1", "c2"].into_iter().enumerate() {
        let base = 2_000 + 100 * round as u64;
        event(&mut core, tool_call(id, "shell", ECHO), base);
        let (ended, _) = call_ended(2_000, 0, 10);
        event(&mut core, ended, base + 1);
        step(&mut core, LoopInput::ModelEnded { at_ms: base + 2 });
        settle(&mut core, base + 3);
        let outcome = exited(long.clone());
        step(
            &mut core,
            LoopInput::ToolDone {
                outcome,
                at_ms: base + 4,
            },
        );
        settle(&mut core, base + 5);
        assert_effects!(settle(&mut core, base + 6), vec![Effect::VisitWindow]);
        if round == 0 {
            visited_idle(&mut core, base + 7);
        }
    }
    let plan = stage
        .visit(core.conversation(), core.visit_context(), &mut memory)
        .unwrap()
        .resolve(|_| unreachable!("masking asks for no summary"))
        .expect("the masking engaged");
    let before = core.conversation().tokens_in(0..core.conversation().len());
    let record = plan.record.clone();
    let archived = plan.archived_spans(core.conversation());
    assert_eq!(archived.len(), 1, "the first round's result");
    assert_eq!(archived[0].content, long);
    let effects = step(
        &mut core,
        LoopInput::Visited {
            plan: Box::new(Ok(Some(plan))),
            at_ms: 2_150,
        },
    );
    let after = core.conversation().tokens_in(0..core.conversation().len());
    assert!(after < before, "{before} -> {after}");
    let sent: Vec<Message> = core.conversation().messages().to_vec();
    assert_effects!(
        effects,
        vec![
            Effect::Ledger(LedgerLine::Visit {
                record: Box::new(record.clone())
            }),
            Effect::Archive(archived.clone()),
            Effect::Ledger(LedgerLine::Archived {
                iteration: 3,
                reloaded: false,
                spans: vec![crate::agent_loop::ledger::ArchivedEntry::of(&archived[0])],
            }),
            Effect::Reduce(Msg::CompactionStarted {
                trigger: CompactionTrigger::Auto,
                at: 2_106,
            }),
            Effect::Reduce(Msg::CompactionBoundary {
                trigger: CompactionTrigger::Auto,
                pre_tokens: before,
                post_tokens: after,
                duration_ms: Some(44),
                at: 2_150,
                frame_timestamp: None,
            }),
            request_for(&core, &sent, &[]),
        ]
    );
    assert_eq!(core.records(), &[record]);
    assert!(sent
        .iter()
        .any(|message| message.role == Role::Tool && !message.content.contains(&long)));
}

/// Rule: each edit the provider reports is filed in the ledger as the provider's, with the
/// local estimate counted over the history the call was sent; a compaction's own model call is
/// emitted as a call of its own, and the compaction joins the conversation before the answer
/// and goes back in the next request in its place.
#[test]
fn a_providers_compaction_is_filed_billed_and_sent_back() {
    let strategy = r#"{"strategy":"anthropic-compact","triggerTokens":50000}"#;
    let mut core = OwnLoop::new(
        config(ApprovalMode::FullAccess, strategy),
        ApiKind::Anthropic,
        "anthropic-compact",
    );
    let mut sent = start_turn(&mut core, "go");
    let compacted = AppliedContextEdit::Compacted {
        api: "anthropic".to_owned(),
        content: "Summary: the person asked to go.".to_owned(),
        item_id: None,
        input_tokens: Some(60_000),
        output_tokens: Some(400),
    };
    let context = core.config().strategy.provider_context().unwrap().clone();
    let record = reconcile(core.conversation(), &context, 1, &compacted);
    assert_eq!(
        record.source,
        panewise_window::provider::EditSource::Provider
    );
    let reported = ProviderEvent::ContextManaged {
        edits: vec![compacted],
    };
    assert_effects!(
        event(&mut core, reported.clone(), 1_010),
        vec![
            Effect::Ledger(LedgerLine::ProviderEdit {
                record: Box::new(record)
            }),
            Effect::Emit(ProviderEvent::CallEnded {
                stats: SessionStats {
                    input_tokens: Some(60_000),
                    output_tokens: Some(400),
                    ..SessionStats::default()
                },
                model: Some("claude-sonnet-4-5".to_owned()),
                stop_reason: Some("compaction".to_owned()),
            }),
            Effect::Emit(reported),
        ]
    );
    event(&mut core, text("Going."), 1_011);
    event(&mut core, tool_call("c1", "shell", ECHO), 1_012);
    let mut compaction = at(
        Message::assistant("Summary: the person asked to go."),
        1_013,
    );
    compaction.injected_by = Some(PROVIDER_COMPACTION.to_owned());
    let answer = assistant_calling("Going.", &[("c1", "shell", ECHO)], 1_013);
    assert_effects!(
        step(&mut core, LoopInput::ModelEnded { at_ms: 1_013 }),
        vec![ledger(&compaction), ledger(&answer)]
    );
    sent.extend([compaction, answer]);
    settle(&mut core, 1_014);
    let outcome = exited("hi\n".to_owned());
    step(
        &mut core,
        LoopInput::ToolDone {
            outcome,
            at_ms: 1_015,
        },
    );
    sent.push(result("c1", "shell", "hi\n", 1_015));
    settle(&mut core, 1_016);
    settle(&mut core, 1_017);
    let effects = visited_idle(&mut core, 1_018);
    assert_effects!(
        effects.clone(),
        vec![idle_visit(&core, 2, None), request_for(&core, &sent, &[])]
    );
    let Effect::CallModel(request) = &effects[1] else {
        panic!("{effects:?}");
    };
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"][0]["type"], "compaction", "{body}");
    assert_eq!(
        body["context_management"]["edits"][0]["type"],
        "compact_20260112"
    );
    assert!(request
        .headers
        .iter()
        .any(|(name, value)| name == "anthropic-beta" && value.contains("compact-2026-01-12")));
}

fn settle_held(core: &mut OwnLoop, held: bool, at_ms: u64) -> Vec<Effect> {
    step(
        core,
        LoopInput::Settle {
            turn_working: true,
            held,
            at_ms,
        },
    )
}

/// Rule R112, R113: held at the budget, the loop starts no model call, however often it
/// settles; the call is still due and starts at the release. A turn whose last call answered
/// without tools still ends while held: the hold stops spending, not the turn's end.
#[test]
fn a_session_held_at_its_budget_starts_no_call_until_released() {
    let mut core = own_loop(ApprovalMode::Ask);
    let user = at(Message::user("count"), STARTED);
    assert_effects!(
        step(
            &mut core,
            LoopInput::Prompt {
                text: "count".to_owned(),
                at_ms: STARTED,
            }
        ),
        vec![ledger(&user)]
    );
    assert!(!core.is_due(true, true), "held: the call is not due");
    assert_effects!(settle_held(&mut core, true, STARTED + 1), vec![]);
    assert_effects!(settle_held(&mut core, true, STARTED + 2), vec![]);
    assert!(core.is_due(true, false), "released: the call is due again");
    assert_effects!(
        settle_held(&mut core, false, STARTED + 3),
        vec![Effect::VisitWindow]
    );
    visited_idle(&mut core, STARTED + 4);
    let (ended, stats) = call_ended(10, 0, 5);
    event(&mut core, ended, 1_012);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_013 });
    assert!(core.is_due(true, true), "the turn's end is due while held");
    assert_effects!(
        settle_held(&mut core, true, 1_014),
        vec![turn_ended(one_call(&stats), false)]
    );
    assert!(core.is_idle());
}

mod paths;
mod questions;
mod recall;
