//! The caller-owned conversation: the window as a list of messages plus everything the stage
//! learned about them when they were pushed.
//!
//! Each message is read once when it is pushed. Its character count, token count, recovered
//! tool name and role are cached, running sums of characters and tokens are kept, and the turn
//! segmentation (W6) is extended as messages arrive. The span-key hash, which only
//! summarize-oldest uses, is not kept: it is taken on the rare visit that must recognise a span
//! already refused, so pushing never pays for it. A visit therefore answers "how large is
//! this span" or "which turn holds this message" in O(1) or O(log n) and never rescans the
//! conversation; applying an edit costs time proportional to what moved.

use std::ops::Range;

use crate::dense::DenseMap;
use crate::error::WindowError;
use crate::message::{Message, Role, WindowMessage};
use crate::notice::{is_compaction_frame, is_drop_notice, is_masked_placeholder};
use crate::plan::{WindowEdit, WindowPlan};
use crate::scan::{char_count, content_hash};
use crate::tokens::{ApproxCounter, TokenCounter};

/// The interned id of "no tool name could be recovered".
pub(crate) const NO_TOOL: u32 = u32::MAX;

/// Tool results of at most this many characters are never masked: a placeholder would not be
/// smaller, and skipping them keeps masking proportional to what it changes.
pub const MASKABLE_MIN_CHARS: u64 = 200;

/// A birth time that was not given, in [`Conversation`]'s column of them.
pub(crate) const NOT_BORN: u64 = u64::MAX;

/// How the stage classifies a message for the anchor and notice rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A user message a person said: a candidate for the current request (W19).
    PersonSaid,
    /// A drop notice the stage wrote (W38).
    DropNotice,
    /// A summary frame the stage wrote (W44).
    CompactionFrame,
    /// A tool result replaced by a masking placeholder.
    MaskedResult,
    /// Anything else.
    Other,
}

impl Kind {
    /// A drop notice or a masking placeholder: a note the stage wrote, with no span of its own
    /// to archive (what it replaced was archived when it was written).
    pub(crate) fn is_stage_note(self) -> bool {
        matches!(self, Kind::DropNotice | Kind::MaskedResult)
    }
}

/// What the stage cached about one message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MessageMeta {
    pub(crate) role: Role,
    pub(crate) kind: Kind,
    pub(crate) chars: u64,
    pub(crate) tokens: u64,
    /// The recovered tool name of a tool result, or [`NO_TOOL`].
    pub(crate) tool: u32,
    /// Calls on this message that no tool result in the window answers.
    pub(crate) unanswered: u32,
    /// When the message was appended, if known.
    pub(crate) born_at_ms: Option<u64>,
}

/// One turn as the stage keeps it (W6): a non-tool message and the tool messages after it,
/// widened to every message from a call through its last result (W7, see `extend_turns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnMeta {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) has_system: bool,
    pub(crate) unanswered: u32,
    pub(crate) starts_with_frame: bool,
}

impl TurnMeta {
    pub(crate) fn end(&self) -> usize {
        self.start + self.len
    }
}

/// A turn of the window, as callers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// The turn's position among the window's turns.
    pub index: usize,
    /// The index of its first message.
    pub start: usize,
    /// How many messages it holds.
    pub len: usize,
}

#[derive(Debug, Clone, Copy)]
struct CallSite {
    /// The sequence number of the assistant message making the call.
    seq: u64,
    tool: u32,
}

/// "No message": sequence numbers count pushes from zero and never reach `u64::MAX` (the
/// counter's increment would overflow first, and 2^64 pushes do not fit in a run).
const NO_SEQ: u64 = u64::MAX;

/// What the window holds about one call id: the call, how many results answer it, and the
/// newest of them. One entry per id (instead of a map per fact) costs one key and one lookup
/// per message; the entry leaves when none of the three is left. Packed to 24 bytes (the
/// optional sequence numbers as [`NO_SEQ`]), since a bulk load writes one per call.
#[derive(Debug, Clone, Copy)]
struct CallFacts {
    /// The sequence number of the assistant message making the call, or [`NO_SEQ`].
    site_seq: u64,
    /// The newest result, as a sequence number, or [`NO_SEQ`].
    result_seq: u64,
    /// The tool the call names; meaningful only beside a call.
    site_tool: u32,
    answers: u32,
}

impl Default for CallFacts {
    fn default() -> Self {
        Self {
            site_seq: NO_SEQ,
            result_seq: NO_SEQ,
            site_tool: NO_TOOL,
            answers: 0,
        }
    }
}

impl CallFacts {
    fn site(&self) -> Option<CallSite> {
        (self.site_seq != NO_SEQ).then_some(CallSite {
            seq: self.site_seq,
            tool: self.site_tool,
        })
    }

    fn set_site(&mut self, site: Option<CallSite>) {
        match site {
            Some(site) => {
                self.site_seq = site.seq;
                self.site_tool = site.tool;
            }
            None => {
                self.site_seq = NO_SEQ;
                self.site_tool = NO_TOOL;
            }
        }
    }

    fn result(&self) -> Option<u64> {
        (self.result_seq != NO_SEQ).then_some(self.result_seq)
    }

    fn set_result(&mut self, result: Option<u64>) {
        self.result_seq = result.unwrap_or(NO_SEQ);
    }

    fn is_empty(&self) -> bool {
        self.site_seq == NO_SEQ && self.answers == 0 && self.result_seq == NO_SEQ
    }
}

