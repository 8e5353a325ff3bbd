//! The byte-level passes over a message's content: its exact character count, taken when the
//! message is pushed, and its span-key hash, taken only when summarize-oldest must recognise
//! a span it was refused for. A cold start pays the count for the whole conversation at once,
//! so both work on 64-byte blocks that the compiler turns into vector or overlapping multiply
//! code instead of walking the text character by character.
//!
//! Every hash here has a fixed seed: the same input hashes the same in every run and process,
//! so map iteration order and latch keys never depend on the OS.

use crate::message::Role;

/// The block both passes work on: four 16-byte vector registers, or one cache line.
const BLOCK: usize = 64;

/// Adds one block's character starts to the per-lane counters; this loop is what LLVM
/// vectorises.
///
/// The additions wrap explicitly: a counter takes at most 255 blocks before [`char_count`]
/// sums it (it cannot overflow), and a checked addition per byte would keep the loop from
/// being vectorised in a build with overflow checks on.
#[inline(always)]
fn count_block(lanes: &mut [u8; BLOCK], block: &[u8; BLOCK]) {
    for (lane, byte) in lanes.iter_mut().zip(block) {
        *lane = lane.wrapping_add(u8::from(starts_char(*byte)));
    }
}

/// Adds up 64 byte counters eight at a time: bytes are paired into 16-bit sums inside a word
/// (at most 8 × 510, no overflow), then one multiplication adds the four 16-bit sums.
#[inline(always)]
fn sum_lanes(lanes: &[u8; BLOCK]) -> u64 {
    const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;
    let mut pairs: u64 = 0;
    for word in lanes.chunks_exact(8) {
        let word = read_word(word);
        // At most 8 × 510 per 16-bit field: neither addition can carry out of its field.
        pairs = pairs.wrapping_add((word & LOW_BYTES).wrapping_add((word >> 8) & LOW_BYTES));
    }
    pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48
}

/// True for a byte that begins a character: anything but a continuation byte.
#[inline(always)]
fn starts_char(byte: u8) -> bool {
    // Continuation bytes are 0x80..=0xBF, which are exactly the i8 values below -64.
    (byte as i8) >= -64
}

const SECRET: [u64; 5] = [
    0xa076_1d64_78bd_642f,
    0xe703_7ed1_a0b4_28db,
    0x8ebc_6af0_9c88_c6e3,
    0x5899_65cc_7537_4cc3,
    0x1d8e_4e27_c47d_124f,
];

/// Multiplies to 128 bits and folds the halves together: one multiplication mixes 16 bytes.
#[inline(always)]
const fn fold(a: u64, b: u64) -> u64 {
    // Two 64-bit factors never overflow 128 bits; the wrapping form says so, and keeps an
    // overflow check out of every round of the hash.
    let product = (a as u128).wrapping_mul(b as u128);
    (product as u64) ^ ((product >> 64) as u64)
}

