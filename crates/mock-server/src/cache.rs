//! The prompt cache the mock keeps, as each API's own does: a request's prompt is cut into
//! blocks, and [`panewise_window::cache::PromptCache`] under the API's rules says which prefix
//! is read from the cache and which part is written to it.
//!
//! ## Blocks
//! Each block is hashed over its compact JSON with any `cache_control` field taken out, so
//! moving a breakpoint leaves the prefix as it was, and over its role where it has one. Its
//! tokens are its bytes over 4, rounded down, as the mock's input formula counts the body
//! ([`crate::Usage::derive`]); a message's first block also counts the bytes of the message's
//! wrapper (`{"role":…,"content":[…]}`), and the first block of all the formula's fixed
//! [`BASE_INPUT_TOKENS`], so the blocks cover the reported input but for the body's few framing
//! bytes (model, limits, keys). Their order is the order the API reads the prompt in:
//! - Anthropic: each tool, the system prompt (a string is one block, a list one block per
//!   entry), then each message's content blocks in order (a string content is one block).
//!   The breakpoints are the blocks that carry `cache_control`; more than the API's four is
//!   refused with its 400, as the real API does.
//! - OpenAI: each tool, the `instructions`, then each `input` item.
//! - Gemini: each function declaration, the `systemInstruction`'s parts, then each
//!   content's parts.
//!
//! ## Which cache
//! One cache per API, model and, for OpenAI, `prompt_cache_key` (absent: one cache for every
//! request without a key). Anthropic's and Gemini's caches are shared by every request to the
//! server, as the real ones are shared by an organization's requests: a prefix any earlier
//! request wrote is read. Only answered requests touch the cache (an error status does not);
//! entries never expire. So a test that asserts exact cache figures uses a server of its own,
//! or prompts no other test sends.

use std::collections::BTreeMap;
use std::sync::Mutex;

use panewise_window::cache::{block_hash, Block, CacheRules, CallCache, PromptCache};
use serde_json::Value;

use crate::usage::{CacheSplit, BASE_INPUT_TOKENS};

/// The most `cache_control` breakpoints one Anthropic request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// Which API's rules and request shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Api {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses.
    OpenAi,
    /// Gemini.
    Gemini,
}

/// A request's prompt as the cache sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// Which cache serves it: the API, the model and the OpenAI cache key.
    pub key: (Api, String, String),
    /// The blocks, in reading order.
    pub blocks: Vec<Block>,
    /// The blocks that carry a breakpoint (Anthropic).
    pub breakpoints: Vec<usize>,
}

/// Why a request cannot be cached as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An Anthropic request with more breakpoints than the API allows.
    TooManyBreakpoints(usize),
}

/// Every cache the server keeps, by [`Prompt::key`].
#[derive(Debug, Default)]
pub struct Caches {
    caches: Mutex<BTreeMap<(Api, String, String), PromptCache>>,
}

impl Caches {
    /// Answers one request from its cache, and writes to it what the rules write.
    pub fn call(&self, prompt: &Prompt) -> CacheSplit {
        let mut caches = self
            .caches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let rules = match prompt.key.0 {
            Api::Anthropic => CacheRules::anthropic(),
            Api::OpenAi => CacheRules::openai(),
            Api::Gemini => CacheRules::gemini(),
        };
        let cache = caches
            .entry(prompt.key.clone())
            .or_insert_with(|| PromptCache::new(rules));
        let CallCache { read, write, .. } = cache.call(&prompt.blocks, &prompt.breakpoints);
        CacheSplit { read, write }
    }
}

/// Cuts blocks out of a prompt, counting their tokens.
struct Blocks {
    blocks: Vec<Block>,
    breakpoints: Vec<usize>,
}

impl Blocks {
    fn new() -> Self {
        Self {
            blocks: Vec::new(),
            breakpoints: Vec::new(),
        }
    }

    /// Appends `value` as one block of `role`, with `extra_bytes` of wrapper counted in;
    /// a `cache_control` on it is taken out of the hash and recorded as a breakpoint.
    fn push(&mut self, role: &str, value: &Value, extra_bytes: usize) {
        let mut value = value.clone();
        let marked = value
            .as_object_mut()
            .and_then(|object| object.remove("cache_control"))
            .is_some();
        if marked {
            self.breakpoints.push(self.blocks.len());
        }
        let text = value.to_string();
        let bytes = text.len().saturating_add(extra_bytes).saturating_add(1);
        let mut tokens = u64::try_from(bytes / 4).unwrap_or(u64::MAX);
        if self.blocks.is_empty() {
            tokens = tokens.saturating_add(BASE_INPUT_TOKENS);
        }
        self.blocks.push(Block {
            hash: block_hash(&[role, &text]),
            tokens,
        });
    }

