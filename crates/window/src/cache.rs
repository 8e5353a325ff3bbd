//! The prompt cache's arithmetic, per provider, as pure data: which prefix of a request the
//! provider serves from its cache, which part it writes to it, and which part it bills in full.
//!
//! A request is a list of [`Block`]s (the system prompt and tools as one head block, then one
//! block per message), each with a content hash and a token count. A [`PromptCache`] keeps the
//! prefixes the provider would hold, and [`PromptCache::call`] answers one request with a
//! [`CallCache`]. Entries never expire here (a caller that knows the calls' times may clear the
//! cache itself).
//!
//! ## Prefix hashes
//! The cache holds the hashes of whole prefixes, never of single blocks. The prefix ending at
//! block `i` hashes as a chain, `h_0 = mix(SEED, blocks[0].hash)` and
//! `h_i = mix(h_{i-1}, blocks[i].hash)`, where `mix` is a fixed-constant 64-bit mixer
//! (splitmix64's finalizer): the same on every machine, nothing seeded from the OS. A block
//! edited at `k` therefore changes the hash of every prefix ending at or after `k`, and leaves
//! those ending before `k` as they were. Two different prefixes that collide in 64 bits would
//! be taken for one; that is not modelled further.
//!
//! ## Anthropic (explicit breakpoints)
//! - `breakpoints` are block indices. Indices past the request's last block are dropped, the
//!   rest sorted and deduplicated, and only the first (lowest) `max_breakpoints` kept; the
//!   extras are ignored (the real API refuses such a request instead).
//! - A prefix shorter than `min_tokens` is neither read nor written.
//! - Read: the candidate positions are every `j` with `b - lookback_blocks <= j <= b`
//!   (clamped at 0) for some kept breakpoint `b`. The read ends at the largest candidate `j`
//!   whose prefix is in the cache and at least `min_tokens` long; `read` is the tokens of
//!   `blocks[0..=j]`, 0 when there is no such `j`. The prefix read stays cached; refreshing
//!   its time to live is not modelled.
//! - Write: every kept breakpoint `b` after the read's end (every one when nothing was read)
//!   whose prefix is at least `min_tokens` long is written (its prefix hash inserted). `write`
//!   is the tokens from the read's end to the end of the last breakpoint written,
//!   `blocks[j+1..=b]`, so no token is billed twice; 0 when none is written. A breakpoint at
//!   or before the read's end is not written again, even if its own prefix is not cached.
//! - `break_at` is `Some(j + 1)` (`Some(0)` when nothing was read), `None` when `j` is the
//!   last block.
//!
//! ## OpenAI and Gemini (implicit prefixes)
//! - Every request writes all of its prefixes, for free (`write` is always 0), after it has
//!   been answered.
//! - Read: the longest prefix `blocks[0..=j]` already in the cache, `L` tokens long. When
//!   there is none, or `L < min_tokens`, `read` is 0; otherwise it is rounded down to the
//!   increment: `min_tokens + floor((L - min_tokens) / increment) × increment` (an increment
//!   of 0 counts as 1). OpenAI: 1,500 shared tokens read as 1,408; Gemini (increment 1): 1,500.
//! - `break_at` is the first block not wholly inside the read tokens: the first `i` whose
//!   prefix `blocks[0..=i]` ends past `read`, or `j + 1` if that comes first; `Some(0)` when
//!   nothing was read, `None` when every block was.
//!
//! ## None
//! Nothing is cached: `read` and `write` are 0, `break_at` is `Some(0)`.
//!
//! ## Everywhere
//! `uncached = total - read - write`, so `read + write + uncached` is the request's tokens.
//! All token arithmetic saturates at `u64::MAX` (a request that large is not meaningful). An
//! empty request is all zeros with `break_at` `None`, and changes nothing in the cache.
//! [`CallCache::cost`] prices the split, in US dollars from prices per million tokens.
//! Not modelled: expiry and eviction, a provider's routing of requests to machines that do not
//! share a cache, and per-model minimums (set `min_tokens` to the model's).

use std::collections::BTreeSet;

mod breakpoints;

pub use breakpoints::{
    anthropic_breakpoints_after_edit, first_changed_block, MAX_ANTHROPIC_BREAKPOINTS,
};

use serde::{Deserialize, Serialize};

