//! Restorable eviction (W70–W74): every message the window removes, masks or folds is kept
//! whole as an [`ArchivedSpan`], addressed by a [`SpanId`] computed from its exact content, so
//! the notice that replaces it can name it and a caller can give it back on request.
//!
//! The stage only describes what left; writing the archive and answering a recall is the
//! caller's (in panewise, the own loop's archive beside its session log and its `recall`
//! tool). Everything here is pure: SHA-256 over the content, no clock, no I/O.
//!
//! A description is one line a notice may print. Its only run content is what a call
//! targeted (a command, a path, a query), and that is quoted ([`quote_run_text`]): escaped so
//! it cannot close the quote, the notice's bracket or the line, and cut to
//! [`DESCRIPTION_QUOTE_LIMIT`] characters, so a tool's argument cannot pose as the stage.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::conversation::Kind;
use crate::message::{Role, ToolCall, WindowMessage};
use crate::notice::is_plain_identifier;
use crate::visit::Visit;
use crate::Conversation;

/// Every span id starts with this (W70).
pub const SPAN_ID_PREFIX: &str = "sp-";

/// The hex digits of a span id after its prefix (W70): 48 bits of SHA-256.
pub const SPAN_ID_HEX_DIGITS: usize = 12;

/// The most characters of run content a description quotes (W71).
pub const DESCRIPTION_QUOTE_LIMIT: usize = 48;

/// A span's content address: `sp-` and the first 12 lowercase hex digits of the SHA-256 of
/// its role, content and tool calls (W70). The same message gives the same id in every run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SpanId(String);

impl SpanId {
    /// The id of a message with this role, content and calls.
    pub fn of(role: Role, content: &str, calls: &[ToolCall]) -> SpanId {
        let mut hasher = Sha256::new();
        // Each field is length-prefixed, so no two different messages hash the same bytes.
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_be_bytes());
            hasher.update(bytes);
        };
        field(role.as_str().as_bytes());
        field(content.as_bytes());
        for call in calls {
            field(call.name.as_bytes());
            field(call.args.as_bytes());
        }
        let digest = hasher.finalize();
        let mut id = String::with_capacity(SPAN_ID_PREFIX.len() + SPAN_ID_HEX_DIGITS);
        id.push_str(SPAN_ID_PREFIX);
        for byte in digest.iter().take(SPAN_ID_HEX_DIGITS / 2) {
            id.push_str(&format!("{byte:02x}"));
        }
        SpanId(id)
    }

    /// `text` as a span id, when it is one exactly (prefix, then 12 lowercase hex digits).
    pub fn parse(text: &str) -> Option<SpanId> {
        let hex = text.strip_prefix(SPAN_ID_PREFIX)?;
        (hex.len() == SPAN_ID_HEX_DIGITS
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| SpanId(text.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SpanId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for SpanId {
    type Error = String;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        SpanId::parse(&text).ok_or_else(|| format!("not a span id: {text:?}"))
    }
}

impl From<SpanId> for String {
    fn from(id: SpanId) -> String {
        id.0
    }
}

/// What kind of message a span is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanKind {
    /// A system message.
    System,
    /// A user-role message (a person's, or one injected in the user role).
    User,
    /// An assistant message: its text and the calls it made.
    Assistant,
    /// A tool result.
    ToolResult,
}

impl SpanKind {
    fn of(role: Role) -> SpanKind {
        match role {
            Role::System => SpanKind::System,
            Role::User => SpanKind::User,
            Role::Assistant => SpanKind::Assistant,
            Role::Tool => SpanKind::ToolResult,
        }
    }
}

/// How a span left the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Removal {
    /// Dropped with its turn (sliding-window, token-budget).
    Dropped,
    /// Its content replaced by a masking placeholder.
    Masked,
    /// Folded into a summary.
    Folded,
    /// Cleared by the provider (a provider-side context edit).
    ProviderCleared,
}

