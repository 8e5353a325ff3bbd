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
    anthropic_breakpoints_after_edit, block_hash, first_changed_block, Block, CachePricing,
    CacheRules, CallCache, PromptCache,
};
use panewise_window::{
    Conversation, EditDecision, ExtractiveSummarizer, Measured, Message, Role, StageMemory,
    StrategyConfig, Usage, VisitContext, VisitOutcome, WindowEdit, WindowRecord, WindowStage,
};
use serde::Serialize;

use crate::anchor::{anchor, placeholder_content, Anchoring, Calibration};
use crate::error::EvalError;
use crate::loss::{LossEvent, LossIndex, LossKind, Standing};
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
    /// The loss events behind `evicted_before_use` and `refetches`, one per count, in call
    /// order (evicted-before-use after the call's re-fetches). Not in the JSON lines; empty in
    /// summed totals.
    #[serde(skip)]
    pub events: Vec<LossEvent>,
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
    /// The cost of the calls that have a reading, priced from what the provider recorded
    /// (its input, cache read and cache write counts, and the output scaled to the run's
    /// final usage); `None` without prices or readings.
    pub recorded_cost_usd: Option<f64>,
    /// The replay's own cost of the same calls (those with a reading), to set beside
    /// `recorded_cost_usd`.
    pub cost_on_recorded_usd: Option<f64>,
    /// Calls before which the provider's cache had lapsed: the time since the previous call
    /// passed the rules' lifetime ([`cache_lifetime_ms`]), so everything cached was gone.
    pub cache_expiries: u64,
}

/// Whether the provider's cache had lapsed before `call`: the time since the call before it
/// passed `lifetime` — unless the call's own reading says otherwise, since what the provider
/// recorded wins over a modelled lifetime: a call that read more than the head from the cache
/// (what other sessions keep warm) found its prefix still there (a longer-lived cache, or a
/// provider that keeps it).
fn lapsed_before(
    call: &crate::recording::ModelCall,
    previous_at: Option<u64>,
    lifetime: Option<u64>,
    head_tokens: u64,
) -> bool {
    let (Some(at), Some(before), Some(lifetime)) = (call.at_ms, previous_at, lifetime) else {
        return false;
    };
    at.saturating_sub(before) > lifetime
        && call
            .usage
            .is_none_or(|usage| usage.cache_read <= head_tokens)
}

/// How long a cached prefix lives unused, in milliseconds, under `rules`: Anthropic's
/// default 5-minute lifetime (each read renews it); OpenAI's documented 5 to 10 minutes of
/// inactivity, taken at its shortest; Gemini's implicit cache states none, so the same
/// 5 minutes is assumed. `None` without a cache.
pub fn cache_lifetime_ms(rules: CacheRules) -> Option<u64> {
    match rules {
        CacheRules::Anthropic(_) | CacheRules::OpenAi(_) | CacheRules::Gemini(_) => Some(300_000),
        CacheRules::None => None,
    }
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
/// messages with their anchored token counts ([`crate::anchor`]), the loss index, and the size
/// of the hidden head.
#[derive(Debug, Clone)]
pub struct Prepared<'r> {
    recording: std::borrow::Cow<'r, Recording>,
    hashes: Vec<u64>,
    anchoring: Anchoring,
    /// The head's blocks: one, or two when the first reading shows part of it already in the
    /// provider's cache (then the first is that part, and it is cached before the replay).
    head: Vec<Block>,
    /// The part of the head the provider held before the session's first call.
    primed: Option<Block>,
    /// Per call, how many times the head changed before it: where the provider's recorded
    /// cache read ends inside the head and short of the previous request, the agent sent
    /// another head (a changed system prompt or tool list), under every strategy alike.
    head_versions: Vec<u64>,
    loss: LossIndex,
}

impl<'r> Prepared<'r> {
    /// Prepares `recording`, anchored on its own readings; a recording without readings is
    /// counted at the table's ratio ([`Calibration::table`]).
    pub fn new(recording: &'r Recording) -> Self {
        Self::calibrated(recording, &Calibration::table())
    }