/// The window the stage works on, owned by the caller, with its cached facts.
///
/// Push messages as the run appends them; hand the conversation to
/// [`crate::WindowStage::visit`] at each iteration boundary; apply the returned plan with
/// [`Conversation::apply`].
pub struct Conversation<M: WindowMessage = Message> {
    messages: Vec<M>,
    meta: Vec<MessageMeta>,
    /// Each message's `born_at_ms` ([`NOT_BORN`] when unknown), beside `meta` in a column of
    /// its own: a removal reads it for every message it evicts (W13), and reading it out of
    /// the wide `meta` entries cost a visit more than all its other work.
    born: Vec<u64>,
    /// A strictly increasing number per message; it survives removals, so maps keyed by it do
    /// not need re-indexing when earlier messages leave.
    seqs: Vec<u64>,
    next_seq: u64,
    char_prefix: Vec<u64>,
    token_prefix: Vec<u64>,
    /// How many of the messages before each index are notes the stage wrote (drop notices,
    /// masking placeholders): the rest of a range is what a notice for it counts (W73).
    note_prefix: Vec<u32>,
    turns: Vec<TurnMeta>,
    tool_names: Vec<String>,
    /// Interned tool names: the value is the name's index in `tool_names`.
    tool_ids: DenseMap<u32>,
    /// The facts per call id.
    calls: DenseMap<CallFacts>,
    /// Sequence numbers of results per interned tool, oldest first.
    results_by_tool: Vec<Vec<u64>>,
    /// Sequence numbers of every tool result, oldest first.
    tool_results: Vec<u64>,
    /// Sequence numbers of every message a person said, oldest first.
    person_said: Vec<u64>,
    /// Sequence numbers of tool results large enough to be worth masking and not yet masked.
    maskable: Vec<u64>,
    /// Turns that refuse whatever the visit: they hold a system message or an unanswered
    /// call. Sorted, so the refusal engine jumps from one to the next instead of walking.
    blocked: Vec<usize>,
    stage_names: Vec<String>,
    /// Interned stage ids: the value is the id's index in `stage_names`.
    stage_ids: DenseMap<u32>,
    /// Sequence numbers of messages per interned stage id, oldest first.
    messages_by_stage: Vec<Vec<u64>>,
    counter: Box<dyn TokenCounter>,
}

impl<M: WindowMessage> Default for Conversation<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: WindowMessage> std::fmt::Debug for Conversation<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("messages", &self.messages.len())
            .field("turns", &self.turns.len())
            .field("chars", &self.window_chars())
            .finish()
    }
}

impl<M: WindowMessage> Conversation<M> {
    /// An empty conversation counting tokens with the default [`ApproxCounter`].
    pub fn new() -> Self {
        Self::with_counter(Box::new(ApproxCounter))
    }

    /// An empty conversation counting tokens with `counter`.
    pub fn with_counter(counter: Box<dyn TokenCounter>) -> Self {
        Self {
            messages: Vec::new(),
            meta: Vec::new(),
            born: Vec::new(),
            seqs: Vec::new(),
            next_seq: 0,
            char_prefix: vec![0],
            note_prefix: vec![0],
            token_prefix: vec![0],
            turns: Vec::new(),
            tool_names: Vec::new(),
            tool_ids: DenseMap::default(),
            calls: DenseMap::default(),
            results_by_tool: Vec::new(),
            tool_results: Vec::new(),
            person_said: Vec::new(),
            maskable: Vec::new(),
            blocked: Vec::new(),
            stage_names: Vec::new(),
            stage_ids: DenseMap::default(),
            messages_by_stage: Vec::new(),
            counter,
        }
    }

    /// A conversation holding `messages`, counted with the default counter.
    pub fn from_messages(messages: impl IntoIterator<Item = M>) -> Self {
        let mut conversation = Self::new();
        conversation.extend(messages);
        conversation
    }

    /// Appends every message in order.
    pub fn extend(&mut self, messages: impl IntoIterator<Item = M>) {
        let messages = messages.into_iter();
        if self.messages.is_empty() {
            // Collecting a `Vec` reuses its buffer, so a bulk load into an empty conversation
            // reads each message where it already lies instead of moving it.
            let messages: Vec<M> = messages.collect();
            self.reserve_facts(messages.len());
            self.reserve_bulk(&messages);
            for message in &messages {
                self.register(message);
            }
            self.messages = messages;
        } else {
            let (additional, _) = messages.size_hint();
            self.messages.reserve(additional);
            self.reserve_facts(additional);
            for message in messages {
                self.push(message);
            }
        }
    }

    /// Makes room for what a bulk load of `messages` records, counted from their roles and
    /// calls (which costs no read of their text): one call-map entry per call, the result and
    /// turn lists. Each then grows once instead of doubling its way up.
    fn reserve_bulk(&mut self, messages: &[M]) {
        let (mut calls, mut results) = (0usize, 0usize);
        for message in messages {
            calls = calls.saturating_add(message.tool_call_count());
            results = results.saturating_add(usize::from(message.role() == Role::Tool));
        }
        let others = messages.len().saturating_sub(results);
        self.calls.reserve(calls);
        self.tool_results.reserve(results);
        self.maskable.reserve(results);
        self.turns.reserve(others);
        self.person_said.reserve(others);
    }

