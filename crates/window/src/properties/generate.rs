//! Generated cases: a strategy configuration with varied options, and a history that grows
//! between visits the way an agent's does. Everything is drawn from one [`SplitMix64`], so a
//! case is its seed.

use crate::cache::CachePricing;
use crate::config::{CacheGuard, PinConfig, StrategyConfig, STRATEGY_NAMES};
use crate::error::SummarizerError;
use crate::message::{Message, ToolCall};
use crate::provider::{
    AnthropicCompact, ClearThinking, ClearToolUses, OpenAiCompaction, ProviderContext,
    ThinkingKeep, MIN_COMPACT_TRIGGER,
};
use crate::record::{Retain, Standing};
use crate::strategy::{ExtractiveSummarizer, SummaryRequest, SummaryResponse};
use crate::visit::Findings;

/// splitmix64: a small, fast, fixed-seed generator. It is the whole of a case's randomness,
/// so a seed reproduces a case exactly.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high.saturating_sub(low).saturating_add(1))
    }

    /// A `usize` in `low..=high`.
    pub fn count(&mut self, low: usize, high: usize) -> usize {
        self.between(low as u64, high as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items`, uniformly.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// `excludeTools` (W87): mostly none; else one or two of the history's tools, now and then
/// one no result ever names.
fn exclude_tools(rng: &mut SplitMix64) -> Vec<String> {
    match rng.below(10) {
        0..=5 => Vec::new(),
        6 | 7 => vec![rng.pick(&TOOLS).to_string()],
        8 => vec![rng.pick(&TOOLS).to_string(), rng.pick(&TOOLS).to_string()],
        _ => vec!["never_called".to_string()],
    }
}

/// The strategies the properties cover, in [`STRATEGY_NAMES`] order: every local and every
/// provider-side one.
pub const STRATEGIES: [&str; 9] = STRATEGY_NAMES;

/// A configuration of strategy `STRATEGIES[index]` with options drawn from `rng`.
pub fn strategy_config(index: usize, rng: &mut SplitMix64) -> StrategyConfig {
    let pins = PinConfig {
        keep_last_tool_results: *rng.pick(&[0, 1, 2, 2, 3, 5]),
        keep_ledger_facts: *rng.pick(&[0, 1, 4, 4]),
        exclude_tools: exclude_tools(rng),
        cache: cache_guard(rng),
    };
    // The Anthropic-named masking settings (W86, W88), drawn so that some visits fall short
    // of the minimum or under the trigger and some do not.
    let clear_at_least_tokens = rng
        .chance(30)
        .then(|| *rng.pick(&[1, 50, 400, 2_000, 20_000]));
    let trigger_tokens = rng.chance(30).then(|| *rng.pick(&[1, 300, 2_500, 20_000]));
    let keep_recent_turns = *rng.pick(&[1, 2, 3, 4, 6, 8]);
    let threshold_tokens = *rng.pick(&[50, 300, 1_000, 2_500, 6_000, 20_000]);
    let keep_recent_observations = *rng.pick(&[0, 1, 2, 3, 10]);
    let retain = *rng.pick(&[Retain::Conversation, Retain::Discard]);
    let model = rng.pick(&["extractive", "summarizer-model"]).to_string();
    match index % STRATEGIES.len() {
        0 => StrategyConfig::SlidingWindow {
            keep_recent_turns,
            pins,
        },
        1 => StrategyConfig::TokenBudget {
            threshold_tokens,
            keep_recent_turns,
            pins,
        },
        2 => StrategyConfig::SummarizeOldest {
            threshold_tokens,
            keep_recent_turns,
            model,
            retain,
            pins,
        },
        3 => StrategyConfig::ObservationMasking {
            keep_recent_observations,
            clear_at_least_tokens,
            trigger_tokens,
            pins,
        },
        4 => StrategyConfig::Hybrid {
            threshold_tokens,
            keep_recent_turns,
            keep_recent_observations,
            clear_at_least_tokens,
            model,
            retain,
            pins,
        },
        5 => StrategyConfig::Provider(ProviderContext::AnthropicClearToolUses(ClearToolUses {
            trigger_tokens: rng.between(1, 200_000),
            keep_tool_uses: rng.below(6),
            clear_at_least_tokens: rng.chance(50).then(|| rng.between(1, 50_000)),
            exclude_tools: if rng.chance(50) {
                vec!["read_file".to_string()]
            } else {
                Vec::new()
            },
            clear_tool_inputs: rng.chance(50),
        })),
        6 => StrategyConfig::Provider(ProviderContext::AnthropicClearThinking(ClearThinking {
            keep_thinking_turns: if rng.chance(20) {
                ThinkingKeep::All
            } else {
                ThinkingKeep::Turns(rng.between(1, 5))
            },
        })),
        7 => StrategyConfig::Provider(ProviderContext::AnthropicCompact(AnthropicCompact {
            trigger_tokens: rng.between(MIN_COMPACT_TRIGGER, 300_000),
            instructions: rng.chance(30).then(|| "Keep file paths.".to_string()),
            pause_after_compaction: rng.chance(30),
        })),
        _ => StrategyConfig::Provider(ProviderContext::OpenAiCompaction(OpenAiCompaction {
            compact_threshold: rng.between(1, 200_000),
        })),
    }
}

/// Mostly no guard; sometimes a payback horizon, an overflow level, or shadow mode.
fn cache_guard(rng: &mut SplitMix64) -> CacheGuard {
    if rng.chance(70) {
        return CacheGuard::default();
    }
    CacheGuard {
        payback_calls: rng.chance(80).then(|| rng.between(1, 30)),
        overflow_tokens: rng.chance(50).then(|| rng.between(100, 20_000)),
        shadow: rng.chance(15),
    }
}

/// The provider's cache multipliers, for about a third of the visits.
pub fn cache_pricing(rng: &mut SplitMix64) -> Option<CachePricing> {
    rng.chance(35).then(|| CachePricing {
        read: 0.1,
        write: *rng.pick(&[1.0, 1.25]),
    })
}

/// How a visit's summary request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// [`ExtractiveSummarizer`] keeping this many characters per line.
    Extractive(usize),
    /// A short generated summary.
    Short,
    /// A generated summary longer than the span it summarizes.
    NotSmaller,
    /// The summarizer failed.
    Failure,
}

impl Answer {
    /// One answer, drawn with the weights a flaky summarizer would show.
    pub fn draw(rng: &mut SplitMix64) -> Self {
        match rng.below(20) {
            0..=7 => Answer::Extractive(rng.count(4, 120)),
            8..=12 => Answer::Short,
            13..=16 => Answer::NotSmaller,
            _ => Answer::Failure,
        }
    }

    /// Answers `request`.
    pub fn answer(self, request: SummaryRequest<'_>) -> Result<SummaryResponse, SummarizerError> {
        match self {
            Answer::Extractive(chars) => Ok(ExtractiveSummarizer::new(chars).summarize(request)),
            Answer::Short => Ok(SummaryResponse {
                text: format!(
                    "The user asked for a fix; {} messages of tool work.",
                    request.transcript.len()
                ),
                usage: Some(crate::record::Usage {
                    input: 900,
                    output: 40,
                }),
            }),
            Answer::NotSmaller => {
                let transcript = request.render();
                Ok(SummaryResponse {
                    text: format!("{transcript}\n{transcript}"),
                    usage: None,
                })
            }
            Answer::Failure => Err(SummarizerError::new("model overloaded (529)")),
        }
    }
}

/// Tool names, one of them not a plain identifier (it must never be printed in a notice).
const TOOLS: [&str; 7] = [
    "read_file",
    "grep",
    "bash",
    "write_file",
    "list_dir",
    "web.fetch",
    "run tests!",
];

/// Text bases: plain words over lines, multi-byte characters (so characters and bytes
/// differ), and JSON-like output.
const BASES: [&str; 3] = [
    "fn main() { println!(\"hello\"); }\nerror[E0308]: mismatched types at src/lib.rs:42\n",
    "résumé naïve café 中文字符 ✓ — ünïcödé lines\nδοκιμή テスト\n",
    "{\"path\":\"src/a.rs\",\"line\":7,\"match\":\"let x = 1;\"},",
];

/// A text of exactly `chars` characters: whole copies of a base, then a prefix of it. Built
/// a slice at a time, since the long outputs are most of a case's bytes.
pub fn text(rng: &mut SplitMix64, chars: usize) -> String {
    let base = *rng.pick(&BASES);
    let base_chars = base.chars().count();
    let mut text = String::with_capacity(chars * 2);
    for _ in 0..chars / base_chars {
        text.push_str(base);
    }
    let rest = chars % base_chars;
    let cut = base
        .char_indices()
        .nth(rest)
        .map_or(base.len(), |(at, _)| at);
    text.push_str(&base[..cut]);
    text
}

/// A history as an agent builds it, plus what the run's caller knows about it.
#[derive(Debug)]
pub struct History {
    /// The messages appended since the last time the caller took them.
    pub fresh: Vec<Message>,
    /// Calls made but not answered yet: `(id, tool)`.
    pub pending: Vec<(String, String)>,
    /// What the person said for this run (the first request).
    pub said: Option<String>,
    /// The model's declared standings, when the agent has a findings ledger.
    pub findings: Option<Findings>,
    /// Every call id answered so far, for standings.
    answered: Vec<String>,
    next_call: u64,
    clock_ms: u64,
}

impl History {
    /// The opening of a run: a system prompt (almost always), sometimes notes an earlier
    /// visit left, and the person's request.
    pub fn open(rng: &mut SplitMix64) -> Self {
        let mut history = Self {
            fresh: Vec::new(),
            pending: Vec::new(),
            said: None,
            findings: rng.chance(35).then(Findings::new),
            answered: Vec::new(),
            next_call: 0,
            clock_ms: 1_000,
        };
        let system = rng.chance(92);
        // A window read from a file cut mid-run (no system prompt, which would come first) may
        // open on a result whose call is gone (W6).
        if !system && rng.chance(40) {
            let chars = rng.count(1, 800);
            let mut orphan = Message::tool_result("call_before_the_window", text(rng, chars));
            if rng.chance(50) {
                orphan.tool_name = Some("read_file".to_string());
            }
            history.push(orphan);
            history.answered.push("call_before_the_window".to_string());
        }
        if system {
            let chars = rng.count(20, 1_500);
            let system = Message::system(text(rng, chars));
            history.push(system);
        }
        // Notes an earlier visit of this run left at the head of the window.
        if rng.chance(15) {
            let note = format!(
                "{}: 12 earlier messages were dropped at iteration 3 by the \"token-budget\" \
                 window strategy. Nothing was summarized.]",
                crate::notice::DROP_NOTICE_PREFIX
            );
            history.push(note_message(note));
        }
        if rng.chance(15) {
            let summary = text(rng, 200);
            let frame = crate::notice::summary_frame(
                9,
                2,
                "extractive",
                Retain::Conversation,
                &summary,
                "",
            );
            history.push(note_message(frame));
        }
        let chars = rng.count(5, 600);
        let request = text(rng, chars);
        if rng.chance(6) {
            // A run the harness started (a sub-agent's): no person said anything, so there is
            // no current request until one does (W19).
            history.push(Message::user(request).injected("harness"));
        } else {
            history.said = Some(request.clone());
            history.push(Message::user(request));
        }
        history
    }

    fn push(&mut self, mut message: Message) {
        self.clock_ms += 1;
        if message.born_at_ms.is_none() {
            message.born_at_ms = Some(self.clock_ms);
        }
        self.fresh.push(message);
    }

    /// Takes the messages appended since the last take.
    pub fn take(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.fresh)
    }

    /// The agent works for `segments` more steps. The first thing it does is answer the calls
    /// left pending; the last step may leave calls pending again.
    pub fn grow(&mut self, rng: &mut SplitMix64, segments: usize) {
        let pending = std::mem::take(&mut self.pending);
        for (index, (id, tool)) in pending.into_iter().enumerate() {
            if index == 0 && rng.chance(20) {
                self.interlude(rng);
            }
            self.result(rng, id, &tool);
        }
        for segment in 0..segments {
            let last = segment + 1 == segments;
            match rng.below(100) {
                0..=7 => {
                    let chars = rng.count(3, 400);
                    let message = Message::user(text(rng, chars));
                    self.push(message);
                }
                8..=12 => {
                    let chars = rng.count(10, 300);
                    let message = Message::user(text(rng, chars)).injected("harness");
                    self.push(message);
                }
                13..=20 => {
                    let chars = rng.count(0, 500);
                    let message = Message::assistant(text(rng, chars));
                    self.push(message);
                }
                21..=22 => {
                    let chars = rng.count(10, 200);
                    let message = Message::system(text(rng, chars));
                    self.push(message);
                }
                _ => self.tool_step(rng, last),
            }
        }
        self.declare(rng);
    }

    /// An assistant message making one to four (parallel) calls, and their results. On the
    /// last step a call may stay pending.
    fn tool_step(&mut self, rng: &mut SplitMix64, last: bool) {
        let count = *rng.pick(&[1, 1, 1, 2, 2, 3, 4]);
        let calls: Vec<ToolCall> = (0..count)
            .map(|_| {
                self.next_call += 1;
                ToolCall {
                    id: format!("call_{}", self.next_call),
                    name: rng.pick(&TOOLS).to_string(),
                    args: "{\"path\":\"src/lib.rs\"}".to_string(),
                }
            })
            .collect();
        let chars = rng.count(0, 200);
        let mut call = Message::assistant(text(rng, chars));
        call.tool_calls = calls.clone();
        if rng.chance(10) {
            call.stage_id = Some("agent".to_string());
        }
        self.push(call);
        for (index, call) in calls.into_iter().enumerate() {
            if last && rng.chance(25) {
                self.pending.push((call.id, call.name));
                continue;
            }
            if index > 0 && rng.chance(10) || index == 0 && rng.chance(8) {
                self.interlude(rng);
            }
            self.result(rng, call.id, &call.name);
        }
    }

    /// A message between a call and its result: commentary, an injected note, or a nested
    /// call with its own result.
    fn interlude(&mut self, rng: &mut SplitMix64) {
        match rng.below(3) {
            0 => {
                let chars = rng.count(1, 200);
                let message = Message::assistant(text(rng, chars));
                self.push(message);
            }
            1 => {
                let chars = rng.count(1, 200);
                let message = Message::user(text(rng, chars)).injected("harness");
                self.push(message);
            }
            _ => {
                self.next_call += 1;
                let id = format!("call_{}", self.next_call);
                let tool = rng.pick(&TOOLS).to_string();
                let message = Message::assistant_calls("", &[(id.as_str(), tool.as_str(), "{}")]);
                self.push(message);
                self.result(rng, id, &tool);
            }
        }
    }

    /// The result of call `id` of `tool`: ordinary, failed, empty or long.
    fn result(&mut self, rng: &mut SplitMix64, id: String, tool: &str) {
        let content = match rng.below(20) {
            0..=1 => format!("error: {tool} failed: permission denied (os error 13)"),
            2 => String::new(),
            3..=5 => {
                let chars = rng.count(2_000, 9_000);
                text(rng, chars)
            }
            _ => {
                let chars = rng.count(1, 1_200);
                text(rng, chars)
            }
        };
        let mut message = Message::tool_result(id.clone(), content);
        if rng.chance(40) {
            message.tool_name = Some(tool.to_string());
        }
        if rng.chance(10) {
            message.stage_id = Some("tools".to_string());
        }
        self.push(message);
        self.answered.push(id);
    }

    /// The model files standings on some results, facts among them.
    fn declare(&mut self, rng: &mut SplitMix64) {
        let Some(findings) = self.findings.as_mut() else {
            return;
        };
        for id in &self.answered {
            if rng.chance(20) {
                let standing = *rng.pick(&[
                    Standing::Fact,
                    Standing::Fact,
                    Standing::Open,
                    Standing::Noise,
                    Standing::RuledOut,
                ]);
                findings.declare(id.clone(), standing);
            }
        }
        self.answered.clear();
    }
}

/// A note the stage put in the window on an earlier visit, as [`crate::WindowMessage::stage_note`]
/// builds it.
fn note_message(content: String) -> Message {
    <Message as crate::WindowMessage>::stage_note(content, 500)
}
