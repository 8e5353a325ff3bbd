//! The window stage's cold path against its floor, measured in pairs: each run builds the
//! conversation from a fresh copy of the bench's messages (`Conversation::from_messages`, as
//! `window_cold/from_messages` does), then takes the floor on another fresh copy (the exact
//! character count of every message alone, as `window_cold/floor_char_count` does), so both
//! halves of a pair see the machine within milliseconds of each other. It prints the median
//! of each and the median of the per-pair ratios, which holds steadier on a shared machine
//! than two criterion groups measured seconds apart, and the minor page faults per run of
//! each half (read from `/proc/self/stat`, Linux only; `-` elsewhere).
//!
//! Usage: `cargo run --release -p panewise-benches --example window_cold_pairs -- [SIZE [RUNS]]`
//! (defaults 10000 and 60). The copies are made and dropped outside the timed regions.
#![allow(clippy::expect_used, missing_docs)]

use std::time::Instant;

use panewise_benches::window::conversation;
use panewise_window::{char_count, Conversation, Message};

/// Minor page faults of this process so far, when the OS says.
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.get(stat.rfind(')')? + 2..)?;
    after_name.split(' ').nth(7)?.parse().ok()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().map_or(10_000, |s| s.parse().expect("a size"));
    let runs: usize = args.next().map_or(60, |s| s.parse().expect("a run count"));
    let messages = conversation(size, 42);
    let (mut cold, mut floor, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cold_faults, mut floor_faults) = (Some(0u64), Some(0u64));
    for _ in 0..runs.max(1) {
        let copy = messages.clone();
        let before = minor_faults();
        let started = Instant::now();
        let built: Conversation<Message> = Conversation::from_messages(copy);
        let cold_ns = started.elapsed().as_nanos() as f64;
        cold_faults = cold_faults
            .zip(before.zip(minor_faults()))
            .map(|(sum, (b, a))| sum + a.saturating_sub(b));
        drop(std::hint::black_box(built));

        let copy = messages.clone();
        let before = minor_faults();
        let started = Instant::now();
        let chars: u64 = copy
            .iter()
            .map(|message| char_count(&message.content))
            .sum();
        let floor_ns = started.elapsed().as_nanos() as f64;
        floor_faults = floor_faults
            .zip(before.zip(minor_faults()))
            .map(|(sum, (b, a))| sum + a.saturating_sub(b));
        std::hint::black_box(chars);
        drop(copy);

        cold.push(cold_ns);
        floor.push(floor_ns);
        ratio.push(cold_ns / floor_ns);
    }
    let per_run = |faults: Option<u64>| {
        faults.map_or("-".to_string(), |f| (f / runs.max(1) as u64).to_string())
    };
    println!(
        "size {size}: cold {:.0} µs, floor {:.0} µs, cold/floor (median of {} pairs) {:.2}; minor faults per run: cold {}, floor {}",
        median(&mut cold) / 1e3,
        median(&mut floor) / 1e3,
        runs.max(1),
        median(&mut ratio),
        per_run(cold_faults),
        per_run(floor_faults),
    );
}
