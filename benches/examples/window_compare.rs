//! The Rust side of `cargo xtask bench --compare`: writes the generated conversation as JSON
//! Lines (the file LangChain reads too) and times a token-budget visit over it.
//!
//! Usage: `window_compare OUT_DIR SIZE...`. For each size it writes
//! `OUT_DIR/conversation-SIZE.jsonl` and prints one JSON line: the size, the threshold (half
//! the counted tokens), the median visit time with counts cached, and the median time of a cold
//! visit that first builds the conversation (counting every message) from the parsed file.
#![allow(clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use panewise_benches::window::{conversation, to_jsonl};
use panewise_window::{
    openai, Conversation, Measured, Message, StageMemory, StrategyConfig, Usage, VisitContext,
    VisitOutcome,
};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// Times `work` repeatedly for about `budget`, at least `min_runs` times, returning the median.
fn time(budget: Duration, min_runs: usize, mut work: impl FnMut()) -> Duration {
    let started = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < min_runs || started.elapsed() < budget {
        let run = Instant::now();
        work();
        samples.push(run.elapsed());
        if samples.len() >= 10_000 {
            break;
        }
    }
    median(samples)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let out_dir = args.next().expect("usage: window_compare OUT_DIR SIZE...");
    std::fs::create_dir_all(&out_dir).expect("the output directory can be created");
    for size in args {
        let size: usize = size.parse().expect("a size is a whole number");
        let messages = conversation(size, 42);
        let path = format!("{out_dir}/conversation-{size}.jsonl");
        std::fs::write(&path, to_jsonl(&messages)).expect("the conversation file is written");

        // Read back the very file LangChain reads, so both sides trim the same bytes.
        let text = std::fs::read_to_string(&path).expect("the file reads back");
        let parsed: Vec<Message> = openai::parse_jsonl(&text).expect("the file parses");
        let window: Conversation = Conversation::from_messages(parsed.clone());
        let total = window.tokens_in(0..window.len());
        let threshold = total / 2;
        let stage = StrategyConfig::from_json(&format!(
            r#"{{"strategy":"token-budget","thresholdTokens":{threshold},"keepRecentTurns":1,"keepLastToolResults":false}}"#
        ))
        .expect("a valid configuration")
        .build_stage::<Message>()
        .expect("a buildable stage");
        let mut context = VisitContext::new(2, 0);
        context.measured = Some(Measured {
            usage: Usage {
                input: total,
                output: 1,
            },
            sent_messages: window.len(),
            iteration: 1,
        });
        // token-budget never asks for a summary, so one memory serves every timed visit.
        let mut memory = StageMemory::new();
        let VisitOutcome::Ready(plan) = stage
            .visit(&window, context, &mut memory)
            .expect("the visit succeeds")
        else {
            panic!("the visit engages without a summary");
        };
        let kept = window.len() - plan.record.removed_message_count;

        let cached = time(Duration::from_secs(2), 20, || {
            std::hint::black_box(stage.visit(&window, context, &mut memory).ok());
        });
        // Cold: count every message, then visit. The copy of the parsed messages is made
        // outside the timed region, as LangChain's side also starts from loaded messages. Each
        // run takes milliseconds, so fifteen of them keep the median steady on a busy machine.
        let cold = median(
            (0..15)
                .map(|_| {
                    let copy = parsed.clone();
                    let run = Instant::now();
                    let fresh: Conversation = Conversation::from_messages(copy);
                    std::hint::black_box(stage.visit(&fresh, context, &mut memory).ok());
                    run.elapsed()
                })
                .collect(),
        );
        // The cold path's floor on the same copies: one pass over every message's bytes (the
        // exact character count alone), timed the same way. Not shown by `cargo xtask bench
        // --compare`, which reads the fields it knows; it is on this line for the record.
        let floor = median(
            (0..15)
                .map(|_| {
                    let copy = parsed.clone();
                    let run = Instant::now();
                    let chars: u64 = copy
                        .iter()
                        .map(|message| panewise_window::char_count(&message.content))
                        .sum();
                    std::hint::black_box(chars);
                    run.elapsed()
                })
                .collect(),
        );
        println!(
            "{{\"size\":{size},\"path\":{path:?},\"totalTokens\":{total},\"threshold\":{threshold},\"kept\":{kept},\"visitCachedNs\":{},\"visitColdNs\":{},\"coldFloorNs\":{}}}",
            cached.as_nanos(),
            cold.as_nanos(),
            floor.as_nanos()
        );
    }
}
