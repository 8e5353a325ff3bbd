//! The replay of one recording through one strategy (or the raw history): at each recorded
//! model call, the request the agent would have sent under the strategy, with the strategy's
//! state carried from call to call as the own loop carries it — one [`Conversation`] that
//! every plan edits in place and every call appends to, one [`StageMemory`], the records filed
//! so far, and the last request's size as the usage reading of the next visit.
//!
//! Each request is priced as the provider would bill it: the blocks it is made of (the hidden
//! head of system prompt and tools, then one block per message) go through a
//! [`PromptCache`] under the provider's rules, and the split into uncached, cache-read and
//! cache-written tokens is priced per kind. A summarizing strategy's summaries are written by
//! the offline [`ExtractiveSummarizer`] and billed as the extra model call they would be.

use panewise_window::cache::{
    anthropic_breakpoints, block_hash, Block, CachePricing, CacheRules, PromptCache,
};
use panewise_window::{
    Conversation, EditDecision, ExtractiveSummarizer, Measured, Message, Role, StageMemory,
    StrategyConfig, Usage, VisitContext, VisitOutcome, WindowEdit, WindowRecord, WindowStage,
};
use serde::Serialize;

use crate::error::EvalError;
use crate::loss::{LossIndex, Standing};
use crate::recording::Recording;

/// US dollar prices per million tokens of one model, per kind of token.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prices {
    /// The model the prices are for.
    pub model: String,
    /// Input neither read from nor written to the cache.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the cache.
    pub cache_read: f64,
    /// Input written to the cache.
    pub cache_write: f64,
}

impl Prices {
    /// The cost in US dollars of the given token counts.
    pub fn cost(&self, uncached: u64, read: u64, write: u64, output: u64) -> f64 {
        (uncached as f64 * self.input
            + read as f64 * self.cache_read
            + write as f64 * self.cache_write
            + output as f64 * self.output)
            / 1_000_000.0
    }
}

/// What a replay needs besides the recording and the strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySettings {
    /// The provider cache rules the requests are billed under.
    pub cache: CacheRules,
    /// The prices, when the model has some; costs are `None` without them.
    pub prices: Option<Prices>,
    /// The cache multipliers the stage judges each edit with (its record's cache impact, the
    /// `paybackCalls` guard); `None` without a cache or prices.
    pub cache_pricing: Option<CachePricing>,
    /// The prices of the model the strategy's summaries are asked of (its `model` option),
    /// when it names one the price table has. The offline `extractive` summarizer costs
    /// nothing; a named model without prices here is billed at `prices` when it is the
    /// session's own model, and otherwise leaves the cost unknown (`None`), never billed as
    /// another model.
    pub summarizer_prices: Option<Prices>,
}

/// The model a summarizing strategy asks its summaries of; `None` for the others.
fn summarizer_model(config: Option<&StrategyConfig>) -> Option<&str> {
    match config? {
        StrategyConfig::SummarizeOldest { model, .. } | StrategyConfig::Hybrid { model, .. } => {
            Some(model)
        }
        _ => None,
    }
}

/// What a summary of `asked` input and `answered` output tokens costs when asked of `model`:
/// nothing for the offline `extractive` summarizer, the summarizer's prices for a named model
/// (the session's prices when it is the session's model), `None` when no price is known.
pub fn summary_cost(
    model: &str,
    settings: &ReplaySettings,
    asked: u64,
    answered: u64,
) -> Option<f64> {
    if model == "extractive" {
        return Some(0.0);
    }
    [&settings.summarizer_prices, &settings.prices]
        .into_iter()
        .flatten()
        .find(|prices| prices.model == model)
        .map(|prices| prices.cost(asked, 0, 0, answered))
}