    /// Makes room for the facts of `additional` more messages, so a bulk load grows each
    /// per-message list once instead of doubling its way up.
    fn reserve_facts(&mut self, additional: usize) {
        self.meta.reserve(additional);
        self.born.reserve(additional);
        self.seqs.reserve(additional);
        self.char_prefix.reserve(additional);
        self.note_prefix.reserve(additional);
        self.token_prefix.reserve(additional);
    }

    /// Records the call `call_id` made by message `seq`; returns whether a result in the
    /// window already answers it. The id is hashed once; a new one goes to the end of the
    /// call list.
    fn record_call(&mut self, call_id: &str, site: CallSite) -> bool {
        let facts = self
            .calls
            .get_or_insert_with(call_id.as_bytes(), CallFacts::default);
        facts.set_site(Some(site));
        facts.answers > 0
    }

    /// Appends one message, counting it once. Costs O(its length), independent of the window.
    pub fn push(&mut self, message: M) {
        self.register(&message);
        self.messages.push(message);
    }

    /// Records everything about a message about to be appended at the end, except the message
    /// itself, which the caller stores next.
    fn register(&mut self, message: &M) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let index = self.meta.len();
        // The content first: it is most of the message's bytes, and streaming through it
        // brings in what was allocated next to it, as a result's call id usually is.
        let mut meta = self.read_text_meta(message);
        // A tool result's call is looked up once, for its tool name and its answer alike.
        let answer = match (message.role(), message.tool_call_id()) {
            (Role::Tool, Some(call_id)) => {
                let facts = self
                    .calls
                    .get_or_insert_with(call_id.as_bytes(), CallFacts::default);
                facts.answers = facts.answers.saturating_add(1);
                facts.set_result(Some(seq));
                Some((facts.site(), facts.answers == 1))
            }
            _ => None,
        };
        let call_tool = answer.and_then(|(site, _)| site).map(|site| site.tool);
        meta.tool = self.result_tool(message, call_tool);
        // The call a tool result answers, for the segmentation (W6, W7).
        let mut call_seq = None;
        match meta.role {
            Role::Assistant => {
                for call_index in 0..message.tool_call_count() {
                    let Some(call) = message.tool_call(call_index) else {
                        continue;
                    };
                    let tool = self.intern(call.name);
                    if !self.record_call(call.id, CallSite { seq, tool }) {
                        meta.unanswered += 1;
                    }
                }
            }
            Role::Tool => {
                self.tool_results.push(seq);
                if let Some((site, first_answer)) = answer {
                    if let (Some(site), true) = (site, first_answer) {
                        self.mark_answered(site.seq);
                    }
                    call_seq = site.map(|site| site.seq);
                }
                if meta.tool != NO_TOOL {
                    self.results_by_tool[meta.tool as usize].push(seq);
                }
                if meta.kind != Kind::MaskedResult && meta.chars > MASKABLE_MIN_CHARS {
                    self.maskable.push(seq);
                }
            }
            Role::User | Role::System => {}
        }
        if meta.kind == Kind::PersonSaid {
            self.person_said.push(seq);
        }
        if let Some(stage) = message.stage_id() {
            let stage = self.intern_stage(stage);
            self.messages_by_stage[stage as usize].push(seq);
        }
        // Token counts come from the caller's counter, so the running sums saturate.
        self.char_prefix
            .push(self.char_prefix[index].saturating_add(meta.chars));
        self.token_prefix
            .push(self.token_prefix[index].saturating_add(meta.tokens));
        self.note_prefix
            .push(self.note_prefix[index].saturating_add(u32::from(meta.kind.is_stage_note())));
        self.extend_turns(index, &meta, call_seq);
        self.born.push(meta.born_at_ms.unwrap_or(NOT_BORN));
        self.meta.push(meta);
        self.seqs.push(seq);
    }

    fn read_meta(&mut self, message: &M) -> MessageMeta {
        let call_tool = match message.role() {
            Role::Tool => message
                .tool_call_id()
                .and_then(|id| self.calls.get(id.as_bytes())?.site())
                .map(|site| site.tool),
            _ => None,
        };
        self.read_meta_with(message, call_tool)
    }

    /// [`Self::read_meta`] with the tool of a result's call already looked up.
    fn read_meta_with(&mut self, message: &M, call_tool: Option<u32>) -> MessageMeta {
        let mut meta = self.read_text_meta(message);
        meta.tool = self.result_tool(message, call_tool);
        meta
    }

    /// What a message's role and text say about it; its tool is left for
    /// [`Self::result_tool`].
    fn read_text_meta(&self, message: &M) -> MessageMeta {
        let content = message.content();
        MessageMeta {
            role: message.role(),
            kind: classify(message),
            chars: char_count(content),
            tokens: self.counter.count(content),
            tool: NO_TOOL,
            unanswered: 0,
            born_at_ms: message.born_at_ms(),
        }
    }

    /// The recovered tool of a tool result: the name it carries, else its call's tool
    /// (`call_tool`); [`NO_TOOL`] for any other message.
    fn result_tool(&mut self, message: &M, call_tool: Option<u32>) -> u32 {
        if message.role() != Role::Tool {
            return NO_TOOL;
        }
        match message.tool_name() {
            Some(name) => self.intern(name),
            None => call_tool.unwrap_or(NO_TOOL),
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        let next = self.tool_names.len() as u32;
        let id = *self.tool_ids.get_or_insert_with(name.as_bytes(), || next);
        if id == next {
            self.tool_names.push(name.to_string());
            self.results_by_tool.push(Vec::new());
        }
        id
    }

    fn intern_stage(&mut self, name: &str) -> u32 {
        let next = self.stage_names.len() as u32;
        let id = *self.stage_ids.get_or_insert_with(name.as_bytes(), || next);
        if id == next {
            self.stage_names.push(name.to_string());
            self.messages_by_stage.push(Vec::new());
        }
        id
    }

    /// Keeps the blocked-turn list in step with one turn's facts.
    #[inline(always)]
    fn sync_blocked(&mut self, turn: usize) {
        let Some(facts) = self.turns.get(turn) else {
            return;
        };
        let blocked = facts.has_system || facts.unanswered > 0;
        // Pushes touch the newest turn, which sorts last: it is listed last or not at all, so
        // it is pushed, popped or left as it is; only an earlier turn needs a search.
        match self.blocked.last() {
            Some(last) if *last > turn => self.resync_blocked(turn, blocked),
            Some(last) if *last == turn => {
                if !blocked {
                    self.blocked.pop();
                }
            }
            _ => {
                if blocked {
                    self.blocked.push(turn);
                }
            }
        }
    }

    /// [`Self::sync_blocked`] for a turn before the last one listed.
    #[inline(never)]
    fn resync_blocked(&mut self, turn: usize, blocked: bool) {
        match self.blocked.binary_search(&turn) {
            Ok(position) if !blocked => {
                self.blocked.remove(position);
            }
            Err(position) if blocked => self.blocked.insert(position, turn),
            _ => {}
        }
    }

    fn mark_answered(&mut self, call_seq: u64) {
        if let Some(index) = self.index_of_seq(call_seq) {
            if let Some(meta) = self.meta.get_mut(index) {
                meta.unanswered = meta.unanswered.saturating_sub(1);
            }
            if let Some(turn) = self.turn_index_of(index) {
                let facts = &mut self.turns[turn];
                facts.unanswered = facts.unanswered.saturating_sub(1);
                self.sync_blocked(turn);
            }
        }
    }

    /// Extends the segmentation by message `index`; `call_seq` is the call a tool result
    /// answers, when that call is in the window.
    ///
    /// W6 alone (every non-tool message opens a turn, a tool message joins the open one) puts
    /// a result in a later turn than its call whenever another message (assistant commentary,
    /// an injected user message, a result of another call) sits between them, and removing
    /// whole turns could then split the pair, which W7 forbids. So a result whose call lives
    /// in an earlier turn merges the turns from the call's turn through its own into one unit
    /// of removal. The refusal engine's rule (whole turns, one contiguous span) then keeps
    /// every call with its results without checking pairs, and a merged turn refuses as a
    /// whole when any part of it does. Each turn is merged away at most once and the call's
    /// turn is found through the call-id map, so a push stays O(1) amortised.
    ///
    /// A result placed before its call (malformed on every wire) is not merged: segmentation
    /// only looks back.
    fn extend_turns(&mut self, index: usize, meta: &MessageMeta, call_seq: Option<u64>) {
        let joins_open_turn = meta.role == Role::Tool && !self.turns.is_empty();
        if joins_open_turn {
            if let Some(turn) = self.turns.last_mut() {
                turn.len += 1;
                turn.unanswered += meta.unanswered;
                turn.has_system |= meta.role == Role::System;
            }
        } else {
            self.turns.push(TurnMeta {
                start: index,
                len: 1,
                has_system: meta.role == Role::System,
                unanswered: meta.unanswered,
                starts_with_frame: meta.kind == Kind::CompactionFrame,
            });
        }
        let last = self.turns.len() - 1;
        let call_turn = call_seq
            .and_then(|seq| self.index_of_seq(seq))
            .filter(|call| *call < index)
            .and_then(|call| self.turn_index_of(call));
        match call_turn {
            Some(first) if first < last => self.merge_turns_from(first),
            _ => self.sync_blocked(last),
        }
    }

    /// Folds turn `first` and every turn after it into one turn (W7).
    fn merge_turns_from(&mut self, first: usize) {
        let Some(mut merged) = self.turns.get(first).copied() else {
            return;
        };
        for turn in &self.turns[first + 1..] {
            merged.len += turn.len;
            merged.has_system |= turn.has_system;
            merged.unanswered += turn.unanswered;
        }
        self.turns.truncate(first);
        self.turns.push(merged);
        let blocked_kept = self.blocked.partition_point(|turn| *turn < first);
        self.blocked.truncate(blocked_kept);
        self.sync_blocked(first);
    }

    /// The first turn at or after `from` that refuses whatever the visit, if any.
    pub(crate) fn next_blocked_turn(&self, from: usize) -> Option<usize> {
        let position = self.blocked.partition_point(|turn| *turn < from);
        self.blocked.get(position).copied()
    }

    /// The sequence numbers bounding a non-empty message range.
    fn seq_bounds(&self, range: &Range<usize>) -> Option<(u64, u64)> {
        if range.is_empty() || range.end > self.seqs.len() {
            return None;
        }
        Some((self.seqs[range.start], self.seqs[range.end - 1]))
    }

    /// Of the names whose sorted sequence lists are given, those with a message inside the
    /// bounds, in order of first appearance there. Costs O(names × log n).
    fn names_in<'a>(
        lists: &[Vec<u64>],
        names: impl Fn(usize) -> Option<&'a str>,
        (low, high): (u64, u64),
    ) -> Vec<&'a str> {
        let mut found: Vec<(u64, usize)> = lists
            .iter()
            .enumerate()
            .filter_map(|(name, seqs)| {
                let first = *seqs.get(seqs.partition_point(|seq| *seq < low))?;
                (first <= high).then_some((first, name))
            })
            .collect();
        found.sort_unstable();
        found
            .into_iter()
            .filter_map(|(_, name)| names(name))
            .collect()
    }

    /// The stage ids of the messages in `range`, in order of first appearance.
    pub(crate) fn stages_in(&self, range: Range<usize>) -> Vec<&str> {
        match self.seq_bounds(&range) {
            None => Vec::new(),
            Some(bounds) => Self::names_in(
                &self.messages_by_stage,
                |stage| self.stage_names.get(stage).map(String::as_str),
                bounds,
            ),
        }
    }

    /// The recovered tool names of the results in `range`, in order of first appearance
    /// (W35).
    pub(crate) fn tools_in(&self, range: Range<usize>) -> Vec<&str> {
        match self.seq_bounds(&range) {
            None => Vec::new(),
            Some(bounds) => Self::names_in(
                &self.results_by_tool,
                |tool| self.tool_names.get(tool).map(String::as_str),
                bounds,
            ),
        }
    }

    /// The messages of the window, in order.
    pub fn messages(&self) -> &[M] {
        &self.messages
    }

    /// Takes the messages out, leaving an empty conversation behind.
    pub fn into_messages(self) -> Vec<M> {
        self.messages
    }

    /// How many messages the window holds.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when the window holds no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// How many turns the window holds (W6).
    pub fn turn_count(&self) -> usize {
        self.turns.len()
    }

    /// The turns of the window, oldest first (W6). A result separated from its call by other
    /// messages puts everything from the call's turn through its own in one turn (W7).
    pub fn turns(&self) -> impl Iterator<Item = Turn> + '_ {
        self.turns.iter().enumerate().map(|(index, turn)| Turn {
            index,
            start: turn.start,
            len: turn.len,
        })
    }

    /// The sum of content characters over the window (W4), in O(1).
    pub fn window_chars(&self) -> u64 {
        self.char_prefix[self.messages.len()]
    }

    /// The content characters of the messages in `range`, in O(1).
    pub fn chars_in(&self, range: Range<usize>) -> u64 {
        let end = range.end.min(self.messages.len());
        let start = range.start.min(end);
        self.char_prefix[end] - self.char_prefix[start]
    }

    /// The counted tokens of the messages in `range`, in O(1).
    pub fn tokens_in(&self, range: Range<usize>) -> u64 {
        let end = range.end.min(self.messages.len());
        let start = range.start.min(end);
        self.token_prefix[end] - self.token_prefix[start]
    }

    /// Counts `text` with this conversation's counter.
    pub fn count_tokens(&self, text: &str) -> u64 {
        self.counter.count(text)
    }

    /// The set of call ids that some tool result in the window answers (W8).
    pub fn is_answered(&self, call_id: &str) -> bool {
        self.calls
            .get(call_id.as_bytes())
            .is_some_and(|facts| facts.answers > 0)
    }

    pub(crate) fn meta(&self, index: usize) -> Option<&MessageMeta> {
        self.meta.get(index)
    }

    /// Message `index`'s number, which stays its own while it sits in the window (a key
    /// that survives removals), or `None` outside the window.
    pub(crate) fn seq(&self, index: usize) -> Option<u64> {
        self.seqs.get(index).copied()
    }

    /// How many messages of `range` are not notes the stage wrote: the spans a notice for it
    /// counts.
    pub(crate) fn archivable_in(&self, range: Range<usize>) -> usize {
        let end = range.end.min(self.messages.len());
        let start = range.start.min(end);
        let notes = self.note_prefix[end] - self.note_prefix[start];
        (end - start).saturating_sub(notes as usize)
    }

    /// Whether the message numbered `seq` is still in the window.
    pub(crate) fn holds_seq(&self, seq: u64) -> bool {
        self.seqs.binary_search(&seq).is_ok()
    }

    /// The hash of message `index`'s role and content, its part of a span key. Not cached:
    /// only a span that matches a refused one in size is ever hashed. Zero for an index
    /// outside the window.
    pub(crate) fn message_hash(&self, index: usize) -> u64 {
        self.messages
            .get(index)
            .map_or(0, |message| content_hash(message.role(), message.content()))
    }

    /// The birth times of `range`'s messages, [`NOT_BORN`] where unknown.
    pub(crate) fn born_slice(&self, range: Range<usize>) -> &[u64] {
        let end = range.end.min(self.born.len());
        &self.born[range.start.min(end)..end]
    }

    pub(crate) fn turn_meta(&self) -> &[TurnMeta] {
        &self.turns
    }

    pub(crate) fn tool_name(&self, tool: u32) -> Option<&str> {
        self.tool_names.get(tool as usize).map(String::as_str)
    }

    pub(crate) fn index_of_seq(&self, seq: u64) -> Option<usize> {
        // Sequence numbers rise by at least one per message, so a message sits no later than
        // its distance from the first number, and exactly there unless messages before it
        // left. Checking that spot first makes the common lookup O(1).
        let first = *self.seqs.first()?;
        let bound = usize::try_from(seq.checked_sub(first)?).ok()?;
        if self.seqs.get(bound) == Some(&seq) {
            return Some(bound);
        }
        let searched = &self.seqs[..bound.min(self.seqs.len())];
        searched.binary_search(&seq).ok()
    }

    /// The turn holding message `index`, in O(log turns).
    pub(crate) fn turn_index_of(&self, index: usize) -> Option<usize> {
        // The cached facts, not the messages, bound the index: during a bulk load the facts
        // run ahead of the stored messages.
        if index >= self.meta.len() {
            return None;
        }
        // Results mostly answer calls of the newest turn, so it is checked before searching.
        if let Some(last) = self.turns.last() {
            if last.start <= index {
                return Some(self.turns.len() - 1);
            }
        }
        let after = self.turns.partition_point(|turn| turn.start <= index);
        after.checked_sub(1)
    }

    /// The newest result of each tool, as message indices.
    pub(crate) fn newest_result_per_tool(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        self.results_by_tool
            .iter()
            .enumerate()
            .filter_map(|(tool, seqs)| {
                let seq = seqs.last()?;
                Some((tool as u32, self.index_of_seq(*seq)?))
            })
    }

    /// The message indices of every result of the tool named `tool`, oldest first; none when
    /// no result names it. Costs O(its results × log n).
    pub(crate) fn results_of_tool<'s>(&'s self, tool: &str) -> impl Iterator<Item = usize> + 's {
        let seqs: &[u64] = self
            .tool_ids
            .get(tool.as_bytes())
            .and_then(|id| self.results_by_tool.get(*id as usize))
            .map_or(&[], Vec::as_slice);
        seqs.iter().filter_map(|seq| self.index_of_seq(*seq))
    }

    /// The message index of the assistant message making call `call_id`.
    pub(crate) fn call_index(&self, call_id: &str) -> Option<usize> {
        self.calls
            .get(call_id.as_bytes())
            .and_then(|facts| facts.site())
            .and_then(|site| self.index_of_seq(site.seq))
    }

    /// The message index of the newest result answering `call_id`.
    pub(crate) fn result_index(&self, call_id: &str) -> Option<usize> {
        self.calls
            .get(call_id.as_bytes())
            .and_then(|facts| facts.result())
            .and_then(|seq| self.index_of_seq(seq))
    }

    /// Message indices of maskable results older than the newest `keep_recent` tool results,
    /// oldest first. Costs O(log n) plus the number returned.
    pub(crate) fn maskable_older_than(&self, keep_recent: usize) -> Vec<usize> {
        let results = self.tool_results.len();
        if results <= keep_recent {
            return Vec::new();
        }
        let boundary = match keep_recent {
            0 => u64::MAX,
            keep => self.tool_results[results - keep],
        };
        let end = self.maskable.partition_point(|seq| *seq < boundary);
        self.maskable[..end]
            .iter()
            .filter_map(|seq| self.index_of_seq(*seq))
            .collect()
    }

    /// The current request (W19): the newest message a person said whose content equals
    /// `said`, else the newest message a person said, else none.
    pub(crate) fn current_request_index(&self, said: Option<&str>) -> Option<usize> {
        if let Some(said) = said {
            for seq in self.person_said.iter().rev() {
                if let Some(index) = self.index_of_seq(*seq) {
                    if self.messages[index].content() == said {
                        return Some(index);
                    }
                }
            }
        }
        self.person_said
            .last()
            .and_then(|seq| self.index_of_seq(*seq))
    }

    /// Applies a plan's edit to the window and, for a fold that retains its originals, moves
    /// the folded messages into the plan's [`crate::FoldedSpan`]. A plan without an edit
    /// changes nothing.
    pub fn apply(&mut self, plan: &mut WindowPlan<M>) -> Result<(), WindowError> {
        let Some(edit) = plan.edit.as_ref() else {
            return Ok(());
        };
        let removed = self.apply_edit(edit)?;
        if let Some(span) = plan.folded.first_mut() {
            if span.retained == crate::record::Retain::Conversation {
                span.messages = Some(removed);
            }
        }
        Ok(())
    }

    fn apply_edit(&mut self, edit: &WindowEdit) -> Result<Vec<M>, WindowError> {
        let len = self.messages.len();
        let range = edit.removed.clone();
        if range.start > range.end || range.end > len {
            return Err(WindowError::EditMismatch(format!(
                "removal {}..{} outside a window of {len} messages",
                range.start, range.end
            )));
        }
        if range.is_empty() && edit.inserted.is_some() {
            return Err(WindowError::EditMismatch(
                "a note can only take the place of removed messages".to_string(),
            ));
        }
        for replacement in &edit.replaced {
            if replacement.index >= len || range.contains(&replacement.index) {
                return Err(WindowError::EditMismatch(format!(
                    "replacement at message {} is outside the kept window",
                    replacement.index
                )));
            }
        }
        let mut first_changed = len;
        let mut masked_seqs: Vec<u64> = Vec::new();
        // Replacements first: their indices refer to the window before the removal.
        for replacement in &edit.replaced {
            let index = replacement.index;
            let message = self.messages[index].with_content(replacement.content.clone());
            let unanswered = self.meta[index].unanswered;
            let mut meta = self.read_meta(&message);
            meta.unanswered = unanswered;
            self.messages[index] = message;
            self.born[index] = meta.born_at_ms.unwrap_or(NOT_BORN);
            self.meta[index] = meta;
            masked_seqs.push(self.seqs[index]);
            first_changed = first_changed.min(index);
        }
        if !masked_seqs.is_empty() {
            masked_seqs.sort_unstable();
            self.maskable
                .retain(|seq| masked_seqs.binary_search(seq).is_err());
        }
        let mut removed = Vec::new();
        if !range.is_empty() {
            first_changed = first_changed.min(self.forget_span(range.clone()));
            let first_seq = self.seqs[range.start];
            removed = self.messages.drain(range.clone()).collect();
            self.meta.drain(range.clone());
            self.born.drain(range.clone());
            self.seqs.drain(range.clone());
            if let Some(content) = &edit.inserted {
                let message = M::stage_note(content.clone(), edit.inserted_at_ms);
                let meta = self.read_meta(&message);
                self.messages.insert(range.start, message);
                self.born
                    .insert(range.start, meta.born_at_ms.unwrap_or(NOT_BORN));
                self.meta.insert(range.start, meta);
                // The first removed message's number is free and sorts between head and tail.
                self.seqs.insert(range.start, first_seq);
            }
        }
        self.rebuild_from(first_changed);
        Ok(removed)
    }

    /// Drops every cached fact about the messages in `range`, before they are drained.
    /// Returns the earliest message outside the span whose facts changed (a call whose only
    /// result left), so its turn is rebuilt too.
    fn forget_span(&mut self, range: Range<usize>) -> usize {
        let mut earliest_changed = range.start;
        let low = self.seqs[range.start];
        let high = self.seqs[range.end - 1];
        let in_span = |seq: u64| seq >= low && seq <= high;
        for index in range.clone() {
            let message = &self.messages[index];
            for call_index in 0..message.tool_call_count() {
                if let Some(call) = message.tool_call(call_index) {
                    self.calls.update_or_remove(call.id.as_bytes(), |facts| {
                        if facts.site().is_some_and(|site| in_span(site.seq)) {
                            facts.set_site(None);
                        }
                        ((), facts.is_empty())
                    });
                }
            }
            if message.role() == Role::Tool {
                if let Some(call_id) = message.tool_call_id() {
                    let Some((now_unanswered, site)) =
                        self.calls.update_or_remove(call_id.as_bytes(), |facts| {
                            let mut now_unanswered = false;
                            if facts.answers > 0 {
                                facts.answers -= 1;
                                now_unanswered = facts.answers == 0;
                            }
                            let site = facts.site();
                            if facts.result().is_some_and(in_span) {
                                facts.set_result(None);
                            }
                            ((now_unanswered, site), facts.is_empty())
                        })
                    else {
                        continue;
                    };
                    if let (true, Some(site)) = (now_unanswered, site) {
                        // A call that stays while its only result leaves is unresolved again.
                        if !in_span(site.seq) {
                            if let Some(call_index) = self.index_of_seq(site.seq) {
                                self.meta[call_index].unanswered += 1;
                                earliest_changed = earliest_changed.min(call_index);
                            }
                        }
                    }
                }
            }
        }
        for seqs in &mut self.results_by_tool {
            drain_sorted(seqs, low, high);
        }
        drain_sorted(&mut self.tool_results, low, high);
        drain_sorted(&mut self.person_said, low, high);
        drain_sorted(&mut self.maskable, low, high);
        for seqs in &mut self.messages_by_stage {
            drain_sorted(seqs, low, high);
        }
        earliest_changed
    }

    /// Recomputes the running sums and the turns from message `from` on.
    fn rebuild_from(&mut self, from: usize) {
        let len = self.messages.len();
        let from = from.min(len);
        self.char_prefix.truncate(from + 1);
        self.token_prefix.truncate(from + 1);
        self.note_prefix.truncate(from + 1);
        for index in from..len {
            let meta = self.meta[index];
            self.char_prefix
                .push(self.char_prefix[index].saturating_add(meta.chars));
            self.token_prefix
                .push(self.token_prefix[index].saturating_add(meta.tokens));
            self.note_prefix
                .push(self.note_prefix[index].saturating_add(u32::from(meta.kind.is_stage_note())));
        }
        // Re-segment from the start of the turn that held the message before `from`, since a
        // removal can change which turn the following tool messages join.
        let keep_turns = if from == 0 {
            0
        } else {
            self.turns.partition_point(|turn| turn.start < from)
        };
        let keep_turns = keep_turns.saturating_sub(1);
        let restart = self.turns.get(keep_turns).map_or(0, |turn| turn.start);
        self.turns.truncate(keep_turns);
        let blocked_kept = self.blocked.partition_point(|turn| *turn < keep_turns);
        self.blocked.truncate(blocked_kept);
        for index in restart..len {
            let meta = self.meta[index];
            let call_seq = match meta.role {
                Role::Tool => self.messages[index]
                    .tool_call_id()
                    .and_then(|id| self.calls.get(id.as_bytes())?.site())
                    .map(|site| site.seq),
                _ => None,
            };
            self.extend_turns(index, &meta, call_seq);
        }
    }
}