/// One message that left the window, kept whole (W72).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchivedSpan {
    /// The content address.
    pub id: SpanId,
    /// What kind of message it was.
    pub kind: SpanKind,
    /// How it left.
    pub removal: Removal,
    /// The iteration (the session's model-call count) of the visit it left at.
    pub iteration: u32,
    /// Its index in the window it left, before the change.
    pub window_index: usize,
    /// When it was appended, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub born_at_ms: Option<u64>,
    /// On a tool result, the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// On a tool result, the tool's name as recovered (unfiltered; the description prints it
    /// only when it is a plain identifier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The one-line description a notice prints ([`describe`]).
    pub description: String,
    /// The message's content, exactly.
    pub content: String,
    /// An assistant message's calls, exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl ArchivedSpan {
    /// The span's exact text as a recall gives it back: the content, then one line per call
    /// (`[call NAME ARGS]`) for an assistant message that made calls.
    pub fn text(&self) -> String {
        text_of(&self.content, &self.tool_calls)
    }

    /// The span's size in characters, as its description states it.
    pub fn chars(&self) -> u64 {
        self.text().chars().count() as u64
    }
}

/// A message's content and then its calls, one `[call NAME ARGS]` line each.
fn text_of(content: &str, calls: &[ToolCall]) -> String {
    let mut text = content.to_owned();
    for call in calls {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[call {} {}]", call.name, call.args));
    }
    text
}

/// `text` quoted for a notice (W71): in double quotes, with `\`, `"`, the brackets, control
/// characters and invisible format characters (bidi overrides, zero-width marks) escaped, and
/// cut, with `…` inside the quotes, where the escaped text would pass `limit` characters.
pub fn quote_run_text(text: &str, limit: usize) -> String {
    let mut escaped = String::new();
    let mut shown = 0usize;
    for c in text.chars() {
        let piece = match c {
            '\\' => "\\\\".to_owned(),
            '"' => "\\\"".to_owned(),
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            '[' | ']' | '<' | '>' | '`' => format!("\\u{{{:x}}}", c as u32),
            c if c.is_control() || is_invisible_format(c) => format!("\\u{{{:x}}}", c as u32),
            c => c.to_string(),
        };
        let width = piece.chars().count();
        if shown + width > limit {
            return format!("\"{escaped}…\"");
        }
        shown += width;
        escaped.push_str(&piece);
    }
    format!("\"{escaped}\"")
}

/// Format characters that change how text around them reads without showing themselves.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD | 0x061C | 0x180E | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x206F | 0xFEFF
    )
}

/// The argument a call's description quotes: the first string among `command`, `cmd`,
/// `path`, `file_path`, `pattern`, `query`, `id` in its JSON arguments.
pub fn call_target(args: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(args).ok()?;
    [
        "command",
        "cmd",
        "path",
        "file_path",
        "pattern",
        "query",
        "id",
    ]
    .iter()
    .find_map(|key| value.get(key).and_then(serde_json::Value::as_str))
    .map(str::to_owned)
}

/// The one-line description of a span (W71): what it is, the tool (a plain identifier only),
/// the quoted target of its call, and its size.
///
/// `tool_result of shell "cargo test", 1234 chars`; `assistant message, 80 chars, calls
/// read_file "src/lib.rs" and 2 more`; `user message, 300 chars`.
pub fn describe(
    kind: SpanKind,
    tool: Option<&str>,
    target: Option<&str>,
    calls: &[ToolCall],
    chars: u64,
) -> String {
    let named = |name: Option<&str>, target: Option<&str>| -> String {
        let mut text = String::new();
        if let Some(name) = name.filter(|name| is_plain_identifier(name)) {
            text.push(' ');
            text.push_str(name);
        }
        if let Some(target) = target {
            text.push(' ');
            text.push_str(&quote_run_text(target, DESCRIPTION_QUOTE_LIMIT));
        }
        text
    };
    match kind {
        SpanKind::ToolResult => {
            let of = named(tool, target);
            if of.is_empty() {
                format!("tool result, {chars} chars")
            } else {
                format!("tool result of{of}, {chars} chars")
            }
        }
        SpanKind::Assistant => {
            let mut text = format!("assistant message, {chars} chars");
            if let Some(first) = calls.first() {
                let target = call_target(&first.args);
                text.push_str(", calls");
                let of = named(Some(&first.name), target.as_deref());
                text.push_str(if of.is_empty() { " a tool" } else { &of });
                if calls.len() > 1 {
                    text.push_str(&format!(" and {} more", calls.len() - 1));
                }
            }
            text
        }
        SpanKind::User => format!("user message, {chars} chars"),
        SpanKind::System => format!("system message, {chars} chars"),
    }
}