/// The figures of one recording under one strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    /// Model calls replayed.
    pub calls: u64,
    /// Tool calls the recorded agent made in answer to them.
    pub tool_calls: u64,
    /// Input tokens sent over all calls (head and messages, as the stage counts them).
    pub sent_tokens: u64,
    /// Of those, read from the cache.
    pub cache_read: u64,
    /// Of those, written to the cache.
    pub cache_write: u64,
    /// Of those, billed at the plain input price.
    pub uncached: u64,
    /// Output tokens of the calls (as recorded, or counted from the answers).
    pub output_tokens: u64,
    /// Input and output tokens of the summaries the strategy asked for.
    pub summary_tokens: u64,
    /// The cost of the calls in US dollars, cache counted; `None` without prices.
    pub cost_usd: Option<f64>,
    /// The cost of the summaries, priced as the summarizer's model ([`summary_cost`]) and
    /// included in `cost_usd`; `None` without summaries, or when the summarizer has no price
    /// (then `cost_usd` is `None` too).
    pub summary_cost_usd: Option<f64>,
    /// Visits of the stage (one per call; 0 for the raw history).
    pub visits: u64,
    /// Visits that engaged (filed a record).
    pub engaged: u64,
    /// Visits that changed the window.
    pub edits: u64,
    /// Edits the cache guard held back (`paybackCalls`) or only recorded (`shadow`).
    pub held: u64,
    /// Calls whose action named a term held only by removed or masked content.
    pub evicted_before_use: u64,
    /// Calls that made at least one tool call (the evicted-before-use denominator).
    pub action_calls: u64,
    /// Tool calls that repeated an identical call whose result was gone.
    pub refetches: u64,
    /// The prompt tokens the provider recorded over the calls that have a reading.
    pub recorded_prompt_tokens: u64,
    /// The tokens the stage counts for the same calls of the raw history.
    pub counted_prompt_tokens: u64,
    /// The cache reads the provider recorded over the calls that have a reading.
    pub recorded_cache_read: u64,
    /// The cache writes the provider recorded over the calls that have a reading.
    pub recorded_cache_write: u64,
    /// The simulated cache reads of the calls that have a reading, to set beside the recorded.
    pub cache_read_on_recorded: u64,
    /// The simulated cache writes of the calls that have a reading.
    pub cache_write_on_recorded: u64,
}

/// Where one message of the window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A message of the recorded history, by index, as recorded.
    Recorded(usize),
    /// A message of the recorded history whose content the strategy replaced.
    Masked(usize, u64),
    /// A note the stage inserted (a drop notice or a summary frame), by note number.
    Note(usize, u64),
}

impl Origin {
    fn hash(self, recorded: &[u64]) -> u64 {
        match self {
            Origin::Recorded(index) => recorded.get(index).copied().unwrap_or(0),
            Origin::Masked(_, hash) | Origin::Note(_, hash) => hash,
        }
    }
}

/// What every strategy's replay of one recording shares: the blocks of the recorded
/// messages, the loss index, and the size of the hidden head.
#[derive(Debug, Clone)]
pub struct Prepared<'r> {
    recording: &'r Recording,
    hashes: Vec<u64>,
    /// Tokens of each message's tool-call arguments, which the stage's counter (content only)
    /// leaves out but the provider bills.
    call_tokens: Vec<u64>,
    head: Option<Block>,
    loss: LossIndex,
}

impl<'r> Prepared<'r> {
    /// Prepares `recording`. The head (system prompt and tool definitions, which most formats
    /// do not record) is sized from the first call's recorded prompt minus what the stage
    /// counts of the messages it sent; without a reading, from the recorded system prompt.
    pub fn new(recording: &'r Recording) -> Self {
        let counter = Conversation::<Message>::new();
        let hashes = recording.messages.iter().map(message_hash).collect();
        let call_tokens: Vec<u64> = recording
            .messages
            .iter()
            .map(|message| {
                message
                    .tool_calls
                    .iter()
                    .map(|call| counter.count_tokens(&call.args))
                    .sum()
            })
            .collect();
        let system_tokens = recording
            .system
            .as_deref()
            .map_or(0, |system| counter.count_tokens(system));
        let head_tokens = match recording.calls.first() {
            Some(first) => match first.usage {
                Some(usage) => {
                    let sent = recording.messages.get(..first.sent).unwrap_or(&[]);
                    let counted: u64 = sent
                        .iter()
                        .zip(&call_tokens)
                        .map(|(message, calls)| {
                            counter
                                .count_tokens(&message.content)
                                .saturating_add(*calls)
                        })
                        .sum();
                    usage.prompt().saturating_sub(counted).max(system_tokens)
                }
                None => system_tokens,
            },
            None => system_tokens,
        };
        let head = (head_tokens > 0).then(|| Block {
            hash: block_hash(&["head", recording.system.as_deref().unwrap_or("")]),
            tokens: head_tokens,
        });
        Self {
            recording,
            hashes,
            call_tokens,
            head,
            loss: LossIndex::new(&recording.messages, recording.system.as_deref()),
        }
    }

