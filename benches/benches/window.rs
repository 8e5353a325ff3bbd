//! The window stage in isolation: one visit over generated conversations of 1k, 10k and 100k
//! messages (about 2 KB each), with per-message counts cached in the conversation, as a run
//! would hold them. The conversation is built once per size; each iteration is one visit.
//! `window_cold/from_messages` times building that conversation from loaded messages.
//! A visit that asks for a summary is answered at once with a fixed text, so summarize-oldest
//! is timed as the stage, not as a model.
//!
//! Run: `cargo bench -p panewise-benches --bench window` (or `cargo xtask bench --bench window`).
// A bench that cannot set up its input has nothing to measure, so setup failures panic; and
// criterion's macros generate undocumented public functions.
#![allow(clippy::expect_used, missing_docs)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use panewise_benches::window::conversation;
use panewise_window::{
    char_count, Conversation, Measured, Message, StageMemory, StrategyConfig, SummarizerError,
    SummaryRequest, SummaryResponse, Usage, VisitContext, WindowPlan, WindowStage,
};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// Answers at once with a short summary, so the bench measures the stage, not a model.
fn instant_summary(_request: SummaryRequest<'_>) -> Result<SummaryResponse, SummarizerError> {
    Ok(SummaryResponse {
        text: "The agent read the parser, fixed empty input, and the tests pass.".into(),
        usage: None,
    })
}

fn stage(json: &str) -> WindowStage<Message> {
    let config = StrategyConfig::from_json(json).expect("a valid bench configuration");
    config.build_stage().expect("a buildable stage")
}

/// One visit, a summary request answered on the spot.
fn visit(
    stage: &WindowStage<Message>,
    conversation: &Conversation,
    context: VisitContext<'_>,
    memory: &mut StageMemory,
) -> Option<WindowPlan<Message>> {
    stage
        .visit(conversation, context, memory)
        .expect("the visit succeeds")
        .resolve(instant_summary)
}

/// A context whose reading is the conversation's counted size, as if the provider reported it.
fn context(conversation: &Conversation) -> VisitContext<'static> {
    let mut context = VisitContext::new(2, 1_000);
    context.measured = Some(Measured {
        usage: Usage {
            input: conversation.tokens_in(0..conversation.len()),
            output: 100,
        },
        sent_messages: conversation.len(),
        iteration: 1,
    });
    context
}

fn bench_strategy(c: &mut Criterion, name: &str, config: impl Fn(u64) -> String) {
    let mut group = c.benchmark_group(format!("window/{name}"));
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    for size in SIZES {
        let conversation: Conversation = Conversation::from_messages(conversation(size, 42));
        let total = conversation.tokens_in(0..conversation.len());
        // A quarter over budget: a realistic visit drops or folds a large, but not whole, span.
        let stage = stage(&config(total * 3 / 4));
        let context = context(&conversation);
        // One memory for the whole run, as a runner keeps it; the instant summary is always
        // smaller than the span, so it never grows.
        let mut memory = StageMemory::new();
        let engaged = visit(&stage, &conversation, context, &mut memory);
        assert!(engaged.is_some(), "{name} engages at {size}");
        group.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter(|| visit(&stage, &conversation, context, &mut memory))
        });
    }
    group.finish();
}

fn token_budget(c: &mut Criterion) {
    bench_strategy(c, "token-budget", |threshold| {
        format!(
            r#"{{"strategy":"token-budget","thresholdTokens":{threshold},"keepRecentTurns":6}}"#
        )
    });
}

fn sliding_window(c: &mut Criterion) {
    bench_strategy(c, "sliding-window", |_| {
        r#"{"strategy":"sliding-window","keepRecentTurns":20}"#.to_string()
    });
}

fn summarize_oldest(c: &mut Criterion) {
    bench_strategy(c, "summarize-oldest", |threshold| {
        format!(
            r#"{{"strategy":"summarize-oldest","thresholdTokens":{threshold},"keepRecentTurns":6,"model":"instant"}}"#
        )
    });
}

fn observation_masking(c: &mut Criterion) {
    bench_strategy(c, "observation-masking", |_| {
        r#"{"strategy":"observation-masking","keepRecentObservations":10}"#.to_string()
    });
}

/// The cost of caching: pushing one ~2 KB message onto a conversation that already holds
/// 10k, which is what a run pays per appended message so that visits stay cheap.
fn push_one(c: &mut Criterion) {
    let messages = conversation(10_001, 42);
    let mut base: Conversation = Conversation::from_messages(messages[..10_000].to_vec());
    let next = messages[10_000].clone();
    c.bench_function("window/push-one-at-10k", |b| {
        b.iter_batched(
            || next.clone(),
            |message| {
                base.push(message);
            },
            criterion::BatchSize::SmallInput,
        )
    });
}

/// The cold path: counting every message of a freshly loaded conversation (characters, tokens,
/// tool names, call answers, turns), which a run pays once per message and a one-shot caller
/// pays on every call. The copy of the messages is made outside the timed region, and the
/// built conversation is dropped outside it too.
///
/// Beside it, its floor: one streaming pass over the same bytes, the exact character count of
/// every message alone (`char_count`, which `from_messages` also takes), on a fresh copy made
/// the same way, so both read memory in the same state.
///
/// The two run size by size, each cold figure beside its floor, so that a pair is measured a
/// few seconds apart on this shared machine rather than a group apart.
fn cold(c: &mut Criterion) {
    for size in [1_000, 10_000] {
        let messages = conversation(size, 42);
        let mut group = c.benchmark_group("window_cold/from_messages");
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3))
            .sample_size(30);
        group.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter_batched(
                || messages.clone(),
                Conversation::<Message>::from_messages,
                criterion::BatchSize::LargeInput,
            )
        });
        group.finish();
        let mut group = c.benchmark_group("window_cold/floor_char_count");
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3))
            .sample_size(30);
        group.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter_batched(
                || messages.clone(),
                |messages| {
                    let chars: u64 = messages
                        .iter()
                        .map(|message| char_count(&message.content))
                        .sum();
                    // Returned, so the messages are dropped outside the timed region too.
                    (chars, messages)
                },
                criterion::BatchSize::LargeInput,
            )
        });
        group.finish();
    }
}

criterion_group!(
    benches,
    token_budget,
    sliding_window,
    summarize_oldest,
    observation_masking,
    push_one,
    cold
);
criterion_main!(benches);