/// A message's archive id and description, which the conversation keeps once computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpanFacts {
    pub(crate) id: SpanId,
    pub(crate) description: String,
    /// The description's length in characters, which a notice's room is bounded by.
    pub(crate) description_chars: usize,
}

/// Message `index`'s archive id and description, or `None` for a drop notice or a masking
/// placeholder the stage wrote.
pub(crate) fn facts_of<M: WindowMessage>(
    conversation: &Conversation<M>,
    index: usize,
) -> Option<SpanFacts> {
    let message = conversation.messages().get(index)?;
    let described = described(conversation, index)?;
    Some(SpanFacts {
        id: SpanId::of(message.role(), message.content(), &described.calls),
        description_chars: described.description.chars().count(),
        description: described.description,
    })
}

/// The call `call_id` as the message that made it holds it.
fn call_site<'c, M: WindowMessage>(
    conversation: &'c Conversation<M>,
    call_id: &str,
) -> Option<crate::message::ToolCallRef<'c>> {
    let caller = conversation
        .call_index(call_id)
        .and_then(|at| conversation.messages().get(at))?;
    (0..caller.tool_call_count())
        .filter_map(|at| caller.tool_call(at))
        .find(|call| call.id == call_id)
}

/// A message's tool calls, owned.
fn calls_of<M: WindowMessage>(message: &M) -> Vec<ToolCall> {
    (0..message.tool_call_count())
        .filter_map(|at| message.tool_call(at))
        .map(|call| ToolCall {
            id: call.id.to_owned(),
            name: call.name.to_owned(),
            args: call.args.to_owned(),
        })
        .collect()
}

/// What [`span_of`] reads of a message before hashing it.
struct Described {
    calls: Vec<ToolCall>,
    description: String,
}

/// Message `index` of `conversation` described, or `None` for a message that carries nothing
/// of the run to archive: a drop notice or a masking placeholder the stage wrote (what they
/// replaced was archived when they were written).
fn described<M: WindowMessage>(conversation: &Conversation<M>, index: usize) -> Option<Described> {
    let meta = conversation.meta(index)?;
    if matches!(meta.kind, Kind::DropNotice | Kind::MaskedResult) {
        return None;
    }
    let message = conversation.messages().get(index)?;
    let calls = calls_of(message);
    let kind = SpanKind::of(message.role());
    let call_id = message.tool_call_id().map(str::to_owned);
    let (tool, target) = match (kind, call_id.as_deref()) {
        (SpanKind::ToolResult, Some(call_id)) => {
            let site = call_site(conversation, call_id);
            let tool = conversation
                .tool_name(meta.tool)
                .or_else(|| site.map(|call| call.name))
                .map(str::to_owned);
            (tool, site.and_then(|call| call_target(call.args)))
        }
        _ => (None, None),
    };
    let chars = text_of(message.content(), &calls).chars().count() as u64;
    let description = describe(kind, tool.as_deref(), target.as_deref(), &calls, chars);
    Some(Described { calls, description })
}

/// The span of message `index` leaving `conversation`, or `None` for a drop notice or a
/// masking placeholder the stage wrote.
pub fn span_of<M: WindowMessage>(
    conversation: &Conversation<M>,
    index: usize,
    removal: Removal,
    iteration: u32,
) -> Option<ArchivedSpan> {
    let facts = facts_of(conversation, index)?;
    span_with(conversation, index, removal, iteration, facts, true)
}

