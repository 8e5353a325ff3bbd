//! The archive facts of messages a run's visits named (W70, W71): each message's content id
//! and description, and the masking placeholder written from them, computed the first time a
//! visit needs them (a notice naming the message, a placeholder replacing it) and kept in the
//! run's [`crate::StageMemory`] between visits, so a later visit reads them instead of hashing,
//! describing and formatting the message again.
//!
//! Not computed when a message enters the conversation: loading a conversation (the cold
//! path) would then hash every byte of it, and most messages are never named. A message's
//! content does not change while it sits in the window, so an entry keyed by its number
//! ([`Conversation::seq`]) stays right; it is checked against the message's role, size and
//! token count all the same, and recomputed when they differ (a memory handed another
//! conversation).

use crate::archive::{facts_of, SpanFacts};
use crate::message::{Role, WindowMessage};
use crate::Conversation;

/// A masking placeholder as written for one result: its text, characters and tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placeholder {
    pub(crate) text: String,
    pub(crate) chars: u64,
    pub(crate) tokens: u64,
}

/// What is kept of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    role: Role,
    chars: u64,
    tokens: u64,
    /// `None`: a drop notice or a placeholder the stage wrote, which has no span.
    facts: Option<SpanFacts>,
    /// The placeholder that masks it, once written (inner `None`: no rung is smaller).
    placeholder: Option<Option<Placeholder>>,
}

/// The facts kept, by message number: the numbers sorted, their entries beside them (a
/// visit asks in ascending order, so the next number is looked at first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SpanCache {
    seqs: Vec<u64>,
    entries: Vec<Entry>,
    /// Where the last lookup found its number.
    hint: usize,
}

impl SpanCache {
    /// Where message `index`'s entry is, computed now unless one is kept for it.
    fn slot<M: WindowMessage>(
        &mut self,
        conversation: &Conversation<M>,
        index: usize,
    ) -> Option<usize> {
        let seq = conversation.seq(index)?;
        let meta = conversation.meta(index)?;
        let (role, chars, tokens) = (meta.role, meta.chars, meta.tokens);
        let found = [self.hint, self.hint + 1]
            .into_iter()
            .find(|at| self.seqs.get(*at) == Some(&seq))
            .map_or_else(|| self.seqs.binary_search(&seq), Ok);
        let fresh = || Entry {
            role,
            chars,
            tokens,
            facts: facts_of(conversation, index),
            placeholder: None,
        };
        let at = match found {
            Ok(at) => {
                let entry = self.entries.get_mut(at)?;
                if (entry.role, entry.chars, entry.tokens) != (role, chars, tokens) {
                    *entry = fresh();
                }
                at
            }
            Err(at) => {
                self.seqs.insert(at, seq);
                self.entries.insert(at, fresh());
                at
            }
        };
        self.hint = at;
        Some(at)
    }

    /// Message `index`'s facts, computed now unless kept; `None` for a message with no span.
    pub(crate) fn facts<M: WindowMessage>(
        &mut self,
        conversation: &Conversation<M>,
        index: usize,
    ) -> Option<&SpanFacts> {
        let at = self.slot(conversation, index)?;
        self.entries.get(at)?.facts.as_ref()
    }

    /// The placeholder masking message `index`, written by `write` from its facts the first
    /// time and kept; `None` when `write` found none smaller than the result.
    pub(crate) fn placeholder<M: WindowMessage>(
        &mut self,
        conversation: &Conversation<M>,
        index: usize,
        write: impl FnOnce(Option<&SpanFacts>) -> Option<Placeholder>,
    ) -> Option<&Placeholder> {
        let at = self.slot(conversation, index)?;
        let entry = self.entries.get_mut(at)?;
        if entry.placeholder.is_none() {
            entry.placeholder = Some(write(entry.facts.as_ref()));
        }
        entry.placeholder.as_ref()?.as_ref()
    }

    /// Forgets the messages that left `conversation`, once they outnumber the ones in it (so
    /// the walk is paid rarely and the cache stays within about twice the window).
    pub(crate) fn prune<M: WindowMessage>(&mut self, conversation: &Conversation<M>) {
        if self.seqs.len() <= conversation.len().saturating_mul(2).saturating_add(64) {
            return;
        }
        let kept: Vec<bool> = self
            .seqs
            .iter()
            .map(|seq| conversation.holds_seq(*seq))
            .collect();
        let mut flags = kept.iter();
        self.seqs.retain(|_| flags.next().copied().unwrap_or(false));
        let mut flags = kept.iter();
        self.entries
            .retain(|_| flags.next().copied().unwrap_or(false));
        self.hint = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[test]
    fn kept_facts_are_the_computed_ones_and_follow_the_message_not_its_index() {
        let messages = vec![
            Message::user("one"),
            Message::assistant_calls("two", &[("c1", "shell", r#"{"command":"ls"}"#)]),
            Message::tool_result("c1", "three"),
        ];
        let conversation: Conversation = Conversation::from_messages(messages.clone());
        let mut cache = SpanCache::default();
        for index in [2, 0, 1, 2, 0] {
            assert_eq!(
                cache.facts(&conversation, index).cloned(),
                facts_of(&conversation, index),
                "{index}"
            );
        }
        assert_eq!(cache.seqs, vec![0, 1, 2]);
        // The same numbers in another conversation, with other content of other sizes: the
        // entries are recomputed, not read.
        let other: Conversation = Conversation::from_messages(vec![
            Message::user("one, longer"),
            Message::assistant("two, longer"),
            Message::tool_result("c9", "three, longer"),
        ]);
        for index in 0..3 {
            assert_eq!(
                cache.facts(&other, index).cloned(),
                facts_of(&other, index),
                "{index}"
            );
        }
        // A placeholder is written once.
        let mut writes = 0;
        for _ in 0..2 {
            let written = cache.placeholder(&conversation, 2, |_| {
                writes += 1;
                Some(Placeholder {
                    text: "p".into(),
                    chars: 1,
                    tokens: 1,
                })
            });
            assert_eq!(written.map(|p| p.text.as_str()), Some("p"));
        }
        assert_eq!(writes, 1);
    }
}