/// One block of a request: a content hash and its size in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Block {
    /// A hash of the block's content ([`block_hash`]).
    pub hash: u64,
    /// Its size in tokens.
    pub tokens: u64,
}

/// Anthropic's explicit caching: prefixes are written at breakpoints; a read is found at a
/// breakpoint or at a block boundary up to `lookback_blocks` before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnthropicRules {
    /// The smallest prefix that is cached at all (1,024 tokens on most models).
    pub min_tokens: u64,
    /// How many block boundaries before a breakpoint are checked for a hit (20).
    pub lookback_blocks: usize,
    /// The most breakpoints one request may carry (4).
    pub max_breakpoints: usize,
}

/// Implicit prefix caching (OpenAI, Gemini): the longest prefix some earlier request shared is
/// read, once it reaches `min_tokens`, counted down to `min_tokens + k × increment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrefixRules {
    /// The smallest cached prefix (1,024 tokens).
    pub min_tokens: u64,
    /// The granularity above the minimum (OpenAI 128; 1 when none).
    pub increment: u64,
}

/// Which provider's rules the cache follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "rules", rename_all = "lowercase")]
pub enum CacheRules {
    /// Anthropic's breakpoints.
    Anthropic(AnthropicRules),
    /// OpenAI's automatic prefix cache.
    OpenAi(PrefixRules),
    /// Gemini's implicit cache.
    Gemini(PrefixRules),
    /// No cache: every input token is billed in full.
    None,
}

impl CacheRules {
    /// Anthropic's documented defaults: 1,024-token minimum, 20-block lookback, 4 breakpoints.
    pub fn anthropic() -> Self {
        Self::Anthropic(AnthropicRules {
            min_tokens: 1024,
            lookback_blocks: 20,
            max_breakpoints: 4,
        })
    }

    /// OpenAI's documented defaults: 1,024-token minimum, then 128-token increments.
    pub fn openai() -> Self {
        Self::OpenAi(PrefixRules {
            min_tokens: 1024,
            increment: 128,
        })
    }

    /// Gemini's implicit cache: 1,024-token minimum, any length above it.
    pub fn gemini() -> Self {
        Self::Gemini(PrefixRules {
            min_tokens: 1024,
            increment: 1,
        })
    }

    /// The rules' name, as serialized in the `rules` tag: `anthropic`, `openai`, `gemini`,
    /// `none`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Anthropic(_) => "anthropic",
            Self::OpenAi(_) => "openai",
            Self::Gemini(_) => "gemini",
            Self::None => "none",
        }
    }
}

/// What one request cost in cache terms. `read + write + uncached` is the request's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallCache {
    /// Tokens served from the cache.
    pub read: u64,
    /// Tokens written to the cache (Anthropic only; implicit caches write for free).
    pub write: u64,
    /// Tokens billed at the plain input price.
    pub uncached: u64,
    /// The first block not served from the cache, `None` when every block was.
    pub break_at: Option<usize>,
}

impl CallCache {
    /// The request's input tokens, `read + write + uncached` (saturating).
    pub fn total(&self) -> u64 {
        self.read
            .saturating_add(self.write)
            .saturating_add(self.uncached)
    }

    /// The input's price in US dollars, each price given in dollars per million tokens:
    /// `uncached` at `input_price`, `read` at `cache_read_price`, `write` at
    /// `cache_write_price`. Token counts past 2^53 lose precision in the conversion.
    pub fn cost(&self, input_price: f64, cache_read_price: f64, cache_write_price: f64) -> f64 {
        (self.uncached as f64 * input_price
            + self.read as f64 * cache_read_price
            + self.write as f64 * cache_write_price)
            / 1_000_000.0
    }
}

/// The prefixes a provider holds for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCache {
    rules: CacheRules,
    entries: BTreeSet<u64>,
}

