//! Request bodies rendered once: a [`RenderedHistory`] keeps each message's JSON fragment in
//! one API's shape, rendered when the message is appended, and assembles a body from them.
//!
//! An agent loop sends its whole history on every call, and the history changes little from
//! one call to the next: a few messages appended, now and then a window edit (a span removed,
//! a summary or notice in its place, old tool results masked). Rendering the body with serde
//! on every call escapes every string of the history again; here each message is rendered
//! once, when it is [`push`]ed, an edit re-renders only what it changed ([`replace`],
//! [`splice`]), and [`write_body`] concatenates the fragments between the request's frame,
//! which is the only part rendered per call. The bytes are exactly what [`ApiKind::body`]
//! renders for the same messages (the fragments are rendered by the same serde types); the
//! Anthropic and Gemini grouping of adjacent parts of one role into one message is done at
//! assembly, so a fragment never depends on its neighbours.
//!
//! The pairing rule of the own loop (no tool result without its call before it, no call
//! without a result after it, no call id twice) is kept up to date as entries come and go, so
//! a body is checked in O(1); only a history that breaks the rule is walked, to name the
//! first offence exactly as a whole-request check would.
//!
//! An *entry* is the caller's unit: one conversation message, which may stand for several API
//! messages (an assistant's text and its tool calls). Edits address entries by index, as the
//! window stage's plans address messages.
//!
//! [`push`]: RenderedHistory::push
//! [`replace`]: RenderedHistory::replace
//! [`splice`]: RenderedHistory::splice
//! [`write_body`]: RenderedHistory::write_body

use std::collections::BTreeMap;
use std::ops::Range;

use panewise_window::cache::block_hash;

use super::request::{anthropic, gemini, openai, ApiMessage, RequestHead};
use super::ApiKind;
use crate::error::RequestError;

mod pairing;
#[cfg(test)]
mod tests;

use pairing::{CallMarks, Link, Mark};

/// Which side of the conversation a part is on; adjacent parts of one side share a message in
/// the Anthropic and Gemini bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    User,
    Model,
}

/// One API message, rendered.
#[derive(Debug)]
struct Part {
    side: Side,
    /// The fragment, or why it cannot be rendered (a tool call whose arguments are not JSON):
    /// the error a body of this history fails with, as [`ApiKind::body`] fails.
    json: Result<Box<[u8]>, RequestError>,
    /// A hash of the fragment (or of the error), taken when it is rendered: what tells a
    /// request's blocks from the previous request's ([`RenderedHistory::block_hashes`]).
    hash: u64,
    /// The call id, for a tool call or a tool result.
    link: Option<(Link, Box<str>)>,
}

/// One entry (one caller message) and its parts.
#[derive(Debug)]
struct Entry {
    /// Increases with the entry's position and survives edits, so pairing marks keyed by it
    /// need no re-indexing when earlier entries leave.
    seq: u64,
    parts: Vec<Part>,
}

/// The message wrapper of a group of parts of one side (Anthropic, Gemini), opened before its
/// first part.
fn opening(api: ApiKind, side: Side) -> &'static [u8] {
    match (api, side) {
        (ApiKind::Anthropic, Side::User) => br#"{"role":"user","content":["#,
        (ApiKind::Anthropic, Side::Model) => br#"{"role":"assistant","content":["#,
        (ApiKind::Gemini, Side::User) => br#"{"role":"user","parts":["#,
        (ApiKind::Gemini, Side::Model) => br#"{"role":"model","parts":["#,
        (ApiKind::OpenAi, _) => b"",
    }
}

/// The key of the messages array in each API's body, as the frame renders it empty.
fn messages_key(api: ApiKind) -> &'static [u8] {
    match api {
        ApiKind::Anthropic => br#""messages":[]"#,
        ApiKind::OpenAi => br#""input":[]"#,
        ApiKind::Gemini => br#""contents":[]"#,
    }
}

/// The longest message wrapper, opening and closing (`]},`), for sizing a body.
const WRAPPER_MAX: usize = br#"{"role":"assistant","content":["#.len() + 3;

