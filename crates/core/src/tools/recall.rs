//! `recall`: gives back a span the context window removed, masked or folded, exactly as it
//! was, from the session's archive (W76). The model asks by the span id a drop notice, a
//! masking placeholder or a summary frame named (`sp-` and 12 hex digits), or by a text query.
//!
//! The own loop offers it only once its archive holds a span, and answers it itself from
//! the [`SpanArchive`] it keeps in step with the archive file
//! (the host's `agent_loop::archive`): answering is a pure function of the archive
//! ([`answer`]). Like `read_file` it only reads, so it runs in every approval mode.
//!
//! A query is ranked plainly: the exact phrase first, then the phrase in any case, then every
//! word of the query as a whole identifier, then every word anywhere; newer spans first
//! within a rank. The best match's text is returned, and the others are named by id.

use std::collections::BTreeMap;

use panewise_window::{ArchivedSpan, SpanId};
use serde::Deserialize;
use serde_json::{json, Value};

use super::output::cap_text;
use super::ToolOutcome;

/// The name the model calls it by.
pub const NAME: &str = "recall";

/// Every recall result starts with this, then the span id.
pub const RESULT_PREFIX: &str = "[recalled span ";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Get back, exactly, a message or tool result the context window \
removed, masked or summarised. Notices and placeholders in the conversation name such spans \
by id (`sp-` and 12 hex digits). Give `id` for that span, or `query` to search the archived \
spans' text (exact phrase first, then identifiers). The result's first line names the span \
and its size; the span's exact text follows, cut at the output cap with a note.";

/// The most other matches a query's result names.
pub const OTHER_MATCHES_LIMIT: usize = 5;

/// The arguments: exactly one of `id` and `query`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A span id, as a notice named it.
    #[serde(default)]
    pub id: Option<String>,
    /// Text to search the archive for.
    #[serde(default)]
    pub query: Option<String>,
}

impl Args {
    /// What the call asks, in one line (the id, or the query).
    pub fn summary(&self) -> String {
        match (&self.id, &self.query) {
            (Some(id), _) => id.clone(),
            (None, Some(query)) => query.clone(),
            (None, None) => String::new(),
        }
    }
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "A span id named in the conversation (sp-…)."},
            "query": {"type": "string", "description": "Text to search the archived spans for."}
        },
        "additionalProperties": false
    })
}

/// The spans a session's window let go of, in the order they were archived, each id once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpanArchive {
    spans: Vec<ArchivedSpan>,
    by_id: BTreeMap<SpanId, usize>,
}

impl SpanArchive {
    /// An empty archive.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `span`; false (and nothing changes) when its id is already held.
    pub fn insert(&mut self, span: ArchivedSpan) -> bool {
        if self.by_id.contains_key(&span.id) {
            return false;
        }
        self.by_id.insert(span.id.clone(), self.spans.len());
        self.spans.push(span);
        true
    }

    /// The span with `id`.
    pub fn get(&self, id: &SpanId) -> Option<&ArchivedSpan> {
        self.by_id.get(id).and_then(|at| self.spans.get(*at))
    }

    /// How many spans it holds.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The spans matching `query`, best first (see [`Rank`]).
    pub fn search(&self, query: &str) -> Vec<(Rank, &ArchivedSpan)> {
        let query = query.trim();
        if query.is_empty() {
            return Vec::new();
        }
        let words: Vec<&str> = identifiers(query).collect();
        let lower_query = query.to_lowercase();
        let mut found: Vec<(Rank, usize, &ArchivedSpan)> = self
            .spans
            .iter()
            .enumerate()
            .filter_map(|(at, span)| {
                let text = span.text();
                let rank = if text.contains(query) {
                    Rank::ExactPhrase
                } else {
                    let lower = text.to_lowercase();
                    if lower.contains(&lower_query) {
                        Rank::PhraseAnyCase
                    } else if !words.is_empty()
                        && words
                            .iter()
                            .all(|word| identifiers(&text).any(|token| token == *word))
                    {
                        Rank::EveryIdentifier
                    } else if !words.is_empty()
                        && words
                            .iter()
                            .all(|word| lower.contains(&word.to_lowercase()))
                    {
                        Rank::EveryWord
                    } else {
                        return None;
                    }
                };
                Some((rank, at, span))
            })
            .collect();
        // Best rank first; within a rank, the newest span first.
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        found
            .into_iter()
            .map(|(rank, _, span)| (rank, span))
            .collect()
    }
}