/// [`span_of`] with the message's facts already known (kept by the run's memory); without
/// `whole`, the content and calls are left out (a notice prints only the id and description).
fn span_with<M: WindowMessage>(
    conversation: &Conversation<M>,
    index: usize,
    removal: Removal,
    iteration: u32,
    facts: SpanFacts,
    whole: bool,
) -> Option<ArchivedSpan> {
    let message = conversation.messages().get(index)?;
    let calls = if whole { calls_of(message) } else { Vec::new() };
    let meta = conversation.meta(index)?;
    let call_id = message.tool_call_id().map(str::to_owned);
    let tool = match (message.role(), call_id.as_deref()) {
        (Role::Tool, Some(call_id)) => conversation
            .tool_name(meta.tool)
            .map(str::to_owned)
            .or_else(|| call_site(conversation, call_id).map(|call| call.name.to_owned())),
        _ => None,
    };
    Some(ArchivedSpan {
        id: facts.id,
        kind: SpanKind::of(message.role()),
        removal,
        iteration,
        window_index: index,
        born_at_ms: message.born_at_ms(),
        call_id,
        tool,
        description: facts.description,
        content: if whole {
            message.content().to_owned()
        } else {
            String::new()
        },
        tool_calls: calls,
    })
}

/// The characters of the longest description a notice for a part of `range` can quote.
/// Drops take a range's oldest turns, so the part is a prefix of `range`, and a notice names its
/// first [`NOTICE_SPAN_LIMIT`] tool results, else its first other messages (W73): those are
/// among the first [`NOTICE_SPAN_LIMIT`] of each kind in `range`, so only they are described
/// and the scan stops there. Describing every message of a long removable range cost more than
/// the visit (100k messages: 4.6 ms against 70 µs).
pub(crate) fn longest_description_chars<M: WindowMessage>(
    visit: &Visit<'_, M>,
    range: std::ops::Range<usize>,
) -> usize {
    let conversation = visit.conversation();
    let (mut results, mut others) = (0usize, 0usize);
    let mut longest = 0usize;
    for index in range {
        if results >= NOTICE_SPAN_LIMIT && others >= NOTICE_SPAN_LIMIT {
            break;
        }
        let Some(meta) = conversation.meta(index) else {
            continue;
        };
        if matches!(meta.kind, Kind::DropNotice | Kind::MaskedResult) {
            continue;
        }
        let counted = if meta.role == Role::Tool {
            &mut results
        } else {
            &mut others
        };
        if *counted >= NOTICE_SPAN_LIMIT {
            continue;
        }
        *counted += 1;
        let chars =
            visit.with_span_facts(index, |facts| facts.map(|facts| facts.description_chars));
        longest = longest.max(chars.unwrap_or(0));
    }
    longest
}

/// The spans of the messages at `indices` leaving `conversation`, in order, each id once.
pub fn spans_of<M: WindowMessage>(
    conversation: &Conversation<M>,
    indices: impl IntoIterator<Item = usize>,
    removal: Removal,
    iteration: u32,
) -> Vec<ArchivedSpan> {
    let mut seen: std::collections::BTreeSet<SpanId> = std::collections::BTreeSet::new();
    let mut spans: Vec<ArchivedSpan> = Vec::new();
    for index in indices {
        if let Some(span) = span_of(conversation, index, removal, iteration) {
            if seen.insert(span.id.clone()) {
                spans.push(span);
            }
        }
    }
    spans
}

/// The spans a notice for `range` names (W73): tool results first, then the other messages,
/// at most [`NOTICE_SPAN_LIMIT`], and how many spans the range holds in all. Only the named
/// ones are described and hashed, so a notice costs the same however long the range; the
/// whole range is archived by [`archived_spans`], which the caller runs when it applies the
/// plan.
pub fn notice_spans<M: WindowMessage>(
    conversation: &Conversation<M>,
    range: std::ops::Range<usize>,
    removal: Removal,
    iteration: u32,
) -> (Vec<ArchivedSpan>, usize) {
    named_spans(conversation, range, removal, iteration, true, |index| {
        facts_of(conversation, index)
    })
}

