//! The Rust side of `cargo xtask bench --compare`: writes the generated conversation as JSON
//! Lines (the file LangChain reads too) and times a token-budget visit over it.
//!
//! Usage: `window_compare OUT_DIR SIZE...`. For each size it writes
//! `OUT_DIR/conversation-SIZE.jsonl` and prints one JSON line: the size, the threshold (half
//! the counted tokens), the median visit time with counts cached, the median time of a cold
//! visit that first builds the conversation (counting every message) from the parsed file, and
//! that cold path's floor (one pass over every message's bytes), each measured on the messages
//! alone and on the reader's messages with their chat-completions objects kept.
#![allow(clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use panewise_benches::window::{conversation, to_jsonl};
use panewise_window::{
    openai, Conversation, Measured, Message, StageMemory, StrategyConfig, Usage, VisitContext,
    VisitOutcome, WindowStage,
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

/// The median cold visit (build the conversation from a fresh copy of `messages`, then visit)
/// and the median floor (the exact character count of a fresh copy), fifteen runs each,
/// alternated so both see the same moments of the machine. Each run takes milliseconds, so
/// fifteen keep the medians steady on a busy machine.
fn cold_and_floor(
    messages: &[Message],
    stage: &WindowStage<Message>,
    context: VisitContext<'_>,
    memory: &mut StageMemory,
) -> (Duration, Duration) {
    let mut cold = Vec::new();
    let mut floor = Vec::new();
    for _ in 0..15 {
        let copy = messages.to_vec();
        let run = Instant::now();
        let fresh: Conversation = Conversation::from_messages(copy);
        std::hint::black_box(stage.visit(&fresh, context, memory).ok());
        cold.push(run.elapsed());
        drop(fresh);
        let copy = messages.to_vec();
        let run = Instant::now();
        let chars: u64 = copy
            .iter()
            .map(|message| panewise_window::char_count(&message.content))
            .sum();
        std::hint::black_box(chars);
        floor.push(run.elapsed());
    }
    (median(cold), median(floor))
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
        // Cold: count every message, then visit, from loaded messages, as LangChain's side
        // starts from its loaded message objects (which keep the text, not the parsed JSON
        // objects). The reader keeps each message's chat-completions object too
        // (`Message::original`, for `panewise window`'s lossless write-back); the stage never
        // reads it, but a copy that holds it scatters the texts between twice their bytes, so
        // the cold path is timed both ways: `visitColdNs` on the messages alone, and
        // `visitColdOriginalsNs` on the reader's messages as they are. Each against its floor:
        // one pass over every message's bytes (the exact character count alone) on copies
        // made the same way. The copies are made outside the timed region.
        let stripped: Vec<Message> = parsed
            .iter()
            .map(|message| Message {
                original: None,
                ..message.clone()
            })
            .collect();
        let (cold, floor) = cold_and_floor(&stripped, &stage, context, &mut memory);
        let (cold_originals, floor_originals) =
            cold_and_floor(&parsed, &stage, context, &mut memory);
        println!(
            "{{\"size\":{size},\"path\":{path:?},\"totalTokens\":{total},\"threshold\":{threshold},\"kept\":{kept},\"visitCachedNs\":{},\"visitColdNs\":{},\"coldFloorNs\":{},\"visitColdOriginalsNs\":{},\"coldFloorOriginalsNs\":{}}}",
            cached.as_nanos(),
            cold.as_nanos(),
            floor.as_nanos(),
            cold_originals.as_nanos(),
            floor_originals.as_nanos()
        );
    }
}
