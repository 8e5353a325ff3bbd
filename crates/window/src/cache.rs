//! The prompt cache's arithmetic, per provider, as pure data: which prefix of a request the
//! provider serves from its cache, which part it writes to it, and which part it bills in full.
//!
//! A request is a list of [`Block`]s (the system prompt and tools as one head block, then one
//! block per message), each with a content hash and a token count. A [`PromptCache`] keeps the
//! prefixes the provider would hold, and [`PromptCache::call`] answers one request with a
//! [`CallCache`]. Entries never expire here (a caller that knows the calls' times may clear the
//! cache itself).
//!
//! TODO(helper): implement per the spec in the module's tests.

use std::collections::BTreeSet;

use serde::Serialize;

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

/// The prefixes a provider holds for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCache {
    rules: CacheRules,
    entries: BTreeSet<u64>,
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

    /// Answers one request. `breakpoints` are block indices (Anthropic only; ignored otherwise).
    pub fn call(&mut self, blocks: &[Block], breakpoints: &[usize]) -> CallCache {
        let _ = breakpoints;
        let _ = &self.entries;
        CallCache {
            read: 0,
            write: 0,
            uncached: blocks.iter().map(|b| b.tokens).sum(),
            break_at: if blocks.is_empty() { None } else { Some(0) },
        }
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
