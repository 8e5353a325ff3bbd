//! The window ledger of a session: a JSON Lines file next to its session log
//! (`<log>.window.jsonl`), written as the loop runs, one whole line per write. It holds every
//! message the conversation was given (in the chat-completions shape `panewise window`
//! reads) and every visit of the window stage: the [`WindowRecord`] of an engaged visit, or
//! a line saying the strategy did not engage, and every model call's tokens by kind with their
//! cost split. `panewise replay` prints a line per visit and per call from it, and `panewise
//! window` takes its messages as a conversation.

use std::path::{Path, PathBuf};

use panewise_protocol::SessionStats;
use panewise_providers::call_usage::{cost_text, grouped};
use panewise_providers::{CallTokens, CostSplit, PriceTable};
use panewise_window::record::RecordDetail;
use panewise_window::{
    AppliedContextEdit, EditDecision, ProviderEditRecord, RefusalReason, WindowFloor, WindowRecord,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line of the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LedgerLine {
    /// A message appended to the conversation, in the chat-completions shape.
    Message {
        /// The message.
        message: Value,
    },
    /// An engaged visit and the record it filed.
    Visit {
        /// The record.
        record: Box<WindowRecord>,
    },
    /// An edit the provider made to a call's context (a provider-side strategy), reconciled
    /// with the local count of what it removed.
    ProviderEdit {
        /// The record, marked as the provider's.
        record: Box<ProviderEditRecord>,
    },
    /// Spans the window (or the provider) let go of, kept whole in the archive beside the log
    /// (W75): each named by id, with how it left and its description, so a recall of it can
    /// be traced to the visit that archived it.
    Archived {
        /// The iteration of the visit or call that let them go (0 for spans reloaded before
        /// the first call).
        iteration: u32,
        /// True for spans reloaded from a resumed session's archive.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        reloaded: bool,
        /// The spans.
        spans: Vec<ArchivedEntry>,
    },
    /// A visit at which the strategy did not engage.
    Idle {
        /// The iteration.
        iteration: u32,
        /// The strategy.
        strategy: String,
        /// The last call's reported prompt tokens, when there was a call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        measured_tokens: Option<u64>,
        /// The strategy's token threshold, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold_tokens: Option<u64>,
        /// Present while the stage stands down on its floor (W82): what must stay, in tokens,
        /// as its stand-down record said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        floor_tokens: Option<u64>,
    },
    /// A model call that ended: its tokens by kind and what they cost by kind. Ledgers written
    /// before it existed have none, and read as before.
    Call {
        /// The iteration (the session's model calls, counted from 1).
        iteration: u32,
        /// The model that answered, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The call's tokens; absent when the API reported no prompt figure.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<CallTokens>,
        /// The cost split; absent when the model has no price (never a split of zeros).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<CostSplit>,
        /// Where the call's request first differed from the previous request of the session
        /// (a window edit, a new tool), so the provider's cached prefix broke there, and the
        /// breakpoint placed before it; absent when the request only appended to the last.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix_break: Option<PrefixBreak>,
        /// The request's tool list: how many definitions it sent and their tokens, counted as
        /// the window counts messages, and how many MCP tools a tool budget deferred. Ledgers
        /// written before it existed have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<ToolsEntry>,
    },
}

impl LedgerLine {
    /// A `call` line with where its request broke the cached prefix and its tool list; any
    /// other line as it is.
    pub fn with_request(mut self, at: Option<PrefixBreak>, list: ToolsEntry) -> Self {
        if let LedgerLine::Call {
            prefix_break,
            tools,
            ..
        } = &mut self
        {
            *prefix_break = at;
            *tools = Some(list);
        }
        self
    }
}

/// A request's tool list in the ledger's `call` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolsEntry {
    /// Definitions sent.
    pub count: usize,
    /// Their tokens (the definitions' JSON, counted with the window's counter).
    pub tokens: u64,
    /// MCP tools deferred behind `mcp_tool_search` (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deferred: usize,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// Where a request's prefix first differs from the previous request's, in the ledger's `call`
/// line: what the provider's cache can no longer read, and the Anthropic breakpoint the own
/// loop placed just before it so that only what follows is written again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixBreak {
    /// The first message that differs, as an index in the conversation the request sent;
    /// absent when the head (system prompt or tools) differs, so nothing was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<usize>,
    /// The first content block that differs, counted over the request's messages from 0 (one
    /// per text, tool call or tool result); absent with `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    /// The content block that carries the breakpoint placed before it (`block - 1`); absent
    /// when none was placed: another API than Anthropic, caching off, or no block between the
    /// head's breakpoints and the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint_block: Option<usize>,
}

