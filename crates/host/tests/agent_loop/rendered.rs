//! The body the own loop sends (assembled from the fragments its `LoopHistory` rendered when
//! each message was appended) is the body serde renders from the whole kept conversation
//! (`api_messages`, then `ApiKind::body`), call by call, across window edits: a span removed
//! with a drop notice in its place (sliding-window) and old results masked
//! (observation-masking), in all three APIs.
//!
//! The reference is rebuilt independently of the loop: the conversation from the window
//! ledger's message lines, each engaged visit planned again by a stage of the same strategy
//! and applied to it, and every call's body rendered by serde from what was then kept.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use panewise_host::agent_loop::ledger::{ledger_path, Ledger, LedgerLine};
use panewise_host::agent_loop::request::api_messages;
use panewise_host::approval::ApprovalMode;
use panewise_host::backend::model::{LoopConfig, ModelAgent};
use panewise_host::backend::scripted::{ScriptStep, ScriptedModelClient};
use panewise_host::backend::Backend;
use panewise_host::session::handle::spawn;
use panewise_host::session::{log_header, Session, SessionSpec};
use panewise_providers::api::request::anthropic;
use panewise_providers::{ApiKind, ModelRequest, ProviderEvent, SessionStats, ToolDefinition};
use panewise_window::{
    openai, Conversation, Message, Role, StageMemory, StrategyConfig, VisitContext,
};
use serde_json::Value;

fn call_ended() -> ScriptStep {
    ScriptStep::Event(ProviderEvent::CallEnded {
        model: Some("scripted-model".to_owned()),
        stop_reason: Some("end_turn".to_owned()),
        stats: SessionStats {
            input_tokens: Some(100),
            output_tokens: Some(10),
            ..SessionStats::default()
        },
    })
}

fn text(text: &str) -> Vec<ScriptStep> {
    vec![
        ScriptStep::Event(ProviderEvent::TextDelta {
            text: text.to_owned(),
        }),
        call_ended(),
    ]
}

fn call(id: &str, name: &str, arguments: &str) -> Vec<ScriptStep> {
    vec![
        ScriptStep::Event(ProviderEvent::ToolCallRequested {
            call_id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }),
        call_ended(),
    ]
}

