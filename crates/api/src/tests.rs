//! The pure parts: the envelope's errors, the names, the state classes.

use panewise_pane_state::state::{PendingApproval, PendingQuestionSet};
use panewise_pane_state::{State, TurnOutcome, TurnPhase};
use serde_json::json;

use super::*;

fn done(outcome: TurnOutcome) -> TurnPhase {
    TurnPhase::Done {
        outcome,
        finished_at: 1,
    }
}

fn running() -> Observed {
    Observed::default()
}

#[test]
fn a_waiting_approval_is_needs_input_with_the_tool_and_argument() {
    let mut state = State::new("mock");
    state.turn_phase = TurnPhase::Streaming {
        buffer_size: 0,
        tools_active: 1,
        last_event_ms: 0,
        waiting_reason: None,
        retry_after_ms: None,
    };
    state.pending_approvals.push_back(PendingApproval {
        id: "r1".into(),
        tool: "shell".into(),
        summary: "echo hello".into(),
        asked: true,
    });
    let fields = PaneFields::of(&state, &running());
    assert_eq!(fields.state, AgentState::NeedsInput);
    assert_eq!(
        fields.waiting_for,
        Some(WaitingFor::Approval {
            id: "r1".into(),
            tool: "shell".into(),
            argument: "echo hello".into()
        })
    );
}

#[test]
fn a_waiting_question_is_needs_input() {
    let mut state = State::new("mock");
    state.pending_questions.push_back(PendingQuestionSet {
        id: "q".into(),
        questions: vec!["which?".into()],
    });
    assert_eq!(classify(&state, &running()), AgentState::NeedsInput);
}

#[test]
fn a_finished_turn_is_done_until_looked_at_then_idle() {
    let mut state = State::new("mock");
    state.turn_phase = done(TurnOutcome::Completed);
    state.turns_completed = 2;
    let mut observed = Observed {
        turns_seen: 1,
        ending: None,
    };
    assert_eq!(classify(&state, &observed), AgentState::Done);
    observed.turns_seen = 2;
    assert_eq!(classify(&state, &observed), AgentState::Idle);
}

#[test]
fn working_phases_are_working_and_a_fresh_session_is_idle() {
    let mut state = State::new("mock");
    assert_eq!(classify(&state, &running()), AgentState::Idle);
    state.turn_phase = TurnPhase::Submitting {
        submitted_at: 0,
        pending_content: "hi".into(),
    };
    assert_eq!(classify(&state, &running()), AgentState::Working);
}

#[test]
fn stopped_errored_and_ended_turns_and_tasks_have_their_classes() {
    let mut state = State::new("mock");
    // An interrupted turn leaves the session open: `interrupted`, never the `stopped` of an
    // ended session.
    for outcome in [TurnOutcome::Interrupted, TurnOutcome::Stopped] {
        state.turn_phase = done(outcome);
        assert_eq!(classify(&state, &running()), AgentState::Interrupted);
    }
    state.turn_phase = done(TurnOutcome::Errored);
    assert_eq!(classify(&state, &running()), AgentState::Failed);
    state.turn_phase = done(TurnOutcome::Completed);
    let ended = |ending| Observed {
        turns_seen: 0,
        ending: Some(ending),
    };
    assert_eq!(classify(&state, &ended(Ending::Ended)), AgentState::Exited);
    assert_eq!(
        classify(&state, &ended(Ending::Stopped)),
        AgentState::Stopped
    );
    let failed = Ending::Failed {
        reason: "panic".into(),
    };
    assert_eq!(classify(&state, &ended(failed)), AgentState::Failed);
}

#[test]
fn the_list_puts_needs_input_first() {
    assert_eq!(AgentState::ALL[0], AgentState::NeedsInput);
    assert!(AgentState::NeedsInput.rank() < AgentState::Working.rank());
}

#[test]
fn states_serialize_as_their_names() {
    for state in AgentState::ALL {
        assert_eq!(json!(state), json!(state.as_str()));
    }
}

#[test]
fn method_and_code_names_round_trip() {
    for method in Method::ALL {
        assert_eq!(Method::from_name(method.name()), Some(method));
    }
    for code in ErrorCode::ALL {
        assert_eq!(ErrorCode::from_code(code.code()), Some(code));
    }
}