/// [`notice_spans`] for a visit: the named spans' ids and descriptions are read from what the
/// run's memory keeps, and computed (then kept) only the first time. The spans carry no
/// content: a notice prints only ids and descriptions (the archive is [`archived_spans`]'s).
pub(crate) fn visit_notice_spans<M: WindowMessage>(
    visit: &Visit<'_, M>,
    range: std::ops::Range<usize>,
    removal: Removal,
    iteration: u32,
) -> (Vec<ArchivedSpan>, usize) {
    named_spans(
        visit.conversation(),
        range,
        removal,
        iteration,
        false,
        |index| visit.with_span_facts(index, |facts| facts.cloned()),
    )
}

/// The spans a notice for `range` names, each message's facts given by `facts`.
fn named_spans<M: WindowMessage>(
    conversation: &Conversation<M>,
    range: std::ops::Range<usize>,
    removal: Removal,
    iteration: u32,
    whole: bool,
    facts: impl Fn(usize) -> Option<SpanFacts>,
) -> (Vec<ArchivedSpan>, usize) {
    let archivable = |index: &usize| {
        conversation
            .meta(*index)
            .is_some_and(|meta| !matches!(meta.kind, Kind::DropNotice | Kind::MaskedResult))
    };
    let is_result = |index: &usize| {
        conversation
            .meta(*index)
            .is_some_and(|meta| meta.role == Role::Tool)
    };
    let total = conversation.archivable_in(range.clone());
    let named = range
        .clone()
        .filter(archivable)
        .filter(is_result)
        .chain(range.filter(archivable).filter(|index| !is_result(index)))
        .take(NOTICE_SPAN_LIMIT);
    let mut seen: std::collections::BTreeSet<SpanId> = std::collections::BTreeSet::new();
    let mut spans: Vec<ArchivedSpan> = Vec::new();
    for index in named {
        let Some(span) = facts(index)
            .and_then(|facts| span_with(conversation, index, removal, iteration, facts, whole))
        else {
            continue;
        };
        if seen.insert(span.id.clone()) {
            spans.push(span);
        }
    }
    (spans, total)
}

/// Every span `plan` lets go of, archived whole from `conversation`, the window the plan was
/// made for (call it before [`Conversation::apply`]): each removed or folded message, and each
/// tool result a placeholder replaced, with its content id, description and exact content
/// (W72). Stage notes are not archived: what they replaced was, when they were written. This
/// is the one place the stage reads, hashes and copies every byte that leaves, so it is the
/// caller's to run when it keeps an archive; a visit never does it.
pub fn archived_spans<M: WindowMessage>(
    conversation: &Conversation<M>,
    plan: &crate::plan::WindowPlan<M>,
) -> Vec<ArchivedSpan> {
    let Some(edit) = &plan.edit else {
        return Vec::new();
    };
    let iteration = plan.record.iteration;
    let len = conversation.len();
    let removed = edit.removed.start.min(len)..edit.removed.end.min(len);
    let removal = if plan.folded.is_empty() {
        Removal::Dropped
    } else {
        Removal::Folded
    };
    let masked = edit
        .replaced
        .iter()
        .map(|replacement| replacement.index)
        .filter(|index| !removed.contains(index));
    let mut spans = spans_of(conversation, removed.clone(), removal, iteration);
    let known: std::collections::BTreeSet<SpanId> =
        spans.iter().map(|span| span.id.clone()).collect();
    spans.extend(
        spans_of(conversation, masked, Removal::Masked, iteration)
            .into_iter()
            .filter(|span| !known.contains(&span.id)),
    );
    spans
}