/// One archived span as the ledger names it; its whole text is in the archive file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedEntry {
    /// The span id.
    pub id: panewise_window::SpanId,
    /// How it left.
    pub removal: panewise_window::Removal,
    /// Its one-line description.
    pub description: String,
}

impl ArchivedEntry {
    /// The entry naming `span`.
    pub fn of(span: &panewise_window::ArchivedSpan) -> Self {
        Self {
            id: span.id.clone(),
            removal: span.removal,
            description: span.description.clone(),
        }
    }
}

/// The ledger beside `log`: `<log>.window.jsonl`.
pub fn ledger_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".window.jsonl");
    PathBuf::from(name)
}

/// True for a file name that is a window ledger rather than a session log.
pub fn is_ledger(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".window.jsonl")
}

/// What a ledger file holds; a line that does not parse (a cut-off last line) is counted in
/// `skipped`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    /// Every line read, in order.
    pub lines: Vec<LedgerLine>,
    /// Lines that did not parse.
    pub skipped: usize,
}

impl Ledger {
    /// Parses a ledger's text.
    pub fn parse(text: &str) -> Self {
        let mut ledger = Ledger::default();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            match serde_json::from_str(line) {
                Ok(parsed) => ledger.lines.push(parsed),
                Err(_) => ledger.skipped = ledger.skipped.saturating_add(1),
            }
        }
        ledger
    }

    /// The records of the engaged visits, in order.
    pub fn records(&self) -> impl Iterator<Item = &WindowRecord> {
        self.lines.iter().filter_map(|line| match line {
            LedgerLine::Visit { record } => Some(record.as_ref()),
            _ => None,
        })
    }

    /// The messages given to the conversation, in the chat-completions shape.
    pub fn messages(&self) -> impl Iterator<Item = &Value> {
        self.lines.iter().filter_map(|line| match line {
            LedgerLine::Message { message } => Some(message),
            _ => None,
        })
    }

    /// The number of model calls the ledger holds.
    pub fn call_count(&self) -> usize {
        self.lines
            .iter()
            .filter(|line| matches!(line, LedgerLine::Call { .. }))
            .count()
    }

    /// One line per visit, engaged or not ([`visit_line`], [`idle_line`]).
    pub fn visit_lines(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|line| matches!(line, LedgerLine::Visit { .. } | LedgerLine::Idle { .. }))
            .filter_map(Self::printed)
            .collect()
    }

    /// What `panewise replay` prints of the ledger, in the order it was written: a line per
    /// visit, per edit a provider reported ([`provider_edit_line`]) and per model call
    /// ([`call_line`]) — a visit of iteration N, then call N. A ledger without call lines
    /// (written before they existed) gives its visits alone.
    pub fn printed_lines(&self) -> Vec<String> {
        self.lines.iter().filter_map(Self::printed).collect()
    }

    /// One ledger line as printed; a message is not.
    fn printed(line: &LedgerLine) -> Option<String> {
        {
            match line {
                LedgerLine::Visit { record } => Some(visit_line(record)),
                LedgerLine::Idle {
                    iteration,
                    strategy,
                    measured_tokens,
                    threshold_tokens,
                    floor_tokens,
                } => Some(match floor_tokens {
                    Some(floor) => stood_down_line(*iteration, strategy, *floor, *threshold_tokens),
                    None => idle_line(*iteration, strategy, *measured_tokens, *threshold_tokens),
                }),
                LedgerLine::ProviderEdit { record } => Some(provider_edit_line(record)),
                LedgerLine::Archived {
                    iteration,
                    reloaded,
                    spans,
                } => Some(archived_line(*iteration, *reloaded, spans)),
                LedgerLine::Call {
                    iteration,
                    model,
                    tokens,
                    cost,
                    ..
                } => Some(call_line(
                    *iteration,
                    model.as_deref(),
                    tokens.as_ref(),
                    cost.as_ref(),
                )),
                LedgerLine::Message { .. } => None,
            }
        }
    }
}