    /// The recording.
    pub fn recording(&self) -> &Recording {
        self.recording
    }

    /// The tokens of the hidden head (system prompt and tools) each request carries.
    pub fn head_tokens(&self) -> u64 {
        self.head.map_or(0, |head| head.tokens)
    }
}

fn message_hash(message: &Message) -> u64 {
    let mut parts: Vec<&str> = vec![message.role.as_str(), &message.content];
    if let Some(id) = message.tool_call_id.as_deref() {
        parts.push(id);
    }
    for call in &message.tool_calls {
        parts.push(&call.id);
        parts.push(&call.name);
        parts.push(&call.args);
    }
    block_hash(&parts)
}

/// One replay in progress.
struct Window<'p> {
    prepared: &'p Prepared<'p>,
    conversation: Conversation<Message>,
    origins: Vec<Origin>,
    standing: Vec<Standing>,
    notes: Vec<std::collections::BTreeSet<String>>,
    masked_terms: std::collections::BTreeMap<usize, std::collections::BTreeSet<String>>,
    pushed: usize,
}

impl<'p> Window<'p> {
    fn new(prepared: &'p Prepared<'p>) -> Self {
        Self {
            prepared,
            conversation: Conversation::new(),
            origins: Vec::new(),
            standing: vec![Standing::Unsent; prepared.recording.messages.len()],
            notes: Vec::new(),
            masked_terms: std::collections::BTreeMap::new(),
            pushed: 0,
        }
    }

    /// Appends the recorded messages up to `sent` that no earlier call sent.
    fn push_through(&mut self, sent: usize) {
        let messages = &self.prepared.recording.messages;
        for index in self.pushed..sent.min(messages.len()) {
            if let Some(message) = messages.get(index) {
                self.conversation.push(message.clone());
                self.origins.push(Origin::Recorded(index));
                if let Some(standing) = self.standing.get_mut(index) {
                    *standing = Standing::Visible;
                }
            }
        }
        self.pushed = self.pushed.max(sent.min(messages.len()));
    }

    /// Mirrors `edit` (pre-change indices) on the origins, before the conversation applies it.
    fn mirror(&mut self, edit: &WindowEdit) {
        for replacement in &edit.replaced {
            if let Some(origin) = self.origins.get_mut(replacement.index) {
                let hash = block_hash(&["masked", &replacement.content]);
                if let Origin::Recorded(index) | Origin::Masked(index, _) = *origin {
                    *origin = Origin::Masked(index, hash);
                    if let Some(standing) = self.standing.get_mut(index) {
                        *standing = Standing::Masked;
                    }
                    self.masked_terms
                        .insert(index, crate::loss::terms_of(&replacement.content));
                }
            }
        }
        let end = edit.removed.end.min(self.origins.len());
        let start = edit.removed.start.min(end);
        let removed: Vec<Origin> = self.origins.drain(start..end).collect();
        for origin in removed {
            if let Origin::Recorded(index) | Origin::Masked(index, _) = origin {
                if let Some(standing) = self.standing.get_mut(index) {
                    *standing = Standing::Removed;
                }
                self.masked_terms.remove(&index);
            }
        }
        if let Some(note) = &edit.inserted {
            let number = self.notes.len();
            self.notes.push(crate::loss::terms_of(note));
            self.origins
                .insert(start, Origin::Note(number, block_hash(&["note", note])));
        }
    }

    /// The request's blocks: the head, then one per message.
    fn blocks(&self) -> Vec<Block> {
        let mut blocks = Vec::with_capacity(self.origins.len() + 1);
        blocks.extend(self.prepared.head);
        for (position, origin) in self.origins.iter().enumerate() {
            let extra = match origin {
                Origin::Recorded(index) | Origin::Masked(index, _) => {
                    self.prepared.call_tokens.get(*index).copied().unwrap_or(0)
                }
                Origin::Note(..) => 0,
            };
            blocks.push(Block {
                hash: origin.hash(&self.prepared.hashes),
                tokens: self
                    .conversation
                    .tokens_in(position..position + 1)
                    .saturating_add(extra),
            });
        }
        blocks
    }

