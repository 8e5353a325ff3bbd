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

use crate::conversation::Kind;
use crate::message::{Role, ToolCall, WindowMessage};
use crate::Conversation;

pub use crate::span::{
    call_target, describe, quote_run_text, spans_sentence, ArchivedSpan, Removal, SpanId, SpanKind,
    DESCRIPTION_QUOTE_LIMIT, NOTICE_SPAN_LIMIT, SPAN_ID_HEX_DIGITS, SPAN_ID_PREFIX,
};
pub(crate) use crate::span::{longest_spans_sentence, text_of, SpanFacts};

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

/// The spans a notice for `range` names, each message's facts given by `facts`.
pub(crate) fn named_spans<M: WindowMessage>(
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

impl<M: crate::message::WindowMessage> crate::plan::WindowPlan<M> {
    /// Every span this plan lets go of, archived whole from `conversation`, the window it was
    /// made for: call it before [`crate::Conversation::apply`]. See
    /// [`archived_spans`]; a visit itself never reads or hashes what leaves.
    pub fn archived_spans(&self, conversation: &crate::Conversation<M>) -> Vec<ArchivedSpan> {
        archived_spans(conversation, self)
    }
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