/// Archived spans in one line: each id, how it left and its description.
pub fn archived_line(iteration: u32, reloaded: bool, spans: &[ArchivedEntry]) -> String {
    let listed: Vec<String> = spans
        .iter()
        .map(|span| {
            let how = match span.removal {
                panewise_window::Removal::Dropped => "dropped",
                panewise_window::Removal::Masked => "masked",
                panewise_window::Removal::Folded => "folded",
                panewise_window::Removal::ProviderCleared => "cleared by the provider",
            };
            format!("{} ({how}: {})", span.id, span.description)
        })
        .collect();
    let opening = if reloaded {
        format!(
            "reloaded {} span(s) from the resumed session's archive",
            spans.len()
        )
    } else {
        format!("iteration {iteration}: archived {} span(s)", spans.len())
    };
    format!("{opening}: {}", listed.join("; "))
}

/// A provider's edit in one line: what it did, by its count, with the local estimate beside.
pub fn provider_edit_line(record: &ProviderEditRecord) -> String {
    let what = match &record.edit {
        AppliedContextEdit::ClearedToolUses {
            cleared_tool_uses, ..
        } => match cleared_tool_uses {
            Some(count) => format!("cleared {count} tool use(s)"),
            None => "cleared tool uses".to_owned(),
        },
        AppliedContextEdit::ClearedThinking {
            cleared_thinking_turns,
            ..
        } => match cleared_thinking_turns {
            Some(count) => format!("cleared {count} thinking turn(s)"),
            None => "cleared thinking".to_owned(),
        },
        AppliedContextEdit::Compacted { .. } => "compacted the conversation".to_owned(),
        AppliedContextEdit::Unrecognized { provider_type, .. } => format!(
            "reported an edit panewise does not know ({})",
            provider_type.as_deref().unwrap_or("no type given")
        ),
    };
    let provider = match record.provider_removed_tokens {
        Some(tokens) => format!("{tokens} tokens by its count"),
        None => "no token count given".to_owned(),
    };
    let local = match record.local_estimate_tokens {
        Some(tokens) => format!("{tokens} by the local estimate ({})", record.estimate_basis),
        None => format!("no local estimate: {}", record.estimate_basis),
    };
    format!(
        "iteration {}: {} (the provider's): {what}, {provider}; {local}",
        record.iteration, record.strategy
    )
}

/// The ledger line of a call that ended with `stats` (the fresh input in `input_tokens`, as
/// the API clients report it).
pub fn call_entry(
    iteration: u32,
    model: Option<&str>,
    stats: &SessionStats,
    prices: &PriceTable,
) -> LedgerLine {
    // Priced from the stats themselves, not from the tokens, to keep reasoning priced as the
    // transport priced it.
    let tokens = CallTokens::from_stats(stats);
    let cost = tokens
        .and(model)
        .and_then(|model| prices.split(model, stats));
    LedgerLine::Call {
        iteration,
        model: model.map(str::to_owned),
        tokens,
        cost,
        prefix_break: None,
        tools: None,
    }
}

/// A model call in one line: `call 12 (model): prompt 8,149 = 166 new + 7,983 cache read + 0
/// cache write; 39 out; $0.0035 = $0.0005 input + …`. The model's name is the provider's text:
/// a terminal printer escapes it.
pub fn call_line(
    iteration: u32,
    model: Option<&str>,
    tokens: Option<&CallTokens>,
    cost: Option<&CostSplit>,
) -> String {
    let model = model.map(|model| format!(" ({model})")).unwrap_or_default();
    match tokens {
        Some(tokens) => format!(
            "call {iteration}{model}: {}; {}",
            tokens.text(),
            cost_text(cost)
        ),
        None => format!("call {iteration}{model}: no usage reported"),
    }
}

/// A visit that did not engage, in one line, with why when the ledger says.
pub fn idle_line(
    iteration: u32,
    strategy: &str,
    measured: Option<u64>,
    threshold: Option<u64>,
) -> String {
    let why = match (measured, threshold) {
        (Some(measured), Some(threshold)) => {
            format!(" (the last call's prompt was {measured} tokens, the threshold {threshold})")
        }
        (None, Some(threshold)) => format!(" (no call measured yet; the threshold is {threshold})"),
        _ => String::new(),
    };
    format!("iteration {iteration}: {strategy} did not engage{why}")
}