/// A conversation's messages rendered once each as one API's body fragments, and the body
/// assembled from them. See the [module documentation](self).
#[derive(Debug)]
pub struct RenderedHistory {
    api: ApiKind,
    entries: Vec<Entry>,
    next_seq: u64,
    /// Parts over all entries.
    parts: usize,
    /// Bytes of all rendered fragments.
    fragment_bytes: usize,
    /// Parts whose fragment could not be rendered.
    broken: usize,
    /// Every call id in the history with its calls and results.
    calls: BTreeMap<Box<str>, CallMarks>,
    /// Call ids whose marks break the pairing rule.
    unpaired: usize,
}

impl RenderedHistory {
    /// An empty history rendered for `api`.
    pub fn new(api: ApiKind) -> Self {
        Self {
            api,
            entries: Vec::new(),
            next_seq: 0,
            parts: 0,
            fragment_bytes: 0,
            broken: 0,
            calls: BTreeMap::new(),
            unpaired: 0,
        }
    }

    /// The API the fragments are rendered for.
    pub fn api(&self) -> ApiKind {
        self.api
    }

    /// How many entries the history holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the history holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many API messages the entries stand for.
    pub fn message_count(&self) -> usize {
        self.parts
    }

    /// The bytes of every rendered fragment: what the history keeps so that no call renders
    /// it again, about the length of a body's messages.
    pub fn fragment_bytes(&self) -> usize {
        self.fragment_bytes
    }

    /// The heap the history holds, fragments included, counted from its own sizes (vector
    /// capacities, boxed fragments and call ids, the call-id map's entries; the allocator's
    /// own overhead per allocation is not counted).
    pub fn heap_bytes(&self) -> usize {
        let entries = self.entries.capacity() * std::mem::size_of::<Entry>();
        let parts: usize = self
            .entries
            .iter()
            .map(|entry| {
                entry.parts.capacity() * std::mem::size_of::<Part>()
                    + entry
                        .parts
                        .iter()
                        .map(|part| part.link.as_ref().map_or(0, |(_, id)| id.len()))
                        .sum::<usize>()
            })
            .sum();
        let calls: usize = self
            .calls
            .iter()
            .map(|(id, marks)| {
                id.len()
                    + marks.name.len()
                    + marks.marks.capacity() * std::mem::size_of::<Mark>()
                    + std::mem::size_of::<(Box<str>, CallMarks)>()
            })
            .sum();
        entries + parts + calls + self.fragment_bytes
    }