/// Two turns of reads (allowed in read-only mode) and a write (denied: an error result), with
/// text that JSON must escape.
fn scripts() -> Vec<Vec<ScriptStep>> {
    vec![
        call("r1", "read_file", r#"{"path":"notes \"1\".txt"}"#),
        call("w1", "write_file", r#"{"path":"out.txt","content":"a\nb"}"#),
        call("r2", "read_file", r#"{"path":"notes \"1\".txt"}"#),
        text("Read it:\n\t\"done\" é 🚀"),
        call("r3", "read_file", r#"{"path":"notes \"1\".txt"}"#),
        call("w2", "write_file", r#"{"path":"out.txt","content":"c"}"#),
        text("Second turn done."),
    ]
}

const STRATEGIES: [&str; 2] = [
    r#"{"strategy":"sliding-window","keepRecentTurns":1}"#,
    r#"{"strategy":"observation-masking","keepRecentObservations":1}"#,
];

/// The tools a request offers: `recall` once the window archived something (W76).
fn tools(archived: bool) -> Vec<ToolDefinition<'static>> {
    panewise_host::tools::api_definitions(archived)
}

/// Runs the session; returns the bodies the client received, the ledger and the loop's
/// configuration.
async fn run(api: ApiKind, strategy: &str) -> (Vec<Vec<u8>>, Ledger, LoopConfig) {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let notes = "line \"one\"\n\tline two é\n".repeat(40);
    std::fs::write(cwd.join("notes \"1\".txt"), notes).unwrap();
    let log = cwd.join("session.jsonl");
    let client = ScriptedModelClient::for_api(api, scripts());
    let mut config = LoopConfig::new(
        "mock",
        "scripted-model",
        cwd.clone(),
        StrategyConfig::from_json(strategy).unwrap(),
        log.clone(),
    );
    config.approval = ApprovalMode::ReadOnly;
    let backend = ModelAgent::new(config.clone(), Arc::new(client.clone())).unwrap();
    let spec = SessionSpec {
        prompts: vec!["first \"task\"".to_owned(), "second task".to_owned()],
        approval: ApprovalMode::ReadOnly,
        ..SessionSpec::new(log_header("mock", None, &cwd, None), log.clone(), cwd)
    };
    let (session, mut handle) = Session::new(spec, Backend::Model(Box::new(backend))).unwrap();
    let task = spawn(session);
    while handle.next_update().await.is_some() {}
    task.await.unwrap().unwrap();
    let ledger = panewise_host::agent_loop::ledger::read(&ledger_path(&log)).unwrap();
    (client.bodies(), ledger, config)
}

/// `value` without any `cache_control` field, at any depth.
fn strip(mut value: Value) -> Value {
    match &mut value {
        Value::Object(object) => {
            object.remove("cache_control");
            for field in object.values_mut() {
                *field = strip(field.take());
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = strip(item.take());
            }
        }
        _ => {}
    }
    value
}

/// The Anthropic message breakpoints of a body (given without breakpoints, parsed), found
/// from it and the previous body alone: on the last content block, and, when the head
/// (system prompt, tools) is the previous one's, on the block before the first content block
/// that differs from the previous body's, if there is a block between it and the head.
fn anthropic_marks(previous: Option<&Value>, body: &Value) -> Vec<usize> {
    let blocks = |body: &Value| -> Vec<Value> {
        body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let now = blocks(body);
    let mut marks = Vec::new();
    if let Some(previous) = previous {
        let before = blocks(previous);
        let same_head = previous["system"] == body["system"] && previous["tools"] == body["tools"];
        let changed = now
            .iter()
            .zip(&before)
            .position(|(a, b)| a != b)
            .or((now.len() < before.len()).then_some(now.len()));
        if let Some(at) = changed.filter(|&at| same_head && at >= 1 && at < now.len()) {
            marks.push(at - 1);
        }
    }
    marks.extend(now.len().checked_sub(1));
    marks
}

/// The body serde renders for the kept conversation, as the loop rendered it before it kept
/// fragments, with Anthropic's breakpoints placed from the previous body (`previous`, which
/// it then replaces).
fn serde_body(
    api: ApiKind,
    conversation: &Conversation<Message>,
    errored: &BTreeSet<String>,
    config: &LoopConfig,
    tools: &[ToolDefinition<'static>],
    previous: &mut Option<Value>,
) -> Vec<u8> {
    let messages = api_messages(conversation.messages(), errored).unwrap();
    let request = ModelRequest {
        model: Cow::Borrowed(&config.model),
        system: config.system.as_deref().map(Cow::Borrowed),
        messages: Cow::Owned(messages),
        tools: Cow::Borrowed(tools),
        max_output_tokens: config.max_output_tokens,
        prompt_cache: config.prompt_cache,
        cache_key: config.cache_key.as_deref().map(Cow::Borrowed),
        context_management: None,
    };
    let plain = api.body(&request).unwrap();
    if api != ApiKind::Anthropic {
        return plain;
    }
    let parsed = strip(serde_json::from_slice(&plain).unwrap());
    let marks = anthropic_marks(previous.as_ref(), &parsed);
    *previous = Some(parsed);
    anthropic::body_with_breakpoints(&request, &marks).unwrap()
}

/// The serde body of every call, rebuilt from the ledger: messages appended in order, each
/// engaged visit planned again and applied.
fn reference(api: ApiKind, strategy: &str, ledger: &Ledger, config: &LoopConfig) -> Vec<Vec<u8>> {
    let mut archived = false;
    let stage = StrategyConfig::from_json(strategy)
        .unwrap()
        .build_stage::<Message>()
        .unwrap();
    let mut memory = StageMemory::new();
    let mut conversation = Conversation::new();
    let mut errored = BTreeSet::new();
    let mut prompt: Option<String> = None;
    let mut bodies = Vec::new();
    let mut records = Vec::new();
    let mut previous = None;
    for line in &ledger.lines {
        match line {
            LedgerLine::Message { message } => {
                let message = openai::from_value(message).unwrap();
                if message.role == Role::User {
                    prompt = Some(message.content.clone());
                }
                // The denied writes are the error results.
                if message.role == Role::Tool
                    && message.tool_call_id.as_deref().unwrap().starts_with('w')
                {
                    errored.insert(message.tool_call_id.clone().unwrap());
                }
                conversation.push(message);
            }
            // A provider's edit changes nothing the loop sends (this test's strategies are
            // local).
            LedgerLine::ProviderEdit { .. } => {}
            LedgerLine::Idle { .. } => {
                bodies.push(serde_body(
                    api,
                    &conversation,
                    &errored,
                    config,
                    &tools(archived),
                    &mut previous,
                ));
            }
            // A call's usage changes neither the conversation nor what the next request holds.
            LedgerLine::Call { .. } => {}
            // What the window archived changes nothing sent; the visit's plan said it.
            LedgerLine::Archived { .. } => {}
            LedgerLine::Visit { record } => {
                let mut context = VisitContext::new(record.iteration, 0);
                context.current_request = prompt.as_deref();
                context.previous_records = &records;
                let outcome = stage.visit(&conversation, context, &mut memory).unwrap();
                let mut plan = outcome
                    .resolve(|_| unreachable!("neither strategy summarizes"))
                    .expect("the loop's visit engaged, so this one does");
                assert_eq!(
                    (
                        plan.record.removed_message_count,
                        plan.record.window_chars_after
                    ),
                    (record.removed_message_count, record.window_chars_after)
                );
                archived |= !plan.archived_spans(&conversation).is_empty();
                conversation.apply(&mut plan).unwrap();
                records.push(plan.record);
                bodies.push(serde_body(
                    api,
                    &conversation,
                    &errored,
                    config,
                    &tools(archived),
                    &mut previous,
                ));
            }
        }
    }
    bodies
}

#[tokio::test(start_paused = true)]
async fn the_body_the_loop_sends_is_the_serde_body_across_window_edits() {
    for api in ApiKind::ALL {
        for strategy in STRATEGIES {
            let (sent, ledger, config) = run(api, strategy).await;
            assert_eq!(sent.len(), scripts().len(), "{api:?} {strategy}");
            assert!(
                ledger
                    .records()
                    .any(|record| record.window_chars_after < record.window_chars_before),
                "{api:?} {strategy}: the window edited the conversation"
            );
            // Anthropic bodies after a masking carry one breakpoint more than the first (the
            // sliding window's removals start at the first message: the head's come before).
            let marks = |body: &Vec<u8>| {
                String::from_utf8_lossy(body)
                    .matches("cache_control")
                    .count()
            };
            if api == ApiKind::Anthropic && strategy.contains("masking") {
                assert!(
                    sent.iter().any(|body| marks(body) > marks(&sent[0])),
                    "{strategy}: no breakpoint placed before an edit"
                );
            }
            let expected = reference(api, strategy, &ledger, &config);
            assert_eq!(expected.len(), sent.len());
            for (index, (got, want)) in sent.iter().zip(&expected).enumerate() {
                assert!(
                    got == want,
                    "{api:?} {strategy}, call {}:\n{}\nagainst\n{}",
                    index + 1,
                    String::from_utf8_lossy(got),
                    String::from_utf8_lossy(want)
                );
            }
        }
    }
}