/// At most this many spans are named in one drop notice or summary frame (W73); the rest are
/// counted.
pub const NOTICE_SPAN_LIMIT: usize = 6;

/// The sentence a drop notice or summary frame adds to name its archived spans (W73): each id
/// with its description, tool results first, at most [`NOTICE_SPAN_LIMIT`], the rest counted.
/// Empty when nothing was archived. `total` is how many spans the range holds in all (the ones
/// beyond `spans` are counted). With `described` false only the ids are listed.
pub fn spans_sentence(spans: &[ArchivedSpan], total: usize, described: bool) -> String {
    if spans.is_empty() {
        return String::new();
    }
    let mut ordered: Vec<&ArchivedSpan> = spans
        .iter()
        .filter(|span| span.kind == SpanKind::ToolResult)
        .collect();
    ordered.extend(
        spans
            .iter()
            .filter(|span| span.kind != SpanKind::ToolResult),
    );
    let shown = ordered.len().min(NOTICE_SPAN_LIMIT);
    let listed: Vec<String> = ordered[..shown]
        .iter()
        .map(|span| {
            if described {
                format!("{} ({})", span.id, span.description)
            } else {
                span.id.to_string()
            }
        })
        .collect();
    let mut text = format!(" Archived whole, by id: {}", listed.join("; "));
    let more = total.max(ordered.len()) - shown;
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text.push_str(
        ". Where a recall tool is offered, call it with an id (or a text query) to get the exact \
         text back.",
    );
    text
}

