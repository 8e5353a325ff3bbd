//! Generated conversations for the window-stage benches and the LangChain comparison.
//!
//! A conversation opens with a system prompt and a request, then runs agent turns: mostly
//! assistant tool calls (one to three in parallel) with results whose sizes follow a long-tailed
//! mix, some assistant prose, and now and then a new user request. Messages average about
//! 2 KB. Generation is deterministic for a given size and seed, so both sides of a comparison
//! see the same bytes.

use panewise_window::{openai, Message};

/// A small deterministic generator (xorshift64*), so the benches need no `rand`.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `low..high`.
    fn between(&mut self, low: usize, high: usize) -> usize {
        low + (self.next() % (high - low) as u64) as usize
    }

    /// True with probability `percent` / 100.
    fn percent(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const TOOLS: [&str; 12] = [
    "read_file",
    "grep",
    "list_dir",
    "run_tests",
    "edit_file",
    "git_diff",
    "cargo_check",
    "search_docs",
    "whats_here",
    "open_url",
    "run_shell",
    "write_file",
];

/// Text that looks like source code and logs, sliced for message contents.
fn corpus() -> String {
    let lines = [
        "fn parse(input: &str) -> Result<Module, ParseError> {",
        "    let tokens = lex(input)?;",
        "test parser::empty_input ... ok",
        "error[E0308]: mismatched types: expected `usize`, found `u64`",
        "  --> src/parser.rs:42:17",
        "The build finished in 12.4s with 3 warnings.",
        "diff --git a/src/lib.rs b/src/lib.rs",
        "+    if tokens.is_empty() { return Ok(Module::default()); }",
        "{\"status\": \"ok\", \"items\": [1, 2, 3], \"next\": null}",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
    ];
    let mut text = String::with_capacity(64 * 1024);
    let mut i = 0;
    while text.len() < 60 * 1024 {
        text.push_str(lines[i % lines.len()]);
        text.push_str(&format!(" // {i}\n"));
        i += 7;
    }
    text
}

fn slice(corpus: &str, sequence: &mut Sequence, chars: usize) -> String {
    let chars = chars.min(corpus.len() - 1);
    let start = sequence.between(0, corpus.len() - chars);
    corpus[start..start + chars].to_string()
}

/// A tool-result size: many small and medium results, a long tail of large ones.
fn result_size(sequence: &mut Sequence) -> usize {
    match sequence.between(0, 100) {
        0..=39 => sequence.between(600, 2_000),
        40..=74 => sequence.between(2_000, 4_500),
        75..=94 => sequence.between(4_500, 9_000),
        _ => sequence.between(9_000, 24_000),
    }
}

/// A conversation of exactly `messages` messages.
pub fn conversation(messages: usize, seed: u64) -> Vec<Message> {
    let corpus = corpus();
    let mut sequence = Sequence(seed | 1);
    let mut out: Vec<Message> = Vec::with_capacity(messages);
    out.push(Message::system(slice(&corpus, &mut sequence, 2_000)));
    out.push(Message::user(slice(&corpus, &mut sequence, 400)));
    let mut call = 0usize;
    while out.len() < messages {
        let roll = sequence.between(0, 100);
        if roll < 4 {
            let chars = sequence.between(100, 800);
            out.push(Message::user(slice(&corpus, &mut sequence, chars)));
        } else if roll < 25 {
            let chars = sequence.between(100, 1_500);
            out.push(Message::assistant(slice(&corpus, &mut sequence, chars)));
        } else {
            let parallel = if sequence.percent(80) {
                1
            } else {
                sequence.between(2, 4)
            };
            let calls: Vec<(String, &str, String)> = (0..parallel)
                .map(|_| {
                    call += 1;
                    let tool = TOOLS[sequence.between(0, TOOLS.len())];
                    (format!("call_{call}"), tool, format!("{{\"n\": {call}}}"))
                })
                .collect();
            let refs: Vec<(&str, &str, &str)> = calls
                .iter()
                .map(|(id, tool, args)| (id.as_str(), *tool, args.as_str()))
                .collect();
            out.push(Message::assistant_calls("", &refs));
            for (id, _, _) in &calls {
                let size = result_size(&mut sequence);
                out.push(Message::tool_result(
                    id.clone(),
                    slice(&corpus, &mut sequence, size),
                ));
            }
        }
    }
    // Cut at exactly `messages`, without leaving a call whose results were cut off.
    out.truncate(messages);
    while out
        .last()
        .is_some_and(|message| !message.tool_calls.is_empty())
    {
        out.pop();
        out.push(Message::assistant("checkpoint"));
    }
    out
}

/// The conversation as chat-completions JSON Lines, the format `panewise window` reads.
pub fn to_jsonl(messages: &[Message]) -> String {
    let mut text = String::new();
    for message in messages {
        text.push_str(&openai::to_value(message).to_string());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_have_the_asked_size_and_about_two_kilobytes_per_message() {
        let messages = conversation(2_000, 7);
        assert_eq!(messages.len(), 2_000);
        let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
        let average = bytes / messages.len();
        assert!((1_500..2_800).contains(&average), "average {average}");
        assert_eq!(conversation(500, 7), conversation(500, 7));
    }
}
