//! Decoder throughput on large generated Claude Code streams (issue 4):
//! `cargo bench -p panewise-benches --bench decode`.
//!
//! Targets on one core: at least 0.5 GB/s for ~2 KB lines and at least 1.5 million lines/s for
//! ~270-byte `stream_event` lines. Results are recorded in `docs/BENCHMARKS.md`.
//!
//! Time is the benchmark thread's own CPU time (from `/proc/thread-self/schedstat`), not wall
//! time: "on one core" is a statement about CPU time, and on a shared machine wall time also
//! counts the time other processes held the core. Where that file is missing, wall time is used.
// `criterion_main!` generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

use std::time::Instant;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use panewise_benches::decode::{
    claude_large_lines, claude_long_first_line, claude_stream_event_lines, mean_line_bytes,
};
use panewise_providers::{Decoded, Decoder, Provider, Sniffer};

/// Bytes fed per call, as a pipe would deliver them.
const CHUNK_BYTES: usize = 64 * 1024;

/// CPU time of the calling thread in nanoseconds, or wall time where the kernel does not say.
struct ThreadCpuTime {
    wall: WallTime,
    origin: Instant,
}

impl ThreadCpuTime {
    fn new() -> Self {
        ThreadCpuTime {
            wall: WallTime,
            origin: Instant::now(),
        }
    }

    fn now_ns(&self) -> u64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| self.origin.elapsed().as_nanos() as u64)
    }
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        self.now_ns()
    }

    fn end(&self, start: u64) -> u64 {
        self.now_ns().saturating_sub(start)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        // Values are nanoseconds, as wall time's are, so its formatter applies.
        self.wall.formatter()
    }
}

/// Decodes `stream` in pipe-sized chunks and returns how many items came out.
fn decode(stream: &[u8], out: &mut Vec<Decoded>) -> usize {
    let mut decoder = Decoder::new(Provider::ClaudeCode);
    let mut produced = 0;
    for chunk in stream.chunks(CHUNK_BYTES) {
        decoder.feed(chunk, out);
        produced += out.len();
        out.clear();
    }
    decoder.finish(out);
    produced + out.len()
}

/// The floor a serde_json-based decoder cannot beat: validate every line as a borrowed
/// `RawValue`.
fn skip_only(stream: &[u8]) -> usize {
    stream
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .filter(|line| serde_json::from_slice::<&serde_json::value::RawValue>(line).is_ok())
        .count()
}

fn large_lines(c: &mut Criterion<ThreadCpuTime>) {
    let lines = 20_000;
    let stream = claude_large_lines(lines);
    let mut group = c.benchmark_group("decode_claude_2kb_lines");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    let mut out = Vec::new();
    group.bench_function(
        format!("{lines}_lines_of_{}_bytes", mean_line_bytes(&stream)),
        |b| b.iter(|| black_box(decode(black_box(&stream), &mut out))),
    );
    group.bench_function("serde_json_skip_only_reference", |b| {
        b.iter(|| black_box(skip_only(black_box(&stream))))
    });
    group.finish();
}

fn stream_event_lines(c: &mut Criterion<ThreadCpuTime>) {
    let lines = 200_000;
    let stream = claude_stream_event_lines(lines);
    let mut group = c.benchmark_group("decode_claude_stream_event_lines");
    group.throughput(Throughput::Elements(lines as u64));
    let mut out = Vec::new();
    group.bench_function(
        format!("{lines}_lines_of_{}_bytes", mean_line_bytes(&stream)),
        |b| b.iter(|| black_box(decode(black_box(&stream), &mut out))),
    );
    group.bench_function("serde_json_skip_only_reference", |b| {
        b.iter(|| black_box(skip_only(black_box(&stream))))
    });
    group.finish();
}

/// What `panewise decode` does with a stream it must tell the CLI of: the head through the
/// `Sniffer` in pipe-sized chunks until a line names the CLI, then the decoder. Linear in the
/// line: the time per byte of an 8 MiB first line is that of a 1 MiB one.
fn sniff_and_decode(stream: &[u8], out: &mut Vec<Decoded>) -> usize {
    let mut chunks = stream.chunks(CHUNK_BYTES);
    let mut sniffer = Sniffer::new(false);
    while sniffer.wants_more() {
        match chunks.next() {
            Some(chunk) => sniffer.push(chunk),
            None => sniffer.finish(),
        }
    }
    let (found, head) = sniffer.into_parts();
    let mut decoder = Decoder::new(found.unwrap_or(Provider::ClaudeCode));
    decoder.feed(&head, out);
    for chunk in chunks {
        decoder.feed(chunk, out);
    }
    decoder.finish(out);
    let produced = out.len();
    out.clear();
    produced
}

fn long_first_line(c: &mut Criterion<ThreadCpuTime>) {
    let mut group = c.benchmark_group("decode_long_first_line");
    group.sample_size(10);
    let mut out = Vec::new();
    for mib in [1, 8] {
        let stream = claude_long_first_line(mib * 1024 * 1024);
        group.throughput(Throughput::Bytes(stream.len() as u64));
        group.bench_function(format!("{mib}_mib_sniffed_then_decoded"), |b| {
            b.iter(|| black_box(sniff_and_decode(black_box(&stream), &mut out)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime::new());
    targets = large_lines, stream_event_lines, long_first_line
}
criterion_main!(benches);
