//! After a window edit the own loop places one more Anthropic breakpoint, on the content block
//! just before the first message the edit changed, so the provider reads the prefix up to the
//! last one written before the change and writes again only what follows, not the whole
//! conversation after the head. Checked against the workspace mock's prompt cache: its request
//! log shows the breakpoint, and the ledger's `call` lines show where the prefix broke and the
//! cache writes the mock reported.

use panewise_host::agent_loop::ledger::{LedgerLine, PrefixBreak};
use panewise_mock_server::{anthropic_prompt, CachePrompt, Scenario, MAX_BREAKPOINTS};
use panewise_providers::ApiKind;
use panewise_window::cache::{CacheRules, PromptCache};
use serde_json::Value;

use crate::{assert_no_orphans, ledger, run, Setup};

/// How many blocks of an Anthropic prompt come before its messages (the tools, the system
/// prompt), read from the body.
fn head_blocks(body: &Value) -> usize {
    let tools = body["tools"].as_array().map_or(0, Vec::len);
    let system = match &body["system"] {
        Value::Array(parts) => parts.len(),
        Value::Null => 0,
        _ => 1,
    };
    tools + system
}

/// The content blocks of a body's messages, in order.
fn content_blocks(body: &Value) -> Vec<&Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|message| message["content"].as_array().into_iter().flatten())
        .collect()
}

/// The tokens of `prompt`'s blocks from `from` on, as the mock counts them.
fn tokens_from(prompt: &CachePrompt, from: usize) -> u64 {
    prompt
        .blocks
        .iter()
        .skip(from)
        .map(|block| block.tokens)
        .sum()
}

#[tokio::test]
async fn a_masking_edit_puts_a_breakpoint_before_the_first_masked_message() {
    let mut setup = Setup::new(ApiKind::Anthropic, Scenario::LongSession);
    setup.strategy = r#"{"strategy":"observation-masking","keepRecentObservations":3}"#;
    let run = run(setup).await;
    assert_no_orphans(ApiKind::Anthropic, &run.requests);
    let bodies: Vec<&Value> = run.requests.iter().map(|request| &request.body).collect();
    let prompts: Vec<CachePrompt> = bodies
        .iter()
        .map(|body| anthropic_prompt(body).unwrap())
        .collect();
    let calls: Vec<(u64, Option<PrefixBreak>)> = ledger(&run.log)
        .lines
        .into_iter()
        .filter_map(|line| match line {
            LedgerLine::Call {
                tokens,
                prefix_break,
                ..
            } => Some((tokens?.cache_write?, prefix_break)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls.len(),
        prompts.len(),
        "one ledger call line per request"
    );

    // Every request again through a cache of its own, once with the breakpoints sent and
    // once with the head's and the last block's alone (the placement before this change).
    let mut sent = PromptCache::new(CacheRules::anthropic());
    let mut old = PromptCache::new(CacheRules::anthropic());
    let (mut masked_calls, mut write_before, mut write_after) = (0, 0u64, 0u64);
    // The most a write went past what follows the breakpoint's block.
    let mut max_gap = 0u64;
    // The last breakpoint placed before a change: where the next change's read ends.
    let mut last_placed: Option<usize> = None;
    for (index, prompt) in prompts.iter().enumerate() {
        let body = bodies[index];
        let head = head_blocks(body);
        let last = prompt.blocks.len() - 1;
        assert!(
            prompt.breakpoints.len() <= MAX_BREAKPOINTS,
            "request {index}"
        );
        let kept: Vec<usize> = prompt
            .breakpoints
            .iter()
            .copied()
            .filter(|&b| b < head || b == last)
            .collect();
        let written = sent.call(&prompt.blocks, &prompt.breakpoints).write;
        let written_before = old.call(&prompt.blocks, &kept).write;
        let (reported, prefix_break) = calls[index];
        assert_eq!(reported, written, "request {index}: the mock's own cache");

        // The first block that differs from the previous request, found here from the mock's
        // block hashes (which leave `cache_control` out).
        let Some(previous) = index.checked_sub(1).map(|i| &prompts[i]) else {
            continue;
        };
        let changed = previous
            .blocks
            .iter()
            .zip(&prompt.blocks)
            .position(|(a, b)| a.hash != b.hash);
        let Some(changed) = changed.filter(|&at| at > head) else {
            // Appended only, or the head changed (`recall` joined the tools): no breakpoint
            // but the head's and the last block's, and no message named.
            assert_eq!(prompt.breakpoints, kept, "request {index}");
            assert!(
                prefix_break.is_none_or(|found| found.message.is_none()),
                "request {index}: {prefix_break:?}"
            );
            continue;
        };
        // A masked result is what changed, and the block just before it carries a breakpoint.
        let blocks = content_blocks(body);
        let block = changed - head;
        assert_eq!(blocks[block]["type"], "tool_result", "request {index}");
        assert!(
            prompt.breakpoints.contains(&(changed - 1)),
            "request {index}: breakpoints {:?}, first change at {changed}",
            prompt.breakpoints
        );
        assert_eq!(prompt.breakpoints.len(), 4, "request {index}");
        assert_eq!(
            prefix_break.map(|found| (found.block, found.breakpoint_block)),
            Some((Some(block), Some(block - 1))),
            "request {index}"
        );
        let message = prefix_break.and_then(|found| found.message);
        assert!(message.is_some_and(|m| m >= 2), "request {index}");

        // The read ends at the breakpoint the previous edit placed, whose prefix this edit
        // left as it was (or, without one, at the head: the prefixes earlier requests wrote
        // after the head hold what changed), and the write is everything after it: what
        // follows this breakpoint, and the few blocks between the two.
        let read_end = match last_placed {
            Some(placed) if placed < changed - 1 => placed,
            _ => head - 1,
        };
        assert_eq!(
            reported,
            tokens_from(prompt, read_end + 1),
            "request {index}"
        );
        assert!(reported >= tokens_from(prompt, changed), "request {index}");
        // Without the breakpoint, everything after the head is written again.
        assert_eq!(written_before, tokens_from(prompt, head), "request {index}");
        if last_placed.is_some() {
            assert!(reported < written_before, "request {index}");
            let gap = tokens_from(prompt, read_end + 1) - tokens_from(prompt, changed);
            max_gap = max_gap.max(gap);
        }
        masked_calls += 1;
        write_before += written_before;
        write_after += reported;
        last_placed = Some(changed - 1);
    }
    assert!(
        masked_calls >= 20,
        "masking engaged on {masked_calls} calls"
    );
    println!(
        "cache writes of the {masked_calls} masking calls: {write_before} tokens with the head's \
         and the last block's breakpoints, {write_after} with one before the change; at most \
         {max_gap} tokens before the breakpoint written again"
    );
    assert!(
        write_after < write_before,
        "{write_after} against {write_before}"
    );
}