    /// Appends every element of the array at `value` (nothing when it is not one).
    fn push_all(&mut self, role: &str, value: Option<&Value>) {
        for item in value.and_then(Value::as_array).into_iter().flatten() {
            self.push(role, item, 0);
        }
    }

    /// Appends the parts of each message of `messages`, its wrapper counted in its first.
    fn push_messages(&mut self, messages: Option<&Value>, parts_key: &str) {
        for message in messages.and_then(Value::as_array).into_iter().flatten() {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("");
            // `{"role":"…","parts":[`, `]},`: what the message costs beyond its parts.
            let wrapper = role
                .len()
                .saturating_add(parts_key.len())
                .saturating_add(17);
            match message.get(parts_key) {
                Some(Value::Array(parts)) => {
                    for (index, part) in parts.iter().enumerate() {
                        self.push(role, part, if index == 0 { wrapper } else { 0 });
                    }
                }
                Some(other) => self.push(role, other, wrapper),
                None => {}
            }
        }
    }

    fn into_prompt(self, key: (Api, String, String)) -> Prompt {
        Prompt {
            key,
            blocks: self.blocks,
            breakpoints: self.breakpoints,
        }
    }
}

fn model_of(body: &Value, fallback: &str) -> String {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or(fallback)
        .to_owned()
}

/// An Anthropic Messages request's prompt: tools, system, messages.
pub fn anthropic(body: &Value) -> Result<Prompt, Refusal> {
    let mut blocks = Blocks::new();
    blocks.push_all("tool", body.get("tools"));
    match body.get("system") {
        Some(Value::Array(_)) => blocks.push_all("system", body.get("system")),
        Some(system) => blocks.push("system", system, 0),
        None => {}
    }
    blocks.push_messages(body.get("messages"), "content");
    if blocks.breakpoints.len() > MAX_BREAKPOINTS {
        return Err(Refusal::TooManyBreakpoints(blocks.breakpoints.len()));
    }
    let key = (Api::Anthropic, model_of(body, "claude-mock"), String::new());
    Ok(blocks.into_prompt(key))
}

/// An OpenAI Responses request's prompt: tools, instructions, input items.
pub fn openai(body: &Value) -> Prompt {
    let mut blocks = Blocks::new();
    blocks.push_all("tool", body.get("tools"));
    if let Some(instructions) = body.get("instructions") {
        blocks.push("system", instructions, 0);
    }
    match body.get("input") {
        Some(Value::Array(_)) => blocks.push_all("input", body.get("input")),
        Some(text) => blocks.push("input", text, 0),
        None => {}
    }
    let key = body
        .get("prompt_cache_key")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    blocks.into_prompt((Api::OpenAi, model_of(body, "gpt-mock"), key))
}

