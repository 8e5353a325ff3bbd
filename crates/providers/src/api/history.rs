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

use super::request::{anthropic, gemini, openai, ApiMessage, RequestHead};
use super::ApiKind;
use crate::error::{PairingError, RequestError};

/// Which side of the conversation a part is on; adjacent parts of one side share a message in
/// the Anthropic and Gemini bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    User,
    Model,
}

/// How a part takes part in the pairing rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Call,
    Result,
}

/// One API message, rendered.
#[derive(Debug)]
struct Part {
    side: Side,
    /// The fragment, or why it cannot be rendered (a tool call whose arguments are not JSON):
    /// the error a body of this history fails with, as [`ApiKind::body`] fails.
    json: Result<Box<[u8]>, RequestError>,
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

/// Where a part sits: its entry's sequence number and its index within the entry.
type Position = (u64, u32);

/// One call or result of a call id.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Position,
    link: Link,
}

/// The calls and results of one call id, and the name of its call (for a Gemini result that
/// does not carry one).
#[derive(Debug, Default)]
struct CallMarks {
    marks: Vec<Mark>,
    name: Box<str>,
}

impl CallMarks {
    /// One call, at least one result, every result after the call: what the pairing rule
    /// asks of every call id in a request.
    fn is_paired(&self) -> bool {
        let mut calls = self.marks.iter().filter(|mark| mark.link == Link::Call);
        let (Some(call), None) = (calls.next(), calls.next()) else {
            return false;
        };
        let mut results = self
            .marks
            .iter()
            .filter(|mark| mark.link == Link::Result)
            .peekable();
        results.peek().is_some() && results.all(|result| result.at > call.at)
    }
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

    /// The name of the newest call with id `call_id` in the history, for a tool result that
    /// does not carry its tool's name (Gemini matches results to calls by name).
    pub fn call_name(&self, call_id: &str) -> Option<&str> {
        self.calls
            .get(call_id)
            .filter(|marks| marks.marks.iter().any(|mark| mark.link == Link::Call))
            .map(|marks| &*marks.name)
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

    /// [`body`](Self::body) into `out`, which is cleared first; a caller that keeps one buffer
    /// for every call reuses its memory.
    pub fn write_body(
        &self,
        head: &RequestHead<'_>,
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
        // The first occurrence is the key: only the model id and the system prompt, JSON
        // strings in which every quote is escaped, come before it.
        let Some(at) = frame.windows(key.len()).position(|window| window == key) else {
            return Err(RequestError::Render(
                "the body's frame has no messages array".to_owned(),
            ));
        };
        // Split between the array's brackets.
        let (head_bytes, tail_bytes) = frame.split_at(at + key.len() - 1);
        out.reserve(
            frame.len()
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
                let mut open: Option<Side> = None;
                for part in self.iter_parts() {
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
                        out.extend_from_slice(json);
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
                ApiMessage::Assistant { .. } | ApiMessage::ToolCall { .. } => Side::Model,
            };
            let json = role.map(|_| Box::<[u8]>::from(scratch.as_slice()));
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
                ApiMessage::User { .. } | ApiMessage::Assistant { .. } => None,
            };
            parts.push(Part { side, json, link });
        }
        self.parts = self.parts.saturating_add(parts.len());
        Entry { seq, parts }
    }

