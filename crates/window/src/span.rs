//! What an archived span is and how it is said, with no conversation in reach: its content id
//! ([`SpanId`]), kind and removal, the one-line description (W71) with its run content quoted
//! ([`quote_run_text`]), and the sentence a notice names spans with (W73). The archive
//! module finds them in a conversation; the notices print them.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::message::{Role, ToolCall};

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
    pub(crate) fn of(role: Role) -> SpanKind {
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
pub(crate) fn text_of(content: &str, calls: &[ToolCall]) -> String {
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

/// A plain identifier: 1–48 characters from `A–Z a–z 0–9 _ . : -` (W37).
pub fn is_plain_identifier(name: &str) -> bool {
    (1..=48).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// A message's archive id and description, which the conversation keeps once computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpanFacts {
    pub(crate) id: SpanId,
    pub(crate) description: String,
    /// The description's length in characters, which a notice's room is bounded by.
    pub(crate) description_chars: usize,
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
