//! The JSON-RPC channels: Codex app-server and ACP (Gemini CLI `--acp`). Each capture is decoded
//! and folded (the state a person sees), and the client side is replayed: fed the server's
//! lines, the session writes lines equal in meaning to what the capture's client wrote.

use panewise_pane_state::Msg;
use panewise_providers::acp::{AcpLine, AcpRequestKind, AcpSession, PermissionDecision};
use panewise_providers::codex_appserver::{
    AppServerLine, AppServerSession, ApprovalDecision, ClientInfo, RequestKind, ServerRequestKind,
    ThreadOptions,
};
use panewise_providers::{
    decode_all, fold_events, summarize, ChannelError, Decoder, FailureKind, Fold, Mapper,
    ModelTable, PaneSummary, Provider, ProviderEvent, ToolStatus, UsageScope,
};
use serde_json::{json, Value};

use crate::fixture;

const APP_SERVER: &str = "codex-app-server/appserver-accept.ndjson";
const APP_SERVER_INPUT: &str = "codex-app-server/appserver-accept.input.ndjson";
const ACP: &str = "acp/gemini-acp-allow.ndjson";
const ACP_INPUT: &str = "acp/gemini-acp-allow.input.ndjson";

fn lines(path: &str) -> Vec<Value> {
    String::from_utf8(fixture(path))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn events_of(provider: Provider, bytes: &[u8]) -> Vec<ProviderEvent> {
    let (decoded, counts) = decode_all(provider, bytes);
    assert_eq!(counts.decode_errors, 0, "{decoded:?}");
    decoded.into_iter().map(Result::unwrap).collect()
}

fn fold_of(provider: Provider, bytes: &[u8]) -> (Vec<ProviderEvent>, Fold, PaneSummary) {
    let (decoded, counts) = decode_all(provider, bytes);
    let events: Vec<ProviderEvent> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(provider, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    (events, fold, summary)
}

fn capture_client() -> ClientInfo {
    ClientInfo {
        name: "panewise-capture".into(),
        title: "Panewise capture".into(),
        version: "0.0.0".into(),
    }
}

/// Equal in meaning: the same JSON once the environment's working directory is left out.
fn assert_same_lines(ours: &[String], theirs: &[Value]) {
    let strip = |mut value: Value| {
        if let Some(params) = value.get_mut("params").and_then(Value::as_object_mut) {
            params.remove("cwd");
        }
        value
    };
    assert_eq!(ours.len(), theirs.len(), "{ours:#?}");
    for (ours, theirs) in ours.iter().zip(theirs) {
        let ours: Value = serde_json::from_str(ours).unwrap();
        assert_eq!(strip(ours), strip(theirs.clone()));
    }
}

/// The ids of the approvals asked for, and of those then shown answered, in stream order.
fn approvals(events: &[ProviderEvent]) -> (Vec<String>, Vec<String>) {
    let mut asked = Vec::new();
    let mut answered = Vec::new();
    for event in events {
        match event {
            ProviderEvent::ApprovalRequested { request_id, .. } => asked.push(request_id.clone()),
            ProviderEvent::ApprovalWithdrawn { request_id } => {
                assert!(asked.contains(request_id), "answered before asked");
                answered.push(request_id.clone());
            }
            _ => {}
        }
    }
    (asked, answered)
}

#[test]
fn the_app_server_capture_folds_to_a_completed_turn_with_its_shell_call_usage_and_window() {
    let (events, fold, summary) = fold_of(Provider::CodexAppServer, &fixture(APP_SERVER));
    assert_eq!(summary.unknown_events, 0);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 1);
    assert_eq!(crate::tool_calls(&summary), [("shell", 1)]);
    assert_eq!(summary.failure, None);
    assert_eq!(summary.model.as_deref(), Some("gpt-5.5"));
    let started = events.iter().find_map(|event| match event {
        ProviderEvent::ToolStarted { arg, .. } => arg.clone(),
        _ => None,
    });
    assert_eq!(started.as_deref(), Some("echo hello"));
    let ended = events.iter().find_map(|event| match event {
        ProviderEvent::ToolEnded {
            status,
            exit_code,
            output,
            ..
        } => Some((*status, *exit_code, output.clone())),
        _ => None,
    });
    assert_eq!(
        ended,
        Some((ToolStatus::Success, Some(0), Some("hello\n".into())))
    );

    // R86: the approval was queued, then the server said it was answered; none is left.
    assert_eq!(approvals(&events), (vec!["0".into()], vec!["0".into()]));
    assert!(fold.state.pending_approvals.is_empty());
    let kinds: Vec<&Msg> = fold
        .messages
        .iter()
        .map(|(_, msg)| msg)
        .filter(|msg| {
            matches!(
                msg,
                Msg::ApprovalRequested { .. } | Msg::ApprovalWithdrawn { .. }
            )
        })
        .collect();
    assert_eq!(kinds.len(), 2);

    // The capture's own figures: each update's `last`, and the final running `total`.
    let updates: Vec<Value> = lines(APP_SERVER)
        .into_iter()
        .filter(|line| line["method"] == "thread/tokenUsage/updated")
        .map(|line| line["params"]["tokenUsage"].clone())
        .collect();
    let calls: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::Usage {
                scope: UsageScope::Call,
                input_tokens,
                cached_input_tokens,
                ..
            } => Some((*input_tokens, *cached_input_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), updates.len());
    for ((input, cached), update) in calls.iter().zip(&updates) {
        assert_eq!(
            input + cached,
            update["last"]["inputTokens"].as_u64().unwrap()
        );
    }
    // Counted once: the turn's totals are the calls' sum, which is the server's running total.
    let total = &updates.last().unwrap()["total"];
    let total_cached = total["cachedInputTokens"].as_u64().unwrap();
    let uncached: u64 = calls.iter().map(|(input, _)| input).sum();
    assert_eq!(
        summary.input_tokens,
        Some(total["inputTokens"].as_u64().unwrap() - total_cached)
    );
    assert_eq!(summary.input_tokens, Some(uncached));
    assert_eq!(summary.cached_input_tokens, Some(total_cached));
    assert_eq!(summary.output_tokens, total["outputTokens"].as_u64());
    assert_eq!(
        summary.reasoning_tokens,
        total["reasoningOutputTokens"].as_u64()
    );
    // R51: the reported window beats the model table's, and the meter reads the last call.
    assert_eq!(
        summary.context_window,
        updates.last().unwrap()["modelContextWindow"].as_u64()
    );
    assert_eq!(
        summary.context_tokens,
        updates.last().unwrap()["last"]["inputTokens"].as_u64()
    );
}

#[test]
fn the_acp_capture_folds_to_a_completed_turn_with_the_quota_tokens() {
    let (events, fold, summary) = fold_of(Provider::Acp, &fixture(ACP));
    assert_eq!(summary.unknown_events, 0);
    assert_eq!(summary.turn_phase, "done");
    assert_eq!(summary.turns_completed, 1);
    assert_eq!(crate::tool_calls(&summary), [("shell", 1)]);
    assert_eq!(summary.failure, None);
    let started = events.iter().find_map(|event| match event {
        ProviderEvent::ToolStarted { arg, .. } => arg.clone(),
        _ => None,
    });
    assert_eq!(started.as_deref(), Some("echo hello"));
    assert!(events.iter().any(|event| matches!(
        event,
        ProviderEvent::ToolEnded {
            status: ToolStatus::Success,
            ..
        }
    )));
    assert_eq!(approvals(&events), (vec!["0".into()], vec!["0".into()]));
    assert!(fold.state.pending_approvals.is_empty());

    let answer = lines(ACP)
        .into_iter()
        .find(|line| line["result"].get("stopReason").is_some())
        .unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let quota = &answer["result"]["_meta"]["quota"];
    assert_eq!(
        summary.input_tokens,
        quota["token_count"]["input_tokens"].as_u64()
    );
    assert_eq!(
        summary.output_tokens,
        quota["token_count"]["output_tokens"].as_u64()
    );
    let models = events.iter().find_map(|event| match event {
        ProviderEvent::TurnEnded { models, .. } => Some(models.clone()),
        _ => None,
    });
    let models = models.unwrap();
    for usage in quota["model_usage"].as_array().unwrap() {
        let model = usage["model"].as_str().unwrap();
        assert_eq!(
            models[model].input_tokens,
            usage["token_count"]["input_tokens"].as_u64()
        );
    }
    // The router's name is not taken for the model in use.
    assert_eq!(summary.model.as_deref(), Some("gemini-3.8-flash"));
}

#[test]
fn the_app_server_session_writes_what_the_capture_client_wrote() {
    let theirs = lines(APP_SERVER_INPUT);
    let prompt = theirs[3]["params"]["input"][0]["text"].as_str().unwrap();
    let mut session = AppServerSession::default();
    let mut ours = vec![
        session.initialize(&capture_client()),
        session.initialized(),
        session.start_thread(&ThreadOptions {
            cwd: Some("/elsewhere".into()),
            model: None,
            approval_policy: Some("untrusted".into()),
            sandbox: Some("read-only".into()),
        }),
    ];
    let mut turn_ids = Vec::new();
    for line in String::from_utf8(fixture(APP_SERVER)).unwrap().lines() {
        match session.read(line.as_bytes()) {
            Some(AppServerLine::Response {
                request: Some(RequestKind::ThreadStart),
                error: None,
            }) => ours.push(session.start_turn(prompt).unwrap()),
            Some(AppServerLine::ServerRequest {
                request_id,
                kind: ServerRequestKind::Approval,
                ..
            }) => ours.push(
                session
                    .answer_approval(&request_id, ApprovalDecision::Accept)
                    .unwrap(),
            ),
            _ => {}
        }
        turn_ids.push(session.turn_id().map(str::to_owned));
    }
    assert_same_lines(&ours, &theirs);
    assert_eq!(
        session.thread_id(),
        theirs[3]["params"]["threadId"].as_str()
    );
    // The turn id is known from the `turn/start` answer until `turn/completed`.
    assert!(turn_ids
        .iter()
        .any(|id| id.as_deref() == Some("01a2303e-766e-70e1-a971-8294fb0a9d72")));
    assert_eq!(session.turn_id(), None);
    assert_eq!(session.waiting().count(), 0);
}

#[test]
fn app_server_decline_cancel_and_interrupt_have_the_protocols_shapes() {
    let mut session = AppServerSession::default();
    assert_eq!(session.interrupt(), Err(ChannelError::NoSession("thread")));
    assert_eq!(
        session.start_turn("x"),
        Err(ChannelError::NoSession("thread"))
    );
    let resume: Value = serde_json::from_str(&session.resume_thread(
        "t1",
        &ThreadOptions {
            model: Some("gpt-5.5".into()),
            ..ThreadOptions::default()
        },
    ))
    .unwrap();
    assert_eq!(
        resume,
        json!({"id": 1, "method": "thread/resume", "params": {"threadId": "t1", "model": "gpt-5.5"}})
    );
    session.read(br#"{"id":1,"result":{"thread":{"id":"t1"}}}"#);
    assert_eq!(session.interrupt(), Err(ChannelError::NoTurn));
    session.read(br#"{"method":"turn/started","params":{"threadId":"t1","turn":{"id":"u1"}}}"#);
    let interrupt: Value = serde_json::from_str(&session.interrupt().unwrap()).unwrap();
    assert_eq!(
        interrupt,
        json!({"id": 2, "method": "turn/interrupt", "params": {"threadId": "t1", "turnId": "u1"}})
    );
    for (id, decision, word) in [
        (5, ApprovalDecision::Decline, "decline"),
        (6, ApprovalDecision::Cancel, "cancel"),
        (7, ApprovalDecision::AcceptForSession, "acceptForSession"),
    ] {
        let request = format!(
            r#"{{"id":{id},"method":"item/commandExecution/requestApproval","params":{{}}}}"#
        );
        session.read(request.as_bytes());
        let answer: Value =
            serde_json::from_str(&session.answer_approval(&id.to_string(), decision).unwrap())
                .unwrap();
        assert_eq!(answer, json!({"id": id, "result": {"decision": word}}));
    }
    // Answered once: a second answer, or one to a request never read, is refused.
    assert!(matches!(
        session.answer_approval("5", ApprovalDecision::Accept),
        Err(ChannelError::UnknownRequest(_))
    ));
    session.read(br#"{"id":"q","method":"item/tool/requestUserInput","params":{}}"#);
    let answer: Value = serde_json::from_str(
        &session
            .answer_user_input(r#""q""#, json!({"a": {"answers": ["yes"]}}))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(answer["id"], "q");
    assert_eq!(answer["result"]["answers"]["a"]["answers"][0], "yes");
}

#[test]
fn app_server_turn_endings_errors_and_requests_decode_to_their_events() {
    let stream = concat!(
        r#"{"id":2,"result":{"thread":{"id":"t1","model":"gpt-5.5"}}}"#,
        "\n",
        r#"{"method":"turn/started","params":{"turn":{"id":"u1"}}}"#,
        "\n",
        r#"{"method":"item/started","params":{"item":{"type":"fileChange","id":"f1","changes":[{"path":"a.txt","kind":"add"}],"status":"inProgress"}}}"#,
        "\n",
        r#"{"method":"item/fileChange/requestApproval","id":3,"params":{"itemId":"f1","reason":null}}"#,
        "\n",
        r#"{"method":"item/completed","params":{"item":{"type":"fileChange","id":"f1","changes":[],"status":"declined"}}}"#,
        "\n",
        r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":10},"last":{"inputTokens":10},"modelContextWindow":1000}}}"#,
        "\n",
        r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":10},"last":{"inputTokens":10},"modelContextWindow":1000}}}"#,
        "\n",
        r#"{"method":"turn/completed","params":{"turn":{"id":"u1","status":"interrupted"}}}"#,
        "\n",
        r#"{"id":4,"error":{"code":-32001,"message":"Server overloaded; retry later."}}"#,
        "\n",
        r#"{"method":"turn/started","params":{"turn":{"id":"u2"}}}"#,
        "\n",
        r#"{"method":"turn/completed","params":{"turn":{"id":"u2","status":"failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}}}"#,
        "\n",
        r#"{"method":"brand/new","params":{}}"#,
        "\n",
        r#"{"method":"item/permissions/unknownAsk","id":9,"params":{}}"#,
        "\n",
    );
    let (decoded, counts) = decode_all(Provider::CodexAppServer, stream.as_bytes());
    assert_eq!(counts.decode_errors, 0);
    assert_eq!(counts.unknown_events, 2);
    let events: Vec<ProviderEvent> = decoded.into_iter().map(Result::unwrap).collect();
    let approval = events.iter().find_map(|event| match event {
        ProviderEvent::ApprovalRequested {
            request_id,
            tool,
            arg,
            ..
        } => Some((request_id.clone(), tool.clone(), arg.clone())),
        _ => None,
    });
    assert_eq!(
        approval,
        Some(("3".into(), "file_change".into(), Some("a.txt".into())))
    );
    assert!(events.contains(&ProviderEvent::ToolEnded {
        call_id: "f1".into(),
        status: ToolStatus::Declined,
        exit_code: None,
        output: None,
    }));
    // The repeated update is the same call: one usage, one window.
    let usages = events
        .iter()
        .filter(|event| matches!(event, ProviderEvent::Usage { .. }))
        .count();
    assert_eq!(usages, 1);
    let failures: Vec<(FailureKind, bool)> = events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::Failure { failure } => Some((failure.kind, failure.retryable)),
            _ => None,
        })
        .collect();
    // The interrupted turn is no failure (R95); -32001 is overloaded and retryable.
    assert_eq!(
        failures,
        vec![
            (FailureKind::Overloaded, true),
            (FailureKind::RateLimited, true)
        ]
    );
    let ends = events
        .iter()
        .filter(|event| matches!(event, ProviderEvent::TurnEnded { .. }))
        .count();
    assert_eq!(ends, 2);

    // Folded, the interrupted turn ends without a failure.
    let first_turn = stream.lines().take(8).collect::<Vec<_>>().join("\n");
    let (_, fold, summary) = fold_of(Provider::CodexAppServer, first_turn.as_bytes());
    assert_eq!(summary.failure, None);
    assert_eq!(summary.turn_phase, "done");
    assert!(fold.state.pending_approvals.is_empty());
    assert_eq!(summary.context_window, Some(1000));
}

#[test]
fn the_acp_session_writes_what_the_capture_client_wrote_and_exposes_what_the_agent_offers() {
    let theirs = lines(ACP_INPUT);
    let prompt = theirs[2]["params"]["prompt"][0]["text"].as_str().unwrap();
    let mut session = AcpSession::default();
    let mut ours = vec![session.initialize(&capture_client())];
    let mut stop = None;
    for line in String::from_utf8(fixture(ACP)).unwrap().lines() {
        match session.read(line.as_bytes()) {
            Some(AcpLine::Response {
                request: Some(AcpRequestKind::Initialize),
                ..
            }) => ours.push(session.new_session("/elsewhere")),
            Some(AcpLine::Response {
                request: Some(AcpRequestKind::NewSession),
                ..
            }) => ours.push(session.prompt(prompt).unwrap()),
            Some(AcpLine::Response {
                request: Some(AcpRequestKind::Prompt),
                stop_reason,
                ..
            }) => stop = stop_reason,
            Some(AcpLine::Request { request_id, method }) => {
                assert_eq!(method, "session/request_permission");
                ours.push(
                    session
                        .answer_permission(&request_id, PermissionDecision::Allow)
                        .unwrap(),
                );
            }
            _ => {}
        }
    }
    assert_same_lines(&ours, &theirs);
    assert_eq!(stop.as_deref(), Some("end_turn"));
    let caps = session.agent_capabilities().unwrap();
    assert!(caps.load_session);
    assert!(!caps.resume_session);
    assert_eq!(caps.agent_name.as_deref(), Some("gemini-cli"));
    assert_eq!(caps.auth_methods.len(), 4);
    let load: Value = serde_json::from_str(&session.load_session("s0", "/w").unwrap()).unwrap();
    assert_eq!(load["method"], "session/load");
    assert_eq!(load["params"]["sessionId"], "s0");
    assert_eq!(
        session.resume_session("s0", "/w"),
        Err(ChannelError::NotAdvertised("session/resume"))
    );
}

#[test]
fn acp_reject_and_cancel_answers_choose_options_by_kind() {
    let request = fixture(ACP)
        .split(|byte| *byte == b'\n')
        .find(|line| line.windows(18).any(|w| w == b"request_permission"))
        .unwrap()
        .to_vec();
    let ready = |session: &mut AcpSession| {
        session.read(br#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
        session.read(&request);
    };
    // Gemini's reject option is called `cancel`: found by its kind, `reject_once`.
    for (decision, option) in [
        (PermissionDecision::Deny, "cancel"),
        (PermissionDecision::Allow, "proceed_once"),
        (PermissionDecision::AllowAlways, "proceed_always"),
    ] {
        let mut session = AcpSession::default();
        ready(&mut session);
        let answer: Value =
            serde_json::from_str(&session.answer_permission("0", decision).unwrap()).unwrap();
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": option}}})
        );
    }
    // Cancelling the turn answers the waiting request `cancelled`.
    let mut session = AcpSession::default();
    ready(&mut session);
    let lines: Vec<Value> = session
        .cancel()
        .unwrap()
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines,
        vec![
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}),
            json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}}),
        ]
    );
    assert!(matches!(
        session.answer_permission("0", PermissionDecision::Allow),
        Err(ChannelError::UnknownRequest(_))
    ));
    // No allow_once on offer: allowing is refused rather than granting more than asked.
    let mut session = AcpSession::default();
    session.read(br#"{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"options":[{"optionId":"always","kind":"allow_always"}]}}"#);
    assert_eq!(
        session.answer_permission("7", PermissionDecision::Allow),
        Err(ChannelError::NoMatchingOption {
            request_id: "7".into(),
            kind: "allow_once"
        })
    );
}

