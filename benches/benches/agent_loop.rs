//! The own agent loop's overhead per iteration, without the model: one window visit (the
//! default token-budget, under its threshold, as most iterations are) and the request body
//! for the kept messages, over 1k, 10k and 100k messages of history (about 2 KB each).
//!
//! - `iteration`: the body assembled from each message's fragment, rendered once when the
//!   message was appended ([`LoopHistory`] over `panewise_providers::RenderedHistory`), into a
//!   buffer kept across calls; `iteration-fresh-buffer` the same into a new buffer per call,
//!   which is what the host's loop does (`LoopHistory::request`, handed to
//!   `ModelClient::stream_rendered`).
//! - `iteration-serde`: the path it replaces, the request built from the whole conversation
//!   with its pairing check (`agent_loop::request::api_messages`) and rendered by serde
//!   (`ApiKind::body`) on every call; `part-build` is its build and pairing check alone.
//! - `memcpy-of-body`: one `memcpy` of a body of the same length, in the same run: the floor
//!   any request costs. `append-one` is what the fragments cost per appended message.
//!
//! The memory the fragments hold is printed beside each size.
//!
//! Run: `cargo bench -p panewise-benches --bench agent_loop -- --measurement-time 3`.
// A bench that cannot set up its input has nothing to measure, so setup failures panic; and
// criterion's macros generate undocumented public functions.
#![allow(clippy::expect_used, missing_docs)]

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use panewise_benches::window::conversation;
use panewise_host::agent_loop::history::LoopHistory;
use panewise_host::agent_loop::request::api_messages;
use panewise_providers::{ApiKind, ModelRequest, RequestHead, ToolDefinition};
use panewise_window::{
    Conversation, Measured, Message, Role, StageMemory, StrategyConfig, Usage, VisitContext,
    VisitOutcome, WindowStage,
};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const MODEL: &str = "claude-sonnet-4-5";
const SYSTEM: &str = "You are a coding agent.";

/// The longest prefix of the generated history whose calls all have their results.
fn paired(mut messages: Vec<Message>) -> Vec<Message> {
    while api_messages(&messages, &BTreeSet::new()).is_err() {
        messages.pop();
    }
    messages
}

/// The visit of one iteration: under the threshold, so it keeps everything.
fn visit(stage: &WindowStage<Message>, conversation: &Conversation, memory: &mut StageMemory) {
    let mut context = VisitContext::new(2, 1_000);
    context.measured = Some(Measured {
        usage: Usage {
            input: 100_000,
            output: 100,
        },
        sent_messages: conversation.len(),
        iteration: 1,
    });
    let outcome = stage
        .visit(conversation, context, memory)
        .expect("the visit succeeds");
    assert!(matches!(outcome, VisitOutcome::NotEngaged));
}

/// The body as the loop rendered it before the fragments: the whole conversation through
/// serde.
fn serde_body(
    conversation: &Conversation,
    tools: &[ToolDefinition<'static>],
    errored: &BTreeSet<String>,
) -> Vec<u8> {
    let messages = api_messages(conversation.messages(), errored).expect("a paired history");
    let request = ModelRequest {
        model: Cow::Borrowed(MODEL),
        system: Some(Cow::Borrowed(SYSTEM)),
        messages: Cow::Owned(messages),
        tools: Cow::Borrowed(tools),
        max_output_tokens: 8_192,
        // The own loop's requests ask for the prompt cache, as they do by default.
        prompt_cache: true,
        cache_key: None,
        context_management: None,
    };
    ApiKind::Anthropic.body(&request).expect("the body renders")
}

fn iteration(c: &mut Criterion) {
    let mut group = c.benchmark_group("agent_loop");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    let tools: Vec<ToolDefinition<'static>> = panewise_host::tools::api_definitions(false);
    let head = RequestHead {
        model: MODEL,
        system: Some(SYSTEM),
        tools: &tools,
        max_output_tokens: 8_192,
        prompt_cache: true,
        cache_key: None,
        context_management: None,
    };
    let config = StrategyConfig::from_json(
        r#"{"strategy":"token-budget","thresholdTokens":150000,"keepRecentTurns":6}"#,
    )
    .expect("a valid configuration");
    let stage = config.build_stage::<Message>().expect("a buildable stage");
    let errored = BTreeSet::new();
    for size in SIZES {
        let messages = paired(conversation(size, 42));
        // For `append-one`: a ~2 KB tool result like the history's own.
        let next = messages
            .iter()
            .rev()
            .find(|message| message.role == Role::Tool && message.content.len() > 1_000)
            .cloned()
            .expect("the history has long messages");
        let mut history = LoopHistory::new(ApiKind::Anthropic);
        for message in messages {
            history.push(message, &errored);
        }
        let mut memory = StageMemory::new();
        let mut out = Vec::new();
        visit(&stage, history.conversation(), &mut memory);
        history
            .write_body(&head, &mut out)
            .expect("the body assembles");
        let body = serde_body(history.conversation(), &tools, &errored);
        assert!(out == body, "the assembled body is serde's, byte for byte");

        group.bench_with_input(BenchmarkId::new("iteration", size), &size, |b, _| {
            b.iter(|| {
                visit(&stage, history.conversation(), &mut memory);
                history
                    .write_body(&head, &mut out)
                    .expect("the body assembles");
                black_box(&out);
            })
        });
        group.bench_with_input(
            BenchmarkId::new("iteration-fresh-buffer", size),
            &size,
            |b, _| {
                b.iter(|| {
                    visit(&stage, history.conversation(), &mut memory);
                    // What the host's loop sends: a body of its own per call, which the client
                    // keeps while it retries.
                    black_box(history.request(&head).expect("the body assembles"))
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("iteration-serde", size), &size, |b, _| {
            b.iter(|| {
                visit(&stage, history.conversation(), &mut memory);
                black_box(serde_body(history.conversation(), &tools, &errored))
            })
        });
        // The parts, to see where an iteration's time goes.
        group.bench_with_input(BenchmarkId::new("part-visit", size), &size, |b, _| {
            b.iter(|| visit(&stage, history.conversation(), &mut memory))
        });
        group.bench_with_input(BenchmarkId::new("part-build", size), &size, |b, _| {
            b.iter(|| black_box(api_messages(history.conversation().messages(), &errored).is_ok()))
        });
        let mut copy = vec![0u8; body.len()];
        group.bench_with_input(BenchmarkId::new("memcpy-of-body", size), &size, |b, _| {
            b.iter(|| {
                copy.copy_from_slice(black_box(&body));
                black_box(&copy);
            })
        });
        eprintln!(
            "agent_loop: {size} messages, body {} bytes; fragments {} bytes, history heap {} bytes ({} API messages)",
            body.len(),
            history.rendered().fragment_bytes(),
            history.rendered().heap_bytes(),
            history.rendered().message_count(),
        );
        // Last, since it grows the history: one ~2 KB message appended, counted and rendered.
        let mut appended = 0u64;
        group.bench_with_input(BenchmarkId::new("append-one", size), &size, |b, _| {
            b.iter_batched(
                || {
                    // A call id of its own, so the appended results do not pile onto one id.
                    appended += 1;
                    let mut message = next.clone();
                    message.tool_call_id = Some(format!("appended_{appended}"));
                    message
                },
                |message| history.push(message, &errored),
                criterion::BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, iteration);
criterion_main!(benches);
