//! Decoder throughput on large generated Claude Code streams (issue 4):
//! `cargo bench -p panewise-benches --bench decode`.
//!
//! Targets on one core: at least 0.5 GB/s for ~2 KB lines and at least 1.5 million lines/s for
//! ~270-byte `stream_event` lines. Results are recorded in `docs/BENCHMARKS.md`.
// `criterion_main!` generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use panewise_benches::decode::{claude_large_lines, claude_stream_event_lines, mean_line_bytes};
use panewise_providers::{Decoded, Decoder, Provider};

/// Bytes fed per call, as a pipe would deliver them.
const CHUNK_BYTES: usize = 64 * 1024;

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

fn large_lines(c: &mut Criterion) {
    let stream = claude_large_lines(20_000);
    let lines = 20_000;
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

/// The floor a serde_json-based decoder cannot beat: validate every line as a borrowed `RawValue`.
fn skip_only(stream: &[u8]) -> usize {
    stream
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .filter(|line| serde_json::from_slice::<&serde_json::value::RawValue>(line).is_ok())
        .count()
}

fn stream_event_lines(c: &mut Criterion) {
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

criterion_group!(benches, large_lines, stream_event_lines);
criterion_main!(benches);