/// A Gemini request's prompt (the model is in the path): declarations, system
/// instruction parts, content parts.
pub fn gemini(model: &str, body: &Value) -> Prompt {
    let mut blocks = Blocks::new();
    for tools in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        blocks.push_all("tool", tools.get("functionDeclarations"));
    }
    blocks.push_all(
        "system",
        body.get("systemInstruction").and_then(|s| s.get("parts")),
    );
    blocks.push_messages(body.get("contents"), "parts");
    blocks.into_prompt((Api::Gemini, model.to_owned(), String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool result of `bytes` bytes, so prompts grow past the cache's minimum.
    fn output(round: usize, bytes: usize) -> String {
        format!("round {round}: {}", "x".repeat(bytes))
    }

    /// An Anthropic conversation of `rounds` tool rounds, breakpoints where the own loop puts
    /// them; `edit` changes the first prompt's text.
    fn anthropic_body(rounds: usize, edit: bool) -> Value {
        let mark = json!({"type": "ephemeral"});
        let prompt = if edit { "do it now" } else { "do it" };
        let mut messages =
            vec![json!({"role": "user", "content": [{"type": "text", "text": prompt}]})];
        for round in 0..rounds {
            messages.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": format!("t{round}"), "name": "shell", "input": {"command": "ls"}},
            ]}));
            messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{round}"), "content": output(round, 2000), "is_error": false},
            ]}));
        }
        if let Some(last) = messages
            .last_mut()
            .and_then(|m| m["content"].as_array_mut())
            .and_then(|c| c.last_mut())
        {
            last["cache_control"] = mark.clone();
        }
        json!({
            "model": "claude-x", "max_tokens": 100, "stream": true,
            "system": [{"type": "text", "text": "be brief", "cache_control": mark}],
            "tools": [{"name": "shell", "description": "Runs it.", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        })
    }

    fn tokens(prompt: &Prompt, range: std::ops::Range<usize>) -> u64 {
        prompt.blocks[range].iter().map(|b| b.tokens).sum()
    }

    #[test]
    fn anthropic_blocks_are_tools_system_then_content_with_their_breakpoints() {
        let prompt = anthropic(&anthropic_body(2, false)).unwrap_or_else(|_| unreachable!());
        // tool, system, prompt, (call, result) × 2
        assert_eq!(prompt.blocks.len(), 7);
        assert_eq!(prompt.breakpoints, [0, 1, 6]);
        assert!(prompt.blocks[0].tokens >= BASE_INPUT_TOKENS);
        // Moving the breakpoint does not change a block's hash.
        let mut unmarked = anthropic_body(2, false);
        unmarked["system"][0]
            .as_object_mut()
            .map(|s| s.remove("cache_control"));
        let other = anthropic(&unmarked).unwrap_or_else(|_| unreachable!());
        assert_eq!(other.blocks, prompt.blocks);
        assert_eq!(other.breakpoints, [0, 6]);
    }

    #[test]
    fn a_request_extending_the_last_reads_its_prefix_and_an_early_edit_breaks_it() {
        let caches = Caches::default();
        // (rounds, edited first prompt, expected: read = tokens of blocks 0..r, write = tokens
        // of blocks r..w)
        let table: [(usize, bool, usize, usize); 5] = [
            (1, false, 0, 5), // first call: everything written, nothing read
            (2, false, 5, 7), // extends it: reads the last call's prefix, writes the rest
            (3, false, 7, 9),
            (3, false, 9, 9), // the same request again: everything read
            (4, true, 2, 11), // the first prompt edited: only tools and system are read
        ];
        for (row, (rounds, edit, read_end, write_end)) in table.into_iter().enumerate() {
            let prompt =
                anthropic(&anthropic_body(rounds, edit)).unwrap_or_else(|_| unreachable!());
            let want = CacheSplit {
                read: tokens(&prompt, 0..read_end),
                write: tokens(&prompt, read_end..write_end),
            };
            assert_eq!(caches.call(&prompt), want, "row {row}");
        }
    }

    #[test]
    fn more_than_four_anthropic_breakpoints_are_refused() {
        let mut body = anthropic_body(2, false);
        for (i, message) in body["messages"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if i < 3 {
                message["content"][0]["cache_control"] = json!({"type": "ephemeral"});
            }
        }
        // system, tool, the last block and three more.
        assert_eq!(anthropic(&body), Err(Refusal::TooManyBreakpoints(6)));
    }

    #[test]
    fn openai_reads_in_steps_of_128_per_cache_key() {
        let body = |items: usize, key: Option<&str>| {
            let input: Vec<Value> = (0..items)
                .map(|i| json!({"type": "function_call_output", "call_id": format!("c{i}"), "output": output(i, 600)}))
                .collect();
            let mut body = json!({"model": "gpt-x", "instructions": "be brief", "input": input});
            if let Some(key) = key {
                body["prompt_cache_key"] = json!(key);
            }
            body
        };
        let caches = Caches::default();
        let first = openai(&body(3, Some("a")));
        assert_eq!(caches.call(&first), CacheSplit::default());
        let second = openai(&body(5, Some("a")));
        let shared = tokens(&second, 0..first.blocks.len());
        let want = 1024 + (shared - 1024) / 128 * 128;
        assert_eq!(
            caches.call(&second),
            CacheSplit {
                read: want,
                write: 0
            }
        );
        // Another session's key has a cache of its own.
        assert_eq!(
            caches.call(&openai(&body(5, Some("b")))),
            CacheSplit::default()
        );
    }

    #[test]
    fn gemini_reads_the_whole_shared_prefix() {
        let body = |rounds: usize| {
            let contents: Vec<Value> = (0..rounds)
                .map(|i| json!({"role": "user", "parts": [{"text": output(i, 1000)}]}))
                .collect();
            json!({"systemInstruction": {"parts": [{"text": "be brief"}]}, "contents": contents})
        };
        let caches = Caches::default();
        let first = gemini("gemini-x", &body(2));
        assert_eq!(caches.call(&first), CacheSplit::default());
        let second = gemini("gemini-x", &body(4));
        let want = tokens(&second, 0..first.blocks.len());
        assert_eq!(
            caches.call(&second),
            CacheSplit {
                read: want,
                write: 0
            }
        );
        // Another model shares nothing.
        assert_eq!(
            caches.call(&gemini("gemini-y", &body(4))),
            CacheSplit::default()
        );
    }
}