/// How well a span matched a query, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    /// The query, exactly as given, is in the span's text.
    ExactPhrase,
    /// The query is in the text in another case.
    PhraseAnyCase,
    /// Every identifier of the query is an identifier of the text, whole.
    EveryIdentifier,
    /// Every identifier of the query is somewhere in the text, in any case.
    EveryWord,
}

impl Rank {
    /// How the result names the rank.
    pub fn as_str(self) -> &'static str {
        match self {
            Rank::ExactPhrase => "exact phrase",
            Rank::PhraseAnyCase => "phrase in another case",
            Rank::EveryIdentifier => "every identifier",
            Rank::EveryWord => "every word",
        }
    }
}

/// The identifiers of `text`: maximal runs of letters, digits, `_`, `-`, `.`, `/` and `:`.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':')))
        .filter(|token| !token.is_empty())
}

/// The answer to a `recall` call from `archive`: the span's exact text after a one-line
/// header, cut at `cap` bytes with the cut said, or an error result saying why not.
pub fn answer(args: &Args, archive: &SpanArchive, cap: usize) -> ToolOutcome {
    match (&args.id, &args.query) {
        (Some(_), Some(_)) | (None, None) => {
            ToolOutcome::error(format!("{NAME}: give exactly one of `id` and `query`"))
        }
        (Some(id), None) => {
            let Some(parsed) = SpanId::parse(id.trim()) else {
                return ToolOutcome::error(format!(
                    "{NAME}: {id:?} is not a span id (`sp-` and 12 lowercase hex digits, as a \
                     notice names it); search with `query` instead"
                ));
            };
            match archive.get(&parsed) {
                Some(span) => ToolOutcome::ok(render(span, cap, "")),
                None => ToolOutcome::error(format!(
                    "{NAME}: no archived span has id {parsed}; the archive holds {} span{}. \
                     Search with `query` instead.",
                    archive.len(),
                    if archive.len() == 1 { "" } else { "s" }
                )),
            }
        }
        (None, Some(query)) => {
            let found = archive.search(query);
            let Some((rank, best)) = found.first() else {
                return ToolOutcome::error(format!(
                    "{NAME}: no archived span matches the query; the archive holds {} span{}",
                    archive.len(),
                    if archive.len() == 1 { "" } else { "s" }
                ));
            };
            let mut note = format!(
                "; best of {} match{} by {}",
                found.len(),
                if found.len() == 1 { "" } else { "es" },
                rank.as_str()
            );
            let others: Vec<String> = found
                .iter()
                .skip(1)
                .take(OTHER_MATCHES_LIMIT)
                .map(|(_, span)| format!("{} ({})", span.id, span.description))
                .collect();
            if !others.is_empty() {
                note.push_str("; others: ");
                note.push_str(&others.join("; "));
            }
            ToolOutcome::ok(render(best, cap, &note))
        }
    }
}