/// The longest sentence [`spans_sentence`] can write for spans of at most `count` messages
/// whose descriptions have at most `description_chars` characters: an upper bound on what a
/// notice adds for them.
pub(crate) fn longest_spans_sentence(count: usize, description_chars: usize) -> String {
    let span = ArchivedSpan {
        // Every id has the same length: a fixed one bounds them all without hashing.
        id: SpanId(format!(
            "{SPAN_ID_PREFIX}{}",
            "0".repeat(SPAN_ID_HEX_DIGITS)
        )),
        kind: SpanKind::ToolResult,
        removal: Removal::Dropped,
        iteration: 0,
        window_index: 0,
        born_at_ms: None,
        call_id: None,
        tool: None,
        description: "x".repeat(description_chars),
        content: String::new(),
        tool_calls: Vec::new(),
    };
    let listed = count.min(NOTICE_SPAN_LIMIT);
    spans_sentence(&vec![span; listed], count, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w70_span_ids_are_stable_and_content_addressed() {
        let id = SpanId::of(Role::Tool, "hello\n", &[]);
        assert_eq!(id, SpanId::of(Role::Tool, "hello\n", &[]));
        assert!(id.as_str().starts_with(SPAN_ID_PREFIX));
        assert_eq!(id.as_str().len(), SPAN_ID_PREFIX.len() + SPAN_ID_HEX_DIGITS);
        assert_eq!(SpanId::parse(id.as_str()), Some(id.clone()));
        // A pinned value: the id of a span never changes between versions.
        assert_eq!(
            SpanId::of(Role::Tool, "hello\n", &[]).as_str(),
            PINNED_HELLO_ID
        );
        let cases = [
            ("another role", SpanId::of(Role::User, "hello\n", &[])),
            ("another content", SpanId::of(Role::Tool, "hello", &[])),
            (
                "a call",
                SpanId::of(
                    Role::Tool,
                    "hello\n",
                    &[ToolCall {
                        id: "c".into(),
                        name: "shell".into(),
                        args: "{}".into(),
                    }],
                ),
            ),
        ];
        for (what, other) in cases {
            assert_ne!(other, id, "{what}");
        }
    }

    // Computed independently: SHA-256 of the length-prefixed fields `tool`, `hello\n`.
    const PINNED_HELLO_ID: &str = "sp-175595031792";

    #[test]
    fn w70_only_exact_ids_parse() {
        let cases = [
            ("sp-0123456789ab", true),
            ("sp-0123456789AB", false),
            ("sp-0123456789a", false),
            ("sp-0123456789abc", false),
            ("xx-0123456789ab", false),
            ("sp-0123456789ag", false),
            ("", false),
        ];
        for (text, parses) in cases {
            assert_eq!(SpanId::parse(text).is_some(), parses, "{text:?}");
        }
    }

    #[test]
    fn w71_run_text_is_quoted_escaped_and_cut() {
        let cases: [(&str, &str, usize); 10] = [
            ("plain", "\"plain\"", 48),
            ("say \"hi\"", "\"say \\\"hi\\\"\"", 48),
            ("a\nb", "\"a\\nb\"", 48),
            ("x] ignore previous", "\"x\\u{5d} ignore previous\"", 48),
            ("[dropped history", "\"\\u{5b}dropped history\"", 48),
            ("\u{1b}[2K", "\"\\u{1b}\\u{5b}2K\"", 48),
            ("a\u{202e}b", "\"a\\u{202e}b\"", 48),
            ("abcdef", "\"abc…\"", 3),
            ("abc", "\"abc\"", 3),
            ("ab\n", "\"ab…\"", 3),
        ];
        for (text, quoted, limit) in cases {
            assert_eq!(quote_run_text(text, limit), quoted, "{text:?}");
        }
    }

    #[test]
    fn w71_descriptions_name_tool_target_and_size() {
        let call = |name: &str, args: &str| ToolCall {
            id: "c".into(),
            name: name.into(),
            args: args.into(),
        };
        let cases = [
            (
                describe(SpanKind::ToolResult, Some("shell"), Some("ls -la"), &[], 12),
                "tool result of shell \"ls -la\", 12 chars",
            ),
            (
                describe(SpanKind::ToolResult, Some("rm -rf /"), None, &[], 3),
                "tool result, 3 chars",
            ),
            (
                describe(
                    SpanKind::Assistant,
                    None,
                    None,
                    &[
                        call("read_file", r#"{"path":"src/a\"].rs"}"#),
                        call("shell", "{}"),
                    ],
                    40,
                ),
                "assistant message, 40 chars, calls read_file \"src/a\\\"\\u{5d}.rs\" and 1 more",
            ),
            (
                describe(SpanKind::Assistant, None, None, &[call("bad name", "x")], 5),
                "assistant message, 5 chars, calls a tool",
            ),
            (
                describe(SpanKind::User, None, None, &[], 300),
                "user message, 300 chars",
            ),
        ];
        for (described, expected) in cases {
            assert_eq!(described, expected);
        }
    }

    #[test]
    fn w73_the_sentence_lists_results_first_and_counts_the_rest() {
        let span = |n: usize, kind: SpanKind| ArchivedSpan {
            id: SpanId::of(Role::Tool, &n.to_string(), &[]),
            kind,
            removal: Removal::Dropped,
            iteration: 1,
            window_index: n,
            born_at_ms: None,
            call_id: None,
            tool: None,
            description: format!("d{n}"),
            content: n.to_string(),
            tool_calls: Vec::new(),
        };
        assert_eq!(spans_sentence(&[], 0, true), "");
        let mut spans = vec![span(0, SpanKind::Assistant)];
        spans.extend((1..=7).map(|n| span(n, SpanKind::ToolResult)));
        let sentence = spans_sentence(&spans, spans.len(), true);
        let first_result = sentence.find(spans[1].id.as_str()).unwrap();
        assert!(first_result < sentence.find("(d2)").unwrap());
        assert!(!sentence.contains(spans[0].id.as_str()), "{sentence}");
        assert!(sentence.contains("and 2 more"), "{sentence}");
        let counted = spans_sentence(&spans[..6], 40, true);
        assert!(
            counted.contains("and 34 more"),
            "the spans not named are counted: {counted}"
        );
        let bare = spans_sentence(&spans[..2], 2, false);
        assert!(!bare.contains("(d"), "{bare}");
        assert!(bare.contains(spans[0].id.as_str()));
    }
}
