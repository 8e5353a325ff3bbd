//! Where a request's Anthropic breakpoints go after a window edit: a pure decision shared by
//! the own loop (which renders them into the body) and the evaluation's simulated client
//! (which prices them), so both place them alike.
//!
//! A request is a list of blocks, the head first (system prompt and tools), then one block per
//! content block of the messages. Without an edit, a breakpoint after the head and one on the
//! last block are enough: each call reads the prefix the call before it wrote and writes only
//! what it appended. An edit changes a block inside that prefix; with only those two
//! breakpoints the cache read falls back to the head once the change is more than the API's
//! lookback (20 blocks) before the last block, and everything after the head is written again.
//! One more breakpoint on the last block before the first changed one puts a read candidate
//! right before the change, so the read reaches the last prefix written before it and only
//! what follows is written again.

/// The most breakpoints one Anthropic request may carry.
pub const MAX_ANTHROPIC_BREAKPOINTS: usize = 4;

/// The first block of `current` that differs from the request before it, given both as block
/// hashes in request order: the first index where they differ; when one is a prefix of the
/// other, `None` if `current` only appended (or is the same), else `Some(current.len())`
/// (blocks were taken off the end, and every block still sent is unchanged). An empty
/// `previous` (no request before) is never a change.
pub fn first_changed_block(previous: &[u64], current: &[u64]) -> Option<usize> {
    if previous.is_empty() {
        return None;
    }
    match previous.iter().zip(current).position(|(a, b)| a != b) {
        Some(index) => Some(index),
        None => (current.len() < previous.len()).then_some(current.len()),
    }
}

/// Where the own loop (and the simulated client) put Anthropic's breakpoints on a request of
/// `blocks` blocks whose first `head_blocks` are the system prompt and tools, when block
/// `first_changed` is the first that differs from the previous request: the end of the head,
/// the last block before the first changed one when it lies after the head's end and before
/// the last block, and the last block; ascending, without repeats, at most
/// [`MAX_ANTHROPIC_BREAKPOINTS`]. `first_changed` of `None` (nothing changed, or only
/// appended) gives [`anthropic_breakpoints`](super::anthropic_breakpoints)' placement.
pub fn anthropic_breakpoints_after_edit(
    blocks: usize,
    head_blocks: usize,
    first_changed: Option<usize>,
) -> Vec<usize> {
    let mut points = Vec::with_capacity(3);
    if head_blocks > 0 && head_blocks <= blocks {
        points.push(head_blocks - 1);
    }
    // A change inside the head or on the first message leaves nothing between it and the
    // head's end to read; one at or past the end leaves the last block as the place to read.
    if let Some(before) = first_changed.and_then(|changed| changed.checked_sub(1)) {
        let after_head = points.last().is_none_or(|&head_end| before > head_end);
        if after_head && before + 1 < blocks {
            points.push(before);
        }
    }
    if blocks > 0 && points.last() != Some(&(blocks - 1)) {
        points.push(blocks - 1);
    }
    points.truncate(MAX_ANTHROPIC_BREAKPOINTS);
    points
}

#[cfg(test)]
mod tests {
    use super::super::{anthropic_breakpoints, block_hash, Block, CacheRules, PromptCache};
    use super::*;

    #[test]
    fn first_changed_block_is_the_first_difference_from_the_previous_request() {
        // (previous, current, expected)
        let table: [(&[u64], &[u64], Option<usize>); 9] = [
            (&[], &[1, 2, 3], None),              // no request before
            (&[1, 2], &[1, 2], None),             // the same request again
            (&[1, 2], &[1, 2, 3, 4], None),       // appended only
            (&[1, 2, 3], &[1, 9, 3, 4], Some(1)), // a block edited
            (&[1, 2, 3], &[9, 2, 3], Some(0)),    // the head changed
            (&[1, 2, 3, 4], &[1, 4, 5], Some(1)), // a span removed
            (&[1, 2, 3], &[1, 2], Some(2)),       // taken off the end
            (&[1, 2, 3], &[], Some(0)),           // nothing sent now
            (&[1], &[2], Some(0)),
        ];
        for (row, (previous, current, want)) in table.into_iter().enumerate() {
            assert_eq!(first_changed_block(previous, current), want, "row {row}");
        }
    }

