//! `reducer_fold`: folding a realistic session log through the pane reducer.
//!
//! - `reducer_fold/100k`: a 100,000-message log folded from a fresh state.
//! - `reducer_history/{1k,100k}`: the same 10,000 messages folded on top of 1k or 100k messages
//!   of history, to show the per-message cost does not grow with the session.
// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use panewise_benches::reducer::realistic_log;
use panewise_pane_state::log::{fold_entries, fold_messages, LogEntry};
use panewise_pane_state::State;

fn fold_owned(state: State, entries: Vec<LogEntry>) -> State {
    fold_messages(state, entries.into_iter().map(|e| (e.ts, e.msg)))
}

fn reducer_fold(c: &mut Criterion) {
    let log = realistic_log(100_000);
    let mut group = c.benchmark_group("reducer_fold");
    group.throughput(Throughput::Elements(log.len() as u64));
    group.bench_function("100k", |b| {
        b.iter_batched(
            || log.clone(),
            |entries| fold_owned(State::new("bench"), entries),
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

fn reducer_history(c: &mut Criterion) {
    let tail_len = 10_000;
    let mut group = c.benchmark_group("reducer_history");
    group.throughput(Throughput::Elements(tail_len as u64));
    for (label, history_len) in [("1k", 1_000usize), ("100k", 100_000)] {
        let log = realistic_log(history_len + tail_len);
        let (history, tail) = log.split_at(history_len);
        let warmed = fold_entries(State::new("bench"), history);
        group.bench_function(label, |b| {
            b.iter_batched(
                || (warmed.clone(), tail.to_vec()),
                |(state, entries)| fold_owned(state, entries),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, reducer_fold, reducer_history);
criterion_main!(benches);