/// The seed of the prefix-hash chain.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// Chains one block's hash onto a prefix's hash (splitmix64's finalizer; meant to wrap).
fn mix(prefix: u64, block: u64) -> u64 {
    let mut z = prefix.rotate_left(23) ^ block.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Every prefix of a request: its chained hash and where it ends, in tokens.
struct Prefixes {
    hashes: Vec<u64>,
    ends: Vec<u64>,
}

impl Prefixes {
    fn of(blocks: &[Block]) -> Self {
        let (mut hash, mut end) = (SEED, 0u64);
        let (mut hashes, mut ends) = (Vec::with_capacity(blocks.len()), Vec::new());
        for block in blocks {
            hash = mix(hash, block.hash);
            end = end.saturating_add(block.tokens);
            hashes.push(hash);
            ends.push(end);
        }
        Self { hashes, ends }
    }

    /// Where the prefix ending at block `j` ends, in tokens.
    fn end(&self, j: usize) -> u64 {
        self.ends.get(j).copied().unwrap_or(0)
    }

    fn hash(&self, j: usize) -> u64 {
        self.hashes.get(j).copied().unwrap_or(SEED)
    }
}

/// `Some(next)` while `next` is a block of a request of `len` blocks.
fn break_at(next: usize, len: usize) -> Option<usize> {
    (next < len).then_some(next)
}

impl PromptCache {
    /// An empty cache under `rules`.
    pub fn new(rules: CacheRules) -> Self {
        Self {
            rules,
            entries: BTreeSet::new(),
        }
    }

    /// The rules.
    pub fn rules(&self) -> CacheRules {
        self.rules
    }

    /// How many prefixes the cache holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache holds no prefix.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every prefix (a caller that models expiry clears the cache when it lapses).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Answers one request. `breakpoints` are block indices (Anthropic only; ignored otherwise).
    /// The module's documentation states the rules.
    pub fn call(&mut self, blocks: &[Block], breakpoints: &[usize]) -> CallCache {
        if blocks.is_empty() {
            return CallCache::default();
        }
        let prefixes = Prefixes::of(blocks);
        let total = prefixes.end(blocks.len() - 1);
        let (read, write, break_at) = match self.rules {
            CacheRules::Anthropic(rules) => self.anthropic(rules, &prefixes, breakpoints),
            CacheRules::OpenAi(rules) | CacheRules::Gemini(rules) => {
                self.implicit(rules, &prefixes)
            }
            CacheRules::None => (0, 0, Some(0)),
        };
        CallCache {
            read,
            write,
            uncached: total.saturating_sub(read).saturating_sub(write),
            break_at,
        }
    }

    fn anthropic(
        &mut self,
        rules: AnthropicRules,
        prefixes: &Prefixes,
        breakpoints: &[usize],
    ) -> (u64, u64, Option<usize>) {
        let len = prefixes.hashes.len();
        let mut points: Vec<usize> = breakpoints.iter().copied().filter(|&b| b < len).collect();
        points.sort_unstable();
        points.dedup();
        points.truncate(rules.max_breakpoints);
        let cacheable = |j: usize| prefixes.end(j) >= rules.min_tokens;
        let entries = &self.entries;
        let hit = points
            .iter()
            .filter_map(|&b| {
                (b.saturating_sub(rules.lookback_blocks)..=b)
                    .rev()
                    .find(|&j| cacheable(j) && entries.contains(&prefixes.hash(j)))
            })
            .max();
        let read = hit.map_or(0, |j| prefixes.end(j));
        let next = hit.map_or(0, |j| j.saturating_add(1));
        let mut last_written = None;
        for &b in points.iter().filter(|&&b| b >= next && cacheable(b)) {
            self.entries.insert(prefixes.hash(b));
            last_written = Some(b);
        }
        let write = last_written.map_or(0, |b| prefixes.end(b).saturating_sub(read));
        (read, write, break_at(next, len))
    }

    fn implicit(&mut self, rules: PrefixRules, prefixes: &Prefixes) -> (u64, u64, Option<usize>) {
        let len = prefixes.hashes.len();
        let hit = (0..len)
            .rev()
            .find(|&j| self.entries.contains(&prefixes.hash(j)));
        let longest = hit.map_or(0, |j| prefixes.end(j));
        let read = match hit {
            Some(_) if longest >= rules.min_tokens => {
                let step = rules.increment.max(1);
                let above = (longest - rules.min_tokens) / step * step;
                rules.min_tokens.saturating_add(above)
            }
            _ => 0,
        };
        let next = match hit {
            Some(j) if read > 0 => (0..=j)
                .find(|&i| prefixes.end(i) > read)
                .unwrap_or(j.saturating_add(1)),
            _ => 0,
        };
        // Every prefix up to the longest hit is held already (a request writes all of its
        // prefixes, and a prefix's hash chains every block before it): only the rest is new.
        let new_from = hit.map_or(0, |j| j.saturating_add(1));
        self.entries
            .extend(prefixes.hashes.iter().skip(new_from).copied());
        (read, 0, break_at(next, len))
    }
}

/// A fixed-seed 64-bit hash of a block's content (FNV-1a), the same on every machine.
pub fn block_hash(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.as_bytes().iter().chain(std::iter::once(&0xffu8)) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// Where the stage puts Anthropic's breakpoints on a request of `blocks` blocks whose first
/// `head_blocks` are the system prompt and tools: the end of the head, and the last block.
/// After a window edit the own loop adds one before the first changed block
/// ([`anthropic_breakpoints_after_edit`]).
pub fn anthropic_breakpoints(blocks: usize, head_blocks: usize) -> Vec<usize> {
    let mut points = Vec::new();
    if head_blocks > 0 && head_blocks <= blocks {
        points.push(head_blocks - 1);
    }
    if blocks > 0 && points.last() != Some(&(blocks - 1)) {
        points.push(blocks - 1);
    }
    points
}

/// What a token of input costs relative to the plain input price, by how the cache serves it:
/// the multipliers an edit's payback is judged with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CachePricing {
    /// A token read from the cache (0.1 on every provider's current list).
    pub read: f64,
    /// A token that must go into the cache again after an edit: written (Anthropic's
    /// 5-minute cache, 1.25) or, for implicit caches, sent uncached (1.0).
    pub write: f64,
}

impl CachePricing {
    /// The multipliers of `rules`' provider; `None` when there is no cache (an edit then costs
    /// nothing to re-send).
    pub fn for_rules(rules: CacheRules) -> Option<Self> {
        match rules {
            CacheRules::Anthropic(_) => Some(Self {
                read: 0.1,
                write: 1.25,
            }),
            CacheRules::OpenAi(_) | CacheRules::Gemini(_) => Some(Self {
                read: 0.1,
                write: 1.0,
            }),
            CacheRules::None => None,
        }
    }

    /// The multipliers of a price row, per million tokens: the cache-read and cache-write
    /// prices over the input price (`implicit`: the provider writes for free, so a re-sent
    /// token costs the input price).
    pub fn from_prices(
        input: f64,
        cache_read: f64,
        cache_write: f64,
        implicit: bool,
    ) -> Option<Self> {
        if !(input.is_finite() && input > 0.0) {
            return None;
        }
        Some(Self {
            read: cache_read / input,
            write: if implicit { 1.0 } else { cache_write / input },
        })
    }
}

/// The cache arithmetic of one edit of the window: what it re-writes, what it saves, and when
/// it pays.
///
/// Without the edit, the next call reads the `rewritten + saved` tokens after the break from
/// the cache (`read` each). With it, the next call writes the `rewritten` tokens (`write`
/// each), and every later call reads `saved` tokens fewer. The edit has paid back after `n`
/// calls when `rewritten × write − (rewritten + saved) × read − (n − 1) × saved × read ≤ 0`.
/// Tokens appended after the edit cost the same either way and leave the sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditCost {
    /// Tokens after the first changed message, in the edited window: sent again outside the
    /// cache on the next call.
    pub rewritten_tokens: u64,
    /// Tokens the edit takes out of every later request.
    pub saved_tokens: u64,
    /// Calls, the next one included, until the edit has paid for the cache it broke; `None`
    /// when it never does (it saves nothing).
    pub payback_calls: Option<u64>,
}