    /// Adds one mark to a call id, keeping the count of unpaired ids.
    fn mark(&mut self, call_id: &str, mark: Mark, name: Option<&str>) {
        let marks = match self.calls.get_mut(call_id) {
            Some(marks) => marks,
            None => self.calls.entry(Box::from(call_id)).or_default(),
        };
        let was_paired = marks.is_paired() || marks.marks.is_empty();
        marks.marks.push(mark);
        if let Some(name) = name {
            marks.name = Box::from(name);
        }
        let paired = marks.is_paired();
        match (was_paired, paired) {
            (true, false) => self.unpaired = self.unpaired.saturating_add(1),
            (false, true) => self.unpaired = self.unpaired.saturating_sub(1),
            _ => {}
        }
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
            let Some(marks) = self.calls.get_mut(&call_id) else {
                continue;
            };
            let was_paired = marks.is_paired();
            marks.marks.retain(|mark| mark.at != at);
            let now_paired = marks.marks.is_empty() || marks.is_paired();
            if marks.marks.is_empty() {
                self.calls.remove(&call_id);
            }
            match (was_paired, now_paired) {
                (true, false) => self.unpaired = self.unpaired.saturating_add(1),
                (false, true) => self.unpaired = self.unpaired.saturating_sub(1),
                _ => {}
            }
        }
    }

    /// The first offence against the pairing rule, in the order a whole-request check finds
    /// it: walking the messages, a second call with one id or a result before any call of its
    /// id; then the earliest call without a result after it.
    /// `None` when the walk finds no offence after all (the counts are only a shortcut; the
    /// walk is the rule).
    fn pairing_error(&self) -> Option<PairingError> {
        // Call id → (position of the call, answered yet).
        let mut calls: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
        for (index, part) in self.iter_parts().enumerate() {
            match &part.link {
                Some((Link::Call, call_id)) => {
                    let repeated = calls.insert(call_id, (index, false)).is_some();
                    if repeated {
                        return Some(PairingError::DuplicateCall {
                            call_id: call_id.to_string(),
                            index,
                        });
                    }
                }
                Some((Link::Result, call_id)) => match calls.get_mut(&**call_id) {
                    Some((_, answered)) => *answered = true,
                    None => {
                        return Some(PairingError::ResultWithoutCall {
                            call_id: call_id.to_string(),
                            index,
                        })
                    }
                },
                None => {}
            }
        }
        calls
            .iter()
            .filter(|(_, (_, answered))| !answered)
            .min_by_key(|(_, (index, _))| *index)
            .map(|(call_id, (index, _))| PairingError::CallWithoutResult {
                call_id: (*call_id).to_owned(),
                index: *index,
            })
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::api::{ModelRequest, ToolDefinition};

    fn user(text: &str) -> ApiMessage<'static> {
        ApiMessage::User {
            text: Cow::Owned(text.to_owned()),
        }
    }

    fn assistant(text: &str) -> ApiMessage<'static> {
        ApiMessage::Assistant {
            text: Cow::Owned(text.to_owned()),
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> ApiMessage<'static> {
        ApiMessage::ToolCall {
            call_id: Cow::Owned(id.to_owned()),
            name: Cow::Owned(name.to_owned()),
            arguments: Cow::Owned(arguments.to_owned()),
        }
    }

    fn result(id: &str, name: &str, output: &str, is_error: bool) -> ApiMessage<'static> {
        ApiMessage::ToolResult {
            call_id: Cow::Owned(id.to_owned()),
            name: Cow::Owned(name.to_owned()),
            output: Cow::Owned(output.to_owned()),
            is_error,
        }
    }

    fn tools() -> Vec<ToolDefinition<'static>> {
        vec![ToolDefinition {
            name: Cow::Borrowed("shell"),
            description: Cow::Borrowed("Runs a \"command\"."),
            parameters: Cow::Owned(json!({"type": "object", "properties": {"input": []}})),
        }]
    }

    /// The pairing check as the own loop's request builder states it, over the flat messages:
    /// the reference the history's counts must agree with.
    fn reference_pairing(messages: &[ApiMessage<'_>]) -> Result<(), PairingError> {
        let mut calls: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
        for (index, message) in messages.iter().enumerate() {
            match message {
                ApiMessage::ToolCall { call_id, .. } => {
                    if calls.insert(call_id, (index, false)).is_some() {
                        return Err(PairingError::DuplicateCall {
                            call_id: call_id.to_string(),
                            index,
                        });
                    }
                }
                ApiMessage::ToolResult { call_id, .. } => match calls.get_mut(call_id.as_ref()) {
                    Some((_, answered)) => *answered = true,
                    None => {
                        return Err(PairingError::ResultWithoutCall {
                            call_id: call_id.to_string(),
                            index,
                        })
                    }
                },
                ApiMessage::User { .. } | ApiMessage::Assistant { .. } => {}
            }
        }
        match calls
            .iter()
            .filter(|(_, (_, answered))| !answered)
            .min_by_key(|(_, (index, _))| *index)
        {
            Some((call_id, (index, _))) => Err(PairingError::CallWithoutResult {
                call_id: (*call_id).to_owned(),
                index: *index,
            }),
            None => Ok(()),
        }
    }

    /// What a whole-request render gives for `entries`: the pairing check, then serde.
    fn reference_body(
        api: ApiKind,
        entries: &[Vec<ApiMessage<'static>>],
        system: Option<&str>,
        tools: &[ToolDefinition<'static>],
    ) -> Result<Vec<u8>, RequestError> {
        let messages: Vec<ApiMessage<'static>> = entries.iter().flatten().cloned().collect();
        reference_pairing(&messages)?;
        api.body(&ModelRequest {
            model: Cow::Borrowed("claude-\"x\""),
            system: system.map(Cow::Borrowed),
            messages: Cow::Owned(messages),
            tools: Cow::Borrowed(tools),
            max_output_tokens: 512,
        })
    }

    fn head<'a>(system: Option<&'a str>, tools: &'a [ToolDefinition<'a>]) -> RequestHead<'a> {
        RequestHead {
            model: "claude-\"x\"",
            system,
            tools,
            max_output_tokens: 512,
        }
    }

    fn round(api: ApiKind) -> Vec<Vec<ApiMessage<'static>>> {
        vec![
            vec![user("run \"it\"\n")],
            vec![
                assistant("I'll run it."),
                call("c1", "shell", r#" {"command": "echo a"} "#),
                call("c2", "shell", ""),
            ],
            vec![result("c1", "shell", "a\u{1}é", false)],
            vec![result("c2", "shell", "boom", api == ApiKind::Gemini)],
            vec![assistant("Done.")],
        ]
    }

    #[test]
    fn a_round_renders_as_serde_renders_it_for_every_api() {
        let tools = tools();
        for api in ApiKind::ALL {
            for system in [None, Some("be \"brief\"")] {
                for tools in [&tools[..], &[]] {
                    let entries = round(api);
                    let mut history = RenderedHistory::new(api);
                    for entry in &entries {
                        history.push(entry);
                    }
                    let expected = reference_body(api, &entries, system, tools);
                    assert!(expected.is_ok(), "{api}: {expected:?}");
                    assert_eq!(history.body(&head(system, tools)), expected, "{api}");
                    assert_eq!(history.message_count(), 7);
                }
            }
        }
    }

    #[test]
    fn an_empty_history_renders_an_empty_array() {
        let tools = tools();
        for api in ApiKind::ALL {
            let history = RenderedHistory::new(api);
            assert_eq!(
                history.body(&head(None, &tools)),
                reference_body(api, &[], None, &tools)
            );
        }
    }

    #[test]
    fn edits_rerender_only_their_entries_and_keep_the_bytes_exact() {
        let tools = tools();
        for api in ApiKind::ALL {
            let mut entries = round(api);
            let mut history = RenderedHistory::new(api);
            for entry in &entries {
                history.push(entry);
            }
            // Mask the first result, then fold the first round into a summary.
            let masked = vec![result("c1", "shell", "[masked: 3 chars]", false)];
            assert_eq!(history.replace(2, &masked), Ok(()));
            entries[2] = masked;
            let summary = vec![user("<summary>ran two commands</summary>")];
            assert_eq!(history.splice(0..4, Some(&summary)), Ok(()));
            entries.splice(0..4, [summary]);
            assert_eq!(
                history.body(&head(Some("s"), &tools)),
                reference_body(api, &entries, Some("s"), &tools)
            );
            assert_eq!(history.len(), 2);
            assert_eq!(history.message_count(), 2);
            assert_eq!(history.call_name("c1"), None);
        }
    }

    #[test]
    fn pairing_errors_are_the_whole_request_checks() {
        let tools = tools();
        let cases: Vec<(Vec<Vec<ApiMessage<'static>>>, &str)> = vec![
            (
                vec![vec![result("c9", "shell", "x", false)]],
                "ResultWithoutCall",
            ),
            (
                vec![vec![call("c1", "shell", "{}")], vec![user("hm")]],
                "CallWithoutResult",
            ),
            (
                vec![
                    vec![call("c1", "shell", "{}")],
                    vec![result("c1", "shell", "x", false)],
                    vec![call("c1", "shell", "{}")],
                ],
                "DuplicateCall",
            ),
            (
                vec![
                    vec![result("c1", "shell", "early", false)],
                    vec![call("c1", "shell", "{}")],
                    vec![result("c1", "shell", "late", false)],
                ],
                "ResultWithoutCall",
            ),
        ];
        for (entries, kind) in cases {
            for api in ApiKind::ALL {
                let mut history = RenderedHistory::new(api);
                for entry in &entries {
                    history.push(entry);
                }
                let got = history.body(&head(None, &tools));
                assert_eq!(got, reference_body(api, &entries, None, &tools));
                assert!(format!("{got:?}").contains(kind), "{kind}: {got:?}");
            }
        }
    }

    #[test]
    fn bad_arguments_fail_every_body_until_their_call_leaves() {
        let tools = tools();
        for api in ApiKind::ALL {
            let mut entries = vec![
                vec![user("go")],
                vec![call("c1", "shell", "{not json")],
                vec![result("c1", "shell", "x", false)],
                vec![user("next")],
            ];
            let mut history = RenderedHistory::new(api);
            for entry in &entries {
                history.push(entry);
            }
            let got = history.body(&head(None, &tools));
            assert!(
                matches!(got, Err(RequestError::ToolArguments { .. })),
                "{got:?}"
            );
            assert_eq!(got, reference_body(api, &entries, None, &tools));
            assert_eq!(history.splice(1..3, None), Ok(()));
            entries.drain(1..3);
            assert_eq!(
                history.body(&head(None, &tools)),
                reference_body(api, &entries, None, &tools)
            );
        }
    }

    #[test]
    fn edits_outside_the_history_are_errors() {
        let mut history = RenderedHistory::new(ApiKind::Anthropic);
        history.push(&[user("a")]);
        assert!(history.replace(1, &[user("b")]).is_err());
        assert!(history.splice(0..2, None).is_err());
        assert!(history.splice(1..1, Some(&[user("b")])).is_err());
        assert_eq!(history.splice(1..1, None), Ok(()));
        assert_eq!(history.len(), 1);
    }

    #[test]
    fn write_body_reuses_the_callers_buffer() {
        let tools = tools();
        let mut history = RenderedHistory::new(ApiKind::OpenAi);
        for entry in round(ApiKind::OpenAi) {
            history.push(&entry);
        }
        let mut out = b"left over".to_vec();
        assert_eq!(history.write_body(&head(None, &tools), &mut out), Ok(()));
        assert_eq!(Ok(out), history.body(&head(None, &tools)));
        assert!(history.fragment_bytes() > 0);
        assert!(history.heap_bytes() > history.fragment_bytes());
    }

    /// The history's running counts, recounted from its entries: the shortcut the body takes
    /// must agree with the walk.
    fn recount(history: &RenderedHistory) -> (usize, usize, usize, usize) {
        let mut calls: BTreeMap<&str, CallMarks> = BTreeMap::new();
        let (mut parts, mut bytes, mut broken) = (0, 0, 0);
        for entry in &history.entries {
            for (index, part) in entry.parts.iter().enumerate() {
                parts += 1;
                match &part.json {
                    Ok(json) => bytes += json.len(),
                    Err(_) => broken += 1,
                }
                if let Some((link, id)) = &part.link {
                    calls.entry(id).or_default().marks.push(Mark {
                        at: (entry.seq, index as u32),
                        link: *link,
                    });
                }
            }
        }
        let unpaired = calls.values().filter(|marks| !marks.is_paired()).count();
        (parts, bytes, broken, unpaired)
    }

    fn counts(history: &RenderedHistory) -> (usize, usize, usize, usize) {
        (
            history.parts,
            history.fragment_bytes,
            history.broken,
            history.unpaired,
        )
    }

    const IDS: [&str; 4] = ["c0", "c1", "c2", "c3"];
    const ARGUMENTS: [&str; 6] = ["{}", "", "  ", r#" {"path": "a\"b"} "#, "[1, 2]", "{oops"];

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z \"\\\\\n\t\u{1}\u{7f}é🚀/<>&']{0,24}",
            Just(String::new()),
        ]
    }

    fn message() -> impl Strategy<Value = ApiMessage<'static>> {
        prop_oneof![
            text().prop_map(|text| user(&text)),
            text().prop_map(|text| assistant(&text)),
            (0..IDS.len(), "[a-z_\"]{0,6}", 0..ARGUMENTS.len())
                .prop_map(|(id, name, arguments)| call(IDS[id], &name, ARGUMENTS[arguments])),
            (0..IDS.len(), "[a-z_]{0,6}", text(), any::<bool>())
                .prop_map(|(id, name, output, error)| result(IDS[id], &name, &output, error)),
        ]
    }

    fn entry() -> impl Strategy<Value = Vec<ApiMessage<'static>>> {
        prop::collection::vec(message(), 0..4)
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(Vec<ApiMessage<'static>>),
        Replace(usize, Vec<ApiMessage<'static>>),
        Splice(usize, usize, Option<Vec<ApiMessage<'static>>>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => entry().prop_map(Op::Push),
            1 => (any::<usize>(), entry()).prop_map(|(at, entry)| Op::Replace(at, entry)),
            1 => (any::<usize>(), 0usize..4, prop::option::of(entry()))
                .prop_map(|(at, len, inserted)| Op::Splice(at, len, inserted)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// After every push and edit, the assembled body is byte for byte the whole-request
        /// render of the same messages, or fails with the same error, in every API.
        #[test]
        fn the_assembled_body_is_the_whole_request_render(
            ops in prop::collection::vec(op(), 0..24),
            api in prop::sample::select(ApiKind::ALL.to_vec()),
            system in prop::option::of(text()),
            with_tools in any::<bool>(),
        ) {
            let tools = if with_tools { tools() } else { Vec::new() };
            let mut history = RenderedHistory::new(api);
            let mut entries: Vec<Vec<ApiMessage<'static>>> = Vec::new();
            for op in ops {
                match op {
                    Op::Push(entry) => {
                        history.push(&entry);
                        entries.push(entry);
                    }
                    Op::Replace(at, entry) => {
                        if entries.is_empty() {
                            prop_assert!(history.replace(0, &entry).is_err());
                            continue;
                        }
                        let at = at % entries.len();
                        prop_assert_eq!(history.replace(at, &entry), Ok(()));
                        entries[at] = entry;
                    }
                    Op::Splice(at, len, inserted) => {
                        let start = at % (entries.len() + 1);
                        let end = (start + len).min(entries.len());
                        let result = history.splice(start..end, inserted.as_deref());
                        if start == end && inserted.is_some() {
                            prop_assert!(result.is_err());
                            continue;
                        }
                        prop_assert_eq!(result, Ok(()));
                        entries.splice(start..end, inserted);
                    }
                }
                let expected = reference_body(api, &entries, system.as_deref(), &tools);
                prop_assert_eq!(history.body(&head(system.as_deref(), &tools)), expected);
                prop_assert_eq!(history.len(), entries.len());
                prop_assert_eq!(counts(&history), recount(&history));
                prop_assert_eq!(history.calls.len(), entries.iter().flatten().filter(|m| matches!(m, ApiMessage::ToolCall { .. } | ApiMessage::ToolResult { .. })).map(|m| match m { ApiMessage::ToolCall { call_id, .. } | ApiMessage::ToolResult { call_id, .. } => call_id.to_string(), _ => String::new() }).collect::<std::collections::BTreeSet<_>>().len());
                prop_assert_eq!(history.message_count(), entries.iter().map(Vec::len).sum::<usize>());
            }
        }
    }
}