/// A visit that did not engage because the stage stands down on its floor (W82).
pub fn stood_down_line(
    iteration: u32,
    strategy: &str,
    floor: u64,
    threshold: Option<u64>,
) -> String {
    let threshold = threshold.map_or(String::new(), |threshold| {
        format!(" > threshold {}", grouped(threshold))
    });
    let floor = grouped(floor);
    format!(
        "iteration {iteration}: {strategy} stood down (what must stay is {floor} tokens{threshold}); \
         nothing removed until that changes"
    )
}

/// What must stay, by part, in words: `floor 1,869 > threshold 1 (system prompt and
/// tools 1,857, request 2, kept tail 10 with keepRecentTurns 1)`. Only numbers and fixed words,
/// grouped by thousands like the call lines beside them.
pub fn floor_text(floor: &WindowFloor) -> String {
    let parts = &floor.parts;
    let mut named: Vec<String> = Vec::new();
    for (name, tokens) in [
        ("system prompt and tools", parts.outside_window_tokens),
        ("system messages", parts.system_tokens),
        ("request", parts.current_request_tokens),
        ("pinned", parts.pinned_tokens),
        ("pending calls", parts.pending_tokens),
    ] {
        if tokens > 0 {
            named.push(format!("{name} {}", grouped(tokens)));
        }
    }
    named.push(format!(
        "kept tail {} with keepRecentTurns {}",
        grouped(parts.kept_tail_tokens),
        parts.keep_recent_turns
    ));
    if let Some(saved) = parts.masking_saves_tokens {
        named.push(format!("less {} masking would save", grouped(saved)));
    }
    format!(
        "floor {} > threshold {} ({})",
        grouped(floor.floor_tokens),
        grouped(floor.threshold_tokens),
        named.join(", ")
    )
}

/// Whether the visit asked the summarizer, and what it spent, from a summarizing record.
pub fn summarizer_call(record: &WindowRecord) -> Option<Option<u64>> {
    let compaction = match &record.detail {
        RecordDetail::Compaction(compaction) => compaction,
        RecordDetail::Hybrid(hybrid) => hybrid.compaction.as_ref()?,
        _ => return None,
    };
    let called = compaction.summarizer_tokens.is_some()
        || compaction.summary_chars > 0
        || record
            .refusals
            .iter()
            .any(|refusal| refusal.reason == RefusalReason::SummarizerFailed);
    called.then_some(compaction.summarizer_tokens)
}

/// A visit in one line: the strategy, what left, the characters before and after, the
/// refusals by reason, the pins and the summarizer's call.
pub fn visit_line(record: &WindowRecord) -> String {
    if let Some(floor) = &record.floor {
        return format!(
            "iteration {}: {} stood down: {}; nothing removed until that changes",
            record.iteration,
            record.strategy,
            floor_text(floor)
        );
    }
    if let Some(cache) = &record.cache {
        if matches!(cache.decision, EditDecision::Held | EditDecision::Shadow) {
            // Nothing changed: the record's removal and masking figures are what the edit
            // would have done, so the line says that instead of reporting them as done.
            return format!(
                "iteration {}: {} changed nothing; {}",
                record.iteration, record.strategy, cache.reason
            );
        }
    }
    let mut line = format!(
        "iteration {}: {} removed {} message(s), {} → {} chars",
        record.iteration,
        record.strategy,
        record.removed_message_count,
        record.window_chars_before,
        record.window_chars_after
    );
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for refusal in &record.refusals {
        let name = serde_json::to_value(refusal.reason)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default();
        match reasons.iter_mut().find(|(known, _)| *known == name) {
            Some((_, count)) => *count = count.saturating_add(1),
            None => reasons.push((name, 1)),
        }
    }
    if !reasons.is_empty() {
        let listed: Vec<String> = reasons
            .iter()
            .map(|(name, count)| format!("{name} ×{count}"))
            .collect();
        line.push_str(&format!("; refusals: {}", listed.join(", ")));
    }
    let pins = [&record.observations, &record.ledger_facts]
        .into_iter()
        .flatten()
        .map(|pin| pin.pinned.len())
        .sum::<usize>();
    if pins > 0 {
        line.push_str(&format!("; pins: {pins}"));
    }
    let masked = match &record.detail {
        RecordDetail::Masking(masking) => masking.masked_message_count,
        RecordDetail::Hybrid(hybrid) => hybrid.masking.masked_message_count,
        _ => 0,
    };
    if masked > 0 {
        line.push_str(&format!("; masked {masked}"));
    }
    if let Some(spent) = summarizer_call(record) {
        match spent {
            Some(tokens) => line.push_str(&format!("; summarizer called ({tokens} tokens)")),
            None => line.push_str("; summarizer called"),
        }
    }
    if let Some(cache) = &record.cache {
        line.push_str(&format!("; cache: {}", cache.reason));
    }
    line
}