/// The [`EditCost`] of an edit that re-writes `rewritten` tokens and saves `saved` per call.
pub fn edit_cost(pricing: CachePricing, rewritten: u64, saved: u64) -> EditCost {
    let extra = rewritten as f64 * pricing.write - (rewritten as f64 + saved as f64) * pricing.read;
    let per_call = saved as f64 * pricing.read;
    let payback_calls = if extra <= 0.0 {
        Some(1)
    } else if per_call <= 0.0 {
        None
    } else {
        let later = (extra / per_call).ceil();
        // A payback past any session's length is as good as never.
        (later < 1e15).then(|| 1u64.saturating_add(later as u64))
    };
    EditCost {
        rewritten_tokens: rewritten,
        saved_tokens: saved,
        payback_calls,
    }
}

/// What the stage does with an edit once it knows what the edit costs in prompt cache
/// ([`crate::cache::edit_cost`]; the caller gives the provider's multipliers in
/// [`crate::VisitContext::cache_pricing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheGuard {
    /// `paybackCalls`: hold an edit back unless it pays for the cache it breaks within this
    /// many calls (the next one included). `None` (the default) applies every edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payback_calls: Option<u64>,
    /// `overflowTokens`: at or above this many tokens in the window, an edit is applied even if
    /// it does not pay (forced), and its record says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow_tokens: Option<u64>,
    /// `shadow`: record what the strategy would do, and change nothing.
    #[serde(default)]
    pub shadow: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A head block of `head` tokens, then `len - 1` messages of `each` tokens.
    fn conv(head: u64, each: u64, len: usize) -> Vec<Block> {
        (0..len)
            .map(|i| Block {
                hash: block_hash(&["block", &i.to_string()]),
                tokens: if i == 0 { head } else { each },
            })
            .collect()
    }

    /// `blocks` with block `k`'s content changed.
    fn edit(mut blocks: Vec<Block>, k: usize) -> Vec<Block> {
        blocks[k].hash = block_hash(&["edited", &k.to_string()]);
        blocks
    }

    fn cc(read: u64, write: u64, uncached: u64, break_at: Option<usize>) -> CallCache {
        CallCache {
            read,
            write,
            uncached,
            break_at,
        }
    }

    /// One Anthropic call with the stage's breakpoints (head block 0, last block).
    fn ask(cache: &mut PromptCache, blocks: &[Block]) -> CallCache {
        cache.call(blocks, &anthropic_breakpoints(blocks.len(), 1))
    }

    #[test]
    fn anthropic_first_call_writes_at_breakpoints_and_reads_nothing() {
        // (head tokens, message tokens, blocks, expected)
        let table = [
            (2000, 100, 11, cc(0, 3000, 0, Some(0))),
            (2000, 100, 1, cc(0, 2000, 0, Some(0))),
            // The head (500) is below the minimum; the last breakpoint (1,200) is written.
            (500, 100, 8, cc(0, 1200, 0, Some(0))),
        ];
        for (row, (head, each, len, want)) in table.into_iter().enumerate() {
            let mut cache = PromptCache::new(CacheRules::anthropic());
            assert_eq!(ask(&mut cache, &conv(head, each, len)), want, "row {row}");
        }
    }

    #[test]
    fn anthropic_appending_reads_the_last_breakpoint_and_writes_only_new_blocks() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        // (blocks, expected): each call appends two messages of 100 tokens.
        let table = [
            (11, cc(0, 3000, 0, Some(0))),
            (13, cc(3000, 200, 0, Some(11))),
            (15, cc(3200, 200, 0, Some(13))),
            (15, cc(3400, 0, 0, None)),
        ];
        for (row, (len, want)) in table.into_iter().enumerate() {
            assert_eq!(ask(&mut cache, &conv(2000, 100, len)), want, "row {row}");
        }
    }

    #[test]
    fn anthropic_edit_within_lookback_reads_the_longest_written_prefix_before_it() {
        // Primed with 11, 13, 15 blocks: written prefixes end at blocks 0, 10, 12, 14.
        // (edited block, expected read, expected break) for a 17-block call (3,600 tokens).
        let table = [
            (15, 3400, 15), // prefix 0..=14 was a written breakpoint
            (13, 3200, 13), // prefix 0..=12 was
            (12, 3000, 11), // 0..=11 never written: the longest written before is 0..=10
            (5, 2000, 1),   // nothing written between the head and the edit
        ];
        for (k, read, at) in table {
            let mut cache = PromptCache::new(CacheRules::anthropic());
            for len in [11, 13, 15] {
                ask(&mut cache, &conv(2000, 100, len));
            }
            let got = ask(&mut cache, &edit(conv(2000, 100, 17), k));
            assert_eq!(got, cc(read, 3600 - read, 0, Some(at)), "edit at {k}");
        }
    }

    #[test]
    fn anthropic_edit_beyond_lookback_reads_only_the_head_breakpoint() {
        // (primer blocks, call blocks, edited block, expected read, expected break)
        let table = [
            (41, 43, None, 6000, 41),    // control: prefix 0..=40 is 2 blocks back
            (41, 43, Some(10), 2000, 1), // edit 32 blocks before the last breakpoint
            (41, 43, Some(30), 2000, 1), // edit 12 back, but nothing written since block 0
            (16, 36, None, 3500, 16),    // prefix 0..=15 is exactly 20 blocks back
            (16, 37, None, 2000, 1),     // 21 blocks back: out of the lookback
        ];
        for (row, (primer, len, k, read, at)) in table.into_iter().enumerate() {
            let mut cache = PromptCache::new(CacheRules::anthropic());
            ask(&mut cache, &conv(2000, 100, primer));
            let blocks = conv(2000, 100, len);
            let blocks = k.map_or(blocks.clone(), |k| edit(blocks, k));
            let total = 2000 + 100 * (len as u64 - 1);
            let want = cc(read, total - read, 0, Some(at));
            assert_eq!(ask(&mut cache, &blocks), want, "row {row}");
        }
    }

    #[test]
    fn anthropic_prefix_below_min_tokens_is_not_cached() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        // (blocks of a 500-token head and 100-token messages, expected)
        let table = [
            (5, cc(0, 0, 900, Some(0))),
            (5, cc(0, 0, 900, Some(0))),
            (6, cc(0, 0, 1000, Some(0))),
            (7, cc(0, 1100, 0, Some(0))),
            (7, cc(1100, 0, 0, None)),
        ];
        for (row, (len, want)) in table.into_iter().enumerate() {
            assert_eq!(ask(&mut cache, &conv(500, 100, len)), want, "row {row}");
        }
    }

    #[test]
    fn anthropic_breakpoints_beyond_max_are_ignored() {
        let blocks = conv(1100, 1100, 6);
        let rules = |max_breakpoints| {
            CacheRules::Anthropic(AnthropicRules {
                min_tokens: 1024,
                lookback_blocks: 20,
                max_breakpoints,
            })
        };
        // (max, breakpoints, end of the last kept one): the lowest `max` are kept. The first
        // call writes up to it, the same call again reads up to it; the rest stays uncached.
        let table: [(usize, &[usize], usize); 3] = [
            (4, &[0, 1, 2, 3, 4, 5], 3),
            (4, &[5, 3, 3, 1, 0, 2, 4, 9], 3),
            (1, &[5, 2], 2),
        ];
        for (max, points, last) in table {
            let mut cache = PromptCache::new(rules(max));
            let kept = 1100 * (last as u64 + 1);
            let first = cc(0, kept, 6600 - kept, Some(0));
            assert_eq!(cache.call(&blocks, points), first, "{points:?}");
            let again = cc(kept, 0, 6600 - kept, Some(last + 1));
            assert_eq!(cache.call(&blocks, points), again, "{points:?} again");
        }
    }

    /// Two requests sharing blocks of `shared` tokens, each with its own 300-token tail.
    fn shared_pair(rules: CacheRules, shared: &[u64]) -> (CallCache, CallCache) {
        let request = |tail: &str| {
            let mut blocks: Vec<Block> = (0..shared.len())
                .map(|i| Block {
                    hash: block_hash(&["shared", &i.to_string()]),
                    tokens: shared[i],
                })
                .collect();
            blocks.push(Block {
                hash: block_hash(&[tail]),
                tokens: 300,
            });
            blocks
        };
        let mut cache = PromptCache::new(rules);
        (
            cache.call(&request("a"), &[]),
            cache.call(&request("b"), &[]),
        )
    }

    #[test]
    fn openai_reads_the_shared_prefix_in_128_token_increments_and_never_writes() {
        // (shared blocks' tokens, expected read, expected break)
        let table: [(&[u64], u64, usize); 6] = [
            (&[1500], 1408, 0), // 1024 + 3 × 128; block 0 is not wholly read
            (&[1000, 500], 1408, 1),
            (&[1000], 0, 0), // below the minimum
            (&[1024], 1024, 1),
            (&[1024, 127], 1024, 1),
            (&[1024, 128], 1152, 2),
        ];
        for (shared, read, at) in table {
            let (first, second) = shared_pair(CacheRules::openai(), shared);
            let total: u64 = shared.iter().sum::<u64>() + 300;
            assert_eq!(first, cc(0, 0, total, Some(0)), "{shared:?} first");
            assert_eq!(second, cc(read, 0, total - read, Some(at)), "{shared:?}");
        }
    }

    #[test]
    fn gemini_reads_the_whole_shared_prefix_above_the_minimum() {
        let table: [(&[u64], u64, usize); 4] = [
            (&[1500], 1500, 1),
            (&[1000], 0, 0),
            (&[1000, 500], 1500, 2),
            (&[1000, 23], 0, 0), // 1,023: one token short
        ];
        for (shared, read, at) in table {
            let (_, second) = shared_pair(CacheRules::gemini(), shared);
            let total: u64 = shared.iter().sum::<u64>() + 300;
            assert_eq!(second, cc(read, 0, total - read, Some(at)), "{shared:?}");
        }
        let mut cache = PromptCache::new(CacheRules::gemini());
        let blocks = conv(1500, 100, 3);
        cache.call(&blocks, &[]);
        assert_eq!(cache.call(&blocks, &[]), cc(1700, 0, 0, None), "identical");
    }

    #[test]
    fn no_cache_bills_every_token_in_full() {
        let mut cache = PromptCache::new(CacheRules::None);
        for (len, total) in [(11, 3000), (11, 3000), (13, 3200)] {
            let got = ask(&mut cache, &conv(2000, 100, len));
            assert_eq!(got, cc(0, 0, total, Some(0)), "{len} blocks");
        }
        assert!(cache.is_empty());
    }

    #[test]
    fn empty_request_is_all_zeros() {
        let rules = [
            CacheRules::anthropic(),
            CacheRules::openai(),
            CacheRules::gemini(),
            CacheRules::None,
        ];
        for rule in rules {
            let mut cache = PromptCache::new(rule);
            let got = cache.call(&[], &[0, 3]);
            assert_eq!(got, CallCache::default(), "{}", rule.name());
            assert!(cache.is_empty(), "{}", rule.name());
        }
    }

    #[test]
    fn rules_constructors_give_the_documented_defaults() {
        let table = [
            (
                CacheRules::anthropic(),
                "anthropic",
                r#","minTokens":1024,"lookbackBlocks":20,"maxBreakpoints":4}"#,
            ),
            (
                CacheRules::openai(),
                "openai",
                r#","minTokens":1024,"increment":128}"#,
            ),
            (
                CacheRules::gemini(),
                "gemini",
                r#","minTokens":1024,"increment":1}"#,
            ),
            (CacheRules::None, "none", "}"),
        ];
        for (rules, name, rest) in table {
            assert_eq!(rules.name(), name);
            let json = serde_json::to_string(&rules).unwrap_or_default();
            assert_eq!(json, format!(r#"{{"rules":"{name}"{rest}"#));
        }
    }

    #[test]
    fn cost_prices_the_split_per_million_tokens() {
        // (split, (input, read, write) dollars per million tokens, dollars)
        let table = [
            (cc(1000, 500, 2000, None), (3.0, 0.3, 3.75), 0.008_175),
            (cc(0, 0, 1000, Some(0)), (2.5, 1.25, 0.0), 0.0025),
            (CallCache::default(), (3.0, 0.3, 3.75), 0.0),
        ];
        for (split, (input, read, write), want) in table {
            let got = split.cost(input, read, write);
            assert!((got - want).abs() < 1e-15, "{split:?}: {got} != {want}");
        }
    }

    #[test]
    fn block_hash_is_stable() {
        assert_eq!(block_hash(&["system", "hello"]), PINNED);
        assert_ne!(block_hash(&["ab", "c"]), block_hash(&["a", "bc"]));
        assert_ne!(block_hash(&[]), block_hash(&[""]));
        let (a, b) = (block_hash(&["a"]), block_hash(&["b"]));
        assert_ne!(mix(mix(SEED, a), b), mix(mix(SEED, b), a), "ordered");
    }
    /// FNV-1a of `system 0xff hello 0xff`, computed independently.
    const PINNED: u64 = 0xadae_a8e6_8310_f898;

    fn any_rules() -> impl Strategy<Value = CacheRules> {
        prop_oneof![
            Just(CacheRules::anthropic()),
            Just(CacheRules::openai()),
            Just(CacheRules::gemini()),
            Just(CacheRules::None),
            (0u64..2000, 0usize..25, 0usize..6).prop_map(|(m, l, b)| {
                CacheRules::Anthropic(AnthropicRules {
                    min_tokens: m,
                    lookback_blocks: l,
                    max_breakpoints: b,
                })
            }),
            (0u64..2000, 0u64..300).prop_map(|(m, i)| CacheRules::OpenAi(PrefixRules {
                min_tokens: m,
                increment: i
            })),
        ]
    }

    /// One step: keep a prefix of the last request, maybe edit one block, append some.
    type Step = (usize, Option<(usize, u64)>, Vec<(u64, u64)>, Vec<usize>);

    fn any_step() -> impl Strategy<Value = Step> {
        (
            0usize..60,
            proptest::option::of((0usize..60, 0u64..4)),
            proptest::collection::vec((0u64..6, 0u64..1500), 0..25),
            proptest::collection::vec(0usize..60, 0..7),
        )
    }

    proptest! {
        #[test]
        fn read_write_uncached_sum_to_the_request_tokens(
            rules in any_rules(),
            steps in proptest::collection::vec(any_step(), 1..8),
        ) {
            let mut cache = PromptCache::new(rules);
            let mut blocks: Vec<Block> = Vec::new();
            for (keep, change, append, points) in steps {
                blocks.truncate(keep);
                if let Some((k, salt)) = change {
                    if let Some(block) = blocks.get_mut(k) {
                        block.hash ^= salt.wrapping_add(1);
                    }
                }
                blocks.extend(append.into_iter().map(|(h, tokens)| Block { hash: h, tokens }));
                let total: u64 = blocks.iter().map(|b| b.tokens).sum();
                let got = cache.call(&blocks, &points);
                prop_assert_eq!(got.read + got.write + got.uncached, total);
                prop_assert_eq!(got.total(), total);
                prop_assert!(got.break_at.is_none_or(|i| i < blocks.len()));
                if got.break_at.is_none() {
                    prop_assert_eq!(got.read, total);
                }
                let end = got.break_at.unwrap_or(blocks.len());
                let served: u64 = blocks[..end].iter().map(|b| b.tokens).sum();
                prop_assert!(served <= got.read);
                if matches!(rules, CacheRules::Anthropic(_)) {
                    prop_assert_eq!(served, got.read);
                } else {
                    prop_assert_eq!(got.write, 0);
                }
            }
        }
    }

    #[test]
    fn an_edit_pays_back_when_its_savings_cover_the_rewrite() {
        let anthropic = CachePricing::for_rules(CacheRules::anthropic()).unwrap();
        // Rewrite 1,000 to save 20,000: the first call already costs less (1,250 < 2,100).
        assert_eq!(edit_cost(anthropic, 1_000, 20_000).payback_calls, Some(1));
        // Rewrite 1,000 to save 10,000: 150 extra on the first call, 1,000 saved on the next.
        assert_eq!(edit_cost(anthropic, 1_000, 10_000).payback_calls, Some(2));
        // Rewrite 100,000 to save 5,000: 125,000 − 10,500 = 114,500 extra, 500 saved a call.
        assert_eq!(
            edit_cost(anthropic, 100_000, 5_000).payback_calls,
            Some(1 + 229)
        );
        // Saving nothing never pays.
        assert_eq!(edit_cost(anthropic, 1_000, 0).payback_calls, None);
        // Implicit caches re-send at the input price: 100,000 − 10,500 = 89,500 over 500.
        let openai = CachePricing::for_rules(CacheRules::openai()).unwrap();
        assert_eq!(
            edit_cost(openai, 100_000, 5_000).payback_calls,
            Some(1 + 179)
        );
        assert_eq!(CachePricing::for_rules(CacheRules::None), None);
    }

    #[test]
    fn pricing_multipliers_come_from_a_price_row() {
        let sonnet = CachePricing::from_prices(3.0, 0.3, 3.75, false).unwrap();
        assert!((sonnet.read - 0.1).abs() < 1e-12 && (sonnet.write - 1.25).abs() < 1e-12);
        let gpt = CachePricing::from_prices(1.25, 0.125, 1.25, true).unwrap();
        assert!((gpt.write - 1.0).abs() < 1e-12);
        assert_eq!(CachePricing::from_prices(0.0, 0.0, 0.0, false), None);
    }
}
