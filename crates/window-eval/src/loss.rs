//! What the model lost: the two measures of a strategy's harm, computed against the recorded
//! agent's own later actions.
//!
//! The recorded agent saw the whole history (or its CLI's own compaction); the replay asks, at
//! each of its model calls, what it would have been missing under the strategy:
//!
//! - **evicted-before-use**: a call counts when its action (the tool calls the model made in
//!   answer) names a *term* — a path, a file name, an identifier, an error or test name — that
//!   the history held before the call, but only in content the window had removed or masked by
//!   then: no message still in the window, no stage note (drop notice, summary) and no masked
//!   placeholder holds it. The share is over the calls that made at least one tool call.
//! - **re-fetch**: a tool call counts when an earlier call of the same tool with the same
//!   arguments exists whose result the window had removed or masked by then, and no earlier
//!   identical call's result is still in the window (the agent paying twice for what the window
//!   threw away). The share is over all tool calls of the replayed calls.
//!
//! Limits: a term is matched exactly, as a whole token ([`terms_of`]), so a name the model
//! rebuilt from memory, or spelled differently, is not seen; a plain English word is never a
//! term, so an action that needed removed prose is not seen either. A recorded repeat can be
//! deliberate (tests re-run after an edit); it counts only when its earlier output was gone.
//! Both measures read what the recorded agent did, not what an agent under the strategy would
//! have done next: they count the places where the strategy would have hurt, not the outcome.

use std::collections::{BTreeMap, BTreeSet};

use panewise_window::Message;

/// Where one message of the recorded history stands in the window at a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Not yet part of the history at this call.
    Unsent,
    /// In the window as recorded.
    Visible,
    /// In the window with its content replaced (observation masking).
    Masked,
    /// Removed from the window (dropped or folded into a summary).
    Removed,
}

/// The terms of a text: whitespace- and punctuation-separated tokens that look like a path, a
/// file name or an identifier, never a plain word. A path also yields its last component when
/// that is itself a term, so `src/app/main.rs` in an action matches `main.rs` in a listing.
pub fn terms_of(text: &str) -> BTreeSet<String> {
    let mut terms = BTreeSet::new();
    for raw in text.split(|c: char| !is_term_char(c)) {
        let token = raw.trim_matches(|c: char| matches!(c, '.' | ':' | '-' | '/' | '\''));
        let token = strip_line_suffix(token);
        if token.len() < 4 || token.len() > 200 {
            continue;
        }
        if token.contains('/') {
            if token.chars().any(|c| c.is_ascii_alphabetic()) {
                terms.insert(token.to_string());
            }
            if let Some(last) = token.rsplit('/').next() {
                if is_identifier_like(last) {
                    terms.insert(last.to_string());
                }
            }
        } else if is_identifier_like(token) {
            terms.insert(token.to_string());
        }
    }
    terms
}

fn is_term_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':' | '\'')
}

/// `path.rs:12:5` and `path.rs:12` name the file `path.rs`.
fn strip_line_suffix(token: &str) -> &str {
    let mut rest = token;
    while let Some((head, tail)) = rest.rsplit_once(':') {
        if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            rest = head;
        } else {
            break;
        }
    }
    rest
}

/// A token that is not a plain word: it holds an underscore, a digit after a letter, a dot
/// between letters (a file name, a module path), `::`, or a lower-case letter followed by an
/// upper-case one (camelCase, `TypeError`).
fn is_identifier_like(token: &str) -> bool {
    if token.len() < 4 || !token.chars().any(|c| c.is_alphabetic()) {
        return false;
    }
    if token.contains("::") || token.contains('_') {
        return true;
    }
    let bytes = token.as_bytes();
    let mut previous: Option<u8> = None;
    for (index, byte) in bytes.iter().enumerate() {
        if let Some(before) = previous {
            if before.is_ascii_lowercase() && byte.is_ascii_uppercase() {
                return true;
            }
            if before.is_ascii_alphabetic() && byte.is_ascii_digit() {
                return true;
            }
            if *byte == b'.' {
                let after = bytes.get(index + 1).copied();
                if before.is_ascii_alphanumeric() && after.is_some_and(|a| a.is_ascii_alphabetic())
                {
                    return true;
                }
            }
        }
        previous = Some(*byte);
    }
    false
}

/// The terms of a message as the window holds it: its content and, on an assistant message,
/// its tool calls' arguments.
pub fn message_terms(message: &Message) -> BTreeSet<String> {
    let mut terms = terms_of(&message.content);
    for call in &message.tool_calls {
        terms.extend(terms_of(&call.args));
    }
    terms
}

/// What one recording's actions name, indexed once and shared by every strategy's replay.
#[derive(Debug, Clone)]
pub struct LossIndex {
    /// Per term, the history messages holding it, in order.
    postings: BTreeMap<String, Vec<usize>>,
    /// Per assistant message, the terms its tool calls' arguments name.
    action_terms: BTreeMap<usize, BTreeSet<String>>,
    /// Per tool call (by its assistant message and position), the earlier identical calls'
    /// result messages.
    repeats: BTreeMap<(usize, usize), Vec<usize>>,
    /// Terms of the system prompt, always in the window.
    head_terms: BTreeSet<String>,
}

