//! The token usage the mock reports, derived from the request so tests can predict it.

use serde::{Deserialize, Serialize};

/// The cached part of one request's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheSplit {
    /// Tokens read from the cache.
    pub read: u64,
    /// Tokens written to it (Anthropic only).
    pub write: u64,
}

/// The input reported by every answer of the `huge-input` scenario's first step.
pub const HUGE_INPUT_TOKENS: u64 = 190_000;

/// The fixed part of every input figure, beside the body's bytes / 4.
pub const BASE_INPUT_TOKENS: u64 = 1000;

/// The usage one answer reported, in provider-neutral terms.
///
/// Mapping to each API's own fields:
/// - Anthropic: `input_tokens` = `input_tokens` + `cache_read_input_tokens` +
///   `cache_creation_input_tokens`; `cached_input_tokens` = `cache_read_input_tokens`;
///   `cache_write_tokens` = `cache_creation_input_tokens`; reasoning is not reported (0).
/// - OpenAI Responses: `input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`
///   (includes reasoning), `output_tokens_details.reasoning_tokens`; no cache write (0).
/// - Gemini: `promptTokenCount`, `cachedContentTokenCount`, `candidatesTokenCount` +
///   `thoughtsTokenCount` = `output_tokens`, `thoughtsTokenCount`; no cache write (0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// All input tokens, cached and cache-written ones included.
    pub input_tokens: u64,
    /// The part of the input read from the prompt cache.
    pub cached_input_tokens: u64,
    /// The part of the input written to the prompt cache (Anthropic only).
    pub cache_write_tokens: u64,
    /// All output tokens, reasoning included.
    pub output_tokens: u64,
    /// The part of the output spent on reasoning (OpenAI, Gemini).
    pub reasoning_tokens: u64,
}

/// A quarter of `bytes`, rounded down: the mock's tokens of that many bytes.
pub(crate) fn quarter(bytes: usize) -> u64 {
    u64::try_from(bytes / 4).unwrap_or(u64::MAX)
}

/// The input a prompt of `request_body_bytes` reports: `1000 + bytes / 4`, or
/// [`HUGE_INPUT_TOKENS`] for `huge-input`'s scripted figure.
pub(crate) fn input_tokens(request_body_bytes: usize, huge_input: bool) -> u64 {
    if huge_input {
        HUGE_INPUT_TOKENS
    } else {
        BASE_INPUT_TOKENS.saturating_add(quarter(request_body_bytes))
    }
}

/// The output `generated_bytes` of visible output report: `10 + bytes / 4`.
pub(crate) fn output_tokens(generated_bytes: usize) -> u64 {
    10u64.saturating_add(quarter(generated_bytes))
}

impl Usage {
    /// The deterministic usage of one answer.
    ///
    /// Input is `1000 + request_body_bytes / 4` (or `HUGE_INPUT_TOKENS`), of which `cache`
    /// says what the mock's prompt cache read and wrote (held to the input); output is
    /// `10 + generated_bytes / 4 + reasoning`, reasoning `thinking_bytes / 4`.
    pub(crate) fn derive(
        request_body_bytes: usize,
        huge_input: bool,
        generated_bytes: usize,
        thinking_bytes: usize,
        cache: CacheSplit,
        reports_reasoning: bool,
    ) -> Usage {
        let input_tokens = input_tokens(request_body_bytes, huge_input);
        let reasoning = quarter(thinking_bytes);
        let cached_input_tokens = cache.read.min(input_tokens);
        Usage {
            input_tokens,
            cached_input_tokens,
            cache_write_tokens: cache.write.min(input_tokens - cached_input_tokens),
            output_tokens: output_tokens(generated_bytes).saturating_add(reasoning),
            reasoning_tokens: if reports_reasoning { reasoning } else { 0 },
        }
    }

    /// The input that was neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cached_input_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// Input plus output.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}