/// Removes the values between `low` and `high` (inclusive) from a sorted list.
fn drain_sorted(values: &mut Vec<u64>, low: u64, high: u64) {
    let start = values.partition_point(|value| *value < low);
    let end = values.partition_point(|value| *value <= high);
    if start < end {
        values.drain(start..end);
    }
}

fn classify<M: WindowMessage>(message: &M) -> Kind {
    let content = message.content();
    match message.role() {
        Role::User if is_drop_notice(content) => Kind::DropNotice,
        Role::User if is_compaction_frame(content) => Kind::CompactionFrame,
        Role::User if message.injected_by().is_none() => Kind::PersonSaid,
        Role::Tool if is_masked_placeholder(content) => Kind::MaskedResult,
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A call id of every length class the dense map keeps apart: short, inline, on the heap.
    fn call_id(n: usize) -> String {
        match n % 3 {
            0 => format!("c{n}"),
            1 => format!("toolu_01{n:024}"),
            _ => format!("call_with_an_id_longer_than_thirty_two_bytes_{n}"),
        }
    }

    /// One generated message: a call batch (how many calls), a result (which call, counted
    /// back from the newest, or one that never came), prose or a user line.
    #[derive(Debug, Clone)]
    enum Shape {
        Calls(usize),
        Result(usize),
        Orphan,
        Prose,
        User,
    }

    fn shape() -> impl Strategy<Value = Shape> {
        prop_oneof![
            3 => (1usize..4).prop_map(Shape::Calls),
            4 => (0usize..6).prop_map(Shape::Result),
            1 => Just(Shape::Orphan),
            1 => Just(Shape::Prose),
            1 => Just(Shape::User),
        ]
    }

    /// Messages with unique call ids, each answered at most once, some results before or
    /// without their call, so the call facts have one right answer per id.
    fn build(shapes: &[Shape]) -> (Vec<Message>, usize) {
        let mut messages = Vec::new();
        let mut calls = 0usize;
        let mut answered = std::collections::BTreeSet::new();
        let mut orphans = 0usize;
        for shape in shapes {
            match shape {
                Shape::Calls(count) => {
                    let ids: Vec<String> = (0..*count).map(|k| call_id(calls + k)).collect();
                    calls += count;
                    let refs: Vec<(&str, &str, &str)> =
                        ids.iter().map(|id| (id.as_str(), "grep", "{}")).collect();
                    messages.push(Message::assistant_calls("", &refs));
                }
                Shape::Result(back) => {
                    if let Some(call) = calls.checked_sub(back + 1) {
                        if answered.insert(call) {
                            messages.push(Message::tool_result(call_id(call), "found"));
                        }
                    }
                }
                Shape::Orphan => {
                    // A result whose call never arrives: an id beyond every call's.
                    orphans += 1;
                    messages.push(Message::tool_result(call_id(1_000 + orphans), "lost"));
                }
                Shape::Prose => messages.push(Message::assistant("thinking")),
                Shape::User => messages.push(Message::user("next")),
            }
        }
        (messages, calls + orphans + 1_000)
    }

    /// The call facts of `conversation` against a straightforward scan of its messages.
    fn check(conversation: &Conversation, ids: usize) -> Result<(), TestCaseError> {
        let messages = conversation.messages();
        for n in 0..ids {
            let id = call_id(n);
            let call = messages
                .iter()
                .position(|message| message.tool_calls.iter().any(|call| call.id == id));
            let result = messages
                .iter()
                .rposition(|message| message.tool_call_id.as_deref() == Some(id.as_str()));
            prop_assert_eq!(conversation.call_index(&id), call, "call of {}", id);
            prop_assert_eq!(conversation.result_index(&id), result, "result of {}", id);
            prop_assert_eq!(conversation.is_answered(&id), result.is_some(), "{}", id);
        }
        Ok(())
    }

    proptest! {
        /// Built at once or pushed one by one, and after removals, the dense call map answers
        /// as the messages themselves do.
        #[test]
        fn call_facts_agree_with_the_messages(
            shapes in prop::collection::vec(shape(), 0..60),
            cuts in prop::collection::vec((0usize..60, 0usize..8), 0..4),
        ) {
            let (messages, ids) = build(&shapes);
            let mut bulk: Conversation = Conversation::from_messages(messages.clone());
            let mut pushed: Conversation = Conversation::new();
            for message in messages {
                pushed.push(message);
            }
            check(&bulk, ids)?;
            check(&pushed, ids)?;
            for (start, len) in cuts {
                let start = start.min(bulk.len());
                let end = start.saturating_add(len).min(bulk.len());
                let edit = WindowEdit {
                    removed: start..end,
                    inserted: None,
                    inserted_at_ms: 0,
                    replaced: Vec::new(),
                };
                bulk.apply_edit(&edit).map_err(|error| TestCaseError::fail(error.to_string()))?;
                pushed.apply_edit(&edit).map_err(|error| TestCaseError::fail(error.to_string()))?;
                check(&bulk, ids)?;
                check(&pushed, ids)?;
            }
        }
    }

    #[test]
    fn push_keeps_sums_and_turns() {
        let conversation: Conversation = Conversation::from_messages([
            Message::user("hello"),
            Message::assistant_calls("", &[("c1", "grep", "{}")]),
            Message::tool_result("c1", "found"),
        ]);
        assert_eq!(conversation.window_chars(), 10);
        assert_eq!(conversation.turn_count(), 2);
        assert_eq!(conversation.turn_meta()[1].unanswered, 0);
        assert_eq!(conversation.meta(2).map(|m| m.tool), Some(0));
    }

    #[test]
    fn message_hash_is_fixed_and_follows_the_content() {
        let conversation: Conversation =
            Conversation::from_messages([Message::user("hello"), Message::user("world")]);
        let first = conversation.message_hash(0);
        assert_eq!(first, conversation.message_hash(0));
        assert_eq!(first, content_hash(Role::User, "hello"));
        assert_ne!(first, conversation.message_hash(1));
        assert_eq!(conversation.message_hash(2), 0);
    }
}
