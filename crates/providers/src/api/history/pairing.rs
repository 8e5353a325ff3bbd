//! The pairing rule of a [`RenderedHistory`], kept up to date as entries come and go: every
//! call id's calls and results, where they sit, and how many ids break the rule (no result
//! without its call before it, no call without a result after it, no id twice), so that a
//! body is checked in O(1) and only a history that breaks the rule is walked.

use std::collections::BTreeMap;

use super::RenderedHistory;
use crate::error::PairingError;

/// How a part takes part in the pairing rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Link {
    Call,
    Result,
}

/// Where a part sits: its entry's sequence number and its index within the entry.
pub(super) type Position = (u64, u32);

/// One call or result of a call id.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    pub(super) at: Position,
    pub(super) link: Link,
}

/// The calls and results of one call id, and the name of its call (for a Gemini result that
/// does not carry one).
#[derive(Debug, Default)]
pub(super) struct CallMarks {
    pub(super) marks: Vec<Mark>,
    pub(super) name: Box<str>,
}

impl CallMarks {
    /// One call, at least one result, every result after the call: what the pairing rule
    /// asks of every call id in a request.
    pub(super) fn is_paired(&self) -> bool {
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

impl RenderedHistory {
    /// The name of the newest call with id `call_id` in the history, for a tool result that
    /// does not carry its tool's name (Gemini matches results to calls by name).
    pub fn call_name(&self, call_id: &str) -> Option<&str> {
        self.calls
            .get(call_id)
            .filter(|marks| marks.marks.iter().any(|mark| mark.link == Link::Call))
            .map(|marks| &*marks.name)
    }

    /// Adds one mark to a call id, keeping the count of unpaired ids.
    pub(super) fn mark(&mut self, call_id: &str, mark: Mark, name: Option<&str>) {
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

    /// Takes the mark at `at` off a call id, keeping the count of unpaired ids; an id left
    /// without marks leaves the map.
    pub(super) fn unmark(&mut self, call_id: &str, at: Position) {
        let Some(marks) = self.calls.get_mut(call_id) else {
            return;
        };
        let was_paired = marks.is_paired();
        marks.marks.retain(|mark| mark.at != at);
        let now_paired = marks.marks.is_empty() || marks.is_paired();
        if marks.marks.is_empty() {
            self.calls.remove(call_id);
        }
        match (was_paired, now_paired) {
            (true, false) => self.unpaired = self.unpaired.saturating_add(1),
            (false, true) => self.unpaired = self.unpaired.saturating_sub(1),
            _ => {}
        }
    }

    /// The first offence against the pairing rule, in the order a whole-request check finds
    /// it: walking the messages, a second call with one id or a result before any call of its
    /// id; then the earliest call without a result after it.
    /// `None` when the walk finds no offence after all (the counts are only a shortcut; the
    /// walk is the rule).
    pub(super) fn pairing_error(&self) -> Option<PairingError> {
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