impl LossIndex {
    /// Indexes `messages` (the whole recorded history) and the system prompt.
    pub fn new(messages: &[Message], system: Option<&str>) -> Self {
        let mut postings: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut action_terms = BTreeMap::new();
        let mut result_of: BTreeMap<&str, usize> = BTreeMap::new();
        for (index, message) in messages.iter().enumerate() {
            if let Some(id) = message.tool_call_id.as_deref() {
                result_of.entry(id).or_insert(index);
            }
        }
        let mut earlier_calls: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        let mut repeats = BTreeMap::new();
        for (index, message) in messages.iter().enumerate() {
            for term in message_terms(message) {
                postings.entry(term).or_default().push(index);
            }
            if message.tool_calls.is_empty() {
                continue;
            }
            let mut named = BTreeSet::new();
            for (position, call) in message.tool_calls.iter().enumerate() {
                named.extend(terms_of(&call.args));
                let key = (call.name.clone(), normalized_args(&call.args));
                let before = earlier_calls.entry(key).or_default();
                if !before.is_empty() {
                    repeats.insert((index, position), before.clone());
                }
                if let Some(result) = result_of.get(call.id.as_str()) {
                    before.push(*result);
                }
            }
            action_terms.insert(index, named);
        }
        Self {
            postings,
            action_terms,
            repeats,
            head_terms: system.map(terms_of).unwrap_or_default(),
        }
    }

    /// Whether the action of the assistant message `answer` names a term held, before
    /// `sent`, only by messages the window removed or masked. `standing` tells each history
    /// message's place in the window; `in_notes` says whether a stage note or masked
    /// placeholder in the window holds a term.
    pub fn evicted_before_use(
        &self,
        answer: usize,
        sent: usize,
        standing: &[Standing],
        in_notes: &dyn Fn(&str) -> bool,
    ) -> bool {
        let Some(terms) = self.action_terms.get(&answer) else {
            return false;
        };
        terms.iter().any(|term| {
            if self.head_terms.contains(term) {
                return false;
            }
            let Some(holders) = self.postings.get(term) else {
                return false;
            };
            let mut lost = false;
            for &holder in holders.iter().take_while(|&&holder| holder < sent) {
                match standing.get(holder).copied().unwrap_or(Standing::Unsent) {
                    Standing::Visible => return false,
                    Standing::Masked | Standing::Removed => lost = true,
                    Standing::Unsent => {}
                }
            }
            lost && !in_notes(term)
        })
    }

    /// How many of the tool calls of the assistant message `answer` repeat an earlier
    /// identical call whose result the window removed or masked.
    pub fn refetches(&self, answer: usize, calls: usize, standing: &[Standing]) -> u32 {
        let mut count = 0u32;
        for position in 0..calls {
            let Some(results) = self.repeats.get(&(answer, position)) else {
                continue;
            };
            // Counted when the window had dropped an earlier identical call's output and kept
            // none: a repeat while one is still in view was made for another reason.
            let at = |result: &usize| standing.get(*result).copied();
            let gone = results
                .iter()
                .any(|result| matches!(at(result), Some(Standing::Masked | Standing::Removed)));
            let in_view = results
                .iter()
                .any(|result| at(result) == Some(Standing::Visible));
            if gone && !in_view {
                count = count.saturating_add(1);
            }
        }
        count
    }
}

/// Arguments compared as JSON values when they parse (so key order and spacing do not make
/// two identical reads differ), as text otherwise.
fn normalized_args(args: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(args) {
        Ok(value) => value.to_string(),
        Err(_) => args.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_file_names_and_identifiers_are_terms_plain_words_are_not() {
        let terms = terms_of(
            "see src/app/main.rs:12:5 where parse_config fails with TypeError; the value is wrong",
        );
        assert!(terms.contains("src/app/main.rs"), "{terms:?}");
        assert!(terms.contains("main.rs"));
        assert!(terms.contains("parse_config"));
        assert!(terms.contains("TypeError"));
        assert!(!terms.contains("value"));
        assert!(!terms.contains("wrong"));
        assert!(!terms.contains("where"));
    }

    #[test]
    fn module_paths_and_versions_with_letters_are_terms() {
        let terms = terms_of("call serde_json::from_str and test_window_v2 in crate.module");
        assert!(terms.contains("serde_json::from_str"));
        assert!(terms.contains("test_window_v2"));
        assert!(terms.contains("crate.module"));
    }

    #[test]
    fn a_repeat_counts_only_when_its_earlier_result_is_gone() {
        let messages = vec![
            Message::user("go"),
            Message::assistant_calls("", &[("a", "read", r#"{"path": "x.rs"}"#)]),
            Message::tool_result("a", "fn main() {}"),
            Message::assistant_calls("", &[("b", "read", r#"{ "path":"x.rs" }"#)]),
            Message::tool_result("b", "fn main() {}"),
        ];
        let index = LossIndex::new(&messages, None);
        let mut standing = vec![Standing::Visible; 5];
        assert_eq!(index.refetches(3, 1, &standing), 0);
        standing[2] = Standing::Masked;
        assert_eq!(index.refetches(3, 1, &standing), 1);
        assert_eq!(index.refetches(1, 1, &standing), 0);
    }
}