#[inline(always)]
fn word(block: &[u8; BLOCK], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&block[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// Mixes one 64-byte block into four independent lanes, so the multiplications overlap
/// instead of waiting on each other.
#[inline(always)]
fn mix_block(lanes: &mut [u64; 4], block: &[u8; BLOCK]) {
    for (index, lane) in lanes.iter_mut().enumerate() {
        let at = index * 16;
        *lane = fold(
            word(block, at) ^ SECRET[index + 1],
            word(block, at + 8) ^ *lane,
        );
    }
}

/// The fixed seed of [`key_hash`], before it is folded.
const KEYED_SEED: u64 = 0x243f_6a88_85a3_08d3;

/// The seed of [`key_hash`], folded once at compile time.
const KEY_SEED: u64 = fold(KEYED_SEED ^ SECRET[0], SECRET[4]);

/// The hash of a [`DenseMap`](crate::dense::DenseMap) key (a call id, tool name or stage id):
/// a folded multiply over the key's bytes, inlined, so a key of up to 16 bytes costs one fold
/// and one of up to 32 (the APIs' call ids) two; it costs a fraction of the standard SipHash.
/// The seed is fixed, so two runs of the same visit build the same maps; the price is that
/// someone who knows the seed could write colliding call ids, which slows those maps down but
/// never changes a decision.
#[inline(always)]
pub(crate) fn key_hash(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    // A key's length in bytes fits 64 bits on every target Rust supports.
    let len_word = len as u64;
    if len < 8 {
        // The length keeps "a" and "a\0" apart.
        return fold(short_word(bytes) ^ SECRET[2], KEY_SEED ^ len_word);
    }
    if len <= 16 {
        // The first and the last eight bytes, overlapping when shorter than sixteen.
        return fold(
            word8(bytes) ^ SECRET[2],
            word8(&bytes[len - 8..]) ^ KEY_SEED ^ len_word,
        );
    }
    if len <= 32 {
        // The first and the last sixteen bytes, overlapping when shorter than thirty-two.
        let head = fold(word8(bytes) ^ SECRET[1], word8(&bytes[8..]) ^ KEY_SEED);
        return fold(
            word8(&bytes[len - 16..]) ^ SECRET[2],
            word8(&bytes[len - 8..]) ^ head ^ len_word,
        );
    }
    let mut state = KEY_SEED;
    let mut pairs = bytes.chunks_exact(16);
    for pair in &mut pairs {
        state = fold(word8(&pair[..8]) ^ SECRET[1], word8(&pair[8..]) ^ state);
    }
    // The last sixteen bytes, overlapping the pairs already read (a key here is longer than
    // thirty-two bytes); the length tells apart keys that differ only by where they end.
    fold(
        word8(&bytes[len - 16..]) ^ SECRET[2],
        word8(&bytes[len - 8..]) ^ state ^ len_word,
    )
}

/// The first eight bytes of `bytes`, which holds at least eight, as a little-endian word: one
/// load, where [`read_word`]'s zero padding would copy through a buffer.
#[inline(always)]
fn word8(bytes: &[u8]) -> u64 {
    u64::from_le_bytes([
        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
    ])
}

/// A key of fewer than eight bytes as a word, without a copy through a padded buffer: two
/// overlapping four-byte reads, or the first, middle and last byte of a shorter one (the
/// length, which the caller mixes in, tells the short ones apart).
#[inline(always)]
pub(crate) fn short_word(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    if len >= 4 {
        let first = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let last = u32::from_le_bytes([
            bytes[len - 4],
            bytes[len - 3],
            bytes[len - 2],
            bytes[len - 1],
        ]);
        u64::from(first) | (u64::from(last) << 32)
    } else if len > 0 {
        u64::from(bytes[0]) | (u64::from(bytes[len / 2]) << 8) | (u64::from(bytes[len - 1]) << 16)
    } else {
        0
    }
}

/// The first eight bytes of `bytes` as a little-endian word, zero-padded when shorter.
#[inline(always)]
fn read_word(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let len = bytes.len().min(8);
    word[..len].copy_from_slice(&bytes[..len]);
    u64::from_le_bytes(word)
}

/// The exact number of `char`s in `text`, equal to `text.chars().count()`: the character
/// count a [`Conversation`](crate::Conversation) caches for every message it is given.
///
/// In valid UTF-8 every character has exactly one byte that is not a continuation byte
/// (`0b10xx_xxxx`), so counting those bytes counts characters without decoding them. It reads
/// every byte once, which makes it the floor of building a conversation from loaded messages
/// (the cold-path bench measures one against the other).
pub fn char_count(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut total: u64 = 0;
    // Per-lane byte counters take up to 255 blocks before they could overflow, so their
    // horizontal sum runs once per 16 KB (once per typical message), not once per block.
    for stretch in bytes.chunks(BLOCK * 255) {
        let mut counters = [0u8; BLOCK];
        let mut blocks = stretch.chunks_exact(BLOCK);
        for block in &mut blocks {
            if let Ok(block) = <&[u8; BLOCK]>::try_from(block) {
                count_block(&mut counters, block);
            }
        }
        let rest = blocks.remainder();
        if !rest.is_empty() {
            // The tail is padded with continuation bytes, which count nothing, so it takes the
            // same vector path. A stretch with a tail holds at most 254 whole blocks, so the
            // counters still cannot overflow.
            let mut padded = [0x80u8; BLOCK];
            padded[..rest.len()].copy_from_slice(rest);
            count_block(&mut counters, &padded);
        }
        // The total is at most the text's length in bytes, so it cannot overflow.
        total = total.wrapping_add(sum_lanes(&counters));
    }
    total
}

/// A fast 64-bit hash of a message's role and content (a folded-multiply hash in the style of
/// wyhash, 64 bytes per round). It is the message's part of the summarize-oldest latch key and
/// is never published; FNV-1a over UTF-16 units (W5) is kept for the fingerprints the records
/// publish.
pub(crate) fn content_hash(role: Role, content: &str) -> u64 {
    let bytes = content.as_bytes();
    let seed = fold(
        (role as u64).wrapping_add(1) ^ SECRET[0],
        (bytes.len() as u64) ^ SECRET[4],
    );
    let mut lanes = [seed, seed ^ SECRET[1], seed ^ SECRET[2], seed ^ SECRET[3]];
    let mut blocks = bytes.chunks_exact(BLOCK);
    for block in &mut blocks {
        if let Ok(block) = <&[u8; BLOCK]>::try_from(block) {
            mix_block(&mut lanes, block);
        }
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // The tail is zero-padded to a whole block; the length in the seed keeps "a" and
        // "a\0" apart.
        let mut padded = [0u8; BLOCK];
        padded[..rest.len()].copy_from_slice(rest);
        mix_block(&mut lanes, &padded);
    }
    let [a, b, c, d] = lanes;
    fold(
        fold(a ^ SECRET[1], b ^ SECRET[2]) ^ SECRET[4],
        fold(c ^ SECRET[3], d ^ seed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(role: Role, text: &str) -> u64 {
        content_hash(role, text)
    }

    #[test]
    fn chars_equal_chars_count() {
        let samples = [
            String::new(),
            "a".to_string(),
            "héllo wörld, ünïcode ✓ 🚀".repeat(7),
            "x".repeat(BLOCK * 255 * 2 + 17),
            "x".repeat(BLOCK * 255),
            "ж".repeat(BLOCK * 300 + 3),
            "🚀".repeat(5000),
        ];
        for sample in &samples {
            assert_eq!(char_count(sample), sample.chars().count() as u64);
        }
    }

    #[test]
    fn hash_separates_role_content_and_padding() {
        let text = "fn parse(input: &str) -> Result<Module, ParseError> {".repeat(3);
        let base = hash(Role::Tool, &text);
        assert_eq!(base, hash(Role::Tool, &text));
        assert_ne!(base, hash(Role::User, &text));
        assert_ne!(hash(Role::User, "a"), hash(Role::User, "a\0"));
        assert_ne!(hash(Role::User, ""), hash(Role::User, "\0"));
        let mut changed = text.clone().into_bytes();
        for at in [0, 63, 64, 100, changed.len() - 1] {
            changed[at] ^= 1;
            let changed_text = String::from_utf8(changed.clone()).unwrap_or_default();
            assert_ne!(base, hash(Role::Tool, &changed_text));
            changed[at] ^= 1;
        }
    }

    #[test]
    fn hash_depends_on_block_order() {
        let first = "a".repeat(BLOCK);
        let second = "b".repeat(BLOCK);
        assert_ne!(
            hash(Role::Tool, &format!("{first}{second}")),
            hash(Role::Tool, &format!("{second}{first}"))
        );
    }

    #[test]
    fn key_hash_has_a_fixed_seed() {
        // Two conversations (or two runs) must build their maps with the same hashes, so the
        // value is pinned: a seed drawn from the OS would change it.
        assert_eq!(key_hash(b"call_1"), key_hash(b"call_1"));
        assert_eq!(KEY_SEED, fold(KEYED_SEED ^ SECRET[0], SECRET[4]));
    }

    #[test]
    fn key_hash_tells_call_ids_apart() {
        let ids = [
            "call_1",
            "call_10",
            "call_01",
            "",
            "\0",
            "call_1\0",
            "call_0123456789ab",
            "call_0123456789ac",
            "toolu_01ABCDEFGHIJKLMNOPQRSTUVWX",
            "toolu_01ABCDEFGHIJKLMNOPQRSTUVWY",
            "a_much_longer_call_id_0123456789",
            "a_much_longer_call_id_0123456789_and_longer_still",
            "a_much_longer_call_id_0123456789_and_longer_stilm",
        ];
        let hashes: Vec<u64> = ids.iter().map(|id| key_hash(id.as_bytes())).collect();
        for (i, a) in hashes.iter().enumerate() {
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