    /// Appends one entry: `messages` (one caller message's API messages, oldest first), each
    /// rendered now. A tool call whose arguments are not JSON is kept with its error, which
    /// every body of a history holding it returns, as [`ApiKind::body`] would.
    pub fn push(&mut self, messages: &[ApiMessage<'_>]) {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.saturating_add(1);
        let entry = self.render(seq, messages);
        self.entries.push(entry);
    }

    /// Renders entry `index` again from `messages` (a masked tool result, say). It keeps its
    /// place.
    pub fn replace(
        &mut self,
        index: usize,
        messages: &[ApiMessage<'_>],
    ) -> Result<(), RequestError> {
        let Some(seq) = self.entries.get(index).map(|entry| entry.seq) else {
            return Err(RequestError::HistoryEdit(format!(
                "entry {index} replaced in a history of {}",
                self.entries.len()
            )));
        };
        // The new parts take the old ones' positions, so the old marks go first.
        let placeholder = Entry {
            seq,
            parts: Vec::new(),
        };
        let old = std::mem::replace(&mut self.entries[index], placeholder);
        self.forget(old);
        self.entries[index] = self.render(seq, messages);
        Ok(())
    }

    /// Removes the entries in `removed` and, when `inserted` is given, puts one entry rendered
    /// from it in their place (a summary or a drop notice). An entry can only be inserted in
    /// the place of removed ones, as the window stage's edits do.
    pub fn splice(
        &mut self,
        removed: Range<usize>,
        inserted: Option<&[ApiMessage<'_>]>,
    ) -> Result<(), RequestError> {
        let len = self.entries.len();
        if removed.start > removed.end || removed.end > len {
            return Err(RequestError::HistoryEdit(format!(
                "removal {}..{} from a history of {len}",
                removed.start, removed.end
            )));
        }
        if removed.is_empty() {
            return match inserted {
                None => Ok(()),
                Some(_) => Err(RequestError::HistoryEdit(
                    "an entry can only take the place of removed ones".to_owned(),
                )),
            };
        }
        // The first removed entry's number is free and sorts between what stays before and
        // after, so the inserted entry takes it.
        let seq = self.entries[removed.start].seq;
        let start = removed.start;
        let gone: Vec<Entry> = self.entries.drain(removed).collect();
        // The inserted parts take the first removed entry's positions, so its marks go first.
        for entry in gone {
            self.forget(entry);
        }
        if let Some(messages) = inserted {
            let entry = self.render(seq, messages);
            self.entries.insert(start, entry);
        }
        Ok(())
    }

    /// The request body for `head` and the history's messages: the same bytes as
    /// [`ApiKind::body`] of a request with these messages, or the same error, a pairing
    /// error first.
    pub fn body(&self, head: &RequestHead<'_>) -> Result<Vec<u8>, RequestError> {
        let mut out = Vec::new();
        self.write_body(head, &mut out)?;
        Ok(out)
    }

    /// A hash of each content block the body's messages hold (one per API message, in order,
    /// over every entry), taken when the block was rendered: two requests' blocks agree up to
    /// where the history was edited between them
    /// ([`first_changed_block`](panewise_window::cache::first_changed_block)).
    pub fn block_hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.iter_parts().map(|part| part.hash)
    }

    /// The entry (the caller's message) that holds content block `block`; the number of
    /// entries for a block at or past the end.
    pub fn entry_of_block(&self, block: usize) -> usize {
        let mut first = 0usize;
        for (index, entry) in self.entries.iter().enumerate() {
            first = first.saturating_add(entry.parts.len());
            if block < first {
                return index;
            }
        }
        self.entries.len()
    }

    /// [`body`](Self::body) into `out`, which is cleared first; a caller that keeps one buffer
    /// for every call reuses its memory.
    pub fn write_body(
        &self,
        head: &RequestHead<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        let last = self.parts.checked_sub(1);
        self.write_body_marked(head, last.as_slice(), out)
    }

    /// [`write_body`](Self::write_body) with Anthropic's message breakpoints on the content
    /// blocks at `marks` (counted over all messages from 0, as [`block_hashes`] lists them;
    /// indices past the last are ignored) instead of on the last block alone: the bytes of
    /// [`anthropic::body_with_breakpoints`] for the same messages. The system prompt and the
    /// last tool carry theirs as always, so at most two marks keep the body within the API's
    /// four. Nothing is marked without `prompt_cache`, nor in the other APIs' bodies.
    ///
    /// [`block_hashes`]: Self::block_hashes
    pub fn write_body_marked(
        &self,
        head: &RequestHead<'_>,
        marks: &[usize],
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        out.clear();
        if self.unpaired > 0 {
            if let Some(error) = self.pairing_error() {
                return Err(error.into());
            }
        }
        if self.broken > 0 {
            if let Some(Err(error)) = self
                .iter_parts()
                .map(|part| &part.json)
                .find(|json| json.is_err())
            {
                return Err(error.clone());
            }
        }
        let frame = match self.api {
            ApiKind::Anthropic => anthropic::frame(head)?,
            ApiKind::OpenAi => openai::frame(head)?,
            ApiKind::Gemini => gemini::frame(head)?,
        };
        let key = messages_key(self.api);
        // The first occurrence is the key: only the model id and the system prompt come before
        // it, JSON strings in which every quote is escaped (or, with a cache breakpoint, a
        // block of fixed keys around such a string).
        let Some(at) = frame.windows(key.len()).position(|window| window == key) else {
            return Err(RequestError::Render(
                "the body's frame has no messages array".to_owned(),
            ));
        };
        // Split between the array's brackets.
        let (head_bytes, tail_bytes) = frame.split_at(at + key.len() - 1);
        out.reserve(
            frame.len()
                + anthropic::MARKED_BLOCK_END.len() * marks.len()
                + self.fragment_bytes
                + self.parts
                    * if self.api == ApiKind::OpenAi {
                        1
                    } else {
                        WRAPPER_MAX + 1
                    },
        );
        out.extend_from_slice(head_bytes);
        match self.api {
            ApiKind::OpenAi => {
                let mut first = true;
                for part in self.iter_parts() {
                    if let Ok(json) = &part.json {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        out.extend_from_slice(json);
                    }
                }
            }
            ApiKind::Anthropic | ApiKind::Gemini => {
                // The marked content blocks carry the cache breakpoint, as
                // `anthropic::body_with_breakpoints` marks them; every part is rendered by now
                // (a broken one returned above), so part `i` is block `i`.
                let marking = self.api == ApiKind::Anthropic && head.prompt_cache;
                let mut open: Option<Side> = None;
                for (index, part) in self.iter_parts().enumerate() {
                    if let Ok(json) = &part.json {
                        match open {
                            Some(side) if side == part.side => out.push(b','),
                            Some(_) => {
                                out.extend_from_slice(b"]},");
                                out.extend_from_slice(opening(self.api, part.side));
                            }
                            None => out.extend_from_slice(opening(self.api, part.side)),
                        }
                        open = Some(part.side);
                        match json.split_last() {
                            Some((b'}', object)) if marking && marks.contains(&index) => {
                                out.extend_from_slice(object);
                                out.extend_from_slice(anthropic::MARKED_BLOCK_END);
                            }
                            _ => out.extend_from_slice(json),
                        }
                    }
                }
                if open.is_some() {
                    out.extend_from_slice(b"]}");
                }
            }
        }
        out.extend_from_slice(tail_bytes);
        Ok(())
    }

    fn iter_parts(&self) -> impl Iterator<Item = &Part> {
        self.entries.iter().flat_map(|entry| entry.parts.iter())
    }

    /// Renders one entry's parts and records its calls and results.
    fn render(&mut self, seq: u64, messages: &[ApiMessage<'_>]) -> Entry {
        let mut parts = Vec::with_capacity(messages.len());
        let mut scratch = Vec::new();
        for (index, message) in messages.iter().enumerate() {
            scratch.clear();
            let role = match self.api {
                ApiKind::Anthropic => anthropic::fragment(message, &mut scratch),
                ApiKind::OpenAi => openai::fragment(message, &mut scratch),
                ApiKind::Gemini => gemini::fragment(message, &mut scratch),
            };
            let side = match message {
                ApiMessage::User { .. } | ApiMessage::ToolResult { .. } => Side::User,
                ApiMessage::Assistant { .. }
                | ApiMessage::ToolCall { .. }
                | ApiMessage::Compaction { .. } => Side::Model,
            };
            let json = role.map(|_| Box::<[u8]>::from(scratch.as_slice()));
            let hash = match &json {
                Ok(json) => block_hash(&[&String::from_utf8_lossy(json)]),
                Err(error) => block_hash(&["unrendered", &error.to_string()]),
            };
            match &json {
                Ok(json) => self.fragment_bytes = self.fragment_bytes.saturating_add(json.len()),
                Err(_) => self.broken = self.broken.saturating_add(1),
            }
            let at = (seq, u32::try_from(index).unwrap_or(u32::MAX));
            let link = match message {
                ApiMessage::ToolCall { call_id, name, .. } => {
                    self.mark(
                        call_id,
                        Mark {
                            at,
                            link: Link::Call,
                        },
                        Some(name),
                    );
                    Some((Link::Call, Box::from(&**call_id)))
                }
                ApiMessage::ToolResult { call_id, .. } => {
                    self.mark(
                        call_id,
                        Mark {
                            at,
                            link: Link::Result,
                        },
                        None,
                    );
                    Some((Link::Result, Box::from(&**call_id)))
                }
                ApiMessage::User { .. }
                | ApiMessage::Assistant { .. }
                | ApiMessage::Compaction { .. } => None,
            };
            parts.push(Part {
                side,
                json,
                hash,
                link,
            });
        }
        self.parts = self.parts.saturating_add(parts.len());
        Entry { seq, parts }
    }

    /// Forgets a removed entry: its bytes and its marks.
    fn forget(&mut self, entry: Entry) {
        self.parts = self.parts.saturating_sub(entry.parts.len());
        for (index, part) in entry.parts.into_iter().enumerate() {
            match &part.json {
                Ok(json) => self.fragment_bytes = self.fragment_bytes.saturating_sub(json.len()),
                Err(_) => self.broken = self.broken.saturating_sub(1),
            }
            let Some((_, call_id)) = part.link else {
                continue;
            };
            let at = (entry.seq, u32::try_from(index).unwrap_or(u32::MAX));
            self.unmark(&call_id, at);
        }
    }
}