    #[test]
    fn breakpoints_after_an_edit_sit_after_the_head_before_the_change_and_on_the_last_block() {
        // (blocks, head blocks, first changed, expected)
        let table: [(usize, usize, Option<usize>, &[usize]); 14] = [
            (10, 1, None, &[0, 9]),       // no edit: head and last
            (10, 1, Some(5), &[0, 4, 9]), // the block before the change
            (10, 1, Some(2), &[0, 1, 9]), // right after the head
            (10, 1, Some(1), &[0, 9]),    // the first message changed: the head's end
            (10, 1, Some(0), &[0, 9]),    // the head changed
            (10, 1, Some(9), &[0, 8, 9]), // the last block changed
            (10, 1, Some(10), &[0, 9]),   // blocks taken off the end
            (10, 1, Some(40), &[0, 9]),   // past the end
            (10, 3, Some(5), &[2, 4, 9]), // a head of three blocks
            (10, 3, Some(3), &[2, 9]),    // the change right after it
            (10, 0, Some(5), &[4, 9]),    // no head
            (10, 0, Some(1), &[0, 9]),    // no head, the second block changed
            (1, 1, Some(0), &[0]),        // a request of its head alone
            (0, 1, Some(3), &[]),         // an empty request
        ];
        for (row, (blocks, head, changed, want)) in table.into_iter().enumerate() {
            let got = anthropic_breakpoints_after_edit(blocks, head, changed);
            assert_eq!(got, want, "row {row}");
            assert!(got.len() <= MAX_ANTHROPIC_BREAKPOINTS, "row {row}");
            assert!(got.windows(2).all(|w| w[0] < w[1]), "row {row}");
        }
    }

    #[test]
    fn without_an_edit_the_placement_is_the_old_one() {
        for blocks in 0..6 {
            for head in 0..3 {
                assert_eq!(
                    anthropic_breakpoints_after_edit(blocks, head, None),
                    anthropic_breakpoints(blocks, head),
                    "{blocks} blocks, head {head}"
                );
            }
        }
    }

    /// A head of 2,000 tokens, then `len - 1` blocks of 100, those in `masked` at 10.
    fn conversation(len: usize, masked: std::ops::Range<usize>) -> Vec<Block> {
        (0..len)
            .map(|i| {
                let mask = masked.contains(&i);
                Block {
                    hash: block_hash(&[if mask { "masked" } else { "block" }, &i.to_string()]),
                    tokens: match (i, mask) {
                        (0, _) => 2000,
                        (_, true) => 10,
                        (_, false) => 100,
                    },
                }
            })
            .collect()
    }

    /// The writes of a session under Anthropic's rules: call `c` (from 0) sends `3 + 2c`
    /// blocks, and from call 12 on masks one more old block, blocks 3 to `c - 9`: each mask
    /// is `c + 11` blocks before the last, out of the last breakpoint's 20-block lookback.
    fn writes(after_edit: bool) -> Vec<u64> {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let mut previous: Vec<u64> = Vec::new();
        let mut out = Vec::new();
        for c in 0..30usize {
            let blocks = conversation(3 + 2 * c, 3..c.saturating_sub(8).max(3));
            let hashes: Vec<u64> = blocks.iter().map(|b| b.hash).collect();
            let points = if after_edit {
                let changed = first_changed_block(&previous, &hashes);
                anthropic_breakpoints_after_edit(blocks.len(), 1, changed)
            } else {
                anthropic_breakpoints(blocks.len(), 1)
            };
            out.push(cache.call(&blocks, &points).write);
            previous = hashes;
        }
        out
    }

    #[test]
    fn a_breakpoint_before_the_change_writes_only_what_follows_the_last_prefix_written() {
        let (before, after) = (writes(false), writes(true));
        // Calls that only append write the same either way.
        assert_eq!(before[..12], after[..12]);
        for c in 12..30u64 {
            let (b, a) = (before[c as usize], after[c as usize]);
            // Without the breakpoint the read falls back to the head: everything after it is
            // written again, the `c - 11` masked blocks and the `c + 13` others.
            assert_eq!(b, (c - 11) * 10 + (c + 13) * 100, "call {c} before");
            // With it, the first mask (block 3) reads the prefix call 0 wrote (blocks 0 to 2);
            // later ones read the previous call's breakpoint, one block before this one's, and
            // write from there: two masked blocks, then the `c + 11` after the change.
            let want = if c == 12 {
                10 + 23 * 100
            } else {
                20 + (c + 11) * 100
            };
            assert_eq!(a, want, "call {c} after");
            assert!(a < b, "call {c}");
        }
    }
}