/// The header line and the span's text, cut at `cap` bytes.
fn render(span: &ArchivedSpan, cap: usize, note: &str) -> String {
    let text = span.text();
    let bytes = text.len();
    let shown = if bytes > cap {
        format!("{bytes} bytes, cut to the recall cap of {cap} bytes")
    } else {
        format!("{bytes} bytes, whole")
    };
    format!(
        "{RESULT_PREFIX}{} ({}); {shown}{note}]\n{}",
        span.id,
        span.description,
        cap_text(&text, cap)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_window::{Removal, Role, SpanKind};

    fn span(content: &str) -> ArchivedSpan {
        ArchivedSpan {
            id: SpanId::of(Role::Tool, content, &[]),
            kind: SpanKind::ToolResult,
            removal: Removal::Masked,
            iteration: 1,
            window_index: 2,
            born_at_ms: None,
            call_id: Some("c1".into()),
            tool: Some("shell".into()),
            description: format!("tool result of shell, {} chars", content.len()),
            content: content.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    fn archive(contents: &[&str]) -> SpanArchive {
        let mut archive = SpanArchive::new();
        for content in contents {
            archive.insert(span(content));
        }
        archive
    }

    fn by_id(id: &str) -> Args {
        Args {
            id: Some(id.to_owned()),
            query: None,
        }
    }

    fn by_query(query: &str) -> Args {
        Args {
            id: None,
            query: Some(query.to_owned()),
        }
    }

    #[test]
    fn w75_an_id_already_held_is_not_added_twice() {
        let mut archive = SpanArchive::new();
        assert!(archive.insert(span("a")));
        assert!(!archive.insert(span("a")));
        assert_eq!(archive.len(), 1);
    }

    #[test]
    fn w76_recall_by_id_gives_the_exact_text_after_a_header() {
        let content = "line one\nline \u{1b}[31mtwo\n";
        let archive = archive(&[content, "other"]);
        let id = SpanId::of(Role::Tool, content, &[]);
        let outcome = answer(&by_id(id.as_str()), &archive, 1_000);
        assert!(!outcome.is_error);
        let (header, body) = outcome.content.split_once('\n').unwrap();
        assert_eq!(
            header,
            format!(
                "[recalled span {id} (tool result of shell, {} chars); {} bytes, whole]",
                content.len(),
                content.len()
            )
        );
        assert_eq!(body, content);
    }

    #[test]
    fn w76_the_cap_is_said_when_it_cuts() {
        let content = "x".repeat(100);
        let archive = archive(&[&content]);
        let id = SpanId::of(Role::Tool, &content, &[]);
        let outcome = answer(&by_id(id.as_str()), &archive, 40);
        let (header, body) = outcome.content.split_once('\n').unwrap();
        assert!(
            header.ends_with("100 bytes, cut to the recall cap of 40 bytes]"),
            "{header}"
        );
        assert!(body.starts_with(&"x".repeat(40)));
        assert!(body.contains("[output cut: 60 more bytes"), "{body}");
    }

    #[test]
    fn w76_bad_calls_are_errors_that_say_why() {
        let archive = archive(&["a"]);
        let cases = [
            (
                Args {
                    id: None,
                    query: None,
                },
                "exactly one",
            ),
            (
                Args {
                    id: Some("sp-0123456789ab".into()),
                    query: Some("q".into()),
                },
                "exactly one",
            ),
            (by_id("sp-XYZ"), "is not a span id"),
            (
                by_id("sp-0123456789ab"),
                "no archived span has id sp-0123456789ab",
            ),
            (by_query("nothing like it"), "no archived span matches"),
            (by_query("   "), "no archived span matches"),
        ];
        for (args, says) in cases {
            let outcome = answer(&args, &archive, 100);
            assert!(outcome.is_error, "{args:?}");
            assert!(
                outcome.content.contains(says),
                "{args:?}: {}",
                outcome.content
            );
        }
    }

    #[test]
    fn w76_a_query_ranks_the_exact_phrase_first_then_identifiers() {
        let cases: [(&[&str], &str, &str, Rank); 5] = [
            (
                &["fn parse_config(x)", "parse config", "Parse_Config"],
                "parse_config",
                "fn parse_config(x)",
                Rank::ExactPhrase,
            ),
            (
                &["PARSE_CONFIG here", "nothing"],
                "parse_config",
                "PARSE_CONFIG here",
                Rank::PhraseAnyCase,
            ),
            (
                &["config loaded by parse", "parser configuration"],
                "parse config",
                "config loaded by parse",
                Rank::EveryIdentifier,
            ),
            (
                &["parser configuration", "nothing"],
                "parse config",
                "parser configuration",
                Rank::EveryWord,
            ),
            // Newer first within a rank.
            (
                &["old needle", "new needle"],
                "needle",
                "new needle",
                Rank::ExactPhrase,
            ),
        ];
        for (contents, query, best, rank) in cases {
            let archive = archive(contents);
            let found = archive.search(query);
            assert_eq!(found[0].1.content, best, "{query}");
            assert_eq!(found[0].0, rank, "{query}");
            assert!(found.windows(2).all(|pair| pair[0].0 <= pair[1].0));
        }
    }

    #[test]
    fn w76_a_query_answer_names_the_other_matches() {
        let archive = archive(&["needle one", "needle two", "haystack"]);
        let outcome = answer(&by_query("needle"), &archive, 1_000);
        let (header, body) = outcome.content.split_once('\n').unwrap();
        assert_eq!(body, "needle two");
        assert!(
            header.contains("best of 2 matches by exact phrase"),
            "{header}"
        );
        let other = SpanId::of(Role::Tool, "needle one", &[]);
        assert!(header.contains(&format!("others: {other}")), "{header}");
    }
}