#[test]
fn acp_stop_reasons_plans_and_unknown_updates_decode_to_their_events() {
    let update = |body: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{body}}}}}"#
        )
    };
    let stream = [
        update(r#"{"sessionUpdate":"available_commands_update","availableCommands":[]}"#),
        update(r#"{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"in_progress"},{"content":"b","priority":"low","status":"pending"}]}"#),
        update(r#"{"sessionUpdate":"tool_call","toolCallId":"c1","title":"rm x","kind":"delete","status":"pending"}"#),
        update(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}"#),
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}"#.to_owned(),
        update(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}"#),
        r#"{"jsonrpc":"2.0","id":4,"result":{"stopReason":"max_tokens"}}"#.to_owned(),
        update(r#"{"sessionUpdate":"brand_new"}"#),
    ]
    .join("\n");
    let (decoded, counts) = decode_all(Provider::Acp, stream.as_bytes());
    assert_eq!(counts.unknown_events, 1);
    // The slash-command list is known and carries nothing: counted as a silent line.
    assert_eq!(counts.silent_lines, 1);
    let events: Vec<ProviderEvent> = decoded.into_iter().map(Result::unwrap).collect();
    assert!(events.iter().any(|event| matches!(
        event,
        ProviderEvent::PlanUpdated { steps } if steps.len() == 2
    )));
    assert!(events.contains(&ProviderEvent::ToolEnded {
        call_id: "c1".into(),
        status: ToolStatus::Error,
        exit_code: None,
        output: None,
    }));
    let warnings = events
        .iter()
        .filter(|event| matches!(event, ProviderEvent::Warning { .. }))
        .count();
    assert_eq!(warnings, 1, "only max_tokens warns: {events:#?}");
    let turns: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::TurnStarted { .. } => Some("start"),
            ProviderEvent::TurnEnded { .. } => Some("end"),
            _ => None,
        })
        .collect();
    assert_eq!(turns, vec!["start", "end", "start", "end"]);
    // R95: a cancelled prompt ends its turn without a failure.
    let cancelled = stream.lines().take(5).collect::<Vec<_>>().join("\n");
    let (_, _, summary) = fold_of(Provider::Acp, cancelled.as_bytes());
    assert_eq!(summary.failure, None);
    assert_eq!(summary.turn_phase, "done");
    let events = events_of(
        Provider::Acp,
        br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error"}}"#,
    );
    // Outside a turn an error answer (a session that could not be loaded) is shown, not a
    // turn's failure: the client goes on with a new session.
    assert!(matches!(events[..], [ProviderEvent::Warning { .. }]));
}

