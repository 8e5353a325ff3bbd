//! Token counting behind a trait. The stage counts each message once, when it is pushed, and
//! keeps running sums, so no visit re-counts the conversation.
//!
//! Counts from a [`TokenCounter`] are used only to judge how much a removal frees relative to
//! a provider-reported reading; no record ever quotes one as a measured figure.

/// Counts the tokens of a text.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens `text` encodes to.
    fn count(&self, text: &str) -> u64;
    /// A short name for records and benchmark output.
    fn name(&self) -> &'static str;
}

/// The default counter: one token per four bytes of UTF-8, rounded up. It needs no vocabulary
/// and costs nothing beyond reading the length, which is why it is the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproxCounter;

impl TokenCounter for ApproxCounter {
    fn count(&self, text: &str) -> u64 {
        (text.len() as u64).div_ceil(4)
    }
    fn name(&self) -> &'static str {
        "approx-bytes-per-4"
    }
}

/// The exact OpenAI `o200k_base` encoding. The vocabulary is embedded in the `bpe-openai`
/// crate, so nothing is downloaded at run time.
#[cfg(feature = "o200k")]
#[derive(Debug, Clone, Copy, Default)]
pub struct O200kCounter;

#[cfg(feature = "o200k")]
impl TokenCounter for O200kCounter {
    fn count(&self, text: &str) -> u64 {
        bpe_openai::o200k_base().count(text) as u64
    }
    fn name(&self) -> &'static str {
        "o200k_base"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approx_counter_rounds_up() {
        assert_eq!(ApproxCounter.count(""), 0);
        assert_eq!(ApproxCounter.count("abc"), 1);
        assert_eq!(ApproxCounter.count("abcde"), 2);
    }

    #[cfg(feature = "o200k")]
    #[test]
    fn o200k_counts_a_known_sentence() {
        // "hello world" is two tokens in o200k_base.
        assert_eq!(O200kCounter.count("hello world"), 2);
    }
}