#[cfg(test)]
mod tests {
    use panewise_window::{Conversation, StageMemory, StrategyConfig, VisitContext};

    use super::*;
    use panewise_window::Message;

    /// W21, W27: a pin outside the keep window holds the last tool result after the current
    /// request, and the visit's line names it, with the removal and the refusals.
    #[test]
    fn a_visit_line_names_the_removal_the_refusals_and_the_pins() {
        let conversation: Conversation = Conversation::from_messages([
            Message::user(format!("old {}", "context ".repeat(200))),
            Message::assistant("an old answer"),
            Message::user("now"),
            Message::assistant_calls("", &[("c1", "shell", r#"{"command":"ls"}"#)]),
            Message::tool_result("c1", "a.txt"),
            Message::assistant("looking"),
            Message::assistant("still looking"),
        ]);
        let config =
            StrategyConfig::from_json(r#"{"strategy":"sliding-window","keepRecentTurns":1}"#)
                .unwrap_or_else(|error| panic!("{error}"));
        let stage = config
            .build_stage::<Message>()
            .unwrap_or_else(|error| panic!("{error}"));
        let mut context = VisitContext::new(3, 0);
        context.current_request = Some("now");
        let plan = stage
            .visit(&conversation, context, &mut StageMemory::new())
            .ok()
            .and_then(|outcome| outcome.resolve(|_| unreachable!("no summary")));
        let Some(plan) = plan else {
            panic!("the sliding window did not engage")
        };
        let line = visit_line(&plan.record);
        assert!(
            line.starts_with("iteration 3: sliding-window removed 2 message(s)"),
            "{line}"
        );
        assert!(line.contains("current-request ×1"), "{line}");
        assert!(line.contains("inside-keep-window ×1"), "{line}");
        assert!(line.contains("pins: 1"), "{line}");
        // The line round-trips through the ledger's own format.
        let text = serde_json::to_string(&LedgerLine::Visit {
            record: Box::new(plan.record.clone()),
        })
        .unwrap_or_default();
        let read = Ledger::parse(&format!("{text}\n{{cut"));
        assert_eq!(read.visit_lines(), vec![line]);
        assert_eq!(read.skipped, 1);
    }

    #[test]
    fn a_visit_line_says_what_the_edit_costs_in_cache_and_a_held_one_changed_nothing() {
        use panewise_window::cache::{CachePricing, CacheRules};
        let mut messages = vec![Message::system("sys"), Message::user("request")];
        for i in 0..6 {
            let id = format!("c{i}");
            messages.push(Message::assistant_calls(
                "",
                &[(id.as_str(), "read_file", "{}")],
            ));
            messages.push(Message::tool_result(id, "x".repeat(4_000)));
        }
        let conversation = Conversation::from_messages(messages);
        let line_for = |config: &str| {
            let stage = StrategyConfig::from_json(config)
                .and_then(|config| config.build_stage::<Message>())
                .expect("a valid configuration");
            let mut memory = StageMemory::new();
            let mut context = VisitContext::new(2, 0);
            context.cache_pricing = CachePricing::for_rules(CacheRules::anthropic());
            let outcome = stage
                .visit(&conversation, context, &mut memory)
                .expect("a visit");
            match outcome.resolve(|_| unreachable!("masking asks for no summary")) {
                Some(plan) => visit_line(&plan.record),
                None => panic!("masking did not engage"),
            }
        };
        let applied = line_for(
            r#"{"strategy": "observation-masking", "keepRecentObservations": 2, "keepLastToolResults": false}"#,
        );
        assert!(applied.contains("masked 4; cache: re-writes"), "{applied}");
        assert!(applied.contains("pays back after"), "{applied}");
        let held = line_for(
            r#"{"strategy": "observation-masking", "keepRecentObservations": 2, "keepLastToolResults": false, "shadow": true}"#,
        );
        assert!(
            held.starts_with("iteration 2: observation-masking changed nothing; shadow: re-writes"),
            "{held}"
        );
    }

    /// Calls are written as the loop ends them and read back between the visits, each with
    /// its tokens by kind and its cost split: golden text, priced with the built-in table
    /// (claude-sonnet-4-5: input 3, cache read 0.3, 5-minute write 3.75, 1-hour write 6,
    /// output 15 US dollars per million tokens).
    #[test]
    fn call_lines_read_back_between_the_visits_with_their_cost_split() {
        let prices = PriceTable::built_in();
        let stats = |fresh, read, write, hour, output| SessionStats {
            input_tokens: Some(fresh),
            cached_input_tokens: Some(read),
            cache_write_input_tokens: Some(write),
            cache_write_1h_input_tokens: hour,
            output_tokens: Some(output),
            ..SessionStats::default()
        };
        let written = [
            LedgerLine::Idle {
                iteration: 1,
                strategy: "token-budget".into(),
                measured_tokens: None,
                threshold_tokens: Some(150_000),
                floor_tokens: None,
            },
            call_entry(
                1,
                Some("claude-sonnet-4-5"),
                &stats(1_000, 0, 10_000, Some(4_000), 200),
                &prices,
            ),
            LedgerLine::Idle {
                iteration: 2,
                strategy: "token-budget".into(),
                measured_tokens: Some(11_000),
                threshold_tokens: Some(150_000),
                floor_tokens: None,
            },
            call_entry(
                2,
                Some("claude-sonnet-4-5"),
                &stats(166, 7_983, 0, None, 39),
                &prices,
            ),
            call_entry(3, Some("no-such-model"), &stats(5, 0, 0, None, 1), &prices),
            call_entry(4, None, &SessionStats::default(), &prices),
        ];
        let mut text = String::new();
        for line in &written {
            text.push_str(&serde_json::to_string(line).unwrap_or_default());
            text.push('\n');
        }
        let read = Ledger::parse(&text);
        assert_eq!(read.lines, written);
        assert_eq!(read.call_count(), 4);
        assert_eq!(
            read.printed_lines().join("\n"),
            "iteration 1: token-budget did not engage (no call measured yet; the threshold is \
             150000)\n\
             call 1 (claude-sonnet-4-5): prompt 11,000 = 1,000 new + 0 cache read + 10,000 \
             cache write (4,000 of them 1h); 200 out; $0.0525 = $0.0030 input + $0.0000 cache \
             read + $0.0225 cache write 5m + $0.0240 cache write 1h + $0.0030 output\n\
             iteration 2: token-budget did not engage (the last call's prompt was 11000 tokens, \
             the threshold 150000)\n\
             call 2 (claude-sonnet-4-5): prompt 8,149 = 166 new + 7,983 cache read + 0 cache \
             write; 39 out; $0.0035 = $0.0005 input + $0.0024 cache read + $0.0000 cache write \
             + $0.0006 output\n\
             call 3 (no-such-model): prompt 5 = 5 new + 0 cache read + 0 cache write; 1 out; \
             cost unknown (no price for the model)\n\
             call 4: no usage reported"
        );
        // The documented shape of a call line, as a reader of the file sees it.
        let line = r#"{"type":"call","iteration":7,"model":"m","tokens":{"prompt":30,"cache_read":20,"cache_write":4,"cache_write_1h":1,"output":2},"cost":{"input_usd":0.5,"cache_read_usd":0.25,"cache_write_5m_usd":0.125,"cache_write_1h_usd":0.0625,"output_usd":1.0,"total_usd":1.9375}}"#;
        assert_eq!(
            Ledger::parse(line).printed_lines(),
            vec![
                "call 7 (m): prompt 30 = 6 new + 20 cache read + 4 cache write (1 of them 1h); 2 \
                 out; $1.9375 = $0.5000 input + $0.2500 cache read + $0.1250 cache write 5m + \
                 $0.0625 cache write 1h + $1.0000 output"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn an_idle_visit_says_what_it_was_held_to() {
        assert_eq!(
            idle_line(2, "token-budget", Some(1_768), Some(150_000)),
            "iteration 2: token-budget did not engage (the last call's prompt was 1768 tokens, \
             the threshold 150000)"
        );
        assert_eq!(
            idle_line(1, "sliding-window", None, None),
            "iteration 1: sliding-window did not engage"
        );
        assert_eq!(
            ledger_path(Path::new("/s/1.jsonl")),
            PathBuf::from("/s/1.jsonl.window.jsonl")
        );
        assert!(is_ledger(&ledger_path(Path::new("/s/1.jsonl"))));
        assert!(!is_ledger(Path::new("/s/1.jsonl")));
    }
}