    /// Prepares `recording`: anchored on its readings when it has any, else counted with
    /// `calibration` and marked estimated. The head (system prompt and tool definitions, which
    /// most formats do not record) comes from the first reading; without one, from the
    /// recorded system prompt when there is one, else from the calibration.
    pub fn calibrated(recording: &'r Recording, calibration: &Calibration) -> Self {
        let total_output = recording.recorded_total.as_ref().map(|t| t.usage.output);
        let mut anchoring = anchor(
            recording,
            &recording.missing_results,
            total_output,
            calibration,
        );
        if anchoring.estimated {
            if let Some(system) = recording.system.as_deref() {
                let bytes = system.len() as f64;
                anchoring.head_tokens = (bytes / anchoring.bytes_per_token).ceil() as u64;
            }
        }
        let recording = if recording.missing_results.is_empty() {
            std::borrow::Cow::Borrowed(recording)
        } else {
            let mut filled = recording.clone();
            for &(index, tokens) in &anchoring.missing {
                if let Some(message) = filled.messages.get_mut(index) {
                    message.content = placeholder_content(tokens);
                }
            }
            std::borrow::Cow::Owned(filled)
        };
        let hashes = recording.messages.iter().map(message_hash).collect();
        let system = recording.system.as_deref().unwrap_or("");
        let head_tokens = anchoring.head_tokens;
        // The first call reads from the cache what earlier sessions of the same account wrote
        // (tool definitions, the fixed system prompt): that part was cached before this one.
        let already_cached = recording
            .calls
            .first()
            .and_then(|call| call.usage)
            .map_or(0, |usage| usage.cache_read.min(head_tokens));
        let (head, primed) = match head_tokens {
            0 => (Vec::new(), None),
            _ if already_cached == 0 => (
                vec![Block {
                    hash: block_hash(&["head", system]),
                    tokens: head_tokens,
                }],
                None,
            ),
            _ => {
                let shared = Block {
                    hash: block_hash(&["head, cached before the session", system]),
                    tokens: already_cached,
                };
                let mut head = vec![shared];
                if head_tokens > already_cached {
                    head.push(Block {
                        hash: block_hash(&["head", system]),
                        tokens: head_tokens - already_cached,
                    });
                }
                (head, Some(shared))
            }
        };
        let loss = LossIndex::new(&recording.messages, recording.system.as_deref());
        let head_versions = head_versions(&recording, head_tokens);
        Self {
            recording,
            hashes,
            anchoring,
            head,
            primed,
            head_versions,
            loss,
        }
    }

    /// The recording (with its missing spans filled by sized placeholders).
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// The tokens of the hidden head (system prompt and tools) each request carries.
    pub fn head_tokens(&self) -> u64 {
        self.head.iter().map(|block| block.tokens).sum()
    }

    /// How the counts were anchored.
    pub fn anchoring(&self) -> &Anchoring {
        &self.anchoring
    }

    /// The tokens of the raw history's request at a call that sent `sent` messages.
    fn raw_prompt(&self, sent: usize) -> u64 {
        let messages = self.anchoring.message_tokens.get(..sent).unwrap_or(&[]);
        messages.iter().fold(self.head_tokens(), |sum, tokens| {
            sum.saturating_add(*tokens)
        })
    }
}