    fn term_in_notes(&self, term: &str) -> bool {
        let visible_notes = self.origins.iter().filter_map(|origin| match origin {
            Origin::Note(number, _) => self.notes.get(*number),
            _ => None,
        });
        for note in visible_notes {
            if note.contains(term) {
                return true;
            }
        }
        self.masked_terms.values().any(|terms| terms.contains(term))
    }
}

/// Replays `prepared` through `strategy` (`None`: the raw history, every message kept).
pub fn replay(
    prepared: &Prepared<'_>,
    strategy: Option<&StrategyConfig>,
    settings: &ReplaySettings,
) -> Result<Figures, EvalError> {
    let recording = prepared.recording;
    let stage: Option<WindowStage<Message>> = strategy.map(|c| c.build_stage()).transpose()?;
    let summarizer = ExtractiveSummarizer::default();
    let summarizer_model = summarizer_model(strategy);
    let mut summary_unpriced = false;
    let mut memory = StageMemory::new();
    let mut records: Vec<WindowRecord> = Vec::new();
    let mut window = Window::new(prepared);
    let mut cache = PromptCache::new(settings.cache);
    let mut figures = Figures::default();
    let mut measured: Option<Measured> = None;
    let counter = Conversation::<Message>::new();
    let head_blocks = usize::from(prepared.head.is_some());

    for (call_index, call) in recording.calls.iter().enumerate() {
        let iteration = u32::try_from(call_index)
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        window.push_through(call.sent);
        if let Some(stage) = &stage {
            let current_request = recording
                .messages
                .get(..call.sent)
                .unwrap_or(&[])
                .iter()
                .rev()
                .find(|message| message.role == Role::User && message.injected_by.is_none())
                .map(|message| message.content.as_str());
            let mut context = VisitContext::new(iteration, u64::from(iteration) * 1_000);
            context.measured = measured;
            context.current_request = current_request;
            context.previous_records = &records;
            context.cache_pricing = settings.cache_pricing;
            let mut summary = None;
            let outcome = stage.visit(&window.conversation, context, &mut memory)?;
            let plan = match outcome {
                VisitOutcome::NotEngaged => None,
                VisitOutcome::Ready(plan) => Some(plan),
                VisitOutcome::NeedsSummary(pending) => {
                    let request = pending.request();
                    let asked = counter.count_tokens(&request.render());
                    let response = summarizer.summarize(request);
                    summary = Some((asked, counter.count_tokens(&response.text)));
                    Some(pending.complete(Ok(response)))
                }
            };
            figures.visits = figures.visits.saturating_add(1);
            if let Some(mut plan) = plan {
                figures.engaged = figures.engaged.saturating_add(1);
                if plan.record.cache.as_ref().is_some_and(|impact| {
                    matches!(impact.decision, EditDecision::Held | EditDecision::Shadow)
                }) {
                    figures.held = figures.held.saturating_add(1);
                }
                if let Some(edit) = &plan.edit {
                    figures.edits = figures.edits.saturating_add(1);
                    window.mirror(edit);
                }
                window.conversation.apply(&mut plan)?;
                records.push(plan.record);
                if let Some((asked, answered)) = summary {
                    figures.summary_tokens = figures
                        .summary_tokens
                        .saturating_add(asked.saturating_add(answered));
                    let model = summarizer_model.unwrap_or("extractive");
                    match summary_cost(model, settings, asked, answered) {
                        Some(cost) => *figures.summary_cost_usd.get_or_insert(0.0) += cost,
                        None => summary_unpriced = true,
                    }
                }
            }
        }

        let blocks = window.blocks();
        let breakpoints = match settings.cache {
            CacheRules::Anthropic(_) => anthropic_breakpoints(blocks.len(), head_blocks),
            CacheRules::OpenAi(_) | CacheRules::Gemini(_) | CacheRules::None => Vec::new(),
        };
        let billed = cache.call(&blocks, &breakpoints);
        let sent = blocks
            .iter()
            .fold(0u64, |sum, block| sum.saturating_add(block.tokens));
        let next_sent = recording
            .calls
            .get(call_index + 1)
            .map_or(recording.messages.len(), |next| next.sent);
        let answer = recording.messages.get(call.sent..next_sent).unwrap_or(&[]);
        let output = match call.usage {
            Some(usage) => usage.output,
            None => answer
                .iter()
                .filter(|message| message.role == Role::Assistant)
                .map(|message| {
                    counter.count_tokens(&message.content).saturating_add(
                        message
                            .tool_calls
                            .iter()
                            .map(|c| counter.count_tokens(&c.args))
                            .sum(),
                    )
                })
                .sum(),
        };

        figures.calls = figures.calls.saturating_add(1);
        figures.sent_tokens = figures.sent_tokens.saturating_add(sent);
        figures.cache_read = figures.cache_read.saturating_add(billed.read);
        figures.cache_write = figures.cache_write.saturating_add(billed.write);
        figures.uncached = figures.uncached.saturating_add(billed.uncached);
        figures.output_tokens = figures.output_tokens.saturating_add(output);
        if let Some(prices) = &settings.prices {
            let cost = prices.cost(billed.uncached, billed.read, billed.write, output);
            *figures.cost_usd.get_or_insert(0.0) += cost;
        }
        if let Some(usage) = call.usage {
            figures.recorded_prompt_tokens = figures
                .recorded_prompt_tokens
                .saturating_add(usage.prompt());
            figures.recorded_cache_read =
                figures.recorded_cache_read.saturating_add(usage.cache_read);
            figures.recorded_cache_write = figures
                .recorded_cache_write
                .saturating_add(usage.cache_write);
            figures.cache_read_on_recorded =
                figures.cache_read_on_recorded.saturating_add(billed.read);
            figures.cache_write_on_recorded =
                figures.cache_write_on_recorded.saturating_add(billed.write);
            let raw = recording
                .messages
                .get(..call.sent)
                .unwrap_or(&[])
                .iter()
                .zip(&prepared.call_tokens)
                .fold(prepared.head_tokens(), |sum, (message, calls)| {
                    sum.saturating_add(counter.count_tokens(&message.content))
                        .saturating_add(*calls)
                });
            figures.counted_prompt_tokens = figures.counted_prompt_tokens.saturating_add(raw);
        }

        // What the answer's actions needed, against the window this call sent.
        let mut made_calls = false;
        for (offset, message) in answer.iter().enumerate() {
            if message.role != Role::Assistant || message.tool_calls.is_empty() {
                continue;
            }
            made_calls = true;
            let at = call.sent + offset;
            figures.tool_calls = figures
                .tool_calls
                .saturating_add(message.tool_calls.len() as u64);
            figures.refetches =
                figures
                    .refetches
                    .saturating_add(u64::from(prepared.loss.refetches(
                        at,
                        message.tool_calls.len(),
                        &window.standing,
                    )));
        }
        if made_calls {
            figures.action_calls = figures.action_calls.saturating_add(1);
            let evicted = answer.iter().enumerate().any(|(offset, message)| {
                message.role == Role::Assistant
                    && !message.tool_calls.is_empty()
                    && prepared.loss.evicted_before_use(
                        call.sent + offset,
                        call.sent,
                        &window.standing,
                        &|term| window.term_in_notes(term),
                    )
            });
            if evicted {
                figures.evicted_before_use = figures.evicted_before_use.saturating_add(1);
            }
        }

        measured = Some(Measured {
            usage: Usage {
                input: sent,
                output,
            },
            sent_messages: window.conversation.len(),
            iteration,
        });
    }
    if summary_unpriced {
        // A summary of a model without a price: the total is not known, and not shown as if
        // the summaries were free.
        figures.cost_usd = None;
        figures.summary_cost_usd = None;
    }
    if figures.cost_usd.is_none() {
        figures.summary_cost_usd = None;
    }
    if let (Some(total), Some(summary)) = (&mut figures.cost_usd, figures.summary_cost_usd) {
        *total += summary;
    }
    Ok(figures)
}