fn acp_update(body: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{body}}}}}"#
    )
}

/// A recorded session's history as an ACP agent replays it on `session/load`, part of it after
/// its answer (Gemini CLI streams the replay without waiting for it).
fn replayed_history() -> (String, String) {
    let before_answer = [
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#.to_owned(),
        acp_update(r#"{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"Run echo hello"}}"#),
        acp_update(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"I'll run the command."}}"#),
        r#"{"jsonrpc":"2.0","id":2,"result":{"models":{"currentModelId":"gemini-x"}}}"#.to_owned(),
    ];
    let after_answer = [
        acp_update(
            r#"{"sessionUpdate":"tool_call","toolCallId":"old-1","title":"echo hello","kind":"execute","status":"completed"}"#,
        ),
        acp_update(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"It printed hello."}}"#,
        ),
    ];
    (
        before_answer.join("\n") + "\n",
        after_answer.join("\n") + "\n",
    )
}

fn history_of(events: &[ProviderEvent]) -> Vec<(&str, &str)> {
    events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::HistoryReplayed { role, text } => Some((role.as_str(), text.as_str())),
            _ => None,
        })
        .collect()
}

fn streamed_text(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

const REPLAYED: [(&str, &str); 4] = [
    ("user", "Run echo hello"),
    ("assistant", "I'll run the command."),
    ("tool", "echo hello"),
    ("assistant", "It printed hello."),
];

/// A loaded ACP session, as the host drives it: the replay, before and after the load's
/// answer, is history (no turn opens, no tool starts, no text streams) until the client sends
/// its prompt; the turn that prompt runs is the only one, with only its own text.
#[test]
fn an_acp_session_load_replays_history_until_the_prompt_and_starts_no_tool() {
    let (before, after) = replayed_history();
    let live = [
        acp_update(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}"#,
        ),
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#.to_owned(),
    ]
    .join("\n")
        + "\n";
    let mut decoder = Decoder::new(Provider::Acp);
    let mut decoded = Vec::new();
    decoder.feed(before.as_bytes(), &mut decoded);
    decoder.feed(after.as_bytes(), &mut decoded);
    decoder.prompt_sent();
    decoder.feed(live.as_bytes(), &mut decoded);
    decoder.finish(&mut decoded);
    let events: Vec<ProviderEvent> = decoded
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(history_of(&events), REPLAYED);
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ProviderEvent::ToolStarted { .. })),
        "a replayed tool call is no tool of this session: {events:#?}"
    );
    assert_eq!(streamed_text(&events), "Done.");
    let stream = format!("{before}{after}{live}");
    let (_, _, summary) = fold_of(Provider::Acp, stream.as_bytes());
    assert_eq!(summary.failure, None);
}

