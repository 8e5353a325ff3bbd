//! Property tests: arbitrary bytes never panic, and any split of a valid stream decodes to the
//! same events as the whole.

use panewise_providers::{decode_all, Decoded, Decoder, Provider};
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
