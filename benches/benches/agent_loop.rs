//! The own agent loop's overhead per iteration, without the model: one window visit (the
//! default token-budget, under its threshold, as most iterations are), the request built from
//! the kept messages with its pairing check, and its Anthropic body rendered, over 1k, 10k and
//! 100k messages of history (about 2 KB each). Beside it, in the same run, one `memcpy` of a
//! body of the same length: the floor any request costs.
//!
//! Run: `cargo bench -p panewise-benches --bench agent_loop -- --measurement-time 3`.
// A bench that cannot set up its input has nothing to measure, so setup failures panic; and
// criterion's macros generate undocumented public functions.
#![allow(clippy::expect_used, missing_docs)]

use std::borrow::Cow;
use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use panewise_benches::window::conversation;
use panewise_host::agent_loop::request::api_messages;
use panewise_providers::{ApiKind, ModelRequest, ToolDefinition};
use panewise_window::{
    Conversation, Measured, Message, StageMemory, StrategyConfig, Usage, VisitContext,
};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// The longest prefix of the generated history whose calls all have their results.
fn paired(mut messages: Vec<Message>) -> Vec<Message> {
    while api_messages(&messages, &HashSet::new()).is_err() {
        messages.pop();
    }
    messages
}

fn iteration(c: &mut Criterion) {
    let mut group = c.benchmark_group("agent_loop");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    let tools: Vec<ToolDefinition<'static>> = panewise_host::tools::definitions()
        .into_iter()
        .map(|tool| ToolDefinition {
            name: Cow::Borrowed(tool.name),
            description: Cow::Borrowed(tool.description),
            parameters: Cow::Owned(tool.parameters),
        })
        .collect();
    let config = StrategyConfig::from_json(
        r#"{"strategy":"token-budget","thresholdTokens":150000,"keepRecentTurns":6}"#,
    )
    .expect("a valid configuration");
    let stage = config.build_stage::<Message>().expect("a buildable stage");
    let errored = HashSet::new();
    for size in SIZES {
        let conversation: Conversation =
            Conversation::from_messages(paired(conversation(size, 42)));
        let mut memory = StageMemory::new();
        let one = |memory: &mut StageMemory| {
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
                .visit(&conversation, context, memory)
                .expect("the visit succeeds");
            assert!(matches!(outcome, panewise_window::VisitOutcome::NotEngaged));
            let messages =
                api_messages(conversation.messages(), &errored).expect("a paired history");
            let request = ModelRequest {
                model: Cow::Borrowed("claude-sonnet-4-5"),
                system: Some(Cow::Borrowed("You are a coding agent.")),
                messages: Cow::Owned(messages),
                tools: Cow::Borrowed(&tools),
                max_output_tokens: 8_192,
            };
            ApiKind::Anthropic.body(&request).expect("the body renders")
        };
        let body = one(&mut memory);
        group.bench_with_input(BenchmarkId::new("iteration", size), &size, |b, _| {
            b.iter(|| black_box(one(&mut memory)))
        });
        // The parts, to see where an iteration's time goes.
        group.bench_with_input(BenchmarkId::new("part-visit", size), &size, |b, _| {
            b.iter(|| {
                let mut context = VisitContext::new(2, 1_000);
                context.measured = Some(Measured {
                    usage: Usage {
                        input: 100_000,
                        output: 100,
                    },
                    sent_messages: conversation.len(),
                    iteration: 1,
                });
                black_box(stage.visit(&conversation, context, &mut memory).is_ok())
            })
        });
        group.bench_with_input(BenchmarkId::new("part-build", size), &size, |b, _| {
            b.iter(|| black_box(api_messages(conversation.messages(), &errored).is_ok()))
        });
        let mut copy = vec![0u8; body.len()];
        group.bench_with_input(BenchmarkId::new("memcpy-of-body", size), &size, |b, _| {
            b.iter(|| {
                copy.copy_from_slice(black_box(&body));
                black_box(&copy);
            })
        });
        eprintln!("agent_loop: {size} messages, body {} bytes", body.len());
    }
    group.finish();
}

criterion_group!(benches, iteration);
criterion_main!(benches);
