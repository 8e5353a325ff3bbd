//! `recall` in the own loop: offered with the archive, answered from it in every mode (W76),
//! and what the provider cleared archived and recallable (W77).

use super::*;

/// The request body of the one `CallModel` among `effects`.
fn request_body(effects: &[Effect]) -> String {
    effects
        .iter()
        .find_map(|effect| match effect {
            Effect::CallModel(request) => Some(String::from_utf8_lossy(&request.body).into_owned()),
            _ => None,
        })
        .expect("a model call")
}

/// Rules W76, W75: `recall` is offered only once the archive holds a span; a resumed
/// archive is written into this session's; a recall by id is answered from the archive in
/// every approval mode, as `read_file` runs, its exact text in the call's result, which joins
/// the conversation (and the ledger) like any tool result.
#[test]
fn w76_a_recall_is_offered_with_the_archive_and_answered_from_it_in_every_mode() {
    let content = "round 1 printed this\nexactly \u{1b}[1m\n";
    let span = panewise_window::ArchivedSpan {
        id: panewise_window::SpanId::of(Role::Tool, content, &[]),
        kind: panewise_window::SpanKind::ToolResult,
        removal: panewise_window::Removal::Masked,
        iteration: 2,
        window_index: 2,
        born_at_ms: Some(5),
        call_id: Some("c0".to_owned()),
        tool: Some("shell".to_owned()),
        description: "tool result of shell \"echo\", 30 chars".to_owned(),
        content: content.to_owned(),
        tool_calls: Vec::new(),
    };
    let arguments = json!({ "id": span.id.as_str() }).to_string();
    for mode in ApprovalMode::ALL {
        let offered = |body: &str| body.contains(r#""name":"recall""#);
        let mut without = own_loop(mode);
        without
            .step(LoopInput::Prompt {
                text: "go".into(),
                at_ms: 1,
            })
            .unwrap();
        settle(&mut without, 2);
        assert!(
            !offered(&request_body(&visited_idle(&mut without, 3))),
            "{mode:?}"
        );

        let mut core = own_loop(mode);
        assert_effects!(
            core.load_archive(vec![span.clone(), span.clone()]),
            vec![
                Effect::Archive(vec![span.clone()]),
                Effect::Ledger(LedgerLine::Archived {
                    iteration: 0,
                    reloaded: true,
                    spans: vec![crate::agent_loop::ledger::ArchivedEntry::of(&span)],
                }),
            ]
        );
        assert!(
            core.load_archive(vec![span.clone()]).is_empty(),
            "held once"
        );
        core.step(LoopInput::Prompt {
            text: "go".into(),
            at_ms: 1,
        })
        .unwrap();
        settle(&mut core, 2);
        assert!(
            offered(&request_body(&visited_idle(&mut core, 3))),
            "{mode:?}"
        );
        event(&mut core, tool_call("c1", "recall", &arguments), 10);
        step(&mut core, LoopInput::ModelEnded { at_ms: 11 });
        let effects = settle(&mut core, 12);
        let header = format!(
            "[recalled span {} ({}); {} bytes, whole]\n",
            span.id,
            span.description,
            content.len()
        );
        let answer = format!("{header}{content}");
        let call = ToolCall::parse("recall", &json!({ "id": span.id.as_str() })).unwrap();
        let decision = decide(
            mode,
            &ToolRequest::Own(&call),
            &crate::approval::PathFacts::new(),
        );
        assert_eq!(decision, Decision::Run, "{mode:?}");
        assert_effects!(
            effects,
            vec![
                Effect::Transcript {
                    at_ms: 12,
                    entry: transcript::policy_entry(
                        "c1",
                        "recall",
                        span.id.as_str(),
                        &decision,
                        mode
                    ),
                },
                Effect::Emit(ProviderEvent::ToolStarted {
                    name: "recall".to_owned(),
                    call_id: "c1".to_owned(),
                    arg: Some(span.id.to_string()),
                    input: None,
                }),
                Effect::Notice(format!("ran recall `{}`", span.id)),
                ledger(&result("c1", "recall", &answer, 12)),
                Effect::Emit(ProviderEvent::ToolEnded {
                    call_id: "c1".to_owned(),
                    status: ToolStatus::Success,
                    exit_code: None,
                    output: Some(answer.clone()),
                }),
            ]
        );
    }
}

/// Rule W77: the tool results a provider's `clear_tool_uses` cleared are archived from the
/// history the call was sent, the ones the reconciliation counts, and named in the ledger;
/// the next request offers `recall`.
#[test]
fn w77_results_the_provider_cleared_are_archived_and_recallable() {
    let strategy = r#"{"strategy":"anthropic-clear-tool-uses"}"#;
    let mut core = OwnLoop::new(
        config(ApprovalMode::FullAccess, strategy),
        ApiKind::Anthropic,
        "anthropic-clear-tool-uses",
    );
    start_turn(&mut core, "go");
    event(&mut core, tool_call("c1", "shell", ECHO), 1_010);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_011 });
    settle(&mut core, 1_012);
    let long = "cleared output ".repeat(40);
    step(
        &mut core,
        LoopInput::ToolDone {
            outcome: exited(long.clone()),
            at_ms: 1_013,
        },
    );
    settle(&mut core, 1_014);
    settle(&mut core, 1_015);
    assert!(!request_body(&visited_idle(&mut core, 1_016)).contains(r#""name":"recall""#));
    let cleared = AppliedContextEdit::ClearedToolUses {
        provider_type: "clear_tool_uses_20250919".to_owned(),
        cleared_tool_uses: Some(1),
        cleared_input_tokens: Some(150),
    };
    let context = core.config().strategy.provider_context().unwrap().clone();
    let record = reconcile(core.conversation(), &context, 2, &cleared);
    let spans = cleared_spans(core.conversation(), &context, 2, &cleared);
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].content, long);
    assert_eq!(spans[0].removal, panewise_window::Removal::ProviderCleared);
    let reported = ProviderEvent::ContextManaged {
        edits: vec![cleared],
    };
    assert_effects!(
        event(&mut core, reported.clone(), 1_020),
        vec![
            Effect::Ledger(LedgerLine::ProviderEdit {
                record: Box::new(record)
            }),
            Effect::Archive(spans.clone()),
            Effect::Ledger(LedgerLine::Archived {
                iteration: 2,
                reloaded: false,
                spans: vec![crate::agent_loop::ledger::ArchivedEntry::of(&spans[0])],
            }),
            Effect::Emit(reported),
        ]
    );
    assert!(core.archive().get(&spans[0].id).is_some());
    event(&mut core, text("Done."), 1_021);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_022 });
    settle(&mut core, 1_023);
    step(
        &mut core,
        LoopInput::Prompt {
            text: "more".into(),
            at_ms: 1_030,
        },
    );
    settle(&mut core, 1_031);
    assert!(request_body(&visited_idle(&mut core, 1_032)).contains(r#""name":"recall""#));
}