/// Per call, the head's version: it goes up at a call whose recorded cache read ends inside
/// the head and more than 2 % short of the previous call's whole prompt.
fn head_versions(recording: &Recording, head_tokens: u64) -> Vec<u64> {
    let mut version = 0u64;
    let mut previous_prompt: Option<u64> = None;
    recording
        .calls
        .iter()
        .map(|call| {
            if let Some(usage) = call.usage {
                if let Some(previous) = previous_prompt {
                    let short = usage.cache_read.saturating_mul(50) < previous.saturating_mul(49);
                    if short && usage.cache_read < head_tokens {
                        version = version.saturating_add(1);
                    }
                }
                previous_prompt = Some(usage.prompt());
            }
            version
        })
        .collect()
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

    /// Mirrors `edit` (pre-change indices) on the origins, before the conversation applies it;
    /// `call` is the index of the call whose visit made it (what left, left there).
    fn mirror(&mut self, edit: &WindowEdit, call: usize) {
        for replacement in &edit.replaced {
            if let Some(origin) = self.origins.get_mut(replacement.index) {
                let hash = block_hash(&["masked", &replacement.content]);
                if let Origin::Recorded(index) | Origin::Masked(index, _) = *origin {
                    *origin = Origin::Masked(index, hash);
                    // Masked again: it left at the first mask.
                    if let Some(standing) = self.standing.get_mut(index) {
                        if standing.left_at().is_none() {
                            *standing = Standing::Masked(call);
                        }
                    }
                    self.masked_terms
                        .insert(index, crate::loss::text_forms(&replacement.content));
                }
            }
        }
        let end = edit.removed.end.min(self.origins.len());
        let start = edit.removed.start.min(end);
        let removed: Vec<Origin> = self.origins.drain(start..end).collect();
        for origin in removed {
            if let Origin::Recorded(index) | Origin::Masked(index, _) = origin {
                if let Some(standing) = self.standing.get_mut(index) {
                    // A masked message removed later left when it was masked.
                    *standing = Standing::Removed(standing.left_at().unwrap_or(call));
                }
                self.masked_terms.remove(&index);
            }
        }
        if let Some(note) = &edit.inserted {
            let number = self.notes.len();
            self.notes.push(crate::loss::text_forms(note));
            self.origins
                .insert(start, Origin::Note(number, block_hash(&["note", note])));
        }
    }

    /// The request's blocks: the head, then one per message. A recorded message weighs its
    /// anchored count; a masked one its replacement at the message's ratio; a stage note at
    /// the session's last ratio.
    fn blocks(&self, call_index: usize) -> Vec<Block> {
        let anchoring = &self.prepared.anchoring;
        let mut blocks = Vec::with_capacity(self.origins.len() + 2);
        let version = self
            .prepared
            .head_versions
            .get(call_index)
            .copied()
            .unwrap_or(0);
        let last_head = self.prepared.head.len().saturating_sub(1);
        for (index, block) in self.prepared.head.iter().enumerate() {
            let mut block = *block;
            if index == last_head && version > 0 && Some(block) != self.prepared.primed {
                block.hash = block.hash.rotate_left(7) ^ version;
            }
            blocks.push(block);
        }
        let held = self.conversation.messages();
        for (position, origin) in self.origins.iter().enumerate() {
            let bytes = || held.get(position).map_or(0, crate::anchor::message_bytes);
            let tokens = match origin {
                Origin::Recorded(index) => anchoring.message_tokens.get(*index).copied(),
                Origin::Masked(index, _) => anchoring
                    .message_ratio
                    .get(*index)
                    .map(|ratio| crate::anchor::tokens_at(bytes(), *ratio)),
                Origin::Note(..) => None,
            }
            .unwrap_or_else(|| crate::anchor::tokens_at(bytes(), anchoring.bytes_per_token));
            blocks.push(Block {
                hash: origin.hash(&self.prepared.hashes),
                tokens,
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
    let (figures, _) = replay_under(prepared, strategy, settings, &[])?;
    Ok(figures)
}

/// Replays `prepared` through `strategy` under `settings`, and bills the same requests under
/// each of `also` too: the figures under `settings`, then one per `also`, which differ from
/// the first only in the cache's reads and writes and the cost. Only right when the strategy
/// decides the same under every one of them (the same `cache_pricing`, or no cache guard).
pub fn replay_under(
    prepared: &Prepared<'_>,
    strategy: Option<&StrategyConfig>,
    settings: &ReplaySettings,
    also: &[ReplaySettings],
) -> Result<(Figures, Vec<Figures>), EvalError> {
    let mut also_caches: Vec<PromptCache> =
        also.iter().map(|s| PromptCache::new(s.cache)).collect();
    let mut also_figures = vec![Figures::default(); also.len()];
    let recording = prepared.recording();
    let stage: Option<WindowStage<Message>> = strategy.map(|c| c.build_stage()).transpose()?;
    let summarizer = ExtractiveSummarizer::default();
    let summarizer_model = summarizer_model(strategy);
    let mut summary_unpriced = false;
    let mut memory = StageMemory::new();
    let mut records: Vec<WindowRecord> = Vec::new();
    let mut window = Window::new(prepared);
    let mut cache = PromptCache::new(settings.cache);
    // The last request's block hashes: the own loop places a breakpoint before what changed.
    let mut sent_hashes: Vec<u64> = Vec::new();
    let mut figures = Figures::default();
    let mut measured: Option<Measured> = None;
    let counter = Conversation::<Message>::new();
    let head_blocks = prepared.head.len();
    if let Some(primed) = prepared.primed {
        // What the provider held before the session, as a request of its own, not billed.
        cache.call(&[primed], &[0]);
        for cache in &mut also_caches {
            cache.call(&[primed], &[0]);
        }
    }

    let mut last_call_at: Option<u64> = None;
    for (call_index, call) in recording.calls.iter().enumerate() {
        let head_tokens = prepared.head_tokens();
        let lapsed = |rules: CacheRules| {
            lapsed_before(call, last_call_at, cache_lifetime_ms(rules), head_tokens)
        };
        if lapsed(settings.cache) {
            cache.clear();
            figures.cache_expiries = figures.cache_expiries.saturating_add(1);
        }
        for ((other, cache), billed_figures) in
            also.iter().zip(&mut also_caches).zip(&mut also_figures)
        {
            if lapsed(other.cache) {
                cache.clear();
                billed_figures.cache_expiries = billed_figures.cache_expiries.saturating_add(1);
            }
        }
        last_call_at = call.at_ms.or(last_call_at);
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
                    window.mirror(edit, call_index);
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

        let blocks = window.blocks(call_index);
        let hashes: Vec<u64> = blocks.iter().map(|block| block.hash).collect();
        let changed = first_changed_block(&sent_hashes, &hashes);
        sent_hashes = hashes;
        let breakpoints = breakpoints_for(settings.cache, blocks.len(), head_blocks, changed);
        let billed = cache.call(&blocks, &breakpoints);
        let sent = blocks
            .iter()
            .fold(0u64, |sum, block| sum.saturating_add(block.tokens));
        let next_sent = recording
            .calls
            .get(call_index + 1)
            .map_or(recording.messages.len(), |next| next.sent);
        let answer = recording.messages.get(call.sent..next_sent).unwrap_or(&[]);
        // Output as recorded, scaled to the run's final usage where it is recorded.
        let output = prepared
            .anchoring
            .output_tokens
            .get(call_index)
            .copied()
            .unwrap_or(0);

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
        if let (Some(usage), Some(prices)) = (call.usage, &settings.prices) {
            let cost = prices.cost(usage.input, usage.cache_read, usage.cache_write, output);
            *figures.recorded_cost_usd.get_or_insert(0.0) += cost;
            let replayed = prices.cost(billed.uncached, billed.read, billed.write, output);
            *figures.cost_on_recorded_usd.get_or_insert(0.0) += replayed;
        }
        for ((other, cache), billed_figures) in
            also.iter().zip(&mut also_caches).zip(&mut also_figures)
        {
            let breakpoints = breakpoints_for(other.cache, blocks.len(), head_blocks, changed);
            let billed = cache.call(&blocks, &breakpoints);
            bill(billed_figures, other, billed, output, call.usage.is_some());
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
            let raw = prepared.raw_prompt(call.sent);
            figures.counted_prompt_tokens = figures.counted_prompt_tokens.saturating_add(raw);
        }

        // What the answer's actions needed, against the window this call sent. Each count is
        // one event, so the counts and the listed events cannot disagree.
        let mut made_calls = false;
        let mut evicted: Option<LossEvent> = None;
        for (offset, message) in answer.iter().enumerate() {
            if message.role != Role::Assistant || message.tool_calls.is_empty() {
                continue;
            }
            made_calls = true;
            let at = call.sent + offset;
            figures.tool_calls = figures
                .tool_calls
                .saturating_add(message.tool_calls.len() as u64);
            figures.events.extend(prepared.loss.refetches(
                call_index,
                at,
                message.tool_calls.len(),
                &window.standing,
            ));
            if evicted.is_none() {
                evicted = prepared.loss.evicted_before_use(
                    call_index,
                    at,
                    call.sent,
                    &window.standing,
                    &|term| window.term_in_notes(term),
                );
            }
        }
        if made_calls {
            figures.action_calls = figures.action_calls.saturating_add(1);
        }
        figures.events.extend(evicted);

        measured = Some(Measured {
            usage: Usage {
                input: sent,
                output,
            },
            sent_messages: window.conversation.len(),
            iteration,
        });
    }
    let count = |kind: LossKind| {
        figures
            .events
            .iter()
            .filter(|event| event.kind == kind)
            .count() as u64
    };
    figures.evicted_before_use = count(LossKind::EvictedBeforeUse);
    figures.refetches = count(LossKind::Refetch);
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
    let also_figures = also
        .iter()
        .zip(also_figures)
        .map(|(other, billed)| {
            // The summaries are priced at the input and output prices, which every rule set
            // shares; only the calls' cache differs.
            let summary_cost_usd = other.prices.as_ref().and(figures.summary_cost_usd);
            Figures {
                cache_read: billed.cache_read,
                cache_write: billed.cache_write,
                uncached: billed.uncached,
                cache_read_on_recorded: billed.cache_read_on_recorded,
                cache_write_on_recorded: billed.cache_write_on_recorded,
                cache_expiries: billed.cache_expiries,
                // Set beside the recorded cost under the recording's own rules only.
                recorded_cost_usd: None,
                cost_on_recorded_usd: None,
                cost_usd: match (billed.cost_usd, summary_cost_usd) {
                    (Some(calls), Some(summaries)) => Some(calls + summaries),
                    (calls, _) => calls,
                },
                summary_cost_usd,
                ..figures.clone()
            }
        })
        .collect();
    Ok((figures, also_figures))
}

/// The breakpoints a request of `blocks` blocks carries under `rules`: as the own loop
/// places them ([`anthropic_breakpoints_after_edit`]).
fn breakpoints_for(
    rules: CacheRules,
    blocks: usize,
    head_blocks: usize,
    first_changed: Option<usize>,
) -> Vec<usize> {
    match rules {
        CacheRules::Anthropic(_) => {
            anthropic_breakpoints_after_edit(blocks, head_blocks, first_changed)
        }
        CacheRules::OpenAi(_) | CacheRules::Gemini(_) | CacheRules::None => Vec::new(),
    }
}

/// Adds one call's cache split and cost, billed under `settings`, to `figures`.
fn bill(
    figures: &mut Figures,
    settings: &ReplaySettings,
    billed: CallCache,
    output: u64,
    recorded: bool,
) {
    figures.cache_read = figures.cache_read.saturating_add(billed.read);
    figures.cache_write = figures.cache_write.saturating_add(billed.write);
    figures.uncached = figures.uncached.saturating_add(billed.uncached);
    if let Some(prices) = &settings.prices {
        let cost = prices.cost(billed.uncached, billed.read, billed.write, output);
        *figures.cost_usd.get_or_insert(0.0) += cost;
    }
    if recorded {
        figures.cache_read_on_recorded = figures.cache_read_on_recorded.saturating_add(billed.read);
        figures.cache_write_on_recorded =
            figures.cache_write_on_recorded.saturating_add(billed.write);
    }
}
