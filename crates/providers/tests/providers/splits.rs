//! Property tests: arbitrary bytes never panic, and any split of a valid stream decodes to the
//! same events as the whole.

use panewise_providers::{
    decode_all, Decoded, Decoder, LiveFold, Mapper, ModelTable, Provider, ProviderEvent,
};
use proptest::prelude::*;

use crate::{fixture, fixtures};

fn decode_in_pieces(provider: Provider, bytes: &[u8], cuts: &[usize]) -> Vec<Decoded> {
    let mut decoder = Decoder::new(provider);
    let mut out = Vec::new();
    let mut start = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for cut in cuts {
        decoder.feed(&bytes[start..cut], &mut out);
        start = cut;
    }
    decoder.feed(&bytes[start..], &mut out);
    decoder.finish(&mut out);
    out
}

fn provider_strategy() -> impl Strategy<Value = Provider> {
    prop::sample::select(Provider::ALL.to_vec())
}

#[test]
fn every_single_split_point_of_every_fixture_gives_the_whole_stream_events() {
    for (provider, path) in fixtures() {
        let bytes = fixture(&path);
        let (whole, _) = decode_all(provider, &bytes);
        for cut in 0..=bytes.len() {
            let pieces = decode_in_pieces(provider, &bytes, &[cut]);
            assert!(pieces == whole, "{path}: split at byte {cut} differs");
        }
    }
}

#[test]
fn byte_at_a_time_feeding_gives_the_whole_stream_events() {
    for (provider, path) in fixtures() {
        let bytes = fixture(&path);
        let (whole, _) = decode_all(provider, &bytes);
        let mut decoder = Decoder::new(provider);
        let mut out = Vec::new();
        for byte in &bytes {
            decoder.feed(std::slice::from_ref(byte), &mut out);
        }
        decoder.finish(&mut out);
        assert!(out == whole, "{path}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(provider in provider_strategy(), bytes in prop::collection::vec(any::<u8>(), 0..2048), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let whole = decode_all(provider, &bytes).0;
        let pieces = decode_in_pieces(provider, &bytes, &cuts);
        prop_assert_eq!(pieces, whole);
    }

    #[test]
    fn json_shaped_noise_splits_anywhere_to_the_same_events(provider in provider_strategy(), lines in prop::collection::vec("\\{\"type\":\"(system|assistant|user|result|stream_event|item\\.completed|turn\\.completed|init|message|tool_use|result)\"(,\"[a-z_]{1,12}\":(null|1|\"x\"|\\[\\]|\\{\\}|true))*\\}", 0..16), cuts in prop::collection::vec(any::<usize>(), 1..8)) {
        let stream = lines.join("\n");
        let whole = decode_all(provider, stream.as_bytes()).0;
        prop_assert_eq!(decode_in_pieces(provider, stream.as_bytes(), &cuts), whole);
    }

    #[test]
    fn arbitrary_splits_of_real_streams_give_the_same_events(index in 0..fixtures().len(), cuts in prop::collection::vec(any::<usize>(), 1..24)) {
        let (provider, path) = fixtures()[index].clone();
        let bytes = fixture(&path);
        let whole = decode_all(provider, &bytes).0;
        prop_assert_eq!(decode_in_pieces(provider, &bytes, &cuts), whole);
    }

    #[test]
    fn corrupting_one_byte_of_a_real_stream_never_panics(index in 0..fixtures().len(), position in any::<usize>(), byte in any::<u8>()) {
        let (provider, path) = fixtures()[index].clone();
        let mut bytes = fixture(&path);
        let position = position % bytes.len();
        bytes[position] = byte;
        // Corrupted or not, the stream splits anywhere to the same events as read whole.
        let whole = decode_all(provider, &bytes).0;
        prop_assert_eq!(decode_in_pieces(provider, &bytes, &[position, position + 1]), whole);
    }
}

/// A Claude Code tool call whose command is `len` bytes long, on one line.
fn long_tool_call(len: usize) -> Vec<u8> {
    let command = "y".repeat(len);
    let line = serde_json::json!({
        "type": "assistant",
        "message": {
            "id": "msg_long", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": "toolu_long", "name": "Bash",
                         "input": {"command": command}}],
        },
        "session_id": "s",
    });
    let mut bytes = serde_json::to_vec(&line).unwrap();
    bytes.push(b'\n');
    bytes
}

#[test]
fn a_long_line_split_in_many_chunks_decodes_whole_and_folds_to_the_chip_argument() {
    const COMMAND_BYTES: usize = 3 * 1024 * 1024;
    let bytes = long_tool_call(COMMAND_BYTES);
    // Chunk sizes from a pipe's to a file read's, and one that is not a power of two.
    for chunk in [4096, 65_536, 1_000_003] {
        let mut decoder = Decoder::new(Provider::ClaudeCode);
        let mut out = Vec::new();
        for piece in bytes.chunks(chunk) {
            decoder.feed(piece, &mut out);
        }
        decoder.finish(&mut out);
        assert_eq!(decoder.counts().decode_errors, 0, "chunk {chunk}");
        let started: Vec<_> = out
            .iter()
            .filter_map(|item| match item {
                Ok(ProviderEvent::ToolStarted {
                    name, arg, input, ..
                }) => Some((name.clone(), arg.clone(), input.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(started.len(), 1, "chunk {chunk}");
        let (name, arg, input) = &started[0];
        assert_eq!(name, "Bash");
        assert_eq!(arg.as_deref().map(str::len), Some(COMMAND_BYTES));
        let command = input.as_ref().and_then(|input| input["command"].as_str());
        assert_eq!(command.map(str::len), Some(COMMAND_BYTES), "chunk {chunk}");

        // The fold keeps the argument only as the status chip shows it.
        let mut live = LiveFold::new(
            Mapper::new(Provider::ClaudeCode, ModelTable::built_in()),
            false,
        );
        for event in out.iter().flatten() {
            live.push(event);
        }
        let kept = live.state().current_tool_arg.clone().unwrap_or_default();
        assert_eq!(kept, format!("{}…", "y".repeat(160)), "chunk {chunk}");
    }
}