/// The same stream decoded without the client's side (`panewise decode` of a capture): the
/// history ends at the first sign of a live turn, here a tool call that starts running.
#[test]
fn an_acp_replay_read_alone_ends_at_a_tool_call_that_starts() {
    let (before, after) = replayed_history();
    let live = [
        acp_update(r#"{"sessionUpdate":"tool_call","toolCallId":"new-1","title":"echo bye","kind":"execute","status":"in_progress"}"#),
        acp_update(r#"{"sessionUpdate":"tool_call_update","toolCallId":"new-1","status":"completed"}"#),
        acp_update(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}"#),
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#.to_owned(),
    ]
    .join("\n");
    let stream = format!("{before}{after}{live}");
    let events = events_of(Provider::Acp, stream.as_bytes());
    assert_eq!(history_of(&events), REPLAYED);
    let started: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::ToolStarted { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["new-1"]);
    assert_eq!(streamed_text(&events), "Done.");
    let (_, _, summary) = fold_of(Provider::Acp, stream.as_bytes());
    assert_eq!(summary.turns_completed, 1);
    assert_eq!(summary.failure, None);
}

/// A Codex `thread/resume` the server refuses (the thread is gone) answers the handshake: the
/// client starts a new thread, so the refusal is shown, not a failure that ends the session.
#[test]
fn a_refused_codex_thread_resume_is_no_failure_and_the_new_thread_runs_the_turn() {
    let stream = [
        r#"{"id":1,"result":{"userAgent":"codex"}}"#,
        r#"{"id":2,"error":{"code":-32600,"message":"no rollout found for thread id t9"}}"#,
        r#"{"id":3,"result":{"thread":{"id":"t10"},"model":"gpt-5.5"}}"#,
        r#"{"method":"turn/started","params":{"threadId":"t10","turn":{"id":"u1","status":"inProgress"}}}"#,
        r#"{"method":"turn/completed","params":{"threadId":"t10","turn":{"id":"u1","status":"completed"}}}"#,
    ]
    .join("\n");
    let events = events_of(Provider::CodexAppServer, stream.as_bytes());
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ProviderEvent::Failure { .. })),
        "{events:#?}"
    );
    assert!(events.iter().any(|event| matches!(
        event,
        ProviderEvent::Warning { message } if message.contains("no rollout found")
    )));
    let (_, _, summary) = fold_of(Provider::CodexAppServer, stream.as_bytes());
    assert_eq!(summary.failure, None);
    assert_eq!(summary.turns_completed, 1);
}