#[test]
fn malformed_lines_have_their_codes() {
    let code = |line: &[u8]| rpc::parse_request(line).map(|_| ()).map_err(|e| e.code());
    assert_eq!(code(b"{not json"), Err(ErrorCode::ParseError));
    assert_eq!(code(b"[1,2]"), Err(ErrorCode::InvalidRequest));
    assert_eq!(
        code(br#"{"jsonrpc":"1.0","id":1,"method":"hello"}"#),
        Err(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","id":1,"method":"hello","params":[1]}"#),
        Err(ErrorCode::InvalidRequest)
    );
    let mut deep = "[".repeat(100_000).into_bytes();
    deep.extend_from_slice("]".repeat(100_000).as_bytes());
    assert_eq!(code(&deep), Err(ErrorCode::ParseError));
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","id":1,"method":7} trailing"#),
        Err(ErrorCode::ParseError)
    );
    let long = vec![b' '; MAX_LINE_BYTES + 1];
    assert_eq!(code(&long), Err(ErrorCode::LineTooLong));
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","id":1,"method":"hello"}"#),
        Ok(())
    );
    assert_eq!(
        rpc::salvage_id(br#"{"id":7,"method":3}"#),
        Some(crate::RequestId::number(7))
    );
    assert_eq!(rpc::salvage_id(b"{nope"), None);
    assert_eq!(rpc::salvage_id(br#"{"id":null,"method":3}"#), None);
}

/// Every id a client may send comes back in its response byte for byte: past 2^64, negative,
/// fractional and string ids, also when the request itself is refused.
#[test]
fn ids_are_echoed_exactly_as_sent() {
    for id in [
        "1",
        "18446744073709551616",
        "-5",
        "2.50",
        "\"req-1\"",
        "\"\\u00e9\"",
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"hello"}}"#);
        let request = rpc::parse_request(line.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
        let response = Response::ok(request.id, json!({}));
        let sent =
            String::from_utf8(rpc::to_line(&response).unwrap_or_default()).unwrap_or_default();
        assert!(sent.contains(&format!(r#""id":{id},"#)), "{id}: {sent}");
        let refused = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":7}}"#);
        let response = Response::err(
            rpc::salvage_id(refused.as_bytes()),
            RpcError::new(ErrorCode::InvalidRequest, "no"),
        );
        let sent =
            String::from_utf8(rpc::to_line(&response).unwrap_or_default()).unwrap_or_default();
        assert!(sent.contains(&format!(r#""id":{id},"#)), "{id}: {sent}");
    }
}

#[test]
fn an_approval_decision_is_flat_in_the_params() {
    let params: ApproveParams = serde_json::from_value(json!({
        "session": "ab", "decision": "deny", "message": "not that"
    }))
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        params.decision,
        Decision::Deny {
            message: Some("not that".into())
        }
    );
    let allow: ApproveParams =
        serde_json::from_value(json!({"session": "ab", "decision": "allow_for_session"}))
            .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(allow.decision, Decision::AllowForSession);
}

#[test]
fn incoming_lines_are_told_apart() {
    let notice = br#"{"jsonrpc":"2.0","method":"session/line","params":{}}"#;
    assert!(matches!(
        rpc::parse_incoming(notice),
        Ok(Incoming::Notification(_))
    ));
    let response = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"answered"}}"#;
    let Ok(Incoming::Response(response)) = rpc::parse_incoming(response) else {
        panic!("a response");
    };
    assert_eq!(
        response.into_result().map_err(|e| e.code()),
        Err(ErrorCode::NotWaiting)
    );
}

#[test]
fn a_session_is_named_by_id_name_or_unique_prefix() {
    let sessions = [("0190aa-1111", "alpha"), ("0190aa-2222", "beta")];
    let resolve = |key| resolve_session(sessions.iter().copied(), key).map_err(|e| e.code);
    assert_eq!(resolve("beta"), Ok("0190aa-2222".to_owned()));
    assert_eq!(resolve("0190aa-1"), Ok("0190aa-1111".to_owned()));
    assert_eq!(resolve("0190aa-1111"), Ok("0190aa-1111".to_owned()));
    assert_eq!(resolve("0190"), Err(ErrorCode::AmbiguousSession.code()));
    assert_eq!(resolve("zzz"), Err(ErrorCode::UnknownSession.code()));
    assert_eq!(resolve(""), Err(ErrorCode::UnknownSession.code()));
}

#[test]
fn an_ambiguous_prefix_lists_its_candidates_and_a_long_key_is_cut() {
    let sessions: Vec<(String, String)> = (0..7)
        .map(|n| (format!("0190aa-{n}"), format!("s{n}")))
        .collect();
    let message = |key: &str| {
        resolve_session(
            sessions
                .iter()
                .map(|(id, name)| (id.as_str(), name.as_str())),
            key,
        )
        .err()
        .map(|error| error.message)
        .unwrap_or_default()
    };
    assert_eq!(
        message("0190"),
        "\"0190\" is the start of 7 session ids: 0190aa-0 (s0), 0190aa-1 (s1), 0190aa-2 (s2), \
         0190aa-3 (s3), 0190aa-4 (s4), and 2 more; give more of it, or the name"
    );
    let long = "x".repeat(5_000);
    let said = message(&long);
    assert!(said.len() < 200, "{said}");
    assert!(said.contains("(5000 characters)"), "{said}");
}

#[test]
fn a_clients_variables_travel_as_a_map_and_never_show_in_debug() {
    let params: CreateParams = serde_json::from_value(json!({
        "client": {"cwd": "/b", "env": {"ANTHROPIC_API_KEY": "sk-secret", "ANTHROPIC_BASE_URL": "http://x"}}
    }))
    .unwrap();
    let client = params.client.clone().unwrap();
    assert_eq!(client.env.get("ANTHROPIC_API_KEY"), Some("sk-secret"));
    assert_eq!(
        client.env.names().collect::<Vec<_>>(),
        ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]
    );
    let shown = format!("{params:?}");
    assert!(
        shown.contains("ANTHROPIC_API_KEY")
            && !shown.contains("sk-secret")
            && !shown.contains("http://x"),
        "{shown}"
    );
    // A blank value is no value; an unknown field of the context is refused.
    let blank = ClientEnv::new([("K".to_owned(), "  ".to_owned())].into());
    assert_eq!(blank.get("K"), None);
    assert!(serde_json::from_value::<ClientContext>(json!({"cwd": "/b", "keys": {}})).is_err());
}
